//! The traits that make a data type the op lacks a compile error: `<Op>Supports<L>` per feature
//! level, `<Op>Output` for a count's output types, and the generic `SupportsType`/`OutputType`.

use crate::types::{elem_ty, type_list};
use crate::valid::Model;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;
use tensorbits_core::FeatureLevel;

/// The per-op trait that makes unsupported data types compile errors, with a message that names the op,
/// the type and the level and lists what is supported; and, for bit counts, the output-type trait.
pub fn supports_traits(m: &Model, ident: &Ident, vis: &syn::Visibility) -> TokenStream {
    let tr = format_ident!("{}Supports", ident);
    let name = ident.to_string();
    let message =
        format!("`{name}` does not support data type `{{Self}}` at feature level `{{L}}`");
    let label = format!("`{{Self}}` is not supported by `{name}` at `{{L}}`");
    let notes = m.support.iter().map(|(l, ts)| {
        let at = if *l == FeatureLevel::EXT {
            "EXT".to_owned()
        } else {
            format!("{} and above", l.name())
        };
        format!("`{name}` supports at {at}: {}", type_list(ts))
    });
    let doc = format!(
        "The data types [`{name}`] supports at feature level `L`, implemented exactly for the entries of its \
         Tensor support table. The typed API takes it as a bound, so an unsupported type is a compile error."
    );
    let impls = FeatureLevel::ALL.into_iter().flat_map(|l| {
        let li = format_ident!("{}", l.name());
        let tr = tr.clone();
        m.types_at(l).into_iter().map(move |t| {
            let e = elem_ty(t);
            quote!(#[automatically_derived] impl #tr<::tensorbits::levels::#li> for #e {})
        })
    });
    let output = m.output.as_ref().map(|outs| {
        let otr = format_ident!("{}Output", ident);
        let list = outs.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ");
        let message = format!("`{{Self}}` is not an output type of `{name}`");
        let label = format!("`{name}` outputs {list}");
        let note = format!("`{name}` writes its count as one of: {list}");
        let doc = format!("The output data types of [`{name}`]: {list}.");
        let impls = outs.iter().map(|t| {
            let e = elem_ty(*t);
            quote!(#[automatically_derived] impl #otr for #e {})
        });
        quote! {
            #[doc = #doc]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            #vis trait #otr: ::tensorbits::Element<Word: ::tensorbits::__private::CountOutput> {}
            #(#impls)*
        }
    });
    // Shifts and counts compute on integer words; the bound lets the typed methods call the element
    // function at `T`'s word (every type such an op supports is an integer).
    let element = if m.compute.first_int_only_op().is_some() {
        quote!(::tensorbits::Element<Word: ::tensorbits::__private::IntWord>)
    } else {
        quote!(::tensorbits::Element)
    };
    // The same facts as bounds generic code can name for any op.
    let output_type = match m.output {
        Some(_) => {
            let otr = format_ident!("{}Output", ident);
            quote!(impl<T: ::tensorbits::Element, O: #otr> ::tensorbits::OutputType<T, O> for #ident {})
        }
        None => quote!(impl<T: ::tensorbits::Element> ::tensorbits::OutputType<T, T> for #ident {}),
    };
    quote! {
        #[doc = #doc]
        #[diagnostic::on_unimplemented(message = #message, label = #label, #(note = #notes),*)]
        #vis trait #tr<L: ::tensorbits::Level>: #element {}
        #(#impls)*
        #output
        #[automatically_derived]
        impl<T: #tr<L>, L: ::tensorbits::Level> ::tensorbits::SupportsType<T, L> for #ident {}
        #[automatically_derived]
        #output_type
    }
}
