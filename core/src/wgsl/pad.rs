//! The zeroing of padding bits under valid bits: one invocation per row of an input, which clears
//! the padding bits of the row's last element with `atomicAnd` (rows of narrow elements share
//! words). Not generated per op: the one shader serves every op and type.
//!
//! The uniform block: `count` rows; `elements` the element's bytes; `extra` the byte offset of
//! element 0 in the binding; `epi.x`/`epi.y` the mask of the bits to clear (low and high word, in
//! the element's little-endian value); `sizes` the dimensions the rows span and slot 0's strides
//! over them; slot 0's base the last element of the first row, in elements.

use super::{WORKGROUP_SIZE, params_wgsl, walk_wgsl};
use std::fmt::Write;

/// The padding shader.
pub fn pad_shader() -> String {
    let wg = WORKGROUP_SIZE;
    let mut s =
        String::from("// tensorbits: zeroes the padding bits of each row's last element.\n");
    s.push_str(&params_wgsl());
    s.push_str("@group(0) @binding(1) var<storage, read_write> buf: array<atomic<u32>>;\n");
    s.push_str(&walk_wgsl(&[0]));
    let _ = write!(
        s,
        "@compute @workgroup_size({wg})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let u = gid.x + gid.y * nwg.x * {wg}u;\n\
         \x20   if (u >= params.count) {{ return; }}\n\
         \x20   let e = tb_walk(tb_bases(), u, 0u, params.rank)[0];\n\
         \x20   let es = params.elements;\n\
         \x20   for (var b = 0u; b < es; b = b + 1u) {{\n\
         \x20       let m = select(params.epi.y, params.epi.x, b < 4u) >> (8u * (b & 3u)) & 0xffu;\n\
         \x20       if (m == 0u) {{ continue; }}\n\
         \x20       let p = params.extra + e * es + b;\n\
         \x20       atomicAnd(&buf[p / 4u], ~(m << (8u * (p % 4u))));\n\
         \x20   }}\n\
         }}\n"
    );
    s
}
