#![doc = include_str!("../README.md")]

extern crate self as tensorbits;

#[doc(inline)]
pub use tensorbits_macros::bitwise_op;
pub use tensorbits_runtime::*;

pub mod ops;
