//! `#[bitwise_op(...)]`: turns an operator spec on a unit struct into op metadata, a typed API whose
//! unsupported data types are compile errors, a CPU kernel lowered from the `compute` expression, and
//! rustdoc with the DirectML-style "Tensor support" tables. Use it through the `tensorbits` crate.
//!
//! The work is parse -> validate -> expand, one file each; `ir` holds the lowered expression that
//! every kernel is generated from, `docs` the rustdoc, and `fallback` what a spec with mistakes
//! expands to beside its errors.

mod ast;
mod ctxt;
mod docs;
mod expand;
mod fallback;
mod ir;
mod valid;

use proc_macro::TokenStream;

/// Declares a bitwise tensor operator. See the `tensorbits` crate for the spec syntax.
#[proc_macro_attribute]
pub fn bitwise_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::bitwise_op(args.into(), item.into()).into()
}
