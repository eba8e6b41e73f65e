//! Ratio ops (`compute = N / D`, such as TANIMOTO) on the CPU: each tile's `|a & b|` from the
//! AND pair kernel, the rows' counts from their bytes, and from those each pair's result or knn
//! key ([`crate::ratio`]). The loops over a row's bytes and over its pairs are `simd`'s
//! ([`ones`], [`ratio_row`]), compiled for each instruction set.

use super::pair::PairRef;
use super::simd::{ones, ratio_row};
use super::tuning::RATIO_B_BYTES;
use crate::op::{PairOut, PairTask};
use crate::ratio::{Terms, Writes};

thread_local! {
    /// A ratio tile's counts of `a & b`, of `b`'s rows and one row's results, kept between tiles.
    static TILE: std::cell::Cell<(Vec<u64>, Vec<u64>, Vec<u64>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new(), Vec::new())) };
}

/// Runs `f` with `pair` as `plan`'s pairs take it: for a ratio op, [`tile`] over `pair`'s counts
/// of `a & b`, writing `writes`; else `pair` itself.
pub(crate) fn with_ratio<R>(
    plan: &crate::Plan,
    pair: PairRef<'_>,
    writes: Writes,
    f: impl FnOnce(PairRef<'_>) -> R,
) -> R {
    let Some(rp) = plan.ratio else {
        return f(pair);
    };
    let terms = Terms::new(&rp, writes);
    let run = |t: &PairTask<'_>, o: &mut PairOut<'_, '_>| tile(&terms, pair, t, o);
    f(PairRef {
        run: &run,
        wide: pair.wide,
    })
}

/// A ratio tile: `and` (the AND pair kernel) counts `a & b` into a tile of its own, the rows are
/// counted from their bytes (zeroed past their valid bits by the driver), and each pair's result
/// or key goes to `out`. Rows of `b` go a part at a time ([`RATIO_B_BYTES`]), so that the second
/// read of their bytes, for their counts, finds them in the cache.
pub(crate) fn tile(t: &Terms, and: PairRef<'_>, task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
    let bytes = task.code_bytes();
    // Whole blocks of eight rows, as `b` is packed.
    let part = (RATIO_B_BYTES / bytes.max(1)).next_multiple_of(8).max(8);
    let mut j0 = 0;
    while j0 < task.b_rows {
        let nj = (task.b_rows - j0).min(part);
        let ww = task.wide_words;
        let sub = PairTask {
            b: &task.b[(j0 * task.b_stride).min(task.b.len())..],
            b_rows: nj,
            packed: task.packed.map(|p| &p[(j0 / 8 * ww * 8).min(p.len())..]),
            ..*task
        };
        part_tile(t, and, &sub, out, j0);
        j0 += nj;
    }
}

/// [`tile`] for the rows of `b` of `task`, the results from column `j0` of `out`.
fn part_tile(
    t: &Terms,
    and: PairRef<'_>,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
    j0: usize,
) {
    let (ni, nj) = (task.a_rows, task.b_rows);
    let bytes = task.code_bytes();
    let (mut both, mut b_ones, mut res) = TILE.take();
    both.clear();
    both.resize(ni * nj, 0);
    if bytes > 0 {
        let mut counts = PairOut::tile(&mut both, nj.max(1));
        (and.run)(task, &mut counts);
    }
    super::pair::rows_ones(task, &mut b_ones);
    res.clear();
    res.resize(nj, 0);
    for i in 0..ni {
        let a = match bytes {
            0 => 0,
            _ => ones(&task.a[i * task.a_stride..][..bytes]),
        };
        ratio_row(t, a, &b_ones, &both[i * nj..(i + 1) * nj], &mut res);
        out.put_run(i, j0, &res);
    }
    TILE.set((both, b_ones, res));
}
