use tensorbits::Tensor;
use tensorbits::ops::{BitXor, HammingCdist};

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1u8, 2], &[2])?;
    let b = Tensor::from_vec(vec![1u16, 2], &[2])?;
    let _ = BitXor::run(&a, &b)?;
    let _ = HammingCdist::knn(&a.view(), b.view(), 1)?;
    Ok(())
}
