//! The AVX2 streams: a few rows of `a` against rows of `b` as they lie, eight codes' counts a step
//! by nibble lookup. Codes of whole words and of whole registers take the shapes written over
//! [`Vector`] (`streams.rs`); codes of 4 and of 9 to 15 bytes the two shapes here.

#![allow(
    unsafe_code,
    reason = "x86_64 vector intrinsics; each use states its safety"
)]

use super::streams::{
    code_count, each_row, repeated_words, stream_dwords, stream_long, stream_words,
};
use super::vector::{Group, Vector, emit};
use super::x86::*;
use crate::element::{WideExpr, by_const};
use crate::op::{PairOut, PairTask};
use std::arch::x86_64::*;

/// Whether [`Avx2::stream`] takes codes of `bytes` bytes (in consecutive rows): 4, 8 and 16,
/// eight, four and two codes to a register, 9 to 15 as 16-byte windows ([`Windows8`]), and
/// multiples of 16 bytes from 32, one code to one or more registers and, for an odd multiple,
/// the low half of one more ([`Long`](super::streams::Long)).
/// Other codes of more than 16 bytes keep the word tile's scalar `popcnt` on a CPU with AVX2
/// alone; with AVX-512 F and BW they take the AVX-512 streams ([`bw_streams`](super::avx512_stream::bw_streams)), whose 64-byte
/// registers halve the lookups per code.
pub(super) fn avx2_streams(bytes: usize) -> bool {
    matches!(bytes, 4 | 8..=16) || super::strategy::long_avx2_codes(bytes)
}

/// Codes of 9 to 15 bytes, two to a register as [`Words`](super::streams::Words) takes codes of 16: each code read as
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

impl<E: WideExpr, const BYTES: usize> Group<Avx2> for Windows8<E, BYTES> {
    const SHORT: bool = true;
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
                *rv = _mm256_sad_epu8(
                    byte_counts(_mm256_and_si256(E::wide([self.q, x]).0, self.mask)),
                    _mm256_setzero_si256(),
                );
            }
            two_per_register(r)
        }
    }
}

impl Avx2 {
    /// Rows of `a` against rows of `b` as they lie, for codes of the sizes [`avx2_streams`] names
    /// in consecutive rows (a few queries against a database): eight codes' counts a step by
    /// nibble lookup (`vpshufb`), stored into the output's type from the register. `false`
    /// (nothing written) for other layouts.
    #[inline(always)]
    pub(in crate::cpu) fn stream<E: WideExpr>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) -> bool {
        let bytes = task.code_bytes();
        let n = task.b_rows;
        if task.b_stride != bytes || task.b.len() < n * bytes || !avx2_streams(bytes) {
            return false;
        }
        match bytes {
            4 => stream_dwords::<_, E>(self, task, out),
            8 => stream_words::<_, E, 1>(self, task, out),
            16 => stream_words::<_, E, 2>(self, task, out),
            9..=15 => self.stream_windows::<E>(task, out),
            32 => stream_words::<_, E, 4>(self, task, out),
            // Codes of one, two and four registers with the count a constant (the loop over a
            // code's registers unrolled, the query held in registers), others at run time; and
            // whether a half register follows.
            _ => match (bytes / 32, !bytes.is_multiple_of(32)) {
                (1, _) => stream_long::<_, E, 1, true>(self, task, out),
                (2, false) => stream_long::<_, E, 2, false>(self, task, out),
                (2, true) => stream_long::<_, E, 2, true>(self, task, out),
                (4, false) => stream_long::<_, E, 4, false>(self, task, out),
                (4, true) => stream_long::<_, E, 4, true>(self, task, out),
                (_, false) => stream_long::<_, E, 0, false>(self, task, out),
                (_, true) => stream_long::<_, E, 0, true>(self, task, out),
            },
        }
        true
    }

    /// [`stream`](Self::stream) for codes of 9 to 15 bytes ([`Windows8`]): the query widened to
    /// 16 bytes (what the mask clears past it is never counted); the last code's 16 bytes would
    /// pass the end of `b`, so the groups stop before it.
    #[inline(always)]
    fn stream_windows<E: WideExpr>(self, task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
        let bytes = task.code_bytes();
        let n = task.b_rows;
        let b = &task.b[..n * bytes];
        each_row!(E, task, out, b, bytes, |i, q| {
            let mut q16 = [0u8; 16];
            q16[..bytes].copy_from_slice(q);
            let (q_reg, mask) = (self.set(&repeated_words(&q16, 2)), self.first_bytes(bytes));
            // Both 128-bit lanes keep a code's bytes.
            // SAFETY: AVX2 is present (see `Avx2`); registers only.
            let mask = unsafe { _mm256_permute2x128_si256::<0x00>(mask.0, mask.0) };
            // The size a constant, so that the codes' offsets are immediates (a size known at
            // run time kept them on the stack).
            by_const!(bytes, BYTES in [9, 10, 11, 12, 13, 14] =>
                self.emit_windows::<E, BYTES>(out, i, n, b, q_reg, mask),
                _ => self.emit_windows::<E, 15>(out, i, n, b, q_reg, mask))
        });
    }

    /// Row `i`'s codes of `BYTES` bytes from `b` but the last, through [`Windows8`]; the codes
    /// written.
    #[inline(always)]
    fn emit_windows<E: WideExpr, const BYTES: usize>(
        self,
        out: &mut PairOut<'_, '_>,
        i: usize,
        n: usize,
        b: &[u8],
        q: V256,
        mask: __m256i,
    ) -> usize {
        let src = Windows8::<E, BYTES> {
            b: b.as_ptr(),
            len: b.len(),
            q,
            mask,
            expr: std::marker::PhantomData,
        };
        // SAFETY: the groups read the 16 bytes from the start of each of codes `c..c + 8` for
        // `c + 8 <= n - 1`: at most to byte `(n - 2) * BYTES + 16`, inside `b` (`n` codes).
        unsafe { emit(self, out, i, n.saturating_sub(1), &src) }
    }
}
