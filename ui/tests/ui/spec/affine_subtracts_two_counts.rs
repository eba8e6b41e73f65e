use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a | b).count_ones() - (a & b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
    output = [i32],
)]
pub struct Op;

fn main() {}
