//! burn's wgpu backend: its tensors' buffers bound where they lie, on the `wgpu::Device` that
//! [`wgpu_device`](crate::wgpu_device) shares with a tensorbits executor.
//!
//! burn's tensors on wgpu are fusion handles (with the `fusion` feature, burn's default);
//! resolving one runs burn's pending work on it and gives its CubeCL tensor (a handle into a
//! pooled buffer, with its shape and strides), whose buffer, offset and size CubeCL's client hands
//! out. Without fusion, the CubeCL tensor is the primitive itself. burn and tensorbits submit to one queue, so
//! tensorbits' dispatches run after burn's work on the inputs and before burn's next use of the
//! output. Outputs are made by burn (`Tensor::empty` on the device) and written in place.

use crate::{DataType, Error, check_rank, dtype, knn_shape, out_type};
#[cfg(feature = "fusion")]
use burn::backend::wgpu::CubeBackend;
use burn::backend::wgpu::{CubeTensor, WgpuDevice};
use burn::backend::{Cube, DispatchDevice, TensorMetadata};
use burn::cubecl::wgpu::{AutoCompiler, WgpuServer};
use burn::tensor::{DType, Device, Int, Tensor};
use tensorbits::{
    BitOrder, Call, GpuExecutor, GpuInput, GpuRegion, OpInfo, TensorDesc, Thresholds,
};

/// The wgpu device of a burn device on the wgpu runtime.
pub fn wgpu_of(device: &Device) -> Option<WgpuDevice> {
    match device.as_dispatch() {
        DispatchDevice::Cube(burn::cubecl::Device::Wgpu(w)) => Some(w.clone()),
        _ => None,
    }
}

/// Whether `device` is burn's ndarray (CPU) device.
pub fn is_ndarray(device: &Device) -> bool {
    matches!(device.as_dispatch(), DispatchDevice::NdArray(_))
}

fn gpu_err(what: impl std::fmt::Display) -> Error {
    Error::Gpu {
        message: format!("burn's wgpu runtime: {what}"),
    }
}

/// The CubeCL tensor of a burn tensor on the wgpu runtime, burn's pending work on it run first.
fn cube<const D: usize>(t: Tensor<D, Int>) -> Result<CubeTensor, Error> {
    let p = t
        .try_into_primitive::<Cube>()
        .map_err(|e| gpu_err(format!("not a tensor of the wgpu runtime ({e:?})")))?;
    #[cfg(feature = "fusion")]
    let p = {
        let client = p.client.clone();
        client.resolve_tensor_int::<CubeBackend>(p)
    };
    Ok(p)
}

/// The CubeCL tensor of a burn float tensor on the wgpu runtime, burn's pending work on it run
/// first.
fn cube_float<const D: usize>(t: Tensor<D>) -> Result<CubeTensor, Error> {
    let p = t
        .try_into_primitive::<Cube>()
        .map_err(|e| gpu_err(format!("not a tensor of the wgpu runtime ({e:?})")))?;
    #[cfg(feature = "fusion")]
    let p = {
        let client = p.client.clone();
        client.resolve_tensor_float::<CubeBackend>(p)
    };
    Ok(p)
}

/// A bound tensor: its buffer (and what keeps its memory in place until the work is submitted),
/// the byte offset of element 0, and its description.
struct Bound<M> {
    _keep: M,
    buffer: burn::backend::wgpu::wgpu::Buffer,
    offset: u64,
    desc: TensorDesc,
}

fn bind(
    t: &CubeTensor,
    read: &dyn Fn(DataType) -> DataType,
) -> Result<Bound<impl Sized + use<>>, Error> {
    let managed = t
        .client
        .get_resource::<WgpuServer<AutoCompiler>>(t.handle.clone())
        .map_err(|e| gpu_err(format!("{e:?}")))?;
    let r = managed.resource();
    // The region is checked against the whole (pooled) buffer: kernels that read whole words may
    // read past the tensor's last byte, never write there.
    let (buffer, offset) = (r.buffer.clone(), r.offset);
    let shape: Vec<usize> = TensorMetadata::shape(t).to_vec();
    let strides: Vec<usize> = t.meta.strides().to_vec();
    let mut desc = TensorDesc::new(read(crate::data_type(t.dtype)?), &shape)?;
    if !t.is_contiguous() {
        desc = desc.with_strides(&strides)?;
    }
    Ok(Bound {
        _keep: managed,
        buffer,
        offset,
        desc,
    })
}

fn bind_all<const D: usize>(
    inputs: &[Tensor<D, Int>],
    read: &dyn Fn(DataType) -> DataType,
) -> Result<Vec<Bound<impl Sized + use<D>>>, Error> {
    let cubes = inputs
        .iter()
        .map(|t| cube(t.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    cubes.iter().map(|c| bind(c, read)).collect()
}

fn region<M>(b: &Bound<M>) -> GpuRegion<'_> {
    GpuRegion {
        buffer: &b.buffer,
        offset: b.offset,
        desc: b.desc,
    }
}

/// A new burn tensor of `shape` and `t` on `device`, bound for writing.
fn output<const E: usize>(
    shape: &[usize],
    t: DataType,
    device: &Device,
) -> Result<(Tensor<E, Int>, Bound<impl Sized + use<E>>), Error> {
    let out = Tensor::<E, Int>::empty(shape.to_vec(), (device, dtype(t)));
    let bound = bind(&cube(out.clone())?, &|t| t)?;
    Ok((out, bound))
}

pub fn run<const D: usize, const E: usize>(
    gpu: &GpuExecutor,
    op: &OpInfo,
    call: &Call,
    inputs: &[Tensor<D, Int>],
    out: Option<DataType>,
    device: &Device,
    read: &dyn Fn(DataType) -> DataType,
) -> Result<Tensor<E, Int>, Error> {
    let bound = bind_all(inputs, read)?;
    let descs: Vec<&TensorDesc> = bound.iter().map(|b| &b.desc).collect();
    let o = out_type(op, descs[0].data_type(), out);
    let plan = tensorbits::validate_new_output(op, call, &descs, o)?;
    check_rank::<E>(op, plan.output_shape())?;
    let (result, target) = output::<E>(plan.output_shape(), o, device)?;
    let ins: Vec<GpuInput<'_>> = bound.iter().map(|b| GpuInput::Region(region(b))).collect();
    gpu.execute(op, call, &ins, &region(&target), None)?;
    Ok(result)
}

/// `binarize` of a float tensor on burn's device: `x` (made packed by burn first if it is a view)
/// into new `u8` codes burn allocates, written in place.
pub fn binarize<const D: usize>(
    gpu: &GpuExecutor,
    x: &Tensor<D>,
    thresholds: &Thresholds,
    bitorder: BitOrder,
    device: &Device,
) -> Result<Tensor<D, Int>, Error> {
    let mut c = cube_float(x.clone())?;
    if !c.is_contiguous() {
        // A view: burn's own copy packs it (the comparison's result is the same for every value,
        // -0.0 and NaN included).
        c = cube_float(x.clone().mul_scalar(1.0))?;
    }
    let xb = bind(&c, &|t| t)?;
    let mut shape = TensorMetadata::shape(&c).to_vec();
    if let Some(last) = shape.last_mut() {
        *last = last.div_ceil(8);
    }
    // burn's own kernels cannot write u8 on WGSL: the codes are allocated, and written whole.
    let codes = Tensor::<D, Int>::empty(shape, (device, DType::U8));
    let target = bind(&cube(codes.clone())?, &|t| t)?;
    gpu.binarize_into(&region(&xb), thresholds, bitorder, &region(&target), None)?;
    Ok(codes)
}

pub fn knn<const D: usize>(
    gpu: &GpuExecutor,
    op: &OpInfo,
    call: &Call,
    inputs: &[Tensor<D, Int>],
    k: usize,
    out: Option<DataType>,
    device: &Device,
) -> Result<(Tensor<D, Int>, Tensor<D, Int>), Error> {
    let bound = bind_all(inputs, &|t| t)?;
    let descs: Vec<&TensorDesc> = bound.iter().map(|b| &b.desc).collect();
    let o = out_type(op, descs[0].data_type(), out);
    let plan = tensorbits::validate_knn(op, call, &descs, k, o)?;
    let shape = knn_shape(plan.output_shape(), k);
    let (dist, dist_target) = output::<D>(&shape, o, device)?;
    let (idx, idx_target) = output::<D>(&shape, DataType::I64, device)?;
    gpu.knn(
        op,
        call,
        [&region(&bound[0]), &region(&bound[1])],
        k,
        (&region(&dist_target), &region(&idx_target)),
        None,
    )?;
    Ok((dist, idx))
}
