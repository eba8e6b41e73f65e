//! knn's selection of each row's `k` best candidates: a heap gated by the worst kept for small `k`,
//! counts per distance value for large `k`. Distances arrive a tile row at a time, in increasing
//! index order, so an equal distance never displaces one kept.

use super::simd;
use std::collections::BinaryHeap;

/// `k` from which knn keeps candidates by counting per distance value rather than in a heap.
pub(crate) const COUNT_K: usize = 32;

/// The largest distance (bits per code) for which knn counts per distance value.
pub(crate) const COUNT_MAX: u64 = 1 << 16;

/// One row's candidates.
pub(crate) enum Selection {
    Heap(Heap),
    Counts(Counts),
}

impl Selection {
    /// Distances at or above this cannot enter.
    pub(crate) fn limit(&self) -> u64 {
        match self {
            Selection::Heap(h) if h.heap.len() == h.k => h.limit,
            Selection::Heap(_) => u64::MAX,
            Selection::Counts(c) => c.limit,
        }
    }
}

/// The `k` best seen so far in a max-heap, and the worst of them once there are `k`.
pub(crate) struct Heap {
    pub(crate) heap: BinaryHeap<(u64, u64)>,
    k: usize,
    limit: u64,
}

impl Heap {
    pub(crate) fn new(k: usize) -> Heap {
        Heap {
            heap: BinaryHeap::with_capacity(k + 1),
            k,
            limit: u64::MAX,
        }
    }

    /// Distances of the rows from `j0` on.
    pub(crate) fn push_all(&mut self, row: &[u64], j0: usize) {
        // Until the heap holds `k`, every distance enters.
        let start = if self.heap.len() < self.k {
            u64::MAX
        } else {
            self.limit
        };
        simd::scan_below(row, start, |c, d| {
            if d < self.limit || self.heap.len() < self.k {
                self.heap.push((d, (j0 + c) as u64));
                if self.heap.len() > self.k {
                    self.heap.pop();
                }
                if self.heap.len() == self.k {
                    self.limit = self.heap.peek().map_or(u64::MAX, |p| p.0);
                }
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
/// the indices of each distance below `limit`, in the order they came (ascending). `limit` falls
/// as soon as the distances below it, less the last one's, number `k`: taking a candidate is a
/// push, not a heap's reordering.
pub(crate) struct Counts {
    k: usize,
    /// Every candidate kept has a distance below it.
    limit: u64,
    /// Candidates kept.
    kept: usize,
    /// The indices of each distance below `limit`.
    buckets: Vec<Vec<u64>>,
}

impl Counts {
    pub(crate) fn new(k: usize, max_distance: u64) -> Counts {
        let mut buckets = Vec::new();
        buckets.resize_with(max_distance as usize + 1, Vec::new);
        Counts {
            k,
            limit: max_distance + 1,
            kept: 0,
            buckets,
        }
    }

    pub(crate) fn push_all(&mut self, row: &[u64], j0: usize) {
        simd::scan_below(row, self.limit, |c, d| {
            if d < self.limit {
                self.push(d, (j0 + c) as u64);
            }
            self.limit
        });
    }

    fn push(&mut self, d: u64, index: u64) {
        let bucket = &mut self.buckets[d as usize];
        // `k` of one distance already came before this one: it can never be among the best.
        if bucket.len() == self.k {
            return;
        }
        bucket.push(index);
        self.kept += 1;
        // Drop the worst distance while the others are enough.
        while self.limit > 0 {
            let top = &mut self.buckets[self.limit as usize - 1];
            if self.kept - top.len() < self.k {
                break;
            }
            self.kept -= top.len();
            top.clear();
            top.shrink_to_fit();
            self.limit -= 1;
        }
    }

    /// The `k` best, ascending, ties by the lower index.
    pub(crate) fn into_sorted(self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.k.min(self.kept));
        for (d, bucket) in self.buckets.iter().enumerate().take(self.limit as usize) {
            for &j in bucket {
                if out.len() == self.k {
                    return out;
                }
                out.push((d as u64, j));
            }
        }
        out
    }
}
