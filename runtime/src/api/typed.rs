//! The typed API's options and the helpers that generated methods call. They build descriptions from
//! views and go through the same [`validate`](crate::validate()) as the dynamic API; the work runs
//! on the op's element function, which the generated methods pass in at the call's types.

use crate::cpu::{self, Kernels, PARALLEL_BYTES, simd, walk};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::level::{Level, levels::EXT};
use crate::op::{Axes, BitOrder, Broadcast, Call, InputBuffer, OpInfo, Plan};
use crate::validate::{self, buffer::check_in_place};
use crate::{Dims, Tensor, TensorDesc, TensorView, TensorViewMut};
use std::marker::PhantomData;

/// Feature level (as a type, checked at compile time), broadcast mode and, for ops whose output type
/// differs from the inputs' (bit counts), the output type of a typed call.
///
/// ```
/// use tensorbits_runtime::{Broadcast, Options, levels::FL_4_1};
/// let opts = Options::at(FL_4_1).broadcast(Broadcast::Numpy);
/// // For a bit count: u32 counts instead of the op's first declared output type.
/// let wide = Options::new().output::<u32>();
/// # let _ = (opts, wide);
/// ```
#[derive(Debug)]
pub struct Options<L = EXT, O = DefaultOutput> {
    level: L,
    /// The dynamic API's options; their level is always `L::LEVEL`.
    call: Call,
    output: PhantomData<fn() -> O>,
}

impl<L: Clone, O> Clone for Options<L, O> {
    fn clone(&self) -> Self {
        Options {
            level: self.level.clone(),
            call: self.call,
            output: PhantomData,
        }
    }
}

impl<L: Copy, O> Copy for Options<L, O> {}

impl<L: Level> Default for Options<L> {
    fn default() -> Self {
        Options::at(L::default())
    }
}

impl Options<EXT> {
    /// Level `EXT`, the op's default broadcast mode and output type.
    pub fn new() -> Self {
        Options::default()
    }
}

impl<L: Level> Options<L> {
    /// Validates calls against `level`; data types the op lacks there are compile errors.
    pub fn at(level: L) -> Self {
        Options {
            level,
            call: Call {
                level: L::LEVEL,
                ..Call::default()
            },
            output: PhantomData,
        }
    }
}

impl<L: Level, O> Options<L, O> {
    /// Chooses the broadcast mode (the op must accept it).
    pub fn broadcast(mut self, broadcast: Broadcast) -> Self {
        self.call.broadcast = Some(broadcast);
        self
    }

    /// Chooses the output type of an op that declares several (a bit count: `u8` or `u32`). A type
    /// the op does not declare is a compile error; ops whose output has the inputs' type take only
    /// options that leave it at the default.
    pub fn output<P: Element>(self) -> Options<L, P> {
        Options {
            level: self.level,
            call: self.call,
            output: PhantomData,
        }
    }

    /// For a reduction: the axes to reduce (negative ones count from the end) instead of the op's
    /// default axes. `Options::new().axes([-1])`; for a list known only at run time, [`Axes::new`].
    pub fn axes(mut self, axes: impl Into<Axes>) -> Self {
        self.call.axes = Some(axes.into());
        self
    }

    /// For a reduction: keep each reduced dimension as a dimension of size 1.
    pub fn keepdims(mut self, keep: bool) -> Self {
        self.call.keepdims = keep;
        self
    }

    /// For knn: the largest values first (`true`) or the smallest, whatever the op's `nearest`
    /// says. Ties go to the lower index either way.
    pub fn largest(mut self, largest: bool) -> Self {
        self.call.largest = Some(largest);
        self
    }

    /// For a sum over the last axis (pairwise or not): only the first `bits` bits of each row
    /// count, the rest is padding whatever it holds. A row is a byte string as `np.packbits(x,
    /// axis=-1)` makes it; `bits` past the row's bits is an error.
    pub fn bits(mut self, bits: usize) -> Self {
        self.call.bits = Some(bits);
        self
    }

    /// The order of the bits in each byte of a row, for [`bits`](Self::bits): numpy's default
    /// [`BitOrder::Big`], or [`BitOrder::Little`].
    pub fn bitorder(mut self, order: BitOrder) -> Self {
        self.call.bitorder = order;
        self
    }

    /// The level marker.
    pub fn level(&self) -> L {
        self.level
    }

    /// The same options for the dynamic API.
    pub fn call(&self) -> Call {
        self.call
    }

    /// [`call`](Self::call) by reference, which the generated methods pass on: small calls then
    /// copy nothing.
    #[doc(hidden)]
    #[inline(always)]
    pub fn call_ref(&self) -> &Call {
        &self.call
    }
}

/// The output type [`Options`] leave to the op: its first declared output type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DefaultOutput;

/// Resolves an [`Options`] output choice against an op's default output type `D`: [`DefaultOutput`]
/// gives `D`, an element type gives itself. The typed methods of ops with several output types (bit
/// counts) use it in their signatures.
pub trait OutputChoice<D: Element> {
    /// The element type the call writes.
    type Out: Element;
}

impl<D: Element> OutputChoice<D> for DefaultOutput {
    type Out = D;
}

impl<D: Element, T: Element> OutputChoice<D> for T {
    type Out = T;
}

fn bytes<'a, T: Element>(v: &TensorView<'a, T>) -> &'a [u8] {
    bytemuck::cast_slice(v.data())
}

/// `N` slices, the `k`th from `f(k)`: `std::array::from_fn`, which the compiler leaves as calls of
/// a closure in small calls' path.
#[inline(always)]
fn slices<'a, E, const N: usize>(f: impl Fn(usize) -> &'a [E]) -> [&'a [E]; N] {
    let mut out: [&[E]; N] = [&[]; N];
    for (k, s) in out.iter_mut().enumerate() {
        *s = f(k);
    }
    out
}

/// The op's element function as a kernel over contiguous runs, for the walk.
fn kernel<T: Element, O: Element, const N: usize>(
    f: &(impl Fn([T::Word; N]) -> O::Word + Sync),
) -> impl Fn(&[&[u8]], &mut [u8]) + Sync {
    move |ins: &[&[u8]], out: &mut [u8]| crate::cpu::map::<T::Word, O::Word, N>(ins, out, f)
}

/// Runs `op` on typed inputs into a new packed tensor of `O`. `f` is the op's element function at
/// `T`'s word, which small calls on packed tensors of one shape run directly.
///
/// Every way out but the small call's comes back boxed, from a function out of line: a result
/// returned by value (through memory the caller hands in) would be written into the caller's
/// result, which then could not live in registers, and the small call would build its tensor in
/// memory and copy it, reading the vector's pointer and length in one load straight after the
/// stores of them, which the CPU cannot forward (64 `u32`s XORed into a new tensor, criterion:
/// about 30 ns before, against a hand-written loop's 15).
#[inline]
pub fn run_new<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    f: impl Fn([T::Word; N]) -> O::Word + Sync,
) -> Result<Tensor<O>> {
    // Packed inputs of one shape: the validator's shortcut, else the full validator.
    if let Some(first) = inputs.first()
        && inputs
            .iter()
            .all(|v| v.is_packed() && v.dims() == first.dims())
    {
        let shape = first.dims();
        match validate::check_same_shape(op, call, N, T::DATA_TYPE, O::DATA_TYPE, shape) {
            Ok(Some((count, broadcast))) => {
                let data: [&[T]; N] = slices(|k| inputs[k].data());
                if count.saturating_mul(size_of::<O>()) < PARALLEL_BYTES {
                    // Written once, straight into the new vector.
                    let lanes: [&[T::Word]; N] = slices(|k| T::as_words(data[k]));
                    let out = O::from_words(simd::compute_new(&lanes, count, &f));
                    return Ok(Tensor::from_checked(out, *shape));
                }
                return *boxed(run_new_large(broadcast, shape, data, count, &f));
            }
            Ok(None) => {}
            Err(e) => return *boxed(Err(e)),
        }
    }
    *boxed(run_new_general(op, call, inputs, &f))
}

/// `result` on the heap, for [`run_new`]'s ways out other than the small call's: the functions
/// that compute them return into memory of their own, not into the small call's result.
#[cold]
#[inline(never)]
fn boxed<R>(result: Result<R>) -> Box<Result<R>> {
    Box::new(result)
}

/// [`run_new`] for a large call on packed tensors of one shape, out of line: what the generated
/// methods inline for a small call is then the checks, the hot loop and the new tensor, without
/// the zeroed allocation and its error path (64 `u32`s XORed into a new tensor, criterion:
/// 20.1-24.1 ns before, 19.0-19.5 ns after).
#[inline(never)]
fn run_new_large<T: Element, O: Element, const N: usize>(
    broadcast: Broadcast,
    shape: &Dims,
    data: [&[T]; N],
    count: usize,
    f: &(impl Fn([T::Word; N]) -> O::Word + Sync),
) -> Result<Tensor<O>> {
    let mut out = crate::alloc::zeroed_vec(count, "OutputTensor")?;
    run_large(broadcast, *shape, data, &mut out, f);
    Ok(Tensor::from_checked(out, *shape))
}

/// [`run_new`] for any views: the full validator and the walk over the plan. Cold, as
/// [`run_into_general`].
#[cold]
#[inline(never)]
fn run_new_general<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    f: &(impl Fn([T::Word; N]) -> O::Word + Sync),
) -> Result<Tensor<O>> {
    let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let mut plan = Plan::EMPTY;
    validate::validate_new_output_into(op, call, &refs, O::DATA_TYPE, &mut plan)?;
    let srcs: [InputBuffer<'_>; N] = std::array::from_fn(|k| InputBuffer::Bytes(bytes(&inputs[k])));
    let mut out = crate::alloc::zeroed_vec(plan.count, "OutputTensor")?;
    O::with_bytes_mut(&mut out, |b| {
        walk::run(&plan, &srcs, b, &kernel::<T, O, N>(f))
    });
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
    f: impl Fn([T::Word; N]) -> O::Word + Sync,
) -> Result<()> {
    // Packed inputs and output of one shape: the validator's shortcut (views are valid by
    // construction), else the full validator.
    if out.is_packed()
        && inputs
            .iter()
            .all(|v| v.is_packed() && v.dims() == out.dims())
    {
        let checked =
            validate::check_same_shape(op, call, N, T::DATA_TYPE, O::DATA_TYPE, out.dims())?;
        if let Some((count, broadcast)) = checked {
            // Every input has the output's shape.
            let shape = inputs.first().map_or(&Dims::EMPTY, |v| v.dims());
            let data: [&[T]; N] = slices(|k| inputs[k].data());
            run_packed(broadcast, shape, data, &mut out.data_mut()[..count], f);
            return Ok(());
        }
    }
    run_into_general(op, call, inputs, out, &f)
}

/// [`run_into`] for any views: the full validator and the walk over the plan. Cold, so that the
/// small calls of the fast path do not pay for its frame.
#[cold]
#[inline(never)]
fn run_into_general<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    mut out: TensorViewMut<'_, O>,
    f: &(impl Fn([T::Word; N]) -> O::Word + Sync),
) -> Result<()> {
    let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let plan = validate::validate(op, call, &refs, &out.desc())?;
    let srcs: [InputBuffer<'_>; N] = std::array::from_fn(|k| InputBuffer::Bytes(bytes(&inputs[k])));
    O::with_bytes_mut(out.data_mut(), |b| {
        walk::run(&plan, &srcs, b, &kernel::<T, O, N>(f))
    });
    Ok(())
}

/// Runs a call that passed [`check_same_shape`](validate::check_same_shape) on the inputs' `data`
/// into `out`, which holds exactly the element count: small ones with `f` on this thread, with no
/// plan and no type dispatch; larger ones through [`run_large`]. Inlined into the generated methods
/// with only slices and a shape, so that the views need not be built in memory.
#[inline]
fn run_packed<T: Element, O: Element, const N: usize>(
    broadcast: Broadcast,
    shape: &Dims,
    data: [&[T]; N],
    out: &mut [O],
    f: impl Fn([T::Word; N]) -> O::Word + Sync,
) {
    let count = out.len();
    if size_of_val(out) < PARALLEL_BYTES {
        let lanes: [&[T::Word]; N] = slices(|k| &T::as_words(data[k])[..count]);
        O::with_words_mut(out, |o| simd::compute(&lanes, o, &f));
    } else {
        run_large(broadcast, *shape, data, out, &f);
    }
}

/// A large call on packed tensors of one shape: a one-dimensional plan, the walk, the thread pool.
#[inline(never)]
fn run_large<T: Element, O: Element, const N: usize>(
    broadcast: Broadcast,
    shape: Dims,
    data: [&[T]; N],
    out: &mut [O],
    f: &(impl Fn([T::Word; N]) -> O::Word + Sync),
) {
    let plan =
        validate::same_shape_plan(N, T::DATA_TYPE, O::DATA_TYPE, &shape, out.len(), broadcast);
    let srcs: [InputBuffer<'_>; N] =
        std::array::from_fn(|k| InputBuffer::Bytes(bytemuck::cast_slice(data[k])));
    O::with_bytes_mut(out, |b| walk::run(&plan, &srcs, b, &kernel::<T, O, N>(f)));
}

/// Runs `op` in place: input `alias` is `target`, which also receives the output; `others` are the
/// remaining inputs in order. `f` as for [`run_new`].
pub fn run_in_place<T: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    alias: usize,
    mut target: TensorViewMut<'_, T>,
    others: &[TensorView<'_, T>],
    f: impl Fn([T::Word; N]) -> T::Word + Sync,
) -> Result<()> {
    if others.len() + 1 != N || N != op.arity() {
        return Err(Error::InputCount {
            op: op.name(),
            expected: op.arity(),
            names: op.inputs().join(", "),
            got: others.len() + 1,
        });
    }
    check_in_place(op, alias)?;
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
    let plan = validate::validate(op, call, &refs, &target_desc)?;
    let srcs: [InputBuffer<'_>; N] = std::array::from_fn(|k| {
        if k == alias {
            InputBuffer::Output
        } else {
            InputBuffer::Bytes(bytes(&others[other(k)]))
        }
    });
    T::with_bytes_mut(target.data_mut(), |b| {
        walk::run(&plan, &srcs, b, &kernel::<T, T, N>(&f))
    });
    Ok(())
}

/// Runs a reduction or pairwise `op` on typed inputs into a new packed tensor of `O`, with kernels
/// made from the op's element function at the call's types.
pub fn reduce_new<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    kernels: &Kernels<'_>,
) -> Result<Tensor<O>> {
    let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let plan = validate::validate_new_output(op, call, &refs, O::DATA_TYPE)?;
    let srcs: [InputBuffer<'_>; N] = std::array::from_fn(|k| InputBuffer::Bytes(bytes(&inputs[k])));
    let mut out = crate::alloc::zeroed_vec(plan.count, "OutputTensor")?;
    O::with_bytes_mut(&mut out, |b| cpu::execute(&plan, &srcs, b, kernels))?;
    Ok(Tensor::from_checked(out, plan.out_shape))
}

/// Runs a reduction or pairwise `op` into an existing (possibly strided) output view; kernels as
/// for [`reduce_new`].
pub fn reduce_into<T: Element, O: Element, const N: usize>(
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    mut out: TensorViewMut<'_, O>,
    kernels: &Kernels<'_>,
) -> Result<()> {
    let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
    let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
    let plan = validate::validate(op, call, &refs, &out.desc())?;
    let srcs: [InputBuffer<'_>; N] = std::array::from_fn(|k| InputBuffer::Bytes(bytes(&inputs[k])));
    O::with_bytes_mut(out.data_mut(), |b| cpu::execute(&plan, &srcs, b, kernels))
}

/// For each row of `a`, the `k` nearest rows of `b` under a pairwise sum op: distances of `D` and
/// row indices, both `[..., M, k]`, ascending by distance, ties by the lower index.
pub fn knn_new<T: Element, D: Element>(
    op: &'static OpInfo,
    call: &Call,
    a: TensorView<'_, T>,
    b: TensorView<'_, T>,
    k: usize,
    kernels: &Kernels<'_>,
) -> Result<(Tensor<D>, Tensor<i64>)> {
    let descs = [a.desc(), b.desc()];
    let plan = validate::validate_knn(op, call, &[&descs[0], &descs[1]], k, D::DATA_TYPE)?;
    let srcs = [InputBuffer::Bytes(bytes(&a)), InputBuffer::Bytes(bytes(&b))];
    let Some(pair) = kernels.pair else {
        return Err(Error::NotAReduction {
            op: op.name(),
            what: "has no pair kernel",
        });
    };
    crate::alloc::check_pair(
        plan.count.saturating_mul(size_of::<D>()),
        plan.count.saturating_mul(8),
        "the distances and indices",
    )?;
    let mut dist = crate::alloc::zeroed_vec::<D>(plan.count, "distances")?;
    let mut idx = crate::alloc::zeroed_vec::<i64>(plan.count, "indices")?;
    D::with_bytes_mut(&mut dist, |db| {
        let out = cpu::knn::KnnOut {
            dist: db,
            es: D::DATA_TYPE.size(),
            idx: bytemuck::cast_slice_mut(&mut idx),
        };
        cpu::knn::knn(&plan, &srcs, k, pair, out)
    })?;
    Ok((
        Tensor::from_checked(dist, plan.out_shape),
        Tensor::from_checked(idx, plan.out_shape),
    ))
}

/// The hits of a typed `range_search`, in FAISS's layout: row `i` of `a` has the hits
/// `lims[i]..lims[i + 1]` of `values` and `indices`, in ascending index order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeHits<D> {
    /// `M + 1` offsets into `values` and `indices`, from 0 to the number of hits.
    pub lims: Vec<usize>,
    /// The hits' results.
    pub values: Vec<D>,
    /// The hits' rows of `b`.
    pub indices: Vec<i64>,
}

impl<D> RangeHits<D> {
    /// The rows of `a` searched for.
    pub fn rows(&self) -> usize {
        self.lims.len().saturating_sub(1)
    }

    /// Row `i`'s hits: their values and rows of `b`. Panics if `i` is not below
    /// [`rows`](Self::rows), as slicing does.
    pub fn row(&self, i: usize) -> (&[D], &[i64]) {
        let (from, to) = (self.lims[i], self.lims[i + 1]);
        (&self.values[from..to], &self.indices[from..to])
    }
}

/// For each row of `a`, every row of `b` whose result under a pairwise sum op passes
/// `threshold` (see [`range_search`](crate::range_search)), with results of `D`.
pub fn range_new<T: Element, D: Element>(
    op: &'static OpInfo,
    call: &Call,
    a: TensorView<'_, T>,
    b: TensorView<'_, T>,
    threshold: f64,
    kernels: &Kernels<'_>,
) -> Result<RangeHits<D>> {
    let descs = [a.desc(), b.desc()];
    let plan = crate::api::dynamic::range_plan(
        op,
        call,
        &[&descs[0], &descs[1]],
        threshold,
        D::DATA_TYPE,
    )?;
    let srcs = [InputBuffer::Bytes(bytes(&a)), InputBuffer::Bytes(bytes(&b))];
    let hits = crate::api::dynamic::range_hits(op, call, &plan, &srcs, kernels, threshold)?;
    let count = hits.keys.len();
    crate::alloc::check_allocation(count.saturating_mul(size_of::<D>()), "range_search values")?;
    let mut values = crate::alloc::zeroed_vec::<D>(count, "range_search values")?;
    D::with_bytes_mut(&mut values, |vb| {
        let es = D::DATA_TYPE.size();
        for (j, &key) in hits.keys.iter().enumerate() {
            crate::element::write_elem(vb, j, es, plan.knn_value(key));
        }
    });
    Ok(RangeHits {
        lims: hits.lims.into_iter().map(|l| l as usize).collect(),
        values,
        indices: hits.indices.into_iter().map(|i| i as i64).collect(),
    })
}
