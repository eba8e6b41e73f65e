//! The CPU executor's `unsafe` code, for speed on x86_64:
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

use super::tiles::Scalar;
use crate::element::{WideExpr, Word};
use crate::op::{PairOut, PairTask};
use bytemuck::Pod;

/// The executor's hot loop ([`compute`](super::kernel::compute)), in the best version this CPU runs.
#[inline(always)]
pub(crate) fn compute<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `compute_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { compute_avx512(lanes, out, f) },
        // SAFETY: AVX2 was detected on this CPU.
        Isa::Avx2 => return unsafe { compute_avx2(lanes, out, f) },
        Isa::Baseline => {}
    }
    super::kernel::compute(lanes, out, f)
}

/// [`compute_new`](super::kernel::compute_new) in the best version this CPU runs: the hot loop into a new vector.
#[inline(always)]
pub(crate) fn compute_new<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    n: usize,
    f: &impl Fn([W; N]) -> O,
) -> Vec<O> {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `compute_new_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { compute_new_avx512(lanes, n, f) },
        // SAFETY: AVX2 was detected on this CPU.
        Isa::Avx2 => return unsafe { compute_new_avx2(lanes, n, f) },
        Isa::Baseline => {}
    }
    super::kernel::compute_new(lanes, n, f)
}

/// The instruction sets the hot loop is compiled for.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Isa {
    Baseline = 1,
    Avx2 = 2,
    Avx512 = 3,
}

/// The best [`Isa`] of this CPU, detected once: small calls pay one load for the dispatch, not a
/// feature test per feature.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn isa() -> Isa {
    use std::sync::atomic::{AtomicU8, Ordering};
    static ISA: AtomicU8 = AtomicU8::new(0);
    match ISA.load(Ordering::Relaxed) {
        3 => Isa::Avx512,
        2 => Isa::Avx2,
        1 => Isa::Baseline,
        _ => {
            let isa = if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                && std::arch::is_x86_feature_detected!("avx512bitalg")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                Isa::Avx512
            } else if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                Isa::Avx2
            } else {
                Isa::Baseline
            };
            ISA.store(isa as u8, Ordering::Relaxed);
            isa
        }
    }
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
    super::kernel::compute(lanes, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg")]
fn compute_avx512<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    super::kernel::compute(lanes, out, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn compute_new_avx2<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    n: usize,
    f: &impl Fn([W; N]) -> O,
) -> Vec<O> {
    super::kernel::compute_new(lanes, n, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg")]
fn compute_new_avx512<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    n: usize,
    f: &impl Fn([W; N]) -> O,
) -> Vec<O> {
    super::kernel::compute_new(lanes, n, f)
}

/// The fused loop of a sum of counts ([`fold`](super::kernel::fold)) in the best version this CPU
/// runs.
#[inline]
pub(crate) fn fold_count<W: Word, const N: usize>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> u32,
) {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `fold_count_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { fold_count_avx512(groups, acc, row, f) },
        // SAFETY: AVX2 was detected on this CPU.
        Isa::Avx2 => return unsafe { fold_count_avx2(groups, acc, row, f) },
        Isa::Baseline => {}
    }
    fold_count_body(groups, acc, row, f)
}

/// The fused loop of a bitwise reduction `OP` (a [`fold_code`](super::fold_code)) in the best
/// version this CPU runs.
#[inline]
pub(crate) fn fold_bits<W: Word, const N: usize, const OP: u8>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> W,
) {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `fold_bits_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { fold_bits_avx512::<W, N, OP>(groups, acc, row, f) },
        // SAFETY: AVX2 was detected on this CPU.
        Isa::Avx2 => return unsafe { fold_bits_avx2::<W, N, OP>(groups, acc, row, f) },
        Isa::Baseline => {}
    }
    fold_bits_body::<W, N, OP>(groups, acc, row, f)
}

/// Counts summed at 32 bits within a row (rows are at most a chunk of the executor, far below
/// `u32::MAX / 64` elements), at 64 in the accumulators.
#[inline(always)]
fn fold_count_body<W: Word, const N: usize>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> u32,
) {
    let add = |a: u64, b: u64| a.wrapping_add(b);
    super::kernel::fold(groups, acc, row, 0u32, f, u32::wrapping_add, u64::from, add)
}

/// Elements combined at their own width within a row, zero-extended into the accumulators.
#[inline(always)]
fn fold_bits_body<W: Word, const N: usize, const OP: u8>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> W,
) {
    use super::kernel::fold;
    match OP {
        super::FOLD_AND => {
            let id = W::lit(0).not();
            fold(groups, acc, row, id, f, W::and, W::bits, |a, b| a & b)
        }
        super::FOLD_OR => fold(groups, acc, row, W::lit(0), f, W::or, W::bits, |a, b| a | b),
        _ => fold(groups, acc, row, W::lit(0), f, W::xor, W::bits, |a, b| {
            a ^ b
        }),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn fold_count_avx2<W: Word, const N: usize>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> u32,
) {
    fold_count_body(groups, acc, row, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
fn fold_count_avx512<W: Word, const N: usize>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> u32,
) {
    fold_count_body(groups, acc, row, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn fold_bits_avx2<W: Word, const N: usize, const OP: u8>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> W,
) {
    fold_bits_body::<W, N, OP>(groups, acc, row, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
fn fold_bits_avx512<W: Word, const N: usize, const OP: u8>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    f: &impl Fn([W; N]) -> W,
) {
    fold_bits_body::<W, N, OP>(groups, acc, row, f)
}

/// Calls `f(i, v[i])` for each `i` with `v[i] < limit`, in order, in the best version this CPU
/// runs: eight compares at a time, and a call only where one passes. `f` returns the new limit (a
/// candidate taken can lower it); it must itself reject what no longer passes, as a value in the
/// same eight may be offered under the limit of the eight's start.
#[inline]
pub(crate) fn scan_below<F: FnMut(usize, u64) -> u64>(v: &[u64], limit: u64, f: F) {
    #[inline(always)]
    fn body<F: FnMut(usize, u64) -> u64>(v: &[u64], mut limit: u64, mut f: F) {
        let mut chunks = v.chunks_exact(8);
        for (c, chunk) in chunks.by_ref().enumerate() {
            let mut mask = 0u32;
            for (l, &d) in chunk.iter().enumerate() {
                mask |= u32::from(d < limit) << l;
            }
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                limit = f(c * 8 + l, chunk[l]);
                mask &= mask - 1;
            }
        }
        let base = v.len() - chunks.remainder().len();
        for (l, &d) in chunks.remainder().iter().enumerate() {
            if d < limit {
                limit = f(base + l, d);
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        fn avx512<F: FnMut(usize, u64) -> u64>(v: &[u64], limit: u64, f: F) {
            body(v, limit, f)
        }
        #[target_feature(enable = "avx2")]
        fn avx2<F: FnMut(usize, u64) -> u64>(v: &[u64], limit: u64, f: F) {
            body(v, limit, f)
        }
        match isa() {
            // SAFETY: `isa` detected AVX-512F on this CPU.
            Isa::Avx512 => return unsafe { avx512(v, limit, f) },
            // SAFETY: AVX2 was detected on this CPU.
            Isa::Avx2 => return unsafe { avx2(v, limit, f) },
            Isa::Baseline => {}
        }
    }
    body(v, limit, f)
}

/// The wide pair tile ([`pair_wide_body`](super::tiles::pair_wide_body)) in the best version this
/// CPU runs: with AVX-512 VPOPCNTDQ, eight 64-bit counts per instruction; with AVX2, counts of
/// bytes by nibble lookup.
#[inline]
pub(crate) fn pair_wide<E: WideExpr>(
    task: &PairTask<'_>,
    packed: &[u64],
    out: &mut PairOut<'_, '_>,
) {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `pair_wide_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { pair_wide_avx512::<E>(task, packed, out) },
        // SAFETY: AVX2 was detected on this CPU.
        Isa::Avx2 => return unsafe { pair_wide_avx2::<E>(task, packed, out) },
        Isa::Baseline => {}
    }
    super::tiles::pair_wide_body::<E, _>(Scalar, task, packed, out)
}

/// The word-by-word pair tile on unpacked rows ([`pair_words_body`](super::tiles::pair_words_body))
/// in the best version this CPU runs (all with the `popcnt` instruction).
#[inline]
pub(crate) fn pair_words<E: WideExpr>(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `pair_words_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { pair_words_avx512::<E>(task, out) },
        // SAFETY: AVX2 (and POPCNT, which `isa` checks with it) was detected on this CPU.
        Isa::Avx2 => return unsafe { pair_words_avx2::<E>(task, out) },
        Isa::Baseline => {}
    }
    super::tiles::pair_words_body::<E>(task, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn pair_words_avx2<E: WideExpr>(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
    super::tiles::pair_words_body::<E>(task, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
fn pair_words_avx512<E: WideExpr>(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
    if !wide::Avx512(()).stream::<E>(task, out) {
        super::tiles::pair_words_body::<E>(task, out)
    }
}

/// The element-by-element pair tile in the best version this CPU runs.
#[inline]
pub(crate) fn pair_elems<W: Word>(
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
    elem: &impl Fn([W; 2]) -> u64,
) {
    #[cfg(target_arch = "x86_64")]
    match isa() {
        // SAFETY: the features `pair_elems_avx512` is compiled for were detected on this CPU.
        Isa::Avx512 => return unsafe { pair_elems_avx512(task, out, elem) },
        // SAFETY: AVX2 was detected on this CPU.
        Isa::Avx2 => return unsafe { pair_elems_avx2(task, out, elem) },
        Isa::Baseline => {}
    }
    super::tiles::pair_elems_body(task, out, elem)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn pair_wide_avx2<E: WideExpr>(task: &PairTask<'_>, packed: &[u64], out: &mut PairOut<'_, '_>) {
    super::tiles::pair_wide_body::<E, _>(wide::Avx2(()), task, packed, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
fn pair_wide_avx512<E: WideExpr>(task: &PairTask<'_>, packed: &[u64], out: &mut PairOut<'_, '_>) {
    super::tiles::pair_wide_body::<E, _>(wide::Avx512(()), task, packed, out)
}

/// The register blocks of the wide pair tile in vector registers: eight rows of `a` against the
/// eight packed rows of `b` of each word, `b`'s word loaded once for all eight. The op's
/// expression runs on whole vectors through `Lanes`.
#[cfg(target_arch = "x86_64")]
mod wide {
    use super::super::tiles::Block;
    use crate::element::{Lanes, WideExpr};
    use crate::op::{PairOut, PairTask};
    use std::arch::x86_64::*;

    /// The AVX-512 (F and VPOPCNTDQ) blocks. Made only by `pair_wide_avx512`, after `isa()`
    /// detected those features: a value is the proof that the CPU has them.
    #[derive(Clone, Copy)]
    pub(super) struct Avx512(pub(super) ());

    /// The AVX2 blocks. Made only by `pair_wide_avx2`, after AVX2 was detected.
    #[derive(Clone, Copy)]
    pub(super) struct Avx2(pub(super) ());

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
        fn sums<E: WideExpr, const R: usize>(
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

    /// One row's results from the streaming kernels, eight at a time from a register, written to
    /// the output a run of 64 at a time (narrowed to its type in one vectorized pass).
    struct Run {
        buf: [u64; 64],
        len: usize,
        /// The output row, and the column of `buf[0]`.
        row: usize,
        col: usize,
    }

    impl Run {
        #[inline(always)]
        fn new(row: usize) -> Run {
            Run {
                buf: [0; 64],
                len: 0,
                row,
                col: 0,
            }
        }

        /// Appends the eight results in `v`, writing the run out when it is full.
        #[inline(always)]
        fn push(&mut self, v: __m512i, out: &mut PairOut<'_, '_>) {
            let dst = &mut self.buf[self.len..self.len + 8];
            // SAFETY: AVX-512F is present (only `Avx512`'s methods, compiled for it, make a
            // `Run`); the store writes the eight words of `dst`, a slice taken (bounds-checked)
            // for it.
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) };
            self.len += 8;
            if self.len == self.buf.len() {
                self.flush(out);
            }
        }

        /// Writes what the run holds.
        #[inline(always)]
        fn flush(&mut self, out: &mut PairOut<'_, '_>) {
            if self.len > 0 {
                out.put_run(self.row, self.col, &self.buf[..self.len]);
                self.col += self.len;
                self.len = 0;
            }
        }
    }

    impl Avx512 {
        /// Rows of `a` against rows of `b` as they lie, for codes of 4, 8, 16, 32 or 64 bytes in
        /// consecutive rows (a few queries against a database): each 64-byte load of `b` holds
        /// whole codes, meets the query repeated across the register, and one VPOPCNT counts
        /// them all; adjacent counts of a code are summed across registers (`vpermt2q`), so that
        /// one register holds eight codes' results. `false` (nothing written) for other layouts.
        #[inline(always)]
        pub(in crate::cpu) fn stream<E: WideExpr>(
            self,
            task: &PairTask<'_>,
            out: &mut PairOut<'_, '_>,
        ) -> bool {
            let bytes = task.k * task.elem_size;
            let n = task.b_rows;
            if task.b_stride != bytes || task.b.len() < n * bytes {
                return false;
            }
            match bytes {
                4 => self.stream_dwords::<E>(task, out),
                8 => self.stream_words::<E, 1>(task, out),
                16 => self.stream_words::<E, 2>(task, out),
                32 => self.stream_words::<E, 4>(task, out),
                64 => self.stream_words::<E, 8>(task, out),
                _ => return false,
            }
            true
        }

        /// [`stream`](Self::stream) for codes of `L` 64-bit words.
        #[inline(always)]
        fn stream_words<E: WideExpr, const L: usize>(
            self,
            task: &PairTask<'_>,
            out: &mut PairOut<'_, '_>,
        ) {
            let n = task.b_rows;
            let b = &task.b[..n * L * 8];
            let whole = n / 8;
            for i in 0..task.a_rows {
                let q = &task.a[i * task.a_stride..i * task.a_stride + L * 8];
                let mut lanes = [0u64; 8];
                for (k, l) in lanes.iter_mut().enumerate() {
                    let w = k % L;
                    *l = u64::from_le_bytes(q[w * 8..w * 8 + 8].try_into().unwrap_or([0; 8]));
                }
                // SAFETY: AVX-512F and VPOPCNTDQ are present (see `Avx512`); the loads read
                // 64 bytes at `(g * L + v) * 64` for `g < n / 8` and `v < L`, inside `b`
                // (`n * L * 8` bytes, checked by the slice).
                unsafe {
                    let qv = V512(_mm512_loadu_si512(lanes.as_ptr().cast()));
                    let even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
                    let odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
                    let pairs = |x: __m512i, y: __m512i| {
                        _mm512_add_epi64(
                            _mm512_permutex2var_epi64(x, even, y),
                            _mm512_permutex2var_epi64(x, odd, y),
                        )
                    };
                    let mut run = Run::new(i);
                    for g in 0..whole {
                        let mut p = [_mm512_setzero_si512(); L];
                        for (v, pv) in p.iter_mut().enumerate() {
                            let at = b.as_ptr().add((g * L + v) * 64);
                            let x = V512(_mm512_loadu_si512(at.cast()));
                            *pv = _mm512_popcnt_epi64(E::wide([qv, x]).0);
                        }
                        // Adjacent words of a code summed, a level at a time.
                        let mut len = L;
                        while len > 1 {
                            for h in 0..len / 2 {
                                p[h] = pairs(p[2 * h], p[2 * h + 1]);
                            }
                            len /= 2;
                        }
                        run.push(p[0], out);
                    }
                    run.flush(out);
                }
                // The last codes, fewer than eight, one at a time.
                for j in whole * 8..n {
                    let mut d = 0u64;
                    for (w, word) in b[j * L * 8..(j + 1) * L * 8].chunks_exact(8).enumerate() {
                        let x = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
                        d += u64::from(E::wide([lanes[w], x]).count_ones());
                    }
                    out.put_run(i, j, &[d]);
                }
            }
        }

        /// [`stream`](Self::stream) for codes of four bytes: sixteen per register, counted by
        /// 32-bit lanes.
        #[inline(always)]
        fn stream_dwords<E: WideExpr>(self, task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
            let n = task.b_rows;
            let b = &task.b[..n * 4];
            let whole = n / 16;
            for i in 0..task.a_rows {
                let q = &task.a[i * task.a_stride..i * task.a_stride + 4];
                let q32 = u32::from_le_bytes(q.try_into().unwrap_or([0; 4]));
                // SAFETY: AVX-512F, BW and VPOPCNTDQ are present (see `Avx512`); the loads read
                // 64 bytes at `g * 64` for `g < n / 16`, inside `b` (`n * 4` bytes).
                unsafe {
                    let qv = V512(_mm512_set1_epi32(q32 as i32));
                    let mut run = Run::new(i);
                    for g in 0..whole {
                        let x = V512(_mm512_loadu_si512(b.as_ptr().add(g * 64).cast()));
                        let p = _mm512_popcnt_epi32(E::wide([qv, x]).0);
                        let lo = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(p));
                        let hi = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(p));
                        run.push(lo, out);
                        run.push(hi, out);
                    }
                    run.flush(out);
                }
                for j in whole * 16..n {
                    let x = u32::from_le_bytes(b[j * 4..j * 4 + 4].try_into().unwrap_or([0; 4]));
                    let d = E::wide([u64::from(q32), u64::from(x)]) & u64::from(u32::MAX);
                    out.put_run(i, j, &[u64::from(d.count_ones())]);
                }
            }
        }
    }

    impl Block for Avx512 {
        #[inline(always)]
        fn blocks_out<E: WideExpr, const WW: usize, const R: usize, const ES: usize>(
            self,
            aw: &[u64],
            packed: &[u64],
            blocks: usize,
            dst: &mut [u8],
            stride: usize,
        ) {
            // Every row's results inside `dst` and every block inside `packed`, checked once.
            let fits = (R - 1)
                .checked_mul(stride)
                .and_then(|x| x.checked_add(blocks * 8 * ES))
                .is_some_and(|end| end <= dst.len());
            if !fits || packed.len() < blocks * WW * 8 || aw.len() < R * WW {
                debug_assert!(false, "blocks_out: rows past the output");
                return;
            }
            let base = dst.as_mut_ptr();
            // Two blocks at a time: each row's sixteen results narrowed in registers and stored
            // in one piece (a narrowing store to memory, such as VPMOVQD's, is slow on some cores).
            for g in 0..blocks / 2 {
                let at = g * 2 * WW * 8;
                let s0 = self.sums::<E, R>(aw, &packed[at..at + WW * 8], WW);
                let s1 = self.sums::<E, R>(aw, &packed[at + WW * 8..at + 2 * WW * 8], WW);
                for r in 0..R {
                    // SAFETY: AVX-512F is present (see `Avx512`); the `16 * ES` bytes
                    // at `r * stride + g * 16 * ES` lie inside `dst` (checked above).
                    unsafe {
                        let p = base.add(r * stride + g * 16 * ES);
                        let (x, y) = (s0[r], s1[r]);
                        match ES {
                            1 => _mm_storeu_si128(
                                p.cast(),
                                _mm_unpacklo_epi64(
                                    _mm512_cvtepi64_epi8(x),
                                    _mm512_cvtepi64_epi8(y),
                                ),
                            ),
                            2 => _mm256_storeu_si256(
                                p.cast(),
                                _mm256_set_m128i(
                                    _mm512_cvtepi64_epi16(y),
                                    _mm512_cvtepi64_epi16(x),
                                ),
                            ),
                            4 => {
                                let idx = _mm512_setr_epi32(
                                    0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                                );
                                _mm512_storeu_si512(p.cast(), _mm512_permutex2var_epi32(x, idx, y));
                            }
                            _ => {
                                _mm512_storeu_si512(p.cast(), x);
                                _mm512_storeu_si512(p.add(64).cast(), y);
                            }
                        }
                    }
                }
            }
            if blocks % 2 == 1 {
                let jb = blocks - 1;
                let pb = &packed[jb * WW * 8..(jb + 1) * WW * 8];
                let sums = self.sums::<E, R>(aw, pb, WW);
                for (r, a) in sums.into_iter().enumerate() {
                    // SAFETY: AVX-512F is present (see `Avx512`); the `8 * ES` bytes at
                    // `r * stride + jb * 8 * ES` lie inside `dst` (checked above).
                    unsafe {
                        let p = base.add(r * stride + jb * 8 * ES);
                        match ES {
                            1 => _mm_storel_epi64(p.cast(), _mm512_cvtepi64_epi8(a)),
                            2 => _mm_storeu_si128(p.cast(), _mm512_cvtepi64_epi16(a)),
                            4 => _mm256_storeu_si256(p.cast(), _mm512_cvtepi64_epi32(a)),
                            _ => _mm512_storeu_si512(p.cast(), a),
                        }
                    }
                }
            }
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

    impl Block for Avx2 {
        #[inline(always)]
        fn block_any<E: WideExpr, const R: usize>(
            self,
            aw: &[u64],
            pb: &[u64],
            ww: usize,
            out: &mut [[u64; 8]; R],
        ) {
            let (aw, pb) = (&aw[..R * ww], &pb[..ww * 8]);
            // SAFETY: AVX2 is present (see `Avx2`); every load reads four words of `pb` at
            // `w * 8 + h * 4` for `w < ww` and `h < 2`, inside the slice of `ww * 8` words
            // checked above, and every store writes four words of one `[u64; 8]` of `out`.
            unsafe {
                // Bit counts of bytes by nibble lookup, summed as bytes over up to 31 words (at
                // most 8 x 31 = 248 per byte) and then into 64-bit lanes.
                let lut = _mm256_setr_epi8(
                    0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2,
                    2, 3, 2, 3, 3, 4,
                );
                let low = _mm256_set1_epi8(0x0f);
                let count = |v: __m256i| {
                    let lo = _mm256_and_si256(v, low);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
                    _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
                };
                for h in 0..2 {
                    let mut acc = [_mm256_setzero_si256(); R];
                    let mut w0 = 0;
                    while w0 < ww {
                        let w1 = (w0 + 31).min(ww);
                        let mut bytes = [_mm256_setzero_si256(); R];
                        for w in w0..w1 {
                            let p = pb.as_ptr().add(w * 8 + h * 4).cast();
                            let b = V256(_mm256_loadu_si256(p));
                            for (r, acc_r) in bytes.iter_mut().enumerate() {
                                let a = V256(_mm256_set1_epi64x(aw[r * ww + w] as i64));
                                *acc_r = _mm256_add_epi8(*acc_r, count(E::wide([a, b]).0));
                            }
                        }
                        for (a, b) in acc.iter_mut().zip(bytes) {
                            *a = _mm256_add_epi64(*a, _mm256_sad_epu8(b, _mm256_setzero_si256()));
                        }
                        w0 = w1;
                    }
                    for (o, a) in out.iter_mut().zip(acc) {
                        _mm256_storeu_si256(o.as_mut_ptr().add(h * 4).cast(), a);
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn pair_elems_avx2<W: Word>(
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
    elem: &impl Fn([W; 2]) -> u64,
) {
    super::tiles::pair_elems_body(task, out, elem)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
fn pair_elems_avx512<W: Word>(
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
    elem: &impl Fn([W; 2]) -> u64,
) {
    super::tiles::pair_elems_body(task, out, elem)
}

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

/// The top bits of 64 bytes as a mask, byte `i` at bit `i`: SSE2's `pmovmskb` on x86_64 (part of
/// its baseline), a multiply per 8 bytes elsewhere.
#[inline(always)]
pub(crate) fn movemask64(c: &[u8; 64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
        let mut m = 0u64;
        for k in 0..4 {
            // SAFETY: SSE2 is part of x86_64's baseline, and the load reads the 16 bytes
            // `c[16 * k..16 * k + 16]`, within `c`.
            let bits = unsafe { _mm_movemask_epi8(_mm_loadu_si128(c.as_ptr().add(16 * k).cast())) };
            m |= u64::from(bits as u16) << (16 * k);
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u64;
        for (k, w) in c.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            // The top bit of each byte, gathered into the top byte.
            let b = ((w >> 7) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            m |= b << (8 * k);
        }
        m
    }
}

/// For 64 bytes `x` against 64 thresholds `t`, the mask of `x[i] > t[i]` (element `i` at bit `i`),
/// compared as `i8` when `signed`, else as `u8`: SSE2's `pcmpgtb` and `pmovmskb` on x86_64 (the
/// compiler leaves the byte loop scalar there).
#[inline(always)]
pub(crate) fn gt_bytes64(x: &[u8], t: &[u8], signed: bool) -> u64 {
    assert!(x.len() >= 64 && t.len() >= 64);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8, _mm_xor_si128,
        };
        // SAFETY: SSE2 is part of x86_64's baseline.
        let flip = unsafe { _mm_set1_epi8(if signed { 0 } else { i8::MIN }) };
        let mut m = 0u64;
        for k in 0..4 {
            // SAFETY: SSE2 is part of x86_64's baseline, and the loads read the 16 bytes
            // `[16 * k, 16 * k + 16)` of `x` and of `t`, which hold at least 64 (asserted).
            let bits = unsafe {
                let a = _mm_xor_si128(_mm_loadu_si128(x.as_ptr().add(16 * k).cast()), flip);
                let b = _mm_xor_si128(_mm_loadu_si128(t.as_ptr().add(16 * k).cast()), flip);
                _mm_movemask_epi8(_mm_cmpgt_epi8(a, b))
            };
            m |= u64::from(bits as u16) << (16 * k);
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u64;
        for i in 0..64 {
            let gt = if signed {
                (x[i] as i8) > (t[i] as i8)
            } else {
                x[i] > t[i]
            };
            m |= u64::from(gt) << i;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use crate::element::IntWord;

    /// Each version of the hot loop this CPU runs gives the baseline's result, for shifts and
    /// counts (where the instruction sets differ most) at every width and tail length.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_instruction_set_gives_the_baseline_result() {
        fn words<W: IntWord>(seed: u64, n: usize, from: fn(u64) -> W) -> Vec<W> {
            let mut x = seed;
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    from(if x.is_multiple_of(3) { x % 70 } else { x })
                })
                .collect()
        }
        fn check<W: IntWord + PartialEq + std::fmt::Debug>(from: fn(u64) -> W) {
            let mixed = |[a, b]: [W; 2]| a.shl(b).xor(a.shr(b)).or(a.wrapping_shr(b).not());
            let count = |[a]: [W; 1]| a.count_ones();
            for n in [0, 1, 7, 31, 64, 65, 129, 1000] {
                let (a, b) = (words(n as u64 + 1, n, from), words(n as u64 + 99, n, from));
                let (mut base, mut base_c) = (vec![W::lit(0); n], vec![0u32; n]);
                crate::cpu::kernel::compute(&[&a[..], &b[..]], &mut base, &mixed);
                crate::cpu::kernel::compute(&[&a[..]], &mut base_c, &count);
                let mut got = vec![W::lit(0); n];
                let mut got_c = vec![0u32; n];
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 was detected on this CPU.
                    unsafe {
                        super::compute_avx2(&[&a[..], &b[..]], &mut got, &mixed);
                        super::compute_avx2(&[&a[..]], &mut got_c, &count);
                    }
                    assert_eq!((&got, &got_c), (&base, &base_c), "AVX2, {n} elements");
                }
                if super::isa() == super::Isa::Avx512 {
                    // SAFETY: `isa` detected every feature `compute_avx512` is compiled for.
                    unsafe {
                        super::compute_avx512(&[&a[..], &b[..]], &mut got, &mixed);
                        super::compute_avx512(&[&a[..]], &mut got_c, &count);
                    }
                    assert_eq!((&got, &got_c), (&base, &base_c), "AVX-512, {n} elements");
                }
                super::compute(&[&a[..], &b[..]], &mut got, &mixed);
                assert_eq!(got, base, "dispatched, {n} elements");
                // Into a new vector: every version, and the dispatch.
                let lanes = [&a[..], &b[..]];
                assert_eq!(crate::cpu::kernel::compute_new(&lanes, n, &mixed), base);
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 was detected on this CPU.
                    let v = unsafe { super::compute_new_avx2(&lanes, n, &mixed) };
                    assert_eq!(v, base, "AVX2 into a new vector, {n} elements");
                }
                if super::isa() == super::Isa::Avx512 {
                    // SAFETY: `isa` detected every feature `compute_new_avx512` is compiled for.
                    let v = unsafe { super::compute_new_avx512(&[&a[..]], n, &count) };
                    assert_eq!(v, base_c, "AVX-512 into a new vector, {n} elements");
                }
                assert_eq!(super::compute_new(&[&a[..]], n, &count), base_c);
            }
        }
        check::<u8>(|v| v as u8);
        check::<i8>(|v| v as i8);
        check::<u16>(|v| v as u16);
        check::<i16>(|v| v as i16);
        check::<u32>(|v| v as u32);
        check::<i32>(|v| v as i32);
        check::<u64>(|v| v);
        check::<i64>(|v| v as i64);
    }

    /// Each version of the fused reduction loops gives the baseline's result, row by row and
    /// column by column over one to four rows.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_instruction_set_folds_alike() {
        fn check<W: IntWord>(from: fn(u64) -> W) {
            let words = |seed: u64, n: usize| -> Vec<W> {
                let mut x = seed;
                (0..n)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        from(x)
                    })
                    .collect()
            };
            let count = |[a, b]: [W; 2]| a.xor(b).count_ones();
            let bits = |[a, b]: [W; 2]| a.and(b.not());
            for (outs, row) in [(1, 1), (3, 7), (5, 0), (64, 0), (2, 100), (77, 0)] {
                let n = outs * row.max(1);
                let rows: Vec<[Vec<W>; 2]> = (0..4)
                    .map(|r| [words(r * 2 + 1, n), words(r * 2 + 2, n)])
                    .collect();
                let groups: Vec<[&[W]; 2]> = rows.iter().map(|[a, b]| [&a[..], &b[..]]).collect();
                let used = if row == 0 { &groups[..] } else { &groups[..1] };
                for g in 1..=used.len() {
                    let base = |f: &dyn Fn(&mut [u64])| {
                        let mut acc = vec![7u64; outs];
                        f(&mut acc);
                        acc
                    };
                    let c0 = base(&|acc| super::fold_count_body(&used[..g], acc, row, &count));
                    let x0 = base(&|acc| {
                        super::fold_bits_body::<W, 2, { super::super::FOLD_XOR }>(
                            &used[..g],
                            acc,
                            row,
                            &bits,
                        )
                    });
                    // The reference: element by element.
                    let mut want_c = vec![7u64; outs];
                    let mut want_x = vec![7u64; outs];
                    for (o, (wc, wx)) in want_c.iter_mut().zip(&mut want_x).enumerate() {
                        for gr in &used[..g] {
                            let idx: Vec<usize> = match row {
                                0 => vec![o],
                                _ => (o * row..(o + 1) * row).collect(),
                            };
                            for i in idx {
                                *wc += u64::from(count([gr[0][i], gr[1][i]]));
                                *wx ^= bits([gr[0][i], gr[1][i]]).bits();
                            }
                        }
                    }
                    assert_eq!(
                        (&c0, &x0),
                        (&want_c, &want_x),
                        "baseline {outs} x {row}, {g}"
                    );
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: AVX2 was detected on this CPU.
                        let c = base(&|acc| unsafe {
                            super::fold_count_avx2(&used[..g], acc, row, &count)
                        });
                        // SAFETY: AVX2 was detected on this CPU.
                        let x = base(&|acc| unsafe {
                            super::fold_bits_avx2::<W, 2, { super::super::FOLD_XOR }>(
                                &used[..g],
                                acc,
                                row,
                                &bits,
                            )
                        });
                        assert_eq!((&c, &x), (&want_c, &want_x), "AVX2 {outs} x {row}, {g}");
                    }
                    if super::isa() == super::Isa::Avx512 {
                        // SAFETY: `isa` detected every feature these are compiled for.
                        let c = base(&|acc| unsafe {
                            super::fold_count_avx512(&used[..g], acc, row, &count)
                        });
                        // SAFETY: as above.
                        let x = base(&|acc| unsafe {
                            super::fold_bits_avx512::<W, 2, { super::super::FOLD_XOR }>(
                                &used[..g],
                                acc,
                                row,
                                &bits,
                            )
                        });
                        assert_eq!((&c, &x), (&want_c, &want_x), "AVX-512 {outs} x {row}, {g}");
                    }
                }
            }
        }
        check::<u8>(|v| v as u8);
        check::<i16>(|v| v as i16);
        check::<u32>(|v| v as u32);
        check::<u64>(|v| v);
    }

    /// Each instruction set's register blocks of the wide pair tile give the scalar blocks'
    /// counts, for expressions with every operator and for every unrolled and general width.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_instruction_set_counts_blocks_alike() {
        use super::super::tiles::{Block, RB, Scalar};
        use crate::element::{Lanes, WideExpr};
        struct Xor;
        impl WideExpr for Xor {
            fn wide<L: Lanes>(x: [L; 2]) -> L {
                x[0].xor(x[1])
            }
        }
        struct Mixed;
        impl WideExpr for Mixed {
            fn wide<L: Lanes>(x: [L; 2]) -> L {
                x[0].xor(x[1]).not().or(x[0].and(x[1].not()))
            }
        }
        fn check<E: WideExpr>() {
            let mut seed = 0x9E37_79B9_7F4A_7C15u64;
            let mut next = || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            for ww in [1usize, 2, 3, 4, 5, 8, 16, 40] {
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
                    super::wide::Avx2(()).block_any::<E, RB>(&aw, &pb, ww, &mut got);
                    assert_eq!(got, want, "AVX2, {ww} words");
                    if ww == 4 {
                        super::wide::Avx2(()).block::<E, 4, RB>(&aw, &pb, &mut got);
                        assert_eq!(got, want, "AVX2 unrolled, {ww} words");
                    }
                }
                if super::isa() == super::Isa::Avx512 {
                    super::wide::Avx512(()).block_any::<E, RB>(&aw, &pb, ww, &mut got);
                    // One row at a time, as for the last rows of `a`.
                    for r in 0..RB {
                        let mut one = [[7u64; 8]; 1];
                        super::wide::Avx512(()).block_any::<E, 1>(
                            &aw[r * ww..(r + 1) * ww],
                            &pb,
                            ww,
                            &mut one,
                        );
                        assert_eq!(one[0], want[r], "AVX-512 one row, {ww} words");
                    }
                    assert_eq!(got, want, "AVX-512, {ww} words");
                }
            }
        }
        check::<Xor>();
        check::<Mixed>();
    }

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
