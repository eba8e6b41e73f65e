//! knn's selection of each row's `k` best candidates: a heap gated by the worst kept for small `k`,
//! counts per distance value for large `k`. Distances arrive a tile row at a time, in increasing
//! index order, so an equal distance never displaces one kept.

use super::simd;
use std::collections::BinaryHeap;

/// `k` from which knn keeps candidates by counting per distance value rather than in a heap.
const COUNT_K: usize = 32;

/// The largest distance (bits per code) for which knn counts per distance value.
const COUNT_MAX: u64 = 1 << 13;

/// One row's candidates.
pub(crate) struct Selection(Kind);

enum Kind {
    Heap(Heap),
    Counts(Counts),
}

impl Selection {
    /// For `k` candidates of distances up to `max_distance`: counts for large `k` and distances
    /// that have few values, else a heap.
    pub(crate) fn new(k: usize, max_distance: u64) -> Selection {
        match k >= COUNT_K && max_distance <= COUNT_MAX {
            true => Selection(Kind::Counts(Counts::new(k, max_distance))),
            false => Selection(Kind::Heap(Heap::new(k))),
        }
    }

    /// Distances of the rows from `j0` on.
    pub(crate) fn push_all(&mut self, row: &[u64], j0: usize) {
        match &mut self.0 {
            Kind::Heap(h) => h.push_all(row, j0),
            Kind::Counts(c) => c.push_all(row, j0),
        }
    }

    /// The `k` best, ascending, ties by the lower index.
    pub(crate) fn into_sorted(self) -> Vec<(u64, u64)> {
        match self.0 {
            Kind::Heap(h) => h.heap.into_sorted_vec(),
            Kind::Counts(c) => c.into_sorted(),
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
    fn push_all(&mut self, row: &[u64], j0: usize) {
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
/// how many candidates of each distance below `limit` are kept, and the candidates in one list.
/// `limit` falls as soon as the candidates below it, less the last distance's, number `k`: taking a
/// candidate is an append, not a heap's reordering. Candidates at or past `limit` are dropped from
/// the list when it has grown to a few times `k`.
struct Counts {
    k: usize,
    /// Every candidate that counts has a distance below it.
    limit: u64,
    /// Candidates below `limit`.
    kept: usize,
    /// Of each distance below `limit`, the candidates kept.
    counts: Vec<u32>,
    /// Candidates (distance, index); those at or past `limit` no longer count.
    list: Vec<(u64, u64)>,
    /// The smallest and the largest distance taken: no count lies outside them, so that neither
    /// the lowering of `limit` nor the final sort walks the empty buckets beyond (a thousand of
    /// them per row for codes of 256 bytes, whose distances gather around 1,024).
    lo: u64,
    hi: u64,
}

impl Counts {
    fn new(k: usize, max_distance: u64) -> Counts {
        Counts {
            k,
            limit: max_distance + 1,
            kept: 0,
            counts: vec![0; max_distance as usize + 1],
            list: Vec::with_capacity(2 * k),
            lo: u64::MAX,
            hi: 0,
        }
    }

    fn push_all(&mut self, row: &[u64], j0: usize) {
        simd::scan_below(row, self.limit, |c, d| {
            if d < self.limit {
                self.push(d, (j0 + c) as u64);
            }
            self.limit
        });
    }

    fn push(&mut self, d: u64, index: u64) {
        let count = &mut self.counts[d as usize];
        // `k` of one distance already came before this one: it can never be among the best.
        if *count as usize >= self.k {
            return;
        }
        *count += 1;
        self.kept += 1;
        self.list.push((d, index));
        (self.lo, self.hi) = (self.lo.min(d), self.hi.max(d));
        if self.kept < self.k {
            return;
        }
        // Drop the worst distance while the others are enough, from the largest taken.
        self.limit = self.limit.min(self.hi + 1);
        while self.limit > 0 {
            let top = &mut self.counts[self.limit as usize - 1];
            if self.kept - (*top as usize) < self.k {
                break;
            }
            self.kept -= *top as usize;
            *top = 0;
            self.limit -= 1;
        }
        if self.list.len() >= 4 * self.k.max(16) {
            let limit = self.limit;
            self.list.retain(|&(d, _)| d < limit);
        }
    }

    /// The `k` best, ascending, ties by the lower index: a counting sort, since the counts give
    /// where each distance's candidates start, and those of one distance came in increasing index
    /// order (sorting up to `4k` pairs took a fifth of ten queries against 100,000 codes with
    /// `k = 1,000`).
    fn into_sorted(self) -> Vec<(u64, u64)> {
        // Buckets `lo..limit`: no count lies below the smallest distance taken.
        let (lo, limit) = (self.lo.min(self.limit) as usize, self.limit as usize);
        let mut at = Vec::with_capacity(limit - lo);
        let mut total = 0usize;
        for &c in &self.counts[lo..limit] {
            at.push(total);
            total += c as usize;
        }
        let n = total.min(self.k);
        let mut out = vec![(0u64, 0u64); n];
        for &(d, i) in &self.list {
            // Candidates at or past `limit` no longer count.
            if let Some(slot) = (d as usize).checked_sub(lo).and_then(|b| at.get_mut(b)) {
                if let Some(o) = out.get_mut(*slot) {
                    *o = (d, i);
                }
                *slot += 1;
            }
        }
        out
    }
}
