//! Non-temporal ("streaming") stores: large outputs are written around the caches, so the memory
//! system does not first read every output line it is about to overwrite.

#![allow(unsafe_code, reason = "SSE2 intrinsics; each use states its safety")]

/// Copies `src` into `dst` (same length) with streaming stores where the platform has them.
/// Call [`fence`] once after the last streaming copy of a thread, before its results are shared.
#[inline]
pub(crate) fn copy<T: bytemuck::Pod>(dst: &mut [T], src: &[T]) {
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
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` only orders stores; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// Output size from which the pairwise kernels store around the caches:
/// [`STREAM_BYTES`](super::tuning::STREAM_BYTES), or a quarter of the last-level cache where that
/// is larger. Below, the output can stay in a large
/// cache, which normal stores then hit (`python3 benches/grid.py --queries 100,1000 --db 100000`).
pub(crate) fn pair_stream_bytes() -> usize {
    use super::tuning::STREAM_BYTES;
    #[cfg(target_arch = "x86_64")]
    {
        STREAM_BYTES.max(super::isa::last_cache_bytes() / 4)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        STREAM_BYTES
    }
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
