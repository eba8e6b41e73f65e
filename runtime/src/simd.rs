//! The crate's only `unsafe` code, for speed on x86_64:
//!
//! - the executor's hot loop compiled again for AVX2 and for AVX-512, and called when the CPU has
//!   those features (detected at run time; the baseline build only assumes SSE2, which has no
//!   per-lane variable shifts and no vector bit count);
//! - non-temporal ("streaming") stores: large outputs are written around the caches, so the memory
//!   system does not first read every output line it is about to overwrite.

#![allow(
    unsafe_code,
    reason = "target-feature dispatch and SSE2 intrinsics; each use states its safety"
)]

use crate::element::Word;
use bytemuck::Pod;

/// The executor's hot loop ([`crate::cpu::compute`]), in the best version this CPU runs.
#[inline]
pub fn compute<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512bitalg")
        {
            // SAFETY: the features `compute_avx512` is compiled for were detected on this CPU.
            return unsafe { compute_avx512(lanes, out, f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected on this CPU.
            return unsafe { compute_avx2(lanes, out, f) };
        }
    }
    crate::cpu::compute(lanes, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn compute_avx2<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    // `cpu::compute` and the element functions are `inline(always)`, so the whole loop is compiled
    // here, with AVX2.
    crate::cpu::compute(lanes, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg")]
fn compute_avx512<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    crate::cpu::compute(lanes, out, f)
}

/// Copies `src` into `dst` (same length) with streaming stores where the platform has them.
/// Call [`fence`] once after the last streaming copy of a thread, before its results are shared.
#[inline]
pub fn copy<T: bytemuck::Pod>(dst: &mut [T], src: &[T]) {
    let dst: &mut [u8] = bytemuck::cast_slice_mut(dst);
    let src: &[u8] = bytemuck::cast_slice(src);
    let len = dst.len().min(src.len());
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let head = dst.as_ptr().align_offset(16).min(len);
        dst[..head].copy_from_slice(&src[..head]);
        let body = (len - head) / 16 * 16;
        let mut i = head;
        while i < head + body {
            // SAFETY: `i + 16 <= head + body <= len` keeps both 16-byte accesses inside `src` and
            // `dst`; `dst + i` is 16-byte aligned because `dst + head` is and `i - head` is a
            // multiple of 16, as `_mm_stream_si128` requires; the load is unaligned-tolerant; SSE2
            // is part of the x86_64 baseline, so the intrinsics are always available.
            unsafe {
                let v = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
                _mm_stream_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), v);
            }
            i += 16;
        }
        dst[head + body..len].copy_from_slice(&src[head + body..len]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst[..len].copy_from_slice(&src[..len]);
}

/// Orders this thread's streaming stores before any later store (they are weakly ordered).
#[inline]
pub fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn copies_every_byte_at_every_alignment() {
        let src: Vec<u8> = (0..200u8).collect();
        for off in 0..17 {
            for len in [0, 1, 15, 16, 17, 63, 64, 100, 150] {
                let mut dst = [0xEEu8; 200];
                super::copy(&mut dst[off..off + len], &src[..len]);
                super::fence();
                assert_eq!(&dst[off..off + len], &src[..len]);
                assert!(
                    dst[..off]
                        .iter()
                        .chain(&dst[off + len..])
                        .all(|&b| b == 0xEE)
                );
            }
        }
    }
}
