//! The streams written once over [`Vector`]: a few rows of `a` against rows of `b` as they lie
//! (a few queries against a database), eight codes' counts a step, for codes of whole 64-bit
//! words that fill a register in part ([`Words`]) and codes of one or more whole registers and
//! a part of one ([`Long`]). Each instruction set's stream sends its sizes here
//! (`portable.rs`, `avx2_stream.rs`, `avx512_stream.rs`) and keeps the shapes its instructions
//! alone make (masked byte loads, 32-bit lanes).

#![allow(
    unsafe_code,
    reason = "vector loads through raw pointers into bounds-checked rows"
)]

use super::tuning::LONG_CACHED_BYTES;
use super::vector::{Group, Vector, emit};
#[cfg(target_arch = "x86_64")]
use super::x86::Count32;
use crate::element::{Lanes, WideExpr};
use crate::op::{PairOut, PairTask};
use std::marker::PhantomData;

/// The loop over the rows of `a` that the stream shapes run (all but the AVX-512 windows, which
/// say why), written once (a macro, not a
/// function taking a closure: a closure is not compiled with the features of the function it
/// is inlined into). For row `$i` of `$task`, its code `$q` (`$bytes` bytes): `$emit` gives the
/// codes of `$b` that the shape's groups wrote ([`emit`]), and the codes past them (fewer than a
/// group) are counted one at a time ([`code_count`]) under `$expr`.
macro_rules! each_row {
    ($expr:ty, $task:ident, $out:ident, $b:ident, $bytes:expr, |$i:ident, $q:ident| $emit:expr) => {
        for $i in 0..$task.a_rows {
            let $q = &$task.a[$i * $task.a_stride..$i * $task.a_stride + $bytes];
            let done: usize = $emit;
            for j in done..$task.b_rows {
                let code = &$b[j * $bytes..(j + 1) * $bytes];
                $out.put_run($i, j, &[code_count::<$expr>($q, code)]);
            }
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(super) use each_row;

/// The count of `E` over `q` against `code` (of the same length): the codes past a stream's
/// registers, one at a time. Whole words, then the last bytes widened with zeros to a word and
/// the expression's bits past them cleared.
#[inline(always)]
pub(super) fn code_count<E: WideExpr>(q: &[u8], code: &[u8]) -> u64 {
    let word = |w: &[u8]| {
        let mut x = [0u8; 8];
        x[..w.len()].copy_from_slice(w);
        u64::from_le_bytes(x)
    };
    let (qc, cc) = (q.chunks_exact(8), code.chunks_exact(8));
    let (qr, cr) = (qc.remainder(), cc.remainder());
    let whole: u64 = qc
        .zip(cc)
        .map(|(x, y)| u64::from(E::wide([word(x), word(y)]).count_ones()))
        .sum();
    let rest = match qr.len() {
        0 => 0,
        r => (E::wide([word(qr), word(cr)]) & (u64::MAX >> (64 - 8 * r))).count_ones(),
    };
    whole + u64::from(rest)
}

/// Codes of four bytes, a 32-bit lane each (eight to an AVX2 register, sixteen to an AVX-512
/// one), against the query repeated in every lane.
#[cfg(target_arch = "x86_64")]
struct Dwords<I: Vector, E> {
    isa: I,
    b: *const u8,
    q: I::Reg,
    expr: PhantomData<E>,
}

#[cfg(target_arch = "x86_64")]
impl<I: Count32, E: WideExpr> Group<I> for Dwords<I, E> {
    const SHORT: bool = true;
    const SIXTEEN: bool = I::SIXTEEN;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> I::Eight {
        // SAFETY: the caller's: the register at `c * 4` (codes from `c`) lies inside the codes.
        let x = unsafe { self.isa.load(self.b.add(c * 4)) };
        self.isa.count32(E::wide([self.q, x]))
    }
}

/// [`Dwords`] over every row of `a`, for codes of four bytes in consecutive rows of `b`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn stream_dwords<I: Count32, E: WideExpr>(
    isa: I,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) {
    let n = task.b_rows;
    let b = &task.b[..n * 4];
    each_row!(E, task, out, b, 4, |i, q| {
        let d = u64::from(u32::from_le_bytes(q.try_into().unwrap_or([0; 4])));
        let src = Dwords::<I, E> {
            isa,
            b: b.as_ptr(),
            q: isa.set(&[d * 0x1_0000_0001; 8]),
            expr: PhantomData,
        };
        // SAFETY: the groups read the registers of codes inside the row's `n` codes ([`emit`]),
        // inside `b` (`n * 4` bytes).
        unsafe { emit(isa, out, i, n, &src) }
    });
}

/// The first `words` 64-bit words of `q` repeated across eight lanes: a query of that many words
/// as every code of a register meets it.
#[inline(always)]
pub(super) fn repeated_words(q: &[u8], words: usize) -> [u64; 8] {
    std::array::from_fn(|k| {
        let w = k % words;
        u64::from_le_bytes(q[w * 8..w * 8 + 8].try_into().unwrap_or([0; 8]))
    })
}

/// Eight codes of `L` words from `b` (`L` at most a register's lanes), `LANES / L` to a
/// register, against the query's words repeated across the register.
pub(super) struct Words<I: Vector, E, const L: usize> {
    isa: I,
    b: *const u8,
    q: I::Reg,
    expr: PhantomData<E>,
}

impl<I: Vector, E: WideExpr, const L: usize> Group<I> for Words<I, E, L> {
    const SHORT: bool = L <= 2;
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> I::Eight {
        let isa = self.isa;
        let width = I::LANES * 8;
        let mut p = [isa.zero(); 8];
        for (v, pv) in p.iter_mut().enumerate().take(8 * L / I::LANES) {
            // SAFETY: the caller's: the `8 * L / LANES` registers at `c * L * 8` (codes
            // `c..c + 8` of `L` words) lie inside the codes.
            let x = unsafe { isa.load(self.b.add(c * L * 8 + v * width)) };
            *pv = isa.count(E::wide([self.q, x]));
        }
        isa.code_sums::<L>(&p)
    }
}

/// [`Words`] over every row of `a`, for codes of `L` words in consecutive rows of `b`.
#[inline(always)]
pub(super) fn stream_words<I: Vector, E: WideExpr, const L: usize>(
    isa: I,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) {
    debug_assert!(L <= I::LANES && task.code_bytes() == L * 8);
    let (n, bytes) = (task.b_rows, L * 8);
    let b = &task.b[..n * bytes];
    each_row!(E, task, out, b, bytes, |i, q| {
        let src = Words::<I, E, L> {
            isa,
            b: b.as_ptr(),
            q: isa.set(&repeated_words(q, L)),
            expr: PhantomData,
        };
        // SAFETY: the groups read codes `c..c + 8` for `c + 8 <= n`, inside `b` (`n` codes,
        // checked by the slice).
        unsafe { emit(isa, out, i, n, &src) }
    });
}

/// Eight codes from `b`, each of `R` whole registers (`R` 0: `regs`, known at run time, the
/// query's registers then read from memory, else held) and, with `TAIL`, `tail` bytes of one
/// more, loaded alone and masked after the expression (so that XNOR does not count the
/// padding).
pub(super) struct Long<I: Vector, E, const R: usize, const TAIL: bool> {
    isa: I,
    b: *const u8,
    /// Bytes per code.
    bytes: usize,
    /// The query, of `bytes` bytes...
    q: *const u8,
    /// ...its first registers, where `R` is not 0...
    held: [I::Reg; 4],
    /// ...and its `tail` bytes past the whole registers.
    q_tail: I::Reg,
    regs: usize,
    tail: usize,
    keep: I::Reg,
    /// The codes come from memory, not the caches: each code is read in order.
    from_memory: bool,
    expr: PhantomData<E>,
}

impl<I: Vector, E: WideExpr, const R: usize, const TAIL: bool> Long<I, E, R, TAIL> {
    /// Query register `t`.
    ///
    /// # Safety
    /// `t` below the code's whole registers.
    #[inline(always)]
    unsafe fn query(&self, t: usize) -> I::Reg {
        match R {
            // SAFETY: the caller's: register `t` lies inside the query's `bytes` bytes.
            0 => unsafe { self.isa.load(self.q.add(t * I::LANES * 8)) },
            _ => self.held[t],
        }
    }

    /// The expression on a code's tail at `code` (the code's start) against the query's.
    ///
    /// # Safety
    /// The code's `bytes` bytes at `code` are readable.
    #[inline(always)]
    unsafe fn tail(&self, code: *const u8) -> I::Reg {
        let regs = if R == 0 { self.regs } else { R };
        // SAFETY: the caller's: the tail lies inside the code's bytes.
        let x = unsafe { self.isa.load_part(code.add(regs * I::LANES * 8), self.tail) };
        E::wide([self.q_tail, x]).and(self.keep)
    }
}

impl<I: Vector, E: WideExpr, const R: usize, const TAIL: bool> Group<I> for Long<I, E, R, TAIL> {
    #[inline(always)]
    unsafe fn at(&self, c: usize) -> I::Eight {
        let isa = self.isa;
        let (width, regs) = (I::LANES * 8, if R == 0 { self.regs } else { R });
        let mut p = [isa.zero(); 8];
        if R == 0 && I::REGISTERS >= 32 && !self.from_memory {
            // A query read from memory, codes in the caches: each query register loaded once
            // for the eight codes, their counts in registers, settled every `SETTLE_EVERY`.
            let codes: [*const u8; 8] =
                std::array::from_fn(|v| self.b.wrapping_add((c + v) * self.bytes));
            let mut t = 0;
            while t < regs {
                let end = t.saturating_add(I::SETTLE_EVERY).min(regs);
                let mut part = [isa.zero(); 8];
                while t < end {
                    // SAFETY: the caller's: codes `c..c + 8` lie inside the codes, and register
                    // `t < regs` inside each code and the query.
                    let q = unsafe { self.query(t) };
                    for (pv, code) in part.iter_mut().zip(codes) {
                        // SAFETY: as above.
                        let x = unsafe { isa.load(code.add(t * width)) };
                        *pv = isa.count_into(*pv, E::wide([q, x]));
                    }
                    t += 1;
                }
                for (pv, part) in p.iter_mut().zip(part) {
                    *pv = isa.add(*pv, isa.settle(part));
                }
            }
            if TAIL {
                for (pv, code) in p.iter_mut().zip(codes) {
                    // SAFETY: as above; the tail lies inside each code.
                    *pv = isa.add(*pv, isa.count(unsafe { self.tail(code) }));
                }
            }
            return isa.code_sums::<8>(&p);
        }
        let stride = if R != 0 && !TAIL {
            R * width
        } else {
            self.bytes
        };
        // Each code's registers in order, one code after another, so that the loads run up
        // through `b` as the hardware's prefetch expects; counts settled every `SETTLE_EVERY`
        // registers. Written so, the compiler keeps the loads' order: with the codes' addresses
        // taken from an array it ordered them from the last code down, and codes from memory
        // came late.
        for (v, pv) in p.iter_mut().enumerate() {
            // SAFETY: the caller's: codes `c..c + 8` lie inside the codes, and the loads read
            // their `regs` whole registers and tails, and the query's, inside their bytes.
            unsafe {
                let code = self.b.add((c + v) * stride);
                let mut t = 0;
                while t < regs {
                    let end = t.saturating_add(I::SETTLE_EVERY).min(regs);
                    let mut part = isa.zero();
                    while t < end {
                        let x = isa.load(code.add(t * width));
                        part = isa.count_into(part, E::wide([self.query(t), x]));
                        t += 1;
                    }
                    *pv = isa.add(*pv, isa.settle(part));
                }
                if TAIL {
                    *pv = isa.add(*pv, isa.count(self.tail(code)));
                }
            }
        }
        isa.code_sums::<8>(&p)
    }
}

/// [`Long`] over every row of `a`, for codes of `R` whole registers (or, for `R` 0, as many as
/// they hold) and, with `TAIL`, a part of one more, in consecutive rows of `b`.
#[inline(always)]
pub(super) fn stream_long<I: Vector, E: WideExpr, const R: usize, const TAIL: bool>(
    isa: I,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) {
    let (n, bytes, width) = (task.b_rows, task.code_bytes(), I::LANES * 8);
    let (regs, tail) = (bytes / width, bytes % width);
    debug_assert!(R <= 4 && (R == 0 || R == regs) && (tail != 0) == TAIL && regs > 0);
    let b = &task.b[..n * bytes];
    each_row!(E, task, out, b, bytes, |i, q| {
        let mut held = [isa.zero(); 4];
        for (t, h) in held.iter_mut().enumerate().take(R) {
            // SAFETY: register `t < R = regs` lies inside the query's `bytes` bytes (checked by
            // the slice).
            *h = unsafe { isa.load(q.as_ptr().add(t * width)) };
        }
        let src = Long::<I, E, R, TAIL> {
            isa,
            b: b.as_ptr(),
            bytes,
            q: q.as_ptr(),
            held,
            q_tail: match TAIL {
                // SAFETY: the query's `tail` bytes past its whole registers lie inside it.
                true => unsafe { isa.load_part(q.as_ptr().add(regs * width), tail) },
                false => isa.zero(),
            },
            regs,
            tail,
            keep: match TAIL {
                true => isa.first_bytes(tail),
                false => isa.zero(),
            },
            from_memory: n * bytes > LONG_CACHED_BYTES,
            expr: PhantomData,
        };
        // SAFETY: the groups read codes `c..c + 8` for `c + 8 <= n`, inside `b` (`n` codes of
        // `bytes` bytes, checked by the slice), and the query inside `q`.
        unsafe { emit(isa, out, i, n, &src) }
    });
}
