//! Checks on the memory a validated description is bound to, shared by the CPU and GPU paths: where
//! a tensor lies (in its own slice or inside a shared buffer), and how an input's region may relate
//! to the output's in one buffer.

use super::desc::TensorDesc;
use super::{Name, OpTensor};
use crate::error::{Error, Result};
use crate::op::OpInfo;

/// Where a tensor's bytes are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// A slice of its own: `len` bytes at address `addr`.
    Slice { addr: usize, len: usize },
    /// `offset` bytes into a buffer of `len` bytes (host or device).
    InBuffer { offset: u64, len: u64 },
}

/// The one region check: the tensor's `TotalTensorSizeInBytes` must lie inside its memory, and its
/// start must keep the promised base-offset alignment. Returns the bytes its elements span, from
/// the start of its memory.
pub(crate) fn check_place(
    desc: &TensorDesc,
    tensor: impl Name,
    place: Place,
) -> Result<(u64, u64)> {
    let total = desc.total_bytes() as u64;
    let start = match place {
        Place::Slice { addr, len } => {
            // A slice's length is exact: it must hold the elements, not the description's
            // total size rounded up to whole 4-byte words (a numpy array of 10 bytes is 10).
            let extent = desc.extent_bytes_of(tensor)?;
            if len < extent {
                return Err(Error::BufferTooSmall {
                    tensor: tensor.name(),
                    len,
                    required: extent,
                });
            }
            check_alignment(desc, tensor, addr as u64)?;
            0
        }
        Place::InBuffer { offset, len } => {
            let end = offset.checked_add(total);
            if end.is_none_or(|e| e > len) {
                return Err(Error::RegionOutOfBounds {
                    tensor: tensor.name(),
                    offset: offset as usize,
                    end: end.map_or(usize::MAX, |e| e as usize),
                    len: len as usize,
                });
            }
            check_alignment(desc, tensor, offset)?;
            offset
        }
    };
    // The extent fits in `total`, which fits in the memory.
    Ok((start, start + desc.extent_bytes_of(tensor)? as u64))
}

fn check_alignment(desc: &TensorDesc, tensor: impl Name, at: u64) -> Result<()> {
    match desc.alignment() {
        Some(a) if !at.is_multiple_of(a as u64) => Err(Error::MisalignedOffset {
            tensor: tensor.name(),
            offset: at as usize,
            alignment: a,
        }),
        _ => Ok(()),
    }
}

/// How an input's region relates to the output's region in the same buffer.
pub(crate) enum Overlap {
    /// No byte in common.
    Disjoint,
    /// Exactly the output's region and layout: in-place execution (the op allows it).
    Alias,
}

/// Classifies input `k` (description `d` at bytes `s..e`) against the output (`out` at `os..oe`) in
/// one buffer: disjoint, an exact alias the op allows, or an error for a forbidden alias or a
/// partial overlap. Both the CPU's shared-buffer entry point and the GPU executor use it.
pub(crate) fn classify(
    op: &OpInfo,
    k: usize,
    d: &TensorDesc,
    (s, e): (u64, u64),
    out: &TensorDesc,
    (os, oe): (u64, u64),
) -> Result<Overlap> {
    let overlaps = s < e && os < oe && s < oe && os < e;
    if !overlaps {
        return Ok(Overlap::Disjoint);
    }
    let same = s == os
        && d.sizes() == out.sizes()
        && d.effective_strides() == out.effective_strides()
        && d.data_type() == out.data_type();
    if !same {
        return Err(Error::PartialOverlap {
            op: op.name(),
            tensor: op.tensor_name(k),
            start: s as usize,
            end: e as usize,
            out_start: os as usize,
            out_end: oe as usize,
        });
    }
    check_in_place(op, k)?;
    Ok(Overlap::Alias)
}

/// Input `input` may be the output only when the op lists it in `in_place`.
pub(crate) fn check_in_place(op: &OpInfo, input: usize) -> Result<()> {
    if op.in_place().contains(&input) {
        return Ok(());
    }
    let allowed: Vec<String> = op.in_place().iter().map(|&i| op.tensor_name(i)).collect();
    Err(Error::InPlaceNotAllowed {
        op: op.name(),
        tensor: OpTensor(op, input).name(),
        allowed: if allowed.is_empty() {
            "no input".to_owned()
        } else {
            allowed.join(", ")
        },
    })
}
