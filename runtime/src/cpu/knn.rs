//! knn on the CPU: the `k` nearest rows of `b` for each row of `a`, from the pair kernels' tiles
//! (cut and packed as [`pair`](super::pair)'s drivers cut them), with `select.rs` choosing the
//! candidates, without ever holding the `M x N` matrix.

use super::kernel::Dist;
use super::pair::{
    Batch, PairRef, Shape, batches, fits_whole, how, pack_whole_b, packed_for, shape, task,
};
use super::ratio::with_ratio;
use super::select::Selections;
use super::simd;
use super::strategy::{KnnPlan, KnnSplit, KnnWork, knn_plan};
use super::tuning::{KNN_PARALLEL_BYTES, MB, NB};
use super::walk::with_zeroed_padding;
use crate::element::write_elem;
use crate::error::Result;
use crate::op::{InputBuffer, PairOut, Plan};
use crate::ratio::Writes;

/// Where knn writes: packed `[..., M, k]` distances of `es` bytes (the op's results, in the low
/// bytes) and `i64` row indices, rows after each other in batch order.
pub(crate) struct KnnOut<'o> {
    pub(crate) dist: &'o mut [u8],
    pub(crate) es: usize,
    pub(crate) idx: &'o mut [u8],
}

impl<'o> KnnOut<'o> {
    /// The outputs of `rows` rows of `k` from row `r0` on.
    fn rows(&mut self, r0: usize, rows: usize, k: usize) -> KnnOut<'_> {
        let (d, i) = (r0 * k * self.es, r0 * k * 8);
        KnnOut {
            dist: &mut self.dist[d..d + rows * k * self.es],
            es: self.es,
            idx: &mut self.idx[i..i + rows * k * 8],
        }
    }

    /// Cuts the outputs into parts of `rows` rows of `k` (the last may hold fewer).
    fn split(self, rows: usize, k: usize) -> Vec<KnnOut<'o>> {
        let es = self.es;
        self.dist
            .chunks_mut(rows * k * es)
            .zip(self.idx.chunks_mut(rows * k * 8))
            .map(|(dist, idx)| KnnOut { dist, es, idx })
            .collect()
    }

    /// Row `r`'s list, its keys turned back into the op's values.
    #[inline]
    fn put(&mut self, plan: &Plan, r: usize, list: &[(u64, u64)]) {
        let k = list.len();
        let convert = plan.flip || plan.epilogue.is_some() || plan.ratio.is_some();
        let dist = &mut self.dist[r * k * self.es..(r + 1) * k * self.es];
        let idx = &mut self.idx[r * k * 8..(r + 1) * k * 8];
        for (j, (&(key, index), i)) in list.iter().zip(idx.chunks_exact_mut(8)).enumerate() {
            let v = if convert { plan.knn_value(key) } else { key };
            write_elem(dist, j, self.es, v);
            i.copy_from_slice(&index.to_le_bytes());
        }
    }
}

/// The `k` nearest rows of `b` for every row of `a`, into `out`: per batch index and row, `k`
/// distances in the plan's order (ascending counts, or descending ones when it flips), ties by
/// the lower index, and their indices (`k` is at most the rows of `b`: validation sees to it).
/// Each task writes its rows into their place, so no list of every row's pairs is held.
pub(crate) fn knn(
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    k: usize,
    pair: PairRef<'_>,
    out: KnnOut<'_>,
) -> Result<()> {
    with_zeroed_padding(plan, inputs, |inputs| {
        with_ratio(plan, pair, Writes::Keys, |pair| {
            knn_in(plan, inputs, k, pair, out)
        })
    })
}

/// [`knn`] of inputs whose padding is zeroed, through the pair run a ratio op takes.
fn knn_in(
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    k: usize,
    pair: PairRef<'_>,
    mut out: KnnOut<'_>,
) -> Result<()> {
    let s = shape(plan);
    let work = s.work(s.m * s.n);
    // The pool is asked for its size only when the work is large: a small call notices the lock.
    let pool = match work >= KNN_PARALLEL_BYTES {
        true => crate::pool::num_threads(),
        false => 1,
    };
    let mut at = 0;
    for bt in batches(plan, &s, inputs, pair.wide, MB)? {
        if k == 0 || s.m == 0 {
            continue;
        }
        let knn_work = KnnWork {
            rows_a: s.m,
            rows_b: s.n,
            work,
            lookup: bt.pack && simd::tile_by_lookup(),
            b_fits_whole: fits_whole(&s),
            selection_bytes: Selections::bytes(s.m, k, max_key(plan, &s)),
        };
        let KnnPlan { threads, split } = knn_plan(&knn_work, pool);
        let parallel = threads > 1;
        let mut rows_out = out.rows(at, s.m, k);
        at += s.m;
        if let KnnSplit::Rows {
            rows: rows_per,
            pack_whole,
        } = split
        {
            // Each task takes some rows of `a` against all of `b`, into their place. Many tasks
            // a thread pass over all of `b`: packed once for them all. One share a thread packs
            // its own tiles, as a single thread does: the shares' packing costs what the whole's
            // would, in parallel rather than before the split, and `b` packed here would reach a
            // helper's core line by line from this core's cache.
            let whole = pack_whole.then(|| pack_whole_b(&bt, &s)).flatten();
            let shared = whole.as_deref().map(|p| bt.with_packed(p));
            let bt = shared.as_ref().unwrap_or(&bt);
            let one = |t: usize, mut part: KnnOut<'_>| {
                let i0 = t * rows_per;
                let i1 = (i0 + rows_per).min(s.m);
                select(plan, &s, bt, (i0, i1), (0, s.n), k, pair, |r, list| {
                    part.put(plan, r, list)
                });
            };
            let parts = rows_out.split(rows_per, k);
            if parallel {
                crate::pool::each(parts, one);
            } else {
                parts
                    .into_iter()
                    .enumerate()
                    .for_each(|(t, part)| one(t, part));
            }
        } else if let KnnSplit::Columns { cols: cols_per, .. } = split {
            // Few rows: each task takes all of them against a range of `b` (which it packs once
            // for all of them), and the ranges' lists are merged.
            let ranges: Vec<(usize, usize)> = (0..s.n)
                .step_by(cols_per)
                .map(|j0| (j0, (j0 + cols_per).min(s.n)))
                .collect();
            let parts: Vec<Vec<(u64, u64)>> = crate::pool::map(ranges.len(), |t| {
                let (j0, j1) = ranges[t];
                let per = k.min(j1 - j0);
                let mut part = vec![(0, 0); s.m * per];
                select(plan, &s, &bt, (0, s.m), (j0, j1), k, pair, |r, list| {
                    part[r * per..(r + 1) * per].copy_from_slice(list)
                });
                part
            });
            let mut merged = Vec::with_capacity(k);
            for r in 0..s.m {
                let lists = ranges.iter().zip(&parts).map(|(&(j0, j1), part)| {
                    let per = k.min(j1 - j0);
                    &part[r * per..(r + 1) * per]
                });
                merge_sorted(lists, k, &mut merged);
                rows_out.put(plan, r, &merged);
            }
        }
    }
    Ok(())
}

/// The `k` smallest of `lists`, each sorted ascending, in one sorted list (`k` of them, which the
/// lists hold together): merged two at a time.
fn merge_sorted<'l>(
    lists: impl Iterator<Item = &'l [(u64, u64)]>,
    k: usize,
    acc: &mut Vec<(u64, u64)>,
) {
    acc.clear();
    let mut next = Vec::with_capacity(k);
    for list in lists {
        next.clear();
        let (mut x, mut y) = (acc.iter().peekable(), list.iter().peekable());
        while next.len() < k {
            let take = match (x.peek(), y.peek()) {
                (Some(a), Some(b)) => match a <= b {
                    true => x.next(),
                    false => y.next(),
                },
                (Some(_), None) => x.next(),
                (None, _) => y.next(),
            };
            match take {
                Some(&e) => next.push(e),
                None => break,
            }
        }
        std::mem::swap(acc, &mut next);
    }
}

thread_local! {
    /// knn's tile of distances (`u64`s, or `u16`s in the same words), kept between calls:
    /// allocating it per task (and zeroing it) cost more than the distances of a task of small
    /// codes.
    static TILE: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The largest key a tile holds: a code's bits for a count, any for a ratio's keys.
fn max_key(plan: &Plan, s: &Shape) -> u64 {
    match plan.ratio {
        Some(_) => u64::MAX,
        None => s.max_distance(),
    }
}

/// Rows `i0..i1` of `a` against rows `j0..j1` of `b`: each row's `k` (or `j1 - j0`, if fewer)
/// smallest `(key, index)` to `emit`, with the row's index from `i0`, row after row.
#[allow(clippy::too_many_arguments)]
fn select(
    plan: &Plan,
    s: &Shape,
    bt: &Batch<'_>,
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
    k: usize,
    pair: PairRef<'_>,
    emit: impl FnMut(usize, &[(u64, u64)]),
) {
    let max_distance = max_key(plan, s);
    let mut sel = Selections::new(i1 - i0, k, max_distance);
    let mut tile = TILE.take();
    // Where the rows stream, distances of codes up to 8 KiB go through a tile of `u16`s, which the
    // streams write from their registers as they would a `uint16` output, and which the scan
    // compares sixteen to an instruction. The tiles of packed blocks, which would narrow from
    // memory, keep `u64`s.
    if bt.streamed
        && plan.ratio.is_none()
        && max_distance.max(plan.max_count) <= u64::from(u16::MAX)
    {
        select_in::<u16>(plan, s, bt, (i0, i1), (j0, j1), pair, &mut sel, &mut tile);
    } else {
        select_in::<u64>(plan, s, bt, (i0, i1), (j0, j1), pair, &mut sel, &mut tile);
    }
    TILE.set(tile);
    sel.write_sorted(k.min(j1 - j0), emit);
}

/// [`select`]'s distances into `sel`, through a tile of `D`s in `buf` (grown as needed).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn select_in<D: Dist>(
    plan: &Plan,
    s: &Shape,
    bt: &Batch<'_>,
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
    pair: PairRef<'_>,
    sel: &mut Selections,
    buf: &mut Vec<u64>,
) {
    // A few rows of `a` take wide tiles of `b` (each kernel call has a fixed cost), many rows the
    // tiles that stay in L1 while eight rows pass.
    let nb = if i1 - i0 <= MB { 8 * NB } else { NB };
    let words = (MB * nb * size_of::<D>()).div_ceil(8);
    if buf.len() < words {
        buf.resize(words, 0);
    }
    let tile: &mut [D] = bytemuck::cast_slice_mut(&mut buf[..words]);
    let mut pbuf = Vec::new();
    for jb in (j0..j1).step_by(nb) {
        let nj = (j1 - jb).min(nb);
        let packed = packed_for(bt, s, (jb, nj), &mut pbuf);
        for r0 in (i0..i1).step_by(MB) {
            let ni = (i1 - r0).min(MB);
            let t = task(how(plan), s, bt, (r0, ni), (jb, nj), packed);
            (pair.run)(&t, &mut PairOut::tile(&mut tile[..ni * nj], nj));
            if plan.flip {
                for v in &mut tile[..ni * nj] {
                    *v = D::narrow(plan.knn_key((*v).into()));
                }
            }
            for r in 0..ni {
                let row = &tile[r * nj..(r + 1) * nj];
                // Rows come in increasing index order: an equal distance never displaces. Once a
                // row has its `k` candidates, few distances beat the worst of them, and the scan
                // rules them out sixteen at a time.
                sel.push_all(r0 - i0 + r, row, jb);
            }
        }
    }
}
