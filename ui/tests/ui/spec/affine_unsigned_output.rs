use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = BITS - 2 * (a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
    output = [i32, u32, i64],
)]
pub struct Op;

fn main() {}
