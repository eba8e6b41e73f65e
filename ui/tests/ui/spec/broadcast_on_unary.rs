use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [a],
    compute = !a,
    broadcast = [numpy],
    support(FL_3_0 = [u8, u16], EXT = [u8, u16, u32]),
)]
pub struct Op;

fn main() {}
