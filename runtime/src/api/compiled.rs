//! Calls validated once and run many times, as DirectML compiles an operator before executing it.

use super::dynamic::{OpKernels, op_kernels};
use crate::MAX_INPUTS;
use crate::cpu::{self, PARALLEL_BYTES};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::op::{Call, InputBuffer, OpInfo, Plan};
use crate::validate::buffer::{Place, check_in_place, check_place};
use crate::validate::{self, OpTensor, desc::TensorDesc};

/// An op call validated once for fixed tensor descriptions. Each [`execute`](Self::execute) checks
/// only what can change between calls (the number of buffers, their lengths and alignment) and runs
/// the kernel: the per-call cost of the full validator is paid at [`compile`] time.
#[derive(Clone, Debug)]
pub struct Compiled {
    op: &'static OpInfo,
    plan: Plan,
    inputs: Vec<TensorDesc>,
    output: TensorDesc,
    /// What each call checks of each input buffer, and the bytes the kernel reads of it.
    slots: Vec<Slot>,
    out_slot: Slot,
    /// The op's kernels for the compiled types.
    kernels: OpKernels,
    /// Packed tensors of one shape under [`PARALLEL_BYTES`] of output: the kernel runs on the
    /// buffers themselves when they are aligned, with no plan to walk.
    flat: bool,
}

/// The per-call facts of one buffer, taken from its validated description.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// `TotalTensorSizeInBytes`: the least length a buffer may have.
    required: usize,
    /// The promised alignment minus one (a power of two, so a mask; 0 when none was promised).
    align_mask: usize,
    /// The bytes the kernel reads or writes, from the start.
    extent: usize,
    /// Whether the op may run in place with this input as the output.
    in_place: bool,
}

impl Slot {
    #[inline]
    fn fits(&self, b: &[u8]) -> bool {
        b.len() >= self.required && (b.as_ptr() as usize) & self.align_mask == 0
    }
}

/// Validates a call (with [`validate`](crate::validate()), like every entry point) and keeps its
/// plan for repeated execution.
pub fn compile(
    op: &'static OpInfo,
    call: &Call,
    inputs: &[&TensorDesc],
    output: &TensorDesc,
) -> Result<Compiled> {
    let plan = validate::validate(op, call, inputs, output)?;
    let kernels = op_kernels(op, &plan)?;
    let slot = |d: &TensorDesc, extent: usize, in_place: bool| Slot {
        required: extent,
        align_mask: d.alignment().map_or(0, |a| a - 1),
        extent,
        in_place,
    };
    let slots = inputs
        .iter()
        .enumerate()
        .map(|(k, d)| {
            let extent = d.extent_bytes_of(OpTensor(op, k))?;
            Ok(slot(
                d,
                extent,
                **d == *output && op.in_place().contains(&k),
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let out_slot = slot(output, output.extent_bytes("OutputTensor")?, false);
    let flat = plan.is_one_run(inputs.len())
        && plan.count > 0
        && plan.count.saturating_mul(plan.out_dtype.size()) < PARALLEL_BYTES;
    Ok(Compiled {
        op,
        plan,
        inputs: inputs.iter().map(|d| **d).collect(),
        output: *output,
        slots,
        out_slot,
        kernels,
        flat,
    })
}

impl Compiled {
    /// The validated plan (types, output shape, element count).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Runs the compiled call on byte buffers laid out as the compiled descriptions say. Nothing
    /// is written unless every check passes.
    pub fn execute(&self, inputs: &[InputBuffer<'_>], output: &mut [u8]) -> Result<()> {
        if inputs.len() != self.slots.len() {
            return Err(self.input_count_error(inputs.len()));
        }
        let mut in_place = false;
        for (k, (b, slot)) in inputs.iter().zip(&self.slots).enumerate() {
            match b {
                InputBuffer::Bytes(bytes) if slot.fits(bytes) => {}
                InputBuffer::Bytes(bytes) => return Err(self.buffer_error(Some(k), bytes)),
                InputBuffer::Output if slot.in_place => in_place = true,
                InputBuffer::Output => return Err(self.in_place_error(k)),
            }
        }
        if !self.out_slot.fits(output) {
            return Err(self.buffer_error(None, output));
        }
        let out = &mut output[..self.out_slot.extent];
        let bytes = |k: usize| match inputs[k] {
            InputBuffer::Bytes(b) => &b[..self.slots[k].extent],
            InputBuffer::Output => &[],
        };
        // Element sizes are powers of two: alignment is a mask test.
        let (ies, oes) = (self.plan.in_dtype.size(), self.plan.out_dtype.size());
        let aligned = |b: &[u8], es: usize| (b.as_ptr() as usize) & (es - 1) == 0;
        if self.flat && !in_place && aligned(out, oes) {
            // The op's arity is known only here: small arrays for the usual ones.
            let k = self.kernels.map();
            match inputs.len() {
                1 if aligned(bytes(0), ies) => {
                    k(&[bytes(0)], out);
                    return Ok(());
                }
                2 if aligned(bytes(0), ies) && aligned(bytes(1), ies) => {
                    k(&[bytes(0), bytes(1)], out);
                    return Ok(());
                }
                _ => {}
            }
        }
        let srcs: [InputBuffer<'_>; MAX_INPUTS] = std::array::from_fn(|k| match inputs.get(k) {
            Some(InputBuffer::Bytes(_)) => InputBuffer::Bytes(bytes(k)),
            _ => InputBuffer::Output,
        });
        let k = self.kernels.kernels();
        cpu::execute(&self.plan, &srcs[..inputs.len()], out, &k)
    }

    #[cold]
    #[inline(never)]
    fn in_place_error(&self, k: usize) -> Error {
        match check_in_place(self.op, k) {
            Err(e) => e,
            // The slot says the op does not allow it here: the input's layout is not the output's.
            Ok(()) => Error::PartialOverlap {
                op: self.op.name(),
                tensor: self.op.tensor_name(k),
                start: 0,
                end: self.slots[k].extent,
                out_start: 0,
                out_end: self.out_slot.extent,
            },
        }
    }

    #[cold]
    #[inline(never)]
    fn input_count_error(&self, got: usize) -> Error {
        Error::InputCount {
            op: self.op.name(),
            expected: self.inputs.len(),
            names: self.op.inputs().join(", "),
            got,
        }
    }

    /// The error of a buffer that failed its [`Slot`] check, from the shared buffer check.
    #[cold]
    #[inline(never)]
    fn buffer_error(&self, input: Option<usize>, b: &[u8]) -> Error {
        let (len, addr) = (b.len(), b.as_ptr() as usize);
        let place = Place::Slice { addr, len };
        let checked = match input {
            Some(k) => check_place(&self.inputs[k], OpTensor(self.op, k), place),
            None => check_place(&self.output, "OutputTensor", place),
        };
        // The slot's check is the shared check's, so this fallback is not reached.
        let slot = input.map_or(self.out_slot, |k| self.slots[k]);
        checked.err().unwrap_or_else(|| Error::BufferTooSmall {
            tensor: self.op.tensor_name(input.unwrap_or(usize::MAX)),
            len,
            required: slot.required,
        })
    }

    /// [`execute_typed`](Self::execute_typed) into a new vector covering the output description's
    /// `TotalTensorSizeInBytes`: exactly the output's elements when it is packed, with zeros
    /// between the elements of a strided one. Allocated with `malloc`, not `calloc` (which
    /// `vec![O::ZERO; n]` becomes, and which glibc serves outside its per-thread cache).
    pub fn execute_new<T: Element, O: Element>(&self, inputs: &[&[T]]) -> Result<Vec<O>> {
        let n = self.output.total_bytes().div_ceil(size_of::<O>());
        let mut out = Vec::new();
        out.try_reserve_exact(n)
            .map_err(|_| Error::AllocationFailed {
                tensor: "OutputTensor".to_owned(),
                bytes: self.output.total_bytes(),
            })?;
        out.extend(std::iter::repeat_n(O::ZERO, n));
        self.execute_typed(inputs, &mut out)?;
        Ok(out)
    }

    /// [`execute`](Self::execute) on typed slices; the element types must be the compiled ones.
    pub fn execute_typed<T: Element, O: Element>(
        &self,
        inputs: &[&[T]],
        output: &mut [O],
    ) -> Result<()> {
        if T::DATA_TYPE != self.plan.in_dtype {
            return Err(Error::DataTypeMismatch {
                op: self.op.name(),
                tensor: self.op.tensor_name(0),
                dtype: T::DATA_TYPE,
                expected: self.plan.in_dtype,
                first: "the compiled call".to_owned(),
            });
        }
        if O::DATA_TYPE != self.plan.out_dtype {
            return Err(Error::OutputDataType {
                op: self.op.name(),
                dtype: O::DATA_TYPE,
                expected: format!("{}, as compiled", self.plan.out_dtype),
            });
        }
        if inputs.len() != self.slots.len() {
            return Err(self.input_count_error(inputs.len()));
        }
        let b = |k: usize| InputBuffer::Bytes(bytemuck::cast_slice(inputs[k]));
        O::with_bytes_mut(output, |out| {
            // Small packed calls straight to the map kernel: typed slices are aligned to their
            // elements, so only the slots' lengths and promised alignments remain to check (64
            // `u32`s XORed into an existing output, criterion on Sapphire Rapids: 15.4-16.0 ns
            // through `execute`).
            if self.flat {
                let fits = |k: usize| -> Option<&[u8]> {
                    let bytes: &[u8] = bytemuck::cast_slice(inputs[k]);
                    let slot = &self.slots[k];
                    slot.fits(bytes).then(|| &bytes[..slot.extent])
                };
                if self.out_slot.fits(out) {
                    let (map, o) = (self.kernels.map(), &mut out[..self.out_slot.extent]);
                    let done = match inputs.len() {
                        1 => fits(0).map(|a| map(&[a], o)),
                        2 => fits(0).zip(fits(1)).map(|(a, c)| map(&[a, c], o)),
                        _ => None,
                    };
                    if done.is_some() {
                        return Ok(());
                    }
                }
            }
            self.execute_slices(inputs.len(), b, out)
        })
    }

    /// [`execute`](Self::execute) on the `n` buffers that `b` gives.
    #[inline]
    fn execute_slices<'b>(
        &self,
        n: usize,
        b: impl Fn(usize) -> InputBuffer<'b>,
        out: &mut [u8],
    ) -> Result<()> {
        match n {
            1 => self.execute(&[b(0)], out),
            2 => self.execute(&[b(0), b(1)], out),
            3 => self.execute(&[b(0), b(1), b(2)], out),
            n => {
                let all: [InputBuffer<'_>; MAX_INPUTS] =
                    std::array::from_fn(|k| if k < n { b(k) } else { InputBuffer::Output });
                self.execute(&all[..n], out)
            }
        }
    }
}
