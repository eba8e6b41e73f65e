use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [x],
    compute = x.count_ones(),
    support(FL_3_0 = [u8]),
    ouptut = [u8],
)]
pub struct Op;

fn main() {}
