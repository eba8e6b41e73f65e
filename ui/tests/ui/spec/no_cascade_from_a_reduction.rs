use tensorbits::{Options, Tensor, bitwise_op};

// A pairwise sum with one mistake: its run, run_with and knn calls still type-check.
#[bitwise_op(
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    output = [u32, u64, u4],
    support(EXT = [u8]),
)]
pub struct Cdist;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![1u8, 2], &[1, 2])?;
    let d = Cdist::run(&a, &a)?;
    let _: &[u32] = d.data();
    let _ = Cdist::run_with(&Options::new().output::<u64>(), &a, &a)?;
    let (dist, idx) = Cdist::knn(&a, &a, 1)?;
    let _: (&[u32], &[i64]) = (dist.data(), idx.data());
    Ok(())
}
