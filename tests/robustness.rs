//! Random, mostly invalid calls through the dynamic entry points: each returns `Ok` or a typed
//! `Err`, never panics, and an `Err` leaves the output bytes exactly as they were.

mod common;

use common::Rng;
use proptest::prelude::*;
use tensorbits::{
    Broadcast, Call, DataType, FeatureLevel, Input, Region, TensorDesc, execute, execute_in_buffer,
};

fn random_desc(rng: &mut Rng) -> Option<TensorDesc> {
    let dt = DataType::ALL[rng.below(12)];
    let rank = if rng.chance(5) { 9 } else { rng.below(5) };
    let sizes: Vec<usize> = (0..rank).map(|_| rng.below(4)).collect();
    let mut d = TensorDesc::new(dt, &sizes).ok()?;
    if rng.chance(40) {
        let n = if rng.chance(10) { rank + 1 } else { rank };
        let strides: Vec<usize> = (0..n)
            .map(|_| {
                if rng.chance(5) {
                    usize::MAX / 3
                } else {
                    rng.below(5)
                }
            })
            .collect();
        d = d.with_strides(&strides).ok()?;
    }
    if rng.chance(20) {
        d = d.with_total_bytes(rng.below(64));
    }
    if rng.chance(15) {
        d = d.with_alignment(rng.below(17));
    }
    Some(d)
}

fn random_call(rng: &mut Rng) -> Call {
    let level = FeatureLevel::ALL[rng.below(FeatureLevel::ALL.len())];
    let broadcast = match rng.below(5) {
        0 => None,
        1 => Some(Broadcast::None),
        2 => Some(Broadcast::Numpy),
        _ => Some(Broadcast::Pdpd {
            axis: rng.below(6) as i64 - 2,
        }),
    };
    Call {
        level,
        broadcast,
        ..Default::default()
    }
}

/// What `check` saw: `Ok` results and the kinds of errors, to show the cases reach deep checks.
#[derive(Default)]
struct Seen {
    ok: usize,
    kinds: std::collections::BTreeSet<String>,
}

fn record(seen: &mut Seen, r: &Result<(), tensorbits::Error>) {
    match r {
        Ok(()) => seen.ok += 1,
        Err(e) => {
            let name = format!("{e:?}");
            seen.kinds
                .insert(name.split([' ', '{', '(']).next().unwrap_or("").to_owned());
        }
    }
}

fn check(seed: u64) {
    check_seen(seed, &mut Seen::default());
}

fn check_seen(seed: u64, seen: &mut Seen) {
    let mut rng = Rng(seed);
    let ops = tensorbits::ops::ALL;
    let op = ops[rng.below(ops.len())];
    let (call, descs, out_desc) = if rng.chance(50) {
        // Fully random: mostly rejected early.
        let call = random_call(&mut rng);
        let n = if rng.chance(10) {
            rng.below(4)
        } else {
            op.arity()
        };
        let descs: Vec<TensorDesc> = (0..n).filter_map(|_| random_desc(&mut rng)).collect();
        let Some(out_desc) = random_desc(&mut rng) else {
            return;
        };
        (call, descs, out_desc)
    } else {
        // Near-valid: a supported type and one shape for all, so later checks are reached.
        let types = op.all_types();
        let dt = types[rng.below(types.len())];
        let sizes: Vec<usize> = (0..rng.below(4)).map(|_| 1 + rng.below(4)).collect();
        let d = TensorDesc::new(dt, &sizes).expect("small");
        let out = TensorDesc::new(op.default_output(dt), &sizes).expect("small");
        let mut descs = vec![d; op.arity()];
        let mut out = out;
        match rng.below(4) {
            0 => {
                if let Some(r) = random_desc(&mut rng) {
                    let k = rng.below(descs.len());
                    descs[k] = r;
                }
            }
            1 => {
                if let Some(r) = random_desc(&mut rng) {
                    out = r;
                }
            }
            _ => {}
        }
        let call = if rng.chance(30) {
            random_call(&mut rng)
        } else {
            Call::default()
        };
        (call, descs, out)
    };
    let datas: Vec<Vec<u8>> = descs
        .iter()
        .map(|d| {
            // Huge descriptions are valid input; their buffers are capped (and so are too short).
            let total = d.total_bytes().min(4096);
            let len = if rng.chance(30) {
                rng.below(total + 1)
            } else {
                total
            };
            (0..len).map(|_| rng.next() as u8).collect()
        })
        .collect();
    let alias = rng.chance(20).then(|| rng.below(descs.len().max(1)));
    let inputs: Vec<Input<'_>> = descs
        .iter()
        .zip(&datas)
        .enumerate()
        .map(|(k, (d, b))| {
            if Some(k) == alias {
                Input::Output
            } else {
                Input::Bytes(d, b)
            }
        })
        .collect();
    let mut out = vec![0x3Cu8; out_desc.total_bytes().min(4096)];
    let r = execute(op, &call, &inputs, &out_desc, &mut out);
    record(seen, &r);
    if r.is_err() {
        assert!(
            out.iter().all(|&b| b == 0x3C),
            "seed {seed}: a failed call wrote output bytes"
        );
    }

    // The same tensors as regions of one buffer, at random (possibly overlapping) offsets.
    let len = 64 + rng.below(300);
    let mut buf: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let before = buf.clone();
    let regions: Vec<Region> = descs
        .iter()
        .map(|&desc| Region {
            offset: rng.below(len + 32),
            desc,
        })
        .collect();
    let out_region = Region {
        offset: rng.below(len + 32),
        desc: out_desc,
    };
    let r = execute_in_buffer(op, &call, &mut buf, &regions, &out_region);
    record(seen, &r);
    if r.is_err() {
        assert_eq!(buf, before, "seed {seed}: a failed call changed the buffer");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]
    #[test]
    fn bad_calls_are_errors_not_panics(seed in any::<u64>()) {
        check(seed);
    }
}

#[test]
fn the_random_calls_reach_every_kind_of_check() {
    let mut seen = Seen::default();
    for seed in 0..20_000 {
        check_seen(seed, &mut seen);
    }
    let kinds: Vec<&String> = seen.kinds.iter().collect();
    assert!(
        seen.ok >= 50,
        "only {} calls succeeded; kinds seen: {kinds:?}",
        seen.ok
    );
    for want in [
        "InputCount",
        "UnsupportedDataType",
        "OpNotAvailable",
        "DataTypeMismatch",
        "OutputDataType",
        "ZeroOutputStride",
        "TotalBytesTooSmall",
        "BadAlignment",
        "BufferTooSmall",
        "ShapeMismatch",
        "BadAxis",
        "OutputShape",
        "InPlaceNotAllowed",
        "PartialOverlap",
        "RegionOutOfBounds",
    ] {
        assert!(
            seen.kinds.contains(want),
            "no {want} error in 20000 random calls; seen: {kinds:?}"
        );
    }
}
