//! The portable [`Vector`]: four 64-bit lanes in an array, each counted by
//! [`u64::count_ones`], for any CPU. The streams written over the trait (`streams.rs`) run on it
//! where no instruction set above the baseline was detected, and on every target that is not
//! x86_64; the compiler vectorizes its lanes where the target has vector registers.

#![allow(
    unsafe_code,
    reason = "the loads and stores read and write through raw pointers into bounds-checked rows"
)]

use super::streams::{stream_long, stream_words};
use super::vector::Vector;
use crate::element::{Lanes, WideExpr};
use crate::op::{PairOut, PairTask};

/// The portable instruction set. Any CPU has it, so a value needs no proof.
#[derive(Clone, Copy)]
pub(super) struct Portable;

/// Four 64-bit lanes.
#[derive(Clone, Copy)]
pub(super) struct P4([u64; 4]);

impl P4 {
    #[inline(always)]
    fn map(self, r: Self, f: impl Fn(u64, u64) -> u64) -> Self {
        P4(std::array::from_fn(|w| f(self.0[w], r.0[w])))
    }
}

impl Lanes for P4 {
    #[inline(always)]
    fn not(self) -> Self {
        P4(self.0.map(|x| !x))
    }
    #[inline(always)]
    fn and(self, r: Self) -> Self {
        self.map(r, |x, y| x & y)
    }
    #[inline(always)]
    fn or(self, r: Self) -> Self {
        self.map(r, |x, y| x | y)
    }
    #[inline(always)]
    fn xor(self, r: Self) -> Self {
        self.map(r, |x, y| x ^ y)
    }
}

/// The register of the 32 bytes of `b`, as little-endian words (as every stream reads a code).
#[inline(always)]
fn words(b: [u8; 32]) -> P4 {
    P4(std::array::from_fn(|w| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[8 * w..8 * w + 8]);
        u64::from_le_bytes(x)
    }))
}

// SAFETY: any CPU runs these methods; `LANES` and the loads and stores are those of a register of
// 32 bytes.
unsafe impl Vector for Portable {
    type Reg = P4;
    type Eight = [u64; 8];
    const LANES: usize = 4;
    const REGISTERS: usize = 16;
    const SIXTEEN_AT_ONCE: bool = false;
    // Counts are kept in 64-bit lanes.
    const SETTLE_EVERY: usize = usize::MAX;

    #[inline(always)]
    fn zero(self) -> P4 {
        P4([0; 4])
    }
    #[inline(always)]
    fn set(self, words: &[u64; 8]) -> P4 {
        P4([words[0], words[1], words[2], words[3]])
    }
    #[inline(always)]
    fn add(self, x: P4, y: P4) -> P4 {
        x.map(y, u64::wrapping_add)
    }
    #[inline(always)]
    fn count_into(self, acc: P4, v: P4) -> P4 {
        acc.map(v, |a, x| a + u64::from(x.count_ones()))
    }
    #[inline(always)]
    fn settle(self, acc: P4) -> P4 {
        acc
    }
    #[inline(always)]
    fn first_bytes(self, bytes: usize) -> P4 {
        debug_assert!(bytes < 32);
        P4(std::array::from_fn(|w| {
            match bytes.saturating_sub(8 * w).min(8) {
                8 => u64::MAX,
                b => (1u64 << (8 * b)) - 1,
            }
        }))
    }
    #[inline(always)]
    fn code_sums<const L: usize>(self, p: &[P4; 8]) -> [u64; 8] {
        if L == 8 {
            // One code per register.
            return p.map(|r| r.0.iter().sum());
        }
        std::array::from_fn(|c| (c * L..(c + 1) * L).map(|l| p[l / 4].0[l % 4]).sum())
    }
    #[inline(always)]
    unsafe fn load(self, p: *const u8) -> P4 {
        // SAFETY: the caller's: the 32 bytes at `p` are readable.
        words(unsafe { p.cast::<[u8; 32]>().read_unaligned() })
    }
    #[inline(always)]
    unsafe fn load_part(self, p: *const u8, bytes: usize) -> P4 {
        debug_assert!(bytes < 32);
        // Whole words as words, the last part of one byte by byte.
        P4(std::array::from_fn(|w| {
            let at = 8 * w;
            if at + 8 <= bytes {
                // SAFETY: the caller's: the word lies inside the `bytes` bytes at `p`.
                u64::from_le(unsafe { p.add(at).cast::<u64>().read_unaligned() })
            } else {
                (at..bytes).rev().fold(0, |x, i| {
                    // SAFETY: as above: byte `i` lies inside.
                    (x << 8) | u64::from(unsafe { p.add(i).read() })
                })
            }
        }))
    }
    #[inline(always)]
    unsafe fn store8(self, es: usize, p: *mut u8, v: [u64; 8]) {
        // Narrowed by truncation, as every store (and `write_elem`); a store of a size known to
        // the compiler for each element size, where a copy of `es` bytes was a call.
        debug_assert!(matches!(es, 1 | 2 | 4 | 8));
        let p8 = p.cast::<[u8; 8]>();
        let (p16, p32, p64) = (
            p.cast::<[u16; 8]>(),
            p.cast::<[u32; 8]>(),
            p.cast::<[u64; 8]>(),
        );
        // SAFETY: the caller's: the `8 * es` bytes at `p` are writable, and each store writes
        // eight elements of `es` bytes (8 for any size above 4).
        unsafe {
            match es {
                1 => p8.write_unaligned(v.map(|x| x as u8)),
                2 => p16.write_unaligned(v.map(|x| (x as u16).to_le())),
                4 => p32.write_unaligned(v.map(|x| (x as u32).to_le())),
                _ => p64.write_unaligned(v.map(u64::to_le)),
            }
        }
    }
}

/// Whether [`Portable::stream`] takes codes of `bytes` bytes (in consecutive rows): 8 and 16,
/// four and two codes to a register, and from 32, one code to one or more registers and a part
/// of one more.
pub(super) fn portable_streams(bytes: usize) -> bool {
    matches!(bytes, 8 | 16) || bytes >= 32
}

impl Portable {
    /// Rows of `a` against rows of `b` as they lie, for codes of the sizes [`portable_streams`]
    /// names in consecutive rows; `false` (nothing written) for other layouts.
    #[inline(always)]
    pub(super) fn stream<E: WideExpr>(
        self,
        task: &PairTask<'_>,
        out: &mut PairOut<'_, '_>,
    ) -> bool {
        let bytes = task.code_bytes();
        if task.b_stride != bytes || task.b.len() < task.b_rows * bytes || !portable_streams(bytes)
        {
            return false;
        }
        match (bytes / 32, bytes % 32) {
            (0, 8) => stream_words::<_, E, 1>(self, task, out),
            (0, 16) => stream_words::<_, E, 2>(self, task, out),
            (0, _) => return false,
            (1, 0) => stream_words::<_, E, 4>(self, task, out),
            (1, _) => stream_long::<_, E, 1, true>(self, task, out),
            (2, 0) => stream_long::<_, E, 2, false>(self, task, out),
            (4, 0) => stream_long::<_, E, 4, false>(self, task, out),
            (_, 0) => stream_long::<_, E, 0, false>(self, task, out),
            (_, _) => stream_long::<_, E, 0, true>(self, task, out),
        }
        true
    }
}
