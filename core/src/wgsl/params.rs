//! The uniform block every kernel reads, its bytes, and the one WGSL helper that walks a linear
//! index over dimensions.

use crate::{MAX_INPUTS, MAX_RANK};
use std::fmt::Write;

/// Tensor slots of a kernel: inputs `0..MAX_INPUTS`, then the output.
pub const SLOTS: usize = MAX_INPUTS + 1;

/// The output's slot in `base`/`strides`.
pub const OUTPUT_SLOT: usize = MAX_INPUTS;

/// Invocations per workgroup.
pub const WORKGROUP_SIZE: u32 = 64;

// The uniform block packs its arrays in `vec4<u32>`s (uniform arrays have a 16-byte stride).
const RANK_VECS: usize = MAX_RANK.div_ceil(4);
const BASE_VECS: usize = SLOTS.div_ceil(4);
const STRIDE_VECS: usize = SLOTS * RANK_VECS;

/// Size in bytes of the uniform block (`Params`): a header of eight `u32`s and two `vec4<u32>`s
/// (the epilogue), then the sizes, the bases and the strides, each padded to whole `vec4<u32>`s.
pub const PARAMS_BYTES: usize = 16 * (4 + RANK_VECS + BASE_VECS + STRIDE_VECS);

/// A reduction's unit writes its result to the output (the last pass).
pub const MODE_FINAL: u32 = 0;
/// A reduction's unit writes its accumulator to a scratch buffer of partial results, merged by a
/// later pass.
pub const MODE_PARTIAL: u32 = 1;

/// What the last pass of a sum writes for a count `c`: `offset + scale * c` in wrapping 64-bit
/// arithmetic (an affine `compute`; the identity for a plain count), and for knn whether the lists
/// rank `max - c` rather than `c` (the largest counts first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epilogue {
    /// Added to every result.
    pub offset: u64,
    /// The multiplier of the count.
    pub scale: u64,
    /// knn: the lists rank `max - c`, with `max` the most a count can reach.
    pub flip: Option<u32>,
}

impl Epilogue {
    /// The results are the counts, ranked ascending.
    pub const IDENTITY: Epilogue = Epilogue {
        offset: 0,
        scale: 1,
        flip: None,
    };
}

impl Default for Epilogue {
    fn default() -> Self {
        Epilogue::IDENTITY
    }
}

/// The scalar fields of the uniform block (see [`params_wgsl`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Units of work in the dispatch: invocations, or workgroups for the per-workgroup layouts.
    pub count: u32,
    /// The element count of the word-per-invocation layout; the reduced count of a reduction's box
    /// (K for a pairwise op); knn's k.
    pub elements: u32,
    /// Leading dimensions of `sizes` a reduction keeps.
    pub kept: u32,
    /// Reduced elements one unit folds (a reduction's chunk); knn's tile of rows.
    pub chunk: u32,
    /// [`MODE_FINAL`] or [`MODE_PARTIAL`].
    pub mode: u32,
    /// In [`MODE_PARTIAL`]: accumulators between the partial results of consecutive chunks.
    pub slot_stride: u32,
    /// Layout-specific (knn: the first tile of the dispatch).
    pub extra: u32,
    /// What the last pass writes for a count.
    pub epilogue: Epilogue,
}

/// The uniform block every kernel reads: the [`Header`]'s fields, then `rank` and `sizes`, the
/// iteration space (of which reductions keep the first `kept` dimensions). Tensor slot `t` is input
/// `t`, and slot [`OUTPUT_SLOT`] the output. `base` is each tensor's first element within its
/// binding, in units of the layout (elements, or `vec4<u32>` for [`Layout::Words`](super::Layout));
/// strides are in elements. [`params_bytes`] writes it.
pub fn params_wgsl() -> String {
    format!(
        "struct Params {{
    count: u32,
    rank: u32,
    elements: u32,
    kept: u32,
    chunk: u32,
    mode: u32,
    slot_stride: u32,
    extra: u32,
    epi: vec4<u32>,
    flip: vec4<u32>,
    sizes: array<vec4<u32>, {RANK_VECS}>,
    base: array<vec4<u32>, {BASE_VECS}>,
    strides: array<vec4<u32>, {STRIDE_VECS}>,
}}
@group(0) @binding(0) var<uniform> params: Params;
fn tb_size(d: u32) -> u32 {{ return params.sizes[d >> 2u][d & 3u]; }}
fn tb_base(t: u32) -> u32 {{ return params.base[t >> 2u][t & 3u]; }}
fn tb_stride(t: u32, d: u32) -> u32 {{ return params.strides[t * {RANK_VECS}u + (d >> 2u)][d & 3u]; }}
// The full 64-bit product of two u32s, low word first.
fn tb_mul_wide(a: u32, b: u32) -> vec2<u32> {{
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = lh + hl;
    let mid_carry = select(0u, 0x10000u, mid < lh);
    let lo = ll + (mid << 16u);
    return vec2<u32>(lo, ah * bh + (mid >> 16u) + mid_carry + select(0u, 1u, lo < ll));
}}
// A sum's result for count `c`: `offset + scale * c`, wrapping at 64 bits (`epi` = offset low,
// offset high, scale low, scale high).
fn tb_affine(c: vec2<u32>) -> vec2<u32> {{
    let p = tb_mul_wide(params.epi.z, c.x);
    let lo = params.epi.x + p.x;
    let hi = params.epi.y + p.y + params.epi.z * c.y + params.epi.w * c.x;
    return vec2<u32>(lo, hi + select(0u, 1u, lo < p.x));
}}
// knn's key for count `c`: `max - c` when the lists rank the largest counts first (`flip` =
// flag, max).
fn tb_key(c: u32) -> u32 {{ return select(c, params.flip.y - c, params.flip.x != 0u); }}
"
    )
}

/// The bytes of the uniform block [`params_wgsl`] declares: the header, the iteration space
/// `sizes` (at most [`MAX_RANK`] entries), and per slot its base and its stride in each dimension.
pub fn params_bytes(
    h: &Header,
    sizes: &[u32],
    base: &[u32; SLOTS],
    strides: &[[u32; MAX_RANK]; SLOTS],
) -> Vec<u8> {
    let mut p = Vec::with_capacity(PARAMS_BYTES);
    let mut push = |v: u32| p.extend_from_slice(&v.to_le_bytes());
    push(h.count);
    push(sizes.len() as u32);
    push(h.elements);
    push(h.kept);
    push(h.chunk);
    push(h.mode);
    push(h.slot_stride);
    push(h.extra);
    let e = &h.epilogue;
    for v in [e.offset, e.scale] {
        push(v as u32);
        push((v >> 32) as u32);
    }
    push(u32::from(e.flip.is_some()));
    push(e.flip.unwrap_or(0));
    push(0);
    push(0);
    for d in 0..RANK_VECS * 4 {
        push(sizes.get(d).copied().unwrap_or(1));
    }
    for t in 0..BASE_VECS * 4 {
        push(base.get(t).copied().unwrap_or(0));
    }
    for s in strides {
        for d in 0..RANK_VECS * 4 {
            push(s.get(d).copied().unwrap_or(0));
        }
    }
    debug_assert_eq!(p.len(), PARAMS_BYTES);
    p
}

/// The one helper that walks a linear index over dimensions: `tb_walk(at, lin, lo, hi)` decodes
/// `lin` over dimensions `lo..hi` (the last fastest) and adds each index times its stride to the
/// offsets `at` of the tensor slots `slots`, in that order; `tb_bases()` gives their bases. At most
/// [`MAX_RANK`] iterations.
pub fn walk_wgsl(slots: &[usize]) -> String {
    let n = slots.len();
    let bases: Vec<String> = slots.iter().map(|t| format!("tb_base({t}u)")).collect();
    let mut s = format!(
        "fn tb_bases() -> array<u32, {n}> {{ return array<u32, {n}>({}); }}\n\
         fn tb_walk(at: array<u32, {n}>, lin: u32, lo: u32, hi: u32) -> array<u32, {n}> {{\n\
         \x20   var r = at;\n\
         \x20   var rem = lin;\n\
         \x20   for (var d = hi; d > lo; d = d - 1u) {{\n\
         \x20       let n = tb_size(d - 1u);\n\
         \x20       let idx = rem % n;\n\
         \x20       rem = rem / n;\n",
        bases.join(", ")
    );
    for (i, t) in slots.iter().enumerate() {
        let _ = writeln!(
            s,
            "        r[{i}] = r[{i}] + idx * tb_stride({t}u, d - 1u);"
        );
    }
    s.push_str("    }\n    return r;\n}\n");
    s
}
