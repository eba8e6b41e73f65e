use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = xor,
    broadcast = [numpy],
    output = [u32],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
