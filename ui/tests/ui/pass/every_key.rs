use tensorbits::{Op, Options, Tensor, bitwise_op};

/// Hamming weight of the difference, into u16 or u32, with every key written out.
#[bitwise_op(
    name = "HAMMING",
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    dims = 1..=4,
    broadcast = [none, numpy, pdpd],
    in_place = [],
    support(FL_3_0 = [u8], FL_5_0 = [u8, i16], EXT = [u8, i16, f32]),
    output = [u16, u32],
)]
pub struct Hamming;

/// Wrapping shifts and literals.
#[bitwise_op(inputs = [x], compute = (x.wrapping_shl(1) ^ 255) >> 1, support(FL_1_0 = [u8, u64]))]
pub struct Wrap;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![0b1011u8], &[1])?;
    let b = Tensor::from_vec(vec![0b0001u8], &[1])?;
    // `run` gives the first output type, u16, with no annotation; the options choose another.
    let d = Hamming::run(&a, &b)?;
    assert_eq!(d.data(), &[2u16]);
    let wide = Hamming::run_with(&Options::new().output::<u32>(), &a, &b)?;
    assert_eq!(wide.data(), &[2u32]);
    assert_eq!(<Hamming as Op>::INFO.name(), "HAMMING");
    let x = Tensor::from_vec(vec![0x81u8], &[1])?;
    assert_eq!(Wrap::run(&x)?.data(), &[(0x02u8 ^ 255) >> 1]);
    Ok(())
}
