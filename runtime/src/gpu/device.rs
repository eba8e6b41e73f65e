//! Device creation: the executor's own device on the default adapter (optionally with lowered
//! limits) or the caller's, and the storage buffers the executor allocates.

use super::{GpuExecutor, GpuLimits, GpuTypeSupport, split};
use crate::error::{Error, Result};
use crate::op::OpInfo;
use crate::{DataType, FeatureLevel};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

impl GpuExecutor {
    /// Creates a device on the default adapter (high performance), with the adapter's limits.
    pub async fn new() -> Result<Self> {
        Self::with_limits(GpuLimits::default()).await
    }

    /// [`new`](Self::new), blocking the current thread.
    pub fn new_blocking() -> Result<Self> {
        pollster::block_on(Self::new())
    }

    /// The wgpu instance options of the executor's own device: wgpu's primary backends (Vulkan,
    /// Metal, DX12), or the ones `WGPU_BACKEND` names, with the other `WGPU_*` variables applied as
    /// in every wgpu program. OpenGL is used only when asked for (`WGPU_BACKEND=gl`): its compute
    /// support is partial, and wgpu panics on it when its context lock is held for more than a
    /// second, as it is under concurrent use of a slow driver.
    pub fn instance_descriptor() -> wgpu::InstanceDescriptor {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::PRIMARY;
        desc.with_env()
    }

    /// Creates a device with some limits lowered.
    pub async fn with_limits(options: GpuLimits) -> Result<Self> {
        let instance = wgpu::Instance::new(Self::instance_descriptor());
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
}
