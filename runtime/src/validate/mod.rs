//! The one validator every entry point goes through (typed, dynamic, compiled, GPU), with the rules
//! it is built from: tensor descriptions ([`desc`]), broadcasting ([`broadcast`]), and the buffer and
//! region checks shared by the CPU and GPU paths ([`buffer`]).

pub(crate) mod broadcast;
pub(crate) mod buffer;
pub(crate) mod desc;
pub(crate) mod reduce;

use crate::error::{Error, Result, ShapeText};
use crate::op::{Broadcast, Call, OpInfo, Plan};
use crate::{BroadcastMode, DataType, Dims, FeatureLevel, MAX_INPUTS};
use broadcast::{broadcast_shapes, collapse};
use desc::TensorDesc;

/// A tensor's name for error messages, turned into a `String` only when an error is built: the
/// success path of validation allocates nothing.
pub(crate) trait Name: Copy {
    fn name(self) -> String;
}

impl Name for &str {
    fn name(self) -> String {
        self.to_owned()
    }
}

/// Input `.1` of op `.0` (DirectML's name: `ATensor`), or `OutputTensor` past the inputs.
#[derive(Clone, Copy)]
pub(crate) struct OpTensor<'a>(pub &'a OpInfo, pub usize);

impl Name for OpTensor<'_> {
    fn name(self) -> String {
        self.0.tensor_name(self.1)
    }
}

/// Type names in DirectML's listing order, as the tables and compile-time notes print them.
fn type_list(types: &[DataType]) -> String {
    let mut sorted = types.to_vec();
    sorted.sort();
    let v: Vec<&str> = sorted.iter().map(|t| t.name()).collect();
    v.join(", ")
}

/// Validates a call: every description on its own, the data types at the level, the ranks, the
/// broadcast, and the output description against the result. The typed API and the dynamic one both
/// come here, so they accept and reject exactly the same calls.
pub fn validate(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    output: &TensorDesc,
) -> Result<Plan> {
    if op.reduce().is_some() {
        return reduce::plan(op, call, inputs, output.data_type(), Some(output));
    }
    let mut plan = Plan::EMPTY;
    plan_inputs(op, call, inputs, output.data_type(), &mut plan)?;
    let name = "OutputTensor";
    output.validate(name, true)?;
    check_rank(op, name, output.rank())?;
    if output.sizes() != &*plan.out_shape {
        return Err(Error::OutputShape {
            op: op.name(),
            expected: ShapeText(plan.out_shape.to_vec()),
            got: ShapeText(output.sizes().to_vec()),
        });
    }
    finish_plan(&mut plan, inputs, output.strides().and_then(Dims::new));
    Ok(plan)
}

/// Validates a knn call of a pairwise sum op: for each row of `inputs[0]`, the `k` nearest rows of
/// `inputs[1]`. The plan's output shape is that of both outputs, `[..., M, k]`: the distances (of
/// `out_dtype`, one of the op's output types) and their row indices (`i64`).
pub fn validate_knn(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    k: usize,
    out_dtype: DataType,
) -> Result<Plan> {
    let (mut plan, shape) = reduce::knn(op, call, inputs, k, out_dtype)?;
    plan.out_shape = shape;
    plan.count = shape.product().unwrap_or(0);
    Ok(plan)
}

/// Validates the inputs of a call whose output the library allocates (packed, of `out_dtype`).
pub fn validate_new_output(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    out_dtype: DataType,
) -> Result<Plan> {
    let mut plan = Plan::EMPTY;
    validate_new_output_into(op, call, inputs, out_dtype, &mut plan)?;
    Ok(plan)
}

/// [`validate_new_output`] into a plan the caller holds, so no plan is moved on the hot path.
pub(crate) fn validate_new_output_into(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    out_dtype: DataType,
    plan: &mut Plan,
) -> Result<()> {
    if op.reduce().is_some() {
        *plan = reduce::plan(op, call, inputs, out_dtype, None)?;
        return Ok(());
    }
    plan_inputs(op, call, inputs, out_dtype, plan)?;
    check_rank(op, "OutputTensor", plan.out_shape.len())?;
    // With no size 0 the element count bounds every stride; otherwise check the strides.
    if plan.count == 0 && plan.out_shape.packed_strides().is_none() {
        return Err(Error::SizeOverflow {
            tensor: "OutputTensor".to_owned(),
            sizes: ShapeText(plan.out_shape.to_vec()),
        });
    }
    finish_plan(plan, inputs, None);
    Ok(())
}

// The checks below build their errors in `#[cold]` functions: the success path, which small calls
// pay for on every call, stays a few compares.

#[inline]
fn check_rank(op: &OpInfo, tensor: impl Name, rank: usize) -> Result<()> {
    #[cold]
    #[inline(never)]
    fn error(op: &OpInfo, tensor: String, rank: usize) -> Error {
        Error::RankNotSupported {
            op: op.name(),
            tensor,
            rank,
            min: op.min_rank(),
            max: op.max_rank(),
        }
    }
    if rank < op.min_rank() as usize || rank > op.max_rank() as usize {
        return Err(error(op, tensor.name(), rank));
    }
    Ok(())
}

/// Input-side checks and the broadcast shape; the iteration space is filled in by `finish_plan`.
#[inline]
fn check_arity(op: &OpInfo, n: usize) -> Result<()> {
    #[cold]
    #[inline(never)]
    fn error(op: &OpInfo, n: usize) -> Error {
        Error::InputCount {
            op: op.name(),
            expected: op.arity(),
            names: op.inputs().join(", "),
            got: n,
        }
    }
    if n != op.arity() || n > MAX_INPUTS {
        return Err(error(op, n));
    }
    Ok(())
}

/// The op must exist at the level, the first input's type must be in the table, and the output
/// type must be one the op produces from it. (That all inputs share the type is checked by the
/// caller, which knows how the types are given.)
fn check_types(
    op: &OpInfo,
    level: FeatureLevel,
    dtype: DataType,
    out_dtype: DataType,
) -> Result<()> {
    let supported = op.types_at(level);
    if supported.contains(&dtype) && op.output_allowed(dtype, out_dtype) {
        return Ok(());
    }
    Err(types_error(op, level, dtype, out_dtype))
}

#[cold]
#[inline(never)]
fn types_error(op: &OpInfo, level: FeatureLevel, dtype: DataType, out_dtype: DataType) -> Error {
    let supported = op.types_at(level);
    if supported.is_empty() {
        return Error::OpNotAvailable {
            op: op.name(),
            level,
            introduced: op.introduced(),
        };
    }
    if !supported.contains(&dtype) {
        return Error::UnsupportedDataType {
            op: op.name(),
            tensor: op.tensor_name(0),
            dtype,
            level,
            supported: type_list(supported),
        };
    }
    Error::OutputDataType {
        op: op.name(),
        dtype: out_dtype,
        expected: match op.output_types() {
            // Declared order: the first output type is the default.
            Some(list) => {
                let names: Vec<&str> = list.iter().map(|t| t.name()).collect();
                format!("one of {}", names.join(", "))
            }
            None => format!("{dtype}, the input type"),
        },
    }
}

/// The call's broadcast mode (the op's default when none is given), which the op must accept.
#[inline]
fn check_broadcast(op: &OpInfo, call: &Call, n: usize) -> Result<Broadcast> {
    #[cold]
    #[inline(never)]
    fn error(op: &OpInfo, mode: BroadcastMode) -> Error {
        let accepted: Vec<&str> = op.broadcast_modes().iter().map(|m| m.name()).collect();
        Error::BroadcastNotSupported {
            op: op.name(),
            mode,
            accepted: if accepted.is_empty() {
                "none".to_owned()
            } else {
                accepted.join(", ")
            },
        }
    }
    let broadcast = call.broadcast.unwrap_or_else(|| op.default_broadcast());
    if n > 1 && !op.broadcast_modes().contains(&broadcast.mode()) {
        return Err(error(op, broadcast.mode()));
    }
    // An op with one input combines no shapes: only `none` applies, and asking for another mode
    // (with its axis) is a mistake worth reporting rather than ignoring.
    if n == 1 && op.broadcast_modes().is_empty() && broadcast != Broadcast::None {
        return Err(error(op, broadcast.mode()));
    }
    Ok(broadcast)
}

/// An element-wise op reduces nothing: axes or keepdims given to it are a mistake to report.
#[inline]
fn check_not_reducing(op: &OpInfo, call: &Call) -> Result<()> {
    #[cold]
    #[inline(never)]
    fn error(op: &OpInfo, what: &'static str) -> Error {
        Error::NotAReduction {
            op: op.name(),
            what,
        }
    }
    if call.axes.is_some() || call.keepdims {
        return Err(error(
            op,
            "is element-wise: axes and keepdims apply only to reductions",
        ));
    }
    if call.bits.is_some() {
        return Err(error(
            op,
            "is element-wise: valid bits (bits) apply only to sums over the last axis",
        ));
    }
    Ok(())
}

fn plan_inputs(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    out_dtype: DataType,
    plan: &mut Plan,
) -> Result<()> {
    let dtype = check_inputs(op, call, inputs, out_dtype)?;
    check_not_reducing(op, call)?;
    let broadcast = check_broadcast(op, call, inputs.len())?;
    let out_shape = broadcast_shape(op, broadcast, inputs)?;
    let count = out_shape.product().ok_or_else(|| Error::SizeOverflow {
        tensor: "OutputTensor".to_owned(),
        sizes: ShapeText(out_shape.to_vec()),
    })?;
    plan.in_dtype = dtype;
    plan.out_dtype = out_dtype;
    plan.out_shape = out_shape;
    plan.count = count;
    plan.broadcast = broadcast;
    Ok(())
}

/// The shape the inputs broadcast to under `broadcast`.
fn broadcast_shape(op: &OpInfo, broadcast: Broadcast, inputs: &[&TensorDesc]) -> Result<Dims> {
    // Equal shapes broadcast to themselves in every mode (pdpd from its default axis).
    let equal = inputs.iter().all(|d| d.sizes() == inputs[0].sizes());
    if equal && !matches!(broadcast, Broadcast::Pdpd { axis } if axis != -1) {
        Ok(inputs[0].dims())
    } else {
        broadcast_shapes(op, broadcast, inputs)
    }
}

/// The checks of every input on its own and of the data types: the arity, each description, the
/// first input's type at the level (and the output type for it), the other inputs' types, each
/// input's rank. Returns the input type.
fn check_inputs(
    op: &OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    out_dtype: DataType,
) -> Result<DataType> {
    check_arity(op, inputs.len())?;
    for (i, d) in inputs.iter().enumerate() {
        d.validate_as(OpTensor(op, i), false)?;
    }
    let dtype = inputs[0].data_type();
    let level = call.level;
    if op.types_at(level).is_empty() || !op.types_at(level).contains(&dtype) {
        check_types(op, level, dtype, out_dtype)?;
    }
    for (i, d) in inputs.iter().enumerate().skip(1) {
        if d.data_type() != dtype {
            return Err(Error::DataTypeMismatch {
                op: op.name(),
                tensor: op.tensor_name(i),
                dtype: d.data_type(),
                expected: dtype,
                first: op.tensor_name(0),
            });
        }
    }
    check_types(op, level, dtype, out_dtype)?;
    for (i, d) in inputs.iter().enumerate() {
        check_rank(op, OpTensor(op, i), d.rank())?;
    }
    Ok(dtype)
}

/// The typed API's shortcut for `n` packed inputs of one type and one shape, with a packed output of
/// that shape: the checks of [`validate_new_output`] that can fail for such a call, in the same
/// order, through the same helpers. Views are valid by construction and the shapes need no
/// broadcasting. The data types are proven at compile time by the generated methods' bounds
/// (`<Op>Supports<L>` holds exactly for the types of the table at `L`, `<Op>Output` for the output
/// types), so they are re-checked only in debug builds. Returns the element count and broadcast
/// mode, or `None` (leaving the call to the full validator) for pdpd with an explicit axis and for
/// shapes whose element count overflows. Always inlined: with the op's metadata a constant, most of
/// the checks fold away in the generated methods.
#[inline(always)]
pub(crate) fn check_same_shape(
    op: &OpInfo,
    call: &Call,
    n: usize,
    dtype: DataType,
    out_dtype: DataType,
    shape: &Dims,
) -> Result<Option<(usize, Broadcast)>> {
    check_arity(op, n)?;
    debug_assert!(
        check_types(op, call.level, dtype, out_dtype).is_ok(),
        "a typed call with types its bounds should have rejected"
    );
    check_not_reducing(op, call)?;
    // Ranks are bounded per op, not per tensor: the first input answers for all of them.
    check_rank(op, OpTensor(op, 0), shape.len())?;
    let broadcast = check_broadcast(op, call, n)?;
    if matches!(broadcast, Broadcast::Pdpd { axis } if axis != -1) {
        return Ok(None);
    }
    Ok(shape.product().map(|count| (count, broadcast)))
}

/// [`check_same_shape`] for a call whose types are known only at run time (the dynamic API): the
/// types are checked against the op's table at the call's level first.
pub(crate) fn check_same_shape_dynamic(
    op: &OpInfo,
    call: &Call,
    n: usize,
    dtype: DataType,
    out_dtype: DataType,
    shape: &Dims,
) -> Result<Option<(usize, Broadcast)>> {
    check_arity(op, n)?;
    check_types(op, call.level, dtype, out_dtype)?;
    check_same_shape(op, call, n, dtype, out_dtype, shape)
}

/// The plan of a call that passed [`check_same_shape`]: one contiguous dimension.
pub(crate) fn same_shape_plan(
    n: usize,
    dtype: DataType,
    out_dtype: DataType,
    shape: &Dims,
    count: usize,
    broadcast: Broadcast,
) -> Plan {
    let mut plan = Plan::EMPTY;
    plan.in_dtype = dtype;
    plan.out_dtype = out_dtype;
    plan.out_shape = *shape;
    plan.count = count;
    plan.broadcast = broadcast;
    one_run(&mut plan, n);
    plan
}

/// The iteration space of `n` packed inputs and a packed output of one shape: one contiguous run.
fn one_run(plan: &mut Plan, n: usize) {
    plan.iter = Dims::filled(1, plan.count);
    plan.out_strides = Dims::filled(1, 1);
    for s in plan.in_strides.iter_mut().take(n) {
        *s = Dims::filled(1, 1);
    }
}

/// Fills in the iteration space. `out_strides` is `None` for a packed output.
fn finish_plan(plan: &mut Plan, inputs: &[&TensorDesc], out_strides: Option<Dims>) {
    // Every tensor packed with the output's sizes (the common case): one contiguous dimension.
    let packed = |d: &&TensorDesc| d.strides().is_none() && d.sizes() == &*plan.out_shape;
    let out_packed = out_strides.is_none() || out_strides == plan.out_shape.packed_strides();
    if out_packed && plan.count > 0 && inputs.iter().all(packed) {
        one_run(plan, inputs.len());
        return;
    }
    let out_strides = out_strides
        .or_else(|| plan.out_shape.packed_strides())
        .unwrap_or_else(|| Dims::filled(plan.out_shape.len(), 0));
    let out_strides = &out_strides;
    let aligned = broadcast::aligned_strides(plan.broadcast, &plan.out_shape, inputs);
    let (iter, o, ins) = collapse(&plan.out_shape, out_strides, &aligned[..inputs.len()]);
    plan.iter = iter;
    plan.out_strides = o;
    plan.in_strides = ins;
}
