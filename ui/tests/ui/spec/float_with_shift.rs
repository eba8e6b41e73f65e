use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, b],
    compute = a >> b,
    broadcast = [numpy],
    support(FL_4_1 = [u32, f32]),
)]
pub struct Op;

fn main() {}
