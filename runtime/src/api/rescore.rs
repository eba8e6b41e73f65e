//! `rescore`: the float rescoring step of binary search (sentence-transformers' `rescore=True`).
//! Each query row `q` (D values) scores the packed code rows its candidates name by
//! `sum_j q_j * (2 * bit_j(code) - 1)` over the first D bits, without unpacking them: the score is
//! `2 * S - sum(q)`, where `S` sums the query's values at the code's set bits, read from one table
//! per code byte (256 partial sums of the query's eight values there) when a query has enough
//! candidates to pay for such tables, else from two tables of 16 per byte. Sums run in `f64` and
//! round once to `f32`.

use crate::element::Element;
use crate::error::{Error, Result, ShapeText};
use crate::op::BitOrder;
use crate::{Tensor, TensorView};
use rayon::prelude::*;

const RESCORE: &str = "rescore";

/// From this many candidates per query, scores come from per-byte tables of the query (256 sums
/// per code byte to build, one lookup per byte and candidate) rather than per-nibble tables (32
/// sums per byte, two lookups).
const BYTE_TABLE_CANDIDATES: usize = 64;

/// Work (candidates times code bytes, summed over queries) from which queries are spread over the
/// thread pool.
const PARALLEL_WORK: usize = 1 << 16;

/// The scores of one query's candidates; `None` for a skipped (-1) candidate.
fn score_query(
    q: &[f64],
    codes: &[u8],
    nb: usize,
    cands: &[i64],
    order: BitOrder,
    scores: &mut Vec<Option<f64>>,
) {
    let d = q.len();
    let total: f64 = q.iter().sum();
    let bit = |i: usize| match order {
        BitOrder::Big => 7 - i,
        BitOrder::Little => i,
    };
    // The code bytes that hold the query's D bits; bits past D are not read.
    let used = d.div_ceil(8);
    scores.clear();
    // For each code byte, the query value at each bit of the byte's value (0 past D).
    let mut vals = vec![[0f64; 8]; used];
    for (b, val) in vals.iter_mut().enumerate() {
        for e in 0..8 {
            if b * 8 + e < d {
                val[bit(e)] = q[b * 8 + e];
            }
        }
    }
    // Tables of `2^w` partial sums per group of `w` bits: entry v sums the values at v's set
    // bits, built from the entry without v's lowest set bit.
    let build = |w: usize| {
        let per = 1usize << w;
        let mut table = vec![0f64; used * (8 / w) * per];
        for (b, val) in vals.iter().enumerate() {
            for g in 0..8 / w {
                let t = &mut table[(b * (8 / w) + g) * per..][..per];
                for v in 1..per {
                    t[v] = t[v & (v - 1)] + val[g * w + v.trailing_zeros() as usize];
                }
            }
        }
        table
    };
    let valid = cands.iter().filter(|&&c| c >= 0).count();
    let row = |c: i64| &codes[c as usize * nb..c as usize * nb + used];
    if valid >= BYTE_TABLE_CANDIDATES {
        // One lookup per code byte; 32 sums per query value to build.
        let table = build(8);
        for &c in cands {
            scores.push((c >= 0).then(|| {
                let s: f64 = row(c)
                    .iter()
                    .enumerate()
                    .map(|(b, &v)| table[b * 256 + usize::from(v)])
                    .sum();
                2.0 * s - total
            }));
        }
    } else {
        // Two lookups per code byte; 4 sums per query value to build.
        let table = build(4);
        for &c in cands {
            scores.push((c >= 0).then(|| {
                let s: f64 = row(c)
                    .iter()
                    .enumerate()
                    .map(|(b, &v)| {
                        table[b * 32 + usize::from(v & 15)]
                            + table[b * 32 + 16 + usize::from(v >> 4)]
                    })
                    .sum();
                2.0 * s - total
            }));
        }
    }
}

/// The best `k` of one query's scored candidates into `out_s`, `out_i`: scores descending (a NaN
/// below every number), ties by the lower index; slots past the valid candidates get index -1
/// and score -inf.
fn select(cands: &[i64], scores: &[Option<f64>], out_s: &mut [f32], out_i: &mut [i64]) {
    let mut order: Vec<(f32, i64)> = cands
        .iter()
        .zip(scores)
        .filter_map(|(&c, s)| s.map(|s| (s as f32, c)))
        .collect();
    order.sort_by(|a, b| {
        let key = |s: f32| if s.is_nan() { f32::NEG_INFINITY } else { s };
        key(b.0)
            .total_cmp(&key(a.0))
            .then(a.0.is_nan().cmp(&b.0.is_nan()))
            .then(a.1.cmp(&b.1))
    });
    for (j, (s, i)) in out_s.iter_mut().zip(out_i.iter_mut()).enumerate() {
        match order.get(j) {
            Some(&(sc, c)) => {
                *s = sc;
                *i = c;
            }
            None => {
                *s = f32::NEG_INFINITY;
                *i = -1;
            }
        }
    }
}

/// Rescoring of binary-search candidates with float queries: for query row `i` of `queries`
/// (`[M, D]`), the score of code row `c` of `codes` (`[N, B]` bytes, `B >= ceil(D / 8)`, packed as
/// [`binarize`](crate::binarize) and `np.packbits` pack, in `bitorder`) is
/// `sum_j q_j * (2 * bit_j(c) - 1)` over the first D bits. `candidates` (`[M, C]`) name code rows;
/// `-1` entries are skipped (FAISS pads its results with -1), and any other id outside `[0, N)` is
/// an error naming its query and column. Returns the best `k` (default C)
/// per query: scores (`f32`, descending, ties by the lower index) and their code rows (`i64`;
/// -1, with score -inf, where a query has fewer than `k` candidates).
///
/// ```
/// use tensorbits_runtime::{BitOrder, Tensor, rescore};
/// let q = Tensor::from_vec(vec![0.5f32, -1.0, 2.0], &[1, 3])?;
/// // Code 0 has bits 1 0 1: 0.5 + 1 + 2; code 1 has bits 0 1 0: -3.5.
/// let codes = Tensor::from_vec(vec![0b1010_0000u8, 0b0100_0000], &[2, 1])?;
/// let cands = Tensor::from_vec(vec![1i64, 0, -1], &[1, 3])?;
/// let (scores, idx) = rescore(&q, &codes, &cands, Some(2), BitOrder::Big)?;
/// assert_eq!(scores.data(), &[3.5, -3.5]);
/// assert_eq!(idx.data(), &[0, 1]);
/// # Ok::<(), tensorbits_runtime::Error>(())
/// ```
pub fn rescore<'a, Q: Element + Into<f64>>(
    queries: impl Into<TensorView<'a, Q>>,
    codes: impl Into<TensorView<'a, u8>>,
    candidates: impl Into<TensorView<'a, i64>>,
    k: Option<usize>,
    bitorder: BitOrder,
) -> Result<(Tensor<f32>, Tensor<i64>)> {
    let (q, codes, cands) = (queries.into(), codes.into(), candidates.into());
    let bad = |reason: String| Error::BadArgument {
        op: RESCORE,
        reason,
    };
    let shape = |v: &[usize]| ShapeText(v.to_vec());
    let ([m, d], [n, nb], [m2, c]) = (
        <[usize; 2]>::try_from(q.shape()).map_err(|_| {
            bad(format!(
                "queries have shape {}; expected [M, D]",
                shape(q.shape())
            ))
        })?,
        <[usize; 2]>::try_from(codes.shape()).map_err(|_| {
            bad(format!(
                "codes have shape {}; expected [N, bytes]",
                shape(codes.shape())
            ))
        })?,
        <[usize; 2]>::try_from(cands.shape()).map_err(|_| {
            bad(format!(
                "candidates have shape {}; expected [M, C]",
                shape(cands.shape())
            ))
        })?,
    );
    if m2 != m {
        return Err(bad(format!(
            "{m2} rows of candidates for {m} queries; give one row per query"
        )));
    }
    if d > nb * 8 {
        return Err(bad(format!(
            "queries have {d} values, codes hold {} bits ({nb} bytes) a row",
            nb * 8
        )));
    }
    let k = k.unwrap_or(c);
    if k > c {
        return Err(bad(format!(
            "k = {k} is more than the {c} candidates per query"
        )));
    }
    let owned_c;
    let cdata: &[i64] = if cands.is_packed() {
        &cands.data()[..m * c]
    } else {
        owned_c = cands.to_tensor();
        owned_c.data()
    };
    if let Some((at, &bad_c)) = cdata
        .iter()
        .enumerate()
        .find(|&(_, &v)| v != -1 && (v < 0 || v as u64 >= n as u64))
    {
        return Err(bad(format!(
            "candidate {bad_c} (query {}, column {}) is not a row of the {n} codes, nor -1 (padding)",
            at / c.max(1),
            at % c.max(1)
        )));
    }
    let owned_codes;
    let codes: &[u8] = if codes.is_packed() {
        &codes.data()[..n * nb]
    } else {
        owned_codes = codes.to_tensor();
        owned_codes.data()
    };
    let owned_q;
    let qdata: &[Q] = if q.is_packed() {
        &q.data()[..m * d]
    } else {
        owned_q = q.to_tensor();
        owned_q.data()
    };
    crate::alloc::check_pair(
        (m * k).saturating_mul(4),
        (m * k).saturating_mul(8),
        "the scores and indices",
    )?;
    let mut scores = crate::alloc::zeroed_vec::<f32>(m * k, "the scores")?;
    let mut idx = crate::alloc::zeroed_vec::<i64>(m * k, "the indices")?;
    let one = |i: usize, s: &mut [f32], x: &mut [i64], buf: &mut (Vec<f64>, Vec<Option<f64>>)| {
        buf.0.clear();
        buf.0
            .extend(qdata[i * d..i * d + d].iter().map(|&v| v.into()));
        let cs = &cdata[i * c..i * c + c];
        score_query(&buf.0, codes, nb, cs, bitorder, &mut buf.1);
        select(cs, &buf.1, s, x);
    };
    if k > 0 {
        let work = m * c * nb.max(1);
        if work >= PARALLEL_WORK && m > 1 && crate::pool::num_threads() > 1 {
            crate::pool::run(|| {
                scores
                    .par_chunks_mut(k)
                    .zip(idx.par_chunks_mut(k))
                    .enumerate()
                    .for_each_init(
                        || (Vec::new(), Vec::new()),
                        |buf, (i, (s, x))| one(i, s, x, buf),
                    );
            });
        } else {
            let mut buf = (Vec::new(), Vec::new());
            for (i, (s, x)) in scores.chunks_mut(k).zip(idx.chunks_mut(k)).enumerate() {
                one(i, s, x, &mut buf);
            }
        }
    }
    Ok((
        Tensor::from_vec(scores, &[m, k])?,
        Tensor::from_vec(idx, &[m, k])?,
    ))
}
