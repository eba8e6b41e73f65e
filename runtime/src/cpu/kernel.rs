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
