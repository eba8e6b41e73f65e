//! Quickstart: runs the seed examples of the DirectML and OpenVINO operator pages with the standard
//! ops and prints each result as a nested list.
//!
//! Prints, among others:
//! ```text
//! NOT u8 [[0, 128], [42, 255]] = [[255, 127], [213, 0]]
//! XOR u8 [21, 120] ^ [3, 37] = [22, 93]
//! XOR bool [true, false, false] ^ [true, true, false] = [false, true, false]
//! BIT_COUNT u32 [[0, 123], [456, 789]] = [[0, 6], [4, 5]] (u8 output), [[0, 6], [4, 5]] (u32 output)
//! ```
//! and, last, the error message of a call whose shapes do not match.

use tensorbits::ops::{BitCount, BitNot, BitXor};
use tensorbits::{Broadcast, Options, Tensor};

fn main() -> Result<(), tensorbits::Error> {
    println!("device: CPU (tensorbits' CPU executor)");

    // DirectML's BIT_NOT example.
    let x = Tensor::from_vec(vec![0u8, 128, 42, 255], &[2, 2])?;
    println!("NOT u8 {x} = {}", BitNot::run(&x)?);

    // OpenVINO's BitwiseXor examples: uint8 and boolean.
    let a = Tensor::from_vec(vec![21u8, 120], &[2])?;
    let b = Tensor::from_vec(vec![3u8, 37], &[2])?;
    println!("XOR u8 {a} ^ {b} = {}", BitXor::run(&a, &b)?);

    let p = Tensor::from_vec(vec![true, false, false], &[3])?;
    let q = Tensor::from_vec(vec![true, true, false], &[3])?;
    println!("XOR bool {p} ^ {q} = {}", BitXor::run(&p, &q)?);

    // OpenVINO's numpy broadcast example: (8,1,6,1) ^ (7,1,5) -> (8,7,6,5).
    let a = Tensor::from_vec((0..48u32).collect(), &[8, 1, 6, 1])?;
    let b = Tensor::from_vec((0..35u32).map(|v| v << 8).collect(), &[7, 1, 5])?;
    let y = BitXor::run_with(&Options::new().broadcast(Broadcast::Numpy), &a, &b)?;
    println!(
        "XOR u32 numpy broadcast {:?} ^ {:?} -> {:?}; y[7][6][5][4] = {:#x} (= a[7][0][5][0] ^ b[6][0][4] = {:#x} ^ {:#x})",
        a.shape(),
        b.shape(),
        y.shape(),
        y.data()[((7 * 7 + 6) * 6 + 5) * 5 + 4],
        a.data()[7 * 6 + 5],
        b.data()[6 * 5 + 4]
    );

    // BIT_COUNT, with a u8 output (the default) and a u32 one.
    let x = Tensor::from_vec(vec![0u32, 123, 456, 789], &[2, 2])?;
    let c8: Tensor<u8> = BitCount::run(&x)?;
    let c32: Tensor<u32> = BitCount::run(&x)?;
    println!("BIT_COUNT u32 {x} = {c8} (u8 output), {c32} (u32 output)");

    // Every bad call is an error value with a message that says what and where, never a panic.
    let c = Tensor::from_vec(vec![1u8, 2, 3], &[3])?;
    let a = Tensor::from_vec(vec![21u8, 120], &[2])?;
    if let Err(e) = BitXor::run_with(&Options::new().broadcast(Broadcast::None), &a, &c) {
        println!("error: {e}");
    }
    Ok(())
}
