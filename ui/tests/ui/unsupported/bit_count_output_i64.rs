use tensorbits::{Options, Tensor};
use tensorbits::ops::BitCount;

fn main() -> Result<(), tensorbits::Error> {
    let x = Tensor::from_vec(vec![7u32], &[1])?;
    let _ = BitCount::run_with(&Options::new().output::<i64>(), &x)?;
    Ok(())
}
