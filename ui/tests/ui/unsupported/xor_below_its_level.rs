use tensorbits::Tensor;
use tensorbits::levels::FL_2_1;
use tensorbits::ops::BitXor;
use tensorbits::Options;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1u8], &[1])?;
    let _ = BitXor::run_with(&Options::at(FL_2_1), &a, &a)?;
    Ok(())
}
