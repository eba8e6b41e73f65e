//! The one error type every entry point returns.

use crate::{BroadcastMode, DataType, FeatureLevel};
use std::fmt;

/// A shape, printed as `[8, 1, 6, 1]`.
#[derive(Clone, PartialEq, Eq)]
pub struct ShapeText(pub Vec<usize>);

impl fmt::Display for ShapeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl fmt::Debug for ShapeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<&[usize]> for ShapeText {
    fn from(s: &[usize]) -> Self {
        ShapeText(s.to_vec())
    }
}

/// Everything that can be wrong with a call. Each message says what is wrong, where (op, tensor,
/// dimension) and what was expected. `tensor` fields use DirectML's names: `ATensor`, `OutputTensor`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No op answers to this name.
    #[error("unknown op `{name}`; known ops: {known}")]
    UnknownOp {
        /// The name asked for.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// Wrong number of input tensors.
    #[error("{op} takes {expected} input tensor(s) ({names}), got {got}")]
    InputCount {
        /// Op name.
        op: &'static str,
        /// Its arity.
        expected: usize,
        /// The input names.
        names: String,
        /// How many were given.
        got: usize,
    },
    /// The op has no data type at all at this level.
    #[error("{op} is not available at {level}: it was introduced in {introduced}")]
    OpNotAvailable {
        /// Op name.
        op: &'static str,
        /// The level asked for.
        level: FeatureLevel,
        /// The lowest level that has it.
        introduced: FeatureLevel,
    },
    /// The input data type is not in the op's table at this level.
    #[error(
        "{op} does not support {dtype} ({tensor}) at {level}; supported at {level}: {supported}"
    )]
    UnsupportedDataType {
        /// Op name.
        op: &'static str,
        /// Which tensor.
        tensor: String,
        /// Its type.
        dtype: DataType,
        /// The level asked for.
        level: FeatureLevel,
        /// The supported set at that level.
        supported: String,
    },
    /// Inputs disagree on the data type.
    #[error(
        "{op}: {tensor} has data type {dtype}, but all inputs must have the data type of {first}, {expected}"
    )]
    DataTypeMismatch {
        /// Op name.
        op: &'static str,
        /// Which tensor.
        tensor: String,
        /// Its type.
        dtype: DataType,
        /// The first input's type.
        expected: DataType,
        /// The first input's name.
        first: String,
    },
    /// The output data type is not one the op produces from this input type.
    #[error("{op}: OutputTensor has data type {dtype}, expected {expected}")]
    OutputDataType {
        /// Op name.
        op: &'static str,
        /// The output's type.
        dtype: DataType,
        /// What is allowed.
        expected: String,
    },
    /// More than eight dimensions.
    #[error("{tensor} has {rank} dimensions; at most 8 are supported")]
    RankTooLarge {
        /// Which tensor.
        tensor: String,
        /// Its rank.
        rank: usize,
    },
    /// A rank outside the op's declared range.
    #[error("{op}: {tensor} has {rank} dimensions; {op} accepts {min} to {max}")]
    RankNotSupported {
        /// Op name.
        op: &'static str,
        /// Which tensor.
        tensor: String,
        /// Its rank.
        rank: usize,
        /// Smallest accepted.
        min: u8,
        /// Largest accepted.
        max: u8,
    },
    /// Strides and sizes of different lengths.
    #[error("{tensor} has {strides} strides for {rank} dimensions")]
    StridesLength {
        /// Which tensor.
        tensor: String,
        /// Number of strides.
        strides: usize,
        /// Number of sizes.
        rank: usize,
    },
    /// A zero stride on the output, which would write several results to one element.
    #[error("OutputTensor has stride 0 in dimension {dim}; output strides must be non-zero")]
    ZeroOutputStride {
        /// The dimension.
        dim: usize,
    },
    /// Output strides that make two elements share memory.
    #[error(
        "OutputTensor strides {strides} for sizes {sizes} make elements overlap (dimension {dim})"
    )]
    SelfOverlappingOutput {
        /// Output sizes.
        sizes: ShapeText,
        /// Output strides.
        strides: ShapeText,
        /// A dimension whose stride is too small.
        dim: usize,
    },
    /// `total_bytes` smaller than the elements the description reaches.
    #[error(
        "{tensor}: total size of {total} bytes is too small; sizes {sizes} with strides {strides} need at least {required}"
    )]
    TotalBytesTooSmall {
        /// Which tensor.
        tensor: String,
        /// The declared total.
        total: usize,
        /// What the layout needs.
        required: usize,
        /// Sizes.
        sizes: ShapeText,
        /// Strides.
        strides: ShapeText,
    },
    /// A base-offset alignment that is not a power of two at least the element size.
    #[error(
        "{tensor}: guaranteed base-offset alignment {alignment} must be a power of two and at least the element size {elem}"
    )]
    BadAlignment {
        /// Which tensor.
        tensor: String,
        /// The alignment given.
        alignment: usize,
        /// Element size in bytes.
        elem: usize,
    },
    /// Size arithmetic overflowed `usize`.
    #[error("{tensor}: sizes {sizes} overflow the address space")]
    SizeOverflow {
        /// Which tensor.
        tensor: String,
        /// Sizes.
        sizes: ShapeText,
    },
    /// A byte buffer shorter than the bytes its description's elements span (a slice has an exact
    /// length, so the description's rounded-up total size is not asked of it).
    #[error(
        "{tensor}: buffer of {len} bytes is shorter than the {required} bytes its description's elements span"
    )]
    BufferTooSmall {
        /// Which tensor.
        tensor: String,
        /// Bytes given.
        len: usize,
        /// Bytes needed.
        required: usize,
    },
    /// A buffer or offset that breaks the promised base-offset alignment.
    #[error(
        "{tensor}: base offset {offset} is not a multiple of the guaranteed alignment {alignment}"
    )]
    MisalignedOffset {
        /// Which tensor.
        tensor: String,
        /// The offset (or address) found.
        offset: usize,
        /// The alignment promised.
        alignment: usize,
    },
    /// A region that reaches past the end of its buffer.
    #[error("{tensor}: region [{offset}, {end}) lies outside the buffer of {len} bytes")]
    RegionOutOfBounds {
        /// Which tensor.
        tensor: String,
        /// Start.
        offset: usize,
        /// End.
        end: usize,
        /// Buffer length.
        len: usize,
    },
    /// Element count does not match the shape.
    #[error("{tensor}: {len} elements given, shape {shape} holds {expected}")]
    DataLength {
        /// Which tensor.
        tensor: String,
        /// Elements given.
        len: usize,
        /// Shape.
        shape: ShapeText,
        /// Elements the shape holds.
        expected: usize,
    },
    /// The op does not accept this broadcast mode.
    #[error("{op} does not accept broadcast mode `{mode}`; it accepts: {accepted}")]
    BroadcastNotSupported {
        /// Op name.
        op: &'static str,
        /// The mode asked for.
        mode: BroadcastMode,
        /// Those it accepts.
        accepted: String,
    },
    /// Shapes that do not combine under the broadcast mode.
    #[error("{op} ({mode} broadcast): {tensor} shape {shape} does not match {target} {detail}")]
    ShapeMismatch {
        /// Op name.
        op: &'static str,
        /// The mode.
        mode: BroadcastMode,
        /// The offending tensor.
        tensor: String,
        /// Its shape.
        shape: ShapeText,
        /// The tensor it is matched against, with its shape: `ATensor shape [2, 3]`.
        target: String,
        /// Which dimension and why.
        detail: String,
    },
    /// A pdpd axis out of range.
    #[error(
        "{op} (pdpd broadcast): axis {axis} is out of range for {tensor} of rank {rank} onto rank {target_rank} (valid: -1 or 0 to {max})"
    )]
    BadAxis {
        /// Op name.
        op: &'static str,
        /// The axis.
        axis: i64,
        /// The input broadcast.
        tensor: String,
        /// Its rank (trailing 1s dropped).
        rank: usize,
        /// The first input's rank.
        target_rank: usize,
        /// The largest valid axis.
        max: usize,
    },
    /// Output sizes differ from the broadcast result.
    #[error("{op}: OutputTensor has shape {got}, but the inputs produce shape {expected}")]
    OutputShape {
        /// Op name.
        op: &'static str,
        /// The broadcast shape.
        expected: ShapeText,
        /// The output's shape.
        got: ShapeText,
    },
    /// The output aliases an input the op may not run in place on.
    #[error("{op}: OutputTensor may not alias {tensor}; {op} runs in place only on: {allowed}")]
    InPlaceNotAllowed {
        /// Op name.
        op: &'static str,
        /// The aliased input.
        tensor: String,
        /// Inputs that may alias.
        allowed: String,
    },
    /// An axis outside the tensor's dimensions.
    #[error(
        "{op}: axis {axis} is out of range for the broadcast input of rank {rank} (valid: -{rank} to {last})"
    )]
    AxisOutOfRange {
        /// Op name.
        op: &'static str,
        /// The axis given.
        axis: i64,
        /// The rank it indexes.
        rank: usize,
        /// The last valid axis (`rank - 1`).
        last: i64,
    },
    /// Two axes that name one dimension.
    #[error(
        "{op}: axes {first} and {second} both name dimension {dim}; each axis may be reduced once"
    )]
    RepeatedAxis {
        /// Op name.
        op: &'static str,
        /// The first axis as given.
        first: i64,
        /// The second.
        second: i64,
        /// The dimension both name.
        dim: usize,
    },
    /// More axes than a tensor has dimensions.
    #[error("{count} axes given; a tensor has at most 8 dimensions")]
    TooManyAxes {
        /// How many were given.
        count: usize,
    },
    /// A sum whose worst case does not fit the output type.
    #[error(
        "{op}: a sum of {count} elements of up to {bits} set bits each can reach {reach}, more than {output} holds ({max}); {fits}",
        reach = *.count as u128 * u128::from(*.bits),
        max = if .output.is_signed() { .output.max_bits_value() >> 1 } else { .output.max_bits_value() }
    )]
    SumOverflow {
        /// Op name.
        op: &'static str,
        /// Elements summed into each output element.
        count: usize,
        /// Bits per element.
        bits: u32,
        /// The output type asked for.
        output: DataType,
        /// Which output type would fit, in words.
        fits: String,
    },
    /// A sum of an affine `compute` whose results do not all fit the output type.
    #[error(
        "{op}: `{compute}` over {count} elements of {bits} bits gives results from {lo} to {hi}, beyond what {output} holds ({min} to {max}); {fits}",
        min = .output.value_range().0,
        max = .output.value_range().1
    )]
    SumRange {
        /// Op name.
        op: &'static str,
        /// The op's `compute`.
        compute: &'static str,
        /// Elements summed into each output element.
        count: usize,
        /// Bits per element.
        bits: u32,
        /// The smallest result (saturated to `i64`).
        lo: i64,
        /// The largest result (saturated to `i64`).
        hi: i64,
        /// The output type asked for.
        output: DataType,
        /// Which output type would fit, in words.
        fits: String,
    },
    /// Valid bits (`bits`) a call cannot have.
    #[error("{op}: bits = {bits}: {reason}")]
    ValidBits {
        /// Op name.
        op: &'static str,
        /// The valid bits asked for.
        bits: usize,
        /// What is wrong, in words.
        reason: String,
    },
    /// An argument of `binarize` or `rescore` the call cannot take: thresholds of another length
    /// or type, query rows of another length than the codes, candidates outside the codes.
    #[error("{op}: {reason}")]
    BadArgument {
        /// The function.
        op: &'static str,
        /// What is wrong, in words.
        reason: String,
    },
    /// Reduction options given to an op they do not apply to.
    #[error("{op} {what}")]
    NotAReduction {
        /// Op name.
        op: &'static str,
        /// What is wrong, in words.
        what: &'static str,
    },
    /// knn asked for more neighbours than there are rows.
    #[error("knn: k = {k} is more than the {rows} rows of {tensor} ({op})")]
    KTooLarge {
        /// Op name.
        op: &'static str,
        /// The second input's name (`BTensor`), from the spec.
        tensor: String,
        /// The k asked for.
        k: usize,
        /// Rows of the second input.
        rows: usize,
    },
    /// Memory for a tensor could not be had.
    #[error("{tensor}: cannot allocate {bytes} bytes")]
    AllocationFailed {
        /// Which tensor.
        tensor: String,
        /// The size asked for.
        bytes: usize,
    },
    /// No GPU adapter or device could be had.
    #[error("no GPU is available: {reason}")]
    NoGpu {
        /// What wgpu reported.
        reason: String,
    },
    /// wgpu reported an error for this call's work.
    #[error("GPU error: {message}")]
    Gpu {
        /// What wgpu reported.
        message: String,
    },
    /// The call is valid but cannot run on this device (a limit, a buffer size).
    #[error("cannot run on this GPU: {what}")]
    GpuUnsupported {
        /// What stands in the way.
        what: String,
    },
    /// A caller's buffer cannot be used as given.
    #[error("{tensor}: {reason}")]
    GpuBuffer {
        /// Which tensor.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
    /// The output overlaps an input without being exactly the same region.
    #[error(
        "{op}: OutputTensor bytes [{out_start}, {out_end}) partially overlap {tensor} bytes [{start}, {end}); in-place execution needs the exact same region"
    )]
    PartialOverlap {
        /// Op name.
        op: &'static str,
        /// The input.
        tensor: String,
        /// Input start.
        start: usize,
        /// Input end.
        end: usize,
        /// Output start.
        out_start: usize,
        /// Output end.
        out_end: usize,
    },
}

impl Error {
    /// Whether the error comes from the device (no adapter, a failed submission) rather than from the
    /// call's inputs: the command-line tool exits with 1 for these, 2 for the rest.
    pub fn is_device_failure(&self) -> bool {
        matches!(self, Error::NoGpu { .. } | Error::Gpu { .. })
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    /// Users' functions return `Result<_, Error>`; above 128 bytes clippy's `result_large_err` would
    /// fire in their code.
    #[test]
    fn error_stays_small() {
        assert!(
            size_of::<super::Error>() <= 128,
            "{}",
            size_of::<super::Error>()
        );
    }
}
