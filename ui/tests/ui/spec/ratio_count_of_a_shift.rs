use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a & b).count_ones() / ((a << 1) | b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
    output = [f32],
)]
pub struct Op;

fn main() {}
