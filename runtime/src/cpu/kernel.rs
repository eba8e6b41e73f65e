//! The hot loops: contiguous inputs to a contiguous output, generic over the word type and the
//! element function, which is inlined. The leaf of the CPU executor: everything else calls these,
//! through [`simd`](super::simd)'s dispatch to the best instruction set.

use crate::element::Word;
use bytemuck::Pod;

/// [`compute`] into a new vector of `n` elements, written once (no zero fill first). Each lane
/// holds at least `n` words.
#[inline(always)]
pub(crate) fn compute_new<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    n: usize,
    f: &impl Fn([W; N]) -> O,
) -> Vec<O> {
    match N {
        1 => lanes[0][..n]
            .iter()
            .map(|&a| f(std::array::from_fn(|_| a)))
            .collect(),
        2 => lanes[0][..n]
            .iter()
            .zip(&lanes[1][..n])
            .map(|(&a, &b)| f(std::array::from_fn(|k| if k == 0 { a } else { b })))
            .collect(),
        _ => {
            let s: [&[W]; N] = std::array::from_fn(|k| &lanes[k][..n]);
            (0..n)
                .map(|i| f(std::array::from_fn(|k| s[k][i])))
                .collect()
        }
    }
}

/// The one hot loop: contiguous inputs to a contiguous output. Written per arity with iterators so
/// that the compiler sees no bounds checks and vectorizes it.
#[inline(always)]
pub(crate) fn compute<W: Word, O: Pod, const N: usize>(
    lanes: &[&[W]; N],
    out: &mut [O],
    f: &impl Fn([W; N]) -> O,
) {
    let m = out.len();
    match N {
        1 => {
            for (y, &a) in out.iter_mut().zip(&lanes[0][..m]) {
                *y = f(std::array::from_fn(|_| a));
            }
        }
        2 => {
            for ((y, &a), &b) in out.iter_mut().zip(&lanes[0][..m]).zip(&lanes[1][..m]) {
                *y = f(std::array::from_fn(|k| if k == 0 { a } else { b }));
            }
        }
        3 => {
            for (((y, &a), &b), &c) in out
                .iter_mut()
                .zip(&lanes[0][..m])
                .zip(&lanes[1][..m])
                .zip(&lanes[2][..m])
            {
                *y = f(std::array::from_fn(|k| match k {
                    0 => a,
                    1 => b,
                    _ => c,
                }));
            }
        }
        _ => {
            let s: [&[W]; N] = std::array::from_fn(|k| &lanes[k][..m]);
            for (i, y) in out.iter_mut().enumerate() {
                *y = f(std::array::from_fn(|k| s[k][i]));
            }
        }
    }
}

/// The fused hot loop of reductions: the element function's values (`f`, a count or an element)
/// combined with `c` and widened with `wide` into the 64-bit accumulators `acc` (combined there
/// with `cw`).
///
/// With `row == 0`, column by column over the rows of `groups` (each lane holding `acc.len()`
/// words): `acc[j]` takes in element `j` of every row, the rows combined at the values' own width
/// four at a time, so each accumulator is loaded and stored once per four rows. Else row by row
/// over `groups[0]`: `acc[r]` takes in the values of elements `r * row .. (r + 1) * row`, combined
/// at their own width from `id` (the caller keeps rows short enough for a sum of counts to fit).
#[allow(
    clippy::too_many_arguments,
    reason = "the loop's functions, each inlined"
)]
#[inline(always)]
pub(crate) fn fold<W: Word, V: Copy, const N: usize>(
    groups: &[[&[W]; N]],
    acc: &mut [u64],
    row: usize,
    id: V,
    f: &impl Fn([W; N]) -> V,
    c: impl Fn(V, V) -> V,
    wide: impl Fn(V) -> u64,
    cw: impl Fn(u64, u64) -> u64,
) {
    let at = |s: &[&[W]; N], i: usize| -> [W; N] { std::array::from_fn(|k| s[k][i]) };
    if row == 0 {
        let m = acc.len();
        fn cut<'g, W, const N: usize>(g: &[&'g [W]; N], m: usize) -> [&'g [W]; N] {
            std::array::from_fn(|k| &g[k][..m])
        }
        let mut rest = groups;
        while rest.len() >= 4 {
            let g: [[&[W]; N]; 4] = std::array::from_fn(|r| cut(&rest[r], m));
            for (i, y) in acc.iter_mut().enumerate() {
                let v = c(
                    c(f(at(&g[0], i)), f(at(&g[1], i))),
                    c(f(at(&g[2], i)), f(at(&g[3], i))),
                );
                *y = cw(*y, wide(v));
            }
            rest = &rest[4..];
        }
        for g in rest {
            let g = cut(g, m);
            match N {
                1 => {
                    for (y, &a) in acc.iter_mut().zip(g[0]) {
                        *y = cw(*y, wide(f(std::array::from_fn(|_| a))));
                    }
                }
                2 => {
                    for ((y, &a), &b) in acc.iter_mut().zip(g[0]).zip(g[1]) {
                        let v = f(std::array::from_fn(|k| if k == 0 { a } else { b }));
                        *y = cw(*y, wide(v));
                    }
                }
                _ => {
                    for (i, y) in acc.iter_mut().enumerate() {
                        *y = cw(*y, wide(f(at(&g, i))));
                    }
                }
            }
        }
        return;
    }
    let Some(lanes) = groups.first() else { return };
    for (r, y) in acc.iter_mut().enumerate() {
        let s: [&[W]; N] = std::array::from_fn(|k| &lanes[k][r * row..(r + 1) * row]);
        let v = match N {
            1 => s[0]
                .iter()
                .fold(id, |v, &a| c(v, f(std::array::from_fn(|_| a)))),
            2 => s[0].iter().zip(s[1]).fold(id, |v, (&a, &b)| {
                c(v, f(std::array::from_fn(|k| if k == 0 { a } else { b })))
            }),
            _ => (0..row).fold(id, |v, i| c(v, f(at(&s, i)))),
        };
        *y = cw(*y, wide(v));
    }
}

/// A distance as knn's tile holds it: `u16` where every distance of the call fits (a quarter of
/// the bytes to store and to scan, sixteen to a compare where a `u64` takes four), `u64` past.
pub(crate) trait Dist: Pod + Default + Into<u64> {
    /// `v`'s low bits: the caller knows they hold it.
    fn narrow(v: u64) -> Self;
}

impl Dist for u16 {
    #[inline(always)]
    fn narrow(v: u64) -> u16 {
        v as u16
    }
}

impl Dist for u64 {
    #[inline(always)]
    fn narrow(v: u64) -> u64 {
        v
    }
}

/// `f(base + i, v[i])` for each `v[i]` below the limit as it stands (starting at `limit`, then
/// what `f` last returned), one by one; returns the limit it ends with.
#[inline(always)]
pub(crate) fn scan_each<D: Dist, F: FnMut(usize, u64) -> u64>(
    v: &[D],
    base: usize,
    mut limit: u64,
    f: &mut F,
) -> u64 {
    for (l, &d) in v.iter().enumerate() {
        let d: u64 = d.into();
        if d < limit {
            limit = f(base + l, d);
        }
    }
    limit
}
