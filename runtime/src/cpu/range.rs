//! Range search on the CPU: for each row of `a`, every row of `b` whose result passes a
//! threshold, in ascending index order, from the pair kernels' tiles (cut and packed as knn cuts
//! them), without ever holding the `M x N` matrix.
//!
//! A threshold becomes a limit on knn's keys ([`Plan::knn_key`]: ascending keys are nearest
//! first), found once per call from the exact values, so the scan of a tile compares integers.

use super::kernel::Dist;
use super::pair::{Batch, PairRef, Shape, batches, how, packed_for, shape, task};
use super::simd;
use super::tuning::{KNN_PARALLEL_BYTES, MB, NB};
use crate::error::{Error, Result};
use crate::op::{InputBuffer, PairOut, Plan};

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
    // For an integer v: v < t exactly when v < ceil(t), and v >= t exactly when v >= ceil(t).
    // The conversion saturates: infinities go past every value.
    let bound = threshold.ceil() as i128;
    let bits = plan.out_dtype.size() * 8;
    let value = |key: u64| -> i128 {
        let v = plan.knn_value(key);
        let v = if bits >= 64 {
            v
        } else {
            v & ((1u64 << bits) - 1)
        };
        match plan.out_dtype.is_signed() && bits < 64 {
            true => i128::from(((v << (64 - bits)) as i64) >> (64 - bits)),
            false if plan.out_dtype.is_signed() => i128::from(v as i64),
            false => i128::from(v),
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
    let copies = super::walk::zeroed_padding(plan, inputs);
    let zeroed = copies.as_ref().map(|c| super::walk::with_copies(inputs, c));
    let inputs = zeroed.as_deref().unwrap_or(inputs);
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
    let work = (s.m * s.n).saturating_mul(s.k.max(1)).saturating_mul(s.es);
    let threads = match work >= KNN_PARALLEL_BYTES {
        true => crate::pool::num_threads(),
        false => 1,
    };
    // Many rows: each task takes some rows against all of `b`. Few: each takes a range of `b`
    // for all rows, and a row's hits are the ranges' in order.
    let (rows_per, cols_per) = match s.m >= threads {
        true => (s.m.div_ceil(threads * 4).max(1), s.n),
        false => (s.m, s.n.div_ceil(threads).next_multiple_of(8)),
    };
    let row_parts = s.m.div_ceil(rows_per);
    let col_parts = s.n.div_ceil(cols_per);
    let parts = crate::pool::map(row_parts * col_parts, |t| {
        let (i0, j0) = ((t / col_parts) * rows_per, (t % col_parts) * cols_per);
        let rows = (i0, (i0 + rows_per).min(s.m));
        let cols = (j0, (j0 + cols_per).min(s.n));
        scan(plan, &s, &bt, rows, cols, limit, pair)
    });
    let parts = parts.into_iter().collect::<Result<Vec<Hits>>>()?;
    let total: usize = parts.iter().map(|p| p.indices.len()).sum();
    let bytes = total.saturating_mul(16);
    for v in [&mut hits.keys, &mut hits.indices] {
        v.try_reserve_exact(total)
            .map_err(|_| Error::AllocationFailed {
                tensor: "range_search hits".to_owned(),
                bytes,
            })?;
    }
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
fn scan(
    plan: &Plan,
    s: &Shape,
    bt: &Batch<'_>,
    (i0, i1): (usize, usize),
    (j0, j1): (usize, usize),
    limit: u64,
    pair: PairRef<'_>,
) -> Result<Hits> {
    let mut out = Hits {
        lims: vec![0; i1 - i0 + 1],
        keys: Vec::new(),
        indices: Vec::new(),
    };
    let mut full = false;
    // Row by row of `a` in blocks of MB, so that a row's hits come out in index order: each
    // block's rows keep their own lists until its last tile of `b`.
    let nb = if i1 - i0 <= MB { 8 * NB } else { NB };
    let mut tile = vec![0u64; MB * nb];
    let mut pbuf = Vec::new();
    let mut lists: Vec<Vec<(u64, u64)>> = vec![Vec::new(); MB];
    for r0 in (i0..i1).step_by(MB) {
        let ni = (i1 - r0).min(MB);
        for jb in (j0..j1).step_by(nb) {
            let nj = (j1 - jb).min(nb);
            let packed = packed_for(bt, s, (jb, nj), &mut pbuf);
            let t = task(how(plan), s, bt, (r0, ni), (jb, nj), packed);
            (pair.run)(&t, &mut PairOut::tile(&mut tile[..ni * nj], nj));
            for (r, list) in lists.iter_mut().enumerate().take(ni) {
                let row = &tile[r * nj..(r + 1) * nj];
                push_hits(plan, row, jb, limit, list, &mut full);
            }
        }
        for (r, list) in lists.iter_mut().enumerate().take(ni) {
            if !full && out.keys.try_reserve(list.len()).is_err() {
                full = true;
            }
            if !full && out.indices.try_reserve(list.len()).is_err() {
                full = true;
            }
            if !full {
                out.keys.extend(list.iter().map(|h| h.0));
                out.indices.extend(list.iter().map(|h| h.1));
            }
            list.clear();
            out.lims[r0 - i0 + r + 1] = out.keys.len() as u64;
        }
        if full {
            return Err(Error::AllocationFailed {
                tensor: "range_search hits".to_owned(),
                bytes: out.keys.len().saturating_mul(32),
            });
        }
    }
    Ok(out)
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
