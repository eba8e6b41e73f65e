use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a, a],
    compute = a * b,
    colour = red,
    support(FL_3_0 = [u8, u7], FL_2_0 = [u16]),
)]
pub struct Op;

fn main() {}
