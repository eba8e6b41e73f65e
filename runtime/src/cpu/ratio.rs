//! Ratio ops (`compute = N / D`, such as TANIMOTO) on the CPU: each tile's `|a & b|` from the
//! AND pair kernel, the rows' counts from their bytes, and from those each pair's result or knn
//! key ([`crate::ratio`]).

use super::pair::{PairRef, ones};
use crate::op::{PairOut, PairTask};
use crate::ratio::{RatioPlan, Writes, key, quotient, value_bits};

thread_local! {
    /// A ratio tile's counts of `a & b` and of its rows, kept between tiles.
    static TILE: std::cell::Cell<(Vec<u64>, Vec<u64>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// A ratio tile: `and` (the AND pair kernel) counts `a & b` into a tile of its own, the rows are
/// counted from their bytes (zeroed past their valid bits by the driver), and each pair's result
/// or key goes to `out`.
pub(crate) fn tile(
    rp: &RatioPlan,
    writes: Writes,
    and: PairRef<'_>,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) {
    let (ni, nj) = (task.a_rows, task.b_rows);
    let bytes = task.k * task.elem_size;
    let (mut both, mut b_ones) = TILE.take();
    both.clear();
    both.resize(ni * nj, 0);
    if bytes > 0 {
        let mut counts = PairOut::tile(&mut both, nj.max(1));
        (and.run)(task, &mut counts);
    }
    b_ones.clear();
    let ww = task.wide_words;
    b_ones.extend((0..nj).map(|j| {
        match task.packed {
            _ if bytes == 0 => 0,
            // `b` packed: each row's lane of its block's words (the words past a code are zero).
            Some(p) => (0..ww)
                .map(|w| u64::from(p[((j / 8) * ww + w) * 8 + j % 8].count_ones()))
                .sum(),
            None => ones(&task.b[j * task.b_stride..][..bytes]) as u64,
        }
    }));
    let mut row = [0u64; 64];
    for i in 0..ni {
        let a_ones = match bytes {
            0 => 0,
            _ => ones(&task.a[i * task.a_stride..][..bytes]) as u64,
        };
        for j0 in (0..nj).step_by(row.len()) {
            let part = &mut row[..(nj - j0).min(64)];
            for (c, v) in part.iter_mut().enumerate() {
                let j = j0 + c;
                let (n, d) = rp.parts(a_ones, b_ones[j], both[i * nj + j]);
                *v = match writes {
                    Writes::Values(t) => value_bits(n, d, t),
                    Writes::Keys => key(quotient(n, d), rp.largest),
                };
            }
            out.put_run(i, j0, part);
        }
    }
    TILE.set((both, b_ones));
}
