//! The wgpu executor: runs the WGSL kernels `#[bitwise_op]` generates on any GPU wgpu supports (and on
//! Mesa's lavapipe), on its own device or on the caller's, on its own tensors or on regions of the
//! caller's buffers, optionally recording into the caller's command encoder.

mod knn;
mod split;
mod tensor;

pub use tensor::{GpuTensor, Target, knn_on, reduce_on, run_on};

use crate::error::{Error, Result};
use crate::op::{Call, GpuKernel, OpInfo, Plan};
use crate::validate::buffer::{Overlap, Place, check_in_place, check_place, classify};
use crate::validate::{self, Name, OpTensor, desc::TensorDesc};
use crate::{DataType, FeatureLevel};
use split::{Dispatch, Launch, Window};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};
use tensorbits_core::wgsl::{Layout, OUTPUT_SLOT, SLOTS};

/// A tensor in a caller's buffer: `desc` describes it starting `offset` bytes into `buffer`. The
/// buffer needs `STORAGE` usage (and `COPY_SRC` for an input that shares the output's buffer).
#[derive(Clone, Copy, Debug)]
pub struct GpuRegion<'a> {
    /// The buffer.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset of element 0.
    pub offset: u64,
    /// The description.
    pub desc: TensorDesc,
}

/// One input binding of [`GpuExecutor::execute`].
#[derive(Clone, Copy, Debug)]
pub enum GpuInput<'a> {
    /// A region of a buffer.
    Region(GpuRegion<'a>),
    /// The output region itself (in-place execution; the op must allow it).
    Output,
}

/// Limits to lower when creating the executor's own device (to test splitting, or to leave room).
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuLimits {
    /// Caps `max_storage_buffer_binding_size`.
    pub max_storage_buffer_binding_size: Option<u64>,
    /// Caps `max_compute_workgroups_per_dimension`.
    pub max_compute_workgroups_per_dimension: Option<u32>,
}

/// How a data type runs on this executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuTypeSupport {
    /// 32-bit elements: one element per WGSL `u32`.
    Native,
    /// 8- and 16-bit elements packed in `u32` words, 64-bit ones as two `u32`s, `bool` as a byte.
    Emulated,
}

struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// Runs ops on a wgpu device. Pipelines are compiled once per kernel and cached.
pub struct GpuExecutor {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: Option<wgpu::AdapterInfo>,
    limits: split::Limits,
    pipelines: Mutex<HashMap<(usize, usize), Arc<Pipeline>>>,
    /// On a device this executor created: the first error wgpu reported outside an error scope.
    uncaptured: Option<Arc<Mutex<Option<String>>>>,
}

impl std::fmt::Debug for GpuExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuExecutor")
            .field("device", &self.describe())
            .finish()
    }
}

fn gpu_error(e: impl std::fmt::Display) -> Error {
    Error::Gpu {
        message: e.to_string(),
    }
}

impl GpuExecutor {
    /// Creates a device on the default adapter (high performance), with the adapter's limits.
    pub async fn new() -> Result<Self> {
        Self::with_limits(GpuLimits::default()).await
    }

    /// [`new`](Self::new), blocking the current thread.
    pub fn new_blocking() -> Result<Self> {
        pollster::block_on(Self::new())
    }

    /// Creates a device with some limits lowered.
    pub async fn with_limits(options: GpuLimits) -> Result<Self> {
        // WGPU_BACKEND and the other WGPU_* variables choose backends and adapters, as in every wgpu program.
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::NoGpu {
                reason: e.to_string(),
            })?;
        let mut limits = adapter.limits();
        if let Some(v) = options.max_storage_buffer_binding_size {
            limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(v);
        }
        if let Some(v) = options.max_compute_workgroups_per_dimension {
            limits.max_compute_workgroups_per_dimension =
                limits.max_compute_workgroups_per_dimension.min(v);
        }
        // Timestamps inside encoders let `tensorbits bench` time kernels on the device itself.
        let wanted =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("tensorbits"),
                required_limits: limits,
                required_features: adapter.features() & wanted,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::NoGpu {
                reason: e.to_string(),
            })?;
        // wgpu's default handler panics; errors of our own calls are captured by error scopes, and
        // anything else on our own device is kept and returned by the next call, never printed.
        let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
            s.get_or_insert_with(|| e.to_string());
        }));
        let mut ex = Self::from_device(device, queue);
        ex.info = Some(adapter.get_info());
        ex.uncaptured = Some(uncaptured);
        Ok(ex)
    }

    /// Uses the caller's device and queue (they are reference-counted handles). Errors of this
    /// executor's work are captured in error scopes; the device's own error handler is left alone.
    pub fn from_device(device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let l = device.limits();
        let limits = split::Limits {
            max_binding: l.max_storage_buffer_binding_size,
            offset_align: u64::from(l.min_storage_buffer_offset_alignment).max(4),
            max_groups: l.max_compute_workgroups_per_dimension.max(1),
        };
        GpuExecutor {
            device,
            queue,
            info: None,
            limits,
            pipelines: Mutex::new(HashMap::new()),
            uncaptured: None,
        }
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The adapter's description, when this executor created the device.
    pub fn adapter_info(&self) -> Option<&wgpu::AdapterInfo> {
        self.info.as_ref()
    }

    /// A one-line description: adapter name and backend.
    pub fn describe(&self) -> String {
        match &self.info {
            Some(i) => format!("{} ({:?}, {:?})", i.name, i.backend, i.device_type),
            None => "caller's wgpu device".to_owned(),
        }
    }

    /// Which input types of `op` this executor runs at `level`, and how.
    pub fn capabilities(
        &self,
        op: &OpInfo,
        level: FeatureLevel,
    ) -> Vec<(DataType, GpuTypeSupport)> {
        op.types_at(level)
            .iter()
            .filter(|t| op.gpu_kernels().iter().any(|k| k.input == **t))
            .map(|&t| {
                (
                    t,
                    if t.bits() == 32 {
                        GpuTypeSupport::Native
                    } else {
                        GpuTypeSupport::Emulated
                    },
                )
            })
            .collect()
    }

    /// A new buffer of `STORAGE | COPY_SRC | COPY_DST` usage for `len` bytes, of which the first
    /// `init.len()` are `init` and the rest zero. Its size is rounded up to whole 4-byte words (at
    /// least one), as bindings and buffer writes need. A size beyond the device's `max_buffer_size`,
    /// or memory the device cannot give, is an error.
    pub fn storage_buffer(&self, label: &str, len: usize, init: &[u8]) -> Result<wgpu::Buffer> {
        let size = (len.max(init.len()) as u64).div_ceil(4).max(1) * 4;
        let max = self.device.limits().max_buffer_size;
        if size > max {
            return Err(Error::GpuUnsupported {
                what: format!(
                    "{label} needs a buffer of {size} bytes; this device's max_buffer_size is {max} bytes"
                ),
            });
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::AllocationFailed {
                tensor: format!("{label} (on the GPU: {e})"),
                bytes: size as usize,
            });
        }
        // Writes are whole 4-byte words: the bulk as it is, the last partial word padded.
        let whole = init.len() / 4 * 4;
        if whole > 0 {
            self.queue.write_buffer(&buffer, 0, &init[..whole]);
        }
        if whole < init.len() {
            let mut last = [0u8; 4];
            last[..init.len() - whole].copy_from_slice(&init[whole..]);
            self.queue.write_buffer(&buffer, whole as u64, &last);
        }
        Ok(buffer)
    }

    fn pipeline(&self, op: &OpInfo, kernel: &GpuKernel, arity: usize) -> Result<Arc<Pipeline>> {
        let key = (kernel.source.as_ptr() as usize, kernel.source.len());
        let mut cache = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&key) {
            return Ok(p.clone());
        }
        let label = format!(
            "tensorbits {} {}->{} {:?}",
            op.name(),
            kernel.input,
            kernel.output,
            kernel.layout
        );
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(kernel.source.into()),
            });
        let entry = |binding: u32, ty: wgpu::BufferBindingType| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let mut entries = vec![entry(0, wgpu::BufferBindingType::Uniform)];
        for k in 0..arity {
            entries.push(entry(
                k as u32 + 1,
                wgpu::BufferBindingType::Storage { read_only: true },
            ));
        }
        // knn writes two outputs: the distances and the indices.
        let outputs = if matches!(kernel.layout, Layout::Knn | Layout::KnnWords) {
            2
        } else {
            1
        };
        for o in 0..outputs {
            entries.push(entry(
                (arity + 1 + o) as u32,
                wgpu::BufferBindingType::Storage { read_only: false },
            ));
        }
        let layout = self
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(&label),
                entries: &entries,
            });
        let pl = self
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(&label),
                bind_group_layouts: &[Some(&layout)],
                ..Default::default()
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: Some(&pl),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        let p = Arc::new(Pipeline { pipeline, layout });
        cache.insert(key, p.clone());
        Ok(p)
    }

    /// Runs `op` on regions of the caller's buffers. Everything is validated before any work is
    /// recorded. With `encoder`, the work is recorded into it and the caller submits; without, it is
    /// submitted here and this call waits for wgpu to report errors (not for the GPU to finish).
    /// Only the output's elements are written: not one byte outside the output region.
    pub fn execute(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: &[GpuInput<'_>],
        output: &GpuRegion<'_>,
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()> {
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
                    } else {
                        sources.push(Source::Bound(*r));
                    }
                }
            }
        }
        if plan.element_count() == 0 {
            return Ok(());
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let result = match encoder {
            Some(enc) => self.encode(op, &plan, &sources, output, enc),
            None => {
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("tensorbits"),
                    });
                let r = self.encode(op, &plan, &sources, output, &mut enc);
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

    /// The error wgpu reported on this executor's own device outside any error scope, if any.
    pub(crate) fn take_uncaptured(&self) -> Result<()> {
        let taken = self
            .uncaptured
            .as_ref()
            .and_then(|u| u.lock().unwrap_or_else(|p| p.into_inner()).take());
        match taken {
            Some(message) => Err(Error::Gpu { message }),
            None => Ok(()),
        }
    }

    fn encode(
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
        let bufs: Vec<(&wgpu::Buffer, u64)> = owned.iter().map(|(b, o)| (b, *o)).collect();
        let arity = sources.len();
        let in_t = plan.input_type();
        let out_t = plan.output_type();
        let contiguous = plan.iter.len() == 1
            && plan.out_strides[0] == 1
            && (0..arity).all(|k| plan.in_strides[k][0] == 1);
        let words = op
            .gpu_kernels()
            .iter()
            .find(|k| k.input == in_t && k.output == out_t && k.layout == Layout::Words);
        let mut launches: Vec<(Layout, u64, u64)> = Vec::new(); // (layout, first element, elements)
        let n = plan.element_count() as u64;
        let aligned16 =
            bufs.iter().all(|(_, o)| o.is_multiple_of(16)) && output.offset.is_multiple_of(16);
        // A pairwise sum over rows of whole 32-bit words runs on the words, when the op has that
        // kernel: 4 times fewer elements of u8 codes, each counted at once.
        let offsets = [
            bufs.first().map_or(0, |b| b.1),
            bufs.get(1).map_or(0, |b| b.1),
        ];
        let words_plan = match plan.pairwise {
            true => words_plan(plan, offsets).filter(|_| {
                op.gpu_kernels()
                    .iter()
                    .any(|k| k.input == in_t && k.output == out_t && k.layout == Layout::PairWords)
            }),
            false => None,
        };
        let plan = words_plan.as_ref().unwrap_or(plan);
        if plan.reduce.is_some() {
            let layout = match (plan.pairwise, words_plan.is_some()) {
                (true, true) => Layout::PairWords,
                (true, false) => Layout::Pairwise,
                _ => reduce_layout(plan),
            };
            launches.push((layout, 0, n));
        } else if contiguous && words.is_some() && aligned16 {
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
            let kernel = op
                .gpu_kernels()
                .iter()
                .find(|k| k.input == in_t && k.output == out_t && k.layout == layout)
                .ok_or_else(|| Error::GpuUnsupported {
                    what: format!(
                        "{} has no {layout:?} kernel for {in_t} -> {out_t}",
                        op.name()
                    ),
                })?;
            let launch = self.launch(plan, layout, first, count, &bufs, output);
            let dispatches = split::split(&launch, &self.limits).map_err(|t| Error::GpuUnsupported {
                what: format!(
                    "{}: a window of {} bytes of {} exceeds max_storage_buffer_binding_size ({} bytes) even after splitting",
                    op.name(),
                    t.bytes,
                    op.tensor_name(if t.slot == OUTPUT_SLOT { arity } else { t.slot }),
                    self.limits.max_binding
                ),
            })?;
            let pipeline = self.pipeline(op, kernel, arity)?;
            for d in &dispatches {
                self.record(&pipeline, d, &bufs, output, arity, enc)?;
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
        let (kept, elements) = if layout.reduces() {
            (plan.kept, plan.reduced as u64)
        } else {
            (dims.len(), 0)
        };
        Launch {
            layout,
            dims,
            strides,
            elem,
            offset,
            arity,
            out_bits: plan.output_type().bits(),
            kept,
            elements,
        }
    }

    fn record(
        &self,
        p: &Pipeline,
        d: &Dispatch,
        bufs: &[(&wgpu::Buffer, u64)],
        output: &GpuRegion<'_>,
        arity: usize,
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        use wgpu::util::DeviceExt;
        let params = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("tensorbits params"),
                contents: &d.params,
                usage: wgpu::BufferUsages::UNIFORM,
            });
        fn binding(buffer: &wgpu::Buffer, w: Window) -> Result<wgpu::BindingResource<'_>> {
            if w.offset + w.size > buffer.size() {
                return Err(Error::GpuUnsupported {
                    what: format!(
                        "a tensor ends within the last {} bytes of a buffer of {} bytes whose size is not a multiple of 4; \
                         GPU bindings cover whole 4-byte words",
                        w.offset + w.size - buffer.size(),
                        buffer.size()
                    ),
                });
            }
            Ok(wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: w.offset,
                size: NonZeroU64::new(w.size),
            }))
        }
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        for (k, (b, _)) in bufs.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: k as u32 + 1,
                resource: binding(b, d.windows[k])?,
            });
        }
        entries.push(wgpu::BindGroupEntry {
            binding: arity as u32 + 1,
            resource: binding(output.buffer, d.windows[OUTPUT_SLOT])?,
        });
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tensorbits"),
            layout: &p.layout,
            entries: &entries,
        });
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("tensorbits"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&p.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(d.groups.0, d.groups.1, 1);
        Ok(())
    }

    /// Copies the 4-byte words holding a region into a new scratch buffer; returns it with the
    /// region's offset inside it.
    fn copy_region(
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
        Ok((scratch, r.offset - start))
    }
}

enum Source<'a> {
    Bound(GpuRegion<'a>),
    Alias,
    Copy(GpuRegion<'a>),
}

/// The region check every GPU tensor gets: the shared one (bounds, promised alignment), and what
/// binding needs beyond it (`STORAGE` usage, an offset that is a whole number of elements). Returns
/// the bytes its elements span in the buffer.
fn check_region(r: &GpuRegion<'_>, tensor: impl Name) -> Result<(u64, u64)> {
    let usage = r.buffer.usage();
    if !usage.contains(wgpu::BufferUsages::STORAGE) {
        return Err(Error::GpuBuffer {
            tensor: tensor.name(),
            reason: format!("the buffer lacks STORAGE usage (it has {usage:?})"),
        });
    }
    let place = Place::InBuffer {
        offset: r.offset,
        len: r.buffer.size(),
    };
    let span = check_place(&r.desc, tensor, place)?;
    let es = r.desc.data_type().size() as u64;
    if !r.offset.is_multiple_of(es) {
        return Err(Error::GpuBuffer {
            tensor: tensor.name(),
            reason: format!(
                "offset {} is not a multiple of the element size {es}",
                r.offset
            ),
        });
    }
    Ok(span)
}

/// Which reduction kernel runs a plan: one invocation per output (`ReduceRows`) when reductions are
/// short, or when there are many outputs whose reduced elements do not lie in long contiguous runs
/// (reducing an outer axis: neighbouring invocations then read neighbouring elements); else a
/// workgroup per output (`Reduce`), whose invocations share each contiguous run.
fn reduce_layout(plan: &Plan) -> Layout {
    /// Reductions this short never fill a workgroup.
    const SHORT: usize = 64;
    /// Outputs enough to prefer one invocation each to a workgroup sharing strided runs.
    const MANY: usize = 256;
    // The workgroup's invocations share runs of the innermost reduced dimension: worth it when
    // those are contiguous and fill the workgroup.
    let inner_runs = plan.iter.len() > plan.kept
        && plan.iter.last().is_some_and(|&n| n >= SHORT)
        && plan.in_strides.iter().take(1).all(|s| s.last() == Some(&1));
    if plan.reduced <= SHORT || (plan.count >= MANY && !inner_runs) {
        Layout::ReduceRows
    } else {
        Layout::Reduce
    }
}

/// For a pairwise plan whose rows are contiguous runs of whole 32-bit words, in buffers whose
/// element 0 is at byte `offsets`: the same plan over `u32` words, `K` scaled to the words of a row.
/// Only for ops whose count is the same at every width (those with a `PairWords` kernel).
pub(crate) fn words_plan(plan: &Plan, offsets: [u64; 2]) -> Option<Plan> {
    let es = plan.in_dtype.size();
    let nd = plan.iter.len();
    let k = *plan.iter.last()?;
    // The words kernels count a row in 32 bits: at most 2^27 words.
    if !plan.pairwise || k == 0 || !(k * es).is_multiple_of(4) || es > 8 || k * es / 4 >= 1 << 27 {
        return None;
    }
    if offsets.iter().any(|o| !o.is_multiple_of(4)) {
        return None;
    }
    let mut p = plan.clone();
    for s in p.in_strides.iter_mut().take(2) {
        if s.len() != nd || (k > 1 && s[nd - 1] != 1) {
            return None;
        }
        for v in s[..nd - 1].iter_mut() {
            if !(*v * es).is_multiple_of(4) {
                return None;
            }
            *v = *v * es / 4;
        }
        s[nd - 1] = 1;
    }
    p.iter[nd - 1] = k * es / 4;
    p.reduced = k * es / 4;
    p.in_dtype = DataType::U32;
    Some(p)
}
