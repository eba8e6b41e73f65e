use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b, c],
    compute = (a ^ b ^ c).count_ones(),
    reduce = sum,
    pairwise,
    output = [u32],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
