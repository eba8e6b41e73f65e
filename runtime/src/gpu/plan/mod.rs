//! The plan of a reduction, pairwise op or knn on the GPU: how many passes, dispatches, workgroups
//! and loop iterations a call gets. Pure arithmetic over the shape and the device's limits, so it is
//! tested without a GPU: every dispatch of shapes up to 2^32 elements, and knn's for every k up to
//! N, stays under [`MAX_LOOP_ITERATIONS`](tensorbits_core::wgsl::MAX_LOOP_ITERATIONS) per
//! invocation, binds windows under `max_storage_buffer_binding_size` and launches at most
//! `max_compute_workgroups_per_dimension` workgroups in x and y.
//!
//! A reduction's first pass folds chunks of each output's reduced elements into partial results
//! (accumulators in a scratch buffer, `[chunk][output]`) when there is more than one chunk; merge
//! passes then fold [`REDUCE_STEPS`] partial results at a time until one is left, written to the
//! output. A reduced box too large for one binding is cut into pieces, each with its own chunks.
//! knn sorts tiles of the database per row of `a` and merges pairs of the sorted lists, rows of `a`
//! in batches whose lists fit one binding.

use super::split::{Limits, Window, groups, window, word};
use crate::MAX_RANK;
use tensorbits_core::wgsl::{
    Epilogue, Header, Layout, MODE_FINAL, MODE_PARTIAL, OUTPUT_SLOT, PAIR_CHUNK, PAIR_TILE,
    PAIR_WORDS_CHUNK, PAIR_WORDS_ROWS, REDUCE_CHUNK, REDUCE_STEPS, SLOTS, WORKGROUP_SIZE,
    params_bytes,
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
    /// Its bytes in one binding; `None` where the limit is not a binding's (`what` says it).
    pub bytes: Option<u64>,
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
    /// What the last pass writes for a count.
    pub epilogue: Epilogue,
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
                bytes: Some(bytes),
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
            (windows[t], base[t]) = window(lo, reach + 1, l.elem[t], 4, lim);
            fits &= windows[t].size <= lim.max_binding;
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
        let groups = groups(n_units, per_group, lim);
        let w = word;
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
            epilogue: l.epilogue,
        };
        out.push(Dispatch {
            params: params_bytes(&header, &sizes, &base, &strides),
            windows,
            groups,
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
            bytes: Some(windows[slot].size),
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

mod knn;
pub use knn::*;

#[cfg(test)]
mod tests;
