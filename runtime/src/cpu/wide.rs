//! The register blocks of the wide pair tile and the streaming kernels, in vector registers: eight
//! rows of `a` against the eight packed rows of `b` of each word, `b`'s word loaded once for all
//! eight, and a few queries against codes read as they lie. The op's expression runs on whole
//! vectors through `Lanes`. Only the versions of `simd`'s dispatchers compiled for AVX2 or AVX-512
//! make the values that unlock them, and [`stream_bw`] the AVX-512 streams' value on F and BW
//! alone (tests make them after the same checks).

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::kernel::Dist;
use super::tiles::{Block, WordCount, blocks_fit, padding_count, window_words};
use super::tuning::ALIGN_FROM;
use crate::element::{Lanes, WideExpr, out_size};
use crate::op::{PairOut, PairTask};
use std::arch::x86_64::*;

/// The AVX-512 (F, BW and VPOPCNTDQ) blocks. A value is the proof that the CPU has those
/// features: made only by [`Avx512::new_unchecked`], whose callers (the `avx512` versions of
/// `simd`'s functions) run after `isa()` detected them, and in tests by `Avx512::detect`.
///
/// `Avx512<false>` is the streams on AVX-512 F and BW without VPOPCNTDQ: each 64-bit lane
/// counted by nibble lookup (`vpshufb`) and a sum of its bytes (`vpsadbw`), what VPOPCNTQ gives
/// in one instruction. Made only by [`stream_bw`], which runs after `isa::avx512bw()` detected F
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
struct V512(__m512i);

/// Four 64-bit lanes. Made only inside [`Avx2`]'s blocks.
#[derive(Clone, Copy)]
struct V256(__m256i);

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
    fn sums<E: WideExpr, const R: usize>(self, aw: &[u64], pb: &[u64], ww: usize) -> [__m512i; R] {
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

/// A streaming kernel's results for one row of `a`, a register at a time: `at(c)` holds the
/// results of codes `c..c + 8` (or `c..c + 16` for [`emit`]'s `SIXTEEN`), for any code `c`, so
/// that [`emit`] can start its stores where they are aligned. A trait with an always-inlined
/// method rather than a closure: a closure is compiled apart from the AVX-512 function it is
/// written in, without its features, and its intrinsics were left as calls.
trait Group {
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
unsafe fn emit<const SIXTEEN: bool>(
    out: &mut PairOut<'_, '_>,
    row: usize,
    n: usize,
    src: &impl Group,
) -> usize {
    let codes = match (n >= 16, SIXTEEN) {
        (true, _) => n,
        (false, true) => 0,
        (false, false) => n / 8 * 8,
    };
    // SAFETY: the caller's.
    unsafe { emit_sized::<SIXTEEN>(out, row, codes, src) }
    codes
}

/// [`emit`] for outputs of `es` bytes (the output's, as [`out_size`] gives it), sixteen results (`16 * es` bytes) per store. Where a row
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
unsafe fn emit_sized<const SIXTEEN: bool>(
    out: &mut PairOut<'_, '_>,
    row: usize,
    codes: usize,
    src: &impl Group,
) {
    let (non_temporal, es) = (out.non_temporal, out_size(out.es));
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
unsafe fn store16(es: usize, p: *mut u8, x: __m512i, y: __m512i, around: bool) {
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
unsafe fn store8(es: usize, p: *mut u8, x: __m512i) {
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

/// The count of `E` over the 64-bit words of `q` against those of `code` (of the same length,
/// a multiple of eight bytes): a streaming kernel's codes past its registers, one at a time.
#[inline(always)]
fn words_count<E: WideExpr>(q: &[u8], code: &[u8]) -> u64 {
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
fn padded_count<E: WideExpr>(qp: &[u8], code: &[u8], pad: u64) -> u64 {
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

/// [`Avx512::stream`] on a CPU with AVX-512 F and BW but no VPOPCNTDQ (`Avx512<false>`): every
/// size the AVX-512 streams take, each 64-bit lane counted by nibble lookup. `simd` sends it
/// the sizes [`bw_streams`] names, before the AVX2 streams.
///
/// # Safety
/// AVX2, POPCNT, AVX-512F and AVX-512BW must be present (`isa::avx512bw()`).
#[target_feature(enable = "avx2,popcnt,avx512f,avx512bw")]
pub(super) unsafe fn stream_bw<E: WideExpr>(
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) -> bool {
    // SAFETY: the caller guarantees AVX-512 F and BW (the `false` token needs no VPOPCNTDQ).
    unsafe { Avx512::<false>::new_unchecked() }.stream::<E>(task, out)
}

/// Whether codes of `bytes` bytes (in consecutive rows) stream through [`stream_bw`] on a CPU
/// with AVX-512 F and BW but no VPOPCNTDQ: every size the AVX-512 streams take but 15 bytes,
/// which they read in 32-byte windows, two to a register, where the AVX2 stream reads two
/// 16-byte windows to a register of half the width and runs ahead.
/// Where the AVX2 word tile counted codes by scalar `popcnt` (a word a cycle, on one port), the
/// nibble lookup counts a 64-byte register in about four cycles on two ports; against the AVX2
/// streams, a register holds twice the codes.
pub(super) fn bw_streams(bytes: usize) -> bool {
    streams(bytes) && bytes != 15
}

/// Whether [`Avx512::stream`] takes codes of `bytes` bytes (in consecutive rows).
pub(super) fn streams(bytes: usize) -> bool {
    matches!(
        bytes,
        1..=8 | 12 | 16 | 20 | 24 | 28 | 32 | 64 | 128 | 192 | 256
    ) || (9..256).contains(&bytes)
        || bytes > 256
}

impl<const VP: bool> Avx512<VP> {
    /// The bit counts of `v`'s eight 64-bit lanes: VPOPCNTQ, or on F and BW alone the sums of
    /// its bytes' counts by nibble lookup.
    ///
    /// # Safety
    /// As for a value of the type: its features are present.
    #[inline(always)]
    unsafe fn count64(self, v: __m512i) -> __m512i {
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
    unsafe fn count32(self, v: __m512i) -> __m512i {
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

    /// Rows of `a` against rows of `b` as they lie, for codes of the sizes [`streams`] names in
    /// consecutive rows (a few queries against a database). For 4, 8, 16, 32 or 64 bytes, each
    /// 64-byte load of `b` holds whole codes, meets the query repeated across the register, and
    /// one VPOPCNT counts them all (with `VP` false, a nibble lookup and `vpsadbw`); adjacent
    /// counts of a code are summed across registers (`vpermt2q`), so that one register holds
    /// eight codes' results. Other sizes are widened
    /// as they are loaded, or span registers. `false` (nothing written) for other layouts.
    #[inline(always)]
    pub(in crate::cpu) fn stream<E: WideExpr>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) -> bool {
        let bytes = task.k * task.elem_size;
        let n = task.b_rows;
        if task.b_stride != bytes || task.b.len() < n * bytes || !streams(bytes) {
            return false;
        }
        match bytes {
            // Codes narrower than a 32-bit or 64-bit lane, widened as they are loaded.
            1 => self.stream_short::<E, 1>(task, out),
            2 => self.stream_short::<E, 2>(task, out),
            3 => self.stream_short::<E, 3>(task, out),
            5 => self.stream_short::<E, 5>(task, out),
            6 => self.stream_short::<E, 6>(task, out),
            7 => self.stream_short::<E, 7>(task, out),
            4 => self.stream_dwords::<E>(task, out),
            8 => self.stream_words::<E, 1>(task, out),
            16 => self.stream_words::<E, 2>(task, out),
            32 => self.stream_words::<E, 4>(task, out),
            64 => self.stream_words::<E, 8>(task, out),
            // Several registers per code.
            128 => self.stream_long::<E, 2>(task, out),
            192 => self.stream_long::<E, 3>(task, out),
            256 => self.stream_long::<E, 4>(task, out),
            // Whole registers and a part of one.
            65..256 => match bytes / 64 {
                1 => self.stream_long_tail::<E, 1>(task, out),
                2 => self.stream_long_tail::<E, 2>(task, out),
                _ => self.stream_long_tail::<E, 3>(task, out),
            },
            // Longer codes: as many registers as they take, the query read from memory.
            257.. => match bytes.is_multiple_of(64) {
                true => self.stream_regs::<E, false>(task, out),
                false => self.stream_regs::<E, true>(task, out),
            },
            // Other sizes under 64 bytes: two or four codes per register where their bytes fit
            // windows of 16 or 32, else one code per register.
            9..64 => match window_words(bytes) {
                2 => self.stream_windows::<E, 2>(task, out),
                4 => self.stream_windows::<E, 4>(task, out),
                _ => self.stream_bytes::<E>(task, out),
            },
            _ => return false,
        }
        true
    }

    /// The streams' counts of eight codes of `L` words each, from `L` registers of word counts
    /// (register `v` holding codes `v * 8 / L..`, each over `L` adjacent lanes): adjacent lanes
    /// summed a level at a time (`vpermt2q`), one register of the eight codes' counts in order.
    #[inline(always)]
    fn code_sums<const L: usize>(self, mut p: [__m512i; L]) -> __m512i {
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

    /// [`stream`](Self::stream) for codes of `L` 64-bit words.
    #[inline(always)]
    fn stream_words<E: WideExpr, const L: usize>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        match L {
            2 => self.stream_whole::<E, Pairs<E, VP>>(task, out),
            _ => self.stream_whole::<E, Words<E, L, VP>>(task, out),
        }
    }

    /// [`stream`](Self::stream) for codes of `R` whole registers (128, 192 or 256 bytes): each
    /// code's registers counted and summed in one register, eight codes' registers reduced to
    /// one of their eight counts as [`code_sums`](Self::code_sums) reduces codes of eight words.
    #[inline(always)]
    fn stream_long<E: WideExpr, const R: usize>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        self.stream_whole::<E, Long<E, R, VP>>(task, out)
    }

    /// [`stream`](Self::stream) for codes of 65 to 255 bytes that are not a multiple of 64: `R`
    /// whole registers and a masked load of the rest of each code, the rest's register masked
    /// after the expression (so that XNOR does not count its padding), each code's registers
    /// summed in one and eight codes' reduced as [`stream_long`](Self::stream_long) reduces
    /// them. These sizes went to the packed tile before, where a call of few queries paid for
    /// packing `b`.
    #[inline(always)]
    fn stream_long_tail<E: WideExpr, const R: usize>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        let bytes = task.k * task.elem_size;
        debug_assert!(bytes / 64 == R && !bytes.is_multiple_of(64));
        let n = task.b_rows;
        let b = &task.b[..n * bytes];
        let rest = bytes - R * 64;
        let mask = u64::MAX >> (64 - rest);
        // The query and the codes counted one at a time, as whole words.
        let ww = bytes.div_ceil(8);
        let pad = padding_count::<E>(bytes, ww);
        for i in 0..task.a_rows {
            let mut qp = [0u8; 256];
            qp[..bytes].copy_from_slice(&task.a[i * task.a_stride..i * task.a_stride + bytes]);
            // SAFETY: the value's features are present (see `Avx512`); `qp` holds 256
            // bytes; the codes `c < n` are read by `R` loads of 64 bytes and a masked
            // load of their other `rest` bytes, inside `b` (`n * bytes` bytes, checked by the
            // slice).
            let done = unsafe {
                let mut q = [V512(_mm512_setzero_si512()); R];
                for (t, v) in q.iter_mut().enumerate() {
                    *v = V512(_mm512_loadu_si512(qp.as_ptr().add(t * 64).cast()));
                }
                let src = LongTail::<E, R, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q,
                    q_rest: V512(_mm512_loadu_si512(qp.as_ptr().add(R * 64).cast())),
                    bytes,
                    mask,
                    keep: _mm512_movm_epi8(mask),
                    expr: std::marker::PhantomData,
                };
                emit::<false>(out, i, n, &src)
            };
            // The codes past the registers (of a row of fewer than sixteen), one at a time.
            for j in done..n {
                let d = padded_count::<E>(&qp[..ww * 8], &b[j * bytes..(j + 1) * bytes], pad);
                out.put_run(i, j, &[d]);
            }
        }
    }

    /// [`stream`](Self::stream) for codes of more than 256 bytes: their whole registers (and,
    /// with `TAIL`, a masked load of the rest, masked again after the expression), with the
    /// query in memory rather than in registers, each of its registers loaded once for eight
    /// codes. Eight codes' counts are reduced as [`stream_long`](Self::stream_long) reduces
    /// them; the codes past the registers (of a row of fewer than sixteen) are counted one at a
    /// time in the same registers.
    /// These sizes went to the tiles before, whose packing of `b` a code that is not whole
    /// words needs, and a single query ran well behind FAISS.
    #[inline(always)]
    fn stream_regs<E: WideExpr, const TAIL: bool>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        let bytes = task.k * task.elem_size;
        debug_assert!(bytes > 256 && bytes.is_multiple_of(64) != TAIL);
        let n = task.b_rows;
        let b = &task.b[..n * bytes];
        let regs = bytes / 64;
        let mask = match TAIL {
            true => u64::MAX >> (64 - (bytes - regs * 64)),
            false => 0,
        };
        for i in 0..task.a_rows {
            let q = &task.a[i * task.a_stride..i * task.a_stride + bytes];
            // SAFETY: the value's features are present (see `Avx512`); the query `q` and
            // each code `c < n` are read by `regs` loads of 64 bytes and a masked load of their
            // other bytes, inside `q` (checked by the slice) and `b` (`n * bytes` bytes,
            // checked by the slice).
            unsafe {
                let src = Regs::<E, TAIL, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q: q.as_ptr(),
                    regs,
                    bytes,
                    mask,
                    keep: _mm512_movm_epi8(mask),
                    expr: std::marker::PhantomData,
                };
                let done = emit::<false>(out, i, n, &src);
                for j in done..n {
                    let d = _mm512_reduce_add_epi64(src.code(j));
                    out.put_run(i, j, &[d as u64]);
                }
            }
        }
    }

    /// The row loop of the streams of codes of whole words ([`WholeCodes`]): each row's query
    /// set in registers, eight (or sixteen) codes at a time stored by [`emit`], the codes past
    /// the registers of a row of fewer than sixteen counted one at a time.
    #[inline(always)]
    fn stream_whole<E: WideExpr, G: WholeCodes<VP>>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        let (n, bytes) = (task.b_rows, G::BYTES);
        let b = &task.b[..n * bytes];
        for i in 0..task.a_rows {
            let q = &task.a[i * task.a_stride..i * task.a_stride + bytes];
            // SAFETY: the value's features are present (see `Avx512`); `q` holds one
            // code (checked by the slice), and the groups read codes `c..c + 8` (or `c + 16`)
            // for `c + 8 <= n` (or `c + 16 <= n`), inside `b` (`n` codes, checked by the slice).
            let done = unsafe {
                let src = G::new(self, b.as_ptr(), q);
                match G::SIXTEEN {
                    true => emit::<true>(out, i, n, &src),
                    false => emit::<false>(out, i, n, &src),
                }
            };
            // The codes past the registers (of a row of fewer than sixteen), one at a time.
            for j in done..n {
                let d = words_count::<E>(q, &b[j * bytes..(j + 1) * bytes]);
                out.put_run(i, j, &[d]);
            }
        }
    }

    /// [`stream`](Self::stream) for codes of 9 to 31 bytes other than 16 that fit windows of `L`
    /// words ([`window_words`]; all but 15 and 31): `8 / L` codes per register, read by one
    /// masked byte load, each code's 32-bit pieces moved to its window (`vpermd`), where its
    /// bytes start at the code's offset from a piece (0 to 3). The query lies at the same offset
    /// in each window, and the bytes of the window that are not the code's are masked off after
    /// the expression (so that XNOR's count of them is not taken); then the windows are counted
    /// as codes of `L` words ([`code_sums`](Self::code_sums)). One query against 1,000 codes of
    /// 10 bytes read them one per register before ([`stream_bytes`](Self::stream_bytes)); codes
    /// of a multiple of four bytes (12, 20, 24, 28) start at a piece, and took the same path
    /// with the padding's count taken off instead of masked.
    #[inline(always)]
    fn stream_windows<E: WideExpr, const L: usize>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        let bytes = task.k * task.elem_size;
        debug_assert_eq!(window_words(bytes), L);
        let (n, per, win) = (task.b_rows, 8 / L, L * 8);
        let b = &task.b[..n * bytes];
        // Window `w` takes the pieces from the one that holds the code's first byte.
        let (mut idx, mut keep) = ([0i32; 16], [0u8; 64]);
        for w in 0..per {
            let first = w * bytes;
            for t in 0..win / 4 {
                idx[w * win / 4 + t] = (first / 4 + t).min(15) as i32;
            }
            keep[w * win + first % 4..w * win + first % 4 + bytes].fill(0xFF);
        }
        let loaded = u64::MAX >> (64 - per * bytes);
        let pad = padding_count::<E>(bytes, 8);
        for i in 0..task.a_rows {
            let q = &task.a[i * task.a_stride..i * task.a_stride + bytes];
            let mut qw = [0u8; 64];
            for w in 0..per {
                let off = w * bytes % 4;
                qw[w * win + off..w * win + off + bytes].copy_from_slice(q);
            }
            // SAFETY: the value's features are present (see `Avx512`); the codes
            // `c < n` are read by masked loads of their own bytes, inside `b` (`n * bytes`
            // bytes, checked by the slice).
            let done = unsafe {
                let src = Windows::<E, L, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q: V512(_mm512_loadu_si512(qw.as_ptr().cast())),
                    bytes,
                    loaded,
                    spread: _mm512_loadu_si512(idx.as_ptr().cast()),
                    keep: _mm512_loadu_si512(keep.as_ptr().cast()),
                    expr: std::marker::PhantomData,
                };
                emit::<false>(out, i, n, &src)
            };
            // The codes past the registers (of a row of fewer than sixteen), one at a time.
            let mut qp = [0u8; 64];
            qp[..bytes].copy_from_slice(q);
            for j in done..n {
                let d = padded_count::<E>(&qp, &b[j * bytes..(j + 1) * bytes], pad);
                out.put_run(i, j, &[d]);
            }
        }
    }

    /// [`stream`](Self::stream) for codes of 9 to 63 bytes that fit no window of
    /// [`stream_windows`](Self::stream_windows) (15, 31, and 33 to 63): one code per register,
    /// read by a masked byte load (AVX-512BW) that zeroes the rest of the register, counted as
    /// codes of eight words
    /// ([`code_sums`](Self::code_sums)), the padding's count under `E` taken off. Before, such
    /// codes went to the packed tile, whose packing of `b` was most of a single query's time.
    #[inline(always)]
    fn stream_bytes<E: WideExpr>(self, task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
        let bytes = task.k * task.elem_size;
        debug_assert!((9..64).contains(&bytes));
        let n = task.b_rows;
        let b = &task.b[..n * bytes];
        let mask = u64::MAX >> (64 - bytes);
        let pad = padding_count::<E>(bytes, 8);
        for i in 0..task.a_rows {
            let mut qp = [0u8; 64];
            qp[..bytes].copy_from_slice(&task.a[i * task.a_stride..i * task.a_stride + bytes]);
            // SAFETY: the value's features are present (see `Avx512`); the codes
            // `c < n` are read by masked loads of their own `bytes` bytes, inside `b`
            // (`n * bytes` bytes, checked by the slice).
            let done = unsafe {
                let src = Bytes::<E, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q: V512(_mm512_loadu_si512(qp.as_ptr().cast())),
                    bytes,
                    mask,
                    pad: _mm512_set1_epi64(pad as i64),
                    expr: std::marker::PhantomData,
                };
                emit::<false>(out, i, n, &src)
            };
            // The codes past the registers (of a row of fewer than sixteen), one at a time.
            for j in done..n {
                let d = padded_count::<E>(&qp, &b[j * bytes..(j + 1) * bytes], pad);
                out.put_run(i, j, &[d]);
            }
        }
    }

    /// [`stream`](Self::stream) for codes of `B` = 1, 2, 3, 5, 6 or 7 bytes: each code widened
    /// with zeros to a lane as it is loaded (sixteen 32-bit lanes for up to three bytes, eight
    /// 64-bit lanes above), counted a register at a time against the query repeated across the
    /// lanes, the padding masked off before the count. One and two bytes widen in the load
    /// (`vpmovzx`); the others are loaded whole (a masked load of the register's codes), their
    /// 32-bit pieces moved to the 128-bit lane that holds their codes (`vpermd`) and their bytes
    /// to their codes' lanes (`vpshufb`). Before, these sizes went to the tiles, where a single
    /// query against a large database ran well behind FAISS.
    #[inline(always)]
    fn stream_short<E: WideExpr, const B: usize>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        debug_assert_eq!(task.k * task.elem_size, B);
        let n = task.b_rows;
        let b = &task.b[..n * B];
        let short = Short::<E, B, VP>::PER;
        let lane = 64 / short;
        // 128-bit lane `l` holds codes from `l * short / 4`, which begin at byte `first` of the
        // register's codes: the four 32-bit pieces from the one that holds `first` go to it
        // (they hold its codes: `first % 4 + short / 4 * B <= 16` for every size here), and
        // byte `t` of a code's lane takes the code's byte `t`, or zero past its `B` bytes.
        let (mut idx, mut shuf) = ([0i32; 16], [0u8; 64]);
        for l in 0..4 {
            let first = l * short / 4 * B;
            for s in 0..4 {
                idx[4 * l + s] = (first / 4 + s).min(15) as i32;
            }
            for h in 0..short / 4 {
                for t in 0..lane {
                    shuf[16 * l + h * lane + t] = if t < B {
                        (first % 4 + h * B + t) as u8
                    } else {
                        0x80
                    };
                }
            }
        }
        let code_mask = u64::MAX >> (64 - 8 * B);
        for i in 0..task.a_rows {
            let mut qb = [0u8; 8];
            qb[..B].copy_from_slice(&task.a[i * task.a_stride..i * task.a_stride + B]);
            let q = u64::from_le_bytes(qb);
            // SAFETY: the value's features are present (see `Avx512`); the groups read the
            // `short * B` bytes of codes `c..c + short` for `c + short <= n`,
            // inside `b` (`n * B` bytes, checked by the slice).
            let done = unsafe {
                let (qv, keep) = if short == 16 {
                    (
                        _mm512_set1_epi32(q as i32),
                        _mm512_set1_epi32(code_mask as i32),
                    )
                } else {
                    (
                        _mm512_set1_epi64(q as i64),
                        _mm512_set1_epi64(code_mask as i64),
                    )
                };
                let src = Short::<E, B, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q: V512(qv),
                    keep,
                    spread: _mm512_loadu_si512(idx.as_ptr().cast()),
                    shuf: _mm512_loadu_si512(shuf.as_ptr().cast()),
                    expr: std::marker::PhantomData,
                };
                if short == 16 {
                    emit::<true>(out, i, n, &src)
                } else {
                    emit::<false>(out, i, n, &src)
                }
            };
            // The codes past the registers (of a row of fewer than sixteen), one at a time.
            for j in done..n {
                let mut xb = [0u8; 8];
                xb[..B].copy_from_slice(&b[j * B..(j + 1) * B]);
                let d = E::wide([q, u64::from_le_bytes(xb)]) & code_mask;
                out.put_run(i, j, &[u64::from(d.count_ones())]);
            }
        }
    }

    /// [`stream`](Self::stream) for codes of four bytes: sixteen per register, counted by
    /// 32-bit lanes.
    #[inline(always)]
    fn stream_dwords<E: WideExpr>(self, task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
        let n = task.b_rows;
        let b = &task.b[..n * 4];
        for i in 0..task.a_rows {
            let q = &task.a[i * task.a_stride..i * task.a_stride + 4];
            let q32 = u32::from_le_bytes(q.try_into().unwrap_or([0; 4]));
            // SAFETY: the value's features are present (see `Avx512`); the groups
            // read 64 bytes at `c * 4` for `c + 16 <= n`, inside `b` (`n * 4` bytes).
            let done = unsafe {
                let qv = V512(_mm512_set1_epi32(q32 as i32));
                let src = Dwords::<E, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q: qv,
                    expr: std::marker::PhantomData,
                };
                emit::<true>(out, i, n, &src)
            };
            for j in done..n {
                let x = u32::from_le_bytes(b[j * 4..j * 4 + 4].try_into().unwrap_or([0; 4]));
                let d = E::wide([u64::from(q32), u64::from(x)]) & u64::from(u32::MAX);
                out.put_run(i, j, &[u64::from(d.count_ones())]);
            }
        }
    }
}

/// The groups of a stream of codes of whole words ([`Avx512::stream_whole`]), made for one
/// query.
trait WholeCodes<const VP: bool>: Group {
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
struct Words<E, const L: usize, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    q: V512,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const L: usize, const VP: bool> Group for Words<E, L, VP> {
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
struct Pairs<E, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    q: V512,
    expr: std::marker::PhantomData<E>,
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
struct Long<E, const R: usize, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    q: [V512; R],
    expr: std::marker::PhantomData<E>,
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
struct LongTail<E, const R: usize, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    q: [V512; R],
    /// The query's bytes past its whole registers.
    q_rest: V512,
    bytes: usize,
    /// The bytes past a code's whole registers, loaded...
    mask: u64,
    /// ...and kept after the expression.
    keep: __m512i,
    expr: std::marker::PhantomData<E>,
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
struct Regs<E, const TAIL: bool, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    /// The query, of `bytes` bytes.
    q: *const u8,
    regs: usize,
    bytes: usize,
    /// The bytes past a code's whole registers, loaded...
    mask: u64,
    /// ...and kept after the expression.
    keep: __m512i,
    expr: std::marker::PhantomData<E>,
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
    unsafe fn code(&self, c: usize) -> __m512i {
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
struct Windows<E, const L: usize, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    /// The query at each window's offset.
    q: V512,
    bytes: usize,
    /// The bytes of a register's codes.
    loaded: u64,
    /// The 32-bit pieces of each window.
    spread: __m512i,
    /// The code's bytes in each window.
    keep: __m512i,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const L: usize, const VP: bool> Group for Windows<E, L, VP> {
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
struct Bytes<E, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    q: V512,
    bytes: usize,
    mask: u64,
    pad: __m512i,
    expr: std::marker::PhantomData<E>,
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
struct Short<E, const B: usize, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    /// The query, repeated across the lanes.
    q: V512,
    /// A code's bits in each lane.
    keep: __m512i,
    /// [`Avx512::stream_short`]'s moves of 32-bit pieces and of bytes.
    spread: __m512i,
    shuf: __m512i,
    expr: std::marker::PhantomData<E>,
}

impl<E, const B: usize, const VP: bool> Short<E, B, VP> {
    /// Codes per register: sixteen in 32-bit lanes up to three bytes, eight in 64-bit lanes.
    const PER: usize = if B < 4 { 16 } else { 8 };
}

impl<E: WideExpr, const B: usize, const VP: bool> Group for Short<E, B, VP> {
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
struct Dwords<E, const VP: bool> {
    isa: Avx512<VP>,
    b: *const u8,
    q: V512,
    expr: std::marker::PhantomData<E>,
}

impl<E: WideExpr, const VP: bool> Group for Dwords<E, VP> {
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
        let es = out_size(es);
        if !blocks_fit::<Self, WW, R>(es, aw, packed, blocks, dst.len(), stride) {
            debug_assert!(false, "blocks_out: rows past the output");
            return;
        }
        // SAFETY: the features of `Avx512` are present (see there); the bounds were checked above.
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
        let es = out_size(es);
        if !blocks_fit::<Self, WW, R>(es, aw, packed, blocks, dst.len(), stride) {
            debug_assert!(false, "blocks_out: rows past the output");
            return;
        }
        // SAFETY: AVX2 is present (see `Avx2`); the bounds were checked above.
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

/// [`Block::blocks_out`] of [`Avx512`], its bounds checked ([`blocks_fit`]): a function of its own,
/// compiled for the `avx512` version's features, for the reason [`blocks_out_avx2`] gives (that
/// version's debug frame had passed 1.7 MiB).
///
/// # Safety
/// The features of `Avx512` must be present, and `blocks_fit` true of the arguments.
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
#[inline]
unsafe fn blocks_out_avx512<E: WideExpr, const WW: usize, const R: usize>(
    isa: Avx512,
    es: usize,
    aw: &[u64],
    packed: &[u64],
    blocks: usize,
    dst: &mut [u8],
    stride: usize,
) {
    let base = dst.as_mut_ptr();
    // Two blocks at a time: each row's sixteen results stored in one piece (`store16`).
    for g in 0..blocks / 2 {
        let at = g * 2 * WW * 8;
        let s0 = isa.sums::<E, R>(aw, &packed[at..at + WW * 8], WW);
        let s1 = isa.sums::<E, R>(aw, &packed[at + WW * 8..at + 2 * WW * 8], WW);
        for r in 0..R {
            // SAFETY: AVX-512F is present (the caller's); the `16 * es` bytes
            // at `r * stride + g * 16 * es` lie inside `dst` (the caller's `blocks_fit`).
            unsafe {
                store16(es, base.add(r * stride + g * 16 * es), s0[r], s1[r], false);
            }
        }
    }
    if blocks % 2 == 1 {
        let jb = blocks - 1;
        let pb = &packed[jb * WW * 8..(jb + 1) * WW * 8];
        let sums = isa.sums::<E, R>(aw, pb, WW);
        for (r, a) in sums.into_iter().enumerate() {
            // SAFETY: AVX-512F is present (the caller's); the `8 * es` bytes at
            // `r * stride + jb * 8 * es` lie inside `dst` (the caller's `blocks_fit`).
            unsafe {
                store8(es, base.add(r * stride + jb * 8 * es), a);
            }
        }
    }
}

/// [`Block::blocks_out`] of [`Avx2`], its bounds checked ([`blocks_fit`]): a function of its own,
/// compiled for AVX2, where the other blocks are inlined into the `avx2` version of
/// `simd::pair_wide`. Inlined there for every code width, output size and count of rows, it took
/// that version's stack frame in a debug build past 1.3 MiB, and a test thread's 2 MiB stack
/// overflowed; the release build inlines it or calls it once for many blocks.
///
/// # Safety
/// AVX2 must be present, and `blocks_fit` true of the arguments.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn blocks_out_avx2<E: WideExpr, const WW: usize, const R: usize>(
    isa: Avx2,
    es: usize,
    aw: &[u64],
    packed: &[u64],
    blocks: usize,
    dst: &mut [u8],
    stride: usize,
) {
    let base = dst.as_mut_ptr();
    // Each row's four counts go from the register to the output in its type: through an array of
    // the block's counts, they were stored, loaded and stored again, and the array cleared for
    // every block.
    for jb in 0..blocks {
        let pb = &packed[jb * WW * 8..(jb + 1) * WW * 8];
        isa.counts::<E, R>(aw, pb, WW, |h, r, v| {
            // SAFETY: AVX2 is present (the caller's); the `4 * es` bytes at
            // `r * stride + (jb * 8 + h * 4) * es` lie inside `dst` (the caller's `blocks_fit`).
            unsafe { store4_avx2(es, base.add(r * stride + (jb * 8 + h * 4) * es), v) }
        });
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
        match es {
            4 => _mm_storeu_si128(p.cast(), d),
            2 => _mm_storel_epi64(p.cast(), _mm_packus_epi32(d, d)),
            _ => {
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
        // SAFETY: POPCNT is present (a value of `Avx2` is made only where `isa()` detected
        // AVX2 and POPCNT); the instruction reads and writes one register and the flags.
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

/// Whether [`Avx2::stream`] takes codes of `bytes` bytes (in consecutive rows): 4, 8 and 16,
/// eight, four and two codes to a register, 9 to 15 as 16-byte windows ([`Windows8`]), and
/// multiples of 16 bytes from 32, one code to one or more registers and, for an odd multiple,
/// the low half of one more ([`Long8`]).
/// Other codes of more than 16 bytes keep the word tile's scalar `popcnt` on a CPU with AVX2
/// alone; with AVX-512 F and BW they take the AVX-512 streams ([`bw_streams`]), whose 64-byte
/// registers halve the lookups per code.
pub(super) fn avx2_streams(bytes: usize) -> bool {
    short_avx2_streams(bytes) || long_avx2_streams(bytes)
}

/// The sizes of [`avx2_streams`] that hold a code in part of a register: 4 and 8 to 16 bytes.
fn short_avx2_streams(bytes: usize) -> bool {
    matches!(bytes, 4 | 8 | 9..=16)
}

/// The sizes of [`avx2_streams`] that hold a code in whole registers and at most a half
/// ([`Long8`]): multiples of 16 bytes from 32.
pub(super) fn long_avx2_streams(bytes: usize) -> bool {
    bytes >= 32 && bytes.is_multiple_of(16)
}

/// An AVX2 stream's results for one row of `a`, eight codes at a time: `at(c)` holds the counts
/// of codes `c..c + 8` in 32-bit lanes, in order. A trait with an always-inlined method for the
/// reason [`Group`] gives.
trait Group8 {
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

/// The bit count of each nibble value 0-15, in both 128-bit lanes: `vpshufb`'s table.
///
/// # Safety
/// AVX2 must be present.
#[inline(always)]
unsafe fn nibble_lut() -> __m256i {
    // SAFETY: the caller's; registers only.
    unsafe {
        _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        )
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
    unsafe fn emit8(self, out: &mut PairOut<'_, '_>, i: usize, n: usize, src: &impl Group8) {
        let es = out_size(out.es);
        let mut c = 0;
        while c + 8 <= n {
            // SAFETY: the caller's, for codes `c..c + 8` below `n`.
            unsafe { store8_avx2(es, out, i, c, src.at(c)) };
            c += 8;
        }
    }
}

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

/// Whether `D` is `u16` (the other distance type is `u64`).
#[inline(always)]
fn short_dist<D: Dist>() -> bool {
    size_of::<D>() == 2
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

/// [`scan_masked`] of `u16`s ([`short_dist`]), by [`below16_u16`]: what the AVX2 and AVX-512
/// scans take for them. Compiled for AVX2 itself, so that the closure that calls `below16_u16`
/// is too (a closure has the target features of the function it is written in, not of the one it
/// is inlined into): in an `#[inline(always)]` function without them, the closure's intrinsics
/// were left as calls of their own, five calls for every sixteen distances, and knn of 8-byte
/// codes spent far longer per distance in the scan than the streams take to count them.
///
/// # Safety
/// AVX2 must be present.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn scan_below_u16<D: Dist, F: FnMut(usize, u64) -> u64>(v: &[D], limit: u64, f: F) {
    // SAFETY: the caller's: AVX2 is present; `scan_masked` gives chunks of sixteen.
    scan_masked(v, limit, f, |chunk, limit| unsafe {
        below16_u16(bytemuck::cast_slice(chunk), limit)
    })
}

impl Avx512 {
    /// [`scan_masked`] with two unsigned compares of eight lanes (`u16`s: one AVX2 compare of
    /// sixteen).
    #[inline(always)]
    pub(super) fn scan_below<D: Dist, F: FnMut(usize, u64) -> u64>(
        self,
        v: &[D],
        limit: u64,
        f: F,
    ) {
        if short_dist::<D>() {
            // SAFETY: AVX-512F, which includes AVX2, is present (see `Avx512`).
            return unsafe { scan_below_u16(v, limit, f) };
        }
        scan_masked(v, limit, f, |chunk, limit| {
            let chunk: &[u64] = bytemuck::cast_slice(chunk);
            // SAFETY: AVX-512F is present (see `Avx512`); the two loads read words 0-7 and 8-15
            // of `chunk`, which holds sixteen.
            unsafe {
                let l = _mm512_set1_epi64(limit as i64);
                let lo = _mm512_cmplt_epu64_mask(_mm512_loadu_si512(chunk.as_ptr().cast()), l);
                let hi =
                    _mm512_cmplt_epu64_mask(_mm512_loadu_si512(chunk.as_ptr().add(8).cast()), l);
                u32::from(lo) | (u32::from(hi) << 8)
            }
        })
    }
}

impl Avx2 {
    /// [`scan_masked`] with four subtractions of four lanes: below a limit of 2^63, a value
    /// minus the limit is negative (its top bit set) where the value is below, and also where it
    /// is at least 2^63 above (which `scan_masked` compares again); from 2^63, every value is
    /// offered to that compare. The four differences ORed give one test of sixteen values, and
    /// only a chunk that holds one below builds its mask: the mask of every chunk (compares, and
    /// `movmskpd` of each) had cost as much as a third of ten queries' knn over 100,000 codes of 16
    /// bytes, and compares ORed, the compiler narrowed lane by lane before the test. `u16`s take
    /// one compare of sixteen.
    #[inline(always)]
    pub(super) fn scan_below<D: Dist, F: FnMut(usize, u64) -> u64>(
        self,
        v: &[D],
        limit: u64,
        f: F,
    ) {
        if short_dist::<D>() {
            // SAFETY: AVX2 is present (see `Avx2`).
            return unsafe { scan_below_u16(v, limit, f) };
        }
        scan_masked(v, limit, f, |chunk, limit| {
            if limit > i64::MAX as u64 {
                return 0xffff;
            }
            let chunk: &[u64] = bytemuck::cast_slice(chunk);
            // SAFETY: AVX2 is present (see `Avx2`); the four loads read words 0-15 of `chunk`,
            // which holds sixteen.
            unsafe {
                let l = _mm256_set1_epi64x(limit as i64);
                let d: [__m256i; 4] = std::array::from_fn(|w| {
                    _mm256_sub_epi64(_mm256_loadu_si256(chunk.as_ptr().add(4 * w).cast()), l)
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
        })
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "x86_64")]
    use crate::element::{Lanes, WideExpr};
    #[cfg(target_arch = "x86_64")]
    use crate::op::{PairOut, PairTask, ReduceOp};

    #[cfg(target_arch = "x86_64")]
    struct Xor;
    #[cfg(target_arch = "x86_64")]
    impl WideExpr for Xor {
        fn wide<L: Lanes>(x: [L; 2]) -> L {
            x[0].xor(x[1])
        }
    }

    /// Counts the padding too, which the kernels take off.
    #[cfg(target_arch = "x86_64")]
    struct Xnor;
    #[cfg(target_arch = "x86_64")]
    impl WideExpr for Xnor {
        fn wide<L: Lanes>(x: [L; 2]) -> L {
            x[0].xor(x[1]).not()
        }
    }

    #[cfg(target_arch = "x86_64")]
    struct And;
    #[cfg(target_arch = "x86_64")]
    impl WideExpr for And {
        fn wide<L: Lanes>(x: [L; 2]) -> L {
            x[0].and(x[1])
        }
    }

    /// Every operator.
    #[cfg(target_arch = "x86_64")]
    struct Mixed;
    #[cfg(target_arch = "x86_64")]
    impl WideExpr for Mixed {
        fn wide<L: Lanes>(x: [L; 2]) -> L {
            x[0].xor(x[1]).not().or(x[0].and(x[1].not()))
        }
    }

    /// A xorshift generator from `seed`: the tests' data, the same on every run.
    #[cfg(target_arch = "x86_64")]
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// `m` rows of `a` against `n` codes of `bytes` bytes in consecutive rows of `b`, as the
    /// streams take them.
    #[cfg(target_arch = "x86_64")]
    fn consecutive<'t>(a: &'t [u8], m: usize, b: &'t [u8], n: usize, bytes: usize) -> PairTask<'t> {
        PairTask {
            a,
            a_rows: m,
            a_stride: bytes,
            b,
            b_rows: n,
            b_stride: bytes,
            k: bytes,
            elem_size: 1,
            packed: None,
            wide_words: bytes.div_ceil(8),
            op: ReduceOp::Sum,
            identity: 0,
        }
    }

    /// The word-by-word tile's counts of `task` (`n` codes of `b`), one `u64` per pair.
    #[cfg(target_arch = "x86_64")]
    fn tile_counts<E: WideExpr>(task: &PairTask<'_>, n: usize) -> Vec<u64> {
        let mut want = vec![0u64; task.a_rows * n];
        super::super::tiles::pair_words_body::<E, _>(
            super::super::tiles::Scalar,
            task,
            &mut PairOut::tile(&mut want, n),
        );
        want
    }

    /// Each instruction set's register blocks of the wide pair tile give the scalar blocks'
    /// counts, for expressions with every operator and for every unrolled and general width.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_instruction_set_counts_blocks_alike() {
        use super::super::tiles::{Block, RB, Scalar};
        fn check<E: WideExpr>() {
            let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
            for ww in [1usize, 2, 3, 4, 5, 6, 7, 8, 16, 40] {
                let aw: Vec<u64> = (0..RB * ww).map(|_| next()).collect();
                let pb: Vec<u64> = (0..ww * 8).map(|_| next()).collect();
                let mut want = [[0u64; 8]; RB];
                Scalar.block_any::<E, RB>(&aw, &pb, ww, &mut want);
                // The scalar blocks against a plain count.
                for (r, row) in want.iter().enumerate() {
                    for (c, &v) in row.iter().enumerate() {
                        let n: u64 = (0..ww)
                            .map(|w| {
                                u64::from(E::wide([aw[r * ww + w], pb[w * 8 + c]]).count_ones())
                            })
                            .sum();
                        assert_eq!(v, n, "scalar, {ww} words");
                    }
                }
                let mut got = [[7u64; 8]; RB];
                if std::arch::is_x86_feature_detected!("avx2") {
                    // The AVX2 blocks read each row as its nibbles, each word four times over.
                    let nibbles: Vec<u64> = aw
                        .chunks_exact(ww)
                        .flat_map(|row| {
                            let lo = row.iter().map(|&w| w & super::super::tiles::NIBBLE);
                            let hi = row.iter().map(|&w| (w >> 4) & super::super::tiles::NIBBLE);
                            lo.chain(hi).flat_map(|x| [x; 4])
                        })
                        .collect();
                    super::Avx2::detect()
                        .expect("AVX2 was detected")
                        .block_any::<E, RB>(&nibbles, &pb, ww, &mut got);
                    assert_eq!(got, want, "AVX2, {ww} words");
                    if ww == 4 {
                        super::Avx2::detect()
                            .expect("AVX2 was detected")
                            .block::<E, 4, RB>(&nibbles, &pb, &mut got);
                        assert_eq!(got, want, "AVX2 unrolled, {ww} words");
                    }
                    for r in 0..RB {
                        let mut one = [[7u64; 8]; 1];
                        let row = &nibbles[r * 8 * ww..(r + 1) * 8 * ww];
                        super::Avx2::detect()
                            .expect("AVX2 was detected")
                            .block_any::<E, 1>(row, &pb, ww, &mut one);
                        assert_eq!(one[0], want[r], "AVX2 one row, {ww} words");
                    }
                }
                if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Avx512 {
                    super::Avx512::<true>::detect()
                        .expect("AVX-512 was detected")
                        .block_any::<E, RB>(&aw, &pb, ww, &mut got);
                    // One row at a time, as for the last rows of `a`.
                    for r in 0..RB {
                        let mut one = [[7u64; 8]; 1];
                        super::Avx512::<true>::detect()
                            .expect("AVX-512 was detected")
                            .block_any::<E, 1>(&aw[r * ww..(r + 1) * ww], &pb, ww, &mut one);
                        assert_eq!(one[0], want[r], "AVX-512 one row, {ww} words");
                    }
                    assert_eq!(got, want, "AVX-512, {ww} words");
                }
            }
        }
        check::<Xor>();
        check::<Mixed>();
    }

    /// The AVX2 blocks write their counts into an output of each element size as the scalar
    /// blocks do, for a block of eight rows, of four and of one, and write nothing else.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_blocks_write_every_output_type_as_scalar_blocks_do() {
        use super::super::tiles::{Block, NIBBLE, Scalar};
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        fn check<const WW: usize, const R: usize, const ES: usize>(next: &mut impl FnMut() -> u64) {
            let blocks = 3;
            let aw: Vec<u64> = (0..R * WW).map(|_| next()).collect();
            let packed: Vec<u64> = (0..blocks * WW * 8).map(|_| next()).collect();
            let nibbles: Vec<u64> = aw
                .chunks_exact(WW)
                .flat_map(|row| {
                    let lo = row.iter().map(|&w| w & NIBBLE);
                    lo.chain(row.iter().map(|&w| (w >> 4) & NIBBLE))
                        .flat_map(|x| [x; 4])
                })
                .collect();
            // Rows a stride apart with bytes between them, and bytes past the last.
            let stride = blocks * 8 * ES + 5;
            let mut want = vec![0xA5u8; R * stride + 7];
            Scalar.blocks_out::<Mixed, WW, R>(ES, &aw, &packed, blocks, &mut want, stride);
            let mut got = vec![0xA5u8; R * stride + 7];
            super::Avx2::detect()
                .expect("AVX2 was detected")
                .blocks_out::<Mixed, WW, R>(ES, &nibbles, &packed, blocks, &mut got, stride);
            assert_eq!(got, want, "{WW} words, {R} rows, {ES}-byte elements");
        }
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        check::<1, 8, 1>(&mut next);
        check::<2, 8, 2>(&mut next);
        check::<2, 4, 1>(&mut next);
        check::<2, 1, 4>(&mut next);
        check::<3, 4, 4>(&mut next);
        check::<2, 8, 8>(&mut next);
        check::<5, 1, 8>(&mut next);
    }

    /// The AVX2 word tile's `popcnt` ([`WordCount`] for `Avx2`) counts as `count_ones` does,
    /// on words with the top bit, no bit and every bit set (the word tile counting by it:
    /// `word_tile_counts_every_width_as_bytes_do`).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_popcnt_counts_as_count_ones_does() {
        use super::super::tiles::WordCount;
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt"))
        {
            return;
        }
        let mut next = xorshift(0x5DEE_CE66_D1CE_4E5B);
        for x in [
            0,
            1,
            u64::MAX,
            1 << 63,
            (1 << 63) | 1,
            0x5555_5555_5555_5555,
        ]
        .into_iter()
        .chain((0..1000).map(|_| next()))
        {
            assert_eq!(
                super::Avx2::detect().expect("AVX2 was detected").count(x),
                u64::from(x.count_ones()),
                "{x:#x}"
            );
        }
    }

    /// The word tile, with the compiler's count and (where the CPU has it) the AVX2 `popcnt`
    /// count, gives every pair the count of its bytes' bits one byte at a time, for every code
    /// width from 1 to 72 bytes and some longer ones, back to back (whose part-words are read as
    /// the eight bytes that end a code) and with a gap between rows, past the tile's run of 64
    /// results, for an expression that counts padding and one that does not.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn word_tile_counts_every_width_as_bytes_do() {
        use super::super::tiles::{Scalar, pair_words_body};
        fn check<E: WideExpr>(name: &str) {
            let mut next = xorshift(0x0DDB_A11C_0FFE_E123);
            let avx2 = std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt");
            for bytes in (1..=72).chain([96, 100, 128, 129, 200, 256, 264]) {
                for (m, n, gap) in [
                    (1usize, 1, 0usize),
                    (2, 67, 0),
                    (3, 130, 0),
                    (2, 67, 3),
                    (2, 67, 5),
                ] {
                    let stride = bytes + gap;
                    let a: Vec<u8> = (0..m * stride).map(|_| next() as u8).collect();
                    let b: Vec<u8> = (0..n * stride).map(|_| next() as u8).collect();
                    let mut task = consecutive(&a, m, &b, n, bytes);
                    (task.a_stride, task.b_stride) = (stride, stride);
                    let want: Vec<u64> = (0..m * n)
                        .map(|p| {
                            let (ar, br) = (&a[p / n * stride..], &b[p % n * stride..]);
                            (0..bytes)
                                .map(|x| {
                                    let e = E::wide([u64::from(ar[x]), u64::from(br[x])]);
                                    u64::from((e & 0xff).count_ones())
                                })
                                .sum()
                        })
                        .collect();
                    let mut got = vec![7u64; m * n];
                    pair_words_body::<E, _>(Scalar, &task, &mut PairOut::tile(&mut got, n));
                    assert_eq!(
                        got, want,
                        "{name}, {m}x{n} codes of {bytes} bytes, gap {gap}"
                    );
                    if avx2 {
                        got.fill(7);
                        pair_words_body::<E, _>(
                            super::Avx2::detect().expect("AVX2 was detected"),
                            &task,
                            &mut PairOut::tile(&mut got, n),
                        );
                        assert_eq!(got, want, "{name} (popcnt), {m}x{n}x{bytes}, gap {gap}");
                    }
                }
            }
        }
        check::<Xor>("XOR");
        check::<Mixed>("mixed");
    }

    /// The streaming kernels give the word-by-word tile's counts for every code size they take
    /// (whole words; four bytes; under four bytes and five to seven, widened to lanes; multiples
    /// of four widened to a power of two; other sizes in windows of two or four words, or one
    /// per register), every
    /// expression (XNOR counts the padding, which is taken off), one to three rows of `a`, and
    /// database sizes around the eight codes of a register; each output element is written once.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_stream_gives_the_word_tile_counts() {
        for vpopcnt in avx512_forms() {
            check::<Xor>("XOR", vpopcnt);
            check::<Xnor>("XNOR", vpopcnt);
            check::<And>("AND", vpopcnt);
            check::<Mixed>("MIXED", vpopcnt);
        }
        fn check<E: WideExpr>(name: &str, vpopcnt: bool) {
            let mut next = xorshift(0x2545_F491_4F6C_DD1D);
            let mut taken = 0;
            for bytes in (4..=64)
                .step_by(4)
                .chain([128, 192, 256])
                .chain([9, 10, 11, 13, 14, 15, 17, 18, 22, 25, 30, 31, 33, 47, 63])
                .chain([65, 96, 100, 127, 129, 200, 255])
                .chain([1, 2, 3, 5, 6, 7])
                .chain([257, 300, 320, 511, 520, 1000, 1024])
            {
                for (m, n) in [
                    (1, 0),
                    (1, 1),
                    (1, 7),
                    (2, 8),
                    (1, 9),
                    (3, 63),
                    (1, 64),
                    (2, 201),
                ] {
                    let a: Vec<u8> = (0..m * bytes + 3).map(|_| next() as u8).collect();
                    let b: Vec<u8> = (0..n * bytes).map(|_| next() as u8).collect();
                    let task = consecutive(&a, m, &b, n, bytes);
                    let want = tile_counts::<E>(&task, n);
                    let mut got = vec![u64::MAX; m * n];
                    if avx512_stream::<E>(vpopcnt, &task, &mut PairOut::tile(&mut got, n)) {
                        taken += 1;
                        assert_eq!(got, want, "{name}, {bytes} bytes, {m} x {n}, {vpopcnt}");
                    }
                }
            }
            // Every size is streamed.
            assert_eq!(taken, 54 * 8, "{name}: sizes the streams did not take");
        }
    }

    /// The forms of the AVX-512 streams this CPU runs: with VPOPCNTDQ (`true`) where `isa()` is
    /// AVX-512, and with F and BW alone (`false`, the nibble-lookup count) wherever F and BW are
    /// present, AVX-512 CPUs included, so that a CPU with VPOPCNTDQ tests both.
    #[cfg(target_arch = "x86_64")]
    fn avx512_forms() -> Vec<bool> {
        let full = crate::cpu::isa::isa() == crate::cpu::isa::Isa::Avx512;
        let bw = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw");
        [(full, true), (bw, false)]
            .into_iter()
            .filter_map(|(has, form)| has.then_some(form))
            .collect()
    }

    /// The AVX-512 stream in the form `vpopcnt` names (see [`avx512_forms`]).
    #[cfg(target_arch = "x86_64")]
    fn avx512_stream<E: WideExpr>(
        vpopcnt: bool,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) -> bool {
        match vpopcnt {
            true => super::Avx512::<true>::detect()
                .expect("AVX-512 was detected")
                .stream::<E>(task, out),
            // SAFETY: `avx512_forms` offers this form only where AVX2, POPCNT, AVX-512F and
            // AVX-512BW were detected.
            false => unsafe { super::stream_bw::<E>(task, out) },
        }
    }

    /// The AVX2 streams give the word tile's counts: codes of 4, 8 to 16 bytes and multiples of
    /// 16 from 32, every
    /// expression (XNOR counts what a narrow code or a masked word leaves), one to three rows of
    /// `a`, database sizes around the eight codes of a step, and outputs of 1, 2, 4 and 8 bytes
    /// at unaligned offsets with guards on both sides, written in every element and nowhere
    /// else.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_streams_give_the_word_tile_counts() {
        if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Baseline {
            return;
        }
        fn check<E: WideExpr>(name: &str) {
            const GUARD: usize = 64;
            let mut next = xorshift(0xD1B5_4A32_D192_ED03);
            let mut taken = 0;
            // Multiples of 16 bytes from 32: one, two, three and four registers a code, and
            // seventeen (a code's byte counts summed by `vpsadbw` every sixteen), each also with
            // a half register after them (48, 80, 144: the count of the half's high lanes, which
            // XNOR and MIXED would make nonzero, is masked off; 528: sixteen and a half).
            let sizes = [
                4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 48, 64, 80, 96, 128, 144, 256, 528, 544,
            ];
            for bytes in sizes {
                for (m, n) in [(1, 0), (1, 1), (1, 7), (2, 8), (1, 9), (3, 63), (2, 201)] {
                    let a: Vec<u8> = (0..m * bytes + 3).map(|_| next() as u8).collect();
                    let b: Vec<u8> = (0..n * bytes).map(|_| next() as u8).collect();
                    let task = consecutive(&a, m, &b, n, bytes);
                    let want = tile_counts::<E>(&task, n);
                    for (es, off) in [(8, 0), (8, 3), (4, 1), (2, 5), (1, 7)] {
                        // Counts that fit the output's elements, as the validator chooses them.
                        if es < 8 && (bytes * 8) >> (8 * es) != 0 {
                            continue;
                        }
                        let len = m * n * es;
                        let mut buf = vec![0xA5u8; len + 2 * GUARD + off];
                        let mut out = PairOut {
                            bytes: &mut buf[GUARD + off..GUARD + off + len],
                            es,
                            stride: n,
                            rows: None,
                            col: 0,
                            non_temporal: false,
                        };
                        assert!(
                            super::Avx2::detect()
                                .expect("AVX2 was detected")
                                .stream::<E>(&task, &mut out),
                            "{name}: {bytes} bytes not streamed"
                        );
                        taken += 1;
                        let got: Vec<u64> = buf[GUARD + off..GUARD + off + len]
                            .chunks_exact(es)
                            .map(|c| {
                                let mut w = [0u8; 8];
                                w[..es].copy_from_slice(c);
                                u64::from_le_bytes(w)
                            })
                            .collect();
                        assert_eq!(got, want, "{name}, {bytes} bytes, {m} x {n}, es {es}");
                        let outside = buf[..GUARD + off].iter().chain(&buf[GUARD + off + len..]);
                        assert!(
                            outside.into_iter().all(|&x| x == 0xA5),
                            "{name}, {bytes} bytes, {m} x {n}, es {es}: a byte written outside"
                        );
                    }
                }
            }
            // Sizes the AVX2 streams do not take are left to the tiles, unwritten.
            for bytes in [1, 2, 3, 5, 7, 17, 20, 24, 40, 56, 88] {
                let (a, b) = (vec![0u8; 2 * bytes], vec![0u8; 9 * bytes]);
                let task = consecutive(&a, 2, &b, 9, bytes);
                let mut got = vec![u64::MAX; 18];
                let taken = super::Avx2::detect()
                    .expect("AVX2 was detected")
                    .stream::<E>(&task, &mut PairOut::tile(&mut got, 9));
                assert!(
                    !taken && got.iter().all(|&x| x == u64::MAX),
                    "{bytes} bytes"
                );
            }
            assert!(taken >= sizes.len() * 7 * 2, "{name}: {taken} checks");
            // With AVX-512 F and BW, 15 bytes stays in these windows; the sizes about it do not.
            assert!(!super::bw_streams(15));
            assert!(
                [4, 8, 14, 16, 32, 48, 64]
                    .into_iter()
                    .all(super::bw_streams)
            );
        }
        check::<Xor>("XOR");
        check::<Xnor>("XNOR");
        check::<And>("AND");
        check::<Mixed>("MIXED");
    }

    /// The AVX2 stream of codes of a multiple of 16 bytes sums a code's byte counts in bytes for
    /// at most sixteen registers: codes equal to the query under XNOR (every bit counts, eight a
    /// byte) of 32 and more registers (1,040 bytes: 32 and a half), whose byte sums would pass
    /// 255 without that bound, give every bit, and AND of all-ones codes alike.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_avx2_codes_count_every_bit() {
        if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Baseline {
            return;
        }
        for bytes in [512, 1024, 1040, 2048, 4096] {
            let n = 9;
            let a = vec![0xFFu8; bytes];
            let b = vec![0xFFu8; n * bytes];
            let task = consecutive(&a, 1, &b, n, bytes);
            fn streamed<E: WideExpr>(task: &PairTask<'_>, n: usize) -> Vec<u64> {
                let mut got = vec![0u64; n];
                let taken = super::Avx2::detect()
                    .expect("AVX2 was detected")
                    .stream::<E>(task, &mut PairOut::tile(&mut got, n));
                assert!(taken, "{} bytes not streamed", task.k);
                got
            }
            for (name, got) in [
                ("XNOR", streamed::<Xnor>(&task, n)),
                ("AND", streamed::<And>(&task, n)),
            ] {
                assert_eq!(got, vec![bytes as u64 * 8; n], "{name}, {bytes} bytes");
            }
        }
    }

    /// Long rows align their stores: at every offset of the output from a cache line, for
    /// outputs of 1, 2, 4 and 8 bytes, stored as usual and around the caches (non-temporal
    /// stores, which fault where not aligned), the streams give the word tile's counts in every element,
    /// with rows that end on a store, on eight codes, and past them (counted one by one), and
    /// write nothing before or after the output.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn long_rows_store_aligned_at_every_offset() {
        for vpopcnt in avx512_forms() {
            long_rows_store_aligned(vpopcnt);
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn long_rows_store_aligned(vpopcnt: bool) {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        const GUARD: usize = 128;
        for bytes in [1, 2, 3, 4, 7, 8, 10, 12, 16, 18, 31, 64, 100, 128, 300, 512] {
            for n in [256, 264, 271, 272, 1000] {
                let m = 2;
                let a: Vec<u8> = (0..m * bytes).map(|_| next() as u8).collect();
                let b: Vec<u8> = (0..n * bytes).map(|_| next() as u8).collect();
                let task = consecutive(&a, m, &b, n, bytes);
                let want = tile_counts::<Xnor>(&task, n);
                for (es, non_temporal) in [1, 2, 4, 8]
                    .into_iter()
                    .flat_map(|e| [(e, false), (e, true)])
                {
                    for off in (0..64).step_by(es) {
                        let len = m * n * es;
                        let mut buf = vec![0xA5u8; len + 2 * GUARD + 64];
                        let start = GUARD + (64 - buf.as_ptr() as usize % 64) % 64 + off;
                        let mut out = PairOut {
                            bytes: &mut buf[start..start + len],
                            es,
                            stride: n,
                            rows: None,
                            col: 0,
                            non_temporal,
                        };
                        assert!(avx512_stream::<Xnor>(vpopcnt, &task, &mut out));
                        let at = |i: usize| {
                            let mut w = [0u8; 8];
                            w[..es].copy_from_slice(&buf[start + i * es..start + (i + 1) * es]);
                            u64::from_le_bytes(w)
                        };
                        let mask = if es == 8 {
                            u64::MAX
                        } else {
                            (1 << (8 * es)) - 1
                        };
                        for (i, &w) in want.iter().enumerate() {
                            assert_eq!(
                                at(i),
                                w & mask,
                                "{bytes} bytes, n {n}, es {es}, +{off}, {non_temporal}"
                            );
                        }
                        assert!(
                            buf[..start]
                                .iter()
                                .chain(&buf[start + len..])
                                .all(|&x| x == 0xA5),
                            "a byte outside the output: {bytes} bytes, n {n}, es {es}, +{off}"
                        );
                    }
                }
            }
        }
    }
}
