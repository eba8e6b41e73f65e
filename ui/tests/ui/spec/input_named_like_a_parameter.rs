use tensorbits::bitwise_op;

#[bitwise_op(
    inputs = [target, gpu],
    compute = target & gpu,
    broadcast = [numpy],
    support(EXT = [u8]),
)]
pub struct Op;

fn main() {}
