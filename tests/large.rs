//! Tensors above the CPU executor's thresholds, so the thread pool, streaming stores, ranges that
//! start and end mid-row, and scattered (strided) outputs are all exercised, each checked element by
//! element against a plain loop.

use tensorbits::ops::{BitCount, BitNot, BitShiftRight, BitXor};
use tensorbits::{Broadcast, Options, Tensor, TensorView, TensorViewMut};

fn pattern_u32(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ seed.rotate_left(i % 32))
        .collect()
}

#[test]
fn contiguous_xor_u8_above_the_streaming_threshold() {
    let n = 12 * 1024 * 1024 + 5;
    let a: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
    let b: Vec<u8> = (0..n).map(|i| (i >> 5) as u8).collect();
    let y = BitXor::run(
        &Tensor::from_vec(a.clone(), &[n]).unwrap(),
        &Tensor::from_vec(b.clone(), &[n]).unwrap(),
    )
    .unwrap();
    assert!(
        y.data()
            .iter()
            .zip(a.iter().zip(&b))
            .all(|(&y, (&a, &b))| y == a ^ b)
    );
}

#[test]
fn broadcast_rows_and_columns_split_mid_row() {
    // 3 rows of an odd length: the thread pool's ranges begin and end inside rows.
    let (r, c) = (3, 1_000_003);
    let a = Tensor::from_vec(pattern_u32(r * c, 1), &[r, c]).unwrap();
    let row = Tensor::from_vec(pattern_u32(c, 2), &[c]).unwrap();
    let col = Tensor::from_vec(pattern_u32(r, 3), &[r, 1]).unwrap();
    let numpy = Options::new().broadcast(Broadcast::Numpy);
    let y = BitXor::run_with(&numpy, &a, &row).unwrap();
    let z = BitXor::run_with(&numpy, &a, &col).unwrap();
    for i in 0..r {
        for j in 0..c {
            let v = a.data()[i * c + j];
            assert_eq!(
                y.data()[i * c + j],
                v ^ row.data()[j],
                "row broadcast at [{i}, {j}]"
            );
            assert_eq!(
                z.data()[i * c + j],
                v ^ col.data()[i],
                "column broadcast at [{i}, {j}]"
            );
        }
    }
}

#[test]
fn large_in_place_and_counts() {
    let n = 3_000_001;
    let v: Vec<u16> = (0..n).map(|i| (i * 31) as u16).collect();
    let mut t = Tensor::from_vec(v.clone(), &[n]).unwrap();
    BitNot::run_in_place_input(&Options::new(), &mut t).unwrap();
    assert!(t.data().iter().zip(&v).all(|(&y, &x)| y == !x));
    let x = Tensor::from_vec(pattern_u32(n, 9), &[n]).unwrap();
    let c: Tensor<u8> = BitCount::run(&x).unwrap();
    assert!(
        c.data()
            .iter()
            .zip(x.data())
            .all(|(&c, &x)| c as u32 == x.count_ones())
    );
    let s = Tensor::from_vec((0..n as u32).map(|i| i % 40).collect(), &[n]).unwrap();
    let r = BitShiftRight::run(&x, &s).unwrap();
    assert!(
        r.data()
            .iter()
            .zip(x.data().iter().zip(s.data()))
            .all(|(&r, (&x, &s))| r == x.checked_shr(s).unwrap_or(0))
    );
}

#[test]
fn transposed_output_is_scattered() {
    let n = 1500;
    let a = Tensor::from_vec(pattern_u32(n * n, 4), &[n, n]).unwrap();
    let b = Tensor::from_vec(pattern_u32(n * n, 5), &[n, n]).unwrap();
    let mut buf = vec![0u32; n * n];
    // Write element [i, j] at buf[j * n + i]: the output's strides are (1, n).
    let out = TensorViewMut::with_strides(&mut buf, &[n, n], &[1, n]).unwrap();
    BitXor::run_into(
        &Options::new(),
        &a,
        TensorView::new(b.data(), &[n, n]).unwrap(),
        out,
    )
    .unwrap();
    for i in 0..n {
        for j in 0..n {
            assert_eq!(
                buf[j * n + i],
                a.data()[i * n + j] ^ b.data()[i * n + j],
                "[{i}, {j}]"
            );
        }
    }
}

/// A pairwise op packs a strided input's rows; a broadcast input of rows of 2^40 bytes (one byte of
/// memory) would need 2 TiB for that copy, which is an `AllocationFailed` error, never an abort,
/// and leaves the output untouched.
#[test]
fn a_packed_copy_that_cannot_be_had_is_an_error() {
    use tensorbits::ops::HammingCdist;
    let one = [0x5Au8];
    let k = 1usize << 40;
    let a = TensorView::with_strides(&one, &[2, k], &[0, 0]).unwrap();
    let o64 = Options::new().output::<u64>();
    let e = HammingCdist::run_with(&o64, a, a).unwrap_err();
    assert!(
        matches!(e, tensorbits::Error::AllocationFailed { .. }),
        "{e}"
    );
    let e = HammingCdist::knn_with(&o64, a, a, 1).unwrap_err();
    assert!(
        matches!(e, tensorbits::Error::AllocationFailed { .. }),
        "{e}"
    );
    let mut out = vec![7u64; 4];
    let e = HammingCdist::run_into(
        &Options::new(),
        a,
        a,
        TensorViewMut::new(&mut out, &[2, 2]).unwrap(),
    );
    assert!(e.is_err());
    assert_eq!(out, [7; 4], "nothing written");
}

/// All-pairs distances whose output (136 MB of `u32`) is past the size from which the pairwise
/// kernels store around the caches (a quarter of the last-level cache, 8 MB at least), for a few
/// queries (whose columns the threads split) on codes of 2 bytes (sixteen per register) and for
/// more (whose rows they split) on codes of 8 (eight): every element against a plain loop.
#[test]
fn cdist_outputs_past_the_caches() {
    use tensorbits::ops::HammingCdist;
    for (m, n, bytes) in [(2, 17_000_003, 2), (20, 1_700_011, 8)] {
        let a: Vec<u8> = pattern_u32(m * bytes, 7).iter().map(|&x| x as u8).collect();
        let b: Vec<u8> = pattern_u32(n * bytes, 11)
            .iter()
            .map(|&x| (x >> 3) as u8)
            .collect();
        let d = HammingCdist::run(
            &Tensor::from_vec(a.clone(), &[m, bytes]).unwrap(),
            &Tensor::from_vec(b.clone(), &[n, bytes]).unwrap(),
        )
        .unwrap();
        assert_eq!(d.shape(), &[m, n]);
        for (i, q) in a.chunks_exact(bytes).enumerate() {
            let row = &d.data()[i * n..(i + 1) * n];
            let bad = b.chunks_exact(bytes).zip(row).position(|(x, &got)| {
                got != q
                    .iter()
                    .zip(x)
                    .map(|(p, r)| (p ^ r).count_ones())
                    .sum::<u32>()
            });
            assert_eq!(bad, None, "{m} x {n} x {bytes} B, row {i}");
        }
    }
}
