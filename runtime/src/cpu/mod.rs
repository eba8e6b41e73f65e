//! The CPU executor. Three layers, each using only the ones before it: the hot loops over
//! contiguous slices (`kernel.rs`, the leaf), their versions per instruction set chosen at run time
//! (`simd.rs`, the crate's only `unsafe` code), and the walk over any layout (`walk.rs`), which
//! cuts a validated plan into contiguous runs for an op's kernel and spreads large calls over
//! rayon's thread pool.
//!
//! The public items are the executor's tuning constants.

mod kernel;
pub(crate) mod pair;
pub(crate) mod reduce;
pub(crate) mod simd;
pub(crate) mod walk;

use crate::element::Word;
use bytemuck::Pod;

#[doc(hidden)]
pub use pair::pair;

/// Output size from which a call is spread over the thread pool.
pub const PARALLEL_BYTES: usize = 1 << 20;

/// Output size from which contiguous outputs are written with streaming stores: past the caches, a
/// normal store first reads the line it overwrites.
pub const STREAM_BYTES: usize = 8 << 20;

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

/// The kernels a call runs, from an op's tables (dynamic and compiled calls) or from its element
/// function at the call's types (typed calls).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Kernels<'k> {
    /// Element-wise results over contiguous runs (for a reduction, its intermediate results).
    pub map: walk::Kernel<'k>,
    /// For a pairwise op: its tile kernel, and whether it is wide.
    pub pair: Option<pair::PairRef<'k>>,
}

/// Runs a validated plan of any kind: element-wise, reduction or pairwise.
pub(crate) fn execute(
    plan: &crate::Plan,
    inputs: &[crate::InputBuffer<'_>],
    out: &mut [u8],
    k: &Kernels<'_>,
) {
    match (plan.reduce, k.pair) {
        (None, _) => walk::run(plan, inputs, out, k.map),
        (Some(_), Some(p)) if plan.pairwise => pair::run(plan, inputs, out, p),
        (Some(_), _) => reduce::run(plan, inputs, out, k.map),
    }
}
