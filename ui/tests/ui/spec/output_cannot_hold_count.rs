use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [x],
    compute = x.count_ones(),
    output = [u8, f32],
    support(FL_3_0 = [u8]),
)]
pub struct Op;

fn main() {}
