use tensorbits::bitwise_op;

#[bitwise_op(inputs = [a], compute = !a, support(FL_3_0 = [u8]))]
pub struct Op {
    field: u8,
}

fn main() {}
