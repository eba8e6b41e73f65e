//! Range search on the CPU: for each row of `a`, every row of `b` whose result passes a
//! threshold, in ascending index order, from the pair kernels' tiles (cut and packed as knn cuts
//! them), without ever holding the `M x N` matrix.
//!
//! A threshold becomes a limit on knn's keys ([`Plan::knn_key`]: ascending keys are nearest
//! first), found once per call from the exact values, so the scan of a tile compares integers.

use super::kernel::Dist;
use super::pair::{Batch, PairRef, Shape, batches, how, packed_for, shape, task};
use super::ratio::with_ratio;
use super::simd;
use super::tuning::{KNN_PARALLEL_BYTES, MB, NB};
use super::walk::with_zeroed_padding;
use crate::error::{Error, Result};
use crate::op::{InputBuffer, PairOut, Plan};
use crate::ratio::Writes;

/// The hits of a range search in FAISS's layout: row `i`'s hits are `lims[i]..lims[i + 1]` of
/// `keys` (knn's keys, [`Plan::knn_value`] gives the results) and `indices`, ascending indices.
pub(crate) struct Hits {
    pub(crate) lims: Vec<u64>,
    pub(crate) keys: Vec<u64>,
    pub(crate) indices: Vec<u64>,
}

/// The first key that misses `threshold`: results pass where `value >= threshold` for a call
/// that ranks the largest first (`largest`), else where `value < threshold`, compared at the
/// threshold's exact value. Keys rank results nearest first, so the keys that pass are those
/// below the limit.
pub(crate) fn key_limit(plan: &Plan, threshold: f64, largest: bool) -> u64 {
    if let Some(rp) = plan.ratio {
        let (num, den) = rp.bounds();
        return crate::ratio::key_limit(threshold, rp.largest, num, den);
    }
    // For an integer v: v < t exactly when v < ceil(t), and v >= t exactly when v >= ceil(t).
    // The conversion saturates: infinities go past every value.
    let bound = threshold.ceil() as i128;
    // The exact value of a count, never wrapped to the output type: the keys past the counts a
    // call can reach (valid bits, an expression that counts zeros) then keep the values monotone,
    // where wrapped ones could pass the threshold and mislead the bisection.
    let value = |key: u64| -> i128 {
        let count = i128::from(plan.knn_key(key));
        match plan.epilogue {
            Some(e) => i128::from(e.offset as i64) + i128::from(e.scale as i64) * count,
            None => count,
        }
    };
    let hit = |key: u64| match largest {
        true => value(key) >= bound,
        false => value(key) < bound,
    };
    // The keys that pass are a prefix of 0..=max_count: the first that misses, by bisection.
    let (mut lo, mut hi) = (0u64, plan.max_count + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match hit(mid) {
            true => lo = mid + 1,
            false => hi = mid,
        }
    }
    lo
}

/// Every row of `b` whose key is below `limit`, for every row of `a` (one batch index: the plan
/// is of 2-D inputs).
pub(crate) fn range(
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    limit: u64,
    pair: PairRef<'_>,
) -> Result<Hits> {
    with_zeroed_padding(plan, inputs, |inputs| {
        with_ratio(plan, pair, Writes::Keys, |pair| {
            range_in(plan, inputs, limit, pair)
        })
    })
}

/// [`range`] of inputs whose padding is zeroed, through the pair run a ratio op takes.
fn range_in(
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    limit: u64,
    pair: PairRef<'_>,
) -> Result<Hits> {
    let s = shape(plan);
    let mut hits = Hits {
        lims: vec![0; s.m + 1],
        keys: Vec::new(),
        indices: Vec::new(),
    };
    let Some(bt) = batches(plan, &s, inputs, pair.wide, MB)?.into_iter().next() else {
        return Ok(hits);
    };
    if s.m == 0 || s.n == 0 || limit == 0 {
        return Ok(hits);
    }
    let work = s.work(s.m * s.n);
    let threads = match work >= KNN_PARALLEL_BYTES {
        true => crate::pool::num_threads(),
        false => 1,
    };
    // Many rows: each task takes some rows against all of `b`. Few: each takes a range of `b`
    // for all rows, and a row's hits are the ranges' in order.
    let (rows_per, cols_per) = match (threads, s.m >= threads) {
        (1, _) => (s.m, s.n),
        (_, true) => (s.m.div_ceil(threads * 4).max(1), s.n),
        (_, false) => (s.m, s.n.div_ceil(threads).next_multiple_of(8)),
    };
    let row_parts = s.m.div_ceil(rows_per);
    let col_parts = s.n.div_ceil(cols_per);
    let parts = crate::pool::map(row_parts * col_parts, |t| {
        let (i0, j0) = ((t / col_parts) * rows_per, (t % col_parts) * cols_per);
        let rows = (i0, (i0 + rows_per).min(s.m));
        let cols = (j0, (j0 + cols_per).min(s.n));
        scan(plan, &s, &bt, rows, cols, limit, pair)
    });
    let mut parts = parts.into_iter().collect::<Result<Vec<Hits>>>()?;
    if parts.len() == 1 {
        return Ok(parts.pop().unwrap_or(hits));
    }
    let total: usize = parts.iter().map(|p| p.indices.len()).sum();
    (hits.keys, hits.indices) = reserve_pair(total)?;
    for rp in 0..row_parts {
        let i0 = rp * rows_per;
        for r in i0..(i0 + rows_per).min(s.m) {
            for p in &parts[rp * col_parts..(rp + 1) * col_parts] {
                let (from, to) = (p.lims[r - i0] as usize, p.lims[r - i0 + 1] as usize);
                hits.keys.extend_from_slice(&p.keys[from..to]);
                hits.indices.extend_from_slice(&p.indices[from..to]);
            }
            hits.lims[r + 1] = hits.keys.len() as u64;
        }
    }
    Ok(hits)
}

/// Rows `i0..i1` of `a` against rows `j0..j1` of `b`: their hits, with `lims` from row `i0`.
/// Tiles of `b` in the outer loop, each packed once for all the rows (as knn's tasks take them);
/// each row keeps its own list, which the tiles extend in index order.
fn scan(
    plan: &Plan,
    s: &Shape,
    bt: &Batch<'_>,
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
    limit: u64,
    pair: PairRef<'_>,
) -> Result<Hits> {
    let mut full = false;
    let nb = if i1 - i0 <= MB { 8 * NB } else { NB };
    // The tile as large as the rows and columns fill: a few queries against a few codes would
    // spend more in zeroing a whole one than in counting.
    let mut tile = vec![0u64; (i1 - i0).min(MB) * nb.min(j1 - j0)];
    let mut pbuf = Vec::new();
    let mut lists: Vec<Vec<(u64, u64)>> = vec![Vec::new(); i1 - i0];
    // Bytes the lists hold, checked against the memory the machine can give as they grow.
    let mut held = 0usize;
    for jb in (j0..j1).step_by(nb) {
        let nj = (j1 - jb).min(nb);
        let packed = packed_for(bt, s, (jb, nj), &mut pbuf);
        for r0 in (i0..i1).step_by(MB) {
            let ni = (i1 - r0).min(MB);
            let t = task(how(plan), s, bt, (r0, ni), (jb, nj), packed);
            (pair.run)(&t, &mut PairOut::tile(&mut tile[..ni * nj], nj));
            for (r, list) in lists[r0 - i0..r0 - i0 + ni].iter_mut().enumerate() {
                let row = &tile[r * nj..(r + 1) * nj];
                let before = list.capacity();
                push_hits(plan, row, jb, limit, list, &mut full);
                held += (list.capacity() - before) * size_of::<(u64, u64)>();
            }
            if full
                || (held >= HELD_CHECK
                    && crate::alloc::check_allocation(held, "range_search hits").is_err())
            {
                return Err(Error::AllocationFailed {
                    tensor: "range_search hits".to_owned(),
                    bytes: held,
                });
            }
        }
    }
    let total: usize = lists.iter().map(Vec::len).sum();
    // One task at a time checks and writes its arrays, so that each check sees the others'
    // written pages (pages reserved and not yet written are not resident), and both arrays are
    // checked together for the same reason.
    let _one = CONVERT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (keys, indices) = reserve_pair(total)?;
    let mut out = Hits {
        lims: Vec::with_capacity(i1 - i0 + 1),
        keys,
        indices,
    };
    out.lims.push(0);
    for list in lists {
        out.keys.extend(list.iter().map(|h| h.0));
        out.indices.extend(list.iter().map(|h| h.1));
        out.lims.push(out.keys.len() as u64);
    }
    Ok(out)
}

/// Held by the task that turns its lists of hits into arrays (see [`scan`]).
static CONVERT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Lists of hits past this many bytes are checked against the memory the machine can give:
/// what two tasks may add between checks is small beside a container's memory.
const HELD_CHECK: usize = 16 << 20;

/// Empty arrays of keys and of indices with room for `n` hits each, checked together against
/// the memory the machine can give (pages reserved and not yet written are not resident, so a
/// check of the second alone would not count the first), or the error that says it cannot be had.
fn reserve_pair(n: usize) -> Result<(Vec<u64>, Vec<u64>)> {
    let bytes = n.saturating_mul(8);
    crate::alloc::check_pair(bytes, bytes, "range_search hits")?;
    let one = || {
        let mut v = Vec::new();
        v.try_reserve_exact(n)
            .map_err(|_| Error::AllocationFailed {
                tensor: "range_search hits".to_owned(),
                bytes,
            })
            .map(|()| v)
    };
    Ok((one()?, one()?))
}

/// The hits of one tile row (results of rows `j0..` of `b`) onto `list`, as `(key, index)`.
#[inline]
fn push_hits<D: Dist>(
    plan: &Plan,
    row: &[D],
    j0: usize,
    limit: u64,
    list: &mut Vec<(u64, u64)>,
    full: &mut bool,
) {
    let mut push = |c: usize, key: u64| {
        if list.len() == list.capacity() && list.try_reserve(list.len().max(64)).is_err() {
            *full = true;
            return;
        }
        list.push((key, (j0 + c) as u64));
    };
    if plan.flip {
        for (c, &v) in row.iter().enumerate() {
            let key = plan.knn_key(v.into());
            if key < limit {
                push(c, key);
            }
        }
    } else {
        simd::scan_below(row, limit, |c, d| {
            push(c, d);
            limit
        });
    }
}
