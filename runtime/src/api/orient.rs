//! Signed strides, as numpy and ndarray allow them, on a library whose descriptions take
//! non-negative ones: reversing an axis in every tensor of a call at once changes no result, so a
//! call on reversed views runs without copying them.

use crate::op::{Broadcast, Call, OpInfo};

/// A tensor's sizes and signed element strides, before it is described to the library.
#[derive(Clone, Copy, Debug)]
pub struct SignedLayout<'a> {
    /// The sizes.
    pub sizes: &'a [usize],
    /// Element strides; negative ones walk an axis backwards from element 0.
    pub strides: &'a [isize],
}

/// Which axes of each tensor of a call to reverse, from [`orient`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Orientation {
    /// For each input, one flag per axis: reverse this axis (its element 0 moves to the last
    /// element and its stride changes sign).
    pub inputs: Vec<Vec<bool>>,
    /// For the output, one flag per axis. A given output is reversed along these axes before the
    /// call; a new output is written packed and then presented reversed along them.
    pub output: Vec<bool>,
}

impl Orientation {
    /// Whether nothing is reversed.
    pub fn is_identity(&self) -> bool {
        self.inputs.iter().flatten().chain(&self.output).all(|f| !f)
    }
}

/// Chooses, for a call of `op` on tensors with signed strides, the axes to reverse in every tensor
/// at once so that as many strides as possible become non-negative. An axis of the call's
/// iteration is reversed when the given output walks it backwards, or, for a new output, when every
/// input that moves along it walks it backwards; reversing an axis the tensors share changes no
/// element of the result, and reversing a reduced axis changes no sum, AND, OR or XOR (except the
/// last axis of a call with valid bits, whose order says which bits count). After
/// reversing, an input may still have a negative stride (inputs disagreeing in direction along an
/// axis, knn's rows of `b`, whose indices are results, or a `pdpd` broadcast): the caller copies
/// that input to a packed tensor. Ranks, axes and shapes are not validated here; invalid ones are
/// left alone for the validator to report.
///
/// `output` is the caller's output tensor, or `None` for a new one of `out_rank` dimensions. For
/// [`knn`](crate::knn) calls pass `knn = true`, with the output `[..., M, k]`.
pub fn orient(
    op: &OpInfo,
    call: &Call,
    inputs: &[SignedLayout<'_>],
    output: Option<SignedLayout<'_>>,
    out_rank: usize,
    knn: bool,
) -> Orientation {
    let out_rank = output.map_or(out_rank, |o| o.sizes.len());
    let rank = inputs.iter().map(|i| i.sizes.len()).max().unwrap_or(0);
    let mut o = Orientation {
        inputs: inputs.iter().map(|i| vec![false; i.sizes.len()]).collect(),
        output: vec![false; out_rank],
    };
    // Each tensor's axes as axes of one iteration space (None: not shared, never reversed).
    let pairwise = op.is_pairwise();
    let space = if pairwise { rank.max(2) + 1 } else { rank };
    let in_map = |i: usize, r: usize| -> Vec<Option<usize>> {
        if pairwise {
            // a [..., M, K] and b [..., N, K] in [batch..., M, N, K].
            if r < 2 {
                return vec![None; r];
            }
            let batch = space - 3;
            let mut m: Vec<Option<usize>> = (0..r - 2).map(|j| Some(j + batch - (r - 2))).collect();
            m.push(Some(if i == 0 { space - 3 } else { space - 2 }));
            m.push(Some(space - 1));
            m
        } else {
            let pdpd = matches!(
                call.broadcast.unwrap_or_else(|| op.default_broadcast()),
                Broadcast::Pdpd { .. }
            );
            if pdpd && i > 0 {
                return vec![None; r];
            }
            (0..r).map(|j| Some(j + rank - r)).collect()
        }
    };
    let out_map: Vec<Option<usize>> = if pairwise {
        // [batch..., M, N] or, for knn, [batch..., M, k].
        let mut m: Vec<Option<usize>> = (0..out_rank.saturating_sub(2))
            .map(|j| Some(j + space - 3 - (out_rank - 2)))
            .collect();
        if out_rank >= 2 {
            m.push(Some(space - 3));
            m.push(if knn { None } else { Some(space - 2) });
        }
        m
    } else if op.reduce().is_some() {
        let axes: Vec<i64> = match call.axes {
            Some(a) => a.as_slice().to_vec(),
            None => op
                .default_axes()
                .map_or_else(|| (0..rank as i64).collect(), |a| a.to_vec()),
        };
        let reduced: Vec<bool> = (0..rank)
            .map(|d| {
                axes.iter()
                    .any(|&a| (if a < 0 { a + rank as i64 } else { a }) == d as i64)
            })
            .collect();
        if call.keepdims {
            (0..out_rank)
                .map(|j| (out_rank == rank && !reduced[j]).then_some(j))
                .collect()
        } else {
            let kept: Vec<usize> = (0..rank).filter(|&d| !reduced[d]).collect();
            (0..out_rank)
                .map(|j| (kept.len() == out_rank).then(|| kept[j]))
                .collect()
        }
    } else {
        (0..out_rank)
            .map(|j| (j + rank).checked_sub(out_rank))
            .collect()
    };
    let moves = |sizes: &[usize], strides: &[isize], j: usize| {
        sizes[j] > 1 && strides.get(j).is_some_and(|&s| s != 0)
    };
    let mut flip = vec![false; space];
    for (d, f) in flip.iter_mut().enumerate() {
        // knn's rows of b give the indices: never reversed. With valid bits, the order of the
        // last axis says which bits are the first: never reversed either.
        if knn && pairwise && d == space - 2 || call.bits.is_some() && d + 1 == space {
            continue;
        }
        if let Some(out) = output
            && let Some(j) = out_map.iter().position(|&m| m == Some(d))
            && moves(out.sizes, out.strides, j)
        {
            *f = out.strides[j] < 0;
            continue;
        }
        let mut any_neg = false;
        let mut any_pos = false;
        for (i, t) in inputs.iter().enumerate() {
            for (j, m) in in_map(i, t.sizes.len()).into_iter().enumerate() {
                if m == Some(d) && moves(t.sizes, t.strides, j) {
                    any_neg |= t.strides[j] < 0;
                    any_pos |= t.strides[j] > 0;
                }
            }
        }
        *f = any_neg && !any_pos;
    }
    for (i, t) in inputs.iter().enumerate() {
        for (j, m) in in_map(i, t.sizes.len()).into_iter().enumerate() {
            o.inputs[i][j] = m.is_some_and(|d| flip[d]) && moves(t.sizes, t.strides, j);
        }
    }
    for (j, m) in out_map.iter().enumerate() {
        o.output[j] = m.is_some_and(|d| flip[d]);
    }
    o
}
