use tensorbits::{Options, Tensor, bitwise_op};

// One mistake in the spec: the three calls below still type-check, so the compiler reports only it.
#[bitwise_op(
    inputs = [a, b],
    compute = a ^ c,
    broadcast = [numpy],
    support(EXT = [u8, u32]),
)]
pub struct Mix;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1u8, 2], &[2])?;
    let b = Tensor::from_vec(vec![3u8, 4], &[2])?;
    let _ = Mix::run(&a, &b)?;
    let _ = Mix::run_with(&Options::new(), &a, &b)?;
    let mut out = Tensor::<u8>::zeros(&[2])?;
    Mix::run_into(&Options::new(), &a, &b, &mut out)?;
    Ok(())
}
