//! `rescore` against a float64 reference that unpacks the codes, as sentence-transformers does:
//! exact wherever the sums are (queries of small dyadic values here), both bit orders, the table
//! path (many candidates) and the bit-by-bit path (few), skipped candidates, ties, padding, errors.

mod common;

use common::Rng;
use tensorbits::{BitOrder, Error, Tensor, rescore};

fn bit(codes: &[u8], nb: usize, row: usize, j: usize, order: BitOrder) -> bool {
    let b = codes[row * nb + j / 8];
    match order {
        BitOrder::Big => b >> (7 - j % 8) & 1 != 0,
        BitOrder::Little => b >> (j % 8) & 1 != 0,
    }
}

#[test]
fn matches_a_float64_reference_of_unpacked_codes() {
    let mut rng = Rng(41);
    for &(m, d, n, c, k) in &[
        (3usize, 7usize, 20usize, 5usize, None),
        (4, 64, 50, 40, Some(10)),
        (2, 130, 300, 200, Some(200)),
        (5, 384, 1000, 12, Some(3)),
        (1, 1, 3, 3, None),
        (64, 96, 500, 64, Some(8)),
    ] {
        for order in [BitOrder::Big, BitOrder::Little] {
            // Codes with a spare byte past the query's bits, which must not count.
            let nb = d.div_ceil(8) + usize::from(d % 3 == 0);
            let codes: Vec<u8> = (0..n * nb).map(|_| rng.next() as u8).collect();
            // Multiples of 1/4 in [-8, 8]: every partial sum is exact in f32.
            let q: Vec<f32> = (0..m * d)
                .map(|_| (rng.below(65) as f32 - 32.0) / 4.0)
                .collect();
            let cands: Vec<i64> = (0..m * c)
                .map(|_| {
                    if rng.chance(10) {
                        -1
                    } else {
                        rng.below(n) as i64
                    }
                })
                .collect();
            let qt = Tensor::from_vec(q.clone(), &[m, d]).unwrap();
            let ct = Tensor::from_vec(codes.clone(), &[n, nb]).unwrap();
            let kt = Tensor::from_vec(cands.clone(), &[m, c]).unwrap();
            let (s, idx) = rescore(&qt, &ct, &kt, k, order).unwrap();
            let k = k.unwrap_or(c);
            assert_eq!(s.shape(), &[m, k]);
            for i in 0..m {
                let mut want: Vec<(f64, i64)> = cands[i * c..i * c + c]
                    .iter()
                    .filter(|&&x| x >= 0)
                    .map(|&x| {
                        let s: f64 = (0..d)
                            .map(|j| {
                                let sign = if bit(&codes, nb, x as usize, j, order) {
                                    1.0
                                } else {
                                    -1.0
                                };
                                f64::from(q[i * d + j]) * sign
                            })
                            .sum();
                        (s, x)
                    })
                    .collect();
                want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                for j in 0..k {
                    let (gs, gi) = (s.data()[i * k + j], idx.data()[i * k + j]);
                    match want.get(j) {
                        Some(&(ws, wi)) => {
                            assert_eq!(gs.to_bits(), (ws as f32).to_bits(), "query {i} rank {j}");
                            assert_eq!(gi, wi, "query {i} rank {j}");
                        }
                        None => assert!(gi == -1 && gs == f32::NEG_INFINITY),
                    }
                }
            }
        }
    }
}

#[test]
fn float64_queries_and_strided_views() {
    let q = Tensor::from_vec(vec![1.5f64, -0.25, 3.0, 1.5, -0.25, 3.0], &[2, 3]).unwrap();
    let codes = Tensor::from_vec(vec![0b1110_0000u8, 0b0000_0000, 0b1010_0000], &[3, 1]).unwrap();
    // Both rows of candidates name the same codes; ties (codes 0 and 0 again) by the lower index.
    let cands = Tensor::from_vec(vec![2i64, 1, 0, 0, 1, 2], &[2, 3]).unwrap();
    let (s, i) = rescore(&q, &codes, &cands, None, BitOrder::Big).unwrap();
    // Code 0: 1.5 + 0.25... all bits set: 4.25; code 2: 1.5 + 0.25 + 3 = 4.75; code 1: -4.25.
    assert_eq!(s.data(), &[4.75, 4.25, -4.25, 4.75, 4.25, -4.25]);
    assert_eq!(i.data(), &[2, 0, 1, 2, 0, 1]);
    let t = Tensor::from_vec(vec![0i64, 2, 1, 1, 2, 0], &[3, 2]).unwrap();
    let tv = tensorbits::TensorView::with_strides(t.data(), &[2, 3], &[1, 2]).unwrap();
    let (s2, i2) = rescore(&q, &codes, tv, Some(1), BitOrder::Big).unwrap();
    assert_eq!(
        (s2.data(), i2.data()),
        (&[4.75f32, 4.75][..], &[2i64, 2][..])
    );
}

#[test]
fn bad_arguments_name_what_is_wrong() {
    let q = Tensor::from_vec(vec![1.0f32; 18], &[2, 9]).unwrap();
    let codes = Tensor::from_vec(vec![0u8; 8], &[4, 2]).unwrap();
    let cands = Tensor::from_vec(vec![0i64, 1, 2, 3], &[2, 2]).unwrap();
    let msg = |e: Error| {
        assert!(matches!(e, Error::BadArgument { op: "rescore", .. }), "{e}");
        e.to_string()
    };
    let short = Tensor::from_vec(vec![0u8; 4], &[4, 1]).unwrap();
    assert!(
        msg(rescore(&q, &short, &cands, None, BitOrder::Big).unwrap_err()).contains("9 values")
    );
    let far = Tensor::from_vec(vec![0i64, 4, 2, 3], &[2, 2]).unwrap();
    assert!(
        msg(rescore(&q, &codes, &far, None, BitOrder::Big).unwrap_err()).contains("candidate 4")
    );
    // Only -1 is padding: any other negative id is named with its query and column.
    for bad in [-2i64, i64::MIN] {
        let neg = Tensor::from_vec(vec![0i64, 1, 2, bad], &[2, 2]).unwrap();
        let m = msg(rescore(&q, &codes, &neg, None, BitOrder::Big).unwrap_err());
        assert!(
            m.contains(&format!("candidate {bad} (query 1, column 1)")),
            "{m}"
        );
    }
    assert!(
        msg(rescore(&q, &codes, &cands, Some(3), BitOrder::Big).unwrap_err()).contains("k = 3")
    );
    let one = Tensor::from_vec(vec![0i64, 1], &[1, 2]).unwrap();
    assert!(
        msg(rescore(&q, &codes, &one, None, BitOrder::Big).unwrap_err())
            .contains("one row per query")
    );
    let flat = Tensor::from_vec(vec![1.0f32; 9], &[9]).unwrap();
    assert!(
        msg(rescore(&flat, &codes, &cands, None, BitOrder::Big).unwrap_err()).contains("[M, D]")
    );
}
