//! What `tensorbits-macros` (at compile time) and `tensorbits-runtime` (at run time) share: data
//! types, feature levels, broadcast modes, the "Tensor support" tables rendered in the DirectML pages'
//! layout, and the WGSL templates and per-width helper functions ([`wgsl`]) that every generated GPU
//! kernel is built from. Keeping it in one dependency-free crate means the rustdoc the macro writes,
//! the tables the command-line tool prints and the shaders the runtime binds come from the same code
//! and cannot drift apart.

#![forbid(unsafe_code)]

use std::fmt;

mod table;

pub use table::{SupportTable, tensor_name};

/// The twelve element data types, in the order DirectML's pages list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataType {
    /// 64-bit IEEE float (`f64`), `FLOAT64`.
    F64,
    /// 32-bit IEEE float (`f32`), `FLOAT32`.
    F32,
    /// 16-bit IEEE float (`half::f16`), `FLOAT16`.
    F16,
    /// `i64`, `INT64`.
    I64,
    /// `i32`, `INT32`.
    I32,
    /// `i16`, `INT16`.
    I16,
    /// `i8`, `INT8`.
    I8,
    /// `u64`, `UINT64`.
    U64,
    /// `u32`, `UINT32`.
    U32,
    /// `u16`, `UINT16`.
    U16,
    /// `u8`, `UINT8`.
    U8,
    /// `bool`, stored as one byte; any non-zero byte reads as true.
    Bool,
}

impl DataType {
    /// All twelve, in DirectML's listing order.
    pub const ALL: [DataType; 12] = [
        DataType::F64,
        DataType::F32,
        DataType::F16,
        DataType::I64,
        DataType::I32,
        DataType::I16,
        DataType::I8,
        DataType::U64,
        DataType::U32,
        DataType::U16,
        DataType::U8,
        DataType::Bool,
    ];

    /// The Rust spelling used in specs: `u8`, `f16`, `bool`, ...
    pub const fn name(self) -> &'static str {
        match self {
            DataType::F64 => "f64",
            DataType::F32 => "f32",
            DataType::F16 => "f16",
            DataType::I64 => "i64",
            DataType::I32 => "i32",
            DataType::I16 => "i16",
            DataType::I8 => "i8",
            DataType::U64 => "u64",
            DataType::U32 => "u32",
            DataType::U16 => "u16",
            DataType::U8 => "u8",
            DataType::Bool => "bool",
        }
    }

    /// The DirectML spelling: `UINT8`, `FLOAT16`, ... (`BOOL` for the extension type).
    pub const fn dml_name(self) -> &'static str {
        match self {
            DataType::F64 => "FLOAT64",
            DataType::F32 => "FLOAT32",
            DataType::F16 => "FLOAT16",
            DataType::I64 => "INT64",
            DataType::I32 => "INT32",
            DataType::I16 => "INT16",
            DataType::I8 => "INT8",
            DataType::U64 => "UINT64",
            DataType::U32 => "UINT32",
            DataType::U16 => "UINT16",
            DataType::U8 => "UINT8",
            DataType::Bool => "BOOL",
        }
    }

    /// numpy's name: `uint8`, `float16`, `bool`, ...
    pub const fn numpy_name(self) -> &'static str {
        match self {
            DataType::F64 => "float64",
            DataType::F32 => "float32",
            DataType::F16 => "float16",
            DataType::I64 => "int64",
            DataType::I32 => "int32",
            DataType::I16 => "int16",
            DataType::I8 => "int8",
            DataType::U64 => "uint64",
            DataType::U32 => "uint32",
            DataType::U16 => "uint16",
            DataType::U8 => "uint8",
            DataType::Bool => "bool",
        }
    }

    /// numpy's kind character (`dtype.kind`): `b`, `i`, `u` or `f`. With [`size`](Self::size) it
    /// makes the type string of `.npy` headers and the array interface (`<u2`).
    pub const fn numpy_kind(self) -> char {
        match self {
            DataType::Bool => 'b',
            DataType::I8 | DataType::I16 | DataType::I32 | DataType::I64 => 'i',
            DataType::U8 | DataType::U16 | DataType::U32 | DataType::U64 => 'u',
            DataType::F16 | DataType::F32 | DataType::F64 => 'f',
        }
    }

    /// The type of numpy's kind character and item size (`('u', 2)` is `U16`), if the library has
    /// it.
    pub fn from_numpy_kind(kind: char, size: usize) -> Option<DataType> {
        DataType::ALL
            .into_iter()
            .find(|t| t.numpy_kind() == kind && t.size() == size)
    }

    /// Every type's numpy name in numpy's order (`bool, int8, ..., uint64, float16, ...`),
    /// separated by `sep`: the list Python's and the command line's errors print.
    pub fn all_numpy_names(sep: &str) -> String {
        let mut all = DataType::ALL;
        all.sort_by_key(|t| ("biuf".find(t.numpy_kind()), t.size()));
        let names: Vec<&str> = all.iter().map(|t| t.numpy_name()).collect();
        names.join(sep)
    }

    /// Every type's Rust spelling, in [`ALL`](Self::ALL)'s order, separated by `sep`: the list error
    /// messages print.
    pub fn all_names(sep: &str) -> String {
        let names: Vec<&str> = DataType::ALL.iter().map(|t| t.name()).collect();
        names.join(sep)
    }

    /// Parses the Rust spelling (`u8`), the DirectML one (`UINT8`) or numpy's (`uint8`),
    /// case-insensitively.
    pub fn from_name(name: &str) -> Option<DataType> {
        DataType::ALL.into_iter().find(|t| {
            t.name().eq_ignore_ascii_case(name)
                || t.dml_name().eq_ignore_ascii_case(name)
                || t.numpy_name().eq_ignore_ascii_case(name)
        })
    }

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DataType::F64 | DataType::I64 | DataType::U64 => 8,
            DataType::F32 | DataType::I32 | DataType::U32 => 4,
            DataType::F16 | DataType::I16 | DataType::U16 => 2,
            DataType::I8 | DataType::U8 | DataType::Bool => 1,
        }
    }

    /// Bits per element as the ops see them (8 for `bool`'s byte).
    pub const fn bits(self) -> u32 {
        self.size() as u32 * 8
    }

    /// `f16`, `f32` or `f64`.
    pub const fn is_float(self) -> bool {
        matches!(self, DataType::F64 | DataType::F32 | DataType::F16)
    }

    /// `i8` to `i64`.
    pub const fn is_signed(self) -> bool {
        matches!(
            self,
            DataType::I64 | DataType::I32 | DataType::I16 | DataType::I8
        )
    }

    /// `u8` to `u64` and `i8` to `i64`.
    pub const fn is_integer(self) -> bool {
        !self.is_float() && !matches!(self, DataType::Bool)
    }

    /// The smallest and largest value of this integer type (an unsigned one's from 0; others as
    /// the unsigned integer of their width).
    pub const fn value_range(self) -> (i128, i128) {
        let max = self.max_bits_value() as i128;
        if self.is_signed() {
            (-(max >> 1) - 1, max >> 1)
        } else {
            (0, max)
        }
    }

    /// The largest value of the unsigned integer of this width (`bool`: 1).
    pub const fn max_bits_value(self) -> u64 {
        match self {
            DataType::Bool => 1,
            _ => u64::MAX >> (64 - self.bits()),
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// DirectML's ordered feature levels plus `EXT`, this project's own top level (everything in 6_4 plus
/// the extensions: `bool`, signed shifts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(
    non_camel_case_types,
    reason = "the names mirror DML_FEATURE_LEVEL_x_y"
)]
pub enum FeatureLevel {
    /// `DML_FEATURE_LEVEL_1_0`
    FL_1_0,
    /// `DML_FEATURE_LEVEL_2_0`
    FL_2_0,
    /// `DML_FEATURE_LEVEL_2_1`
    FL_2_1,
    /// `DML_FEATURE_LEVEL_3_0`
    FL_3_0,
    /// `DML_FEATURE_LEVEL_3_1`
    FL_3_1,
    /// `DML_FEATURE_LEVEL_4_0`
    FL_4_0,
    /// `DML_FEATURE_LEVEL_4_1`
    FL_4_1,
    /// `DML_FEATURE_LEVEL_5_0`
    FL_5_0,
    /// `DML_FEATURE_LEVEL_5_1`
    FL_5_1,
    /// `DML_FEATURE_LEVEL_5_2`
    FL_5_2,
    /// `DML_FEATURE_LEVEL_5_3`
    FL_5_3,
    /// `DML_FEATURE_LEVEL_6_0`
    FL_6_0,
    /// `DML_FEATURE_LEVEL_6_1`
    FL_6_1,
    /// `DML_FEATURE_LEVEL_6_2`
    FL_6_2,
    /// `DML_FEATURE_LEVEL_6_3`
    FL_6_3,
    /// `DML_FEATURE_LEVEL_6_4`
    FL_6_4,
    /// tensorbits' extension level: everything in 6_4 plus `bool` and signed shifts.
    EXT,
}

impl FeatureLevel {
    /// Every level, lowest first.
    pub const ALL: [FeatureLevel; 17] = [
        FeatureLevel::FL_1_0,
        FeatureLevel::FL_2_0,
        FeatureLevel::FL_2_1,
        FeatureLevel::FL_3_0,
        FeatureLevel::FL_3_1,
        FeatureLevel::FL_4_0,
        FeatureLevel::FL_4_1,
        FeatureLevel::FL_5_0,
        FeatureLevel::FL_5_1,
        FeatureLevel::FL_5_2,
        FeatureLevel::FL_5_3,
        FeatureLevel::FL_6_0,
        FeatureLevel::FL_6_1,
        FeatureLevel::FL_6_2,
        FeatureLevel::FL_6_3,
        FeatureLevel::FL_6_4,
        FeatureLevel::EXT,
    ];

    /// The spelling used in specs and type names: `FL_3_0`, `EXT`.
    pub const fn name(self) -> &'static str {
        match self {
            FeatureLevel::FL_1_0 => "FL_1_0",
            FeatureLevel::FL_2_0 => "FL_2_0",
            FeatureLevel::FL_2_1 => "FL_2_1",
            FeatureLevel::FL_3_0 => "FL_3_0",
            FeatureLevel::FL_3_1 => "FL_3_1",
            FeatureLevel::FL_4_0 => "FL_4_0",
            FeatureLevel::FL_4_1 => "FL_4_1",
            FeatureLevel::FL_5_0 => "FL_5_0",
            FeatureLevel::FL_5_1 => "FL_5_1",
            FeatureLevel::FL_5_2 => "FL_5_2",
            FeatureLevel::FL_5_3 => "FL_5_3",
            FeatureLevel::FL_6_0 => "FL_6_0",
            FeatureLevel::FL_6_1 => "FL_6_1",
            FeatureLevel::FL_6_2 => "FL_6_2",
            FeatureLevel::FL_6_3 => "FL_6_3",
            FeatureLevel::FL_6_4 => "FL_6_4",
            FeatureLevel::EXT => "EXT",
        }
    }

    /// The heading DirectML's pages use: `DML_FEATURE_LEVEL_3_0`; `EXT` for the extension level.
    pub fn dml_name(self) -> String {
        match self {
            FeatureLevel::EXT => "EXT (tensorbits extensions)".to_owned(),
            _ => format!("DML_FEATURE_LEVEL_{}", &self.name()[3..]),
        }
    }

    /// The spelling without the `FL_` prefix, as the command line takes it: `3_0`, `ext`.
    pub fn short_name(self) -> &'static str {
        match self {
            FeatureLevel::EXT => "ext",
            other => &other.name()[3..],
        }
    }

    /// Every level's spelling (`FL_3_0`, or with `short` `3_0`), lowest first, separated by `sep`:
    /// the list error messages print.
    pub fn all_names(short: bool, sep: &str) -> String {
        let names: Vec<&str> = FeatureLevel::ALL
            .iter()
            .map(|l| if short { l.short_name() } else { l.name() })
            .collect();
        names.join(sep)
    }

    /// Parses `3_0`, `FL_3_0`, `DML_FEATURE_LEVEL_3_0`, `3.0` or `ext`, case-insensitively. An empty
    /// or partial name (`""`, `FL_`, `DML_FEATURE_LEVEL_`) is not a level.
    pub fn parse(text: &str) -> Option<FeatureLevel> {
        let upper = text.trim().to_ascii_uppercase().replace('.', "_");
        if upper == "EXT" {
            return Some(FeatureLevel::EXT);
        }
        let short = upper
            .strip_prefix("DML_FEATURE_LEVEL_")
            .or_else(|| upper.strip_prefix("FL_"))
            .unwrap_or(&upper);
        FeatureLevel::ALL
            .into_iter()
            .filter(|l| *l != FeatureLevel::EXT)
            .find(|l| l.short_name() == short)
    }
}

impl fmt::Display for FeatureLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How inputs of different shapes are combined (OpenVINO's `auto_broadcast`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BroadcastMode {
    /// Shapes must be equal.
    None,
    /// Right-aligned; a size-1 dimension stretches; rank 0 allowed.
    Numpy,
    /// One-way, PaddlePaddle style: later inputs onto the first from an axis.
    Pdpd,
}

impl BroadcastMode {
    /// All modes.
    pub const ALL: [BroadcastMode; 3] = [
        BroadcastMode::None,
        BroadcastMode::Numpy,
        BroadcastMode::Pdpd,
    ];

    /// The spec spelling: `none`, `numpy`, `pdpd`.
    pub const fn name(self) -> &'static str {
        match self {
            BroadcastMode::None => "none",
            BroadcastMode::Numpy => "numpy",
            BroadcastMode::Pdpd => "pdpd",
        }
    }

    /// Parses the spec spelling, case-insensitively.
    pub fn parse(text: &str) -> Option<BroadcastMode> {
        BroadcastMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(text.trim()))
    }
}

impl fmt::Display for BroadcastMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a reduction combines the element-wise results: added (bit counts), or combined bit by bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum of bit counts (`compute` ends in `count_ones()`).
    Sum,
    /// Bitwise AND; the empty reduction is all ones.
    And,
    /// Bitwise OR; the empty reduction is 0.
    Or,
    /// Bitwise XOR; the empty reduction is 0.
    Xor,
}

impl ReduceOp {
    /// All reductions.
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::And, ReduceOp::Or, ReduceOp::Xor];

    /// The spec spelling: `sum`, `and`, `or`, `xor`.
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::And => "and",
            ReduceOp::Or => "or",
            ReduceOp::Xor => "xor",
        }
    }

    /// Parses the spec spelling.
    pub fn parse(text: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|r| r.name() == text)
    }

    /// The identity for elements of `bits` bits (1 for `bool`'s byte): all ones for AND, else 0.
    pub const fn identity(self, bits: u32) -> u64 {
        match self {
            ReduceOp::And if bits >= 64 => u64::MAX,
            ReduceOp::And => (1u64 << bits) - 1,
            _ => 0,
        }
    }

    /// Combines an accumulator with one value.
    #[inline(always)]
    pub const fn combine(self, acc: u64, v: u64) -> u64 {
        match self {
            ReduceOp::Sum => acc.wrapping_add(v),
            ReduceOp::And => acc & v,
            ReduceOp::Or => acc | v,
            ReduceOp::Xor => acc ^ v,
        }
    }
}

impl fmt::Display for ReduceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An affine `compute` of a sum: each element contributes `constant + bits * BITS + scale *
/// count`, where `count` is the bit count of its expression and `BITS` its number of valid bits
/// (its width, or fewer when a call sets `bits`). `BITS - 2 * (a ^ b).count_ones()` is
/// `{ constant: 0, bits: 1, scale: -2 }`; a plain count is [`Affine::COUNT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Affine {
    /// The integer literal added per element.
    pub constant: i64,
    /// The multiple of `BITS` added per element.
    pub bits: i64,
    /// The multiplier of the element's bit count.
    pub scale: i64,
}

impl Affine {
    /// A plain bit count: `x.count_ones()`.
    pub const COUNT: Affine = Affine {
        constant: 0,
        bits: 0,
        scale: 1,
    };

    /// Whether this is a plain bit count.
    pub const fn is_count(&self) -> bool {
        self.constant == 0 && self.bits == 0 && self.scale == 1
    }

    /// The part of a result that does not depend on the counts: over `elements` elements holding
    /// `bits` valid bits in all, `constant * elements + self.bits * bits`.
    pub const fn offset(&self, elements: u64, bits: u64) -> i128 {
        self.constant as i128 * elements as i128 + self.bits as i128 * bits as i128
    }

    /// The smallest and largest result over `elements` elements holding `bits` valid bits in all,
    /// whose counts add up to anything from 0 to `bits`.
    pub const fn range(&self, elements: u64, bits: u64) -> (i128, i128) {
        let base = self.offset(elements, bits);
        let span = self.scale as i128 * bits as i128;
        if span < 0 {
            (base + span, base)
        } else {
            (base, base + span)
        }
    }

    /// Whether some result can be negative, for some number of elements and valid bits.
    pub const fn can_be_negative(&self) -> bool {
        self.constant < 0 || self.bits < 0 || self.bits + self.scale < 0
    }
}

/// One side of a ratio op's `compute` (section 13 of the design), summed over a row: `constant`
/// per element, `bits` per valid bit (`W`), and multiples of the row's counts `|a|`, `|b|` and
/// `|a & b|`. Every count of a function of two bits is such a sum: over the `W` valid bits,
/// `f(a, b).count_ones()` is `f(0,0) W + (f(1,0) - f(0,0)) |a| + (f(0,1) - f(0,0)) |b| +
/// (f(1,1) - f(1,0) - f(0,1) + f(0,0)) |a & b|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// The multiple of the row's elements.
    pub constant: i64,
    /// The multiple of the row's valid bits.
    pub bits: i64,
    /// The multiple of `|a|`.
    pub a: i64,
    /// The multiple of `|b|`.
    pub b: i64,
    /// The multiple of `|a & b|`.
    pub both: i64,
}

impl Counts {
    /// `scale` times the count of the function whose truth table is `table` (bit `2 * x + y` its
    /// value on a bit `x` of `a` and `y` of `b`).
    pub const fn of_table(table: u8, scale: i64) -> Counts {
        let (f00, f01) = ((table & 1) as i64, ((table >> 1) & 1) as i64);
        let (f10, f11) = (((table >> 2) & 1) as i64, ((table >> 3) & 1) as i64);
        Counts {
            constant: 0,
            bits: scale * f00,
            a: scale * (f10 - f00),
            b: scale * (f01 - f00),
            both: scale * (f11 - f10 - f01 + f00),
        }
    }

    /// The sum of two sides' terms.
    pub const fn plus(self, o: Counts) -> Counts {
        Counts {
            constant: self.constant + o.constant,
            bits: self.bits + o.bits,
            a: self.a + o.a,
            b: self.b + o.b,
            both: self.both + o.both,
        }
    }

    /// The value over a row of `elements` elements and `w` valid bits, with counts `a`, `b` and
    /// `both`.
    #[inline(always)]
    pub const fn at(&self, elements: u64, w: u64, a: u64, b: u64, both: u64) -> i128 {
        self.constant as i128 * elements as i128
            + self.bits as i128 * w as i128
            + self.a as i128 * a as i128
            + self.b as i128 * b as i128
            + self.both as i128 * both as i128
    }

    /// The largest magnitude of the value over every row of `elements` elements and `w` valid
    /// bits: the value is linear in how many bits are one in `a` alone, in `b` alone and in both,
    /// so its extremes are where all the bits are of one kind.
    pub const fn max_abs(&self, elements: u64, w: u64) -> u128 {
        let corners = [(0, 0, 0), (w, 0, 0), (0, w, 0), (w, w, w)];
        let mut max = 0u128;
        let mut c = 0;
        while c < corners.len() {
            let (a, b, both) = corners[c];
            let v = self.at(elements, w, a, b, both).unsigned_abs();
            if v > max {
                max = v;
            }
            c += 1;
        }
        max
    }
}

/// A ratio op's `compute`, `num / den`: Tanimoto is `|a & b| / |a | b|`, that is
/// `{ both: 1 } / { a: 1, b: 1, both: -1 }`. Results are the exact rational, rounded once to the
/// output type; `0 / 0` is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ratio {
    /// The numerator.
    pub num: Counts,
    /// The denominator.
    pub den: Counts,
}

/// Which values knn returns first: the smallest (distances) or the largest (similarities, such as
/// agreement counts and dot products).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Nearest {
    /// Ascending values: distances.
    #[default]
    Smallest,
    /// Descending values: similarities.
    Largest,
}

impl Nearest {
    /// The spec spelling: `smallest`, `largest`.
    pub const fn name(self) -> &'static str {
        match self {
            Nearest::Smallest => "smallest",
            Nearest::Largest => "largest",
        }
    }

    /// Parses the spec spelling.
    pub fn parse(text: &str) -> Option<Nearest> {
        [Nearest::Smallest, Nearest::Largest]
            .into_iter()
            .find(|n| n.name() == text)
    }
}

/// The order of the bits of a packed code's bytes: numpy's `packbits` `bitorder`. Bit `i` of a row
/// is bit `7 - i % 8` of byte `i / 8` (`Big`, numpy's default) or bit `i % 8` (`Little`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BitOrder {
    /// The first bit is the most significant of its byte (numpy's default).
    #[default]
    Big,
    /// The first bit is the least significant of its byte.
    Little,
}

impl BitOrder {
    /// numpy's spelling: `big`, `little`.
    pub const fn name(self) -> &'static str {
        match self {
            BitOrder::Big => "big",
            BitOrder::Little => "little",
        }
    }

    /// Parses numpy's spelling, case-insensitively.
    pub fn parse(text: &str) -> Option<BitOrder> {
        [BitOrder::Big, BitOrder::Little]
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(text.trim()))
    }

    /// The mask, within byte `i / 8`, of bit `i` of a row.
    pub const fn mask(self, i: usize) -> u8 {
        match self {
            BitOrder::Big => 0x80 >> (i % 8),
            BitOrder::Little => 1 << (i % 8),
        }
    }
}

/// The highest ranks any tensor may have (DirectML's limit).
pub const MAX_RANK: usize = 8;

/// Most inputs an op may declare.
pub const MAX_INPUTS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in DataType::ALL {
            assert_eq!(DataType::from_name(t.name()), Some(t));
            assert_eq!(DataType::from_name(t.dml_name()), Some(t));
            assert_eq!(DataType::from_name(t.numpy_name()), Some(t));
            assert_eq!(DataType::from_numpy_kind(t.numpy_kind(), t.size()), Some(t));
        }
        assert_eq!(
            DataType::all_numpy_names(" "),
            "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64"
        );
        assert_eq!(DataType::from_numpy_kind('c', 8), None);
        for l in FeatureLevel::ALL {
            assert_eq!(FeatureLevel::parse(l.name()), Some(l));
        }
        assert_eq!(FeatureLevel::parse("4_1"), Some(FeatureLevel::FL_4_1));
        assert_eq!(
            FeatureLevel::parse("dml_feature_level_6_4"),
            Some(FeatureLevel::FL_6_4)
        );
        assert_eq!(FeatureLevel::parse("ext"), Some(FeatureLevel::EXT));
        assert_eq!(FeatureLevel::parse("4_2"), None);
        for partial in [
            "",
            " ",
            "FL_",
            "fl_",
            "DML_FEATURE_LEVEL_",
            "EX",
            "FL_EXT",
            "_",
        ] {
            assert_eq!(FeatureLevel::parse(partial), None, "{partial:?}");
        }
        assert!(FeatureLevel::all_names(true, ", ").starts_with("1_0, 2_0"));
        assert!(FeatureLevel::all_names(false, ", ").ends_with("FL_6_4, EXT"));
        assert!(DataType::all_names(" ").ends_with("u8 bool"));
        assert_eq!(DataType::from_name("c8"), None);
    }

    #[test]
    fn widths() {
        assert_eq!(DataType::U8.max_bits_value(), 0xff);
        assert_eq!(DataType::F16.max_bits_value(), 0xffff);
        assert_eq!(DataType::I64.max_bits_value(), u64::MAX);
        assert_eq!(DataType::Bool.max_bits_value(), 1);
    }
}
pub mod wgsl;
