use tensorbits::Tensor;
use tensorbits::levels::FL_3_0;
use tensorbits::ops::BitCount;
use tensorbits::Options;

fn main() -> Result<(), tensorbits::Error> {
    let x = Tensor::from_vec(vec![-1i8, 3], &[2])?;
    let _: Tensor<u8> = BitCount::run_with(&Options::at(FL_3_0), &x)?;
    Ok(())
}
