//! `merge_topk`: knn over shards of `b`, merged in any tree, equals knn over all of `b`, ties
//! included (codes of 32 bits tie often), for any chunking, chunks narrower than `k`, largest-first
//! ops; parts narrower than `k` give a narrower result, never padding; bad parts are errors.

mod common;

use common::Rng;
use tensorbits::{Error, Tensor, TensorView, merge_topk, ops};

type Part = (Tensor<u32>, Tensor<i64>);

fn view(p: &Part) -> (TensorView<'_, u32>, TensorView<'_, i64>) {
    (p.0.view(), p.1.view())
}

/// knn of `a` against rows `r0..r1` of `b`, indices as rows of the whole `b`.
fn shard(a: &Tensor<u32>, b: &[u32], (r0, r1): (usize, usize), k: usize) -> Part {
    let rows = Tensor::from_vec(b[r0..r1].to_vec(), &[r1 - r0, 1]).unwrap();
    let (d, i) = ops::HammingCdist::knn(a, &rows, k.min(r1 - r0)).unwrap();
    let shape = i.shape().to_vec();
    let shifted: Vec<i64> = i.data().iter().map(|&x| x + r0 as i64).collect();
    (d, Tensor::from_vec(shifted, &shape).unwrap())
}

fn merge(parts: &[Part], k: usize, largest: bool) -> Part {
    let views: Vec<_> = parts.iter().map(view).collect();
    merge_topk(&views, k, largest).unwrap()
}

#[test]
fn sharded_knn_merged_in_any_tree_is_the_whole_knn() {
    let mut rng = Rng(61);
    // Few distinct distances: 32-bit codes with few bits set tie constantly.
    let (m, n) = (7usize, 900usize);
    let sparse = |rng: &mut Rng| (rng.next() & rng.next() & rng.next()) as u32;
    let a = Tensor::from_vec((0..m).map(|_| sparse(&mut rng)).collect(), &[m, 1]).unwrap();
    let b: Vec<u32> = (0..n).map(|_| sparse(&mut rng)).collect();
    let whole = Tensor::from_vec(b.clone(), &[n, 1]).unwrap();
    for k in [1usize, 5, 40, 300, 900] {
        let (wd, wi) = ops::HammingCdist::knn(&a, &whole, k).unwrap();
        for cuts in [
            vec![0, n],
            vec![0, 1, 2, 3, n],
            vec![0, 100, 250, 251, 700, n],
            (0..=n).step_by(7).chain([n]).collect::<Vec<_>>(),
        ] {
            let parts: Vec<Part> = cuts
                .windows(2)
                .filter(|w| w[1] > w[0])
                .map(|w| shard(&a, &b, (w[0], w[1]), k))
                .collect();
            // All at once, folded from the left, and as a balanced tree.
            let flat = merge(&parts, k, false);
            let mut folded = parts[0].clone();
            for p in &parts[1..] {
                folded = merge(&[folded, p.clone()], k, false);
            }
            let mut level = parts.clone();
            while level.len() > 1 {
                level = level.chunks(2).map(|c| merge(c, k, false)).collect();
            }
            for (how, got) in [("flat", &flat), ("folded", &folded), ("tree", &level[0])] {
                assert_eq!(got.0.data(), wd.data(), "k={k} {how} {cuts:?}: distances");
                assert_eq!(got.1.data(), wi.data(), "k={k} {how} {cuts:?}: indices");
                assert_eq!(got.0.shape(), wd.shape());
            }
        }
    }
}

#[test]
fn largest_first_parts_merge_as_largest_first_knn() {
    let mut rng = Rng(62);
    let (m, n, k) = (5usize, 600usize, 25usize);
    let a = Tensor::from_vec((0..m).map(|_| rng.next() as u8).collect(), &[m, 1]).unwrap();
    let b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
    let whole = Tensor::from_vec(b.clone(), &[n, 1]).unwrap();
    let (wd, wi) = ops::BinaryDot::knn(&a, &whole, k).unwrap();
    let mut parts = Vec::new();
    for (r0, r1) in [(0usize, 13usize), (13, 300), (300, 301), (301, n)] {
        let rows = Tensor::from_vec(b[r0..r1].to_vec(), &[r1 - r0, 1]).unwrap();
        let (d, i) = ops::BinaryDot::knn(&a, &rows, k.min(r1 - r0)).unwrap();
        let shape = i.shape().to_vec();
        let shifted: Vec<i64> = i.data().iter().map(|&x| x + r0 as i64).collect();
        parts.push((d, Tensor::from_vec(shifted, &shape).unwrap()));
    }
    let views: Vec<_> = parts.iter().map(|(d, i)| (d.view(), i.view())).collect();
    let (d, i) = merge_topk(&views, k, true).unwrap();
    assert_eq!((d.data(), i.data()), (wd.data(), wi.data()));
    // Ranked the other way, the parts are out of order: an error, not a wrong answer.
    let e = merge_topk(&views, k, false).unwrap_err();
    assert!(
        matches!(&e, Error::BadArgument { reason, .. } if reason.contains("order")),
        "{e}"
    );
}

#[test]
fn fewer_candidates_than_k_give_a_narrower_result() {
    let d1 = Tensor::from_vec(vec![1u32, 4, 2, 2], &[2, 2]).unwrap();
    let i1 = Tensor::from_vec(vec![3i64, 0, 5, 9], &[2, 2]).unwrap();
    let d2 = Tensor::from_vec(vec![4u32, 1], &[2, 1]).unwrap();
    let i2 = Tensor::from_vec(vec![1i64, 7], &[2, 1]).unwrap();
    let (d, i) = merge_topk(&[(d1.view(), i1.view()), (d2.view(), i2.view())], 10, false).unwrap();
    assert_eq!(d.shape(), &[2, 3]);
    // Row 0: 4 at index 0 and at index 1 tie: the lower index first.
    assert_eq!(d.data(), &[1, 4, 4, 1, 2, 2]);
    assert_eq!(i.data(), &[3, 0, 1, 7, 5, 9]);
    // No parts, or parts of no entries: an empty result.
    let (d, _) = merge_topk::<u32>(&[], 3, false).unwrap();
    assert_eq!(d.shape(), &[0, 0]);
}

#[test]
fn float_values_rank_as_numbers() {
    let d1 = Tensor::from_vec(vec![0.5f32, -0.0, -1.5], &[1, 3]).unwrap();
    let i1 = Tensor::from_vec(vec![2i64, 4, 6], &[1, 3]).unwrap();
    let d2 = Tensor::from_vec(vec![0.75f32, 0.0, -2.0], &[1, 3]).unwrap();
    let i2 = Tensor::from_vec(vec![1i64, 3, 5], &[1, 3]).unwrap();
    let (d, i) = merge_topk(&[(d1.view(), i1.view()), (d2.view(), i2.view())], 4, true).unwrap();
    // -0.0 and 0.0 are one value: the lower index first.
    assert_eq!(i.data(), &[1, 2, 3, 4]);
    assert_eq!(d.data()[..2], [0.75, 0.5]);
    let nan = Tensor::from_vec(vec![f32::NAN], &[1, 1]).unwrap();
    let e = merge_topk(&[(nan.view(), i1.view())], 1, true);
    assert!(e.is_err());
}

#[test]
fn bad_parts_are_errors() {
    let d = Tensor::from_vec(vec![1u32, 2], &[1, 2]).unwrap();
    let padded = Tensor::from_vec(vec![0i64, -1], &[1, 2]).unwrap();
    let e = merge_topk(&[(d.view(), padded.view())], 2, false).unwrap_err();
    assert!(e.to_string().contains("-1"), "{e}");
    let unsorted = Tensor::from_vec(vec![2u32, 1], &[1, 2]).unwrap();
    let i = Tensor::from_vec(vec![0i64, 1], &[1, 2]).unwrap();
    assert!(merge_topk(&[(unsorted.view(), i.view())], 2, false).is_err());
    // Ties must come in index order.
    let tied = Tensor::from_vec(vec![1u32, 1], &[1, 2]).unwrap();
    let backwards = Tensor::from_vec(vec![5i64, 2], &[1, 2]).unwrap();
    assert!(merge_topk(&[(tied.view(), backwards.view())], 2, false).is_err());
    // Parts of other rows, and values and indices of other shapes.
    let two = Tensor::from_vec(vec![1u32, 2], &[2, 1]).unwrap();
    let two_i = Tensor::from_vec(vec![1i64, 2], &[2, 1]).unwrap();
    assert!(
        merge_topk(
            &[(d.view(), i.view()), (two.view(), two_i.view())],
            2,
            false
        )
        .is_err()
    );
    assert!(merge_topk(&[(d.view(), two_i.view())], 2, false).is_err());
}
