use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a],
    compute = !a,
    axes = [0],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
