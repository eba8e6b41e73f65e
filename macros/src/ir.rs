//! The lowered `compute` expression. Every kernel (the CPU one today, WGSL ones alongside) is generated
//! from this one tree, so the back ends cannot disagree about what an op computes.

use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{BinOp as SynBin, Expr as SynExpr, Ident, UnOp};
use tensorbits_core::{Affine, Counts};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    And,
    Or,
    Xor,
    Shl,
    Shr,
    WrappingShl,
    WrappingShr,
}

impl BinOp {
    pub fn is_shift(self) -> bool {
        !matches!(self, BinOp::And | BinOp::Or | BinOp::Xor)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::WrappingShl => "wrapping_shl",
            BinOp::WrappingShr => "wrapping_shr",
        }
    }
}

#[derive(Clone, Debug)]
pub enum Expr {
    Input(usize),
    Lit(u64, Span),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    CountOnes(Box<Expr>),
}

const SUPPORTED: &str = "supported: input names, integer literals, parentheses, `!x`, `x & y`, `x | y`, \
`x ^ y`, `x << y`, `x >> y`, `x.wrapping_shl(y)`, `x.wrapping_shr(y)`, `x.count_ones()`";

const AFFINE: &str = "`compute` may be an affine function of one bit count: `C0 + C1 * x.count_ones()` or \
`C0 - C1 * x.count_ones()` (either order of terms, `C1 *` optional), with integer literals or `BITS` for C0 \
and an integer literal for C1";

/// What arithmetic `compute` takes, for messages about other operators.
const ARITHMETIC: &str = "`+`, `-` and `*` only make an affine function of one bit count, such as \
`BITS - 2 * (a ^ b).count_ones()` or `C0 + C1 * x.count_ones()`";

/// An affine `compute` as written: the affine function and the span of its arithmetic.
pub type AffineAt = (Affine, Span);

/// Lowers `compute`, reporting every unsupported token. `used[i]` is set for each input referenced.
/// An affine function of one bit count gives the count's expression and the function.
pub fn lower(
    e: &SynExpr,
    inputs: &[Ident],
    used: &mut [bool],
    cx: &mut Ctxt,
) -> Option<(Expr, Option<AffineAt>)> {
    let e = strip(e);
    let SynExpr::Binary(b) = e else {
        return Some((lower_inner(e, inputs, used, cx, true)?, None));
    };
    let sign = match b.op {
        SynBin::Add(_) => 1,
        SynBin::Sub(_) => -1,
        SynBin::Mul(_) => 0,
        _ => return Some((lower_inner(e, inputs, used, cx, true)?, None)),
    };
    // Arithmetic without a bit count is no affine function: the operator is the mistake.
    let counted = |x: &SynExpr| {
        let x = strip(x);
        is_count_call(x)
            || matches!(x, SynExpr::Binary(m) if matches!(m.op, SynBin::Mul(_))
                && (is_count_call(strip(&m.left)) || is_count_call(strip(&m.right))))
    };
    if sign != 0 && !counted(&b.left) && !counted(&b.right) || sign == 0 && !counted(e) {
        return Some((lower_inner(e, inputs, used, cx, true)?, None));
    }
    let at = b.op.span();
    let mut count = |x: &SynExpr, cx: &mut Ctxt| lower_inner(x, inputs, used, cx, true);
    if sign == 0 {
        // `C1 * x.count_ones()` or `x.count_ones() * C1`.
        return match term(e, cx)? {
            Term::Count(scale, x) => {
                let c = count(x, cx)?;
                Some((c, Some((affine(0, 0, scale), at))))
            }
            _ => {
                cx.error_at(at, AFFINE);
                None
            }
        };
    }
    let (l, r) = (term(&b.left, cx), term(&b.right, cx));
    let (c0, (scale, x), count_right) = match (l?, r?) {
        (Term::Const(c), Term::Count(m, x)) => (c, (m, x), true),
        (Term::Count(m, x), Term::Const(c)) => (c, (m, x), false),
        (Term::Count(..), Term::Count(..)) => {
            let verb = if sign > 0 { "adds" } else { "subtracts" };
            cx.error_at(at, format!("`compute` {verb} two bit counts; {AFFINE}"));
            return None;
        }
        _ => {
            cx.error_at(at, AFFINE);
            return None;
        }
    };
    let x = count(x, cx)?;
    // `C0 + T`, `T + C0`, `C0 - T`, `T - C0`.
    let (c0_sign, scale_sign) = match (sign, count_right) {
        (1, _) => (1, 1),
        (_, true) => (1, -1),
        _ => (-1, 1),
    };
    let (lit, bits) = match c0 {
        Const::Lit(v) => (c0_sign * v, 0),
        Const::Bits => (0, c0_sign),
    };
    Some((x, Some((affine(lit, bits, scale_sign * scale), at))))
}

const RATIO: &str = "a ratio `compute` is `N / D`, each side a sum of bit counts of the two inputs' \
bits and integer constants, such as `(a & b).count_ones() / (a | b).count_ones()` or \
`2 * (a & b).count_ones() / (a.count_ones() + b.count_ones())`";

/// The parts of a ratio `compute` (`N / D` at its top): the division's span and both sides.
pub fn ratio_sides(e: &SynExpr) -> Option<(Span, &SynExpr, &SynExpr)> {
    match strip(e) {
        SynExpr::Binary(b) if matches!(b.op, SynBin::Div(_)) => {
            Some((b.op.span(), &*b.left, &*b.right))
        }
        _ => None,
    }
}

/// Lowers one side of a ratio: a sum of terms `C * X.count_ones()`, `X.count_ones()`, integer
/// literals and `BITS`, each `X` a function of the two inputs' bits (`&`, `|`, `^`, `!`), into
/// its multiples of the row's counts.
pub fn lower_counts(
    e: &SynExpr,
    inputs: &[Ident],
    used: &mut [bool],
    cx: &mut Ctxt,
) -> Option<Counts> {
    let e = strip(e);
    if let SynExpr::Binary(b) = e
        && matches!(b.op, SynBin::Add(_) | SynBin::Sub(_))
    {
        let l = lower_counts(&b.left, inputs, used, cx);
        let r = lower_counts(&b.right, inputs, used, cx);
        let r = match b.op {
            SynBin::Sub(_) => r.map(|r| scaled(r, -1)),
            _ => r,
        };
        return Some(l?.plus(r?));
    }
    if let SynExpr::Unary(u) = e
        && matches!(u.op, UnOp::Neg(_))
        && !matches!(strip(&u.expr), SynExpr::Lit(_))
    {
        return lower_counts(&u.expr, inputs, used, cx).map(|c| scaled(c, -1));
    }
    match term(e, cx)? {
        Term::Const(Const::Lit(v)) => Some(Counts {
            constant: v,
            ..Counts::default()
        }),
        Term::Const(Const::Bits) => Some(Counts {
            bits: 1,
            ..Counts::default()
        }),
        Term::Count(scale, x) => {
            let c = lower_inner(x, inputs, used, cx, true)?;
            match c.truth_table() {
                Some(t) if inputs.len() == 2 => Some(Counts::of_table(t, scale)),
                _ => {
                    cx.error(
                        x,
                        format!("this count is not of a function of the two inputs' bits; {RATIO}"),
                    );
                    None
                }
            }
        }
        Term::Other => {
            cx.error(
                e,
                format!("each side of a ratio is a sum of bit counts; {RATIO}"),
            );
            // Report what else is wrong inside it, as a count would be.
            None
        }
    }
}

fn scaled(c: Counts, k: i64) -> Counts {
    Counts {
        constant: c.constant * k,
        bits: c.bits * k,
        a: c.a * k,
        b: c.b * k,
        both: c.both * k,
    }
}

/// What a ratio op's kernels compute: `(a & b).count_ones()`, with the rows' counts, all a ratio
/// of counts of two inputs needs.
pub fn ratio_kernel_expr() -> Expr {
    Expr::CountOnes(Box::new(Expr::Bin(
        BinOp::And,
        Box::new(Expr::Input(0)),
        Box::new(Expr::Input(1)),
    )))
}

fn affine(constant: i64, bits: i64, scale: i64) -> Affine {
    Affine {
        constant,
        bits,
        scale,
    }
}

/// A constant of an affine `compute`.
#[derive(Clone, Copy)]
enum Const {
    Lit(i64),
    Bits,
}

/// A term of an affine `compute`: a constant, or a multiple of a bit count (the count's expression
/// still to lower).
enum Term<'e> {
    Const(Const),
    Count(i64, &'e SynExpr),
    Other,
}

fn strip(e: &SynExpr) -> &SynExpr {
    match e {
        SynExpr::Paren(p) => strip(&p.expr),
        SynExpr::Group(g) => strip(&g.expr),
        other => other,
    }
}

fn is_count_call(e: &SynExpr) -> bool {
    matches!(e, SynExpr::MethodCall(m) if m.method == "count_ones")
}

/// Classifies a term; `None` after an error (a literal that does not fit).
fn term<'e>(e: &'e SynExpr, cx: &mut Ctxt) -> Option<Term<'e>> {
    let e = strip(e);
    Some(match e {
        SynExpr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) if i.suffix().is_empty() => match i.base10_parse::<i64>() {
            Ok(v) => Term::Const(Const::Lit(v)),
            Err(_) => {
                cx.error(i, "this constant does not fit in an i64");
                return None;
            }
        },
        SynExpr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match term(&u.expr, cx)? {
            Term::Const(Const::Lit(v)) => Term::Const(Const::Lit(-v)),
            _ => Term::Other,
        },
        SynExpr::Path(p) if p.path.is_ident("BITS") => Term::Const(Const::Bits),
        SynExpr::MethodCall(_) if is_count_call(e) => Term::Count(1, e),
        SynExpr::Binary(b) if matches!(b.op, SynBin::Mul(_)) => {
            let (l, r) = (strip(&b.left), strip(&b.right));
            let (c, x) = match (is_count_call(l), is_count_call(r)) {
                (false, true) => (l, r),
                (true, false) => (r, l),
                _ => return Some(Term::Other),
            };
            match term(c, cx)? {
                Term::Const(Const::Lit(0)) => {
                    cx.error(
                        c,
                        "a multiplier of 0 makes `compute` a constant; remove the count",
                    );
                    return None;
                }
                Term::Const(Const::Lit(v)) if v > 0 => Term::Count(v, x),
                Term::Const(Const::Bits) => {
                    cx.error(c, format!("the multiplier of the bit count must be an integer literal, not `BITS`; {AFFINE}"));
                    return None;
                }
                _ => {
                    cx.error(c, format!("the multiplier of the bit count must be a positive integer literal; {AFFINE}"));
                    return None;
                }
            }
        }
        _ => Term::Other,
    })
}

/// `compute` as the user wrote it, parentheses included, on one line.
pub fn source_text(e: &SynExpr) -> String {
    match e {
        SynExpr::Paren(p) => format!("({})", source_text(&p.expr)),
        SynExpr::Group(g) => source_text(&g.expr),
        SynExpr::Binary(b) => {
            let op = &b.op;
            format!(
                "{} {} {}",
                source_text(&b.left),
                quote!(#op),
                source_text(&b.right)
            )
        }
        SynExpr::Unary(u) => {
            let op = &u.op;
            format!("{}{}", quote!(#op), source_text(&u.expr))
        }
        SynExpr::MethodCall(m) => {
            let args: Vec<String> = m.args.iter().map(source_text).collect();
            format!(
                "{}.{}({})",
                source_text(&m.receiver),
                m.method,
                args.join(", ")
            )
        }
        other => quote!(#other).to_string(),
    }
}

fn lower_inner(
    e: &SynExpr,
    inputs: &[Ident],
    used: &mut [bool],
    cx: &mut Ctxt,
    root: bool,
) -> Option<Expr> {
    match e {
        SynExpr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            let id = p.path.get_ident().expect("checked");
            match inputs.iter().position(|i| i == id) {
                Some(k) => {
                    used[k] = true;
                    Some(Expr::Input(k))
                }
                None if id == "BITS" => {
                    cx.error(
                        id,
                        format!(
                            "`BITS` is a constant of an affine `compute`, not an operand; {AFFINE}"
                        ),
                    );
                    None
                }
                None => {
                    let names: Vec<String> = inputs.iter().map(|i| format!("`{i}`")).collect();
                    cx.error(
                        id,
                        format!(
                            "unknown name `{id}` in `compute`; the inputs are {}",
                            names.join(", ")
                        ),
                    );
                    None
                }
            }
        }
        SynExpr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) if i.suffix().is_empty() => match i.base10_parse::<u64>() {
                Ok(v) => Some(Expr::Lit(v, i.span())),
                Err(e) => {
                    cx.syn_error(e);
                    None
                }
            },
            syn::Lit::Int(i) => {
                cx.error(
                    i,
                    "literals in `compute` take the element type; remove the suffix",
                );
                None
            }
            other => {
                cx.error(
                    other,
                    format!("only integer literals are allowed in `compute`; {SUPPORTED}"),
                );
                None
            }
        },
        SynExpr::Paren(p) => lower_inner(&p.expr, inputs, used, cx, root),
        SynExpr::Group(g) => lower_inner(&g.expr, inputs, used, cx, root),
        SynExpr::Unary(u) => match u.op {
            UnOp::Not(_) => Some(Expr::Not(Box::new(lower_inner(
                &u.expr, inputs, used, cx, false,
            )?))),
            other => {
                let sym = quote!(#other).to_string();
                cx.error(
                    other,
                    format!("unsupported operator `{sym}` in `compute`; {SUPPORTED}"),
                );
                let _ = lower_inner(&u.expr, inputs, used, cx, false);
                None
            }
        },
        SynExpr::Binary(b) => {
            let op = match b.op {
                SynBin::BitAnd(_) => Some(BinOp::And),
                SynBin::BitOr(_) => Some(BinOp::Or),
                SynBin::BitXor(_) => Some(BinOp::Xor),
                SynBin::Shl(_) => Some(BinOp::Shl),
                SynBin::Shr(_) => Some(BinOp::Shr),
                other => {
                    let sym = quote!(#other).to_string();
                    cx.error(
                        other,
                        format!(
                            "unsupported operator `{sym}` in `compute`; {SUPPORTED}; {ARITHMETIC}"
                        ),
                    );
                    None
                }
            };
            // Lower both sides even after an error, so every problem is reported; under an
            // unsupported operator a bit count is part of the same mistake, not a second one.
            let root = op.is_none();
            let l = lower_inner(&b.left, inputs, used, cx, root);
            let r = lower_inner(&b.right, inputs, used, cx, root);
            Some(Expr::Bin(op?, Box::new(l?), Box::new(r?)))
        }
        SynExpr::MethodCall(m) => {
            if let Some(t) = &m.turbofish {
                cx.error(t, "type arguments are not allowed in `compute`");
            }
            let recv = lower_inner(&m.receiver, inputs, used, cx, false);
            let args: Vec<Option<Expr>> = m
                .args
                .iter()
                .map(|a| lower_inner(a, inputs, used, cx, false))
                .collect();
            let method = m.method.to_string();
            let want = match method.as_str() {
                "wrapping_shl" | "wrapping_shr" => 1,
                "count_ones" => 0,
                _ => {
                    cx.error(
                        &m.method,
                        format!("unsupported method `{method}` in `compute`; {SUPPORTED}"),
                    );
                    return None;
                }
            };
            if m.args.len() != want {
                cx.error(
                    &m.method,
                    format!("`{method}` takes {want} argument(s), got {}", m.args.len()),
                );
                return None;
            }
            if method == "count_ones" && !root {
                cx.error(
                    &m.method,
                    "`count_ones()` must be the outermost operation of `compute`: it yields a count, not an element",
                );
                return None;
            }
            let recv = Box::new(recv?);
            match method.as_str() {
                "count_ones" => Some(Expr::CountOnes(recv)),
                "wrapping_shl" => Some(Expr::Bin(
                    BinOp::WrappingShl,
                    recv,
                    Box::new(args.into_iter().next()??),
                )),
                _ => Some(Expr::Bin(
                    BinOp::WrappingShr,
                    recv,
                    Box::new(args.into_iter().next()??),
                )),
            }
        }
        other => {
            cx.error_at(
                other.span(),
                format!("unsupported expression in `compute`; {SUPPORTED}"),
            );
            None
        }
    }
}

impl Expr {
    /// Whether the result is a bit count rather than an element.
    pub fn is_count(&self) -> bool {
        matches!(self, Expr::CountOnes(_))
    }

    /// The first shift (or `count_ones`) in the tree, for messages about types that lack it.
    pub fn first_int_only_op(&self) -> Option<&'static str> {
        match self {
            Expr::CountOnes(_) => Some("count_ones()"),
            Expr::Bin(op, l, r) => {
                if op.is_shift() {
                    Some(op.symbol())
                } else {
                    l.first_int_only_op().or_else(|| r.first_int_only_op())
                }
            }
            Expr::Not(e) => e.first_int_only_op(),
            _ => None,
        }
    }

    /// The first shift in the tree.
    pub fn first_shift(&self) -> Option<&'static str> {
        match self {
            Expr::Bin(op, _, _) if op.is_shift() => Some(op.symbol()),
            Expr::Bin(_, l, r) => l.first_shift().or_else(|| r.first_shift()),
            Expr::Not(e) | Expr::CountOnes(e) => e.first_shift(),
            _ => None,
        }
    }

    /// Every literal with its span.
    pub fn literals(&self, out: &mut Vec<(u64, Span)>) {
        match self {
            Expr::Lit(v, s) => out.push((*v, *s)),
            Expr::Bin(_, l, r) => {
                l.literals(out);
                r.literals(out);
            }
            Expr::Not(e) | Expr::CountOnes(e) => e.literals(out),
            Expr::Input(_) => {}
        }
    }

    /// Rust code computing this tree from `x: [W; N]`, through the runtime's word operations (where
    /// the semantics of shifts and `bool` live).
    pub fn to_rust(&self) -> TokenStream {
        let w = quote!(::tensorbits::__private::Word);
        let iw = quote!(::tensorbits::__private::IntWord);
        match self {
            Expr::Input(k) => quote!(#w::load(x[#k])),
            Expr::Lit(v, _) => quote!(<W as #w>::lit(#v)),
            Expr::Not(e) => {
                let e = e.to_rust();
                quote!(#w::not(#e))
            }
            Expr::CountOnes(e) => {
                let e = e.to_rust();
                quote!(#iw::count_ones(#e))
            }
            Expr::Bin(op, l, r) => {
                let (l, r) = (l.to_rust(), r.to_rust());
                match op {
                    BinOp::And => quote!(#w::and(#l, #r)),
                    BinOp::Or => quote!(#w::or(#l, #r)),
                    BinOp::Xor => quote!(#w::xor(#l, #r)),
                    BinOp::Shl => quote!(#iw::shl(#l, #r)),
                    BinOp::Shr => quote!(#iw::shr(#l, #r)),
                    BinOp::WrappingShl => quote!(#iw::wrapping_shl(#l, #r)),
                    BinOp::WrappingShr => quote!(#iw::wrapping_shr(#l, #r)),
                }
            }
        }
    }
}

impl Expr {
    /// For a count whose expression is bit-local (each bit of the result depends only on the same
    /// bit of the inputs: no shifts): the bits of that expression at all-zero inputs, `width` bits
    /// wide. What each bit of zeroed padding adds to the count; `None` with shifts.
    pub fn zero_bits(&self, width: u32) -> Option<u64> {
        let mask = u64::MAX >> (64 - width);
        match self {
            Expr::CountOnes(e) => e.zero_bits(width),
            Expr::Input(_) => Some(0),
            Expr::Lit(v, _) => Some(v & mask),
            Expr::Not(e) => Some(!e.zero_bits(width)? & mask),
            Expr::Bin(op, l, r) => {
                let (l, r) = (l.zero_bits(width)?, r.zero_bits(width)?);
                match op {
                    BinOp::And => Some(l & r),
                    BinOp::Or => Some(l | r),
                    BinOp::Xor => Some(l ^ r),
                    _ => None,
                }
            }
        }
    }

    /// Whether the expression is the same at every width: only `&`, `|`, `^`, `!` on inputs, no
    /// literals, shifts or counts. Such ops can run on whole words.
    pub fn is_width_agnostic(&self) -> bool {
        match self {
            Expr::Input(_) => true,
            Expr::Lit(..) | Expr::CountOnes(_) => false,
            Expr::Not(e) => e.is_width_agnostic(),
            Expr::Bin(op, l, r) => !op.is_shift() && l.is_width_agnostic() && r.is_width_agnostic(),
        }
    }

    /// Whether the expression is a bit count of a width-agnostic expression: its sum over the lanes
    /// of a 64-bit word is its count of the whole word, so pairwise sums can run on whole words.
    pub fn is_width_agnostic_count(&self) -> bool {
        matches!(self, Expr::CountOnes(e) if e.is_width_agnostic())
    }

    /// For a bit count of a width-agnostic expression of two inputs: the truth table of the
    /// expression under the count, bit `2 * a + b` its value where the bit of the first input is
    /// `a` and that of the second `b` (`a ^ b` is `0b0110`).
    pub fn truth_table(&self) -> Option<u8> {
        fn table(e: &Expr) -> Option<u8> {
            Some(match e {
                Expr::Input(0) => 0b1100,
                Expr::Input(1) => 0b1010,
                Expr::Not(e) => !table(e)? & 0xF,
                Expr::Bin(BinOp::And, l, r) => table(l)? & table(r)?,
                Expr::Bin(BinOp::Or, l, r) => table(l)? | table(r)?,
                Expr::Bin(BinOp::Xor, l, r) => table(l)? ^ table(r)?,
                _ => return None,
            })
        }
        match self {
            Expr::CountOnes(e) if e.is_width_agnostic() => table(e),
            _ => None,
        }
    }

    /// For a width-agnostic count: the Rust source of the expression under `count_ones()` over any
    /// `Lanes` (whole 64-bit words, or vectors of them) `x[0]`, `x[1]`, ...
    pub fn to_lanes(&self) -> TokenStream {
        let l = quote!(::tensorbits::__private::Lanes);
        match self {
            Expr::CountOnes(e) => e.to_lanes(),
            Expr::Input(k) => quote!(x[#k]),
            Expr::Not(e) => {
                let e = e.to_lanes();
                quote!(#l::not(#e))
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.to_lanes(), b.to_lanes());
                match op {
                    BinOp::And => quote!(#l::and(#a, #b)),
                    BinOp::Or => quote!(#l::or(#a, #b)),
                    // Shifts and literals are never width-agnostic (see `is_width_agnostic`).
                    _ => quote!(#l::xor(#a, #b)),
                }
            }
            Expr::Lit(..) => quote!(x[0]),
        }
    }

    /// WGSL computing this tree from `x0..`, through the class's `tb_*` helpers (where the GPU side of
    /// the semantics of shifts and `bool` live, in tensorbits-core's wgsl.rs).
    pub fn to_wgsl(&self, class: tensorbits_core::wgsl::WordClass) -> String {
        match self {
            Expr::Input(k) => format!("tb_load(x{k})"),
            Expr::Lit(v, _) => class.literal(*v),
            Expr::Not(e) => format!("tb_not({})", e.to_wgsl(class)),
            Expr::CountOnes(e) => format!("tb_popcount({})", e.to_wgsl(class)),
            Expr::Bin(op, l, r) => {
                let f = match op {
                    BinOp::And => "tb_and",
                    BinOp::Or => "tb_or",
                    BinOp::Xor => "tb_xor",
                    BinOp::Shl => "tb_shl",
                    BinOp::Shr => "tb_shr",
                    BinOp::WrappingShl => "tb_wshl",
                    BinOp::WrappingShr => "tb_wshr",
                };
                format!("{f}({}, {})", l.to_wgsl(class), r.to_wgsl(class))
            }
        }
    }

    /// The WGSL function `tb_eval` for `arity` inputs of `class`.
    pub fn wgsl_eval(&self, class: tensorbits_core::wgsl::WordClass, arity: usize) -> String {
        let t = class.value_type();
        let params: Vec<String> = (0..arity).map(|k| format!("x{k}: {t}")).collect();
        let ret = if self.is_count() { "u32" } else { t };
        format!(
            "fn tb_eval({}) -> {ret} {{ return {}; }}",
            params.join(", "),
            self.to_wgsl(class)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(src: &str) -> Option<u8> {
        let e: SynExpr = syn::parse_str(src).unwrap();
        let inputs: Vec<Ident> = vec![syn::parse_quote!(a), syn::parse_quote!(b)];
        let mut cx = Ctxt::default();
        let (expr, _) = lower(&e, &inputs, &mut [false; 2], &mut cx).unwrap();
        assert!(cx.finish().is_none(), "{src}");
        expr.truth_table()
    }

    /// Every way of writing an expression gives its truth table, which picks the runtime's pair
    /// kernel: one written differently from the kernel's own must still find it, and one with
    /// another table must not.
    #[test]
    fn truth_tables_of_counts() {
        for (src, t) in [
            ("(a ^ b).count_ones()", Some(0b0110)),
            ("(!a ^ !b).count_ones()", Some(0b0110)),
            ("(!(a ^ b)).count_ones()", Some(0b1001)),
            ("(!a ^ b).count_ones()", Some(0b1001)),
            ("(b & a).count_ones()", Some(0b1000)),
            ("(!(!a | !b)).count_ones()", Some(0b1000)),
            ("(b | a).count_ones()", Some(0b1110)),
            ("(a & !b).count_ones()", Some(0b0100)),
            ("(!(a ^ b) | (a & !b)).count_ones()", Some(0b1101)),
            ("(a.wrapping_shl(1) ^ b).count_ones()", None),
            ("a ^ b", None),
        ] {
            assert_eq!(table(src), t, "{src}");
        }
    }
}
