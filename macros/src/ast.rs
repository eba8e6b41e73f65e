//! Parses the attribute's arguments into a spec that keeps every original token, so later checks can
//! point at exactly what the user wrote. Parsing never stops at the first problem.

use crate::ctxt::Ctxt;
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitStr, Token};

/// The keys a spec may use.
pub const KEYS: &[&str] = &[
    "name",
    "inputs",
    "compute",
    "dims",
    "broadcast",
    "in_place",
    "support",
    "output",
    "reduce",
    "axes",
    "pairwise",
    "nearest",
];

/// A spec as written. A key whose value did not parse is `None` but listed in `written`, so that it
/// is not reported missing as well.
#[derive(Default)]
pub struct Spec {
    pub written: Vec<String>,
    /// Keys an unknown key was taken for (`ouptut` for `output`): its error names the key, so the
    /// key is not reported missing as well.
    pub guessed: Vec<String>,
    pub name: Option<LitStr>,
    pub inputs: Option<Listed>,
    pub compute: Option<Expr>,
    pub dims: Option<Expr>,
    pub broadcast: Option<Listed>,
    pub in_place: Option<Listed>,
    pub support: Option<Vec<LevelEntry>>,
    pub output: Option<Listed>,
    pub reduce: Option<Ident>,
    pub axes: Option<AxisList>,
    /// The bare `pairwise` flag, kept for its span.
    pub pairwise: Option<Ident>,
    /// `nearest = smallest | largest`.
    pub nearest: Option<Ident>,
}

/// `axes = [-1, 0]`: each axis with the span of its tokens.
pub struct AxisList {
    pub span: Span,
    pub items: Vec<(i64, Span)>,
}

/// A bracketed list of identifiers (`[a, b]`), with the span of the whole list.
pub struct Listed {
    pub span: Span,
    pub items: Vec<Ident>,
}

/// One `FL_3_0 = [u8, u16]` entry of `support(...)`.
pub struct LevelEntry {
    pub level: Ident,
    pub types: Listed,
}

pub fn parse(args: TokenStream, cx: &mut Ctxt) -> Spec {
    let mut spec = Spec::default();
    for entry in split_commas(args) {
        let mut it = entry.into_iter().peekable();
        let key = match it.next() {
            Some(TokenTree::Ident(k)) => k,
            Some(other) => {
                cx.error(
                    other,
                    "expected a key such as `inputs = [a, b]` or `support(...)`",
                );
                continue;
            }
            None => continue,
        };
        let key_name = key.to_string();
        let value: TokenStream;
        let next = it.next();
        if key_name == "pairwise" && next.is_some() {
            cx.error(
                &key,
                "`pairwise` is a flag: write it alone, without a value",
            );
            continue;
        }
        match next {
            // A flag: the key alone.
            None if key_name == "pairwise" => value = TokenStream::new(),
            Some(TokenTree::Punct(p)) if p.as_char() == '=' => {
                value = it.collect();
                if value.is_empty() {
                    cx.error(&key, format!("`{key_name} =` needs a value"));
                    continue;
                }
            }
            Some(TokenTree::Group(g))
                if g.delimiter() == Delimiter::Parenthesis && key_name == "support" =>
            {
                value = g.stream();
                if let Some(extra) = it.next() {
                    cx.error(
                        extra,
                        "unexpected tokens after `support(...)`; separate keys with commas",
                    );
                }
            }
            _ if !KEYS.contains(&key_name.as_str()) => {
                report_unknown(&key, &mut spec, cx);
                continue;
            }
            _ if key_name == "support" => {
                cx.error(&key, "expected `support(LEVEL = [types], ...)`");
                continue;
            }
            _ => {
                cx.error(&key, format!("expected `{key_name} = ...`"));
                continue;
            }
        }
        if spec.written.contains(&key_name) {
            cx.error(&key, format!("duplicate key `{key_name}`"));
            continue;
        }
        if KEYS.contains(&key_name.as_str()) {
            spec.written.push(key_name.clone());
        }
        macro_rules! once {
            ($field:ident, $parsed:expr) => {{
                if let Some(v) = $parsed {
                    spec.$field = Some(v);
                }
            }};
        }
        match key_name.as_str() {
            "name" => once!(name, value_of::<LitStr>(&key_name, value, cx)),
            "inputs" => once!(inputs, listed(value, cx)),
            "compute" => once!(compute, value_of::<Expr>(&key_name, value, cx)),
            "dims" => once!(dims, value_of::<Expr>(&key_name, value, cx)),
            "broadcast" => once!(broadcast, listed(value, cx)),
            "in_place" => once!(in_place, listed(value, cx)),
            "output" => once!(output, listed(value, cx)),
            "support" => once!(support, support(value, cx)),
            "reduce" => once!(reduce, value_of::<Ident>(&key_name, value, cx)),
            "axes" => once!(axes, axes(value, cx)),
            "pairwise" => spec.pairwise = Some(key.clone()),
            "nearest" => once!(nearest, value_of::<Ident>(&key_name, value, cx)),
            _ => report_unknown(&key, &mut spec, cx),
        }
    }
    spec
}

/// Reports an unknown key, and takes it for the key it likely meant, which is then not reported
/// missing too.
fn report_unknown(key: &Ident, spec: &mut Spec, cx: &mut Ctxt) {
    let (message, guess) = unknown_key(&key.to_string());
    cx.error(key, message);
    spec.guessed.extend(guess.map(str::to_owned));
}

/// The message for an unknown key, and the key it was likely meant to be: one spelled the same
/// but for case and underscores, or within a typo or two of it.
fn unknown_key(k: &str) -> (String, Option<&'static str>) {
    let squash = |s: &str| s.replace('_', "").to_ascii_lowercase();
    let near = KEYS
        .iter()
        .map(|key| (typos(&squash(key), &squash(k)), *key))
        .min()
        .filter(|&(d, key)| d <= (key.len() / 3).max(1));
    match near {
        Some((_, key)) => (
            format!("unknown key `{k}`; did you mean `{key}`?"),
            Some(key),
        ),
        None => (
            format!("unknown key `{k}`; expected one of: {}", KEYS.join(", ")),
            None,
        ),
    }
}

/// The edits that turn `a` into `b`: characters inserted, deleted, replaced, or two neighbours
/// swapped (the optimal string alignment distance).
fn typos(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Rows i-2, i-1 and i of the table of distances between prefixes.
    let mut rows = [
        vec![0; b.len() + 1],
        vec![0; b.len() + 1],
        (0..=b.len()).collect(),
    ];
    for i in 1..=a.len() {
        rows.rotate_left(1);
        rows[2][0] = i;
        for j in 1..=b.len() {
            let same = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[1][j] + 1)
                .min(rows[2][j - 1] + 1)
                .min(rows[1][j - 1] + same);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[0][j - 2] + 1);
            }
            rows[2][j] = d;
        }
    }
    rows[2][b.len()]
}

fn ok<T>(r: syn::Result<T>, cx: &mut Ctxt) -> Option<T> {
    r.map_err(|e| cx.syn_error(e)).ok()
}

/// Parses a key's value. A parse error is reported at the token that caused it: `~`, which C and
/// numpy users write for NOT, gets a hint; an expression that ends too early is reported at its
/// last token rather than at the whole attribute.
fn value_of<T: syn::parse::Parse>(key: &str, value: TokenStream, cx: &mut Ctxt) -> Option<T> {
    let err = match syn::parse2::<T>(value.clone()) {
        Ok(v) => return Some(v),
        Err(e) => e,
    };
    let tokens = flatten(value);
    if let Some(tilde) = tokens
        .iter()
        .find(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '~'))
    {
        cx.error(
            tilde,
            format!("`~` is not an operator in `{key}`; write `!x` for bitwise NOT, as in Rust"),
        );
        return None;
    }
    // syn reports a value that stops too early at the macro's call site: the whole attribute.
    let at_end = err.to_string().contains("end of input");
    match tokens.last() {
        Some(last) if at_end => cx.error(
            last,
            format!("`{key}` ends after `{last}`; expected an operand after it"),
        ),
        _ => cx.syn_error(err),
    }
    None
}

/// Every token of a stream, groups opened, so an error can point inside parentheses.
fn flatten(ts: TokenStream) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for tt in ts {
        match tt {
            TokenTree::Group(g) => {
                out.push(TokenTree::Group(g.clone()));
                out.extend(flatten(g.stream()));
            }
            other => out.push(other),
        }
    }
    out
}

/// Splits at top-level commas; groups keep their commas.
fn split_commas(ts: TokenStream) -> Vec<TokenStream> {
    let mut out = vec![TokenStream::new()];
    for tt in ts {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => out.push(TokenStream::new()),
            _ => out.last_mut().expect("never empty").extend([tt]),
        }
    }
    out.retain(|t| !t.is_empty());
    out
}

/// `[a, b, c]`: each element must be a plain identifier.
fn listed(value: TokenStream, cx: &mut Ctxt) -> Option<Listed> {
    let arr = match syn::parse2::<syn::ExprArray>(value.clone()) {
        Ok(a) => a,
        Err(_) => {
            cx.error(value, "expected a list in brackets, such as `[a, b]`");
            return None;
        }
    };
    let span = arr.bracket_token.span.join();
    let mut items = Vec::new();
    for e in &arr.elems {
        match e {
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                items.push(p.path.get_ident().cloned().expect("checked"));
            }
            other => cx.error(other, "expected a plain name"),
        }
    }
    Some(Listed { span, items })
}

/// `[-1, 0]`: integer literals, each optionally negated.
fn axes(value: TokenStream, cx: &mut Ctxt) -> Option<AxisList> {
    let arr = match syn::parse2::<syn::ExprArray>(value.clone()) {
        Ok(a) => a,
        Err(_) => {
            cx.error(
                value,
                "expected a list of axes in brackets, such as `[-1]` or `[0, 2]`",
            );
            return None;
        }
    };
    let span = arr.bracket_token.span.join();
    let mut items = Vec::new();
    for e in &arr.elems {
        let (neg, lit) = match e {
            Expr::Lit(l) => (false, &l.lit),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => match &*u.expr {
                Expr::Lit(l) => (true, &l.lit),
                other => {
                    cx.error(other, "expected an integer axis, such as `-1` or `0`");
                    continue;
                }
            },
            other => {
                cx.error(other, "expected an integer axis, such as `-1` or `0`");
                continue;
            }
        };
        match lit {
            syn::Lit::Int(i) if i.suffix().is_empty() => match i.base10_parse::<i64>() {
                Ok(v) => items.push((if neg { -v } else { v }, syn::spanned::Spanned::span(e))),
                Err(err) => cx.syn_error(err),
            },
            other => cx.error(
                other,
                "expected an integer axis without a suffix, such as `-1`",
            ),
        }
    }
    Some(AxisList { span, items })
}

fn support(value: TokenStream, cx: &mut Ctxt) -> Option<Vec<LevelEntry>> {
    let parser = Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated;
    let entries = ok(parser.parse2(value), cx)?;
    let mut out = Vec::new();
    for e in entries {
        let Some(level) = e.path.get_ident().cloned() else {
            cx.error(
                &e.path,
                "expected a feature level such as `FL_3_0` or `EXT`",
            );
            continue;
        };
        if let Some(types) = listed(quote::ToTokens::into_token_stream(e.value), cx) {
            out.push(LevelEntry { level, types });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{typos, unknown_key};

    #[test]
    fn typos_count_edits_and_swaps() {
        assert_eq!(typos("output", "output"), 0);
        assert_eq!(typos("output", "ouptut"), 1); // two neighbours swapped
        assert_eq!(typos("compute", "compte"), 1);
        assert_eq!(typos("reduce", "reduced"), 1);
        assert_eq!(typos("axes", "axis"), 1);
        assert_eq!(typos("", "abc"), 3);
        assert_eq!(typos("support", "output"), 4);
    }

    #[test]
    fn unknown_keys_suggest_the_nearest_key() {
        assert_eq!(unknown_key("ouptut").1, Some("output"));
        assert_eq!(unknown_key("inplace").1, Some("in_place"));
        assert_eq!(unknown_key("Compute").1, Some("compute"));
        assert_eq!(unknown_key("suport").1, Some("support"));
        assert_eq!(unknown_key("nearset").1, Some("nearest"));
        assert_eq!(unknown_key("colour").1, None);
        assert!(
            unknown_key("colour")
                .0
                .contains("expected one of: name, inputs")
        );
    }
}
