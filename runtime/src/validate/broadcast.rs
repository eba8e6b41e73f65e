//! Broadcasting (OpenVINO's `auto_broadcast`: none, numpy, pdpd) and the collapsed iteration space.

use super::desc::TensorDesc;
use crate::error::{Error, Result, ShapeText};
use crate::op::{Broadcast, OpInfo};
use crate::{Dims, MAX_INPUTS, MAX_RANK};

/// The output shape of `inputs` under `b`, or the error that names the first mismatch.
pub(crate) fn broadcast_shapes(op: &OpInfo, b: Broadcast, inputs: &[&TensorDesc]) -> Result<Dims> {
    let first = inputs[0].dims();
    let mismatch = |i: usize, target: usize, detail: String| Error::ShapeMismatch {
        op: op.name(),
        mode: b.mode(),
        tensor: op.tensor_name(i),
        shape: ShapeText(inputs[i].sizes().to_vec()),
        target: format!(
            "{} shape {}",
            op.tensor_name(target),
            ShapeText(inputs[target].sizes().to_vec())
        ),
        detail,
    };
    match b {
        Broadcast::None => {
            for (i, d) in inputs.iter().enumerate().skip(1) {
                if d.rank() != first.len() {
                    return Err(mismatch(
                        i,
                        0,
                        format!(
                            "(rank {} vs {}; broadcast `none` needs equal shapes)",
                            d.rank(),
                            first.len()
                        ),
                    ));
                }
                if let Some(k) = (0..first.len()).find(|&k| d.sizes()[k] != first[k]) {
                    return Err(mismatch(
                        i,
                        0,
                        format!(
                            "in dimension {k} ({} vs {}; broadcast `none` needs equal shapes)",
                            d.sizes()[k],
                            first[k]
                        ),
                    ));
                }
            }
            Ok(first)
        }
        Broadcast::Numpy => {
            let rank = inputs.iter().map(|d| d.rank()).max().unwrap_or(0);
            let mut out = Dims::filled(rank, 1);
            // `owner[d]` is the input that fixed out[d] to a size other than 1, for the message.
            let mut owner = [0usize; MAX_RANK];
            for (i, d) in inputs.iter().enumerate() {
                let lead = rank - d.rank();
                for (j, &s) in d.sizes().iter().enumerate() {
                    let k = lead + j;
                    if s == out[k] || s == 1 {
                        continue;
                    }
                    if out[k] == 1 {
                        out[k] = s;
                        owner[k] = i;
                    } else {
                        return Err(mismatch(
                            i,
                            owner[k],
                            format!(
                                "in dimension {j} (size {s} vs {}; sizes must be equal or 1)",
                                out[k]
                            ),
                        ));
                    }
                }
            }
            Ok(out)
        }
        Broadcast::Pdpd { axis } => {
            for i in 1..inputs.len() {
                let (start, trimmed) = pdpd_axis(op, axis, inputs, i)?;
                let s = inputs[i].sizes();
                if let Some(j) = (0..trimmed).find(|&j| s[j] != 1 && s[j] != first[start + j]) {
                    return Err(mismatch(
                        i,
                        0,
                        format!(
                            "in dimension {j} (size {} vs size {} of dimension {} of {}; sizes must be equal or 1)",
                            s[j],
                            first[start + j],
                            start + j,
                            op.tensor_name(0)
                        ),
                    ));
                }
            }
            Ok(first)
        }
    }
}

/// For pdpd: where input `i` starts in the first input's dimensions and how many of its dimensions
/// count (its rank without trailing 1s), or the error when `axis` does not fit.
fn pdpd_axis(op: &OpInfo, axis: i64, inputs: &[&TensorDesc], i: usize) -> Result<(usize, usize)> {
    let a_rank = inputs[0].rank();
    let s = inputs[i].sizes();
    pdpd_span(axis, a_rank, s).ok_or_else(|| Error::BadAxis {
        op: op.name(),
        axis,
        tensor: op.tensor_name(i),
        rank: pdpd_trimmed(s),
        target_rank: a_rank,
        max: a_rank.saturating_sub(pdpd_trimmed(s)),
    })
}

/// A later input's rank for pdpd: trailing size-1 dimensions are ignored.
fn pdpd_trimmed(sizes: &[usize]) -> usize {
    sizes.iter().rposition(|&x| x != 1).map_or(0, |p| p + 1)
}

/// The one computation of pdpd's geometry: the start dimension in a first input of rank `a_rank`
/// and the number of `sizes` that count, or `None` when they do not fit from `axis`.
fn pdpd_span(axis: i64, a_rank: usize, sizes: &[usize]) -> Option<(usize, usize)> {
    let trimmed = pdpd_trimmed(sizes);
    let start = if axis == -1 {
        // The default axis uses the full rank, before trailing 1s are dropped (OpenVINO's rule).
        a_rank.checked_sub(sizes.len())?
    } else {
        usize::try_from(axis).ok()?
    };
    (start.checked_add(trimmed)? <= a_rank).then_some((start, trimmed))
}

/// Each input's element strides in the output's index space: 0 where it is broadcast.
pub(crate) fn aligned_strides(
    b: Broadcast,
    out: &Dims,
    inputs: &[&TensorDesc],
) -> [Dims; MAX_INPUTS] {
    let mut result = [Dims::default(); MAX_INPUTS];
    for (i, d) in inputs.iter().enumerate() {
        let strides = d.effective_strides();
        let sizes = d.sizes();
        let mut a = Dims::filled(out.len(), 0);
        // Validation has checked that every input fits the output this way.
        let (start, used) = match b {
            Broadcast::Pdpd { axis } if i > 0 => {
                pdpd_span(axis, out.len(), sizes).unwrap_or((0, 0))
            }
            _ => (out.len().saturating_sub(sizes.len()), sizes.len()),
        };
        for j in 0..used {
            if sizes[j] != 1 {
                a[start + j] = strides[j];
            }
        }
        result[i] = a;
    }
    result
}

/// Drops size-1 dimensions and merges neighbours that are contiguous in every tensor, so the inner
/// loop runs as long as possible. Returns sizes, output strides and input strides; a scalar becomes
/// one dimension of size 1.
pub(crate) fn collapse(
    out: &Dims,
    out_strides: &Dims,
    ins: &[Dims],
) -> (Dims, Dims, [Dims; MAX_INPUTS]) {
    let mut sizes = Dims::default();
    let mut os = Dims::default();
    let mut is = [Dims::default(); MAX_INPUTS];
    if out.contains(&0) {
        // Nothing to iterate; keep one empty dimension so the loops see a count of 0.
        sizes.push(0);
        os.push(0);
        for d in is.iter_mut().take(ins.len()) {
            d.push(0);
        }
        return (sizes, os, is);
    }
    for k in 0..out.len() {
        if out[k] == 1 {
            continue;
        }
        let n = sizes.len();
        let mergeable = n > 0
            && out_strides[k].checked_mul(out[k]) == Some(os[n - 1])
            && ins
                .iter()
                .zip(is.iter())
                .all(|(src, dst)| src[k].checked_mul(out[k]) == Some(dst[n - 1]));
        if mergeable {
            sizes[n - 1] *= out[k];
            os[n - 1] = out_strides[k];
            for (src, dst) in ins.iter().zip(is.iter_mut()) {
                dst[n - 1] = src[k];
            }
        } else {
            sizes.push(out[k]);
            os.push(out_strides[k]);
            for (src, dst) in ins.iter().zip(is.iter_mut()) {
                dst.push(src[k]);
            }
        }
    }
    if sizes.is_empty() {
        sizes.push(1);
        os.push(0);
        for d in is.iter_mut().take(ins.len()) {
            d.push(0);
        }
    }
    (sizes, os, is)
}
