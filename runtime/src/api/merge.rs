//! `merge_topk`: the best `k` of several knn results over the same queries, each row's entries
//! ranked by (value, index), ties by the lower index. A total order on the entries makes the merge
//! associative, so shards' results merged in any tree give the single-machine knn exactly.

use crate::element::Element;
use crate::error::{Error, Result};
use crate::{DataType, Tensor, TensorView};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One part of [`merge_topk_bytes`]: `rows x width` values of the merge's type (native bytes) and
/// as many `i64` indices, row after row, each row ranked as knn ranks it.
#[derive(Clone, Copy, Debug)]
pub struct TopkPart<'a> {
    /// The values, `rows * width` elements.
    pub values: &'a [u8],
    /// The indices, `rows * width`.
    pub indices: &'a [i64],
    /// Entries per row.
    pub width: usize,
}

fn bad(reason: String) -> Error {
    Error::BadArgument {
        op: "merge_topk",
        reason,
    }
}

/// A value of `dtype` at `bytes` as a key that orders as the values do; `None` for NaN.
fn key(dtype: DataType, bytes: &[u8]) -> Option<u64> {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    let raw = u64::from_le_bytes(w);
    let bits = dtype.size() * 8;
    let sign = 1u64 << (bits - 1);
    let all = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    Some(match dtype {
        DataType::F16 | DataType::F32 | DataType::F64 => {
            let mant = match dtype {
                DataType::F16 => 10,
                DataType::F32 => 23,
                _ => 52,
            };
            let exp_all = (all >> (mant + 1)) << mant & (sign - 1);
            if raw & exp_all == exp_all && raw & ((1u64 << mant) - 1) != 0 {
                return None;
            }
            // -0 and +0 are one value.
            let raw = if raw & (sign - 1) == 0 { 0 } else { raw };
            match raw & sign != 0 {
                true => !raw & all,
                false => raw | sign,
            }
        }
        d if d.is_signed() => raw ^ sign,
        _ => raw,
    })
}

/// Each row's best `k` entries of `parts` (`rows` rows each), ranked by value (ascending, or
/// descending with `largest`), ties by the lower index: `(values, indices, width)`, `width` being
/// `k` or, where the parts hold fewer entries a row, all of them. Nothing is padded. Each part's
/// rows must already be so ranked (knn's results are), and hold no negative index.
pub fn merge_topk_bytes(
    dtype: DataType,
    rows: usize,
    parts: &[TopkPart<'_>],
    k: usize,
    largest: bool,
) -> Result<(Vec<u8>, Vec<i64>, usize)> {
    if dtype == DataType::Bool {
        return Err(bad(
            "values of bool cannot be ranked; knn's are numbers".to_owned()
        ));
    }
    let es = dtype.size();
    for (p, part) in parts.iter().enumerate() {
        let count = rows.checked_mul(part.width);
        if count.and_then(|c| c.checked_mul(es)) != Some(part.values.len())
            || count != Some(part.indices.len())
        {
            return Err(bad(format!(
                "part {p}: {} values and {} indices, where {rows} rows of {} entries need {} of each",
                part.values.len() / es.max(1),
                part.indices.len(),
                part.width,
                rows.saturating_mul(part.width)
            )));
        }
    }
    // The ranking key of an entry: ascending keys are the best first.
    let rank = |p: usize, at: usize| -> Result<(u64, i64)> {
        let part = &parts[p];
        let v = key(dtype, &part.values[at * es..(at + 1) * es])
            .ok_or_else(|| bad(format!("part {p} holds NaN, which has no rank")))?;
        let i = part.indices[at];
        if i < 0 {
            return Err(bad(format!(
                "part {p} holds the index {i}: FAISS pads rows with -1 where it has fewer \
                 neighbours than k; drop those entries (tensorbits never pads)"
            )));
        }
        Ok((if largest { !v } else { v }, i))
    };
    // Every part's rows ranked: a merge of unranked lists would be wrong without a sign.
    for (p, part) in parts.iter().enumerate() {
        for r in 0..rows {
            let mut last = None;
            for j in 0..part.width {
                let e = rank(p, r * part.width + j)?;
                if last.is_some_and(|l| l > e) {
                    return Err(bad(format!(
                        "part {p}, row {r}: entries {} and {j} are not in knn's order ({} \
                         values first, ties by the lower index)",
                        j - 1,
                        if largest { "largest" } else { "smallest" }
                    )));
                }
                last = Some(e);
            }
        }
    }
    let total: usize = parts.iter().map(|p| p.width).sum();
    let width = k.min(total);
    let count = rows
        .checked_mul(width)
        .ok_or_else(|| bad("the result's size overflows".to_owned()))?;
    crate::alloc::check_pair(
        count.saturating_mul(es),
        count.saturating_mul(8),
        "the merged values and indices",
    )?;
    let mut values = crate::alloc::zeroed_vec::<u8>(count * es, "merged values")?;
    let mut indices = crate::alloc::zeroed_vec::<i64>(count, "merged indices")?;
    let mut heap = BinaryHeap::with_capacity(parts.len());
    for r in 0..rows {
        heap.clear();
        for (p, part) in parts.iter().enumerate() {
            if part.width > 0 {
                heap.push(Reverse((rank(p, r * part.width)?, p, 0usize)));
            }
        }
        for j in 0..width {
            let Some(Reverse((_, p, at))) = heap.pop() else {
                break;
            };
            let part = &parts[p];
            let src = r * part.width + at;
            let dst = r * width + j;
            values[dst * es..(dst + 1) * es]
                .copy_from_slice(&part.values[src * es..(src + 1) * es]);
            indices[dst] = part.indices[src];
            if at + 1 < part.width {
                heap.push(Reverse((rank(p, src + 1)?, p, at + 1)));
            }
        }
    }
    Ok((values, indices, width))
}

/// [`merge_topk_bytes`] on typed `[M, k_i]` parts: `(values, indices)` pairs as knn returns them,
/// each with the same rows. The result is `[M, min(k, sum of k_i)]`.
pub fn merge_topk<D: Element>(
    parts: &[(TensorView<'_, D>, TensorView<'_, i64>)],
    k: usize,
    largest: bool,
) -> Result<(Tensor<D>, Tensor<i64>)> {
    let rows = parts
        .first()
        .map_or(0, |(v, _)| v.shape().first().copied().unwrap_or(0));
    let mut owned: Vec<(Vec<u8>, Vec<i64>, usize)> = Vec::with_capacity(parts.len());
    for (p, (v, i)) in parts.iter().enumerate() {
        if v.shape().len() != 2 || v.shape() != i.shape() || v.shape()[0] != rows {
            return Err(bad(format!(
                "part {p}: values {:?} and indices {:?}; every part is a pair of [M, k] arrays with \
                 the same M ({rows})",
                v.shape(),
                i.shape()
            )));
        }
        let (v, i) = (v.to_tensor(), i.to_tensor());
        let bytes: Vec<u8> = bytemuck::cast_slice(D::as_words(v.data())).to_vec();
        owned.push((bytes, i.into_vec(), v.shape()[1]));
    }
    let views: Vec<TopkPart<'_>> = owned
        .iter()
        .map(|(v, i, w)| TopkPart {
            values: v,
            indices: i,
            width: *w,
        })
        .collect();
    let (values, indices, width) = merge_topk_bytes(D::DATA_TYPE, rows, &views, k, largest)?;
    let mut typed = vec![D::ZERO; rows * width];
    D::with_bytes_mut(&mut typed, |b| b.copy_from_slice(&values));
    Ok((
        Tensor::from_vec(typed, &[rows, width])?,
        Tensor::from_vec(indices, &[rows, width])?,
    ))
}
