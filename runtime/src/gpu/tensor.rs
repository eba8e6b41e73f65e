//! Tensors in device memory for the typed API: upload, run, download.

use super::{GpuExecutor, GpuInput, GpuRegion};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::op::{Call, OpInfo};
use crate::validate::{self, desc::TensorDesc};
use crate::{Dims, Tensor, TensorView};
use std::marker::PhantomData;

/// The most bytes a read-back maps at once: large enough that a part's round trip to the GPU is a
/// small share of its copy, small enough that reading a large result needs little host memory
/// beyond the result itself.
const READBACK_CHUNK: u64 = 64 << 20;

/// A packed tensor in a wgpu buffer of `STORAGE | COPY_SRC | COPY_DST` usage.
#[derive(Debug)]
pub struct GpuTensor<T> {
    buffer: wgpu::Buffer,
    shape: Dims,
    _t: PhantomData<T>,
}

impl<T: Element> GpuTensor<T> {
    /// The sizes.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The buffer (its first `len * size_of::<T>()` bytes are the elements).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// This tensor as a region, for [`GpuExecutor::execute`].
    pub fn region(&self) -> GpuRegion<'_> {
        GpuRegion {
            buffer: &self.buffer,
            offset: 0,
            desc: self.desc(),
        }
    }

    fn desc(&self) -> TensorDesc {
        TensorDesc::from_parts(T::DATA_TYPE, self.shape, None)
    }

    /// A device tensor of `shape` whose `bytes` the GPU will write.
    pub(crate) fn new_empty(g: &GpuExecutor, shape: Dims, bytes: usize) -> Result<Self> {
        Ok(GpuTensor {
            buffer: g.storage_buffer("tensorbits output", bytes, &[])?,
            shape,
            _t: PhantomData,
        })
    }
}

impl GpuExecutor {
    /// Copies a tensor (or a strided view, packed on the way) to the device.
    pub fn upload<'a, T: Element>(&self, t: impl Into<TensorView<'a, T>>) -> Result<GpuTensor<T>> {
        let v = t.into();
        let packed;
        let data = if v.is_packed() {
            v.data()
        } else {
            packed = v.to_tensor();
            packed.data()
        };
        let n = v.dims().product().unwrap_or(0);
        let bytes: &[u8] = bytemuck::cast_slice(&data[..n.min(data.len())]);
        Ok(GpuTensor {
            buffer: self.storage_buffer("tensorbits tensor", bytes.len(), bytes)?,
            shape: *v.dims(),
            _t: PhantomData,
        })
    }

    /// Copies a device tensor back to the host, waiting for the GPU.
    pub fn download<T: Element>(&self, t: &GpuTensor<T>) -> Result<Tensor<T>> {
        let n = t.shape.product().unwrap_or(0);
        let mut out = crate::alloc::zeroed_vec::<T>(n, "OutputTensor")?;
        T::with_bytes_mut(&mut out, |b| self.read_into(&t.buffer, 0, b))?;
        Tensor::from_vec(out, &t.shape)
    }

    /// Reads `size` bytes (a multiple of 4) at `offset` of a `COPY_SRC` buffer, waiting for the GPU.
    pub fn read_bytes(&self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u8>> {
        let mut data = crate::alloc::zeroed_bytes(
            usize::try_from(size).unwrap_or(usize::MAX),
            "the read-back buffer",
        )?;
        self.read_into(buffer, offset, &mut data)?;
        Ok(data)
    }

    /// Reads `out.len()` bytes at `offset` (a multiple of 4) of a `COPY_SRC` buffer into `out`,
    /// waiting for the GPU. The bytes pass through a mappable staging buffer of at most 64 MiB,
    /// reused for each part, so a read needs no host memory beyond `out`
    /// and that chunk. The buffer must hold `out.len()` rounded up to 4 bytes past `offset`.
    pub fn read_into(&self, buffer: &wgpu::Buffer, offset: u64, out: &mut [u8]) -> Result<()> {
        let gpu = |e: &dyn std::fmt::Display| Error::Gpu {
            message: e.to_string(),
        };
        if out.is_empty() {
            return Ok(());
        }
        let whole = (out.len() as u64).next_multiple_of(4);
        let chunk = whole.min(READBACK_CHUNK);
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensorbits readback"),
            size: chunk,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(Error::AllocationFailed {
                tensor: format!("the read-back buffer (on the GPU: {e})"),
                bytes: chunk as usize,
            });
        }
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(gpu(&e));
        }
        for (part, dst) in out.chunks_mut(chunk as usize).enumerate() {
            let size = (dst.len() as u64).next_multiple_of(4);
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("tensorbits readback"),
                });
            let from = offset + part as u64 * chunk;
            enc.copy_buffer_to_buffer(buffer, from, &staging, 0, size);
            self.queue.submit([enc.finish()]);
            let (tx, rx) = std::sync::mpsc::channel();
            staging
                .slice(..size)
                .map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(gpu(&e));
            }
            self.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| gpu(&e))?;
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(gpu(&e)),
                Err(e) => return Err(gpu(&e)),
            }
            {
                let mapped = staging
                    .slice(..size)
                    .get_mapped_range()
                    .map_err(|e| gpu(&e))?;
                dst.copy_from_slice(&mapped[..dst.len()]);
            }
            staging.unmap();
        }
        self.take_uncaptured()
    }

    /// Runs `op` on device tensors into a new device tensor; what generated `run_gpu` methods call.
    #[doc(hidden)]
    pub fn run_new<T: Element, O: Element, const N: usize>(
        &self,
        op: &'static OpInfo,
        call: &Call,
        inputs: [&GpuTensor<T>; N],
    ) -> Result<GpuTensor<O>> {
        let regions: [GpuRegion<'_>; N] = std::array::from_fn(|k| inputs[k].region());
        let (buffer, shape) = self.run_new_regions(op, call, &regions, O::DATA_TYPE)?;
        Ok(GpuTensor {
            buffer,
            shape,
            _t: PhantomData,
        })
    }

    /// [`run_new`](Self::run_new) without the types: validates, allocates the output and runs.
    fn run_new_regions(
        &self,
        op: &'static OpInfo,
        call: &Call,
        regions: &[GpuRegion<'_>],
        out_dtype: crate::DataType,
    ) -> Result<(wgpu::Buffer, Dims)> {
        let descs: Vec<&TensorDesc> = regions.iter().map(|r| &r.desc).collect();
        let plan = validate::validate_new_output(op, call, &descs, out_dtype)?;
        let shape = Dims::new(plan.output_shape()).ok_or_else(|| Error::RankTooLarge {
            tensor: "OutputTensor".to_owned(),
            rank: plan.output_shape().len(),
        })?;
        let out_desc = TensorDesc::from_parts(out_dtype, shape, None);
        let buffer = self.storage_buffer("tensorbits output", out_desc.total_bytes(), &[])?;
        let ins: Vec<GpuInput<'_>> = regions.iter().map(|r| GpuInput::Region(*r)).collect();
        let out = GpuRegion {
            buffer: &buffer,
            offset: 0,
            desc: out_desc,
        };
        self.execute(op, call, &ins, &out, None)?;
        Ok((buffer, shape))
    }
}

/// Where a typed call runs.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// The CPU executor.
    Cpu,
    /// A GPU executor.
    Gpu(&'a GpuExecutor),
}

impl Target<'_> {
    /// `CPU`, or the GPU's adapter and backend.
    pub fn describe(&self) -> String {
        match self {
            Target::Cpu => "CPU".to_owned(),
            Target::Gpu(g) => format!("GPU: {}", g.describe()),
        }
    }
}

/// Runs `op` on host tensors on `target`: on a GPU, the inputs are uploaded (packed) and the result
/// read back. What generated `run_on` methods call; `f` as for the CPU's `run_new`.
pub fn run_on<T: Element, O: Element, const N: usize>(
    target: &Target<'_>,
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    f: impl Fn([T::Word; N]) -> O::Word + Sync,
) -> Result<Tensor<O>> {
    match target {
        Target::Cpu => crate::api::typed::run_new(op, call, inputs, f),
        Target::Gpu(g) => {
            let up: Vec<GpuTensor<T>> =
                inputs.iter().map(|v| g.upload(*v)).collect::<Result<_>>()?;
            let refs: [&GpuTensor<T>; N] = std::array::from_fn(|k| &up[k]);
            g.download(&g.run_new::<T, O, N>(op, call, refs)?)
        }
    }
}

/// Runs a reduction or pairwise `op` on host tensors on `target`; what generated `run_on` methods
/// of such ops call. `kernels` as for the CPU's `reduce_new`.
pub fn reduce_on<T: Element, O: Element, const N: usize>(
    target: &Target<'_>,
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    kernels: &crate::cpu::Kernels<'_>,
) -> Result<Tensor<O>> {
    match target {
        Target::Cpu => crate::api::typed::reduce_new(op, call, inputs, kernels),
        Target::Gpu(g) => {
            let up: Vec<GpuTensor<T>> =
                inputs.iter().map(|v| g.upload(*v)).collect::<Result<_>>()?;
            let refs: [&GpuTensor<T>; N] = std::array::from_fn(|k| &up[k]);
            g.download(&g.run_new::<T, O, N>(op, call, refs)?)
        }
    }
}

/// knn of a pairwise sum `op` on host tensors on `target`; what generated `knn_on` methods call.
pub fn knn_on<T: Element, D: Element>(
    target: &Target<'_>,
    op: &'static OpInfo,
    call: &Call,
    a: TensorView<'_, T>,
    b: TensorView<'_, T>,
    k: usize,
    kernels: &crate::cpu::Kernels<'_>,
) -> Result<(Tensor<D>, Tensor<i64>)> {
    match target {
        Target::Cpu => crate::api::typed::knn_new(op, call, a, b, k, kernels),
        Target::Gpu(g) => {
            let (ga, gb) = (g.upload(a)?, g.upload(b)?);
            let (d, i) = g.knn_new::<T, D>(op, call, &ga, &gb, k)?;
            Ok((g.download(&d)?, g.download(&i)?))
        }
    }
}
