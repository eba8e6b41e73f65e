//! Reductions, pairwise ops and knn for the tests: seven ops of their own beside the standard ones
//! (four wide pairwise sums, three of them on the runtime's own kernels and one on tiles compiled
//! here, and a narrow one; a bitwise pairwise reduction, a two-input reduction with broadcasting,
//! XNOR-popcount), a plain scalar reference written independently of the library, and random
//! cases.

use super::cases::{random_strides, special};
use super::{Rng, mask, read};
use tensorbits::{
    Axes, Broadcast, Call, DataType, Op, OpInfo, ReduceOp, TensorDesc, bitwise_op, ops,
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

/// XNOR-popcount of binary neural networks, pairwise: the wide path with NOT, OR and AND.
#[bitwise_op(
    name = "XNOR_OR_CDIST",
    inputs = [a, b],
    compute = (!(a ^ b) | (a & !b)).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u64, i8]),
    output = [u32, u64],
)]
pub struct XnorOrCdist;

/// OR of the codes, written the other way round: the runtime's own kernel for OR counts, found by
/// the expression's truth table.
#[bitwise_op(
    name = "OR_POP_CDIST",
    inputs = [a, b],
    compute = (b | a).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64, i16]),
    output = [u32, u64],
)]
pub struct OrPopCdist;

/// XNOR written as `!a ^ b`: the runtime's own kernel for XNOR counts.
#[bitwise_op(
    name = "XNOR_POP_CDIST",
    inputs = [a, b],
    compute = (!a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64]),
    output = [u32, u64, u16],
)]
pub struct XnorPopCdist;

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

pub fn axes_ops() -> Vec<&'static OpInfo> {
    let mut v: Vec<&'static OpInfo> = ops::ALL
        .into_iter()
        .filter(|o| o.reduce().is_some() && !o.is_pairwise())
        .collect();
    v.extend([<AndNotXorReduce as Op>::INFO, <XnorPop as Op>::INFO]);
    v
}

pub fn pairwise_ops() -> Vec<&'static OpInfo> {
    vec![
        <ops::HammingCdist as Op>::INFO,
        <AndPopCdist as Op>::INFO,
        <XnorOrCdist as Op>::INFO,
        <ShiftyCdist as Op>::INFO,
        <XorOrCdist as Op>::INFO,
        <OrPopCdist as Op>::INFO,
        <XnorPopCdist as Op>::INFO,
    ]
}

/// One element's result, as a bit pattern (`bool` as 0 or 1) or a count, independently of the
/// library.
pub fn elem(name: &str, dt: DataType, x: &[u64]) -> u64 {
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
        "XNOR_POP" | "XNOR_POP_CDIST" => (!(x[0] ^ x[1]) & m).count_ones() as u64,
        "OR_POP_CDIST" => ((x[0] | x[1]) & m).count_ones() as u64,
        "XNOR_OR_CDIST" => ((!(x[0] ^ x[1]) | (x[0] & !x[1])) & m).count_ones() as u64,
        other => panic!("no reference for {other}"),
    }
}

pub fn combine(r: ReduceOp, a: u64, v: u64) -> u64 {
    match r {
        ReduceOp::Sum => a + v,
        ReduceOp::And => a & v,
        ReduceOp::Or => a | v,
        ReduceOp::Xor => a ^ v,
    }
}

pub fn identity(r: ReduceOp, dt: DataType) -> u64 {
    match r {
        ReduceOp::And if dt == DataType::Bool => 1,
        ReduceOp::And => mask(dt),
        _ => 0,
    }
}

pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    super::indices(shape)
}

pub fn offset(idx: &[usize], strides: &[usize]) -> usize {
    idx.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// A random tensor of `shape`: sometimes strided, sometimes with special values.
pub fn tensor(
    rng: &mut Rng,
    dt: DataType,
    shape: &[usize],
    strided: bool,
) -> (TensorDesc, Vec<u8>) {
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

pub fn read_at(d: &TensorDesc, bytes: &[u8], idx: &[usize]) -> u64 {
    read(bytes, d.data_type(), offset(idx, &d.effective_strides()))
}

/// What a reduction over axes should give: the output shape and values, or the error's kind.
pub enum Expect {
    Values(Vec<usize>, Vec<u64>),
    Fails(&'static str),
}

/// The reference of an axes reduction of `inputs` (numpy broadcasting).
pub fn reference(
    op: &OpInfo,
    call: &Call,
    ins: &[(TensorDesc, Vec<u8>)],
    out_dt: DataType,
) -> Expect {
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
pub fn broadcastable(rng: &mut Rng, shape: &[usize]) -> Vec<usize> {
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

pub fn random_axes(rng: &mut Rng, rank: usize) -> Option<Axes> {
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

/// The reference of a pairwise op: `[..., M, N]` values, and knn's lists per row.
pub fn pairwise_reference(
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
    // Strides and the expression taken once: the reference runs over tens of millions of
    // elements in the unoptimized test build.
    let (sta, stb) = (a.0.effective_strides(), b.0.effective_strides());
    let name = op.name();
    for bi in indices(&batch) {
        let base = |s: &[usize], st: &[usize]| -> usize {
            let lead = rank - s.len();
            (0..s.len())
                .map(|j| if s[j] == 1 { 0 } else { bi[lead + j] * st[j] })
                .sum()
        };
        let (oa, ob) = (base(ba, &sta), base(bb, &stb));
        for i in 0..m {
            let row_a = oa + i * sta[ra - 2];
            for j in 0..n {
                let row_b = ob + j * stb[rb - 2];
                let mut acc = identity(r, dt);
                for e in 0..k {
                    let x = [
                        read(&a.1, dt, row_a + e * sta[ra - 1]),
                        read(&b.1, dt, row_b + e * stb[rb - 1]),
                    ];
                    acc = combine(r, acc, elem(name, dt, &x));
                }
                values.push(acc);
            }
        }
    }
    Some((shape, values))
}

/// A random reduction over axes: op, types, inputs (maybe strided, broadcast) and call.
pub struct AxesCase {
    pub op: &'static OpInfo,
    pub dt: DataType,
    pub out_dt: DataType,
    pub ins: Vec<(TensorDesc, Vec<u8>)>,
    pub call: Call,
}

pub fn axes_case(rng: &mut Rng) -> AxesCase {
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
    let mut ins = vec![tensor(rng, dt, &shape, true)];
    for _ in 1..op.arity() {
        let s = if broadcast.is_some() {
            shape.clone()
        } else {
            broadcastable(rng, &shape)
        };
        ins.push(tensor(rng, dt, &s, true));
    }
    let call = Call {
        broadcast,
        axes: random_axes(rng, rank),
        keepdims: rng.chance(30),
        ..Call::default()
    };
    AxesCase {
        op,
        dt,
        out_dt,
        ins,
        call,
    }
}
