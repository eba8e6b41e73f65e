use tensorbits::{Options, Tensor, bitwise_op, levels::FL_4_1};

/// A fused select with its own type table.
#[bitwise_op(
    name = "BIT_SELECT",
    inputs = [a, b, mask],
    compute = (a & mask) | (b & !mask),
    broadcast = [numpy, none],
    in_place = [a],
    support(FL_4_1 = [u8, u16, u32, u64], EXT = [u8, u16, u32, u64, bool]),
)]
pub struct BitSelect;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![0xffu8], &[1])?;
    let b = Tensor::from_vec(vec![0x00u8], &[1])?;
    let m = Tensor::from_vec(vec![0x0fu8], &[1])?;
    assert_eq!(BitSelect::run_with(&Options::at(FL_4_1), &a, &b, &m)?.data(), &[0x0f]);
    Ok(())
}
