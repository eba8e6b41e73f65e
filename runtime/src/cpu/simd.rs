//! The CPU executor's hot loops in the best version this CPU runs: each written once and compiled
//! for the x86_64 baseline, AVX2 and AVX-512 by [`multiversion!`](super::isa::multiversion), with
//! the feature test done once per process ([`Level::current`]). Also the SSE2 byte helpers
//! of binarization.

#![allow(
    unsafe_code,
    reason = "target-feature dispatch and SSE2 intrinsics; each use states its safety"
)]

use super::accum::{FOLD_AND, FOLD_OR};
use super::isa::multiversion;
use super::kernel;
use super::portable::Portable;
#[cfg(target_arch = "x86_64")]
use super::strategy::packed_stream_rows;
use super::strategy::{Level, portable_codes};
use super::tiles;
use super::tiles::Scalar;
#[cfg(target_arch = "x86_64")]
use super::tuning::SMALL_BYTES;
#[cfg(target_arch = "x86_64")]
use super::x86::{Avx2, Avx512};
#[cfg(target_arch = "x86_64")]
use super::{avx2_stream, avx512_stream, x86_scan};
use crate::DataType;
use crate::element::{WideExpr, Word};
use crate::op::{PairOut, PairTask};
use crate::ratio::{Terms, Writes, key, quotient, to_f32};
use bytemuck::Pod;

/// The executor's hot loop ([`compute`](super::kernel::compute)) in the best version for this CPU
/// and this size.
#[inline(always)]
pub(crate) fn compute<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    #[cfg(target_arch = "x86_64")]
    if size_of_val(out) <= SMALL_BYTES && Level::current() != Level::Baseline {
        // SAFETY: the level's detection found AVX2 and POPCNT (every level above the baseline
        // includes them).
        return unsafe { hot_loop::avx2(lanes, out, f) };
    }
    hot_loop(lanes, out, f)
}

/// The hot loop into a new vector ([`compute_new`](super::kernel::compute_new)), in the best
/// version for this CPU and this size.
///
/// The versions return a boxed slice, which comes back in two registers, where a `Vec` (three
/// words) comes back through memory that the caller then reads again. A vector collected from the
/// loop has its length for capacity, so neither conversion copies or reallocates.
#[inline(always)]
pub(crate) fn compute_new<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    n: usize,
    f: &impl Fn([W; N]) -> O,
) -> Vec<O> {
    #[cfg(target_arch = "x86_64")]
    if n.saturating_mul(size_of::<O>()) <= SMALL_BYTES && Level::current() != Level::Baseline {
        // SAFETY: as in `compute`.
        return unsafe { hot_loop_new::avx2(lanes, n, f) }.into_vec();
    }
    hot_loop_new(lanes, n, f).into_vec()
}

multiversion! {
    /// [`compute`] in the best version for this CPU.
    #[inline(always)]
    fn hot_loop[W: Word, O: Pod, const N: usize][W, O, N](
        lanes: &[&[W]; N],
        out: &mut [O],
        f: &impl Fn([W; N]) -> O,
    ) {
        kernel::compute(lanes, out, f)
    }
}

multiversion! {
    /// [`compute_new`] in the best version for this CPU.
    #[inline(always)]
    fn hot_loop_new[W: Word, O: Pod, const N: usize][W, O, N](
        lanes: &[&[W]; N],
        n: usize,
        f: &impl Fn([W; N]) -> O,
    ) -> Box<[O]> {
        kernel::compute_new(lanes, n, f).into_boxed_slice()
    }
}

multiversion! {
    /// The fused loop of a sum of counts ([`fold`](super::kernel::fold)): counts summed at 32 bits
    /// within a row (the caller splits rows of more than `u32::MAX / 64` elements: `MAX_ROW` in
    /// `mod.rs`), at 64 in the accumulators.
    #[inline]
    pub(crate) fn fold_count[W: Word, const N: usize][W, N](
        groups: &[[&[W]; N]],
        acc: &mut [u64],
        row: usize,
        f: &impl Fn([W; N]) -> u32,
    ) {
        let add = |a: u64, b: u64| a.wrapping_add(b);
        kernel::fold(groups, acc, row, 0u32, f, u32::wrapping_add, u64::from, add)
    }
}

multiversion! {
    /// The fused loop of a bitwise reduction `OP` (a [`fold_code`](super::accum::fold_code)): elements
    /// combined at their own width within a row, zero-extended into the accumulators.
    #[inline]
    pub(crate) fn fold_bits[W: Word, const N: usize, const OP: u8][W, N, OP](
        groups: &[[&[W]; N]],
        acc: &mut [u64],
        row: usize,
        f: &impl Fn([W; N]) -> W,
    ) {
        use kernel::fold;
        match OP {
            FOLD_AND => {
                let id = W::lit(0).not();
                fold(groups, acc, row, id, f, W::and, W::bits, |a, b| a & b)
            }
            FOLD_OR => fold(groups, acc, row, W::lit(0), f, W::or, W::bits, |a, b| a | b),
            _ => fold(groups, acc, row, W::lit(0), f, W::xor, W::bits, |a, b| a ^ b),
        }
    }
}

multiversion! {
    /// Calls `f(i, v[i])` for each `i` with `v[i] < limit`, in order, where `limit` is the one `f`
    /// last returned (a candidate taken can lower it): sixteen compares per test, and the values
    /// of sixteen that passed it compared one by one against the limit as it stands.
    #[inline]
    pub(crate) fn scan_below[D: kernel::Dist, F: FnMut(usize, u64) -> u64][D, F](
        v: &[D],
        limit: u64,
        f: F,
    ) {
        baseline => scan_below_body(v, limit, f),
        // The mask of each sixteen, and only its candidates visited.
        avx2 => x86_scan::scan_below(AVX2, v, limit, f),
        avx512 => x86_scan::scan_below(AVX512, v, limit, f),
    }
}

#[inline(always)]
fn scan_below_body<D: kernel::Dist, F: FnMut(usize, u64) -> u64>(
    v: &[D],
    mut limit: u64,
    mut f: F,
) {
    // Sixteen compares ORed into one test: once a row's selection is full, few values pass, and
    // the scan should cost no more than the loads (the compares and shifts of a mask built per
    // value cost more than the distances themselves).
    const C: usize = 16;
    let mut chunks = v.chunks_exact(C);
    for (c, chunk) in chunks.by_ref().enumerate() {
        if chunk.iter().fold(false, |any, &d| any | (d.into() < limit)) {
            limit = kernel::scan_each(chunk, c * C, limit, &mut f);
        }
    }
    kernel::scan_each(
        chunks.remainder(),
        v.len() - chunks.remainder().len(),
        limit,
        &mut f,
    );
}

multiversion! {
    /// The wide pair tile ([`pair_wide_body`](super::tiles::pair_wide_body)): with AVX-512
    /// VPOPCNTDQ, eight 64-bit counts per instruction; with AVX2, counts of bytes by nibble
    /// lookup; scalar `popcnt`s otherwise.
    #[inline]
    pub(crate) fn pair_wide[E: WideExpr][E](
        task: &PairTask<'_>,
        packed: &[u64],
        out: &mut PairOut<'_, '_>,
    ) {
        baseline => tiles::pair_wide_body::<E, _>(Scalar, task, packed, out),
        // The blocks' values are made only in the versions compiled for their features.
        avx2 => tiles::pair_wide_body::<E, _>(AVX2, task, packed, out),
        avx512 => tiles::pair_wide_body::<E, _>(AVX512, task, packed, out),
    }
}

multiversion! {
    /// The first codes of 16 bytes in consecutive `rows` packed into `buf` as the wide tile reads
    /// them (a block of eight codes: their first words, then their second ones), eight at a time
    /// where AVX2 is present (four loads, four unpacks, four permutes and four stores, where the
    /// scalar transpose moves each word by itself): how many codes it packed, a multiple of eight,
    /// none on the baseline. Ten queries against 100,000 codes of 16 bytes at the `avx2` level
    /// had spent a tenth of knn in packing.
    #[inline]
    pub(crate) fn pack16[][](rows: &[u8], buf: &mut [u64]) -> usize {
        baseline => {
            let _ = (rows, buf);
            0
        },
        avx2 => AVX2.pack16(rows, buf),
        avx512 => AVX2.pack16(rows, buf),
    }
}

/// The ones in `bytes`.
#[inline]
pub(crate) fn ones(bytes: &[u8]) -> u64 {
    let mut n = 0;
    rows_ones(bytes, 0, bytes.len(), std::slice::from_mut(&mut n));
    n
}

multiversion! {
    /// The ones of each of `out.len()` rows of `bytes` bytes, row `j` from `rows[j * stride..]`:
    /// one call for a tile's rows, where [`ones`] a row would cost a dispatch each. Consecutive
    /// rows of one to eight whole words are counted with the word count a constant, so that the
    /// loop over rows has no inner loop to set up; longer rows keep the loop, whose setup is a
    /// small part of a row.
    #[inline]
    pub(crate) fn rows_ones[][](rows: &[u8], stride: usize, bytes: usize, out: &mut [u64]) {
        match (stride == bytes, bytes) {
            (true, 8) => words_ones::<1>(rows, out),
            (true, 16) => words_ones::<2>(rows, out),
            (true, 24) => words_ones::<3>(rows, out),
            (true, 32) => words_ones::<4>(rows, out),
            (true, 64) => words_ones::<8>(rows, out),
            _ => {
                for (j, o) in out.iter_mut().enumerate() {
                    let mut words = rows[j * stride..][..bytes].chunks_exact(8);
                    let n: u64 = words.by_ref().map(word_ones).sum();
                    *o = n + words.remainder().iter().map(|&b| u64::from(b.count_ones())).sum::<u64>();
                }
            }
        }
    }
}

/// [`rows_ones()`] of consecutive rows of `W` words.
#[inline(always)]
fn words_ones<const W: usize>(rows: &[u8], out: &mut [u64]) {
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(8 * W)) {
        *o = row.chunks_exact(8).map(word_ones).sum();
    }
}

/// The ones of eight bytes.
#[inline(always)]
fn word_ones(w: &[u8]) -> u64 {
    u64::from(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])).count_ones())
}

multiversion! {
    /// The ones of each of `b`'s rows `j` packed as the wide tile reads them (`ww` words a row,
    /// in blocks of eight rows word by word), into `out[j]`.
    #[inline]
    pub(crate) fn lane_ones[][](packed: &[u64], ww: usize, out: &mut [u64]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = (0..ww)
                .map(|w| u64::from(packed[((j / 8) * ww + w) * 8 + j % 8].count_ones()))
                .sum();
        }
    }
}

multiversion! {
    /// One row's results or keys: `out[j]` from `|a| = a`, `|b| = b[j]` and `|a & b| = both[j]`.
    /// Where every term of `N` and `D` is an integer below 2^53 ([`Terms::exact`]), they are
    /// summed in `f64` (exact there, and a register of lanes at a time); an `f32` result of
    /// `|N|` and `|D|` below 2^24 is then one `f32` division of two exact `f32`s.
    #[inline]
    pub(crate) fn ratio_row[][](t: &Terms, a: u64, b: &[u64], both: &[u64], out: &mut [u64]) {
        let pairs = out.iter_mut().zip(b).zip(both);
        if t.exact {
            let [n0, n1, n2, n3] = t.n.map(|x| x as f64);
            let [d0, d1, d2, d3] = t.d.map(|x| x as f64);
            let af = a as u32 as f64;
            let (n0, d0) = (n0 + n1 * af, d0 + d1 * af);
            // Counts below 2^32 (`exact`): converted from 32 bits, as the vector units can.
            let nd = |bj: u64, x: u64| {
                let (bj, x) = (bj as u32 as f64, x as u32 as f64);
                (n0 + n2 * bj + n3 * x, d0 + d2 * bj + d3 * x)
            };
            // Each kind of result its own loop, so that each runs without a test per pair.
            match t.writes {
                Writes::Keys => {
                    for ((o, &bj), &x) in pairs {
                        let (n, d) = nd(bj, x);
                        let q = if n == 0.0 && d == 0.0 { 0.0 } else { n / d };
                        *o = key(q, t.largest);
                    }
                }
                Writes::Values(DataType::F32) if t.small => {
                    for ((o, &bj), &x) in pairs {
                        let (n, d) = nd(bj, x);
                        let q = (n as f32) / (d as f32);
                        *o = if n == 0.0 && d == 0.0 { 0 } else { u64::from(q.to_bits()) };
                    }
                }
                Writes::Values(DataType::F32) => {
                    for ((o, &bj), &x) in pairs {
                        let (n, d) = nd(bj, x);
                        *o = u64::from(to_f32(n as i64, d as i64).to_bits());
                    }
                }
                Writes::Values(_) => {
                    for ((o, &bj), &x) in pairs {
                        let (n, d) = nd(bj, x);
                        *o = if n == 0.0 && d == 0.0 { 0 } else { (n / d).to_bits() };
                    }
                }
            }
            return;
        }
        let (n0, d0) = (t.n[0] + t.n[1] * a as i64, t.d[0] + t.d[1] * a as i64);
        for ((o, &bj), &x) in pairs {
            let n = n0 + t.n[2] * bj as i64 + t.n[3] * x as i64;
            let d = d0 + t.d[2] * bj as i64 + t.d[3] * x as i64;
            *o = match t.writes {
                Writes::Keys => key(quotient(n, d), t.largest),
                Writes::Values(DataType::F32) => u64::from(to_f32(n, d).to_bits()),
                Writes::Values(_) => quotient(n, d).to_bits(),
            };
        }
    }
}

/// Whether the wide tile counts by nibble lookup: the AVX2 block, which the `avx2` and `avx512bw`
/// levels run, where AVX-512 VPOPCNTDQ counts a register of words an instruction.
#[inline(always)]
pub(crate) fn tile_by_lookup() -> bool {
    matches!(Level::current(), Level::Avx2 | Level::Avx512Bw)
}

/// Whether [`stream_few()`] takes codes of `bytes` bytes in consecutive rows on this CPU: `b` is
/// then not packed for fewer than [`stream_rows`](super::strategy::stream_rows) rows of `a`.
pub(crate) fn streams(bytes: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match Level::current() {
            Level::Avx512 => avx512_stream::streams(bytes),
            Level::Avx512Bw => avx2_stream::avx2_streams(bytes) || avx512_stream::bw_streams(bytes),
            Level::Avx2 => avx2_stream::avx2_streams(bytes),
            Level::Baseline => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = bytes;
        false
    }
}

multiversion! {
    /// Fewer than [`packed_stream_rows`] rows of `a` against rows of `b` as they lie, streamed
    /// through AVX-512 registers ([`Avx512::stream`](super::x86::Avx512::stream)) even where `b` is
    /// packed for the wide tile: a single query against short codes costs the wide tile's set-up
    /// (a stack frame of its every variant) more than its counting, and ten queries against a
    /// thousand codes of 16 bytes ran ahead streamed (at 100 queries the tile is ahead). On AVX2
    /// the AVX-512 streams on F and BW alone ([`stream_bw`]) take the sizes they name where the
    /// CPU has those, the AVX2 streams theirs otherwise.
    /// `false`, with nothing written, where no stream takes the layout on this CPU.
    #[inline]
    pub(crate) fn stream_few[E: WideExpr][E](task: &PairTask<'_>, out: &mut PairOut<'_, '_>) -> bool {
        baseline => {
            let _ = (task, out);
            false
        },
        avx2 => {
            task.a_rows < packed_stream_rows(Level::current(), task.code_bytes())
                && (stream_bw::<E>(task, out) || AVX2.stream::<E>(task, out))
        },
        avx512 => {
            task.a_rows < packed_stream_rows(Level::current(), task.code_bytes())
                && AVX512.stream::<E>(task, out)
        }
    }
}

/// The AVX-512 streams on a CPU with F and BW but no VPOPCNTDQ, for the sizes
/// [`avx512_stream::bw_streams`] names; `false`, with nothing written, elsewhere.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn stream_bw<E: WideExpr>(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) -> bool {
    Level::current() == Level::Avx512Bw
        && avx512_stream::bw_streams(task.code_bytes())
        // SAFETY: the level's detection found AVX2, POPCNT, AVX-512F and AVX-512BW.
        && unsafe { avx512_stream::stream_bw::<E>(task, out) }
}

multiversion! {
    /// The word-by-word pair tile on unpacked rows ([`pair_words_body`](super::tiles::pair_words_body)),
    /// with the `popcnt` instruction where the CPU has it (on AVX2, as an instruction the compiler
    /// does not vectorize, for codes of more than [`AVX2_POPCNT_WORDS`](crate::cpu::tuning::AVX2_POPCNT_WORDS)
    /// words); codes in consecutive rows of the sizes the streams take stream through vector
    /// registers instead.
    #[inline]
    pub(crate) fn pair_words[E: WideExpr][E](task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
        // Long codes of whole registers in consecutive rows stream through the portable
        // registers of four words.
        baseline => {
            if !(portable_codes(task.code_bytes()) && Portable.stream::<E>(task, out)) {
                tiles::pair_words_body::<E, _>(Scalar, task, out)
            }
        },
        avx2 => {
            if stream_bw::<E>(task, out) || AVX2.stream::<E>(task, out) {
                return;
            }
            // Codes of three or more words, the last a part-word, count by `popcnt` too: the
            // compiler's count ran behind `popcnt` on codes of 20 bytes (through the tile's loop
            // of the time, a code at a time).
            let full = task.code_bytes() == task.wide_words * 8;
            if task.wide_words > crate::cpu::tuning::AVX2_POPCNT_WORDS || (task.wide_words > 2 && !full) {
                tiles::pair_words_body::<E, _>(AVX2, task, out)
            } else {
                tiles::pair_words_body::<E, _>(Scalar, task, out)
            }
        },
        avx512 => {
            if !AVX512.stream::<E>(task, out) {
                tiles::pair_words_body::<E, _>(Scalar, task, out)
            }
        },
    }
}

multiversion! {
    /// The element-by-element pair tile.
    #[inline]
    pub(crate) fn pair_elems[W: Word][W](
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
        elem: &impl Fn([W; 2]) -> u64,
    ) {
        tiles::pair_elems_body(task, out, elem)
    }
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

#[cfg(all(test, target_arch = "x86_64"))]
#[path = "simd_tests.rs"]
mod tests;
