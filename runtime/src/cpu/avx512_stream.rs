//! The AVX-512 streams: a few rows of `a` against rows of `b` as they lie (a few queries against a
//! database), each code size to its group of codes ([`avx512_groups`](super::avx512_groups)).

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::avx512_groups::*;
use super::isa::isa_fn;
use super::strategy::window_words;
use super::streams::{
    code_count, each_row, repeated_words, stream_dwords, stream_long, stream_words,
};
use super::tiles::padding_count;
use super::vector::{Vector, emit};
use super::x86::*;
use crate::element::WideExpr;
use crate::op::{PairOut, PairTask};
use std::arch::x86_64::*;

isa_fn! { avx512bw =>
    /// [`Avx512::stream`] on a CPU with AVX-512 F and BW but no VPOPCNTDQ (`Avx512<false>`): every
    /// size the AVX-512 streams take, each 64-bit lane counted by nibble lookup. `simd` sends it
    /// the sizes [`bw_streams`] names, before the AVX2 streams.
    ///
    /// # Safety
    /// AVX2, POPCNT, AVX-512F and AVX-512BW must be present (the `avx512bw` level or above).
    pub(super) unsafe fn stream_bw<E: WideExpr>(
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) -> bool {
        // SAFETY: the caller guarantees AVX-512 F and BW (the `false` token needs no VPOPCNTDQ).
        unsafe { Avx512::<false>::new_unchecked() }.stream::<E>(task, out)
    }
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

/// Whether [`Avx512::stream`] takes codes of `bytes` bytes (in consecutive rows): of any size
/// but none.
pub(super) fn streams(bytes: usize) -> bool {
    bytes != 0
}

impl<const VP: bool> Avx512<VP> {
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
        let bytes = task.code_bytes();
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
            4 => stream_dwords::<_, E>(self, task, out),
            8 => stream_words::<_, E, 1>(self, task, out),
            16 => self.stream_pairs::<E>(task, out),
            32 => stream_words::<_, E, 4>(self, task, out),
            64 => stream_words::<_, E, 8>(self, task, out),
            // Several registers per code, the query held in registers.
            128 => stream_long::<_, E, 2, false>(self, task, out),
            192 => stream_long::<_, E, 3, false>(self, task, out),
            256 => stream_long::<_, E, 4, false>(self, task, out),
            // Whole registers and a masked load of the rest, masked again after the expression.
            65..256 => match bytes / 64 {
                1 => stream_long::<_, E, 1, true>(self, task, out),
                2 => stream_long::<_, E, 2, true>(self, task, out),
                _ => stream_long::<_, E, 3, true>(self, task, out),
            },
            // Longer codes: as many registers as they take, the query read from memory.
            257.. => match bytes.is_multiple_of(64) {
                true => stream_long::<_, E, 0, false>(self, task, out),
                false => stream_long::<_, E, 0, true>(self, task, out),
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

    /// [`stream`](Self::stream) for codes of two words ([`Pairs`]): sixteen codes a register of
    /// results.
    #[inline(always)]
    fn stream_pairs<E: WideExpr>(self, task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
        let n = task.b_rows;
        let b = &task.b[..n * 16];
        each_row!(E, task, out, b, 16, |i, q| {
            let src = Pairs::<E, VP> {
                isa: self,
                b: b.as_ptr(),
                q: self.set(&repeated_words(q, 2)),
                expr: std::marker::PhantomData,
            };
            // SAFETY: the groups read codes `c..c + 16` for `c + 16 <= n`, inside `b` (`n`
            // codes, checked by the slice).
            unsafe { emit(self, out, i, n, &src) }
        });
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
    /// with the padding's count taken off instead of masked. It writes its loop over the rows
    /// of `a` itself: through [`each_row`], the compiler kept the groups' index register and
    /// load mask on the stack inside the loop over codes.
    #[inline(always)]
    fn stream_windows<E: WideExpr, const L: usize>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) {
        let bytes = task.code_bytes();
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
                emit(self, out, i, n, &src)
            };
            // The codes past the registers (of a row of fewer than sixteen), one at a time.
            for j in done..n {
                out.put_run(i, j, &[code_count::<E>(q, &b[j * bytes..(j + 1) * bytes])]);
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
        let bytes = task.code_bytes();
        debug_assert!((9..64).contains(&bytes));
        let n = task.b_rows;
        let b = &task.b[..n * bytes];
        let mask = u64::MAX >> (64 - bytes);
        let pad = padding_count::<E>(bytes, 8);
        each_row!(E, task, out, b, bytes, |i, q| {
            let mut qp = [0u8; 64];
            qp[..bytes].copy_from_slice(q);
            // SAFETY: the value's features are present (see `Avx512`); the codes
            // `c < n` are read by masked loads of their own `bytes` bytes, inside `b`
            // (`n * bytes` bytes, checked by the slice).
            unsafe {
                let src = Bytes::<E, VP> {
                    isa: self,
                    b: b.as_ptr(),
                    q: V512(_mm512_loadu_si512(qp.as_ptr().cast())),
                    bytes,
                    mask,
                    pad: _mm512_set1_epi64(pad as i64),
                    expr: std::marker::PhantomData,
                };
                emit(self, out, i, n, &src)
            }
        });
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
        debug_assert_eq!(task.code_bytes(), B);
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
        each_row!(E, task, out, b, B, |i, code| {
            let mut qb = [0u8; 8];
            qb[..B].copy_from_slice(code);
            let q = u64::from_le_bytes(qb);
            // SAFETY: the value's features are present (see `Avx512`); the groups read the
            // `short * B` bytes of codes `c..c + short` for `c + short <= n`,
            // inside `b` (`n * B` bytes, checked by the slice).
            unsafe {
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
                emit(self, out, i, n, &src)
            }
        });
    }
}
