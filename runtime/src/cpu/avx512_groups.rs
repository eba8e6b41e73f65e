//! The AVX-512 streams' code groups: for each code size, how a register of codes meets the query
//! (whole words, pairs of words, windows, bytes, several registers a code).

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::avx512_emit::*;
use super::x86::*;
use crate::element::WideExpr;
use std::arch::x86_64::*;

/// The groups of a stream of codes of whole words ([`Avx512::stream_whole`]), made for one
/// query.
pub(super) trait WholeCodes<const VP: bool>: Group {
    /// Bytes per code.
    const BYTES: usize;

    /// Whether a group holds sixteen codes' results in 32-bit lanes (else eight in 64-bit ones).
    const SIXTEEN: bool = false;

    /// The groups of the codes from `b` against the query `q`.
    ///
    /// # Safety
    /// AVX-512F and BW must be present (VPOPCNTDQ too where `VP`), and `q` must hold
    /// [`BYTES`](Self::BYTES) bytes.
    unsafe fn new(isa: Avx512<VP>, b: *const u8, q: &[u8]) -> Self;
}

impl<E: WideExpr, const L: usize, const VP: bool> WholeCodes<VP> for Words<E, L, VP> {
    const BYTES: usize = L * 8;

    #[inline(always)]
    unsafe fn new(isa: Avx512<VP>, b: *const u8, q: &[u8]) -> Self {
        // The query's words repeated across the register's eight lanes.
        let mut lanes = [0u64; 8];
        for (k, l) in lanes.iter_mut().enumerate() {
            let w = k % L;
            *l = u64::from_le_bytes(q[w * 8..w * 8 + 8].try_into().unwrap_or([0; 8]));
        }
        Words {
            isa,
            b,
            // SAFETY: the caller's: AVX-512F is present; `lanes` is 64 bytes.
            q: V512(unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) }),
            expr: std::marker::PhantomData,
        }
    }
}

impl<E: WideExpr, const R: usize, const VP: bool> WholeCodes<VP> for Long<E, R, VP> {
    const BYTES: usize = R * 64;

    #[inline(always)]
    unsafe fn new(isa: Avx512<VP>, b: *const u8, q: &[u8]) -> Self {
        let mut qv = [V512(
            // SAFETY: the caller's: AVX-512F is present.
            unsafe { _mm512_setzero_si512() },
        ); R];
        for (t, v) in qv.iter_mut().enumerate() {
            // SAFETY: the caller's: AVX-512F is present, and `q` holds `R * 64` bytes.
            *v = V512(unsafe { _mm512_loadu_si512(q.as_ptr().add(t * 64).cast()) });
        }
        Long {
            isa,
            b,
            q: qv,
            expr: std::marker::PhantomData,
        }
    }
}

/// [`Avx512::stream_words`]' groups: eight codes of `L` words from `b`.
pub(super) struct Words<E, const L: usize, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    pub(super) q: V512,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const L: usize, const VP: bool> Group for Words<E, L, VP> {
    const SHORT: bool = L <= 2;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and the `L` loads of 64 bytes at
        // `c * L * 8 + v * 64` (codes `c..c + 8` of `L` words) lie inside the codes.
        unsafe {
            let mut p = [_mm512_setzero_si512(); L];
            for (v, pv) in p.iter_mut().enumerate() {
                let x = V512(_mm512_loadu_si512(self.b.add(c * L * 8 + v * 64).cast()));
                *pv = self.isa.count64(E::wide([self.q, x]).0);
            }
            self.isa.code_sums(p)
        }
    }
}

/// [`Avx512::stream_words`]' groups for codes of two words: sixteen codes' results in 32-bit
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

impl<E: WideExpr, const VP: bool> WholeCodes<VP> for Pairs<E, VP> {
    const BYTES: usize = 16;
    const SIXTEEN: bool = true;

    #[inline(always)]
    unsafe fn new(isa: Avx512<VP>, b: *const u8, q: &[u8]) -> Self {
        // SAFETY: the caller's.
        let words = unsafe { Words::<E, 2, VP>::new(isa, b, q) };
        Pairs {
            isa,
            b,
            q: words.q,
            expr: std::marker::PhantomData,
        }
    }
}

impl<E: WideExpr, const VP: bool> Group for Pairs<E, VP> {
    const SHORT: bool = true;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and the four loads of 64 bytes at
        // `c * 16 + v * 64` (codes `c..c + 16`) lie inside the codes.
        unsafe {
            let mut p = [_mm512_setzero_si512(); 4];
            for (v, pv) in p.iter_mut().enumerate() {
                let x = V512(_mm512_loadu_si512(self.b.add(c * 16 + v * 64).cast()));
                *pv = self.isa.count64(E::wide([self.q, x]).0);
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

/// [`Avx512::stream_long`]'s groups: eight codes of `R` registers from `b`.
pub(super) struct Long<E, const R: usize, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    pub(super) q: [V512; R],
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const R: usize, const VP: bool> Group for Long<E, R, VP> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and code `c + v`'s `R` loads of 64
        // bytes lie inside the codes.
        unsafe {
            let mut p = [_mm512_setzero_si512(); 8];
            for (v, pv) in p.iter_mut().enumerate() {
                let code = self.b.add((c + v) * R * 64);
                for (t, q) in self.q.iter().enumerate() {
                    let x = V512(_mm512_loadu_si512(code.add(t * 64).cast()));
                    *pv = _mm512_add_epi64(*pv, self.isa.count64(E::wide([*q, x]).0));
                }
            }
            self.isa.code_sums(p)
        }
    }
}

/// [`Avx512::stream_long_tail`]'s groups: eight codes of `R` whole registers and `mask`'s
/// bytes of one more from `b`.
pub(super) struct LongTail<E, const R: usize, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    pub(super) q: [V512; R],
    /// The query's bytes past its whole registers.
    pub(super) q_rest: V512,
    pub(super) bytes: usize,
    /// The bytes past a code's whole registers, loaded...
    pub(super) mask: u64,
    /// ...and kept after the expression.
    pub(super) keep: __m512i,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const R: usize, const VP: bool> Group for LongTail<E, R, VP> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and code `c + v`'s `R` loads of 64
        // bytes and masked load of the rest (the masked-off bytes are not read) lie inside its
        // `bytes` bytes, inside the codes.
        unsafe {
            let mut p = [_mm512_setzero_si512(); 8];
            for (v, pv) in p.iter_mut().enumerate() {
                let code = self.b.add((c + v) * self.bytes);
                let x = V512(_mm512_maskz_loadu_epi8(self.mask, code.add(R * 64).cast()));
                let d = _mm512_and_si512(E::wide([self.q_rest, x]).0, self.keep);
                *pv = self.isa.count64(d);
                for (t, q) in self.q.iter().enumerate() {
                    let x = V512(_mm512_loadu_si512(code.add(t * 64).cast()));
                    *pv = _mm512_add_epi64(*pv, self.isa.count64(E::wide([*q, x]).0));
                }
            }
            self.isa.code_sums(p)
        }
    }
}

/// [`Avx512::stream_regs`]'s groups: eight codes of `regs` whole registers (and, with `TAIL`,
/// `mask`'s bytes of one more) from `b`, against the query at `q`.
pub(super) struct Regs<E, const TAIL: bool, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    /// The query, of `bytes` bytes.
    pub(super) q: *const u8,
    pub(super) regs: usize,
    pub(super) bytes: usize,
    /// The bytes past a code's whole registers, loaded...
    pub(super) mask: u64,
    /// ...and kept after the expression.
    pub(super) keep: __m512i,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const TAIL: bool, const VP: bool> Regs<E, TAIL, VP> {
    /// The query's bytes past its whole registers, the rest of the register zero.
    ///
    /// # Safety
    /// As [`Group::at`].
    #[inline(always)]
    unsafe fn q_rest(&self) -> __m512i {
        // SAFETY: the caller's: the masked load reads only the query's bytes.
        unsafe { _mm512_maskz_loadu_epi8(self.mask, self.q.add(self.regs * 64).cast()) }
    }

    /// The expression on the bytes of `code` past its whole registers and those of the query's
    /// (`q`, loaded), the rest of the register zero.
    ///
    /// # Safety
    /// As [`Group::at`] for `code`; `TAIL`.
    #[inline(always)]
    unsafe fn rest(&self, q: __m512i, code: *const u8) -> __m512i {
        // SAFETY: the caller's: the masked load reads only the code's bytes.
        unsafe {
            let x = _mm512_maskz_loadu_epi8(self.mask, code.add(self.regs * 64).cast());
            _mm512_and_si512(E::wide([V512(q), V512(x)]).0, self.keep)
        }
    }

    /// Code `c`'s counts, in the lanes of one register.
    ///
    /// # Safety
    /// As [`Group::at`] for code `c`.
    #[inline(always)]
    pub(super) unsafe fn code(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and the code's `regs` loads of 64
        // bytes and masked load of the rest lie inside its `bytes` bytes, inside the codes, as
        // the query's lie inside its bytes.
        unsafe {
            let code = self.b.add(c * self.bytes);
            let mut p = _mm512_setzero_si512();
            for t in 0..self.regs {
                let q = V512(_mm512_loadu_si512(self.q.add(t * 64).cast()));
                let x = V512(_mm512_loadu_si512(code.add(t * 64).cast()));
                p = _mm512_add_epi64(p, self.isa.count64(E::wide([q, x]).0));
            }
            if TAIL {
                let d = self.rest(self.q_rest(), code);
                p = _mm512_add_epi64(p, self.isa.count64(d));
            }
            p
        }
    }
}

impl<E: WideExpr, const TAIL: bool, const VP: bool> Group for Regs<E, TAIL, VP> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and codes `c..c + 8` lie inside the
        // codes; their loads are those of `code`, the query's register loaded once for all
        // eight.
        unsafe {
            let mut p = [_mm512_setzero_si512(); 8];
            let codes: [*const u8; 8] = std::array::from_fn(|v| self.b.add((c + v) * self.bytes));
            for t in 0..self.regs {
                let q = V512(_mm512_loadu_si512(self.q.add(t * 64).cast()));
                for (pv, code) in p.iter_mut().zip(codes) {
                    let x = V512(_mm512_loadu_si512(code.add(t * 64).cast()));
                    *pv = _mm512_add_epi64(*pv, self.isa.count64(E::wide([q, x]).0));
                }
            }
            if TAIL {
                let q = self.q_rest();
                for (pv, code) in p.iter_mut().zip(codes) {
                    let d = self.rest(q, code);
                    *pv = _mm512_add_epi64(*pv, self.isa.count64(d));
                }
            }
            self.isa.code_sums(p)
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

impl<E: WideExpr, const L: usize, const VP: bool> Group for Windows<E, L, VP> {
    const SHORT: bool = L <= 2;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        let per = 8 / L;
        // SAFETY: the caller's: the features are present, and each masked load reads the
        // `per * bytes` bytes at `(c + v * per) * bytes`, which end at most at `(c + 8) * bytes`,
        // inside the codes (the masked-off bytes are not read).
        unsafe {
            let mut p = [_mm512_setzero_si512(); L];
            for (v, pv) in p.iter_mut().enumerate() {
                let at = self.b.add((c + v * per) * self.bytes);
                let raw = _mm512_maskz_loadu_epi8(self.loaded, at.cast());
                let x = V512(_mm512_permutexvar_epi32(self.spread, raw));
                let d = _mm512_and_si512(E::wide([self.q, x]).0, self.keep);
                *pv = self.isa.count64(d);
            }
            self.isa.code_sums(p)
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

impl<E: WideExpr, const VP: bool> Group for Bytes<E, VP> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and each masked load reads only the
        // `bytes` bytes of code `c + v` (the masked-off bytes are not read), inside the codes.
        unsafe {
            let mut p = [_mm512_setzero_si512(); 8];
            for (v, pv) in p.iter_mut().enumerate() {
                let at = self.b.add((c + v) * self.bytes);
                let x = V512(_mm512_maskz_loadu_epi8(self.mask, at.cast()));
                *pv = self.isa.count64(E::wide([self.q, x]).0);
            }
            _mm512_sub_epi64(self.isa.code_sums(p), self.pad)
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

impl<E: WideExpr, const B: usize, const VP: bool> Group for Short<E, B, VP> {
    const SHORT: bool = true;
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
                self.isa.count32(d)
            } else {
                self.isa.count64(d)
            }
        }
    }
}

/// [`Avx512::stream_dwords`]' groups: sixteen codes of four bytes from `b`.
pub(super) struct Dwords<E, const VP: bool> {
    pub(super) isa: Avx512<VP>,
    pub(super) b: *const u8,
    pub(super) q: V512,
    pub(super) expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const VP: bool> Group for Dwords<E, VP> {
    const SHORT: bool = true;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m512i {
        // SAFETY: the caller's: the features are present, and the 64 bytes at `c * 4` (codes
        // `c..c + 16`) lie inside the codes.
        unsafe {
            let x = V512(_mm512_loadu_si512(self.b.add(c * 4).cast()));
            self.isa.count32(E::wide([self.q, x]).0)
        }
    }
}
