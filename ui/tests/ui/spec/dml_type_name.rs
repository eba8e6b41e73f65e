use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = a ^ b,
    broadcast = [numpy],
    support(FL_3_0 = [UINT8, u16]),
)]
pub struct Op;

fn main() {}
