//! WGSL for the GPU kernels: the per-class helper functions (where the semantics of shifts, bool and
//! bit counts live on the GPU) and the shader templates per layout. The macro generates only
//! `tb_eval` from an op's lowered `compute` expression and calls [`shader`] to wrap it, so every GPU
//! kernel and the CPU kernel come from the same expression.
//!
//! WGSL has no 8-, 16- or 64-bit integers and `bool` cannot live in a storage buffer, so elements of
//! 8 and 16 bits are lanes of `u32` words, 64-bit elements are `vec2<u32>` (low, high), and floats are
//! moved as bits, never through float arithmetic.

use crate::{DataType, MAX_INPUTS, MAX_RANK, ReduceOp};
use std::fmt::Write;

/// How a kernel sees an element: its width, and signedness where the expression depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WordClass {
    /// 8-bit, unsigned shifts.
    U8,
    /// 8-bit, signed shifts.
    I8,
    /// 16-bit, unsigned shifts.
    U16,
    /// 16-bit, signed shifts.
    I16,
    /// 32-bit, unsigned shifts.
    U32,
    /// 32-bit, signed shifts.
    I32,
    /// 64-bit (`vec2<u32>`), unsigned shifts.
    U64,
    /// 64-bit (`vec2<u32>`), signed shifts.
    I64,
    /// One byte read as 0 or 1.
    Bool,
    /// Whole `vec4<u32>` words, for width-agnostic expressions (`&`, `|`, `^`, `!` without literals).
    Word,
    /// Whole `vec4<u32>` words of bools: each byte read as 0 or 1.
    BoolWord,
}

/// The three kernel layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Contiguous, same shape, 16-byte aligned: one `vec4<u32>` per invocation.
    Words,
    /// Contiguous, same shape: one output word per invocation.
    Contiguous,
    /// Any strides and broadcasting: one element per invocation.
    Strided,
    /// A reduction over axes: one workgroup per output element, folding its reduced elements and
    /// combining the partial results in workgroup memory. For few outputs with long, contiguous
    /// reductions: neighbouring invocations read neighbouring elements.
    Reduce,
    /// A reduction over axes: one invocation per output element, folding its reduced elements in
    /// order. For short reductions, and for many outputs whose reduced elements are strided
    /// (reducing an outer axis): neighbouring invocations then read neighbouring elements.
    ReduceRows,
    /// A pairwise op: one workgroup per 8 x 8 tile of the output, rows of both inputs staged in
    /// workgroup memory eight elements at a time.
    Pairwise,
    /// knn: one workgroup per row of `a`, each invocation keeping its own short sorted list, merged
    /// in workgroup memory, in passes of [`KNN_PASS`] neighbours.
    Knn,
    /// A pairwise op over the rows' 32-bit words, for sums of a count that is the same at every
    /// width, when each row is a contiguous run of whole words: one workgroup per
    /// [`PAIR_WORDS_ROWS`] rows of `a` and 64 rows of `b`, each invocation one row of `b` against
    /// the rows of `a`, with no workgroup memory.
    PairWords,
    /// [`Knn`](Layout::Knn) over the rows' 32-bit words, as [`PairWords`](Layout::PairWords).
    KnnWords,
}

impl Layout {
    /// The layouts of element-wise ops.
    pub const ALL: [Layout; 3] = [Layout::Words, Layout::Contiguous, Layout::Strided];

    /// Whether a dispatch runs one workgroup per unit of work (output element, tile or row), not
    /// one invocation.
    pub fn per_workgroup(self) -> bool {
        matches!(
            self,
            Layout::Reduce | Layout::Pairwise | Layout::Knn | Layout::PairWords | Layout::KnnWords
        )
    }

    /// The layout of the same work over 32-bit words.
    pub fn words(self) -> Layout {
        match self {
            Layout::Pairwise => Layout::PairWords,
            Layout::Knn => Layout::KnnWords,
            other => other,
        }
    }

    /// Whether the layout reduces: its dispatches name kept dimensions and reduced elements.
    pub fn reduces(self) -> bool {
        self.per_workgroup() || self == Layout::ReduceRows
    }
}

/// Neighbours a knn workgroup finds per pass (each invocation keeps this many).
pub const KNN_PASS: u32 = 16;

/// Rows of each input in a tile of the pairwise kernel.
pub const PAIR_TILE: u32 = 8;

/// Rows of `a` per workgroup of the pairwise kernel over words (each invocation takes one row of
/// `b` against all of them).
pub const PAIR_WORDS_ROWS: u32 = 16;

impl WordClass {
    /// The class of element type `dt`; `signed` is whether the expression's result depends on
    /// signedness (it shifts).
    pub fn of(dt: DataType, signed: bool) -> WordClass {
        let s = signed && dt.is_signed();
        match (dt.bits(), dt) {
            (_, DataType::Bool) => WordClass::Bool,
            (8, _) if s => WordClass::I8,
            (8, _) => WordClass::U8,
            (16, _) if s => WordClass::I16,
            (16, _) => WordClass::U16,
            (32, _) if s => WordClass::I32,
            (32, _) => WordClass::U32,
            (_, _) if s => WordClass::I64,
            _ => WordClass::U64,
        }
    }

    /// Bits per element (32 for the word classes).
    pub fn width(self) -> u32 {
        match self {
            WordClass::U8 | WordClass::I8 | WordClass::Bool => 8,
            WordClass::U16 | WordClass::I16 => 16,
            WordClass::U32 | WordClass::I32 | WordClass::Word | WordClass::BoolWord => 32,
            WordClass::U64 | WordClass::I64 => 64,
        }
    }

    fn signed(self) -> bool {
        matches!(
            self,
            WordClass::I8 | WordClass::I16 | WordClass::I32 | WordClass::I64
        )
    }

    /// The WGSL type holding one value.
    pub fn value_type(self) -> &'static str {
        match self {
            WordClass::U64 | WordClass::I64 => "vec2<u32>",
            WordClass::Word | WordClass::BoolWord => "vec4<u32>",
            _ => "u32",
        }
    }

    /// A literal of this class (the macro checked that it fits the width).
    pub fn literal(self, v: u64) -> String {
        match self {
            WordClass::U64 | WordClass::I64 => {
                format!("vec2<u32>({}u, {}u)", v as u32, (v >> 32) as u32)
            }
            _ => format!("{}u", v & (u64::MAX >> (64 - self.width()))),
        }
    }

    /// The helper functions `tb_load`, `tb_not`, `tb_and`, `tb_or`, `tb_xor`, `tb_shl`, `tb_shr`,
    /// `tb_wshl`, `tb_wshr`, `tb_popcount` for this class.
    pub fn helpers(self) -> String {
        let t = self.value_type();
        let mut s = format!(
            "fn tb_and(a: {t}, b: {t}) -> {t} {{ return a & b; }}\n\
             fn tb_or(a: {t}, b: {t}) -> {t} {{ return a | b; }}\n\
             fn tb_xor(a: {t}, b: {t}) -> {t} {{ return a ^ b; }}\n"
        );
        match self {
            WordClass::Word => s.push_str(
                "fn tb_load(x: vec4<u32>) -> vec4<u32> { return x; }\n\
                 fn tb_not(x: vec4<u32>) -> vec4<u32> { return ~x; }\n",
            ),
            WordClass::BoolWord => s.push_str(
                "// Each byte of each word becomes 0 or 1.\n\
                 fn tb_load(x: vec4<u32>) -> vec4<u32> {\n\
                 \x20   let z = vec4<u32>(0u);\n\
                 \x20   return select(z, vec4<u32>(1u), (x & vec4<u32>(0xffu)) != z)\n\
                 \x20       | select(z, vec4<u32>(0x100u), (x & vec4<u32>(0xff00u)) != z)\n\
                 \x20       | select(z, vec4<u32>(0x10000u), (x & vec4<u32>(0xff0000u)) != z)\n\
                 \x20       | select(z, vec4<u32>(0x1000000u), (x & vec4<u32>(0xff000000u)) != z);\n\
                 }\n\
                 fn tb_not(x: vec4<u32>) -> vec4<u32> { return x ^ vec4<u32>(0x01010101u); }\n",
            ),
            WordClass::Bool => s.push_str(
                "fn tb_load(x: u32) -> u32 { return select(0u, 1u, x != 0u); }\n\
                 fn tb_not(x: u32) -> u32 { return x ^ 1u; }\n",
            ),
            WordClass::U64 | WordClass::I64 => s.push_str(&wide_helpers(self.signed())),
            _ => s.push_str(&narrow_helpers(self.width(), self.signed())),
        }
        s
    }
}

fn narrow_helpers(w: u32, signed: bool) -> String {
    let mask = if w == 32 { u32::MAX } else { (1u32 << w) - 1 };
    let mut s = format!(
        "const TB_W: u32 = {w}u;\n\
         const TB_M: u32 = {mask}u;\n\
         fn tb_load(x: u32) -> u32 {{ return x; }}\n\
         fn tb_not(x: u32) -> u32 {{ return ~x & TB_M; }}\n\
         fn tb_popcount(x: u32) -> u32 {{ return countOneBits(x & TB_M); }}\n\
         // Sign-extends a TB_W-bit pattern.\n\
         fn tb_sext(x: u32) -> i32 {{ return bitcast<i32>(x << (32u - TB_W)) >> (32u - TB_W); }}\n\
         fn tb_wshl(x: u32, c: u32) -> u32 {{ return (x << (c & (TB_W - 1u))) & TB_M; }}\n"
    );
    // Counts are read with the element's signedness, so a negative count becomes a huge unsigned one
    // and one comparison with the width catches both out-of-range cases. WGSL would take the count
    // modulo 32 and SPIR-V leaves it undefined, so the shift itself only ever sees in-range counts.
    if signed {
        s.push_str(
            "fn tb_count(c: u32) -> u32 { return bitcast<u32>(tb_sext(c)); }\n\
             fn tb_shl(x: u32, c: u32) -> u32 { let n = tb_count(c); return select(0u, (x << (n & 31u)) & TB_M, n < TB_W); }\n\
             fn tb_shr(x: u32, c: u32) -> u32 { let n = tb_count(c); return bitcast<u32>(tb_sext(x) >> min(n, TB_W - 1u)) & TB_M; }\n\
             fn tb_wshr(x: u32, c: u32) -> u32 { return bitcast<u32>(tb_sext(x) >> (c & (TB_W - 1u))) & TB_M; }\n",
        );
    } else {
        s.push_str(
            "fn tb_shl(x: u32, c: u32) -> u32 { return select(0u, (x << (c & 31u)) & TB_M, c < TB_W); }\n\
             fn tb_shr(x: u32, c: u32) -> u32 { return select(0u, x >> (c & 31u), c < TB_W); }\n\
             fn tb_wshr(x: u32, c: u32) -> u32 { return x >> (c & (TB_W - 1u)); }\n",
        );
    }
    s
}

fn wide_helpers(signed: bool) -> String {
    let mut s = String::from(
        "fn tb_load(x: vec2<u32>) -> vec2<u32> { return x; }\n\
         fn tb_not(x: vec2<u32>) -> vec2<u32> { return ~x; }\n\
         fn tb_popcount(x: vec2<u32>) -> u32 { return countOneBits(x.x) + countOneBits(x.y); }\n\
         // 64-bit shift left by 0 <= n < 64 on (low, high).\n\
         fn tb_shl_n(x: vec2<u32>, n: u32) -> vec2<u32> {\n\
         \x20   if (n == 0u) { return x; }\n\
         \x20   if (n < 32u) { return vec2<u32>(x.x << n, (x.y << n) | (x.x >> (32u - n))); }\n\
         \x20   return vec2<u32>(0u, x.x << (n - 32u));\n\
         }\n\
         // A count is in range when its high word is 0 and its low word below 64; a negative count has\n\
         // a high word of all ones.\n\
         fn tb_in_range(c: vec2<u32>) -> bool { return c.y == 0u && c.x < 64u; }\n\
         fn tb_shl(x: vec2<u32>, c: vec2<u32>) -> vec2<u32> {\n\
         \x20   if (!tb_in_range(c)) { return vec2<u32>(0u); }\n\
         \x20   return tb_shl_n(x, c.x);\n\
         }\n\
         fn tb_wshl(x: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return tb_shl_n(x, c.x & 63u); }\n\
         fn tb_wshr(x: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return tb_shr_n(x, c.x & 63u); }\n",
    );
    if signed {
        s.push_str(
            "fn tb_shr_n(x: vec2<u32>, n: u32) -> vec2<u32> {\n\
             \x20   let h = bitcast<i32>(x.y);\n\
             \x20   if (n == 0u) { return x; }\n\
             \x20   if (n < 32u) { return vec2<u32>((x.x >> n) | (x.y << (32u - n)), bitcast<u32>(h >> n)); }\n\
             \x20   return vec2<u32>(bitcast<u32>(h >> (n - 32u)), bitcast<u32>(h >> 31u));\n\
             }\n\
             fn tb_shr(x: vec2<u32>, c: vec2<u32>) -> vec2<u32> {\n\
             \x20   if (!tb_in_range(c)) { let s = bitcast<u32>(bitcast<i32>(x.y) >> 31u); return vec2<u32>(s, s); }\n\
             \x20   return tb_shr_n(x, c.x);\n\
             }\n",
        );
    } else {
        s.push_str(
            "fn tb_shr_n(x: vec2<u32>, n: u32) -> vec2<u32> {\n\
             \x20   if (n == 0u) { return x; }\n\
             \x20   if (n < 32u) { return vec2<u32>((x.x >> n) | (x.y << (32u - n)), x.y >> n); }\n\
             \x20   return vec2<u32>(x.y >> (n - 32u), 0u);\n\
             }\n\
             fn tb_shr(x: vec2<u32>, c: vec2<u32>) -> vec2<u32> {\n\
             \x20   if (!tb_in_range(c)) { return vec2<u32>(0u); }\n\
             \x20   return tb_shr_n(x, c.x);\n\
             }\n",
        );
    }
    s
}

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

/// Size in bytes of the uniform block (`Params`): a header of four `u32`s, then the sizes, the bases
/// and the strides, each padded to whole `vec4<u32>`s.
pub const PARAMS_BYTES: usize = 16 * (1 + RANK_VECS + BASE_VECS + STRIDE_VECS);

/// The uniform block every kernel reads: `count` invocations do work; `rank` and `sizes` give the
/// iteration space (of which reductions keep the first `kept` dimensions); `elements` is the element
/// count for the word-per-invocation layout, the reduced count of a reduction. Tensor slot
/// `t` is input `t`, and slot [`OUTPUT_SLOT`] the output. `base` is each tensor's first element within
/// its binding, in units of the layout (elements, or `vec4<u32>` for [`Layout::Words`]); strides are
/// in elements. [`params_bytes`] writes it.
pub fn params_wgsl() -> String {
    format!(
        "struct Params {{
    count: u32,
    rank: u32,
    elements: u32,
    kept: u32,
    sizes: array<vec4<u32>, {RANK_VECS}>,
    base: array<vec4<u32>, {BASE_VECS}>,
    strides: array<vec4<u32>, {STRIDE_VECS}>,
}}
@group(0) @binding(0) var<uniform> params: Params;
fn tb_size(d: u32) -> u32 {{ return params.sizes[d >> 2u][d & 3u]; }}
fn tb_base(t: u32) -> u32 {{ return params.base[t >> 2u][t & 3u]; }}
fn tb_stride(t: u32, d: u32) -> u32 {{ return params.strides[t * {RANK_VECS}u + (d >> 2u)][d & 3u]; }}
"
    )
}

/// The bytes of the uniform block [`params_wgsl`] declares: `count` invocations (workgroups for
/// the reduction layouts), `elements` elements (the reduced count, K, or knn's k), the iteration
/// space `sizes` (at most [`MAX_RANK`] entries, the first `kept` of them kept by a reduction), and
/// per slot its base and its stride in each dimension.
pub fn params_bytes(
    count: u32,
    elements: u32,
    kept: u32,
    sizes: &[u32],
    base: &[u32; SLOTS],
    strides: &[[u32; MAX_RANK]; SLOTS],
) -> Vec<u8> {
    let mut p = Vec::with_capacity(PARAMS_BYTES);
    let mut push = |v: u32| p.extend_from_slice(&v.to_le_bytes());
    push(count);
    push(sizes.len() as u32);
    push(elements);
    push(kept);
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

/// What a kernel computes: the input class, the output width in bits, and whether the result is a
/// bit count (a `u32` from `tb_eval`) rather than a value of the input class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelKind {
    /// Class of the inputs.
    pub class: WordClass,
    /// Bits per output element.
    pub out_bits: u32,
    /// Whether `tb_eval` returns a count.
    pub count: bool,
}

fn read_fn(k: usize, bits: u32) -> String {
    let body = match bits {
        8 => format!("return (in{k}[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;"),
        16 => format!("return (in{k}[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;"),
        32 => format!("return in{k}[i];"),
        _ => format!("return vec2<u32>(in{k}[2u * i], in{k}[2u * i + 1u]);"),
    };
    let t = if bits == 64 { "vec2<u32>" } else { "u32" };
    format!("fn tb_read{k}(i: u32) -> {t} {{ {body} }}\n")
}

/// Converts what `tb_eval` returns to the output's value type (a count is widened or kept).
fn out_value(kind: KernelKind, v: &str) -> String {
    if kind.count && kind.out_bits == 64 {
        format!("vec2<u32>({v}, 0u)")
    } else {
        v.to_owned()
    }
}

/// The complete shader for one element-wise op, kernel kind and layout (one of [`Layout::ALL`];
/// [`reduce_shader`] writes the others). `eval` is the WGSL of `tb_eval`, taking `x0..x{arity-1}`
/// of the class's value type.
pub fn shader(layout: Layout, kind: KernelKind, arity: usize, eval: &str) -> String {
    let mut s = String::from(
        "// Generated by #[bitwise_op]; see tensorbits-core's wgsl.rs for the template.\n",
    );
    s.push_str(&params_wgsl());
    let class = if layout == Layout::Words {
        if kind.class == WordClass::Bool {
            WordClass::BoolWord
        } else {
            WordClass::Word
        }
    } else {
        kind.class
    };
    s.push_str(&class.helpers());
    s.push_str(eval);
    s.push('\n');
    let in_bits = class.width();
    let word_array = if layout == Layout::Words {
        "array<vec4<u32>>"
    } else {
        "array<u32>"
    };
    for k in 0..arity {
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read> in{k}: {word_array};",
            k + 1
        );
    }
    let narrow_out = kind.out_bits < 32 && layout != Layout::Words;
    let out_array = if narrow_out {
        "array<atomic<u32>>"
    } else {
        word_array
    };
    let _ = writeln!(
        s,
        "@group(0) @binding({}) var<storage, read_write> out: {out_array};",
        arity + 1
    );
    let args = |idx: &dyn Fn(usize) -> String| -> String {
        (0..arity).map(idx).collect::<Vec<_>>().join(", ")
    };
    let header = format!(
        "@compute @workgroup_size({WORKGROUP_SIZE})\n\
         fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let e = gid.x + gid.y * nwg.x * {WORKGROUP_SIZE}u;\n\
         \x20   if (e >= params.count) {{ return; }}\n"
    );
    let out = OUTPUT_SLOT;
    match layout {
        Layout::Words => {
            s.push_str(&header);
            let a = args(&|k| format!("in{k}[tb_base({k}u) + e]"));
            let _ = writeln!(s, "    out[tb_base({out}u) + e] = tb_eval({a});\n}}");
        }
        // The element-wise layouts; the reduction layouts have their own template.
        _ => {
            for k in 0..arity {
                s.push_str(&read_fn(k, in_bits));
            }
            s.push_str(&write_fns(kind.out_bits));
            s.push_str(&header);
            if layout == Layout::Strided || !narrow_out {
                // One element per invocation; strided walks the dimensions from the innermost out.
                if layout == Layout::Strided {
                    let _ = writeln!(s, "    var rem = e;\n    var o = tb_base({out}u);");
                    for k in 0..arity {
                        let _ = writeln!(s, "    var i{k} = tb_base({k}u);");
                    }
                    let _ = write!(
                        s,
                        "    for (var d = params.rank; d > 0u; d = d - 1u) {{\n\
                         \x20       let n = tb_size(d - 1u);\n\
                         \x20       let idx = rem % n;\n\
                         \x20       rem = rem / n;\n\
                         \x20       o = o + idx * tb_stride({out}u, d - 1u);\n",
                    );
                    for k in 0..arity {
                        let _ = writeln!(s, "        i{k} = i{k} + idx * tb_stride({k}u, d - 1u);");
                    }
                    s.push_str("    }\n");
                } else {
                    let _ = writeln!(s, "    let o = tb_base({out}u) + e;");
                    for k in 0..arity {
                        let _ = writeln!(s, "    let i{k} = tb_base({k}u) + e;");
                    }
                }
                let a = args(&|k| format!("tb_read{k}(i{k})"));
                let v = out_value(kind, &format!("tb_eval({a})"));
                let _ = writeln!(s, "    tb_write(o, {v});\n}}");
            } else {
                // One output word per invocation: every lane of the word that belongs to the output
                // is computed here, so whole words are stored without read-modify-write; only a word
                // shared with bytes outside the output is merged under a mask.
                let lanes = 32 / kind.out_bits;
                let lane_mask = if kind.out_bits == 8 {
                    "0xffu"
                } else {
                    "0xffffu"
                };
                let _ = write!(
                    s,
                    "    let ob = tb_base({out}u);\n\
                     \x20   let w = ob / {lanes}u + e;\n\
                     \x20   var word = 0u;\n\
                     \x20   var mask = 0u;\n\
                     \x20   for (var l = 0u; l < {lanes}u; l = l + 1u) {{\n\
                     \x20       let el = w * {lanes}u + l;\n\
                     \x20       if (el < ob || el - ob >= params.elements) {{ continue; }}\n\
                     \x20       let j = el - ob;\n"
                );
                let a = args(&|k| format!("tb_read{k}(tb_base({k}u) + j)"));
                let _ = write!(
                    s,
                    "        let v = tb_eval({a});\n\
                     \x20       word = word | ((v & {lane_mask}) << (l * {bits}u));\n\
                     \x20       mask = mask | ({lane_mask} << (l * {bits}u));\n\
                     \x20   }}\n\
                     \x20   tb_write_word(w, word, mask);\n\
                     }}\n",
                    bits = kind.out_bits
                );
            }
        }
    }
    s
}

fn write_fns(bits: u32) -> String {
    match bits {
        32 => "fn tb_write(i: u32, v: u32) { out[i] = v; }\n".to_owned(),
        64 => "fn tb_write(i: u32, v: vec2<u32>) { out[2u * i] = v.x; out[2u * i + 1u] = v.y; }\n"
            .to_owned(),
        _ => {
            let (lanes, m) = if bits == 8 {
                (4, "0xffu")
            } else {
                (2, "0xffffu")
            };
            // Neighbouring elements of one word belong to other invocations or lie outside the output:
            // clear and set only this element's bits, atomically. The two operations touch disjoint
            // bits of every other owner, so their order across invocations does not matter.
            format!(
                "fn tb_write(i: u32, v: u32) {{\n\
                 \x20   let sh = (i % {lanes}u) * {bits}u;\n\
                 \x20   atomicAnd(&out[i / {lanes}u], ~({m} << sh));\n\
                 \x20   atomicOr(&out[i / {lanes}u], (v & {m}) << sh);\n\
                 }}\n\
                 fn tb_write_word(w: u32, v: u32, m: u32) {{\n\
                 \x20   if (m == 0xffffffffu) {{ atomicStore(&out[w], v); return; }}\n\
                 \x20   if (m == 0u) {{ return; }}\n\
                 \x20   atomicAnd(&out[w], ~m);\n\
                 \x20   atomicOr(&out[w], v & m);\n\
                 }}\n"
            )
        }
    }
}

/// One generated GPU kernel: for inputs of `input`, output of `output`, in `layout`.
#[derive(Clone, Copy, Debug)]
pub struct GpuKernel {
    /// Input data type.
    pub input: DataType,
    /// Output data type.
    pub output: DataType,
    /// Layout.
    pub layout: Layout,
    /// The WGSL source.
    pub source: &'static str,
}

/// The accumulator of a reduction in WGSL: its type and the helpers `tb_acc_id`, `tb_acc_add`
/// (one value of what `tb_eval` returns), `tb_acc_merge` and `tb_acc_out` (to the output's value).
/// Sums count in 64 bits (`vec2<u32>`, low word first), whatever the output type.
fn acc_helpers(op: ReduceOp, class: WordClass, out_bits: u32) -> (&'static str, String) {
    if op == ReduceOp::Sum {
        let out = if out_bits == 64 {
            "fn tb_acc_out(a: vec2<u32>) -> vec2<u32> { return a; }\n"
        } else {
            "fn tb_acc_out(a: vec2<u32>) -> u32 { return a.x; }\n"
        };
        let s = format!(
            "fn tb_acc_id() -> vec2<u32> {{ return vec2<u32>(0u, 0u); }}\n\
             fn tb_acc_add(a: vec2<u32>, c: u32) -> vec2<u32> {{ let lo = a.x + c; return vec2<u32>(lo, a.y + select(0u, 1u, lo < c)); }}\n\
             fn tb_acc_merge(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {{ let lo = a.x + b.x; return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x)); }}\n\
             {out}"
        );
        return ("vec2<u32>", s);
    }
    let t = class.value_type();
    let ones = match class {
        WordClass::Bool => "1u".to_owned(),
        WordClass::U64 | WordClass::I64 => "vec2<u32>(0xffffffffu, 0xffffffffu)".to_owned(),
        c => format!("{}u", u64::MAX >> (64 - c.width())),
    };
    let zero = if t == "u32" { "0u" } else { "vec2<u32>(0u)" };
    let (id, sym) = match op {
        ReduceOp::And => (ones, "&"),
        ReduceOp::Or => (zero.to_owned(), "|"),
        _ => (zero.to_owned(), "^"),
    };
    let s = format!(
        "fn tb_acc_id() -> {t} {{ return {id}; }}\n\
         fn tb_acc_add(a: {t}, v: {t}) -> {t} {{ return a {sym} v; }}\n\
         fn tb_acc_merge(a: {t}, b: {t}) -> {t} {{ return a {sym} b; }}\n\
         fn tb_acc_out(a: {t}) -> {t} {{ return a; }}\n"
    );
    let t: &'static str = if t == "u32" { "u32" } else { "vec2<u32>" };
    (t, s)
}

/// The start of both pairwise kernels: the sizes of `[batch..., M, N, K]`, this invocation's tile
/// of `n_tile` rows of `b` by `m_tile` rows of `a` (`t_n`, `t_m`), and the base of each tensor at its
/// batch index (`b0`, `b1`, `ob`).
fn pair_prologue(
    n_tile: impl std::fmt::Display,
    m_tile: impl std::fmt::Display,
    out: impl std::fmt::Display,
) -> String {
    format!(
        "\x20   let nb = params.kept - 2u;\n\
         \x20   let m_n = tb_size(nb);\n\
         \x20   let n_n = tb_size(nb + 1u);\n\
         \x20   let k_n = tb_size(nb + 2u);\n\
         \x20   let tn = (n_n + {n_tile}u - 1u) / {n_tile}u;\n\
         \x20   let tm = (m_n + {m_tile}u - 1u) / {m_tile}u;\n\
         \x20   var rem = u;\n\
         \x20   let t_n = rem % tn;\n\
         \x20   rem = rem / tn;\n\
         \x20   let t_m = rem % tm;\n\
         \x20   rem = rem / tm;\n\
         \x20   var b0 = tb_base(0u);\n\
         \x20   var b1 = tb_base(1u);\n\
         \x20   var ob = tb_base({out}u);\n\
         \x20   for (var d = nb; d > 0u; d = d - 1u) {{\n\
         \x20       let n = tb_size(d - 1u);\n\
         \x20       let idx = rem % n;\n\
         \x20       rem = rem / n;\n\
         \x20       b0 = b0 + idx * tb_stride(0u, d - 1u);\n\
         \x20       b1 = b1 + idx * tb_stride(1u, d - 1u);\n\
         \x20       ob = ob + idx * tb_stride({out}u, d - 1u);\n\
         \x20   }}\n"
    )
}

/// The shader of a reduction (`Layout::Reduce` or `Layout::ReduceRows`), pairwise op
/// (`Layout::Pairwise`) or knn
/// (`Layout::Knn`) reducing with `op`. `eval` is the WGSL of `tb_eval` for `arity` inputs of the
/// class's value type.
pub fn reduce_shader(
    layout: Layout,
    op: ReduceOp,
    kind: KernelKind,
    arity: usize,
    eval: &str,
) -> String {
    let class = kind.class;
    let (acc_t, acc) = acc_helpers(op, class, kind.out_bits);
    let mut s = String::from(
        "// Generated by #[bitwise_op]; see tensorbits-core's wgsl.rs for the template.\n",
    );
    s.push_str(&params_wgsl());
    s.push_str(&class.helpers());
    s.push_str(eval);
    s.push('\n');
    s.push_str(&acc);
    for k in 0..arity {
        let _ = writeln!(
            s,
            "@group(0) @binding({}) var<storage, read> in{k}: array<u32>;",
            k + 1
        );
        s.push_str(&read_fn(k, class.width()));
    }
    let narrow_out = kind.out_bits < 32;
    let out_array = if narrow_out {
        "array<atomic<u32>>"
    } else {
        "array<u32>"
    };
    let _ = writeln!(
        s,
        "@group(0) @binding({}) var<storage, read_write> out: {out_array};",
        arity + 1
    );
    s.push_str(&write_fns(kind.out_bits));
    let out = OUTPUT_SLOT;
    let wg = WORKGROUP_SIZE;
    let header = format!(
        "@compute @workgroup_size({wg})\n\
         fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
         \x20   let u = wid.x + wid.y * nwg.x;\n\
         \x20   if (u >= params.count) {{ return; }}\n"
    );
    match layout {
        Layout::PairWords => {
            let rows = PAIR_WORDS_ROWS;
            let prologue = pair_prologue(wg, rows, out);
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
                 \x20       // At most 32 per word: a row's count fits 32 bits (the executor checks).\n\
                 \x20       var c = 0u;\n\
                 \x20       for (var w = 0u; w < k_n; w = w + 1u) {{\n\
                 \x20           c = c + tb_eval(tb_read0(ab + w * sa), tb_read1(bb + w * sb));\n\
                 \x20       }}\n\
                 \x20       tb_write(ob + m * tb_stride({out}u, nb) + n * tb_stride({out}u, nb + 1u), tb_acc_out(vec2<u32>(c, 0u)));\n\
                 \x20   }}\n\
                 }}\n"
            );
        }
        Layout::Pairwise => {
            let t = class.value_type();
            let zero = if t == "u32" { "0u" } else { "vec2<u32>(0u)" };
            let tile = PAIR_TILE;
            let prologue = pair_prologue(tile, tile, out);
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
                 \x20   for (var k0 = 0u; k0 < k_n; k0 = k0 + {tile}u) {{\n\
                 \x20       let ka = k0 + c;\n\
                 \x20       var va = {zero};\n\
                 \x20       var vb = {zero};\n\
                 \x20       if (m < m_n && ka < k_n) {{ va = tb_read0(b0 + m * tb_stride(0u, nb) + ka * tb_stride(0u, nb + 2u)); }}\n\
                 \x20       if (bn < n_n && ka < k_n) {{ vb = tb_read1(b1 + bn * tb_stride(1u, nb + 1u) + ka * tb_stride(1u, nb + 2u)); }}\n\
                 \x20       tb_a[lid] = va;\n\
                 \x20       tb_b[lid] = vb;\n\
                 \x20       workgroupBarrier();\n\
                 \x20       let kn = min({tile}u, k_n - k0);\n\
                 \x20       for (var kk = 0u; kk < kn; kk = kk + 1u) {{\n\
                 \x20           acc = tb_acc_add(acc, tb_eval(tb_a[r * {tile}u + kk], tb_b[c * {tile}u + kk]));\n\
                 \x20       }}\n\
                 \x20       workgroupBarrier();\n\
                 \x20   }}\n\
                 \x20   if (m < m_n && n < n_n) {{\n\
                 \x20       tb_write(ob + m * tb_stride({out}u, nb) + n * tb_stride({out}u, nb + 1u), tb_acc_out(acc));\n\
                 \x20   }}\n\
                 }}\n"
            );
        }
        Layout::Knn | Layout::KnnWords => {
            let pass = KNN_PASS;
            let all = KNN_PASS * WORKGROUP_SIZE;
            let dist = if kind.out_bits == 64 {
                "vec2<u32>(best, 0u)"
            } else {
                "best"
            };
            let _ = write!(
                s,
                "@group(0) @binding({}) var<storage, read_write> outi: array<u32>;\n\
                 var<workgroup> tb_wd: array<u32, {all}>;\n\
                 var<workgroup> tb_wj: array<u32, {all}>;\n\
                 var<workgroup> tb_wn: array<u32, {wg}>;\n\
                 var<workgroup> tb_bd: u32;\n\
                 var<workgroup> tb_bj: u32;\n\
                 {header}\
                 \x20   let nb = params.kept - 1u;\n\
                 \x20   let m_n = tb_size(nb);\n\
                 \x20   let n_n = tb_size(nb + 1u);\n\
                 \x20   let k_n = tb_size(nb + 2u);\n\
                 \x20   let kk = params.elements;\n\
                 \x20   var rem = u;\n\
                 \x20   let m = rem % m_n;\n\
                 \x20   rem = rem / m_n;\n\
                 \x20   var b0 = tb_base(0u) + m * tb_stride(0u, nb);\n\
                 \x20   var b1 = tb_base(1u);\n\
                 \x20   var ob = tb_base({out}u) + m * tb_stride({out}u, nb);\n\
                 \x20   var oi = tb_base(2u) + m * tb_stride(2u, nb);\n\
                 \x20   for (var d = nb; d > 0u; d = d - 1u) {{\n\
                 \x20       let n = tb_size(d - 1u);\n\
                 \x20       let idx = rem % n;\n\
                 \x20       rem = rem / n;\n\
                 \x20       b0 = b0 + idx * tb_stride(0u, d - 1u);\n\
                 \x20       b1 = b1 + idx * tb_stride(1u, d - 1u);\n\
                 \x20       ob = ob + idx * tb_stride({out}u, d - 1u);\n\
                 \x20       oi = oi + idx * tb_stride(2u, d - 1u);\n\
                 \x20   }}\n\
                 \x20   var bd = 0u;\n\
                 \x20   var bj = 0u;\n\
                 \x20   for (var p = 0u; p * {pass}u < kk; p = p + 1u) {{\n\
                 \x20       var td: array<u32, {pass}>;\n\
                 \x20       var tj: array<u32, {pass}>;\n\
                 \x20       var tc = 0u;\n\
                 \x20       for (var n = lid; n < n_n; n = n + {wg}u) {{\n\
                 \x20           var d = 0u;\n\
                 \x20           for (var e = 0u; e < k_n; e = e + 1u) {{\n\
                 \x20               d = d + tb_eval(tb_read0(b0 + e * tb_stride(0u, nb + 2u)), tb_read1(b1 + n * tb_stride(1u, nb + 1u) + e * tb_stride(1u, nb + 2u)));\n\
                 \x20           }}\n\
                 \x20           // Earlier passes found everything up to the boundary (distance, index).\n\
                 \x20           if (p > 0u && (d < bd || (d == bd && n <= bj))) {{ continue; }}\n\
                 \x20           // Rows come in increasing order: an equal distance never displaces.\n\
                 \x20           if (tc == {pass}u && d >= td[{pass}u - 1u]) {{ continue; }}\n\
                 \x20           if (tc < {pass}u) {{ tc = tc + 1u; }}\n\
                 \x20           var i = tc - 1u;\n\
                 \x20           loop {{\n\
                 \x20               if (i == 0u) {{ break; }}\n\
                 \x20               if (td[i - 1u] <= d) {{ break; }}\n\
                 \x20               td[i] = td[i - 1u];\n\
                 \x20               tj[i] = tj[i - 1u];\n\
                 \x20               i = i - 1u;\n\
                 \x20           }}\n\
                 \x20           td[i] = d;\n\
                 \x20           tj[i] = n;\n\
                 \x20       }}\n\
                 \x20       for (var i = 0u; i < {pass}u; i = i + 1u) {{\n\
                 \x20           tb_wd[lid * {pass}u + i] = td[i];\n\
                 \x20           tb_wj[lid * {pass}u + i] = tj[i];\n\
                 \x20       }}\n\
                 \x20       tb_wn[lid] = tc;\n\
                 \x20       workgroupBarrier();\n\
                 \x20       if (lid == 0u) {{\n\
                 \x20           var heads: array<u32, {wg}>;\n\
                 \x20           let take = min({pass}u, kk - p * {pass}u);\n\
                 \x20           for (var t = 0u; t < take; t = t + 1u) {{\n\
                 \x20               var best = 0xffffffffu;\n\
                 \x20               var bestj = 0xffffffffu;\n\
                 \x20               var who = 0u;\n\
                 \x20               for (var w = 0u; w < {wg}u; w = w + 1u) {{\n\
                 \x20                   let h = heads[w];\n\
                 \x20                   if (h < tb_wn[w]) {{\n\
                 \x20                       let dv = tb_wd[w * {pass}u + h];\n\
                 \x20                       let jv = tb_wj[w * {pass}u + h];\n\
                 \x20                       if (dv < best || (dv == best && jv < bestj)) {{ best = dv; bestj = jv; who = w; }}\n\
                 \x20                   }}\n\
                 \x20               }}\n\
                 \x20               heads[who] = heads[who] + 1u;\n\
                 \x20               let at = p * {pass}u + t;\n\
                 \x20               tb_write(ob + at * tb_stride({out}u, nb + 1u), {dist});\n\
                 \x20               let ia = oi + at * tb_stride(2u, nb + 1u);\n\
                 \x20               outi[2u * ia] = bestj;\n\
                 \x20               outi[2u * ia + 1u] = 0u;\n\
                 \x20               tb_bd = best;\n\
                 \x20               tb_bj = bestj;\n\
                 \x20           }}\n\
                 \x20       }}\n\
                 \x20       workgroupBarrier();\n\
                 \x20       bd = tb_bd;\n\
                 \x20       bj = tb_bj;\n\
                 \x20       workgroupBarrier();\n\
                 \x20   }}\n\
                 }}\n",
                arity + 2
            );
        }
        Layout::ReduceRows => {
            let decl: String = (0..arity)
                .map(|k| format!("    var b{k} = tb_base({k}u);\n"))
                .collect();
            let kept_step: String = (0..arity)
                .map(|k| format!("        b{k} = b{k} + idx * tb_stride({k}u, d - 1u);\n"))
                .collect();
            let outer_decl: String = (0..arity)
                .map(|k| format!("            var i{k} = b{k};\n"))
                .collect();
            let outer_step: String = (0..arity)
                .map(|k| format!("                i{k} = i{k} + idx * tb_stride({k}u, d - 1u);\n"))
                .collect();
            let inner_stride: String = (0..arity)
                .map(|k| format!("            let s{k} = tb_stride({k}u, params.rank - 1u);\n"))
                .collect();
            let inner_step: String = (0..arity)
                .map(|k| format!("                i{k} = i{k} + s{k};\n"))
                .collect();
            let args: Vec<String> = (0..arity).map(|k| format!("tb_read{k}(i{k})")).collect();
            let base_args: Vec<String> = (0..arity).map(|k| format!("tb_read{k}(b{k})")).collect();
            let _ = write!(
                s,
                "@compute @workgroup_size({wg})\n\
                 fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n\
                 \x20   let u = gid.x + gid.y * nwg.x * {wg}u;\n\
                 \x20   if (u >= params.count) {{ return; }}\n\
                 \x20   var rem = u;\n\
                 \x20   var ob = tb_base({out}u);\n\
                 {decl}\
                 \x20   for (var d = params.kept; d > 0u; d = d - 1u) {{\n\
                 \x20       let n = tb_size(d - 1u);\n\
                 \x20       let idx = rem % n;\n\
                 \x20       rem = rem / n;\n\
                 \x20       ob = ob + idx * tb_stride({out}u, d - 1u);\n\
                 {kept_step}\
                 \x20   }}\n\
                 \x20   var acc = tb_acc_id();\n\
                 \x20   if (params.elements > 0u) {{\n\
                 \x20       if (params.rank > params.kept) {{\n\
                 \x20           // The innermost reduced dimension by steps of its strides; the outer ones decoded.\n\
                 \x20           let inner = tb_size(params.rank - 1u);\n\
                 {inner_stride}\
                 \x20           for (var ro = 0u; ro < params.elements / inner; ro = ro + 1u) {{\n\
                 \x20               var rr = ro;\n\
                 {outer_decl}\
                 \x20               for (var d = params.rank - 1u; d > params.kept; d = d - 1u) {{\n\
                 \x20                   let n = tb_size(d - 1u);\n\
                 \x20                   let idx = rr % n;\n\
                 \x20                   rr = rr / n;\n\
                 {outer_step}\
                 \x20               }}\n\
                 \x20               for (var j = 0u; j < inner; j = j + 1u) {{\n\
                 \x20                   acc = tb_acc_add(acc, tb_eval({}));\n\
                 {inner_step}\
                 \x20               }}\n\
                 \x20           }}\n\
                 \x20       }} else {{\n\
                 \x20           acc = tb_acc_add(acc, tb_eval({}));\n\
                 \x20       }}\n\
                 \x20   }}\n\
                 \x20   tb_write(ob, tb_acc_out(acc));\n\
                 }}\n",
                args.join(", "),
                base_args.join(", "),
            );
        }
        _ => {
            let decl: String = (0..arity)
                .map(|k| format!("    var b{k} = tb_base({k}u);\n"))
                .collect();
            let kept_step: String = (0..arity)
                .map(|k| format!("        b{k} = b{k} + idx * tb_stride({k}u, d - 1u);\n"))
                .collect();
            let red_decl: String = (0..arity)
                .map(|k| format!("                var i{k} = b{k};\n"))
                .collect();
            let red_step: String = (0..arity)
                .map(|k| {
                    format!("                    i{k} = i{k} + idx * tb_stride({k}u, d - 1u);\n")
                })
                .collect();
            let inner_stride: String = (0..arity)
                .map(|k| format!("            let s{k} = tb_stride({k}u, params.rank - 1u);\n"))
                .collect();
            let args: Vec<String> = (0..arity)
                .map(|k| format!("tb_read{k}(i{k} + j * s{k})"))
                .collect();
            let base_args: Vec<String> = (0..arity).map(|k| format!("tb_read{k}(b{k})")).collect();
            let _ = write!(
                s,
                "var<workgroup> tb_part: array<{acc_t}, {wg}>;\n\
                 {header}\
                 \x20   var rem = u;\n\
                 \x20   var ob = tb_base({out}u);\n\
                 {decl}\
                 \x20   for (var d = params.kept; d > 0u; d = d - 1u) {{\n\
                 \x20       let n = tb_size(d - 1u);\n\
                 \x20       let idx = rem % n;\n\
                 \x20       rem = rem / n;\n\
                 \x20       ob = ob + idx * tb_stride({out}u, d - 1u);\n\
                 {kept_step}\
                 \x20   }}\n\
                 \x20   var acc = tb_acc_id();\n\
                 \x20   if (params.elements > 0u) {{\n\
                 \x20       if (params.rank > params.kept) {{\n\
                 \x20           // The invocations share each run of the innermost reduced dimension; the outer\n\
                 \x20           // reduced dimensions are decoded once per run.\n\
                 \x20           let inner = tb_size(params.rank - 1u);\n\
                 {inner_stride}\
                 \x20           for (var ro = 0u; ro < params.elements / inner; ro = ro + 1u) {{\n\
                 \x20               var rr = ro;\n\
                 {red_decl}\
                 \x20               for (var d = params.rank - 1u; d > params.kept; d = d - 1u) {{\n\
                 \x20                   let n = tb_size(d - 1u);\n\
                 \x20                   let idx = rr % n;\n\
                 \x20                   rr = rr / n;\n\
                 {red_step}\
                 \x20               }}\n\
                 \x20               for (var j = lid; j < inner; j = j + {wg}u) {{\n\
                 \x20                   acc = tb_acc_add(acc, tb_eval({}));\n\
                 \x20               }}\n\
                 \x20           }}\n\
                 \x20       }} else if (lid == 0u) {{\n\
                 \x20           acc = tb_acc_add(acc, tb_eval({}));\n\
                 \x20       }}\n\
                 \x20   }}\n\
                 \x20   tb_part[lid] = acc;\n\
                 \x20   workgroupBarrier();\n\
                 \x20   for (var st = {}u; st > 0u; st = st >> 1u) {{\n\
                 \x20       if (lid < st) {{ tb_part[lid] = tb_acc_merge(tb_part[lid], tb_part[lid + st]); }}\n\
                 \x20       workgroupBarrier();\n\
                 \x20   }}\n\
                 \x20   if (lid == 0u) {{ tb_write(ob, tb_acc_out(tb_part[0])); }}\n\
                 }}\n",
                args.join(", "),
                base_args.join(", "),
                wg / 2
            );
        }
    }
    s
}
