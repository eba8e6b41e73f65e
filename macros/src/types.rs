//! Tokens shared by the kernel tables and the typed methods' bodies: the core's data types and
//! reductions, and the runtime's fold and pair kernels over an op's element function.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;
use tensorbits_core::{DataType, ReduceOp};

pub fn dtype_variant(t: DataType) -> Ident {
    format_ident!("{}", format!("{t:?}"))
}

/// The Rust element type of a data type.
pub fn elem_ty(t: DataType) -> TokenStream {
    match t {
        DataType::F16 => quote!(::tensorbits::f16),
        other => {
            let id = format_ident!("{}", other.name());
            quote!(#id)
        }
    }
}

/// The word a kernel computes on: floats as the unsigned integer of their width, bool as `Bool8`.
pub fn word_ty(t: DataType) -> TokenStream {
    match t {
        DataType::F16 => quote!(u16),
        DataType::F32 => quote!(u32),
        DataType::F64 => quote!(u64),
        DataType::Bool => quote!(::tensorbits::__private::Bool8),
        other => elem_ty(other),
    }
}

pub fn type_list(ts: &[DataType]) -> String {
    let mut ts = ts.to_vec();
    ts.sort();
    ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
}

/// The core's reduction as a path.
pub fn reduce_variant(r: ReduceOp) -> TokenStream {
    let v = format_ident!("{}", format!("{r:?}"));
    quote!(::tensorbits::ReduceOp::#v)
}

/// A call of a reduction's fused kernel at word `w` over the element function at `path`, with the
/// parameters `inputs`, `acc` and `row` of the runtime's `FoldKernel`.
pub fn fold_call(r: ReduceOp, path: &TokenStream, w: &TokenStream, n: usize) -> TokenStream {
    let eval = quote!(#path::__tensorbits_eval::<#w>);
    match r {
        ReduceOp::Sum => quote! {
            ::tensorbits::__private::fold_count::<#w, #n>(inputs, acc, row, #eval)
        },
        _ => {
            let op = reduce_variant(r);
            quote! {
                ::tensorbits::__private::fold_bits::<#w, #n, { ::tensorbits::__private::fold_code(#op) }>(
                    inputs, acc, row, #eval,
                )
            }
        }
    }
}

/// A pairwise op's element function (at `path`) at word `w` as the value a pair kernel folds (a
/// count, or the element's bits), and the type whose `WideExpr` gives its wide path: the op's own
/// when `wide`, else `NoWide`.
pub fn pair_fns(
    count: bool,
    wide: bool,
    path: &TokenStream,
    w: &TokenStream,
) -> (TokenStream, TokenStream) {
    let elem = if count {
        quote!(|x| u64::from(#path::__tensorbits_eval::<#w>(x)))
    } else {
        quote!(|x| ::tensorbits::__private::Word::bits(#path::__tensorbits_eval::<#w>(x)))
    };
    let wide = if wide {
        path.clone()
    } else {
        quote!(::tensorbits::__private::NoWide)
    };
    (elem, wide)
}
