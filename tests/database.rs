//! A prepared [`Database`] gives what the plain calls give, ties included: knn and range search
//! for ratio ops and for sums of counts, both orders, valid bits in both bit orders; it compares
//! fewer rows than the plain scan where the bounds allow; its parts make it again, and parts that
//! are not one database's are refused.

mod common;

use common::Rng;
use tensorbits::{
    BitOrder, Call, DataType, Database, Input, Op, OpInfo, TensorDesc, knn, ops, range_search,
};

/// Fingerprint-like codes: sparse, with counts spread, some rows empty, some repeated.
fn codes(rng: &mut Rng, rows: usize, k: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(rows * k);
    for r in 0..rows {
        let density = 1 + r % 4;
        for _ in 0..k {
            let mut x = rng.next() as u8;
            for _ in 0..density {
                x &= rng.next() as u8;
            }
            v.push(x);
        }
    }
    for r in (0..rows).step_by(11) {
        v[r * k..(r + 1) * k].fill(0);
    }
    for r in (3..rows).step_by(7) {
        let (head, tail) = v.split_at_mut(r * k);
        tail[..k].copy_from_slice(&head[..k]);
    }
    v
}

fn plain_knn(
    op: &OpInfo,
    call: &Call,
    q: (&TensorDesc, &[u8]),
    b: (&TensorDesc, &[u8]),
    k: usize,
    out: DataType,
) -> (Vec<u8>, Vec<i64>) {
    let m = q.0.sizes()[0];
    let dd = TensorDesc::new(out, &[m, k]).unwrap();
    let id = TensorDesc::new(DataType::I64, &[m, k]).unwrap();
    let mut dist = vec![0u8; m * k * out.size()];
    let mut idx = vec![0u8; m * k * 8];
    knn(
        op,
        call,
        &[Input::Bytes(q.0, q.1), Input::Bytes(b.0, b.1)],
        k,
        (&dd, &mut dist),
        (&id, &mut idx),
    )
    .unwrap();
    let idx = idx
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (dist, idx)
}

fn cases() -> Vec<(&'static OpInfo, DataType, Vec<f64>)> {
    vec![
        (
            <ops::Tanimoto as Op>::INFO,
            DataType::F32,
            vec![0.0, 0.1, 1.0 / 3.0, 0.5, 0.7, 1.0],
        ),
        (<ops::Dice as Op>::INFO, DataType::F64, vec![0.25, 0.6, 0.9]),
        (
            <ops::HammingCdist as Op>::INFO,
            DataType::U32,
            vec![0.0, 5.0, 20.5, 40.0],
        ),
        (
            <ops::BinaryDot as Op>::INFO,
            DataType::I32,
            vec![-10.0, 30.0, 60.0],
        ),
    ]
}

#[test]
fn the_database_gives_what_the_plain_calls_give() {
    let mut rng = Rng(140);
    for &(m, n, k) in &[(5usize, 400usize, 8usize), (3, 1200, 32), (2, 300, 3)] {
        let (q, b) = (codes(&mut rng, m, k), codes(&mut rng, n, k));
        let (dq, dbd) = (
            TensorDesc::new(DataType::U8, &[m, k]).unwrap(),
            TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
        );
        for (op, out, thresholds) in cases() {
            for (bits, order) in [(None, BitOrder::Big), (Some(k * 8 - 5), BitOrder::Little)] {
                let call = Call {
                    bits,
                    bitorder: order,
                    ..Call::default()
                };
                let db = Database::new(op, &call, &dbd, &b).unwrap();
                for largest in [None, Some(true), Some(false)] {
                    let c = Call { largest, ..call };
                    let what = format!(
                        "{} {m}x{n}x{k} bits {bits:?} largest {largest:?}",
                        op.name()
                    );
                    for kk in [1, 10, n] {
                        let want = plain_knn(op, &c, (&dq, &q), (&dbd, &b), kk, out);
                        let got = db.knn(&c, (&dq, &q), kk, out).unwrap();
                        assert_eq!(got.indices, want.1, "{what} k={kk}");
                        assert_eq!(got.values, want.0, "{what} k={kk}");
                        assert!(got.scanned <= (m * n) as u64);
                    }
                    for &t in &thresholds {
                        let inputs = [Input::Bytes(&dq, &q), Input::Bytes(&dbd, &b)];
                        let want = range_search(op, &c, &inputs, t, out).unwrap();
                        let got = db.range_search(&c, (&dq, &q), t, out).unwrap();
                        assert_eq!(got.hits, want, "{what} t={t}");
                    }
                }
            }
        }
    }
}

#[test]
fn bounds_skip_rows_that_cannot_reach_the_results() {
    let mut rng = Rng(141);
    let (n, k) = (4000usize, 64usize);
    let b = codes(&mut rng, n, k);
    let q = b[18 * k..19 * k].to_vec();
    let (dq, dbd) = (
        TensorDesc::new(DataType::U8, &[1, k]).unwrap(),
        TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
    );
    let op = <ops::Tanimoto as Op>::INFO;
    let db = Database::new(op, &Call::default(), &dbd, &b).unwrap();
    let r = db
        .range_search(&Call::default(), (&dq, &q), 0.8, DataType::F32)
        .unwrap();
    assert!(r.hits.indices.contains(&18));
    assert!(r.scanned < n as u64 / 2, "scanned {} of {n}", r.scanned);
    let r = db
        .knn(&Call::default(), (&dq, &q), 5, DataType::F32)
        .unwrap();
    assert_eq!(r.indices[0], 18);
    assert!(r.scanned < n as u64, "scanned {} of {n}", r.scanned);
}

#[test]
fn parts_make_the_database_again_and_foreign_parts_are_refused() {
    let mut rng = Rng(142);
    let (n, k) = (200usize, 4usize);
    let b = codes(&mut rng, n, k);
    let dbd = TensorDesc::new(DataType::U8, &[n, k]).unwrap();
    let op = <ops::Tanimoto as Op>::INFO;
    let call = Call {
        bits: Some(29),
        ..Call::default()
    };
    let db = Database::new(op, &call, &dbd, &b).unwrap();
    assert!(db.counts().windows(2).all(|w| w[0] <= w[1]));
    let again = Database::from_parts(
        op,
        &call,
        DataType::U8,
        k,
        db.codes(),
        db.counts(),
        db.order(),
    )
    .unwrap();
    let q = b[..3 * k].to_vec();
    let dq = TensorDesc::new(DataType::U8, &[3, k]).unwrap();
    assert_eq!(
        again.knn(&call, (&dq, &q), 7, DataType::F64).unwrap(),
        db.knn(&call, (&dq, &q), 7, DataType::F64).unwrap()
    );
    // A changed count, a code with padding set, an order that repeats an index, a short part.
    let mut counts = db.counts().to_vec();
    counts[5] += 1;
    assert!(
        Database::from_parts(op, &call, DataType::U8, k, db.codes(), &counts, db.order()).is_err()
    );
    let mut codes = db.codes().to_vec();
    codes[3] |= 0x07;
    assert!(
        Database::from_parts(op, &call, DataType::U8, k, &codes, db.counts(), db.order()).is_err()
    );
    let mut order = db.order().to_vec();
    order[1] = order[0];
    assert!(
        Database::from_parts(op, &call, DataType::U8, k, db.codes(), db.counts(), &order).is_err()
    );
    assert!(
        Database::from_parts(
            op,
            &call,
            DataType::U8,
            k,
            &db.codes()[1..],
            db.counts(),
            db.order()
        )
        .is_err()
    );
    // Queries under other valid bits, and an op a database cannot bound.
    let e = db
        .knn(&Call::default(), (&dq, &q), 1, DataType::F32)
        .unwrap_err();
    assert!(e.to_string().contains("29 valid bits"), "{e}");
    let e = Database::new(
        <ops::HammingDistance as Op>::INFO,
        &Call::default(),
        &dbd,
        &b,
    )
    .unwrap_err();
    assert!(!e.to_string().is_empty());
}

#[test]
fn rows_of_no_bits_and_databases_of_no_rows() {
    let op = <ops::Tanimoto as Op>::INFO;
    let (dq, db) = (
        TensorDesc::new(DataType::U8, &[2, 0]).unwrap(),
        TensorDesc::new(DataType::U8, &[3, 0]).unwrap(),
    );
    let d = Database::new(op, &Call::default(), &db, &[]).unwrap();
    assert_eq!(d.counts(), &[0, 0, 0]);
    let want = plain_knn(
        op,
        &Call::default(),
        (&dq, &[]),
        (&db, &[]),
        2,
        DataType::F32,
    );
    let got = d
        .knn(&Call::default(), (&dq, &[]), 2, DataType::F32)
        .unwrap();
    assert_eq!((got.values, got.indices), want);
    let empty = TensorDesc::new(DataType::U8, &[0, 8]).unwrap();
    let e = Database::new(op, &Call::default(), &empty, &[]).unwrap();
    assert!(e.is_empty());
    let q = TensorDesc::new(DataType::U8, &[1, 8]).unwrap();
    let r = e
        .range_search(&Call::default(), (&q, &[0u8; 8]), 0.5, DataType::F32)
        .unwrap();
    assert_eq!((r.hits.lims, r.scanned), (vec![0, 0], 0));
}
