//! tensorbits for [burn](https://burn.dev): bit counts, Hamming distances, exact k-nearest-neighbour
//! search over binary codes, bitwise reductions and any op declared with `#[bitwise_op]`, as methods
//! of burn's `Tensor<D, Int>` ([`TensorBits`]).
//!
//! On burn's wgpu backend the ops run on burn's own device, on burn's own buffers where they lie
//! (offsets and strides honoured, no copy through the host), and write a new burn tensor in place
//! on the device: make the device with [`wgpu_device`], which shares one `wgpu::Device` and queue
//! between burn and tensorbits. On burn's CPU backend (ndarray) they run tensorbits' CPU kernels.
//! Either way the results are burn tensors on the input's device, and both give the same bits.
//!
//! ```no_run
//! use burn::tensor::{Int, Tensor, TensorData};
//! use tensorbits_burn::TensorBits;
//!
//! let device = tensorbits_burn::wgpu_device()?; // or burn::tensor::Device::ndarray()
//! let codes = Tensor::<2, Int>::from_data(TensorData::new(vec![0b0000i32, 0b0111, 0b0001, 0b1111], [4, 1]), &device);
//! let query = Tensor::<2, Int>::from_data(TensorData::new(vec![0b0011i32], [1, 1]), &device);
//! let (distances, indices) = query.knn(&codes, 3)?; // [[1, 1, 2]] (u32), [[1, 2, 0]] (i64)
//! # Ok::<(), tensorbits::Error>(())
//! ```

use burn::backend::wgpu::{RuntimeOptions, WgpuDevice, WgpuSetup, init_device, wgpu};
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use std::sync::{Arc, Mutex};
use tensorbits::{
    BitOrder, Call, DataType, Error, GpuExecutor, Input, Op, OpInfo, TensorDesc, Thresholds, ops,
};

mod gpu;

pub use tensorbits;

/// The wgpu devices [`wgpu_device`] made, each with the executor that shares its device and queue.
static SHARED: Mutex<Vec<(WgpuDevice, Arc<GpuExecutor>)>> = Mutex::new(Vec::new());

/// A burn wgpu device on the default adapter whose `wgpu::Device` and queue tensorbits shares: the
/// device for burn tensors that [`TensorBits`] runs on in place. Each call makes a new device.
pub fn wgpu_device() -> Result<Device, Error> {
    let instance = wgpu::Instance::new(GpuExecutor::instance_descriptor());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .map_err(|e| Error::NoGpu {
                reason: format!("no wgpu adapter for burn's device: {e}"),
            })?;
    let (device, queue) = pollster::block_on(
        adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("tensorbits-burn"),
            required_features: adapter
                .features()
                .difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
            required_limits: adapter.limits(),
            ..Default::default()
        }),
    )
    .map_err(|e| Error::NoGpu {
        reason: format!("the wgpu device for burn could not be made: {e}"),
    })?;
    let executor = Arc::new(GpuExecutor::from_device(device.clone(), queue.clone()));
    let setup = WgpuSetup {
        backend: adapter.get_info().backend,
        instance,
        adapter,
        device,
        queue,
    };
    let wgpu_device = init_device(setup, RuntimeOptions::default());
    SHARED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((wgpu_device.clone(), executor));
    Ok(wgpu_device.into())
}

/// The executor sharing `device`'s wgpu device, if [`wgpu_device`] made it.
fn shared(device: &WgpuDevice) -> Option<Arc<GpuExecutor>> {
    SHARED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(d, _)| d == device)
        .map(|(_, e)| e.clone())
}

/// burn's dtype as tensorbits' data type.
fn data_type(dtype: DType) -> Result<DataType, Error> {
    Ok(match dtype {
        DType::U8 => DataType::U8,
        DType::U16 => DataType::U16,
        DType::U32 => DataType::U32,
        DType::U64 => DataType::U64,
        DType::I8 => DataType::I8,
        DType::I16 => DataType::I16,
        DType::I32 => DataType::I32,
        DType::I64 => DataType::I64,
        DType::F16 => DataType::F16,
        DType::F32 => DataType::F32,
        DType::F64 => DataType::F64,
        other => {
            return Err(Error::BadArgument {
                op: "tensorbits-burn",
                reason: format!("a tensor of dtype {other:?} has no tensorbits data type"),
            });
        }
    })
}

/// The unsigned type of the same width: codes whose ops count bits read signed integers as their
/// bits (burn's wgpu Int tensors are `i32` by default).
fn unsigned(t: DataType) -> DataType {
    match t {
        DataType::I8 => DataType::U8,
        DataType::I16 => DataType::U16,
        DataType::I32 => DataType::U32,
        DataType::I64 => DataType::U64,
        other => other,
    }
}

/// tensorbits' data type as burn's dtype.
fn dtype(t: DataType) -> DType {
    match t {
        DataType::U8 => DType::U8,
        DataType::U16 => DType::U16,
        DataType::U32 => DType::U32,
        DataType::U64 => DType::U64,
        DataType::I8 => DType::I8,
        DataType::I16 => DType::I16,
        DataType::I32 => DType::I32,
        DataType::I64 => DType::I64,
        DataType::F16 => DType::F16,
        DataType::F32 => DType::F32,
        DataType::F64 => DType::F64,
        DataType::Bool => DType::U8,
    }
}

/// Where a call runs: the executor of the inputs' shared wgpu device, or the CPU (ndarray).
enum Place {
    Gpu(Arc<GpuExecutor>),
    Cpu,
}

fn place<const D: usize>(op: &OpInfo, inputs: &[Tensor<D, Int>]) -> Result<(Place, Device), Error> {
    let device = inputs[0].device();
    if inputs.iter().any(|t| t.device() != device) {
        return Err(Error::BadArgument {
            op: op.name(),
            reason: "the inputs are on different devices; move them to one (Tensor::to_device)"
                .to_owned(),
        });
    }
    Ok((place_of(op.name(), &device)?, device))
}

/// Where a call of `op` on `device` runs: the executor sharing a wgpu device `wgpu_device` made,
/// or the CPU for ndarray; any other device is an error that says which ones work.
fn place_of(op: &'static str, device: &Device) -> Result<Place, Error> {
    match gpu::wgpu_of(device) {
        Some(w) => shared(&w)
            .map(Place::Gpu)
            .ok_or_else(|| Error::GpuUnsupported {
                what: format!(
                    "{op}: this wgpu device was not made by tensorbits_burn::wgpu_device(), so \
                 tensorbits cannot reach its buffers; make burn's device with it"
                ),
            }),
        None if gpu::is_ndarray(device) => Ok(Place::Cpu),
        None => Err(Error::BadArgument {
            op,
            reason: format!(
                "runs on burn's wgpu (tensorbits_burn::wgpu_device()) and ndarray devices, not on {device:?}"
            ),
        }),
    }
}

/// The inputs' data on the host (ndarray's tensors) and their descriptions, signed types read as
/// `read` says.
fn host<const D: usize>(
    inputs: &[Tensor<D, Int>],
    read: &dyn Fn(DataType) -> DataType,
) -> Result<(Vec<TensorData>, Vec<TensorDesc>), Error> {
    let data: Vec<TensorData> = inputs.iter().map(|t| t.clone().into_data()).collect();
    let descs = data
        .iter()
        .map(|d| TensorDesc::new(read(data_type(d.dtype())?), d.shape().as_slice()))
        .collect::<Result<Vec<_>, Error>>()?;
    Ok((data, descs))
}

/// The output type a call writes: `chosen`, or the op's first output type, or the inputs' type.
fn out_type(op: &OpInfo, input: DataType, chosen: Option<DataType>) -> DataType {
    chosen.unwrap_or_else(|| op.output_types().map_or(input, |o| o[0]))
}

/// Runs `op` (any standard or declared op) on burn tensors of one device, into a new tensor of
/// `out` (default: the op's) on that device.
pub fn run<const D: usize, const E: usize>(
    op: &OpInfo,
    call: &Call,
    inputs: &[Tensor<D, Int>],
    out: Option<DataType>,
) -> Result<Tensor<E, Int>, Error> {
    run_as(op, call, inputs, out, false)
}

/// [`run`], reading signed inputs as the unsigned type of their width when `as_bits`.
fn run_as<const D: usize, const E: usize>(
    op: &OpInfo,
    call: &Call,
    inputs: &[Tensor<D, Int>],
    out: Option<DataType>,
    as_bits: bool,
) -> Result<Tensor<E, Int>, Error> {
    let read = |t: DataType| if as_bits { unsigned(t) } else { t };
    if inputs.len() != op.arity() {
        return Err(Error::BadArgument {
            op: op.name(),
            reason: format!("takes {} inputs, got {}", op.arity(), inputs.len()),
        });
    }
    let (place, device) = place(op, inputs)?;
    match place {
        Place::Gpu(gpu) => gpu::run(&gpu, op, call, inputs, out, &device, &read),
        Place::Cpu => {
            let (data, descs) = host(inputs, &read)?;
            let refs: Vec<&TensorDesc> = descs.iter().collect();
            let o = out_type(op, descs[0].data_type(), out);
            let plan = tensorbits::validate_new_output(op, call, &refs, o)?;
            let out_desc = TensorDesc::new(o, plan.output_shape())?;
            check_rank::<E>(op, plan.output_shape())?;
            let mut bytes = out_desc.zeroed_buffer("OutputTensor")?;
            let ins: Vec<Input<'_>> = descs
                .iter()
                .zip(&data)
                .map(|(d, t)| Input::Bytes(d, t.as_bytes()))
                .collect();
            tensorbits::execute(op, call, &ins, &out_desc, &mut bytes)?;
            let shape = plan.output_shape().to_vec();
            Ok(Tensor::from_data(
                TensorData::from_bytes_vec(bytes, shape, dtype(o)),
                (&device, dtype(o)),
            ))
        }
    }
}

fn check_rank<const E: usize>(op: &OpInfo, shape: &[usize]) -> Result<(), Error> {
    if shape.len() == E {
        Ok(())
    } else {
        Err(Error::BadArgument {
            op: op.name(),
            reason: format!(
                "the result has {} dimensions ({shape:?}), not the {E} of the burn tensor asked for",
                shape.len()
            ),
        })
    }
}

/// For each row of `a` (`[..., M, K]`), the `k` rows of `b` (`[..., N, K]`) nearest under the
/// pairwise sum `op`: values (of `out`, default the op's) and row indices (`i64`), `[..., M, k]`.
pub fn knn<const D: usize>(
    op: &OpInfo,
    call: &Call,
    a: &Tensor<D, Int>,
    b: &Tensor<D, Int>,
    k: usize,
    out: Option<DataType>,
) -> Result<(Tensor<D, Int>, Tensor<D, Int>), Error> {
    let inputs = [a.clone(), b.clone()];
    let (place, device) = place(op, &inputs)?;
    match place {
        Place::Gpu(gpu) => gpu::knn(&gpu, op, call, &inputs, k, out, &device),
        Place::Cpu => {
            let (data, descs) = host(&inputs, &|t| t)?;
            let refs: Vec<&TensorDesc> = descs.iter().collect();
            let o = out_type(op, descs[0].data_type(), out);
            let plan = tensorbits::validate_knn(op, call, &refs, k, o)?;
            let shape = knn_shape(plan.output_shape(), k);
            let dist_desc = TensorDesc::new(o, &shape)?;
            let idx_desc = TensorDesc::new(DataType::I64, &shape)?;
            let mut dist = dist_desc.zeroed_buffer("distances")?;
            let mut idx = idx_desc.zeroed_buffer("indices")?;
            let ins: Vec<Input<'_>> = descs
                .iter()
                .zip(&data)
                .map(|(d, t)| Input::Bytes(d, t.as_bytes()))
                .collect();
            tensorbits::knn(
                op,
                call,
                &ins,
                k,
                (&dist_desc, &mut dist),
                (&idx_desc, &mut idx),
            )?;
            Ok((
                Tensor::from_data(
                    TensorData::from_bytes_vec(dist, shape.clone(), dtype(o)),
                    (&device, dtype(o)),
                ),
                Tensor::from_data(
                    TensorData::from_bytes_vec(idx, shape, DType::I64),
                    (&device, DType::I64),
                ),
            ))
        }
    }
}

/// knn's output shape: the pairwise shape `[..., M, N]` with `k` in place of `N`.
fn knn_shape(pairwise: &[usize], k: usize) -> Vec<usize> {
    let mut shape = pairwise.to_vec();
    if let Some(last) = shape.last_mut() {
        *last = k;
    }
    shape
}

/// tensorbits' ops as methods of burn's integer tensors. The element-wise ops are named `bits_*`
/// beside burn's own `bitwise_*` (the same results where burn has them, and shifts exact for every
/// width and count); they broadcast as burn does (numpy's rules). Reductions keep the reduced
/// dimension with size 1, as burn's `sum_dim` does.
/// Every method runs on the tensor's device (see the [crate] docs) and returns a new tensor there,
/// or a [`tensorbits::Error`] for what the call cannot do (types, shapes, devices), before any
/// work.
pub trait TensorBits<const D: usize>: Sized {
    /// The set bits of each element (a `u32` tensor of the same shape).
    fn bitwise_count(&self) -> Result<Tensor<D, Int>, Error>;
    /// `self & other`, in the inputs' type.
    fn bits_and(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// `self | other`.
    fn bits_or(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// `self ^ other`.
    fn bits_xor(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// `!self`.
    fn bits_not(&self) -> Result<Tensor<D, Int>, Error>;
    /// `self << other`: counts past the width give 0 (DirectML's rule), for every integer type.
    fn bits_shl(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// `self >> other`: arithmetic for signed types; counts past the width give 0 or -1.
    fn bits_shr(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// The set bits summed along `dim` (kept with size 1), `u32`.
    fn bitwise_count_sum(&self, dim: usize) -> Result<Tensor<D, Int>, Error>;
    /// AND of the elements along `dim` (kept with size 1).
    fn bitwise_and_reduce(&self, dim: usize) -> Result<Tensor<D, Int>, Error>;
    /// OR of the elements along `dim` (kept with size 1).
    fn bitwise_or_reduce(&self, dim: usize) -> Result<Tensor<D, Int>, Error>;
    /// XOR of the elements along `dim` (kept with size 1).
    fn bitwise_xor_reduce(&self, dim: usize) -> Result<Tensor<D, Int>, Error>;
    /// Bits that differ between `self` and `other`, summed along `dim` (kept with size 1), `u32`.
    fn hamming_distance(&self, other: &Self, dim: usize) -> Result<Tensor<D, Int>, Error>;
    /// All-pairs Hamming distances between the rows of `self` (`[..., M, K]`) and of `other`
    /// (`[..., N, K]`): `[..., M, N]`, `u32`.
    fn hamming_cdist(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// All-pairs dot products of ±1 vectors stored as bits: `bits - 2 * hamming`, `i32`.
    fn binary_dot(&self, other: &Self) -> Result<Tensor<D, Int>, Error>;
    /// The `k` rows of `other` nearest each row of `self` in Hamming distance: distances (`u32`)
    /// and row indices (`i64`), `[..., M, k]`, ascending, ties by the lower index.
    fn knn(&self, other: &Self, k: usize) -> Result<(Tensor<D, Int>, Tensor<D, Int>), Error>;
    /// Any op declared with `#[bitwise_op]` (or a standard one), with `self` as its first input
    /// and `rest` as the others, at the op's defaults; [`run`] takes a [`Call`] and an output type.
    fn apply<O: Op>(&self, rest: &[&Self]) -> Result<Tensor<D, Int>, Error>;
}

impl<const D: usize> TensorBits<D> for Tensor<D, Int> {
    fn bitwise_count(&self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitCount::INFO,
            &Call::default(),
            std::slice::from_ref(self),
            Some(DataType::U32),
        )
    }
    fn bits_and(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitAnd::INFO,
            &numpy(),
            &[self.clone(), other.clone()],
            None,
        )
    }
    fn bits_or(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitOr::INFO,
            &numpy(),
            &[self.clone(), other.clone()],
            None,
        )
    }
    fn bits_xor(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitXor::INFO,
            &numpy(),
            &[self.clone(), other.clone()],
            None,
        )
    }
    fn bits_not(&self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitNot::INFO,
            &Call::default(),
            std::slice::from_ref(self),
            None,
        )
    }
    fn bits_shl(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitShiftLeft::INFO,
            &numpy(),
            &[self.clone(), other.clone()],
            None,
        )
    }
    fn bits_shr(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::BitShiftRight::INFO,
            &numpy(),
            &[self.clone(), other.clone()],
            None,
        )
    }
    fn bitwise_count_sum(&self, dim: usize) -> Result<Tensor<D, Int>, Error> {
        reduce(
            ops::BitCountSum::INFO,
            std::slice::from_ref(self),
            dim,
            Some(DataType::U32),
        )
    }
    fn bitwise_and_reduce(&self, dim: usize) -> Result<Tensor<D, Int>, Error> {
        reduce(
            ops::BitAndReduce::INFO,
            std::slice::from_ref(self),
            dim,
            None,
        )
    }
    fn bitwise_or_reduce(&self, dim: usize) -> Result<Tensor<D, Int>, Error> {
        reduce(
            ops::BitOrReduce::INFO,
            std::slice::from_ref(self),
            dim,
            None,
        )
    }
    fn bitwise_xor_reduce(&self, dim: usize) -> Result<Tensor<D, Int>, Error> {
        reduce(
            ops::BitXorReduce::INFO,
            std::slice::from_ref(self),
            dim,
            None,
        )
    }
    fn hamming_distance(&self, other: &Self, dim: usize) -> Result<Tensor<D, Int>, Error> {
        reduce(
            ops::HammingDistance::INFO,
            &[self.clone(), other.clone()],
            dim,
            Some(DataType::U32),
        )
    }
    fn hamming_cdist(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run(
            ops::HammingCdist::INFO,
            &Call::default(),
            &[self.clone(), other.clone()],
            Some(DataType::U32),
        )
    }
    fn binary_dot(&self, other: &Self) -> Result<Tensor<D, Int>, Error> {
        run_as(
            ops::BinaryDot::INFO,
            &Call::default(),
            &[self.clone(), other.clone()],
            Some(DataType::I32),
            true,
        )
    }
    fn knn(&self, other: &Self, k: usize) -> Result<(Tensor<D, Int>, Tensor<D, Int>), Error> {
        knn(
            ops::HammingCdist::INFO,
            &Call::default(),
            self,
            other,
            k,
            Some(DataType::U32),
        )
    }
    fn apply<O: Op>(&self, rest: &[&Self]) -> Result<Tensor<D, Int>, Error> {
        let mut inputs = vec![self.clone()];
        inputs.extend(rest.iter().map(|t| (*t).clone()));
        run(O::INFO, &Call::default(), &inputs, None)
    }
}

/// tensorbits' `binarize` as a method of burn's float tensors: binary codes of embeddings or
/// activations, for [`TensorBits::knn`] and the pairwise ops.
pub trait FloatBits<const D: usize>: Sized {
    /// `np.packbits(x > threshold, axis=-1, bitorder=...)`: a `u8` tensor of `x`'s shape with the
    /// last axis `ceil(D / 8)`, on `x`'s device (in place on burn's wgpu buffers). The threshold
    /// is compared exactly at the tensor's float type; a NaN is never above it.
    fn binarize(&self, threshold: f64, bitorder: BitOrder) -> Result<Tensor<D, Int>, Error>;
}

impl<const D: usize> FloatBits<D> for Tensor<D> {
    fn binarize(&self, threshold: f64, bitorder: BitOrder) -> Result<Tensor<D, Int>, Error> {
        let op = "BINARIZE";
        let t = match self.dtype() {
            DType::F16 => DataType::F16,
            DType::F32 => DataType::F32,
            DType::F64 => DataType::F64,
            other => {
                return Err(Error::BadArgument {
                    op,
                    reason: format!("takes f16, f32 or f64 tensors, not {other:?}"),
                });
            }
        };
        if D == 0 {
            return Err(Error::BadArgument {
                op,
                reason: "packs the last axis; got a 0-d tensor".to_owned(),
            });
        }
        let thresholds = Thresholds::from_f64(t, &[threshold]);
        let device = self.device();
        if let Place::Gpu(gpu) = place_of(op, &device)? {
            return gpu::binarize(&gpu, self, &thresholds, bitorder, &device);
        }
        let data = self.clone().into_data();
        let desc = TensorDesc::new(t, data.shape().as_slice())?;
        let mut shape = data.shape().to_vec();
        if let Some(last) = shape.last_mut() {
            *last = last.div_ceil(8);
        }
        let mut codes = vec![0u8; shape.iter().product()];
        tensorbits::binarize_bytes(&desc, data.as_bytes(), &thresholds, bitorder, &mut codes)?;
        Ok(Tensor::from_data(
            TensorData::from_bytes_vec(codes, shape, DType::U8),
            (&device, DType::U8),
        ))
    }
}

/// numpy's broadcasting, as burn's element-wise ops broadcast.
fn numpy() -> Call {
    Call {
        broadcast: Some(tensorbits::Broadcast::Numpy),
        ..Call::default()
    }
}

/// A reduction along `dim`, kept with size 1.
fn reduce<const D: usize>(
    op: &OpInfo,
    inputs: &[Tensor<D, Int>],
    dim: usize,
    out: Option<DataType>,
) -> Result<Tensor<D, Int>, Error> {
    let mut call = Call::default().axes([dim as i64]).keepdims(true);
    if inputs.len() == 2 {
        call.broadcast = Some(tensorbits::Broadcast::Numpy);
    }
    run(op, &call, inputs, out)
}
