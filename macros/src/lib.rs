//! `#[bitwise_op(...)]`: turns an operator spec on a unit struct into op metadata, a typed API whose
//! unsupported data types are compile errors, a CPU kernel lowered from the `compute` expression, and
//! rustdoc with the DirectML-style "Tensor support" tables. Use it through the `tensorbits` crate.
//!
//! The work is parse (`ast`) -> validate (`valid`) -> expand (`expand`, the pipeline). A valid spec
//! expands into `kernels` (the CPU and GPU kernel tables), `traits` (the supported types as
//! bounds), `methods` (the typed API and its parameter names) and `docs` (the rustdoc); `ir` holds
//! the lowered expression every kernel is generated from, `types` the tokens of the core's types,
//! and `fallback` what a spec with mistakes expands to beside its errors.

mod ast;
mod ctxt;
mod docs;
mod expand;
mod fallback;
mod ir;
mod kernels;
mod methods;
mod traits;
mod types;
mod valid;

use proc_macro::TokenStream;

/// Declares a bitwise tensor operator. See the `tensorbits` crate for the spec syntax.
#[proc_macro_attribute]
pub fn bitwise_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::bitwise_op(args.into(), item.into()).into()
}
