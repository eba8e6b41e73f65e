//! Binary embeddings and binary networks: affine sums of one bit count (`BINARY_DOT` and this
//! file's own ops), signed outputs and their overflow rule, largest-first knn, and valid bits in
//! both bit orders, on the CPU and the GPU, against brute-force references written here.

mod common;

use common::{Rng, knn_reference};
use tensorbits::{
    BitOrder, Call, DataType, Element, Error, Op, Options, Target, Tensor, bitwise_op, ops,
};

/// `2 * agreements - BITS` written the other way round, for a non-pairwise sum over axes.
#[bitwise_op(
    name = "AGREEMENT_MARGIN",
    inputs = [x, w],
    compute = 2 * (!(x ^ w)).count_ones() - BITS,
    reduce = sum,
    axes = [-1],
    broadcast = [numpy],
    support(EXT = [u8, u16, u32, u64, i8]),
    output = [i32, i64, i16],
)]
pub struct AgreementMargin;

/// Agreements plus a constant, counted three times: an affine op whose values grow with the count,
/// with the default `nearest = smallest`.
#[bitwise_op(
    name = "SHIFTED_AGREEMENTS",
    inputs = [a, b],
    compute = (!(a ^ b)).count_ones() * 3 + 5,
    reduce = sum,
    pairwise,
    support(EXT = [u8, u32]),
    output = [u32, u64, i64],
)]
pub struct ShiftedAgreements;

/// A sum that is negative unless nothing matches: `-7 - x.count_ones()`.
#[bitwise_op(
    name = "NEGATIVE_OVERLAP",
    inputs = [a, b],
    compute = -7 - (a & b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u16]),
    output = [i64, i16],
)]
pub struct NegativeOverlap;

/// A packed code's bit `i` in `order`.
fn bit(row: &[u8], i: usize, order: BitOrder) -> bool {
    row[i / 8] & order.mask(i) != 0
}

/// Random codes of `dt`, as bytes.
fn codes(rng: &mut Rng, dt: DataType, rows: usize, k: usize) -> Vec<u8> {
    (0..rows * k * dt.size())
        .map(|_| rng.next() as u8)
        .collect()
}

/// The reference of a pairwise affine sum over the first `bits` bits of each row (of `k` elements
/// of `es` bytes, little-endian): `f(count)` per element summed, computed bit by bit. `per_bit`
/// gives each valid bit's contribution to the count from the two bits.
fn pair_reference(
    a: &[u8],
    b: &[u8],
    row_bytes: usize,
    bits: usize,
    order: BitOrder,
    per_bit: fn(bool, bool) -> bool,
) -> Vec<i64> {
    let (m, n) = (a.len() / row_bytes, b.len() / row_bytes);
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let (ra, rb) = (
                &a[i * row_bytes..][..row_bytes],
                &b[j * row_bytes..][..row_bytes],
            );
            let count = (0..bits)
                .filter(|&t| per_bit(bit(ra, t, order), bit(rb, t, order)))
                .count();
            out.push(count as i64);
        }
    }
    out
}

/// Reads element `i` of a little-endian buffer of `dt` as a signed or unsigned integer.
fn value(bytes: &[u8], dt: DataType, i: usize) -> i64 {
    let es = dt.size();
    let mut w = [0u8; 8];
    w[..es].copy_from_slice(&bytes[i * es..][..es]);
    let v = u64::from_le_bytes(w);
    match dt.is_signed() {
        true => common::signed(dt, v),
        false => v as i64,
    }
}

fn as_bytes<T: Element>(t: &Tensor<T>) -> Vec<u8> {
    bytemuck::cast_slice(t.data()).to_vec()
}

fn targets() -> Vec<Target<'static>> {
    let mut t = vec![Target::Cpu];
    if let Some(g) = common::gpu::gpu() {
        t.push(Target::Gpu(g));
    }
    t
}

/// `BINARY_DOT` of random rows of every code type into every output type, on every target, equals
/// `bits - 2 * differing bits` bit by bit; odd row lengths and batches included.
#[test]
fn binary_dot_is_the_dot_product_of_signs() {
    let mut rng = Rng(11);
    for target in targets() {
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 2), (7, 70, 3), (17, 33, 9), (2, 300, 16)] {
            macro_rules! case {
                ($t:ty, $o:ty) => {{
                    let dt = <$t>::DATA_TYPE;
                    let (ab, bb) = (codes(&mut rng, dt, m, k), codes(&mut rng, dt, n, k));
                    let a =
                        Tensor::<$t>::from_vec(bytemuck::pod_collect_to_vec(&ab), &[m, k]).unwrap();
                    let b =
                        Tensor::<$t>::from_vec(bytemuck::pod_collect_to_vec(&bb), &[n, k]).unwrap();
                    let got =
                        ops::BinaryDot::run_on(&target, &Options::new().output::<$o>(), &a, &b)
                            .unwrap();
                    let bits = k * dt.bits() as usize;
                    let diff =
                        pair_reference(&ab, &bb, k * dt.size(), bits, BitOrder::Little, |x, y| {
                            x != y
                        });
                    let out = as_bytes(&got);
                    for (i, d) in diff.iter().enumerate() {
                        assert_eq!(
                            value(&out, <$o>::DATA_TYPE, i),
                            bits as i64 - 2 * d,
                            "{} {dt}->{} {m}x{n}x{k} at {i}",
                            target.describe(),
                            <$o>::DATA_TYPE
                        );
                    }
                }};
            }
            case!(u8, i32);
            case!(u16, i16);
            case!(u32, i64);
            case!(u64, i32);
        }
    }
}

/// knn's results as `(value, index)` pairs, row after row.
fn pairs<D: Element + Into<i64>>(d: &Tensor<D>, i: &Tensor<i64>) -> Vec<(i64, i64)> {
    d.data()
        .iter()
        .zip(i.data())
        .map(|(&d, &i)| (d.into(), i))
        .collect()
}

/// knn of every pairwise sum in both orders (the op's `nearest` and each override), on every
/// target: equal to sorting the reference's values, ties by the lower index. Few distinct values
/// (short codes, many rows) make ties everywhere.
#[test]
fn knn_honours_nearest_and_its_overrides() {
    let mut rng = Rng(12);
    for target in targets() {
        for &(m, n, k, kk) in &[
            (3, 50, 1, 5),
            (4, 300, 2, 40),
            (2, 1000, 1, 1000),
            (5, 129, 8, 7),
        ] {
            let ab = codes(&mut rng, DataType::U8, m, k);
            let bb = codes(&mut rng, DataType::U8, n, k);
            let a = Tensor::<u8>::from_vec(ab.clone(), &[m, k]).unwrap();
            let b = Tensor::<u8>::from_vec(bb.clone(), &[n, k]).unwrap();
            let bits = 8 * k;
            let diff = pair_reference(&ab, &bb, k, bits, BitOrder::Big, |x, y| x != y);
            let dot: Vec<i64> = diff.iter().map(|d| bits as i64 - 2 * d).collect();
            let shifted: Vec<i64> = diff
                .iter()
                .map(|d| 3 * (bits as i64 - d) + 5 * k as i64)
                .collect();
            let what = |op: &str, largest: Option<bool>| {
                format!(
                    "{} {op} {m}x{n}x{k} k={kk} largest={largest:?}",
                    target.describe()
                )
            };
            for largest in [None, Some(true), Some(false)] {
                let mut opts = Options::new();
                if let Some(l) = largest {
                    opts = opts.largest(l);
                }
                let (d, i) = ops::BinaryDot::knn_on(&target, &opts, &a, &b, kk).unwrap();
                let want = knn_reference(&dot, n, kk, largest.unwrap_or(true));
                let got = pairs(&d, &i);
                assert_eq!(got, want.concat(), "{}", what("BINARY_DOT", largest));

                let (d, i) = ops::HammingCdist::knn_on(&target, &opts, &a, &b, kk).unwrap();
                let want = knn_reference(&diff, n, kk, largest.unwrap_or(false));
                let got = pairs(&d, &i);
                assert_eq!(got, want.concat(), "{}", what("HAMMING_CDIST", largest));

                let (d, i) = ShiftedAgreements::knn_on(&target, &opts, &a, &b, kk).unwrap();
                let want = knn_reference(&shifted, n, kk, largest.unwrap_or(false));
                let got = pairs(&d, &i);
                assert_eq!(
                    got,
                    want.concat(),
                    "{}",
                    what("SHIFTED_AGREEMENTS", largest)
                );
            }
        }
    }
}

/// A non-pairwise affine sum over the last axis with broadcasting, and one that is always negative,
/// on every target.
#[test]
fn affine_sums_over_axes_and_negative_sums() {
    let mut rng = Rng(13);
    for target in targets() {
        // x [4, 3, 5] u16 against w [3, 5]: per row, 2 * agreements - 80.
        let xb = codes(&mut rng, DataType::U16, 12, 5);
        let wb = codes(&mut rng, DataType::U16, 3, 5);
        let x = Tensor::<u16>::from_vec(bytemuck::pod_collect_to_vec(&xb), &[4, 3, 5]).unwrap();
        let w = Tensor::<u16>::from_vec(bytemuck::pod_collect_to_vec(&wb), &[3, 5]).unwrap();
        let got = AgreementMargin::run_on(&target, &Options::new(), &x, &w).unwrap();
        assert_eq!(got.shape(), &[4, 3]);
        for r in 0..12 {
            let (xr, wr) = (&xb[r * 10..][..10], &wb[(r % 3) * 10..][..10]);
            let agree = (0..80)
                .filter(|&t| bit(xr, t, BitOrder::Little) == bit(wr, t, BitOrder::Little))
                .count() as i32;
            assert_eq!(
                got.data()[r],
                2 * agree - 80,
                "{} row {r}",
                target.describe()
            );
        }
        // -7 per element minus the overlap: [2, 3] x [4, 3] u16.
        let ab = codes(&mut rng, DataType::U16, 2, 3);
        let bb = codes(&mut rng, DataType::U16, 4, 3);
        let a = Tensor::<u16>::from_vec(bytemuck::pod_collect_to_vec(&ab), &[2, 3]).unwrap();
        let b = Tensor::<u16>::from_vec(bytemuck::pod_collect_to_vec(&bb), &[4, 3]).unwrap();
        let got =
            NegativeOverlap::run_on(&target, &Options::new().output::<i16>(), &a, &b).unwrap();
        let both = pair_reference(&ab, &bb, 6, 48, BitOrder::Little, |x, y| x && y);
        let want: Vec<i16> = both.iter().map(|c| (-21 - c) as i16).collect();
        assert_eq!(got.data(), &want[..], "{}", target.describe());
    }
}

/// The overflow rule covers both bounds: a signed output too narrow for the most negative or the
/// most positive result is refused before running, naming the type that fits.
#[test]
fn signed_outputs_refuse_both_bounds() {
    // 4,096 u8 elements: BINARY_DOT reaches -32,768 and 32,768; i16 holds -32,768 to 32,767.
    let a = Tensor::<u8>::from_vec(vec![0; 4096], &[1, 4096]).unwrap();
    let e = ops::BinaryDot::run_with(&Options::new().output::<i16>(), &a, &a).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SumRange {
                lo: -32768,
                hi: 32768,
                ..
            }
        ),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("from -32768 to 32768") && text.contains("is i32"),
        "{text}"
    );
    // One bit fewer fits.
    let a = Tensor::<u8>::from_vec(vec![0; 4095], &[1, 4095]).unwrap();
    let d = ops::BinaryDot::run_with(&Options::new().output::<i16>(), &a, &a).unwrap();
    assert_eq!(d.data(), &[32760i16]);
    // The negative bound alone: -7 per u16 element minus up to 16, in i16: 1,400 elements reach
    // -32,200, 1,500 reach -34,500.
    let a = Tensor::<u16>::from_vec(vec![u16::MAX; 1500], &[1, 1500]).unwrap();
    let e = NegativeOverlap::run_with(&Options::new().output::<i16>(), &a, &a).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SumRange {
                lo: -34500,
                hi: -10500,
                ..
            }
        ),
        "{e}"
    );
    let a = Tensor::<u16>::from_vec(vec![u16::MAX; 1400], &[1, 1400]).unwrap();
    let d = NegativeOverlap::run_with(&Options::new().output::<i16>(), &a, &a).unwrap();
    assert_eq!(d.data(), &[-32200i16]);
}

/// The op's metadata says what the spec says, and the docs keep the user's parentheses.
#[test]
fn metadata_of_affine_ops() {
    let info = <ops::BinaryDot as Op>::INFO;
    assert_eq!(info.compute(), "BITS - 2 * (a ^ b).count_ones()");
    assert_eq!(
        info.affine(),
        Some(tensorbits::Affine {
            constant: 0,
            bits: 1,
            scale: -2
        })
    );
    assert_eq!(info.nearest(), tensorbits::Nearest::Largest);
    assert_eq!(ops::find("xnor_dot").map(|o| o.name()), Some("BINARY_DOT"));
    let m = <AgreementMargin as Op>::INFO;
    assert_eq!(m.compute(), "2 * (!(x ^ w)).count_ones() - BITS");
    assert_eq!(
        m.affine(),
        Some(tensorbits::Affine {
            constant: 0,
            bits: -1,
            scale: 2
        })
    );
    assert_eq!(<ops::HammingCdist as Op>::INFO.affine(), None);
    assert!(Call::default().largest_first(info));
    assert!(!Call::default().largest(false).largest_first(info));
}

/// A count that is not bit-local: valid bits cannot separate its padding.
#[bitwise_op(
    name = "SHIFTED_OVERLAP",
    inputs = [a, b],
    compute = (a & (b << 1)).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
    output = [u32],
)]
pub struct ShiftedOverlap;

/// Codes of `rows` rows of `row_bytes` bytes whose padding after the first `bits` bits (in `order`)
/// is random: what "whatever it holds" means.
fn padded(rng: &mut Rng, rows: usize, row_bytes: usize) -> Vec<u8> {
    (0..rows * row_bytes).map(|_| rng.next() as u8).collect()
}

/// Valid bits in both bit orders, odd counts and whole elements, every code width, padding that
/// holds anything: pairwise (BINARY_DOT, HAMMING_CDIST, an XNOR count), knn in both orders and a
/// non-pairwise sum over the last axis with a broadcast batch, on every target, against the
/// first `bits` bits of each row's bytes.
#[test]
fn valid_bits_count_only_the_first_bits_of_each_row() {
    let mut rng = Rng(14);
    for target in targets() {
        for order in [BitOrder::Big, BitOrder::Little] {
            for &(m, n, row_bytes, bits) in &[
                (3, 5, 1, 5),
                (4, 9, 2, 9),
                (5, 70, 3, 17),
                (2, 40, 8, 63),
                (6, 33, 16, 100),
                (3, 12, 16, 128),
                (2, 8, 8, 0),
                (7, 300, 12, 91),
            ] {
                let (ab, bb) = (
                    padded(&mut rng, m, row_bytes),
                    padded(&mut rng, n, row_bytes),
                );
                let what = format!(
                    "{} {order:?} {m}x{n}, {row_bytes} bytes, {bits} bits",
                    target.describe()
                );
                let opts = Options::new().bits(bits).bitorder(order);
                let diff = pair_reference(&ab, &bb, row_bytes, bits, order, |x, y| x != y);
                macro_rules! typed {
                    ($t:ty) => {{
                        let es = std::mem::size_of::<$t>();
                        if row_bytes % es == 0 {
                            let k = row_bytes / es;
                            let a =
                                Tensor::<$t>::from_vec(bytemuck::pod_collect_to_vec(&ab), &[m, k])
                                    .unwrap();
                            let b =
                                Tensor::<$t>::from_vec(bytemuck::pod_collect_to_vec(&bb), &[n, k])
                                    .unwrap();
                            let dot = ops::BinaryDot::run_on(&target, &opts, &a, &b).unwrap();
                            let want: Vec<i32> =
                                diff.iter().map(|&d| bits as i32 - 2 * d as i32).collect();
                            assert_eq!(
                                dot.data(),
                                &want[..],
                                "BINARY_DOT {} {what}",
                                stringify!($t)
                            );
                            let ham = ops::HammingCdist::run_on(&target, &opts, &a, &b).unwrap();
                            let want: Vec<u32> = diff.iter().map(|&d| d as u32).collect();
                            assert_eq!(
                                ham.data(),
                                &want[..],
                                "HAMMING_CDIST {} {what}",
                                stringify!($t)
                            );
                            let kk = n.min(4);
                            for largest in [false, true] {
                                let o = opts.largest(largest);
                                let (d, i) =
                                    ops::HammingCdist::knn_on(&target, &o, &a, &b, kk).unwrap();
                                let want = knn_reference(&diff, n, kk, largest).concat();
                                let got = pairs(&d, &i);
                                assert_eq!(
                                    got,
                                    want,
                                    "knn largest={largest} {} {what}",
                                    stringify!($t)
                                );
                            }
                        }
                    }};
                }
                typed!(u8);
                typed!(u16);
                typed!(u32);
                typed!(u64);
                // An XNOR count: zeroed padding would count as agreement without the correction.
                let a = Tensor::<u8>::from_vec(ab.clone(), &[m, row_bytes]).unwrap();
                let b = Tensor::<u8>::from_vec(bb.clone(), &[n, row_bytes]).unwrap();
                let got =
                    ShiftedAgreements::run_on(&target, &opts.output::<i64>(), &a, &b).unwrap();
                let k_valid = bits.div_ceil(8) as i64;
                let want: Vec<i64> = diff
                    .iter()
                    .map(|&d| 3 * (bits as i64 - d) + 5 * k_valid)
                    .collect();
                assert_eq!(got.data(), &want[..], "SHIFTED_AGREEMENTS {what}");
                // Over the last axis, `x [2, m, K]` against `w [m, K]` broadcast over the batch.
                let x2: Vec<u8> = [ab.clone(), padded(&mut rng, m, row_bytes)].concat();
                let x = Tensor::<u8>::from_vec(x2.clone(), &[2, m, row_bytes]).unwrap();
                let w = Tensor::<u8>::from_vec(ab.clone(), &[m, row_bytes]).unwrap();
                let got = ops::HammingDistance::run_on(&target, &opts, &x, &w).unwrap();
                for r in 0..2 * m {
                    let (xr, wr) = (
                        &x2[r * row_bytes..][..row_bytes],
                        &ab[(r % m) * row_bytes..][..row_bytes],
                    );
                    let d = (0..bits)
                        .filter(|&t| bit(xr, t, order) != bit(wr, t, order))
                        .count();
                    assert_eq!(got.data()[r] as usize, d, "HAMMING_DISTANCE row {r} {what}");
                }
            }
        }
    }
}

/// Valid bits a call cannot have are errors that say why, before anything runs.
#[test]
fn valid_bits_errors() {
    let a = Tensor::<u16>::from_vec(vec![0; 6], &[2, 3]).unwrap();
    let past = ops::HammingCdist::run_with(&Options::new().bits(49), &a, &a).unwrap_err();
    assert!(
        past.to_string().contains("more than the 48 bits of a row"),
        "{past}"
    );
    ops::HammingCdist::run_with(&Options::new().bits(48), &a, &a).unwrap();
    let x = Tensor::<u8>::from_vec(vec![0; 6], &[2, 3]).unwrap();
    let e = ops::BitXorReduce::run_with(&Options::new().bits(3), &x).unwrap_err();
    assert!(matches!(e, Error::ValidBits { .. }), "{e}");
    let e = ops::HammingDistance::run_with(&Options::new().axes([0]).bits(3), &x, &x).unwrap_err();
    assert!(e.to_string().contains("reduce the last axis alone"), "{e}");
    let e = ops::BitXor::run_with(&Options::new().bits(3), &x, &x).unwrap_err();
    assert!(matches!(e, Error::NotAReduction { .. }), "{e}");
    let e = ShiftedOverlap::run_with(&Options::new().bits(3), &x, &x).unwrap_err();
    assert!(e.to_string().contains("shifts"), "{e}");
    // Whole elements need no zeroing and work for any count.
    ShiftedOverlap::run_with(&Options::new().bits(16), &x, &x).unwrap();
    // A row that repeats one element cannot hold padding apart from valid bits.
    let one = Tensor::<u8>::from_vec(vec![0xff; 2], &[2, 1]).unwrap();
    let e = ops::HammingDistance::run_with(&Options::new().bits(20), &x, &one).unwrap_err();
    assert!(
        matches!(e, Error::ValidBits { .. }) && e.to_string().contains("BTensor"),
        "{e}"
    );
}
