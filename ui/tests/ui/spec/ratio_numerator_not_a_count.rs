use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a & b) / (a | b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
