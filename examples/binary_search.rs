//! Binary-embedding search end to end: float vectors, `binarize` (one bit per dimension, 32x
//! smaller), exact Hamming `knn` with 4x oversampling, then `rescore` of the candidates with the
//! float queries against their packed codes. Reports recall@10 against exact float search (the
//! true 10 largest dot products) after each stage. The data is synthetic: documents around
//! topics, queries near documents, made here with a fixed seed.
//!
//! Prints:
//! ```text
//! codes: [5000, 32] u8 (32x smaller than the floats)
//! knn: [50, 40] candidates per query
//! rescore: [50, 10] f32 scores
//! recall@10, Hamming distance only: 0.850
//! recall@10, after rescore:         0.854
//! ```

use tensorbits::ops::HammingCdist;
use tensorbits::{BitOrder, Tensor, binarize, rescore};

const DOCS: usize = 5000;
const QUERIES: usize = 50;
const DIM: usize = 256;
const TOPICS: usize = 500;
const TOP: usize = 10;
const OVERSAMPLE: usize = 4;

/// splitmix64, and normal samples from it (Box-Muller).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `v` scaled to unit length.
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// `base` plus noise of length `scale`, normalized.
fn near(rng: &mut Rng, base: &[f32], scale: f32) -> Vec<f32> {
    let noise = unit((0..DIM).map(|_| rng.normal()).collect());
    unit(base.iter().zip(noise).map(|(b, n)| b + scale * n).collect())
}

fn main() -> Result<(), tensorbits::Error> {
    let mut rng = Rng(42);
    let topics: Vec<Vec<f32>> = (0..TOPICS)
        .map(|_| unit((0..DIM).map(|_| rng.normal()).collect()))
        .collect();
    let docs: Vec<Vec<f32>> = (0..DOCS)
        .map(|_| {
            let t = rng.below(TOPICS);
            near(&mut rng, &topics[t], 0.7)
        })
        .collect();
    let queries: Vec<Vec<f32>> = (0..QUERIES)
        .map(|_| {
            let d = rng.below(DOCS);
            near(&mut rng, &docs[d], 0.5)
        })
        .collect();

    // The truth: exact float search, the 10 largest dot products (ties by the lower index).
    let truth: Vec<Vec<usize>> = queries
        .iter()
        .map(|q| {
            let mut s: Vec<(f32, usize)> = docs
                .iter()
                .enumerate()
                .map(|(i, d)| (q.iter().zip(d).map(|(a, b)| a * b).sum(), i))
                .collect();
            s.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            s[..TOP].iter().map(|&(_, i)| i).collect()
        })
        .collect();

    let docs_t = Tensor::from_vec(docs.concat(), &[DOCS, DIM])?;
    let queries_t = Tensor::from_vec(queries.concat(), &[QUERIES, DIM])?;

    // 1. Binarize: bit i of a code is x[i] > 0, as np.packbits(x > 0, axis=-1) packs it.
    let doc_codes = binarize(&docs_t, 0.0f32, BitOrder::Big)?;
    let query_codes = binarize(&queries_t, 0.0f32, BitOrder::Big)?;
    println!(
        "codes: {:?} u8 ({}x smaller than the floats)",
        doc_codes.shape(),
        DIM * 4 / doc_codes.shape()[1]
    );

    // 2. Exact Hamming search with 4x oversampling.
    let (_, candidates) = HammingCdist::knn(&query_codes, &doc_codes, TOP * OVERSAMPLE)?;
    println!("knn: {:?} candidates per query", candidates.shape());

    // 3. Rescore the candidates with the float queries, from the packed codes.
    let (scores, best) = rescore(
        &queries_t,
        &doc_codes,
        &candidates,
        Some(TOP),
        BitOrder::Big,
    )?;
    println!("rescore: {:?} f32 scores", scores.shape());

    let recall = |found: &Tensor<i64>, per: usize| {
        let hits: usize = truth
            .iter()
            .enumerate()
            .map(|(q, t)| {
                let row = &found.data()[q * per..q * per + TOP];
                row.iter().filter(|&&i| t.contains(&(i as usize))).count()
            })
            .sum();
        hits as f64 / (QUERIES * TOP) as f64
    };
    println!(
        "recall@{TOP}, Hamming distance only: {:.3}",
        recall(&candidates, TOP * OVERSAMPLE)
    );
    println!(
        "recall@{TOP}, after rescore:         {:.3}",
        recall(&best, TOP)
    );
    Ok(())
}
