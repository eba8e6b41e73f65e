//! The CPU executor of reductions over axes. Like the walk, it knows element sizes, not types: the
//! op's map kernel computes the element-wise results of a contiguous run into a small buffer (bit
//! counts as bytes for a sum, elements for `and`/`or`/`xor`), and this file folds them into 64-bit
//! accumulators, one per output element.
//!
//! Two loop orders keep the loads contiguous. When the innermost reduced dimension is the one laid
//! out contiguously (reducing the last axis), each output folds runs along it (`rows`); consecutive
//! short rows are mapped together, one kernel call for many outputs. When the innermost kept
//! dimension is contiguous (reducing the first axis), a block of outputs keeps its accumulators in
//! L1 while every reduced index adds one contiguous run to them (`columns`). Large calls are spread
//! over the thread pool (`crate::pool`), over outputs when there are enough of them, else over the reduced
//! elements with partial accumulators combined at the end.

use super::accum::{fold_columns, fold_into, identity, intermediate_type};
use super::tuning::{CHUNK_BYTES, DIRECT_BYTES, FOLD_ROWS, PARALLEL_BYTES};
use super::walk::{Kernel, gather, scratch_bytes};
use crate::MAX_INPUTS;
use crate::element::{write_elem, write_run};
use crate::op::{InputBuffer, Plan, ReduceOp};

/// A reduction's fused kernel (see [`fold_count`](super::fold_count)): its element function's
/// values combined into accumulators, row by row (`row > 0`), or column by column (`row == 0`)
/// over up to [`FOLD_ROWS`] rows, each input's lanes of each row in turn.
#[doc(hidden)]
pub type Fold<'k> = &'k (dyn Fn(&[&[u8]], &mut [u64], usize) + Sync);

/// A reduction being run: the plan split into kept and reduced dimensions.
struct Job<'a> {
    op: ReduceOp,
    ins: [&'a [u8]; MAX_INPUTS],
    aligned: [bool; MAX_INPUTS],
    n: usize,
    ies: usize,
    ims: usize,
    id: u64,
    kept: &'a [usize],
    red: &'a [usize],
    k_str: [&'a [usize]; MAX_INPUTS],
    r_str: [&'a [usize]; MAX_INPUTS],
    map: Kernel<'a>,
    fold: Option<Fold<'a>>,
}

/// Scratch space of one task: gathered inputs and the mapped results, aligned for any element.
#[derive(Default)]
struct Scratch {
    ins: [[Vec<u64>; MAX_INPUTS]; FOLD_ROWS],
    mapped: Vec<u64>,
}

/// Runs a validated reduction (not a pairwise one) into `out`, whose element 0 is the output's.
pub(crate) fn run(
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    out: &mut [u8],
    map: Kernel<'_>,
    fold: Option<Fold<'_>>,
) {
    let Some(op) = plan.reduce else { return };
    let n = inputs.len();
    if plan.count == 0 || n == 0 || n > MAX_INPUTS {
        return;
    }
    let oes = plan.out_dtype.size();
    let id = identity(op, plan.in_dtype);
    let kept = &plan.iter[..plan.kept];
    let out_offset = |o: usize| -> usize {
        let mut rem = o;
        let mut at = 0;
        for d in (0..kept.len()).rev() {
            at += (rem % kept[d]) * plan.out_strides[d];
            rem /= kept[d];
        }
        at
    };
    if plan.reduced == 0 {
        for o in 0..plan.count {
            write_elem(out, out_offset(o), oes, id);
        }
        return;
    }
    let ies = plan.in_dtype.size();
    let job = Job {
        op,
        ins: std::array::from_fn(|k| match inputs.get(k) {
            Some(InputBuffer::Bytes(b)) => *b,
            _ => &[],
        }),
        aligned: std::array::from_fn(|k| match inputs.get(k) {
            Some(InputBuffer::Bytes(b)) => (b.as_ptr() as usize).is_multiple_of(ies),
            _ => false,
        }),
        n,
        ies,
        // The bytes of one element-wise result: a bit count's byte for a sum, else an element.
        ims: plan.reduce.map_or(plan.in_dtype.size(), |op| {
            intermediate_type(op, plan.in_dtype).size()
        }),
        id,
        kept,
        red: &plan.iter[plan.kept..],
        k_str: std::array::from_fn(|k| {
            &plan.in_strides[k][..plan.kept.min(plan.in_strides[k].len())]
        }),
        r_str: std::array::from_fn(|k| {
            let s = &plan.in_strides[k];
            &s[plan.kept.min(s.len())..]
        }),
        map,
        fold,
    };
    // An output laid out in the kept dimensions' order is written by the tasks themselves.
    let mut packed = true;
    let mut size = 1;
    for d in (0..kept.len()).rev() {
        packed &= kept[d] == 1 || plan.out_strides[d] == size;
        size *= kept[d];
    }
    if packed {
        job.all(plan.count, Some((&mut out[..plan.count * oes], oes)));
    } else {
        let accs = job.all(plan.count, None);
        for (o, &v) in accs.iter().enumerate() {
            write_elem(out, out_offset(o), oes, v);
        }
    }
}

impl<'a> Job<'a> {
    /// Whether the innermost kept dimension is the contiguous one and no reduced dimension is, so
    /// that blocks of outputs fold contiguous runs.
    fn columns(&self) -> bool {
        let Some(&last) = self.kept.last() else {
            return false;
        };
        last > 1
            && (0..self.n).all(|k| self.k_str[k].last() == Some(&1))
            && (0..self.n).all(|k| !self.r_str[k].contains(&1))
    }

    /// Every output's accumulator, in the order of the kept dimensions: written to `out` (packed
    /// in that order, elements of the given size) when there is one, else returned.
    fn all(&self, count: usize, out: Option<(&mut [u8], usize)>) -> Vec<u64> {
        let reduced: usize = self.red.iter().product();
        let bytes = count
            .saturating_mul(reduced)
            .saturating_mul(self.ies * self.n);
        let threads = crate::pool::num_threads();
        let parallel = bytes >= PARALLEL_BYTES && threads > 1;
        // Units of output work: single outputs (rows) or blocks of one (columns).
        let columns = self.columns();
        // Column blocks: the fused kernel's accumulators (`u64`s) stay in L1 beside a few rows of
        // input; the map kernel's results need scratch space there too.
        let block = match self.fold {
            Some(_) => 2 * CHUNK_BYTES / 8,
            None => (CHUNK_BYTES / self.ies.max(self.ims).max(8)).max(1),
        };
        let g = Units::new(columns, count, *self.kept.last().unwrap_or(&1), block);
        let (unit_tasks, splits) = if !parallel {
            (1, 1)
        } else if g.units >= 4 * threads {
            (4 * threads, 1)
        } else {
            (g.units, (4 * threads).div_ceil(g.units).min(reduced))
        };
        let per = g.units.div_ceil(unit_tasks).max(1);
        let ranges: Vec<(usize, usize)> = (0..g.units)
            .step_by(per)
            .map(|u0| (u0, (u0 + per).min(g.units)))
            .collect();
        let (mut out, oes) = match out {
            Some((o, es)) => (Some(o), es),
            None => (None, 0),
        };
        if let (Some(out), 1) = (out.as_deref_mut(), splits) {
            // Each task writes its own outputs, a batch of accumulators at a time.
            let mut slices = Vec::with_capacity(ranges.len());
            let mut rest = out;
            for &(u0, u1) in &ranges {
                let (head, tail) = rest.split_at_mut((g.first(u1) - g.first(u0)) * oes);
                slices.push(((u0, u1), head));
                rest = tail;
            }
            let run = |((u0, u1), out): ((usize, usize), &mut [u8])| {
                let mut s = Scratch::default();
                let batch = g.batch();
                let mut acc = Vec::new();
                let mut u = u0;
                while u < u1 {
                    let e = (u + batch).min(u1);
                    let (o0, o1) = (g.first(u) - g.first(u0), g.first(e) - g.first(u0));
                    acc.clear();
                    acc.resize(o1 - o0, self.id);
                    self.units(&g, u, e, 0, reduced, &mut acc, &mut s);
                    write_run(&mut out[o0 * oes..o1 * oes], &acc, oes);
                    u = e;
                }
            };
            if parallel {
                crate::pool::each(slices, |_, slice| run(slice));
            } else {
                slices.into_iter().for_each(run);
            }
            return Vec::new();
        }
        let rper = reduced.div_ceil(splits).max(1);
        let tasks: Vec<(usize, usize, usize, usize)> = ranges
            .iter()
            .flat_map(|&(u0, u1)| {
                (0..reduced)
                    .step_by(rper)
                    .map(move |r0| (u0, u1, r0, (r0 + rper).min(reduced)))
            })
            .collect();
        let run = |&(u0, u1, r0, r1): &(usize, usize, usize, usize)| -> Vec<u64> {
            let mut s = Scratch::default();
            let mut acc = vec![self.id; g.first(u1) - g.first(u0)];
            self.units(&g, u0, u1, r0, r1, &mut acc, &mut s);
            acc
        };
        let partials: Vec<Vec<u64>> = if parallel {
            crate::pool::map(tasks.len(), |t| run(&tasks[t]))
        } else {
            tasks.iter().map(run).collect()
        };
        // Partials of one range of units follow each other; fold them together in order.
        let mut accs: Vec<u64> = Vec::with_capacity(count);
        let mut last_range = None;
        let mut start = 0;
        for (t, part) in tasks.iter().zip(partials) {
            if last_range == Some((t.0, t.1)) {
                for (a, v) in accs[start..].iter_mut().zip(part) {
                    *a = self.op.combine(*a, v);
                }
            } else {
                start = accs.len();
                accs.extend(part);
                last_range = Some((t.0, t.1));
            }
        }
        debug_assert_eq!(accs.len(), count);
        if let Some(out) = out {
            write_run(out, &accs, oes);
        }
        accs
    }

    /// Folds reduced elements `r0..r1` of units `u0..u1` into `acc` (one accumulator per output
    /// of the units, set to the identity).
    #[allow(clippy::too_many_arguments, reason = "a task's ranges and its buffers")]
    fn units(
        &self,
        g: &Units,
        u0: usize,
        u1: usize,
        r0: usize,
        r1: usize,
        acc: &mut [u64],
        s: &mut Scratch,
    ) {
        if g.columns {
            self.column_units(u0, u1, r0, r1, g.inner, g.block, acc, s)
        } else {
            self.row_units(u0, u1, r0, r1, acc, s)
        }
    }

    /// Input offsets (in elements) of kept linear index `o`.
    fn kept_base(&self, o: usize) -> [usize; MAX_INPUTS] {
        offsets([0; MAX_INPUTS], o, self.kept, &self.k_str, self.n)
    }

    /// Input offsets of reduced linear index `r`, added to `base`.
    fn red_base(&self, base: &[usize; MAX_INPUTS], r: usize) -> [usize; MAX_INPUTS] {
        offsets(*base, r, self.red, &self.r_str, self.n)
    }

    /// `m` elements of each input, the first at `offs` and then every `strides`: the input itself
    /// where that run is contiguous and aligned, else gathered into the scratch buffers.
    fn lanes<'s>(
        &self,
        offs: &[usize; MAX_INPUTS],
        strides: &[usize; MAX_INPUTS],
        m: usize,
        ins: &'s mut [Vec<u64>; MAX_INPUTS],
    ) -> [&'s [u8]; MAX_INPUTS]
    where
        'a: 's,
    {
        let ies = self.ies;
        let direct = |k: usize| strides[k] == 1 && self.aligned[k];
        for (k, buf) in ins.iter_mut().enumerate().take(self.n) {
            if !direct(k) {
                gather(
                    scratch_bytes(buf, m * ies),
                    self.ins[k],
                    offs[k],
                    strides[k],
                    ies,
                );
            }
        }
        let mut lanes: [&[u8]; MAX_INPUTS] = [&[]; MAX_INPUTS];
        for (k, (lane, buf)) in lanes.iter_mut().zip(ins.iter()).enumerate().take(self.n) {
            *lane = if direct(k) {
                &self.ins[k][offs[k] * ies..(offs[k] + m) * ies]
            } else {
                &bytemuck::cast_slice(buf)[..m * ies]
            };
        }
        lanes
    }

    /// Folds `acc.len() * row.max(1)` elements of each input, the first at `offs` and then every
    /// `strides`, into `acc`: column by column when `row == 0`, else row by row (see
    /// [`Fold`]). With the op's fused kernel if it has one, else its map kernel and a fold.
    fn fold_run(
        &self,
        offs: &[usize; MAX_INPUTS],
        strides: &[usize; MAX_INPUTS],
        acc: &mut [u64],
        row: usize,
        s: &mut Scratch,
    ) {
        let m = acc.len() * row.max(1);
        let lanes = self.lanes(offs, strides, m, &mut s.ins[0]);
        if let Some(fold) = self.fold {
            fold(&lanes[..self.n], acc, row);
            return;
        }
        let mapped = scratch_bytes(&mut s.mapped, m * self.ims);
        (self.map)(&lanes[..self.n], mapped);
        if row == 0 {
            fold_columns(self.op, acc, mapped, self.ims);
        } else {
            for (r, a) in acc.iter_mut().enumerate() {
                let part = &mapped[r * row * self.ims..(r + 1) * row * self.ims];
                *a = fold_into(self.op, *a, part, self.ims);
            }
        }
    }

    /// Rows: outputs `u0..u1`, each folding reduced elements `r0..r1` in runs along the innermost
    /// reduced dimension.
    #[allow(clippy::too_many_arguments, reason = "a task's ranges and its buffers")]
    fn row_units(
        &self,
        u0: usize,
        u1: usize,
        r0: usize,
        r1: usize,
        accs: &mut [u64],
        s: &mut Scratch,
    ) {
        let nr = self.red.len();
        let inner = self.red[nr - 1];
        let inner_str: [usize; MAX_INPUTS] =
            std::array::from_fn(|k| if k < self.n { self.r_str[k][nr - 1] } else { 0 });
        // Short contiguous rows that follow each other in every input: many outputs per map call.
        let packed_rows = nr == 1
            && r0 == 0
            && r1 == inner
            && self.kept.last().is_some_and(|&l| l > 1)
            && (0..self.n).all(|k| {
                self.aligned[k] && inner_str[k] == 1 && self.k_str[k].last() == Some(&inner)
            });
        // Runs read in place by the fused kernel need no scratch space in L1: longer runs, fewer
        // calls.
        let direct =
            self.fold.is_some() && (0..self.n).all(|k| self.aligned[k] && inner_str[k] == 1);
        let chunk = match direct {
            true => DIRECT_BYTES / self.ies,
            false => CHUNK_BYTES / self.ies.max(self.ims),
        }
        .max(1);
        if packed_rows && inner < chunk {
            let last = *self.kept.last().unwrap_or(&1);
            let mut o = u0;
            while o < u1 {
                // Rows up to the end of the innermost kept dimension stay contiguous.
                let q = (chunk / inner).min(u1 - o).min(last - o % last);
                let base = self.kept_base(o);
                self.fold_run(&base, &inner_str, &mut accs[o - u0..o - u0 + q], inner, s);
                o += q;
            }
            return;
        }
        for (o, acc) in (u0..u1).zip(accs.iter_mut()) {
            let base = self.kept_base(o);
            let mut r = r0;
            while r < r1 {
                // One run: to the end of the innermost reduced dimension or of the range.
                let n = (inner - r % inner).min(r1 - r);
                let offs = self.red_base(&base, r);
                let mut done = 0;
                while done < n {
                    let m = chunk.min(n - done);
                    let at: [usize; MAX_INPUTS] =
                        std::array::from_fn(|k| offs[k] + done * inner_str[k]);
                    self.fold_run(&at, &inner_str, std::slice::from_mut(acc), m, s);
                    done += m;
                }
                r += n;
            }
        }
    }

    /// Columns: blocks `u0..u1` of the innermost kept dimension (of `inner` elements, cut into
    /// blocks of `block`), each folding reduced elements `r0..r1` into per-output accumulators.
    #[allow(
        clippy::too_many_arguments,
        reason = "a task's ranges and the block geometry"
    )]
    fn column_units(
        &self,
        u0: usize,
        u1: usize,
        r0: usize,
        r1: usize,
        inner: usize,
        block: usize,
        accs: &mut [u64],
        s: &mut Scratch,
    ) {
        let blocks_per = inner.div_ceil(block);
        let ones = [1usize; MAX_INPUTS];
        let mut done = 0;
        for u in u0..u1 {
            let (outer, b) = (u / blocks_per, u % blocks_per);
            let j0 = b * block;
            let m = block.min(inner - j0);
            let base = self.kept_base(outer * inner + j0);
            let acc = &mut accs[done..done + m];
            let mut r = r0;
            while r < r1 {
                let rows = (r1 - r).min(FOLD_ROWS);
                match self.fold {
                    Some(fold) => {
                        // Rows `r..r + rows`, each input's lanes in turn.
                        let mut all: [&[u8]; FOLD_ROWS * MAX_INPUTS] =
                            [&[]; FOLD_ROWS * MAX_INPUTS];
                        for (g, ins) in s.ins.iter_mut().enumerate().take(rows) {
                            let offs = self.red_base(&base, r + g);
                            let lanes = self.lanes(&offs, &ones, m, ins);
                            all[g * self.n..(g + 1) * self.n].copy_from_slice(&lanes[..self.n]);
                        }
                        fold(&all[..rows * self.n], acc, 0);
                    }
                    None => {
                        for g in 0..rows {
                            let offs = self.red_base(&base, r + g);
                            self.fold_run(&offs, &ones, acc, 0, s);
                        }
                    }
                }
                r += rows;
            }
            done += m;
        }
    }
}

/// `base` plus the offsets (in elements) of each of the first `n` inputs at linear index `lin`
/// of the dimensions `dims`, whose strides for input `k` are `strides[k]`.
fn offsets(
    mut base: [usize; MAX_INPUTS],
    lin: usize,
    dims: &[usize],
    strides: &[&[usize]; MAX_INPUTS],
    n: usize,
) -> [usize; MAX_INPUTS] {
    let mut rem = lin;
    for d in (0..dims.len()).rev() {
        let i = rem % dims[d];
        rem /= dims[d];
        for (b, st) in base.iter_mut().zip(strides).take(n) {
            *b += i * st[d];
        }
    }
    base
}

/// How a reduction's outputs are cut into units of work: single outputs (rows), or blocks of
/// `block` outputs along the innermost kept dimension of `inner` (columns).
struct Units {
    columns: bool,
    count: usize,
    inner: usize,
    block: usize,
    units: usize,
}

impl Units {
    fn new(columns: bool, count: usize, inner: usize, block: usize) -> Units {
        let inner = if columns { inner.max(1) } else { 1 };
        let units = if columns {
            count / inner * inner.div_ceil(block)
        } else {
            count
        };
        Units {
            columns,
            count,
            inner,
            block,
            units,
        }
    }

    /// The first output of unit `u` (`count` for `u == units`).
    fn first(&self, u: usize) -> usize {
        if !self.columns {
            return u.min(self.count);
        }
        let per = self.inner.div_ceil(self.block);
        (u / per) * self.inner + ((u % per) * self.block).min(self.inner)
    }

    /// Units per batch of accumulators: about [`CHUNK_BYTES`] of them.
    fn batch(&self) -> usize {
        let outputs = CHUNK_BYTES / 8;
        if self.columns {
            outputs.div_ceil(self.block).max(1)
        } else {
            outputs
        }
    }
}
