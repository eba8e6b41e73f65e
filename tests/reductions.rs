//! Reductions, pairwise ops and knn against a plain scalar reference: every standard reduction and
//! four of this file's own (a wide and a narrow pairwise sum, a bitwise pairwise reduction, a
//! two-input reduction with broadcasting), every type, random shapes, axes, keepdims, strides,
//! broadcasting, empty reductions and the overflow rule; the worked examples of the design; and
//! the paths that only large calls take (threads, packed rows, columns, knn split over `b`).

mod common;

use common::cases::{random_strides, special};
use common::{Rng, mask, read};
use proptest::prelude::*;
use tensorbits::{
    Axes, Broadcast, Call, DataType, Error, Input, Op, OpInfo, Options, ReduceOp, Tensor,
    TensorDesc, bitwise_op, compile, execute, knn, ops,
};

/// A binary inner product: the wide path with another expression than XOR.
#[bitwise_op(
    name = "AND_POP_CDIST",
    inputs = [a, b],
    compute = (a & b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64, i32]),
    output = [u32, u64, u16],
)]
pub struct AndPopCdist;

/// A shift: the same at no other width, so element by element.
#[bitwise_op(
    name = "SHIFTY_CDIST",
    inputs = [a, b],
    compute = (a.wrapping_shl(1) ^ b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64]),
    output = [u32, u64],
)]
pub struct ShiftyCdist;

/// A bitwise pairwise reduction.
#[bitwise_op(
    name = "XOR_OR_CDIST",
    inputs = [a, b],
    compute = a ^ b,
    reduce = or,
    pairwise,
    support(EXT = [u8, u16, u32, u64, bool]),
)]
pub struct XorOrCdist;

/// Two inputs broadcast, reduced bit by bit over a default axis.
#[bitwise_op(
    name = "AND_NOT_XOR_REDUCE",
    inputs = [a, b],
    compute = a & !b,
    reduce = xor,
    axes = [0],
    broadcast = [numpy, none],
    support(EXT = [u8, u16, u32, u64, i8, f32, bool]),
)]
pub struct AndNotXorReduce;

/// XNOR-popcount, as binary neural networks use it.
#[bitwise_op(
    name = "XNOR_POP",
    inputs = [a, b],
    compute = (!(a ^ b)).count_ones(),
    reduce = sum,
    axes = [-1],
    broadcast = [numpy],
    support(EXT = [u8, u64]),
    output = [u32, u64],
)]
pub struct XnorPop;

fn axes_ops() -> Vec<&'static OpInfo> {
    let mut v: Vec<&'static OpInfo> = ops::ALL
        .into_iter()
        .filter(|o| o.reduce().is_some() && !o.is_pairwise())
        .collect();
    v.extend([<AndNotXorReduce as Op>::INFO, <XnorPop as Op>::INFO]);
    v
}

fn pairwise_ops() -> Vec<&'static OpInfo> {
    vec![
        <ops::HammingCdist as Op>::INFO,
        <AndPopCdist as Op>::INFO,
        <ShiftyCdist as Op>::INFO,
        <XorOrCdist as Op>::INFO,
    ]
}

/// One element's result, as a bit pattern (`bool` as 0 or 1) or a count, independently of the
/// library.
fn elem(name: &str, dt: DataType, x: &[u64]) -> u64 {
    let m = mask(dt);
    let b = |v: u64| (v != 0) as u64;
    let bool_ = dt == DataType::Bool;
    let w = dt.bits() as u64;
    match name {
        "BIT_AND_REDUCE" | "BIT_OR_REDUCE" | "BIT_XOR_REDUCE" if bool_ => b(x[0]),
        "BIT_AND_REDUCE" | "BIT_OR_REDUCE" | "BIT_XOR_REDUCE" => x[0] & m,
        "BIT_COUNT_SUM" => (x[0] & m).count_ones() as u64,
        "HAMMING_DISTANCE" | "HAMMING_CDIST" => ((x[0] ^ x[1]) & m).count_ones() as u64,
        "AND_POP_CDIST" => (x[0] & x[1] & m).count_ones() as u64,
        "SHIFTY_CDIST" => ((((x[0] << (1 % w)) & m) ^ x[1]) & m).count_ones() as u64,
        "XOR_OR_CDIST" if bool_ => b(x[0]) ^ b(x[1]),
        "XOR_OR_CDIST" => (x[0] ^ x[1]) & m,
        "AND_NOT_XOR_REDUCE" if bool_ => b(x[0]) & (1 - b(x[1])),
        "AND_NOT_XOR_REDUCE" => x[0] & !x[1] & m,
        "XNOR_POP" => (!(x[0] ^ x[1]) & m).count_ones() as u64,
        other => panic!("no reference for {other}"),
    }
}

fn combine(r: ReduceOp, a: u64, v: u64) -> u64 {
    match r {
        ReduceOp::Sum => a + v,
        ReduceOp::And => a & v,
        ReduceOp::Or => a | v,
        ReduceOp::Xor => a ^ v,
    }
}

fn identity(r: ReduceOp, dt: DataType) -> u64 {
    match r {
        ReduceOp::And if dt == DataType::Bool => 1,
        ReduceOp::And => mask(dt),
        _ => 0,
    }
}

fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    common::indices(shape)
}

fn offset(idx: &[usize], strides: &[usize]) -> usize {
    idx.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// A random tensor of `shape`: sometimes strided, sometimes with special values.
fn tensor(rng: &mut Rng, dt: DataType, shape: &[usize], strided: bool) -> (TensorDesc, Vec<u8>) {
    let mut d = TensorDesc::new(dt, shape).unwrap();
    if strided && rng.chance(40) {
        d = d.with_strides(&random_strides(rng, shape, true)).unwrap();
    }
    let es = dt.size();
    let mut bytes = vec![0u8; d.total_bytes()];
    for i in 0..bytes.len() / es {
        let v = if rng.chance(20) {
            special(dt, rng)
        } else if rng.chance(30) {
            // Sparse bits, so that sums and ANDs are not always saturated.
            rng.next() & rng.next() & rng.next()
        } else {
            rng.next()
        };
        bytes[i * es..(i + 1) * es].copy_from_slice(&v.to_le_bytes()[..es]);
    }
    (d, bytes)
}

fn read_at(d: &TensorDesc, bytes: &[u8], idx: &[usize]) -> u64 {
    read(bytes, d.data_type(), offset(idx, &d.effective_strides()))
}

/// What a reduction over axes should give: the output shape and values, or the error's kind.
enum Expect {
    Values(Vec<usize>, Vec<u64>),
    Fails(&'static str),
}

/// The reference of an axes reduction of `inputs` (numpy broadcasting).
fn reference(op: &OpInfo, call: &Call, ins: &[(TensorDesc, Vec<u8>)], out_dt: DataType) -> Expect {
    let dt = ins[0].0.data_type();
    let rank = ins.iter().map(|(d, _)| d.rank()).max().unwrap();
    let mut shape = vec![1usize; rank];
    for (d, _) in ins {
        for (j, &s) in d.sizes().iter().enumerate() {
            let k = rank - d.rank() + j;
            if s != 1 {
                if shape[k] != 1 && shape[k] != s {
                    return Expect::Fails("shape");
                }
                shape[k] = s;
            }
        }
    }
    if call.broadcast == Some(Broadcast::None) && ins.iter().any(|(d, _)| d.sizes() != shape) {
        return Expect::Fails("shape");
    }
    let axes: Vec<i64> = match (call.axes, op.default_axes()) {
        (Some(a), _) => a.as_slice().to_vec(),
        (None, Some(a)) => a.to_vec(),
        (None, None) => (0..rank as i64).collect(),
    };
    let mut reduced = vec![false; rank];
    for &a in &axes {
        let d = if a < 0 { a + rank as i64 } else { a };
        if d < 0 || d >= rank as i64 {
            return Expect::Fails("axis");
        }
        if reduced[d as usize] {
            return Expect::Fails("repeated");
        }
        reduced[d as usize] = true;
    }
    let r = op.reduce().unwrap();
    let count: usize = (0..rank)
        .filter(|&d| reduced[d])
        .map(|d| shape[d])
        .product();
    let max = out_dt.max_bits_value() >> u32::from(out_dt.is_signed());
    if r == ReduceOp::Sum && count as u128 * u128::from(dt.bits()) > u128::from(max) {
        return Expect::Fails("overflow");
    }
    let kept: Vec<usize> = (0..rank).filter(|&d| !reduced[d]).collect();
    let red: Vec<usize> = (0..rank).filter(|&d| reduced[d]).collect();
    let kept_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    let red_shape: Vec<usize> = red.iter().map(|&d| shape[d]).collect();
    let out_shape: Vec<usize> = (0..rank)
        .filter_map(|d| match (reduced[d], call.keepdims) {
            (false, _) => Some(shape[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let mut values = Vec::new();
    for ko in indices(&kept_shape) {
        let mut acc = identity(r, dt);
        for ro in indices(&red_shape) {
            let mut full = vec![0usize; rank];
            for (i, &d) in kept.iter().enumerate() {
                full[d] = ko[i];
            }
            for (i, &d) in red.iter().enumerate() {
                full[d] = ro[i];
            }
            let x: Vec<u64> = ins
                .iter()
                .map(|(d, b)| {
                    let lead = rank - d.rank();
                    let idx: Vec<usize> = (0..d.rank())
                        .map(|j| if d.sizes()[j] == 1 { 0 } else { full[lead + j] })
                        .collect();
                    read_at(d, b, &idx)
                })
                .collect();
            acc = combine(r, acc, elem(op.name(), dt, &x));
        }
        values.push(acc);
    }
    Expect::Values(out_shape, values)
}

/// Shapes that broadcast numpy-style to `shape` (or are equal to it).
fn broadcastable(rng: &mut Rng, shape: &[usize]) -> Vec<usize> {
    let drop = if shape.is_empty() {
        0
    } else {
        rng.below(shape.len() + 1)
    };
    shape[drop..]
        .iter()
        .map(|&s| if rng.chance(30) { 1 } else { s })
        .collect()
}

fn random_axes(rng: &mut Rng, rank: usize) -> Option<Axes> {
    if rng.chance(25) {
        return None;
    }
    let mut v: Vec<i64> = Vec::new();
    for d in 0..rank {
        if rng.chance(45) {
            v.push(if rng.chance(50) {
                d as i64
            } else {
                d as i64 - rank as i64
            });
        }
    }
    // Now and then a mistake: out of range, or named twice.
    if rng.chance(8) {
        v.push(rank as i64 + rng.below(2) as i64);
    }
    if rng.chance(5) && !v.is_empty() {
        v.push(v[0] - rank as i64 * (v[0] >= 0) as i64);
    }
    for i in (1..v.len()).rev() {
        v.swap(i, rng.below(i + 1));
    }
    Axes::new(&v).ok()
}

fn check_axes_case(seed: u64) {
    let mut rng = Rng(seed);
    let all = axes_ops();
    let op = all[rng.below(all.len())];
    let types = op.all_types();
    let dt = types[rng.below(types.len())];
    let out_dt = match op.output_types() {
        Some(o) => o[rng.below(o.len())],
        None => dt,
    };
    let rank = rng.below(5);
    let shape: Vec<usize> = (0..rank)
        .map(|_| if rng.chance(8) { 0 } else { 1 + rng.below(5) })
        .collect();
    let broadcast = if op.arity() > 1
        && op
            .broadcast_modes()
            .contains(&tensorbits::BroadcastMode::None)
        && rng.chance(30)
    {
        Some(Broadcast::None)
    } else {
        None
    };
    let mut ins = vec![tensor(&mut rng, dt, &shape, true)];
    for _ in 1..op.arity() {
        let s = if broadcast.is_some() {
            shape.clone()
        } else {
            broadcastable(&mut rng, &shape)
        };
        ins.push(tensor(&mut rng, dt, &s, true));
    }
    let call = Call {
        broadcast,
        axes: random_axes(&mut rng, rank),
        keepdims: rng.chance(30),
        ..Call::default()
    };
    let expect = reference(op, &call, &ins, out_dt);
    let inputs: Vec<Input<'_>> = ins.iter().map(|(d, b)| Input::Bytes(d, b)).collect();
    let descs: Vec<&TensorDesc> = ins.iter().map(|(d, _)| d).collect();
    match expect {
        Expect::Fails(kind) => {
            let e = tensorbits::validate_new_output(op, &call, &descs, out_dt).unwrap_err();
            let ok = match kind {
                "axis" => matches!(e, Error::AxisOutOfRange { .. }),
                "repeated" => matches!(e, Error::RepeatedAxis { .. }),
                "overflow" => matches!(e, Error::SumOverflow { .. }),
                _ => matches!(e, Error::ShapeMismatch { .. }),
            };
            assert!(ok, "seed {seed}: {} expected {kind}, got {e}", op.name());
        }
        Expect::Values(out_shape, values) => {
            let mut od = TensorDesc::new(out_dt, &out_shape).unwrap();
            if rng.chance(40) {
                od = od
                    .with_strides(&random_strides(&mut rng, &out_shape, false))
                    .unwrap();
            }
            let mut out = vec![0xA5u8; od.total_bytes()];
            execute(op, &call, &inputs, &od, &mut out)
                .unwrap_or_else(|e| panic!("seed {seed}: {}: {e}", op.name()));
            let os = od.effective_strides();
            let mut touched = vec![false; out.len()];
            for (i, idx) in indices(&out_shape).iter().enumerate() {
                let at = offset(idx, &os);
                let got = read(&out, out_dt, at);
                assert_eq!(
                    got,
                    values[i] & mask(out_dt),
                    "seed {seed}: {} {dt}->{out_dt} shape {shape:?} {call:?} at {idx:?}",
                    op.name()
                );
                touched[at * out_dt.size()..(at + 1) * out_dt.size()].fill(true);
            }
            for (i, t) in touched.iter().enumerate() {
                assert!(
                    *t || out[i] == 0xA5,
                    "seed {seed}: byte {i} outside the output written"
                );
            }
            // A compiled call gives the same bytes.
            if let Ok(c) = compile(op, &call, &descs, &od) {
                let mut again = vec![0xA5u8; od.total_bytes()];
                let bufs: Vec<tensorbits::InputBuffer<'_>> = ins
                    .iter()
                    .map(|(_, b)| tensorbits::InputBuffer::Bytes(b))
                    .collect();
                c.execute(&bufs, &mut again).unwrap();
                assert_eq!(again, out, "seed {seed}: compiled");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn reductions_match_the_reference(seed in any::<u64>()) {
        check_axes_case(seed);
    }

    #[test]
    fn pairwise_and_knn_match_the_reference(seed in any::<u64>()) {
        check_pairwise_case(seed);
    }
}

/// The reference of a pairwise op: `[..., M, N]` values, and knn's lists per row.
fn pairwise_reference(
    op: &OpInfo,
    a: &(TensorDesc, Vec<u8>),
    b: &(TensorDesc, Vec<u8>),
) -> Option<(Vec<usize>, Vec<u64>)> {
    let (sa, sb) = (a.0.sizes(), b.0.sizes());
    let (ra, rb) = (sa.len(), sb.len());
    if sa[ra - 1] != sb[rb - 1] {
        return None;
    }
    let (ba, bb) = (&sa[..ra - 2], &sb[..rb - 2]);
    let rank = ba.len().max(bb.len());
    let mut batch = vec![1usize; rank];
    for (j, slot) in batch.iter_mut().enumerate() {
        let get = |s: &[usize]| (j + s.len()).checked_sub(rank).map_or(1, |i| s[i]);
        let (x, y) = (get(ba), get(bb));
        *slot = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    let (m, n, k) = (sa[ra - 2], sb[rb - 2], sa[ra - 1]);
    let dt = a.0.data_type();
    let r = op.reduce().unwrap();
    let mut shape = batch.clone();
    shape.extend([m, n]);
    let mut values = Vec::new();
    for bi in indices(&batch) {
        let pick = |s: &[usize], bi: &[usize]| -> Vec<usize> {
            let lead = rank - s.len();
            (0..s.len())
                .map(|j| if s[j] == 1 { 0 } else { bi[lead + j] })
                .collect()
        };
        let (pa, pb) = (pick(ba, &bi), pick(bb, &bi));
        for i in 0..m {
            for j in 0..n {
                let mut acc = identity(r, dt);
                for e in 0..k {
                    let mut ia = pa.clone();
                    ia.extend([i, e]);
                    let mut ib = pb.clone();
                    ib.extend([j, e]);
                    let x = [read_at(&a.0, &a.1, &ia), read_at(&b.0, &b.1, &ib)];
                    acc = combine(r, acc, elem(op.name(), dt, &x));
                }
                values.push(acc);
            }
        }
    }
    Some((shape, values))
}

fn check_pairwise_case(seed: u64) {
    let mut rng = Rng(seed);
    let all = pairwise_ops();
    let op = all[rng.below(all.len())];
    let types = op.all_types();
    let dt = types[rng.below(types.len())];
    let out_dt = match op.output_types() {
        Some(o) => o[rng.below(o.len())],
        None => dt,
    };
    let batch: Vec<usize> = (0..rng.below(3)).map(|_| 1 + rng.below(3)).collect();
    let bb = broadcastable(&mut rng, &batch);
    let dim = |rng: &mut Rng| if rng.chance(5) { 0 } else { 1 + rng.below(12) };
    let (m, n) = (dim(&mut rng), dim(&mut rng));
    let k = if rng.chance(5) { 0 } else { 1 + rng.below(20) };
    let kb = if rng.chance(5) { k + 1 } else { k };
    let mut sa = batch.clone();
    sa.extend([m, k]);
    let mut sb = bb.clone();
    sb.extend([n, kb]);
    let a = tensor(&mut rng, dt, &sa, true);
    let b = tensor(&mut rng, dt, &sb, true);
    let call = Call::default();
    let inputs = [Input::Bytes(&a.0, &a.1), Input::Bytes(&b.0, &b.1)];
    let descs = [&a.0, &b.0];
    let Some((shape, values)) = pairwise_reference(op, &a, &b) else {
        let e = tensorbits::validate_new_output(op, &call, &descs, out_dt).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "seed {seed}: {e}");
        return;
    };
    let r = op.reduce().unwrap();
    let max = out_dt.max_bits_value();
    if r == ReduceOp::Sum && k as u128 * u128::from(dt.bits()) > u128::from(max) {
        let e = tensorbits::validate_new_output(op, &call, &descs, out_dt).unwrap_err();
        assert!(matches!(e, Error::SumOverflow { .. }), "seed {seed}: {e}");
        return;
    }
    let od = TensorDesc::new(out_dt, &shape).unwrap();
    let mut out = vec![0u8; od.total_bytes()];
    execute(op, &call, &inputs, &od, &mut out)
        .unwrap_or_else(|e| panic!("seed {seed}: {}: {e}", op.name()));
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(
            read(&out, out_dt, i),
            v,
            "seed {seed}: {} {dt} a {sa:?} b {sb:?} at {i}",
            op.name()
        );
    }
    if r != ReduceOp::Sum {
        return;
    }
    // knn: every row's k smallest (distance, index) pairs.
    let kk = rng.below(n + 2);
    let mut kshape = shape.clone();
    let last = kshape.len() - 1;
    kshape[last] = kk;
    let dd = TensorDesc::new(out_dt, &kshape).unwrap();
    let id = TensorDesc::new(DataType::I64, &kshape).unwrap();
    let mut dist = vec![0u8; dd.total_bytes()];
    let mut idx = vec![0u8; id.total_bytes()];
    let got = knn(op, &call, &inputs, kk, (&dd, &mut dist), (&id, &mut idx));
    if kk > n {
        assert!(
            matches!(got, Err(Error::KTooLarge { .. })),
            "seed {seed}: {got:?}"
        );
        return;
    }
    got.unwrap_or_else(|e| panic!("seed {seed}: knn: {e}"));
    for row in 0..values.len() / n.max(1) {
        let mut all: Vec<(u64, usize)> = (0..n).map(|j| (values[row * n + j], j)).collect();
        all.sort();
        for (c, &(d, j)) in all.iter().take(kk).enumerate() {
            assert_eq!(
                read(&dist, out_dt, row * kk + c),
                d,
                "seed {seed}: row {row}"
            );
            assert_eq!(
                read(&idx, DataType::I64, row * kk + c),
                j as u64,
                "seed {seed}: row {row}"
            );
        }
    }
}

/// The worked examples of the design, through the typed API.
#[test]
fn worked_examples() {
    let a = Tensor::from_vec(vec![0b1011u8, 0xff, 0, 1], &[2, 2]).unwrap();
    let b = Tensor::from_vec(vec![0b0001u8, 0x0f, 0, 0], &[2, 2]).unwrap();
    let d = ops::HammingDistance::run(&a, &b).unwrap();
    assert_eq!((d.shape(), d.data()), (&[2usize][..], &[6u32, 1][..]));
    let x = Tensor::from_vec(vec![1u8, 2, 4, 7, 7, 7], &[2, 3]).unwrap();
    let over = |axes: Axes| ops::BitXorReduce::run_with(&Options::new().axes(axes), &x).unwrap();
    assert_eq!(over(Axes::from([1])).data(), &[7, 7]);
    assert_eq!(over(Axes::from([0])).data(), &[6, 5, 3]);
    let empty = Tensor::<u8>::zeros(&[3, 0]).unwrap();
    let and = ops::BitAndReduce::run_with(&Options::new().axes([1]), &empty).unwrap();
    assert_eq!(
        (and.shape(), and.data()),
        (&[3usize][..], &[255u8, 255, 255][..])
    );
    let none = Tensor::<bool>::zeros(&[0]).unwrap();
    assert_eq!(ops::BitAndReduce::run(&none).unwrap().data(), &[true]);
    assert_eq!(ops::BitXorReduce::run(&none).unwrap().data(), &[false]);
    let q = Tensor::from_vec(vec![0u8, 255], &[2, 1]).unwrap();
    let base = Tensor::from_vec(vec![15u8, 0, 255], &[3, 1]).unwrap();
    let c = ops::HammingCdist::run(&q, &base).unwrap();
    assert_eq!(
        (c.shape(), c.data()),
        (&[2usize, 3][..], &[4u32, 0, 8, 4, 8, 0][..])
    );
    let (dist, idx) = ops::HammingCdist::knn(&q, &base, 2).unwrap();
    assert_eq!(dist.data(), &[0u32, 4, 0, 4]);
    assert_eq!(idx.data(), &[1i64, 0, 2, 0]);
    // keepdims keeps the reduced dimension as 1; other output types are chosen in the options.
    let kept =
        ops::BitCountSum::run_with(&Options::new().axes([-1]).keepdims(true).output::<u8>(), &x)
            .unwrap();
    assert_eq!(
        (kept.shape(), kept.data()),
        (&[2usize, 1][..], &[3u8, 9][..])
    );
}

/// The rules' messages, each naming what is wrong.
#[test]
fn errors_say_what_is_wrong() {
    let x = Tensor::from_vec(vec![1u64; 8], &[2, 4]).unwrap();
    let msg = |r: Result<Tensor<u8>, Error>| r.unwrap_err().to_string();
    assert_eq!(
        msg(ops::BitCountSum::run_with(
            &Options::new().output::<u8>(),
            &x
        )),
        "BIT_COUNT_SUM: a sum of 8 elements of up to 64 set bits each can reach 512, more than u8 holds (255); the smallest output type that fits is u16"
    );
    let e = ops::BitXorReduce::run_with(&Options::new().axes([2]), &x).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BIT_XOR_REDUCE: axis 2 is out of range for the broadcast input of rank 2 (valid: -2 to 1)"
    );
    let e = ops::BitXorReduce::run_with(&Options::new().axes([1, -1]), &x).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BIT_XOR_REDUCE: axes 1 and -1 both name dimension 1; each axis may be reduced once"
    );
    let e = ops::BitXor::run_with(&Options::new().axes([0]), &x, &x).unwrap_err();
    assert!(e.to_string().contains("is element-wise"), "{e}");
    let e = ops::HammingCdist::run_with(&Options::new().axes([0]), &x, &x).unwrap_err();
    assert!(e.to_string().contains("is pairwise"), "{e}");
    let e = ops::HammingCdist::knn(&x, &x, 3).unwrap_err();
    assert_eq!(
        e.to_string(),
        "HAMMING_CDIST: k = 3 is more than the 2 rows of BTensor"
    );
    let y = Tensor::from_vec(vec![1u64; 6], &[2, 3]).unwrap();
    let e = ops::HammingCdist::run(&x, &y).unwrap_err();
    assert!(e.to_string().contains("K: 3 vs 4"), "{e}");
    assert!(Axes::new(&[0; 9]).is_err());
}

/// Sizes past the thread-pool threshold: rows, packed rows, columns, partial sums over the reduced
/// elements, and pairwise and knn tiles over threads (knn split over `b` when `a` has few rows).
#[test]
fn large_calls_take_every_path() {
    let mut rng = Rng(11);
    let cases: &[(&[usize], Option<Axes>)] = &[
        (&[128, 2048], Some(Axes::from([-1]))),
        (&[2048, 128], Some(Axes::from([0]))),
        (&[1 << 15, 16], Some(Axes::from([1]))),
        (&[2, 1 << 17], None),
        (&[64, 64, 64], Some(Axes::from([1]))),
        (&[3, 1 << 17], Some(Axes::from([0]))),
    ];
    for (shape, axes) in cases {
        for op in [
            <ops::BitXorReduce as Op>::INFO,
            <ops::BitCountSum as Op>::INFO,
        ] {
            let dt = DataType::U32;
            let out_dt = op.output_types().map_or(dt, |o| o[0]);
            let a = tensor(&mut rng, dt, shape, false);
            let call = Call {
                axes: *axes,
                ..Call::default()
            };
            let Expect::Values(out_shape, values) =
                reference(op, &call, std::slice::from_ref(&a), out_dt)
            else {
                panic!("{shape:?}")
            };
            let od = TensorDesc::new(out_dt, &out_shape).unwrap();
            let mut out = vec![0u8; od.total_bytes()];
            execute(op, &call, &[Input::Bytes(&a.0, &a.1)], &od, &mut out).unwrap();
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(read(&out, out_dt, i), v, "{} {shape:?} at {i}", op.name());
            }
        }
    }
    // Pairwise and knn: many rows of `a`, and few (knn then splits `b` over the threads).
    for (m, n, k) in [(64usize, 1500usize, 32usize), (3, 12000, 32), (100, 700, 7)] {
        let a = tensor(&mut rng, DataType::U8, &[m, k], false);
        let b = tensor(&mut rng, DataType::U8, &[n, k], false);
        let op = <ops::HammingCdist as Op>::INFO;
        let (shape, values) = pairwise_reference(op, &a, &b).unwrap();
        let ta = Tensor::from_vec(a.1[..m * k].to_vec(), &[m, k]).unwrap();
        let tb = Tensor::from_vec(b.1[..n * k].to_vec(), &[n, k]).unwrap();
        let d = ops::HammingCdist::run(&ta, &tb).unwrap();
        assert_eq!(d.shape(), &shape[..]);
        assert!(
            d.data()
                .iter()
                .zip(&values)
                .all(|(&x, &y)| u64::from(x) == y)
        );
        let (dist, idx) = ops::HammingCdist::knn(&ta, &tb, 10).unwrap();
        for row in 0..m {
            let mut all: Vec<(u64, i64)> =
                (0..n).map(|j| (values[row * n + j], j as i64)).collect();
            all.sort();
            let want: Vec<(u64, i64)> = all[..10].to_vec();
            let got: Vec<(u64, i64)> = (0..10)
                .map(|c| {
                    (
                        u64::from(dist.data()[row * 10 + c]),
                        idx.data()[row * 10 + c],
                    )
                })
                .collect();
            assert_eq!(got, want, "m {m} n {n} row {row}");
        }
    }
}
