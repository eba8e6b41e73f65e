//! CPU benchmarks for BENCHMARKS.md: each op case beside a plain copy of the same bytes (read plus
//! written) on all cores, in the same run, and tiny calls beside hand-written loops.
//!
//! `cargo bench --bench cpu` runs everything; `cargo bench --bench cpu -- tiny` one group
//! (`cdist_few`: a few queries against a database).
//! `python3 benches/report.py` turns criterion's results into the table and chart of BENCHMARKS.md.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Duration;
use tensorbits::ops::{BitCount, BitNot, BitShiftLeft, BitShiftRight, BitXor};
use tensorbits::{Broadcast, Options, Tensor, TensorViewMut, f16};

const MIB64: usize = 64 << 20;

fn data<T: bytemuck::Pod>(bytes: usize, seed: u64) -> Vec<T> {
    // Shift counts mostly in range, but not all.
    let raw: Vec<u8> = xorshift(bytes, seed, |x| x as u8 & 0x1f);
    bytemuck::pod_collect_to_vec(&raw)
}

/// Random codes: every bit set with probability one half, as binary embeddings are.
fn codes(bytes: usize, seed: u64) -> Vec<u8> {
    xorshift(bytes, seed, |x| (x >> 24) as u8)
}

/// `bytes` bytes picked by `pick` from the states of a xorshift generator.
fn xorshift(bytes: usize, seed: u64, pick: impl Fn(u64) -> u8) -> Vec<u8> {
    let mut x = seed | 1;
    (0..bytes)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            pick(x)
        })
        .collect()
}

/// `copy_from_slice` over all cores, in the ranges the executor uses.
fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    let per = (dst.len() / (rayon::current_num_threads() * 4))
        .max(1 << 18)
        .next_multiple_of(64);
    dst.par_chunks_mut(per)
        .zip(src.par_chunks(per))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

fn copy_case(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    moved: usize,
) {
    let src = vec![1u8; moved / 2];
    let mut dst = vec![0u8; moved / 2];
    c.throughput(Throughput::Bytes(moved as u64));
    c.bench_function("copy", |b| {
        b.iter(|| parallel_copy(black_box(&mut dst), black_box(&src)))
    });
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g
}

macro_rules! xor_case {
    ($c:expr, $t:ty, $name:expr) => {{
        let mut g = group($c, concat!("xor_64mib_", $name));
        let n = MIB64 / size_of::<$t>();
        let a = Tensor::from_vec(data::<$t>(MIB64, 1), &[n]).unwrap();
        let b = Tensor::from_vec(data::<$t>(MIB64, 2), &[n]).unwrap();
        let mut out = Tensor::from_vec(data::<$t>(MIB64, 3), &[n]).unwrap();
        g.throughput(Throughput::Bytes(3 * MIB64 as u64));
        g.bench_function("op", |bch| {
            bch.iter(|| BitXor::run_into(&Options::new(), &a, &b, &mut out).unwrap())
        });
        copy_case(&mut g, 3 * MIB64);
        g.finish();
    }};
}

fn xor_64mib(c: &mut Criterion) {
    xor_case!(c, u8, "u8");
    xor_case!(c, u16, "u16");
    xor_case!(c, u32, "u32");
    xor_case!(c, u64, "u64");
    xor_case!(c, f16, "f16");
    xor_case!(c, f32, "f32");
    xor_case!(c, f64, "f64");
}

fn broadcast(c: &mut Criterion) {
    let n = 4096;
    let a = Tensor::from_vec(data::<u32>(n * n * 4, 1), &[n, n]).unwrap();
    let mut out = Tensor::from_vec(data::<u32>(n * n * 4, 3), &[n, n]).unwrap();
    let numpy = Options::new().broadcast(Broadcast::Numpy);
    for (name, shape) in [("row_4096", vec![n]), ("col_4096x1", vec![n, 1])] {
        let mut g = group(c, &format!("broadcast_u32_{name}"));
        let b = Tensor::from_vec(data::<u32>(n * 4, 2), &shape).unwrap();
        let moved = 2 * n * n * 4 + n * 4;
        g.throughput(Throughput::Bytes(moved as u64));
        g.bench_function("op", |bch| {
            bch.iter(|| BitXor::run_into(&numpy, &a, &b, &mut out).unwrap())
        });
        copy_case(&mut g, moved);
        g.finish();
    }
}

macro_rules! unary_cases {
    ($c:expr, $t:ty, $name:expr) => {{
        let n = MIB64 / size_of::<$t>();
        let a = Tensor::from_vec(data::<$t>(MIB64, 1), &[n]).unwrap();
        let b = Tensor::from_vec(data::<$t>(MIB64, 2), &[n]).unwrap();
        let mut out = Tensor::from_vec(data::<$t>(MIB64, 3), &[n]).unwrap();
        let mut counts = Tensor::from_vec(vec![0u8; n], &[n]).unwrap();
        let o = Options::new();
        let mut g = group($c, concat!("not_64mib_", $name));
        g.throughput(Throughput::Bytes(2 * MIB64 as u64));
        g.bench_function("op", |bch| {
            bch.iter(|| BitNot::run_into(&o, &a, &mut out).unwrap())
        });
        copy_case(&mut g, 2 * MIB64);
        g.finish();
        for (label, shift_left) in [("shl", true), ("shr", false)] {
            let mut g = group($c, &format!("{label}_64mib_{}", $name));
            g.throughput(Throughput::Bytes(3 * MIB64 as u64));
            g.bench_function("op", |bch| {
                bch.iter(|| {
                    if shift_left {
                        BitShiftLeft::run_into(&o, &a, &b, &mut out).unwrap()
                    } else {
                        BitShiftRight::run_into(&o, &a, &b, &mut out).unwrap()
                    }
                })
            });
            copy_case(&mut g, 3 * MIB64);
            g.finish();
        }
        let mut g = group($c, concat!("popcount_64mib_", $name));
        let moved = MIB64 + n;
        g.throughput(Throughput::Bytes(moved as u64));
        g.bench_function("op", |bch| {
            bch.iter(|| BitCount::run_into(&o, &a, TensorViewMut::from(&mut counts)).unwrap())
        });
        copy_case(&mut g, moved);
        g.finish();
    }};
}

fn unary(c: &mut Criterion) {
    unary_cases!(c, u8, "u8");
    unary_cases!(c, u32, "u32");
}

/// 64 elements: the library's per-call cost against loops a user would write by hand, on the same
/// buffers (the inputs' and the output's offsets from a cache line and from each other decide
/// whether loads split lines or alias stores 4 KiB apart, and vary with the heap's layout from run
/// to run: 11 to 21 ns for the same hand loop on separate buffers).
fn tiny(c: &mut Criterion) {
    let (ta, tb) = (
        Tensor::from_vec(data::<u32>(256, 1), &[64]).unwrap(),
        Tensor::from_vec(data::<u32>(256, 2), &[64]).unwrap(),
    );
    let mut g = c.benchmark_group("tiny_64_u32");
    g.bench_function(BenchmarkId::new("new_output", "tensorbits"), |bch| {
        bch.iter(|| BitXor::run(black_box(&ta), black_box(&tb)).unwrap())
    });
    g.bench_function(BenchmarkId::new("new_output", "hand_loop"), |bch| {
        bch.iter(|| {
            black_box(ta.data())
                .iter()
                .zip(black_box(tb.data()))
                .map(|(x, y)| x ^ y)
                .collect::<Vec<u32>>()
        })
    });
    let mut out = Tensor::from_vec(vec![0u32; 64], &[64]).unwrap();
    let o = Options::new();
    g.bench_function(BenchmarkId::new("into", "tensorbits"), |bch| {
        bch.iter(|| BitXor::run_into(&o, black_box(&ta), black_box(&tb), &mut out).unwrap())
    });
    // Compiled once for the shapes, as a framework would: only per-call checks remain.
    let d = tensorbits::TensorDesc::new(tensorbits::DataType::U32, &[64]).unwrap();
    let compiled = tensorbits::compile(
        <BitXor as tensorbits::Op>::INFO,
        &tensorbits::Call::default(),
        &[&d, &d],
        &d,
    )
    .unwrap();
    g.bench_function(BenchmarkId::new("into", "tensorbits_compiled"), |bch| {
        bch.iter(|| {
            compiled
                .execute_typed(
                    &[black_box(ta.data()), black_box(tb.data())],
                    out.data_mut(),
                )
                .unwrap()
        })
    });
    g.bench_function(
        BenchmarkId::new("new_output", "tensorbits_compiled"),
        |bch| {
            bch.iter(|| {
                compiled
                    .execute_new::<u32, u32>(&[black_box(ta.data()), black_box(tb.data())])
                    .unwrap()
            })
        },
    );
    g.bench_function(BenchmarkId::new("into", "hand_loop"), |bch| {
        bch.iter(|| {
            let raw = out.data_mut();
            for ((y, x), z) in raw
                .iter_mut()
                .zip(black_box(ta.data()))
                .zip(black_box(tb.data()))
            {
                *y = x ^ z;
            }
            black_box(raw);
        })
    });
    g.finish();
}

/// All-pairs Hamming distances of a few queries against a database, through the entry the Python
/// package's plain-array path calls: the per-call cost and the streaming kernels.
fn cdist_few(c: &mut Criterion) {
    let op = <tensorbits::ops::HammingCdist as tensorbits::Op>::INFO;
    let call = tensorbits::Call::default();
    let mut g = c.benchmark_group("cdist_few");
    for &(m, n, k) in &[
        (1, 1000, 8),
        (1, 1000, 32),
        (10, 1000, 8),
        (10, 1000, 16),
        (100, 1000, 8),
        (100, 1000, 16),
        (100, 1000, 4),
        (1000, 1000, 8),
        (1000, 1000, 32),
        (100, 1000, 64),
        (10, 1000, 64),
        (1, 100_000, 8),
        (1, 100_000, 16),
        (1, 100_000, 256),
        (1, 1_000_000, 16),
        (1, 1_000_000, 256),
        (1, 1000, 256),
        (1, 1000, 2),
        (1, 100_000, 2),
        (1, 1000, 10),
        (10, 1000, 10),
        (1, 100_000, 10),
        (1, 1000, 18),
        (10, 1000, 18),
        (1, 1000, 200),
        (10, 1000, 200),
        (10, 1000, 96),
        (10, 1000, 12),
        (10, 1000, 24),
        (1, 100_000, 48),
        (2, 100_000, 64),
        (3, 100_000, 16),
        (10, 100_000, 8),
        (10, 1000, 256),
    ] {
        let a: Vec<u8> = data(m * k, 3);
        let b: Vec<u8> = data(n * k, 4);
        let mut out = vec![0u8; m * n * 4];
        let u8t = tensorbits::DataType::U8;
        let u32t = tensorbits::DataType::U32;
        g.bench_function(format!("{m}x{n}x{k}B"), |bch| {
            bch.iter(|| {
                tensorbits::execute_pairwise_packed(
                    op,
                    &call,
                    (m, n, k),
                    u8t,
                    u32t,
                    black_box(&a),
                    black_box(&b),
                    &mut out,
                )
                .unwrap()
            })
        });
    }
    g.finish();
}

/// knn through the packed entry point the Python package calls: small `k` over a thousand codes
/// (selection, not counting, bounds these) and large `k` over many.
fn knn(c: &mut Criterion) {
    let op = <tensorbits::ops::HammingCdist as tensorbits::Op>::INFO;
    let call = tensorbits::Call::default();
    let mut g = c.benchmark_group("knn");
    for &(m, n, bytes, k) in &[
        (10, 1000, 8, 10),
        (100, 1000, 4, 10),
        (100, 1000, 8, 10),
        (100, 1000, 8, 1),
        (100, 1000, 8, 100),
        (100, 1000, 4, 100),
        (10000, 1000, 4, 10),
        (100, 1000, 64, 10),
        (10, 100_000, 32, 10),
        (10, 100_000, 8, 1000),
    ] {
        let a = codes(m * bytes, 3);
        let b = codes(n * bytes, 4);
        let mut dist = vec![0u8; m * k * 4];
        let mut idx = vec![0u8; m * k * 8];
        g.bench_function(format!("{m}x{n}x{bytes}B_k{k}"), |bch| {
            bch.iter(|| {
                tensorbits::knn_packed(
                    op,
                    &call,
                    (m, n, bytes),
                    tensorbits::DataType::U8,
                    k,
                    tensorbits::DataType::U32,
                    black_box(&a),
                    black_box(&b),
                    &mut dist,
                    &mut idx,
                )
                .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, tiny, cdist_few, knn, xor_64mib, broadcast, unary);
criterion_main!(benches);
