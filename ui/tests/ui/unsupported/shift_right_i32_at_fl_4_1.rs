use tensorbits::Tensor;
use tensorbits::levels::FL_4_1;
use tensorbits::ops::BitShiftRight;
use tensorbits::Options;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![-8i32], &[1])?;
    let _ = BitShiftRight::run_with(&Options::at(FL_4_1), &a, &a)?;
    Ok(())
}
