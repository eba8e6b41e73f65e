use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = a ^ b,
    broadcast = [numpy],
    support(FL_3_0 = [u8, u16, u8]),
)]
pub struct Op;

fn main() {}
