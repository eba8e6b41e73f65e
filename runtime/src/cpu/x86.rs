//! The x86_64 vector registers of the pair kernels: the values that prove the CPU has AVX2 or
//! AVX-512 (made only by the `avx2` and `avx512` versions of `simd`'s dispatchers, or by
//! detection in tests), the op's expression on whole registers through `Lanes`, and the counts
//! and sums the tiles and streams share.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use crate::element::{Lanes, WideExpr};
use std::arch::x86_64::*;

/// The AVX-512 (F, BW and VPOPCNTDQ) blocks. A value is the proof that the CPU has those
/// features: made only by [`Avx512::new_unchecked`], whose callers (the `avx512` versions of
/// `simd`'s functions) run after `isa()` detected them, and in tests by `Avx512::detect`.
///
/// `Avx512<false>` is the streams on AVX-512 F and BW without VPOPCNTDQ: each 64-bit lane
/// counted by nibble lookup (`vpshufb`) and a sum of its bytes (`vpsadbw`), what VPOPCNTQ gives
/// in one instruction. Made only by [`stream_bw`](super::avx512_stream::stream_bw), which runs after `isa::avx512bw()` detected F
/// and BW.
#[derive(Clone, Copy)]
pub(super) struct Avx512<const VPOPCNT: bool = true>(());

impl<const VPOPCNT: bool> Avx512<VPOPCNT> {
    /// The token.
    ///
    /// # Safety
    /// The CPU has AVX2, POPCNT, AVX-512 F and BW, and with `VPOPCNT` also VPOPCNTDQ and BITALG.
    #[inline(always)]
    pub(super) const unsafe fn new_unchecked() -> Self {
        Avx512(())
    }

    /// The token, where the CPU has the features it stands for.
    #[cfg(test)]
    pub(super) fn detect() -> Option<Self> {
        let base = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw");
        let count = std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512bitalg");
        // SAFETY: the features were detected.
        (base && (count || !VPOPCNT)).then(|| unsafe { Self::new_unchecked() })
    }
}

/// The AVX2 blocks. A value is the proof that the CPU has AVX2 and POPCNT: made only by
/// [`Avx2::new_unchecked`], whose callers (the `avx2` and `avx512` versions of `simd`'s
/// functions) run after `isa()` detected them, and in tests by `Avx2::detect`.
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

impl Avx2 {
    /// The token.
    ///
    /// # Safety
    /// The CPU has AVX2 and POPCNT.
    #[inline(always)]
    pub(super) const unsafe fn new_unchecked() -> Self {
        Avx2(())
    }

    /// The token, where the CPU has AVX2 and POPCNT.
    #[cfg(test)]
    pub(super) fn detect() -> Option<Self> {
        let has = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt");
        // SAFETY: the features were detected.
        has.then(|| unsafe { Self::new_unchecked() })
    }
}

/// Eight 64-bit lanes. Made only inside [`Avx512`]'s blocks.
#[derive(Clone, Copy)]
pub(super) struct V512(pub(super) __m512i);

/// Four 64-bit lanes. Made only inside [`Avx2`]'s blocks.
#[derive(Clone, Copy)]
pub(super) struct V256(pub(super) __m256i);

// SAFETY (every `unsafe` block of the impls below): the intrinsics need AVX-512F (`V512`) or
// AVX2 (`V256`), which the CPU has because a value of the type exists (see the types).
impl Lanes for V512 {
    #[inline(always)]
    fn not(self) -> Self {
        // SAFETY: see above.
        V512(unsafe { _mm512_ternarylogic_epi64::<0x55>(self.0, self.0, self.0) })
    }
    #[inline(always)]
    fn and(self, r: Self) -> Self {
        // SAFETY: see above.
        V512(unsafe { _mm512_and_si512(self.0, r.0) })
    }
    #[inline(always)]
    fn or(self, r: Self) -> Self {
        // SAFETY: see above.
        V512(unsafe { _mm512_or_si512(self.0, r.0) })
    }
    #[inline(always)]
    fn xor(self, r: Self) -> Self {
        // SAFETY: see above.
        V512(unsafe { _mm512_xor_si512(self.0, r.0) })
    }
}

impl Lanes for V256 {
    #[inline(always)]
    fn not(self) -> Self {
        // SAFETY: see above.
        V256(unsafe { _mm256_xor_si256(self.0, _mm256_set1_epi64x(-1)) })
    }
    #[inline(always)]
    fn and(self, r: Self) -> Self {
        // SAFETY: see above.
        V256(unsafe { _mm256_and_si256(self.0, r.0) })
    }
    #[inline(always)]
    fn or(self, r: Self) -> Self {
        // SAFETY: see above.
        V256(unsafe { _mm256_or_si256(self.0, r.0) })
    }
    #[inline(always)]
    fn xor(self, r: Self) -> Self {
        // SAFETY: see above.
        V256(unsafe { _mm256_xor_si256(self.0, r.0) })
    }
}

impl Avx512 {
    /// `R` rows of `a` (`ww` words each) against a packed block of eight rows of `b`: each
    /// row's eight counts of `E` in one register. With `ww` a constant where it is inlined,
    /// the loop over words unrolls.
    #[inline(always)]
    pub(super) fn sums<E: WideExpr, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        ww: usize,
    ) -> [__m512i; R] {
        let (aw, pb) = (&aw[..R * ww], &pb[..ww * 8]);
        // SAFETY: AVX-512F and VPOPCNTDQ are present (see `Avx512`); every load reads eight
        // words of `pb` at `w * 8` for `w < ww`, inside the slice of `ww * 8` words checked
        // above.
        unsafe {
            let mut acc = [_mm512_setzero_si512(); R];
            for w in 0..ww {
                let b = V512(_mm512_loadu_si512(pb.as_ptr().add(w * 8).cast()));
                for (r, acc_r) in acc.iter_mut().enumerate() {
                    let a = V512(_mm512_set1_epi64(aw[r * ww + w] as i64));
                    let v = E::wide([a, b]).0;
                    *acc_r = _mm512_add_epi64(*acc_r, _mm512_popcnt_epi64(v));
                }
            }
            acc
        }
    }
}

/// The count of `E` over the 64-bit words of `q` against those of `code` (of the same length,
/// a multiple of eight bytes): a streaming kernel's codes past its registers, one at a time.
#[inline(always)]
pub(super) fn words_count<E: WideExpr>(q: &[u8], code: &[u8]) -> u64 {
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
    q.chunks_exact(8)
        .zip(code.chunks_exact(8))
        .map(|(x, y)| u64::from(E::wide([word(x), word(y)]).count_ones()))
        .sum()
}

/// The count of `E` of a query against `code`, both read as whole words: `qp` is the query
/// widened with zeros to the words of a code, and `code` (of fewer bytes) is widened alike;
/// `pad`, what those zeros count under `E`, is taken off. The codes past the registers of the
/// streams whose codes are not whole words (in rows of fewer than sixteen), one at a time.
#[inline(always)]
pub(super) fn padded_count<E: WideExpr>(qp: &[u8], code: &[u8], pad: u64) -> u64 {
    let mut xp = [0u8; 256];
    xp[..code.len()].copy_from_slice(code);
    words_count::<E>(qp, &xp[..qp.len()]) - pad
}

/// Adjacent 64-bit lanes of `x` and of `y` summed, within each 128-bit lane: `[x0 + x1, y0 + y1]`.
/// A function, not a closure, so that it is compiled with its caller's AVX-512 features.
///
/// # Safety
/// AVX-512F must be present.
#[inline(always)]
unsafe fn sum_pairs(x: __m512i, y: __m512i) -> __m512i {
    // SAFETY: the caller's; registers only.
    unsafe { _mm512_add_epi64(_mm512_unpacklo_epi64(x, y), _mm512_unpackhi_epi64(x, y)) }
}

/// Adjacent 128-bit lanes summed: `[x0 + x1, x2 + x3, y0 + y1, y2 + y3]`.
///
/// # Safety
/// AVX-512F must be present.
#[inline(always)]
unsafe fn sum_lanes(x: __m512i, y: __m512i) -> __m512i {
    // SAFETY: the caller's; registers only.
    unsafe {
        _mm512_add_epi64(
            _mm512_shuffle_i64x2::<0x88>(x, y),
            _mm512_shuffle_i64x2::<0xDD>(x, y),
        )
    }
}

/// The bit counts of the bytes of `v` (nibble lookup): what `Avx512<false>` sums for the counts
/// VPOPCNTQ gives.
///
/// # Safety
/// AVX-512F and BW must be present.
#[inline(always)]
unsafe fn byte_counts512(v: __m512i) -> __m512i {
    // SAFETY: the caller's; registers only.
    unsafe {
        let lut = _mm512_broadcast_i32x4(_mm_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        ));
        let low = _mm512_set1_epi8(0x0f);
        let lo = _mm512_and_si512(v, low);
        let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(v), low);
        _mm512_add_epi8(_mm512_shuffle_epi8(lut, lo), _mm512_shuffle_epi8(lut, hi))
    }
}

impl<const VP: bool> Avx512<VP> {
    /// The bit counts of `v`'s eight 64-bit lanes: VPOPCNTQ, or on F and BW alone the sums of
    /// its bytes' counts by nibble lookup.
    ///
    /// # Safety
    /// As for a value of the type: its features are present.
    #[inline(always)]
    pub(super) unsafe fn count64(self, v: __m512i) -> __m512i {
        // SAFETY: the caller's; registers only. VPOPCNTQ only where `VP` says the CPU has it.
        unsafe {
            match VP {
                true => _mm512_popcnt_epi64(v),
                false => _mm512_sad_epu8(byte_counts512(v), _mm512_setzero_si512()),
            }
        }
    }

    /// The bit counts of `v`'s sixteen 32-bit lanes, as [`count64`](Self::count64) counts.
    ///
    /// # Safety
    /// As [`count64`](Self::count64).
    #[inline(always)]
    pub(super) unsafe fn count32(self, v: __m512i) -> __m512i {
        // SAFETY: the caller's; registers only. VPOPCNTD only where `VP` says the CPU has it.
        unsafe {
            match VP {
                true => _mm512_popcnt_epi32(v),
                false => {
                    let pairs = _mm512_maddubs_epi16(byte_counts512(v), _mm512_set1_epi8(1));
                    _mm512_madd_epi16(pairs, _mm512_set1_epi16(1))
                }
            }
        }
    }

    /// The streams' counts of eight codes of `L` words each, from `L` registers of word counts
    /// (register `v` holding codes `v * 8 / L..`, each over `L` adjacent lanes): adjacent lanes
    /// summed a level at a time (`vpermt2q`), one register of the eight codes' counts in order.
    #[inline(always)]
    pub(super) fn code_sums<const L: usize>(self, mut p: [__m512i; L]) -> __m512i {
        if L == 8 {
            // One code per register: adjacent lanes summed within 128-bit lanes (`vpunpck*qdq`),
            // then 128-bit lanes paired across registers (`vshufi64x2`), cheaper than the
            // cross-lane two-source permutes of the general tree below.
            // SAFETY: AVX-512F is present (see `Avx512`); the intrinsics touch registers only.
            unsafe {
                let (t01, t23) = (sum_pairs(p[0], p[1]), sum_pairs(p[2], p[3]));
                let (t45, t67) = (sum_pairs(p[4], p[5]), sum_pairs(p[6], p[7]));
                return sum_lanes(sum_lanes(t01, t23), sum_lanes(t45, t67));
            }
        }
        // SAFETY: AVX-512F is present (see `Avx512`); the intrinsics touch registers only.
        unsafe {
            let even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
            let odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
            let mut len = L;
            while len > 1 {
                for h in 0..len / 2 {
                    let (x, y) = (p[2 * h], p[2 * h + 1]);
                    p[h] = _mm512_add_epi64(
                        _mm512_permutex2var_epi64(x, even, y),
                        _mm512_permutex2var_epi64(x, odd, y),
                    );
                }
                len /= 2;
            }
            p[0]
        }
    }
}

/// The bit count of each nibble value 0-15, in both 128-bit lanes: `vpshufb`'s table.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
pub(super) unsafe fn nibble_lut() -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        )
    }
}
