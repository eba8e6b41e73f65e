use tensorbits::{Options, Tensor, bitwise_op};

/// Number of positions where both rows have a set bit: a binary inner product.
#[bitwise_op(
    inputs = [a, b],
    compute = (a & b).count_ones(),
    reduce = sum,
    pairwise,
    output = [u32, u64],
    support(EXT = [u8, u64]),
)]
pub struct Dot;

/// XOR of a masked tensor over its default axis.
#[bitwise_op(
    inputs = [a, m],
    compute = a & m,
    reduce = xor,
    axes = [-1],
    broadcast = [numpy],
    support(EXT = [u8, u16, bool]),
)]
pub struct MaskedParity;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![0b1111u8, 0b0101], &[2, 1])?;
    let b = Tensor::from_vec(vec![0b0011u8], &[1, 1])?;
    let d = Dot::run(&a, &b)?;
    assert_eq!((d.shape(), d.data()), (&[2usize, 1][..], &[2u32, 1][..]));
    let wide = Dot::run_with(&Options::new().output::<u64>(), &a, &b)?;
    assert_eq!(wide.data(), &[2u64, 1]);
    let (dist, idx) = Dot::knn(&b, &a, 1)?;
    assert_eq!((dist.data(), idx.data()), (&[1u32][..], &[1i64][..]));
    let x = Tensor::from_vec(vec![1u16, 2, 3, 4], &[2, 2])?;
    let m = Tensor::from_vec(vec![0xffffu16, 1], &[2])?;
    let p = MaskedParity::run(&x, &m)?;
    assert_eq!(p.data(), &[1 ^ (2 & 1), 3 ^ (4 & 1)]);
    let all = MaskedParity::run_with(&Options::new().axes([0, 1]).keepdims(true), &x, &m)?;
    assert_eq!((all.shape(), all.data()), (&[1usize, 1][..], &[1u16 ^ 3][..]));
    Ok(())
}
