use tensorbits::Tensor;
use tensorbits::ops::BitCount;
use tensorbits::Options;

fn main() -> Result<(), tensorbits::Error> {
    let mut x = Tensor::from_vec(vec![7u8], &[1])?;
    BitCount::run_in_place_input(&Options::new(), &mut x)?;
    Ok(())
}
