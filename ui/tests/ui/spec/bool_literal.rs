use tensorbits::bitwise_op;

#[bitwise_op(inputs = [a], compute = a ^ 2, support(EXT = [u8, bool]))]
pub struct Op;

fn main() {}
