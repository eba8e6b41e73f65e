//! Execution: validation of the caller's regions, the one scoped path that records and submits
//! work, element-wise launches split to the device's limits, and reductions and pairwise ops run
//! pass by pass as [`plan`] lays them out.

use super::split::{self, Launch, Window};
use super::{
    GpuExecutor, GpuInput, GpuRegion, Source, check_region, gpu_error, plan, reduce_layout,
    words_plan,
};
use crate::MAX_RANK;
use crate::error::{Error, Result};
use crate::op::{Call, GpuKernel, OpInfo, Plan};
use crate::validate::buffer::{Overlap, check_in_place, classify};
use crate::validate::{self, OpTensor, desc::TensorDesc};
use crate::{DataType, ReduceOp};
use tensorbits_core::wgsl::{
    Epilogue, Header, Layout, MAX_LOOP_ITERATIONS, OUTPUT_SLOT, SLOTS, WORKGROUP_SIZE, pad_shader,
    params_bytes,
};

/// The kernel of `op` for `input` -> `output` in `layout`, or the error saying it has none.
pub(crate) fn kernel(
    op: &OpInfo,
    input: DataType,
    output: DataType,
    layout: Layout,
) -> Result<&'static GpuKernel> {
    op.gpu_kernel(input, output, layout)
        .ok_or_else(|| Error::GpuUnsupported {
            what: format!(
                "{} has no {layout:?} kernel for {input} -> {output}",
                op.name()
            ),
        })
}

/// Where element 0 of a region at byte `offset` lies in the copy [`GpuExecutor::copy_region`]
/// makes: the copy starts at the region's first whole 4-byte word.
pub(crate) fn copied_offset(offset: u64) -> u64 {
    offset % 4
}

/// Bytes of one partial result of a plan's reduction: sums count in 64 bits; and, or and xor keep
/// a value of the input's width (at least 32 bits).
fn acc_bytes(plan: &Plan) -> u64 {
    match plan.reduce {
        Some(ReduceOp::Sum) => 8,
        _ if plan.input_type().bits() == 64 => 8,
        _ => 4,
    }
}

impl GpuExecutor {
    /// Runs `op` on regions of the caller's buffers. Everything is validated before any work is
    /// recorded. With `encoder`, the work is recorded into it and the caller submits; without, it is
    /// submitted here and this call waits for wgpu to report errors (not for the GPU to finish).
    /// Only the output's elements are written: not one byte outside the output region.
    ///
    /// A ratio op (`compute = N / D`, such as TANIMOTO) counts on the device and divides on the
    /// host, so that its results are the CPU's bit for bit: it takes `[M, K]` and `[N, K]` input
    /// regions, waits for the counts, and writes its `[M, N]` results with
    /// [`Queue::write_buffer`](wgpu::Queue::write_buffer). Its output buffer needs `COPY_DST`
    /// usage, and it refuses an `encoder` ([`Error::GpuUnsupported`]).
    pub fn execute(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: &[GpuInput<'_>],
        output: &GpuRegion<'_>,
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()> {
        if op.ratio().is_some() {
            return self.execute_ratio(op, call, inputs, output, encoder.is_some());
        }
        let descs: Vec<&TensorDesc> = inputs
            .iter()
            .map(|i| match i {
                GpuInput::Region(r) => &r.desc,
                GpuInput::Output => &output.desc,
            })
            .collect();
        let plan = validate::validate(op, call, &descs, &output.desc)?;
        let out_span = check_region(output, OpTensor(op, op.arity()))?;
        let mut sources = Vec::with_capacity(inputs.len());
        for (k, i) in inputs.iter().enumerate() {
            // A handle, formatted only if an error is returned.
            let name = OpTensor(op, k);
            match i {
                GpuInput::Output => {
                    check_in_place(op, k)?;
                    sources.push(Source::Alias);
                }
                GpuInput::Region(r) => {
                    let span = check_region(r, name)?;
                    if r.buffer == output.buffer {
                        let overlap = classify(op, k, &r.desc, span, &output.desc, out_span)?;
                        if let Overlap::Alias = overlap {
                            sources.push(Source::Alias);
                        } else {
                            // A buffer may not be bound for reading and writing in one dispatch.
                            sources.push(Source::Copy(*r));
                        }
                    } else if plan.pad.is_some() {
                        // Its padding is zeroed in a copy.
                        sources.push(Source::Copy(*r));
                    } else {
                        sources.push(Source::Bound(*r));
                    }
                }
            }
        }
        if plan.element_count() == 0 {
            return Ok(());
        }
        self.scoped(encoder, |enc| self.encode(op, &plan, &sources, output, enc))
    }

    /// Records `record` into the caller's `encoder`, or into a new encoder submitted here, inside
    /// error scopes: what wgpu reports about the work (validation, out of memory) and any error on
    /// this executor's own device is returned as an error. The one path every call records by.
    pub(crate) fn scoped(
        &self,
        encoder: Option<&mut wgpu::CommandEncoder>,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>,
    ) -> Result<()> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let result = match encoder {
            Some(enc) => record(enc),
            None => {
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("tensorbits"),
                    });
                let r = record(&mut enc);
                if r.is_ok() {
                    self.queue.submit([enc.finish()]);
                }
                r
            }
        };
        let oom = pollster::block_on(oom.pop());
        let validation = pollster::block_on(scope.pop());
        result?;
        if let Some(e) = validation.or(oom) {
            return Err(gpu_error(e));
        }
        self.take_uncaptured()
    }

    pub(super) fn encode(
        &self,
        op: &OpInfo,
        plan: &Plan,
        sources: &[Source<'_>],
        output: &GpuRegion<'_>,
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        // Inputs that must not be bound beside the output are first copied, on the device, into
        // scratch buffers; an exact alias is copied too, so reads never race the writes.
        let mut owned: Vec<(wgpu::Buffer, u64)> = Vec::with_capacity(sources.len());
        for s in sources {
            owned.push(match s {
                Source::Bound(r) => (r.buffer.clone(), r.offset),
                Source::Alias => self.copy_region(output, enc)?,
                Source::Copy(r) => self.copy_region(r, enc)?,
            });
        }
        for (k, (b, o)) in owned.iter().enumerate() {
            self.zero_padding(op, plan, k, (b, *o), enc)?;
        }
        let bufs: Vec<(&wgpu::Buffer, u64)> = owned.iter().map(|(b, o)| (b, *o)).collect();
        if plan.reduce.is_some() {
            return self.encode_reduction(op, plan, &bufs, output, enc);
        }
        let arity = sources.len();
        let in_t = plan.input_type();
        let out_t = plan.output_type();
        let contiguous = plan.iter.len() == 1
            && plan.out_strides[0] == 1
            && (0..arity).all(|k| plan.in_strides[k][0] == 1);
        let words = op.gpu_kernel(in_t, out_t, Layout::Words);
        let mut launches: Vec<(Layout, u64, u64)> = Vec::new(); // (layout, first element, elements)
        let n = plan.element_count() as u64;
        let aligned16 =
            bufs.iter().all(|(_, o)| o.is_multiple_of(16)) && output.offset.is_multiple_of(16);
        if contiguous && words.is_some() && aligned16 {
            let per = 16 / in_t.size() as u64;
            let bulk = n / per * per;
            if bulk > 0 {
                launches.push((Layout::Words, 0, bulk));
            }
            if bulk < n {
                launches.push((Layout::Contiguous, bulk, n - bulk));
            }
        } else if contiguous {
            launches.push((Layout::Contiguous, 0, n));
        } else {
            launches.push((Layout::Strided, 0, n));
        }
        for (layout, first, count) in launches {
            let kernel = kernel(op, in_t, out_t, layout)?;
            let launch = self.launch(plan, layout, first, count, &bufs, output);
            let dispatches = split::split(&launch, &self.limits)
                .map_err(|t| self.too_large(op, Some(t.slot), "a window", Some(t.bytes)))?;
            let pipeline = self.pipeline(op, kernel, arity)?;
            for d in &dispatches {
                let mut bindings: Vec<(&wgpu::Buffer, Window)> = bufs
                    .iter()
                    .enumerate()
                    .map(|(k, (b, _))| (*b, d.windows[k]))
                    .collect();
                bindings.push((output.buffer, d.windows[OUTPUT_SLOT]));
                self.dispatch(&pipeline, &d.params, &bindings, d.groups, enc)?;
            }
        }
        Ok(())
    }

    /// Zeroes, in the scratch copy of input `input` (element 0 at byte `offset` of `buffer`), the
    /// padding bits of the last element of each of its rows, for a plan with valid bits whose
    /// last element holds padding. Recorded before the op's passes, which then count zeros there.
    pub(crate) fn zero_padding(
        &self,
        op: &OpInfo,
        plan: &Plan,
        input: usize,
        (buffer, offset): (&wgpu::Buffer, u64),
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        let (Some(pad), Some((dims, first))) = (plan.pad, plan.padded_rows(input)) else {
            return Ok(());
        };
        // Chunks of the outermost dimension's rows, each in a window of the buffer that fits a
        // binding (a copy past `max_storage_buffer_binding_size` takes several dispatches).
        let (outer_n, outer_s) = dims.first().map_or((1, 0), |&(n, s)| (n as u64, s as u64));
        let inner = dims.get(1..).unwrap_or(&[]);
        let inner_rows: u64 = inner.iter().map(|&(n, _)| n as u64).product();
        let inner_reach: u64 = inner.iter().map(|&(n, s)| (n as u64 - 1) * s as u64).sum();
        let es = plan.in_dtype.size() as u64;
        let lim = &self.limits;
        let reach = |c: u64| (c - 1) * outer_s + inner_reach + 1;
        let room = lim.max_binding.saturating_sub(lim.offset_align + 4);
        let mut per = outer_n;
        while per > 1 && reach(per) * es > room {
            per = per.div_ceil(2);
        }
        if reach(1) * es > room {
            return Err(self.too_large(
                op,
                Some(input),
                "zeroing the padding bits of valid bits in a copy (one row)",
                Some(reach(1) * es),
            ));
        }
        let w = split::word;
        static PAD: std::sync::OnceLock<GpuKernel> = std::sync::OnceLock::new();
        let kernel = PAD.get_or_init(|| GpuKernel {
            input: plan.in_dtype,
            output: plan.in_dtype,
            layout: Layout::Strided,
            source: String::leak(pad_shader()),
        });
        let pipeline = self.pipeline(op, kernel, 0)?;
        let mut i0 = 0;
        while i0 < outer_n {
            let c = per.min(outer_n - i0);
            let lo = offset + (first as u64 + i0 * outer_s) * es;
            let (win, _) = split::window(lo, reach(c), es, 4, lim);
            let rows = c * inner_rows;
            let header = Header {
                count: w(rows),
                elements: plan.in_dtype.size() as u32,
                extra: w(lo - win.offset),
                epilogue: Epilogue {
                    offset: pad.mask,
                    scale: 0,
                    flip: None,
                },
                ..Header::default()
            };
            let mut sizes: Vec<u32> = dims.iter().map(|&(n, _)| w(n as u64)).collect();
            if let Some(s0) = sizes.first_mut() {
                *s0 = w(c);
            }
            let base = [0u32; SLOTS];
            let mut strides = [[0u32; MAX_RANK]; SLOTS];
            for (d, &(_, s)) in dims.iter().enumerate() {
                strides[0][d] = w(s as u64);
            }
            let params = params_bytes(&header, &sizes, &base, &strides);
            let groups = split::groups(rows, u64::from(WORKGROUP_SIZE), lim);
            self.dispatch(&pipeline, &params, &[(buffer, win)], groups, enc)?;
            i0 += c;
        }
        Ok(())
    }

    /// The error for work that cannot fit the device's bindings: which tensor (slot) of `op` needs
    /// how many bytes, and the limit.
    pub(crate) fn too_large(
        &self,
        op: &OpInfo,
        slot: Option<usize>,
        what: &str,
        bytes: Option<u64>,
    ) -> Error {
        let tensor = match slot {
            Some(t) if t == OUTPUT_SLOT => format!(" of {}", op.tensor_name(op.arity())),
            Some(t) => format!(" of {}", op.tensor_name(t)),
            None => String::new(),
        };
        let what = match bytes {
            Some(bytes) => format!(
                "{}: {what}{tensor} needs {bytes} bytes in one binding, more than this device's \
                 max_storage_buffer_binding_size ({} bytes)",
                op.name(),
                self.limits.max_binding
            ),
            None => format!("{}: {what}{tensor}", op.name()),
        };
        Error::GpuUnsupported { what }
    }

    /// A reduction or pairwise op: the plan's passes (see [`plan`]), over scratch
    /// buffers of partial results when there is more than one.
    fn encode_reduction(
        &self,
        op: &OpInfo,
        plan: &Plan,
        bufs: &[(&wgpu::Buffer, u64)],
        output: &GpuRegion<'_>,
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        let arity = bufs.len();
        let (in_t, out_t) = (plan.input_type(), plan.output_type());
        // A pairwise sum over rows of whole 32-bit words runs on the words, when the op has that
        // kernel: 4 times fewer elements of u8 codes, each counted at once.
        let offsets = [
            bufs.first().map_or(0, |b| b.1),
            bufs.get(1).map_or(0, |b| b.1),
        ];
        let words_plan = match plan.pairwise {
            true => words_plan(plan, offsets)
                .filter(|_| op.gpu_kernel(in_t, out_t, Layout::PairWords).is_some()),
            false => None,
        };
        let plan = words_plan.as_ref().unwrap_or(plan);
        let layout = match (plan.pairwise, words_plan.is_some()) {
            (true, true) => Layout::PairWords,
            (true, false) => Layout::Pairwise,
            _ => reduce_layout(plan),
        };
        let launch = self.launch(plan, layout, 0, 0, bufs, output);
        let r = plan::Reduction {
            layout,
            kept: plan.kept,
            dims: launch.dims,
            strides: launch.strides,
            elem: launch.elem,
            offset: launch.offset,
            arity,
            acc_bytes: acc_bytes(plan),
            epilogue: plan.gpu_epilogue(),
        };
        let rp = plan::plan_reduction(&r, &self.limits)
            .map_err(|t| self.too_large(op, t.slot, &t.what, t.bytes))?;
        let scratch: Vec<wgpu::Buffer> = rp
            .scratch
            .iter()
            .filter(|&&b| b > 0)
            .map(|&b| self.storage_buffer("tensorbits partial results", b as usize, &[]))
            .collect::<Result<_>>()?;
        for pass in &rp.passes {
            let kernel = kernel(op, in_t, out_t, pass.layout)?;
            let pipeline = self.pipeline(op, kernel, arity)?;
            for d in &pass.dispatches {
                debug_assert!(d.iterations <= MAX_LOOP_ITERATIONS);
                let mut bindings: Vec<(&wgpu::Buffer, Window)> = match pass.input {
                    plan::Buffer::Call => bufs
                        .iter()
                        .enumerate()
                        .map(|(k, (b, _))| (*b, d.windows[k]))
                        .collect(),
                    plan::Buffer::Scratch(i) => vec![(&scratch[i], d.windows[0])],
                };
                bindings.push(match pass.output {
                    plan::Buffer::Call => (output.buffer, d.windows[OUTPUT_SLOT]),
                    plan::Buffer::Scratch(i) => (&scratch[i], d.windows[OUTPUT_SLOT]),
                });
                self.dispatch(&pipeline, &d.params, &bindings, d.groups, enc)?;
            }
        }
        Ok(())
    }

    /// The launch for elements `first..first+count` of the plan (for contiguous layouts) or all of it.
    fn launch(
        &self,
        plan: &Plan,
        layout: Layout,
        first: u64,
        count: u64,
        bufs: &[(&wgpu::Buffer, u64)],
        output: &GpuRegion<'_>,
    ) -> Launch {
        let arity = bufs.len();
        let in_es = plan.input_type().size() as u64;
        let out_es = plan.output_type().size() as u64;
        let mut strides: [Vec<u64>; SLOTS] = Default::default();
        let mut elem = [1u64; SLOTS];
        let mut offset = [0u64; SLOTS];
        let words = layout == Layout::Words;
        let unit = |es: u64| if words { 16 } else { es };
        for k in 0..arity {
            elem[k] = unit(in_es);
            offset[k] = bufs[k].1 + first * in_es;
        }
        elem[OUTPUT_SLOT] = unit(out_es);
        offset[OUTPUT_SLOT] = output.offset + first * out_es;
        let dims: Vec<u64>;
        if layout == Layout::Strided || layout.reduces() {
            // Every dimension, with its strides.
            dims = plan.iter.iter().map(|&d| d as u64).collect();
            for (s, p) in strides.iter_mut().zip(&plan.in_strides).take(arity) {
                *s = p.iter().map(|&v| v as u64).collect();
            }
            strides[OUTPUT_SLOT] = plan.out_strides.iter().map(|&s| s as u64).collect();
        } else {
            dims = vec![if words { count * in_es / 16 } else { count }];
            for s in strides.iter_mut() {
                *s = vec![1];
            }
        }
        for s in strides.iter_mut() {
            if s.is_empty() {
                *s = vec![0; dims.len()];
            }
        }
        Launch {
            layout,
            dims,
            strides,
            elem,
            offset,
            arity,
            out_bits: plan.output_type().bits(),
        }
    }

    /// Copies the 4-byte words holding a region into a new scratch buffer; returns it with the
    /// region's offset inside it.
    pub(crate) fn copy_region(
        &self,
        r: &GpuRegion<'_>,
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<(wgpu::Buffer, u64)> {
        let extent = r.desc.extent_bytes("tensor")? as u64;
        let start = r.offset / 4 * 4;
        let end = (r.offset + extent).div_ceil(4) * 4;
        if end > r.buffer.size() {
            return Err(Error::GpuUnsupported {
                what: "a tensor that shares the output's buffer ends inside a final partial 4-byte word".to_owned(),
            });
        }
        let scratch = self.storage_buffer("tensorbits scratch", (end - start) as usize, &[])?;
        enc.copy_buffer_to_buffer(r.buffer, start, &scratch, 0, end - start);
        Ok((scratch, copied_offset(r.offset)))
    }
}
