//! The DirectML bitwise family, each declared with `#[bitwise_op]`, and lookup by any of the names
//! frameworks use for them (DirectML, ONNX, OpenVINO, numpy, short).

use crate::{OpInfo, bitwise_op};

/// Computes the bitwise AND between each pair of corresponding elements of the input tensors, and
/// writes the result into the output tensor.
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_AND",
    inputs = [a, b],
    compute = a & b,
    dims = 0..=8,
    broadcast = [numpy, none, pdpd],
    in_place = [a, b],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8],
        EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitAnd;

/// Computes the bitwise OR between each pair of corresponding elements of the input tensors, and
/// writes the result into the output tensor.
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_OR",
    inputs = [a, b],
    compute = a | b,
    dims = 0..=8,
    broadcast = [numpy, none, pdpd],
    in_place = [a, b],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8],
        EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitOr;

/// Computes the bitwise XOR (eXclusive OR) between each pair of corresponding elements of the input
/// tensors, and writes the result into the output tensor.
///
/// # Example
///
/// ```
/// use tensorbits::{Tensor, ops::BitXor};
/// let a = Tensor::from_vec(vec![21u8, 120], &[2])?;
/// let b = Tensor::from_vec(vec![3u8, 37], &[2])?;
/// assert_eq!(BitXor::run(&a, &b)?.data(), &[22, 93]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_XOR",
    inputs = [a, b],
    compute = a ^ b,
    dims = 0..=8,
    broadcast = [numpy, none, pdpd],
    in_place = [a, b],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8],
        EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitXor;

/// Computes the bitwise NOT of each element of the input tensor, and writes the result into the output
/// tensor. For `bool` it is the logical NOT.
///
/// # Example
///
/// ```
/// use tensorbits::{Tensor, ops::BitNot};
/// let x = Tensor::from_vec(vec![0u8, 128, 42, 255], &[2, 2])?;
/// assert_eq!(BitNot::run(&x)?.to_string(), "[[255, 127], [213, 0]]");
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_NOT",
    inputs = [input],
    compute = !input,
    dims = 0..=8,
    in_place = [input],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8],
        EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitNot;

/// Shifts each element of `a` left by the corresponding element of `b`. A count that is negative or
/// at least the bit width gives 0.
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_SHIFT_LEFT",
    inputs = [a, b],
    compute = a << b,
    dims = 0..=8,
    broadcast = [numpy, none, pdpd],
    in_place = [a, b],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [u64, u32, u16, u8],
        EXT = [i64, i32, i16, i8, u64, u32, u16, u8],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitShiftLeft;

/// Shifts each element of `a` right by the corresponding element of `b`: logical for unsigned types,
/// arithmetic for signed ones. A count that is negative or at least the bit width gives 0, or -1 for a
/// negative signed value.
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_SHIFT_RIGHT",
    inputs = [a, b],
    compute = a >> b,
    dims = 0..=8,
    broadcast = [numpy, none, pdpd],
    in_place = [a, b],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [u64, u32, u16, u8],
        EXT = [i64, i32, i16, i8, u64, u32, u16, u8],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitShiftRight;

/// Counts the set bits of each element's stored pattern (two's complement for signed types: `-1i8`
/// counts 8; numpy's `bitwise_count` counts the absolute value instead), writing `u8` or `u32`.
///
/// # Example
///
/// ```
/// use tensorbits::{Tensor, ops::BitCount};
/// let x = Tensor::from_vec(vec![0u32, 123, 456, 789], &[2, 2])?;
/// let counts: Tensor<u8> = BitCount::run(&x)?;
/// assert_eq!(counts.data(), &[0, 6, 4, 5]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "ELEMENT_WISE_BIT_COUNT",
    inputs = [input],
    compute = input.count_ones(),
    dims = 0..=8,
    output = [u8, u32],
    support(
        FL_3_0 = [u8, u16, u32],
        FL_4_1 = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8],
    ),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitCount;

/// ANDs the elements of `input` together over the reduced axes (all of them unless a call names
/// some): numpy's `np.bitwise_and.reduce`. An empty reduction gives all ones (`true` for `bool`).
///
/// # Example
///
/// ```
/// use tensorbits::{Options, Tensor, ops::BitAndReduce};
/// let x = Tensor::from_vec(vec![0b1110u8, 0b0111, 0b1111, 0b0110], &[2, 2])?;
/// assert_eq!(BitAndReduce::run(&x)?.data(), &[0b0110]);
/// let rows = BitAndReduce::run_with(&Options::new().axes([1]), &x)?;
/// assert_eq!(rows.data(), &[0b0110, 0b0110]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "BIT_AND_REDUCE",
    inputs = [input],
    compute = input,
    reduce = and,
    support(EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool]),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitAndReduce;

/// ORs the elements of `input` together over the reduced axes (all of them unless a call names
/// some): numpy's `np.bitwise_or.reduce`. An empty reduction gives 0.
#[bitwise_op(
    name = "BIT_OR_REDUCE",
    inputs = [input],
    compute = input,
    reduce = or,
    support(EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool]),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitOrReduce;

/// XORs the elements of `input` together over the reduced axes (all of them unless a call names
/// some): numpy's `np.bitwise_xor.reduce`. An empty reduction gives 0.
///
/// # Example
///
/// ```
/// use tensorbits::{Options, Tensor, ops::BitXorReduce};
/// let x = Tensor::from_vec(vec![1u8, 2, 4, 7, 7, 7], &[2, 3])?;
/// assert_eq!(BitXorReduce::run_with(&Options::new().axes([1]), &x)?.data(), &[7, 7]);
/// assert_eq!(BitXorReduce::run_with(&Options::new().axes([0]), &x)?.data(), &[6, 5, 3]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "BIT_XOR_REDUCE",
    inputs = [input],
    compute = input,
    reduce = xor,
    support(EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8, bool]),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitXorReduce;

/// Counts the set bits of `input` summed over the reduced axes (all of them unless a call names
/// some): the Hamming weight. Counts the stored pattern, as BIT_COUNT does.
#[bitwise_op(
    name = "BIT_COUNT_SUM",
    inputs = [input],
    compute = input.count_ones(),
    reduce = sum,
    output = [u32, u64, u16, u8],
    support(EXT = [f64, f32, f16, i64, i32, i16, i8, u64, u32, u16, u8]),
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BitCountSum;

/// Number of bits that differ between `a` and `b`, summed over the reduced axes (the last one
/// unless a call names others).
///
/// # Example
///
/// ```
/// use tensorbits::{Tensor, ops::HammingDistance};
/// let a = Tensor::from_vec(vec![0b1011u8, 0xff, 0, 1], &[2, 2])?;
/// let b = Tensor::from_vec(vec![0b0001u8, 0x0f, 0, 0], &[2, 2])?;
/// assert_eq!(HammingDistance::run(&a, &b)?.data(), &[6u32, 1]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "HAMMING_DISTANCE",
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = sum,
    axes = [-1],
    broadcast = [numpy, none],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]),
    output = [u32, u64, u16, u8],
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HammingDistance;

/// Hamming distance between every row of `a` and every row of `b`: `a [..., M, K]` and
/// `b [..., N, K]` give `[..., M, N]`, the leading dimensions broadcast numpy-style. Its `knn`
/// finds the nearest rows of `b` for each row of `a`. Signed codes count their stored bits, as
/// `HAMMING_DISTANCE` does (int8 codes are what sentence-transformers' `precision="binary"` gives).
///
/// # Example
///
/// ```
/// use tensorbits::{Tensor, ops::HammingCdist};
/// let a = Tensor::from_vec(vec![0u8, 255], &[2, 1])?;
/// let b = Tensor::from_vec(vec![15u8, 0, 255], &[3, 1])?;
/// assert_eq!(HammingCdist::run(&a, &b)?.data(), &[4u32, 0, 8, 4, 8, 0]);
/// let (dist, idx) = HammingCdist::knn(&a, &b, 2)?;
/// assert_eq!((dist.data(), idx.data()), (&[0u32, 4, 0, 4][..], &[1i64, 0, 2, 0][..]));
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "HAMMING_CDIST",
    inputs = [a, b],
    compute = (a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]),
    output = [u32, u64, u16],
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HammingCdist;

/// +1 for every bit that agrees, -1 for every bit that differs: the dot product of two ±1
/// vectors stored as bits, between every row of `a` and every row of `b` (`[..., M, K]` and
/// `[..., N, K]` give `[..., M, N]`). The product of a binary network's dense layer, and the
/// similarity of binary embeddings: its `knn` returns the largest first. With
/// [`Options::bits`](crate::Options::bits) only the first bits of each row count (`BITS` is then
/// that number), so codes made by `np.packbits` from any dimension give the exact dot product.
///
/// # Example
///
/// ```
/// use tensorbits::{Options, Tensor, ops::BinaryDot};
/// // Rows of 8 bits: 0b1111_0000 against itself agrees everywhere, against its complement nowhere.
/// let a = Tensor::from_vec(vec![0b1111_0000u8], &[1, 1])?;
/// let b = Tensor::from_vec(vec![0b1111_0000u8, 0b0000_1111, 0b1111_1111], &[3, 1])?;
/// assert_eq!(BinaryDot::run(&a, &b)?.data(), &[8i32, -8, 0]);
/// let (dot, idx) = BinaryDot::knn(&a, &b, 2)?;
/// assert_eq!((dot.data(), idx.data()), (&[8i32, 0][..], &[0i64, 2][..]));
/// // Only the first 6 bits count: 0b111100 against 0b111111 differs in 2 of them.
/// let six = BinaryDot::run_with(&Options::new().bits(6), &a, &b)?;
/// assert_eq!(six.data(), &[6i32, -6, 2]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "BINARY_DOT",
    inputs = [a, b],
    compute = BITS - 2 * (a ^ b).count_ones(),
    reduce = sum,
    pairwise,
    nearest = largest,
    support(EXT = [u8, u16, u32, u64]),
    output = [i32, i64, i16],
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BinaryDot;

/// Tanimoto (Jaccard) similarity of two fingerprints: the bits set in both over the bits set in
/// either, `|a & b| / |a | b|`, each result the exact fraction rounded once (0 / 0 is 0, as RDKit
/// gives for two empty fingerprints). knn returns the most similar first and ranks the exact
/// fractions; range search keeps the rows at least the threshold.
///
/// ```
/// use tensorbits::{Options, Tensor, ops::Tanimoto};
/// let a = Tensor::from_vec(vec![0b1111_0000u8], &[1, 1])?;
/// let b = Tensor::from_vec(vec![0b1111_0000u8, 0b1100_0000, 0b0011_1100, 0], &[4, 1])?;
/// assert_eq!(Tanimoto::run(&a, &b)?.data(), &[1.0f32, 0.5, 2.0 / 6.0, 0.0]);
/// let (s, idx) = Tanimoto::knn(&a, &b, 2)?;
/// assert_eq!((s.data(), idx.data()), (&[1.0f32, 0.5][..], &[0i64, 1][..]));
/// let hits = Tanimoto::range_search(&a, &b, 0.5)?;
/// assert_eq!(hits.row(0).1, &[0i64, 1][..]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "TANIMOTO",
    inputs = [a, b],
    compute = (a & b).count_ones() / (a | b).count_ones(),
    reduce = sum,
    pairwise,
    nearest = largest,
    support(EXT = [u8, u16, u32, u64]),
    output = [f32, f64],
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tanimoto;

/// Dice similarity of two fingerprints: twice the bits set in both over the bits set in each,
/// `2 |a & b| / (|a| + |b|)`, each result the exact fraction rounded once (0 / 0 is 0).
///
/// ```
/// use tensorbits::{Tensor, ops::Dice};
/// let a = Tensor::from_vec(vec![0b1111_0000u8], &[1, 1])?;
/// let b = Tensor::from_vec(vec![0b1100_0000u8, 0b0011_1100], &[2, 1])?;
/// assert_eq!(Dice::run(&a, &b)?.data(), &[4.0f32 / 6.0, 0.5]);
/// # Ok::<(), tensorbits::Error>(())
/// ```
#[bitwise_op(
    name = "DICE",
    inputs = [a, b],
    compute = 2 * (a & b).count_ones() / (a.count_ones() + b.count_ones()),
    reduce = sum,
    pairwise,
    support(EXT = [u8, u16, u32, u64]),
    output = [f32, f64],
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dice;

/// The standard ops: DirectML's seven, in its order, then the reductions.
pub const ALL: [&OpInfo; 16] = [
    <BitAnd as crate::Op>::INFO,
    <BitOr as crate::Op>::INFO,
    <BitXor as crate::Op>::INFO,
    <BitNot as crate::Op>::INFO,
    <BitShiftLeft as crate::Op>::INFO,
    <BitShiftRight as crate::Op>::INFO,
    <BitCount as crate::Op>::INFO,
    <BitAndReduce as crate::Op>::INFO,
    <BitOrReduce as crate::Op>::INFO,
    <BitXorReduce as crate::Op>::INFO,
    <BitCountSum as crate::Op>::INFO,
    <HammingDistance as crate::Op>::INFO,
    <HammingCdist as crate::Op>::INFO,
    <BinaryDot as crate::Op>::INFO,
    <Tanimoto as crate::Op>::INFO,
    <Dice as crate::Op>::INFO,
];

/// The names each standard op answers to, beside its DirectML name and struct name; the short name
/// first. The one list that [`find`], [`aliases`] and the command-line tool use.
const ALIASES: [&[&str]; 16] = [
    &["and", "BitwiseAnd", "bitwise_and", "LogicalAnd"],
    &["or", "BitwiseOr", "bitwise_or", "LogicalOr"],
    &["xor", "BitwiseXor", "bitwise_xor", "LogicalXor"],
    &[
        "not",
        "BitwiseNot",
        "bitwise_not",
        "invert",
        "bitwise_invert",
        "LogicalNot",
    ],
    &[
        "shl",
        "BitwiseLeftShift",
        "left_shift",
        "bitwise_left_shift",
    ],
    &[
        "shr",
        "BitwiseRightShift",
        "right_shift",
        "bitwise_right_shift",
    ],
    &["popcount", "bitwise_count", "BitCount", "popcnt"],
    &["and_reduce", "bitwise_and.reduce", "ReduceBitwiseAnd"],
    &["or_reduce", "bitwise_or.reduce", "ReduceBitwiseOr"],
    &["xor_reduce", "bitwise_xor.reduce", "ReduceBitwiseXor"],
    &["popcount_sum", "hamming_weight", "bitwise_count_sum"],
    &["hamming", "hamming_distance"],
    &["hamming_cdist", "cdist", "hammings"],
    &["binary_dot", "xnor_dot"],
    &["tanimoto", "jaccard"],
    &["dice"],
];

/// Uppercase, without a `DML_` prefix, an `_OPERATOR_DESC` suffix or underscores, so that
/// `DML_ELEMENT_WISE_BIT_XOR_OPERATOR_DESC`, `element_wise_bit_xor` and `BitwiseXor`-style names meet.
/// The bytes of a name as it is compared: without surrounding spaces, `DML_` and `_OPERATOR_DESC`,
/// or underscores, in upper case. Nothing is allocated: a lookup compares names as they stand.
fn normalized(name: &str) -> impl Iterator<Item = u8> + '_ {
    let name = name.trim();
    let strip_prefix = |s: &'static str, n: &str| {
        n.get(..s.len())
            .filter(|p| p.eq_ignore_ascii_case(s))
            .map_or(0, |_| s.len())
    };
    let start = strip_prefix("DML_", name);
    let name = &name[start..];
    const SUFFIX: &str = "_OPERATOR_DESC";
    let end = name
        .len()
        .checked_sub(SUFFIX.len())
        .filter(|&at| {
            name.get(at..)
                .is_some_and(|t| t.eq_ignore_ascii_case(SUFFIX))
        })
        .unwrap_or(name.len());
    name.as_bytes()[..end]
        .iter()
        .filter(|&&c| c != b'_')
        .map(u8::to_ascii_uppercase)
}

fn same_name(a: &str, b: &str) -> bool {
    a == b || normalized(a).eq(normalized(b))
}

/// Finds a standard op by any of its names, case-insensitively: short (`xor`), DirectML
/// (`ELEMENT_WISE_BIT_XOR`, also with `DML_` and `_OPERATOR_DESC`), struct (`BitXor`), ONNX
/// (`BitwiseXor`), OpenVINO (`BitwiseLeftShift`) or numpy (`bitwise_xor`, `invert`, `bitwise_count`).
/// ONNX's `BitShift` needs a direction; see [`find_with_direction`].
pub fn find(name: &str) -> Option<&'static OpInfo> {
    ALL.iter().zip(ALIASES).find_map(|(op, aliases)| {
        let hit = same_name(op.name(), name)
            || same_name(op.type_name(), name)
            || aliases.iter().any(|a| same_name(a, name));
        hit.then_some(*op)
    })
}

/// The other names a standard op answers to (short, ONNX, OpenVINO, numpy), the short name first;
/// empty for an op that is not one of [`ALL`].
pub fn aliases(op: &OpInfo) -> &'static [&'static str] {
    ALL.iter()
        .zip(ALIASES)
        .find_map(|(o, a)| (o.name() == op.name()).then_some(a))
        .unwrap_or(&[])
}

/// Like [`find`], and also resolves ONNX's `BitShift` with `direction` `left` or `right`.
pub fn find_with_direction(name: &str, direction: Option<&str>) -> Option<&'static OpInfo> {
    if same_name(name, "BITSHIFT") {
        return match direction.map(|d| d.trim().to_ascii_lowercase()).as_deref() {
            Some("left") => Some(<BitShiftLeft as crate::Op>::INFO),
            Some("right") => Some(<BitShiftRight as crate::Op>::INFO),
            _ => None,
        };
    }
    find(name)
}

/// [`find`], or an [`Error::UnknownOp`](crate::Error::UnknownOp) listing the short names.
pub fn lookup(name: &str) -> crate::Result<&'static OpInfo> {
    find(name).ok_or_else(|| crate::Error::UnknownOp {
        name: name.to_owned(),
        known: ALIASES.iter().map(|a| a[0]).collect::<Vec<_>>().join(", "),
    })
}
