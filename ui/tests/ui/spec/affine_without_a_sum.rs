use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = BITS - 2 * (a ^ b).count_ones(),
    broadcast = [numpy],
    support(EXT = [u8]),
    output = [i32],
)]
pub struct Op;

fn main() {}
