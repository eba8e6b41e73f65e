//! Property tests: every op, on every supported type, against the scalar reference in `common`, through
//! random shapes, every broadcast mode, strided and zero-stride inputs, strided outputs and in-place
//! runs. Floats and bools are compared as bits; inputs are random bit patterns (so NaN payloads, -0.0
//! and non-0/1 bool bytes all occur), with special values mixed in. Every byte of the output buffer
//! that is not an output element must keep its sentinel value.

mod common;

use common::cases::{self, Built, build, build_packed, make_case};
use common::{Rng, eval, indices, input_coords, read};
use proptest::prelude::*;
use tensorbits::OpInfo;

fn ops() -> Vec<&'static OpInfo> {
    cases::ops()
}

fn check(seed: u64) {
    check_with(seed, build(seed), Built::run_cpu);
}

/// Runs `built` with `run` and compares every output element with the reference.
fn check_with(seed: u64, built: Built, run: impl Fn(&Built) -> Result<Vec<u8>, tensorbits::Error>) {
    let out = run(&built).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{:?}", built.case));
    let before = built.out_init.clone();
    let Built {
        case: c,
        descs,
        datas,
        out_desc,
        ..
    } = built;

    // Compare every output element with the reference, and remember which bytes were elements.
    let out_strides = out_desc.effective_strides();
    let osz = c.out_dt.size();
    let mut touched = vec![false; out.len()];
    for idx in indices(&c.out_shape) {
        let args: Vec<u64> = (0..c.op.arity())
            .map(|k| {
                let coords = input_coords(&idx, &c.in_shapes[k], c.starts[k]);
                let st = descs[k].effective_strides();
                let off: usize = coords.iter().zip(st.iter()).map(|(i, s)| i * s).sum();
                read(&datas[k], c.dt, off)
            })
            .collect();
        let want = eval(c.op.name(), c.dt, &args) & common::mask(c.out_dt);
        let off: usize = idx.iter().zip(out_strides.iter()).map(|(i, s)| i * s).sum();
        let got = read(&out, c.out_dt, off);
        assert_eq!(
            got,
            want,
            "seed {seed}: {} {} at {idx:?}: inputs {args:x?} gave {got:#x}, reference {want:#x}\n{c:?}",
            c.op.name(),
            c.dt
        );
        touched[off * osz..(off + 1) * osz].fill(true);
    }
    for (i, t) in touched.iter().enumerate() {
        if !t {
            assert_eq!(
                out[i], before[i],
                "seed {seed}: byte {i} outside the output was written\n{c:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn every_op_matches_the_reference(seed in any::<u64>()) {
        check(seed);
    }

    /// Compiled calls, on the general cases and on packed same-shape ones (the flat kernel), with
    /// buffers at every offset from 0 to 7 bytes, aligned or not for the kernel's words.
    #[test]
    fn compiled_calls_match_the_reference(seed in any::<u64>(), packed: bool, offset in 0usize..8) {
        let built = if packed { build_packed(seed) } else { build(seed) };
        check_with(seed, built, |b| b.run_compiled(offset));
    }

    /// The dynamic entry point on packed same-shape cases, in place or not.
    #[test]
    fn packed_calls_match_the_reference(seed in any::<u64>()) {
        check_with(seed, build_packed(seed), Built::run_cpu);
    }
}

/// Every (op, type) pair is reached by the random cases; this sweeps them explicitly too, so a type
/// cannot go untested by bad luck.
#[test]
fn every_op_and_type_is_covered() {
    let mut seen = std::collections::HashSet::new();
    let mut seed = 0u64;
    let want: usize = ops().iter().map(|o| o.all_types().len()).sum();
    while seen.len() < want && seed < 200_000 {
        let c = make_case(&mut Rng(seed));
        if seen.insert((c.op.name(), c.dt)) {
            check(seed);
        }
        seed += 1;
    }
    assert_eq!(seen.len(), want, "some op/type pairs were never generated");
}

/// A pdpd case whose later input had 8 dimensions plus a trailing 1 once broke the generator.
#[test]
fn regression_rank_8_pdpd_with_trailing_one() {
    check(8903785153999247704);
}

#[test]
fn the_generator_makes_only_valid_ranks() {
    for seed in 0..50_000 {
        let c = make_case(&mut Rng(seed));
        assert!(
            c.out_shape.len() <= 8 && c.in_shapes.iter().all(|s| s.len() <= 8),
            "seed {seed}: {c:?}"
        );
    }
}
