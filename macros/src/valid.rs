//! Checks a parsed spec and builds the model that expansion works from. Each rule is a comment and a
//! spanned error; all of them run, so every mistake is reported at once.

use crate::ast::{Listed, Spec};
use crate::ctxt::Ctxt;
use crate::ir;
use proc_macro2::Span;
use std::collections::BTreeMap;
use syn::{Expr, Ident};
use tensorbits_core::{
    Affine, BroadcastMode, DataType, FeatureLevel, MAX_INPUTS, MAX_RANK, Nearest, Ratio, ReduceOp,
};

/// A checked spec.
pub struct Model {
    pub name: String,
    pub inputs: Vec<Ident>,
    pub compute: ir::Expr,
    pub compute_text: String,
    pub min_rank: u8,
    pub max_rank: u8,
    pub broadcast: Vec<BroadcastMode>,
    pub in_place: Vec<usize>,
    /// Declared levels, lowest first, each with its complete type set.
    pub support: Vec<(FeatureLevel, Vec<DataType>)>,
    pub output: Option<Vec<DataType>>,
    /// How the element-wise results are reduced, if they are.
    pub reduce: Option<ReduceOp>,
    /// The default axes of a reduction; `None` is all axes.
    pub axes: Option<Vec<i64>>,
    pub pairwise: bool,
    /// For an affine `compute`: the function of the count that `compute` holds.
    pub affine: Option<Affine>,
    /// For a ratio `compute` (`N / D`): the ratio; `compute` is then what the kernels count.
    pub ratio: Option<Ratio>,
    /// Which values knn returns first.
    pub nearest: Nearest,
}

impl Model {
    /// Every type supported at some level.
    pub fn all_types(&self) -> Vec<DataType> {
        let mut v = self.support.last().map(|s| s.1.clone()).unwrap_or_default();
        v.sort();
        v
    }

    /// Types at `level` (those of the highest declared level not above it).
    pub fn types_at(&self, level: FeatureLevel) -> Vec<DataType> {
        self.support
            .iter()
            .rev()
            .find(|(l, _)| *l <= level)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    }
}

pub fn check(spec: &Spec, struct_name: &Ident, cx: &mut Ctxt) -> Option<Model> {
    let site = Span::call_site();
    // Required keys: without them nothing can be generated. A key written with a value that did not
    // parse has its own error already.
    let missing = |key: &str| !spec.written.iter().chain(&spec.guessed).any(|k| k == key);
    if missing("inputs") {
        cx.error_at(site, "missing key `inputs`, such as `inputs = [a, b]`");
    }
    if missing("compute") {
        cx.error_at(site, "missing key `compute`, such as `compute = a ^ b`");
    }
    if missing("support") {
        cx.error_at(
            site,
            "missing key `support(...)`, such as `support(FL_3_0 = [u8, u16, u32])`",
        );
    }

    let inputs = spec
        .inputs
        .as_ref()
        .map(|l| check_inputs(l, spec.pairwise.is_some(), cx))
        .unwrap_or_default();
    let mut used = vec![false; inputs.len()];
    // A ratio `N / D`: its kernels count `a & b`, and the ratio comes from that and the rows'
    // counts.
    let sides = spec.compute.as_ref().and_then(ir::ratio_sides);
    let mut ratio = None;
    let lowered = match sides {
        Some((at, n, d)) => {
            let num = ir::lower_counts(n, &inputs, &mut used, cx);
            let den = ir::lower_counts(d, &inputs, &mut used, cx);
            ratio = num.zip(den).map(|(num, den)| (Ratio { num, den }, at));
            ratio.map(|_| (ir::ratio_kernel_expr(), None))
        }
        None => spec
            .compute
            .as_ref()
            .and_then(|e| ir::lower(e, &inputs, &mut used, cx)),
    };
    let affine = lowered.as_ref().and_then(|l| l.1);
    let compute = lowered.map(|l| l.0);
    // The arity is the number of inputs: one that `compute` never reads is a mistake.
    if compute.is_some() {
        for (id, u) in inputs.iter().zip(&used) {
            if !u {
                cx.error(id, format!("input `{id}` is not used by `compute`; the arity is the number of inputs, so every input must appear"));
            }
        }
    }
    let pairwise = spec.pairwise.is_some();
    // Every other key is still checked after a bad `dims`, so all mistakes are reported at once.
    // Pairwise inputs are `[..., M, K]`: at least two dimensions.
    let default_ranks = (if pairwise { 2 } else { 0 }, MAX_RANK as u8);
    let ranks = spec
        .dims
        .as_ref()
        .map_or(Some(default_ranks), |d| check_dims(d, cx));
    if let (true, Some((lo, _)), Some(d)) = (pairwise, ranks, &spec.dims)
        && lo < 2
    {
        cx.error(
            d,
            "a pairwise op's inputs are `[..., M, K]`, with at least two dimensions: its `dims` start at 2 or more",
        );
    }
    let broadcast = if pairwise {
        // The leading dimensions of a pairwise op always broadcast numpy-style.
        if let Some(b) = &spec.broadcast {
            cx.error_at(
                b.span,
                "a pairwise op broadcasts the dimensions before its last two numpy-style, always; remove `broadcast`",
            );
        }
        Some(Vec::new())
    } else if spec.broadcast.is_none() && !missing("broadcast") {
        None // written, and its error reported
    } else if sides.is_some() && spec.broadcast.is_none() {
        // A ratio needs `pairwise` (its error says so), not a broadcast.
        Some(Vec::new())
    } else {
        check_broadcast(
            spec.broadcast.as_ref(),
            inputs.len(),
            spec.inputs.is_some(),
            cx,
        )
    };
    let support = spec
        .support
        .as_ref()
        .map(|s| check_support(s, cx))
        .unwrap_or_default();
    let is_count = compute.as_ref().is_some_and(ir::Expr::is_count);
    let output = if spec.output.is_none() && !missing("output") {
        None // written, and its error reported
    } else if sides.is_some() {
        check_ratio(spec, sides.map(|s| s.0), cx)
    } else {
        check_output(spec.output.as_ref(), is_count, compute.is_some(), cx)
    };
    check_affine(spec, affine, output.as_deref(), cx);
    let nearest = match (&spec.nearest, sides) {
        // A ratio is a similarity: the largest first, unless the spec says.
        (None, Some(_)) => Nearest::Largest,
        _ => check_nearest(spec, cx),
    };
    let in_place = spec
        .in_place
        .as_ref()
        .map(|l| check_in_place(l, &inputs, is_count, cx))
        .unwrap_or_default();
    if let (Some(c), Some(s)) = (&compute, &spec.support) {
        check_types_against_compute(c, s, cx);
    }
    let reduce = check_reduce(
        spec,
        inputs.len(),
        compute.as_ref().map(ir::Expr::is_count),
        ranks,
        support.as_deref(),
        output.as_deref().filter(|_| sides.is_none()),
        cx,
    );
    let compute_text = spec
        .compute
        .as_ref()
        .map(ir::source_text)
        .unwrap_or_default();
    let name = spec
        .name
        .as_ref()
        .map_or_else(|| struct_name.to_string(), |n| n.value());
    if name.is_empty() {
        cx.error(
            spec.name.as_ref().expect("empty only when given"),
            "`name` must not be empty",
        );
    }
    let (min_rank, max_rank) = ranks?;
    Some(Model {
        name,
        inputs,
        compute: compute?,
        compute_text,
        min_rank,
        max_rank,
        broadcast: broadcast?,
        in_place,
        support: support?,
        output,
        reduce: reduce.as_ref().and_then(|r| r.0),
        axes: reduce.and_then(|r| r.1),
        pairwise,
        affine: affine.map(|a| a.0),
        ratio: ratio.map(|r| r.0),
        nearest,
    })
}

/// A ratio `compute` (`N / D`, at `at`): a pairwise sum, whose results are fractions (`f32` or
/// `f64`, both by default). Returns the output types.
fn check_ratio(spec: &Spec, at: Option<Span>, cx: &mut Ctxt) -> Option<Vec<DataType>> {
    let at = at.unwrap_or_else(Span::call_site);
    if spec.pairwise.is_none() {
        cx.error_at(
            at,
            "a ratio `compute` (`N / D`) compares the rows of two inputs: add `pairwise` and `reduce = sum`",
        );
    }
    let Some(l) = &spec.output else {
        return Some(vec![DataType::F32, DataType::F64]);
    };
    if l.items.is_empty() {
        cx.error_at(l.span, "`output` must list at least one type");
    }
    let mut out = Vec::new();
    for id in &l.items {
        let Some(t) = parse_type(id, cx) else {
            continue;
        };
        if !matches!(t, DataType::F32 | DataType::F64) {
            cx.error(
                id,
                format!("a ratio's results are fractions, which `{t}` cannot hold: its outputs are f32 and f64, each rounded once from the exact value"),
            );
        } else if out.contains(&t) {
            cx.error(id, format!("output type `{t}` is listed twice"));
        } else {
            out.push(t);
        }
    }
    Some(out)
}

/// The reduction keys: `reduce`, `axes`, `pairwise`. Returns the reduction and its default axes.
#[allow(
    clippy::type_complexity,
    reason = "the two parts of a reduction, each optional"
)]
fn check_reduce(
    spec: &Spec,
    arity: usize,
    is_count: Option<bool>,
    ranks: Option<(u8, u8)>,
    support: Option<&[(FeatureLevel, Vec<DataType>)]>,
    output: Option<&[DataType]>,
    cx: &mut Ctxt,
) -> Option<(Option<ReduceOp>, Option<Vec<i64>>)> {
    let reduce = match &spec.reduce {
        None => None,
        Some(id) => match ReduceOp::parse(&id.to_string()) {
            Some(r) => Some((r, id)),
            None => {
                cx.error(
                    id,
                    format!("unknown reduction `{id}`; expected sum, and, or or xor"),
                );
                None
            }
        },
    };
    // An unknown reduction is still a reduction to the other keys' checks.
    let reduces = spec.reduce.is_some();
    if let Some((r, id)) = reduce {
        match (r, is_count) {
            // A sum adds bit counts; summing elements would overflow their own type at once.
            (ReduceOp::Sum, Some(false)) => cx.error(
                id,
                "`reduce = sum` adds bit counts: `compute` must end in `.count_ones()`, such as `compute = (a ^ b).count_ones()`",
            ),
            // and/or/xor combine elements bit by bit; a count is not an element.
            (ReduceOp::And | ReduceOp::Or | ReduceOp::Xor, Some(true)) => cx.error(
                id,
                format!("`reduce = {r}` combines elements bit by bit, but `compute` yields a bit count: use `reduce = sum` to add counts"),
            ),
            _ => {}
        }
        // The output of a reduction has another shape than its inputs: it cannot alias one.
        if let Some(l) = spec.in_place.as_ref().filter(|l| !l.items.is_empty()) {
            cx.error_at(l.span, "`in_place` is impossible for a reduction: its output has another shape than its inputs");
        }
    }
    if let Some(p) = &spec.pairwise {
        if !reduces {
            cx.error(p, "`pairwise` reduces the last dimension of both inputs: add `reduce = sum` (or `and`, `or`, `xor`)");
        }
        if arity != 2 && spec.inputs.is_some() {
            cx.error(
                p,
                format!("`pairwise` compares rows of two inputs; this op has {arity}"),
            );
        }
    }
    let axes = spec.axes.as_ref().map(|l| {
        if !reduces {
            cx.error_at(l.span, "`axes` gives the default axes of a reduction: add `reduce = ...`");
        }
        if let Some(p) = &spec.pairwise {
            cx.error(p, "`pairwise` reduces the last dimension of both inputs: remove `axes`");
        }
        let max = ranks.map_or(MAX_RANK as i64, |r| i64::from(r.1));
        let mut seen: Vec<i64> = Vec::new();
        for &(a, span) in &l.items {
            if a >= max || a < -max {
                cx.error_at(
                    span,
                    format!("axis {a} is out of range: inputs have at most {max} dimensions (valid: -{max} to {})", max - 1),
                );
            } else if seen.contains(&a) {
                cx.error_at(span, format!("axis {a} is listed twice"));
            }
            seen.push(a);
        }
        l.items.iter().map(|&(a, _)| a).collect::<Vec<i64>>()
    });
    // A sum must be able to hold the counts of at least two elements of every type it takes.
    if let (Some((ReduceOp::Sum, _)), Some(support), Some(_), Some(l)) =
        (reduce, support, output, &spec.output)
    {
        let widest = support
            .last()
            .map_or(0, |(_, ts)| ts.iter().map(|t| t.bits()).max().unwrap_or(0));
        let named = l.items.iter().filter_map(|id| {
            DataType::ALL
                .into_iter()
                .find(|t| *id == t.name())
                .map(|t| (t, id))
        });
        for (t, id) in named {
            let max = if t.is_signed() {
                t.max_bits_value() >> 1
            } else {
                t.max_bits_value()
            };
            if max < 2 * u64::from(widest) {
                cx.error(
                    id,
                    format!(
                        "`{t}` is too narrow for `reduce = sum`: it holds at most {max}, less than the counts of two {widest}-bit elements ({}); use u16 or wider",
                        2 * widest
                    ),
                );
            }
        }
    }
    Some((reduce.map(|r| r.0), axes))
}

/// An affine `compute` sums counts (`reduce = sum`), and an output type that cannot hold a negative
/// result is a mistake when the function can give one.
fn check_affine(
    spec: &Spec,
    affine: Option<ir::AffineAt>,
    output: Option<&[DataType]>,
    cx: &mut Ctxt,
) {
    let sum = spec.reduce.as_ref().is_some_and(|r| r == "sum");
    if let Some((_, at)) = affine
        && !sum
        && spec
            .reduce
            .as_ref()
            .is_none_or(|r| ReduceOp::parse(&r.to_string()).is_some())
    {
        cx.error_at(
            at,
            "an affine `compute` is summed over the reduced elements: add `reduce = sum`",
        );
    }
    let (Some(l), Some(_)) = (&spec.output, output) else {
        return;
    };
    let negative = affine.is_some_and(|(a, _)| a.can_be_negative());
    for id in &l.items {
        let Some(t) = DataType::ALL.into_iter().find(|t| *id == t.name()) else {
            continue;
        };
        if !t.is_signed() && negative {
            cx.error(id, format!("`{t}` cannot hold the negative results `compute` can give; use a signed type such as i32, i64 or i16"));
        }
    }
}

/// `nearest = smallest | largest`, for pairwise sums (which have knn).
fn check_nearest(spec: &Spec, cx: &mut Ctxt) -> Nearest {
    let Some(id) = &spec.nearest else {
        return Nearest::Smallest;
    };
    let parsed = Nearest::parse(&id.to_string());
    if parsed.is_none() {
        cx.error(
            id,
            format!("unknown `nearest` value `{id}`; expected smallest or largest"),
        );
    }
    let sum = spec.reduce.as_ref().is_some_and(|r| r == "sum");
    if spec.pairwise.is_none() || !sum {
        cx.error(id, "`nearest` says which values knn returns first, and knn needs a pairwise sum: add `pairwise` and `reduce = sum`, or remove `nearest`");
    }
    parsed.unwrap_or_default()
}

/// 1 to 8 distinct names.
fn check_inputs(l: &Listed, pairwise: bool, cx: &mut Ctxt) -> Vec<Ident> {
    if l.items.is_empty() {
        cx.error_at(l.span, "`inputs` must name at least one input");
    }
    if l.items.len() > MAX_INPUTS {
        cx.error(
            &l.items[MAX_INPUTS],
            format!("at most {MAX_INPUTS} inputs are supported"),
        );
    }
    for (i, id) in l.items.iter().enumerate() {
        if l.items[..i].contains(id) {
            cx.error(id, format!("input `{id}` is listed twice"));
        }
        // The generated methods take these parameters beside the inputs.
        let name = id.to_string();
        let reserved = crate::methods::RESERVED.contains(&name.as_str())
            || (pairwise && crate::methods::RESERVED_PAIRWISE.contains(&name.as_str()));
        if reserved {
            cx.error(id, format!("`{id}` is reserved: the generated methods have a parameter of that name beside the inputs; choose another input name"));
        } else if name == "BITS" {
            cx.error(id, "`BITS` is reserved: in `compute` it is the number of valid bits of an element; choose another input name");
        } else if ["self", "Self", "crate", "super"].contains(&name.as_str()) {
            cx.error(
                id,
                format!("`{id}` is a Rust keyword; choose another input name"),
            );
        }
    }
    l.items.clone()
}

/// `dims = 0..=8`, `dims = 1..=4` or `dims = 2`: ranks between 0 and 8.
fn check_dims(e: &Expr, cx: &mut Ctxt) -> Option<(u8, u8)> {
    let int = |e: &Expr, cx: &mut Ctxt| -> Option<u8> {
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) = e
        {
            match i.base10_parse::<u8>() {
                Ok(v) if v as usize <= MAX_RANK => return Some(v),
                _ => {
                    cx.error(
                        i,
                        format!(
                            "rank {} is out of range; ranks go from 0 to {MAX_RANK}",
                            i.base10_digits()
                        ),
                    );
                    return None;
                }
            }
        }
        cx.error(e, "expected an integer rank");
        None
    };
    match e {
        Expr::Range(r) => {
            let lo = match &r.start {
                Some(s) => int(s, cx)?,
                None => 0,
            };
            let hi = match (&r.end, &r.limits) {
                (Some(end), syn::RangeLimits::Closed(_)) => int(end, cx)?,
                (Some(end), syn::RangeLimits::HalfOpen(_)) => match int(end, cx)?.checked_sub(1) {
                    Some(v) => v,
                    None => {
                        cx.error(e, "empty rank range");
                        return None;
                    }
                },
                (None, _) => MAX_RANK as u8,
            };
            if lo > hi {
                cx.error(e, "empty rank range: the start is above the end");
                return None;
            }
            Some((lo, hi))
        }
        other => int(other, cx).map(|v| (v, v)),
    }
}

fn check_broadcast(
    l: Option<&Listed>,
    arity: usize,
    have_inputs: bool,
    cx: &mut Ctxt,
) -> Option<Vec<BroadcastMode>> {
    let Some(l) = l else {
        // Ops with several inputs must say how shapes combine; unary ops have nothing to combine.
        if arity > 1 {
            cx.error_at(
                Span::call_site(),
                "missing key `broadcast`: ops with several inputs list the modes they accept, first the default, such as `broadcast = [numpy, none, pdpd]`",
            );
            return None;
        }
        return Some(Vec::new());
    };
    if arity == 1 && have_inputs {
        cx.error_at(
            l.span,
            "`broadcast` applies only to ops with two or more inputs; remove it",
        );
    }
    if l.items.is_empty() {
        cx.error_at(
            l.span,
            "`broadcast` must list at least one mode: none, numpy, pdpd",
        );
    }
    let mut modes = Vec::new();
    for id in &l.items {
        match BroadcastMode::parse(&id.to_string())
            .filter(|_| id.to_string().chars().all(|c| c.is_ascii_lowercase()))
        {
            Some(m) if modes.contains(&m) => {
                cx.error(id, format!("broadcast mode `{id}` is listed twice"))
            }
            Some(m) => modes.push(m),
            None => cx.error(
                id,
                format!("unknown broadcast mode `{id}`; expected none, numpy or pdpd"),
            ),
        }
    }
    Some(modes)
}

/// Inputs the output may alias: known, distinct, and only when the output has the inputs' type.
fn check_in_place(l: &Listed, inputs: &[Ident], is_count: bool, cx: &mut Ctxt) -> Vec<usize> {
    let mut out = Vec::new();
    if is_count && !l.items.is_empty() {
        cx.error_at(l.span, "`in_place` is impossible when `compute` yields a count: the output type differs from the inputs'");
        return out;
    }
    for id in &l.items {
        match inputs.iter().position(|i| i == id) {
            Some(k) if out.contains(&k) => {
                cx.error(id, format!("`{id}` is listed twice in `in_place`"))
            }
            Some(k) => out.push(k),
            None => {
                let names: Vec<String> = inputs.iter().map(|i| format!("`{i}`")).collect();
                cx.error(
                    id,
                    format!(
                        "`in_place` names unknown input `{id}`; the inputs are {}",
                        names.join(", ")
                    ),
                );
            }
        }
    }
    out.sort();
    out
}

fn parse_type(id: &Ident, cx: &mut Ctxt) -> Option<DataType> {
    let s = id.to_string();
    match DataType::ALL.into_iter().find(|t| t.name() == s) {
        Some(t) => Some(t),
        None => {
            // DirectML spellings (`UINT16`) and other cases map onto the Rust name to suggest.
            match DataType::from_name(&s) {
                Some(t) => cx.error(id, format!("unknown data type `{s}`; did you mean `{t}`?")),
                None => cx.error(
                    id,
                    format!(
                        "unknown data type `{s}`; expected one of: {}",
                        DataType::all_names(", ")
                    ),
                ),
            }
            None
        }
    }
}

/// Levels known and distinct; types known and distinct; each higher level a superset of the lower
/// ones (DirectML's rule: a feature level never takes a type away).
fn check_support(
    entries: &[crate::ast::LevelEntry],
    cx: &mut Ctxt,
) -> Option<Vec<(FeatureLevel, Vec<DataType>)>> {
    if entries.is_empty() {
        cx.error_at(
            Span::call_site(),
            "`support(...)` must declare at least one level, such as `FL_3_0 = [u8]`",
        );
        return None;
    }
    let mut levels: BTreeMap<FeatureLevel, (Ident, Vec<DataType>)> = BTreeMap::new();
    let mut ok = true;
    for e in entries {
        let lname = e.level.to_string();
        let Some(level) = FeatureLevel::ALL.into_iter().find(|l| l.name() == lname) else {
            cx.error(
                &e.level,
                format!(
                    "unknown feature level `{lname}`; expected one of: {}",
                    FeatureLevel::all_names(false, ", ")
                ),
            );
            ok = false;
            continue;
        };
        if levels.contains_key(&level) {
            cx.error(
                &e.level,
                format!("feature level `{lname}` is declared twice"),
            );
            ok = false;
            continue;
        }
        if e.types.items.is_empty() {
            cx.error_at(e.types.span, format!("`{lname}` lists no data types"));
            ok = false;
        }
        let mut types = Vec::new();
        for id in &e.types.items {
            match parse_type(id, cx) {
                Some(t) if types.contains(&t) => {
                    cx.error(id, format!("data type `{t}` is listed twice for `{lname}`"));
                    ok = false;
                }
                Some(t) => types.push(t),
                None => ok = false,
            }
        }
        levels.insert(level, (e.level.clone(), types));
    }
    let ordered: Vec<(FeatureLevel, Ident, Vec<DataType>)> =
        levels.into_iter().map(|(l, (id, t))| (l, id, t)).collect();
    for w in ordered.windows(2) {
        let (lo, hi) = (&w[0], &w[1]);
        let missing: Vec<&str> =
            lo.2.iter()
                .filter(|t| !hi.2.contains(t))
                .map(|t| t.name())
                .collect();
        if !missing.is_empty() {
            cx.error(&hi.1, format!(
                "`{}` must list every type of `{}` (a higher feature level is a superset of a lower one); missing: {}",
                hi.0, lo.0, missing.join(", ")
            ));
            ok = false;
        }
    }
    ok.then(|| ordered.into_iter().map(|(l, _, t)| (l, t)).collect())
}

/// `output` exists exactly when `compute` changes the type (a bit count), and holds integer types.
fn check_output(
    l: Option<&Listed>,
    is_count: bool,
    have_compute: bool,
    cx: &mut Ctxt,
) -> Option<Vec<DataType>> {
    match l {
        None if is_count => {
            cx.error_at(Span::call_site(), "`compute` yields a bit count, so the output type differs from the inputs': add `output = [u8, u32]` (the first is the default)");
            None
        }
        None => None,
        Some(l) if !is_count && have_compute => {
            cx.error_at(l.span, "`output` types the expression cannot produce: `compute` yields an element of the input type; `output` is only for a bit count such as `x.count_ones()`");
            None
        }
        Some(l) => {
            if l.items.is_empty() {
                cx.error_at(l.span, "`output` must list at least one type");
            }
            let mut out = Vec::new();
            for id in &l.items {
                let Some(t) = parse_type(id, cx) else {
                    continue;
                };
                if !t.is_integer() {
                    cx.error(
                        id,
                        format!(
                            "`{t}` cannot hold a bit count; use an integer type such as u8 or u32"
                        ),
                    );
                } else if out.contains(&t) {
                    cx.error(id, format!("output type `{t}` is listed twice"));
                } else {
                    out.push(t);
                }
            }
            Some(out)
        }
    }
}

/// Each supported type must make sense for the expression: no shifts or counts on `bool`, no shifts on
/// floats (they have no shift count), and literals that fit the width.
fn check_types_against_compute(c: &ir::Expr, entries: &[crate::ast::LevelEntry], cx: &mut Ctxt) {
    let mut seen = Vec::new();
    let mut lits = Vec::new();
    c.literals(&mut lits);
    for e in entries {
        for id in &e.types.items {
            let Some(t) = DataType::ALL.into_iter().find(|t| *id == t.name()) else {
                continue;
            };
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            if t == DataType::Bool
                && let Some(op) = c.first_int_only_op()
            {
                cx.error(id, format!("`bool` cannot be supported: `compute` uses `{op}`, which needs an integer or float type; bool supports only `&`, `|`, `^` and `!`"));
            } else if t.is_float()
                && let Some(op) = c.first_shift()
            {
                cx.error(id, format!("`{t}` cannot be supported: `compute` uses `{op}`, and floats have no shift count; use integer types"));
            }
            for (v, span) in &lits {
                if t == DataType::Bool && *v > 1 {
                    cx.error_at(
                        *span,
                        format!("literal {v} is not a `bool`, which `support` lists; `bool` takes only the literals 0 and 1"),
                    );
                } else if *v > t.max_bits_value() {
                    cx.error_at(
                        *span,
                        format!(
                            "literal {v} does not fit in `{t}` ({} bits), which `support` lists",
                            t.bits()
                        ),
                    );
                }
            }
        }
    }
}
