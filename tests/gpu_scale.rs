//! The GPU at the sizes users have, each result byte-compared with the CPU's: knn over a million
//! codes of 32 and of 8 bytes for k = 1, 10, 17 and 100, over a database of equal codes (all ties)
//! with k = N/2, and over more than 128 MiB of codes; sum, and, or and xor reductions over 5M
//! elements (one axis, all axes) and over 70,000 rows along axis 0; a Hamming row of 4M words.
//! Every one of these is past a limit the GPU meets: Mesa's lavapipe ends an invocation after
//! 65,535 loop iterations, and a binding holds at most `max_storage_buffer_binding_size` bytes.

mod common;

use common::{Rng, gpu};
use tensorbits::{BitOrder, Options, Target, Tensor, ops};

/// Runs op `$op` with options `$opts` on the GPU target `$t` and on the CPU, and asserts the same
/// elements.
macro_rules! same_as_cpu {
    ($t:expr, $op:ty, $opts:expr, $($x:expr),+) => {{
        let gpu = <$op>::run_on($t, $opts, $($x),+).unwrap();
        let cpu = <$op>::run_on(&Target::Cpu, $opts, $($x),+).unwrap();
        assert_eq!(gpu.data(), cpu.data(), "{}", stringify!($op));
    }};
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&rng.next().to_le_bytes());
    }
    v.truncate(n);
    v
}

/// knn of `m` random queries against `n` random codes of `bytes` bytes, for each `k`, GPU against
/// CPU. Some queries are copies of database rows, so that distance 0 and near ties occur.
fn knn_case(n: usize, bytes: usize, m: usize, ks: &[usize], seed: u64) {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let db = Tensor::from_vec(random_bytes(n * bytes, seed), &[n, bytes]).unwrap();
    let mut q = random_bytes(m * bytes, seed ^ 1);
    // Half the queries are rows of the database with one byte changed.
    for i in (0..m).step_by(2) {
        let row = (i * 7919) % n;
        q[i * bytes..(i + 1) * bytes].copy_from_slice(&db.data()[row * bytes..(row + 1) * bytes]);
        q[i * bytes] ^= 1;
    }
    let q = Tensor::from_vec(q, &[m, bytes]).unwrap();
    for &k in ks {
        let (gd, gi) = ops::HammingCdist::knn_on(&t, &Options::new(), &q, &db, k).unwrap();
        let (cd, ci) = ops::HammingCdist::knn(&q, &db, k).unwrap();
        assert_eq!(gd.shape(), &[m, k]);
        assert!(
            gd.data() == cd.data(),
            "distances differ: {n} x {bytes} bytes, k = {k}"
        );
        assert!(
            gi.data() == ci.data(),
            "indices differ: {n} x {bytes} bytes, k = {k}"
        );
    }
}

#[test]
fn knn_over_a_million_32_byte_codes() {
    knn_case(1_000_000, 32, 3, &[1, 10, 17, 100], 11);
}

#[test]
fn knn_over_a_million_8_byte_codes() {
    knn_case(1_000_000, 8, 3, &[1, 10, 17, 32, 33, 100], 12);
}

/// More than 128 MiB of codes: the database is split over several bindings.
#[test]
fn knn_over_more_than_128_mib_of_codes() {
    knn_case((130 << 20) / 32, 32, 2, &[5, 40], 13);
}

/// Codes of 9 bytes (not whole 32-bit words): the element-wise knn kernel, in both first-pass
/// modes.
#[test]
fn knn_over_codes_that_are_not_whole_words() {
    knn_case(300_000, 9, 2, &[10, 40], 14);
}

/// Every code equal: every distance ties, and the neighbours are the lowest indices, in order.
#[test]
fn knn_of_all_ties_with_k_half_of_n() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let n = 60_000;
    let db = Tensor::from_vec(vec![0xA5u8; n * 16], &[n, 16]).unwrap();
    let q = Tensor::from_vec(vec![0x0Fu8; 2 * 16], &[2, 16]).unwrap();
    let k = n / 2;
    let (gd, gi) = ops::HammingCdist::knn_on(&t, &Options::new(), &q, &db, k).unwrap();
    let (cd, ci) = ops::HammingCdist::knn(&q, &db, k).unwrap();
    assert!(gd.data() == cd.data() && gi.data() == ci.data());
    let want: Vec<i64> = (0..2).flat_map(|_| 0..k as i64).collect();
    assert!(gi.data() == want.as_slice());
    // k = N: every row, in index order.
    let (_, gi) = ops::HammingCdist::knn_on(&t, &Options::new(), &q, &db, n).unwrap();
    let want: Vec<i64> = (0..2).flat_map(|_| 0..n as i64).collect();
    assert!(gi.data() == want.as_slice());
}

/// The four reductions over 5M u8 elements, over all axes and over one, GPU against CPU.
#[test]
fn reductions_over_five_million_elements() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let n = 5_000_000;
    let x = Tensor::from_vec(random_bytes(n, 21), &[n]).unwrap();
    let x2 = Tensor::from_vec(x.data().to_vec(), &[2, n / 2]).unwrap();
    let all = Options::new();
    let last = Options::new().axes([-1]);
    for (input, opts) in [(&x, &all), (&x2, &all), (&x2, &last)] {
        same_as_cpu!(&t, ops::BitCountSum, &(*opts).output::<u32>(), input);
        same_as_cpu!(&t, ops::BitAndReduce, opts, input);
        same_as_cpu!(&t, ops::BitOrReduce, opts, input);
        same_as_cpu!(&t, ops::BitXorReduce, opts, input);
    }
    // And a full sum that is not small: every bit set.
    let ones = Tensor::from_vec(vec![0xFFu8; n], &[n]).unwrap();
    let s = ops::BitCountSum::run_on(&t, &all.output::<u32>(), &ones).unwrap();
    assert_eq!(s.data(), &[8 * n as u32]);
}

/// 70,000 rows reduced along axis 0 (an outer axis: many outputs, each a long strided column).
#[test]
fn reductions_over_seventy_thousand_rows_along_axis_0() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let (rows, cols) = (70_000, 300);
    let x = Tensor::from_vec(random_bytes(rows * cols, 22), &[rows, cols]).unwrap();
    let opts = Options::new().axes([0]);
    same_as_cpu!(&t, ops::BitCountSum, &opts.output::<u32>(), &x);
    same_as_cpu!(&t, ops::BitXorReduce, &opts, &x);
    same_as_cpu!(&t, ops::BitOrReduce, &opts, &x);
    same_as_cpu!(&t, ops::BitAndReduce, &opts, &x);
}

/// A Hamming distance over one row of 4M words, and a pairwise distance between rows of 1M words.
#[test]
fn hamming_over_a_row_of_four_million_words() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let n = 4 << 20;
    let words = |seed| -> Vec<u32> {
        random_bytes(n * 4, seed)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let a = Tensor::from_vec(words(31), &[1, n]).unwrap();
    let b = Tensor::from_vec(words(32), &[1, n]).unwrap();
    same_as_cpu!(
        &t,
        ops::HammingDistance,
        &Options::new().output::<u32>(),
        &a,
        &b
    );
    let a = Tensor::from_vec(a.data().to_vec(), &[4, n / 4]).unwrap();
    let b = Tensor::from_vec(b.data().to_vec(), &[4, n / 4]).unwrap();
    same_as_cpu!(&t, ops::HammingCdist, &Options::new(), &a, &b);
}

/// A device lost mid-session (here destroyed) makes every entry point return an error, never a
/// panic and never a result: element-wise ops, reductions, knn, and the regions of `execute`.
#[test]
fn a_lost_device_is_an_error_through_every_entry_point() {
    if gpu::gpu().is_none() {
        return;
    }
    let g = tensorbits::GpuExecutor::new_blocking().unwrap();
    let t = Target::Gpu(&g);
    let x = Tensor::from_vec(random_bytes(1 << 16, 41), &[256, 256]).unwrap();
    let o = Options::new().axes([0]);
    ops::BitXorReduce::run_on(&t, &o, &x).expect("runs before the loss");
    let region_buf = g.storage_buffer("out", 256, &[7; 256]).unwrap();
    g.device().destroy();
    let e = ops::BitXorReduce::run_on(&t, &o, &x).unwrap_err();
    assert!(
        matches!(
            e,
            tensorbits::Error::Gpu { .. } | tensorbits::Error::AllocationFailed { .. }
        ),
        "{e}"
    );
    assert!(ops::BitXor::run_on(&t, &Options::new(), &x, &x).is_err());
    assert!(ops::HammingCdist::knn_on(&t, &Options::new(), &x, &x, 3).is_err());
    let desc = tensorbits::TensorDesc::new(tensorbits::DataType::U8, &[256]).unwrap();
    let input = g.storage_buffer("in", 256, &[1; 256]);
    if let Ok(input) = input {
        let r = g.execute(
            <ops::BitNot as tensorbits::Op>::INFO,
            &tensorbits::Call::default(),
            &[tensorbits::GpuInput::Region(tensorbits::GpuRegion {
                buffer: &input,
                offset: 0,
                desc,
            })],
            &tensorbits::GpuRegion {
                buffer: &region_buf,
                offset: 0,
                desc,
            },
            None,
        );
        assert!(r.is_err());
    }
}

/// Reductions over more than 128 MiB (lavapipe's and wgpu's default binding limit): the reduced
/// elements of one output are cut into pieces that each fit a binding.
#[test]
fn reductions_over_more_than_128_mib() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let n = (130 << 20) / 4;
    let words: Vec<u32> = random_bytes(n * 4, 51)
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let x = Tensor::from_vec(words, &[n]).unwrap();
    let all = Options::new();
    same_as_cpu!(&t, ops::BitCountSum, &all.output::<u64>(), &x);
    same_as_cpu!(&t, ops::BitXorReduce, &all, &x);
    let x2 = Tensor::from_vec(x.data().to_vec(), &[n / 8, 8]).unwrap();
    let axis0 = Options::new().axes([0]);
    same_as_cpu!(&t, ops::BitOrReduce, &axis0, &x2);
}

/// Reduced axes that do not collapse into one (0 and 2 of three): each element's place is decoded
/// over both, and each output's 90,000 elements are folded in several chunks and merged.
#[test]
fn reductions_over_two_axes_that_do_not_collapse() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let x = Tensor::from_vec(random_bytes(300 * 70 * 300, 61), &[300, 70, 300]).unwrap();
    for axes in [[0i64, 2], [0, 1]] {
        let opts = Options::new().axes(tensorbits::Axes::new(&axes).unwrap());
        same_as_cpu!(&t, ops::BitCountSum, &opts.output::<u32>(), &x);
        same_as_cpu!(&t, ops::BitXorReduce, &opts, &x);
    }
}

/// Pairwise distances over rows longer than one chunk: rows of an odd number of bytes (the element
/// kernel) past 65,535 elements, and rows of whole words past 128 MiB (the words kernel), cut into
/// pieces that fit a binding; the chunks' partial sums are merged.
#[test]
fn cdist_over_long_rows_and_more_than_128_mib() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let k = 300_001;
    let a = Tensor::from_vec(random_bytes(3 * k, 71), &[3, k]).unwrap();
    let b = Tensor::from_vec(random_bytes(2 * k, 72), &[2, k]).unwrap();
    same_as_cpu!(&t, ops::HammingCdist, &Options::new(), &a, &b);
    let k = (130 << 20) / 4;
    let words = |n: usize, seed| -> Vec<u32> {
        random_bytes(n * 4, seed)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let a = Tensor::from_vec(words(k, 73), &[1, k]).unwrap();
    let b = Tensor::from_vec(words(2 * k, 74), &[2, k]).unwrap();
    same_as_cpu!(&t, ops::HammingCdist, &Options::new(), &a, &b);
}

/// A broadcast element-wise op with more than 128 MiB of output (the strided kernel, split into
/// dispatches that fit a binding).
#[test]
fn a_broadcast_op_over_more_than_128_mib() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let n = (70 << 20) / 4;
    let words = |seed| -> Vec<u32> {
        random_bytes(n * 4, seed)
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let a = Tensor::from_vec(words(81), &[n]).unwrap();
    let b = Tensor::from_vec([words(82), words(83)].concat(), &[2, n]).unwrap();
    same_as_cpu!(&t, ops::BitXor, &Options::new(), &b, &a);
}

/// Dot products of ±1 codes (an affine sum, ranked largest first) with valid bits, past the GPU's
/// limits: knn over 600,000 codes of 32 bytes with 250 of their 256 bits valid (the padding is
/// cleared by a shader over a scratch copy of the database, more than 65,535 workgroups of it) for
/// k = 10 and 100 in both bit orders and smallest first; all-pairs products of one query against
/// more than 128 MiB of codes (the cleared copy split over bindings); rows longer than one chunk,
/// whose partial counts merge before the epilogue maps them.
#[test]
fn binary_dot_with_valid_bits_at_scale() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let (n, bytes) = (600_000, 32);
    let db = Tensor::from_vec(random_bytes(n * bytes, 81), &[n, bytes]).unwrap();
    let mut q = random_bytes(3 * bytes, 82);
    q[..bytes].copy_from_slice(&db.data()[4321 * bytes..4322 * bytes]);
    let q = Tensor::from_vec(q, &[3, bytes]).unwrap();
    for order in [BitOrder::Big, BitOrder::Little] {
        let opts = Options::new().bits(250).bitorder(order);
        for (o, k) in [(opts, 10), (opts, 100), (opts.largest(false), 17)] {
            let (gd, gi) = ops::BinaryDot::knn_on(&t, &o, &q, &db, k).unwrap();
            let (cd, ci) = ops::BinaryDot::knn_on(&Target::Cpu, &o, &q, &db, k).unwrap();
            assert!(
                gd.data() == cd.data() && gi.data() == ci.data(),
                "BINARY_DOT knn {order:?} k = {k}"
            );
        }
    }
    // The query equal to row 4321 has the largest product there: all 250 bits agree.
    let (d, i) = ops::BinaryDot::knn_on(&t, &Options::new().bits(250), &q, &db, 1).unwrap();
    assert_eq!((d.data()[0], i.data()[0]), (250, 4321));
    let big = (130 << 20) / bytes;
    let db = Tensor::from_vec(random_bytes(big * bytes, 83), &[big, bytes]).unwrap();
    let q = Tensor::from_vec(random_bytes(bytes, 84), &[1, bytes]).unwrap();
    same_as_cpu!(
        &t,
        ops::BinaryDot,
        &Options::new().bits(251).bitorder(BitOrder::Little),
        &q,
        &db
    );
    let k = 300_001;
    let a = Tensor::from_vec(random_bytes(2 * k, 85), &[2, k]).unwrap();
    let b = Tensor::from_vec(random_bytes(3 * k, 86), &[3, k]).unwrap();
    same_as_cpu!(&t, ops::BinaryDot, &Options::new().bits(8 * k - 3), &a, &b);
}

/// A read-back past the staging buffer's 64 MiB goes through it in parts: every byte arrives, at
/// an offset into the buffer, for a length that is not a multiple of 4, and nothing past the
/// destination is written.
#[test]
fn reading_back_more_than_one_staging_buffer() {
    let Some(g) = gpu::gpu() else { return };
    let bytes = random_bytes((130 << 20) + 12, 91);
    let buffer = g
        .storage_buffer("read-back test", bytes.len(), &bytes)
        .unwrap();
    for (offset, len) in [
        (0, bytes.len()),
        (8, (64 << 20) + 1),
        (4, (128 << 20) + 3),
        (0, 3),
    ] {
        let mut out = vec![0xA5u8; len + 16];
        g.read_into(&buffer, offset as u64, &mut out[..len])
            .unwrap();
        assert!(
            out[..len] == bytes[offset..offset + len],
            "offset {offset}, {len} bytes"
        );
        assert!(
            out[len..].iter().all(|&b| b == 0xA5),
            "written past {len} bytes"
        );
    }
    let all = g.read_bytes(&buffer, 0, bytes.len() as u64).unwrap();
    assert!(all == bytes);
}
