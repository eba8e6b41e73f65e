use tensorbits::{Options, Tensor, bitwise_op};

// A count op whose spec has a mistake: its calls, with the default and a chosen output type, still
// type-check.
#[bitwise_op(
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    dims = 0..=9,
    broadcast = [numpy],
    output = [u8, u32],
    support(EXT = [u8, u32]),
)]
pub struct Dist;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1u8, 2], &[2])?;
    let b = Tensor::from_vec(vec![3u8, 4], &[2])?;
    let d = Dist::run(&a, &b)?;
    let _: &[u8] = d.data();
    let _ = Dist::run_with(&Options::new().output::<u32>(), &a, &b)?;
    Ok(())
}
