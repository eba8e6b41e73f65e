//! The AVX-512 streams' results, from registers to the output: a stream's counts for one row of
//! `a` a register at a time ([`Group`]), narrowed to the output's element size and stored straight
//! into its row, around the caches where the output is large.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::tuning::ALIGN_FROM;
use crate::element::{by_out_size, out_size};
use crate::op::PairOut;
use std::arch::x86_64::*;

/// A streaming kernel's results for one row of `a`, a register at a time: `at(c)` holds the
/// results of codes `c..c + 8` (or `c..c + 16` for [`emit`]'s `SIXTEEN`), for any code `c`, so
/// that [`emit`] can start its stores where they are aligned. A trait with an always-inlined
/// method rather than a closure: a closure is compiled apart from the AVX-512 function it is
/// written in, without its features, and its intrinsics were left as calls.
pub(super) trait Group {
    /// Whether a register of results is cheap next to its store (short codes): [`emit`] then
    /// makes the output size a constant of its loop.
    const SHORT: bool = false;
    /// # Safety
    /// AVX-512F and BW must be present (and VPOPCNTDQ for a value of `Avx512<true>`), and the
    /// codes from `c` that the register holds inside the codes the value was made for.
    unsafe fn at(&self, c: usize) -> __m512i;
}

/// Writes one row's results from the streaming kernels, from `src` over a row of `n` codes:
/// sixteen at a time, narrowed in registers to the output's type and stored straight into its
/// row, which is taken (and bounds-checked) once. Returns the codes written, from the first:
/// all of them where there are at least sixteen (the last store is made again over the row's
/// last sixteen codes, rather than counting the codes past the last whole register one at a
/// time), else those of whole registers (eight codes, or sixteen with `SIXTEEN`). Before,
/// results went through a buffer of 64 `u64`s and a conversion pass, which cost a single
/// query against 100,000 short codes more than its counting.
///
/// # Safety
/// As [`Group::at`] for the codes `0..n`.
#[inline(always)]
pub(super) unsafe fn emit<const SIXTEEN: bool, G: Group>(
    out: &mut PairOut<'_, '_>,
    row: usize,
    n: usize,
    src: &G,
) -> usize {
    let codes = match (n >= 16, SIXTEEN) {
        (true, _) => n,
        (false, true) => 0,
        (false, false) => n / 8 * 8,
    };
    // SAFETY: the caller's.
    unsafe {
        by_out_size!(G::SHORT, out_size(out.es), ES => emit_sized::<SIXTEEN, ES>(out, row, codes, src))
    }
    codes
}

/// [`emit`] for outputs of `ES` bytes (0: the output's, as [`out_size`] gives it, at run time),
/// sixteen results (`16 * es` bytes) per store. Where a row
/// is long ([`ALIGN_FROM`]) and its start not aligned to the store (to 64 bytes at most), the
/// first sixteen are stored as they lie, and the stores go on from the first aligned address:
/// a store that crosses a cache line costs two. The last sixteen are stored again where the
/// codes do not end on a store, or eight alone where eight are left.
/// Results stored twice are the same values, and every store lies inside the row.
///
/// # Safety
/// As [`emit`]; `codes` is at least sixteen, or a multiple of eight (of sixteen with
/// `SIXTEEN`).
#[inline(always)]
unsafe fn emit_sized<const SIXTEEN: bool, const ES: usize>(
    out: &mut PairOut<'_, '_>,
    row: usize,
    codes: usize,
    src: &impl Group,
) {
    let non_temporal = out.non_temporal;
    let es = if ES == 0 { out_size(out.es) } else { ES };
    let dst = &mut out.at(row, 0)[..codes * es];
    let base = dst.as_mut_ptr();
    let align = (16 * es).min(64);
    let off = base as usize % align;
    let aligned = codes >= ALIGN_FROM && off.is_multiple_of(es);
    let mut c = 0;
    // SAFETY: AVX-512F and BW are present and the codes `0..codes` inside `src`'s codes (the
    // caller's promise); each `emit16` at code `c` writes results `c..c + 16` at `c * es`,
    // for `c + 16 <= codes`, inside `dst` (bounds-checked above); `store8` writes `c..c + 8`
    // for `c + 8 <= codes`. The stores of the loop are aligned to `align` where `aligned`, as
    // the non-temporal stores require.
    unsafe {
        if aligned && off != 0 {
            emit16::<SIXTEEN, false>(es, base, src, 0);
            c = (align - off) / es;
        }
        // One loop for each kind of store, so that the stores of the loop do not test it.
        if aligned && non_temporal {
            while c + 16 <= codes {
                emit16::<SIXTEEN, true>(es, base, src, c);
                c += 16;
            }
            // Non-temporal stores are weakly ordered: they are made visible before any later
            // store (the thread's report that its rows are done).
            _mm_sfence();
        } else {
            while c + 16 <= codes {
                emit16::<SIXTEEN, false>(es, base, src, c);
                c += 16;
            }
        }
        if c + 8 == codes && !SIXTEEN {
            store8(es, base.add(c * es), src.at(c));
        } else if c < codes {
            emit16::<SIXTEEN, false>(es, base, src, codes - 16);
        }
    }
}

/// Stores the results of codes `c..c + 16` from `src` at `base + c * es` as elements of `es`
/// bytes: with `SIXTEEN`, one register of sixteen `u32`s; else two of eight `u64`s
/// ([`store16`]). With `AROUND`, as non-temporal stores ([`Stored`]).
///
/// Inlined only where optimized: a build without optimization inlines only what is always
/// inlined, into one frame per dispatcher with a stack slot for every value of every variant,
/// and [`emit_sized`]'s three stores of each variant took a test thread's 2 MiB stack past its
/// end (the dispatchers' frames are about 1 MiB each in such a build).
///
/// # Safety
/// AVX-512F and BW must be present, the codes inside `src`'s, and the `16 * es` bytes at
/// `base + c * es` writable; with `AROUND`, aligned to `16 * es` bytes (64 at most).
#[cfg_attr(not(debug_assertions), inline(always))]
unsafe fn emit16<const SIXTEEN: bool, const AROUND: bool>(
    es: usize,
    base: *mut u8,
    src: &impl Group,
    c: usize,
) {
    // SAFETY: the caller's.
    unsafe {
        let p = base.add(c * es);
        if !SIXTEEN {
            store16(es, p, src.at(c), src.at(c + 8), AROUND);
            return;
        }
        let v = src.at(c);
        match es {
            1 => Vec16(_mm512_cvtepi32_epi8(v)).store(p, AROUND),
            2 => Vec32(_mm512_cvtepi32_epi16(v)).store(p, AROUND),
            4 => Vec64(v).store(p, AROUND),
            _ => {
                let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v));
                let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(v));
                Vec64(lo).store(p, AROUND);
                Vec64(hi).store(p.add(64), AROUND);
            }
        }
    }
}

/// A register of 16, 32 or 64 bytes, stored at `p`: around the caches (a non-temporal store)
/// with `around`, else as usual.
trait Stored: Copy {
    /// # Safety
    /// The register's bytes at `p` writable; with `around`, `p` aligned to the register's size;
    /// the features of the register's instructions present.
    unsafe fn store(self, p: *mut u8, around: bool);
}

/// The registers [`Stored`] stores, each by its non-temporal store and its usual one.
macro_rules! stored {
    ($($name:ident($reg:ty): $around:ident, $usual:ident;)*) => {$(
        #[derive(Clone, Copy)]
        struct $name($reg);

        impl Stored for $name {
            #[inline(always)]
            unsafe fn store(self, p: *mut u8, around: bool) {
                // SAFETY: the caller's.
                unsafe {
                    if around {
                        $around(p.cast(), self.0)
                    } else {
                        $usual(p.cast(), self.0)
                    }
                }
            }
        }
    )*};
}

stored! {
    Vec16(__m128i): _mm_stream_si128, _mm_storeu_si128;
    Vec32(__m256i): _mm256_stream_si256, _mm256_storeu_si256;
    Vec64(__m512i): _mm512_stream_si512, _mm512_storeu_si512;
}

/// Stores the sixteen 64-bit results of `x` then `y` at `p` as elements of `es` bytes: narrowed
/// together in registers and stored in one piece (a narrowing store to memory, such as VPMOVQD's,
/// is slow on some cores); with `around`, around the caches ([`Stored`]).
///
/// # Safety
/// AVX-512F and BW must be present, and the `16 * es` bytes at `p` writable; with `around`,
/// aligned to `16 * es` bytes (64 at most).
#[inline(always)]
pub(super) unsafe fn store16(es: usize, p: *mut u8, x: __m512i, y: __m512i, around: bool) {
    // SAFETY: the caller's.
    unsafe {
        match es {
            1 => Vec16(_mm_unpacklo_epi64(
                _mm512_cvtepi64_epi8(x),
                _mm512_cvtepi64_epi8(y),
            ))
            .store(p, around),
            2 => Vec32(_mm256_set_m128i(
                _mm512_cvtepi64_epi16(y),
                _mm512_cvtepi64_epi16(x),
            ))
            .store(p, around),
            4 => {
                let idx =
                    _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
                Vec64(_mm512_permutex2var_epi32(x, idx, y)).store(p, around);
            }
            _ => {
                Vec64(x).store(p, around);
                Vec64(y).store(p.add(64), around);
            }
        }
    }
}

/// Stores the eight 64-bit results of `x` at `p` as elements of `es` bytes.
///
/// # Safety
/// AVX-512F and BW must be present, and the `8 * es` bytes at `p` writable.
#[inline(always)]
pub(super) unsafe fn store8(es: usize, p: *mut u8, x: __m512i) {
    // SAFETY: the caller's.
    unsafe {
        match es {
            1 => _mm_storel_epi64(p.cast(), _mm512_cvtepi64_epi8(x)),
            2 => _mm_storeu_si128(p.cast(), _mm512_cvtepi64_epi16(x)),
            4 => _mm256_storeu_si256(p.cast(), _mm512_cvtepi64_epi32(x)),
            _ => _mm512_storeu_si512(p.cast(), x),
        }
    }
}
