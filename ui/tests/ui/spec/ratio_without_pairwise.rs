use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = (a & b).count_ones() / (a | b).count_ones(),
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
