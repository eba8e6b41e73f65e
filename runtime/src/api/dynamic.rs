//! The dynamic entry points, for frameworks that know data types only at run time: an op's metadata,
//! tensor descriptions and byte buffers in native (little-endian) encoding.

use crate::cpu::{self, Kernels};
use crate::error::{Error, Result};
use crate::op::{Call, FoldKernel, InputBuffer, MapKernel, OpInfo, PairKernel, Plan};
use crate::validate::buffer::{Overlap, Place, check_in_place, check_place, classify};
use crate::validate::{self, OpTensor, desc::TensorDesc};

/// One input binding of [`execute`].
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// A description and the buffer it describes (starting at the tensor's base offset).
    Bytes(&'a TensorDesc, &'a [u8]),
    /// This input is the output region itself (in-place execution; the op must allow it).
    Output,
}

/// A tensor inside a shared buffer, for [`execute_in_buffer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Byte offset of element 0 in the buffer.
    pub offset: usize,
    /// The tensor's description.
    pub desc: TensorDesc,
}

/// The op's CPU kernels for a validated plan's types, from its tables. Validation admits only the
/// types the op's table lists, and the macro generates kernels for each of them.
pub(crate) fn op_kernels(op: &OpInfo, plan: &Plan) -> Result<OpKernels> {
    let missing = || Error::UnsupportedDataType {
        op: op.name(),
        tensor: op.tensor_name(0),
        dtype: plan.in_dtype,
        level: crate::FeatureLevel::EXT,
        supported: "none on the CPU".to_owned(),
    };
    let mapped = match plan.reduce {
        Some(r) => cpu::accum::intermediate_type(r, plan.in_dtype),
        None => plan.out_dtype,
    };
    let pair = match plan.pairwise {
        true => Some(*op.pair_kernel(plan.in_dtype).ok_or_else(missing)?),
        false => None,
    };
    // A pairwise op needs no map kernel; a placeholder keeps one shape for every call.
    let (map, fold) = match op.cpu_kernel(plan.in_dtype, mapped) {
        Some(k) => (k.map, k.fold),
        None if pair.is_some() => (no_map as MapKernel, None),
        None => return Err(missing()),
    };
    Ok(OpKernels { map, fold, pair })
}

fn no_map(_: &[&[u8]], _: &mut [u8]) {}

/// An op's table entries for one call's types.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpKernels {
    map: MapKernel,
    fold: Option<FoldKernel>,
    pair: Option<PairKernel>,
}

impl OpKernels {
    /// The element-wise kernel.
    pub(crate) fn map(&self) -> MapKernel {
        self.map
    }

    /// [`Kernels`] borrowing the entries.
    pub(crate) fn kernels(&self) -> Kernels<'_> {
        Kernels {
            map: &self.map,
            fold: self
                .fold
                .as_ref()
                .map(|f| f as &(dyn Fn(&[&[u8]], &mut [u64], usize) + Sync)),
            pair: self.pair.as_ref().map(|p| crate::cpu::PairRef {
                run: &p.run,
                wide: p.wide,
            }),
        }
    }
}

/// Runs `op` on byte buffers. Everything is validated before any byte of `output` is written; on
/// error `output` is untouched. Only the output's elements are written (for a strided output, the
/// bytes between elements keep their values).
pub fn execute(
    op: &OpInfo,
    call: &Call,
    inputs: &[Input<'_>],
    output_desc: &TensorDesc,
    output: &mut [u8],
) -> Result<()> {
    let descs: Vec<&TensorDesc> = inputs
        .iter()
        .map(|i| match i {
            Input::Bytes(d, _) => *d,
            Input::Output => output_desc,
        })
        .collect();
    let plan = validate::validate(op, call, &descs, output_desc)?;
    let ks = op_kernels(op, &plan)?;
    let mut srcs = Vec::with_capacity(inputs.len());
    for (k, i) in inputs.iter().enumerate() {
        match i {
            Input::Output => {
                check_in_place(op, k)?;
                srcs.push(InputBuffer::Output);
            }
            Input::Bytes(d, b) => {
                let place = Place::Slice {
                    addr: b.as_ptr() as usize,
                    len: b.len(),
                };
                let (_, end) = check_place(d, OpTensor(op, k), place)?;
                srcs.push(InputBuffer::Bytes(&b[..end as usize]));
            }
        }
    }
    let place = Place::Slice {
        addr: output.as_ptr() as usize,
        len: output.len(),
    };
    let (_, end) = check_place(output_desc, "OutputTensor", place)?;
    cpu::execute(&plan, &srcs, &mut output[..end as usize], &ks.kernels())
}

/// Runs an element-wise `op` on packed inputs of one shape (`sizes`, element type `dtype`) into a
/// packed output of that shape and type `out_dtype`: the same result as [`execute`] with packed
/// descriptions, with no descriptions built and, for a small call, no plan (the op's kernel runs on
/// this thread). For bindings that call small ops in a loop, as the Python package does.
///
/// Returns `Ok(false)`, having written nothing, where the call is not of that kind (a reduction, a
/// pairwise op, a broadcast with an axis, buffers of another length): [`execute`] then handles it
/// and reports what is wrong. Errors are those [`execute`] gives for the same call.
pub fn execute_packed(
    op: &OpInfo,
    call: &Call,
    sizes: &[usize],
    dtype: crate::DataType,
    out_dtype: crate::DataType,
    inputs: &[&[u8]],
    output: &mut [u8],
) -> Result<bool> {
    if op.reduce().is_some() || call.axes.is_some() {
        return Ok(false);
    }
    let Some(shape) = crate::Dims::new(sizes) else {
        return Ok(false);
    };
    let n = inputs.len();
    let Some((count, broadcast)) =
        validate::check_same_shape_dynamic(op, call, n, dtype, out_dtype, &shape)?
    else {
        return Ok(false);
    };
    let (es, oes) = (dtype.size(), out_dtype.size());
    if inputs.iter().any(|b| b.len() != count * es) || output.len() != count * oes {
        return Ok(false);
    }
    let Some(kernel) = op.cpu_kernel(dtype, out_dtype) else {
        return Ok(false);
    };
    if count * oes < cpu::PARALLEL_BYTES {
        (kernel.map)(inputs, output);
    } else {
        let plan = validate::same_shape_plan(n, dtype, out_dtype, &shape, count, broadcast);
        let srcs: Vec<InputBuffer<'_>> = inputs.iter().map(|b| InputBuffer::Bytes(b)).collect();
        cpu::walk::run(&plan, &srcs, output, &kernel.map);
    }
    Ok(true)
}

/// Runs a pairwise `op` on packed 2-D inputs, `a` (`[M, K]`) and `b` (`[N, K]`) of `dtype` with
/// `rows` = `(M, N, K)`, into a packed `[M, N]` output of `out_dtype`: the result of [`execute`]
/// with packed descriptions, without building or checking them. For bindings whose calls are
/// mostly of plain matrices, as the Python package's are.
///
/// Returns `Ok(false)`, having written nothing, where the call is not of that kind (an op that is
/// not pairwise, buffers of other lengths); errors are those [`execute`] gives for the same call.
#[allow(clippy::too_many_arguments)]
pub fn execute_pairwise_packed(
    op: &OpInfo,
    call: &Call,
    rows: (usize, usize, usize),
    dtype: crate::DataType,
    out_dtype: crate::DataType,
    a: &[u8],
    b: &[u8],
    output: &mut [u8],
) -> Result<bool> {
    let (m, n, _) = rows;
    if !op.is_pairwise() || !packed_lengths(rows, dtype, a, b) {
        return Ok(false);
    }
    let (reduce, sum) = validate::reduce::pairwise_packed_checks(op, call, rows, dtype, out_dtype)?;
    if m.checked_mul(n)
        .and_then(|c| c.checked_mul(out_dtype.size()))
        != Some(output.len())
    {
        return Ok(false);
    }
    // A sum of plain counts goes to the pair kernel with no plan: small calls notice building it.
    if reduce == crate::ReduceOp::Sum
        && sum.is_plain()
        && let Some(pair) = op.pair_kernel(dtype)
    {
        cpu::pair::run_packed(
            cpu::PairRef {
                run: &pair.run,
                wide: pair.wide,
            },
            rows,
            dtype,
            out_dtype.size(),
            (a, b),
            output,
        );
        return Ok(true);
    }
    let plan = validate::reduce::pairwise_packed(op, call, rows, dtype, out_dtype)?;
    let ks = op_kernels(op, &plan)?;
    cpu::execute(
        &plan,
        &[InputBuffer::Bytes(a), InputBuffer::Bytes(b)],
        output,
        &ks.kernels(),
    )?;
    Ok(true)
}

/// [`knn`] on packed 2-D inputs (as [`execute_pairwise_packed`] takes them) into packed `[M, k]`
/// outputs: `distances` of `out_dtype`, `indices` of `i64`. Returns `Ok(false)`, having written
/// nothing, where the call is not of that kind; errors are those [`knn`] gives for the same call.
#[allow(clippy::too_many_arguments)]
pub fn knn_packed(
    op: &OpInfo,
    call: &Call,
    rows: (usize, usize, usize),
    dtype: crate::DataType,
    k: usize,
    out_dtype: crate::DataType,
    a: &[u8],
    b: &[u8],
    distances: &mut [u8],
    indices: &mut [u8],
) -> Result<bool> {
    if !op.is_pairwise() || !packed_lengths(rows, dtype, a, b) {
        return Ok(false);
    }
    let plan = validate::reduce::knn_packed(op, call, rows, dtype, k, out_dtype)?;
    let count = rows.0.checked_mul(k);
    let oes = out_dtype.size();
    if count.and_then(|c| c.checked_mul(oes)) != Some(distances.len())
        || count.and_then(|c| c.checked_mul(8)) != Some(indices.len())
    {
        return Ok(false);
    }
    let out = cpu::knn::KnnOut {
        dist: distances,
        es: oes,
        idx: indices,
    };
    knn_into(
        op,
        &plan,
        &[InputBuffer::Bytes(a), InputBuffer::Bytes(b)],
        k,
        out,
    )?;
    Ok(true)
}

/// knn for a validated plan, through the op's pair kernel, into packed outputs (see
/// [`cpu::knn::knn`]).
fn knn_into(
    op: &OpInfo,
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    k: usize,
    out: cpu::knn::KnnOut<'_>,
) -> Result<()> {
    let ks = op_kernels(op, plan)?;
    let pair = ks.kernels().pair.ok_or_else(|| Error::NotAReduction {
        op: op.name(),
        what: "has no pair kernel",
    })?;
    cpu::knn::knn(plan, inputs, k, pair, out)
}

/// Whether `a` and `b` are exactly packed `[M, K]` and `[N, K]` of `dtype`.
fn packed_lengths(
    (m, n, k): (usize, usize, usize),
    dtype: crate::DataType,
    a: &[u8],
    b: &[u8],
) -> bool {
    let bytes = |rows: usize| {
        rows.checked_mul(k)
            .and_then(|c| c.checked_mul(dtype.size()))
    };
    bytes(m) == Some(a.len()) && bytes(n) == Some(b.len())
}

/// Runs `op` on tensors that all live in one buffer, as a framework's memory arena or a GPU buffer
/// does. An input whose region is exactly the output's runs in place (if the op allows it); any other
/// overlap with the output is an error. Offsets are checked against promised alignments.
pub fn execute_in_buffer(
    op: &OpInfo,
    call: &Call,
    buffer: &mut [u8],
    inputs: &[Region],
    output: &Region,
) -> Result<()> {
    let descs: Vec<&TensorDesc> = inputs.iter().map(|r| &r.desc).collect();
    let plan = validate::validate(op, call, &descs, &output.desc)?;
    let ks = op_kernels(op, &plan)?;
    let len = buffer.len() as u64;
    let span = |r: &Region, k: usize| {
        let place = Place::InBuffer {
            offset: r.offset as u64,
            len,
        };
        check_place(&r.desc, OpTensor(op, k), place)
    };
    let (os, oe) = span(output, op.arity())?;
    let mut spans = Vec::with_capacity(inputs.len());
    for (k, r) in inputs.iter().enumerate() {
        let (s, e) = span(r, k)?;
        spans.push(
            match classify(op, k, &r.desc, (s, e), &output.desc, (os, oe))? {
                Overlap::Alias => None,
                Overlap::Disjoint => Some((s as usize, e as usize)),
            },
        );
    }
    let (os, oe) = (os as usize, oe as usize);
    let (before, rest) = buffer.split_at_mut(os);
    let (out, after) = rest.split_at_mut(oe - os);
    let (before, after) = (&*before, &*after);
    let srcs: Vec<InputBuffer<'_>> = spans
        .iter()
        .map(|sp| match *sp {
            None => InputBuffer::Output,
            Some((s, e)) if e <= os => InputBuffer::Bytes(&before[s..e]),
            Some((s, e)) if s >= oe => InputBuffer::Bytes(&after[s - oe..e - oe]),
            // An empty region between the output's bounds holds no element.
            Some(_) => InputBuffer::Bytes(&[]),
        })
        .collect();
    cpu::execute(&plan, &srcs, out, &ks.kernels())
}

/// The descriptions of knn's and range search's inputs, which never run in place: an
/// `Input::Output` is the op's in-place error.
fn query_descs<'a>(op: &OpInfo, inputs: &[Input<'a>]) -> Result<Vec<&'a TensorDesc>> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, input)| match input {
            Input::Bytes(d, _) => Ok(*d),
            Input::Output => Err(check_in_place(op, i)
                .err()
                .unwrap_or(Error::InPlaceNotAllowed {
                    op: op.name(),
                    tensor: op.tensor_name(i),
                    allowed: "no input".to_owned(),
                })),
        })
        .collect()
}

/// The buffers of inputs [`query_descs`] accepted, each checked against its description and
/// cut to the bytes it spans.
fn query_buffers<'a>(op: &OpInfo, inputs: &[Input<'a>]) -> Result<Vec<InputBuffer<'a>>> {
    let mut bufs = Vec::with_capacity(inputs.len());
    for (i, input) in inputs.iter().enumerate() {
        if let Input::Bytes(d, b) = input {
            let place = Place::Slice {
                addr: b.as_ptr() as usize,
                len: b.len(),
            };
            let (_, end) = check_place(d, OpTensor(op, i), place)?;
            bufs.push(InputBuffer::Bytes(&b[..end as usize]));
        }
    }
    Ok(bufs)
}

/// For each row of `a` (`inputs[0]`, `[..., M, K]`), the `k` rows of `b` (`inputs[1]`,
/// `[..., N, K]`) nearest under a pairwise sum op such as HAMMING_CDIST: their distances (ascending,
/// ties by the lower row index) into `distances` and their row indices into `indices` (`i64`),
/// both `[..., M, k]`. Everything is validated before a byte is written; the `M x N` distances are
/// never held at once.
pub fn knn(
    op: &OpInfo,
    call: &Call,
    inputs: &[Input<'_>],
    k: usize,
    distances: (&TensorDesc, &mut [u8]),
    indices: (&TensorDesc, &mut [u8]),
) -> Result<()> {
    let (dist_desc, dist_out) = distances;
    let (idx_desc, idx_out) = indices;
    let descs = query_descs(op, inputs)?;
    let plan = validate::validate_knn(op, call, &descs, k, dist_desc.data_type())?;
    crate::validate::reduce::check_knn_outputs(op, &plan, dist_desc, idx_desc)?;
    let bufs = query_buffers(op, inputs)?;
    for (name, d, b) in [
        ("distances", dist_desc, &*dist_out),
        ("indices", idx_desc, &*idx_out),
    ] {
        let place = Place::Slice {
            addr: b.as_ptr() as usize,
            len: b.len(),
        };
        check_place(d, name, place)?;
    }
    let oes = dist_desc.data_type().size();
    if dist_desc.is_packed() && idx_desc.is_packed() {
        // Rows straight into their place.
        let out = cpu::knn::KnnOut {
            dist: &mut dist_out[..plan.count * oes],
            es: oes,
            idx: &mut idx_out[..plan.count * 8],
        };
        return knn_into(op, &plan, &bufs, k, out);
    }
    // Strided outputs: packed rows first, then each through the strides.
    crate::alloc::check_pair(
        plan.count * oes,
        plan.count * 8,
        "the distances and indices",
    )?;
    let mut dist = crate::alloc::zeroed_vec::<u8>(plan.count * oes, "distances")?;
    let mut idx = crate::alloc::zeroed_vec::<u8>(plan.count * 8, "indices")?;
    let out = cpu::knn::KnnOut {
        dist: &mut dist,
        es: oes,
        idx: &mut idx,
    };
    knn_into(op, &plan, &bufs, k, out)?;
    write_knn(&dist, &idx, k, (dist_desc, dist_out), (idx_desc, idx_out));
    Ok(())
}

/// The hits of [`range_search`], in FAISS's layout: row `i` of `a` has the hits
/// `lims[i]..lims[i + 1]` of `values` and `indices`, in ascending index order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeResult {
    /// `M + 1` offsets into `values` and `indices`, from 0 to the number of hits.
    pub lims: Vec<i64>,
    /// The hits' results, elements of `value_type` in native (little-endian) encoding.
    pub values: Vec<u8>,
    /// The results' type.
    pub value_type: crate::DataType,
    /// The hits' rows of `b`.
    pub indices: Vec<i64>,
}

/// For each row of `a` (`inputs[0]`, `[M, K]`), every row of `b` (`inputs[1]`, `[N, K]`) whose
/// result under a pairwise sum op passes `threshold`: for ops whose nearest results are the
/// smallest (HAMMING_CDIST), `value < threshold`, as FAISS's `IndexBinaryFlat.range_search` takes
/// a radius; for those ranked largest first (`call.largest`, or the op's `nearest = largest`),
/// `value >= threshold`. The threshold is compared at its exact value; results are of
/// `out_dtype`. The `M x N` results are never held at once.
pub fn range_search(
    op: &OpInfo,
    call: &Call,
    inputs: &[Input<'_>],
    threshold: f64,
    out_dtype: crate::DataType,
) -> Result<RangeResult> {
    let descs = query_descs(op, inputs)?;
    let plan = range_plan(op, call, &descs, threshold, out_dtype)?;
    let bufs = query_buffers(op, inputs)?;
    let ks = op_kernels(op, &plan)?;
    let hits = range_hits(op, call, &plan, &bufs, &ks.kernels(), threshold)?;
    let es = out_dtype.size();
    let count = hits.keys.len();
    crate::alloc::check_pair(
        count.saturating_mul(es),
        count.saturating_mul(8),
        "range_search hits",
    )?;
    let mut values = crate::alloc::zeroed_vec::<u8>(count * es, "range_search values")?;
    for (j, &key) in hits.keys.iter().enumerate() {
        crate::element::write_elem(&mut values, j, es, plan.knn_value(key));
    }
    drop(hits.keys);
    Ok(RangeResult {
        lims: hits.lims.into_iter().map(|l| l as i64).collect(),
        values,
        value_type: out_dtype,
        indices: hits.indices.into_iter().map(|i| i as i64).collect(),
    })
}

/// Validates a range search of `op` on inputs described by `descs`: a number for a threshold,
/// a pairwise sum of two matrices of codes, results of `out_dtype`.
pub(crate) fn range_plan(
    op: &OpInfo,
    call: &Call,
    descs: &[&TensorDesc],
    threshold: f64,
    out_dtype: crate::DataType,
) -> Result<Plan> {
    if threshold.is_nan() {
        return Err(Error::BadArgument {
            op: "range_search",
            reason: "the threshold is NaN".to_owned(),
        });
    }
    let plan = validate::validate_knn(op, call, descs, 0, out_dtype)?;
    if descs.iter().any(|d| d.rank() != 2) {
        let shapes: Vec<String> = descs
            .iter()
            .map(|d| crate::ShapeText(d.sizes().to_vec()).to_string())
            .collect();
        return Err(Error::BadArgument {
            op: "range_search",
            reason: format!(
                "a and b must be matrices of codes, [M, K] and [N, K]; got {}",
                shapes.join(" and ")
            ),
        });
    }
    Ok(plan)
}

/// The hits of a validated range search ([`range_plan`]) through the op's pair kernel.
pub(crate) fn range_hits(
    op: &OpInfo,
    call: &Call,
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    kernels: &Kernels<'_>,
    threshold: f64,
) -> Result<cpu::range::Hits> {
    let pair = kernels.pair.ok_or_else(|| Error::NotAReduction {
        op: op.name(),
        what: "has no pair kernel",
    })?;
    let limit = cpu::range::key_limit(plan, threshold, call.largest_first(op));
    cpu::range::range(plan, inputs, limit, pair)
}

/// Writes knn's packed rows (`k` distances of the output type and `k` `i64` indices per row of
/// `a`, in row order) through the outputs' strides.
fn write_knn(
    dist_rows: &[u8],
    idx_rows: &[u8],
    k: usize,
    (dd, dist): (&TensorDesc, &mut [u8]),
    (id, idx): (&TensorDesc, &mut [u8]),
) {
    if k == 0 {
        return;
    }
    let (ds, is) = (dd.effective_strides(), id.effective_strides());
    let rank = dd.rank();
    let oes = dd.data_type().size();
    let rows = dist_rows
        .chunks_exact(k * oes)
        .zip(idx_rows.chunks_exact(k * 8));
    for (row, (dr, ir)) in rows.enumerate() {
        // The offset of element [row..., 0]: `row` runs over every dimension but the last.
        let (mut d_at, mut i_at, mut rem) = (0, 0, row);
        for d in (0..rank - 1).rev() {
            let n = dd.sizes()[d];
            d_at += (rem % n) * ds[d];
            i_at += (rem % n) * is[d];
            rem /= n;
        }
        for (j, (dv, iv)) in dr.chunks_exact(oes).zip(ir.chunks_exact(8)).enumerate() {
            let (d0, i0) = (
                (d_at + j * ds[rank - 1]) * oes,
                (i_at + j * is[rank - 1]) * 8,
            );
            dist[d0..d0 + oes].copy_from_slice(dv);
            idx[i0..i0 + 8].copy_from_slice(iv);
        }
    }
}
