//! knn on the GPU: per row of `a`, sorted lists of the rows of `b` by (distance, index), one per
//! invocation for few neighbours or per tile sorted in workgroup memory (`Layout::Knn`), their
//! first k kept, then pairs of those lists merged pass after pass (`Layout::KnnMerge`), so any `k`
//! from 1 to N gives the CPU's exact lists with bounded work per invocation.
//! [`plan_knn`](super::plan::plan_knn) lays out the dispatches.

use super::execute::{copied_offset, kernel};
use super::plan::{self, KnnShape};
use super::split::Window;
use super::{GpuExecutor, GpuRegion, GpuTensor, Source, check_region, gpu_error};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::op::{Call, OpInfo};
use crate::validate::buffer::{Overlap, classify};
use crate::validate::{self, OpTensor, desc::TensorDesc};
use crate::{DataType, Dims, MAX_RANK};
use tensorbits_core::wgsl::{Layout, MAX_LOOP_ITERATIONS};

impl GpuExecutor {
    /// knn of a pairwise sum `op` on regions of the caller's buffers: for each row of `a`
    /// (`inputs[0]`), the `k` nearest rows of `b` (`inputs[1]`), their distances into `distances`
    /// and row indices into `indices` (`i64`), both packed `[..., M, k]`. Validated before any work
    /// is recorded; recorded into `encoder`, or submitted here without one. A ratio op ranks on the
    /// host, as [`execute`](Self::execute) says: `[M, K]` inputs, outputs with `COPY_DST` usage,
    /// and no `encoder`.
    pub fn knn(
        &self,
        op: &OpInfo,
        call: &Call,
        inputs: [&GpuRegion<'_>; 2],
        k: usize,
        (distances, indices): (&GpuRegion<'_>, &GpuRegion<'_>),
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()> {
        if op.ratio().is_some() {
            let outputs = (distances, indices);
            return self.knn_ratio(op, call, inputs, k, outputs, encoder.is_some());
        }
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
            // A copy when it shares a buffer with an output, or its padding is to be zeroed.
            sources.push(if copy || plan.pad.is_some() {
                Source::Copy(**r)
            } else {
                Source::Bound(**r)
            });
        }
        let units: usize = plan.iter[..nd - 2].iter().product();
        if units == 0 || k == 0 {
            return Ok(());
        }
        // Where element 0 of each input lies in the buffer bound.
        let offsets: [u64; 2] = std::array::from_fn(|i| match &sources[i] {
            Source::Copy(r) => copied_offset(r.offset),
            _ => inputs[i].offset,
        });
        // Rows of whole 32-bit words run on the words when the op has that kernel (see
        // `words_plan`).
        let words = super::words_plan(&plan, offsets).filter(|_| {
            op.gpu_kernel(plan.in_dtype, plan.out_dtype, Layout::KnnWords)
                .is_some()
        });
        let (layout, run) = match &words {
            Some(p) => (Layout::KnnWords, p),
            None => (Layout::Knn, &plan),
        };
        let tile = kernel(op, plan.in_dtype, plan.out_dtype, layout)?;
        let merge = kernel(op, plan.in_dtype, plan.out_dtype, Layout::KnnMerge)?;
        let shapes = self.knn_shapes(run, k, offsets, distances, indices);
        let plans = shapes
            .iter()
            .map(|s| plan::plan_knn(s, &self.limits))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|t| self.too_large(op, t.slot, &t.what, t.bytes))?;
        let tile = self.pipeline(op, tile, 2)?;
        let merge = self.pipeline(op, merge, 2)?;
        let scratch_bytes = plans.iter().map(|p| p.scratch).max().unwrap_or(0);
        let scratch: Vec<wgpu::Buffer> = if scratch_bytes > 0 {
            (0..2)
                .map(|_| self.storage_buffer("tensorbits knn lists", scratch_bytes as usize, &[]))
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        // Bindings a dispatch does not use.
        let unused: Vec<wgpu::Buffer> = (0..3)
            .map(|_| self.storage_buffer("tensorbits unused", 4, &[]))
            .collect::<Result<_>>()?;
        self.scoped(encoder, |enc| {
            let mut owned: Vec<(wgpu::Buffer, u64)> = Vec::with_capacity(2);
            for s in &sources {
                owned.push(match s {
                    Source::Bound(r) => (r.buffer.clone(), r.offset),
                    Source::Copy(r) => self.copy_region(r, enc)?,
                    Source::Alias => unreachable!("knn allows no alias"),
                });
            }
            for (i, (b, o)) in owned.iter().enumerate() {
                self.zero_padding(op, &plan, i, (b, *o), enc)?;
            }
            fn pick<'a>(
                w: Option<Window>,
                b: &'a wgpu::Buffer,
                unused: &'a wgpu::Buffer,
            ) -> (&'a wgpu::Buffer, Window) {
                match w {
                    Some(w) => (b, w),
                    None => (unused, GpuExecutor::whole(unused)),
                }
            }
            let list = |i: Option<usize>, u: usize| match i {
                Some(i) => (&scratch[i], GpuExecutor::whole(&scratch[i])),
                None => (&unused[u], GpuExecutor::whole(&unused[u])),
            };
            for p in &plans {
                for d in &p.dispatches {
                    debug_assert!(d.iterations <= MAX_LOOP_ITERATIONS);
                    let dist = pick(d.dist, distances.buffer, &unused[0]);
                    let idx = pick(d.idx, indices.buffer, &unused[1]);
                    if d.layout == Layout::KnnMerge {
                        let bindings = [list(d.read, 2), list(d.write, 2), dist, idx];
                        self.dispatch(&merge, &d.params, &bindings, d.groups, enc)?;
                    } else {
                        let a = pick(d.a, &owned[0].0, &unused[2]);
                        let b = pick(d.b, &owned[1].0, &unused[2]);
                        let bindings = [a, b, dist, idx, list(d.write, 2)];
                        self.dispatch(&tile, &d.params, &bindings, d.groups, enc)?;
                    }
                }
            }
            Ok(())
        })
    }

    /// The shape of knn's work at each batch index of `plan` (`[batch..., M, N, K]`), with the
    /// byte offsets of its rows of `a` and `b` (element 0 at `offsets`) and of its outputs.
    fn knn_shapes(
        &self,
        plan: &crate::Plan,
        k: usize,
        offsets: [u64; 2],
        distances: &GpuRegion<'_>,
        indices: &GpuRegion<'_>,
    ) -> Vec<KnnShape> {
        let nd = plan.iter.len();
        let nb = nd - 3;
        let (m, n, kdim) = (plan.iter[nb], plan.iter[nb + 1], plan.iter[nb + 2]);
        let (sa, sb) = (&plan.in_strides[0], &plan.in_strides[1]);
        let in_es = plan.in_dtype.size() as u64;
        let out_es = plan.out_dtype.size() as u64;
        let batches: usize = plan.iter[..nb].iter().product();
        let mut idx = [0usize; MAX_RANK];
        let mut shapes = Vec::with_capacity(batches);
        for bi in 0..batches {
            let off = |st: &[usize]| (0..nb).map(|d| idx[d] * st[d]).sum::<usize>() as u64;
            let row = (bi * m * k) as u64;
            shapes.push(KnnShape {
                m: m as u64,
                n: n as u64,
                kdim: kdim as u64,
                k: k as u64,
                a_strides: (sa[nb] as u64, sa[nb + 2] as u64),
                b_strides: (sb[nb + 1] as u64, sb[nb + 2] as u64),
                elem: in_es,
                a_offset: offsets[0] + off(sa) * in_es,
                b_offset: offsets[1] + off(sb) * in_es,
                dist_bytes: out_es,
                dist_offset: distances.offset + row * out_es,
                idx_offset: indices.offset + row * 8,
                epilogue: plan.gpu_epilogue(),
            });
            for d in (0..nb).rev() {
                idx[d] += 1;
                if idx[d] < plan.iter[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        shapes
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
