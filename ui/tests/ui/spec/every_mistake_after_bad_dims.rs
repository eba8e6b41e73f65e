use tensorbits::bitwise_op;

// A bad `dims` does not hide the mistakes in the keys after it.
#[bitwise_op(
    inputs = [a, b],
    compute = a & b,
    dims = 0..=12,
    broadcast = [numpy, everything],
    support(FL_3_0 = [u8, u9]),
    output = [u8],
)]
pub struct Op;

fn main() {}
