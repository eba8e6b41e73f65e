//! Ratio ops (`compute = N / D`, such as TANIMOTO) on the device. The device counts: each tile of
//! `|a & b|` comes from the op's own pairwise kernels (a ratio op's WGSL counts `a & b`), and
//! each row's `|a|` and `|b|` from the same kernels against a row of ones, under the call's valid
//! bits. The host then divides, through the CPU's [`ratio_row`], so that every result, knn key and
//! range-search hit is the CPU's, bit for bit: WGSL has no 64-bit integers and no correctly
//! rounded division, and floats on the device are moved as bits, never computed. Only the counts
//! come back, and only the results go out.

use super::range::{Held, reserve_hits};
use super::{GpuExecutor, GpuInput, GpuRegion, Source, check_region};
use crate::DataType;
use crate::api::dynamic::{RangeResult, range_plan};
use crate::cpu::simd::ratio_row;
use crate::error::{Error, Result};
use crate::op::{Call, OpInfo, Plan};
use crate::ratio::{Terms, Writes, key_result};
use crate::validate::{self, OpTensor, desc::TensorDesc};

/// Bytes of a tile of counts, at most (with the device's binding limit).
const TILE_BYTES: u64 = 64 << 20;

/// One row's results (or knn keys) over one part of `b`, as the host makes them from a tile's
/// counts.
struct Part<'a> {
    /// The row of `a`, and its place in the tile of rows at hand.
    i: usize,
    in_tile: usize,
    /// The part's first row of `b`, and whether it is the row's last part.
    j0: usize,
    last: bool,
    /// [`ratio_row`]'s results for the part's rows of `b`.
    res: &'a [u64],
}

/// Bytes written to a device buffer from the host: a run that follows the one before is joined
/// to it, so that a call of many short rows makes few writes.
struct HostWrites<'a> {
    queue: &'a wgpu::Queue,
    buffer: &'a wgpu::Buffer,
    /// Where the bytes held go.
    at: u64,
    bytes: Vec<u8>,
}

impl<'a> HostWrites<'a> {
    /// Bytes a write holds before it is made.
    const HOLD: usize = 16 << 20;

    fn new(queue: &'a wgpu::Queue, buffer: &'a wgpu::Buffer) -> Self {
        HostWrites {
            queue,
            buffer,
            at: 0,
            bytes: Vec::new(),
        }
    }

    /// Writes `data` at `at` (a multiple of 4, as the size of `data`).
    fn put(&mut self, at: u64, data: &[u8]) {
        if at != self.at + self.bytes.len() as u64 || self.bytes.len() >= Self::HOLD {
            self.flush();
            self.at = at;
        }
        self.bytes.extend_from_slice(data);
    }

    fn flush(&mut self) {
        if !self.bytes.is_empty() {
            self.queue.write_buffer(self.buffer, self.at, &self.bytes);
            self.bytes.clear();
        }
    }
}

/// The error of a ratio call the device cannot take as given.
fn unsupported(what: impl Into<String>) -> Error {
    Error::GpuUnsupported { what: what.into() }
}

/// The rows of a region, from `first`, as a region of `rows` codes of `k` elements, with the
/// region's strides where it has them.
fn rows_of<'a>(r: &GpuRegion<'a>, first: usize, rows: usize, k: usize) -> Result<GpuRegion<'a>> {
    let dt = r.desc.data_type();
    let desc = TensorDesc::new(dt, &[rows, k])?;
    let (desc, row) = match r.desc.strides() {
        Some(s) => (desc.with_strides(s)?, s[0]),
        None => (desc, k),
    };
    Ok(GpuRegion {
        buffer: r.buffer,
        offset: r.offset + (first * row * dt.size()) as u64,
        desc,
    })
}

impl GpuExecutor {
    /// Counts `|a & b|` of every pair of rows of the regions `a` (`[M, K]`) and `b` (`[N, K]`)
    /// into `out`, a `u32` per pair, by the op's pairwise kernels under `call`, as a ratio of
    /// results of `value_type` validates them.
    fn count_pairs(
        &self,
        op: &OpInfo,
        call: &Call,
        [a, b]: [&GpuRegion<'_>; 2],
        value_type: DataType,
        out: &wgpu::Buffer,
    ) -> Result<()> {
        let (rows, cols) = (a.desc.sizes()[0], b.desc.sizes()[0]);
        let desc = TensorDesc::new(value_type, &[rows, cols])?;
        let mut plan = validate::validate(op, call, &[&a.desc, &b.desc], &desc)?;
        if plan.max_count > u64::from(u32::MAX) {
            return Err(unsupported(format!(
                "{}: counts of rows of {} bits pass 2^32, which the GPU counts in",
                op.name(),
                plan.max_count
            )));
        }
        plan.out_dtype = DataType::U32;
        plan.ratio = None;
        let out = GpuRegion {
            buffer: out,
            offset: 0,
            desc: TensorDesc::new(DataType::U32, &[rows, cols])?,
        };
        // Inputs whose padding the call zeroes are copied first.
        let sources = [*a, *b].map(|r| match plan.pad {
            Some(_) => Source::Copy(r),
            None => Source::Bound(r),
        });
        if plan.element_count() == 0 {
            return Ok(());
        }
        self.scoped(None, |enc| self.encode(op, &plan, &sources, &out, enc))
    }

    /// [`count_pairs`](Self::count_pairs) read back: `rows x cols` counts.
    fn counts_of(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: [&GpuRegion<'_>; 2],
        value_type: DataType,
    ) -> Result<Vec<u64>> {
        let n = inputs[0].desc.sizes()[0] * inputs[1].desc.sizes()[0];
        let buffer = self.storage_buffer("tensorbits ratio counts", n * 4, &[])?;
        self.count_pairs(op, call, inputs, value_type, &buffer)?;
        let bytes = self.read_bytes(&buffer, 0, n as u64 * 4)?;
        Ok(bytemuck::pod_collect_to_vec::<u8, u32>(&bytes)
            .into_iter()
            .map(u64::from)
            .collect())
    }

    /// Calls `visit` with `terms`' results of each row of `a` (`[M, K]`) over each part of `b`
    /// (`[N, K]`), from the counts of tiles of at most `row_cap` rows of `a`: each row's parts in
    /// index order, the rows of a tile of `a` one after another for each part of `b`.
    #[allow(
        clippy::too_many_arguments,
        reason = "the call, its inputs and what the host makes of their counts"
    )]
    fn ratio_tiles(
        &self,
        op: &OpInfo,
        call: &Call,
        [a, b]: [&GpuRegion<'_>; 2],
        value_type: DataType,
        terms: &Terms,
        row_cap: usize,
        mut visit: impl FnMut(Part<'_>) -> Result<()>,
    ) -> Result<()> {
        if a.desc.rank() != 2 || b.desc.rank() != 2 {
            return Err(unsupported(format!(
                "{} on the GPU reads [M, K] and [N, K] codes",
                op.name()
            )));
        }
        let (m, n, k) = (a.desc.sizes()[0], b.desc.sizes()[0], a.desc.sizes()[1]);
        if m == 0 || n == 0 {
            return Ok(());
        }
        // Each row's count against a row of ones: the bits it holds, past the call's valid bits
        // zeroed as in every count.
        let dt = a.desc.data_type();
        let ones_bytes = vec![0xFFu8; k * dt.size()];
        let ones_buffer =
            self.storage_buffer("tensorbits ratio ones", ones_bytes.len(), &ones_bytes)?;
        let ones = GpuRegion {
            buffer: &ones_buffer,
            offset: 0,
            desc: TensorDesc::new(dt, &[1, k])?,
        };
        // Tiles of `mt` rows of `a` by `nt` of `b`, near square, within the binding limit.
        let budget = (TILE_BYTES.min(self.limits.max_binding) / 4).max(1);
        let side = budget.isqrt().max(1);
        let mt = (budget / side.min(n as u64)).clamp(1, m.min(row_cap).max(1) as u64) as usize;
        let nt = (budget / mt as u64).clamp(1, n as u64) as usize;
        let mut b_ones = Vec::with_capacity(n);
        for j0 in (0..n).step_by(nt) {
            let cols = nt.min(n - j0);
            b_ones.extend(self.counts_of(
                op,
                call,
                [&rows_of(b, j0, cols, k)?, &ones],
                value_type,
            )?);
        }
        let mut res = Vec::new();
        for i0 in (0..m).step_by(mt) {
            let rows = mt.min(m - i0);
            let a_rows = rows_of(a, i0, rows, k)?;
            let a_ones = self.counts_of(op, call, [&a_rows, &ones], value_type)?;
            for j0 in (0..n).step_by(nt) {
                let cols = nt.min(n - j0);
                let both =
                    self.counts_of(op, call, [&a_rows, &rows_of(b, j0, cols, k)?], value_type)?;
                res.resize(cols, 0);
                for (r, &ones) in a_ones.iter().enumerate() {
                    let both = &both[r * cols..][..cols];
                    ratio_row(terms, ones, &b_ones[j0..j0 + cols], both, &mut res);
                    visit(Part {
                        i: i0 + r,
                        in_tile: r,
                        j0,
                        last: j0 + cols == n,
                        res: &res,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The checks of a ratio call's results written from the host: no encoder to record into (the
    /// host finishes the results after the counts come back), outputs that take buffer writes and
    /// overlap no input.
    fn check_host_outputs(
        op: &OpInfo,
        inputs: [&GpuRegion<'_>; 2],
        outputs: &[(&GpuRegion<'_>, &str)],
        encoder: bool,
    ) -> Result<()> {
        if encoder {
            return Err(unsupported(format!(
                "{} is a ratio op: its results are divided on the host once the device's counts \
                 come back, so it cannot be recorded into a command encoder; call it without one",
                op.name()
            )));
        }
        let spans = [
            check_region(inputs[0], OpTensor(op, 0))?,
            check_region(inputs[1], OpTensor(op, 1))?,
        ];
        for (out, name) in outputs {
            let span = check_region(out, *name)?;
            if !out.buffer.usage().contains(wgpu::BufferUsages::COPY_DST) {
                return Err(Error::GpuBuffer {
                    tensor: (*name).to_owned(),
                    reason: format!(
                        "{}'s results are written from the host, which needs COPY_DST usage",
                        op.name()
                    ),
                });
            }
            if !out.desc.is_packed() {
                return Err(unsupported(format!(
                    "{} on the GPU writes packed outputs only",
                    op.name()
                )));
            }
            for (r, input) in inputs.iter().zip(spans) {
                if r.buffer == out.buffer && input.0 < span.1 && span.0 < input.1 {
                    return Err(Error::GpuBuffer {
                        tensor: (*name).to_owned(),
                        reason: "it overlaps an input".to_owned(),
                    });
                }
            }
        }
        Ok(())
    }

    /// [`execute`](Self::execute) of a ratio op: the `[M, N]` results of `a` against `b`.
    pub(super) fn execute_ratio(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: &[GpuInput<'_>],
        output: &GpuRegion<'_>,
        encoder: bool,
    ) -> Result<()> {
        let [GpuInput::Region(a), GpuInput::Region(b)] = inputs else {
            return Err(unsupported(format!(
                "{} is pairwise: it takes two input regions, not its output",
                op.name()
            )));
        };
        let plan = validate::validate(op, call, &[&a.desc, &b.desc], &output.desc)?;
        Self::check_host_outputs(op, [a, b], &[(output, "out")], encoder)?;
        let rp = plan.ratio.ok_or_else(|| unsupported("not a ratio op"))?;
        let terms = Terms::new(&rp, Writes::Values(plan.out_dtype));
        let (n, es) = (b.desc.sizes()[0], plan.out_dtype.size());
        let mut out = HostWrites::new(&self.queue, output.buffer);
        let mut bytes = Vec::new();
        self.ratio_tiles(op, call, [a, b], plan.out_dtype, &terms, usize::MAX, |p| {
            bytes.clear();
            for v in p.res {
                bytes.extend_from_slice(&v.to_le_bytes()[..es]);
            }
            out.put(output.offset + ((p.i * n + p.j0) * es) as u64, &bytes);
            Ok(())
        })?;
        out.flush();
        self.queue.submit([]);
        self.take_uncaptured()
    }

    /// [`knn`](Self::knn) of a ratio op: each row's `k` best by the exact fractions, ties to the
    /// lower index, as on the CPU.
    pub(super) fn knn_ratio(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: [&GpuRegion<'_>; 2],
        k: usize,
        (distances, indices): (&GpuRegion<'_>, &GpuRegion<'_>),
        encoder: bool,
    ) -> Result<()> {
        let descs = [&inputs[0].desc, &inputs[1].desc];
        let plan = validate::validate_knn(op, call, &descs, k, distances.desc.data_type())?;
        validate::reduce::check_knn_outputs(op, &plan, &distances.desc, &indices.desc)?;
        Self::check_host_outputs(
            op,
            inputs,
            &[(distances, "distances"), (indices, "indices")],
            encoder,
        )?;
        let (dspan, ispan) = (check_region(distances, "")?, check_region(indices, "")?);
        if distances.buffer == indices.buffer && dspan.0 < ispan.1 && ispan.0 < dspan.1 {
            return Err(Error::GpuBuffer {
                tensor: "indices".to_owned(),
                reason: "knn's two outputs overlap".to_owned(),
            });
        }
        let rp = plan.ratio.ok_or_else(|| unsupported("not a ratio op"))?;
        let m = inputs[0].desc.sizes()[0];
        if k == 0 || m == 0 {
            return Ok(());
        }
        let terms = Terms::new(&rp, Writes::Keys);
        let es = plan.out_dtype.size();
        // The best `k` so far of each row of the tile of `a` at hand, by (key, index), and at
        // most as many candidates again; each row written out once its last part of `b` is in.
        let mut best: Vec<Vec<(u64, i64)>> = Vec::new();
        let keep = |list: &mut Vec<(u64, i64)>| {
            if list.len() > k {
                list.select_nth_unstable(k - 1);
                list.truncate(k);
            }
        };
        let mut dist = HostWrites::new(&self.queue, distances.buffer);
        let mut idx = HostWrites::new(&self.queue, indices.buffer);
        let (mut d, mut x) = (Vec::new(), Vec::new());
        // Rows whose candidates (at most 2 * max(k, 64) each, 16 bytes) fit 256 MiB at a time.
        let row_cap = (256 << 20) / (32 * k.max(64));
        self.ratio_tiles(op, call, inputs, plan.out_dtype, &terms, row_cap, |p| {
            if best.len() <= p.in_tile {
                best.resize(p.in_tile + 1, Vec::new());
            }
            let list = &mut best[p.in_tile];
            for (j, &key) in p.res.iter().enumerate() {
                list.push((key, (p.j0 + j) as i64));
                if list.len() >= 2 * k.max(64) {
                    keep(list);
                }
            }
            keep(list);
            if !p.last {
                return Ok(());
            }
            list.sort_unstable();
            d.clear();
            x.clear();
            for &(key, j) in list.iter() {
                let v = key_result(key, rp.largest, plan.out_dtype);
                d.extend_from_slice(&v.to_le_bytes()[..es]);
                x.extend_from_slice(&j.to_le_bytes());
            }
            list.clear();
            dist.put(distances.offset + (p.i * k * es) as u64, &d);
            idx.put(indices.offset + (p.i * k * 8) as u64, &x);
            Ok(())
        })?;
        dist.flush();
        idx.flush();
        self.queue.submit([]);
        self.take_uncaptured()
    }

    /// [`range_search`](Self::range_search) of a ratio op: the pairs whose exact fraction passes
    /// `threshold`, in FAISS's layout, as on the CPU.
    pub(super) fn range_ratio(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: [&GpuRegion<'_>; 2],
        threshold: f64,
        out_dtype: DataType,
    ) -> Result<RangeResult> {
        let descs = [&inputs[0].desc, &inputs[1].desc];
        let plan: Plan = range_plan(op, call, &descs, threshold, out_dtype)?;
        for (k, r) in inputs.iter().enumerate() {
            check_region(r, OpTensor(op, k))?;
        }
        let rp = plan.ratio.ok_or_else(|| unsupported("not a ratio op"))?;
        let limit = crate::cpu::range::key_limit(&plan, threshold, call.largest_first(op));
        let m = inputs[0].desc.sizes()[0];
        let terms = Terms::new(&rp, Writes::Keys);
        let mut result = RangeResult {
            lims: vec![0; m + 1],
            values: Vec::new(),
            value_type: out_dtype,
            indices: Vec::new(),
        };
        if limit == 0 {
            // No key is below it: nothing passes.
            return Ok(result);
        }
        // Each row's hits, which the parts of `b` extend in index order.
        let mut found: Vec<Vec<(i64, u64)>> = vec![Vec::new(); m];
        let mut held = Held::default();
        self.ratio_tiles(op, call, inputs, out_dtype, &terms, usize::MAX, |p| {
            let hits = p.res.iter().enumerate().filter(|(_, key)| **key < limit);
            let list = &mut found[p.i];
            let before = list.capacity();
            list.extend(hits.map(|(j, &key)| ((p.j0 + j) as i64, key)));
            held.take((list.capacity() - before) * size_of::<(i64, u64)>())
        })?;
        let es = out_dtype.size();
        let total: usize = found.iter().map(Vec::len).sum();
        crate::alloc::check_allocation(total.saturating_mul(8 + es), "range_search hits")?;
        // Empty: room for exactly `total`.
        reserve_hits(&mut result, total)?;
        for (i, hits) in found.into_iter().enumerate() {
            for (j, key) in hits {
                result.indices.push(j);
                let v = key_result(key, rp.largest, out_dtype);
                result.values.extend_from_slice(&v.to_le_bytes()[..es]);
            }
            result.lims[i + 1] = result.indices.len() as i64;
        }
        Ok(result)
    }
}
