//! The dynamic entry points, for frameworks that know data types only at run time: an op's metadata,
//! tensor descriptions and byte buffers in native (little-endian) encoding.

use crate::cpu::walk;
use crate::error::{Error, Result};
use crate::op::{Call, CpuKernel, InputBuffer, OpInfo, Plan};
use crate::validate::buffer::{Overlap, Place, check_in_place, check_place, classify};
use crate::validate::{self, OpTensor, desc::TensorDesc};

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

/// The op's CPU kernel for a validated plan's types. Validation admits only the types the op's
/// table lists, and the macro generates a kernel for each of them.
pub(crate) fn cpu_kernel(op: &OpInfo, plan: &Plan) -> Result<&'static CpuKernel> {
    op.cpu_kernel(plan.in_dtype, plan.out_dtype)
        .ok_or_else(|| Error::UnsupportedDataType {
            op: op.name(),
            tensor: op.tensor_name(0),
            dtype: plan.in_dtype,
            level: crate::FeatureLevel::EXT,
            supported: "none on the CPU".to_owned(),
        })
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
    let plan = validate::validate(op, call, &descs, output_desc)?;
    let kernel = cpu_kernel(op, &plan)?;
    let mut srcs = Vec::with_capacity(inputs.len());
    for (k, i) in inputs.iter().enumerate() {
        match i {
            Input::Output => {
                check_in_place(op, k)?;
                srcs.push(InputBuffer::Output);
            }
            Input::Bytes(d, b) => {
                let place = Place::Slice {
                    addr: b.as_ptr() as usize,
                    len: b.len(),
                };
                let (_, end) = check_place(d, OpTensor(op, k), place)?;
                srcs.push(InputBuffer::Bytes(&b[..end as usize]));
            }
        }
    }
    let place = Place::Slice {
        addr: output.as_ptr() as usize,
        len: output.len(),
    };
    let (_, end) = check_place(output_desc, "OutputTensor", place)?;
    walk::run(&plan, &srcs, &mut output[..end as usize], &kernel.map);
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
    let plan = validate::validate(op, call, &descs, &output.desc)?;
    let kernel = cpu_kernel(op, &plan)?;
    let len = buffer.len() as u64;
    let span = |r: &Region, k: usize| {
        let place = Place::InBuffer {
            offset: r.offset as u64,
            len,
        };
        check_place(&r.desc, OpTensor(op, k), place)
    };
    let (os, oe) = span(output, op.arity())?;
    let mut spans = Vec::with_capacity(inputs.len());
    for (k, r) in inputs.iter().enumerate() {
        let (s, e) = span(r, k)?;
        spans.push(
            match classify(op, k, &r.desc, (s, e), &output.desc, (os, oe))? {
                Overlap::Alias => None,
                Overlap::Disjoint => Some((s as usize, e as usize)),
            },
        );
    }
    let (os, oe) = (os as usize, oe as usize);
    let (before, rest) = buffer.split_at_mut(os);
    let (out, after) = rest.split_at_mut(oe - os);
    let (before, after) = (&*before, &*after);
    let srcs: Vec<InputBuffer<'_>> = spans
        .iter()
        .map(|sp| match *sp {
            None => InputBuffer::Output,
            Some((s, e)) if e <= os => InputBuffer::Bytes(&before[s..e]),
            Some((s, e)) if s >= oe => InputBuffer::Bytes(&after[s - oe..e - oe]),
            // An empty region between the output's bounds holds no element.
            Some(_) => InputBuffer::Bytes(&[]),
        })
        .collect();
    walk::run(&plan, &srcs, out, &kernel.map);
    Ok(())
}
