use tensorbits::Tensor;
use tensorbits::bitwise_op;

/// Clears the bits of `a` that are set in `b`.
#[bitwise_op(inputs = [a, b], compute = a & !b, broadcast = [none], support(EXT = [u8, u16]))]
pub struct Mask;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1u64], &[1])?;
    let _ = Mask::run(&a, &a)?;
    Ok(())
}
