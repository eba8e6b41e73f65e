//! The CPU executor. Layers, each using only the ones before it (`tests/layers.rs` holds the
//! order): the hot loops over contiguous slices (`kernel.rs`, the leaf) and the pair tiles
//! (`tiles.rs`); their versions per instruction set, chosen at run time (`isa.rs` detects the
//! features and writes the versions, `simd.rs` declares them). The streams are written once over a
//! vector trait (`vector.rs`, with `emit`, their way to the output; `streams.rs`, the shapes of
//! whole words and whole registers), with one impl per instruction set: `portable.rs` for any
//! CPU, and in `x86.rs` AVX2 and AVX-512 with the tokens that prove the features; what only one
//! x86_64 instruction set's instructions make is
//! in `avx512_groups.rs`, `avx512_stream.rs` and `avx2_stream.rs`, the wide tile's blocks in
//! `x86_blocks.rs` and knn's scan in `x86_scan.rs`. Then streaming stores (`stream.rs`); and the
//! walk over any layout (`walk.rs`), which cuts a validated plan into contiguous runs for an op's
//! kernel and spreads large calls over the crate's thread pool (`pool.rs`). Every tuned size and
//! threshold is in `tuning.rs`, with the benchmark that measures it; `strategy.rs` chooses from
//! them. The `unsafe` code lives in `simd.rs`, `stream.rs` and the x86_64 files.
//!
//! The public items are the executor's tuning constants, the instruction set its kernels run at
//! ([`instruction_set`]) and the variable that caps it ([`CPU_ENV`]).

pub(crate) mod accum;
#[cfg(target_arch = "x86_64")]
mod avx2_stream;
#[cfg(target_arch = "x86_64")]
mod avx512_groups;
#[cfg(target_arch = "x86_64")]
mod avx512_stream;
pub(crate) mod binarize;
mod isa;
mod kernel;
pub(crate) mod knn;
pub(crate) mod pair;
mod portable;
pub(crate) mod range;
pub(crate) mod ratio;
pub(crate) mod reduce;
mod select;
pub(crate) mod simd;
mod strategy;
pub(crate) mod stream;
mod streams;
mod tiles;
pub(crate) mod tuning;
mod vector;
pub(crate) mod walk;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_blocks;
#[cfg(target_arch = "x86_64")]
mod x86_scan;
#[cfg(all(test, target_arch = "x86_64"))]
mod x86_tests;

use crate::element::Word;
use bytemuck::Pod;

pub use accum::fold_code;
pub use isa::{CPU_ENV, instruction_set};
#[doc(hidden)]
pub use pair::{PairRef, pair, pair_and, pair_table, pair_xor};
use tuning::FOLD_ROWS;
pub use tuning::{PARALLEL_BYTES, STREAM_BYTES};
pub(crate) use walk::each_offset;

/// An op's kernel over contiguous runs, for words `W` in and `O` out: what every generated
/// [`MapKernel`](crate::op::MapKernel) calls with the op's element function. Inputs of exactly the
/// output's element count, aligned for `W` (the walk guarantees both; a misaligned buffer from
/// elsewhere is copied first rather than refused).
#[doc(hidden)]
#[inline(always)]
pub fn map<W: Word, O: Pod, const N: usize>(
    inputs: &[&[u8]],
    out: &mut [u8],
    f: impl Fn([W; N]) -> O,
) {
    let n = out.len() / size_of::<O>();
    let mut lanes: [&[W]; N] = [&[]; N];
    let mut aligned = inputs.len() == N;
    for (lane, b) in lanes.iter_mut().zip(inputs) {
        match b
            .get(..n * size_of::<W>())
            .map(bytemuck::try_cast_slice::<u8, W>)
        {
            Some(Ok(w)) => *lane = w,
            _ => aligned = false,
        }
    }
    match bytemuck::try_cast_slice_mut::<u8, O>(&mut out[..n * size_of::<O>()]) {
        Ok(o) if aligned => simd::compute(&lanes, o, &f),
        _ => map_copied(inputs, out, f),
    }
}

/// [`map`] for buffers that are short or misaligned: a caller bug, which leaves `out` untouched, or
/// misaligned ones, copied to aligned memory first.
#[cold]
fn map_copied<W: Word, O: Pod, const N: usize>(
    inputs: &[&[u8]],
    out: &mut [u8],
    f: impl Fn([W; N]) -> O,
) {
    let n = out.len() / size_of::<O>();
    if inputs.len() != N || inputs.iter().any(|b| b.len() < n * size_of::<W>()) {
        debug_assert!(
            false,
            "map: {} inputs for {N}, or one too short",
            inputs.len()
        );
        return;
    }
    let ins: [Vec<W>; N] =
        std::array::from_fn(|k| bytemuck::pod_collect_to_vec(&inputs[k][..n * size_of::<W>()]));
    let lanes: [&[W]; N] = std::array::from_fn(|k| &ins[k][..]);
    let mut o: Vec<O> = bytemuck::pod_collect_to_vec(&out[..n * size_of::<O>()]);
    simd::compute(&lanes, &mut o, &f);
    out[..n * size_of::<O>()].copy_from_slice(bytemuck::cast_slice(&o));
}

/// An op's fused kernel for a sum of counts, over words `W`: what every generated
/// [`FoldKernel`](crate::op::FoldKernel) of a `reduce = sum` op calls with its element function `f`.
///
/// With `row > 0`, `inputs` holds the op's `N` inputs, each of `acc.len() * row` elements, and
/// `acc[r]` takes in the row of elements `r * row .. (r + 1) * row`. With `row == 0`, `inputs`
/// holds 1 to [`FOLD_ROWS`] rows of `N` inputs each (the first row's inputs, then the second's),
/// each of `acc.len()` elements, and `acc[j]` takes in element `j` of every row.
///
/// Inputs must be aligned for `W` (the reduction's executor gathers any that are not); inputs
/// that are short or misaligned, a caller bug, leave `acc` untouched.
#[doc(hidden)]
#[inline(always)]
pub fn fold_count<W: Word, const N: usize>(
    inputs: &[&[u8]],
    acc: &mut [u64],
    row: usize,
    f: impl Fn([W; N]) -> u32,
) {
    let Some((groups, g)) = fold_lanes::<W, N>(inputs, acc.len(), row) else {
        return;
    };
    // Rows of a sum are summed at 32 bits: split any long enough to overflow that.
    const MAX_ROW: usize = 1 << 24;
    if row > MAX_ROW {
        let lanes = groups[0];
        for (r, a) in acc.iter_mut().enumerate() {
            for s in (0..row).step_by(MAX_ROW) {
                let e = (s + MAX_ROW).min(row);
                let part: [&[W]; N] = std::array::from_fn(|k| &lanes[k][r * row + s..r * row + e]);
                simd::fold_count(&[part], std::slice::from_mut(a), e - s, &f);
            }
        }
    } else {
        simd::fold_count(&groups[..g], acc, row, &f);
    }
}

/// An op's fused kernel for a bitwise reduction `OP` ([`fold_code`]), over words `W`: as
/// [`fold_count`], with `f` giving elements combined by `OP` and zero-extended into `acc`.
#[doc(hidden)]
#[inline(always)]
pub fn fold_bits<W: Word, const N: usize, const OP: u8>(
    inputs: &[&[u8]],
    acc: &mut [u64],
    row: usize,
    f: impl Fn([W; N]) -> W,
) {
    if let Some((groups, g)) = fold_lanes::<W, N>(inputs, acc.len(), row) {
        simd::fold_bits::<W, N, OP>(&groups[..g], acc, row, &f);
    }
}

/// The lanes of a fused kernel's inputs, as groups of `N` (one group, or up to [`FOLD_ROWS`] of
/// them column by column), each the elements the call reads, if all are aligned and long enough.
#[inline(always)]
#[allow(clippy::type_complexity, reason = "the groups and their count")]
fn fold_lanes<'i, W: Word, const N: usize>(
    inputs: &[&'i [u8]],
    outputs: usize,
    row: usize,
) -> Option<([[&'i [W]; N]; FOLD_ROWS], usize)> {
    let (groups, n) = match row {
        0 => (inputs.len() / N.max(1), outputs),
        _ => (1, outputs * row),
    };
    let mut lanes: [[&[W]; N]; FOLD_ROWS] = [[&[]; N]; FOLD_ROWS];
    let mut ok = N > 0 && (1..=FOLD_ROWS).contains(&groups) && inputs.len() == groups * N;
    for (i, b) in inputs.iter().enumerate().take(FOLD_ROWS * N) {
        match b
            .get(..n * size_of::<W>())
            .map(bytemuck::try_cast_slice::<u8, W>)
        {
            Some(Ok(w)) => lanes[i / N.max(1)][i % N.max(1)] = w,
            _ => ok = false,
        }
    }
    debug_assert!(
        ok,
        "fold: inputs misaligned, too short, or not a multiple of {N}"
    );
    ok.then_some((lanes, groups))
}

/// The kernels a call runs, from an op's tables (dynamic and compiled calls) or from its element
/// function at the call's types (typed calls).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Kernels<'k> {
    /// Element-wise results over contiguous runs (for a reduction, its intermediate results).
    pub map: walk::Kernel<'k>,
    /// For a pairwise op: its tile kernel, and whether it is wide.
    pub pair: Option<pair::PairRef<'k>>,
    /// For a reduction: its fused kernel ([`reduce::Fold`]), which `map` and a fold replace where
    /// it is missing.
    pub fold: Option<reduce::Fold<'k>>,
}

/// Runs a validated plan of any kind: element-wise, reduction or pairwise. The only error is memory
/// a pairwise op's packed copy of a strided input cannot have, found before anything is written.
pub(crate) fn execute(
    plan: &crate::Plan,
    inputs: &[crate::InputBuffer<'_>],
    out: &mut [u8],
    k: &Kernels<'_>,
) -> crate::Result<()> {
    walk::with_zeroed_padding(plan, inputs, |inputs| {
        match (plan.reduce, k.pair) {
            (None, _) => walk::run(plan, inputs, out, k.map),
            (Some(_), Some(p)) if plan.pairwise => {
                let writes = crate::ratio::Writes::Values(plan.out_dtype);
                ratio::with_ratio(plan, p, writes, |p| pair::run(plan, inputs, out, p))?
            }
            (Some(_), _) => reduce::run(plan, inputs, out, k.map, k.fold),
        }
        crate::Result::Ok(())
    })?;
    if let Some(e) = plan.epilogue {
        epilogue(plan, out, e);
    }
    Ok(())
}

/// Maps every result of a sum, written as a count, through an affine `compute`'s epilogue, in
/// place: the output's kept dimensions walked with their strides.
fn epilogue(plan: &crate::Plan, out: &mut [u8], e: crate::op::Epilogue) {
    let es = plan.out_dtype.size();
    if plan.count == 0 {
        return;
    }
    let dims = &plan.iter[..plan.kept];
    let strides = &plan.out_strides[..plan.kept];
    let map = |b: &mut [u8]| {
        let mut w = [0u8; 8];
        w[..es].copy_from_slice(b);
        b.copy_from_slice(&e.apply(u64::from_le_bytes(w)).to_le_bytes()[..es]);
    };
    // Packed results: one run.
    let packed = (0..dims.len()).all(|d| strides[d] == dims[d + 1..].iter().product::<usize>());
    if packed {
        out[..plan.count * es].chunks_exact_mut(es).for_each(map);
        return;
    }
    let dims: Vec<(usize, usize)> = dims.iter().copied().zip(strides.iter().copied()).collect();
    each_offset(&dims, 0, |at| map(&mut out[at * es..at * es + es]));
}
