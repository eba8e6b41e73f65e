//! Ratio ops (TANIMOTO, DICE and a declared one) against a reference written here: each pair's
//! counts from its valid bits, the exact fraction, its rounding, knn's ranking and range search's
//! hits decided with integers. Rows of every size class the kernels treat apart, empty rows,
//! valid bits in both bit orders, both output types, thresholds at achievable values and between.

mod common;

use common::Rng;
use std::cmp::Ordering;
use tensorbits::{
    BitOrder, Call, Counts, DataType, Input, Op, OpInfo, Ratio, TensorDesc, bitwise_op, knn, ops,
    range_search,
};

/// The Kulczynski-like ratio of a spec with every kind of term: constants, `BITS`, negative
/// multiples, counts of `a` alone and of a function that is one on two zeros.
#[bitwise_op(
    inputs = [a, b],
    compute = (3 * (a & b).count_ones() + 1) / (BITS + (!(a ^ b)).count_ones() - (a & !b).count_ones() + 2),
    reduce = sum,
    pairwise,
    support(EXT = [u8]),
)]
pub struct Mixed;

/// The valid bits of a row: its first `bits` (all by default), in `order`.
fn bit(row: &[u8], i: usize, order: BitOrder) -> bool {
    let byte = row[i / 8];
    match order {
        BitOrder::Big => byte >> (7 - i % 8) & 1 == 1,
        BitOrder::Little => byte >> (i % 8) & 1 == 1,
    }
}

/// `(N, D)` of a pair, from a truth-table walk over its valid bits.
fn parts(
    ratio: Ratio,
    a: &[u8],
    b: &[u8],
    bits: usize,
    order: BitOrder,
    es: usize,
) -> (i128, i128) {
    let (mut na, mut nb, mut both) = (0i128, 0i128, 0i128);
    for i in 0..bits {
        let (x, y) = (bit(a, i, order), bit(b, i, order));
        na += i128::from(x);
        nb += i128::from(y);
        both += i128::from(x && y);
    }
    let elements = bits.div_ceil(es * 8) as i128;
    let side = |c: Counts| {
        i128::from(c.constant) * elements
            + i128::from(c.bits) * bits as i128
            + i128::from(c.a) * na
            + i128::from(c.b) * nb
            + i128::from(c.both) * both
    };
    (side(ratio.num), side(ratio.den))
}

/// A fraction with a positive denominator, or an infinity (`(+-1, 0)`), or 0 for 0 / 0.
fn normal((n, d): (i128, i128)) -> (i128, i128) {
    match d {
        0 if n == 0 => (0, 1),
        0 => (n.signum(), 0),
        _ if d < 0 => (-n, -d),
        _ => (n, d),
    }
}

fn cmp(x: (i128, i128), y: (i128, i128)) -> Ordering {
    let ((xn, xd), (yn, yd)) = (normal(x), normal(y));
    match (xd, yd) {
        (0, 0) => xn.cmp(&yn),
        (0, _) => xn.cmp(&0),
        (_, 0) => 0.cmp(&yn),
        _ => (xn * yd).cmp(&(yn * xd)),
    }
}

/// `n / d` against an `f64` threshold, exactly.
fn cmp_threshold(x: (i128, i128), t: f64) -> Ordering {
    if t.is_infinite() {
        return cmp(x, (t.signum() as i128, 0));
    }
    // `t = m * 2^e`, and `n / d` against it as `n * 2^-e` against `m * d` (or the other way).
    let bits = t.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let m = (bits & ((1 << 52) - 1)) as i128 | if exp == 0 { 0 } else { 1 << 52 };
    let e = if exp == 0 { -1074 } else { exp - 1075 };
    let m = if t < 0.0 { -m } else { m };
    let (n, d) = normal(x);
    if d == 0 {
        return n.cmp(&0);
    }
    // Thresholds here are near the values: the shifts stay in range.
    match e {
        0.. => n.cmp(&((m * d) << e)),
        _ if e > -100 => (n << -e).cmp(&(m * d)),
        _ => n.signum().cmp(&m.signum()),
    }
}

fn value(x: (i128, i128), out: DataType) -> u64 {
    let (n, d) = x;
    let q = if n == 0 && d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    };
    match out {
        // `|n|` and `|d|` are below 2^24 here: rounded once through f64.
        DataType::F32 => u64::from((q as f32).to_bits()),
        _ => q.to_bits(),
    }
}

fn read(bytes: &[u8], out: DataType) -> Vec<u64> {
    bytes
        .chunks_exact(out.size())
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

fn codes(rng: &mut Rng, rows: usize, k: usize, density: u32) -> Vec<u8> {
    let mut v: Vec<u8> = (0..rows * k)
        .map(|_| {
            let mut x = rng.next() as u8;
            for _ in 0..density {
                x &= rng.next() as u8;
            }
            x
        })
        .collect();
    // Some empty rows: 0 / 0 for two of them.
    for r in (0..rows).step_by(5) {
        v[r * k..(r + 1) * k].fill(0);
    }
    v
}

struct Case<'a> {
    op: &'static OpInfo,
    call: Call,
    m: usize,
    n: usize,
    k: usize,
    a: &'a [u8],
    b: &'a [u8],
}

impl Case<'_> {
    fn bits(&self) -> usize {
        self.call.bits.unwrap_or(self.k * 8)
    }

    fn pair(&self, i: usize, j: usize) -> (i128, i128) {
        let (a, b) = (
            &self.a[i * self.k..][..self.k],
            &self.b[j * self.k..][..self.k],
        );
        let ratio = self.op.ratio().expect("a ratio op");
        parts(ratio, a, b, self.bits(), self.call.bitorder, 1)
    }

    fn inputs<'d>(&'d self, da: &'d TensorDesc, db: &'d TensorDesc) -> [Input<'d>; 2] {
        [Input::Bytes(da, self.a), Input::Bytes(db, self.b)]
    }

    fn descs(&self) -> (TensorDesc, TensorDesc) {
        (
            TensorDesc::new(DataType::U8, &[self.m, self.k]).unwrap(),
            TensorDesc::new(DataType::U8, &[self.n, self.k]).unwrap(),
        )
    }

    fn what(&self) -> String {
        format!(
            "{} {}x{}x{} bits {:?} {:?}",
            self.op.name(),
            self.m,
            self.n,
            self.k,
            self.call.bits,
            self.call.bitorder
        )
    }

    fn check_matrix(&self, out: DataType) {
        let (da, db) = self.descs();
        let od = TensorDesc::new(out, &[self.m, self.n]).unwrap();
        let mut bytes = vec![0u8; self.m * self.n * out.size()];
        tensorbits::execute(self.op, &self.call, &self.inputs(&da, &db), &od, &mut bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", self.what()));
        let got = read(&bytes, out);
        for i in 0..self.m {
            for j in 0..self.n {
                let want = value(self.pair(i, j), out);
                assert_eq!(
                    got[i * self.n + j],
                    want,
                    "{} [{i}, {j}] {out}",
                    self.what()
                );
            }
        }
    }

    fn check_knn(&self, kk: usize, largest: bool, out: DataType) {
        let (da, db) = self.descs();
        let call = Call {
            largest: Some(largest),
            ..self.call
        };
        let dd = TensorDesc::new(out, &[self.m, kk]).unwrap();
        let id = TensorDesc::new(DataType::I64, &[self.m, kk]).unwrap();
        let mut dist = vec![0u8; self.m * kk * out.size()];
        let mut idx = vec![0u8; self.m * kk * 8];
        knn(
            self.op,
            &call,
            &self.inputs(&da, &db),
            kk,
            (&dd, &mut dist),
            (&id, &mut idx),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", self.what()));
        let (dist, idx) = (read(&dist, out), read(&idx, DataType::I64));
        for i in 0..self.m {
            let mut order: Vec<usize> = (0..self.n).collect();
            order.sort_by(|&x, &y| {
                let c = cmp(self.pair(i, x), self.pair(i, y));
                let c = if largest { c.reverse() } else { c };
                c.then(x.cmp(&y))
            });
            for (r, &j) in order[..kk].iter().enumerate() {
                let what = format!(
                    "{} knn k={kk} largest={largest} row {i} rank {r}",
                    self.what()
                );
                assert_eq!(idx[i * kk + r], j as u64, "{what}");
                assert_eq!(dist[i * kk + r], value(self.pair(i, j), out), "{what}");
            }
        }
    }

    fn check_range(&self, t: f64, largest: bool, out: DataType) {
        let (da, db) = self.descs();
        let call = Call {
            largest: Some(largest),
            ..self.call
        };
        let r = range_search(self.op, &call, &self.inputs(&da, &db), t, out)
            .unwrap_or_else(|e| panic!("{}: {e}", self.what()));
        let (mut lims, mut vals, mut idx) = (vec![0i64], Vec::new(), Vec::new());
        for i in 0..self.m {
            for j in 0..self.n {
                let x = self.pair(i, j);
                let pass = match largest {
                    true => cmp_threshold(x, t) != Ordering::Less,
                    false => cmp_threshold(x, t) == Ordering::Less,
                };
                if pass {
                    vals.push(value(x, out));
                    idx.push(j as i64);
                }
            }
            lims.push(idx.len() as i64);
        }
        let what = format!("{} range t={t:e} largest={largest}", self.what());
        assert_eq!(r.lims, lims, "{what}: lims");
        assert_eq!(r.indices, idx, "{what}: indices");
        assert_eq!(read(&r.values, out), vals, "{what}: values");
    }
}

fn ratio_ops() -> [&'static OpInfo; 3] {
    [
        <ops::Tanimoto as Op>::INFO,
        <ops::Dice as Op>::INFO,
        <Mixed as Op>::INFO,
    ]
}

#[test]
fn the_ops_declare_their_ratios() {
    let t = <ops::Tanimoto as Op>::INFO.ratio().unwrap();
    assert_eq!(
        (t.num, t.den),
        (
            Counts {
                both: 1,
                ..Counts::default()
            },
            Counts {
                a: 1,
                b: 1,
                both: -1,
                ..Counts::default()
            }
        )
    );
    let d = <ops::Dice as Op>::INFO.ratio().unwrap();
    assert_eq!(
        (d.num, d.den),
        (
            Counts {
                both: 2,
                ..Counts::default()
            },
            Counts {
                a: 1,
                b: 1,
                ..Counts::default()
            }
        )
    );
    // `!(a ^ b)` counts `W - |a| - |b| + 2|a & b|`; `a & !b` counts `|a| - |a & b|`.
    let m = <Mixed as Op>::INFO.ratio().unwrap();
    assert_eq!(
        m.den,
        Counts {
            constant: 2,
            bits: 2,
            a: -2,
            b: -1,
            both: 3
        }
    );
    assert!(<ops::HammingCdist as Op>::INFO.ratio().is_none());
    assert_eq!(
        tensorbits::ops::find("jaccard").map(|o| o.name()),
        Some("TANIMOTO")
    );
}

#[test]
fn results_are_the_exact_fractions_rounded_once() {
    let mut rng = Rng(130);
    // Codes of 1 to 300 bytes (under a word, whole words, a word and a part, streamed and tiled
    // sizes); one query and many; `b` past a tile.
    for &(m, n, k) in &[
        (1usize, 40usize, 1usize),
        (3, 70, 3),
        (9, 33, 8),
        (2, 600, 12),
        (17, 65, 16),
        (5, 300, 32),
        (1, 1000, 64),
        (11, 40, 128),
        (4, 30, 256),
        (3, 20, 300),
        (0, 5, 8),
        (4, 0, 8),
    ] {
        let (a, b) = (codes(&mut rng, m, k, 2), codes(&mut rng, n, k, 1));
        for op in ratio_ops() {
            for (bits, order) in [
                (None, BitOrder::Big),
                (Some(k * 8 - 3), BitOrder::Big),
                (Some((k * 8).saturating_sub(13).max(1)), BitOrder::Little),
            ] {
                let call = Call {
                    bits,
                    bitorder: order,
                    ..Call::default()
                };
                let case = Case {
                    op,
                    call,
                    m,
                    n,
                    k,
                    a: &a,
                    b: &b,
                };
                for out in [DataType::F32, DataType::F64] {
                    case.check_matrix(out);
                }
            }
        }
    }
}

#[test]
fn knn_ranks_the_exact_fractions() {
    let mut rng = Rng(131);
    for &(m, n, k) in &[
        (3usize, 200usize, 4usize),
        (1, 3000, 8),
        (12, 150, 32),
        (2, 500, 256),
        (40, 90, 16),
    ] {
        // Sparse codes: many equal fractions (ties), and fractions that round alike in f32.
        let (a, b) = (codes(&mut rng, m, k, 3), codes(&mut rng, n, k, 3));
        for op in ratio_ops() {
            let case = Case {
                op,
                call: Call::default(),
                m,
                n,
                k,
                a: &a,
                b: &b,
            };
            for kk in [1, 5, n.min(64), n] {
                case.check_knn(kk, true, DataType::F32);
            }
            case.check_knn(7.min(n), false, DataType::F64);
            let bits = Case {
                call: Call {
                    bits: Some(k * 8 - 5),
                    bitorder: BitOrder::Little,
                    ..Call::default()
                },
                ..case
            };
            bits.check_knn(10.min(n), true, DataType::F64);
        }
    }
}

#[test]
fn range_search_compares_the_exact_fractions() {
    let mut rng = Rng(132);
    for &(m, n, k) in &[
        (4usize, 300usize, 2usize),
        (1, 5000, 8),
        (9, 400, 64),
        (30, 120, 12),
    ] {
        let (a, b) = (codes(&mut rng, m, k, 2), codes(&mut rng, n, k, 2));
        for op in ratio_ops() {
            let case = Case {
                op,
                call: Call::default(),
                m,
                n,
                k,
                a: &a,
                b: &b,
            };
            // Achievable values (0.5, 1/3's nearest f64 just below it, 0.1's just above 1/10),
            // the ends and past them.
            for t in [
                0.0,
                0.1,
                0.2,
                1.0 / 3.0,
                0.5,
                0.7,
                2.0 / 3.0,
                1.0,
                1.5,
                -0.5,
                1e-300,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ] {
                case.check_range(t, true, DataType::F32);
                case.check_range(t, false, DataType::F64);
            }
        }
    }
}

#[test]
fn ratio_ops_refuse_integer_outputs_and_what_they_cannot_rank() {
    let op = <ops::Tanimoto as Op>::INFO;
    let da = TensorDesc::new(DataType::U8, &[2, 4]).unwrap();
    let od = TensorDesc::new(DataType::U32, &[2, 2]).unwrap();
    let a = [0u8; 8];
    let mut out = [0u8; 16];
    let inputs = [Input::Bytes(&da, &a), Input::Bytes(&da, &a)];
    let e = tensorbits::execute(op, &Call::default(), &inputs, &od, &mut out).unwrap_err();
    assert!(e.to_string().contains("u32"), "{e}");
    assert_eq!(out, [0u8; 16]);
    // Rows past 2^24 bits: f32 knn results would not be exact; f64 ones are.
    let k = (1 << 21) + 1;
    let big = TensorDesc::new(DataType::U8, &[1, k]).unwrap();
    let rows = vec![0xA5u8; k];
    let inputs = [Input::Bytes(&big, &rows), Input::Bytes(&big, &rows)];
    let e = range_search(op, &Call::default(), &inputs, 0.5, DataType::F32).unwrap_err();
    assert!(e.to_string().contains("f64"), "{e}");
    let hits = range_search(op, &Call::default(), &inputs, 0.5, DataType::F64).unwrap();
    assert_eq!((hits.lims, hits.indices), (vec![0, 1], vec![0]));
    assert_eq!(hits.values, 1.0f64.to_le_bytes());
}

/// The region of the whole of `buffer`, described by `desc`.
fn region(buffer: &tensorbits::wgpu::Buffer, desc: TensorDesc) -> tensorbits::GpuRegion<'_> {
    tensorbits::GpuRegion {
        buffer,
        offset: 0,
        desc,
    }
}

/// The GPU's results are the CPU's, bit for bit: all pairs, knn (ties, every `k`) and range
/// search, each ratio op, both output types, valid bits in both orders, empty rows; on a device
/// with lowered limits (tiles of a few codes, dispatches split in two dimensions) and with the
/// default ones past 65,535 workgroups in one dispatch. What the device cannot do is a typed
/// error: a command encoder to record into, an output without `COPY_DST`.
#[test]
fn the_gpu_gives_the_cpus_ratio_results() {
    use tensorbits::GpuInput;
    let devices = [common::gpu::gpu(), common::gpu::small_gpu()];
    let mut rng = Rng(977);
    for (g, limits) in devices.iter().zip(["default", "small"]) {
        let Some(g) = g else { continue };
        let mut shapes = vec![
            (3usize, 700usize, 8usize),
            (9, 250, 4),
            (1, 500, 32),
            (5, 40, 3),
        ];
        if limits == "default" {
            // 64 x 70,000 pairs: past 65,535 workgroups of 64 in one count dispatch.
            shapes.push((64, 70_000, 4));
        }
        for (m, n, k) in shapes {
            let (a, b) = (codes(&mut rng, m, k, 2), codes(&mut rng, n, k, 2));
            let (da, db) = (
                TensorDesc::new(DataType::U8, &[m, k]).unwrap(),
                TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
            );
            let (ba, bb) = (
                g.storage_buffer("a", a.len(), &a).unwrap(),
                g.storage_buffer("b", b.len(), &b).unwrap(),
            );
            let ra = region(&ba, da);
            let rb = region(&bb, db);
            let cpu_inputs = [Input::Bytes(&da, &a), Input::Bytes(&db, &b)];
            let calls = [
                Call::default(),
                Call {
                    bits: Some(8 * k - 5),
                    bitorder: BitOrder::Little,
                    ..Call::default()
                },
                Call {
                    bits: Some(8 * k - 3),
                    bitorder: BitOrder::Big,
                    largest: Some(false),
                    ..Call::default()
                },
            ];
            // The large shape: one op and call, each entry point once.
            let large = n > 10_000;
            for op in ratio_ops().into_iter().take(if large { 1 } else { 3 }) {
                for (c, call) in calls.iter().enumerate().take(if large { 1 } else { 3 }) {
                    let out = [DataType::F32, DataType::F64][c % 2];
                    let what = format!("{limits} {} {m}x{n}x{k} call {c} {out}", op.name());
                    // All pairs.
                    let od = TensorDesc::new(out, &[m, n]).unwrap();
                    let mut want = vec![0u8; m * n * out.size()];
                    tensorbits::execute(op, call, &cpu_inputs, &od, &mut want).unwrap();
                    let ob = g.storage_buffer("out", want.len(), &[]).unwrap();
                    let ro = region(&ob, od);
                    let ins = [GpuInput::Region(ra), GpuInput::Region(rb)];
                    g.execute(op, call, &ins, &ro, None)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let got = g.read_bytes(&ob, 0, want.len() as u64).unwrap();
                    assert!(got == want, "{what}: all pairs differ");
                    // knn, a few k.
                    for kk in [1, 7.min(n), n.min(300)]
                        .into_iter()
                        .take(if large { 1 } else { 3 })
                    {
                        let dd = TensorDesc::new(out, &[m, kk]).unwrap();
                        let id = TensorDesc::new(DataType::I64, &[m, kk]).unwrap();
                        let mut dist = vec![0u8; m * kk * out.size()];
                        let mut idx = vec![0u8; m * kk * 8];
                        knn(op, call, &cpu_inputs, kk, (&dd, &mut dist), (&id, &mut idx)).unwrap();
                        let gd = g.storage_buffer("dist", dist.len(), &[]).unwrap();
                        let gi = g.storage_buffer("idx", idx.len(), &[]).unwrap();
                        let outs = (&region(&gd, dd), &region(&gi, id));
                        g.knn(op, call, [&ra, &rb], kk, outs, None)
                            .unwrap_or_else(|e| panic!("{what} k={kk}: {e}"));
                        let got_d = g.read_bytes(&gd, 0, dist.len() as u64).unwrap();
                        let got_i = g.read_bytes(&gi, 0, idx.len() as u64).unwrap();
                        assert!(got_i == idx, "{what} k={kk}: indices differ");
                        assert!(got_d == dist, "{what} k={kk}: values differ");
                    }
                    // Range search at achievable values and between.
                    for t in [0.6, 1.0 / 3.0, 0.0, 0.5, 1.0, f64::NEG_INFINITY]
                        .into_iter()
                        .take(if large { 1 } else { 6 })
                    {
                        let want = range_search(op, call, &cpu_inputs, t, out).unwrap();
                        let got = g
                            .range_search(op, call, [&ra, &rb], t, out)
                            .unwrap_or_else(|e| panic!("{what} t={t}: {e}"));
                        assert_eq!(got.lims, want.lims, "{what} t={t}");
                        assert_eq!(got.indices, want.indices, "{what} t={t}");
                        assert!(got.values == want.values, "{what} t={t}: values differ");
                    }
                }
            }
        }
    }
    // Rows read through strides (every other row of `b`, every other byte of `a`), as numpy
    // views give them.
    if let Some(g) = common::gpu::small_gpu() {
        let (m, n, k) = (4usize, 90usize, 6usize);
        let (a, b) = (codes(&mut rng, m, 2 * k, 2), codes(&mut rng, 2 * n, k, 2));
        let da = TensorDesc::new(DataType::U8, &[m, k])
            .unwrap()
            .with_strides(&[2 * k, 2])
            .unwrap();
        let db = TensorDesc::new(DataType::U8, &[n, k])
            .unwrap()
            .with_strides(&[2 * k, 1])
            .unwrap();
        let (ba, bb) = (
            g.storage_buffer("a", a.len(), &a).unwrap(),
            g.storage_buffer("b", b.len(), &b).unwrap(),
        );
        let ra = region(&ba, da);
        let rb = region(&bb, db);
        let cpu_inputs = [Input::Bytes(&da, &a), Input::Bytes(&db, &b)];
        let call = Call {
            bits: Some(8 * k - 3),
            ..Call::default()
        };
        for op in ratio_ops() {
            let od = TensorDesc::new(DataType::F32, &[m, n]).unwrap();
            let mut want = vec![0u8; m * n * 4];
            tensorbits::execute(op, &call, &cpu_inputs, &od, &mut want).unwrap();
            let ob = g.storage_buffer("out", want.len(), &[]).unwrap();
            let ro = region(&ob, od);
            let ins = [GpuInput::Region(ra), GpuInput::Region(rb)];
            g.execute(op, &call, &ins, &ro, None).unwrap();
            assert!(
                g.read_bytes(&ob, 0, want.len() as u64).unwrap() == want,
                "{} strided",
                op.name()
            );
            let want = range_search(op, &call, &cpu_inputs, 0.3, DataType::F64).unwrap();
            let got = g
                .range_search(op, &call, [&ra, &rb], 0.3, DataType::F64)
                .unwrap();
            assert_eq!(
                (got.lims, got.indices),
                (want.lims, want.indices),
                "{} strided",
                op.name()
            );
            assert!(got.values == want.values, "{} strided", op.name());
        }
    }
    // What the device refuses, before anything is written.
    let Some(g) = common::gpu::gpu() else { return };
    let op = <ops::Tanimoto as Op>::INFO;
    let d = TensorDesc::new(DataType::U8, &[2, 1]).unwrap();
    let codes = [0b1111_0000u8, 3];
    let b = g.storage_buffer("a", 2, &codes).unwrap();
    let r = region(&b, d);
    let od = TensorDesc::new(DataType::F32, &[2, 2]).unwrap();
    let ob = g.storage_buffer("out", 16, &[0xA5; 16]).unwrap();
    let ro = region(&ob, od);
    let ins = [GpuInput::Region(r), GpuInput::Region(r)];
    let mut enc = g.device().create_command_encoder(&Default::default());
    let e = g
        .execute(op, &Call::default(), &ins, &ro, Some(&mut enc))
        .unwrap_err();
    assert!(
        matches!(&e, tensorbits::Error::GpuUnsupported { what } if what.contains("encoder")),
        "{e}"
    );
    let storage_only = g
        .device()
        .create_buffer(&tensorbits::wgpu::BufferDescriptor {
            label: None,
            size: 16,
            usage: tensorbits::wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
    let ro = region(&storage_only, od);
    let e = g
        .execute(op, &Call::default(), &ins, &ro, None)
        .unwrap_err();
    assert!(
        matches!(&e, tensorbits::Error::GpuBuffer { reason, .. } if reason.contains("COPY_DST")),
        "{e}"
    );
    assert_eq!(g.read_bytes(&ob, 0, 16).unwrap(), [0xA5; 16]);
    // Through the typed API, as the CPU.
    let t = tensorbits::Target::Gpu(g);
    let a = tensorbits::Tensor::from_vec(vec![0b1111_0000u8, 3], &[2, 1]).unwrap();
    let opts = tensorbits::Options::new();
    let s = ops::Tanimoto::run_on(&t, &opts, &a, &a).unwrap();
    assert_eq!(s.data(), &[1.0f32, 0.0, 0.0, 1.0]);
    let (d, i) = ops::Tanimoto::knn_on(&t, &opts, &a, &a, 1).unwrap();
    assert_eq!((d.data(), i.data()), (&[1.0f32, 1.0][..], &[0i64, 1][..]));
}
