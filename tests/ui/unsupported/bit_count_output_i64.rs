use tensorbits::Tensor;
use tensorbits::ops::BitCount;

fn main() -> Result<(), tensorbits::Error> {
    let x = Tensor::from_vec(vec![7u32], &[1])?;
    let _: Tensor<i64> = BitCount::run(&x)?;
    Ok(())
}
