//! knn's selection scan on AVX2 and AVX-512: the values of sixteen distances below the limit found
//! by one compare, and only those offered to the selection.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::isa::isa_fn;
use super::kernel::Dist;
use super::x86::*;
use std::arch::x86_64::*;

/// [`scan_below`](super::simd::scan_below) with a mask: `mask(chunk, limit)` gives the bits of
/// the sixteen values of `chunk` below `limit`, and only those values are compared again (against
/// the limit as it stands, which `f` may have lowered) and offered to `f`. A group with a few
/// candidates costs a branch per candidate on the mask's bits, not sixteen compares with a branch
/// each that the CPU cannot predict while a row's `k`-th distance is still falling (ten queries
/// against 1,000 codes of 32 bytes, k = 10, on AVX2: the selection had cost as much as the
/// counting).
#[inline(always)]
fn scan_masked<D: Dist, F: FnMut(usize, u64) -> u64>(
    v: &[D],
    mut limit: u64,
    mut f: F,
    mask: impl Fn(&[D], u64) -> u32,
) {
    const C: usize = 16;
    let mut chunks = v.chunks_exact(C);
    for (c, chunk) in chunks.by_ref().enumerate() {
        let mut mask = mask(chunk, limit);
        while mask != 0 {
            let l = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let d: u64 = chunk[l].into();
            if d < limit {
                limit = f(c * C + l, d);
            }
        }
    }
    let rest = chunks.remainder();
    super::kernel::scan_each(rest, v.len() - rest.len(), limit, &mut f);
}

/// Whether `D` is `u16` (the other distance type is `u64`).
#[inline(always)]
fn short_dist<D: Dist>() -> bool {
    size_of::<D>() == 2
}

/// The bits of the sixteen `u16`s of `chunk` below `limit`: one compare of sixteen lanes (as
/// signed, values and limit with their top bit flipped), its words narrowed to bytes for
/// `vpmovmskb`.
///
/// # Safety
/// AVX2 must be present; `chunk` holds sixteen values.
#[inline(always)]
unsafe fn below16_u16(chunk: &[u16], limit: u64) -> u32 {
    if limit > u64::from(u16::MAX) {
        // Every `u16` is below.
        return 0xffff;
    }
    // SAFETY: the caller's: AVX2 is present, and the load reads the sixteen values of `chunk`.
    unsafe {
        let top = _mm256_set1_epi16(i16::MIN);
        let l = _mm256_xor_si256(_mm256_set1_epi16(limit as u16 as i16), top);
        let x = _mm256_loadu_si256(chunk.as_ptr().cast());
        let lt = _mm256_cmpgt_epi16(l, _mm256_xor_si256(x, top));
        // Bytes [0-7, 0-7] in the low 128-bit lane, [8-15, 8-15] in the high one.
        let m = _mm256_movemask_epi8(_mm256_packs_epi16(lt, lt)) as u32;
        (m & 0xff) | ((m >> 8) & 0xff00)
    }
}

isa_fn! { avx2 =>
    /// [`scan_masked`] of `u16`s ([`short_dist`]), by [`below16_u16`]: what the AVX2 and AVX-512
    /// scans take for them. Compiled for AVX2 itself, so that the closure that calls `below16_u16`
    /// is too (a closure has the target features of the function it is written in, not of the one it
    /// is inlined into): in an `#[inline(always)]` function without them, the closure's intrinsics
    /// were left as calls of their own, five calls for every sixteen distances, and knn of 8-byte
    /// codes spent far longer per distance in the scan than the streams take to count them.
    ///
    /// # Safety
    /// AVX2 must be present.
    #[inline]
    unsafe fn scan_below_u16<D: Dist, F: FnMut(usize, u64) -> u64>(v: &[D], limit: u64, f: F) {
        // SAFETY: the caller's: AVX2 is present; `scan_masked` gives chunks of sixteen.
        scan_masked(v, limit, f, |chunk, limit| unsafe {
            below16_u16(bytemuck::cast_slice(chunk), limit)
        })
    }
}

impl Avx512 {
    /// [`scan_masked`] with two unsigned compares of eight lanes (`u16`s: one AVX2 compare of
    /// sixteen).
    #[inline(always)]
    pub(super) fn scan_below<D: Dist, F: FnMut(usize, u64) -> u64>(
        self,
        v: &[D],
        limit: u64,
        f: F,
    ) {
        if short_dist::<D>() {
            // SAFETY: AVX-512F, which includes AVX2, is present (see `Avx512`).
            return unsafe { scan_below_u16(v, limit, f) };
        }
        scan_masked(v, limit, f, |chunk, limit| {
            let chunk: &[u64] = bytemuck::cast_slice(chunk);
            // SAFETY: AVX-512F is present (see `Avx512`); the two loads read words 0-7 and 8-15
            // of `chunk`, which holds sixteen.
            unsafe {
                let l = _mm512_set1_epi64(limit as i64);
                let lo = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(chunk.as_ptr().cast()), l);
                let hi =
                    _mm512_cmplt_epu64_mask(_mm512_loadu_si512(chunk.as_ptr().add(8).cast()), l);
                u32::from(lo) | (u32::from(hi) << 8)
            }
        })
    }
}

impl Avx2 {
    /// [`scan_masked`] with four subtractions of four lanes: below a limit of 2^63, a value
    /// minus the limit is negative (its top bit set) where the value is below, and also where it
    /// is at least 2^63 above (which `scan_masked` compares again); from 2^63, every value is
    /// offered to that compare. The four differences ORed give one test of sixteen values, and
    /// only a chunk that holds one below builds its mask: the mask of every chunk (compares, and
    /// `movmskpd` of each) had cost as much as a third of ten queries' knn over 100,000 codes of 16
    /// bytes, and compares ORed, the compiler narrowed lane by lane before the test. `u16`s take
    /// one compare of sixteen.
    #[inline(always)]
    pub(super) fn scan_below<D: Dist, F: FnMut(usize, u64) -> u64>(
        self,
        v: &[D],
        limit: u64,
        f: F,
    ) {
        if short_dist::<D>() {
            // SAFETY: AVX2 is present (see `Avx2`).
            return unsafe { scan_below_u16(v, limit, f) };
        }
        scan_masked(v, limit, f, |chunk, limit| {
            if limit > i64::MAX as u64 {
                return 0xffff;
            }
            let chunk: &[u64] = bytemuck::cast_slice(chunk);
            // SAFETY: AVX2 is present (see `Avx2`); the four loads read words 0-15 of `chunk`,
            // which holds sixteen.
            unsafe {
                let l = _mm256_set1_epi64x(limit as i64);
                let d: [__m256i; 4] = std::array::from_fn(|w| {
                    _mm256_sub_epi64(_mm256_loadu_si256(chunk.as_ptr().add(4 * w).cast()), l)
                });
                let any = _mm256_castsi256_pd(_mm256_or_si256(
                    _mm256_or_si256(d[0], d[1]),
                    _mm256_or_si256(d[2], d[3]),
                ));
                if _mm256_testz_pd(any, any) == 1 {
                    return 0;
                }
                let bits = |x: __m256i| _mm256_movemask_pd(_mm256_castsi256_pd(x)) as u32;
                bits(d[0]) | (bits(d[1]) << 4) | (bits(d[2]) << 8) | (bits(d[3]) << 12)
            }
        })
    }
}
