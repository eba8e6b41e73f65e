//! The pipeline cache (one compute pipeline per generated kernel, compiled on first use) and the
//! one path that records a dispatch: its uniform block, its bind group of windows, its workgroups.

use super::GpuExecutor;
use super::split::Window;
use crate::error::{Error, Result};
use crate::op::{GpuKernel, OpInfo};
use std::num::NonZeroU64;
use std::sync::Arc;
use tensorbits_core::wgsl::Layout;

pub(crate) struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// Whether each storage binding of a kernel of `layout` over `arity` inputs is written (bindings
/// from 1 on; binding 0 is the uniform block).
fn writable(layout: Layout, arity: usize) -> Vec<bool> {
    match layout {
        // a, b; the distances, the indices and the scratch lists.
        Layout::Knn | Layout::KnnWords => [vec![false; arity], vec![true; 3]].concat(),
        // The lists read, the lists written, the distances and the indices.
        Layout::KnnMerge => vec![false, true, true, true],
        // The partial results read; the output.
        Layout::ReduceMerge => vec![false, true],
        _ => [vec![false; arity], vec![true]].concat(),
    }
}

impl GpuExecutor {
    /// The pipeline of `kernel` (of `op`, over `arity` inputs), compiled on first use.
    pub(crate) fn pipeline(
        &self,
        op: &OpInfo,
        kernel: &GpuKernel,
        arity: usize,
    ) -> Result<Arc<Pipeline>> {
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
        for (i, w) in writable(kernel.layout, arity).into_iter().enumerate() {
            entries.push(entry(
                i as u32 + 1,
                wgpu::BufferBindingType::Storage { read_only: !w },
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

    /// Records one dispatch of `p`: the uniform block `params`, then each binding's window of its
    /// buffer, in binding order, and `groups` workgroups in x and y.
    pub(crate) fn dispatch(
        &self,
        p: &Pipeline,
        params: &[u8],
        bindings: &[(&wgpu::Buffer, Window)],
        groups: (u32, u32),
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        // Written through the queue, not mapped at creation: mapping a buffer of a lost device
        // panics inside wgpu, while a queue write reports its error to the scope.
        let bytes = params;
        let params = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tensorbits params"),
            size: bytes.len() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        self.queue.write_buffer(&params, 0, bytes);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        for (i, (buffer, w)) in bindings.iter().enumerate() {
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
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: w.offset,
                    size: NonZeroU64::new(w.size),
                }),
            });
        }
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
        pass.dispatch_workgroups(groups.0, groups.1, 1);
        Ok(())
    }

    /// A whole buffer as a window.
    pub(crate) fn whole(buffer: &wgpu::Buffer) -> Window {
        Window {
            offset: 0,
            size: buffer.size(),
        }
    }
}
