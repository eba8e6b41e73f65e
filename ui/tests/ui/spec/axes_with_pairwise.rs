use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    axes = [-1],
    output = [u32],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
