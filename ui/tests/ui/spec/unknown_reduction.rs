use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a],
    compute = a,
    reduce = mean,
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
