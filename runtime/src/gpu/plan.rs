//! The plan of a reduction, pairwise op or knn on the GPU: how many passes, dispatches, workgroups
//! and loop iterations a call gets. Pure arithmetic over the shape and the device's limits, so it is
//! tested without a GPU: every dispatch of shapes up to 2^32 elements, and knn's for every k up to
//! N, stays under [`MAX_LOOP_ITERATIONS`] per invocation, binds windows under
//! `max_storage_buffer_binding_size` and launches at most `max_compute_workgroups_per_dimension`
//! workgroups in x and y.
//!
//! A reduction's first pass folds chunks of each output's reduced elements into partial results
//! (accumulators in a scratch buffer, `[chunk][output]`) when there is more than one chunk; merge
//! passes then fold [`REDUCE_STEPS`] partial results at a time until one is left, written to the
//! output. A reduced box too large for one binding is cut into pieces, each with its own chunks.
//! knn sorts tiles of the database per row of `a` and merges pairs of the sorted lists, rows of `a`
//! in batches whose lists fit one binding.

use super::split::{Limits, Window};
use crate::MAX_RANK;
use tensorbits_core::wgsl::{
    Header, KNN_DISTANCE_STEPS, KNN_TILE, Layout, MODE_FINAL, MODE_PARTIAL, OUTPUT_SLOT,
    PAIR_CHUNK, PAIR_TILE, PAIR_WORDS_CHUNK, PAIR_WORDS_ROWS, REDUCE_CHUNK, REDUCE_STEPS, SLOTS,
    WORKGROUP_SIZE, params_bytes,
};

/// Reduced elements of one piece at most, so that a chunk's end never passes 2^32 in the shader.
const MAX_PIECE: u64 = 1 << 31;

/// Why a launch cannot be planned within the device's limits: what needs how many bytes in one
/// binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The tensor slot (or `None` for scratch lists and knn's outputs).
    pub slot: Option<usize>,
    /// What does not fit.
    pub what: String,
    /// Its bytes.
    pub bytes: u64,
}

/// A reducing pass's work before splitting: `dims` are the kept dimensions, then the reduced ones
/// (for the pairwise layouts `[batch..., M, N, K]`, K reduced); strides in elements of `elem` bytes,
/// element 0 at byte `offset` of each slot's buffer.
#[derive(Clone, Debug)]
pub struct Reduction {
    pub layout: Layout,
    pub dims: Vec<u64>,
    pub kept: usize,
    pub strides: [Vec<u64>; SLOTS],
    pub elem: [u64; SLOTS],
    pub offset: [u64; SLOTS],
    /// Inputs (slots `0..arity`).
    pub arity: usize,
    /// Bytes of one accumulator (partial result).
    pub acc_bytes: u64,
}

/// Which buffer a pass reads or writes: the call's own tensors, or scratch buffer 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    Call,
    Scratch(usize),
}

/// One dispatch: its uniform block, the windows it binds, its workgroups, and the loop iterations
/// of each of its invocations.
#[derive(Clone, Debug)]
pub struct Dispatch {
    pub params: Vec<u8>,
    pub windows: [Window; SLOTS],
    pub groups: (u32, u32),
    pub iterations: u64,
}

/// One pass: a kernel layout and its dispatches, where it reads and where it writes.
#[derive(Clone, Debug)]
pub struct Pass {
    pub layout: Layout,
    pub input: Buffer,
    pub output: Buffer,
    pub dispatches: Vec<Dispatch>,
}

/// The passes of a reduction and the bytes of the two scratch buffers they need.
#[derive(Clone, Debug)]
pub struct ReducePlan {
    pub passes: Vec<Pass>,
    pub scratch: [u64; 2],
}

/// Reduced elements (or partial results, or words of K) one unit of `layout` folds.
pub fn chunk_of(layout: Layout) -> u64 {
    u64::from(match layout {
        Layout::Reduce => REDUCE_CHUNK,
        Layout::Pairwise => PAIR_CHUNK,
        Layout::PairWords => PAIR_WORDS_CHUNK,
        _ => REDUCE_STEPS,
    })
}

/// Loop iterations of one invocation of `layout`, every loop counted (decoding included), for a
/// box of `rank` dimensions of which `kept` are kept and a chunk of `chunk`. The model of the
/// kernels in `tensorbits_core::wgsl`.
pub fn loop_iterations(layout: Layout, rank: u64, kept: u64, chunk: u64) -> u64 {
    let reduced = rank - kept;
    // Decoding an element over more than one reduced dimension walks them.
    let per_element = 1 + if reduced > 1 { reduced } else { 0 };
    let wg = u64::from(WORKGROUP_SIZE);
    match layout {
        Layout::Reduce => kept + chunk.div_ceil(wg) * per_element + wg.ilog2() as u64,
        Layout::ReduceRows | Layout::ReduceMerge => kept + chunk * per_element,
        Layout::Pairwise => {
            let tile = u64::from(PAIR_TILE);
            (kept - 2) + chunk.div_ceil(tile) * (1 + tile)
        }
        Layout::PairWords => (kept - 2) + u64::from(PAIR_WORDS_ROWS) * (1 + chunk),
        Layout::Strided => rank,
        Layout::Contiguous => 4,
        _ => 0,
    }
}

/// Plans a reduction: its first pass over the call's tensors (in `r.layout`), then merges.
pub fn plan_reduction(r: &Reduction, lim: &Limits) -> Result<ReducePlan, TooLarge> {
    let outputs: u64 = r.dims[..r.kept].iter().product();
    let mut passes = Vec::new();
    let mut scratch = [0u64; 2];
    if outputs == 0 {
        return Ok(ReducePlan { passes, scratch });
    }
    // Packed strides over the kept dimensions: partial results lie [output][chunk].
    let mut packed = vec![0u64; r.kept];
    let mut s = 1;
    for d in (0..r.kept).rev() {
        packed[d] = s;
        s *= r.dims[d];
    }
    let mut launch = r.clone();
    let mut input = Buffer::Call;
    let mut next = 0usize;
    loop {
        let chunk = chunk_of(launch.layout);
        let pieces = pieces(&launch, lim)?;
        let chunks: u64 = pieces
            .iter()
            .map(|p| p.elements.div_ceil(chunk).max(1))
            .sum();
        let final_pass = chunks == 1;
        let mut l = launch.clone();
        let output = if final_pass {
            Buffer::Call
        } else {
            l.strides[OUTPUT_SLOT] = packed
                .iter()
                .map(|&p| p * chunks)
                .chain(std::iter::repeat(0))
                .take(l.dims.len())
                .collect();
            l.elem[OUTPUT_SLOT] = r.acc_bytes;
            l.offset[OUTPUT_SLOT] = 0;
            let bytes = chunks * outputs * r.acc_bytes;
            scratch[next] = scratch[next].max(bytes);
            Buffer::Scratch(next)
        };
        let mut dispatches = Vec::new();
        let mut slot0 = 0u64;
        for p in &pieces {
            let mode = (!final_pass).then_some(slot0);
            split_kept(
                &l,
                lim,
                0,
                p.dims.clone(),
                p.origin,
                p.elements,
                chunk,
                mode,
                &mut dispatches,
            )?;
            slot0 += p.elements.div_ceil(chunk).max(1);
        }
        passes.push(Pass {
            layout: l.layout,
            input,
            output,
            dispatches,
        });
        if final_pass {
            break;
        }
        // The merge: the partial results as a tensor [kept..., chunks], reduced over the chunks.
        let mut m = r.clone();
        m.layout = Layout::ReduceMerge;
        m.arity = 1;
        m.dims = r.dims[..r.kept].iter().copied().chain([chunks]).collect();
        m.strides = Default::default();
        m.strides[0] = packed.iter().map(|&p| p * chunks).chain([1]).collect();
        m.strides[OUTPUT_SLOT] = r.strides[OUTPUT_SLOT][..r.kept]
            .iter()
            .copied()
            .chain([0])
            .collect();
        m.elem[0] = r.acc_bytes;
        m.offset[0] = 0;
        launch = m;
        input = Buffer::Scratch(next);
        next = 1 - next;
    }
    Ok(ReducePlan { passes, scratch })
}

/// A piece of the reduced box: its sizes (kept dimensions whole, then the piece's), its corner in
/// each slot's elements, and its reduced element count.
struct Piece {
    dims: Vec<u64>,
    origin: [u64; SLOTS],
    elements: u64,
}

/// The slots a launch binds.
fn slots(l: &Reduction) -> impl Iterator<Item = usize> + '_ {
    (0..l.arity).chain(std::iter::once(OUTPUT_SLOT))
}

/// Cuts the reduced box into pieces whose inputs' windows, for one output, fit a binding and whose
/// element counts stay under [`MAX_PIECE`]: halves the outermost reduced dimension longer than 1.
fn pieces(l: &Reduction, lim: &Limits) -> Result<Vec<Piece>, TooLarge> {
    let mut out = Vec::new();
    let mut todo = vec![(l.dims.clone(), [0u64; SLOTS])];
    while let Some((dims, origin)) = todo.pop() {
        let reduced = &dims[l.kept..];
        let elements: u64 = reduced.iter().product();
        let mut worst = None;
        if elements > 0 {
            for t in 0..l.arity {
                let reach: u64 = (l.kept..dims.len())
                    .map(|d| (dims[d] - 1) * l.strides[t][d])
                    .sum();
                // Whichever output's corner it starts at, a window begins at most an alignment
                // before its first byte and ends at most 3 bytes past its last.
                let bytes = (reach + 1) * l.elem[t] + lim.offset_align + 3;
                if bytes > lim.max_binding {
                    worst = Some((t, bytes));
                }
            }
        }
        if worst.is_none() && elements <= MAX_PIECE {
            out.push(Piece {
                dims,
                origin,
                elements,
            });
            continue;
        }
        let Some(at) = (l.kept..dims.len()).find(|&d| dims[d] > 1) else {
            let (t, bytes) = worst.unwrap_or((0, 0));
            return Err(TooLarge {
                slot: Some(t),
                what: "one element of the reduction".to_owned(),
                bytes,
            });
        };
        let half = dims[at] / 2;
        // Pushed in reverse so that pieces come out in order.
        for (start, n) in [(half, dims[at] - half), (0, half)] {
            let mut o = origin;
            for t in slots(l) {
                o[t] += start * l.strides[t][at];
            }
            let mut d = dims.clone();
            d[at] = n;
            todo.push((d, o));
        }
    }
    Ok(out)
}

/// Work units of a box: workgroups or invocations, per chunk.
fn units(l: &Reduction, dims: &[u64], kept: usize) -> u64 {
    match l.layout {
        Layout::Pairwise | Layout::PairWords => {
            let (tm, tn) = if l.layout == Layout::PairWords {
                (u64::from(PAIR_WORDS_ROWS), u64::from(WORKGROUP_SIZE))
            } else {
                (u64::from(PAIR_TILE), u64::from(PAIR_TILE))
            };
            let batch: u64 = dims[..kept - 2].iter().product();
            batch * dims[kept - 2].div_ceil(tm) * dims[kept - 1].div_ceil(tn)
        }
        _ => dims[..kept].iter().product(),
    }
}

/// Splits a piece's kept dimensions until every window fits and the workgroups fit a dispatch. The
/// box is `dims`, the launch's dimensions from `first` on, with its corner at `origin`; `mode` is
/// `Some(first chunk's slot)` when the pass writes partial results (`[output][chunk]`, the output's
/// strides already scaled by the chunks).
#[allow(
    clippy::too_many_arguments,
    reason = "the pieces of one box, computed by the caller"
)]
fn split_kept(
    l: &Reduction,
    lim: &Limits,
    first: usize,
    dims: Vec<u64>,
    origin: [u64; SLOTS],
    elements: u64,
    chunk: u64,
    mode: Option<u64>,
    out: &mut Vec<Dispatch>,
) -> Result<(), TooLarge> {
    let kept = l.kept - first;
    if dims[..kept].contains(&0) {
        return Ok(());
    }
    let chunks = elements.div_ceil(chunk).max(1);
    let nothing_read = elements == 0;
    let mut windows = [Window::default(); SLOTS];
    let mut base = [0u64; SLOTS];
    let mut fits = true;
    for t in slots(l) {
        let mut reach: u64 = dims
            .iter()
            .enumerate()
            .map(|(i, n)| n.saturating_sub(1) * l.strides[t][first + i])
            .sum();
        let mut lo = l.offset[t] + origin[t] * l.elem[t];
        if t == OUTPUT_SLOT
            && let Some(slot0) = mode
        {
            lo += slot0 * l.elem[t];
            reach += chunks - 1;
        }
        let read = !(nothing_read && t != OUTPUT_SLOT);
        if read {
            let start = lo / lim.offset_align * lim.offset_align;
            let end = (lo + (reach + 1) * l.elem[t]).div_ceil(4) * 4;
            windows[t] = Window {
                offset: start,
                size: end - start,
            };
            base[t] = (lo - start) / l.elem[t];
            fits &= end - start <= lim.max_binding;
        } else {
            // Bindings are not empty: the buffer's first word stands in.
            windows[t] = Window { offset: 0, size: 4 };
        }
    }
    let n_units = units(l, &dims, kept) * chunks;
    let per_group = if l.layout.per_workgroup() {
        1
    } else {
        u64::from(WORKGROUP_SIZE)
    };
    let max_units = u64::from(lim.max_groups).pow(2) * per_group;
    if fits && n_units <= max_units && n_units <= u64::from(u32::MAX) {
        let groups = n_units.div_ceil(per_group);
        let gx = groups.min(u64::from(lim.max_groups));
        let gy = groups.div_ceil(gx.max(1));
        let w = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let sizes: Vec<u32> = dims.iter().map(|&v| w(v)).collect();
        let base: [u32; SLOTS] = std::array::from_fn(|t| w(base[t]));
        let strides: [[u32; MAX_RANK]; SLOTS] = std::array::from_fn(|t| {
            std::array::from_fn(|d| {
                if d < dims.len() && !l.strides[t].is_empty() {
                    w(l.strides[t][first + d])
                } else {
                    0
                }
            })
        });
        let header = Header {
            count: w(n_units),
            elements: w(elements),
            kept: kept as u32,
            chunk: w(chunk),
            mode: if mode.is_some() {
                MODE_PARTIAL
            } else {
                MODE_FINAL
            },
            slot_stride: u32::from(mode.is_some()),
            extra: 0,
        };
        out.push(Dispatch {
            params: params_bytes(&header, &sizes, &base, &strides),
            windows,
            groups: (w(gx), w(gy)),
            iterations: loop_iterations(l.layout, dims.len() as u64, kept as u64, chunk),
        });
        return Ok(());
    }
    let pairwise = matches!(l.layout, Layout::Pairwise | Layout::PairWords);
    // A pairwise box keeps its M and N dimensions (its tiles need them) and halves them in place.
    let droppable = if pairwise { kept - 2 } else { kept };
    if droppable > 0 && dims[0] == 1 {
        return split_kept(
            l,
            lim,
            first + 1,
            dims[1..].to_vec(),
            origin,
            elements,
            chunk,
            mode,
            out,
        );
    }
    let Some(at) = (0..kept).find(|&d| dims[d] > 1) else {
        let slot = slots(l)
            .find(|&t| windows[t].size > lim.max_binding)
            .unwrap_or(OUTPUT_SLOT);
        return Err(TooLarge {
            slot: Some(slot),
            what: "one output's window".to_owned(),
            bytes: windows[slot].size,
        });
    };
    let size = dims[at];
    let half = size / 2;
    for (start, n) in [(0, half), (half, size - half)] {
        let mut o = origin;
        for t in slots(l) {
            if !l.strides[t].is_empty() {
                o[t] += start * l.strides[t][first + at];
            }
        }
        let mut d = dims.clone();
        d[at] = n;
        split_kept(l, lim, first, d, o, elements, chunk, mode, out)?;
    }
    Ok(())
}

/// A knn over one batch index: `m` rows of `a` against `n` rows of `b` of `kdim` elements (or
/// words), `k` neighbours. Strides in elements of `elem` bytes; offsets in bytes.
#[derive(Clone, Copy, Debug)]
pub struct KnnShape {
    pub m: u64,
    pub n: u64,
    pub kdim: u64,
    pub k: u64,
    /// Row and element strides of `a` and `b`.
    pub a_strides: (u64, u64),
    pub b_strides: (u64, u64),
    pub elem: u64,
    pub a_offset: u64,
    pub b_offset: u64,
    /// Bytes of a distance; byte offsets of this batch index's first distance and index.
    pub dist_bytes: u64,
    pub dist_offset: u64,
    pub idx_offset: u64,
}

/// The slots of knn's bindings beyond the inputs: the indices, and the scratch lists.
pub const KNN_INDICES: usize = 2;

/// One knn dispatch: its layout, uniform block, windows of `a`, `b`, the distances and the
/// indices (or unused, `None`), which scratch buffer it reads and writes, workgroups and loop
/// iterations per invocation.
#[derive(Clone, Debug)]
pub struct KnnDispatch {
    pub layout: Layout,
    pub params: Vec<u8>,
    pub a: Option<Window>,
    pub b: Option<Window>,
    pub dist: Option<Window>,
    pub idx: Option<Window>,
    pub read: Option<usize>,
    pub write: Option<usize>,
    pub groups: (u32, u32),
    pub iterations: u64,
}

/// The dispatches of a knn and the bytes of its two scratch buffers.
#[derive(Clone, Debug)]
pub struct KnnPlan {
    pub dispatches: Vec<KnnDispatch>,
    pub scratch: u64,
}

/// Bytes of partial lists a batch of rows of `a` may use, per scratch buffer (at most a binding).
const KNN_SCRATCH: u64 = 64 << 20;

fn window(offset: u64, first: u64, reach: u64, es: u64, lim: &Limits) -> (Window, u64) {
    let lo = offset + first * es;
    let start = lo / lim.offset_align * lim.offset_align;
    let end = (lo + (reach + 1) * es).div_ceil(4) * 4;
    (
        Window {
            offset: start,
            size: end - start,
        },
        (lo - start) / es,
    )
}

/// The rows of `b` each knn tile sorts for rows of `kdim` units: a power of two, at most
/// [`KNN_TILE`], whose distances cost each invocation at most [`KNN_DISTANCE_STEPS`] iterations;
/// `None` when even one row per invocation costs more.
pub fn knn_tile(kdim: u64, n: u64) -> Option<u64> {
    let wg = u64::from(WORKGROUP_SIZE);
    let mut rows = u64::from(KNN_TILE) / wg;
    while rows > 1 && rows * (kdim + 1) > KNN_DISTANCE_STEPS {
        rows /= 2;
    }
    if rows * (kdim + 1) > KNN_DISTANCE_STEPS {
        return None;
    }
    Some((rows * wg).min(n.max(1).next_power_of_two()))
}

/// Loop iterations of one invocation of a knn tile of `tile` rows of `kdim` units keeping `keep`.
pub fn knn_tile_iterations(tile: u64, kdim: u64, keep: u64) -> u64 {
    let wg = u64::from(WORKGROUP_SIZE);
    let rows = tile.div_ceil(wg);
    let lg = tile.max(1).ilog2() as u64;
    // Distances; the sort's stages (each a loop over its compare-exchanges); the writes.
    rows * (kdim + 1) + lg + lg * (lg + 1) / 2 * (1 + (tile / 2).div_ceil(wg)) + keep.div_ceil(wg)
}

/// Loop iterations of one invocation of a knn merge: a binary search over at most 2^32 entries.
pub const KNN_MERGE_ITERATIONS: u64 = 34;

/// Plans a knn over one batch index.
pub fn plan_knn(s: &KnnShape, lim: &Limits) -> Result<KnnPlan, TooLarge> {
    let w = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let too_large = |what: String, bytes: u64| TooLarge {
        slot: None,
        what,
        bytes,
    };
    let tile = knn_tile(s.kdim, s.n).ok_or_else(|| {
        too_large(
            format!(
                "rows of {} elements (knn on the GPU compares rows of at most {})",
                s.kdim,
                KNN_DISTANCE_STEPS - 1
            ),
            s.kdim * s.elem,
        )
    })?;
    let mut dispatches = Vec::new();
    if s.m == 0 || s.k == 0 {
        return Ok(KnnPlan {
            dispatches,
            scratch: 0,
        });
    }
    let keep = s.k.min(tile);
    let tiles = s.n.div_ceil(tile);
    // Bytes of one row's lists at the largest level: lists x entries (rounding up the lists can
    // make a later level larger than the first).
    let mut per_row = 0;
    let (mut lists, mut rows) = (tiles, tile);
    loop {
        per_row = per_row.max(lists * s.k.min(rows) * 8);
        if lists == 1 {
            break;
        }
        lists = lists.div_ceil(2);
        rows *= 2;
    }
    // Windows start up to an alignment before their first byte.
    let room = lim.max_binding.saturating_sub(lim.offset_align);
    let budget = KNN_SCRATCH.min(room);
    let merged = tiles > 1;
    if merged && per_row > room {
        return Err(too_large(
            format!(
                "the partial lists of one row of ATensor ({tiles} tiles of {keep} entries; k = {})",
                s.k
            ),
            per_row,
        ));
    }
    // Rows of a per batch: their lists, their outputs and their rows of a fit a binding.
    let out_row = s.k * 8;
    if out_row > room {
        return Err(too_large(
            format!("one row of the indices (k = {})", s.k),
            out_row,
        ));
    }
    let a_row = |rows: u64| {
        window(
            s.a_offset,
            0,
            (rows - 1) * s.a_strides.0 + s.kdim.saturating_sub(1) * s.a_strides.1,
            s.elem,
            lim,
        )
        .0
        .size
    };
    let mut batch = s.m.min(if merged { budget / per_row } else { s.m }).max(1);
    batch = batch.min((room / out_row).max(1));
    // Each tile dispatch runs a workgroup per row of a at least.
    batch = batch.min(u64::from(lim.max_groups).pow(2));
    while batch > 1 && a_row(batch) > room {
        batch = batch.div_ceil(2);
    }
    if a_row(1) > room {
        return Err(too_large("one row of ATensor".to_owned(), a_row(1)));
    }
    let max_units = u64::from(lim.max_groups).pow(2);
    let groups = |units: u64, per: u64| {
        let g = units.div_ceil(per);
        let gx = g.min(u64::from(lim.max_groups));
        (w(gx), w(g.div_ceil(gx.max(1))))
    };
    let mut q0 = 0;
    while q0 < s.m {
        let qn = batch.min(s.m - q0);
        let (wa, ba) = window(
            s.a_offset,
            q0 * s.a_strides.0,
            (qn - 1) * s.a_strides.0 + s.kdim.saturating_sub(1) * s.a_strides.1,
            s.elem,
            lim,
        );
        // Rows of no element read nothing: the buffer's first word stands in.
        let (wa, ba) = if s.kdim == 0 {
            (Window { offset: 0, size: 4 }, 0)
        } else {
            (wa, ba)
        };
        let (wd, bd) = window(s.dist_offset, q0 * s.k, qn * s.k - 1, s.dist_bytes, lim);
        let (wi, bi) = window(s.idx_offset, q0 * s.k, qn * s.k - 1, 8, lim);
        // Tile dispatches: ranges of tiles whose rows of b fit a binding.
        let mut t0 = 0;
        while t0 < tiles {
            let mut tn = tiles - t0;
            let b_window = |tn: u64| {
                let rows = (tn * tile).min(s.n - t0 * tile);
                window(
                    s.b_offset,
                    t0 * tile * s.b_strides.0,
                    (rows - 1) * s.b_strides.0 + s.kdim.saturating_sub(1) * s.b_strides.1,
                    s.elem,
                    lim,
                )
            };
            while tn > 1 && (b_window(tn).0.size > room || qn * tn > max_units) {
                tn = tn.div_ceil(2);
            }
            let (wb, bb) = b_window(tn);
            if wb.size > lim.max_binding {
                return Err(too_large(
                    format!("a tile of {tile} rows of BTensor"),
                    wb.size,
                ));
            }
            let (wb, bb) = if s.kdim == 0 {
                (Window { offset: 0, size: 4 }, 0)
            } else {
                (wb, bb)
            };
            let rows = (tn * tile).min(s.n - t0 * tile);
            let mut base = [0u32; SLOTS];
            let mut strides = [[0u32; MAX_RANK]; SLOTS];
            base[0] = w(ba);
            base[1] = w(bb);
            base[KNN_INDICES] = w(bi);
            base[OUTPUT_SLOT] = w(bd);
            strides[0][..3].copy_from_slice(&[w(s.a_strides.0), 0, w(s.a_strides.1)]);
            strides[1][..3].copy_from_slice(&[0, w(s.b_strides.0), w(s.b_strides.1)]);
            strides[KNN_INDICES][0] = w(s.k);
            strides[OUTPUT_SLOT][0] = w(s.k);
            let header = Header {
                count: w(qn * tn),
                elements: w(s.k),
                kept: 0,
                chunk: w(tile),
                mode: if merged { MODE_PARTIAL } else { MODE_FINAL },
                slot_stride: w(keep),
                extra: w(t0),
            };
            let sizes = [w(qn), w(rows), w(s.kdim), w(tiles), 0, w(t0 * tile)];
            dispatches.push(KnnDispatch {
                layout: Layout::Knn,
                params: params_bytes(&header, &sizes, &base, &strides),
                a: Some(wa),
                b: Some(wb),
                dist: (!merged).then_some(wd),
                idx: (!merged).then_some(wi),
                read: None,
                write: merged.then_some(0),
                groups: groups(qn * tn, 1),
                iterations: knn_tile_iterations(tile, s.kdim, keep),
            });
            t0 += tn;
        }
        // Merges: pairs of lists, until one is left.
        let mut rows_per = tile;
        let mut lists = tiles;
        let mut from = 0;
        while lists > 1 {
            let cap_in = s.k.min(rows_per);
            let out_lists = lists.div_ceil(2);
            let cap_out = s.k.min(rows_per * 2);
            let last = out_lists == 1;
            let units = qn * out_lists * 2 * cap_in;
            let mut base = [0u32; SLOTS];
            let mut strides = [[0u32; MAX_RANK]; SLOTS];
            base[KNN_INDICES] = w(bi);
            base[OUTPUT_SLOT] = w(bd);
            strides[KNN_INDICES][0] = w(s.k);
            strides[OUTPUT_SLOT][0] = w(s.k);
            let sizes = [
                w(s.n),
                w(rows_per.min(s.n)),
                w(cap_in),
                w(cap_out),
                w(lists),
                w(out_lists),
            ];
            // Dispatches of at most the device's workgroups, each starting at invocation `extra`.
            let per = max_units * u64::from(WORKGROUP_SIZE);
            let mut u0 = 0;
            while u0 < units {
                let un = per.min(units - u0);
                let header = Header {
                    count: w(units),
                    elements: w(s.k),
                    kept: 0,
                    chunk: 0,
                    mode: if last { MODE_FINAL } else { MODE_PARTIAL },
                    slot_stride: 0,
                    extra: w(u0),
                };
                dispatches.push(KnnDispatch {
                    layout: Layout::KnnMerge,
                    params: params_bytes(&header, &sizes, &base, &strides),
                    a: None,
                    b: None,
                    dist: last.then_some(wd),
                    idx: last.then_some(wi),
                    read: Some(from),
                    write: (!last).then_some(1 - from),
                    groups: groups(un, u64::from(WORKGROUP_SIZE)),
                    iterations: KNN_MERGE_ITERATIONS,
                });
                u0 += un;
            }
            from = 1 - from;
            lists = out_lists;
            rows_per *= 2;
        }
        q0 += qn;
    }
    Ok(KnnPlan {
        dispatches,
        scratch: if merged { batch * per_row } else { 0 },
    })
}

#[cfg(test)]
mod tests;
