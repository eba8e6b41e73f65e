//! knn's selection of each row's `k` best candidates: the best one for `k = 1`, counts per
//! distance value for other `k` where distances have few values (codes of up to 1 KiB), a heap
//! gated by the worst kept beyond. Distances arrive a tile row at a time, in increasing index
//! order, so an equal distance never displaces one kept. The rows of one task keep their state in
//! a few shared buffers: a call on 100 rows made no more allocations than a call on one (their
//! allocations and frees had cost two fifths of the selection's time).

use super::kernel::Dist;
use super::simd;
use super::tuning::COUNT_MAX;
use std::collections::BinaryHeap;

/// The candidates of the rows of one task.
pub(crate) struct Selections(Kind);

enum Kind {
    /// Each row's best `(distance, index)`; `u64::MAX` before any.
    One(Vec<(u64, u64)>),
    Counts(Counts),
    Heap(Vec<Heap>),
}

impl Selections {
    /// For `rows` rows, each keeping `k` (at least one) candidates of distances up to
    /// `max_distance`.
    pub(crate) fn new(rows: usize, k: usize, max_distance: u64) -> Selections {
        Selections(if k == 1 {
            Kind::One(vec![(u64::MAX, 0); rows])
        } else if max_distance <= COUNT_MAX {
            Kind::Counts(Counts::new(rows, k, max_distance))
        } else {
            Kind::Heap((0..rows).map(|_| Heap::new(k)).collect())
        })
    }

    /// The bytes [`Selections::new`] holds for these arguments (the lists and counts of every
    /// row, leaving out each structure's small fixed part).
    pub(crate) fn bytes(rows: usize, k: usize, max_distance: u64) -> usize {
        let entry = size_of::<(u64, u64)>();
        let per_row = if k == 1 {
            entry
        } else if max_distance <= COUNT_MAX {
            (max_distance as usize + 1) * size_of::<u32>() + Counts::cap(k) * entry
        } else {
            (k + 1) * entry
        };
        rows.saturating_mul(per_row)
    }

    /// Distances of row `r` against the rows of `b` from `j0` on.
    #[inline]
    pub(crate) fn push_all<D: Dist>(&mut self, r: usize, row: &[D], j0: usize) {
        match &mut self.0 {
            Kind::One(best) => {
                let best = &mut best[r];
                simd::scan_below(row, best.0, |c, d| {
                    *best = (d, (j0 + c) as u64);
                    d
                })
            }
            Kind::Counts(c) => c.push_all(r, row, j0),
            Kind::Heap(h) => h[r].push_all(row, j0),
        }
    }

    /// Each row's `per_row` best, ascending, ties by the lower index, to `emit` with the row's
    /// index, row after row: `per_row` is `k`, or fewer where a row saw fewer candidates, all of
    /// which it keeps.
    pub(crate) fn write_sorted(self, per_row: usize, mut emit: impl FnMut(usize, &[(u64, u64)])) {
        if per_row == 0 {
            return;
        }
        match self.0 {
            Kind::One(best) => {
                for (r, b) in best.iter().enumerate() {
                    emit(r, std::slice::from_ref(b));
                }
            }
            Kind::Counts(c) => c.write_sorted(per_row, emit),
            Kind::Heap(h) => {
                for (r, heap) in h.into_iter().enumerate() {
                    emit(r, &heap.heap.into_sorted_vec()[..per_row]);
                }
            }
        }
    }
}

/// The `k` best seen so far in a max-heap, and the worst of them once there are `k`.
struct Heap {
    heap: BinaryHeap<(u64, u64)>,
    k: usize,
    limit: u64,
}

impl Heap {
    fn new(k: usize) -> Heap {
        Heap {
            heap: BinaryHeap::with_capacity(k + 1),
            k,
            limit: u64::MAX,
        }
    }

    /// Distances of the rows from `j0` on.
    fn push_all<D: Dist>(&mut self, row: &[D], j0: usize) {
        // Until the heap holds `k`, every distance enters.
        let start = if self.heap.len() < self.k {
            u64::MAX
        } else {
            self.limit
        };
        simd::scan_below(row, start, |c, d| {
            let e = (d, (j0 + c) as u64);
            if self.heap.len() < self.k {
                self.heap.push(e);
                if self.heap.len() == self.k {
                    self.limit = self.heap.peek().map_or(u64::MAX, |p| p.0);
                }
            } else if d < self.limit {
                // The worst kept gives way: one sift down, not a push's sift up and a pop's.
                if let Some(mut top) = self.heap.peek_mut() {
                    *top = e;
                }
                self.limit = self.heap.peek().map_or(u64::MAX, |p| p.0);
            }
            if self.heap.len() < self.k {
                u64::MAX
            } else {
                self.limit
            }
        });
    }
}

/// The `k` best by counting per distance value, as FAISS's `hammings_knn_mc` does for large `k`:
/// how many candidates of each distance up to `top` a row keeps, and the candidates in a list.
/// Once `k` are kept, `top` is the `k`-th best distance so far and only a distance below it enters
/// (an equal one came later and never displaces): taking a candidate is an append, not a heap's
/// reordering, and `top` falls as soon as the candidates below it number `k`. A row's list holds
/// `cap` candidates; when it is full, those past `top` are dropped (fewer than `2k` remain).
struct Counts {
    k: usize,
    /// Buckets per row: distances `0..=max_distance`.
    width: usize,
    /// Candidates per row's list.
    cap: usize,
    /// `rows x width`: of each distance up to a row's `top`, the candidates kept.
    counts: Vec<u32>,
    /// `rows x cap`: candidates (distance, index); those past a row's `top` no longer count.
    list: Vec<(u64, u64)>,
    rows: Vec<CountRow>,
}

#[derive(Clone, Copy)]
struct CountRow {
    /// A distance below it enters: past `top` until `k` are kept, then `top`.
    limit: u64,
    /// The largest distance kept.
    top: u64,
    /// Candidates up to `top`.
    kept: usize,
    /// Candidates in the list.
    len: usize,
    /// The smallest and the largest distance taken: no count lies outside them, so that neither
    /// the lowering of `top` nor the final sort walks the empty buckets beyond (a thousand of
    /// them per row for codes of 256 bytes, whose distances gather around 1,024).
    lo: u64,
    hi: u64,
}

impl Counts {
    /// Candidates per row's list for `k`: room to take several distances past the `k`-th before
    /// the list is cut back.
    fn cap(k: usize) -> usize {
        4 * k.max(16)
    }

    fn new(rows: usize, k: usize, max_distance: u64) -> Counts {
        let width = max_distance as usize + 1;
        let cap = Counts::cap(k);
        Counts {
            k,
            width,
            cap,
            counts: vec![0; rows * width],
            list: vec![(0, 0); rows * cap],
            rows: vec![
                CountRow {
                    limit: max_distance + 1,
                    top: max_distance,
                    kept: 0,
                    len: 0,
                    lo: u64::MAX,
                    hi: 0,
                };
                rows
            ],
        }
    }

    #[inline]
    fn push_all<D: Dist>(&mut self, r: usize, row: &[D], j0: usize) {
        let (k, w, cap) = (self.k, self.width, self.cap);
        let st = &mut self.rows[r];
        let counts = &mut self.counts[r * w..(r + 1) * w];
        let list = &mut self.list[r * cap..(r + 1) * cap];
        simd::scan_below(row, st.limit, |c, d| {
            push(st, counts, list, k, d, (j0 + c) as u64);
            st.limit
        });
    }

    fn write_sorted(self, per_row: usize, mut emit: impl FnMut(usize, &[(u64, u64)])) {
        let mut at = Vec::with_capacity(self.width);
        let mut row = vec![(0, 0); per_row];
        for (r, st) in self.rows.iter().enumerate() {
            let counts = &self.counts[r * self.width..(r + 1) * self.width];
            let list = &self.list[r * self.cap..r * self.cap + st.len];
            sorted(st, counts, list, &mut at, &mut row);
            emit(r, &row);
        }
    }
}

/// Takes candidate `(d, index)`, below the row's `limit`, into the row.
#[inline]
fn push(
    st: &mut CountRow,
    counts: &mut [u32],
    list: &mut [(u64, u64)],
    k: usize,
    d: u64,
    index: u64,
) {
    if st.len == list.len() {
        // Full: keep what counts, in order.
        let top = st.top;
        let mut n = 0;
        for i in 0..st.len {
            if list[i].0 <= top {
                list[n] = list[i];
                n += 1;
            }
        }
        st.len = n;
    }
    // Below `top` once `k` are kept, so fewer than `k` share the distance: it counts.
    counts[d as usize] += 1;
    st.kept += 1;
    list[st.len] = (d, index);
    st.len += 1;
    (st.lo, st.hi) = (st.lo.min(d), st.hi.max(d));
    if st.kept < k {
        return;
    }
    // Drop the worst distance while the others are enough, from the largest taken.
    let mut top = st.top.min(st.hi);
    loop {
        let c = counts[top as usize] as usize;
        if st.kept - c < k {
            break;
        }
        st.kept -= c;
        counts[top as usize] = 0;
        top -= 1;
    }
    (st.top, st.limit) = (top, top);
}

/// A row's best, ascending, ties by the lower index, into `out`: a counting sort, since the
/// counts give where each distance's candidates start, and those of one distance came in
/// increasing index order (a sort of up to `4k` pairs is a large part of a call with a large `k`).
fn sorted(
    st: &CountRow,
    counts: &[u32],
    list: &[(u64, u64)],
    at: &mut Vec<usize>,
    out: &mut [(u64, u64)],
) {
    // Buckets `lo..=top`: no count lies below the smallest distance taken, nor above the largest.
    let top = st.top.min(st.hi) as usize;
    let lo = (st.lo as usize).min(top + 1);
    at.clear();
    let mut total = 0usize;
    for &c in &counts[lo..=top] {
        at.push(total);
        total += c as usize;
    }
    for &(d, i) in list {
        // Candidates past `top` no longer count.
        if let Some(slot) = (d as usize).checked_sub(lo).and_then(|b| at.get_mut(b)) {
            if let Some(o) = out.get_mut(*slot) {
                *o = (d, i);
            }
            *slot += 1;
        }
    }
}
