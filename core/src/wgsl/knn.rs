//! knn over a pairwise sum, in sorted lists of `(distance, index)` per row of `a`. The first pass
//! ([`Layout::Knn`], or [`Layout::KnnWords`] over whole words) makes them: with at most
//! [`KNN_LOCAL`] neighbours each invocation keeps the best of its rows in its own sorted list (no
//! barrier; a row is rejected by one comparison with the list's last entry); with more, a workgroup
//! sorts a tile of up to [`KNN_TILE`] rows (each invocation's rows in registers, then six pairwise
//! merge rounds in workgroup memory) and keeps the first k. [`Layout::KnnMerge`] then merges pairs
//! of lists, pass after pass, until one list of k is left per row of `a`. Every entry's place in a
//! merged list is its place in its own list plus the entries of the other list before it, found by
//! a binary search, so ties go to the lower index exactly as on the CPU.
//!
//! Both read the uniform block as follows. Slots: `0` is `a`, `1` is `b`, `2` the indices (in
//! `i64`s) and [`OUTPUT_SLOT`] the distances, each output's stride 0 being its row stride.
//!
//! - First pass: `count` workgroups (rows of `a` x tiles), or in local mode (`kept` 1)
//!   invocations (rows of `a` x lists); `chunk` the tile's rows (64 times each invocation's, at
//!   most [`KNN_TILE`]) or each invocation's rows; `slot_stride` the entries each list keeps;
//!   `extra` the dispatch's first tile (or list); `sizes` = `[rows of a, rows of b from the
//!   dispatch's first, K, lists per row of a, the dispatch's first row of a in the scratch lists,
//!   the global index of the dispatch's first row of b, lists in the dispatch (local mode)]`.
//! - Merge: `count` invocations in all, from `extra` in this dispatch; `sizes` = `[N, rows per
//!   input list, entries per input list, entries per output list, input lists, output lists]` per
//!   row of `a`. In local mode lists are padded to their full length with `(all ones, all ones)`,
//!   which sorts after every real entry, and N counts the padding.
//!
//! Lists live in a scratch buffer of `(distance, index)` pairs of `u32`, list `l` of row `q` at entry
//! `(q * lists + l) * entries`.

use super::elementwise::{read_fn, write_fns};
use super::*;
use std::fmt::Write;

/// Bindings and helpers both knn shaders share: the distances (`out`, written by `tb_write`), the
/// indices (`outi`), `tb_final(q, i, d, j)` writing entry `i` of row `q` of both, and the scratch
/// list bindings from `scratch` on.
fn outputs(kind: KernelKind, first: usize) -> String {
    let narrow = kind.out_bits < 32;
    let out_array = if narrow {
        "array<atomic<u32>>"
    } else {
        "array<u32>"
    };
    // The key back to a count, and the count to the op's value.
    let dist = if kind.out_bits == 64 {
        "tb_affine(vec2<u32>(tb_key(d), 0u))"
    } else {
        "tb_affine(vec2<u32>(tb_key(d), 0u)).x"
    };
    let o = OUTPUT_SLOT;
    let mut s = format!(
        "@group(0) @binding({first}) var<storage, read_write> out: {out_array};\n\
         @group(0) @binding({}) var<storage, read_write> outi: array<u32>;\n",
        first + 1
    );
    s.push_str(&write_fns(kind.out_bits));
    let _ = write!(
        s,
        "fn tb_final(q: u32, i: u32, d: u32, j: u32) {{\n\
         \x20   tb_write(tb_base({o}u) + q * tb_stride({o}u, 0u) + i, {dist});\n\
         \x20   let ia = tb_base(2u) + q * tb_stride(2u, 0u) + i;\n\
         \x20   outi[2u * ia] = j;\n\
         \x20   outi[2u * ia + 1u] = 0u;\n\
         }}\n\
         // Whether entry (d, j) comes before (e, k).\n\
         fn tb_before(d: u32, j: u32, e: u32, k: u32) -> bool {{ return d < e || (d == e && j < k); }}\n"
    );
    s
}

/// The body of the loop over an invocation's rows that both first-pass modes share: the distance
/// of row `n`, inserted into the sorted list `ld`/`lj` of `cnt` entries holding at most `cap`.
/// Rows come in increasing index, so an equal distance never displaces an entry, and a full list
/// drops its last.
fn insert_row(cap: &str) -> String {
    format!(
        "\x20       let d = tb_dist(ab, n, k_n);\n\
         \x20       if (cnt == {cap} && d >= ld[{cap} - 1u]) {{ continue; }}\n\
         \x20       if (cnt < {cap}) {{ cnt = cnt + 1u; }}\n\
         \x20       var p = cnt - 1u;\n\
         \x20       loop {{\n\
         \x20           if (p == 0u) {{ break; }}\n\
         \x20           if (ld[p - 1u] <= d) {{ break; }}\n\
         \x20           ld[p] = ld[p - 1u];\n\
         \x20           lj[p] = lj[p - 1u];\n\
         \x20           p = p - 1u;\n\
         \x20       }}\n\
         \x20       ld[p] = d;\n\
         \x20       lj[p] = tb_size(5u) + n;\n"
    )
}

/// The tile shader: `tb_eval` over `arity` (two) inputs of the kind's class. Each invocation
/// computes the distances of its `chunk / 64` rows of the tile (every 64th), sorts them in its own
/// registers, and publishes the first k in workgroup memory; six rounds then merge the 64 lists
/// pairwise (each entry placed by one binary search in the other list of its pair, lists cut to the
/// k kept), and the one list left is written out.
pub(super) fn tile_shader(kind: KernelKind, arity: usize, eval: &str) -> String {
    let wg = WORKGROUP_SIZE;
    let per = KNN_TILE / WORKGROUP_SIZE;
    // Two buffers of a tile's lists, and of the lists' lengths, used in turn by the rounds.
    let both = 2 * KNN_TILE;
    let lens = 2 * WORKGROUP_SIZE;
    let rounds = WORKGROUP_SIZE.ilog2();
    let half = WORKGROUP_SIZE / 2;
    let local = KNN_LOCAL;
    // A tile's invocation keeps all of its `rr` rows; a local one the best `keep`.
    let insert_tile = insert_row("rr");
    let insert_local = insert_row("keep");
    // After an even number of rounds the lengths are back in the first buffer.
    let last = if rounds.is_multiple_of(2) {
        0
    } else {
        WORKGROUP_SIZE
    };
    let mut s = String::from(
        "// Generated by #[bitwise_op]; see tensorbits-core's wgsl module for the templates.\n",
    );
    s.push_str(&params_wgsl());
    s.push_str(&kind.class.helpers());
    s.push_str(eval);
    s.push('\n');
    for k in 0..arity {
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read> in{k}: array<u32>;",
            k + 1
        );
        s.push_str(&read_fn(k, kind.class.width()));
    }
    s.push_str(&outputs(kind, arity + 1));
    let _ = write!(
        s,
        "@group(0) @binding({}) var<storage, read_write> scr: array<u32>;\n\
         var<workgroup> tb_wd: array<u32, {both}>;\n\
         var<workgroup> tb_wj: array<u32, {both}>;\n\
         var<workgroup> tb_wn: array<u32, {lens}>;\n\
         // The distance from the row of a at `ab` to row `n` of b, over `k_n` elements.\n\
         fn tb_dist(ab: u32, n: u32, k_n: u32) -> u32 {{\n\
         \x20   let bb = tb_base(1u) + n * tb_stride(1u, 1u);\n\
         \x20   let sa = tb_stride(0u, 2u);\n\
         \x20   let sb = tb_stride(1u, 2u);\n\
         \x20   var d = 0u;\n\
         \x20   for (var e = 0u; e < k_n; e = e + 1u) {{\n\
         \x20       d = d + tb_eval(tb_read0(ab + e * sa), tb_read1(bb + e * sb));\n\
         \x20   }}\n\
         \x20   return tb_key(d);\n\
         }}\n\
         // Local mode (`kept` 1, at most {local} neighbours): each invocation keeps the best of its\n\
         // `chunk` rows (every 64th of its span) in a sorted list of `slot_stride` entries, padded\n\
         // with (all ones, all ones), one list per invocation; `sizes[6]` lists in the dispatch.\n\
         fn tb_local(g: u32) {{\n\
         \x20   if (g >= params.count) {{ return; }}\n\
         \x20   let rr = params.chunk;\n\
         \x20   let n_n = tb_size(1u);\n\
         \x20   let k_n = tb_size(2u);\n\
         \x20   let l = g % tb_size(6u);\n\
         \x20   let q = g / tb_size(6u);\n\
         \x20   let first = (l / {wg}u) * {wg}u * rr + l % {wg}u;\n\
         \x20   let ab = tb_base(0u) + q * tb_stride(0u, 0u);\n\
         \x20   let keep = params.slot_stride;\n\
         \x20   var ld: array<u32, {local}>;\n\
         \x20   var lj: array<u32, {local}>;\n\
         \x20   var cnt = 0u;\n\
         \x20   for (var i = 0u; i < rr; i = i + 1u) {{\n\
         \x20       let n = first + {wg}u * i;\n\
         \x20       if (n >= n_n) {{ break; }}\n\
         {insert_local}\
         \x20   }}\n\
         \x20   let at = ((tb_size(4u) + q) * tb_size(3u) + params.extra + l) * keep;\n\
         \x20   for (var i = 0u; i < keep; i = i + 1u) {{\n\
         \x20       scr[2u * (at + i)] = select(ld[i], 0xffffffffu, i >= cnt);\n\
         \x20       scr[2u * (at + i) + 1u] = select(lj[i], 0xffffffffu, i >= cnt);\n\
         \x20   }}\n\
         }}\n\
         @compute @workgroup_size({wg})\n\
         fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let u = wid.x + wid.y * nwg.x;\n\
         \x20   if (params.kept == 1u) {{\n\
         \x20       tb_local(u * {wg}u + lid);\n\
         \x20       return;\n\
         \x20   }}\n\
         \x20   if (u >= params.count) {{ return; }}\n\
         \x20   let tt = params.chunk;\n\
         \x20   let rr = tt / {wg}u;\n\
         \x20   let n_n = tb_size(1u);\n\
         \x20   let k_n = tb_size(2u);\n\
         \x20   let tiles = (n_n + tt - 1u) / tt;\n\
         \x20   let t = u % tiles;\n\
         \x20   let q = u / tiles;\n\
         \x20   let ab = tb_base(0u) + q * tb_stride(0u, 0u);\n\
         \x20   // This invocation's rows, sorted by (distance, index) as they come: rows come in\n\
         \x20   // increasing index, so an equal distance stays behind.\n\
         \x20   var ld: array<u32, {per}>;\n\
         \x20   var lj: array<u32, {per}>;\n\
         \x20   var cnt = 0u;\n\
         \x20   for (var i = 0u; i < rr; i = i + 1u) {{\n\
         \x20       let n = t * tt + lid + {wg}u * i;\n\
         \x20       if (n >= n_n) {{ break; }}\n\
         {insert_tile}\
         \x20   }}\n\
         \x20   // Published, then merged pairwise in six rounds (64 lists, then 32, ..., then 1): each\n\
         \x20   // entry's place in its pair's list is its place in its own list plus the entries of\n\
         \x20   // the other list before it; lists are cut to the entries kept.\n\
         \x20   let keep = params.slot_stride;\n\
         \x20   let mine = min(cnt, keep);\n\
         \x20   for (var i = 0u; i < mine; i = i + 1u) {{\n\
         \x20       tb_wd[lid * rr + i] = ld[i];\n\
         \x20       tb_wj[lid * rr + i] = lj[i];\n\
         \x20   }}\n\
         \x20   tb_wn[lid] = mine;\n\
         \x20   workgroupBarrier();\n\
         \x20   var width = rr;\n\
         \x20   var src = 0u;\n\
         \x20   for (var r = 0u; r < {rounds}u; r = r + 1u) {{\n\
         \x20       let dst = tt - src;\n\
         \x20       let wide = width * 2u;\n\
         \x20       let cap = min(keep, wide);\n\
         \x20       let ns = (r & 1u) * {wg}u;\n\
         \x20       for (var i = 0u; i < rr; i = i + 1u) {{\n\
         \x20           let e = lid + {wg}u * i;\n\
         \x20           let l = e / width;\n\
         \x20           let p = e % width;\n\
         \x20           if (p >= tb_wn[ns + l]) {{ continue; }}\n\
         \x20           let d = tb_wd[src + e];\n\
         \x20           let j = tb_wj[src + e];\n\
         \x20           let o = src + (l ^ 1u) * width;\n\
         \x20           var lo = 0u;\n\
         \x20           var hi = tb_wn[ns + (l ^ 1u)];\n\
         \x20           loop {{\n\
         \x20               if (lo >= hi) {{ break; }}\n\
         \x20               let mid = (lo + hi) / 2u;\n\
         \x20               if (tb_before(tb_wd[o + mid], tb_wj[o + mid], d, j)) {{ lo = mid + 1u; }} else {{ hi = mid; }}\n\
         \x20           }}\n\
         \x20           let rank = p + lo;\n\
         \x20           if (rank < cap) {{\n\
         \x20               let to = dst + (l / 2u) * wide + rank;\n\
         \x20               tb_wd[to] = d;\n\
         \x20               tb_wj[to] = j;\n\
         \x20           }}\n\
         \x20       }}\n\
         \x20       if (lid < ({half}u >> r)) {{\n\
         \x20           tb_wn[{wg}u - ns + lid] = min(cap, tb_wn[ns + 2u * lid] + tb_wn[ns + 2u * lid + 1u]);\n\
         \x20       }}\n\
         \x20       workgroupBarrier();\n\
         \x20       src = dst;\n\
         \x20       width = wide;\n\
         \x20   }}\n\
         \x20   let total = tb_wn[{last}u];\n\
         \x20   for (var i = 0u; i < rr; i = i + 1u) {{\n\
         \x20       let e = lid + {wg}u * i;\n\
         \x20       if (e >= total) {{ break; }}\n\
         \x20       let d = tb_wd[src + e];\n\
         \x20       let j = tb_wj[src + e];\n\
         \x20       if (params.mode == {MODE_FINAL}u) {{\n\
         \x20           tb_final(q, e, d, j);\n\
         \x20       }} else {{\n\
         \x20           let p = ((tb_size(4u) + q) * tb_size(3u) + params.extra + t) * keep + e;\n\
         \x20           scr[2u * p] = d;\n\
         \x20           scr[2u * p + 1u] = j;\n\
         \x20       }}\n\
         \x20   }}\n\
         }}\n",
        arity + 3
    );
    s
}

/// The merge shader (it depends only on the distances' width).
pub(super) fn merge_shader(kind: KernelKind) -> String {
    let wg = WORKGROUP_SIZE;
    let mut s = String::from(
        "// Generated by #[bitwise_op]; see tensorbits-core's wgsl module for the templates.\n",
    );
    s.push_str(&params_wgsl());
    s.push_str("@group(0) @binding(1) var<storage, read> scr: array<u32>;\n");
    s.push_str("@group(0) @binding(2) var<storage, read_write> dst: array<u32>;\n");
    s.push_str(&outputs(kind, 3));
    let _ = write!(
        s,
        "// Entries in input list `l` of a row: its rows' count, at most the list's capacity; 0 past\n\
         // the last list.\n\
         fn tb_len(l: u32) -> u32 {{\n\
         \x20   if (l >= tb_size(4u)) {{ return 0u; }}\n\
         \x20   return min(tb_size(2u), min(tb_size(1u), tb_size(0u) - l * tb_size(1u)));\n\
         }}\n\
         @compute @workgroup_size({wg})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let u = params.extra + gid.x + gid.y * nwg.x * {wg}u;\n\
         \x20   if (u >= params.count) {{ return; }}\n\
         \x20   let cap = tb_size(2u);\n\
         \x20   let e = u % (2u * cap);\n\
         \x20   let rest = u / (2u * cap);\n\
         \x20   let lists_in = tb_size(4u);\n\
         \x20   let lists_out = tb_size(5u);\n\
         \x20   let p = rest % lists_out;\n\
         \x20   let q = rest / lists_out;\n\
         \x20   let side = e / cap;\n\
         \x20   let i = e % cap;\n\
         \x20   let mine = 2u * p + side;\n\
         \x20   let other = 2u * p + 1u - side;\n\
         \x20   if (i >= tb_len(mine)) {{ return; }}\n\
         \x20   let at = ((q * lists_in + mine) * cap + i) * 2u;\n\
         \x20   let d = scr[at];\n\
         \x20   let j = scr[at + 1u];\n\
         \x20   // Entries of the other list before this one; equal entries (the padding of lists that\n\
         \x20   // have fewer rows than places) go first from the first list, so places never collide.\n\
         \x20   let ob = (q * lists_in + other) * cap * 2u;\n\
         \x20   var lo = 0u;\n\
         \x20   var hi = tb_len(other);\n\
         \x20   loop {{\n\
         \x20       if (lo >= hi) {{ break; }}\n\
         \x20       let mid = lo + (hi - lo) / 2u;\n\
         \x20       let od = scr[ob + 2u * mid];\n\
         \x20       let oj = scr[ob + 2u * mid + 1u];\n\
         \x20       if (tb_before(od, oj, d, j) || (side == 1u && od == d && oj == j)) {{ lo = mid + 1u; }} else {{ hi = mid; }}\n\
         \x20   }}\n\
         \x20   let rank = i + lo;\n\
         \x20   if (rank >= tb_size(3u)) {{ return; }}\n\
         \x20   if (params.mode == {MODE_FINAL}u) {{\n\
         \x20       tb_final(q, rank, d, j);\n\
         \x20   }} else {{\n\
         \x20       let to = ((q * lists_out + p) * tb_size(3u) + rank) * 2u;\n\
         \x20       dst[to] = d;\n\
         \x20       dst[to + 1u] = j;\n\
         \x20   }}\n\
         }}\n"
    );
    s
}
