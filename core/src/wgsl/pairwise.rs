//! Pairwise ops (`a [..., M, K]`, `b [..., N, K]` -> `[..., M, N]`): [`Layout::Pairwise`] for any
//! element class and [`Layout::PairWords`] over whole 32-bit words. Each workgroup folds one chunk
//! of the rows' K elements; with more than one chunk, the partial results are merged by
//! [`Layout::ReduceMerge`] as a reduction's are.

use super::reduce::preamble;
use super::*;
use crate::ReduceOp;
use std::fmt::Write;

/// The start of both pairwise kernels: the sizes of `[batch..., M, N, K]`, this workgroup's tile of
/// `n_tile` rows of `b` by `m_tile` rows of `a` (`t_n`, `t_m`), its chunk `ch` of the rows'
/// elements `k0..k1`, and the base of each tensor at its batch index (`b0`, `b1`, `ob`).
fn prologue(n_tile: u32, m_tile: u32) -> String {
    format!(
        "\x20   let nb = params.kept - 2u;\n\
         \x20   let m_n = tb_size(nb);\n\
         \x20   let n_n = tb_size(nb + 1u);\n\
         \x20   let tn = (n_n + {n_tile}u - 1u) / {n_tile}u;\n\
         \x20   let tm = (m_n + {m_tile}u - 1u) / {m_tile}u;\n\
         \x20   let oc = tb_unit(u);\n\
         \x20   let ch = oc.y;\n\
         \x20   var rem = oc.x;\n\
         \x20   let t_n = rem % tn;\n\
         \x20   rem = rem / tn;\n\
         \x20   let t_m = rem % tm;\n\
         \x20   rem = rem / tm;\n\
         \x20   let at = tb_walk(tb_bases(), rem, 0u, nb);\n\
         \x20   let b0 = at[0];\n\
         \x20   let b1 = at[1];\n\
         \x20   let ob = at[2];\n\
         \x20   // The chunk of K (`params.elements` is K).\n\
         \x20   let range = tb_chunk(ch);\n\
         \x20   let k0 = range.x;\n\
         \x20   let k1 = range.y;\n"
    )
}

/// The shader of a pairwise op in `layout` (`Pairwise` or `PairWords`).
pub(super) fn shader(
    layout: Layout,
    op: ReduceOp,
    kind: KernelKind,
    arity: usize,
    eval: &str,
) -> String {
    let class = kind.class;
    let (mut s, _) = preamble(op, kind, class, arity, eval);
    s.push_str(&walk_wgsl(&[0, 1, OUTPUT_SLOT]));
    let out = OUTPUT_SLOT;
    let wg = WORKGROUP_SIZE;
    let header = format!(
        "@compute @workgroup_size({wg})\n\
         fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let u = wid.x + wid.y * nwg.x;\n\
         \x20   if (u >= params.count) {{ return; }}\n"
    );
    if layout == Layout::PairWords {
        let rows = PAIR_WORDS_ROWS;
        let prologue = prologue(wg, rows);
        let _ = write!(
            s,
            "{header}\
             {prologue}\
             \x20   // This invocation's row of b against the workgroup's rows of a, which every\n\
             \x20   // invocation reads at the same address; neighbours write neighbouring outputs.\n\
             \x20   let n = t_n * {wg}u + lid;\n\
             \x20   if (n >= n_n) {{ return; }}\n\
             \x20   let bb = b1 + n * tb_stride(1u, nb + 1u);\n\
             \x20   let sa = tb_stride(0u, nb + 2u);\n\
             \x20   let sb = tb_stride(1u, nb + 2u);\n\
             \x20   let m0 = t_m * {rows}u;\n\
             \x20   let m1 = min(m0 + {rows}u, m_n);\n\
             \x20   for (var m = m0; m < m1; m = m + 1u) {{\n\
             \x20       let ab = b0 + m * tb_stride(0u, nb);\n\
             \x20       // At most 32 per word: a chunk's count fits 32 bits.\n\
             \x20       var c = 0u;\n\
             \x20       for (var w = k0; w < k1; w = w + 1u) {{\n\
             \x20           c = c + tb_eval(tb_read0(ab + w * sa), tb_read1(bb + w * sb));\n\
             \x20       }}\n\
             \x20       tb_emit(ob + m * tb_stride({out}u, nb) + n * tb_stride({out}u, nb + 1u), ch, vec2<u32>(c, 0u));\n\
             \x20   }}\n\
             }}\n"
        );
        return s;
    }
    let t = class.value_type();
    let zero = if t == "u32" { "0u" } else { "vec2<u32>(0u)" };
    let tile = PAIR_TILE;
    let prologue = prologue(tile, tile);
    let _ = write!(
        s,
        "var<workgroup> tb_a: array<{t}, {wg}>;\n\
         var<workgroup> tb_b: array<{t}, {wg}>;\n\
         {header}\
         {prologue}\
         \x20   let r = lid / {tile}u;\n\
         \x20   let c = lid % {tile}u;\n\
         \x20   let m = t_m * {tile}u + r;\n\
         \x20   let n = t_n * {tile}u + c;\n\
         \x20   let bn = t_n * {tile}u + r;\n\
         \x20   var acc = tb_acc_id();\n\
         \x20   for (var kb = k0; kb < k1; kb = kb + {tile}u) {{\n\
         \x20       let ka = kb + c;\n\
         \x20       var va = {zero};\n\
         \x20       var vb = {zero};\n\
         \x20       if (m < m_n && ka < k1) {{ va = tb_read0(b0 + m * tb_stride(0u, nb) + ka * tb_stride(0u, nb + 2u)); }}\n\
         \x20       if (bn < n_n && ka < k1) {{ vb = tb_read1(b1 + bn * tb_stride(1u, nb + 1u) + ka * tb_stride(1u, nb + 2u)); }}\n\
         \x20       tb_a[lid] = va;\n\
         \x20       tb_b[lid] = vb;\n\
         \x20       workgroupBarrier();\n\
         \x20       let kn = min({tile}u, k1 - kb);\n\
         \x20       for (var kk = 0u; kk < kn; kk = kk + 1u) {{\n\
         \x20           acc = tb_acc_add(acc, tb_eval(tb_a[r * {tile}u + kk], tb_b[c * {tile}u + kk]));\n\
         \x20       }}\n\
         \x20       workgroupBarrier();\n\
         \x20   }}\n\
         \x20   if (m < m_n && n < n_n) {{\n\
         \x20       tb_emit(ob + m * tb_stride({out}u, nb) + n * tb_stride({out}u, nb + 1u), ch, acc);\n\
         \x20   }}\n\
         }}\n"
    );
    s
}
