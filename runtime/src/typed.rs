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

/// Runs `op` on typed inputs into a new packed tensor of `O`.
pub fn run_new<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
) -> Result<Tensor<O>> {
    let mut plan = crate::op::Plan::EMPTY;
    let same = inputs
        .iter()
        .all(|v| v.is_packed() && v.shape() == inputs[0].shape());
    let shape = inputs.first().map(|v| v.dims()).unwrap_or_default();
    if !(same
        && crate::op::plan_same_shape(op, call, N, T::DATA_TYPE, O::DATA_TYPE, &shape, &mut plan)?)
    {
        let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
        let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
        crate::op::validate_new_output_into(op, call, &refs, O::DATA_TYPE, &mut plan)?;
    }
    let srcs: [Src<'_>; N] = std::array::from_fn(|k| Src::Bytes(bytes(&inputs[k])));
    let mut out = vec![O::ZERO; plan.count];
    O::with_bytes_mut(&mut out, |b| (op.cpu)(&plan, &srcs, b));
    Ok(Tensor::from_checked(out, plan.out_shape))
}

/// Runs `op` on typed inputs into an existing (possibly strided) output view.
pub fn run_into<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    mut out: TensorViewMut<'_, O>,
) -> Result<()> {
    let mut plan = crate::op::Plan::EMPTY;
    // Packed inputs and output of one shape: the validator's shortcut (views are valid by
    // construction), else the full validator.
    let same = out.as_view().is_packed()
        && inputs
            .iter()
            .all(|v| v.is_packed() && v.shape() == out.shape());
    let shape = out.as_view().dims();
    if !(same
        && crate::op::plan_same_shape(op, call, N, T::DATA_TYPE, O::DATA_TYPE, &shape, &mut plan)?)
    {
        let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
        let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
        plan = crate::validate(op, call, &refs, &out.desc())?;
    }
    let srcs: [Src<'_>; N] = std::array::from_fn(|k| Src::Bytes(bytes(&inputs[k])));
    O::with_bytes_mut(out.data_mut(), |b| (op.cpu)(&plan, &srcs, b));
    Ok(())
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
