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
//! over rayon's thread pool, over outputs when there are enough of them, else over the reduced
//! elements with partial accumulators combined at the end.

use super::PARALLEL_BYTES;
use super::walk::{CHUNK_BYTES, Kernel, gather, scratch_bytes};
use crate::op::{InputBuffer, Plan, ReduceOp};
use crate::{DataType, MAX_INPUTS};
use rayon::prelude::*;

/// The bytes of one element-wise result: a bit count's byte for a sum, else an element.
pub(crate) fn intermediate_size(plan: &Plan) -> usize {
    match plan.reduce {
        Some(ReduceOp::Sum) => 1,
        _ => plan.in_dtype.size(),
    }
}

/// The element type the map kernel of a reduction writes: `u8` counts for a sum, else the input's.
pub(crate) fn intermediate_type(op: ReduceOp, input: DataType) -> DataType {
    match op {
        ReduceOp::Sum => DataType::U8,
        _ => input,
    }
}

/// The value of an empty reduction of `dtype` elements.
pub(crate) fn identity(op: ReduceOp, dtype: DataType) -> u64 {
    op.identity(if dtype == DataType::Bool {
        1
    } else {
        dtype.bits()
    })
}

/// Writes accumulator `v` as an output element of `es` bytes at element `at` of `out`.
pub(crate) fn write_elem(out: &mut [u8], at: usize, es: usize, v: u64) {
    out[at * es..at * es + es].copy_from_slice(&v.to_le_bytes()[..es]);
}

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
}

/// Scratch space of one task: gathered inputs and the mapped results, aligned for any element.
#[derive(Default)]
struct Scratch {
    ins: [Vec<u64>; MAX_INPUTS],
    mapped: Vec<u64>,
}

/// Runs a validated reduction (not a pairwise one) into `out`, whose element 0 is the output's.
pub(crate) fn run(plan: &Plan, inputs: &[InputBuffer<'_>], out: &mut [u8], map: Kernel<'_>) {
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
        ims: intermediate_size(plan),
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
    };
    let accs = job.all(plan.count);
    for (o, &v) in accs.iter().enumerate() {
        write_elem(out, out_offset(o), oes, v);
    }
}

impl Job<'_> {
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

    /// Every output's accumulator, in the order of the kept dimensions.
    fn all(&self, count: usize) -> Vec<u64> {
        let reduced: usize = self.red.iter().product();
        let bytes = count
            .saturating_mul(reduced)
            .saturating_mul(self.ies * self.n);
        let threads = rayon::current_num_threads();
        let parallel = bytes >= PARALLEL_BYTES && threads > 1;
        // Units of output work: single outputs (rows) or blocks of one (columns).
        let columns = self.columns();
        let block = (CHUNK_BYTES / self.ies.max(self.ims).max(8)).max(1);
        let (units, inner) = if columns {
            let inner = *self.kept.last().unwrap_or(&1);
            (count / inner * inner.div_ceil(block), inner)
        } else {
            (count, 1)
        };
        let (unit_tasks, splits) = if !parallel {
            (1, 1)
        } else if units >= 4 * threads {
            (4 * threads, 1)
        } else {
            (units, (4 * threads).div_ceil(units).min(reduced))
        };
        let per = units.div_ceil(unit_tasks);
        let tasks: Vec<(usize, usize, usize, usize)> = (0..units)
            .step_by(per.max(1))
            .flat_map(|u0| {
                let u1 = (u0 + per).min(units);
                let rper = reduced.div_ceil(splits);
                (0..reduced)
                    .step_by(rper.max(1))
                    .map(move |r0| (u0, u1, r0, (r0 + rper).min(reduced)))
            })
            .collect();
        let run = |&(u0, u1, r0, r1): &(usize, usize, usize, usize)| -> Vec<u64> {
            let mut s = Scratch::default();
            if columns {
                self.column_units(u0, u1, r0, r1, inner, block, &mut s)
            } else {
                self.row_units(u0, u1, r0, r1, &mut s)
            }
        };
        let partials: Vec<Vec<u64>> = if parallel {
            tasks.par_iter().map(run).collect()
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
        if columns {
            // Column blocks run outer index by outer index: that is already output order.
            debug_assert_eq!(accs.len(), count);
        }
        accs
    }

    /// Input offsets (in elements) of kept linear index `o`.
    fn kept_base(&self, o: usize) -> [usize; MAX_INPUTS] {
        let mut base = [0usize; MAX_INPUTS];
        let mut rem = o;
        for d in (0..self.kept.len()).rev() {
            let i = rem % self.kept[d];
            rem /= self.kept[d];
            for (k, b) in base.iter_mut().enumerate().take(self.n) {
                *b += i * self.k_str[k][d];
            }
        }
        base
    }

    /// Input offsets of reduced linear index `r`, added to `base`.
    fn red_base(&self, base: &[usize; MAX_INPUTS], r: usize) -> [usize; MAX_INPUTS] {
        let mut at = *base;
        let mut rem = r;
        for d in (0..self.red.len()).rev() {
            let i = rem % self.red[d];
            rem /= self.red[d];
            for (k, b) in at.iter_mut().enumerate().take(self.n) {
                *b += i * self.r_str[k][d];
            }
        }
        at
    }

    /// Maps `m` elements of each input, the first at `offs` and then every `strides`, into the
    /// scratch buffer of results; returns them.
    fn map_run<'s>(
        &self,
        offs: &[usize; MAX_INPUTS],
        strides: &[usize; MAX_INPUTS],
        m: usize,
        s: &'s mut Scratch,
    ) -> &'s [u8] {
        let ies = self.ies;
        for k in 0..self.n {
            if !(strides[k] == 1 && self.aligned[k]) {
                gather(
                    scratch_bytes(&mut s.ins[k], m * ies),
                    self.ins[k],
                    offs[k],
                    strides[k],
                    ies,
                );
            }
        }
        let mut lanes: [&[u8]; MAX_INPUTS] = [&[]; MAX_INPUTS];
        for (k, lane) in lanes.iter_mut().enumerate().take(self.n) {
            *lane = if strides[k] == 1 && self.aligned[k] {
                &self.ins[k][offs[k] * ies..(offs[k] + m) * ies]
            } else {
                &bytemuck::cast_slice(&s.ins[k])[..m * ies]
            };
        }
        let out = scratch_bytes(&mut s.mapped, m * self.ims);
        (self.map)(&lanes[..self.n], out);
        out
    }

    /// Rows: outputs `u0..u1`, each folding reduced elements `r0..r1` in runs along the innermost
    /// reduced dimension.
    fn row_units(&self, u0: usize, u1: usize, r0: usize, r1: usize, s: &mut Scratch) -> Vec<u64> {
        let mut accs = Vec::with_capacity(u1 - u0);
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
        let chunk = (CHUNK_BYTES / self.ies.max(self.ims)).max(1);
        if packed_rows && inner < chunk {
            let last = *self.kept.last().unwrap_or(&1);
            let mut o = u0;
            while o < u1 {
                // Rows up to the end of the innermost kept dimension stay contiguous.
                let q = (chunk / inner).min(u1 - o).min(last - o % last);
                let base = self.kept_base(o);
                let mapped = self.map_run(&base, &inner_str, q * inner, s);
                for row in 0..q {
                    let part = &mapped[row * inner * self.ims..(row + 1) * inner * self.ims];
                    accs.push(fold(self.op, self.id, part, self.ims));
                }
                o += q;
            }
            return accs;
        }
        for o in u0..u1 {
            let base = self.kept_base(o);
            let mut acc = self.id;
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
                    let mapped = self.map_run(&at, &inner_str, m, s);
                    acc = fold_into(self.op, acc, mapped, self.ims);
                    done += m;
                }
                r += n;
            }
            accs.push(acc);
        }
        accs
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
        s: &mut Scratch,
    ) -> Vec<u64> {
        let blocks_per = inner.div_ceil(block);
        let ones = [1usize; MAX_INPUTS];
        let mut accs = Vec::new();
        for u in u0..u1 {
            let (outer, b) = (u / blocks_per, u % blocks_per);
            let j0 = b * block;
            let m = block.min(inner - j0);
            let base = self.kept_base(outer * inner + j0);
            let mut acc = vec![self.id; m];
            for r in r0..r1 {
                let offs = self.red_base(&base, r);
                let mapped = self.map_run(&offs, &ones, m, s);
                fold_columns(self.op, &mut acc, mapped, self.ims);
            }
            accs.extend(acc);
        }
        accs
    }
}

/// Folds results of `es` bytes into `acc`.
fn fold_into(op: ReduceOp, acc: u64, src: &[u8], es: usize) -> u64 {
    op.combine(acc, fold(op, op.identity(64), src, es))
}

/// The reduction of results of `es` bytes, starting from `id`.
fn fold(op: ReduceOp, id: u64, src: &[u8], es: usize) -> u64 {
    fn go<T: bytemuck::Pod + Into<u64>>(op: ReduceOp, id: u64, src: &[u8]) -> u64 {
        // The scratch buffers are `u64`s, so `src` is aligned for `T`.
        let v: &[T] = bytemuck::cast_slice(src);
        match op {
            ReduceOp::Sum => v.iter().fold(id, |a, &x| a + x.into()),
            ReduceOp::And => v.iter().fold(id, |a, &x| a & x.into()),
            ReduceOp::Or => v.iter().fold(id, |a, &x| a | x.into()),
            ReduceOp::Xor => v.iter().fold(id, |a, &x| a ^ x.into()),
        }
    }
    match es {
        1 => go::<u8>(op, id, src),
        2 => go::<u16>(op, id, src),
        4 => go::<u32>(op, id, src),
        _ => go::<u64>(op, id, src),
    }
}

/// `acc[j] = acc[j] op src[j]` for results of `es` bytes.
fn fold_columns(op: ReduceOp, acc: &mut [u64], src: &[u8], es: usize) {
    fn go<T: bytemuck::Pod + Into<u64>>(op: ReduceOp, acc: &mut [u64], src: &[u8]) {
        let v: &[T] = bytemuck::cast_slice(src);
        let pairs = acc.iter_mut().zip(v);
        match op {
            ReduceOp::Sum => pairs.for_each(|(a, &x)| *a += x.into()),
            ReduceOp::And => pairs.for_each(|(a, &x)| *a &= x.into()),
            ReduceOp::Or => pairs.for_each(|(a, &x)| *a |= x.into()),
            ReduceOp::Xor => pairs.for_each(|(a, &x)| *a ^= x.into()),
        }
    }
    match es {
        1 => go::<u8>(op, acc, src),
        2 => go::<u16>(op, acc, src),
        4 => go::<u32>(op, acc, src),
        _ => go::<u64>(op, acc, src),
    }
}
