//! The pipeline: parse the spec, validate it, and expand a valid one into the op's items (its
//! metadata, [`kernels`](crate::kernels), [`traits`](crate::traits) and
//! [`methods`](crate::methods)), or a spec with mistakes into its errors and the
//! [`fallback`](crate::fallback)'s stubs.

use crate::ctxt::Ctxt;
use crate::kernels::{cpu_kernels, eval_fn, gpu_kernels};
use crate::methods::{Signature, method_body, methods};
use crate::traits::supports_traits;
use crate::types::{dtype_variant, reduce_variant};
use crate::valid::Model;
use crate::{ast, docs, fallback, valid};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Fields, Ident, ItemStruct};
use tensorbits_core::{BroadcastMode, ReduceOp};

pub fn bitwise_op(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let s = match syn::parse2::<ItemStruct>(item.clone()) {
        Ok(s) => s,
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "#[bitwise_op] goes on a unit struct, such as `pub struct BitXor;`",
            );
            let errors = cx.finish();
            return quote!(#item #errors);
        }
    };
    if !matches!(s.fields, Fields::Unit) {
        cx.error(
            &s.fields,
            "#[bitwise_op] goes on a unit struct, such as `pub struct BitXor;`; remove the fields",
        );
    }
    let generic = !s.generics.params.is_empty();
    if generic {
        cx.error(&s.generics, "#[bitwise_op] structs cannot be generic");
    }
    let spec = ast::parse(args, &mut cx);
    let model = valid::check(&spec, &s.ident, &mut cx);
    match (cx.finish(), model) {
        (None, Some(m)) => expand(&s, &m),
        // The item and stubs of everything a valid spec defines, so that one mistake does not
        // cascade into an error at every use of the op.
        (errors, _) if !generic => {
            let stubs = fallback::expand(&s, &spec);
            quote!(#s #stubs #errors)
        }
        (errors, _) => quote!(#s #errors),
    }
}

fn expand(s: &ItemStruct, m: &Model) -> TokenStream {
    let ident = &s.ident;
    let summary = summary(s);
    let doc = docs::render(m, &ident.to_string());
    let sig = Signature {
        ident,
        inputs: m.inputs.clone(),
        count_default: m.output.as_ref().and_then(|o| o.first().copied()),
        in_place: m.in_place.clone(),
        reduce: m.reduce,
        pairwise: m.pairwise,
        wide: m.compute.is_count() && m.compute.is_width_agnostic_count(),
        pair_form: crate::kernels::pair_form(m),
    };
    let parts = |cpu: TokenStream, pair: TokenStream| parts(m, ident, &summary, cpu, pair);
    let info = parts(
        quote!(__TENSORBITS_CPU_KERNELS),
        quote!(__TENSORBITS_PAIR_KERNELS),
    );
    let meta = parts(quote!(&[]), quote!(&[]));
    let cpu = cpu_kernels(m, ident);
    let gpu = gpu_kernels(m);
    let traits = supports_traits(m, ident, &s.vis);
    let eval = eval_fn(m);
    // A pairwise sum whose count is the same at every width also runs on whole words.
    let wide = if m.pairwise && sig.wide {
        let inner = m.compute.to_lanes();
        quote! {
            #[automatically_derived]
            impl ::tensorbits::__private::WideExpr for #ident {
                #[inline(always)]
                fn wide<L: ::tensorbits::__private::Lanes>(x: [L; 2]) -> L {
                    #inner
                }
            }
        }
    } else {
        TokenStream::new()
    };
    let methods = methods(&sig, &|method| method_body(&sig, method));
    let mut item = s.clone();
    item.attrs.push(syn::parse_quote!(#[doc = #doc]));
    quote! {
        #item

        #traits

        // The kernels and metadata are items of this block, out of the user's namespace.
        const _: () = {
            #cpu
            #wide
            #gpu

            #[automatically_derived]
            impl ::tensorbits::Op for #ident {
                const INFO: &'static ::tensorbits::OpInfo = &::tensorbits::OpInfo::from_parts(#info);
            }

            // The typed methods run the element function at the call's types, and never the
            // kernel table: a crate pays for the kernels of the types it calls, not of all types.
            #[automatically_derived]
            impl ::tensorbits::__private::TypedOp for #ident {
                const META: &'static ::tensorbits::OpInfo = &::tensorbits::OpInfo::from_parts(#meta);
            }
        };

        #[automatically_derived]
        impl #ident {
            #eval
        }

        #methods
    }
}

/// The doc comment's first paragraph, on one line.
fn summary(s: &ItemStruct) -> String {
    let lines: Vec<String> = s
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(l),
                    ..
                }) => Some(l.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines
        .iter()
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

fn parts(
    m: &Model,
    ident: &Ident,
    summary: &str,
    cpu: TokenStream,
    pair: TokenStream,
) -> TokenStream {
    let name = &m.name;
    let type_name = ident.to_string();
    let inputs: Vec<String> = m.inputs.iter().map(|i| i.to_string()).collect();
    let compute = &m.compute_text;
    let (lo, hi) = (m.min_rank, m.max_rank);
    let broadcast = m.broadcast.iter().map(|b| {
        let v = match b {
            BroadcastMode::None => quote!(None),
            BroadcastMode::Numpy => quote!(Numpy),
            BroadcastMode::Pdpd => quote!(Pdpd),
        };
        quote!(::tensorbits::BroadcastMode::#v)
    });
    let in_place = &m.in_place;
    let support = m.support.iter().map(|(l, ts)| {
        let l = format_ident!("{}", l.name());
        let ts = ts.iter().map(|t| dtype_variant(*t));
        quote!((::tensorbits::FeatureLevel::#l, &[#(::tensorbits::DataType::#ts),*]))
    });
    let output = match &m.output {
        Some(o) => {
            let o = o.iter().map(|t| dtype_variant(*t));
            quote!(::core::option::Option::Some(&[#(::tensorbits::DataType::#o),*]))
        }
        None => quote!(::core::option::Option::None),
    };
    let reduce = match m.reduce {
        Some(r) => {
            let r = reduce_variant(r);
            quote!(::core::option::Option::Some(#r))
        }
        None => quote!(::core::option::Option::None),
    };
    let axes = match &m.axes {
        Some(a) => quote!(::core::option::Option::Some(&[#(#a),*])),
        None => quote!(::core::option::Option::None),
    };
    let pairwise = m.pairwise;
    let affine = match m.affine {
        Some(a) => {
            let (c, b, k) = (a.constant, a.bits, a.scale);
            quote!(::core::option::Option::Some(::tensorbits::Affine { constant: #c, bits: #b, scale: #k }))
        }
        None => quote!(::core::option::Option::None),
    };
    let ratio = match m.ratio {
        Some(r) => {
            let side = |c: tensorbits_core::Counts| {
                let (k, w, a, b, n) = (c.constant, c.bits, c.a, c.b, c.both);
                quote!(::tensorbits::Counts { constant: #k, bits: #w, a: #a, b: #b, both: #n })
            };
            let (num, den) = (side(r.num), side(r.den));
            quote!(::core::option::Option::Some(::tensorbits::Ratio { num: #num, den: #den }))
        }
        None => quote!(::core::option::Option::None),
    };
    // A pairwise sum of a count of two bits, as multiples of the rows' counts (a prepared
    // database bounds its results by them).
    let counts = match m.compute.truth_table() {
        Some(t) if m.pairwise && m.ratio.is_none() && m.reduce == Some(ReduceOp::Sum) => {
            let c = tensorbits_core::Counts::of_table(t, 1);
            let (w, a, b, n) = (c.bits, c.a, c.b, c.both);
            quote!(::core::option::Option::Some(::tensorbits::Counts { constant: 0, bits: #w, a: #a, b: #b, both: #n }))
        }
        _ => quote!(::core::option::Option::None),
    };
    let nearest = format_ident!("{}", format!("{:?}", m.nearest));
    // A sum whose count is bit-local can ignore padding bits: zeroed, each adds a known amount.
    let zeros = [8, 16, 32, 64].map(|w| m.compute.zero_bits(w));
    let zeros = match (m.reduce, zeros) {
        (Some(ReduceOp::Sum), [Some(a), Some(b), Some(c), Some(d)]) => {
            quote!(::core::option::Option::Some([#a, #b, #c, #d]))
        }
        _ => quote!(::core::option::Option::None),
    };
    quote! {
        ::tensorbits::__private::OpParts {
            name: #name,
            type_name: #type_name,
            summary: #summary,
            inputs: &[#(#inputs),*],
            compute: #compute,
            min_rank: #lo,
            max_rank: #hi,
            broadcast: &[#(#broadcast),*],
            in_place: &[#(#in_place),*],
            support: &[#(#support),*],
            output: #output,
            reduce: #reduce,
            axes: #axes,
            pairwise: #pairwise,
            affine: #affine,
            ratio: #ratio,
            counts: #counts,
            nearest: ::tensorbits::Nearest::#nearest,
            zeros: #zeros,
            cpu: #cpu,
            pair: #pair,
            gpu: __TENSORBITS_GPU_KERNELS,
        }
    }
}
