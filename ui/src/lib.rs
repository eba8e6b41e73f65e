//! The compile-time tests of `tensorbits` (`tests/ui.rs`, trybuild), in a package of their own so
//! that their cases build the library without its default `gpu` feature. No items.
