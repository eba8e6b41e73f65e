//! knn on the GPU: one workgroup per row of `a` (the `Layout::Knn` kernel), whose invocations each
//! scan every 64th row of `b` keeping a short sorted list, merged in workgroup memory, in passes of
//! 16 neighbours that each start past the last one found, so any `k` gives the CPU's exact lists.

use super::{GpuExecutor, GpuRegion, GpuTensor, Source, check_region, gpu_error};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::op::{Call, OpInfo};
use crate::validate::buffer::{Overlap, classify};
use crate::validate::{self, OpTensor, desc::TensorDesc};
use crate::{DataType, Dims, MAX_RANK};
use std::num::NonZeroU64;
use tensorbits_core::wgsl::{Layout, OUTPUT_SLOT, SLOTS, params_bytes};

impl GpuExecutor {
    /// knn of a pairwise sum `op` on regions of the caller's buffers: for each row of `a`
    /// (`inputs[0]`), the `k` nearest rows of `b` (`inputs[1]`), their distances into `distances`
    /// and row indices into `indices` (`i64`), both packed `[..., M, k]`. Validated before any work
    /// is recorded; recorded into `encoder`, or submitted here without one.
    pub fn knn(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: [&GpuRegion<'_>; 2],
        k: usize,
        (distances, indices): (&GpuRegion<'_>, &GpuRegion<'_>),
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()> {
        let descs = [&inputs[0].desc, &inputs[1].desc];
        let plan = validate::validate_knn(op, call, &descs, k, distances.desc.data_type())?;
        validate::reduce::check_knn_outputs(op, &plan, &distances.desc, &indices.desc)?;
        let unsupported = |what: String| Error::GpuUnsupported { what };
        if distances.desc.strides().is_some() || indices.desc.strides().is_some() {
            return Err(unsupported(
                "knn on the GPU writes packed outputs only".to_owned(),
            ));
        }
        let nd = plan.iter.len();
        let kdim = plan.iter[nd - 1];
        if kdim as u64 * u64::from(plan.in_dtype.bits()) > u64::from(u32::MAX) {
            return Err(unsupported(format!(
                "{}: distances of {kdim} elements may pass 2^32, which the GPU's knn counts in",
                op.name()
            )));
        }
        let dist_span = check_region(distances, "distances")?;
        let idx_span = check_region(indices, "indices")?;
        if distances.buffer == indices.buffer
            && dist_span.0 < idx_span.1
            && idx_span.0 < dist_span.1
        {
            return Err(Error::GpuBuffer {
                tensor: "indices".to_owned(),
                reason: "knn's two outputs overlap".to_owned(),
            });
        }
        let mut sources = Vec::with_capacity(2);
        for (i, r) in inputs.iter().enumerate() {
            let span = check_region(r, OpTensor(op, i))?;
            let mut copy = false;
            for (out, out_span) in [(distances, dist_span), (indices, idx_span)] {
                if r.buffer == out.buffer {
                    // An exact alias is allowed only in place; knn allows none.
                    if let Overlap::Alias = classify(op, i, &r.desc, span, &out.desc, out_span)? {
                        return Err(crate::validate::buffer::check_in_place(op, i)
                            .err()
                            .unwrap_or_else(|| gpu_error("knn aliases an input")));
                    }
                    copy = true;
                }
            }
            sources.push(if copy {
                Source::Copy(**r)
            } else {
                Source::Bound(**r)
            });
        }
        let units: usize = plan.iter[..nd - 2].iter().product();
        if units == 0 || k == 0 {
            return Ok(());
        }
        // Rows of whole 32-bit words run on the words when the op has that kernel (see
        // `words_plan`).
        let words = super::words_plan(&plan, [inputs[0].offset, inputs[1].offset]).and_then(|p| {
            op.gpu_kernels()
                .iter()
                .find(|g| {
                    g.input == plan.in_dtype
                        && g.output == plan.out_dtype
                        && g.layout == Layout::KnnWords
                })
                .map(|g| (p, g))
        });
        let kernel = op
            .gpu_kernels()
            .iter()
            .find(|g| {
                g.input == plan.in_dtype && g.output == plan.out_dtype && g.layout == Layout::Knn
            })
            .ok_or_else(|| {
                unsupported(format!(
                    "{} has no knn kernel for {} -> {}",
                    op.name(),
                    plan.in_dtype,
                    plan.out_dtype
                ))
            })?;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let record = |enc: &mut wgpu::CommandEncoder| -> Result<()> {
            let mut owned: Vec<(wgpu::Buffer, u64)> = Vec::with_capacity(2);
            for s in &sources {
                owned.push(match s {
                    Source::Bound(r) => (r.buffer.clone(), r.offset),
                    Source::Copy(r) => self.copy_region(r, enc)?,
                    Source::Alias => unreachable!("knn allows no alias"),
                });
            }
            match &words {
                Some((wp, wk)) => {
                    self.record_knn(op, wk, wp, k, &owned, distances, indices, units, enc)
                }
                None => {
                    self.record_knn(op, kernel, &plan, k, &owned, distances, indices, units, enc)
                }
            }
        };
        let result = match encoder {
            Some(enc) => record(enc),
            None => {
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("tensorbits knn"),
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

    /// The knn dispatches: per batch index, rows of `a` in chunks whose tensors' windows fit the
    /// device's binding size (all of that batch's `b` in each) and whose workgroups fit a dispatch.
    #[allow(
        clippy::too_many_arguments,
        reason = "the pieces of the dispatches, checked by the caller"
    )]
    fn record_knn(
        &self,
        op: &OpInfo,
        kernel: &crate::op::GpuKernel,
        plan: &crate::Plan,
        k: usize,
        bufs: &[(wgpu::Buffer, u64)],
        distances: &GpuRegion<'_>,
        indices: &GpuRegion<'_>,
        _units: usize,
        enc: &mut wgpu::CommandEncoder,
    ) -> Result<()> {
        let nd = plan.iter.len();
        let nb = nd - 3;
        let (m, n, kdim) = (plan.iter[nb], plan.iter[nb + 1], plan.iter[nb + 2]);
        let (sa, sb) = (&plan.in_strides[0], &plan.in_strides[1]);
        let in_es = plan.in_dtype.size() as u64;
        let out_es = plan.out_dtype.size() as u64;
        let lim = self.limits;
        let too_large = |what: &str, bytes: u64| Error::GpuUnsupported {
            what: format!(
                "{}: knn needs {what} of {bytes} bytes in one binding; max_storage_buffer_binding_size is {} bytes",
                op.name(),
                lim.max_binding
            ),
        };
        // The window of `count` elements from element `first` of a tensor at `offset` bytes:
        // (binding offset, binding size, first element within it).
        let window = |offset: u64, first: u64, reach: u64, es: u64, used: bool| {
            // Rows of no element (K = 0) read nothing: the buffer's first word stands in.
            if !used {
                return (0, 4, 0);
            }
            let lo = offset + first * es;
            let start = lo / lim.offset_align * lim.offset_align;
            let end = (lo + (reach + 1) * es).div_ceil(4) * 4;
            (start, end - start, (lo - start) / es)
        };
        let pipeline = self.pipeline(op, kernel, 2)?;
        let batches: usize = plan.iter[..nb].iter().product();
        let max_units = (lim.max_groups as usize).pow(2);
        let mut idx = [0usize; MAX_RANK];
        for bi in 0..batches {
            let off = |st: &[usize]| (0..nb).map(|d| idx[d] * st[d]).sum::<usize>() as u64;
            let (a_off, b_off) = (off(sa), off(sb));
            let out_row = (bi * m) as u64;
            let b_reach =
                ((n.saturating_sub(1)) * sb[nb + 1] + kdim.saturating_sub(1) * sb[nb + 2]) as u64;
            let wb = window(bufs[1].1, b_off, b_reach, in_es, kdim > 0);
            if wb.1 > lim.max_binding {
                return Err(too_large("all rows of BTensor", wb.1));
            }
            let mut m0 = 0usize;
            while m0 < m {
                let mut mc = (m - m0).min(max_units);
                let windows = loop {
                    let a_reach = ((mc - 1) * sa[nb] + kdim.saturating_sub(1) * sa[nb + 2]) as u64;
                    let wa = window(
                        bufs[0].1,
                        a_off + (m0 * sa[nb]) as u64,
                        a_reach,
                        in_es,
                        kdim > 0,
                    );
                    let rows = (out_row + m0 as u64) * k as u64;
                    let span = (mc * k) as u64 - 1;
                    let wd = window(distances.offset, rows, span, out_es, true);
                    let wi = window(indices.offset, rows, span, 8, true);
                    if wa.1.max(wd.1).max(wi.1) <= lim.max_binding {
                        break (wa, wd, wi);
                    }
                    if mc == 1 {
                        return Err(too_large(
                            "a row of ATensor and its outputs",
                            wa.1.max(wd.1).max(wi.1),
                        ));
                    }
                    mc = mc.div_ceil(2);
                };
                let (wa, wd, wi) = windows;
                let w = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
                let mut base = [0u32; SLOTS];
                let mut strides = [[0u32; MAX_RANK]; SLOTS];
                base[0] = w(wa.2);
                base[1] = w(wb.2);
                base[2] = w(wi.2);
                base[OUTPUT_SLOT] = w(wd.2);
                strides[0][..3].copy_from_slice(&[w(sa[nb] as u64), 0, w(sa[nb + 2] as u64)]);
                strides[1][..3].copy_from_slice(&[0, w(sb[nb + 1] as u64), w(sb[nb + 2] as u64)]);
                for slot in [2, OUTPUT_SLOT] {
                    strides[slot][..3].copy_from_slice(&[w(k as u64), 1, 0]);
                }
                let sizes = [w(mc as u64), w(n as u64), w(kdim as u64)];
                let params = params_bytes(w(mc as u64), w(k as u64), 1, &sizes, &base, &strides);
                let gx = mc.min(lim.max_groups as usize);
                let gy = mc.div_ceil(gx);
                self.dispatch_knn(
                    &pipeline,
                    &params,
                    [
                        (&bufs[0].0, wa.0, wa.1),
                        (&bufs[1].0, wb.0, wb.1),
                        (distances.buffer, wd.0, wd.1),
                        (indices.buffer, wi.0, wi.1),
                    ],
                    (gx as u32, gy as u32),
                    enc,
                );
                m0 += mc;
            }
            for d in (0..nb).rev() {
                idx[d] += 1;
                if idx[d] < plan.iter[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Ok(())
    }

    /// One knn dispatch: its uniform block and the windows of `a`, `b`, the distances and the
    /// indices.
    fn dispatch_knn(
        &self,
        pipeline: &super::Pipeline,
        params: &[u8],
        windows: [(&wgpu::Buffer, u64, u64); 4],
        groups: (u32, u32),
        enc: &mut wgpu::CommandEncoder,
    ) {
        use wgpu::util::DeviceExt;
        let params = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("tensorbits knn params"),
                contents: params,
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        for (i, (buffer, offset, size)) in windows.into_iter().enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset,
                    size: NonZeroU64::new(size),
                }),
            });
        }
        let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("tensorbits knn"),
            layout: &pipeline.layout,
            entries: &entries,
        });
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("tensorbits knn"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&pipeline.pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, 1);
    }

    /// knn of a pairwise sum `op` on device tensors: distances of `D` and row indices (`i64`),
    /// both `[..., M, k]`, as new device tensors.
    pub fn knn_new<T: Element, D: Element>(
        &self,
        op: &'static OpInfo,
        call: &Call,
        a: &GpuTensor<T>,
        b: &GpuTensor<T>,
        k: usize,
    ) -> Result<(GpuTensor<D>, GpuTensor<i64>)> {
        let (ra, rb) = (a.region(), b.region());
        let plan = validate::validate_knn(op, call, &[&ra.desc, &rb.desc], k, D::DATA_TYPE)?;
        let shape: Dims = plan.out_shape;
        let dd = TensorDesc::from_parts(D::DATA_TYPE, shape, None);
        let id = TensorDesc::from_parts(DataType::I64, shape, None);
        let dist = GpuTensor::<D>::new_empty(self, shape, dd.total_bytes())?;
        let idx = GpuTensor::<i64>::new_empty(self, shape, id.total_bytes())?;
        self.knn(
            op,
            call,
            [&ra, &rb],
            k,
            (&dist.region(), &idx.region()),
            None,
        )?;
        Ok((dist, idx))
    }
}
