//! tensorbits inside a burn program, on burn's wgpu device (burn's own buffers, no copy through the
//! host) and on its ndarray CPU device, with the same results: a Hamming kNN over binary codes made
//! from float embeddings, and an op declared with `#[bitwise_op]` applied to burn tensors.
//!
//! Run it with `cargo run --release -p tensorbits-burn --example burn`. It prints, for each device,
//! the nearest codes of three queries and the bits set by the declared op, then whether the two
//! devices agree:
//!
//! ```text
//! wgpu: knn indices [[0, 2428, 3388, 618, 3230], [1, 2690, 2757, 3028, 662], [2, 372, 3562, 3317, 3639]]
//! wgpu: knn distances [[0, 41, 45, 47, 47], [0, 44, 46, 46, 47], [0, 46, 46, 47, 47]]
//! wgpu: bits set in the queries but not their nearest other code: [17, 24, 21]
//! ndarray: knn indices [[0, 2428, 3388, 618, 3230], [1, 2690, 2757, 3028, 662], [2, 372, 3562, 3317, 3639]]
//! ndarray: knn distances [[0, 41, 45, 47, 47], [0, 44, 46, 46, 47], [0, 46, 46, 47, 47]]
//! ndarray: bits set in the queries but not their nearest other code: [17, 24, 21]
//! the two devices agree: true
//! ```
//!
//! (Without a GPU it runs on ndarray alone and says so.)

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use tensorbits::bitwise_op;
use tensorbits_burn::TensorBits;

/// The bits of `a` that `b` lacks.
#[bitwise_op(
    name = "AND_NOT",
    inputs = [a, b],
    compute = a & !b,
    broadcast = [numpy],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]),
)]
pub struct AndNot;

/// 128-dimensional float embeddings as binary codes, in burn: the sign bits packed 16 to an `i32`
/// word (eight words a row), each bit weighted by its place and summed.
fn codes(embeddings: Tensor<2>, device: &Device) -> Tensor<2, Int> {
    let [n, dim] = embeddings.dims();
    let bits = embeddings
        .greater_elem(0.0)
        .int()
        .reshape([n, dim / 16, 16]);
    let weights = Tensor::<1, Int>::from_data(
        TensorData::new((0..16).map(|b| 1i32 << b).collect::<Vec<_>>(), [16]),
        (device, DType::I32),
    );
    let words = bits
        .cast(DType::I32)
        .mul(weights.reshape([1, 1, 16]))
        .sum_dim(2);
    words.reshape([n, dim / 16])
}

type Result = std::result::Result<(Vec<Vec<i64>>, Vec<Vec<i64>>, Vec<i64>), tensorbits::Error>;

fn run(device: &Device) -> Result {
    // The same embeddings on every device, from a seeded generator.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let values: Vec<f32> = (0..4096 * 128)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let db = Tensor::<2>::from_data(TensorData::new(values, [4096, 128]), device);
    let codes = codes(db, device);
    let queries = codes.clone().slice([0..3, 0..8]);
    let (distances, indices) = queries.knn(&codes, 5)?;
    // The bits each query has that its nearest other code lacks, counted per row.
    let nearest = codes
        .clone()
        .select(0, indices.clone().slice([0..3, 1..2]).reshape([3]));
    let lacked = queries.apply::<AndNot>(&[&nearest])?.bitwise_count_sum(1)?;
    let rows = |t: Tensor<2, Int>| -> Vec<Vec<i64>> {
        let [m, k] = t.dims();
        let v = t.cast(DType::I64).into_data().try_to_vec::<i64>().unwrap();
        (0..m).map(|i| v[i * k..(i + 1) * k].to_vec()).collect()
    };
    let lacked = rows(lacked).into_iter().flatten().collect();
    Ok((rows(indices), rows(distances), lacked))
}

#[allow(deprecated)] // burn's ndarray backend: the CPU backend this crate runs its CPU kernels for
fn main() -> std::result::Result<(), tensorbits::Error> {
    let mut devices = Vec::new();
    match tensorbits_burn::wgpu_device() {
        Ok(d) => devices.push(("wgpu", d)),
        Err(e) => println!("no GPU ({e}); ndarray alone"),
    }
    devices.push(("ndarray", Device::ndarray()));
    let mut results = Vec::new();
    for (name, device) in &devices {
        let (indices, distances, lacked) = run(device)?;
        println!("{name}: knn indices {indices:?}");
        println!("{name}: knn distances {distances:?}");
        println!("{name}: bits set in the queries but not their nearest other code: {lacked:?}");
        results.push((indices, distances, lacked));
    }
    if results.len() == 2 {
        println!("the two devices agree: {}", results[0] == results[1]);
    }
    Ok(())
}
