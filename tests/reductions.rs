//! Reductions, pairwise ops and knn against a plain scalar reference: every standard reduction and
//! four of this file's own (a wide and a narrow pairwise sum, a bitwise pairwise reduction, a
//! two-input reduction with broadcasting), every type, random shapes, axes, keepdims, strides,
//! broadcasting, empty reductions and the overflow rule; the worked examples of the design; and
//! the paths that only large calls take (threads, packed rows, columns, knn split over `b`).

mod common;

use common::cases::random_strides;
use common::reduce::*;
use common::{Rng, mask, read};
use proptest::prelude::*;
use tensorbits::{
    Axes, Call, DataType, Error, Input, Op, Options, ReduceOp, Tensor, TensorDesc, compile,
    execute, knn, ops,
};

fn check_axes_case(seed: u64) {
    let mut rng = Rng(seed);
    let AxesCase {
        op,
        dt,
        out_dt,
        ins,
        call,
    } = axes_case(&mut rng);
    let shape = ins[0].0.sizes().to_vec();
    let expect = reference(op, &call, &ins, out_dt);
    let inputs: Vec<Input<'_>> = ins.iter().map(|(d, b)| Input::Bytes(d, b)).collect();
    let descs: Vec<&TensorDesc> = ins.iter().map(|(d, _)| d).collect();
    match expect {
        Expect::Fails(kind) => {
            let e = tensorbits::validate_new_output(op, &call, &descs, out_dt).unwrap_err();
            let ok = match kind {
                "axis" => matches!(e, Error::AxisOutOfRange { .. }),
                "repeated" => matches!(e, Error::RepeatedAxis { .. }),
                "overflow" => matches!(e, Error::SumOverflow { .. }),
                _ => matches!(e, Error::ShapeMismatch { .. }),
            };
            assert!(ok, "seed {seed}: {} expected {kind}, got {e}", op.name());
        }
        Expect::Values(out_shape, values) => {
            let mut od = TensorDesc::new(out_dt, &out_shape).unwrap();
            if rng.chance(40) {
                od = od
                    .with_strides(&random_strides(&mut rng, &out_shape, false))
                    .unwrap();
            }
            let mut out = vec![0xA5u8; od.total_bytes()];
            execute(op, &call, &inputs, &od, &mut out)
                .unwrap_or_else(|e| panic!("seed {seed}: {}: {e}", op.name()));
            let os = od.effective_strides();
            let mut touched = vec![false; out.len()];
            for (i, idx) in indices(&out_shape).iter().enumerate() {
                let at = offset(idx, &os);
                let got = read(&out, out_dt, at);
                assert_eq!(
                    got,
                    values[i] & mask(out_dt),
                    "seed {seed}: {} {dt}->{out_dt} shape {shape:?} {call:?} at {idx:?}",
                    op.name()
                );
                touched[at * out_dt.size()..(at + 1) * out_dt.size()].fill(true);
            }
            for (i, t) in touched.iter().enumerate() {
                assert!(
                    *t || out[i] == 0xA5,
                    "seed {seed}: byte {i} outside the output written"
                );
            }
            // A compiled call gives the same bytes.
            if let Ok(c) = compile(op, &call, &descs, &od) {
                let mut again = vec![0xA5u8; od.total_bytes()];
                let bufs: Vec<tensorbits::InputBuffer<'_>> = ins
                    .iter()
                    .map(|(_, b)| tensorbits::InputBuffer::Bytes(b))
                    .collect();
                c.execute(&bufs, &mut again).unwrap();
                assert_eq!(again, out, "seed {seed}: compiled");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn reductions_match_the_reference(seed in any::<u64>()) {
        check_axes_case(seed);
    }

    #[test]
    fn pairwise_and_knn_match_the_reference(seed in any::<u64>()) {
        check_pairwise_case(seed);
    }
}

fn check_pairwise_case(seed: u64) {
    let mut rng = Rng(seed);
    let all = pairwise_ops();
    let op = all[rng.below(all.len())];
    let types = op.all_types();
    let dt = types[rng.below(types.len())];
    let out_dt = match op.output_types() {
        Some(o) => o[rng.below(o.len())],
        None => dt,
    };
    let batch: Vec<usize> = (0..rng.below(3)).map(|_| 1 + rng.below(3)).collect();
    let bb = broadcastable(&mut rng, &batch);
    let dim = |rng: &mut Rng| if rng.chance(5) { 0 } else { 1 + rng.below(12) };
    let (m, n) = (dim(&mut rng), dim(&mut rng));
    let k = if rng.chance(5) { 0 } else { 1 + rng.below(20) };
    let kb = if rng.chance(5) { k + 1 } else { k };
    let mut sa = batch.clone();
    sa.extend([m, k]);
    let mut sb = bb.clone();
    sb.extend([n, kb]);
    let a = tensor(&mut rng, dt, &sa, true);
    let b = tensor(&mut rng, dt, &sb, true);
    let call = Call::default();
    let inputs = [Input::Bytes(&a.0, &a.1), Input::Bytes(&b.0, &b.1)];
    let descs = [&a.0, &b.0];
    let Some((shape, values)) = pairwise_reference(op, &a, &b) else {
        let e = tensorbits::validate_new_output(op, &call, &descs, out_dt).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "seed {seed}: {e}");
        return;
    };
    let r = op.reduce().unwrap();
    let max = out_dt.max_bits_value();
    if r == ReduceOp::Sum && k as u128 * u128::from(dt.bits()) > u128::from(max) {
        let e = tensorbits::validate_new_output(op, &call, &descs, out_dt).unwrap_err();
        assert!(matches!(e, Error::SumOverflow { .. }), "seed {seed}: {e}");
        return;
    }
    let od = TensorDesc::new(out_dt, &shape).unwrap();
    let mut out = vec![0u8; od.total_bytes()];
    execute(op, &call, &inputs, &od, &mut out)
        .unwrap_or_else(|e| panic!("seed {seed}: {}: {e}", op.name()));
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(
            read(&out, out_dt, i),
            v,
            "seed {seed}: {} {dt} a {sa:?} b {sb:?} at {i}",
            op.name()
        );
    }
    if r != ReduceOp::Sum {
        return;
    }
    // knn: every row's k smallest (distance, index) pairs.
    let kk = rng.below(n + 2);
    let mut kshape = shape.clone();
    let last = kshape.len() - 1;
    kshape[last] = kk;
    let mut dd = TensorDesc::new(out_dt, &kshape).unwrap();
    let mut id = TensorDesc::new(DataType::I64, &kshape).unwrap();
    // Outputs through strides (with gaps, in any order) as well as packed.
    if rng.chance(40) {
        dd = dd
            .with_strides(&random_strides(&mut rng, &kshape, false))
            .unwrap();
        id = id
            .with_strides(&random_strides(&mut rng, &kshape, false))
            .unwrap();
    }
    let mut dist = vec![0xA5u8; dd.total_bytes()];
    let mut idx = vec![0xA5u8; id.total_bytes()];
    let got = knn(op, &call, &inputs, kk, (&dd, &mut dist), (&id, &mut idx));
    if kk > n {
        assert!(
            matches!(got, Err(Error::KTooLarge { .. })),
            "seed {seed}: {got:?}"
        );
        return;
    }
    got.unwrap_or_else(|e| panic!("seed {seed}: knn: {e}"));
    let (ds, is) = (dd.effective_strides(), id.effective_strides());
    let (mut d_touched, mut i_touched) = (vec![false; dist.len()], vec![false; idx.len()]);
    for (row_c, at) in indices(&kshape).iter().enumerate() {
        let (row, c) = (row_c / kk, row_c % kk);
        let mut all: Vec<(u64, usize)> = (0..n).map(|j| (values[row * n + j], j)).collect();
        all.sort();
        let (d, j) = all[c];
        let (da, ia) = (offset(at, &ds), offset(at, &is));
        assert_eq!(read(&dist, out_dt, da), d, "seed {seed}: at {at:?}");
        assert_eq!(
            read(&idx, DataType::I64, ia),
            j as u64,
            "seed {seed}: at {at:?}"
        );
        d_touched[da * out_dt.size()..(da + 1) * out_dt.size()].fill(true);
        i_touched[ia * 8..(ia + 1) * 8].fill(true);
    }
    for (bytes, touched) in [(&dist, &d_touched), (&idx, &i_touched)] {
        for (i, t) in touched.iter().enumerate() {
            assert!(
                *t || bytes[i] == 0xA5,
                "seed {seed}: byte {i} outside knn's outputs written"
            );
        }
    }
}

/// The worked examples of the design, through the typed API.
#[test]
fn worked_examples() {
    let a = Tensor::from_vec(vec![0b1011u8, 0xff, 0, 1], &[2, 2]).unwrap();
    let b = Tensor::from_vec(vec![0b0001u8, 0x0f, 0, 0], &[2, 2]).unwrap();
    let d = ops::HammingDistance::run(&a, &b).unwrap();
    assert_eq!((d.shape(), d.data()), (&[2usize][..], &[6u32, 1][..]));
    let x = Tensor::from_vec(vec![1u8, 2, 4, 7, 7, 7], &[2, 3]).unwrap();
    let over = |axes: Axes| ops::BitXorReduce::run_with(&Options::new().axes(axes), &x).unwrap();
    assert_eq!(over(Axes::from([1])).data(), &[7, 7]);
    assert_eq!(over(Axes::from([0])).data(), &[6, 5, 3]);
    let empty = Tensor::<u8>::zeros(&[3, 0]).unwrap();
    let and = ops::BitAndReduce::run_with(&Options::new().axes([1]), &empty).unwrap();
    assert_eq!(
        (and.shape(), and.data()),
        (&[3usize][..], &[255u8, 255, 255][..])
    );
    let none = Tensor::<bool>::zeros(&[0]).unwrap();
    assert_eq!(ops::BitAndReduce::run(&none).unwrap().data(), &[true]);
    assert_eq!(ops::BitXorReduce::run(&none).unwrap().data(), &[false]);
    let q = Tensor::from_vec(vec![0u8, 255], &[2, 1]).unwrap();
    let base = Tensor::from_vec(vec![15u8, 0, 255], &[3, 1]).unwrap();
    let c = ops::HammingCdist::run(&q, &base).unwrap();
    assert_eq!(
        (c.shape(), c.data()),
        (&[2usize, 3][..], &[4u32, 0, 8, 4, 8, 0][..])
    );
    let (dist, idx) = ops::HammingCdist::knn(&q, &base, 2).unwrap();
    assert_eq!(dist.data(), &[0u32, 4, 0, 4]);
    assert_eq!(idx.data(), &[1i64, 0, 2, 0]);
    // keepdims keeps the reduced dimension as 1; other output types are chosen in the options.
    let kept =
        ops::BitCountSum::run_with(&Options::new().axes([-1]).keepdims(true).output::<u8>(), &x)
            .unwrap();
    assert_eq!(
        (kept.shape(), kept.data()),
        (&[2usize, 1][..], &[3u8, 9][..])
    );
}

/// The rules' messages, each naming what is wrong.
#[test]
fn errors_say_what_is_wrong() {
    let x = Tensor::from_vec(vec![1u64; 8], &[2, 4]).unwrap();
    let msg = |r: Result<Tensor<u8>, Error>| r.unwrap_err().to_string();
    assert_eq!(
        msg(ops::BitCountSum::run_with(
            &Options::new().output::<u8>(),
            &x
        )),
        "BIT_COUNT_SUM: a sum of 8 elements of up to 64 set bits each can reach 512, more than u8 holds (255); the smallest output type that fits is u16"
    );
    let e = ops::BitXorReduce::run_with(&Options::new().axes([2]), &x).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BIT_XOR_REDUCE: axis 2 is out of range for the broadcast input of rank 2 (valid: -2 to 1)"
    );
    let e = ops::BitXorReduce::run_with(&Options::new().axes([1, -1]), &x).unwrap_err();
    assert_eq!(
        e.to_string(),
        "BIT_XOR_REDUCE: axes 1 and -1 both name dimension 1; each axis may be reduced once"
    );
    let e = ops::BitXor::run_with(&Options::new().axes([0]), &x, &x).unwrap_err();
    assert!(e.to_string().contains("is element-wise"), "{e}");
    let e = ops::HammingCdist::run_with(&Options::new().axes([0]), &x, &x).unwrap_err();
    assert!(e.to_string().contains("is pairwise"), "{e}");
    let e = ops::HammingCdist::knn(&x, &x, 3).unwrap_err();
    assert_eq!(
        e.to_string(),
        "knn: k = 3 is more than the 2 rows of BTensor (HAMMING_CDIST)"
    );
    let y = Tensor::from_vec(vec![1u64; 6], &[2, 3]).unwrap();
    let e = ops::HammingCdist::run(&x, &y).unwrap_err();
    assert!(e.to_string().contains("K: 3 vs 4"), "{e}");
    assert!(Axes::new(&[0; 9]).is_err());
}

/// Sizes past the thread-pool threshold: rows, packed rows, columns, partial sums over the reduced
/// elements, and pairwise and knn tiles over threads (knn split over `b` when `a` has few rows).
#[test]
fn large_calls_take_every_path() {
    let mut rng = Rng(11);
    let cases: &[(&[usize], Option<Axes>)] = &[
        (&[128, 2048], Some(Axes::from([-1]))),
        (&[2048, 128], Some(Axes::from([0]))),
        (&[1 << 15, 16], Some(Axes::from([1]))),
        (&[2, 1 << 17], None),
        (&[64, 64, 64], Some(Axes::from([1]))),
        (&[3, 1 << 17], Some(Axes::from([0]))),
        // Column blocks of four rows and a rest, a partial block, and rows split over tasks at
        // no multiple of four.
        (&[7, 5000], Some(Axes::from([0]))),
        (&[600, 1000], Some(Axes::from([0]))),
        // Rows longer than one call of the kernel.
        (&[9, 70000], Some(Axes::from([1]))),
    ];
    for (i, (shape, axes)) in cases.iter().enumerate() {
        for op in [
            <ops::BitXorReduce as Op>::INFO,
            <ops::BitAndReduce as Op>::INFO,
            <ops::BitCountSum as Op>::INFO,
        ] {
            let dt = [DataType::U32, DataType::U8, DataType::I16][i % 3];
            let out_dt = op.output_types().map_or(dt, |o| o[0]);
            let a = tensor(&mut rng, dt, shape, false);
            let call = Call {
                axes: *axes,
                ..Call::default()
            };
            let Expect::Values(out_shape, values) =
                reference(op, &call, std::slice::from_ref(&a), out_dt)
            else {
                panic!("{shape:?}")
            };
            let od = TensorDesc::new(out_dt, &out_shape).unwrap();
            let mut out = vec![0u8; od.total_bytes()];
            execute(op, &call, &[Input::Bytes(&a.0, &a.1)], &od, &mut out).unwrap();
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(read(&out, out_dt, i), v, "{} {shape:?} at {i}", op.name());
            }
        }
    }
    // Pairwise and knn: many rows of `a`, and few (knn then splits `b` over the threads from
    // 4 MiB of work).
    // Few rows take `b` as it lies, word by word, with `b` split over the threads where they do
    // not share evenly among them; 37 bytes leave elements past the last whole word.
    for (m, n, k) in [
        (64usize, 1500usize, 32usize),
        (3, 12000, 32),
        (100, 700, 7),
        (1, 40000, 32),
        (5, 9001, 37),
        (2, 70000, 32), // few rows, over 4 MiB of work: knn splits `b`
        (10, 2000, 64), // a handful of rows that share evenly: split by rows
    ] {
        let a = tensor(&mut rng, DataType::U8, &[m, k], false);
        let b = tensor(&mut rng, DataType::U8, &[n, k], false);
        let op = <ops::HammingCdist as Op>::INFO;
        let (shape, values) = pairwise_reference(op, &a, &b).unwrap();
        let ta = Tensor::from_vec(a.1[..m * k].to_vec(), &[m, k]).unwrap();
        let tb = Tensor::from_vec(b.1[..n * k].to_vec(), &[n, k]).unwrap();
        let d = ops::HammingCdist::run(&ta, &tb).unwrap();
        assert_eq!(d.shape(), &shape[..]);
        assert!(
            d.data()
                .iter()
                .zip(&values)
                .all(|(&x, &y)| u64::from(x) == y)
        );
        let (dist, idx) = ops::HammingCdist::knn(&ta, &tb, 10).unwrap();
        for row in 0..m {
            let mut all: Vec<(u64, i64)> =
                (0..n).map(|j| (values[row * n + j], j as i64)).collect();
            all.sort();
            let want: Vec<(u64, i64)> = all[..10].to_vec();
            let got: Vec<(u64, i64)> = (0..10)
                .map(|c| {
                    (
                        u64::from(dist.data()[row * 10 + c]),
                        idx.data()[row * 10 + c],
                    )
                })
                .collect();
            assert_eq!(got, want, "m {m} n {n} row {row}");
        }
    }
    // Codes of every width the wide kernels unroll, of other widths, and wider than the packed
    // kernel's stack buffer, with row counts that leave partial register blocks on both sides, and
    // fewer rows of `a` than a block (`b` then counted as it lies).
    let op = <ops::HammingCdist as Op>::INFO;
    for (words, m) in [1usize, 2, 3, 4, 5, 8, 16, 17, 33, 40]
        .into_iter()
        .flat_map(|w| [(w, 13usize), (w, 1), (w, 5)])
    {
        for dt in [DataType::U64, DataType::U16] {
            let k = words * 8 / dt.size() + usize::from(words % 2 == 1);
            let a = tensor(&mut rng, dt, &[m, k], false);
            let b = tensor(&mut rng, dt, &[21, k], false);
            let (shape, values) = pairwise_reference(op, &a, &b).unwrap();
            let od = TensorDesc::new(DataType::U32, &shape).unwrap();
            let mut out = vec![0u8; od.total_bytes()];
            let inputs = [Input::Bytes(&a.0, &a.1), Input::Bytes(&b.0, &b.1)];
            execute(op, &Call::default(), &inputs, &od, &mut out).unwrap();
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(read(&out, DataType::U32, i), v, "{dt} k {k} at {i}");
            }
        }
    }
}

/// All-pairs results go from the kernels to the output in its own type (u16 to u64), in place where
/// the output's rows are packed and through a tile where they are not; `b` of one-word codes is
/// read in place as its packed form when its rows are consecutive, aligned and whole blocks, and
/// packed first otherwise; few rows of `a` split `b` over the threads, many split the rows. Each
/// case against the scalar reference.
/// knn keeps candidates in a heap for small `k` and by counting per distance value for large `k`:
/// both give a stable sort's first `k`, on codes with many ties (few bits set) and without, for
/// one query, a few, and enough rows to split over the threads.
#[test]
fn knn_by_heap_and_by_counting_match_a_sort() {
    let mut rng = Rng(31);
    // (rows of a, rows of b, code bytes, bits kept per byte)
    let cases: &[(usize, usize, usize, u8)] = &[
        (1, 5000, 8, 0xff),
        (1, 5000, 1, 0x03),   // distances 0..=2 only: buckets full of ties
        (3, 70_000, 4, 0x11), // few rows against b split over the threads
        (20, 3000, 32, 0xff),
        (20, 3000, 31, 0xff), // one share a thread through the tile, each packing its own `b`
        (40, 2000, 2, 0x0f),  // rows split over the threads
        (2, 300_000, 16, 0x11), // b split over the threads: the parts' lists merged
        (1, 90_000, 8, 0x11), // one query: b split wherever there are threads, ties merged
        (100, 1000, 8, 0xff), // blocks of eight rows, a task each
        (100, 1001, 20, 0xff), // the same, b packed once for every task, a partial last block
        (3, 700, 1040, 0x81), // more than 8,192 bits: a heap
    ];
    let op = <ops::HammingCdist as Op>::INFO;
    for &(m, n, bytes, keep) in cases {
        let mut a = tensor(&mut rng, DataType::U8, &[m, bytes], false);
        let mut b = tensor(&mut rng, DataType::U8, &[n, bytes], false);
        a.1.iter_mut()
            .chain(b.1.iter_mut())
            .for_each(|x| *x &= keep);
        let (_, values) = pairwise_reference(op, &a, &b).unwrap();
        let inputs = [Input::Bytes(&a.0, &a.1), Input::Bytes(&b.0, &b.1)];
        for k in [1, 2, 10, 31, 32, 33, 100, 1000, n] {
            if k > n {
                continue;
            }
            let label = format!("{m} x {n} x {bytes} bytes, k = {k}");
            knn_matches_a_sort(op, &inputs, &values, (m, n, k), &label);
        }
    }
}

/// knn of `inputs` (`m` rows against `n`) with `k`: each row's `k` smallest of the reference's
/// `values`, ties by the lower index, as a stable sort orders them.
fn knn_matches_a_sort(
    op: &tensorbits::OpInfo,
    inputs: &[Input<'_>],
    values: &[u64],
    (m, n, k): (usize, usize, usize),
    label: &str,
) {
    let dd = TensorDesc::new(DataType::U32, &[m, k]).unwrap();
    let id = TensorDesc::new(DataType::I64, &[m, k]).unwrap();
    let (mut dist, mut idx) = (vec![0u8; dd.total_bytes()], vec![0u8; id.total_bytes()]);
    knn(
        op,
        &Call::default(),
        inputs,
        k,
        (&dd, &mut dist),
        (&id, &mut idx),
    )
    .unwrap();
    for row in 0..m {
        let mut all: Vec<(u64, usize)> = (0..n).map(|j| (values[row * n + j], j)).collect();
        all.sort();
        for (c, &(d, j)) in all.iter().take(k).enumerate() {
            let at = row * k + c;
            assert_eq!(
                (
                    read(&dist, DataType::U32, at),
                    read(&idx, DataType::I64, at)
                ),
                (d, j as u64),
                "{label}, row {row}, rank {c}"
            );
        }
    }
}

/// knn's distances pass through a tile of `u16`s for codes of up to 65,535 bits and of `u64`s
/// past them: codes of 8,191 bytes (the largest `u16` tile) and 8,192 (the smallest `u64` one),
/// with a query of zeros against codes of all ones, zeros and random bits, in every element type.
/// A distance of 65,536 does not fit 16 bits: the streams' narrowing would store 65,535, a
/// plain store 0 (with the `u16` tile for every size, this test fails at 8,192 bytes).
#[test]
fn knn_distances_on_both_sides_of_the_u16_tile() {
    let mut rng = Rng(77);
    let op = <ops::HammingCdist as Op>::INFO;
    for (bytes, dt) in [
        (8191, DataType::U8),
        (8192, DataType::U8),
        (8192, DataType::U16),
        (8192, DataType::U64),
        (8200, DataType::U32),
    ] {
        let n = 40;
        let a_desc = TensorDesc::new(dt, &[2, bytes / dt.size()]).unwrap();
        let b_desc = TensorDesc::new(dt, &[n, bytes / dt.size()]).unwrap();
        // Query 0 all zeros, query 1 random; code 3 all ones, code 7 all zeros, others random.
        let mut a = vec![0u8; 2 * bytes];
        a[bytes..].iter_mut().for_each(|x| *x = rng.next() as u8);
        let mut b: Vec<u8> = (0..n * bytes).map(|_| rng.next() as u8).collect();
        b[3 * bytes..4 * bytes].fill(0xff);
        b[7 * bytes..8 * bytes].fill(0);
        let (_, values) =
            pairwise_reference(op, &(a_desc, a.clone()), &(b_desc, b.clone())).unwrap();
        assert_eq!(
            values[3],
            8 * bytes as u64,
            "the reference's largest distance"
        );
        let inputs = [Input::Bytes(&a_desc, &a), Input::Bytes(&b_desc, &b)];
        for k in [1, 10, n] {
            let label = format!("{bytes} bytes of {dt}, k = {k}");
            knn_matches_a_sort(op, &inputs, &values, (2, n, k), &label);
        }
    }
}

/// (rows of a, rows of b, elements, element type, byte offset of b's data): the cases of
/// [`pairwise_results_in_every_output_type_and_path`], run as two tests of alternate cases, which
/// the test harness runs on two threads (the cases take minutes in a debug build).
const OUTPUT_CASES: &[(usize, usize, usize, DataType, usize)] = &[
    (10, 16384, 8, DataType::U8, 0),   // few rows, one word, b in place
    (10, 16384, 8, DataType::U8, 1),   // the same with b unaligned: packed first
    (10, 16381, 8, DataType::U8, 0),   // a partial last block: packed first
    (3, 40000, 1, DataType::U64, 0),   // fewer rows than a block
    (100, 2048, 4, DataType::U16, 0),  // rows split over the threads
    (37, 3000, 4, DataType::U64, 0),   // four words, a partial block of rows of a
    (9, 1000, 3, DataType::U8, 0),     // no whole word: one padded word
    (1, 50000, 4, DataType::U8, 0),    // one query, half-word codes
    (2, 50003, 2, DataType::U16, 1),   // the same, sixteen per register and a tail
    (1, 10001, 8, DataType::U8, 0),    // one word streamed (a partial block: not in place)
    (3, 20005, 16, DataType::U8, 0),   // two words streamed, pairs summed across registers
    (2, 9001, 32, DataType::U8, 1),    // four words, b unaligned
    (5, 3003, 8, DataType::U64, 0),    // eight words
    (1, 7, 1, DataType::U32, 0),       // fewer codes than a register holds
    (1, 20001, 12, DataType::U8, 3),   // one query, a padded second word, b unaligned
    (20, 3001, 12, DataType::U8, 0),   // packed tiles of padded codes
    (16, 2000, 5, DataType::U16, 1),   // ten bytes, b unaligned
    (64, 5000, 1, DataType::U16, 0),   // two bytes: the whole code is padding but two
    (70, 1016, 8, DataType::U8, 0),    // more rows than a call takes, an odd count of blocks
    (8, 100_008, 8, DataType::U8, 0),  // one block of rows, b split over the threads
    (12, 1500, 9, DataType::U64, 0),   // packed tiles of nine words: the larger stack buffer
    (9, 600, 40, DataType::U64, 2),    // 320-byte codes: the rows' words on the heap
    (2, 30005, 6, DataType::U32, 0),   // 24 bytes streamed widened to 32, a tail
    (3, 9001, 10, DataType::U16, 0),   // 20 bytes widened to 32
    (1, 20003, 12, DataType::U32, 1),  // 48 bytes widened to 64, b unaligned
    (3, 16384, 8, DataType::U8, 0),    // a few rows streamed over b in place
    (7, 4099, 1, DataType::U64, 3),    // the most rows streamed, b unaligned, a tail
    (12, 3000, 2, DataType::U64, 0),   // packed tiles of two whole words (a transpose)
    (9, 1001, 4, DataType::U64, 1),    // four whole words, a partial last block
    (10, 1000, 16, DataType::U8, 0),   // streamed below sixteen rows: b not packed
    (15, 3001, 24, DataType::U8, 1),   // the most rows streamed, widened, b unaligned
    (2, 2003, 32, DataType::U64, 0),   // 256 bytes: four registers per code, a tail
    (3, 1001, 128, DataType::U8, 1),   // 128 bytes, b unaligned
    (40, 3001, 1, DataType::U32, 1),   // four bytes stream at any count of rows, b unaligned
    (300, 2000, 8, DataType::U8, 0),   // eight bytes streamed, rows split over the team
    (60, 2003, 75, DataType::U32, 1),  // 300 bytes: registers and a rest, 60 rows streamed
    (100, 3001, 25, DataType::U64, 0), // 200 bytes, the most rows streamed, by b's tiles
    (130, 1001, 300, DataType::U8, 0), // 300 bytes past the rows streamed: packed tiles
    (50, 2001, 48, DataType::U8, 2),   // 48 bytes, 50 rows streamed, b unaligned
    (1, 5003, 520, DataType::U8, 3),   // one query of 520 bytes, b unaligned
    (5, 999, 128, DataType::U64, 0),   // 1,024 bytes: sixteen registers, no rest
    (20, 3001, 20, DataType::U8, 0),   // packed tiles of three words, the last a part
    (70, 1001, 52, DataType::U8, 1),   // seven words, the last a part, b unaligned
    (70, 999, 5, DataType::U64, 0),    // five whole words, a partial last block
    (70, 1003, 6, DataType::U64, 3),   // six whole words, b unaligned
    (70, 1000, 22, DataType::U16, 0),  // six words, the last a part
    (4, 1001, 5, DataType::U16, 1),    // a few queries of 10 bytes streamed in windows
    (20, 50003, 24, DataType::U8, 0),  // b past the most packed whole: tiles per task
    (10, 3000, 31, DataType::U8, 0),   // ten rows in one share a thread, each packing its b
    (40, 3000, 24, DataType::U8, 0),   // a small output: one share of rows a thread
    (52, 1001, 3, DataType::U64, 1),   // shares of 26 rows (not whole blocks), b unaligned
];

#[test]
fn pairwise_results_in_every_output_type_and_path() {
    check_output_cases(23, OUTPUT_CASES.iter().step_by(2));
}

#[test]
fn pairwise_results_in_every_output_type_and_path_odd_cases() {
    check_output_cases(29, OUTPUT_CASES.iter().skip(1).step_by(2));
}

fn check_output_cases<'c>(
    seed: u64,
    cases: impl Iterator<Item = &'c (usize, usize, usize, DataType, usize)> + Clone,
) {
    let mut rng = Rng(seed);
    // Hamming (the padding counts nothing) and an op that counts the padding (XNOR of zeros).
    let ops = [<ops::HammingCdist as Op>::INFO, <XnorOrCdist as Op>::INFO];
    for (op, &(m, n, k, dt, offset)) in ops
        .iter()
        .flat_map(|op| cases.clone().map(move |c| (*op, c)))
        .filter(|(op, c)| op.all_types().contains(&c.3))
    {
        let a = tensor(&mut rng, dt, &[m, k], false);
        let b = tensor(&mut rng, dt, &[n, k], false);
        let (shape, values) = pairwise_reference(op, &a, &b).unwrap();
        let mut b_bytes = vec![0u8; offset];
        b_bytes.extend_from_slice(&b.1);
        let inputs = [
            Input::Bytes(&a.0, &a.1),
            Input::Bytes(&b.0, &b_bytes[offset..]),
        ];
        let max_sum = (k * dt.size() * 8) as u64;
        for &out_dt in op.output_types().unwrap() {
            if max_sum > out_dt.max_bits_value() {
                continue;
            }
            // Packed rows, and transposed ones ([n, m] memory read as [m, n]).
            for transposed in [false, true] {
                let mut od = TensorDesc::new(out_dt, &shape).unwrap();
                if transposed {
                    od = od.with_strides(&[1, m]).unwrap();
                }
                let mut out = vec![0u8; od.total_bytes()];
                execute(op, &Call::default(), &inputs, &od, &mut out)
                    .unwrap_or_else(|e| panic!("{m}x{n}x{k} {dt} -> {out_dt}: {e}"));
                for (i, &v) in values.iter().enumerate() {
                    let at = if transposed { (i % n) * m + i / n } else { i };
                    assert_eq!(
                        read(&out, out_dt, at),
                        v,
                        "{m}x{n}x{k} {dt} -> {out_dt}, transposed {transposed}, offset {offset}, at {i}"
                    );
                }
            }
            // The plain matrices' entry (no plan), between guard bytes it must not touch.
            let len = m * n * out_dt.size();
            let mut guarded = vec![0xA5u8; len + 128];
            let done = tensorbits::execute_pairwise_packed(
                op,
                &Call::default(),
                (m, n, k),
                dt,
                out_dt,
                // Descriptions round buffers up to whole 32-bit words; the packed entry takes
                // exact lengths.
                &a.1[..m * k * dt.size()],
                &b_bytes[offset..offset + n * k * dt.size()],
                &mut guarded[64..64 + len],
            )
            .unwrap_or_else(|e| panic!("{m}x{n}x{k} {dt} -> {out_dt}, packed: {e}"));
            assert!(done, "{m}x{n}x{k} {dt} -> {out_dt}: not taken as packed");
            assert!(
                guarded[..64]
                    .iter()
                    .chain(&guarded[64 + len..])
                    .all(|&x| x == 0xA5),
                "{m}x{n}x{k} {dt} -> {out_dt}: written outside the output"
            );
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(
                    read(&guarded[64..], out_dt, i),
                    v,
                    "{m}x{n}x{k} {dt} -> {out_dt}, packed, offset {offset}, at {i}"
                );
            }
        }
    }
}
