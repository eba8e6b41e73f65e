//! WGSL for the GPU kernels: the per-class helper functions (where the semantics of shifts, bool and
//! bit counts live on the GPU) and the shader templates per layout. The macro generates only
//! `tb_eval` from an op's lowered `compute` expression and calls [`shader`] or [`reduce_shader`] to
//! wrap it, so every GPU kernel and the CPU kernel come from the same expression.
//!
//! WGSL has no 8-, 16- or 64-bit integers and `bool` cannot live in a storage buffer, so elements of
//! 8 and 16 bits are lanes of `u32` words, 64-bit elements are `vec2<u32>` (low, high), and floats are
//! moved as bits, never through float arithmetic.
//!
//! Work per invocation is bounded: no loop of any kernel runs a number of iterations that grows
//! with the input. Every loop is bounded by a constant of this module or by a chunk length the host
//! chooses under [`MAX_LOOP_ITERATIONS`]; long reductions, long rows and large knn databases are
//! split across workgroups and passes (partial results, then merges).
//!
//! - `class`: element classes and their helpers;
//! - `params`: the uniform block and the walk over dimensions;
//! - `elementwise`: the element-wise layouts, and the read and write helpers;
//! - `reduce`: reductions and the merge of partial results;
//! - `pairwise`: pairwise ops;
//! - `knn`: knn's tiles and the merges of their lists;
//! - `pad`: the zeroing of padding bits under valid bits;
//! - `binarize`: `x > threshold` packed to bits.

mod binarize;
mod class;
mod elementwise;
mod knn;
mod pad;
mod pairwise;
mod params;
mod reduce;

pub use binarize::{BINARIZE_PARAMS_BYTES, binarize_shader};
pub use class::WordClass;
pub use elementwise::{KernelKind, shader};
pub use pad::pad_shader;
pub use params::{
    Epilogue, Header, MODE_FINAL, MODE_PARTIAL, OUTPUT_SLOT, PARAMS_BYTES, SLOTS, WORKGROUP_SIZE,
    params_bytes, params_wgsl, walk_wgsl,
};
pub use reduce::reduce_shader;

use crate::DataType;

/// The kernel layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Contiguous, same shape, 16-byte aligned: one `vec4<u32>` per invocation.
    Words,
    /// Contiguous, same shape: one output word per invocation.
    Contiguous,
    /// Any strides and broadcasting: one element per invocation.
    Strided,
    /// A reduction over axes: one workgroup per output element and chunk of [`REDUCE_CHUNK`]
    /// reduced elements, its invocations sharing the chunk and combining their results in
    /// workgroup memory. For few outputs with long, contiguous reductions: neighbouring
    /// invocations read neighbouring elements.
    Reduce,
    /// A reduction over axes: one invocation per output element and chunk of [`REDUCE_STEPS`]
    /// reduced elements, folded in order. For short reductions, and for many outputs whose reduced
    /// elements are strided (reducing an outer axis): neighbouring invocations then read
    /// neighbouring elements.
    ReduceRows,
    /// The merge of partial results (accumulators) of the chunks of a reduction or pairwise op:
    /// one invocation per output element and chunk of [`REDUCE_STEPS`] partial results.
    ReduceMerge,
    /// A pairwise op: one workgroup per 8 x 8 tile of the output and chunk of [`PAIR_CHUNK`]
    /// elements of the rows, rows of both inputs staged in workgroup memory eight elements at a
    /// time.
    Pairwise,
    /// knn's first pass: with at most [`KNN_LOCAL`] neighbours, one sorted list per invocation over
    /// its rows of `b`; with more, one workgroup per row of `a` and tile of up to [`KNN_TILE`] rows
    /// of `b`, sorted in registers and merged in workgroup memory. The first k of each list are
    /// kept.
    Knn,
    /// A pairwise op over the rows' 32-bit words, for sums of a count that is the same at every
    /// width, when each row is a contiguous run of whole words: one workgroup per
    /// [`PAIR_WORDS_ROWS`] rows of `a`, 64 rows of `b` and chunk of [`PAIR_WORDS_CHUNK`] words, each
    /// invocation one row of `b` against the rows of `a`, with no workgroup memory.
    PairWords,
    /// [`Knn`](Layout::Knn) over the rows' 32-bit words, as [`PairWords`](Layout::PairWords).
    KnnWords,
    /// knn's later passes: pairs of sorted lists merged into one, one invocation per entry, which
    /// finds its place in the other list by a binary search.
    KnnMerge,
}

impl Layout {
    /// The layouts of element-wise ops.
    pub const ALL: [Layout; 3] = [Layout::Words, Layout::Contiguous, Layout::Strided];

    /// Whether a dispatch runs one workgroup per unit of work (output element, tile or row), not
    /// one invocation.
    pub fn per_workgroup(self) -> bool {
        matches!(
            self,
            Layout::Reduce | Layout::Pairwise | Layout::Knn | Layout::PairWords | Layout::KnnWords
        )
    }

    /// The layout of the same work over 32-bit words.
    pub fn words(self) -> Layout {
        match self {
            Layout::Pairwise => Layout::PairWords,
            Layout::Knn => Layout::KnnWords,
            other => other,
        }
    }

    /// Whether the layout reduces: its dispatches name kept dimensions, reduced elements and a
    /// chunk, and write results or partial results.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Layout::Reduce
                | Layout::ReduceRows
                | Layout::ReduceMerge
                | Layout::Pairwise
                | Layout::PairWords
        )
    }
}

/// The most loop iterations, all loops of a kernel together, that any invocation runs.
///
/// Mesa's lavapipe ends an invocation silently after 65,535 loop iterations, and a real GPU's
/// driver may reset a device whose dispatch runs too long. A quarter of lavapipe's limit leaves room
/// for the loops a compiler adds or counts differently (the bound counts every loop of every
/// helper, decoding included), while each invocation still folds hundreds of elements, so that
/// the cost of starting it and of writing partial results stays small. The host's plan chooses
/// chunks under this bound, and its unit tests check every dispatch of shapes up to 2^32 elements
/// against it.
pub const MAX_LOOP_ITERATIONS: u64 = 16_384;

/// Reduced elements each invocation of [`Layout::ReduceRows`] and [`Layout::ReduceMerge`] folds,
/// and each invocation of [`Layout::Reduce`] folds of its workgroup's chunk.
pub const REDUCE_STEPS: u32 = 256;

/// Reduced elements one workgroup of [`Layout::Reduce`] folds.
pub const REDUCE_CHUNK: u32 = REDUCE_STEPS * WORKGROUP_SIZE;

/// Rows of each input in a tile of the pairwise kernel.
pub const PAIR_TILE: u32 = 8;

/// Elements of the rows one tile of [`Layout::Pairwise`] folds.
pub const PAIR_CHUNK: u32 = 1024;

/// Rows of `a` per workgroup of the pairwise kernel over words (each invocation takes one row of
/// `b` against all of them).
pub const PAIR_WORDS_ROWS: u32 = 16;

/// Words of the rows one workgroup of [`Layout::PairWords`] folds.
pub const PAIR_WORDS_CHUNK: u32 = 512;

/// The largest tile of rows of `b` that one knn workgroup sorts: 64 invocations of at most 8 rows
/// (two buffers of its lists fill 8 KiB of workgroup memory).
pub const KNN_TILE: u32 = 512;

/// At most this many neighbours, knn's first pass keeps one sorted list per invocation (of up to
/// [`KNN_LOCAL_ROWS`] rows) instead of sorting tiles in workgroup memory: no barrier, and rows
/// are rejected by one comparison with the list's last entry.
pub const KNN_LOCAL: u32 = 32;

/// The most rows one invocation takes in knn's first pass with [`KNN_LOCAL`] or fewer neighbours.
pub const KNN_LOCAL_ROWS: u32 = 256;

/// Loop iterations each invocation of a knn tile may spend computing its rows' distances: the
/// tile is made smaller for long rows so that rows x (elements + 1) stays under this.
pub const KNN_DISTANCE_STEPS: u64 = 8192;

/// One generated GPU kernel: for inputs of `input`, output of `output`, in `layout`.
#[derive(Clone, Copy, Debug)]
pub struct GpuKernel {
    /// Input data type.
    pub input: DataType,
    /// Output data type.
    pub output: DataType,
    /// Layout.
    pub layout: Layout,
    /// The WGSL source.
    pub source: &'static str,
}
