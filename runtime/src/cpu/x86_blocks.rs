//! The wide tile's register blocks on AVX2 and AVX-512: eight rows of `a` against the eight packed
//! rows of `b` of each word, `b`'s word loaded once for all eight, the results stored in the
//! output's type; and the AVX2 word counts and packing the tile uses.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::isa::isa_fn;
use super::tiles::{Block, WordCount, blocks_fit};
use super::x86::*;
use crate::element::{WideExpr, by_out_size, out_size};
use std::arch::x86_64::*;

impl Block for Avx512 {
    #[inline(always)]
    fn blocks_out<E: WideExpr, const WW: usize, const R: usize>(
        self,
        es: usize,
        aw: &[u64],
        packed: &[u64],
        blocks: usize,
        dst: &mut [u8],
        stride: usize,
    ) {
        // SAFETY: the features of `Avx512` are present (see there).
        unsafe { blocks_out_avx512::<E, WW, R>(self, es, aw, packed, blocks, dst, stride) }
    }
    #[inline(always)]
    fn block_any<E: WideExpr, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        ww: usize,
        out: &mut [[u64; 8]; R],
    ) {
        for (o, a) in out.iter_mut().zip(self.sums::<E, R>(aw, pb, ww)) {
            // SAFETY: AVX-512F is present (see `Avx512`); the store writes one `[u64; 8]`.
            unsafe { _mm512_storeu_si512(o.as_mut_ptr().cast(), a) };
        }
    }
}

impl Avx2 {
    /// The wide tile's counts of `R` rows of `a` (their nibbles in `aw`, as [`Block::NIBBLES`]
    /// gives them) against the packed block `pb` of eight codes of `ww` words: `put(h, r, v)`
    /// with `v` the four 64-bit counts of row `r` against codes `4 * h..4 * h + 4`.
    ///
    /// Each pair's words are counted by nibble: `E` of `a`'s and `b`'s low nibbles, and of their
    /// high ones, each looked up. `b`'s nibbles are made once for the block's rows, `a`'s once for
    /// the call (each as a vector of four, read as an operand of `E`), so that a pair's word
    /// takes two lookups, two adds and the two operations of `E` where it took a shift and two
    /// masks more.
    #[inline(always)]
    fn counts<E: WideExpr, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        ww: usize,
        mut put: impl FnMut(usize, usize, __m256i),
    ) {
        let (aw, pb) = (&aw[..R * 8 * ww], &pb[..ww * 8]);
        // `E` of two zero bits, which fills the high four bits of each byte of `E` of nibbles:
        // masked off, for the lookup, where it is one.
        let fills = E::wide([0u64, 0u64]) != 0;
        // SAFETY: AVX2 is present (see `Avx2`); every load reads four words of `pb` at
        // `w * 8 + h * 4` for `w < ww` and `h < 2`, inside the slice of `ww * 8` words
        // checked above, or four of `aw` at `((r * 2 + n) * ww + w) * 4` for `r < R`, `n < 2`,
        // inside its `R * 8 * ww`.
        unsafe {
            let lut = nibble_lut();
            let low = _mm256_set1_epi8(0x0f);
            // Bit counts of bytes by nibble lookup, summed as bytes over up to 31 words (at most
            // 8 x 31 = 248 per byte) and then into 64-bit lanes.
            for h in 0..2 {
                let mut acc = [_mm256_setzero_si256(); R];
                let mut w0 = 0;
                while w0 < ww {
                    let w1 = (w0 + 31).min(ww);
                    let mut bytes = [_mm256_setzero_si256(); R];
                    for w in w0..w1 {
                        let p = pb.as_ptr().add(w * 8 + h * 4).cast();
                        let b = _mm256_loadu_si256(p);
                        let b_lo = V256(_mm256_and_si256(b, low));
                        let b_hi = V256(_mm256_and_si256(_mm256_srli_epi16::<4>(b), low));
                        for (r, acc_r) in bytes.iter_mut().enumerate() {
                            // Row `r`'s nibbles of word `w`, low (`n` = 0) and high, as they lie.
                            let a = |n: usize| {
                                let at = ((r * 2 + n) * ww + w) * 4;
                                V256(_mm256_loadu_si256(aw.as_ptr().add(at).cast()))
                            };
                            let mut lo = E::wide([a(0), b_lo]).0;
                            let mut hi = E::wide([a(1), b_hi]).0;
                            if fills {
                                lo = _mm256_and_si256(lo, low);
                                hi = _mm256_and_si256(hi, low);
                            }
                            let n = _mm256_add_epi8(
                                _mm256_shuffle_epi8(lut, lo),
                                _mm256_shuffle_epi8(lut, hi),
                            );
                            *acc_r = _mm256_add_epi8(*acc_r, n);
                        }
                    }
                    for (a, b) in acc.iter_mut().zip(bytes) {
                        *a = _mm256_add_epi64(*a, _mm256_sad_epu8(b, _mm256_setzero_si256()));
                    }
                    w0 = w1;
                }
                for (r, a) in acc.into_iter().enumerate() {
                    put(h, r, a);
                }
            }
        }
    }
}

impl Block for Avx2 {
    const NIBBLES: bool = true;
    #[inline(always)]
    fn blocks_out<E: WideExpr, const WW: usize, const R: usize>(
        self,
        es: usize,
        aw: &[u64],
        packed: &[u64],
        blocks: usize,
        dst: &mut [u8],
        stride: usize,
    ) {
        // SAFETY: AVX2 is present (see `Avx2`).
        unsafe { blocks_out_avx2::<E, WW, R>(self, es, aw, packed, blocks, dst, stride) }
    }
    #[inline(always)]
    fn block_any<E: WideExpr, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        ww: usize,
        out: &mut [[u64; 8]; R],
    ) {
        self.counts::<E, R>(aw, pb, ww, |h, r, v| {
            // SAFETY: AVX2 is present (see `Avx2`); the store writes words `4 * h..4 * h + 4`
            // of one `[u64; 8]` of `out`.
            unsafe { _mm256_storeu_si256(out[r].as_mut_ptr().add(h * 4).cast(), v) }
        });
    }
}

/// Each instruction set's [`Block::blocks_out`]: a function of its own, compiled for the set's
/// features, that checks the bounds ([`blocks_fit`]) and runs [`blocks_sized`]. Inlined into the
/// versions of `simd::pair_wide` for every code width, output size and count of rows, the blocks
/// took a version's stack frame in a debug build past a test thread's 2 MiB stack; the release
/// build inlines the function or calls it once for many blocks.
macro_rules! blocks_out {
    ($($level:ident: $name:ident($isa:ty);)*) => {$(
        isa_fn! { $level =>
            /// # Safety
            /// The features of the instruction set must be present.
            #[inline]
            unsafe fn $name<E: WideExpr, const WW: usize, const R: usize>(
                isa: $isa,
                es: usize,
                aw: &[u64],
                packed: &[u64],
                blocks: usize,
                dst: &mut [u8],
                stride: usize,
            ) {
                let es = out_size(es);
                if !blocks_fit::<$isa, WW, R>(es, aw, packed, blocks, dst.len(), stride) {
                    debug_assert!(false, "blocks_out: rows past the output");
                    return;
                }
                // SAFETY: the caller's; the bounds were checked above.
                unsafe {
                    by_out_size!(WW <= 2, es, ES => {
                        blocks_sized::<$isa, E, WW, R, ES>(isa, es, aw, packed, blocks, dst, stride)
                    })
                }
            }
        }
    )*};
}

blocks_out! {
    avx512: blocks_out_avx512(Avx512);
    avx2: blocks_out_avx2(Avx2);
}

/// What the blocks loop asks of an instruction set: how many packed blocks it counts at once, and
/// how their counts go from registers to the output in its type.
trait StoreBlocks: Block {
    /// Blocks counted and stored together.
    const AT_ONCE: usize;
    /// Counts the `n` packed blocks (`1..=AT_ONCE`) of `pbs` against the `R` rows of `aw` and stores
    /// row `r`'s `8 * n` results from `base + r * stride`, as elements of `es` bytes.
    ///
    /// # Safety
    /// The instruction set's features must be present, `pbs` must hold `n` blocks of `WW` words,
    /// and the `8 * n * es` bytes from each row's start must be writable.
    unsafe fn count_store<E: WideExpr, const WW: usize, const R: usize>(
        self,
        es: usize,
        aw: &[u64],
        pbs: &[u64],
        n: usize,
        base: *mut u8,
        stride: usize,
    );
}

impl StoreBlocks for Avx512 {
    /// Two: each row's sixteen results narrowed together and stored in one piece (`store16`).
    const AT_ONCE: usize = 2;
    #[inline(always)]
    unsafe fn count_store<E: WideExpr, const WW: usize, const R: usize>(
        self,
        es: usize,
        aw: &[u64],
        pbs: &[u64],
        n: usize,
        base: *mut u8,
        stride: usize,
    ) {
        let s0 = self.sums::<E, R>(aw, &pbs[..WW * 8], WW);
        if n == 2 {
            let s1 = self.sums::<E, R>(aw, &pbs[WW * 8..2 * WW * 8], WW);
            for r in 0..R {
                // SAFETY: the caller's: AVX-512F and BW, and the `16 * es` bytes of row `r`.
                unsafe { store16(es, base.add(r * stride), s0[r], s1[r], false) }
            }
        } else {
            for (r, a) in s0.into_iter().enumerate() {
                // SAFETY: the caller's: AVX-512F, and the `8 * es` bytes of row `r`.
                unsafe { store8(es, base.add(r * stride), a) }
            }
        }
    }
}

impl StoreBlocks for Avx2 {
    /// One: each row's four counts of a half block go from the register to the output (through an
    /// array of the block's counts, they were stored, loaded and stored again).
    const AT_ONCE: usize = 1;
    #[inline(always)]
    unsafe fn count_store<E: WideExpr, const WW: usize, const R: usize>(
        self,
        es: usize,
        aw: &[u64],
        pbs: &[u64],
        _: usize,
        base: *mut u8,
        stride: usize,
    ) {
        self.counts::<E, R>(aw, &pbs[..WW * 8], WW, |h, r, v| {
            // SAFETY: the caller's: AVX2, and the `4 * es` bytes at `h * 4 * es` of row `r`.
            unsafe { store4_avx2(es, base.add(r * stride + h * 4 * es), v) }
        });
    }
}

/// The wide tile's blocks for outputs of `ES` bytes (0: `es`, known at run time): `AT_ONCE` blocks
/// at a time, then the rest. Codes of one or two words pass `ES`, since the store is most of a
/// block's work there; longer codes pass it at run time (one copy of their loop).
///
/// # Safety
/// The features of `B` must be present, and `blocks_fit` true of the arguments.
#[inline(always)]
unsafe fn blocks_sized<
    B: StoreBlocks,
    E: WideExpr,
    const WW: usize,
    const R: usize,
    const ES: usize,
>(
    isa: B,
    es: usize,
    aw: &[u64],
    packed: &[u64],
    blocks: usize,
    dst: &mut [u8],
    stride: usize,
) {
    let es = if ES == 0 { es } else { ES };
    let base = dst.as_mut_ptr();
    let (full, step) = (blocks / B::AT_ONCE * B::AT_ONCE, B::AT_ONCE * WW * 8);
    for (g, pbs) in packed[..full * WW * 8].chunks_exact(step).enumerate() {
        // SAFETY: the caller's; the results of blocks `g * AT_ONCE..` start at byte
        // `g * AT_ONCE * 8 * es` of each row, inside `dst` (`blocks_fit`).
        unsafe {
            isa.count_store::<E, WW, R>(
                es,
                aw,
                pbs,
                B::AT_ONCE,
                base.add(g * 8 * B::AT_ONCE * es),
                stride,
            )
        }
    }
    if full < blocks {
        // SAFETY: as above, for the last `blocks - full` blocks.
        unsafe {
            isa.count_store::<E, WW, R>(
                es,
                aw,
                &packed[full * WW * 8..blocks * WW * 8],
                blocks - full,
                base.add(full * 8 * es),
                stride,
            )
        }
    }
}

/// Stores the four 64-bit counts of `v` (each fitting `es` bytes: the output type was chosen for
/// them) at `p` as elements of `es` bytes.
///
/// # Safety
/// AVX2 must be present, and the `4 * es` bytes at `p` writable.
#[inline(always)]
unsafe fn store4_avx2(es: usize, p: *mut u8, v: __m256i) {
    // SAFETY: the caller's.
    unsafe {
        if es == 8 {
            return _mm256_storeu_si256(p.cast(), v);
        }
        // The low halves of the four lanes, in order, in the low 128 bits.
        let d = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
            v,
            _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6),
        ));
        // Narrowed by truncation, as every store: the packs saturate, so the bits above the
        // output's are cleared first (a count past the output's type is exact in its low bits
        // for the epilogue that maps it, as with valid bits under XNOR).
        match es {
            4 => _mm_storeu_si128(p.cast(), d),
            2 => {
                let d = _mm_and_si128(d, _mm_set1_epi32(0xFFFF));
                _mm_storel_epi64(p.cast(), _mm_packus_epi32(d, d))
            }
            _ => {
                let d = _mm_and_si128(d, _mm_set1_epi32(0xFF));
                let w = _mm_packus_epi32(d, d);
                let b = _mm_packus_epi16(w, w);
                std::ptr::write_unaligned(p.cast::<i32>(), _mm_cvtsi128_si32(b));
            }
        }
    }
}

impl Avx2 {
    /// [`pack16`](super::simd::pack16): whole groups of eight codes of 16 bytes from `rows` into
    /// blocks of sixteen words of `buf`, as many as both hold; the codes packed.
    #[inline(always)]
    pub(super) fn pack16(self, rows: &[u8], buf: &mut [u64]) -> usize {
        let groups = (rows.len() / 128).min(buf.len() / 16);
        for g in 0..groups {
            // SAFETY: AVX2 is present (see `Avx2`); the loads read bytes `g * 128..g * 128 + 128`
            // of `rows` and the stores write words `g * 16..g * 16 + 16` of `buf`, inside both
            // (`groups` above).
            unsafe {
                let src = rows.as_ptr().add(g * 128);
                let load = |i: usize| _mm256_loadu_si256(src.add(32 * i).cast());
                // Two codes a register: [c0 w0, c0 w1, c1 w0, c1 w1], and so on.
                let (c01, c23, c45, c67) = (load(0), load(1), load(2), load(3));
                // The unpacks give [c0, c2, c1, c3] of a word; the permute puts them in order.
                let order = |x: __m256i| _mm256_permute4x64_epi64::<0xD8>(x);
                let words = [
                    order(_mm256_unpacklo_epi64(c01, c23)),
                    order(_mm256_unpacklo_epi64(c45, c67)),
                    order(_mm256_unpackhi_epi64(c01, c23)),
                    order(_mm256_unpackhi_epi64(c45, c67)),
                ];
                let dst = buf.as_mut_ptr().add(g * 16);
                for (i, w) in words.into_iter().enumerate() {
                    _mm256_storeu_si256(dst.add(4 * i).cast(), w);
                }
            }
        }
        groups * 8
    }
}

/// One `popcnt` instruction per word, for the word tile's codes of more than four words on AVX2.
/// Written as an instruction the compiler cannot look into: it turns [`u64::count_ones`] in the
/// word tile into nibble lookups of four codes' words gathered into one register, whose
/// shuffles and gathers all queue on the one port `popcnt` does not use, and which at 48 bytes and
/// more runs behind one `popcnt` a word. The count is written over its own input: on older Intel
/// CPUs `popcnt` waits for the old value of its destination register, and a destination of its
/// own choosing chained every code's counts one after another.
impl WordCount for Avx2 {
    #[inline(always)]
    fn count(self, x: u64) -> u64 {
        let n: u64;
        // SAFETY: POPCNT is present (a value of `Avx2` is made only where the level's detection
        // found AVX2 and POPCNT); the instruction reads and writes one register and the flags.
        unsafe {
            std::arch::asm!(
                "popcnt {0}, {0}",
                inlateout(reg) x => n,
                options(pure, nomem, nostack),
            );
        }
        n
    }
}
