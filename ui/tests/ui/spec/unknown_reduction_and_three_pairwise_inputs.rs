use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b, c],
    compute = (a ^ b ^ c).count_ones(),
    reduce = mean,
    pairwise,
    support(EXT = [u8]),
    output = [u32],
)]
pub struct Op;

fn main() {}
