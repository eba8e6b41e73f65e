//! Element classes: how a kernel sees an element (its width, and signedness where shifts depend on
//! it), and the per-class WGSL helpers where the semantics of shifts, bool and bit counts live.

use crate::DataType;

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
