//! The fast path of element-wise calls on plain numpy arrays: C-contiguous, aligned arrays of one
//! shape and one native dtype, and an output of that shape (new, or given and apart from the
//! inputs). Such a call is what a Python loop over small arrays makes, and it skips what general
//! calls need: the Python layer's conversions, descriptions of strides, the orientation of reversed
//! views, copies, and the walk's plan (`tensorbits::execute_packed`). Anything else answers
//! `None`, and the Python layer takes the general path, which gives the same results and errors.

use numpy::npyffi::{self, NPY_TYPES, PY_ARRAY_API, PyArrayObject, npy_intp};
use pyo3::prelude::*;
use tensorbits::{Call, DataType, OpInfo};

use crate::py_err;

/// Bytes at or above which the call releases the GIL while the kernel runs.
const DETACH_BYTES: usize = 1 << 16;

/// The library's type of a numpy type number (`descr->type_num`), for native byte order.
fn dtype_of(type_num: i32) -> Option<DataType> {
    let long8 = size_of::<std::ffi::c_long>() == 8;
    Some(match type_num {
        0 => DataType::Bool,
        1 => DataType::I8,
        2 => DataType::U8,
        3 => DataType::I16,
        4 => DataType::U16,
        5 => DataType::I32,
        6 => DataType::U32,
        7 if long8 => DataType::I64,
        7 => DataType::I32,
        8 if long8 => DataType::U64,
        8 => DataType::U32,
        9 => DataType::I64,
        10 => DataType::U64,
        11 => DataType::F32,
        12 => DataType::F64,
        23 => DataType::F16,
        _ => return None,
    })
}

/// The numpy type number of a new array of `dtype` (the `long` types where they are 64-bit, as
/// `np.int64` is on such platforms).
fn type_num_of(dtype: DataType) -> NPY_TYPES {
    let long8 = size_of::<std::ffi::c_long>() == 8;
    match dtype {
        DataType::Bool => NPY_TYPES::NPY_BOOL,
        DataType::I8 => NPY_TYPES::NPY_BYTE,
        DataType::U8 => NPY_TYPES::NPY_UBYTE,
        DataType::I16 => NPY_TYPES::NPY_SHORT,
        DataType::U16 => NPY_TYPES::NPY_USHORT,
        DataType::I32 => NPY_TYPES::NPY_INT,
        DataType::U32 => NPY_TYPES::NPY_UINT,
        DataType::I64 if long8 => NPY_TYPES::NPY_LONG,
        DataType::I64 => NPY_TYPES::NPY_LONGLONG,
        DataType::U64 if long8 => NPY_TYPES::NPY_ULONG,
        DataType::U64 => NPY_TYPES::NPY_ULONGLONG,
        DataType::F16 => NPY_TYPES::NPY_HALF,
        DataType::F32 => NPY_TYPES::NPY_FLOAT,
        DataType::F64 => NPY_TYPES::NPY_DOUBLE,
    }
}

/// A plain array: its data, shape and type.
struct Plain<'a> {
    data: *mut u8,
    shape: &'a [npy_intp],
    dtype: DataType,
    writeable: bool,
}

impl Plain<'_> {
    fn bytes(&self) -> usize {
        let count: usize = self.shape.iter().map(|&n| n as usize).product();
        count * self.dtype.size()
    }

    fn range(&self) -> (usize, usize) {
        let lo = self.data as usize;
        (lo, lo + self.bytes())
    }

    /// The array's bytes.
    ///
    /// # Safety
    /// The array must stay alive, and no one may write to it, while the slice is in use.
    unsafe fn slice<'s>(&self) -> &'s [u8] {
        // SAFETY: a C-contiguous array holds `bytes()` bytes from its data pointer; the caller
        // keeps it alive and unwritten.
        unsafe { std::slice::from_raw_parts(self.data.cast_const(), self.bytes()) }
    }
}

/// `o` as the output of a plain call: a plain array of `shape`, writable, whose bytes are apart
/// from every input's. Its data, type and the object to return; `None` otherwise.
#[inline(always)]
fn plain_out<'py>(
    py: Python<'py>,
    o: &Bound<'py, PyAny>,
    shape: &[npy_intp],
    ins: &[&Plain<'_>],
) -> Option<(*mut u8, DataType, Bound<'py, PyAny>)> {
    let t = plain(py, o)?;
    let (lo, hi) = t.range();
    let apart = ins.iter().all(|x| {
        let (l, h) = x.range();
        h <= lo || hi <= l
    });
    (t.shape == shape && t.writeable && apart).then(|| (t.data, t.dtype, o.clone()))
}

/// `obj` as a plain array: exactly a numpy `ndarray` (not a subclass), C-contiguous, aligned, of
/// at least one dimension and a native dtype the library has.
#[inline(always)]
fn plain<'a>(py: Python<'_>, obj: &'a Bound<'_, PyAny>) -> Option<Plain<'a>> {
    // SAFETY: `obj` is a live object; the check reads its type only.
    if unsafe { npyffi::PyArray_CheckExact(py, obj.as_ptr()) } == 0 {
        return None;
    }
    let arr = obj.as_ptr().cast::<PyArrayObject>();
    // SAFETY: `arr` is an ndarray (checked above), alive while `obj` is borrowed; its fields and
    // its descriptor's are plain reads of structs numpy keeps for the object's life, and its shape
    // holds `nd` sizes.
    unsafe {
        let f = &(*arr).fields;
        let flags = f.flags;
        let need = npyffi::NPY_ARRAY_C_CONTIGUOUS | npyffi::NPY_ARRAY_ALIGNED;
        if flags & need != need || f.nd < 1 {
            return None;
        }
        let d = &(*f.descr).fields;
        // Native (`=`), not applicable (`|`) or little-endian on a little-endian machine.
        let native = matches!(d.byteorder as u8, b'=' | b'|')
            || (cfg!(target_endian = "little") && d.byteorder as u8 == b'<');
        if !native {
            return None;
        }
        Some(Plain {
            data: f.data.cast::<u8>(),
            shape: std::slice::from_raw_parts(f.dimensions, f.nd as usize),
            dtype: dtype_of(d.type_num)?,
            writeable: flags & npyffi::NPY_ARRAY_WRITEABLE != 0,
        })
    }
}

/// A new C-contiguous array of `dtype` and shape `dims`, and its data.
fn new_array<'py>(
    py: Python<'py>,
    dims: &[npy_intp],
    dtype: DataType,
) -> PyResult<(Bound<'py, PyAny>, *mut u8)> {
    let sizes: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    crate::array::check_new(&sizes, &[dtype], "OutputTensor")?;
    let mut dims = dims.to_vec();
    // SAFETY: the numpy API is loaded (the module imported numpy); `dims` holds `nd` sizes;
    // `PyArray_DescrFromType` returns a new reference that `PyArray_Empty` steals.
    let ptr = unsafe {
        let descr = PY_ARRAY_API.PyArray_DescrFromType(py, type_num_of(dtype) as i32);
        if descr.is_null() {
            return Err(PyErr::fetch(py));
        }
        PY_ARRAY_API.PyArray_Empty(py, dims.len() as i32, dims.as_mut_ptr(), descr, 0)
    };
    // SAFETY: a new reference or null with an exception set.
    let new = unsafe { Bound::from_owned_ptr_or_err(py, ptr)? };
    // SAFETY: `new` is the ndarray just made.
    let data = unsafe {
        (*new.as_ptr().cast::<PyArrayObject>())
            .fields
            .data
            .cast::<u8>()
    };
    Ok((new, data))
}

/// The pairwise op at `op` (its index in `tensorbits.ops()`) and two plain matrices of binary
/// codes, `a` `[M, K]` and `b` `[N, K]` of one integer type, with `(M, N, K)`; `None` where the
/// call is not of that kind.
#[allow(clippy::type_complexity)]
#[inline(always)]
fn codes<'a>(
    py: Python<'_>,
    op: usize,
    a: &'a Bound<'_, PyAny>,
    b: &'a Bound<'_, PyAny>,
) -> Option<(&'static OpInfo, Plain<'a>, Plain<'a>, (usize, usize, usize))> {
    let op = tensorbits::ops::ALL.get(op).copied()?;
    let (pa, pb) = (plain(py, a)?, plain(py, b)?);
    let integer = !matches!(
        pa.dtype,
        DataType::Bool | DataType::F16 | DataType::F32 | DataType::F64
    );
    let ok = integer
        && pa.dtype == pb.dtype
        && pa.shape.len() == 2
        && pb.shape.len() == 2
        && pa.shape[1] == pb.shape[1];
    if !ok {
        return None;
    }
    let n = |i: npy_intp| i as usize;
    let rows = (n(pa.shape[0]), n(pb.shape[0]), n(pa.shape[1]));
    Some((op, pa, pb, rows))
}

/// The output type named `dtype` (a numpy name), or `op`'s default for inputs of `input`.
fn out_type(op: &OpInfo, dtype: Option<&str>, input: DataType) -> PyResult<DataType> {
    match dtype {
        Some(name) => crate::dtype_named(name),
        None => Ok(op.default_output(input)),
    }
}

/// Runs a closure with the GIL released when it reads or writes `bytes` or more.
fn maybe_detach<T: Send>(py: Python<'_>, bytes: usize, f: impl FnOnce() -> T + Send) -> T {
    if bytes >= DETACH_BYTES {
        py.detach(f)
    } else {
        f()
    }
}

/// Runs the pairwise op at `op` (its index in `tensorbits.ops()`) on plain matrices `a` `[M, K]`
/// and `b` `[N, K]` of one integer type, into `out` (a plain `[M, N]` apart from both) or a new
/// array of `dtype` (a numpy name, default the op's), which it returns; `None` where the call is not
/// plain (the general path then runs it).
#[pyfunction]
#[pyo3(signature = (op, a, b, out, dtype, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn pair_plain<'py>(
    py: Python<'py>,
    op: usize,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    dtype: Option<&str>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let call = crate::with_bits(Call::default(), bits, bitorder)?;
    let Some((op, pa, pb, rows)) = codes(py, op, a, b) else {
        return Ok(None);
    };
    let (m, n, _) = rows;
    let (target, out_dtype, result) = match (out, dtype) {
        (Some(_), Some(_)) => return Ok(None),
        (Some(o), None) => match plain_out(py, o, &[m as npy_intp, n as npy_intp], &[&pa, &pb]) {
            Some(t) => t,
            None => return Ok(None),
        },
        (None, d) => {
            let out_dtype = out_type(op, d, pa.dtype)?;
            let (new, data) = new_array(py, &[m as npy_intp, n as npy_intp], out_dtype)?;
            (data, out_dtype, new)
        }
    };
    let out_bytes = m * n * out_dtype.size();
    let work = pa.bytes().max(pb.bytes()).max(out_bytes);
    // SAFETY: the arrays are live, C-contiguous ndarrays, kept alive by the caller's references
    // for the call; the output is writable, of `out_bytes` bytes and apart from both inputs
    // (checked above, or new), so the inputs are not written while read.
    let (sa, sb, dst) = unsafe {
        (
            pa.slice(),
            pb.slice(),
            std::slice::from_raw_parts_mut(target, out_bytes),
        )
    };
    let dtype = pa.dtype;
    let done = maybe_detach(py, work, move || {
        tensorbits::execute_pairwise_packed(op, &call, rows, dtype, out_dtype, sa, sb, dst)
    })
    .map_err(py_err)?;
    Ok(done.then_some(result))
}

/// knn of the pairwise sum op at `op` on plain matrices (as [`pair_plain`] takes them): new
/// `[M, k]` distances of `dtype` (default the op's) and `int64` indices; `None` where the call is
/// not plain.
#[pyfunction]
#[pyo3(signature = (op, a, b, k, dtype, largest=None, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn knn_plain<'py>(
    py: Python<'py>,
    op: usize,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    k: usize,
    dtype: Option<&str>,
    largest: Option<bool>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let mut call = crate::with_bits(Call::default(), bits, bitorder)?;
    call.largest = largest;
    let Some((op, pa, pb, rows)) = codes(py, op, a, b) else {
        return Ok(None);
    };
    let (m, n, _) = rows;
    // A `k` past the rows is the general path's error, before `[M, k]` is allocated.
    if k > n {
        return Ok(None);
    }
    let out_dtype = out_type(op, dtype, pa.dtype)?;
    let dims = [m as npy_intp, k as npy_intp];
    crate::array::check_new(
        &[m, k],
        &[out_dtype, DataType::I64],
        "the distances and indices",
    )?;
    let (dist, dd) = new_array(py, &dims, out_dtype)?;
    let (idx, id) = new_array(py, &dims, DataType::I64)?;
    let work = pa.bytes().max(pb.bytes());
    // SAFETY: as in `pair_plain`; both outputs are new arrays of `[M, k]`.
    let (sa, sb, sd, si) = unsafe {
        (
            pa.slice(),
            pb.slice(),
            std::slice::from_raw_parts_mut(dd, m * k * out_dtype.size()),
            std::slice::from_raw_parts_mut(id, m * k * 8),
        )
    };
    let dtype = pa.dtype;
    let done = maybe_detach(py, work, move || {
        tensorbits::knn_packed(op, &call, rows, dtype, k, out_dtype, sa, sb, sd, si)
    })
    .map_err(py_err)?;
    Ok(done.then_some((dist, idx)))
}

/// Runs the element-wise op at `op` (its index in `tensorbits.ops()`) on plain arrays `x1` (and
/// `x2`), into `out` or a new array, which it returns; `None` where the call is not plain (the
/// general path then runs it).
#[pyfunction]
#[pyo3(signature = (op, x1, x2, out))]
pub(crate) fn run_plain<'py>(
    py: Python<'py>,
    op: usize,
    x1: &Bound<'py, PyAny>,
    x2: Option<&Bound<'py, PyAny>>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(op) = tensorbits::ops::ALL.get(op).copied() else {
        return Ok(None);
    };
    let Some(a) = plain(py, x1) else {
        return Ok(None);
    };
    let b = match x2 {
        Some(x) => match plain(py, x) {
            Some(b) if b.dtype == a.dtype && b.shape == a.shape => Some(b),
            _ => return Ok(None),
        },
        None => None,
    };
    let ins: Vec<&Plain<'_>> = std::iter::once(&a).chain(b.as_ref()).collect();
    if ins.len() != op.arity() || op.reduce().is_some() {
        return Ok(None);
    }
    let sizes: Vec<usize> = a.shape.iter().map(|&n| n as usize).collect();
    let (target, out_dtype, result) = match out {
        Some(o) => match plain_out(py, o, a.shape, &ins) {
            Some(t) => t,
            None => return Ok(None),
        },
        None => {
            let out_dtype = op.default_output(a.dtype);
            let (new, data) = new_array(py, a.shape, out_dtype)?;
            (data, out_dtype, new)
        }
    };
    let out_bytes = sizes.iter().product::<usize>() * out_dtype.size();
    let in_bytes = a.bytes();
    // SAFETY: every array is a live, C-contiguous ndarray of `bytes()` bytes from its data pointer,
    // kept alive by the caller's references for the call; the output is writable and apart from
    // every input (checked above, or new).
    let (srcs, dst): (Vec<&[u8]>, &mut [u8]) = unsafe {
        (
            ins.iter().map(|x| x.slice()).collect(),
            std::slice::from_raw_parts_mut(target, out_bytes),
        )
    };
    let call = Call::default();
    let dtype = a.dtype;
    let mut run =
        move || tensorbits::execute_packed(op, &call, &sizes, dtype, out_dtype, &srcs, dst);
    let done = if out_bytes.max(in_bytes) >= DETACH_BYTES {
        py.detach(run)
    } else {
        run()
    }
    .map_err(py_err)?;
    Ok(done.then_some(result))
}

/// Range search of the pairwise sum op at `op` on matrices `a` `[M, K]` and `b` `[N, K]`
/// (C-contiguous, aligned, native byte order: the wrapper makes them so): new `lims` (`int64`,
/// `M + 1`), `values` (`dtype`, default the op's) and `indices` (`int64`), FAISS's layout.
#[pyfunction]
#[pyo3(signature = (op, a, b, threshold, dtype, largest=None, bits=None, bitorder="big", device="cpu"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn range_plain<'py>(
    py: Python<'py>,
    op: usize,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    threshold: f64,
    dtype: Option<&str>,
    largest: Option<bool>,
    bits: Option<usize>,
    bitorder: &str,
    device: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let device = crate::device_of(device)?;
    let mut call = crate::with_bits(Call::default(), bits, bitorder)?;
    call.largest = largest;
    let op = tensorbits::ops::ALL
        .get(op)
        .copied()
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("range_search: unknown op"))?;
    let (Some(pa), Some(pb)) = (plain(py, a), plain(py, b)) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "range_search: a and b must be C-contiguous numpy arrays in native byte order",
        ));
    };
    let out_dtype = out_type(op, dtype, pa.dtype)?;
    let desc = |p: &Plain<'_>| {
        let sizes: Vec<usize> = p.shape.iter().map(|&n| n as usize).collect();
        tensorbits::TensorDesc::new(p.dtype, &sizes)
    };
    let (da, db) = (desc(&pa).map_err(py_err)?, desc(&pb).map_err(py_err)?);
    let work = pa.bytes().max(pb.bytes());
    // SAFETY: as in `pair_plain`: live, C-contiguous arrays held by the caller for the call, only
    // read.
    let (sa, sb) = unsafe { (pa.slice(), pb.slice()) };
    // Made (or its failure raised) before the GIL is released.
    let g = match device {
        crate::Device::Gpu => Some(crate::gpu()?),
        crate::Device::Cpu => None,
    };
    let r = maybe_detach(py, work, move || match g {
        None => {
            let inputs = [
                tensorbits::Input::Bytes(&da, sa),
                tensorbits::Input::Bytes(&db, sb),
            ];
            tensorbits::range_search(op, &call, &inputs, threshold, out_dtype)
        }
        Some(g) => {
            // Bindings cover whole 4-byte words: the buffers are rounded up.
            let len = |d: &tensorbits::TensorDesc, s: &[u8]| s.len().max(d.total_bytes());
            let ba = g.storage_buffer("a", len(&da, sa), sa)?;
            let bb = g.storage_buffer("b", len(&db, sb), sb)?;
            let region = |buffer, desc| tensorbits::GpuRegion {
                buffer,
                offset: 0,
                desc,
            };
            g.range_search(
                op,
                &call,
                [&region(&ba, da), &region(&bb, db)],
                threshold,
                out_dtype,
            )
        }
    })
    .map_err(py_err)?;
    let array = |bytes: &[u8], dtype: DataType| -> PyResult<Bound<'py, PyAny>> {
        let len = bytes.len() / dtype.size();
        let (arr, data) = new_array(py, &[len as npy_intp], dtype)?;
        // SAFETY: `data` is the new array's buffer of `len * size` bytes, apart from `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, len * dtype.size()) };
        Ok(arr)
    };
    let lims = array(bytemuck::cast_slice(&r.lims), DataType::I64)?;
    let values = array(&r.values, out_dtype)?;
    let indices = array(bytemuck::cast_slice(&r.indices), DataType::I64)?;
    Ok((lims, values, indices))
}

/// `merge_topk` of parts `(values[p], indices[p])`: 2-D C-contiguous arrays in native byte order
/// (the wrapper makes them so), values of one dtype and `int64` indices of the same shape, every
/// part of the same rows. New `[M, min(k, sum of widths)]` arrays.
#[pyfunction]
#[pyo3(signature = (values, indices, k, largest))]
pub(crate) fn merge_topk<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
    indices: Vec<Bound<'py, PyAny>>,
    k: usize,
    largest: bool,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let value_err = pyo3::exceptions::PyValueError::new_err;
    if values.len() != indices.len() {
        return Err(value_err(format!(
            "merge_topk: {} arrays of values and {} of indices; each part is a pair",
            values.len(),
            indices.len()
        )));
    }
    let mut parts = Vec::with_capacity(values.len());
    let mut dtype = None;
    let mut rows = None;
    for (p, (v, i)) in values.iter().zip(&indices).enumerate() {
        let (Some(pv), Some(pi)) = (plain(py, v), plain(py, i)) else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "merge_topk: part {p} is not a pair of C-contiguous numpy arrays"
            )));
        };
        if pv.shape.len() != 2 || pv.shape != pi.shape || pi.dtype != DataType::I64 {
            return Err(value_err(format!(
                "merge_topk: part {p} has values of shape {:?} and indices of shape {:?} ({}); \
                 each part is knn's pair of [M, k] values and int64 indices",
                pv.shape,
                pi.shape,
                pi.dtype.numpy_name()
            )));
        }
        if *dtype.get_or_insert(pv.dtype) != pv.dtype {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "merge_topk: part {p} has values of {}, part 0 of {}; merge the results of one op",
                pv.dtype.numpy_name(),
                dtype.map_or("", |d| d.numpy_name())
            )));
        }
        let m = pv.shape[0] as usize;
        if *rows.get_or_insert(m) != m {
            return Err(value_err(format!(
                "merge_topk: part {p} has {m} rows, part 0 {}; every part is over the same queries",
                rows.unwrap_or(0)
            )));
        }
        // SAFETY: as in `pair_plain`: live, C-contiguous arrays held by the caller, only read;
        // the indices are int64, 8-byte aligned (numpy's ALIGNED flag, checked by `plain`).
        let (vb, ib) = unsafe { (pv.slice(), pi.slice()) };
        parts.push(tensorbits::TopkPart {
            values: vb,
            // Aligned (numpy's flag), except that numpy marks an empty array aligned anywhere.
            indices: bytemuck::try_cast_slice(ib).unwrap_or(&[]),
            width: pv.shape[1] as usize,
        });
    }
    let dtype = dtype.unwrap_or(DataType::I64);
    let rows = rows.unwrap_or(0);
    let (vals, idx, width) =
        tensorbits::merge_topk_bytes(dtype, rows, &parts, k, largest).map_err(py_err)?;
    let dims = [rows as npy_intp, width as npy_intp];
    let (va, vp) = new_array(py, &dims, dtype)?;
    let (ia, ip) = new_array(py, &dims, DataType::I64)?;
    // SAFETY: the new arrays hold `rows * width` elements, apart from the results.
    unsafe {
        std::ptr::copy_nonoverlapping(vals.as_ptr(), vp, vals.len());
        std::ptr::copy_nonoverlapping(idx.as_ptr().cast::<u8>(), ip, idx.len() * 8);
    }
    Ok((va, ia))
}

/// The parts of a prepared database of `codes` (a plain `[N, K]` array of an integer type) for
/// the op at `op`: its rows ordered by count (`uint8`, `[N, row bytes]`), their counts
/// (`uint64`) and original indices (`int64`).
#[pyfunction]
#[pyo3(signature = (op, codes, bits=None, bitorder="big"))]
pub(crate) fn db_prepare<'py>(
    py: Python<'py>,
    op: usize,
    codes: &Bound<'py, PyAny>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let call = crate::with_bits(Call::default(), bits, bitorder)?;
    let op = db_op(op)?;
    let Some(pc) = plain(py, codes) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "Database: codes must be a C-contiguous numpy array in native byte order",
        ));
    };
    let sizes: Vec<usize> = pc.shape.iter().map(|&n| n as usize).collect();
    let desc = tensorbits::TensorDesc::new(pc.dtype, &sizes).map_err(py_err)?;
    // SAFETY: a live, C-contiguous array the caller holds for the call, only read.
    let bytes = unsafe { pc.slice() };
    let db = maybe_detach(py, pc.bytes(), move || {
        tensorbits::Database::new(op, &call, &desc, bytes)
    })
    .map_err(py_err)?;
    let n = db.len();
    let row = db.codes().len().checked_div(n).unwrap_or(0);
    let array = |bytes: &[u8], dims: &[npy_intp], dtype: DataType| -> PyResult<Bound<'py, PyAny>> {
        let (arr, data) = new_array(py, dims, dtype)?;
        // SAFETY: `data` is the new array's buffer of `bytes.len()` bytes, apart from `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len()) };
        Ok(arr)
    };
    Ok((
        array(db.codes(), &[n as npy_intp, row as npy_intp], DataType::U8)?,
        array(
            bytemuck::cast_slice(db.counts()),
            &[n as npy_intp],
            DataType::U64,
        )?,
        array(
            bytemuck::cast_slice(db.order()),
            &[n as npy_intp],
            DataType::I64,
        )?,
    ))
}

fn db_op(op: usize) -> PyResult<&'static tensorbits::OpInfo> {
    tensorbits::ops::ALL
        .get(op)
        .copied()
        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("Database: unknown op"))
}

/// The database of the parts `codes`, `counts` and `order` (as [`db_prepare`] gives them) of
/// codes of `dtype` with `k` elements a row; with `check`, every part is checked (a database
/// loaded from files), else only their lengths (one this module made or checked).
#[allow(clippy::too_many_arguments)]
fn db_of<'a>(
    py: Python<'_>,
    op: &'static tensorbits::OpInfo,
    call: &Call,
    (dtype, k): (&str, usize),
    parts: [&'a Bound<'_, PyAny>; 3],
    check: bool,
) -> PyResult<tensorbits::Database<'a>> {
    let dtype = crate::dtype_named(dtype)?;
    let [c, n, o] = parts.map(|p| plain(py, p));
    let (Some(c), Some(n), Some(o)) = (c, n, o) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "Database: its parts must be C-contiguous numpy arrays in native byte order",
        ));
    };
    if c.dtype != DataType::U8 || n.dtype != DataType::U64 || o.dtype != DataType::I64 {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "Database: its parts are codes (uint8), counts (uint64) and order (int64)",
        ));
    }
    // SAFETY: live, C-contiguous arrays the Database object holds, only read.
    let (codes, counts, order) = unsafe { (c.slice(), n.slice(), o.slice()) };
    let misaligned = |_| pyo3::exceptions::PyValueError::new_err("Database: a part is misaligned");
    let counts = bytemuck::try_cast_slice::<u8, u64>(counts).map_err(misaligned)?;
    let order = bytemuck::try_cast_slice::<u8, i64>(order).map_err(misaligned)?;
    let made = match check {
        true => tensorbits::Database::from_parts(op, call, dtype, k, codes, counts, order),
        false => tensorbits::Database::from_checked_parts(op, call, dtype, k, codes, counts, order),
    };
    made.map_err(py_err)
}

/// Checks the parts of a database (a loaded one): `None`, or the error.
#[pyfunction]
#[pyo3(signature = (op, dtype, k, codes, counts, order, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn db_check(
    py: Python<'_>,
    op: usize,
    dtype: &str,
    k: usize,
    codes: &Bound<'_, PyAny>,
    counts: &Bound<'_, PyAny>,
    order: &Bound<'_, PyAny>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<()> {
    let call = crate::with_bits(Call::default(), bits, bitorder)?;
    db_of(
        py,
        db_op(op)?,
        &call,
        (dtype, k),
        [codes, counts, order],
        true,
    )
    .map(|_| ())
}

/// knn of the plain `[M, K]` `queries` in a database: `(values, indices, rows compared)`.
#[pyfunction]
#[pyo3(signature = (op, dtype, k_elems, codes, counts, order, queries, k, out_dtype=None, largest=None, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn db_knn<'py>(
    py: Python<'py>,
    op: usize,
    dtype: &str,
    k_elems: usize,
    codes: &Bound<'py, PyAny>,
    counts: &Bound<'py, PyAny>,
    order: &Bound<'py, PyAny>,
    queries: &Bound<'py, PyAny>,
    k: usize,
    out_dtype: Option<&str>,
    largest: Option<bool>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, u64)> {
    let mut call = crate::with_bits(Call::default(), bits, bitorder)?;
    call.largest = largest;
    let op = db_op(op)?;
    let db = db_of(
        py,
        op,
        &call,
        (dtype, k_elems),
        [codes, counts, order],
        false,
    )?;
    let (desc, bytes) = db_queries(py, queries)?;
    let out = out_type(op, out_dtype, db.shape().0)?;
    let m = desc.sizes()[0];
    let r = maybe_detach(py, bytes.len(), move || {
        db.knn(&call, (&desc, bytes), k, out)
    })
    .map_err(py_err)?;
    let dims = [m as npy_intp, k as npy_intp];
    let (values, data) = new_array(py, &dims, out)?;
    // SAFETY: `data` is the new array's buffer of `m * k` elements, the values' length.
    unsafe { std::ptr::copy_nonoverlapping(r.values.as_ptr(), data, r.values.len()) };
    let (indices, data) = new_array(py, &dims, DataType::I64)?;
    let idx: &[u8] = bytemuck::cast_slice(&r.indices);
    // SAFETY: as above, `m * k` `int64`s.
    unsafe { std::ptr::copy_nonoverlapping(idx.as_ptr(), data, idx.len()) };
    Ok((values, indices, r.scanned))
}

/// Range search of the plain `[M, K]` `queries` in a database: `(lims, values, indices, rows
/// compared)`.
#[pyfunction]
#[pyo3(signature = (op, dtype, k_elems, codes, counts, order, queries, threshold, out_dtype=None, largest=None, bits=None, bitorder="big"))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(crate) fn db_range<'py>(
    py: Python<'py>,
    op: usize,
    dtype: &str,
    k_elems: usize,
    codes: &Bound<'py, PyAny>,
    counts: &Bound<'py, PyAny>,
    order: &Bound<'py, PyAny>,
    queries: &Bound<'py, PyAny>,
    threshold: f64,
    out_dtype: Option<&str>,
    largest: Option<bool>,
    bits: Option<usize>,
    bitorder: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, u64)> {
    let mut call = crate::with_bits(Call::default(), bits, bitorder)?;
    call.largest = largest;
    let op = db_op(op)?;
    let db = db_of(
        py,
        op,
        &call,
        (dtype, k_elems),
        [codes, counts, order],
        false,
    )?;
    let (desc, bytes) = db_queries(py, queries)?;
    let out = out_type(op, out_dtype, db.shape().0)?;
    let r = maybe_detach(py, bytes.len(), move || {
        db.range_search(&call, (&desc, bytes), threshold, out)
    })
    .map_err(py_err)?;
    let array = |bytes: &[u8], dtype: DataType| -> PyResult<Bound<'py, PyAny>> {
        let len = bytes.len() / dtype.size();
        let (arr, data) = new_array(py, &[len as npy_intp], dtype)?;
        // SAFETY: `data` is the new array's buffer of `len * size` bytes, apart from `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), data, len * dtype.size()) };
        Ok(arr)
    };
    Ok((
        array(bytemuck::cast_slice(&r.hits.lims), DataType::I64)?,
        array(&r.hits.values, out)?,
        array(bytemuck::cast_slice(&r.hits.indices), DataType::I64)?,
        r.scanned,
    ))
}

/// A database's queries: a plain array, described.
fn db_queries<'a>(
    py: Python<'_>,
    queries: &'a Bound<'_, PyAny>,
) -> PyResult<(tensorbits::TensorDesc, &'a [u8])> {
    let Some(pq) = plain(py, queries) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "Database: queries must be a C-contiguous numpy array in native byte order",
        ));
    };
    let sizes: Vec<usize> = pq.shape.iter().map(|&n| n as usize).collect();
    let desc = tensorbits::TensorDesc::new(pq.dtype, &sizes).map_err(py_err)?;
    // SAFETY: a live, C-contiguous array the caller holds for the call, only read.
    Ok((desc, unsafe { pq.slice() }))
}
