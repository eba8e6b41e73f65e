//! The entry points: typed calls and their [`Options`](crate::Options), tensors and views, the
//! dynamic [`execute`](crate::execute) on byte buffers, and [`compile`](crate::compile)d calls.
//! `binarize` packs `x > threshold` to bits, `rescore` scores packed codes against float queries. Each validates through [`validate`](crate::validate()) and runs on the CPU executor.

pub(crate) mod binarize;
pub(crate) mod compiled;
pub(crate) mod database;
pub(crate) mod dynamic;
pub(crate) mod merge;
#[cfg(feature = "ndarray")]
pub(crate) mod nd;
pub(crate) mod orient;
pub(crate) mod rescore;
pub(crate) mod tensor;
pub(crate) mod typed;
