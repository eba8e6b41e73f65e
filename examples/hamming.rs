//! Binary codes: declares a pairwise Hamming op with the macro, computes the distance matrix of
//! a few codes, searches the nearest codes with knn (on the CPU, and on a GPU when wgpu finds one),
//! and reduces along axes with the standard ops.
//!
//! Prints (the device line depends on the machine):
//! ```text
//! codes a [2, 2] u8 = [[0, 255], [15, 1]], b [4, 2] u8 = [[0, 254], [255, 255], [12, 0], [240, 3]]
//! CODE_DISTANCES (a, b) [2, 4] u32 = [[1, 8, 10, 10], [12, 11, 3, 9]]
//! knn k=3: distances [[1, 8, 10], [3, 9, 11]], indices [[0, 1, 2], [2, 3, 1]]
//! device: GPU: llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, Cpu)
//! knn on the device gives the same bits: true
//! HAMMING_DISTANCE a vs b[..2] over the last axis = [1, 11]
//! BIT_XOR_REDUCE b over axis 0 = [[3, 2]], keepdims; over every axis = 1
//! a sum that could overflow u8 is refused before running: CODE_DISTANCES: a sum of 32 elements of up to 8 set bits each can reach 256, more than u8 holds (255); the smallest output type that fits is u16
//! ```

use tensorbits::ops::{BitXorReduce, HammingDistance};
use tensorbits::{Options, Tensor, bitwise_op};

/// Bits that differ between every row (code) of `a` and every row of `b`.
#[bitwise_op(
    name = "CODE_DISTANCES",
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64]),
    output = [u32, u16, u8],
)]
pub struct CodeDistances;

fn main() -> Result<(), tensorbits::Error> {
    // Two query codes and four database codes of 16 bits each, as two bytes.
    let a = Tensor::from_vec(vec![0u8, 255, 15, 1], &[2, 2])?;
    let b = Tensor::from_vec(vec![0u8, 254, 255, 255, 12, 0, 240, 3], &[4, 2])?;
    println!(
        "codes a {:?} u8 = {a}, b {:?} u8 = {b}",
        a.shape(),
        b.shape()
    );

    // The whole distance matrix, in the op's default output type (u32).
    let d = CodeDistances::run(&a, &b)?;
    println!("CODE_DISTANCES (a, b) {:?} u32 = {d}", d.shape());
    assert_eq!(d.data(), &[1, 8, 10, 10, 12, 11, 3, 9]);

    // The three nearest codes of `b` for each row of `a`: ascending, ties by the lower index (row
    // 0 is at 10 from codes 2 and 3), without the distance matrix.
    let (dist, idx) = CodeDistances::knn(&a, &b, 3)?;
    println!("knn k=3: distances {dist}, indices {idx}");
    assert_eq!(
        (dist.data(), idx.data()),
        (&[1, 8, 10, 3, 9, 11][..], &[0, 1, 2, 2, 3, 1][..])
    );

    // The same search on a device: bit-identical with the CPU.
    #[cfg(feature = "gpu")]
    {
        let gpu = tensorbits::GpuExecutor::new_blocking();
        let target = match &gpu {
            Ok(g) => tensorbits::Target::Gpu(g),
            Err(_) => tensorbits::Target::Cpu,
        };
        println!("device: {}", target.describe());
        let (gd, gi) = CodeDistances::knn_on(&target, &Options::new(), &a, &b, 3)?;
        println!(
            "knn on the device gives the same bits: {}",
            gd.data() == dist.data() && gi.data() == idx.data()
        );
    }

    // Reductions along axes, with the standard ops.
    let b2 = Tensor::from_vec(b.data()[..4].to_vec(), &[2, 2])?;
    let h = HammingDistance::run(&a, &b2)?;
    println!("HAMMING_DISTANCE a vs b[..2] over the last axis = {h}");
    let x = BitXorReduce::run_with(&Options::new().axes([0]).keepdims(true), &b)?;
    let all = BitXorReduce::run_with(&Options::new().axes([0, 1]), &b)?;
    println!("BIT_XOR_REDUCE b over axis 0 = {x}, keepdims; over every axis = {all}");
    assert_eq!(
        (h.data(), x.data(), all.data()),
        (&[1, 11][..], &[3, 2][..], &[1][..])
    );

    // Thirty-two bytes of 8 bits can differ in 256 bits: more than u8 holds.
    let wide = Tensor::from_vec(vec![0u8; 64], &[2, 32])?;
    let e = CodeDistances::run_with(&Options::new().output::<u8>(), &wide, &wide).unwrap_err();
    println!("a sum that could overflow u8 is refused before running: {e}");
    Ok(())
}
