//! `tensorbits._native`: the Python package's extension module. It reads numpy arrays of any
//! strides where they lie, runs the library's own validator and kernels on them with the GIL
//! released, and maps the library's errors to `TypeError`, `ValueError` and `RuntimeError`. The
//! package's Python layer (`tensorbits/__init__.py`) gives the functions numpy's names, and brings
//! `__dlpack__` objects and Python scalars in as numpy arrays.
#![allow(unsafe_code)]

mod array;
mod binary;
mod front;
mod plain;

use std::sync::Mutex;

use array::{Arr, Buffers};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tensorbits::{
    Axes, Broadcast, BroadcastMode, Call, DataType, Error, FeatureLevel, GpuExecutor, GpuRegion,
    Input, OpInfo, Orientation, SignedLayout, TensorDesc,
};

/// A list of the library's type names (`i64, u8, bool`) as numpy's dtype names in numpy's order
/// (`bool, uint8, int64`): bool, the signed, the unsigned and the floats, each narrowest first.
fn numpy_names(list: &str) -> String {
    let mut types: Vec<DataType> = list.split(", ").filter_map(DataType::from_name).collect();
    types.sort_by_key(|t| ("biuf".find(t.numpy_kind()), t.size()));
    let names: Vec<&str> = types.iter().map(|t| t.numpy_name()).collect();
    names.join(", ")
}

/// The library's message, with numpy's dtype names where it names data types.
fn py_message(e: &Error) -> String {
    match e {
        Error::UnsupportedDataType {
            op,
            tensor,
            dtype,
            level,
            supported,
        } => format!(
            "{op} does not support dtype {} ({tensor}) at {level}; dtypes supported at {level}: {}",
            dtype.numpy_name(),
            numpy_names(supported)
        ),
        Error::DataTypeMismatch {
            op,
            tensor,
            dtype,
            expected,
            first,
        } => format!(
            "{op}: {tensor} has dtype {}, but the inputs of a call share one dtype, {first}'s {}; \
             convert one of them (x.astype(...))",
            dtype.numpy_name(),
            expected.numpy_name()
        ),
        Error::OutputDataType {
            op,
            dtype,
            expected,
        } => {
            let (one_of, list) = match expected.strip_prefix("one of ") {
                Some(list) => ("one of ", list),
                None => ("", expected.as_str()),
            };
            format!(
                "{op}: the result's dtype {} is not one the op writes; expected {one_of}{}",
                dtype.numpy_name(),
                numpy_names(list)
            )
        }
        other => other.to_string().replace('\n', " "),
    }
}

/// The library's error as the Python exception that fits it, with the library's message (numpy's
/// dtype names for data types).
pub(crate) fn py_err(e: Error) -> PyErr {
    let msg = py_message(&e);
    match e {
        Error::UnsupportedDataType { .. }
        | Error::DataTypeMismatch { .. }
        | Error::OutputDataType { .. } => PyTypeError::new_err(msg),
        Error::NoGpu { .. }
        | Error::Gpu { .. }
        | Error::GpuUnsupported { .. }
        | Error::GpuBuffer { .. } => PyRuntimeError::new_err(msg),
        // As numpy's failed allocations: memory that cannot be had, on the host or the device.
        Error::AllocationFailed { .. } => PyMemoryError::new_err(msg),
        // numpy's own exception for an axis out of range (a subclass of ValueError and IndexError).
        // Without it (numpy before 1.25), ValueError.
        Error::AxisOutOfRange { .. } => Python::attach(|py| {
            py.import("numpy.exceptions")
                .and_then(|m| m.getattr("AxisError"))
                .and_then(|c| c.call1((msg.clone(),)))
                .map_or_else(|_| PyValueError::new_err(msg), PyErr::from_value)
        }),
        _ => PyValueError::new_err(msg),
    }
}

fn lookup(name: &str) -> PyResult<&'static OpInfo> {
    tensorbits::ops::lookup(name).map_err(py_err)
}

/// Raises `MemoryError` where a new array of `nbytes` for `name` could not be held by this
/// process (its memory and swap, or its control group's limit, less what it holds), before numpy
/// is asked for it: numpy's allocator overcommits, and the out-of-memory killer would end the
/// process instead.
#[pyfunction]
fn check_allocation(nbytes: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    let bytes = nbytes.extract::<usize>().unwrap_or(usize::MAX);
    tensorbits::check_allocation(bytes, name).map_err(py_err)
}

/// The index in `tensorbits.ops()` of the op any of whose names is `name`, resolved once by the
/// Python layer so that calls skip the lookup by name.
#[pyfunction]
pub(crate) fn op_index(name: &str) -> PyResult<usize> {
    let op = lookup(name)?;
    tensorbits::ops::ALL
        .iter()
        .position(|o| o.name() == op.name())
        .ok_or_else(|| PyValueError::new_err(format!("{} is not a standard op", op.name())))
}

/// The op at `index` in `tensorbits.ops()`, or the op named so.
fn op_at(op: &Bound<'_, PyAny>) -> PyResult<&'static OpInfo> {
    if let Ok(i) = op.extract::<usize>() {
        return tensorbits::ops::ALL
            .get(i)
            .copied()
            .ok_or_else(|| PyValueError::new_err(format!("no op at index {i}")));
    }
    lookup(&op.extract::<String>()?)
}

/// Valid bits (`bits=`, `bitorder=`) on a call.
#[inline(always)]
pub(crate) fn with_bits(mut call: Call, bits: Option<usize>, bitorder: &str) -> PyResult<Call> {
    call.bits = bits;
    // The default, as most calls give it, without parsing.
    if bitorder == "big" {
        call.bitorder = tensorbits::BitOrder::Big;
        return Ok(call);
    }
    call.bitorder = tensorbits::BitOrder::parse(bitorder).ok_or_else(|| {
        PyValueError::new_err(format!(
            "bitorder must be \"big\" or \"little\" (as numpy's packbits), got {bitorder:?}"
        ))
    })?;
    Ok(call)
}

/// The call's options from the keywords.
fn call_of(
    level: Option<&str>,
    broadcast: Option<&str>,
    bcast_axis: Option<i64>,
    axes: Option<Vec<i64>>,
    keepdims: bool,
) -> PyResult<Call> {
    let mut call = Call::default();
    if let Some(l) = level {
        call.level = FeatureLevel::parse(l).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown feature level {l:?}; expected one of {}",
                FeatureLevel::all_names(true, ", ")
            ))
        })?;
    }
    call.broadcast = match broadcast {
        None if bcast_axis.is_some() => Some(Broadcast::Pdpd {
            axis: bcast_axis.unwrap_or(-1),
        }),
        None => None,
        Some(b) => Some(match BroadcastMode::parse(b) {
            Some(BroadcastMode::None) => Broadcast::None,
            Some(BroadcastMode::Numpy) => Broadcast::Numpy,
            Some(BroadcastMode::Pdpd) => Broadcast::Pdpd {
                axis: bcast_axis.unwrap_or(-1),
            },
            None => {
                return Err(PyValueError::new_err(format!(
                    "unknown broadcast mode {b:?}; expected \"none\", \"numpy\" or \"pdpd\""
                )));
            }
        }),
    };
    if let (Some(b), Some(_)) = (call.broadcast, bcast_axis)
        && !matches!(b, Broadcast::Pdpd { .. })
    {
        return Err(PyValueError::new_err(
            "axis= is the start axis of a \"pdpd\" broadcast; it does not apply to broadcast=\"none\" or \"numpy\"",
        ));
    }
    if let Some(a) = axes {
        call.axes = Some(Axes::new(&a).map_err(py_err)?);
    }
    call.keepdims = keepdims;
    Ok(call)
}

/// Where a call runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Device {
    Cpu,
    Gpu,
}

fn device_of(device: &str) -> PyResult<Device> {
    match device {
        // The data of every array this package takes lies in host memory, where the CPU kernels
        // run at memory bandwidth; a GPU would first need it copied over.
        "cpu" | "auto" => Ok(Device::Cpu),
        "gpu" => Ok(Device::Gpu),
        d => Err(PyValueError::new_err(format!(
            "unknown device {d:?}; expected \"cpu\", \"gpu\" or \"auto\""
        ))),
    }
}

/// The process's one GPU executor, made on first use, and again in a forked child: a device does
/// not survive `fork` (its driver's threads are not copied), so a child abandons its parent's.
fn gpu() -> PyResult<&'static GpuExecutor> {
    type Made = (u64, &'static Result<GpuExecutor, String>);
    static GPU: Mutex<Option<Made>> = Mutex::new(None);
    let generation = tensorbits::fork_generation();
    let made = {
        let mut slot = GPU.lock().unwrap_or_else(|e| e.into_inner());
        match *slot {
            Some((g, made)) if g == generation => made,
            _ => {
                // Leaked: one executor per process (and per fork), never dropped in a child where
                // its device's threads are gone.
                let made: &'static _ = Box::leak(Box::new(
                    GpuExecutor::new_blocking().map_err(|e| e.to_string()),
                ));
                *slot = Some((generation, made));
                made
            }
        }
    };
    made.as_ref()
        .map_err(|e| PyRuntimeError::new_err(e.replace('\n', " ")))
}

/// Sets the number of threads of the CPU executor (0: the default).
#[pyfunction]
fn set_num_threads(threads: usize) {
    tensorbits::set_num_threads(threads);
}

/// The number of threads of the CPU executor.
#[pyfunction]
fn get_num_threads() -> usize {
    tensorbits::num_threads()
}

/// The instruction set the CPU kernels run at (`TENSORBITS_CPU` caps it).
#[pyfunction]
fn cpu_instruction_set() -> &'static str {
    tensorbits::cpu::instruction_set()
}

/// The thread count for threadpoolctl, which finds this library by this symbol and calls it
/// through ctypes (`tensorbits/_threadpoolctl.py`).
#[allow(unsafe_code, reason = "an exported C symbol")]
#[unsafe(no_mangle)]
pub extern "C" fn tensorbits_get_num_threads() -> std::ffi::c_int {
    std::ffi::c_int::try_from(tensorbits::num_threads()).unwrap_or(std::ffi::c_int::MAX)
}

/// Sets the thread count for threadpoolctl (a count below 1 restores the default).
#[allow(unsafe_code, reason = "an exported C symbol")]
#[unsafe(no_mangle)]
pub extern "C" fn tensorbits_set_num_threads(threads: std::ffi::c_int) {
    tensorbits::set_num_threads(usize::try_from(threads).unwrap_or(0));
}

/// The data type of a numpy dtype name (`uint8`, `float16`, `bool`, ...).
pub(crate) fn dtype_named(name: &str) -> PyResult<DataType> {
    array::dtype_from_numpy_name(name).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "tensorbits has no data type {name:?}; it has {}",
            DataType::all_numpy_names(", ")
        ))
    })
}

/// Runs the op named `op` on `inputs` (numpy arrays), into `out` or a new array. Returns the
/// result and the axes along which a new result must be presented reversed (reversed inputs are
/// read in place by reversing the whole call).
#[pyfunction]
#[pyo3(signature = (op, inputs, out, out_dtype, device, level, broadcast, bcast_axis, axes, keepdims, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    op: Bound<'py, PyAny>,
    inputs: Vec<Bound<'py, PyAny>>,
    out: Option<Bound<'py, PyAny>>,
    out_dtype: Option<&str>,
    device: &str,
    level: Option<&str>,
    broadcast: Option<&str>,
    bcast_axis: Option<i64>,
    axes: Option<Vec<i64>>,
    keepdims: bool,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let op = op_at(&op)?;
    let device = device_of(device)?;
    let call = with_bits(
        call_of(level, broadcast, bcast_axis, axes, keepdims)?,
        bits,
        bitorder,
    )?;
    if inputs.len() != op.arity() {
        return Err(PyTypeError::new_err(format!(
            "{} takes {} input(s), got {}",
            op.name(),
            op.arity(),
            inputs.len()
        )));
    }
    let ins: Vec<Arr> = inputs
        .iter()
        .enumerate()
        .map(|(i, a)| Arr::read(a, op.inputs().get(i).copied().unwrap_or("input"), false))
        .collect::<PyResult<_>>()?;
    let out_arr = match &out {
        Some(o) => {
            let a = Arr::read(o, "out", true)?;
            a.check_output(op.name())?;
            Some(a)
        }
        None => None,
    };
    let in_dtype = ins.first().map_or(DataType::U8, |a| a.dtype);
    let out_dtype = match (&out_arr, out_dtype) {
        (Some(o), _) => o.dtype,
        (None, Some(n)) => dtype_named(n)?,
        (None, None) => op.default_output(in_dtype),
    };
    // A new output's shape (and rank, for the orientation): validate the shapes first (with
    // packed strides standing in; only the sizes matter here).
    let out_shape = match out_arr {
        Some(_) => vec![],
        None => {
            let probe: Vec<TensorDesc> = ins
                .iter()
                .map(|a| a.shape_desc())
                .collect::<PyResult<_>>()?;
            let probe_refs: Vec<&TensorDesc> = probe.iter().collect();
            let plan = tensorbits::validate_new_output(op, &call, &probe_refs, out_dtype)
                .map_err(py_err)?;
            plan.output_shape().to_vec()
        }
    };
    // Nothing walks backwards (the common case): nothing to reverse.
    let orientation = if ins.iter().chain(&out_arr).any(Arr::reversed) {
        let layouts: Vec<SignedLayout<'_>> = ins.iter().map(Arr::layout).collect();
        tensorbits::orient(
            op,
            &call,
            &layouts,
            out_arr.as_ref().map(Arr::layout),
            out_shape.len(),
            false,
        )
    } else {
        Orientation::default()
    };
    let (result, flips) = match out_arr {
        Some(o) => {
            let o = o.flipped(&orientation.output);
            let bufs = Buffers::prepare(&ins, &orientation, Some(&o), op, device == Device::Cpu)?;
            execute(py, op, &call, &bufs, &o, device)?;
            (
                out.clone().unwrap_or_else(|| py.None().into_bound(py)),
                vec![],
            )
        }
        None => {
            let new = array::empty(py, &out_shape, out_dtype)?;
            let o = Arr::read(&new, "out", true)?;
            let bufs = Buffers::prepare(&ins, &orientation, None, op, false)?;
            execute(py, op, &call, &bufs, &o, device)?;
            let flips: Vec<usize> = (0..orientation.output.len())
                .filter(|&j| orientation.output[j])
                .collect();
            (new, flips)
        }
    };
    PyTuple::new(py, [result.into_any(), flips.into_pyobject(py)?.into_any()])
}

/// Runs a validated-to-be call on prepared buffers, on the CPU or the GPU, without the GIL.
fn execute(
    py: Python<'_>,
    op: &'static OpInfo,
    call: &Call,
    bufs: &Buffers,
    out: &Arr,
    device: Device,
) -> PyResult<()> {
    let out_view = out.target()?;
    match device {
        Device::Cpu => {
            let (descs, slices, in_place) = bufs.inputs();
            py.detach(|| {
                let mut target = out_view.lock();
                let inputs: Vec<Input<'_>> = descs
                    .iter()
                    .zip(&slices)
                    .enumerate()
                    .map(|(i, (d, s))| {
                        if in_place == Some(i) {
                            Input::Output
                        } else {
                            Input::Bytes(d, s)
                        }
                    })
                    .collect();
                let desc = target.desc;
                let r = tensorbits::execute(op, call, &inputs, &desc, target.bytes());
                if r.is_ok() {
                    target.finish();
                }
                r
            })
            .map_err(py_err)
        }
        Device::Gpu => {
            let g = gpu()?;
            let (descs, slices, _) = bufs.inputs();
            py.detach(|| -> Result<(), Error> {
                let mut target = out_view.lock();
                // The output as given is validated as the CPU does (a self-overlapping view is
                // refused), then computed packed on the device and scattered to it.
                let given: Vec<&TensorDesc> = descs.iter().collect();
                tensorbits::validate(op, call, &given, &target.desc)?;
                let packed = TensorDesc::new(target.desc.data_type(), target.desc.sizes())?;
                // A buffer holds the input's description's total size, which a broadcast (stride
                // 0) input's bytes may not fill.
                let bufs: Vec<_> = slices
                    .iter()
                    .zip(&descs)
                    .map(|(s, d)| g.storage_buffer("input", s.len().max(d.total_bytes()), s))
                    .collect::<Result<_, _>>()?;
                let regions: Vec<tensorbits::GpuInput<'_>> = descs
                    .iter()
                    .zip(&bufs)
                    .map(|(d, b)| {
                        tensorbits::GpuInput::Region(GpuRegion {
                            buffer: b,
                            offset: 0,
                            desc: *d,
                        })
                    })
                    .collect();
                let out_len = packed.total_bytes();
                let out_buf = g.storage_buffer("output", out_len, &[])?;
                let region = GpuRegion {
                    buffer: &out_buf,
                    offset: 0,
                    desc: packed,
                };
                g.execute(op, call, &regions, &region, None)?;
                target.read_gpu(g, &out_buf, out_len)?;
                Ok(())
            })
            .map_err(py_err)
        }
    }
}

/// knn of the pairwise sum op named `op`, for the general path (`knn` is the front): the `k`
/// nearest rows of `b` for each row of `a`, as `(distances, indices)` numpy arrays, and the axes
/// along which both must be presented reversed.
#[pyfunction]
#[pyo3(signature = (op, a, b, k, out_dtype, device, level, largest=None, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments)]
fn knn_any<'py>(
    py: Python<'py>,
    op: Bound<'py, PyAny>,
    a: Bound<'py, PyAny>,
    b: Bound<'py, PyAny>,
    k: usize,
    out_dtype: Option<&str>,
    device: &str,
    level: Option<&str>,
    largest: Option<bool>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let op = op_at(&op)?;
    let device = device_of(device)?;
    let mut call = with_bits(call_of(level, None, None, None, false)?, bits, bitorder)?;
    call.largest = largest;
    let ins = [Arr::read(&a, "a", false)?, Arr::read(&b, "b", false)?];
    let dist_dtype = match out_dtype {
        Some(n) => dtype_named(n)?,
        None => op.default_output(ins[0].dtype),
    };
    let probe: Vec<TensorDesc> = ins
        .iter()
        .map(|a| a.shape_desc())
        .collect::<PyResult<_>>()?;
    let probe_refs: Vec<&TensorDesc> = probe.iter().collect();
    let plan = tensorbits::validate_knn(op, &call, &probe_refs, k, dist_dtype).map_err(py_err)?;
    let shape = plan.output_shape().to_vec();
    let layouts: Vec<SignedLayout<'_>> = ins.iter().map(Arr::layout).collect();
    let orientation = tensorbits::orient(op, &call, &layouts, None, shape.len(), true);
    let bufs = Buffers::prepare(&ins, &orientation, None, op, false)?;
    array::check_new(
        &shape,
        &[dist_dtype, DataType::I64],
        "the distances and indices",
    )?;
    let dist = array::empty(py, &shape, dist_dtype)?;
    let idx = array::empty(py, &shape, DataType::I64)?;
    let dv = Arr::read(&dist, "distances", true)?.target()?;
    let iv = Arr::read(&idx, "indices", true)?.target()?;
    let (descs, slices, _) = bufs.inputs();
    // Made (or its failure raised) before the GIL is released.
    let g = match device {
        Device::Gpu => Some(gpu()?),
        Device::Cpu => None,
    };
    py.detach(|| -> Result<(), Error> {
        let mut dt = dv.lock();
        let mut it = iv.lock();
        match device {
            Device::Cpu => {
                let inputs = [
                    Input::Bytes(&descs[0], slices[0]),
                    Input::Bytes(&descs[1], slices[1]),
                ];
                let (dd, id) = (dt.desc, it.desc);
                tensorbits::knn(op, &call, &inputs, k, (&dd, dt.bytes()), (&id, it.bytes()))
            }
            Device::Gpu => {
                let Some(g) = g else {
                    return Err(Error::GpuUnsupported {
                        what: "no GPU executor".to_owned(),
                    });
                };
                let len = |i: usize| slices[i].len().max(descs[i].total_bytes());
                let ba = g.storage_buffer("a", len(0), slices[0])?;
                let bb = g.storage_buffer("b", len(1), slices[1])?;
                let ra = GpuRegion {
                    buffer: &ba,
                    offset: 0,
                    desc: descs[0],
                };
                let rb = GpuRegion {
                    buffer: &bb,
                    offset: 0,
                    desc: descs[1],
                };
                // Packed on the device, scattered to the arrays after.
                let dpk = TensorDesc::new(dt.desc.data_type(), dt.desc.sizes())?;
                let ipk = TensorDesc::new(it.desc.data_type(), it.desc.sizes())?;
                let dl = dpk.total_bytes();
                let il = ipk.total_bytes();
                let bd = g.storage_buffer("distances", dl, &[])?;
                let bi = g.storage_buffer("indices", il, &[])?;
                let rd = GpuRegion {
                    buffer: &bd,
                    offset: 0,
                    desc: dpk,
                };
                let ri = GpuRegion {
                    buffer: &bi,
                    offset: 0,
                    desc: ipk,
                };
                g.knn(op, &call, [&ra, &rb], k, (&rd, &ri), None)?;
                dt.read_gpu(g, &bd, dl)?;
                it.read_gpu(g, &bi, il)?;
                Ok(())
            }
        }
    })
    .map_err(py_err)?;
    let flips: Vec<usize> = (0..orientation.output.len())
        .filter(|&j| orientation.output[j])
        .collect();
    PyTuple::new(
        py,
        [
            dist.into_any(),
            idx.into_any(),
            flips.into_pyobject(py)?.into_any(),
        ],
    )
}

/// The GPU the package's executor runs on, made on first use (`RuntimeError` if none).
#[pyfunction]
fn gpu_name() -> PyResult<String> {
    Ok(gpu()?.describe())
}

/// The standard ops: `(name, short name, inputs, summary)` for each.
#[pyfunction]
fn ops() -> Vec<(String, String, Vec<String>, String)> {
    tensorbits::ops::ALL
        .iter()
        .map(|o| {
            (
                o.name().to_owned(),
                tensorbits::ops::aliases(o)
                    .first()
                    .copied()
                    .unwrap_or_default()
                    .to_owned(),
                o.inputs().iter().map(|s| s.to_string()).collect(),
                o.summary().to_owned(),
            )
        })
        .collect()
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The one source of the version: the workspace's Cargo.toml.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(plain::run_plain, m)?)?;
    m.add_function(wrap_pyfunction!(plain::pair_plain, m)?)?;
    m.add_function(wrap_pyfunction!(plain::knn_plain, m)?)?;
    m.add_function(wrap_pyfunction!(plain::range_plain, m)?)?;
    m.add_function(wrap_pyfunction!(plain::db_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(plain::db_check, m)?)?;
    m.add_function(wrap_pyfunction!(plain::db_knn, m)?)?;
    m.add_function(wrap_pyfunction!(plain::db_range, m)?)?;
    m.add_function(wrap_pyfunction!(plain::merge_topk, m)?)?;
    m.add_function(wrap_pyfunction!(front::hamming_cdist, m)?)?;
    m.add_function(wrap_pyfunction!(front::binary_dot, m)?)?;
    m.add_function(wrap_pyfunction!(front::tanimoto, m)?)?;
    m.add_function(wrap_pyfunction!(front::dice, m)?)?;
    m.add_function(wrap_pyfunction!(front::knn, m)?)?;
    m.add_function(wrap_pyfunction!(front::with_doc, m)?)?;
    m.add_function(wrap_pyfunction!(op_index, m)?)?;
    m.add_function(wrap_pyfunction!(binary::binarize, m)?)?;
    m.add_function(wrap_pyfunction!(binary::rescore, m)?)?;
    m.add_function(wrap_pyfunction!(knn_any, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_name, m)?)?;
    m.add_function(wrap_pyfunction!(check_allocation, m)?)?;
    m.add_function(wrap_pyfunction!(ops, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_instruction_set, m)?)?;
    Ok(())
}
