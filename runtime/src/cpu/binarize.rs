//! `binarize`'s loop: `x > threshold` for each element of a row, packed eight to a byte in the
//! row's bit order, in one pass over the input. Rows are whole: a row of `d` elements fills
//! `ceil(d / 8)` bytes, the last one's padding bits zero.
//!
//! The comparison is each type's own `>` (IEEE for floats: a NaN is never above anything, and
//! `-0` is not above `+0`); `f16` compares the same order-preserving keys as the GPU kernel.

use super::simd;
use super::tuning::PARALLEL_BYTES;
use crate::DataType;

/// An element `binarize` compares.
pub(crate) trait Above: bytemuck::Pod + Send + Sync {
    /// A threshold as the comparison takes it.
    type Cut: Copy + Send + Sync;
    /// Threshold `t` prepared once per call.
    fn cut(t: Self) -> Self::Cut;
    /// `self > t`, exactly.
    fn above(self, c: Self::Cut) -> bool;
    /// The mask of `x[i] > t[i]` for 64 elements, element `i` at bit `i`. The comparisons fill a
    /// byte each (which the compiler vectorizes), whose top bits one `pmovmskb` per 16 gathers.
    #[inline(always)]
    fn mask64(x: &[Self], t: &[Self::Cut]) -> u64 {
        let mut c = [0u8; 64];
        for i in 0..64 {
            c[i] = 0u8.wrapping_sub(u8::from(x[i].above(t[i])));
        }
        simd::movemask64(&c)
    }
}

/// Each type's own `>`; bytes (`$signed` given) compared 64 at a time by `simd::gt_bytes64`.
macro_rules! above {
    ($($t:ty $(=> $signed:expr)?),*) => {$(
        impl Above for $t {
            type Cut = $t;
            #[inline(always)]
            fn cut(t: Self) -> Self {
                t
            }
            #[inline(always)]
            fn above(self, t: Self) -> bool {
                self > t
            }
            $(
                #[inline(always)]
                fn mask64(x: &[Self], t: &[Self]) -> u64 {
                    simd::gt_bytes64(bytemuck::cast_slice(x), bytemuck::cast_slice(t), $signed)
                }
            )?
        }
    )*};
}
above!(u16, u32, u64, i16, i32, i64, f32, f64, u8 => false, i8 => true);

/// A `bool` element as its byte: any non-zero byte is true.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub(crate) struct BoolByte(u8);

impl Above for BoolByte {
    type Cut = u8;
    #[inline(always)]
    fn cut(t: Self) -> u8 {
        u8::from(t.0 != 0)
    }
    #[inline(always)]
    fn above(self, t: u8) -> bool {
        u8::from(self.0 != 0) > t
    }
}

/// `f16` compared as signed integers: the magnitude, negated for negative values (so `-0` is
/// `+0`), in a branch-free form the compiler vectorizes; a NaN element is never above, and a NaN
/// threshold has nothing above it.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub(crate) struct F16Bits(u16);

/// The signed key of `f16` bits `v`, and whether `v` is a NaN.
#[inline(always)]
fn f16_key(v: u16) -> (i16, bool) {
    let mag = (v & 0x7fff) as i16;
    let neg = (v as i16) >> 15;
    ((mag ^ neg).wrapping_sub(neg), mag > 0x7c00)
}

impl Above for F16Bits {
    type Cut = i16;
    #[inline(always)]
    fn cut(t: Self) -> i16 {
        match f16_key(t.0) {
            (_, true) => i16::MAX,
            (k, false) => k,
        }
    }
    #[inline(always)]
    fn above(self, t: i16) -> bool {
        let (k, nan) = f16_key(self.0);
        !nan & (k > t)
    }
}

/// The order-preserving unsigned key of a float of `bits` bits (16, 32 or 64): `-0` reads as
/// `+0`, negative values' bits are inverted and positive ones' sign bit set; a NaN is 0, below
/// every number's key. What the GPU kernel computes too.
#[cfg_attr(
    not(feature = "gpu"),
    allow(dead_code, reason = "the GPU's thresholds, and this file's tests")
)]
pub(crate) fn float_key(v: u64, bits: u32) -> u64 {
    let mant = match bits {
        16 => 10,
        32 => 23,
        _ => 52,
    };
    let all = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let sign = 1u64 << (bits - 1);
    let emax = (sign - 1) >> mant;
    if (v >> mant) & emax == emax && v & ((1 << mant) - 1) != 0 {
        return 0;
    }
    let v = if v & (sign - 1) == 0 { 0 } else { v };
    if v & sign != 0 { !v & all } else { v | sign }
}

/// 64 elements against 64 thresholds, packed to 8 bytes in the row's order: big order reverses
/// each byte's bits of the little-order mask.
#[inline(always)]
fn pack64<T: Above, const BIG: bool>(x: &[T], t: &[T::Cut], out: &mut [u8]) {
    let m = T::mask64(x, t);
    let m = if BIG {
        m.reverse_bits().swap_bytes()
    } else {
        m
    };
    out.copy_from_slice(&m.to_le_bytes()[..out.len()]);
}

/// The bytes of one row (or of a run of whole bytes of rows whose length is a multiple of 8, with
/// a scalar threshold): `out.len()` is `x.len().div_ceil(8)`; `t` is one threshold per element of
/// `x`, or one for all (length 1, `per` false).
fn row<T: Above, const BIG: bool>(x: &[T], t: &[T::Cut], per: bool, out: &mut [u8]) {
    let blocks = x.len() / 64;
    let ts = [t[0]; 64];
    for (b, (o, xs)) in out.chunks_exact_mut(8).zip(x.chunks_exact(64)).enumerate() {
        let ts = if per {
            &t[b * 64..b * 64 + 64]
        } else {
            &ts[..]
        };
        pack64::<T, BIG>(xs, ts, o);
    }
    let done = blocks * 64;
    let rest = x.len() - done;
    if rest > 0 {
        // The tail as a block whose missing elements are NaN-free copies, cleared after.
        let mut xs = [x[0]; 64];
        let mut tt = [t[0]; 64];
        xs[..rest].copy_from_slice(&x[done..]);
        if per {
            tt[..rest].copy_from_slice(&t[done..]);
        }
        let mut o = [0u8; 8];
        pack64::<T, BIG>(&xs, &tt, &mut o);
        let n = rest.div_ceil(8);
        if !rest.is_multiple_of(8) {
            let r = rest % 8;
            o[n - 1] &= if BIG { !(0xffu8 >> r) } else { (1u8 << r) - 1 };
        }
        out[blocks * 8..blocks * 8 + n].copy_from_slice(&o[..n]);
    }
}

/// Rows of `d` elements (`x` holds whole rows) into `out` (`ceil(d / 8)` bytes each); `t` one
/// threshold per element of a row or one for all; `or` (one byte per output byte of a row) sets
/// the bits of elements whose threshold lies below every value of the type.
fn rows<T: Above>(x: &[T], d: usize, t: &[T::Cut], or: Option<&[u8]>, big: bool, out: &mut [u8]) {
    let nb = d.div_ceil(8);
    let per = t.len() > 1;
    let one = |x: &[T], out: &mut [u8]| match big {
        true => row::<T, true>(x, t, per, out),
        false => row::<T, false>(x, t, per, out),
    };
    // Whole bytes with one threshold: the rows are one run, cut anywhere at a byte.
    let run = |x: &[T], out: &mut [u8]| {
        if !per && d.is_multiple_of(8) {
            one(x, out);
        } else {
            for (xr, or) in x.chunks_exact(d).zip(out.chunks_exact_mut(nb)) {
                one(xr, or);
            }
        }
        if let Some(m) = or {
            for o in out.chunks_exact_mut(nb) {
                o.iter_mut().zip(m).for_each(|(o, m)| *o |= m);
            }
        }
    };
    let bytes = std::mem::size_of_val(x);
    let threads = crate::pool::num_threads();
    if bytes < PARALLEL_BYTES || threads < 2 || out.len() < 2 * nb {
        return run(x, out);
    }
    // Pieces of whole rows, a few per thread.
    let rows_per = (out.len() / nb).div_ceil(threads * 4).max(1);
    let pieces: Vec<(&[T], &mut [u8])> = x
        .chunks(rows_per * d)
        .zip(out.chunks_mut(rows_per * nb))
        .collect();
    crate::pool::each(pieces, |_, (x, out)| run(x, out));
}

/// Views bytes as elements of `T`, copying them when they are not aligned for it.
fn typed<T: Above>(b: &[u8]) -> std::borrow::Cow<'_, [T]> {
    match bytemuck::try_cast_slice(b) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => std::borrow::Cow::Owned(bytemuck::pod_collect_to_vec(b)),
    }
}

/// `binarize` of packed rows of `d` elements of `dtype` (`x` their bytes) with thresholds
/// `cuts` (the bits of values of `dtype`, one per element of a row or one for all) into `out`,
/// `ceil(d / 8)` bytes per row. `or` as in [`rows`].
pub(crate) fn binarize(
    dtype: DataType,
    x: &[u8],
    d: usize,
    cuts: &[u64],
    or: Option<&[u8]>,
    big: bool,
    out: &mut [u8],
) {
    fn go<T: Above>(
        x: &[u8],
        d: usize,
        cuts: &[u64],
        or: Option<&[u8]>,
        big: bool,
        out: &mut [u8],
    ) {
        let n = size_of::<T>();
        let t: Vec<T::Cut> = cuts
            .iter()
            .map(|c| T::cut(bytemuck::pod_read_unaligned(&c.to_le_bytes()[..n])))
            .collect();
        rows::<T>(&typed::<T>(x), d, &t, or, big, out);
    }
    if d == 0 {
        return;
    }
    match dtype {
        DataType::U8 => go::<u8>(x, d, cuts, or, big, out),
        DataType::U16 => go::<u16>(x, d, cuts, or, big, out),
        DataType::U32 => go::<u32>(x, d, cuts, or, big, out),
        DataType::U64 => go::<u64>(x, d, cuts, or, big, out),
        DataType::I8 => go::<i8>(x, d, cuts, or, big, out),
        DataType::I16 => go::<i16>(x, d, cuts, or, big, out),
        DataType::I32 => go::<i32>(x, d, cuts, or, big, out),
        DataType::I64 => go::<i64>(x, d, cuts, or, big, out),
        DataType::F16 => go::<F16Bits>(x, d, cuts, or, big, out),
        DataType::F32 => go::<f32>(x, d, cuts, or, big, out),
        DataType::F64 => go::<f64>(x, d, cuts, or, big, out),
        DataType::Bool => go::<BoolByte>(x, d, cuts, or, big, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn float_keys_order_like_the_floats() {
        let vals = [
            f32::NEG_INFINITY,
            -3.5,
            -1e-40,
            -0.0,
            0.0,
            1e-40,
            1.0,
            f32::MAX,
            f32::INFINITY,
        ];
        for a in vals {
            for b in vals {
                let ka = float_key(u64::from(a.to_bits()), 32);
                let kb = float_key(u64::from(b.to_bits()), 32);
                assert_eq!(ka > kb, a > b, "{a} {b}");
            }
            assert_eq!(float_key(u64::from(f32::NAN.to_bits()), 32), 0);
            assert!(float_key(u64::from(a.to_bits()), 32) > 0);
        }
        let h = |v: f32| float_key(u64::from(f16::from_f32(v).to_bits()), 16);
        assert!(h(-0.0) == h(0.0) && h(-1.0) < h(0.0) && h(0.5) < h(1.0));
    }
}
