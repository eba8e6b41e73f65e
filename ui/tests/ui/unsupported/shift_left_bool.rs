use tensorbits::Tensor;
use tensorbits::ops::BitShiftLeft;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![true, false], &[2])?;
    let _ = BitShiftLeft::run(&a, &a)?;
    Ok(())
}
