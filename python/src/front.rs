//! Builtin front ends: `hamming_cdist`, `binary_dot`, the similarities and `knn` are functions of
//! this module, so that the call a loop makes most (plain matrices, default keywords) costs one
//! builtin call and no Python frame: a frame and its keyword checks cost more than a small call's
//! search. Any other call goes on to the Python layer's general path (`tensorbits._pairwise`,
//! `tensorbits._knn`), which gives the results and the errors; the Python layer gives the
//! builtins their docstrings ([`with_doc`]).

use std::ffi::CString;
use std::sync::{Mutex, OnceLock};

use pyo3::exceptions::{PyMemoryError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString};

use crate::plain::{knn_plain, pair_plain};

/// A keyword argument as the caller gave it, or `None` where it was left out (the documented
/// default then applies), so that the general path sees exactly what was passed.
pub(crate) struct Given<'py>(Option<Bound<'py, PyAny>>);

impl<'a, 'py> FromPyObject<'a, 'py> for Given<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Given(Some(obj.to_owned())))
    }
}

impl<'py> Given<'py> {
    /// Left out or `None`.
    fn is_none(&self) -> bool {
        self.0.as_ref().is_none_or(|v| v.is_none())
    }

    /// Left out, or the string `default`.
    fn is_default(&self, default: &str) -> bool {
        match &self.0 {
            None => true,
            Some(v) => v
                .cast::<PyString>()
                .is_ok_and(|s| s.to_str().is_ok_and(|s| s == default)),
        }
    }

    /// The value for the general path: as given, or `default`.
    fn or(&self, py: Python<'py>, default: &str) -> Bound<'py, PyAny> {
        match &self.0 {
            Some(v) => v.clone(),
            None => PyString::new(py, default).into_any(),
        }
    }

    /// The value for the general path: as given, or `None`.
    fn or_none(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match &self.0 {
            Some(v) => v.clone(),
            None => py.None().into_bound(py),
        }
    }
}

/// The index in `tensorbits.ops()` of the op named `name`, found once.
fn index(cell: &OnceLock<usize>, name: &str) -> PyResult<usize> {
    if let Some(&i) = cell.get() {
        return Ok(i);
    }
    let i = crate::op_index(name)?;
    Ok(*cell.get_or_init(|| i))
}

/// The keywords of a pairwise front, as given.
struct PairKeywords<'py> {
    out: Given<'py>,
    dtype: Given<'py>,
    device: Given<'py>,
    level: Given<'py>,
    bits: Given<'py>,
    bitorder: Given<'py>,
}

/// A pairwise front of the op named `name` (its index found once, in `op`): the plain path where
/// the keywords are the defaults (and `out`), else the Python layer's `_pairwise`, which also
/// runs a plain call that failed, so that its error names the function's arguments.
fn pair_front<'py>(
    py: Python<'py>,
    op: &OnceLock<usize>,
    name: &str,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    k: PairKeywords<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let op = index(op, name)?;
    if k.dtype.is_none()
        && k.bits.is_none()
        && k.level.is_none()
        && k.device.is_default("auto")
        && k.bitorder.is_default("big")
    {
        let out = k.out.0.as_ref().filter(|o| !o.is_none());
        if let Ok(Some(result)) = pair_plain(py, op, a, b, out, None, None, "big") {
            return Ok(result);
        }
    }
    let general = py.import("tensorbits")?.getattr("_pairwise")?;
    general.call1((
        op,
        name,
        a,
        b,
        k.out.or_none(py),
        k.dtype.or_none(py),
        k.device.or(py, "auto"),
        k.level.or_none(py),
        k.bits.or_none(py),
        k.bitorder.or(py, "big"),
    ))
}

/// `tensorbits.hamming_cdist` (its docstring is the Python layer's).
#[pyfunction]
#[pyo3(
    signature = (a, b, /, *, out=Given(None), dtype=Given(None), device=Given(None),
                 level=Given(None), bits=Given(None), bitorder=Given(None)),
    text_signature = "(a, b, /, *, out=None, dtype=None, device='auto', level=None, bits=None, \
                      bitorder='big')"
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn hamming_cdist<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Given<'py>,
    dtype: Given<'py>,
    device: Given<'py>,
    level: Given<'py>,
    bits: Given<'py>,
    bitorder: Given<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    static OP: OnceLock<usize> = OnceLock::new();
    let k = PairKeywords {
        out,
        dtype,
        device,
        level,
        bits,
        bitorder,
    };
    pair_front(py, &OP, "hamming_cdist", a, b, k)
}

/// The fronts of the pairwise similarities, each `tensorbits.<name>` (their docstrings are the
/// Python layer's), with one signature.
macro_rules! similarity_fronts {
    ($($name:ident)*) => {$(
        #[pyfunction]
        #[pyo3(
            signature = (a, b, /, *, bits=Given(None), bitorder=Given(None), dtype=Given(None),
                         out=Given(None), device=Given(None), level=Given(None)),
            text_signature = "(a, b, /, *, bits=None, bitorder='big', dtype=None, out=None, \
                              device='auto', level=None)"
        )]
        #[allow(clippy::too_many_arguments)]
        pub(crate) fn $name<'py>(
            py: Python<'py>,
            a: &Bound<'py, PyAny>,
            b: &Bound<'py, PyAny>,
            bits: Given<'py>,
            bitorder: Given<'py>,
            dtype: Given<'py>,
            out: Given<'py>,
            device: Given<'py>,
            level: Given<'py>,
        ) -> PyResult<Bound<'py, PyAny>> {
            static OP: OnceLock<usize> = OnceLock::new();
            let k = PairKeywords {
                out,
                dtype,
                device,
                level,
                bits,
                bitorder,
            };
            pair_front(py, &OP, stringify!($name), a, b, k)
        }
    )*};
}

similarity_fronts!(binary_dot tanimoto dice);

/// The index of the op a knn front names: `hamming_cdist` where `op` is left out, else the op
/// of that name, found once per name; `None` where `op` is not a string or names no op (the
/// general path then says why).
fn knn_op(op: &Given<'_>) -> Option<usize> {
    static HAMMING: OnceLock<usize> = OnceLock::new();
    static NAMED: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());
    let Some(op) = &op.0 else {
        return index(&HAMMING, "hamming_cdist").ok();
    };
    let name = op.cast_exact::<PyString>().ok()?.to_str().ok()?;
    let mut named = NAMED.lock().ok()?;
    if let Some(&(_, i)) = named.iter().find(|(n, _)| n == name) {
        return Some(i);
    }
    let i = crate::op_index(name).ok()?;
    named.push((name.to_owned(), i));
    Some(i)
}

/// A count as the plain path takes it: a Python `int` (not a `bool`) from 0 to `i64::MAX`.
fn plain_count(v: &Bound<'_, PyAny>) -> Option<usize> {
    let v = v.cast_exact::<PyInt>().ok()?.extract::<u64>().ok()?;
    (v <= i64::MAX as u64).then(|| usize::try_from(v).ok())?
}

/// `tensorbits.knn` (its docstring is the Python layer's): the plain call (numpy codes, the
/// default keywords, any op by name) in Rust, anything else the Python layer's `_knn`, which also
/// runs a plain call that failed, so that its error names the function's arguments.
#[pyfunction]
#[pyo3(
    signature = (a, b, /, k, *, op=Given(None), largest=Given(None), bits=Given(None),
                 bitorder=Given(None), dtype=Given(None), device=Given(None), level=Given(None),
                 id_offset=Given(None)),
    text_signature = "(a, b, /, k, *, op='hamming_cdist', largest=None, bits=None, \
                      bitorder='big', dtype=None, device='auto', level=None, id_offset=0)"
)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn knn<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    k: &Bound<'py, PyAny>,
    op: Given<'py>,
    largest: Given<'py>,
    bits: Given<'py>,
    bitorder: Given<'py>,
    dtype: Given<'py>,
    device: Given<'py>,
    level: Given<'py>,
    id_offset: Given<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let defaults = largest.is_none()
        && bits.is_none()
        && dtype.is_none()
        && level.is_none()
        && device.is_default("auto")
        && bitorder.is_default("big")
        && id_offset
            .0
            .as_ref()
            .is_none_or(|v| plain_count(v) == Some(0));
    if defaults
        && let Some(count) = plain_count(k)
        && let Some(index) = knn_op(&op)
    {
        match knn_plain(py, index, a, b, count, None, None, None, "big") {
            Ok(Some(result)) => return Ok(result.into_pyobject(py)?.into_any()),
            // Memory that cannot be had is not asked for again.
            Err(e) if e.is_instance_of::<PyMemoryError>(py) => return Err(e),
            _ => {}
        }
    }
    let kwargs = PyDict::new(py);
    for (name, v) in [
        ("op", op),
        ("largest", largest),
        ("bits", bits),
        ("bitorder", bitorder),
        ("dtype", dtype),
        ("device", device),
        ("level", level),
        ("id_offset", id_offset),
    ] {
        if let Some(v) = v.0 {
            kwargs.set_item(name, v)?;
        }
    }
    let general = py.import("tensorbits")?.getattr("_knn")?;
    general.call((a, b, k), Some(&kwargs))
}

/// A copy of the builtin `f` (one of this module's functions) with the docstring `doc` and the
/// module name `module`: the Python layer writes the docstrings (with the paragraphs its
/// functions share), which pyo3 takes only as constants. The copy calls the same C function with
/// the same flags, so it is as fast; its text signature (`inspect.signature`, `help`) is `f`'s.
#[pyfunction]
pub(crate) fn with_doc<'py>(
    py: Python<'py>,
    f: &Bound<'py, PyAny>,
    doc: &str,
    module: &str,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a type check of a live object.
    if unsafe { ffi::PyCFunction_Check(f.as_ptr()) } == 0 {
        return Err(PyTypeError::new_err(
            "with_doc: expected a builtin function",
        ));
    }
    let name: String = f.getattr("__name__")?.extract()?;
    let signature: Option<String> = f.getattr("__text_signature__")?.extract()?;
    let text = match signature {
        Some(s) => format!("{name}{s}\n--\n\n{doc}"),
        None => doc.to_owned(),
    };
    let to_c = |s: String| {
        CString::new(s).map_err(|_| PyTypeError::new_err("with_doc: a NUL in the name or doc"))
    };
    let (name, text) = (to_c(name)?, to_c(text)?);
    let module = PyString::new(py, module);
    // SAFETY: `f` is a builtin function (checked), so its C function, flags and self are
    // readable, and the function reads its arguments by the flags it was made with. The method
    // definition a builtin points at must outlive it: it and its strings are leaked, once per
    // front at import.
    unsafe {
        let Some(meth) = ffi::PyCFunction_GetFunction(f.as_ptr()) else {
            return Err(PyErr::fetch(py));
        };
        let flags = ffi::PyCFunction_GetFlags(f.as_ptr());
        let slf = ffi::PyCFunction_GetSelf(f.as_ptr());
        let def = Box::leak(Box::new(ffi::PyMethodDef {
            ml_name: name.into_raw(),
            ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
            ml_flags: flags,
            ml_doc: text.into_raw(),
        }));
        Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(def, slf, module.as_ptr()))
    }
}
