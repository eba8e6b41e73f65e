//! `binarize` and `rescore` on C-contiguous numpy arrays (the Python layer makes them so, and
//! converts thresholds exactly as numpy compares).

use numpy::PyArrayMethods;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use tensorbits::{BitOrder, DataType, Error, Tensor, TensorDesc, TensorView, Thresholds};

use crate::array::Arr;
use crate::{Device, device_of, gpu, py_err};

fn order_of(bitorder: &str) -> PyResult<BitOrder> {
    BitOrder::parse(bitorder).ok_or_else(|| {
        PyValueError::new_err(format!(
            "bitorder must be 'big' or 'little' (as np.packbits), got {bitorder:?}"
        ))
    })
}

/// `binarize(x, out, bitorder, device, typed=, reals=, ints=)`: the thresholds come as an array
/// of `x`'s dtype (`typed`), as floats (`reals`) or as integers (`ints`), one or one per element of
/// the last axis; `out` is a C-contiguous uint8 array of the codes' shape.
#[pyfunction]
#[pyo3(signature = (x, out, bitorder, device, typed=None, reals=None, ints=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn binarize(
    py: Python<'_>,
    x: Bound<'_, PyAny>,
    out: Bound<'_, PyAny>,
    bitorder: &str,
    device: &str,
    typed: Option<Bound<'_, PyAny>>,
    reals: Option<Vec<f64>>,
    ints: Option<Vec<i128>>,
) -> PyResult<()> {
    let order = order_of(bitorder)?;
    let device = device_of(device)?;
    let xa = Arr::read(&x, "x", false)?;
    let oa = Arr::read(&out, "out", true)?;
    if oa.dtype != DataType::U8 {
        return Err(PyTypeError::new_err(format!(
            "out: the codes are uint8, got {}",
            oa.dtype.numpy_name()
        )));
    }
    let t = match (typed, reals, ints) {
        (Some(t), _, _) => {
            let ta = Arr::read(&t, "threshold", false)?;
            Thresholds::from_le_bytes(xa.dtype, ta.packed(None)?.bytes())
                .ok_or_else(|| PyValueError::new_err("threshold: not whole values of x's dtype"))?
        }
        (None, Some(r), _) => Thresholds::from_f64(xa.dtype, &r),
        (None, None, Some(i)) => Thresholds::from_i128(xa.dtype, &i),
        (None, None, None) => Thresholds::from_i128(xa.dtype, &[0]),
    };
    let desc = TensorDesc::new(xa.dtype, xa.shape()).map_err(py_err)?;
    // `x` is read through a copy when it shares memory with `out`, which is written as the
    // codes are made.
    let xp = xa.packed(Some(&oa))?;
    let xb = xp.bytes();
    let ob = oa
        .contiguous_bytes_mut()
        .ok_or_else(|| PyValueError::new_err("out: expected a C-contiguous array"))?;
    py.detach(|| -> Result<(), Error> {
        match device {
            Device::Cpu => tensorbits::binarize_bytes(&desc, xb, &t, order, ob),
            Device::Gpu => {
                let g = gpu().map_err(|e| Error::NoGpu {
                    reason: e.to_string(),
                })?;
                let codes = g.binarize_bytes(&desc, xb, &t, order)?;
                if codes.len() != ob.len() {
                    return Err(Error::BadArgument {
                        op: "binarize",
                        reason: format!(
                            "the output holds {} bytes; the codes are {}",
                            ob.len(),
                            codes.len()
                        ),
                    });
                }
                ob.copy_from_slice(&codes);
                Ok(())
            }
        }
    })
    .map_err(py_err)
}

/// `rescore(queries, codes, candidates, k, bitorder)` on C-contiguous arrays: float16/32/64
/// queries `[M, D]`, uint8 codes `[N, B]`, int64 candidates `[M, C]`. Returns `(scores,
/// indices)`.
#[pyfunction]
#[pyo3(signature = (queries, codes, candidates, k, bitorder))]
pub(crate) fn rescore<'py>(
    py: Python<'py>,
    queries: Bound<'py, PyAny>,
    codes: Bound<'py, PyAny>,
    candidates: Bound<'py, PyAny>,
    k: Option<usize>,
    bitorder: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let order = order_of(bitorder)?;
    let q = Arr::read(&queries, "queries", false)?;
    let c = Arr::read(&codes, "codes", false)?;
    let k_arr = Arr::read(&candidates, "candidates", false)?;
    if c.dtype != DataType::U8 {
        return Err(PyTypeError::new_err(format!(
            "codes: expected uint8 codes (np.packbits or tb.binarize makes them), got {}",
            c.dtype.numpy_name()
        )));
    }
    if k_arr.dtype != DataType::I64 {
        return Err(PyTypeError::new_err(format!(
            "candidates: expected int64 row indices, got {}",
            k_arr.dtype.numpy_name()
        )));
    }
    let (qp, cp, kp) = (q.packed(None)?, c.packed(None)?, k_arr.packed(None)?);
    let (qb, cb, kb) = (qp.bytes(), cp.bytes(), kp.bytes());
    fn view<'a, T: tensorbits::Element + bytemuck::Pod>(
        b: &'a [u8],
        shape: &[usize],
    ) -> Result<TensorView<'a, T>, Error> {
        // `Arr::packed` gives C-ordered bytes aligned for the element type, empty ones included.
        let data: &[T] = bytemuck::try_cast_slice(b).map_err(|_| Error::BadArgument {
            op: "rescore",
            reason: "an array is not aligned for its dtype".to_owned(),
        })?;
        TensorView::new(data, shape)
    }
    let result = py.detach(|| -> Result<(Tensor<f32>, Tensor<i64>), Error> {
        let codes = view::<u8>(cb, c.shape())?;
        let cands = view::<i64>(kb, k_arr.shape())?;
        match q.dtype {
            DataType::F32 => {
                tensorbits::rescore(view::<f32>(qb, q.shape())?, codes, cands, k, order)
            }
            DataType::F64 => {
                tensorbits::rescore(view::<f64>(qb, q.shape())?, codes, cands, k, order)
            }
            DataType::F16 => tensorbits::rescore(
                view::<tensorbits::f16>(qb, q.shape())?,
                codes,
                cands,
                k,
                order,
            ),
            d => Err(Error::BadArgument {
                op: "rescore",
                reason: format!("queries are {d}; expected float32 or float64"),
            }),
        }
    });
    let (s, i) = result.map_err(py_err)?;
    let shape = s.shape().to_vec();
    let sa = numpy::PyArray1::from_vec(py, s.into_vec()).reshape(shape.clone())?;
    let ia = numpy::PyArray1::from_vec(py, i.into_vec()).reshape(shape)?;
    Ok((sa.into_any(), ia.into_any()))
}
