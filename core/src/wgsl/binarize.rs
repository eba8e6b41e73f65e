//! `binarize`: one invocation per 32-bit word of packed output (32 elements of the input, four
//! output bytes), so work per invocation is a constant. Not generated per type: every element type
//! is read as bits and compared as an order-preserving unsigned key, the same key the host computes
//! for the thresholds, so no float arithmetic runs on the device and `f16` and `f64` need no
//! shader features.
//!
//! Keys: unsigned integers as they are; signed ones with the sign bit flipped; `bool` 0 or 1 (any
//! non-zero byte is true); floats with `-0` read as `+0`, then negative values' bits inverted and
//! positive values' sign bit set. A NaN element is never above a threshold.
//!
//! The output buffer starts zeroed and each invocation ORs its word in: a dispatch covers whole
//! rows, and the words at its edges are shared with the dispatches before and after it.
//!
//! The uniform block: `out_bytes` the output bytes of this dispatch (whole rows), `nb` the bytes of
//! a row, `d` the elements of a row, `es` the element's bytes, `kind` the key (0 unsigned, 1
//! signed, 2 float, 3 bool), `big` whether bit `i` of a row is bit `7 - i % 8` of its byte, and
//! `per_dim` whether the thresholds are one per element of a row (else one for all), `x_first` the
//! element of the input window where the dispatch's rows start, `out_first` the byte of the output
//! window. Thresholds:
//! `(key low, key high, mode, 0)`, mode 0 above the key, 1 always, 2 never.

use super::WORKGROUP_SIZE;
use std::fmt::Write;

/// The uniform block's size in bytes.
pub const BINARIZE_PARAMS_BYTES: usize = 48;

/// The `binarize` shader.
pub fn binarize_shader() -> String {
    let wg = WORKGROUP_SIZE;
    let mut s = String::from(
        "// tensorbits: binarize, x > threshold packed eight to a byte.\n\
         struct Params { out_bytes: u32, nb: u32, d: u32, es: u32, kind: u32, big: u32, per_dim: u32, x_first: u32, out_first: u32, pad0: u32, pad1: u32, pad2: u32 }\n\
         @group(0) @binding(0) var<uniform> params: Params;\n\
         @group(0) @binding(1) var<storage, read> x: array<u32>;\n\
         @group(0) @binding(2) var<storage, read> cuts: array<vec4<u32>>;\n\
         @group(0) @binding(3) var<storage, read_write> out: array<u32>;\n\
         \n\
         fn tb_load(e: u32) -> vec2<u32> {\n\
         \x20   let es = params.es;\n\
         \x20   if (es == 8u) { return vec2<u32>(x[2u * e], x[2u * e + 1u]); }\n\
         \x20   if (es == 4u) { return vec2<u32>(x[e], 0u); }\n\
         \x20   let b = e * es;\n\
         \x20   let w = x[b / 4u] >> ((b % 4u) * 8u);\n\
         \x20   return vec2<u32>(select(w & 0xffffu, w & 0xffu, es == 1u), 0u);\n\
         }\n\
         \n\
         // The element's key, and whether it is a number (not NaN).\n\
         fn tb_key(v: vec2<u32>) -> vec3<u32> {\n\
         \x20   let es = params.es;\n\
         \x20   var lo = v.x;\n\
         \x20   var hi = v.y;\n\
         \x20   switch params.kind {\n\
         \x20       case 1u: {\n\
         \x20           if (es == 8u) { hi = hi ^ 0x80000000u; } else { lo = lo ^ (1u << (es * 8u - 1u)); }\n\
         \x20       }\n\
         \x20       case 2u: {\n\
         \x20           if (es == 8u) {\n\
         \x20               let nan = ((hi >> 20u) & 0x7ffu) == 0x7ffu && ((hi & 0xfffffu) | lo) != 0u;\n\
         \x20               if (nan) { return vec3<u32>(0u, 0u, 0u); }\n\
         \x20               if (((hi & 0x7fffffffu) | lo) == 0u) { hi = 0u; }\n\
         \x20               if ((hi >> 31u) != 0u) { lo = ~lo; hi = ~hi; } else { hi = hi | 0x80000000u; }\n\
         \x20           } else {\n\
         \x20               let w = es * 8u;\n\
         \x20               let mb = select(10u, 23u, es == 4u);\n\
         \x20               let emax = (1u << (w - 1u - mb)) - 1u;\n\
         \x20               let nan = ((lo >> mb) & emax) == emax && (lo & ((1u << mb) - 1u)) != 0u;\n\
         \x20               if (nan) { return vec3<u32>(0u, 0u, 0u); }\n\
         \x20               let sign = 1u << (w - 1u);\n\
         \x20               if ((lo & (sign - 1u)) == 0u) { lo = 0u; }\n\
         \x20               let all = select((1u << w) - 1u, 0xffffffffu, w == 32u);\n\
         \x20               if ((lo & sign) != 0u) { lo = ~lo & all; } else { lo = lo | sign; }\n\
         \x20           }\n\
         \x20       }\n\
         \x20       case 3u: { lo = select(0u, 1u, lo != 0u); }\n\
         \x20       default: {}\n\
         \x20   }\n\
         \x20   return vec3<u32>(lo, hi, 1u);\n\
         }\n\
         \n\
         fn tb_bit(row: u32, col: u32) -> u32 {\n\
         \x20   let c = cuts[select(0u, col, params.per_dim != 0u)];\n\
         \x20   if (c.z == 1u) { return 1u; }\n\
         \x20   if (c.z == 2u) { return 0u; }\n\
         \x20   let k = tb_key(tb_load(params.x_first + row * params.d + col));\n\
         \x20   let above = k.y > c.y || (k.y == c.y && k.x > c.x);\n\
         \x20   return select(0u, 1u, k.z != 0u && above);\n\
         }\n\
         \n",
    );
    let _ = write!(
        s,
        "@compute @workgroup_size({wg})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let u = gid.x + gid.y * nwg.x * {wg}u;\n\
         \x20   let end = params.out_first + params.out_bytes;\n\
         \x20   if (u * 4u >= end) {{ return; }}\n\
         \x20   var word = 0u;\n\
         \x20   var mine = 0u;\n\
         \x20   for (var q = 0u; q < 4u; q = q + 1u) {{\n\
         \x20       let w = u * 4u + q;\n\
         \x20       if (w < params.out_first || w >= end) {{ continue; }}\n\
         \x20       mine = mine | (0xffu << (8u * q));\n\
         \x20       let g = w - params.out_first;\n\
         \x20       let row = g / params.nb;\n\
         \x20       let j = g % params.nb;\n\
         \x20       var byte = 0u;\n\
         \x20       for (var i = 0u; i < 8u; i = i + 1u) {{\n\
         \x20           let col = j * 8u + i;\n\
         \x20           if (col >= params.d) {{ break; }}\n\
         \x20           let at = select(i, 7u - i, params.big != 0u);\n\
         \x20           byte = byte | (tb_bit(row, col) << at);\n\
         \x20       }}\n\
         \x20       word = word | (byte << (8u * q));\n\
         \x20   }}\n\
         \x20   // This dispatch's bytes of the word are replaced; the others (of rows that\n\
         \x20   // dispatches before or after this one write, or bytes outside the codes) are\n\
         \x20   // kept. One invocation owns each word, and dispatches run in order.\n\
         \x20   out[u] = (out[u] & ~mine) | word;\n\
         }}\n"
    );
    s
}
