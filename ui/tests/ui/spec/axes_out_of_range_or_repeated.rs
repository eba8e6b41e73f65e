use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a],
    compute = a,
    reduce = or,
    dims = 0..=3,
    axes = [3, 0, 0, -4],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
