//! The lowered `compute` expression. Every kernel (the CPU one today, WGSL ones alongside) is generated
//! from this one tree, so the back ends cannot disagree about what an op computes.

use crate::ctxt::Ctxt;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{BinOp as SynBin, Expr as SynExpr, Ident, UnOp};

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

/// Lowers `compute`, reporting every unsupported token. `used[i]` is set for each input referenced.
pub fn lower(e: &SynExpr, inputs: &[Ident], used: &mut [bool], cx: &mut Ctxt) -> Option<Expr> {
    let root = lower_inner(e, inputs, used, cx, true)?;
    Some(root)
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
                        format!("unsupported operator `{sym}` in `compute`; {SUPPORTED}"),
                    );
                    None
                }
            };
            // Lower both sides even after an error, so every problem is reported.
            let l = lower_inner(&b.left, inputs, used, cx, false);
            let r = lower_inner(&b.right, inputs, used, cx, false);
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

/// Where a sub-expression is printed, to decide its parentheses.
#[derive(Clone, Copy, PartialEq)]
enum Ctx {
    Top,
    Left(BinOp),
    Other,
}

impl Expr {
    /// The expression as Rust source. Nested binary operators are parenthesised unless they chain the
    /// same operator on the left (`a ^ b ^ c`), so mixed `&`/`|` never depends on precedence to read.
    pub fn to_text(&self, names: &[Ident]) -> String {
        self.text(names, Ctx::Top)
    }

    fn text(&self, names: &[Ident], ctx: Ctx) -> String {
        match self {
            Expr::Input(k) => names[*k].to_string(),
            Expr::Lit(v, _) => v.to_string(),
            Expr::Not(e) => format!("!{}", e.text(names, Ctx::Other)),
            Expr::CountOnes(e) => format!("{}.count_ones()", e.text(names, Ctx::Other)),
            Expr::Bin(op @ (BinOp::WrappingShl | BinOp::WrappingShr), l, r) => {
                format!(
                    "{}.{}({})",
                    l.text(names, Ctx::Other),
                    op.symbol(),
                    r.text(names, Ctx::Top)
                )
            }
            Expr::Bin(op, l, r) => {
                let s = format!(
                    "{} {} {}",
                    l.text(names, Ctx::Left(*op)),
                    op.symbol(),
                    r.text(names, Ctx::Other)
                );
                if ctx == Ctx::Top || ctx == Ctx::Left(*op) {
                    s
                } else {
                    format!("({s})")
                }
            }
        }
    }
}

impl Expr {
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
