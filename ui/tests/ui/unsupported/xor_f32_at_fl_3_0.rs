use tensorbits::Tensor;
use tensorbits::levels::FL_3_0;
use tensorbits::ops::BitXor;
use tensorbits::Options;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    let _ = BitXor::run_with(&Options::at(FL_3_0), &a, &a)?;
    Ok(())
}
