//! The AVX2 streams: a few rows of `a` against rows of `b` as they lie, eight codes' counts a step
//! by nibble lookup, stored into the output's type from the register.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::x86::*;
use crate::element::{WideExpr, by_out_size, out_size};
use crate::op::{PairOut, PairTask};
use std::arch::x86_64::*;

/// Whether [`Avx2::stream`] takes codes of `bytes` bytes (in consecutive rows): 4, 8 and 16,
/// eight, four and two codes to a register, 9 to 15 as 16-byte windows ([`Windows8`]), and
/// multiples of 16 bytes from 32, one code to one or more registers and, for an odd multiple,
/// the low half of one more ([`Long8`]).
/// Other codes of more than 16 bytes keep the word tile's scalar `popcnt` on a CPU with AVX2
/// alone; with AVX-512 F and BW they take the AVX-512 streams ([`bw_streams`](super::avx512_stream::bw_streams)), whose 64-byte
/// registers halve the lookups per code.
pub(super) fn avx2_streams(bytes: usize) -> bool {
    short_avx2_streams(bytes) || super::strategy::long_avx2_codes(bytes)
}

/// The sizes of [`avx2_streams`] that hold a code in part of a register: 4 and 8 to 16 bytes.
fn short_avx2_streams(bytes: usize) -> bool {
    matches!(bytes, 4 | 8 | 9..=16)
}

/// An AVX2 stream's results for one row of `a`, eight codes at a time: `at(c)` holds the counts
/// of codes `c..c + 8` in 32-bit lanes, in order. A trait with an always-inlined method for the
/// reason [`Group`](super::avx512_emit::Group) gives.
trait Group8 {
    /// Whether a group is cheap next to its store (short codes): [`Avx2::emit8`] then makes the
    /// output size a constant of its loop.
    const SHORT: bool = true;
    /// # Safety
    /// AVX2 must be present, and codes `c..c + 8` inside the codes the value was made for.
    unsafe fn at(&self, c: usize) -> __m256i;
}

/// The bit counts of the bytes of `v` (nibble lookup): what the AVX2 tile and streams sum.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn byte_counts(v: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        let lut = nibble_lut();
        let low = _mm256_set1_epi8(0x0f);
        let lo = _mm256_and_si256(v, low);
        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
        _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
    }
}

/// The bit counts of `v`'s four 64-bit lanes.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn lane_counts(v: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe { _mm256_sad_epu8(byte_counts(v), _mm256_setzero_si256()) }
}

/// Eight 64-bit counts (`x`'s four, then `y`'s, each below 2^32) as eight 32-bit lanes in order.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn narrow8(x: __m256i, y: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        // The low halves: [x0, x1, y0, y1, x2, x3, y2, y3], then its 64-bit pairs reordered.
        let lo = _mm256_shuffle_ps::<0x88>(_mm256_castsi256_ps(x), _mm256_castsi256_ps(y));
        _mm256_permute4x64_epi64::<0xD8>(_mm256_castps_si256(lo))
    }
}

/// Adjacent 64-bit lanes of `x` and of `y` summed, within each 128-bit lane:
/// `[x0 + x1, y0 + y1, x2 + x3, y2 + y3]`. A function, not a closure, so that it is compiled with
/// its caller's AVX2 features.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn pair_sums(x: __m256i, y: __m256i) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe { _mm256_add_epi64(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y)) }
}

/// Codes of 4 bytes, eight to a register against the query repeated in every 32-bit lane; each
/// lane's byte counts summed by two multiply-adds.
struct Dwords8<E> {
    b: *const u8,
    q: V256,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr> Group8 for Dwords8<E> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m256i {
        // SAFETY: the caller's: AVX2 is present and codes `c..c + 8` (32 bytes) lie inside `b`.
        unsafe {
            let x = V256(_mm256_loadu_si256(self.b.add(c * 4).cast()));
            let bytes = byte_counts(E::wide([self.q, x]).0);
            let pairs = _mm256_maddubs_epi16(bytes, _mm256_set1_epi8(1));
            _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))
        }
    }
}

/// Codes of 8 bytes, four to a register against the query repeated in every 64-bit lane.
struct Words8<E> {
    b: *const u8,
    q: V256,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr> Group8 for Words8<E> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m256i {
        // SAFETY: the caller's: AVX2 is present and codes `c..c + 8` (64 bytes) lie inside `b`.
        unsafe {
            let p = self.b.add(c * 8);
            let x = V256(_mm256_loadu_si256(p.cast()));
            let y = V256(_mm256_loadu_si256(p.add(32).cast()));
            narrow8(
                lane_counts(E::wide([self.q, x]).0),
                lane_counts(E::wide([self.q, y]).0),
            )
        }
    }
}

/// Codes of 16 bytes, two to a register against the query repeated in both 128-bit lanes; each
/// code's two lane counts summed.
struct Pairs8<E> {
    b: *const u8,
    q: V256,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr> Group8 for Pairs8<E> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m256i {
        // SAFETY: the caller's: AVX2 is present and codes `c..c + 8` (128 bytes) lie inside `b`.
        unsafe {
            let p = self.b.add(c * 16);
            let mut r = [_mm256_setzero_si256(); 4];
            for (v, rv) in r.iter_mut().enumerate() {
                let x = V256(_mm256_loadu_si256(p.add(v * 32).cast()));
                *rv = lane_counts(E::wide([self.q, x]).0);
            }
            two_per_register(r)
        }
    }
}

/// Eight codes' counts in order, from the lane counts `r` of four registers of two codes each
/// (codes `2v` and `2v + 1` in register `v`, two 64-bit lanes a code): what [`Pairs8`] and
/// [`Windows8`] both give.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn two_per_register(r: [__m256i; 4]) -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        // Codes [0, 2, 1, 3] and [4, 6, 5, 7], narrowed to [0, 2, 4, 6, 1, 3, 5, 7].
        let mixed = narrow_unordered(pair_sums(r[0], r[1]), pair_sums(r[2], r[3]));
        _mm256_permutevar8x32_epi32(mixed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}

/// Codes of 9 to 15 bytes, two to a register as [`Pairs8`] takes codes of 16: each code read as
/// the 16 bytes from its start (into the next code), the expression's bits past the code's bytes
/// cleared by `mask`. Through the word tile, whose last word is read as the eight bytes ending the
/// code and shifted (the compiler gathering four codes' words into a register for the nibble
/// lookup), codes of 12 bytes ran well behind codes of 16 bytes streamed; streamed in windows,
/// they run ahead of the word tile, though still behind codes of 16 bytes.
struct Windows8<E, const BYTES: usize> {
    b: *const u8,
    /// Bytes at `b`: the windows read must lie inside them.
    len: usize,
    q: V256,
    mask: __m256i,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const BYTES: usize> Group8 for Windows8<E, BYTES> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m256i {
        // SAFETY: the caller's: AVX2 is present and the 16 bytes from the start of each of codes
        // `c..c + 8` lie inside `b`.
        unsafe {
            debug_assert!((c + 7) * BYTES + 16 <= self.len, "a window past the codes");
            let p = self.b.add(c * BYTES);
            let mut r = [_mm256_setzero_si256(); 4];
            for (v, rv) in r.iter_mut().enumerate() {
                let lo = p.add(2 * v * BYTES);
                let hi = lo.add(BYTES);
                let x = V256(_mm256_loadu2_m128i(hi.cast(), lo.cast()));
                *rv = lane_counts(_mm256_and_si256(E::wide([self.q, x]).0, self.mask));
            }
            two_per_register(r)
        }
    }
}

/// Codes of a multiple of 16 bytes from 32, each in `R` registers (`R` 0: `bytes / 32` of them, a
/// size known at run time) and, where `HALF` (`bytes` an odd multiple of 16), the low half of one
/// more: a code's byte counts summed across its registers in bytes (sixteen registers' counts, at
/// most 128, fit a byte) and then by `vpsadbw` into four 64-bit lanes, the half register's by a
/// `vpsadbw` of its own, eight codes' lanes then summed across. Against the word tile's scalar
/// `popcnt` (which FAISS's `HammingComputer`s also use), the nibble lookup runs on the vector
/// units: even on a CPU whose four integer pipes count a word each per cycle, the stream ran
/// ahead of the tile for codes of 32 bytes, and further ahead for 64 and 256 (one thread). On a
/// CPU with one `popcnt` per cycle and one `vpshufb`, codes of 32 bytes had run alike streamed one
/// per register and through the tile, where longer ones sum two or more registers' bytes per
/// `vpsadbw`.
struct Long8<E, const R: usize, const HALF: bool> {
    b: *const u8,
    /// The query's `bytes` bytes.
    q: *const u8,
    bytes: usize,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const R: usize, const HALF: bool> Group8 for Long8<E, R, HALF> {
    const SHORT: bool = false;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> __m256i {
        // SAFETY: the caller's: AVX2 is present, codes `c..c + 8` (each `bytes` bytes: `regs`
        // registers, then 16 bytes where `HALF`) lie inside `b`, and the query holds `bytes`
        // bytes; the loads read `regs * 32` bytes of each, and the half's the 16 after them.
        unsafe {
            let regs = if R == 0 { self.bytes / 32 } else { R };
            let mut p = [_mm256_setzero_si256(); 8];
            for (v, pv) in p.iter_mut().enumerate() {
                let code = self.b.add((c + v) * self.bytes);
                let mut t = 0;
                while t < regs {
                    let end = (t + 16).min(regs);
                    let mut counts = _mm256_setzero_si256();
                    while t < end {
                        let q = V256(_mm256_loadu_si256(self.q.add(t * 32).cast()));
                        let x = V256(_mm256_loadu_si256(code.add(t * 32).cast()));
                        counts = _mm256_add_epi8(counts, byte_counts(E::wide([q, x]).0));
                        t += 1;
                    }
                    *pv = _mm256_add_epi64(*pv, _mm256_sad_epu8(counts, _mm256_setzero_si256()));
                }
                if HALF {
                    // The last 16 bytes, in the low half of a register; the high half's counts
                    // (of the expression on zeros, 8 a byte under XNOR) are masked off.
                    let at = regs * 32;
                    let q = V256(_mm256_zextsi128_si256(_mm_loadu_si128(
                        self.q.add(at).cast(),
                    )));
                    let x = V256(_mm256_zextsi128_si256(_mm_loadu_si128(code.add(at).cast())));
                    let counts = _mm256_and_si256(
                        byte_counts(E::wide([q, x]).0),
                        _mm256_setr_epi64x(-1, -1, 0, 0),
                    );
                    *pv = _mm256_add_epi64(*pv, _mm256_sad_epu8(counts, _mm256_setzero_si256()));
                }
            }
            narrow8(quad_sums(&p[..4]), quad_sums(&p[4..]))
        }
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

/// Stores eight 32-bit counts at columns `j..j + 8` of row `i` as elements of `es` bytes.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn store8_avx2(es: usize, out: &mut PairOut<'_, '_>, i: usize, j: usize, v: __m256i) {
    let dst = &mut out.at(i, j)[..8 * es];
    let p = dst.as_mut_ptr();
    // SAFETY: the caller's: AVX2 is present; each store writes inside `dst`, `8 * es` bytes
    // (checked by the slice).
    unsafe {
        match es {
            4 => _mm256_storeu_si256(p.cast(), v),
            8 => {
                _mm256_storeu_si256(p.cast(), _mm256_cvtepu32_epi64(_mm256_castsi256_si128(v)));
                let hi = _mm256_extracti128_si256::<1>(v);
                _mm256_storeu_si256(p.add(32).cast(), _mm256_cvtepu32_epi64(hi));
            }
            2 => {
                // Counts that fit the output's 16 bits (the validator chose it for them).
                let w = _mm256_packus_epi32(v, v);
                let w = _mm256_permute4x64_epi64::<0x08>(w);
                _mm_storeu_si128(p.cast(), _mm256_castsi256_si128(w));
            }
            _ => {
                let mut c = [0u32; 8];
                _mm256_storeu_si256(c.as_mut_ptr().cast(), v);
                for (d, x) in dst.iter_mut().zip(c) {
                    *d = x as u8;
                }
            }
        }
    }
}

impl Avx2 {
    /// Rows of `a` against rows of `b` as they lie, for codes of the sizes [`avx2_streams`] names
    /// in consecutive rows (a few queries against a database): the query held in a register (codes
    /// of a multiple of 16 bytes from 32 read it from memory), eight codes' counts a step (by
    /// nibble lookup, `vpshufb`), stored into the output's type from the register. Before, AVX2
    /// CPUs took the word tile for these, at one scalar `popcnt` a word and its results stored one
    /// at a time. `false` (nothing written) for other layouts.
    #[inline(always)]
    pub(in crate::cpu) fn stream<E: WideExpr>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) -> bool {
        let bytes = task.k * task.elem_size;
        let n = task.b_rows;
        if task.b_stride != bytes || task.b.len() < n * bytes || !avx2_streams(bytes) {
            return false;
        }
        let b = &task.b[..n * bytes];
        for i in 0..task.a_rows {
            let q = &task.a[i * task.a_stride..i * task.a_stride + bytes];
            // SAFETY: AVX2 is present (see `Avx2`); the query's loads read `q` (checked by the
            // slice: 4, 8 or 16 bytes as the sizes match, a copy of 16, or for codes of a
            // multiple of 16 bytes from 32 its `bytes` bytes, read in whole registers and a last
            // half), and the groups
            // read codes `c..c + 8` for `c + 8 <= n`, inside `b` (`n` codes, checked by the slice),
            // and for codes of 9 to 15 bytes 16 bytes from each code's start for
            // `c + 8 <= n - 1`: at most to byte `(n - 2) * bytes + 16`, inside `b`.
            unsafe {
                let word =
                    |k: usize| u64::from_le_bytes(q[k * 8..k * 8 + 8].try_into().unwrap_or([0; 8]));
                match bytes {
                    4 => {
                        let d = u32::from_le_bytes(q.try_into().unwrap_or([0; 4]));
                        let src = Dwords8::<E> {
                            b: b.as_ptr(),
                            q: V256(_mm256_set1_epi32(d as i32)),
                            expr: std::marker::PhantomData,
                        };
                        self.emit8(out, i, n, &src);
                    }
                    8 => {
                        let src = Words8::<E> {
                            b: b.as_ptr(),
                            q: V256(_mm256_set1_epi64x(word(0) as i64)),
                            expr: std::marker::PhantomData,
                        };
                        self.emit8(out, i, n, &src);
                    }
                    9..=15 => {
                        // The query widened to 16 bytes (what the mask clears past it is
                        // never counted); the last code's 16 bytes would pass the end of `b`, so
                        // the groups stop before it.
                        let mut qw = [0u8; 16];
                        qw[..bytes].copy_from_slice(q);
                        let w = |k: usize| {
                            u64::from_le_bytes(qw[k * 8..k * 8 + 8].try_into().unwrap_or([0; 8]))
                                as i64
                        };
                        let idx = _mm256_setr_epi8(
                            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5,
                            6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                        );
                        let (q, mask) = (
                            V256(_mm256_setr_epi64x(w(0), w(1), w(0), w(1))),
                            _mm256_cmpgt_epi8(_mm256_set1_epi8(bytes as i8), idx),
                        );
                        let n = n.saturating_sub(1);
                        // The size a constant, so that the codes' offsets are immediates (a
                        // size known at run time kept them on the stack).
                        macro_rules! windows {
                            ($($w:literal)*) => {
                                // 15 bytes the last arm (the sizes are 9 to 15 here).
                                match bytes {
                                    $($w => self.emit8(out, i, n, &Windows8::<E, $w> {
                                        b: b.as_ptr(),
                                        len: b.len(),
                                        q,
                                        mask,
                                        expr: std::marker::PhantomData,
                                    }),)*
                                    _ => self.emit8(out, i, n, &Windows8::<E, 15> {
                                        b: b.as_ptr(),
                                        len: b.len(),
                                        q,
                                        mask,
                                        expr: std::marker::PhantomData,
                                    }),
                                }
                            };
                        }
                        windows!(9 10 11 12 13 14);
                    }
                    32.. => {
                        // Codes of one, two and four registers with the count a constant (the
                        // loop over a code's registers unrolled), others at run time; whether a
                        // half register follows is a constant too, so that codes of a multiple
                        // of 32 bytes compile to the loop they had before the half was added
                        // (with the test at run time, codes of 32 bytes ran behind that loop,
                        // though in noisy runs).
                        macro_rules! long8 {
                            ($r:literal, $half:literal) => {
                                self.emit8(
                                    out,
                                    i,
                                    n,
                                    &Long8::<E, $r, $half> {
                                        b: b.as_ptr(),
                                        q: q.as_ptr(),
                                        bytes,
                                        expr: std::marker::PhantomData,
                                    },
                                )
                            };
                        }
                        macro_rules! long {
                            ($r:literal) => {
                                match bytes.is_multiple_of(32) {
                                    true => long8!($r, false),
                                    false => long8!($r, true),
                                }
                            };
                        }
                        match bytes / 32 {
                            1 => long!(1),
                            2 => long!(2),
                            4 => long!(4),
                            _ => long!(0),
                        }
                    }
                    _ => {
                        debug_assert_eq!(bytes, 16);
                        let (w0, w1) = (word(0) as i64, word(1) as i64);
                        let src = Pairs8::<E> {
                            b: b.as_ptr(),
                            q: V256(_mm256_setr_epi64x(w0, w1, w0, w1)),
                            expr: std::marker::PhantomData,
                        };
                        self.emit8(out, i, n, &src);
                    }
                }
            }
            // The codes past the last eight (and before them the last code of 9 to 15 bytes, whose
            // window would pass the end), one at a time.
            let grouped = match bytes {
                9..=15 => n.saturating_sub(1) / 8 * 8,
                _ => n / 8 * 8,
            };
            // Codes of 9 to 15 bytes: the query widened to 16, and what the widening counts.
            let mut qp = [0u8; 16];
            let qp_pad = match bytes {
                9..=15 => {
                    qp[..bytes].copy_from_slice(q);
                    u64::from(E::wide([0u64, 0u64]).count_ones()) / 64 * (128 - 8 * bytes as u64)
                }
                _ => 0,
            };
            for j in grouped..n {
                let code = &b[j * bytes..(j + 1) * bytes];
                let d = match bytes {
                    9..=15 => padded_count::<E>(&qp, code, qp_pad),
                    4 => {
                        let w = |s: &[u8]| {
                            u64::from(u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
                        };
                        // A 4-byte code widened to a word: the expression's count of its
                        // upper half (zeros against zeros) taken off.
                        let pad = u64::from(E::wide([0u64, 0u64]).count_ones()) / 2;
                        u64::from(E::wide([w(q), w(code)]).count_ones()) - pad
                    }
                    _ => words_count::<E>(q, code),
                };
                out.put_run(i, j, &[d]);
            }
        }
        true
    }

    /// Stores row `i`'s counts of codes `0..n / 8 * 8` from `src`, eight a step, in the output's
    /// element size.
    ///
    /// # Safety
    /// As [`Group8::at`] for every group of eight codes below `n`.
    #[inline(always)]
    unsafe fn emit8<G: Group8>(self, out: &mut PairOut<'_, '_>, i: usize, n: usize, src: &G) {
        let es = out_size(out.es);
        // SAFETY: the caller's.
        unsafe { by_out_size!(G::SHORT, es, ES => self.emit8_sized::<ES, G>(es, out, i, n, src)) }
    }

    /// [`Avx2::emit8`] for outputs of `ES` bytes (0: `es`, known at run time).
    ///
    /// # Safety
    /// As [`Avx2::emit8`].
    #[inline(always)]
    unsafe fn emit8_sized<const ES: usize, G: Group8>(
        self,
        es: usize,
        out: &mut PairOut<'_, '_>,
        i: usize,
        n: usize,
        src: &G,
    ) {
        let es = if ES == 0 { es } else { ES };
        let mut c = 0;
        while c + 8 <= n {
            // SAFETY: the caller's, for codes `c..c + 8` below `n`.
            unsafe { store8_avx2(es, out, i, c, src.at(c)) };
            c += 8;
        }
    }
}
