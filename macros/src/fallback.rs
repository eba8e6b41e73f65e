//! What `#[bitwise_op]` emits beside the errors of a spec with mistakes (thiserror's `fallback.rs` is
//! the model): the op's traits, implemented for every element type; its `Op` impl with placeholder
//! metadata; and every typed method with the signature a valid spec would give it, as far as the
//! spec can be read, and a body that never runs (the crate does not compile). Uses of the op
//! type-check, so the user sees only the spec's errors, not one more at every call site.

use crate::ast::Spec;
use crate::methods::{Method, Signature, methods};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Expr, ItemStruct};
use tensorbits_core::DataType;

pub fn expand(s: &ItemStruct, spec: &Spec) -> TokenStream {
    let ident = &s.ident;
    let vis = &s.vis;
    // Positional names: the inputs as written may repeat or take a reserved name.
    let written = spec.inputs.as_ref().map_or(&[][..], |l| &l.items[..]);
    let inputs: Vec<_> = (0..written.len())
        .map(|k| format_ident!("__tensorbits_input{k}"))
        .collect();
    let count = spec.output.is_some() || spec.compute.as_ref().is_some_and(ends_in_count);
    let count_default = count.then(|| {
        spec.output
            .iter()
            .flat_map(|l| &l.items)
            .find_map(|id| DataType::ALL.into_iter().find(|t| *id == t.name()))
            .filter(|t| t.is_integer())
            .unwrap_or(DataType::U32)
    });
    let in_place = if count {
        Vec::new()
    } else {
        let mut v: Vec<usize> = spec
            .in_place
            .iter()
            .flat_map(|l| &l.items)
            .filter_map(|id| written.iter().position(|i| i == id))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let reduce = spec
        .reduce
        .as_ref()
        .and_then(|r| tensorbits_core::ReduceOp::parse(&r.to_string()));
    let sig = Signature {
        ident,
        inputs: inputs.clone(),
        count_default,
        in_place: if reduce.is_some() {
            Vec::new()
        } else {
            in_place
        },
        reduce,
        pairwise: spec.pairwise.is_some() && reduce.is_some(),
        wide: false,
        pair_form: None,
    };
    let body = |method: Method| {
        let extra = method.params().iter().map(|e| format_ident!("{e}"));
        quote! {
            let _ = (#(#extra,)* #(#inputs,)*);
            ::core::unreachable!("the spec of this op has errors")
        }
    };
    let methods = methods(&sig, &body);
    let tr = format_ident!("{}Supports", ident);
    let output = count_default.map(|_| {
        let otr = format_ident!("{}Output", ident);
        quote! {
            #[doc(hidden)]
            #vis trait #otr: ::tensorbits::Element {}
            impl<T: ::tensorbits::Element> #otr for T {}
        }
    });
    quote! {
        #[doc(hidden)]
        #vis trait #tr<L: ::tensorbits::Level>: ::tensorbits::Element {}
        impl<L: ::tensorbits::Level, T: ::tensorbits::Element> #tr<L> for T {}
        #output

        const _: () = {
            impl ::tensorbits::Op for #ident {
                const INFO: &'static ::tensorbits::OpInfo = &::tensorbits::__private::FALLBACK_INFO;
            }
            impl ::tensorbits::__private::TypedOp for #ident {
                const META: &'static ::tensorbits::OpInfo = &::tensorbits::__private::FALLBACK_INFO;
            }
        };

        #methods
    }
}

/// Whether `compute` ends in `.count_ones()`, as far as it can be read.
fn ends_in_count(e: &Expr) -> bool {
    match e {
        Expr::Paren(p) => ends_in_count(&p.expr),
        Expr::Group(g) => ends_in_count(&g.expr),
        Expr::MethodCall(m) => m.method == "count_ones",
        _ => false,
    }
}
