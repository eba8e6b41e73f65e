//! The dynamic entry points, for frameworks that know data types only at run time: an op's metadata,
//! tensor descriptions and byte buffers in native (little-endian) encoding.

use crate::cpu::Src;
use crate::desc::{Name, OpTensor};
use crate::error::{Error, Result};
use crate::{Call, OpInfo, TensorDesc};

/// One input binding of [`execute`].
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// A description and the buffer it describes (starting at the tensor's base offset).
    Bytes(&'a TensorDesc, &'a [u8]),
    /// This input is the output region itself (in-place execution; the op must allow it).
    Output,
}

/// A tensor inside a shared buffer, for [`execute_in_buffer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Byte offset of element 0 in the buffer.
    pub offset: usize,
    /// The tensor's description.
    pub desc: TensorDesc,
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
    (s, e): (usize, usize),
    out: &TensorDesc,
    (os, oe): (usize, usize),
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
            op: op.name,
            tensor: op.tensor_name(k),
            start: s,
            end: e,
            out_start: os,
            out_end: oe,
        });
    }
    if !op.in_place.contains(&k) {
        return Err(in_place_error(op, k));
    }
    Ok(Overlap::Alias)
}

pub(crate) fn in_place_error(op: &OpInfo, input: usize) -> Error {
    let allowed: Vec<String> = op.in_place.iter().map(|&i| op.tensor_name(i)).collect();
    Error::InPlaceNotAllowed {
        op: op.name,
        tensor: op.tensor_name(input),
        allowed: if allowed.is_empty() {
            "no input".to_owned()
        } else {
            allowed.join(", ")
        },
    }
}

pub(crate) fn check_buffer(
    desc: &TensorDesc,
    tensor: impl Name,
    len: usize,
    offset: usize,
) -> Result<()> {
    if len < desc.total_bytes() {
        return Err(Error::BufferTooSmall {
            tensor: tensor.name(),
            len,
            required: desc.total_bytes(),
        });
    }
    if let Some(a) = desc.alignment() {
        if !offset.is_multiple_of(a) {
            return Err(Error::MisalignedOffset {
                tensor: tensor.name(),
                offset,
                alignment: a,
            });
        }
    }
    Ok(())
}

/// Runs `op` on byte buffers. Everything is validated before any byte of `output` is written; on
/// error `output` is untouched. Only the output's elements are written (for a strided output, the
/// bytes between elements keep their values).
pub fn execute(
    op: &OpInfo,
    call: &Call,
    inputs: &[Input<'_>],
    output_desc: &TensorDesc,
    output: &mut [u8],
) -> Result<()> {
    let descs: Vec<&TensorDesc> = inputs
        .iter()
        .map(|i| match i {
            Input::Bytes(d, _) => *d,
            Input::Output => output_desc,
        })
        .collect();
    let plan = crate::validate(op, call, &descs, output_desc)?;
    let mut srcs = Vec::with_capacity(inputs.len());
    for (k, i) in inputs.iter().enumerate() {
        match i {
            Input::Output => {
                if !op.in_place.contains(&k) {
                    return Err(in_place_error(op, k));
                }
                srcs.push(Src::Output);
            }
            Input::Bytes(d, b) => {
                let name = OpTensor(op, k);
                check_buffer(d, name, b.len(), b.as_ptr() as usize)?;
                srcs.push(Src::Bytes(&b[..d.extent_bytes_of(name)?]));
            }
        }
    }
    check_buffer(
        output_desc,
        "OutputTensor",
        output.len(),
        output.as_ptr() as usize,
    )?;
    let extent = output_desc.extent_bytes("OutputTensor")?;
    (op.cpu)(&plan, &srcs, &mut output[..extent]);
    Ok(())
}

/// Runs `op` on tensors that all live in one buffer, as a framework's memory arena or a GPU buffer
/// does. An input whose region is exactly the output's runs in place (if the op allows it); any other
/// overlap with the output is an error. Offsets are checked against promised alignments.
pub fn execute_in_buffer(
    op: &OpInfo,
    call: &Call,
    buffer: &mut [u8],
    inputs: &[Region],
    output: &Region,
) -> Result<()> {
    let descs: Vec<&TensorDesc> = inputs.iter().map(|r| &r.desc).collect();
    let plan = crate::validate(op, call, &descs, &output.desc)?;
    let len = buffer.len();
    // Names are handles, formatted only if an error is returned.
    let span = |r: &Region, name: OpTensor<'_>| -> Result<(usize, usize)> {
        let end = r.offset.checked_add(r.desc.total_bytes());
        match end {
            Some(end) if end <= len => {}
            _ => {
                return Err(Error::RegionOutOfBounds {
                    tensor: name.name(),
                    offset: r.offset,
                    end: end.unwrap_or(usize::MAX),
                    len,
                });
            }
        }
        check_buffer(&r.desc, name, r.desc.total_bytes(), r.offset)?;
        Ok((r.offset, r.offset + r.desc.extent_bytes_of(name)?))
    };
    let (os, oe) = span(output, OpTensor(op, op.arity()))?;
    let mut spans = Vec::with_capacity(inputs.len());
    for (k, r) in inputs.iter().enumerate() {
        let (s, e) = span(r, OpTensor(op, k))?;
        spans.push(
            match classify(op, k, &r.desc, (s, e), &output.desc, (os, oe))? {
                Overlap::Alias => None,
                Overlap::Disjoint => Some((s, e)),
            },
        );
    }
    let (before, rest) = buffer.split_at_mut(os);
    let (out, after) = rest.split_at_mut(oe - os);
    let (before, after) = (&*before, &*after);
    let srcs: Vec<Src<'_>> = spans
        .iter()
        .map(|sp| match *sp {
            None => Src::Output,
            Some((s, e)) if e <= os => Src::Bytes(&before[s..e]),
            Some((s, e)) if s >= oe => Src::Bytes(&after[s - oe..e - oe]),
            // An empty region between the output's bounds holds no element.
            Some(_) => Src::Bytes(&[]),
        })
        .collect();
    (op.cpu)(&plan, &srcs, out);
    Ok(())
}
