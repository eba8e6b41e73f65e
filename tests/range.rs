//! `range_search` against the full matrix of results: every hit and only the hits, in FAISS's
//! layout, for distances (`d < radius`) and similarities ranked largest first (`s >= t`), exact
//! thresholds (fractional, at the extremes, infinite), valid bits, both split directions of the
//! work (many queries; one query against many codes) and the errors.

mod common;

use common::Rng;
use tensorbits::{
    BitOrder, Call, DataType, Error, Input, Op, OpInfo, RangeResult, TensorDesc, ops, range_search,
};

/// The op's full `m x n` results of `out` type, as signed integers.
fn matrix(
    op: &OpInfo,
    call: &Call,
    (m, n, k): (usize, usize, usize),
    a: &[u8],
    b: &[u8],
    out: DataType,
) -> Vec<i128> {
    let mut bytes = vec![0u8; m * n * out.size()];
    let done = tensorbits::execute_pairwise_packed(
        op,
        call,
        (m, n, k),
        DataType::U8,
        out,
        a,
        b,
        &mut bytes,
    )
    .unwrap();
    assert!(done);
    bytes
        .chunks_exact(out.size())
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            let v = u64::from_le_bytes(w);
            let bits = out.size() * 8;
            match out.is_signed() {
                true if bits < 64 => i128::from(((v << (64 - bits)) as i64) >> (64 - bits)),
                true => i128::from(v as i64),
                false => i128::from(v),
            }
        })
        .collect()
}

/// The hits the full results give: `value < t`, or `value >= t` largest first, as `(lims,
/// values, indices)`.
fn expected(
    values: &[i128],
    (m, n): (usize, usize),
    t: f64,
    largest: bool,
) -> (Vec<i64>, Vec<i128>, Vec<i64>) {
    let (mut lims, mut vals, mut idx) = (vec![0i64], Vec::new(), Vec::new());
    for i in 0..m {
        for (j, &v) in values[i * n..(i + 1) * n].iter().enumerate() {
            // Exact: integers against the threshold, through its ceiling.
            let pass = match (largest, t) {
                (_, t) if t == f64::INFINITY => !largest,
                (_, t) if t == f64::NEG_INFINITY => largest,
                (true, t) => v >= t.ceil() as i128,
                (false, t) => v < t.ceil() as i128,
            };
            if pass {
                vals.push(v);
                idx.push(j as i64);
            }
        }
        lims.push(idx.len() as i64);
    }
    (lims, vals, idx)
}

fn decoded(r: &RangeResult) -> Vec<i128> {
    let size = r.value_type.size();
    r.values
        .chunks_exact(size)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            let v = u64::from_le_bytes(w);
            let bits = size * 8;
            match r.value_type.is_signed() {
                true if bits < 64 => i128::from(((v << (64 - bits)) as i64) >> (64 - bits)),
                true => i128::from(v as i64),
                false => i128::from(v),
            }
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn check(
    op: &OpInfo,
    call: &Call,
    (m, n, k): (usize, usize, usize),
    a: &[u8],
    b: &[u8],
    out: DataType,
    t: f64,
    largest: bool,
) {
    let full = matrix(op, call, (m, n, k), a, b, out);
    let (lims, vals, idx) = expected(&full, (m, n), t, largest);
    let (da, db) = (
        TensorDesc::new(DataType::U8, &[m, k]).unwrap(),
        TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
    );
    let r = range_search(
        op,
        call,
        &[Input::Bytes(&da, a), Input::Bytes(&db, b)],
        t,
        out,
    )
    .unwrap_or_else(|e| panic!("{} {m}x{n}x{k} t={t}: {e}", op.name()));
    let what = format!("{} {m}x{n}x{k} -> {out}, t = {t}", op.name());
    assert_eq!(r.value_type, out, "{what}");
    assert_eq!(r.lims, lims, "{what}: lims");
    assert_eq!(r.indices, idx, "{what}: indices");
    assert_eq!(decoded(&r), vals, "{what}: values");
}

fn codes(rng: &mut Rng, rows: usize, k: usize, sparse: bool) -> Vec<u8> {
    (0..rows * k)
        .map(|_| match sparse {
            // About one bit in eight set: near codes and ties, as fingerprints have.
            true => (rng.next() & rng.next() & rng.next()) as u8,
            false => rng.next() as u8,
        })
        .collect()
}

#[test]
fn hamming_radius_hits_exactly_those_below_it() {
    let mut rng = Rng(60);
    let op = <ops::HammingCdist as Op>::INFO;
    // Small and large codes; few and many queries; `b` past a tile; one query against many
    // codes (the work split over `b`).
    for &(m, n, k) in &[
        (3usize, 50usize, 1usize),
        (7, 1000, 8),
        (40, 3001, 16),
        (1, 20_003, 32),
        (2, 9001, 12),
        (17, 700, 300),
        (0, 10, 8),
        (5, 0, 8),
    ] {
        let (a, b) = (codes(&mut rng, m, k, true), codes(&mut rng, n, k, true));
        let bits = (8 * k) as f64;
        for t in [
            0.0,
            1.0,
            2.5,
            bits / 8.0,
            bits / 4.0,
            bits,
            bits + 1.0,
            -3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            for out in [DataType::U32, DataType::U16] {
                check(op, &Call::default(), (m, n, k), &a, &b, out, t, false);
            }
        }
    }
}

#[test]
fn largest_first_ops_hit_at_or_above_the_threshold() {
    let mut rng = Rng(61);
    // BINARY_DOT falls as the count grows and ranks the largest first: signed values, both
    // sides of zero.
    let dot = <ops::BinaryDot as Op>::INFO;
    let ham = <ops::HammingCdist as Op>::INFO;
    for &(m, n, k) in &[(4usize, 2000usize, 8usize), (1, 30_001, 16), (9, 513, 3)] {
        let (a, b) = (codes(&mut rng, m, k, false), codes(&mut rng, n, k, false));
        let bits = (8 * k) as f64;
        for t in [-bits, -1.5, 0.0, 2.0, bits / 4.0, bits, bits + 1.0] {
            for out in [DataType::I32, DataType::I16, DataType::I64] {
                check(dot, &Call::default(), (m, n, k), &a, &b, out, t, true);
            }
            // Hamming asked for largest first: the farthest codes.
            let call = Call {
                largest: Some(true),
                ..Call::default()
            };
            check(ham, &call, (m, n, k), &a, &b, DataType::U32, t.abs(), true);
        }
    }
}

#[test]
fn valid_bits_count_only_the_codes_bits() {
    let mut rng = Rng(62);
    let op = <ops::HammingCdist as Op>::INFO;
    for &(m, n, k, bits) in &[(3usize, 500usize, 2usize, 13usize), (2, 4000, 9, 70)] {
        let (a, b) = (codes(&mut rng, m, k, false), codes(&mut rng, n, k, false));
        for order in [BitOrder::Big, BitOrder::Little] {
            let call = Call {
                bits: Some(bits),
                bitorder: order,
                ..Call::default()
            };
            for t in [1.0, (bits / 2) as f64, bits as f64] {
                check(op, &call, (m, n, k), &a, &b, DataType::U32, t, false);
            }
        }
    }
}

#[test]
fn bad_calls_are_typed_errors() {
    let op = <ops::HammingCdist as Op>::INFO;
    let (a, b) = ([0u8; 8], [0u8; 16]);
    let (da, db) = (
        TensorDesc::new(DataType::U8, &[1, 8]).unwrap(),
        TensorDesc::new(DataType::U8, &[2, 8]).unwrap(),
    );
    let ins = [Input::Bytes(&da, &a), Input::Bytes(&db, &b)];
    let call = Call::default();
    let e = range_search(op, &call, &ins, f64::NAN, DataType::U32).unwrap_err();
    assert!(
        matches!(&e, Error::BadArgument { reason, .. } if reason.contains("NaN")),
        "{e}"
    );
    // A batch of matrices: FAISS's layout has one list per query.
    let d3 = TensorDesc::new(DataType::U8, &[1, 2, 8]).unwrap();
    let e = range_search(
        op,
        &call,
        &[Input::Bytes(&da, &a), Input::Bytes(&d3, &b)],
        3.0,
        DataType::U32,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::BadArgument { reason, .. } if reason.contains("[N, K]")),
        "{e}"
    );
    // Codes of other lengths.
    let dk = TensorDesc::new(DataType::U8, &[2, 4]).unwrap();
    assert!(
        range_search(
            op,
            &call,
            &[Input::Bytes(&da, &a), Input::Bytes(&dk, &b[..8])],
            3.0,
            DataType::U32
        )
        .is_err()
    );
    // Not a pairwise sum.
    let xor = <ops::BitXor as Op>::INFO;
    let e = range_search(xor, &call, &ins, 3.0, DataType::U8).unwrap_err();
    assert!(matches!(e, Error::NotAReduction { .. }), "{e}");
    // An output type the op does not give.
    assert!(range_search(op, &call, &ins, 3.0, DataType::I8).is_err());
    // A buffer shorter than its description.
    let e = range_search(
        op,
        &call,
        &[Input::Bytes(&da, &a[..4]), Input::Bytes(&db, &b)],
        3.0,
        DataType::U32,
    )
    .unwrap_err();
    assert!(!e.to_string().is_empty());
}

#[test]
fn typed_methods_give_the_dynamic_hits() {
    use tensorbits::{Options, Tensor};
    let mut rng = Rng(63);
    let (m, n, k) = (4usize, 3000usize, 2usize);
    let words: Vec<u32> = (0..(m + n) * k).map(|_| rng.next() as u32).collect();
    let a = Tensor::from_vec(words[..m * k].to_vec(), &[m, k]).unwrap();
    let b = Tensor::from_vec(words[m * k..].to_vec(), &[n, k]).unwrap();
    let bytes =
        |t: &Tensor<u32>| -> Vec<u8> { t.data().iter().flat_map(|w| w.to_le_bytes()).collect() };
    let (ab, bb) = (bytes(&a), bytes(&b));
    let (da, db) = (
        TensorDesc::new(DataType::U32, &[m, k]).unwrap(),
        TensorDesc::new(DataType::U32, &[n, k]).unwrap(),
    );
    let dynamic = |op: &OpInfo, call: &Call, t: f64, out: DataType| {
        range_search(
            op,
            call,
            &[Input::Bytes(&da, &ab), Input::Bytes(&db, &bb)],
            t,
            out,
        )
        .unwrap()
    };
    let hits = ops::HammingCdist::range_search(&a, &b, 26.0).unwrap();
    let want = dynamic(
        <ops::HammingCdist as Op>::INFO,
        &Call::default(),
        26.0,
        DataType::U32,
    );
    assert!(hits.indices.len() > 20, "too few hits to test");
    assert_eq!(hits.rows(), m);
    assert_eq!(hits.indices, want.indices);
    assert_eq!(
        hits.lims,
        want.lims.iter().map(|&l| l as usize).collect::<Vec<_>>()
    );
    let values: Vec<u8> = hits.values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(values, want.values);
    for i in 0..m {
        let (v, idx) = hits.row(i);
        assert!(v.iter().all(|&d| d < 26) && idx.windows(2).all(|w| w[0] < w[1]));
    }
    // Options: valid bits and the values' type.
    let opts = Options::new().bits(40).output::<i16>();
    let hits = ops::BinaryDot::range_search_with(&opts, &a, &b, 10.0).unwrap();
    let call = Call {
        bits: Some(40),
        ..Call::default()
    };
    let want = dynamic(<ops::BinaryDot as Op>::INFO, &call, 10.0, DataType::I16);
    assert_eq!(hits.indices, want.indices);
    let values: Vec<u8> = hits.values.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(values, want.values);
    assert!(hits.values.iter().all(|&v| v >= 10));
    let e = ops::HammingCdist::range_search(&a, &b, f64::NAN).unwrap_err();
    assert!(matches!(e, Error::BadArgument { .. }), "{e}");
}

#[test]
fn the_gpu_finds_the_cpus_hits() {
    let devices = [common::gpu::gpu(), common::gpu::small_gpu()];
    let mut rng = Rng(64);
    let ham = <ops::HammingCdist as Op>::INFO;
    let dot = <ops::BinaryDot as Op>::INFO;
    for (g, limits) in devices.iter().zip(["default", "small"]) {
        let Some(g) = g else { continue };
        // Small limits split every call into tiles of 256 codes and fill passes of 512 hits.
        for &(m, n, k) in &[
            (3usize, 700usize, 8usize),
            (9, 2500, 4),
            (1, 5000, 16),
            (6, 300, 3),
        ] {
            let (a, b) = (codes(&mut rng, m, k, true), codes(&mut rng, n, k, false));
            let (da, db) = (
                TensorDesc::new(DataType::U8, &[m, k]).unwrap(),
                TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
            );
            let (ba, bb) = (
                g.storage_buffer("a", a.len(), &a).unwrap(),
                g.storage_buffer("b", b.len(), &b).unwrap(),
            );
            let ra = tensorbits::GpuRegion {
                buffer: &ba,
                offset: 0,
                desc: da,
            };
            let rb = tensorbits::GpuRegion {
                buffer: &bb,
                offset: 0,
                desc: db,
            };
            let bits = (8 * k) as f64;
            let largest = Call {
                largest: Some(true),
                ..Call::default()
            };
            let cases: [(&OpInfo, &Call, f64, DataType); 8] = [
                (ham, &Call::default(), bits / 2.0 - 0.5, DataType::U32),
                (ham, &Call::default(), bits / 2.0 + 3.0, DataType::U16),
                (ham, &Call::default(), 0.0, DataType::U32),
                (ham, &Call::default(), f64::INFINITY, DataType::U64),
                (ham, &largest, bits / 2.0 + 4.0, DataType::U32),
                (dot, &Call::default(), 2.0, DataType::I32),
                (dot, &Call::default(), -bits, DataType::I64),
                (dot, &Call::default(), -6.5, DataType::I16),
            ];
            for (op, call, t, out) in cases {
                let want = range_search(
                    op,
                    call,
                    &[Input::Bytes(&da, &a), Input::Bytes(&db, &b)],
                    t,
                    out,
                )
                .unwrap();
                let got = g
                    .range_search(op, call, [&ra, &rb], t, out)
                    .unwrap_or_else(|e| panic!("{limits} {} {m}x{n}x{k} t={t}: {e}", op.name()));
                assert_eq!(
                    got,
                    want,
                    "{limits} {} {m}x{n}x{k} t={t} -> {out}",
                    op.name()
                );
            }
            // Rows read through strides are refused, not misread.
            let strided = tensorbits::GpuRegion {
                buffer: &bb,
                offset: 0,
                desc: TensorDesc::new(DataType::U8, &[n / 2, k])
                    .unwrap()
                    .with_strides(&[2 * k, 1])
                    .unwrap(),
            };
            let e = g
                .range_search(ham, &Call::default(), [&ra, &strided], 3.0, DataType::U32)
                .unwrap_err();
            assert!(matches!(e, Error::GpuUnsupported { .. }), "{e}");
        }
    }
}

/// Valid bits leave counts a call never reaches, whose values wrapped to the output type could
/// pass the threshold: the limit must come from exact values.
#[test]
fn thresholds_at_the_output_types_edge_with_valid_bits() {
    let k = 8192usize;
    let ones = |n: usize| -> Vec<u8> {
        let mut row = vec![0u8; k];
        for bit in 0..n {
            row[bit / 8] |= 0x80 >> (bit % 8);
        }
        row
    };
    let a = vec![0u8; k];
    // Distances over the first 65,535 bits: 65,535, 65,534, 0, 40,000 and 1.
    let b: Vec<u8> = [65_535, 65_534, 0, 40_000, 1]
        .iter()
        .flat_map(|&n| ones(n))
        .collect();
    let ham = <ops::HammingCdist as Op>::INFO;
    let call = Call {
        bits: Some(65_535),
        ..Call::default()
    };
    for t in [65_535.0, 65_534.5, 40_000.0, 2.0] {
        check(ham, &call, (1, 5, k), &a, &b, DataType::U16, t, false);
    }
    // BINARY_DOT over 32,767 bits in i16: values from -32,767 to 32,767.
    let dot = <ops::BinaryDot as Op>::INFO;
    let call = Call {
        bits: Some(32_767),
        ..Call::default()
    };
    let b: Vec<u8> = [32_767, 16_384, 16_383, 0, 20_000]
        .iter()
        .flat_map(|&n| ones(n))
        .collect();
    for t in [0.0, 1.0, -32_767.0, 32_767.0, -1.5] {
        check(dot, &call, (1, 5, k), &a, &b, DataType::I16, t, true);
    }
}
