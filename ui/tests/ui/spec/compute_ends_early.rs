use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = a & !,
    broadcast = [numpy],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
