//! The x86_64 vector registers of the pair kernels: the values that prove the CPU has AVX2 or
//! AVX-512 (made only by the `avx2` and `avx512` versions of `simd`'s dispatchers, or by
//! detection in tests), the op's expression on whole registers through `Lanes`, and the counts
//! and sums the tiles and streams share.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::vector::{Group, Vector};
use crate::element::{Lanes, WideExpr};
use std::arch::x86_64::*;

/// The AVX-512 (F, BW and VPOPCNTDQ) blocks. A value is the proof that the CPU has those
/// features: made only by [`Avx512::new_unchecked`], whose callers (the `avx512` versions that
/// `multiversion!` writes) run where the level's detection found them, and in tests by
/// `Avx512::detect`.
///
/// `Avx512<false>` is the streams on AVX-512 F and BW without VPOPCNTDQ: each 64-bit lane
/// counted by nibble lookup (`vpshufb`) and a sum of its bytes (`vpsadbw`), what VPOPCNTQ gives
/// in one instruction. Made only by [`stream_bw`](super::avx512_stream::stream_bw), which runs
/// at the `avx512bw` level alone, and in tests by `Avx512::detect`.
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
}

/// The AVX2 blocks. A value is the proof that the CPU has AVX2 and POPCNT: made only by
/// [`Avx2::new_unchecked`], whose callers (the `avx2` and `avx512` versions that `multiversion!`
/// writes) run where the level's detection found them, and in tests by `Avx2::detect`.
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
}

/// The instruction sets whose values also prove AVX2, which knn's masked scan runs on.
///
/// # Safety
/// A value exists only where the CPU has AVX2 and POPCNT.
pub(super) unsafe trait ProvesAvx2: Vector {
    /// The bits of sixteen values below `limit` (bit `i` for `values[i]`), or of more of them:
    /// the scan compares the values of a set bit again, and offers only those below.
    fn below16(self, values: &[u64; 16], limit: u64) -> u32;
}

// SAFETY: a value of `Avx2` proves AVX2 and POPCNT (see the type), which `below16` uses.
unsafe impl ProvesAvx2 for Avx2 {
    /// Four subtractions of four lanes: below a limit of 2^63, a value minus the limit is
    /// negative (its top bit set) where the value is below, and also where it is at least 2^63
    /// above (which the scan compares again); from 2^63, every value is offered to that compare.
    /// The four differences ORed give one test of sixteen values, and only sixteen that hold one
    /// below build their mask: the mask of every sixteen had cost as much as a third of ten
    /// queries' knn over 100,000 codes of 16 bytes.
    #[inline(always)]
    fn below16(self, values: &[u64; 16], limit: u64) -> u32 {
        if limit > i64::MAX as u64 {
            return 0xffff;
        }
        // SAFETY: see the impl; the four loads read the sixteen values.
        unsafe {
            let l = _mm256_set1_epi64x(limit as i64);
            let d: [__m256i; 4] = std::array::from_fn(|w| {
                _mm256_sub_epi64(_mm256_loadu_si256(values.as_ptr().add(4 * w).cast()), l)
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
    }
}

// SAFETY: a value of `Avx512` proves AVX2, POPCNT and AVX-512 F and BW (see the type), which
// `below16` uses.
unsafe impl<const VP: bool> ProvesAvx2 for Avx512<VP> {
    /// Two unsigned compares of eight lanes.
    #[inline(always)]
    fn below16(self, values: &[u64; 16], limit: u64) -> u32 {
        // SAFETY: see the impl; the two loads read the sixteen values.
        unsafe {
            let l = _mm512_set1_epi64(limit as i64);
            let lo = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(values.as_ptr().cast()), l);
            let hi = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(values.as_ptr().add(8).cast()), l);
            u32::from(lo) | (u32::from(hi) << 8)
        }
    }
}

/// Eight 64-bit lanes. Made only inside [`Avx512`]'s blocks.
#[derive(Clone, Copy)]
pub(super) struct V512(pub(super) __m512i);

/// Four 64-bit lanes. Made only inside [`Avx2`]'s blocks.
#[derive(Clone, Copy)]
pub(super) struct V256(pub(super) __m256i);

/// `Lanes` of a register type: the op's expression on whole registers.
macro_rules! lanes {
    ($($v:ident: not($x:ident) = $not:expr, $and:ident, $or:ident, $xor:ident;)*) => {$(
        // SAFETY (every `unsafe` block): the intrinsics need AVX-512F (`V512`) or AVX2 (`V256`),
        // which the CPU has because a value of the type exists (see the types).
        impl Lanes for $v {
            #[inline(always)]
            fn not(self) -> Self {
                let $x = self.0;
                // SAFETY: see above.
                $v(unsafe { $not })
            }
            #[inline(always)]
            fn and(self, r: Self) -> Self {
                // SAFETY: see above.
                $v(unsafe { $and(self.0, r.0) })
            }
            #[inline(always)]
            fn or(self, r: Self) -> Self {
                // SAFETY: see above.
                $v(unsafe { $or(self.0, r.0) })
            }
            #[inline(always)]
            fn xor(self, r: Self) -> Self {
                // SAFETY: see above.
                $v(unsafe { $xor(self.0, r.0) })
            }
        }
    )*};
}

lanes! {
    V512: not(x) = _mm512_ternarylogic_epi64::<0x55>(x, x, x),
        _mm512_and_si512, _mm512_or_si512, _mm512_xor_si512;
    V256: not(x) = _mm256_xor_si256(x, _mm256_set1_epi64x(-1)),
        _mm256_and_si256, _mm256_or_si256, _mm256_xor_si256;
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

/// The instruction sets as codes of four bytes take them: a register's 32-bit lanes counted, one
/// code a lane.
pub(super) trait Count32: Vector {
    /// Whether a register holds sixteen codes' results (sixteen 32-bit lanes), not eight.
    const SIXTEEN: bool;
    /// The bit counts of `v`'s 32-bit lanes, as [`Vector::count`] counts 64-bit lanes.
    fn count32(self, v: Self::Reg) -> Self::Eight;
}

impl Count32 for Avx2 {
    const SIXTEEN: bool = false;
    /// Each lane's byte counts summed by two multiply-adds.
    #[inline(always)]
    fn count32(self, v: V256) -> __m256i {
        // SAFETY: AVX2 is present (see `Avx2`); registers only.
        unsafe {
            let pairs = _mm256_maddubs_epi16(byte_counts(v.0), _mm256_set1_epi8(1));
            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
        }
    }
}

impl<const VP: bool> Count32 for Avx512<VP> {
    const SIXTEEN: bool = true;
    #[inline(always)]
    fn count32(self, v: V512) -> __m512i {
        // SAFETY: the features are present (see `Avx512`); registers only. VPOPCNTD only where
        // `VP` says the CPU has it.
        unsafe {
            match VP {
                true => _mm512_popcnt_epi32(v.0),
                false => {
                    let pairs = _mm512_maddubs_epi16(byte_counts512(v.0), _mm512_set1_epi8(1));
                    _mm512_madd_epi16(pairs, _mm512_set1_epi16(1))
                }
            }
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

/// The bit counts of the bytes of `v` (nibble lookup): what the AVX2 streams sum.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
pub(super) unsafe fn byte_counts(v: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        let lut = nibble_lut();
        let low = _mm256_set1_epi8(0x0f);
        let lo = _mm256_and_si256(v, low);
        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
        _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
    }
}

/// Eight 64-bit counts (`x`'s four, then `y`'s, each below 2^32) as eight 32-bit lanes in order.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn narrow8(x: __m256i, y: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe { _mm256_permute4x64_epi64::<0xD8>(narrow_unordered(x, y)) }
}

/// The low 32 bits of `x`'s and `y`'s 64-bit lanes as `[x0, x1, y0, y1, x2, x3, y2, y3]`.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn narrow_unordered(x: __m256i, y: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        _mm256_castps_si256(_mm256_shuffle_ps::<0x88>(
            _mm256_castsi256_ps(x),
            _mm256_castsi256_ps(y),
        ))
    }
}

/// Adjacent 64-bit lanes of `x` and of `y` summed, within each 128-bit lane:
/// `[x0 + x1, y0 + y1, x2 + x3, y2 + y3]`.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn pair_sums(x: __m256i, y: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe { _mm256_add_epi64(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y)) }
}

/// Eight codes' counts in order, from the lane counts `r` of four registers of two codes each
/// (codes `2v` and `2v + 1` in register `v`, two 64-bit lanes a code).
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
pub(super) unsafe fn two_per_register(r: [__m256i; 4]) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        // Codes [0, 2, 1, 3] and [4, 6, 5, 7], narrowed to [0, 2, 4, 6, 1, 3, 5, 7].
        let mixed = narrow_unordered(pair_sums(r[0], r[1]), pair_sums(r[2], r[3]));
        _mm256_permutevar8x32_epi32(mixed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}

/// The sums of the four 64-bit lanes of each of `w[0..4]`, as four lanes in order.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn quad_sums(w: &[__m256i]) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        // [a01, b01, a23, b23] and [c01, d01, c23, d23], then their halves added across.
        let ab = pair_sums(w[0], w[1]);
        let cd = pair_sums(w[2], w[3]);
        _mm256_add_epi64(
            _mm256_permute2x128_si256::<0x20>(ab, cd),
            _mm256_permute2x128_si256::<0x31>(ab, cd),
        )
    }
}

// SAFETY (every `unsafe` block of the two impls below that touches registers only): the
// intrinsics need the features a value of the token proves (see `Avx2` and `Avx512`).
// SAFETY: a value of `Avx2` proves AVX2 and POPCNT; `LANES` and the loads and stores are those
// of its 32-byte registers.
unsafe impl Vector for Avx2 {
    type Reg = V256;
    type Eight = __m256i;
    const LANES: usize = 4;
    const REGISTERS: usize = 16;
    const SIXTEEN_AT_ONCE: bool = false;
    const SETTLE_EVERY: usize = 31;

    #[inline(always)]
    fn zero(self) -> V256 {
        // SAFETY: see above.
        V256(unsafe { _mm256_setzero_si256() })
    }
    #[inline(always)]
    fn set(self, words: &[u64; 8]) -> V256 {
        // SAFETY: see above; the load reads the first four of the eight words.
        V256(unsafe { _mm256_loadu_si256(words.as_ptr().cast()) })
    }
    #[inline(always)]
    fn add(self, x: V256, y: V256) -> V256 {
        // SAFETY: see above.
        V256(unsafe { _mm256_add_epi64(x.0, y.0) })
    }
    #[inline(always)]
    fn count_into(self, acc: V256, v: V256) -> V256 {
        // SAFETY: see above.
        V256(unsafe { _mm256_add_epi8(acc.0, byte_counts(v.0)) })
    }
    #[inline(always)]
    fn settle(self, acc: V256) -> V256 {
        // SAFETY: see above.
        V256(unsafe { _mm256_sad_epu8(acc.0, _mm256_setzero_si256()) })
    }
    #[inline(always)]
    fn first_bytes(self, bytes: usize) -> V256 {
        debug_assert!(bytes < 32);
        // SAFETY: see above.
        V256(unsafe {
            let idx = _mm256_setr_epi8(
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                23, 24, 25, 26, 27, 28, 29, 30, 31,
            );
            _mm256_cmpgt_epi8(_mm256_set1_epi8(bytes as i8), idx)
        })
    }
    #[inline(always)]
    fn code_sums<const L: usize>(self, p: &[V256; 8]) -> __m256i {
        // SAFETY: see above.
        unsafe {
            match L {
                1 => narrow8(p[0].0, p[1].0),
                2 => two_per_register([p[0].0, p[1].0, p[2].0, p[3].0]),
                _ => {
                    let q = p.map(|v| v.0);
                    narrow8(quad_sums(&q[..4]), quad_sums(&q[4..]))
                }
            }
        }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const u8) -> V256 {
        // SAFETY: the caller's, and see above.
        V256(unsafe { _mm256_loadu_si256(p.cast()) })
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const u8, bytes: usize) -> V256 {
        debug_assert!(bytes < 32 && bytes.is_multiple_of(8));
        if bytes == 16 {
            // The streams' tails (codes of an odd multiple of 16 bytes): one load of 16 bytes.
            // SAFETY: the caller's, and see above.
            return V256(unsafe { _mm256_zextsi128_si256(_mm_loadu_si128(p.cast())) });
        }
        // SAFETY: the caller's, and see above: the masked load reads only the words of its mask,
        // the first `bytes / 8`.
        V256(unsafe {
            let words = _mm256_set1_epi64x((bytes / 8) as i64);
            let mask = _mm256_cmpgt_epi64(words, _mm256_setr_epi64x(0, 1, 2, 3));
            _mm256_maskload_epi64(p.cast(), mask)
        })
    }
    #[inline(always)]
    unsafe fn store8(self, es: usize, p: *mut u8, v: __m256i) {
        // SAFETY: the caller's, and see above; each store writes inside the `8 * es` bytes.
        unsafe {
            match es {
                4 => _mm256_storeu_si256(p.cast(), v),
                8 => {
                    _mm256_storeu_si256(p.cast(), _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)));
                    let hi = _mm256_extracti128_si256::<1>(v);
                    _mm256_storeu_si256(p.add(32).cast(), _mm256_cvtepu32_epi64(hi));
                }
                // Narrowed by truncation, as every store: the packs saturate, so the bits above
                // the output's are cleared first (a count past the output's type is exact in its
                // low bits for the epilogue that maps it, as with valid bits under XNOR).
                2 => {
                    let v = _mm256_and_si256(v, _mm256_set1_epi32(0xFFFF));
                    let w = _mm256_permute4x64_epi64::<0x08>(_mm256_packus_epi32(v, v));
                    _mm_storeu_si128(p.cast(), _mm256_castsi256_si128(w));
                }
                _ => {
                    let v = _mm256_and_si256(v, _mm256_set1_epi32(0xFF));
                    let w = _mm256_permute4x64_epi64::<0x08>(_mm256_packus_epi32(v, v));
                    let b = _mm256_castsi256_si128(w);
                    _mm_storel_epi64(p.cast(), _mm_packus_epi16(b, b));
                }
            }
        }
    }
}

// SAFETY: a value of `Avx512` proves AVX2, POPCNT, AVX-512 F and BW (and VPOPCNTDQ with `VP`);
// `LANES` and the loads and stores are those of its 64-byte registers.
unsafe impl<const VP: bool> Vector for Avx512<VP> {
    type Reg = V512;
    type Eight = __m512i;
    const LANES: usize = 8;
    const REGISTERS: usize = 32;
    const SIXTEEN_AT_ONCE: bool = true;
    const SETTLE_EVERY: usize = if VP { usize::MAX } else { 31 };

    #[inline(always)]
    fn zero(self) -> V512 {
        // SAFETY: see above.
        V512(unsafe { _mm512_setzero_si512() })
    }
    #[inline(always)]
    fn set(self, words: &[u64; 8]) -> V512 {
        // SAFETY: see above; the load reads the eight words.
        V512(unsafe { _mm512_loadu_si512(words.as_ptr().cast()) })
    }
    #[inline(always)]
    fn add(self, x: V512, y: V512) -> V512 {
        // SAFETY: see above.
        V512(unsafe { _mm512_add_epi64(x.0, y.0) })
    }
    #[inline(always)]
    fn count_into(self, acc: V512, v: V512) -> V512 {
        // SAFETY: see above; VPOPCNTQ only where `VP` says the CPU has it.
        V512(unsafe {
            match VP {
                true => _mm512_add_epi64(acc.0, _mm512_popcnt_epi64(v.0)),
                false => _mm512_add_epi8(acc.0, byte_counts512(v.0)),
            }
        })
    }
    #[inline(always)]
    fn settle(self, acc: V512) -> V512 {
        match VP {
            true => acc,
            // SAFETY: see above.
            false => V512(unsafe { _mm512_sad_epu8(acc.0, _mm512_setzero_si512()) }),
        }
    }
    #[inline(always)]
    fn first_bytes(self, bytes: usize) -> V512 {
        debug_assert!((1..64).contains(&bytes));
        // SAFETY: see above.
        V512(unsafe { _mm512_movm_epi8(u64::MAX >> (64 - bytes)) })
    }
    /// Adjacent lanes summed a level at a time (`vpermt2q`), one register of the eight codes'
    /// counts in order; one code per register pairs 128-bit lanes across registers instead
    /// (`vpunpck*qdq`, then `vshufi64x2`), cheaper than the two-source permutes.
    #[inline(always)]
    fn code_sums<const L: usize>(self, p: &[V512; 8]) -> __m512i {
        // SAFETY: see above.
        unsafe {
            let mut p = p.map(|v| v.0);
            if L == 8 {
                let (t01, t23) = (sum_pairs(p[0], p[1]), sum_pairs(p[2], p[3]));
                let (t45, t67) = (sum_pairs(p[4], p[5]), sum_pairs(p[6], p[7]));
                return sum_lanes(sum_lanes(t01, t23), sum_lanes(t45, t67));
            }
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
    #[inline(always)]
    unsafe fn load(self, p: *const u8) -> V512 {
        // SAFETY: the caller's, and see above.
        V512(unsafe { _mm512_loadu_si512(p.cast()) })
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const u8, bytes: usize) -> V512 {
        // SAFETY: the caller's, and see above: the masked load reads only the first `bytes`.
        V512(unsafe { _mm512_maskz_loadu_epi8(u64::MAX >> (64 - bytes), p.cast()) })
    }
    #[inline(always)]
    unsafe fn store8(self, es: usize, p: *mut u8, v: __m512i) {
        // SAFETY: the caller's, and see above.
        unsafe { store8(es, p, v) }
    }
    /// With [`Group::SIXTEEN`], one register of sixteen `u32`s; else two of eight `u64`s
    /// ([`store16`]). Inlined only where optimized: a build without optimization inlines only
    /// what is always inlined, into one frame per dispatcher with a stack slot for every value
    /// of every variant, and three such stores per variant took a test thread's 2 MiB stack
    /// past its end.
    #[cfg_attr(not(debug_assertions), inline(always))]
    unsafe fn store16<G: Group<Self>>(
        self,
        es: usize,
        p: *mut u8,
        src: &G,
        c: usize,
        around: bool,
    ) {
        // SAFETY: the caller's, and see above.
        unsafe {
            if !G::SIXTEEN {
                return store16(es, p, src.at(c), src.at(c + 8), around);
            }
            let v = src.at(c);
            match es {
                1 => Vec16(_mm512_cvtepi32_epi8(v)).store(p, around),
                2 => Vec32(_mm512_cvtepi32_epi16(v)).store(p, around),
                4 => Vec64(v).store(p, around),
                _ => {
                    let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(v));
                    let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(v));
                    Vec64(lo).store(p, around);
                    Vec64(hi).store(p.add(64), around);
                }
            }
        }
    }
    #[inline(always)]
    fn fence(self) {
        // SAFETY: see above.
        unsafe { _mm_sfence() }
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
