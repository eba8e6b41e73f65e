//! The wgpu executor: runs the WGSL kernels `#[bitwise_op]` generates on any GPU wgpu supports (and on
//! Mesa's lavapipe), on its own device or on the caller's, on its own tensors or on regions of the
//! caller's buffers, optionally recording into the caller's command encoder.

mod binarize;
mod device;
mod execute;
mod knn;
mod pipeline;
pub(crate) mod plan;
mod range;
mod ratio;
mod split;
mod tensor;

pub use tensor::{GpuTensor, Target, knn_on, reduce_on, run_on};

use crate::DataType;
use crate::error::{Error, Result};
use crate::op::Plan;
use crate::validate::buffer::{Place, check_place};
use crate::validate::{Name, desc::TensorDesc};
use pipeline::Pipeline;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tensorbits_core::wgsl::Layout;

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
