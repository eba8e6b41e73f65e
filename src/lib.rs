//! Bitwise tensor operators, declared with one attribute instead of written by hand.
//!
//! [`#[bitwise_op(...)]`](bitwise_op) turns an operator spec (inputs, the bitwise expression, a
//! data-type table per feature level, ranks, broadcasting, in-place rules) into a typed API in
//! which an unsupported data type is a compile error naming the op, the type and the level; a CPU
//! kernel and WGSL kernels for any GPU that wgpu drives, lowered from the same expression and
//! identical to the bit; validation for calls whose types are known only at run time; and
//! rustdoc with DirectML's "Tensor support" tables. The spec also declares reductions over axes,
//! all-pairs ops between the rows of two tensors and k-nearest-neighbour and range search over
//! them: the Hamming distances of binary embeddings, the XNOR-popcount products of binary networks
//! and, as exact ratios of counts, the Tanimoto and Dice similarities of fingerprints.
//!
//! The DirectML bitwise family and the reduction and Hamming ops are in [`ops`], declared with the
//! macro itself.
//!
//! ```
//! use tensorbits::Tensor;
//! use tensorbits::ops::{BitXor, HammingCdist};
//!
//! let a = Tensor::from_vec(vec![0b1100u8, 0b1010], &[2])?;
//! let b = Tensor::from_vec(vec![0b0110u8, 0b0011], &[2])?;
//! assert_eq!(BitXor::run(&a, &b)?.data(), &[0b1010, 0b1001]);
//!
//! // Two codes of 16 bits, and the one nearest a query by Hamming distance.
//! let codes = Tensor::from_vec(vec![0u8, 255, 15, 1], &[2, 2])?;
//! let query = Tensor::from_vec(vec![0u8, 254], &[1, 2])?;
//! let (distances, indices) = HammingCdist::knn(&query, &codes, 1)?;
//! assert_eq!((distances.data(), indices.data()), (&[1u32][..], &[0i64][..]));
//! # Ok::<(), tensorbits::Error>(())
//! ```
//!
//! Where to go next:
//!
//! - [`bitwise_op`]: the spec's keys, and what the macro generates for an op.
//! - [`ops`]: the standard ops and lookup by the names frameworks use (DirectML, ONNX, OpenVINO,
//!   numpy).
//! - [`Tensor`] and [`Options`] for typed calls; [`execute`] and [`compile`] for calls whose
//!   types are known only at run time; [`knn`] for nearest neighbours through the dynamic API.
//! - [`range_search`] for every row within a threshold, [`Database`] for codes prepared for many
//!   queries (pruned by their counts), [`merge_topk`] for knn over shards.
//! - [`binarize`] and [`rescore`]: the binary-embedding pipeline (`np.packbits(x > t)`, then
//!   float rescoring of the candidates).
//! - `GpuExecutor` and `Target` (feature `gpu`, on by default) to run on a GPU or on a framework's
//!   wgpu buffers; `NdOp` (feature `ndarray`) for `ndarray` arrays and views.
//! - [`cpu`]: the CPU executor's instruction set and the `TENSORBITS_CPU` cap.
//! - [`Error`]: what a bad call returns; no input makes a call panic.
//!
//! The repository's `README.md` introduces every part with an example (the command-line tool,
//! the Python package, PyTorch operators, burn and ndarray); `docs/reference.md` is the reference
//! for the spec, the semantics and each front end; `BENCHMARKS.md` gives the performance figures
//! with the commands that measure them.

extern crate self as tensorbits;

#[doc(inline)]
pub use tensorbits_macros::bitwise_op;
pub use tensorbits_runtime::*;

pub mod ops;

// The README's code blocks, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The reference's code blocks, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/reference.md")]
struct ReferenceDoctests;
