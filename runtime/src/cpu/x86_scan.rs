//! knn's selection scan on AVX2 and AVX-512: the values of sixteen distances below the limit found
//! by one compare, and only those offered to the selection.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::isa::isa_fn;
use super::kernel::Dist;
use super::x86::ProvesAvx2;
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
    /// [`scan_masked`] of `u16`s, by [`below16_u16`]: what the AVX2 and AVX-512
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

/// [`scan_masked`] with [`ProvesAvx2::below16`] (`u16`s: one AVX2 compare of sixteen, which both
/// instruction sets have).
#[inline(always)]
pub(super) fn scan_below<I: ProvesAvx2, D: Dist, F: FnMut(usize, u64) -> u64>(
    isa: I,
    v: &[D],
    limit: u64,
    f: F,
) {
    // `u16` distances (the other distance type is `u64`).
    if size_of::<D>() == 2 {
        // SAFETY: a value of `I` proves AVX2 (AVX-512F includes it).
        return unsafe { scan_below_u16(v, limit, f) };
    }
    scan_masked(v, limit, f, |chunk, limit| {
        let values: &[u64] = bytemuck::cast_slice(chunk);
        isa.below16(values.try_into().unwrap_or(&[0; 16]), limit)
    })
}
