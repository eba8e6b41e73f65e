//! knn's plan: the tile of rows each workgroup sorts, batches of rows of `a` whose lists fit a
//! binding, the tile dispatches over ranges of `b` that fit one, and the merges of pairs of lists.

use super::super::split::{self, Limits, Window, groups, word};
use super::TooLarge;
use crate::MAX_RANK;
use tensorbits_core::wgsl::{
    Epilogue, Header, KNN_DISTANCE_STEPS, KNN_LOCAL, KNN_LOCAL_ROWS, KNN_TILE, Layout, MODE_FINAL,
    MODE_PARTIAL, OUTPUT_SLOT, SLOTS, WORKGROUP_SIZE, params_bytes,
};

/// A knn over one batch index: `m` rows of `a` against `n` rows of `b` of `kdim` elements (or
/// words), `k` neighbours. Strides in elements of `elem` bytes; offsets in bytes.
#[derive(Clone, Copy, Debug)]
pub struct KnnShape {
    pub m: u64,
    pub n: u64,
    pub kdim: u64,
    pub k: u64,
    /// Row and element strides of `a` and `b`.
    pub a_strides: (u64, u64),
    pub b_strides: (u64, u64),
    pub elem: u64,
    pub a_offset: u64,
    pub b_offset: u64,
    /// Bytes of a distance; byte offsets of this batch index's first distance and index.
    pub dist_bytes: u64,
    pub dist_offset: u64,
    pub idx_offset: u64,
    /// What the last merge writes for a count, and the order the lists rank counts in.
    pub epilogue: Epilogue,
}

/// The slots of knn's bindings beyond the inputs: the indices, and the scratch lists.
pub const KNN_INDICES: usize = 2;

/// One knn dispatch: its layout, uniform block, windows of `a`, `b`, the distances and the
/// indices (or unused, `None`), which scratch buffer it reads and writes, workgroups and loop
/// iterations per invocation.
#[derive(Clone, Debug)]
pub struct KnnDispatch {
    pub layout: Layout,
    pub params: Vec<u8>,
    pub a: Option<Window>,
    pub b: Option<Window>,
    pub dist: Option<Window>,
    pub idx: Option<Window>,
    pub read: Option<usize>,
    pub write: Option<usize>,
    pub groups: (u32, u32),
    pub iterations: u64,
}

/// The dispatches of a knn and the bytes of its two scratch buffers.
#[derive(Clone, Debug)]
pub struct KnnPlan {
    pub dispatches: Vec<KnnDispatch>,
    pub scratch: u64,
}

/// Bytes of partial lists a batch of rows of `a` may use, per scratch buffer (at most a binding).
const KNN_SCRATCH: u64 = 64 << 20;

/// The window of `reach + 1` elements of `es` bytes from element `first` of a tensor at byte
/// `offset`, and the first element's index within it.
fn window(offset: u64, first: u64, reach: u64, es: u64, lim: &Limits) -> (Window, u64) {
    split::window(offset + first * es, reach + 1, es, 4, lim)
}

/// The rows of `b` each knn tile ranks for rows of `kdim` units: 64 times the rows each invocation
/// takes, at most [`KNN_TILE`], whose distances cost each invocation at most
/// [`KNN_DISTANCE_STEPS`] iterations, and no more than `n` needs; `None` when even one row per
/// invocation costs more.
pub fn knn_tile(kdim: u64, n: u64) -> Option<u64> {
    let wg = u64::from(WORKGROUP_SIZE);
    let most = u64::from(KNN_TILE) / wg;
    let rows = (KNN_DISTANCE_STEPS / (kdim + 1)).min(most);
    if rows == 0 {
        return None;
    }
    Some(rows.min(n.div_ceil(wg)).max(1) * wg)
}

/// Loop iterations of one invocation of a knn tile of `tile` rows of `kdim` units: its rows'
/// distances and their insertion into its sorted list, publishing the list, six rounds of a binary
/// search per entry, and the writes.
pub fn knn_tile_iterations(tile: u64, kdim: u64) -> u64 {
    let wg = u64::from(WORKGROUP_SIZE);
    let rows = tile / wg;
    let search = u64::from(tile.ilog2()) + 2;
    let rounds = u64::from(wg.ilog2());
    rows * (kdim + 1) + rows * rows + rows + rounds * (1 + rows * (1 + search)) + rows
}

/// Loop iterations of one invocation of a knn merge: a binary search over at most 2^32 entries.
pub const KNN_MERGE_ITERATIONS: u64 = 34;

/// How a knn's first pass cuts the database: into `lists` sorted lists per row of `a` of up to
/// `keep` entries, `rows` rows each (in the merges' terms), from dispatch units of `span` rows.
#[derive(Clone, Copy, Debug)]
struct Cut {
    /// Invocation lists ([`KNN_LOCAL`] or fewer neighbours) or workgroup tiles.
    local: bool,
    /// Rows each invocation takes (local) or each tile sorts.
    chunk: u64,
    /// Rows of `b` one span covers: a tile, or a block of 64 invocations' lists.
    span: u64,
    spans: u64,
    lists: u64,
    keep: u64,
    /// Rows per list, and the rows the merges see (lists padded to full length in local mode).
    rows: u64,
    n: u64,
    iterations: u64,
}

fn cut(s: &KnnShape) -> Option<Cut> {
    let wg = u64::from(WORKGROUP_SIZE);
    if s.k <= u64::from(KNN_LOCAL) {
        let rows = (KNN_DISTANCE_STEPS / (s.kdim + 1 + u64::from(KNN_LOCAL)))
            .min(u64::from(KNN_LOCAL_ROWS))
            .min(s.n.div_ceil(wg))
            .max(1);
        if rows * (s.kdim + 1 + u64::from(KNN_LOCAL)) > KNN_DISTANCE_STEPS {
            return None;
        }
        let spans = s.n.div_ceil(wg * rows);
        let keep = s.k.min(rows);
        return Some(Cut {
            local: true,
            chunk: rows,
            span: wg * rows,
            spans,
            lists: wg * spans,
            keep,
            rows,
            n: wg * spans * rows,
            iterations: knn_local_iterations(rows, s.kdim),
        });
    }
    let tile = knn_tile(s.kdim, s.n)?;
    let tiles = s.n.div_ceil(tile);
    Some(Cut {
        local: false,
        chunk: tile,
        span: tile,
        spans: tiles,
        lists: tiles,
        keep: s.k.min(tile),
        rows: tile,
        n: s.n,
        iterations: knn_tile_iterations(tile, s.kdim),
    })
}

/// Loop iterations of one invocation of knn's first pass in local mode: `rows` rows of `kdim`
/// units, each inserted into a list of at most [`KNN_LOCAL`], then the list written out.
pub fn knn_local_iterations(rows: u64, kdim: u64) -> u64 {
    rows * (kdim + 1 + u64::from(KNN_LOCAL)) + u64::from(KNN_LOCAL)
}

/// Plans a knn over one batch index.
pub fn plan_knn(s: &KnnShape, lim: &Limits) -> Result<KnnPlan, TooLarge> {
    let w = word;
    // `slot`: the input named after `what` in the error (`None` for scratch and outputs).
    let too_large = |slot: Option<usize>, what: String, bytes: u64| TooLarge {
        slot,
        what,
        bytes: Some(bytes),
    };
    let c = cut(s).ok_or_else(|| {
        let most = if s.k <= u64::from(KNN_LOCAL) {
            KNN_DISTANCE_STEPS - 1 - u64::from(KNN_LOCAL)
        } else {
            KNN_DISTANCE_STEPS - 1
        };
        // Not a binding's limit: the work of one invocation.
        TooLarge {
            slot: None,
            what: format!(
                "rows of {} elements of {} bytes: knn on the GPU compares rows of at most {most}, \
                 so that each invocation's work stays bounded; the CPU has no such limit",
                s.kdim, s.elem
            ),
            bytes: None,
        }
    })?;
    let mut dispatches = Vec::new();
    if s.m == 0 || s.k == 0 {
        return Ok(KnnPlan {
            dispatches,
            scratch: 0,
        });
    }
    let wg = u64::from(WORKGROUP_SIZE);
    // Bytes of one row's lists at the largest level: lists x entries (rounding up the lists can
    // make a later level larger than the first).
    let mut per_row = 0;
    let (mut lists, mut rows) = (c.lists, c.rows);
    loop {
        per_row = per_row.max(lists * s.k.min(rows) * 8);
        if lists == 1 {
            break;
        }
        lists = lists.div_ceil(2);
        rows *= 2;
    }
    // Windows start up to an alignment before their first byte.
    let room = lim.max_binding.saturating_sub(lim.offset_align);
    let budget = KNN_SCRATCH.min(room);
    let merged = c.lists > 1;
    if merged && per_row > room {
        return Err(too_large(
            Some(0),
            format!(
                "the partial lists ({} lists of {} entries; k = {}) of one row",
                c.lists, c.keep, s.k
            ),
            per_row,
        ));
    }
    // Rows of a per batch: their lists, their outputs and their rows of a fit a binding.
    let out_row = s.k * 8;
    if out_row > room {
        return Err(too_large(
            None,
            format!("one row of the indices (k = {})", s.k),
            out_row,
        ));
    }
    let a_row = |rows: u64| {
        window(
            s.a_offset,
            0,
            (rows - 1) * s.a_strides.0 + s.kdim.saturating_sub(1) * s.a_strides.1,
            s.elem,
            lim,
        )
        .0
        .size
    };
    let mut batch = s.m.min(if merged { budget / per_row } else { s.m }).max(1);
    batch = batch.min((room / out_row).max(1));
    // Each dispatch of the first pass runs a workgroup per row of a at least.
    batch = batch.min(u64::from(lim.max_groups).pow(2));
    while batch > 1 && a_row(batch) > room {
        batch = batch.div_ceil(2);
    }
    if a_row(1) > room {
        return Err(too_large(Some(0), "one row".to_owned(), a_row(1)));
    }
    let max_units = u64::from(lim.max_groups).pow(2);
    let groups = |units: u64, per: u64| groups(units, per, lim);
    let mut q0 = 0;
    while q0 < s.m {
        let qn = batch.min(s.m - q0);
        let (wa, ba) = window(
            s.a_offset,
            q0 * s.a_strides.0,
            (qn - 1) * s.a_strides.0 + s.kdim.saturating_sub(1) * s.a_strides.1,
            s.elem,
            lim,
        );
        // Rows of no element read nothing: the buffer's first word stands in.
        let (wa, ba) = if s.kdim == 0 {
            (Window { offset: 0, size: 4 }, 0)
        } else {
            (wa, ba)
        };
        let (wd, bd) = window(s.dist_offset, q0 * s.k, qn * s.k - 1, s.dist_bytes, lim);
        let (wi, bi) = window(s.idx_offset, q0 * s.k, qn * s.k - 1, 8, lim);
        // First-pass dispatches: ranges of spans whose rows of b fit a binding.
        let mut t0 = 0;
        while t0 < c.spans {
            let mut tn = c.spans - t0;
            let b_window = |tn: u64| {
                let rows = (tn * c.span).min(s.n - t0 * c.span);
                window(
                    s.b_offset,
                    t0 * c.span * s.b_strides.0,
                    (rows - 1) * s.b_strides.0 + s.kdim.saturating_sub(1) * s.b_strides.1,
                    s.elem,
                    lim,
                )
            };
            while tn > 1 && (b_window(tn).0.size > room || qn * tn > max_units) {
                tn = tn.div_ceil(2);
            }
            let (wb, bb) = b_window(tn);
            if wb.size > lim.max_binding {
                return Err(too_large(
                    Some(1),
                    format!("a tile of {} rows", c.span),
                    wb.size,
                ));
            }
            let (wb, bb) = if s.kdim == 0 {
                (Window { offset: 0, size: 4 }, 0)
            } else {
                (wb, bb)
            };
            let rows = (tn * c.span).min(s.n - t0 * c.span);
            let mut base = [0u32; SLOTS];
            let mut strides = [[0u32; MAX_RANK]; SLOTS];
            base[0] = w(ba);
            base[1] = w(bb);
            base[KNN_INDICES] = w(bi);
            base[OUTPUT_SLOT] = w(bd);
            strides[0][..3].copy_from_slice(&[w(s.a_strides.0), 0, w(s.a_strides.1)]);
            strides[1][..3].copy_from_slice(&[0, w(s.b_strides.0), w(s.b_strides.1)]);
            strides[KNN_INDICES][0] = w(s.k);
            strides[OUTPUT_SLOT][0] = w(s.k);
            // Tiles: a workgroup each; local lists: an invocation each, 64 to a span.
            let (units, per, first, here) = if c.local {
                (qn * tn * wg, wg, t0 * wg, tn * wg)
            } else {
                (qn * tn, 1, t0, tn)
            };
            let header = Header {
                count: w(units),
                elements: w(s.k),
                kept: u32::from(c.local),
                chunk: w(c.chunk),
                mode: if merged { MODE_PARTIAL } else { MODE_FINAL },
                slot_stride: w(c.keep),
                extra: w(first),
                epilogue: s.epilogue,
            };
            let sizes = [
                w(qn),
                w(rows),
                w(s.kdim),
                w(c.lists),
                0,
                w(t0 * c.span),
                w(here),
            ];
            dispatches.push(KnnDispatch {
                layout: Layout::Knn,
                params: params_bytes(&header, &sizes, &base, &strides),
                a: Some(wa),
                b: Some(wb),
                dist: (!merged).then_some(wd),
                idx: (!merged).then_some(wi),
                read: None,
                write: merged.then_some(0),
                groups: groups(units, per),
                iterations: c.iterations,
            });
            t0 += tn;
        }
        // Merges: pairs of lists, until one is left.
        let mut rows_per = c.rows;
        let mut lists = c.lists;
        let mut from = 0;
        while lists > 1 {
            let cap_in = s.k.min(rows_per);
            let out_lists = lists.div_ceil(2);
            let cap_out = s.k.min(rows_per * 2);
            let last = out_lists == 1;
            let units = qn * out_lists * 2 * cap_in;
            let mut base = [0u32; SLOTS];
            let mut strides = [[0u32; MAX_RANK]; SLOTS];
            base[KNN_INDICES] = w(bi);
            base[OUTPUT_SLOT] = w(bd);
            strides[KNN_INDICES][0] = w(s.k);
            strides[OUTPUT_SLOT][0] = w(s.k);
            let sizes = [
                w(c.n),
                w(rows_per.min(c.n)),
                w(cap_in),
                w(cap_out),
                w(lists),
                w(out_lists),
            ];
            // Dispatches of at most the device's workgroups, each starting at invocation `extra`.
            let per = max_units * u64::from(WORKGROUP_SIZE);
            let mut u0 = 0;
            while u0 < units {
                let un = per.min(units - u0);
                let header = Header {
                    count: w(units),
                    elements: w(s.k),
                    kept: 0,
                    chunk: 0,
                    mode: if last { MODE_FINAL } else { MODE_PARTIAL },
                    slot_stride: 0,
                    extra: w(u0),
                    epilogue: s.epilogue,
                };
                dispatches.push(KnnDispatch {
                    layout: Layout::KnnMerge,
                    params: params_bytes(&header, &sizes, &base, &strides),
                    a: None,
                    b: None,
                    dist: last.then_some(wd),
                    idx: last.then_some(wi),
                    read: Some(from),
                    write: (!last).then_some(1 - from),
                    groups: groups(un, u64::from(WORKGROUP_SIZE)),
                    iterations: KNN_MERGE_ITERATIONS,
                });
                u0 += un;
            }
            from = 1 - from;
            lists = out_lists;
            rows_per *= 2;
        }
        q0 += qn;
    }
    Ok(KnnPlan {
        dispatches,
        scratch: if merged { batch * per_row } else { 0 },
    })
}
