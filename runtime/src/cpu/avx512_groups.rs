//! The AVX-512 streams' code groups: for each code size, how a register of codes meets the query
//! (whole words, pairs of words, windows, bytes, several registers a code).

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::vector::{Group, Vector};
use super::x86::*;
use crate::element::WideExpr;
use std::arch::x86_64::*;

/// [`Avx512::stream_pairs`]' groups: codes of two words: sixteen codes' results in 32-bit
/// lanes. Each of the four registers of counts holds four codes' two words; two registers are
/// folded into one, a count in each half of a 64-bit lane (`vpsllq`, `vpord`, off the shuffle
/// port), and two permutes gather the first and the second words' counts of the sixteen codes,
/// whose sum is the results in order. Eight codes' results in 64-bit lanes took two permutes
/// for the sums, and the narrowing to `u32` one more per sixteen (nine shuffles per sixteen
/// codes against six).
pub(super) struct Pairs<E, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    pub(super) q: V512,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const VP: bool> Group<Avx512<VP>> for Pairs<E, VP> {
    const SHORT: bool = true;
    const SIXTEEN: bool = true;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and the four loads of 64 bytes at
        // `c * 16 + v * 64` (codes `c..c + 16`) lie inside the codes.
        unsafe {
            let mut p = [_mm512_setzero_si512(); 4];
            for (v, pv) in p.iter_mut().enumerate() {
                let x = V512(_mm512_loadu_si512(self.b.add(c * 16 + v * 64).cast()));
                *pv = self.isa.count(E::wide([self.q, x])).0;
            }
            // 64-bit lane `2j + w` of `f[h]`: word `w` of code `8h + j` (low half) and of code
            // `8h + 4 + j` (high half); as 32-bit lanes, `4j + 2w` and `4j + 2w + 1`.
            let f = [
                _mm512_or_si512(p[0], _mm512_slli_epi64::<32>(p[1])),
                _mm512_or_si512(p[2], _mm512_slli_epi64::<32>(p[3])),
            ];
            // Code `t` (`t = 8h + 4u + j`) at 32-bit lane `16h + 4j + u` of the pair, plus `2w`.
            let first = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 16, 20, 24, 28, 17, 21, 25, 29);
            let second = _mm512_add_epi32(first, _mm512_set1_epi32(2));
            _mm512_add_epi32(
                _mm512_permutex2var_epi32(f[0], first, f[1]),
                _mm512_permutex2var_epi32(f[0], second, f[1]),
            )
        }
    }
}

/// [`Avx512::stream_windows`]' groups: eight codes of `bytes` bytes from `b`, `8 / L` per
/// register in windows of `L` words.
pub(super) struct Windows<E, const L: usize, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    /// The query at each window's offset.
    pub(super) q: V512,
    pub(super) bytes: usize,
    /// The bytes of a register's codes.
    pub(super) loaded: u64,
    /// The 32-bit pieces of each window.
    pub(super) spread: __m512i,
    /// The code's bytes in each window.
    pub(super) keep: __m512i,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const L: usize, const VP: bool> Group<Avx512<VP>> for Windows<E, L, VP> {
    const SHORT: bool = L <= 2;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        let per = 8 / L;
        // SAFETY: the caller's: the features are present, and each masked load reads the
        // `per * bytes` bytes at `(c + v * per) * bytes`, which end at most at `(c + 8) * bytes`,
        // inside the codes (the masked-off bytes are not read).
        unsafe {
            let mut p = [self.isa.zero(); 8];
            for (v, pv) in p.iter_mut().enumerate().take(L) {
                let at = self.b.add((c + v * per) * self.bytes);
                let raw = _mm512_maskz_loadu_epi8(self.loaded, at.cast());
                let x = V512(_mm512_permutexvar_epi32(self.spread, raw));
                let d = _mm512_and_si512(E::wide([self.q, x]).0, self.keep);
                *pv = self.isa.count(V512(d));
            }
            self.isa.code_sums::<L>(&p)
        }
    }
}

/// [`Avx512::stream_bytes`]' groups: eight codes of `bytes` bytes from `b`, one per register,
/// the padding's count taken off.
pub(super) struct Bytes<E, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    pub(super) q: V512,
    pub(super) bytes: usize,
    pub(super) mask: u64,
    pub(super) pad: __m512i,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const VP: bool> Group<Avx512<VP>> for Bytes<E, VP> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and each masked load reads only the
        // `bytes` bytes of code `c + v` (the masked-off bytes are not read), inside the codes.
        unsafe {
            let mut p = [self.isa.zero(); 8];
            for (v, pv) in p.iter_mut().enumerate() {
                let at = self.b.add((c + v) * self.bytes);
                let x = V512(_mm512_maskz_loadu_epi8(self.mask, at.cast()));
                *pv = self.isa.count(E::wide([self.q, x]));
            }
            _mm512_sub_epi64(self.isa.code_sums::<8>(&p), self.pad)
        }
    }
}

/// [`Avx512::stream_short`]'s groups: [`PER`](Self::PER) codes of `B` bytes from `b`, each
/// widened to a lane.
pub(super) struct Short<E, const B: usize, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    /// The query, repeated across the lanes.
    pub(super) q: V512,
    /// A code's bits in each lane.
    pub(super) keep: __m512i,
    /// [`Avx512::stream_short`]'s moves of 32-bit pieces and of bytes.
    pub(super) spread: __m512i,
    pub(super) shuf: __m512i,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E, const B: usize, const VP: bool> Short<E, B, VP> {
    /// Codes per register: sixteen in 32-bit lanes up to three bytes, eight in 64-bit lanes.
    pub(super) const PER: usize = if B < 4 { 16 } else { 8 };
}

impl<E: WideExpr, const B: usize, const VP: bool> Group<Avx512<VP>> for Short<E, B, VP> {
    const SHORT: bool = true;
    const SIXTEEN: bool = B < 4;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and the loads read the `PER * B`
        // bytes of codes `c..c + PER` (the masked-off bytes are not read), inside the codes.
        unsafe {
            let at = self.b.add(c * B);
            let x = match B {
                1 => _mm512_cvtepu8_epi32(_mm_loadu_si128(at.cast())),
                2 => _mm512_cvtepu16_epi32(_mm256_loadu_si256(at.cast())),
                _ => {
                    let raw = _mm512_maskz_loadu_epi8(u64::MAX >> (64 - Self::PER * B), at.cast());
                    _mm512_shuffle_epi8(_mm512_permutexvar_epi32(self.spread, raw), self.shuf)
                }
            };
            let mut d = E::wide([self.q, V512(x)]).0;
            if E::wide([0u64, 0u64]) & 1 == 1 {
                // The padding counts under `E` (XNOR): masked off.
                d = _mm512_and_si512(d, self.keep);
            }
            if Self::PER == 16 {
                self.isa.count32(V512(d))
            } else {
                self.isa.count(V512(d)).0
            }
        }
    }
}
