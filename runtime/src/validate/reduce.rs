//! Validation of reductions, pairwise ops and knn: the axes, the output shape, the overflow rule of
//! sums, and the iteration space (kept dimensions first, then reduced ones) the executors walk.

use super::broadcast::{aligned_strides, collapse};
use super::desc::TensorDesc;
use super::{broadcast_shape, check_broadcast, check_inputs};
use crate::error::{Error, Result, ShapeText};
use crate::op::{Affine, Call, Epilogue, OpInfo, Pad, Plan, ReduceOp};
use crate::ratio::RatioPlan;
use crate::{DataType, Dims, MAX_INPUTS, MAX_RANK};

/// The plan of a call of a reduction or pairwise op, with `output` checked when the caller gives
/// one (else the output is packed, of `out_dtype`).
pub(crate) fn plan(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    out_dtype: DataType,
    output: Option<&TensorDesc>,
) -> Result<Plan> {
    let reduce = op.reduce().unwrap_or(ReduceOp::Sum);
    if op.is_pairwise() {
        return pairwise(op, reduce, call, inputs, out_dtype, output);
    }
    let dtype = check_inputs(op, call, inputs, out_dtype)?;
    let broadcast = check_broadcast(op, call, inputs.len())?;
    let shape = broadcast_shape(op, broadcast, inputs)?;
    let rank = shape.len();
    let reduced_dims = resolve_axes(op, call, rank)?;
    let mut reduced = 1usize;
    for d in 0..rank {
        if reduced_dims[d] {
            reduced = reduced
                .checked_mul(shape[d])
                .ok_or_else(|| overflow(&shape))?;
        }
    }
    if call.bits.is_some() && (0..rank).any(|d| reduced_dims[d] != (d + 1 == rank)) {
        return Err(Error::ValidBits {
            op: op.name(),
            bits: call.bits.unwrap_or(0),
            reason: "valid bits are the first bits of each row of the last axis: reduce the last axis alone (axes = [-1])".to_owned(),
        });
    }
    let sum = check_sum(op, call, reduce, dtype, out_dtype, reduced)?;
    // The output: the kept dimensions, and with keepdims a 1 for each reduced one.
    let mut out_shape = Dims::EMPTY;
    for d in 0..rank {
        if !reduced_dims[d] {
            out_shape.push(shape[d]);
        } else if call.keepdims {
            out_shape.push(1);
        }
    }
    let count = out_shape.product().ok_or_else(|| overflow(&out_shape))?;
    let out_strides = check_output(op, output, &out_shape)?;
    // Each output dimension's stride, placed on the broadcast shape's dimensions.
    let mut o_on_shape = Dims::filled(rank, 0);
    let mut k = 0;
    for d in 0..rank {
        if !reduced_dims[d] {
            o_on_shape[d] = out_strides[k];
            k += 1;
        } else if call.keepdims {
            k += 1;
        }
    }
    let aligned = aligned_strides(broadcast, &shape, inputs);
    let n = inputs.len();
    let pick = |keep: bool| -> (Dims, Dims, [Dims; MAX_INPUTS]) {
        let mut sizes = Dims::EMPTY;
        let mut os = Dims::EMPTY;
        let mut ins = [Dims::EMPTY; MAX_INPUTS];
        for d in (0..rank).filter(|&d| reduced_dims[d] != keep) {
            sizes.push(shape[d]);
            os.push(o_on_shape[d]);
            for (dst, src) in ins.iter_mut().zip(&aligned).take(n) {
                dst.push(src[d]);
            }
        }
        (sizes, os, ins)
    };
    let (ks, kos, kins) = pick(true);
    let (rs, ros, rins) = pick(false);
    let (ks, kos, kins) = collapse(&ks, &kos, &kins[..n]);
    let (rs, _, rins) = collapse(&rs, &ros, &rins[..n]);
    let mut plan = Plan::EMPTY;
    plan.in_dtype = dtype;
    plan.out_dtype = out_dtype;
    plan.out_shape = out_shape;
    plan.count = count;
    plan.broadcast = broadcast;
    plan.reduce = Some(reduce);
    plan.kept = ks.len();
    plan.reduced = reduced;
    join(&mut plan, (&ks, &kos, &kins), (&rs, &rins), n);
    sum.apply(op, call, n, &mut plan)?;
    Ok(plan)
}

/// `plan.iter` and the strides: the kept dimensions, then the reduced ones (output stride 0).
fn join(
    plan: &mut Plan,
    (ks, kos, kins): (&Dims, &Dims, &[Dims; MAX_INPUTS]),
    (rs, rins): (&Dims, &[Dims; MAX_INPUTS]),
    n: usize,
) {
    plan.iter = *ks;
    plan.out_strides = *kos;
    for (k, dst) in plan.in_strides.iter_mut().enumerate().take(n) {
        *dst = kins[k];
    }
    for d in 0..rs.len() {
        plan.iter.push(rs[d]);
        plan.out_strides.push(0);
        for (k, dst) in plan.in_strides.iter_mut().enumerate().take(n) {
            dst.push(rins[k][d]);
        }
    }
}

fn overflow(shape: &[usize]) -> Error {
    Error::SizeOverflow {
        tensor: "OutputTensor".to_owned(),
        sizes: ShapeText(shape.to_vec()),
    }
}

/// The output description against the shape a reduction gives, or packed strides for a new one.
fn check_output(op: &OpInfo, output: Option<&TensorDesc>, shape: &Dims) -> Result<Dims> {
    match output {
        Some(o) => {
            o.validate("OutputTensor", true)?;
            if o.sizes() != &**shape {
                return Err(Error::OutputShape {
                    op: op.name(),
                    expected: ShapeText(shape.to_vec()),
                    got: ShapeText(o.sizes().to_vec()),
                });
            }
            Ok(o.effective_strides())
        }
        None => shape.packed_strides().ok_or_else(|| overflow(shape)),
    }
}

/// The dimensions a call reduces, as a mask over the broadcast shape's `rank` dimensions: the call's
/// axes, else the op's default axes, else all. Negative axes count from the end; an axis out of
/// range or named twice is an error.
fn resolve_axes(op: &OpInfo, call: &Call, rank: usize) -> Result<[bool; MAX_RANK]> {
    let mut mask = [false; MAX_RANK];
    let mut first = [0i64; MAX_RANK];
    let given = call
        .axes
        .as_ref()
        .map(|a| a.as_slice())
        .or(op.default_axes());
    let Some(axes) = given else {
        mask[..rank].fill(true);
        return Ok(mask);
    };
    for &axis in axes {
        let dim = if axis < 0 { axis + rank as i64 } else { axis };
        if dim < 0 || dim >= rank as i64 {
            return Err(Error::AxisOutOfRange {
                op: op.name(),
                axis,
                rank,
                last: rank as i64 - 1,
            });
        }
        let dim = dim as usize;
        if mask[dim] {
            return Err(Error::RepeatedAxis {
                op: op.name(),
                first: first[dim],
                second: axis,
                dim,
            });
        }
        mask[dim] = true;
        first[dim] = axis;
    }
    Ok(mask)
}

/// The overflow rule of a sum of `count` elements into the plan's output type: every result the
/// op's `compute` can give must fit (a count's worst case has every bit set). The error names the
/// smallest of the op's output types that fits. Returns the epilogue (for an affine `compute`) and
/// the most a count can reach.
#[inline]
pub(crate) fn check_sum(
    op: &OpInfo,
    call: &Call,
    reduce: ReduceOp,
    dtype: DataType,
    out_dtype: DataType,
    count: usize,
) -> Result<Sum> {
    if reduce != ReduceOp::Sum {
        if let Some(bits) = call.bits {
            return Err(Error::ValidBits {
                op: op.name(),
                bits,
                reason: format!(
                    "valid bits apply to sums of bit counts (`reduce = sum`); {} reduces with {reduce}",
                    op.name()
                ),
            });
        }
        return Ok(Sum::default());
    }
    let bits = dtype.bits();
    let whole = count as u128 * u128::from(bits);
    let valid_bits = valid_bits(op, call, dtype, count)?;
    if let Some(ratio) = op.ratio() {
        return ratio_sum(op, ratio, (count, bits), valid_bits, call.bits);
    }
    // With valid bits, the sum runs over the elements that hold them; its count also holds what
    // the zeroed padding of the last one adds, which the epilogue takes off.
    let (count, valid, extra) = match valid_bits {
        Some((elements, _, extra)) => (elements, call.bits.unwrap_or(0) as u128, extra),
        None => (count, whole, 0),
    };
    let affine = op.affine().unwrap_or(Affine::COUNT);
    let (lo, hi) = match u64::try_from(valid) {
        Ok(v) => affine.range(count as u64, v),
        Err(_) => (i128::MIN, i128::MAX),
    };
    let fits = |t: DataType| {
        let (min, max) = t.value_range();
        min <= lo && hi <= max
    };
    if fits(out_dtype) {
        let max_count = count as u64 * u64::from(bits);
        let offset = affine.offset(count as u64, valid as u64)
            - i128::from(affine.scale) * i128::from(extra);
        let epilogue = (offset != 0 || affine.scale != 1).then_some(Epilogue {
            offset: offset as u64,
            scale: affine.scale as u64,
        });
        return Ok(Sum {
            epilogue,
            max_count,
            valid: valid_bits.map(|(elements, pad, _)| (elements, pad)),
            ratio: None,
        });
    }
    Err(sum_error(op, out_dtype, (count, bits), (lo, hi), fits))
}

/// [`check_sum`] for a ratio op: the kernels count `a & b` over the elements that hold the
/// valid bits (zeroed past them, which adds nothing to those counts), and both sums are exact in
/// `f64`'s 53 bits.
fn ratio_sum(
    op: &OpInfo,
    ratio: crate::Ratio,
    (count, bits): (usize, u32),
    valid_bits: Option<(usize, Option<Pad>, u64)>,
    call_bits: Option<usize>,
) -> Result<Sum> {
    let (elements, valid) = match (valid_bits, call_bits) {
        (Some((elements, _, _)), Some(d)) => (elements, d as u128),
        _ => (count, count as u128 * u128::from(bits)),
    };
    let rp = RatioPlan {
        ratio,
        elements: elements as u64,
        bits: u64::try_from(valid).unwrap_or(u64::MAX),
        largest: false,
    };
    let (num, den) = rp.bounds();
    // The kernels sum the terms in 64 bits.
    if num.max(den) >= 1 << 53 || rp.terms() >= 1 << 62 {
        return Err(Error::BadArgument {
            op: op.name(),
            reason: format!(
                "rows of {valid} valid bits give sums of up to {} in `{}`, past the 2^53 that its results are exact to",
                num.max(den),
                op.compute()
            ),
        });
    }
    Ok(Sum {
        epilogue: None,
        max_count: elements as u64 * u64::from(bits),
        valid: valid_bits.map(|(elements, pad, _)| (elements, pad)),
        ratio: Some(rp),
    })
}

/// The checks a ratio op's knn and range search add: their keys order the exact fractions where
/// `|N| * |D|` stays below 2^50, and an `f32` result comes from the key where both are below 2^24.
pub(crate) fn check_ratio_keys(op: &OpInfo, plan: &Plan) -> Result<()> {
    let Some(rp) = plan.ratio else {
        return Ok(());
    };
    let (num, den) = rp.bounds();
    let f32_limit = crate::ratio::exact_bits(plan.out_dtype);
    let reason = if num.saturating_mul(den) >= 1 << 50 {
        format!(
            "its sums reach {num} and {den} here, whose fractions 64-bit keys cannot order exactly"
        )
    } else if num.max(den) >= 1 << f32_limit {
        format!(
            "its sums reach {} here, past the 2^24 that f32 results of knn and range search are exact to; ask for f64",
            num.max(den)
        )
    } else {
        return Ok(());
    };
    Err(Error::BadArgument {
        op: op.name(),
        reason: format!(
            "knn and range search rank `{}` exactly, but {reason}",
            op.compute()
        ),
    })
}

/// [`check_sum`]'s error: the sum's range does not fit `out_dtype`. Built apart, and only on
/// failure: the success path is what small calls pay for.
#[cold]
#[inline(never)]
fn sum_error(
    op: &OpInfo,
    out_dtype: DataType,
    (count, bits): (usize, u32),
    (lo, hi): (i128, i128),
    fits: impl Fn(DataType) -> bool,
) -> Error {
    let affine = op.affine().unwrap_or(Affine::COUNT);
    let mut outs: Vec<DataType> = op.output_types().unwrap_or(&[]).to_vec();
    outs.sort_by_key(|&t| t.value_range().1 - t.value_range().0);
    let fits = match outs.iter().find(|&&t| fits(t)) {
        Some(t) => format!("the smallest output type that fits is {t}"),
        None => {
            let names: Vec<&str> = outs.iter().map(|t| t.name()).collect();
            format!(
                "none of the op's output types ({}) fits: reduce fewer elements",
                names.join(", ")
            )
        }
    };
    if affine.is_count() {
        return Error::SumOverflow {
            op: op.name(),
            count,
            bits,
            output: out_dtype,
            fits,
        };
    }
    Error::SumRange {
        op: op.name(),
        compute: op.compute(),
        count,
        bits,
        lo: lo.clamp(i64::MIN.into(), i64::MAX.into()) as i64,
        hi: hi.clamp(i64::MIN.into(), i64::MAX.into()) as i64,
        output: out_dtype,
        fits,
    }
}

/// What [`check_sum`] gives a plan: the epilogue, the most a count can reach (the bits of the
/// elements summed), and with valid bits the elements that hold them and the padding to zero.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sum {
    epilogue: Option<Epilogue>,
    max_count: u64,
    valid: Option<(usize, Option<Pad>)>,
    ratio: Option<RatioPlan>,
}

impl Sum {
    /// Whether the results are the counts as they are: no epilogue and no valid bits.
    pub(crate) fn is_plain(&self) -> bool {
        self.epilogue.is_none() && self.valid.is_none() && self.ratio.is_none()
    }

    /// Sets the plan's sum fields; with valid bits, the reduced dimension (the last of the
    /// iteration space, when the plan kept it) shrinks to the elements that hold them. Padding to
    /// zero needs whole rows: an input that broadcasts its last dimension repeats one element, whose
    /// padding is also its valid bits.
    fn apply(self, op: &OpInfo, call: &Call, arity: usize, plan: &mut Plan) -> Result<()> {
        plan.epilogue = self.epilogue;
        plan.max_count = self.max_count;
        plan.ratio = self.ratio;
        let Some((elements, pad)) = self.valid else {
            return Ok(());
        };
        if plan.iter.len() > plan.kept {
            let last = plan.iter.len() - 1;
            if pad.is_some()
                && let Some(i) =
                    (0..arity).find(|&i| plan.in_strides[i][last] == 0 && plan.iter[last] > 1)
            {
                return Err(Error::ValidBits {
                    op: op.name(),
                    bits: call.bits.unwrap_or(0),
                    reason: format!(
                        "{} repeats one element along its last dimension (a stride or a size of 0 or 1 there), whose padding bits would be valid bits elsewhere in the row; give it whole rows",
                        op.tensor_name(i)
                    ),
                });
            }
            plan.iter[last] = elements;
        }
        plan.reduced = elements;
        plan.pad = pad;
        Ok(())
    }
}

/// The call's valid bits, for a sum of `count` elements of `dtype` per result (the row): the
/// elements that hold them, the padding of the last one to zero (if it holds some), and what that
/// zeroed padding adds to each count.
fn valid_bits(
    op: &OpInfo,
    call: &Call,
    dtype: DataType,
    count: usize,
) -> Result<Option<(usize, Option<Pad>, u64)>> {
    let Some(d) = call.bits else {
        return Ok(None);
    };
    let error = |reason: String| Error::ValidBits {
        op: op.name(),
        bits: d,
        reason,
    };
    let w = dtype.bits() as usize;
    let row = count as u128 * w as u128;
    if d as u128 > row {
        return Err(error(format!(
            "more than the {row} bits of a row ({count} elements of {dtype}, {w} bits each)"
        )));
    }
    let elements = d.div_ceil(w);
    let held = d - (elements.max(1) - 1) * w; // valid bits in the last element
    if d == 0 || held == w {
        return Ok(Some((elements, None, 0)));
    }
    let Some(zero) = op.zero_bits(dtype) else {
        return Err(error(format!(
            "{}'s `compute` shifts, so a bit of its count is not the same bit of its inputs and padding cannot be told apart",
            op.name()
        )));
    };
    // Row bit `i` is bit `7 - i % 8` (big) or `i % 8` (little) of byte `i / 8`; the last
    // element's bytes are little-endian.
    let first = (elements - 1) * w;
    let mut mask = 0u64;
    for i in first + held..first + w {
        let byte = (i - first) / 8;
        mask |= u64::from(call.bitorder.mask(i)) << (8 * byte);
    }
    let pad = Pad {
        last: elements - 1,
        mask,
    };
    Ok(Some((
        elements,
        Some(pad),
        u64::from((zero & mask).count_ones()),
    )))
}

/// A pairwise call: `a [..., M, K]` and `b [..., N, K]` give `[..., M, N]`, the leading dimensions
/// broadcast numpy-style. The plan's iteration space is `[batch..., M, N, K]`.
fn pairwise(
    op: &OpInfo,
    reduce: ReduceOp,
    call: &Call,
    inputs: &[&TensorDesc],
    out_dtype: DataType,
    output: Option<&TensorDesc>,
) -> Result<Plan> {
    let dtype = check_inputs(op, call, inputs, out_dtype)?;
    let (a, b) = (inputs[0], inputs[1]);
    let (batch, m, n, k) = pairwise_shapes(op, call, a, b)?;
    let sum = check_sum(op, call, reduce, dtype, out_dtype, k)?;
    let mut out_shape = batch;
    out_shape.push(m);
    out_shape.push(n);
    let count = out_shape.product().ok_or_else(|| overflow(&out_shape))?;
    let os = check_output(op, output, &out_shape)?;
    let nb = batch.len();
    let (sa, sb) = (a.effective_strides(), b.effective_strides());
    // The batch dimensions: each input's own strides right-aligned, 0 where it is broadcast.
    let batch_strides = |d: &TensorDesc, s: &Dims| {
        let own = d.rank() - 2;
        let mut out = Dims::filled(nb, 0);
        for j in 0..own {
            if d.sizes()[j] != 1 {
                out[nb - own + j] = s[j];
            }
        }
        out
    };
    let ins = [batch_strides(a, &sa), batch_strides(b, &sb)];
    let bos = Dims::new(&os[..nb]).unwrap_or_default();
    let (bs, bos, bins) = collapse(&batch, &bos, &ins);
    let mut plan = pairwise_plan(dtype, out_dtype, reduce, out_shape, count);
    plan.iter = bs;
    plan.out_strides = bos;
    plan.in_strides[0] = bins[0];
    plan.in_strides[1] = bins[1];
    let (ra, rb) = (a.rank(), b.rank());
    push_pairwise_dims(
        &mut plan,
        [
            (m, os[nb], sa[ra - 2], 0),
            (n, os[nb + 1], 0, sb[rb - 2]),
            (k, 0, sa[ra - 1], sb[rb - 1]),
        ],
    );
    sum.apply(op, call, 2, &mut plan)?;
    Ok(plan)
}

/// A pairwise plan's types, output and reduction, its iteration space still empty.
fn pairwise_plan(
    dtype: DataType,
    out_dtype: DataType,
    reduce: ReduceOp,
    out_shape: Dims,
    count: usize,
) -> Plan {
    let mut plan = Plan::EMPTY;
    plan.in_dtype = dtype;
    plan.out_dtype = out_dtype;
    plan.count = count;
    plan.reduce = Some(reduce);
    plan.out_shape = out_shape;
    plan.pairwise = true;
    plan
}

/// Appends M, N and K to a pairwise plan's iteration space after its batch dimensions: each as
/// `(size, output stride, stride in a, stride in b)`. K, the reduced one, comes last.
fn push_pairwise_dims(plan: &mut Plan, dims: [(usize, usize, usize, usize); 3]) {
    for (size, o, ia, ib) in dims {
        plan.iter.push(size);
        plan.out_strides.push(o);
        plan.in_strides[0].push(ia);
        plan.in_strides[1].push(ib);
    }
    plan.reduced = dims[2].0;
    plan.kept = plan.iter.len() - 1;
}

/// The plan of a pairwise call on packed 2-D inputs `a [M, K]` and `b [N, K]` of `dtype` into a
/// packed `[M, N]` of `out_dtype` (`rows` is `(M, N, K)`): the checks of [`pairwise`] that such a
/// call can fail, in the same order and with the same errors, without descriptions.
pub(crate) fn pairwise_packed(
    op: &OpInfo,
    call: &Call,
    (m, n, k): (usize, usize, usize),
    dtype: DataType,
    out_dtype: DataType,
) -> Result<Plan> {
    let (reduce, sum) = pairwise_packed_checks(op, call, (m, n, k), dtype, out_dtype)?;
    let count = m * n;
    let out_shape = Dims::new(&[m, n]).unwrap_or_default();
    let mut plan = pairwise_plan(dtype, out_dtype, reduce, out_shape, count);
    push_pairwise_dims(&mut plan, [(m, n, k, 0), (n, 1, 0, k), (k, 0, 1, 1)]);
    sum.apply(op, call, 2, &mut plan)?;
    Ok(plan)
}

/// The checks of [`pairwise_packed`], without its plan: the reduction and its sum's settings. A
/// call whose sum [`is_plain`](Sum::is_plain) needs no plan on the CPU.
#[inline]
pub(crate) fn pairwise_packed_checks(
    op: &OpInfo,
    call: &Call,
    (m, n, k): (usize, usize, usize),
    dtype: DataType,
    out_dtype: DataType,
) -> Result<(ReduceOp, Sum)> {
    let reduce = op.reduce().unwrap_or(ReduceOp::Sum);
    super::check_arity(op, 2)?;
    super::check_types(op, call.level, dtype, out_dtype)?;
    for i in 0..2 {
        super::check_rank(op, super::OpTensor(op, i), 2)?;
    }
    pairwise_call(op, call)?;
    let sum = check_sum(op, call, reduce, dtype, out_dtype, k)?;
    m.checked_mul(n).ok_or_else(|| overflow(&[m, n]))?;
    Ok((reduce, sum))
}

/// The call's settings a pairwise op refuses: axes, keepdims, a broadcast other than numpy's.
fn pairwise_call(op: &OpInfo, call: &Call) -> Result<()> {
    if call.axes.is_some() || call.keepdims {
        return Err(Error::NotAReduction {
            op: op.name(),
            what: "is pairwise: it reduces the last dimension of both inputs, and takes no axes or keepdims",
        });
    }
    if let Some(mode) = call.broadcast.filter(|b| *b != crate::Broadcast::Numpy) {
        return Err(Error::BroadcastNotSupported {
            op: op.name(),
            mode: mode.mode(),
            accepted: "numpy (of the dimensions before the last two)".to_owned(),
        });
    }
    Ok(())
}

/// The checks of a knn call on top of its pairwise plan: the op is a pairwise sum, `k` is at most
/// the rows of `b`, and `[..., M, k]` (returned) has a size.
fn knn_shape(op: &OpInfo, call: &Call, plan: &mut Plan, k: usize) -> Result<Dims> {
    // Largest first: the largest counts, unless the values fall as the count grows.
    let falls = op.affine().is_some_and(|a| a.scale < 0);
    plan.flip = call.largest_first(op) != falls;
    // A ratio's keys are ordered as the call ranks them (see `ratio::key`).
    if let Some(rp) = &mut plan.ratio {
        rp.largest = call.largest_first(op);
        plan.flip = false;
        check_ratio_keys(op, plan)?;
    }
    let nd = plan.out_shape.len();
    let rows = plan.out_shape[nd - 1];
    if k > rows {
        return Err(Error::KTooLarge {
            op: op.name(),
            tensor: op.tensor_name(1),
            k,
            rows,
        });
    }
    let mut shape = plan.out_shape;
    shape[nd - 1] = k;
    shape.product().ok_or_else(|| overflow(&shape))?;
    Ok(shape)
}

/// A knn call must be of a pairwise sum op.
fn check_knn_op(op: &OpInfo) -> Result<()> {
    if !op.is_pairwise() || op.reduce() != Some(ReduceOp::Sum) {
        return Err(Error::NotAReduction {
            op: op.name(),
            what: "is not a pairwise sum: knn and range_search need distances, such as HAMMING_CDIST's",
        });
    }
    Ok(())
}

/// [`knn`] for packed 2-D inputs (see [`pairwise_packed`]).
pub(crate) fn knn_packed(
    op: &OpInfo,
    call: &Call,
    rows: (usize, usize, usize),
    dtype: DataType,
    k: usize,
    out_dtype: DataType,
) -> Result<Plan> {
    check_knn_op(op)?;
    let mut plan = pairwise_packed(op, call, rows, dtype, out_dtype)?;
    knn_shape(op, call, &mut plan, k)?;
    Ok(plan)
}

/// The batch shape, M, N and K of a pairwise call, with the errors of its shapes.
fn pairwise_shapes(
    op: &OpInfo,
    call: &Call,
    a: &TensorDesc,
    b: &TensorDesc,
) -> Result<(Dims, usize, usize, usize)> {
    pairwise_call(op, call)?;
    let mismatch = |detail: String| Error::ShapeMismatch {
        op: op.name(),
        mode: crate::BroadcastMode::Numpy,
        tensor: op.tensor_name(1),
        shape: ShapeText(b.sizes().to_vec()),
        target: format!(
            "{} shape {}",
            op.tensor_name(0),
            ShapeText(a.sizes().to_vec())
        ),
        detail,
    };
    for (i, d) in [a, b].into_iter().enumerate() {
        if d.rank() < 2 {
            return Err(Error::RankNotSupported {
                op: op.name(),
                tensor: op.tensor_name(i),
                rank: d.rank(),
                min: 2,
                max: op.max_rank(),
            });
        }
    }
    let (ra, rb) = (a.rank(), b.rank());
    let (ka, kb) = (a.sizes()[ra - 1], b.sizes()[rb - 1]);
    if ka != kb {
        return Err(mismatch(format!(
            "in its last dimension (K: {kb} vs {ka}; pairwise ops compare rows of equal length)"
        )));
    }
    let (ba, bb) = (&a.sizes()[..ra - 2], &b.sizes()[..rb - 2]);
    let rank = ba.len().max(bb.len());
    let mut batch = Dims::filled(rank, 1);
    for (j, slot) in batch.iter_mut().enumerate() {
        let get = |s: &[usize]| (j + s.len()).checked_sub(rank).map_or(1, |i| s[i]);
        let (x, y) = (get(ba), get(bb));
        *slot = match (x, y) {
            _ if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(mismatch(format!(
                    "in the leading dimensions {} vs {} (dimension {j}: {y} vs {x}; they broadcast numpy-style)",
                    ShapeText(bb.to_vec()),
                    ShapeText(ba.to_vec())
                )));
            }
        };
    }
    Ok((batch, a.sizes()[ra - 2], b.sizes()[rb - 2], ka))
}

/// The descriptions of knn's outputs against its plan: distances of the type the plan was made
/// for, indices of `i64`, both of the plan's output shape `[..., M, k]`.
pub(crate) fn check_knn_outputs(
    op: &OpInfo,
    plan: &Plan,
    distances: &TensorDesc,
    indices: &TensorDesc,
) -> Result<()> {
    for (name, d, dt) in [
        ("distances", distances, plan.out_dtype),
        ("indices", indices, DataType::I64),
    ] {
        d.validate(name, true)?;
        if d.data_type() != dt {
            return Err(Error::OutputDataType {
                op: op.name(),
                dtype: d.data_type(),
                expected: format!("{dt} for the {name} of knn"),
            });
        }
        if d.sizes() != &*plan.out_shape {
            return Err(Error::OutputShape {
                op: op.name(),
                expected: ShapeText(plan.out_shape.to_vec()),
                got: ShapeText(d.sizes().to_vec()),
            });
        }
    }
    Ok(())
}

/// The shapes of a knn call: the pairwise plan for the distances, and `[batch..., M, k]` for the
/// outputs.
pub(crate) fn knn(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    k: usize,
    out_dtype: DataType,
) -> Result<(Plan, Dims)> {
    check_knn_op(op)?;
    let mut plan = plan(op, call, inputs, out_dtype, None)?;
    let shape = knn_shape(op, call, &mut plan, k)?;
    Ok((plan, shape))
}
