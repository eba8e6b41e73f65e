use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = sum,
    broadcast = [numpy],
    output = [u32, i8],
    support(EXT = [u8, u64]),
)]
pub struct Op;

fn main() {}
