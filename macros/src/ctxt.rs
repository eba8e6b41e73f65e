//! Collects every error of a spec so the user sees them all at once (serde_derive's `Ctxt`).

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Display;

#[derive(Default)]
pub struct Ctxt {
    errors: Vec<syn::Error>,
}

impl Ctxt {
    /// Records an error at the tokens of `at`.
    pub fn error(&mut self, at: impl ToTokens, msg: impl Display) {
        self.errors
            .push(syn::Error::new_spanned(at.into_token_stream(), msg));
    }

    /// Records an error at `span`.
    pub fn error_at(&mut self, span: proc_macro2::Span, msg: impl Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    /// Records a parse error as it is.
    pub fn syn_error(&mut self, e: syn::Error) {
        self.errors.push(e);
    }

    /// The collected errors as `compile_error!`s, or `None` if there were none.
    pub fn finish(self) -> Option<TokenStream> {
        if self.errors.is_empty() {
            return None;
        }
        Some(
            self.errors
                .into_iter()
                .map(|e| e.to_compile_error())
                .collect(),
        )
    }
}
