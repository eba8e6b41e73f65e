//! Range search on the device. Tiles of the op's results are made by its pairwise kernel into a
//! scratch buffer of 32-bit values; a count pass gives each block of [`BLOCK`] results of a row its
//! number of hits, the host turns the counts into offsets, and a fill pass writes every hit at its
//! offset, in index order. Every invocation reads at most [`BLOCK`] results, and only the hits
//! come back to the host. Bit-identical to the CPU: both compare the exact values with the
//! threshold's ceiling.

use super::{GpuExecutor, GpuInput, GpuRegion, split};
use crate::DataType;
use crate::api::dynamic::{RangeResult, range_plan};
use crate::error::{Error, Result};
use crate::op::{Call, GpuKernel, OpInfo};
use crate::validate::desc::TensorDesc;
use tensorbits_core::wgsl::{Layout, WORKGROUP_SIZE};

/// Results of a row that one invocation of either pass reads.
const BLOCK: u32 = 256;

/// Bytes of a tile of results, at most (with the device's binding limit).
const TILE_BYTES: u64 = 64 << 20;

/// What pipelines and labels name the shaders by.
static INFO: OpInfo = OpInfo::named("RANGE_SEARCH");

/// The passes' shared start: the uniform block, the tile, and `tb_hit`.
const COMMON: &str = "\
struct Params { rows: u32, cols: u32, blocks: u32, mode: u32, signed: u32, largest: u32, bound: u32, first: u32, count: u32, base: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> tile: array<u32>;

// Whether a result passes: mode 1 every result; else below the bound, or at least it for an op
// ranked largest first, compared as the results' type (signed or not).
fn tb_hit(v: u32) -> bool {
    if (params.mode == 1u) { return true; }
    var below: bool;
    if (params.signed != 0u) {
        below = bitcast<i32>(v) < bitcast<i32>(params.bound);
    } else {
        below = v < params.bound;
    }
    return below != (params.largest != 0u);
}
";

fn count_shader() -> String {
    format!(
        "// tensorbits: range search, hits per block of a row.\n{COMMON}\
         @group(0) @binding(2) var<storage, read> unused: array<u32>;\n\
         @group(0) @binding(3) var<storage, read_write> counts: array<u32>;\n\
         @compute @workgroup_size({WORKGROUP_SIZE})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let g = gid.x + gid.y * nwg.x * {WORKGROUP_SIZE}u;\n\
         \x20   if (g >= params.count) {{ return; }}\n\
         \x20   let r = g / params.blocks;\n\
         \x20   let j0 = (g % params.blocks) * {BLOCK}u;\n\
         \x20   let j1 = min(j0 + {BLOCK}u, params.cols);\n\
         \x20   var c = 0u;\n\
         \x20   for (var j = j0; j < j1; j = j + 1u) {{\n\
         \x20       if (tb_hit(tile[r * params.cols + j])) {{ c = c + 1u; }}\n\
         \x20   }}\n\
         \x20   counts[g] = c;\n\
         }}\n"
    )
}

fn fill_shader() -> String {
    format!(
        "// tensorbits: range search, each hit written at its offset.\n{COMMON}\
         @group(0) @binding(2) var<storage, read> offsets: array<u32>;\n\
         @group(0) @binding(3) var<storage, read_write> hits: array<u32>;\n\
         @compute @workgroup_size({WORKGROUP_SIZE})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let i = gid.x + gid.y * nwg.x * {WORKGROUP_SIZE}u;\n\
         \x20   if (i >= params.count) {{ return; }}\n\
         \x20   let g = params.first + i;\n\
         \x20   let r = g / params.blocks;\n\
         \x20   let j0 = (g % params.blocks) * {BLOCK}u;\n\
         \x20   let j1 = min(j0 + {BLOCK}u, params.cols);\n\
         \x20   var p = offsets[g] - params.base;\n\
         \x20   for (var j = j0; j < j1; j = j + 1u) {{\n\
         \x20       let v = tile[r * params.cols + j];\n\
         \x20       if (tb_hit(v)) {{\n\
         \x20           hits[2u * p] = j;\n\
         \x20           hits[2u * p + 1u] = v;\n\
         \x20           p = p + 1u;\n\
         \x20       }}\n\
         \x20   }}\n\
         }}\n"
    )
}

/// How the passes compare a tile's 32-bit values (of `tile_type`) with `threshold`: `None` where
/// no result can pass, else `(mode, bound)`.
fn comparison(tile_type: DataType, threshold: f64, largest: bool) -> Option<(u32, u32)> {
    let c = threshold.ceil() as i128;
    let (lo, hi) = match tile_type.is_signed() {
        true => (i128::from(i32::MIN), i128::from(i32::MAX)),
        false => (0, i128::from(u32::MAX)),
    };
    // Every value is at least `c` (largest: all pass; else none), or every one is below it.
    match (c <= lo, c > hi, largest) {
        (true, _, true) | (_, true, false) => Some((1, 0)),
        (true, _, false) | (_, true, true) => None,
        _ => Some((0, c as i64 as u32)),
    }
}

/// A result of the tile's type as an element of `out`: the same value (validation chose `out`
/// for it), in native encoding.
fn convert(v: u32, tile_type: DataType, out: DataType, dst: &mut Vec<u8>) {
    let wide = match tile_type.is_signed() {
        true => i64::from(v as i32) as u64,
        false => u64::from(v),
    };
    dst.extend_from_slice(&wide.to_le_bytes()[..out.size()]);
}

impl GpuExecutor {
    /// [`range_search`](crate::range_search) on regions of the caller's buffers: for each row of
    /// `a` (`inputs[0]`, `[M, K]`), every row of `b` (`inputs[1]`, `[N, K]`) whose result passes
    /// `threshold`, as on the CPU, bit for bit. The hits come back to the host in FAISS's layout.
    /// For a ratio op the device's counts come back, tile by tile, and the host selects the hits.
    pub fn range_search(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: [&GpuRegion<'_>; 2],
        threshold: f64,
        out_dtype: DataType,
    ) -> Result<RangeResult> {
        if op.ratio().is_some() {
            return self.range_ratio(op, call, inputs, threshold, out_dtype);
        }
        let descs = [&inputs[0].desc, &inputs[1].desc];
        range_plan(op, call, &descs, threshold, out_dtype)?;
        let (m, n, k) = (
            inputs[0].desc.sizes()[0],
            inputs[1].desc.sizes()[0],
            inputs[0].desc.sizes()[1],
        );
        let mut result = RangeResult {
            lims: vec![0; m + 1],
            values: Vec::new(),
            value_type: out_dtype,
            indices: Vec::new(),
        };
        if inputs.iter().any(|r| !r.desc.is_packed()) {
            return Err(Error::GpuUnsupported {
                what: "range search on the GPU reads packed [M, K] and [N, K] codes".to_owned(),
            });
        }
        // The tiles hold the op's values in its 32-bit type, of the results' signedness where
        // the op has one.
        let types = op.output_types().unwrap_or(&[]);
        let tile_type = types
            .iter()
            .copied()
            .find(|t| t.size() == 4 && t.is_signed() == out_dtype.is_signed())
            .or_else(|| types.iter().copied().find(|t| t.size() == 4))
            .ok_or_else(|| Error::GpuUnsupported {
                what: format!(
                    "{}: range search on the GPU needs a 32-bit output type of the op",
                    op.name()
                ),
            })?;
        let Some((mode, bound)) = comparison(tile_type, threshold, call.largest_first(op)) else {
            return Ok(result);
        };
        if m == 0 || n == 0 {
            return Ok(result);
        }
        // Tiles of `mt` rows of `a` by `nt` of `b`, near square (each tile costs a few round
        // trips to the host), whole blocks of `b` where there are several.
        let budget = TILE_BYTES.min(self.limits.max_binding) / 4;
        let block = u64::from(BLOCK);
        let side = (budget.isqrt() / block * block).max(block);
        let mt = (budget / side.min(n as u64).max(1)).min(m as u64).max(1) as usize;
        let nt = match (n as u64) <= budget / mt as u64 {
            true => n,
            false => ((budget / mt as u64) / block * block).max(block) as usize,
        };
        let row_bytes = |d: &TensorDesc| d.sizes()[1] as u64 * d.data_type().size() as u64;
        let (ra, rb) = (row_bytes(&inputs[0].desc), row_bytes(&inputs[1].desc));
        static KERNELS: std::sync::OnceLock<[GpuKernel; 2]> = std::sync::OnceLock::new();
        let [count_k, fill_k] = KERNELS.get_or_init(|| {
            [count_shader(), fill_shader()].map(|source| GpuKernel {
                input: DataType::U32,
                output: DataType::U32,
                layout: Layout::Contiguous,
                source: String::leak(source),
            })
        });
        let count_p = self.pipeline(&INFO, count_k, 2)?;
        let fill_p = self.pipeline(&INFO, fill_k, 2)?;
        let tile = self.storage_buffer("tensorbits range tile", mt * nt.min(n) * 4, &[])?;
        let in_type = inputs[0].desc.data_type();
        let es = out_dtype.size();
        let mut held = Held::default();
        for i0 in (0..m).step_by(mt) {
            let rows = mt.min(m - i0);
            // Each row's hits, (indices, values), which the tiles of `b` extend in index order.
            let mut found: Vec<(Vec<i64>, Vec<u32>)> = vec![(Vec::new(), Vec::new()); rows];
            for j0 in (0..n).step_by(nt) {
                let cols = nt.min(n - j0);
                let a = GpuRegion {
                    buffer: inputs[0].buffer,
                    offset: inputs[0].offset + i0 as u64 * ra,
                    desc: TensorDesc::new(in_type, &[rows, k])?,
                };
                let b = GpuRegion {
                    buffer: inputs[1].buffer,
                    offset: inputs[1].offset + j0 as u64 * rb,
                    desc: TensorDesc::new(in_type, &[cols, k])?,
                };
                let out = GpuRegion {
                    buffer: &tile,
                    offset: 0,
                    desc: TensorDesc::new(tile_type, &[rows, cols])?,
                };
                let blocks = cols.div_ceil(BLOCK as usize);
                let slots = rows * blocks;
                let counts = self.storage_buffer("tensorbits range counts", slots * 4, &[])?;
                let params = |first: usize, count: usize, base: u64| -> Vec<u8> {
                    [
                        rows as u64,
                        cols as u64,
                        blocks as u64,
                        u64::from(mode),
                        u64::from(tile_type.is_signed()),
                        u64::from(call.largest_first(op)),
                        u64::from(bound),
                        first as u64,
                        count as u64,
                        base,
                        0,
                        0,
                    ]
                    .iter()
                    .flat_map(|&v| split::word(v).to_le_bytes())
                    .collect()
                };
                let wg = u64::from(WORKGROUP_SIZE);
                self.scoped(None, |enc| {
                    self.execute(
                        op,
                        call,
                        &[GpuInput::Region(a), GpuInput::Region(b)],
                        &out,
                        Some(&mut *enc),
                    )?;
                    self.dispatch(
                        &count_p,
                        &params(0, slots, 0),
                        &[
                            (&tile, Self::whole(&tile)),
                            (&tile, Self::whole(&tile)),
                            (&counts, Self::whole(&counts)),
                        ],
                        split::groups(slots as u64, wg, &self.limits),
                        enc,
                    )
                })?;
                let counts_host = self.read_bytes(&counts, 0, slots as u64 * 4)?;
                let counts_host: Vec<u32> = bytemuck::pod_collect_to_vec(&counts_host);
                // Offsets of each slot's hits, and where each row's begin.
                let mut offsets = Vec::with_capacity(slots + 1);
                let mut total = 0u64;
                for &c in &counts_host {
                    offsets.push(total);
                    total += u64::from(c);
                }
                offsets.push(total);
                if total > 0 {
                    let offs: Vec<u32> = offsets.iter().map(|&o| split::word(o)).collect();
                    if total > u64::from(u32::MAX) {
                        return Err(Error::GpuUnsupported {
                            what: "range search: more than 2^32 hits in one tile".to_owned(),
                        });
                    }
                    // Read back (8 bytes a hit) and kept by row (12 bytes a hit).
                    let hits = total as usize;
                    held.take(hits.saturating_mul(20))?;
                    let offs_buf = self.storage_buffer(
                        "tensorbits range offsets",
                        offs.len() * 4,
                        bytemuck::cast_slice(&offs),
                    )?;
                    // Fill passes over runs of slots whose hits fit one binding.
                    let cap = (self.limits.max_binding.min(TILE_BYTES) / 8).max(block);
                    let mut first = 0usize;
                    let mut hits_host: Vec<u32> = Vec::new();
                    hits_host
                        .try_reserve_exact(hits.saturating_mul(2))
                        .map_err(|_| Error::AllocationFailed {
                            tensor: "range_search hits".to_owned(),
                            bytes: hits.saturating_mul(8),
                        })?;
                    while first < slots {
                        let base = offsets[first];
                        let mut end = first;
                        while end < slots && offsets[end + 1] - base <= cap {
                            end += 1;
                        }
                        let count = (offsets[end] - base) as usize;
                        if count > 0 {
                            let hits =
                                self.storage_buffer("tensorbits range hits", count * 8, &[])?;
                            self.scoped(None, |enc| {
                                self.dispatch(
                                    &fill_p,
                                    &params(first, end - first, base),
                                    &[
                                        (&tile, Self::whole(&tile)),
                                        (&offs_buf, Self::whole(&offs_buf)),
                                        (&hits, Self::whole(&hits)),
                                    ],
                                    split::groups((end - first) as u64, wg, &self.limits),
                                    enc,
                                )
                            })?;
                            let bytes = self.read_bytes(&hits, 0, count as u64 * 8)?;
                            hits_host.extend(bytemuck::pod_collect_to_vec::<u8, u32>(&bytes));
                        }
                        first = end;
                    }
                    for (r, row) in found.iter_mut().enumerate() {
                        let (from, to) = (
                            offsets[r * blocks] as usize,
                            offsets[(r + 1) * blocks] as usize,
                        );
                        for h in hits_host[2 * from..2 * to].chunks_exact(2) {
                            row.0.push((j0 + h[0] as usize) as i64);
                            row.1.push(h[1]);
                        }
                    }
                }
            }
            let kept: usize = found.iter().map(|(idx, _)| idx.len()).sum();
            held.take(kept.saturating_mul(8 + es))?;
            // Amortized: row after row of tiles extends the results.
            reserve_hits(&mut result, kept)?;
            for (r, (idx, vals)) in found.into_iter().enumerate() {
                result.indices.extend_from_slice(&idx);
                for v in vals {
                    convert(v, tile_type, out_dtype, &mut result.values);
                }
                result.lims[i0 + r + 1] = result.indices.len() as i64;
            }
        }
        Ok(result)
    }
}

/// The bytes a range search holds for its hits, checked against the memory the machine can give
/// each time [`CHECK_EVERY`] more have been taken, all of them at once (as the CPU's range search
/// checks its lists): a search with more hits than fit ends in [`Error::AllocationFailed`],
/// never in the out-of-memory killer. The ratio ops' range search takes its hits through it too.
#[derive(Default)]
pub(super) struct Held {
    held: usize,
    checked: usize,
}

/// Bytes of hits taken between two checks of the machine's memory.
const CHECK_EVERY: usize = 64 << 20;

impl Held {
    /// Takes `bytes` more.
    pub(super) fn take(&mut self, bytes: usize) -> Result<()> {
        self.held = self.held.saturating_add(bytes);
        if self.held >= self.checked.saturating_add(CHECK_EVERY) {
            crate::alloc::check_allocation(self.held, "range_search hits")?;
            self.checked = self.held;
        }
        Ok(())
    }
}

/// Room in `result` for `hits` more hits (their indices and values), or the error that says the
/// memory cannot be had.
pub(super) fn reserve_hits(result: &mut RangeResult, hits: usize) -> Result<()> {
    let es = result.value_type.size();
    let refused = |_| Error::AllocationFailed {
        tensor: "range_search hits".to_owned(),
        bytes: hits.saturating_mul(8 + es),
    };
    result.indices.try_reserve(hits).map_err(refused)?;
    result
        .values
        .try_reserve(hits.saturating_mul(es))
        .map_err(refused)
}
