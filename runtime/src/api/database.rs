//! A prepared database of codes ([`Database`]) for repeated knn and range search under one
//! pairwise op: the rows counted once, ordered by count, and grouped by it, so that each query
//! scans only the groups whose rows can still reach its results (BitBound, Swamidass and Baldi
//! 2007, for Tanimoto; for any op whose count is a function of two bits, the same bound).
//!
//! Within a group every row has the same count `|b|`; with the query's `|a|` and the row's valid
//! bits `W`, `|a & b|` lies between `max(0, |a| + |b| - W)` and `min(|a|, |b|)`, and the op's
//! result, linear in `|a & b|` (or a ratio of two such, monotone where its denominator keeps its
//! sign), is best at one end. Groups are visited best bound first; knn stops at the first whose
//! bound is worse than its current `k`-th result (a bound equal to it is scanned: its rows could
//! tie with lower indices), and range search skips every group whose bound misses the
//! threshold. The results equal the plain call's, ties included.

use super::dynamic::RangeResult;
use crate::cpu::pair::pair_and;
use crate::cpu::simd::{ones, ratio_row, rows_ones, scan_below};
use crate::cpu::tuning::{DATABASE_BLOCK, DATABASE_PART_BYTES};
use crate::error::{Error, Result};
use crate::op::{Call, OpInfo, PairOut, PairTask, ReduceOp};
use crate::ratio::{Terms, Writes, key, key_limit, key_value, quotient};
use crate::validate::{self, desc::TensorDesc};
use crate::{DataType, Plan};
use std::borrow::Cow;

/// Codes prepared for repeated knn and range search under one pairwise op (see the module's
/// documentation): `N` rows of the call's valid elements, their padding bits zeroed, ordered by
/// their count of ones (ties in their original order), with each row's count and original index.
///
/// Build one with [`Database::new`]; save its three parts ([`codes`](Self::codes),
/// [`counts`](Self::counts), [`order`](Self::order)) and put them back, or borrow them from
/// memory-mapped files, with [`Database::from_parts`].
#[derive(Clone, Debug)]
pub struct Database<'d> {
    op: &'static OpInfo,
    dtype: DataType,
    /// Elements per row as the caller gave them, and those that hold the valid bits.
    k: usize,
    elements: usize,
    bits: Option<usize>,
    bitorder: crate::BitOrder,
    codes: Cow<'d, [u8]>,
    counts: Cow<'d, [u64]>,
    order: Cow<'d, [i64]>,
    /// Each group of equal counts: `(count, first row, end)`.
    groups: Vec<(u64, usize, usize)>,
}

/// knn's results from a [`Database`]: packed `[M, k]` values of the call's output type (native
/// encoding) and `i64` row indices of the original codes, with the rows the search compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseKnn {
    /// The results, `M * k` elements.
    pub values: Vec<u8>,
    /// Their rows in the codes the database was built from.
    pub indices: Vec<i64>,
    /// Rows compared, over all queries: `M * N` without pruning.
    pub scanned: u64,
}

/// Range search's results from a [`Database`], with the rows the search compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseRange {
    /// The hits, as [`range_search`](crate::range_search) gives them.
    pub hits: RangeResult,
    /// Rows compared, over all queries: `M * N` without pruning.
    pub scanned: u64,
}

impl Database<'static> {
    /// Prepares the packed `[N, K]` codes `bytes` (described by `desc`) for `op` under `call`'s
    /// valid bits and bit order. `op` must be a pairwise ratio op (TANIMOTO) or a pairwise sum of
    /// the count of a function of two bits (HAMMING_CDIST, BINARY_DOT).
    pub fn new(
        op: &'static OpInfo,
        call: &Call,
        desc: &TensorDesc,
        bytes: &[u8],
    ) -> Result<Database<'static>> {
        let (plan, _) = checked(op, call, desc, desc, 0)?;
        let n = desc.sizes()[0];
        let (k, es) = (desc.sizes()[1], desc.data_type().size());
        if !desc.is_packed() {
            return Err(Error::BadArgument {
                op: "Database",
                reason: "the codes must be a C-contiguous [N, K] array".to_owned(),
            });
        }
        if bytes.len() < n * k * es {
            return Err(Error::DataLength {
                tensor: "codes".to_owned(),
                len: bytes.len() / es,
                shape: crate::ShapeText(vec![n, k]),
                expected: n * k,
            });
        }
        let elements = reduced(&plan);
        let row = elements * es;
        let len = n.checked_mul(row).ok_or_else(|| too_large(op))?;
        crate::alloc::check_allocation(len.saturating_add(n.saturating_mul(16)), "database")?;
        let mut rows = vec![0u8; len];
        for (dst, src) in rows
            .chunks_exact_mut(row.max(1))
            .zip(bytes.chunks((k * es).max(1)))
        {
            dst.copy_from_slice(&src[..row]);
            zero_padding(&plan, dst);
        }
        // Rows of no bytes count nothing.
        let mut counts = vec![0u64; n];
        if row > 0 {
            rows_ones(&rows, row, row, &mut counts);
        }
        let mut order: Vec<usize> = (0..n).collect();
        // Stable: rows of one count keep their original order.
        order.sort_by_key(|&j| counts[j]);
        let mut codes = vec![0u8; len];
        for (dst, &j) in codes.chunks_exact_mut(row.max(1)).zip(&order) {
            dst.copy_from_slice(&rows[j * row..(j + 1) * row]);
        }
        let sorted: Vec<u64> = order.iter().map(|&j| counts[j]).collect();
        let order: Vec<i64> = order.into_iter().map(|j| j as i64).collect();
        Database::assemble(
            op,
            call,
            desc.data_type(),
            k,
            elements,
            codes,
            sorted,
            order,
        )
    }
}

impl<'d> Database<'d> {
    /// A database from its parts as [`codes`](Self::codes), [`counts`](Self::counts) and
    /// [`order`](Self::order) gave them, for `op` under `call`'s valid bits and bit order, with
    /// rows of `k` elements of `dtype` as the codes were given. The parts are checked: their
    /// lengths, the counts in order and equal to the codes' ones, and the order a permutation.
    pub fn from_parts(
        op: &'static OpInfo,
        call: &Call,
        dtype: DataType,
        k: usize,
        codes: &'d [u8],
        counts: &'d [u64],
        order: &'d [i64],
    ) -> Result<Database<'d>> {
        let n = counts.len();
        let (plan, elements) = parts_plan(op, call, (dtype, k), codes, counts, order)?;
        let row = elements * dtype.size();
        let bad = |reason: String| Error::BadArgument {
            op: "Database",
            reason,
        };
        let mut seen = vec![false; n];
        let mut z = vec![0u8; row];
        for (j, &c) in counts.iter().enumerate() {
            let code = &codes[j * row..(j + 1) * row];
            z.copy_from_slice(code);
            zero_padding(&plan, &mut z);
            if z != code || ones(code) != c || (j > 0 && counts[j - 1] > c) {
                return Err(bad(format!(
                    "row {j}'s count or padding does not match its codes, or the counts are out of order: the parts are not one database's"
                )));
            }
        }
        for &i in order {
            match usize::try_from(i).ok().filter(|&i| i < n) {
                Some(i) if !seen[i] => seen[i] = true,
                _ => return Err(bad(format!("the order is not a permutation of 0..{n}"))),
            }
        }
        Database::assemble(
            op,
            call,
            dtype,
            k,
            elements,
            Cow::Borrowed(codes),
            Cow::Borrowed(counts),
            Cow::Borrowed(order),
        )
    }

    /// [`from_parts`](Self::from_parts) for parts that passed it before (a binding keeps them):
    /// only their lengths are checked. Parts that are not one database's give wrong results,
    /// never a read outside them.
    #[doc(hidden)]
    pub fn from_checked_parts(
        op: &'static OpInfo,
        call: &Call,
        dtype: DataType,
        k: usize,
        codes: &'d [u8],
        counts: &'d [u64],
        order: &'d [i64],
    ) -> Result<Database<'d>> {
        let (_, elements) = parts_plan(op, call, (dtype, k), codes, counts, order)?;
        Database::assemble(
            op,
            call,
            dtype,
            k,
            elements,
            Cow::Borrowed(codes),
            Cow::Borrowed(counts),
            Cow::Borrowed(order),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        op: &'static OpInfo,
        call: &Call,
        dtype: DataType,
        k: usize,
        elements: usize,
        codes: impl Into<Cow<'d, [u8]>>,
        counts: impl Into<Cow<'d, [u64]>>,
        order: impl Into<Cow<'d, [i64]>>,
    ) -> Result<Database<'d>> {
        let counts = counts.into();
        let mut groups: Vec<(u64, usize, usize)> = Vec::new();
        for (j, &c) in counts.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if g.0 == c => g.2 = j + 1,
                _ => groups.push((c, j, j + 1)),
            }
        }
        Ok(Database {
            op,
            dtype,
            k,
            elements,
            bits: call.bits,
            bitorder: call.bitorder,
            codes: codes.into(),
            counts,
            order: order.into(),
            groups,
        })
    }

    /// A row's valid bits.
    fn valid_bits(&self) -> u64 {
        self.bits.unwrap_or(self.k * self.dtype.bits() as usize) as u64
    }

    /// The op the database was prepared for.
    pub fn op(&self) -> &'static OpInfo {
        self.op
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The element type and the elements per row of the codes it was built from.
    pub fn shape(&self) -> (DataType, usize) {
        (self.dtype, self.k)
    }

    /// The rows, ordered by count: the valid elements of each, padding bits zeroed.
    pub fn codes(&self) -> &[u8] {
        &self.codes
    }

    /// Each row's count of ones, ascending.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Each row's index in the codes the database was built from.
    pub fn order(&self) -> &[i64] {
        &self.order
    }

    /// For each row of the packed `[M, K]` `queries`, the `k` best rows of the database, as
    /// [`knn`](crate::knn) gives them for the same codes (ties by the lower original index), with
    /// results of `out_dtype`. `call` sets the order (`largest`); its valid bits and bit order
    /// must be the database's.
    pub fn knn(
        &self,
        call: &Call,
        queries: (&TensorDesc, &[u8]),
        k: usize,
        out_dtype: DataType,
    ) -> Result<DatabaseKnn> {
        let q = self.prepare(call, queries, k, out_dtype)?;
        let m = q.m;
        crate::alloc::check_pair(
            m.saturating_mul(k).saturating_mul(out_dtype.size()),
            m.saturating_mul(k).saturating_mul(8),
            "the distances and indices",
        )?;
        let blocks = crate::pool::map(m.div_ceil(DATABASE_BLOCK), |b| {
            let i0 = b * DATABASE_BLOCK;
            self.block(&q, (i0, (i0 + DATABASE_BLOCK).min(m)), Want::Best(k))
        });
        let mut values = vec![0u8; m * k * out_dtype.size()];
        let mut indices = Vec::with_capacity(m * k);
        let mut scanned = 0u64;
        for (i, (found, s)) in blocks.into_iter().flatten().enumerate() {
            scanned += s;
            let Found::Best(heap) = found else { continue };
            let list = if k == 0 {
                Vec::new()
            } else {
                heap.into_sorted_vec()
            };
            for (j, &(key, idx)) in list.iter().enumerate() {
                let v = q.result(key);
                crate::element::write_elem(&mut values, i * k + j, out_dtype.size(), v);
                indices.push(idx);
            }
        }
        Ok(DatabaseKnn {
            values,
            indices,
            scanned,
        })
    }

    /// For each row of the packed `[M, K]` `queries`, every row of the database whose result
    /// passes `threshold`, as [`range_search`](crate::range_search) gives them for the same codes
    /// (in ascending original index), with results of `out_dtype`.
    pub fn range_search(
        &self,
        call: &Call,
        queries: (&TensorDesc, &[u8]),
        threshold: f64,
        out_dtype: DataType,
    ) -> Result<DatabaseRange> {
        if threshold.is_nan() {
            return Err(Error::BadArgument {
                op: "range_search",
                reason: "the threshold is NaN".to_owned(),
            });
        }
        let q = self.prepare(call, queries, 0, out_dtype)?;
        let limit = key_limit(threshold, q.largest, q.num_max, q.den_max);
        let blocks = crate::pool::map(q.m.div_ceil(DATABASE_BLOCK), |b| {
            let i0 = b * DATABASE_BLOCK;
            self.block(&q, (i0, (i0 + DATABASE_BLOCK).min(q.m)), Want::Below(limit))
        });
        let rows: Vec<(Vec<(i64, u64)>, u64)> = blocks
            .into_iter()
            .flatten()
            .map(|(f, s)| match f {
                Found::Below(hits) => (hits, s),
                Found::Best(_) => (Vec::new(), s),
            })
            .collect();
        let total: usize = rows.iter().map(|r| r.0.len()).sum();
        crate::alloc::check_pair(
            total.saturating_mul(out_dtype.size()),
            total.saturating_mul(16),
            "range_search hits",
        )?;
        let mut hits = RangeResult {
            lims: vec![0],
            values: vec![0u8; total * out_dtype.size()],
            value_type: out_dtype,
            indices: Vec::with_capacity(total),
        };
        let mut scanned = 0;
        for (list, s) in rows {
            scanned += s;
            for (idx, key) in list {
                let at = hits.indices.len();
                crate::element::write_elem(&mut hits.values, at, out_dtype.size(), q.result(key));
                hits.indices.push(idx);
            }
            hits.lims.push(hits.indices.len() as i64);
        }
        Ok(DatabaseRange { hits, scanned })
    }

    /// Validates a query call and prepares its rows: padding zeroed, counted.
    fn prepare<'q>(
        &self,
        call: &Call,
        (desc, bytes): (&TensorDesc, &'q [u8]),
        k: usize,
        out_dtype: DataType,
    ) -> Result<Query<'q>> {
        if call.bits != self.bits || call.bitorder != self.bitorder {
            return Err(Error::BadArgument {
                op: "Database",
                reason: format!(
                    "the database counts {} in {:?} bit order; this call asks for {} in {:?}",
                    bits_text(self.bits),
                    self.bitorder,
                    bits_text(call.bits),
                    call.bitorder
                ),
            });
        }
        let db = TensorDesc::new(self.dtype, &[self.len(), self.k])?;
        let (plan, largest) = checked_out(self.op, call, desc, &db, k, out_dtype)?;
        if !desc.is_packed() {
            return Err(Error::BadArgument {
                op: "Database",
                reason: "the queries must be a C-contiguous [M, K] array".to_owned(),
            });
        }
        let (m, es) = (desc.sizes()[0], self.dtype.size());
        let need = m * self.k * es;
        if bytes.len() < need {
            return Err(Error::DataLength {
                tensor: "queries".to_owned(),
                len: bytes.len() / es,
                shape: crate::ShapeText(vec![m, self.k]),
                expected: m * self.k,
            });
        }
        let (terms, num_max, den_max) = self.terms(&plan, largest)?;
        Ok(Query {
            plan,
            bytes,
            m,
            row: self.elements * es,
            stride: self.k * es,
            terms,
            largest,
            num_max,
            den_max,
            out: out_dtype,
        })
    }

    /// The op's result as `N / D` over the call's rows, with the bounds of `|N|` and `|D|`.
    fn terms(&self, plan: &Plan, largest: bool) -> Result<(Terms, u128, u128)> {
        if let Some(rp) = plan.ratio {
            let (n, d) = rp.bounds();
            let mut t = Terms::new(&rp, Writes::Keys);
            t.largest = largest;
            return Ok((t, n, d));
        }
        let Some(c) = self.op.pair_counts() else {
            return Err(Error::BadArgument {
                op: "Database",
                reason: format!(
                    "{}'s `{}` is not a count of a function of two bits, which a database bounds",
                    self.op.name(),
                    self.op.compute()
                ),
            });
        };
        // The op's result: its affine function of the count.
        let a = self.op.affine().unwrap_or(crate::Affine::COUNT);
        let (e, w) = (self.elements as i64, self.valid_bits() as i64);
        let n = [
            a.constant * e + a.bits * w + a.scale * c.bits * w,
            a.scale * c.a,
            a.scale * c.b,
            a.scale * c.both,
        ];
        let (lo, hi) = a.range(e as u64, w as u64);
        let t = Terms {
            n,
            d: [1, 0, 0, 0],
            writes: Writes::Keys,
            largest,
            small: false,
            exact: w < 1 << 32 && hi.max(-lo) < 1 << 50,
        };
        Ok((t, lo.unsigned_abs().max(hi.unsigned_abs()), 1))
    }

    /// Queries `i0..i1`, each its best `k` as `(key, original index)` or its hits below `limit`
    /// as `(original index, key)` in index order, and the rows it compared. The block's queries
    /// go through each group together, one kernel call for those that still need it, so that a
    /// group's rows come from memory once for all of them: a query skips a group whose bound
    /// misses its threshold, or is worse than its `k`-th key once it has `k`.
    fn block(&self, q: &Query<'_>, (i0, i1): (usize, usize), want: Want) -> Vec<(Found, u64)> {
        let rows: Vec<(Vec<u8>, u64)> = (i0..i1).map(|i| q.row(i)).collect();
        let bounds: Vec<Vec<u64>> = rows.iter().map(|(_, a)| self.bounds(q, *a)).collect();
        // The groups in the order of the best bound any of the block's queries has there.
        let mut order: Vec<(u64, usize)> = (0..self.groups.len())
            .map(|g| (bounds.iter().map(|b| b[g]).min().unwrap_or(0), g))
            .collect();
        order.sort_unstable();
        let mut found: Vec<(Found, u64)> = rows
            .iter()
            .map(|_| match want {
                Want::Best(_) => (Found::Best(Default::default()), 0),
                Want::Below(_) => (Found::Below(Vec::new()), 0),
            })
            .collect();
        let mut s = Scratch::default();
        let mut active = Vec::with_capacity(rows.len());
        for &(_, g) in &order {
            active.clear();
            for (r, (f, _)) in found.iter().enumerate() {
                let bound = bounds[r][g];
                let needed = match (f, want) {
                    (Found::Best(heap), Want::Best(k)) => {
                        heap.len() < k || heap.peek().is_some_and(|&(worst, _)| bound <= worst)
                    }
                    (_, Want::Below(limit)) => bound < limit,
                    _ => false,
                };
                if needed {
                    active.push(r);
                }
            }
            if active.is_empty() {
                continue;
            }
            let (_, g0, g1) = self.groups[g];
            // A part of the group at a time, so that it stays in the cache while the block's
            // queries pass over it.
            let part = (DATABASE_PART_BYTES / q.row.max(1)).max(1);
            for start in (g0..g1).step_by(part) {
                let end = (start + part).min(g1);
                let n = end - start;
                self.counts_of(q, &rows, &active, (start, end), &mut s);
                for (x, &r) in active.iter().enumerate() {
                    let a = rows[r].1;
                    s.keys.clear();
                    s.keys.resize(n, 0);
                    let both = &s.both[x * n..(x + 1) * n];
                    ratio_row(&q.terms, a, &self.counts[start..end], both, &mut s.keys);
                    let (f, scanned) = &mut found[r];
                    *scanned += n as u64;
                    match (f, want) {
                        (Found::Best(heap), Want::Best(k)) => {
                            let order = &self.order[start..end];
                            let mut j = 0;
                            while heap.len() < k && j < n {
                                heap.push((s.keys[j], order[j]));
                                j += 1;
                            }
                            // Past the first `k`, only keys at most the worst kept can enter
                            // (an equal one by a lower index): the scan offers those alone,
                            // sixteen keys a test.
                            let worst = |h: &std::collections::BinaryHeap<(u64, i64)>| {
                                h.peek().map_or(0, |&(w, _)| w).saturating_add(1)
                            };
                            if j < n {
                                let limit = worst(heap);
                                scan_below(&s.keys[j..], limit, |x, key| {
                                    let item = (key, order[j + x]);
                                    if heap.peek().is_some_and(|&top| item < top) {
                                        heap.pop();
                                        heap.push(item);
                                    }
                                    worst(heap)
                                });
                            }
                        }
                        (Found::Below(hits), Want::Below(limit)) => {
                            for (j, &key) in s.keys.iter().enumerate() {
                                if key < limit {
                                    hits.push((self.order[start + j], key));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        for (f, _) in &mut found {
            if let Found::Below(hits) = f {
                hits.sort_unstable();
            }
        }
        found
    }

    /// The bound of each group for a query of count `a`: the best key any of its rows can have.
    fn bounds(&self, q: &Query<'_>, a: u64) -> Vec<u64> {
        let w = self.valid_bits();
        let t = &q.terms;
        self.groups
            .iter()
            .map(|&(b, _, _)| {
                let lo = (a + b).saturating_sub(w);
                let hi = a.min(b);
                let at = |x: u64| {
                    let f = |c: &[i64; 4]| {
                        i128::from(c[0])
                            + i128::from(c[1]) * i128::from(a)
                            + i128::from(c[2]) * i128::from(b)
                            + i128::from(c[3]) * i128::from(x)
                    };
                    (f(&t.n), f(&t.d))
                };
                let ((n0, d0), (n1, d1)) = (at(lo), at(hi));
                // A denominator that changes sign (or is 0) over the range: no bound.
                if d0.signum() != d1.signum() || d0 == 0 || d1 == 0 {
                    return 0;
                }
                let k0 = key(quotient(n0 as i64, d0 as i64), t.largest);
                let k1 = key(quotient(n1 as i64, d1 as i64), t.largest);
                k0.min(k1)
            })
            .collect()
    }

    /// `|a & b|` of the block's queries `active` against rows `start..end`, into `s.both`
    /// (a row of `end - start` counts per query).
    fn counts_of(
        &self,
        q: &Query<'_>,
        rows: &[(Vec<u8>, u64)],
        active: &[usize],
        (start, end): (usize, usize),
        s: &mut Scratch,
    ) {
        let n = end - start;
        s.both.clear();
        s.both.resize(active.len() * n, 0);
        if q.row == 0 || n == 0 {
            return;
        }
        s.queries.clear();
        for &r in active {
            s.queries.extend_from_slice(&rows[r].0);
        }
        let task = PairTask {
            a: &s.queries,
            a_rows: active.len(),
            a_stride: q.row,
            b: &self.codes[start * q.row..end * q.row],
            b_rows: n,
            b_stride: q.row,
            elems: self.elements,
            elem_size: self.dtype.size(),
            packed: None,
            wide_words: q.row.div_ceil(8),
            op: ReduceOp::Sum,
            identity: 0,
        };
        pair_and(&task, &mut PairOut::tile(&mut s.both, n));
    }
}

/// What a block of queries looks for: each its best `k`, or its hits below a key.
#[derive(Clone, Copy)]
enum Want {
    Best(usize),
    Below(u64),
}

/// What a query found: its best keys so far (the worst on top), or its hits.
enum Found {
    Best(std::collections::BinaryHeap<(u64, i64)>),
    Below(Vec<(i64, u64)>),
}

/// A validated query call.
struct Query<'q> {
    plan: Plan,
    bytes: &'q [u8],
    m: usize,
    /// Bytes of a row's valid elements, and between rows of the queries.
    row: usize,
    stride: usize,
    terms: Terms,
    largest: bool,
    num_max: u128,
    den_max: u128,
    out: DataType,
}

impl Query<'_> {
    /// Row `i`'s valid elements, padding zeroed, and its count.
    fn row(&self, i: usize) -> (Vec<u8>, u64) {
        let mut r = self.bytes[i * self.stride..i * self.stride + self.row].to_vec();
        zero_padding(&self.plan, &mut r);
        let a = ones(&r);
        (r, a)
    }

    /// A key's result as an element of the output type.
    fn result(&self, k: u64) -> u64 {
        match self.plan.ratio {
            Some(rp) => crate::ratio::key_result(k, rp.largest, self.out),
            // A sum's keys are of its exact integer results.
            None => key_value(k, self.largest) as i64 as u64,
        }
    }
}

#[derive(Default)]
struct Scratch {
    queries: Vec<u8>,
    both: Vec<u64>,
    keys: Vec<u64>,
}

/// The plan of a database's parts for `op` under `call` (rows of `k` elements of `dtype`) and
/// the elements of a row it keeps, once their lengths are checked against each other.
fn parts_plan(
    op: &'static OpInfo,
    call: &Call,
    (dtype, k): (DataType, usize),
    codes: &[u8],
    counts: &[u64],
    order: &[i64],
) -> Result<(Plan, usize)> {
    let n = counts.len();
    let desc = TensorDesc::new(dtype, &[n, k])?;
    let (plan, _) = checked(op, call, &desc, &desc, 0)?;
    let elements = reduced(&plan);
    let row = elements * dtype.size();
    if Some(codes.len()) != n.checked_mul(row) || order.len() != n {
        return Err(Error::BadArgument {
            op: "Database",
            reason: format!(
                "{} bytes of codes, {n} counts and {} indices: expected {n} rows of {row} bytes",
                codes.len(),
                order.len()
            ),
        });
    }
    Ok((plan, elements))
}

/// Validates a knn call of `op` on `a` against `b` with the op's default output type.
fn checked(
    op: &'static OpInfo,
    call: &Call,
    a: &TensorDesc,
    b: &TensorDesc,
    k: usize,
) -> Result<(Plan, bool)> {
    let out = match op.output_types() {
        Some(o) if !o.is_empty() => o[0],
        _ => {
            return Err(Error::NotAReduction {
                op: op.name(),
                what: "is not a pairwise sum",
            });
        }
    };
    checked_out(op, call, a, b, k, out)
}

fn checked_out(
    op: &'static OpInfo,
    call: &Call,
    a: &TensorDesc,
    b: &TensorDesc,
    k: usize,
    out: DataType,
) -> Result<(Plan, bool)> {
    for d in [a, b] {
        if d.rank() != 2 {
            return Err(Error::BadArgument {
                op: "Database",
                reason: format!(
                    "codes and queries are matrices, [N, K] and [M, K]; got {}",
                    crate::ShapeText(d.sizes().to_vec())
                ),
            });
        }
    }
    let plan = validate::validate_knn(op, call, &[a, b], k, out)?;
    if op.ratio().is_none() && op.pair_counts().is_none() {
        return Err(Error::BadArgument {
            op: "Database",
            reason: format!(
                "{}'s `{}` is not a count of a function of two bits, which a database bounds",
                op.name(),
                op.compute()
            ),
        });
    }
    Ok((plan, call.largest_first(op)))
}

/// The elements of a row that hold the call's valid bits.
fn reduced(plan: &Plan) -> usize {
    *plan.iter.last().unwrap_or(&0)
}

/// Zeroes the padding bits of one row of valid elements.
fn zero_padding(plan: &Plan, row: &mut [u8]) {
    if let Some(pad) = plan.pad {
        let es = plan.in_dtype.size();
        let at = pad.last * es;
        for (x, m) in row[at..at + es].iter_mut().zip(pad.mask.to_le_bytes()) {
            *x &= !m;
        }
    }
}

fn bits_text(bits: Option<usize>) -> String {
    match bits {
        Some(b) => format!("{b} valid bits"),
        None => "every bit".to_owned(),
    }
}

fn too_large(op: &OpInfo) -> Error {
    Error::SizeOverflow {
        tensor: format!("{}'s database", op.name()),
        sizes: crate::ShapeText(Vec::new()),
    }
}
