use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [x],
    compute = x.count_ones(),
    output = [u8, u32],
    in_place = [x],
    support(FL_3_0 = [u8]),
)]
pub struct Op;

fn main() {}
