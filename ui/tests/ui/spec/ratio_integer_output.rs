use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a & b).count_ones() / 2,
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
    output = [u32],
)]
pub struct Op;

fn main() {}
