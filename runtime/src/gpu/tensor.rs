//! Tensors in device memory for the typed API: upload, run, download.

use super::{GpuExecutor, GpuInput, GpuRegion};
use crate::error::{Error, Result};
use crate::{Call, Dims, Element, OpInfo, Tensor, TensorDesc, TensorView};
use std::marker::PhantomData;

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
}

fn storage_size(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4).max(1) * 4
}

impl GpuExecutor {
    /// Copies a tensor (or a strided view, packed on the way) to the device.
    pub fn upload<'a, T: Element>(&self, t: impl Into<TensorView<'a, T>>) -> Result<GpuTensor<T>> {
        let t = t.into().to_tensor();
        let mut bytes: Vec<u8> = bytemuck::cast_slice(t.data()).to_vec();
        // Writes to a buffer are whole 4-byte words.
        bytes.resize(storage_size(bytes.len()) as usize, 0);
        let buffer = self.new_buffer(bytes.len() as u64);
        self.queue.write_buffer(&buffer, 0, &bytes);
        Ok(GpuTensor {
            buffer,
            shape: Dims::new(t.shape()).unwrap_or_default(),
            _t: PhantomData,
        })
    }

    fn new_buffer(&self, size: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensorbits tensor"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Copies a device tensor back to the host, waiting for the GPU.
    pub fn download<T: Element>(&self, t: &GpuTensor<T>) -> Result<Tensor<T>> {
        let n = t.shape.product().unwrap_or(0);
        let bytes = self.read_bytes(&t.buffer, 0, storage_size(n * size_of::<T>()))?;
        let mut out = vec![T::ZERO; n];
        T::with_bytes_mut(&mut out, |b| b.copy_from_slice(&bytes[..b.len()]));
        Tensor::from_vec(out, &t.shape)
    }

    /// Reads `size` bytes (a multiple of 4) at `offset` of a `COPY_SRC` buffer, waiting for the GPU.
    pub fn read_bytes(&self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u8>> {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensorbits readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("tensorbits readback"),
            });
        enc.copy_buffer_to_buffer(buffer, offset, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(Error::Gpu {
                message: e.to_string(),
            });
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Gpu {
                message: e.to_string(),
            })?;
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(Error::Gpu {
                    message: e.to_string(),
                });
            }
            Err(e) => {
                return Err(Error::Gpu {
                    message: e.to_string(),
                });
            }
        }
        let data = staging
            .slice(..)
            .get_mapped_range()
            .map_err(|e| Error::Gpu {
                message: e.to_string(),
            })?
            .to_vec();
        staging.unmap();
        Ok(data)
    }

    /// Runs `op` on device tensors into a new device tensor; what generated `run_gpu` methods call.
    pub fn run_new<T: Element, O: Element, const N: usize>(
        &self,
        op: &'static OpInfo,
        call: &Call,
        inputs: [&GpuTensor<T>; N],
    ) -> Result<GpuTensor<O>> {
        let descs: [TensorDesc; N] = std::array::from_fn(|k| inputs[k].desc());
        let refs: [&TensorDesc; N] = std::array::from_fn(|k| &descs[k]);
        let plan = crate::op::validate_new_output(op, call, &refs, O::DATA_TYPE)?;
        let shape = Dims::new(plan.output_shape()).ok_or_else(|| Error::RankTooLarge {
            tensor: "OutputTensor".to_owned(),
            rank: plan.output_shape().len(),
        })?;
        let out = GpuTensor::<O> {
            buffer: self.new_buffer(storage_size(plan.element_count() * size_of::<O>())),
            shape,
            _t: PhantomData,
        };
        let ins: [GpuInput<'_>; N] = std::array::from_fn(|k| GpuInput::Region(inputs[k].region()));
        self.execute(op, call, &ins, &out.region(), None)?;
        Ok(out)
    }
}

/// Where a typed call runs.
#[derive(Clone, Copy, Debug)]
pub enum Device<'a> {
    /// The CPU executor.
    Cpu,
    /// A GPU executor.
    Gpu(&'a GpuExecutor),
}

impl Device<'_> {
    /// `CPU`, or the GPU's adapter and backend.
    pub fn describe(&self) -> String {
        match self {
            Device::Cpu => "CPU".to_owned(),
            Device::Gpu(g) => format!("GPU: {}", g.describe()),
        }
    }
}

/// Runs `op` on host tensors on `device`: on a GPU, the inputs are uploaded (packed) and the result
/// read back. What generated `run_on` methods call; `f` as for the CPU's `run_new`.
pub fn run_on<T: Element, O: Element, const N: usize>(
    device: &Device<'_>,
    op: &'static OpInfo,
    call: &Call,
    inputs: [TensorView<'_, T>; N],
    f: impl Fn([T::Word; N]) -> O::Word,
) -> Result<Tensor<O>> {
    match device {
        Device::Cpu => crate::typed::run_new(op, call, inputs, f),
        Device::Gpu(g) => {
            let up: Vec<GpuTensor<T>> =
                inputs.iter().map(|v| g.upload(*v)).collect::<Result<_>>()?;
            let refs: [&GpuTensor<T>; N] = std::array::from_fn(|k| &up[k]);
            g.download(&g.run_new::<T, O, N>(op, call, refs)?)
        }
    }
}
