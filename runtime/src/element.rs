//! Element types of typed tensors, and the word types the CPU kernels compute on.
//!
//! Kernels act on each element's stored bits: floats are computed on as the unsigned integer of their
//! width, so NaN payloads and -0.0 pass through untouched, and `bool` is a byte normalised to 0 or 1.

use crate::DataType;
use half::f16;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that can be a tensor element: `u8 u16 u32 u64 i8 i16 i32 i64 f16 f32 f64 bool`.
pub trait Element:
    sealed::Sealed
    + bytemuck::NoUninit
    + bytemuck::Zeroable
    + Copy
    + Send
    + Sync
    + std::fmt::Debug
    + PartialEq
    + 'static
{
    /// The runtime tag of this type.
    const DATA_TYPE: DataType;
    /// The all-zero value.
    const ZERO: Self;
    /// The word CPU kernels compute on: the type itself for integers, the unsigned integer of the
    /// width for floats, a byte for `bool`. Used by generated code.
    #[doc(hidden)]
    type Word: Word;
    /// The elements as kernel words (same size and alignment, so the view is free).
    #[doc(hidden)]
    fn as_words(data: &[Self]) -> &[Self::Word];
    /// Runs `f` on `data` as kernel words; for `bool` through a scratch buffer, as
    /// [`with_bytes_mut`](Self::with_bytes_mut).
    #[doc(hidden)]
    fn with_words_mut<R>(data: &mut [Self], f: impl FnOnce(&mut [Self::Word]) -> R) -> R;
    /// Kernel words back to elements, in the same allocation where the layouts match (every type
    /// but `bool`, whose words are normalised to 0 or 1 here).
    #[doc(hidden)]
    fn from_words(words: Vec<Self::Word>) -> Vec<Self>;
    /// Runs `f` on the bytes of `data`, writing what `f` writes back into `data`. For `bool` the bytes
    /// pass through a scratch buffer, since a `bool` may hold only 0 or 1.
    #[doc(hidden)]
    fn with_bytes_mut<R>(data: &mut [Self], f: impl FnOnce(&mut [u8]) -> R) -> R;
}

macro_rules! pod_element {
    ($($t:ty => $d:ident, $z:expr, $w:ty;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DATA_TYPE: DataType = DataType::$d;
            const ZERO: Self = $z;
            type Word = $w;
            #[inline(always)]
            fn as_words(data: &[Self]) -> &[$w] {
                // Same size and alignment: the cast cannot fail.
                bytemuck::cast_slice(data)
            }
            #[inline(always)]
            fn with_words_mut<R>(data: &mut [Self], f: impl FnOnce(&mut [$w]) -> R) -> R {
                f(bytemuck::cast_slice_mut(data))
            }
            #[inline(always)]
            fn from_words(words: Vec<$w>) -> Vec<Self> {
                // Same size and alignment: the allocation is reused and the cast cannot fail.
                bytemuck::allocation::cast_vec(words)
            }
            #[inline(always)]
            fn with_bytes_mut<R>(data: &mut [Self], f: impl FnOnce(&mut [u8]) -> R) -> R {
                f(bytemuck::cast_slice_mut(data))
            }
        }
    )*};
}

pod_element! {
    u8 => U8, 0, u8; u16 => U16, 0, u16; u32 => U32, 0, u32; u64 => U64, 0, u64;
    i8 => I8, 0, i8; i16 => I16, 0, i16; i32 => I32, 0, i32; i64 => I64, 0, i64;
    f16 => F16, f16::ZERO, u16; f32 => F32, 0.0, u32; f64 => F64, 0.0, u64;
}

impl sealed::Sealed for bool {}
impl Element for bool {
    const DATA_TYPE: DataType = DataType::Bool;
    const ZERO: Self = false;
    type Word = Bool8;
    fn as_words(data: &[Self]) -> &[Bool8] {
        bytemuck::cast_slice(data)
    }
    fn with_words_mut<R>(data: &mut [Self], f: impl FnOnce(&mut [Bool8]) -> R) -> R {
        Self::with_bytes_mut(data, |b| f(bytemuck::cast_slice_mut(b)))
    }
    fn from_words(words: Vec<Bool8>) -> Vec<Self> {
        words.into_iter().map(|w| w.0 != 0).collect()
    }
    fn with_bytes_mut<R>(data: &mut [Self], f: impl FnOnce(&mut [u8]) -> R) -> R {
        let mut bytes: Vec<u8> = data.iter().map(|&b| b as u8).collect();
        let r = f(&mut bytes);
        for (d, b) in data.iter_mut().zip(bytes) {
            *d = b != 0;
        }
        r
    }
}

/// The bit operations every kernel word supports. Generated kernels call these, never Rust's operators
/// directly, so the semantics of shifts and `bool` live in one place.
pub trait Word: bytemuck::Pod + Send + Sync + 'static {
    /// Reads a stored element: identity, except `bool` bytes become 0 or 1.
    fn load(self) -> Self;
    /// Bitwise NOT (logical NOT for `bool`).
    fn not(self) -> Self;
    /// AND.
    fn and(self, rhs: Self) -> Self;
    /// OR.
    fn or(self, rhs: Self) -> Self;
    /// XOR.
    fn xor(self, rhs: Self) -> Self;
    /// A literal from the spec, as a bit pattern truncated to the width (the macro checks it fits).
    fn lit(v: u64) -> Self;
    /// The bit pattern, zero-extended: what a bitwise reduction accumulates.
    fn bits(self) -> u64;
}

/// Bitwise operations on whole 64-bit words or vectors of them: what the wide path of a pairwise
/// sum evaluates an op's expression on (see [`WideExpr`]).
#[doc(hidden)]
pub trait Lanes: Copy {
    /// NOT.
    fn not(self) -> Self;
    /// AND.
    fn and(self, rhs: Self) -> Self;
    /// OR.
    fn or(self, rhs: Self) -> Self;
    /// XOR.
    fn xor(self, rhs: Self) -> Self;
}

impl Lanes for u64 {
    #[inline(always)]
    fn not(self) -> Self {
        !self
    }
    #[inline(always)]
    fn and(self, r: Self) -> Self {
        self & r
    }
    #[inline(always)]
    fn or(self, r: Self) -> Self {
        self | r
    }
    #[inline(always)]
    fn xor(self, r: Self) -> Self {
        self ^ r
    }
}

/// The expression under the `count_ones()` of a pairwise sum that is the same at every width (only
/// `&`, `|`, `^`, `!` of the inputs), for any [`Lanes`]: its count over whole words is the sum of
/// its counts over the elements in them. `#[bitwise_op]` implements it for such ops.
#[doc(hidden)]
pub trait WideExpr {
    /// The expression of `x[0]` (a word of `a`) and `x[1]` (the same word of `b`).
    fn wide<L: Lanes>(x: [L; 2]) -> L;
}

/// The [`WideExpr`] of ops without a wide path: never evaluated.
#[doc(hidden)]
pub struct NoWide;

impl WideExpr for NoWide {
    #[inline(always)]
    fn wide<L: Lanes>(x: [L; 2]) -> L {
        x[0]
    }
}

/// Shifts and bit counts, for integer words (floats use the unsigned word of their width).
pub trait IntWord: Word {
    /// `x << y`: 0 when `y` is negative or at least the width.
    fn shl(self, count: Self) -> Self;
    /// `x >> y`: logical for unsigned, arithmetic for signed; out-of-range counts give 0, or -1 for a
    /// negative signed value.
    fn shr(self, count: Self) -> Self;
    /// `x.wrapping_shl(y)`: count taken modulo the width, as DirectML hardware does.
    fn wrapping_shl(self, count: Self) -> Self;
    /// `x.wrapping_shr(y)`: count taken modulo the width.
    fn wrapping_shr(self, count: Self) -> Self;
    /// Number of set bits of the stored pattern (two's complement for signed).
    fn count_ones(self) -> u32;
}

/// Output types of a bit count.
pub trait CountOutput: bytemuck::Pod + Send + Sync + 'static {
    /// Converts a count (at most 64, so it always fits).
    fn from_count(c: u32) -> Self;
}

macro_rules! int_word {
    ($($t:ty, $u:ty;)*) => {$(
        impl Word for $t {
            #[inline(always)] fn load(self) -> Self { self }
            #[inline(always)] fn not(self) -> Self { !self }
            #[inline(always)] fn and(self, r: Self) -> Self { self & r }
            #[inline(always)] fn or(self, r: Self) -> Self { self | r }
            #[inline(always)] fn xor(self, r: Self) -> Self { self ^ r }
            #[inline(always)] fn lit(v: u64) -> Self { v as $t }
            #[inline(always)] fn bits(self) -> u64 { self as $u as u64 }
        }
        impl IntWord for $t {
            #[inline(always)]
            fn shl(self, count: Self) -> Self {
                // Reading the count as unsigned makes negative counts huge, so one compare covers both.
                let c = count as $u;
                if c < <$t>::BITS as $u { self << c } else { 0 }
            }
            #[inline(always)]
            fn shr(self, count: Self) -> Self {
                let c = count as $u;
                if c < <$t>::BITS as $u {
                    self >> c
                } else if <$t>::MIN != 0 {
                    // Signed: an arithmetic shift by width-1 gives -1 for negative values, 0 otherwise.
                    self >> (<$t>::BITS - 1)
                } else {
                    0
                }
            }
            #[inline(always)]
            fn wrapping_shl(self, count: Self) -> Self { <$t>::wrapping_shl(self, count as u32) }
            #[inline(always)]
            fn wrapping_shr(self, count: Self) -> Self { <$t>::wrapping_shr(self, count as u32) }
            #[inline(always)]
            fn count_ones(self) -> u32 { <$t>::count_ones(self) }
        }
        impl CountOutput for $t {
            #[inline(always)] fn from_count(c: u32) -> Self { c as $t }
        }
    )*};
}

int_word! {
    u8, u8; u16, u16; u32, u32; u64, u64;
    i8, u8; i16, u16; i32, u32; i64, u64;
}

/// The kernel word for `bool`: one byte, read as true when non-zero, written as 0 or 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Bool8(pub u8);

impl Word for Bool8 {
    #[inline(always)]
    fn load(self) -> Self {
        Bool8((self.0 != 0) as u8)
    }
    #[inline(always)]
    fn not(self) -> Self {
        Bool8(self.0 ^ 1)
    }
    #[inline(always)]
    fn and(self, r: Self) -> Self {
        Bool8(self.0 & r.0)
    }
    #[inline(always)]
    fn or(self, r: Self) -> Self {
        Bool8(self.0 | r.0)
    }
    #[inline(always)]
    fn xor(self, r: Self) -> Self {
        Bool8(self.0 ^ r.0)
    }
    #[inline(always)]
    fn lit(v: u64) -> Self {
        Bool8((v != 0) as u8)
    }
    #[inline(always)]
    fn bits(self) -> u64 {
        u64::from(self.0)
    }
}

/// Writes accumulator `v` as an output element of `es` bytes at element `at` of `out`.
pub(crate) fn write_elem(out: &mut [u8], at: usize, es: usize, v: u64) {
    out[at * es..at * es + es].copy_from_slice(&v.to_le_bytes()[..es]);
}

/// An output's element size as the vector stores write it: 1, 2 or 4 bytes, else 8.
#[inline(always)]
pub(crate) fn out_size(es: usize) -> usize {
    match es {
        1 | 2 | 4 => es,
        _ => 8,
    }
}

/// Evaluates `$body` with the constant `$ES` the output size `$es` ([`out_size`]: 1, 2, 4, else 8)
/// where `$short` (codes short enough that the store is most of the work, so each size gets a copy
/// of the loop), else 0: the loop then reads the size at run time, one copy for all sizes.
macro_rules! by_out_size {
    ($short:expr, $es:expr, $ES:ident => $body:expr) => {
        match ($short, $es) {
            (false, _) => {
                const $ES: usize = 0;
                $body
            }
            (true, 1) => {
                const $ES: usize = 1;
                $body
            }
            (true, 2) => {
                const $ES: usize = 2;
                $body
            }
            (true, 4) => {
                const $ES: usize = 4;
                $body
            }
            (true, _) => {
                const $ES: usize = 8;
                $body
            }
        }
    };
}
pub(crate) use by_out_size;

/// Evaluates `$body` with the constant `$C` the run-time value `$x` where it is one of the listed
/// values, so that each gets a copy of the loop with its count known; else `$rest`.
macro_rules! by_const {
    ($x:expr, $C:ident in [$($v:literal),* $(,)?] => $body:expr, _ => $rest:expr $(,)?) => {
        match $x {
            $($v => {
                const $C: usize = $v;
                $body
            })*
            _ => $rest,
        }
    };
}
pub(crate) use by_const;

/// Evaluates `$body` with the type `$T` the unsigned integer of `$es` bytes (1, 2, 4, else 8).
macro_rules! by_elem {
    ($es:expr, $T:ident => $body:expr) => {
        match $es {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}
pub(crate) use by_elem;

/// Writes eight accumulators as consecutive output elements of `es` bytes ([`out_size`]) at the
/// start of `out`: a fixed-size narrowing the compiler keeps in vector registers.
#[inline(always)]
pub(crate) fn write8(es: usize, out: &mut [u8], v: &[u64; 8]) {
    #[inline(always)]
    fn sized<const S: usize>(out: &mut [u8], v: &[u64; 8]) {
        for (d, x) in out[..8 * S].chunks_exact_mut(S).zip(v) {
            d.copy_from_slice(&x.to_le_bytes()[..S]);
        }
    }
    match es {
        1 => sized::<1>(out, v),
        2 => sized::<2>(out, v),
        4 => sized::<4>(out, v),
        _ => sized::<8>(out, v),
    }
}

/// Writes accumulators as consecutive output elements of `es` bytes.
pub(crate) fn write_run(out: &mut [u8], src: &[u64], es: usize) {
    fn go<T: bytemuck::Pod, const S: usize>(out: &mut [u8], src: &[u64], cast: fn(u64) -> T) {
        let n = src.len().min(out.len() / S);
        match bytemuck::try_cast_slice_mut::<u8, T>(&mut out[..n * S]) {
            // Aligned: a loop the compiler vectorizes.
            Ok(o) => o.iter_mut().zip(src).for_each(|(d, &v)| *d = cast(v)),
            Err(_) => {
                for (d, &v) in out.chunks_exact_mut(S).zip(src) {
                    d.copy_from_slice(&v.to_le_bytes()[..S]);
                }
            }
        }
    }
    match es {
        1 => go::<u8, 1>(out, src, |v| v as u8),
        2 => go::<u16, 2>(out, src, |v| v as u16),
        4 => go::<u32, 4>(out, src, |v| v as u32),
        _ => go::<u64, 8>(out, src, |v| v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_semantics() {
        assert_eq!(IntWord::shl(1u8, 7), 128);
        assert_eq!(IntWord::shl(1u8, 8), 0);
        assert_eq!(IntWord::shl(1i8, -1), 0);
        assert_eq!(IntWord::shr(-128i8, 9), -1);
        assert_eq!(IntWord::shr(-128i8, -3), -1);
        assert_eq!(IntWord::shr(100i8, 100), 0);
        assert_eq!(IntWord::shr(0x80u8, 7), 1);
        assert_eq!(IntWord::shr(0x80u8, 8), 0);
        assert_eq!(IntWord::shr(u64::MAX, 200), 0);
        assert_eq!(IntWord::shr(-8i32, 1), -4);
        assert_eq!(IntWord::wrapping_shl(1u32, 33), 2);
        assert_eq!(IntWord::count_ones(-1i8), 8);
    }

    #[test]
    fn bool_words() {
        assert_eq!(Bool8(7).load(), Bool8(1));
        assert_eq!(Bool8(1).not(), Bool8(0));
        assert_eq!(Bool8::lit(1), Bool8(1));
    }
}
