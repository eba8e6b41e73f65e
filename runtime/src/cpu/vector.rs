//! The vector register the streams are written over, once. An instruction set is one value of
//! [`Vector`] (its token, made only where its features were detected): how a register loads,
//! counts the bits of its 64-bit lanes, sums lanes into codes' results, and stores eight or
//! sixteen results narrowed to the output's type, and which of sixteen values lie below a limit.
//! The impls are in `portable.rs`, for any CPU, and in `x86.rs`, one for AVX2 and one for AVX-512
//! with and without VPOPCNTDQ; the
//! shapes written over the trait are in `streams.rs`, knn's scan in `x86_scan.rs`, and [`emit`]
//! below is every stream's way from registers to the output.

#![allow(
    unsafe_code,
    reason = "the stores write through raw pointers into bounds-checked rows"
)]

use super::tuning::ALIGN_FROM;
use crate::element::{Lanes, by_out_size, out_size};
use crate::op::PairOut;

/// An instruction set's vector registers, as the streams use them. A value is the proof that
/// the CPU has the features: the methods on registers are safe, those that read or write
/// memory through pointers are not.
///
/// # Safety
/// A value exists only where the CPU has the instruction set's features, and
/// [`LANES`](Self::LANES), the loads and the stores describe its registers: the streams bound
/// their reads and writes by them.
pub(super) unsafe trait Vector: Copy {
    /// A register of 64-bit lanes, on which an op's expression runs (through [`Lanes`]).
    type Reg: Lanes;
    /// Eight codes' results, in order: what a stream's groups give and the stores take.
    type Eight: Copy;
    /// The 64-bit lanes of a register.
    const LANES: usize;
    /// The vector registers the instruction set has: with 32, a stream of codes of many
    /// registers keeps eight codes' counts in registers and loads each query register once for
    /// the eight.
    const REGISTERS: usize;
    /// Whether [`emit`] stores sixteen results at a time, aligned in long rows and around the
    /// caches where the output asks it (AVX-512: a store of sixteen results narrowed together);
    /// else eight at a time, as the row lies, the codes past the last eight left to the caller
    /// (AVX2): a group is then compiled once per stream, where the stores of sixteen compile it
    /// twice per store.
    const SIXTEEN_AT_ONCE: bool;
    /// Registers whose bit counts [`count_into`](Self::count_into) can add before
    /// [`settle`](Self::settle) (counts kept in bytes hold 31 registers' of at most 8 each).
    const SETTLE_EVERY: usize;

    /// A register of zeros.
    fn zero(self) -> Self::Reg;
    /// A register of the first [`LANES`](Self::LANES) of `words`.
    fn set(self, words: &[u64; 8]) -> Self::Reg;
    /// 64-bit lanes added.
    fn add(self, x: Self::Reg, y: Self::Reg) -> Self::Reg;
    /// `acc` plus the bit counts of `v`, in the form [`settle`](Self::settle) reads: the counts
    /// of the 64-bit lanes, or of the bytes where the instruction set counts bytes.
    fn count_into(self, acc: Self::Reg, v: Self::Reg) -> Self::Reg;
    /// The counts of [`count_into`](Self::count_into) as 64-bit lanes.
    fn settle(self, acc: Self::Reg) -> Self::Reg;
    /// The bit counts of `v`'s 64-bit lanes.
    #[inline(always)]
    fn count(self, v: Self::Reg) -> Self::Reg {
        self.settle(self.count_into(self.zero(), v))
    }
    /// A register whose first `bytes` bytes are all ones and the rest zero (`bytes` below a
    /// register's).
    fn first_bytes(self, bytes: usize) -> Self::Reg;
    /// Eight codes' results from the lane counts of their registers: codes of `L` lanes each
    /// (`L` at most [`LANES`](Self::LANES)), in the first `8 * L / LANES` registers of `p`, in
    /// order; `L` 8 on any instruction set is one code per register, in all eight.
    fn code_sums<const L: usize>(self, p: &[Self::Reg; 8]) -> Self::Eight;

    /// The register at `p`.
    ///
    /// # Safety
    /// A register's bytes at `p` are readable.
    unsafe fn load(self, p: *const u8) -> Self::Reg;
    /// The `bytes` bytes at `p`, the rest zero (`bytes` below a register's; a multiple of 8 on
    /// AVX2).
    ///
    /// # Safety
    /// The `bytes` bytes at `p` are readable; no other byte is read.
    unsafe fn load_part(self, p: *const u8, bytes: usize) -> Self::Reg;
    /// Stores eight results at `p` as elements of `es` bytes.
    ///
    /// # Safety
    /// The `8 * es` bytes at `p` are writable.
    unsafe fn store8(self, es: usize, p: *mut u8, v: Self::Eight);
    /// Stores the results of codes `c..c + 16` of `src` at `p` as elements of `es` bytes; with
    /// `around`, around the caches (non-temporal stores, followed by [`fence`](Self::fence)).
    /// Called only with [`SIXTEEN_AT_ONCE`](Self::SIXTEEN_AT_ONCE): by default two stores of
    /// eight, as they lie.
    ///
    /// # Safety
    /// As [`Group::at`] for the codes; the `16 * es` bytes at `p` writable and, with `around`,
    /// aligned to `16 * es` bytes (64 at most).
    #[inline(always)]
    unsafe fn store16<G: Group<Self>>(
        self,
        es: usize,
        p: *mut u8,
        src: &G,
        c: usize,
        around: bool,
    ) {
        let _ = around;
        // SAFETY: the caller's.
        unsafe {
            self.store8(es, p, src.at(c));
            self.store8(es, p.add(8 * es), src.at(c + 8));
        }
    }
    /// Orders non-temporal stores before any later store.
    fn fence(self) {}
}

/// A stream's results for one row of `a`, a register at a time: `at(c)` holds the results of
/// codes `c..c + 8` (or `c..c + 16` with [`SIXTEEN`](Self::SIXTEEN)), for any code `c`, so that
/// [`emit`] can start its stores where they are aligned. A trait with an always-inlined method
/// rather than a closure: a closure is compiled apart from the function of the instruction set
/// it is written in, without its features, and its intrinsics were left as calls.
pub(super) trait Group<I: Vector> {
    /// Whether a register of results is cheap next to its store (short codes): [`emit`] then
    /// makes the output size a constant of its loop.
    const SHORT: bool = false;
    /// Whether a register holds sixteen results (in 32-bit lanes) rather than eight.
    const SIXTEEN: bool = false;
    /// # Safety
    /// The codes from `c` that the register holds lie inside the codes the value was made for.
    unsafe fn at(&self, c: usize) -> I::Eight;
}

/// Writes one row's results from a stream, from `src` over a row of `n` codes: sixteen at a
/// time, narrowed in registers to the output's type and stored straight into its row, which is
/// taken (and bounds-checked) once. Returns the codes written, from the first: with
/// [`Vector::SIXTEEN_AT_ONCE`], all of them where there are at least sixteen (the last store is
/// made again over the row's last sixteen codes, rather than counting the codes past the last
/// whole register one at a time), else those of whole registers (eight codes, or sixteen with
/// [`Group::SIXTEEN`]).
///
/// # Safety
/// As [`Group::at`] for the codes `0..n`.
#[inline(always)]
pub(super) unsafe fn emit<I: Vector, G: Group<I>>(
    isa: I,
    out: &mut PairOut<'_, '_>,
    row: usize,
    n: usize,
    src: &G,
) -> usize {
    let codes = match (n >= 16 && I::SIXTEEN_AT_ONCE, G::SIXTEEN) {
        (true, _) => n,
        (false, true) => 0,
        (false, false) => n / 8 * 8,
    };
    // SAFETY: the caller's.
    unsafe {
        by_out_size!(G::SHORT, out_size(out.es), ES => emit_sized::<I, G, ES>(isa, out, row, codes, src))
    }
    codes
}

/// [`emit`] for outputs of `ES` bytes (0: the output's, as [`out_size`] gives it, at run time),
/// eight results per store, or with [`Vector::SIXTEEN_AT_ONCE`] sixteen (`16 * es` bytes). Where a row is long ([`ALIGN_FROM`]) and its
/// start not aligned to the store (to 64 bytes at most), the first sixteen are stored as they
/// lie, and the stores go on from the first aligned address: a store that crosses a cache line
/// costs two. The last sixteen are stored again where the codes do not end on a store, or eight
/// alone where eight are left. Results stored twice are the same values, and every store lies
/// inside the row.
///
/// # Safety
/// As [`emit`]; `codes` is at least sixteen, or a multiple of eight (of sixteen with
/// [`Group::SIXTEEN`]).
#[inline(always)]
unsafe fn emit_sized<I: Vector, G: Group<I>, const ES: usize>(
    isa: I,
    out: &mut PairOut<'_, '_>,
    row: usize,
    codes: usize,
    src: &G,
) {
    let non_temporal = out.non_temporal;
    let es = if ES == 0 { out_size(out.es) } else { ES };
    let dst = &mut out.at(row, 0)[..codes * es];
    let base = dst.as_mut_ptr();
    if !I::SIXTEEN_AT_ONCE {
        // SAFETY: as below; `codes` is a multiple of eight.
        unsafe {
            let mut c = 0;
            while c + 8 <= codes {
                isa.store8(es, base.add(c * es), src.at(c));
                c += 8;
            }
        }
        return;
    }
    let align = (16 * es).min(64);
    let off = base as usize % align;
    let aligned = codes >= ALIGN_FROM && off.is_multiple_of(es);
    let mut c = 0;
    // SAFETY: the codes `0..codes` lie inside `src`'s codes (the caller's promise); each
    // `store16` at code `c` writes results `c..c + 16` at `c * es`, for `c + 16 <= codes`,
    // inside `dst` (bounds-checked above); `store8` writes `c..c + 8` for `c + 8 <= codes`. The
    // stores of the loop are aligned to `align` where `aligned`, as the non-temporal stores
    // require.
    unsafe {
        if aligned && off != 0 {
            isa.store16(es, base, src, 0, false);
            c = (align - off) / es;
        }
        // One loop for each kind of store, so that the stores of the loop do not test it.
        if aligned && non_temporal {
            while c + 16 <= codes {
                isa.store16(es, base.add(c * es), src, c, true);
                c += 16;
            }
            // Non-temporal stores are weakly ordered: they are made visible before any later
            // store (the thread's report that its rows are done).
            isa.fence();
        } else {
            while c + 16 <= codes {
                isa.store16(es, base.add(c * es), src, c, false);
                c += 16;
            }
        }
        if c + 8 == codes && !G::SIXTEEN {
            isa.store8(es, base.add(c * es), src.at(c));
        } else if c < codes {
            isa.store16(es, base.add((codes - 16) * es), src, codes - 16, false);
        }
    }
}
