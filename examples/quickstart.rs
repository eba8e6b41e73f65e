//! Quickstart: runs the seed examples of the DirectML and OpenVINO operator pages with the standard
//! ops, on a GPU when wgpu finds an adapter (else on the CPU), and prints which device ran and each
//! result as a nested list.
//!
//! Prints (the device line depends on the machine):
//! ```text
//! device: GPU: llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, Cpu)
//! NOT u8 [[0, 128], [42, 255]] = [[255, 127], [213, 0]]
//! XOR u8 [21, 120] ^ [3, 37] = [22, 93]
//! XOR bool [true, false, false] ^ [true, true, false] = [false, true, false]
//! XOR u32 numpy broadcast [8, 1, 6, 1] ^ [7, 1, 5] -> [8, 7, 6, 5]; y[7][6][5][4] = 0x222f (= a[7][0][5][0] ^ b[6][0][4] = 0x2f ^ 0x2200)
//! BIT_COUNT u32 [[0, 123], [456, 789]] = [[0, 6], [4, 5]] (u8 output), [[0, 6], [4, 5]] (u32 output)
//! GPU and CPU agree bit for bit on every result above: true
//! a bad call is an error value, never a panic: ELEMENT_WISE_BIT_XOR (none broadcast): BTensor shape [3] does not match ATensor shape [2] in dimension 0 (3 vs 2; broadcast `none` needs equal shapes)
//! ```

use tensorbits::ops::{BitCount, BitNot, BitXor};
use tensorbits::{Broadcast, GpuExecutor, Options, Target, Tensor};

fn main() -> Result<(), tensorbits::Error> {
    let gpu = GpuExecutor::new_blocking();
    let target = match &gpu {
        Ok(g) => Target::Gpu(g),
        Err(e) => {
            println!("(no GPU: {e}; running on the CPU)");
            Target::Cpu
        }
    };
    println!("device: {}", target.describe());
    let opts = Options::new();

    // DirectML's BIT_NOT example.
    let x = Tensor::from_vec(vec![0u8, 128, 42, 255], &[2, 2])?;
    let not = BitNot::run_on(&target, &opts, &x)?;
    println!("NOT u8 {x} = {not}");

    // OpenVINO's BitwiseXor examples: uint8 and boolean.
    let a = Tensor::from_vec(vec![21u8, 120], &[2])?;
    let b = Tensor::from_vec(vec![3u8, 37], &[2])?;
    let xor = BitXor::run_on(&target, &opts, &a, &b)?;
    println!("XOR u8 {a} ^ {b} = {xor}");

    let p = Tensor::from_vec(vec![true, false, false], &[3])?;
    let q = Tensor::from_vec(vec![true, true, false], &[3])?;
    let xor_bool = BitXor::run_on(&target, &opts, &p, &q)?;
    println!("XOR bool {p} ^ {q} = {xor_bool}");

    // OpenVINO's numpy broadcast example: (8,1,6,1) ^ (7,1,5) -> (8,7,6,5).
    let a4 = Tensor::from_vec((0..48u32).collect(), &[8, 1, 6, 1])?;
    let b3 = Tensor::from_vec((0..35u32).map(|v| v << 8).collect(), &[7, 1, 5])?;
    let numpy = Options::new().broadcast(Broadcast::Numpy);
    let y = BitXor::run_on(&target, &numpy, &a4, &b3)?;
    println!(
        "XOR u32 numpy broadcast {:?} ^ {:?} -> {:?}; y[7][6][5][4] = {:#x} (= a[7][0][5][0] ^ b[6][0][4] = {:#x} ^ {:#x})",
        a4.shape(),
        b3.shape(),
        y.shape(),
        y.data()[((7 * 7 + 6) * 6 + 5) * 5 + 4],
        a4.data()[7 * 6 + 5],
        b3.data()[6 * 5 + 4]
    );

    // BIT_COUNT, with a u8 output (the default) and a u32 one.
    let c = Tensor::from_vec(vec![0u32, 123, 456, 789], &[2, 2])?;
    let c8 = BitCount::run_on(&target, &opts, &c)?;
    let c32 = BitCount::run_on(&target, &opts.output::<u32>(), &c)?;
    println!("BIT_COUNT u32 {c} = {c8} (u8 output), {c32} (u32 output)");

    if let Target::Gpu(_) = target {
        let same = not == BitNot::run(&x)?
            && xor == BitXor::run(&a, &b)?
            && xor_bool == BitXor::run(&p, &q)?
            && y == BitXor::run_with(&numpy, &a4, &b3)?
            && c8 == BitCount::run(&c)?;
        println!("GPU and CPU agree bit for bit on every result above: {same}");
    }

    // Every bad call is an error value with a message that says what and where, never a panic.
    let three = Tensor::from_vec(vec![1u8, 2, 3], &[3])?;
    if let Err(e) = BitXor::run_on(
        &target,
        &Options::new().broadcast(Broadcast::None),
        &a,
        &three,
    ) {
        println!("a bad call is an error value, never a panic: {e}");
    }
    Ok(())
}
