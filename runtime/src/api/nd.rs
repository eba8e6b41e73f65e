//! `ndarray` arrays and views as the inputs and outputs of any op (the `ndarray` feature).
//!
//! Views of any strides are read where they lie, negative strides included: a reversed axis is
//! reversed in every tensor of the call at once ([`orient`](crate::orient)), which changes no
//! result, and a new result is handed back reversed along the same axes, all without copying. Only
//! an input whose direction along an axis disagrees with the others' is copied first (and an
//! output that disagrees is written through a packed buffer). Every call goes through the one
//! validator, so a data type the op does not support is the same typed error as elsewhere.
#![allow(unsafe_code)]

use ndarray::{ArrayD, ArrayView, ArrayViewD, ArrayViewMut, Axis, Dimension, IxDyn};

use crate::api::dynamic::{Input, execute, knn};
use crate::api::orient::{SignedLayout, orient};
use crate::api::typed::Options;
use crate::error::{Error, Result};
use crate::level::Level;
use crate::op::{Call, Op, OpInfo, OutputType, SupportsType};
use crate::validate::{desc::TensorDesc, validate_knn, validate_new_output};
use crate::{DataType, Dims, Element};

/// An input as the call reads it: the caller's view with axes reversed, or a packed copy.
enum Src<'a, T> {
    View(ArrayViewD<'a, T>),
    Owned(ArrayD<T>),
}

impl<T> Src<'_, T> {
    fn view(&self) -> ArrayViewD<'_, T> {
        match self {
            Src::View(v) => v.view(),
            Src::Owned(a) => a.view(),
        }
    }
}

/// Element strides for a description, or `None` while one is negative. Size-0 and size-1 axes take
/// `unit` (their stride never matters; outputs may not have 0).
fn strides_of(shape: &[usize], strides: &[isize], unit: usize) -> Option<Vec<usize>> {
    if shape.contains(&0) {
        // No elements: any strides describe them, packed ones validly (a rank past eight is
        // refused by the description).
        return Some(Dims::new(shape).map_or_else(
            || vec![1; shape.len()],
            |d| d.packed_strides_saturating().to_vec(),
        ));
    }
    shape
        .iter()
        .zip(strides)
        .map(|(&n, &s)| match n {
            0 | 1 => Some(unit),
            _ => usize::try_from(s).ok(),
        })
        .collect()
}

/// The view's description and the bytes from its element 0 over every element; strides must be
/// non-negative (`strides_of` gave `Some`).
fn described<'a, T: Element>(
    v: &ArrayViewD<'a, T>,
    strides: &[usize],
) -> Result<(TensorDesc, &'a [u8])> {
    let desc = TensorDesc::new(T::DATA_TYPE, v.shape())?.with_strides(strides)?;
    let len = desc.extent_bytes("tensor")?;
    // SAFETY: with non-negative strides, element 0 is the lowest address of the view and its last
    // element ends `len` bytes later; ndarray views lie inside one live, initialized allocation
    // borrowed for `'a`, so the range is readable for `'a`. Only the elements are read.
    let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), len) };
    Ok((desc, bytes))
}

/// Each prepared input's description and bytes.
fn described_all<'a, T: Element>(srcs: &'a [Src<'_, T>]) -> Result<Vec<(TensorDesc, &'a [u8])>> {
    srcs.iter()
        .map(|src| {
            let v = src.view();
            // `prepare` left no negative stride.
            let s = strides_of(v.shape(), v.strides(), 0).unwrap_or_default();
            described(&v, &s)
        })
        .collect()
}

/// Reverses the flagged axes of each input, and copies those left with a negative stride.
fn prepare<'a, T: Element>(inputs: &[ArrayViewD<'a, T>], flips: &[Vec<bool>]) -> Vec<Src<'a, T>> {
    inputs
        .iter()
        .zip(flips)
        .map(|(v, f)| {
            let mut v = v.clone();
            for (j, &flip) in f.iter().enumerate() {
                if flip {
                    v.invert_axis(Axis(j));
                }
            }
            match strides_of(v.shape(), v.strides(), 0) {
                Some(_) => Src::View(v),
                None => Src::Owned(v.as_standard_layout().into_owned()),
            }
        })
        .collect()
}

fn layouts<'b, T>(inputs: &'b [ArrayViewD<'_, T>]) -> Vec<SignedLayout<'b>> {
    inputs
        .iter()
        .map(|v| SignedLayout {
            sizes: v.shape(),
            strides: v.strides(),
        })
        .collect()
}

fn packed_descs<T: Element>(inputs: &[ArrayViewD<'_, T>]) -> Result<Vec<TensorDesc>> {
    inputs
        .iter()
        .map(|v| TensorDesc::new(T::DATA_TYPE, v.shape()))
        .collect()
}

/// ndarray's refusal of a shape the validator accepted (its element count fits `isize`).
fn shape_error(shape: &[usize]) -> Error {
    Error::SizeOverflow {
        tensor: "OutputTensor".to_owned(),
        sizes: crate::ShapeText(shape.to_vec()),
    }
}

/// Runs `op` on views into a new array of `O`, reversed along the call's reversed axes.
fn run_new<T: Element, O: Element>(
    op: &'static OpInfo,
    call: &Call,
    inputs: &[ArrayViewD<'_, T>],
) -> Result<ArrayD<O>> {
    let probe = packed_descs(inputs)?;
    let refs: Vec<&TensorDesc> = probe.iter().collect();
    let plan = validate_new_output(op, call, &refs, O::DATA_TYPE)?;
    let shape = plan.output_shape().to_vec();
    let o = orient(op, call, &layouts(inputs), None, shape.len(), false);
    let srcs = prepare(inputs, &o.inputs);
    let parts = described_all(&srcs)?;
    let ins: Vec<Input<'_>> = parts.iter().map(|(d, b)| Input::Bytes(d, b)).collect();
    let out_desc = TensorDesc::new(O::DATA_TYPE, &shape)?;
    let mut data: Vec<O> = crate::alloc::zeroed_vec(plan.element_count(), "OutputTensor")?;
    O::with_bytes_mut(&mut data, |b| execute(op, call, &ins, &out_desc, b))?;
    let mut out = ArrayD::from_shape_vec(IxDyn(&shape), data).map_err(|_| shape_error(&shape))?;
    for (j, &flip) in o.output.iter().enumerate() {
        if flip {
            out.invert_axis(Axis(j));
        }
    }
    Ok(out)
}

/// Runs `op` on views into an existing view of any strides.
fn run_into<T: Element, O: Element>(
    op: &'static OpInfo,
    call: &Call,
    inputs: &[ArrayViewD<'_, T>],
    mut out: ArrayViewMut<'_, O, IxDyn>,
) -> Result<()> {
    let out_layout = SignedLayout {
        sizes: out.shape(),
        strides: out.strides(),
    };
    let o = orient(op, call, &layouts(inputs), Some(out_layout), 0, false);
    for (j, &flip) in o.output.iter().enumerate() {
        if flip {
            out.invert_axis(Axis(j));
        }
    }
    let Some(out_strides) = strides_of(out.shape(), out.strides(), 1) else {
        // A direction no reversal reconciles: a packed result, assigned element by element.
        for (j, &flip) in o.output.iter().enumerate() {
            if flip {
                out.invert_axis(Axis(j));
            }
        }
        let packed = run_new::<T, O>(op, call, inputs)?;
        out.assign(&packed);
        return Ok(());
    };
    let srcs = prepare(inputs, &o.inputs);
    let parts = described_all(&srcs)?;
    let ins: Vec<Input<'_>> = parts.iter().map(|(d, b)| Input::Bytes(d, b)).collect();
    let desc = TensorDesc::new(O::DATA_TYPE, out.shape())?.with_strides(&out_strides)?;
    let len = desc.extent_bytes("OutputTensor")?;
    // SAFETY: the view's strides are non-negative here, so element 0 is its lowest address and its
    // elements lie in the `len` bytes from there, inside the one allocation the view borrows
    // mutably (so no input view, which borrows immutably, overlaps it). The kernel writes only
    // the elements, and for `bool` only 0 or 1.
    let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) };
    execute(op, call, &ins, &desc, bytes)
}

/// knn of a pairwise sum op on views: `(distances, indices)`, both `[..., M, k]`.
fn knn_new<T: Element, D: Element>(
    op: &'static OpInfo,
    call: &Call,
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    k: usize,
) -> Result<(ArrayD<D>, ArrayD<i64>)> {
    let inputs = [a, b];
    let probe = packed_descs(&inputs)?;
    let refs: Vec<&TensorDesc> = probe.iter().collect();
    let plan = validate_knn(op, call, &refs, k, D::DATA_TYPE)?;
    let shape = plan.output_shape().to_vec();
    let o = orient(op, call, &layouts(&inputs), None, shape.len(), true);
    let srcs = prepare(&inputs, &o.inputs);
    let parts = described_all(&srcs)?;
    let ins: Vec<Input<'_>> = parts.iter().map(|(d, b)| Input::Bytes(d, b)).collect();
    let dd = TensorDesc::new(D::DATA_TYPE, &shape)?;
    let id = TensorDesc::new(DataType::I64, &shape)?;
    crate::alloc::check_pair(
        plan.element_count().saturating_mul(size_of::<D>()),
        plan.element_count().saturating_mul(8),
        "the distances and indices",
    )?;
    let mut dist: Vec<D> = crate::alloc::zeroed_vec(plan.element_count(), "distances")?;
    let mut idx: Vec<i64> = crate::alloc::zeroed_vec(plan.element_count(), "indices")?;
    D::with_bytes_mut(&mut dist, |db| {
        i64::with_bytes_mut(&mut idx, |ib| knn(op, call, &ins, k, (&dd, db), (&id, ib)))
    })?;
    let shape_err = |_| shape_error(&shape);
    let mut d = ArrayD::from_shape_vec(IxDyn(&shape), dist).map_err(shape_err)?;
    let mut i = ArrayD::from_shape_vec(IxDyn(&shape), idx).map_err(shape_err)?;
    for (j, &flip) in o.output.iter().enumerate() {
        if flip {
            d.invert_axis(Axis(j));
            i.invert_axis(Axis(j));
        }
    }
    Ok((d, i))
}

/// Every op, on `ndarray` arrays and views (the `ndarray` feature): `use tensorbits::NdOp;`, then
/// `ops::BitXor::run_nd(&Options::new(), &[a.view(), b.view()])`. Views may have any strides,
/// negative included; inputs of different ranks broadcast as the op's typed methods do (pass
/// `.into_dyn()` views to mix ranks). The output's element type `O` is inferred from where the
/// result goes (`let c: ArrayD<u32> = ...`). As with the typed methods, an element type the op does
/// not support at the options' level, or an output type it does not write, is a compile error
/// (through [`SupportsType`] and [`OutputType`]).
pub trait NdOp: Op {
    /// Runs the op into a new array. Inputs are read where they lie; the result may itself be a
    /// view with reversed axes when an input's were (its elements are where numpy's would be).
    fn run_nd<T: Element, O: Element, D: Dimension, L: Level, C>(
        opts: &Options<L, C>,
        inputs: &[ArrayView<'_, T, D>],
    ) -> Result<ArrayD<O>>
    where
        Self: SupportsType<T, L> + OutputType<T, O>,
    {
        let views: Vec<ArrayViewD<'_, T>> = inputs.iter().map(|v| v.view().into_dyn()).collect();
        run_new(Self::INFO, &opts.call(), &views)
    }

    /// Runs the op into `out`, a mutable view of any strides (negative included); only its
    /// elements are written.
    fn run_nd_into<T: Element, O: Element, D: Dimension, E: Dimension, L: Level, C>(
        opts: &Options<L, C>,
        inputs: &[ArrayView<'_, T, D>],
        out: ArrayViewMut<'_, O, E>,
    ) -> Result<()>
    where
        Self: SupportsType<T, L> + OutputType<T, O>,
    {
        let views: Vec<ArrayViewD<'_, T>> = inputs.iter().map(|v| v.view().into_dyn()).collect();
        run_into(Self::INFO, &opts.call(), &views, out.into_dyn())
    }

    /// For a pairwise sum op: the `k` nearest rows of `b` for each row of `a`, as
    /// `(distances, indices)`, both `[..., M, k]` (ascending, ties by the lower index).
    fn knn_nd<T: Element, Dist: Element, D: Dimension, E: Dimension, L: Level, C>(
        opts: &Options<L, C>,
        a: ArrayView<'_, T, D>,
        b: ArrayView<'_, T, E>,
        k: usize,
    ) -> Result<(ArrayD<Dist>, ArrayD<i64>)>
    where
        Self: SupportsType<T, L> + OutputType<T, Dist>,
    {
        knn_new(Self::INFO, &opts.call(), a.into_dyn(), b.into_dyn(), k)
    }
}

impl<X: Op> NdOp for X {}
