//! The typed API's options and the helpers that generated methods call. They build descriptions from
//! views and go through the same [`validate`](crate::validate) as the dynamic API.

use crate::cpu::Src;
use crate::error::{Error, Result};
use crate::level::{Level, levels::EXT};
use crate::{Broadcast, Call, Element, OpInfo, Tensor, TensorDesc, TensorView, TensorViewMut};

/// Feature level (as a type, checked at compile time) and broadcast mode of a typed call.
///
/// ```
/// use tensorbits_runtime::{Broadcast, Options, levels::FL_4_1};
/// let opts = Options::at(FL_4_1).broadcast(Broadcast::Numpy);
/// # let _ = opts;
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Options<L = EXT> {
    level: L,
    broadcast: Option<Broadcast>,
}

impl Options<EXT> {
    /// Level `EXT`, the op's default broadcast mode.
    pub fn new() -> Self {
        Options::default()
    }
}

impl<L: Level> Options<L> {
    /// Validates calls against `level`; data types the op lacks there are compile errors.
    pub fn at(level: L) -> Self {
        Options {
            level,
            broadcast: None,
        }
    }

    /// Chooses the broadcast mode (the op must accept it).
    pub fn broadcast(mut self, broadcast: Broadcast) -> Self {
        self.broadcast = Some(broadcast);
        self
    }

    /// The level marker.
    pub fn level(&self) -> L {
        self.level
    }

    /// The same options for the dynamic API.
    pub fn call(&self) -> Call {
        Call {
            level: L::LEVEL,
            broadcast: self.broadcast,
        }
    }
}

fn bytes<'a, T: Element>(v: &TensorView<'a, T>) -> &'a [u8] {
    bytemuck::cast_slice(v.data())
}

/// Runs `op` on typed inputs into a new packed tensor of `O`. `f` is the op's element function at
/// `T`'s word, which small calls on packed tensors of one shape run directly.
#[inline]
pub fn run_new<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    f: impl Fn([T::Word; N]) -> O::Word,
) -> Result<Tensor<O>> {
    // Packed inputs of one shape: the validator's shortcut, else the full validator.
    if let Some(first) = inputs.first()
        && inputs
            .iter()
            .all(|v| v.is_packed() && v.dims() == first.dims())
    {
        let shape = first.dims();
        let checked = crate::op::check_same_shape(op, call, N, T::DATA_TYPE, O::DATA_TYPE, shape)?;
        if let Some((count, broadcast)) = checked {
            let data: [&[T]; N] = std::array::from_fn(|k| inputs[k].data());
            let out = if count.saturating_mul(size_of::<O>()) < crate::PARALLEL_BYTES {
                // Written once, straight into the new vector.
                let lanes: [&[T::Word]; N] = std::array::from_fn(|k| T::as_words(data[k]));
                O::from_words(crate::simd::compute_new(&lanes, count, &f))
            } else {
                let mut out = vec![O::ZERO; count];
                run_large(op, broadcast, *shape, data, &mut out);
                out
            };
            return Ok(Tensor::from_checked(out, *shape));
        }
    }
    run_new_general(op, call, inputs)
}

/// [`run_new`] for any views: the full validator and the op's plan-driven kernel.
#[inline(never)]
fn run_new_general<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
) -> Result<Tensor<O>> {
    let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let mut plan = crate::op::Plan::EMPTY;
    crate::op::validate_new_output_into(op, call, &refs, O::DATA_TYPE, &mut plan)?;
    let srcs: [Src<'_>; N] = std::array::from_fn(|k| Src::Bytes(bytes(&inputs[k])));
    let mut out = vec![O::ZERO; plan.count];
    O::with_bytes_mut(&mut out, |b| (op.cpu)(&plan, &srcs, b));
    Ok(Tensor::from_checked(out, plan.out_shape))
}

/// Runs `op` on typed inputs into an existing (possibly strided) output view; `f` as for
/// [`run_new`].
#[inline]
pub fn run_into<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    mut out: TensorViewMut<'_, O>,
    f: impl Fn([T::Word; N]) -> O::Word,
) -> Result<()> {
    // Packed inputs and output of one shape: the validator's shortcut (views are valid by
    // construction), else the full validator.
    if out.is_packed()
        && inputs
            .iter()
            .all(|v| v.is_packed() && v.dims() == out.dims())
    {
        let checked =
            crate::op::check_same_shape(op, call, N, T::DATA_TYPE, O::DATA_TYPE, out.dims())?;
        if let Some((count, broadcast)) = checked {
            // Every input has the output's shape.
            let shape = inputs.first().map_or(&crate::Dims::EMPTY, |v| v.dims());
            let data: [&[T]; N] = std::array::from_fn(|k| inputs[k].data());
            run_packed(op, broadcast, shape, data, &mut out.data_mut()[..count], f);
            return Ok(());
        }
    }
    run_into_general(op, call, inputs, out)
}

/// [`run_into`] for any views: the full validator and the op's plan-driven kernel.
#[inline(never)]
fn run_into_general<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    mut out: TensorViewMut<'_, O>,
) -> Result<()> {
    let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let plan = crate::validate(op, call, &refs, &out.desc())?;
    let srcs: [Src<'_>; N] = std::array::from_fn(|k| Src::Bytes(bytes(&inputs[k])));
    O::with_bytes_mut(out.data_mut(), |b| (op.cpu)(&plan, &srcs, b));
    Ok(())
}

/// Runs a call that passed [`check_same_shape`](crate::op::check_same_shape) on the inputs' `data`
/// into `out`, which holds exactly the element count: small ones with `f` on this thread, with no
/// plan and no type dispatch; larger ones through [`run_large`]. Inlined into the generated methods
/// with only slices and a shape, so that the views need not be built in memory.
#[inline]
fn run_packed<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    broadcast: crate::Broadcast,
    shape: &crate::Dims,
    data: [&[T]; N],
    out: &mut [O],
    f: impl Fn([T::Word; N]) -> O::Word,
) {
    let count = out.len();
    if size_of_val(out) < crate::PARALLEL_BYTES {
        let lanes: [&[T::Word]; N] = std::array::from_fn(|k| &T::as_words(data[k])[..count]);
        O::with_words_mut(out, |o| crate::simd::compute(&lanes, o, &f));
    } else {
        run_large(op, broadcast, *shape, data, out);
    }
}

/// A large call on packed tensors of one shape: a one-dimensional plan, the op's kernel, the
/// thread pool.
#[inline(never)]
fn run_large<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    broadcast: crate::Broadcast,
    shape: crate::Dims,
    data: [&[T]; N],
    out: &mut [O],
) {
    let plan =
        crate::op::same_shape_plan(N, T::DATA_TYPE, O::DATA_TYPE, &shape, out.len(), broadcast);
    let srcs: [Src<'_>; N] = std::array::from_fn(|k| Src::Bytes(bytemuck::cast_slice(data[k])));
    O::with_bytes_mut(out, |b| (op.cpu)(&plan, &srcs, b));
}

/// Runs `op` in place: input `alias` is `target`, which also receives the output; `others` are the
/// remaining inputs in order.
pub fn run_in_place<T: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    alias: usize,
    mut target: TensorViewMut<'_, T>,
    others: &[TensorView<'_, T>],
) -> Result<()> {
    if others.len() + 1 != N || N != op.arity() {
        return Err(Error::InputCount {
            op: op.name,
            expected: op.arity(),
            names: op.inputs.join(", "),
            got: others.len() + 1,
        });
    }
    if !op.in_place.contains(&alias) {
        return Err(crate::dynamic::in_place_error(op, alias));
    }
    let target_desc = target.desc();
    let other = |k: usize| if k < alias { k } else { k - 1 };
    let descs: [TensorDesc; N] = std::array::from_fn(|k| {
        if k == alias {
            target_desc
        } else {
            others[other(k)].desc()
        }
    });
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let plan = crate::validate(op, call, &refs, &target_desc)?;
    let srcs: [Src<'_>; N] = std::array::from_fn(|k| {
        if k == alias {
            Src::Output
        } else {
            Src::Bytes(bytes(&others[other(k)]))
        }
    });
    T::with_bytes_mut(target.data_mut(), |b| (op.cpu)(&plan, &srcs, b));
    Ok(())
}
