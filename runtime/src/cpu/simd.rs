//! The CPU executor's hot loops in the best version this CPU runs: each written once and compiled
//! for the x86_64 baseline, AVX2 and AVX-512 by [`multiversion!`](super::isa::multiversion), with
//! the feature test done once per process ([`isa`](super::isa::isa)). Also the SSE2 byte helpers
//! of binarization.

#![allow(
    unsafe_code,
    reason = "target-feature dispatch and SSE2 intrinsics; each use states its safety"
)]

use super::accum::{FOLD_AND, FOLD_OR};
use super::isa::multiversion;
#[cfg(target_arch = "x86_64")]
use super::isa::{Isa, isa};
use super::kernel;
#[cfg(target_arch = "x86_64")]
use super::strategy::{Level, packed_stream_rows};
use super::tiles;
use super::tiles::Scalar;
#[cfg(target_arch = "x86_64")]
use super::tuning::SMALL_BYTES;
#[cfg(target_arch = "x86_64")]
use super::x86::{Avx2, Avx512};
#[cfg(target_arch = "x86_64")]
use super::{avx2_stream, avx512_stream};
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
    if size_of_val(out) <= SMALL_BYTES && isa() != Isa::Baseline {
        // SAFETY: `isa` detected AVX2 and POPCNT on this CPU (every level above the baseline
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
    if n.saturating_mul(size_of::<O>()) <= SMALL_BYTES && isa() != Isa::Baseline {
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
    /// within a row (rows are at most a chunk of the executor, far below `u32::MAX / 64`
    /// elements), at 64 in the accumulators.
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
        avx2 => {
            // SAFETY: the `avx2` and `avx512` versions run only where `isa()` detected AVX2 and POPCNT.
            let avx2 = unsafe { Avx2::new_unchecked() };
            avx2.scan_below(v, limit, f)
        },
        avx512 => {
            // SAFETY: the `avx512` version runs only where `isa()` detected AVX-512 F, BW, VPOPCNTDQ and
            // BITALG.
            let avx512 = unsafe { Avx512::<true>::new_unchecked() };
            avx512.scan_below(v, limit, f)
        },
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
        avx2 => {
            // SAFETY: the `avx2` and `avx512` versions run only where `isa()` detected AVX2 and POPCNT.
            let avx2 = unsafe { Avx2::new_unchecked() };
            tiles::pair_wide_body::<E, _>(avx2, task, packed, out)
        },
        avx512 => {
            // SAFETY: the `avx512` version runs only where `isa()` detected AVX-512 F, BW, VPOPCNTDQ and
            // BITALG.
            let avx512 = unsafe { Avx512::<true>::new_unchecked() };
            tiles::pair_wide_body::<E, _>(avx512, task, packed, out)
        },
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
        avx2 => {
            // SAFETY: the `avx2` and `avx512` versions run only where `isa()` detected AVX2 and POPCNT.
            let avx2 = unsafe { Avx2::new_unchecked() };
            avx2.pack16(rows, buf)
        },
        avx512 => {
            // SAFETY: the `avx2` and `avx512` versions run only where `isa()` detected AVX2 and POPCNT.
            let avx2 = unsafe { Avx2::new_unchecked() };
            avx2.pack16(rows, buf)
        },
    }
}

multiversion! {
    /// The ones in `bytes`.
    #[inline]
    pub(crate) fn ones[][](bytes: &[u8]) -> u64 {
        let mut words = bytes.chunks_exact(8);
        let mut n: u64 = words
            .by_ref()
            .map(|w| u64::from(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])).count_ones()))
            .sum();
        n += words.remainder().iter().map(|&b| u64::from(b.count_ones())).sum::<u64>();
        n
    }
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
    #[cfg(target_arch = "x86_64")]
    {
        super::isa::isa() == super::isa::Isa::Avx2
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`stream_few`] takes codes of `bytes` bytes in consecutive rows on this CPU: `b` is
/// then not packed for fewer than [`stream_rows`](super::strategy::stream_rows) rows of `a`.
pub(crate) fn streams(bytes: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match super::isa::isa() {
            super::isa::Isa::Avx512 => avx512_stream::streams(bytes),
            super::isa::Isa::Avx2 => {
                avx2_stream::avx2_streams(bytes)
                    || (super::isa::avx512bw() && avx512_stream::bw_streams(bytes))
            }
            super::isa::Isa::Baseline => false,
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
    /// through AVX-512 registers ([`Avx512::stream`](Avx512::stream)) even where `b` is
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
            // SAFETY: the `avx2` and `avx512` versions run only where `isa()` detected AVX2 and POPCNT.
            let avx2 = unsafe { Avx2::new_unchecked() };
            task.a_rows < packed_stream_rows(Level::current(), task.k * task.elem_size)
                && (stream_bw::<E>(task, out) || avx2.stream::<E>(task, out))
        },
        avx512 => {
            // SAFETY: the `avx512` version runs only where `isa()` detected AVX-512 F, BW, VPOPCNTDQ and
            // BITALG.
            let avx512 = unsafe { Avx512::<true>::new_unchecked() };
            task.a_rows < packed_stream_rows(Level::current(), task.k * task.elem_size)
                && avx512.stream::<E>(task, out)
        }
    }
}

/// The AVX-512 streams on a CPU with F and BW but no VPOPCNTDQ, for the sizes
/// [`avx512_stream::bw_streams`] names; `false`, with nothing written, elsewhere.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn stream_bw<E: WideExpr>(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) -> bool {
    super::isa::avx512bw()
        && avx512_stream::bw_streams(task.k * task.elem_size)
        // SAFETY: `avx512bw()` detected AVX2, POPCNT, AVX-512F and AVX-512BW.
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
        baseline => tiles::pair_words_body::<E, _>(Scalar, task, out),
        avx2 => {
            // SAFETY: the `avx2` and `avx512` versions run only where `isa()` detected AVX2 and POPCNT.
            let avx2 = unsafe { Avx2::new_unchecked() };
            if stream_bw::<E>(task, out) || avx2.stream::<E>(task, out) {
                return;
            }
            // Codes of three or more words, the last a part-word, count by `popcnt` too: the
            // compiler's count ran behind `popcnt` on codes of 20 bytes (through the tile's loop
            // of the time, a code at a time).
            let full = task.k * task.elem_size == task.wide_words * 8;
            if task.wide_words > crate::cpu::tuning::AVX2_POPCNT_WORDS || (task.wide_words > 2 && !full) {
                tiles::pair_words_body::<E, _>(avx2, task, out)
            } else {
                tiles::pair_words_body::<E, _>(Scalar, task, out)
            }
        },
        avx512 => {
            // SAFETY: the `avx512` version runs only where `isa()` detected AVX-512 F, BW, VPOPCNTDQ and
            // BITALG.
            let avx512 = unsafe { Avx512::<true>::new_unchecked() };
            if !avx512.stream::<E>(task, out) {
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

#[cfg(test)]
mod tests {
    use crate::element::IntWord;

    /// Every version of `scan_below` this CPU runs offers `f` the same values in the same order as
    /// a plain loop that compares each value against the limit as it stands, for limits that `f`
    /// lowers (as knn's selection does), keeps, or never reaches, over lengths around the groups
    /// of sixteen.
    /// `pack16` packs whole groups of eight codes of 16 bytes as the wide tile reads them (block
    /// `g`'s word `w` of code `c` at `buf[g * 16 + w * 8 + c]`), as many as `rows` and `buf` both
    /// hold, and writes nothing past them.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn pack16_packs_whole_groups_as_the_tile_reads_them() {
        let rows: Vec<u8> = (0..16 * 43).map(|i| (i * 37 + 11) as u8).collect();
        let word = |c: usize, w: usize| {
            let at = c * 16 + w * 8;
            u64::from_le_bytes(rows[at..at + 8].try_into().unwrap())
        };
        type Pack = fn(&[u8], &mut [u64]) -> usize;
        let mut versions: Vec<(&str, Pack)> = vec![("dispatched", |r, b| super::pack16(r, b))];
        if crate::cpu::isa::isa() != crate::cpu::isa::Isa::Baseline {
            // SAFETY: `isa` detected AVX2 and POPCNT.
            versions.push(("avx2", |r, b| unsafe { super::pack16::avx2(r, b) }));
        }
        for (name, pack) in versions {
            for (codes, blocks) in [(43, 6), (43, 4), (40, 5), (7, 1), (0, 2)] {
                let mut buf = vec![u64::MAX; blocks * 16 + 3];
                let done = pack(&rows[..codes * 16], &mut buf[..blocks * 16]);
                // None on the baseline, which leaves every code to the scalar transpose.
                let vector = crate::cpu::isa::isa() != crate::cpu::isa::Isa::Baseline;
                let can = if vector {
                    (codes / 8).min(blocks) * 8
                } else {
                    0
                };
                assert_eq!(done, can, "{name}, {codes} codes, {blocks} blocks");
                for (i, &v) in buf.iter().enumerate() {
                    let (g, w, c) = (i / 16, i % 16 / 8, i % 8);
                    let want = if i < done * 2 {
                        word(g * 8 + c, w)
                    } else {
                        u64::MAX
                    };
                    assert_eq!(v, want, "{name}, {codes} codes, {blocks} blocks, word {i}");
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn scan_below_matches_a_plain_loop() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Small values, and values on both sides of the top bit, where a signed compare would
        // misorder them (the AVX2 scan tests the sign of each value minus a limit below 2^63,
        // which reads values 2^63 above it as below too); `u16`
        // distances too, against limits inside and past their range.
        let lens = [0, 1, 15, 16, 17, 31, 32, 33, 100, 1000];
        for (n, high) in lens
            .iter()
            .map(|&n| (n, false))
            .chain(lens.map(|n| (n, true)))
        {
            let (wide, short): (Vec<u64>, Vec<u16>) = (0..n)
                .map(|_| {
                    let x = next();
                    let top = |t: u64| match (high, x >> 62) {
                        (true, 0) => t - x % 40,
                        (true, 1) => (t / 2 + 1) + x % 40,
                        (true, 2) => t / 2 - x % 40,
                        _ => x % 40,
                    };
                    (top(u64::MAX), top(u64::from(u16::MAX)) as u16)
                })
                .unzip();
            let starts = [
                0,
                1,
                20,
                41,
                1 << 15,
                (1 << 15) + 20,
                65535 - 20,
                65535,
                65536,
            ];
            scan_matches(&wide, &starts, n, high);
            scan_matches(
                &wide,
                &[1 << 63, (1 << 63) + 20, u64::MAX - 20, u64::MAX],
                n,
                high,
            );
            scan_matches(&short, &starts, n, high);
            scan_matches(&short, &[u64::MAX], n, high);
        }
    }

    /// [`scan_below_matches_a_plain_loop`] for values `v` from each limit of `starts`.
    #[cfg(target_arch = "x86_64")]
    fn scan_matches<D: super::kernel::Dist>(v: &[D], starts: &[u64], n: usize, high: bool) {
        type Scan<D> = fn(&[D], u64, &mut dyn FnMut(usize, u64) -> u64);
        fn plain<D: super::kernel::Dist>(
            v: &[D],
            mut limit: u64,
            f: &mut dyn FnMut(usize, u64) -> u64,
        ) {
            for (i, &d) in v.iter().enumerate() {
                if d.into() < limit {
                    limit = f(i, d.into());
                }
            }
        }
        let mut versions: Vec<(&str, Scan<D>)> =
            vec![("baseline", |v, l, f| super::scan_below::baseline(v, l, f))];
        if crate::cpu::isa::isa() != crate::cpu::isa::Isa::Baseline {
            // SAFETY: `isa` detected AVX2 and POPCNT.
            versions.push(("avx2", |v, l, f| unsafe {
                super::scan_below::avx2(v, l, f)
            }));
        }
        if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Avx512 {
            // SAFETY: `isa` detected every feature `scan_below::avx512` is compiled for.
            versions.push(("avx512", |v, l, f| unsafe {
                super::scan_below::avx512(v, l, f)
            }));
        }
        versions.push(("dispatched", |v, l, f| super::scan_below(v, l, f)));
        // The limit falls to each value taken (a best-so-far), stays, or falls by one.
        let rules: [fn(u64, u64) -> u64; 3] = [|_, d| d, |l, _| l, |l, _| l.saturating_sub(1)];
        for (r, rule) in rules.iter().enumerate() {
            for &start in starts {
                let run = |scan: Scan<D>| {
                    let (mut seen, mut limit) = (Vec::new(), start);
                    scan(v, start, &mut |i, d| {
                        seen.push((i, d));
                        limit = rule(limit, d);
                        limit
                    });
                    seen
                };
                let want = run(plain::<D>);
                for (name, scan) in &versions {
                    assert_eq!(
                        run(*scan),
                        want,
                        "{name}, {n} values of {} bytes (high {high}), rule {r}, from {start}",
                        size_of::<D>()
                    );
                }
            }
        }
    }

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
            // Around the size below which the dispatch takes the AVX2 version too.
            let small = crate::cpu::tuning::SMALL_BYTES / size_of::<W>();
            for n in [
                0,
                1,
                7,
                31,
                64,
                65,
                129,
                1000,
                small,
                small + 1,
                3 * small + 5,
            ] {
                let (a, b) = (words(n as u64 + 1, n, from), words(n as u64 + 99, n, from));
                let (mut base, mut base_c) = (vec![W::lit(0); n], vec![0u32; n]);
                crate::cpu::kernel::compute(&[&a[..], &b[..]], &mut base, &mixed);
                crate::cpu::kernel::compute(&[&a[..]], &mut base_c, &count);
                let mut got = vec![W::lit(0); n];
                let mut got_c = vec![0u32; n];
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 was detected on this CPU.
                    unsafe {
                        super::hot_loop::avx2(&[&a[..], &b[..]], &mut got, &mixed);
                        super::hot_loop::avx2(&[&a[..]], &mut got_c, &count);
                    }
                    assert_eq!((&got, &got_c), (&base, &base_c), "AVX2, {n} elements");
                }
                if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Avx512 {
                    // SAFETY: `isa` detected every feature `hot_loop::avx512` is compiled for.
                    unsafe {
                        super::hot_loop::avx512(&[&a[..], &b[..]], &mut got, &mixed);
                        super::hot_loop::avx512(&[&a[..]], &mut got_c, &count);
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
                    let v = unsafe { super::hot_loop_new::avx2(&lanes, n, &mixed) };
                    assert_eq!(v.into_vec(), base, "AVX2 into a new vector, {n} elements");
                }
                if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Avx512 {
                    // SAFETY: `isa` detected every feature `hot_loop_new::avx512` is compiled for.
                    let v = unsafe { super::hot_loop_new::avx512(&[&a[..]], n, &count) };
                    assert_eq!(
                        v.into_vec(),
                        base_c,
                        "AVX-512 into a new vector, {n} elements"
                    );
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
                    let c0 = base(&|acc| super::fold_count::baseline(&used[..g], acc, row, &count));
                    let x0 = base(&|acc| {
                        super::fold_bits::baseline::<W, 2, { super::super::accum::FOLD_XOR }>(
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
                            super::fold_count::avx2(&used[..g], acc, row, &count)
                        });
                        // SAFETY: AVX2 was detected on this CPU.
                        let x = base(&|acc| unsafe {
                            super::fold_bits::avx2::<W, 2, { super::super::accum::FOLD_XOR }>(
                                &used[..g],
                                acc,
                                row,
                                &bits,
                            )
                        });
                        assert_eq!((&c, &x), (&want_c, &want_x), "AVX2 {outs} x {row}, {g}");
                    }
                    if crate::cpu::isa::isa() == crate::cpu::isa::Isa::Avx512 {
                        // SAFETY: `isa` detected every feature these are compiled for.
                        let c = base(&|acc| unsafe {
                            super::fold_count::avx512(&used[..g], acc, row, &count)
                        });
                        // SAFETY: as above.
                        let x = base(&|acc| unsafe {
                            super::fold_bits::avx512::<W, 2, { super::super::accum::FOLD_XOR }>(
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
}
