use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = a & b,
    reduce = and,
    broadcast = [numpy],
    in_place = [a],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
