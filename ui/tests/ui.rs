//! Compile-time behaviour, with trybuild: each file under `tests/ui/spec` is one spec mistake,
//! each under `tests/ui/unsupported` one typed call with a data type the op lacks, each with the
//! compiler's expected output in its `.stderr`; `tests/ui/pass` must compile and run.
//! `TRYBUILD=overwrite cargo test -p tensorbits-ui` regenerates the `.stderr` files for a human to
//! review. The cases build `tensorbits` without its `gpu` feature (see `Cargo.toml`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/spec/*.rs");
    t.compile_fail("tests/ui/unsupported/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
