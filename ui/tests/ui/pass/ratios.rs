use tensorbits::{Options, Tensor, bitwise_op};

/// Russell-Rao similarity: the bits set in both over all the valid bits.
#[bitwise_op(
    inputs = [a, b],
    compute = (a & b).count_ones() / BITS,
    reduce = sum,
    pairwise,
    support(EXT = [u8, u32]),
)]
pub struct RussellRao;

/// Tversky's index with alpha = 2 and beta = 1: shared bits over shared plus weighted differences.
#[bitwise_op(
    inputs = [a, b],
    compute = (a & b).count_ones() / ((a & b).count_ones() + 2 * (a & !b).count_ones() + (!a & b).count_ones()),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
    output = [f64],
)]
pub struct Tversky;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![0b1111_0000u8, 0], &[1, 2])?;
    let b = Tensor::from_vec(vec![0b1100_0000u8, 0, 0b0011_1100, 0], &[2, 2])?;
    // Outputs default to f32 and f64; the largest come first.
    assert_eq!(RussellRao::run(&a, &b)?.data(), &[2.0f32 / 16.0, 2.0 / 16.0]);
    let ten = RussellRao::run_with(&Options::new().bits(10).output::<f64>(), &a, &b)?;
    assert_eq!(ten.data(), &[0.2f64, 0.2]);
    // |a & b| = 2 both times; a & !b has 2 then 2 bits, !a & b 0 then 2.
    assert_eq!(Tversky::run(&a, &b)?.data(), &[2.0 / 6.0, 2.0 / 8.0]);
    let (s, i) = Tversky::knn(&a, &b, 1)?;
    assert_eq!((s.data(), i.data()), (&[2.0 / 6.0][..], &[0i64][..]));
    Ok(())
}
