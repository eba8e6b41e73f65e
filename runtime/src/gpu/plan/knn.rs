//! knn's plan: the tile of rows each workgroup sorts, batches of rows of `a` whose lists fit a
//! binding, the tile dispatches over ranges of `b` that fit one, and the merges of pairs of lists.

use super::super::split::{Limits, Window};
use super::TooLarge;
use crate::MAX_RANK;
use tensorbits_core::wgsl::{
    Header, KNN_DISTANCE_STEPS, KNN_TILE, Layout, MODE_FINAL, MODE_PARTIAL, OUTPUT_SLOT, SLOTS,
    WORKGROUP_SIZE, params_bytes,
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

fn window(offset: u64, first: u64, reach: u64, es: u64, lim: &Limits) -> (Window, u64) {
    let lo = offset + first * es;
    let start = lo / lim.offset_align * lim.offset_align;
    let end = (lo + (reach + 1) * es).div_ceil(4) * 4;
    (
        Window {
            offset: start,
            size: end - start,
        },
        (lo - start) / es,
    )
}

/// The rows of `b` each knn tile sorts for rows of `kdim` units: a power of two, at most
/// [`KNN_TILE`], whose distances cost each invocation at most [`KNN_DISTANCE_STEPS`] iterations;
/// `None` when even one row per invocation costs more.
pub fn knn_tile(kdim: u64, n: u64) -> Option<u64> {
    let wg = u64::from(WORKGROUP_SIZE);
    let mut rows = u64::from(KNN_TILE) / wg;
    while rows > 1 && rows * (kdim + 1) > KNN_DISTANCE_STEPS {
        rows /= 2;
    }
    if rows * (kdim + 1) > KNN_DISTANCE_STEPS {
        return None;
    }
    Some((rows * wg).min(n.max(1).next_power_of_two()))
}

/// Loop iterations of one invocation of a knn tile of `tile` rows of `kdim` units keeping `keep`.
pub fn knn_tile_iterations(tile: u64, kdim: u64, keep: u64) -> u64 {
    let wg = u64::from(WORKGROUP_SIZE);
    let rows = tile.div_ceil(wg);
    let lg = tile.max(1).ilog2() as u64;
    // Distances; the sort's stages (each a loop over its compare-exchanges); the writes.
    rows * (kdim + 1) + lg + lg * (lg + 1) / 2 * (1 + (tile / 2).div_ceil(wg)) + keep.div_ceil(wg)
}

/// Loop iterations of one invocation of a knn merge: a binary search over at most 2^32 entries.
pub const KNN_MERGE_ITERATIONS: u64 = 34;

/// Plans a knn over one batch index.
pub fn plan_knn(s: &KnnShape, lim: &Limits) -> Result<KnnPlan, TooLarge> {
    let w = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let too_large = |what: String, bytes: u64| TooLarge {
        slot: None,
        what,
        bytes,
    };
    let tile = knn_tile(s.kdim, s.n).ok_or_else(|| {
        too_large(
            format!(
                "rows of {} elements (knn on the GPU compares rows of at most {})",
                s.kdim,
                KNN_DISTANCE_STEPS - 1
            ),
            s.kdim * s.elem,
        )
    })?;
    let mut dispatches = Vec::new();
    if s.m == 0 || s.k == 0 {
        return Ok(KnnPlan {
            dispatches,
            scratch: 0,
        });
    }
    let keep = s.k.min(tile);
    let tiles = s.n.div_ceil(tile);
    // Bytes of one row's lists at the largest level: lists x entries (rounding up the lists can
    // make a later level larger than the first).
    let mut per_row = 0;
    let (mut lists, mut rows) = (tiles, tile);
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
    let merged = tiles > 1;
    if merged && per_row > room {
        return Err(too_large(
            format!(
                "the partial lists of one row of ATensor ({tiles} tiles of {keep} entries; k = {})",
                s.k
            ),
            per_row,
        ));
    }
    // Rows of a per batch: their lists, their outputs and their rows of a fit a binding.
    let out_row = s.k * 8;
    if out_row > room {
        return Err(too_large(
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
    // Each tile dispatch runs a workgroup per row of a at least.
    batch = batch.min(u64::from(lim.max_groups).pow(2));
    while batch > 1 && a_row(batch) > room {
        batch = batch.div_ceil(2);
    }
    if a_row(1) > room {
        return Err(too_large("one row of ATensor".to_owned(), a_row(1)));
    }
    let max_units = u64::from(lim.max_groups).pow(2);
    let groups = |units: u64, per: u64| {
        let g = units.div_ceil(per);
        let gx = g.min(u64::from(lim.max_groups));
        (w(gx), w(g.div_ceil(gx.max(1))))
    };
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
        // Tile dispatches: ranges of tiles whose rows of b fit a binding.
        let mut t0 = 0;
        while t0 < tiles {
            let mut tn = tiles - t0;
            let b_window = |tn: u64| {
                let rows = (tn * tile).min(s.n - t0 * tile);
                window(
                    s.b_offset,
                    t0 * tile * s.b_strides.0,
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
                    format!("a tile of {tile} rows of BTensor"),
                    wb.size,
                ));
            }
            let (wb, bb) = if s.kdim == 0 {
                (Window { offset: 0, size: 4 }, 0)
            } else {
                (wb, bb)
            };
            let rows = (tn * tile).min(s.n - t0 * tile);
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
            let header = Header {
                count: w(qn * tn),
                elements: w(s.k),
                kept: 0,
                chunk: w(tile),
                mode: if merged { MODE_PARTIAL } else { MODE_FINAL },
                slot_stride: w(keep),
                extra: w(t0),
            };
            let sizes = [w(qn), w(rows), w(s.kdim), w(tiles), 0, w(t0 * tile)];
            dispatches.push(KnnDispatch {
                layout: Layout::Knn,
                params: params_bytes(&header, &sizes, &base, &strides),
                a: Some(wa),
                b: Some(wb),
                dist: (!merged).then_some(wd),
                idx: (!merged).then_some(wi),
                read: None,
                write: merged.then_some(0),
                groups: groups(qn * tn, 1),
                iterations: knn_tile_iterations(tile, s.kdim, keep),
            });
            t0 += tn;
        }
        // Merges: pairs of lists, until one is left.
        let mut rows_per = tile;
        let mut lists = tiles;
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
                w(s.n),
                w(rows_per.min(s.n)),
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
