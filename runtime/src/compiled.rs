//! Calls validated once and run many times, as DirectML compiles an operator before executing it.

use crate::cpu::Src;
use crate::desc::OpTensor;
use crate::dynamic::{check_buffer, in_place_error};
use crate::error::{Error, Result};
use crate::{Call, Element, MAX_INPUTS, OpInfo, Plan, TensorDesc};

/// One buffer of a [`Compiled::execute`] call.
#[derive(Clone, Copy, Debug)]
pub enum Buffer<'a> {
    /// The input's bytes, from its element 0.
    Bytes(&'a [u8]),
    /// This input is the output buffer itself (in place; the op must allow it).
    Output,
}

/// An op call validated once for fixed tensor descriptions. Each [`execute`](Self::execute) checks
/// only what can change between calls (the number of buffers, their lengths and alignment) and runs
/// the kernel: the per-call cost of the full validator is paid at [`compile`] time.
#[derive(Clone, Debug)]
pub struct Compiled {
    op: &'static OpInfo,
    plan: Plan,
    inputs: Vec<TensorDesc>,
    output: TensorDesc,
    extents: Vec<usize>,
    out_extent: usize,
}

/// Validates a call (with [`validate`](crate::validate), like every entry point) and keeps its
/// plan for repeated execution.
pub fn compile(
    op: &'static OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    output: &TensorDesc,
) -> Result<Compiled> {
    let plan = crate::validate(op, call, inputs, output)?;
    let extents = inputs
        .iter()
        .enumerate()
        .map(|(k, d)| d.extent_bytes_of(OpTensor(op, k)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Compiled {
        op,
        plan,
        inputs: inputs.iter().map(|d| **d).collect(),
        output: *output,
        extents,
        out_extent: output.extent_bytes("OutputTensor")?,
    })
}

impl Compiled {
    /// The validated plan (types, output shape, element count).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Runs the compiled call on byte buffers laid out as the compiled descriptions say. Nothing
    /// is written unless every check passes.
    pub fn execute(&self, inputs: &[Buffer<'_>], output: &mut [u8]) -> Result<()> {
        let op = self.op;
        if inputs.len() != self.inputs.len() {
            return Err(Error::InputCount {
                op: op.name,
                expected: self.inputs.len(),
                names: op.inputs.join(", "),
                got: inputs.len(),
            });
        }
        let mut srcs = [Src::Output; MAX_INPUTS];
        for (k, b) in inputs.iter().enumerate() {
            srcs[k] = match b {
                Buffer::Bytes(bytes) => {
                    check_buffer(
                        &self.inputs[k],
                        OpTensor(op, k),
                        bytes.len(),
                        bytes.as_ptr() as usize,
                    )?;
                    Src::Bytes(&bytes[..self.extents[k]])
                }
                Buffer::Output if self.inputs[k] == self.output && op.in_place.contains(&k) => {
                    Src::Output
                }
                Buffer::Output => return Err(in_place_error(op, k)),
            };
        }
        check_buffer(
            &self.output,
            "OutputTensor",
            output.len(),
            output.as_ptr() as usize,
        )?;
        (op.cpu)(
            &self.plan,
            &srcs[..inputs.len()],
            &mut output[..self.out_extent],
        );
        Ok(())
    }

    /// [`execute`](Self::execute) on typed slices; the element types must be the compiled ones.
    pub fn execute_typed<T: Element, O: Element>(
        &self,
        inputs: &[&[T]],
        output: &mut [O],
    ) -> Result<()> {
        if T::DATA_TYPE != self.plan.in_dtype {
            return Err(Error::DataTypeMismatch {
                op: self.op.name,
                tensor: self.op.tensor_name(0),
                dtype: T::DATA_TYPE,
                expected: self.plan.in_dtype,
                first: "the compiled call".to_owned(),
            });
        }
        if O::DATA_TYPE != self.plan.out_dtype {
            return Err(Error::OutputDataType {
                op: self.op.name,
                dtype: O::DATA_TYPE,
                expected: format!("{}, as compiled", self.plan.out_dtype),
            });
        }
        let mut bufs = [Buffer::Output; MAX_INPUTS];
        for (b, s) in bufs.iter_mut().zip(inputs) {
            *b = Buffer::Bytes(bytemuck::cast_slice(s));
        }
        let n = inputs.len().min(MAX_INPUTS);
        O::with_bytes_mut(output, |out| self.execute(&bufs[..n], out))
    }
}
