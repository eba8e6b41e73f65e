//! `binarize`: `np.packbits(x > threshold, axis=-1, bitorder=...)` in one pass over `x`, for every
//! element type, NaN included (a NaN is never above a threshold). The threshold is one value, or
//! one per element of the last axis. The typed entry points take thresholds of the input's type;
//! [`Thresholds`] converts numbers of any type (a Python float, a command-line argument) exactly,
//! so that `x > t` holds as it does for the real numbers.

use crate::cpu;
use crate::element::Element;
use crate::error::{Error, Result, ShapeText};
use crate::op::BitOrder;
use crate::validate::desc::TensorDesc;
use crate::{DataType, Tensor, TensorView, TensorViewMut};
use half::f16;

/// The name errors give `binarize`.
pub(crate) const BINARIZE: &str = "binarize";

/// The threshold of [`binarize`]: one for every element, or one per element of the last axis.
///
/// ```
/// use tensorbits_runtime::Threshold;
/// let one: Threshold<'_, f32> = 0.0.into();
/// let per_dim = [0.5f32, -0.5, 0.0];
/// let each: Threshold<'_, f32> = per_dim[..].into();
/// # let _ = (one, each);
/// ```
#[derive(Clone, Copy, Debug)]
pub enum Threshold<'a, T> {
    /// One threshold for every element.
    Scalar(T),
    /// One threshold per element of the last axis.
    PerDim(&'a [T]),
}

impl<T: Element> From<T> for Threshold<'_, T> {
    fn from(t: T) -> Self {
        Threshold::Scalar(t)
    }
}

impl<'a, T: Element> From<&'a [T]> for Threshold<'a, T> {
    fn from(t: &'a [T]) -> Self {
        Threshold::PerDim(t)
    }
}

impl<'a, T: Element> From<&'a Vec<T>> for Threshold<'a, T> {
    fn from(t: &'a Vec<T>) -> Self {
        Threshold::PerDim(t)
    }
}

impl<'a, T: Element, const N: usize> From<&'a [T; N]> for Threshold<'a, T> {
    fn from(t: &'a [T; N]) -> Self {
        Threshold::PerDim(t)
    }
}

/// Thresholds for inputs of one data type, as the executors take them: for each, a value of the
/// type (`x > value`), or "every value is above it" for a threshold below the type's range (an
/// integer type's). Made from typed thresholds, or converted exactly from `f64` or `i128` numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thresholds {
    dtype: DataType,
    /// The values' bits, little-endian in the low bytes.
    bits: Vec<u64>,
    /// Whether every value of the type is above threshold `i`.
    always: Vec<bool>,
}

/// A value's bits, zero-extended.
fn bits_of<T: Element>(v: T) -> u64 {
    let mut b = [0u8; 8];
    let mut one = [v];
    T::with_bytes_mut(&mut one, |s| b[..s.len()].copy_from_slice(s));
    u64::from_le_bytes(b)
}

/// For each float width, the largest value at or below `t` (exact: `x > t` iff `x > floor(t)` for
/// every `x` of the type); NaN stays NaN.
fn float_floor(dtype: DataType, t: f64) -> u64 {
    match dtype {
        DataType::F64 => t.to_bits(),
        DataType::F32 => {
            let mut c = t as f32;
            if f64::from(c) > t {
                c = c.next_down();
            }
            u64::from(c.to_bits())
        }
        _ => {
            let c = f16::from_f64(t);
            if c.to_f64() > t {
                // The next f16 down: toward -inf in the bits' order.
                let b = c.to_bits();
                let down = match b {
                    0 => 0x8001,
                    _ if b & 0x8000 != 0 => b + 1,
                    _ => b - 1,
                };
                u64::from(down)
            } else {
                u64::from(c.to_bits())
            }
        }
    }
}

impl Thresholds {
    /// Typed thresholds: values of the input's own type.
    pub fn typed<T: Element>(t: Threshold<'_, T>) -> Thresholds {
        let values: Vec<T> = match t {
            Threshold::Scalar(v) => vec![v],
            Threshold::PerDim(v) => v.to_vec(),
        };
        Thresholds {
            dtype: T::DATA_TYPE,
            always: vec![false; values.len()],
            bits: values.into_iter().map(bits_of).collect(),
        }
    }

    /// Thresholds of `dtype` given as the type's little-endian bytes, one value after the other
    /// (for `bool`, any non-zero byte is true). `None` when `bytes` is not a whole number of values.
    pub fn from_le_bytes(dtype: DataType, bytes: &[u8]) -> Option<Thresholds> {
        let es = dtype.size();
        if !bytes.len().is_multiple_of(es) {
            return None;
        }
        let bits: Vec<u64> = bytes
            .chunks_exact(es)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..es].copy_from_slice(c);
                match dtype {
                    DataType::Bool => u64::from(b[0] != 0),
                    _ => u64::from_le_bytes(b),
                }
            })
            .collect();
        Some(Thresholds {
            dtype,
            always: vec![false; bits.len()],
            bits,
        })
    }

    /// Real-valued thresholds for inputs of `dtype`, compared as numpy compares `x > t` with a
    /// float64 `t`: a float `x` exactly, an integer `x` after rounding it to float64 (exact below
    /// 2^53; int64 and uint64 values past it round first, as numpy rounds them). A NaN threshold
    /// has nothing above it.
    pub fn from_f64(dtype: DataType, values: &[f64]) -> Thresholds {
        let mut out = Thresholds {
            dtype,
            bits: Vec::with_capacity(values.len()),
            always: Vec::with_capacity(values.len()),
        };
        for &t in values {
            if dtype.is_float() {
                out.bits.push(float_floor(dtype, t));
                out.always.push(false);
            } else if t.is_nan() {
                out.push_int(i128::MAX);
            } else {
                out.push_int(int_at_or_below(t));
            }
        }
        out
    }

    /// Integer thresholds for inputs of `dtype`, converted exactly: `x > t`.
    pub fn from_i128(dtype: DataType, values: &[i128]) -> Thresholds {
        let mut out = Thresholds {
            dtype,
            bits: Vec::with_capacity(values.len()),
            always: Vec::with_capacity(values.len()),
        };
        for &t in values {
            if dtype.is_float() {
                // The largest f64 at or below t, then the type's floor of it.
                let mut f = t as f64;
                if f.is_finite() && f as i128 > t {
                    f = f.next_down();
                }
                out.bits.push(float_floor(dtype, f));
                out.always.push(false);
            } else {
                out.push_int(t);
            }
        }
        out
    }

    /// An integer threshold `t` for an integer (or `bool`) type: below the range every value is
    /// above it; above it none is, as for the largest value.
    fn push_int(&mut self, t: i128) {
        let (lo, hi) = self.dtype.value_range();
        if t < lo {
            self.bits.push(0);
            self.always.push(true);
        } else {
            let v = t.min(hi);
            let w = self.dtype.size() * 8;
            let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
            self.bits.push((v as i64 as u64) & mask);
            self.always.push(false);
        }
    }

    /// The inputs' data type.
    pub fn data_type(&self) -> DataType {
        self.dtype
    }

    /// How many: 1, or one per element of the last axis.
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    /// Whether there are none (which no call accepts).
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// The values' bits, zero-extended, and whether every value is above each.
    pub(crate) fn parts(&self) -> (&[u64], &[bool]) {
        (&self.bits, &self.always)
    }

    /// The bytes (`ceil(d / 8)` of them) to OR into each row for thresholds below the range, in
    /// `order`; `None` when there are none.
    pub(crate) fn always_mask(&self, d: usize, order: BitOrder) -> Option<Vec<u8>> {
        if !self.always.iter().any(|&a| a) {
            return None;
        }
        let mut m = vec![0u8; d.div_ceil(8)];
        for i in 0..d {
            let a = self.always[if self.always.len() == 1 { 0 } else { i }];
            if a {
                m[i / 8] |= order.mask(i);
            }
        }
        Some(m)
    }
}

/// What a `binarize` call's shapes come to: rows, elements per row, bytes per row, the output's
/// shape. Checks the thresholds against the input.
pub(crate) struct Shape {
    pub(crate) rows: usize,
    pub(crate) d: usize,
    pub(crate) nb: usize,
    pub(crate) out: Vec<usize>,
}

/// Checks `x` given as bytes of `desc` (valid, long enough) and `t`, and works out the output's
/// shape: what the CPU's and the GPU's `binarize_bytes` check first.
pub(crate) fn bytes_shape(desc: &TensorDesc, bytes: &[u8], t: &Thresholds) -> Result<Shape> {
    desc.validate_as("x", false)?;
    let s = shape_of(desc, t)?;
    let need = desc.extent_bytes_of("x")?;
    if bytes.len() < need {
        return Err(Error::BufferTooSmall {
            tensor: "x".to_owned(),
            required: need,
            len: bytes.len(),
        });
    }
    Ok(s)
}

/// Checks `x` and `t` and works out the output's shape.
pub(crate) fn shape_of(x: &TensorDesc, t: &Thresholds) -> Result<Shape> {
    let bad = |reason: String| Error::BadArgument {
        op: BINARIZE,
        reason,
    };
    let sizes = x.sizes();
    let Some(&d) = sizes.last() else {
        return Err(bad(
            "x is a scalar; binarize packs the last axis of a tensor of at least one dimension"
                .to_owned(),
        ));
    };
    if t.dtype != x.data_type() {
        return Err(bad(format!(
            "the thresholds are {}, x is {}; thresholds take x's data type",
            t.dtype,
            x.data_type()
        )));
    }
    if t.len() != 1 && t.len() != d {
        return Err(bad(format!(
            "{} thresholds for a last axis of {d} elements; give one threshold, or one per element of the last axis",
            t.len()
        )));
    }
    let rows = sizes[..sizes.len() - 1].iter().product();
    let nb = d.div_ceil(8);
    let mut out = sizes.to_vec();
    *out.last_mut().unwrap_or(&mut 0) = nb;
    Ok(Shape { rows, d, nb, out })
}

/// The elements of `x` (described by `desc` from byte 0 of `bytes`) packed in C order: `bytes`
/// itself when they already are.
pub(crate) fn packed_bytes<'a>(
    desc: &TensorDesc,
    bytes: &'a [u8],
) -> Result<std::borrow::Cow<'a, [u8]>> {
    let es = desc.data_type().size();
    let n = desc.element_count().unwrap_or(0);
    let sizes = desc.sizes();
    let strides = desc.effective_strides();
    let mut expect = 1usize;
    let packed = sizes.iter().zip(strides.iter()).rev().all(|(&s, &st)| {
        let ok = s <= 1 || st == expect;
        expect = expect.saturating_mul(s);
        ok
    });
    if packed {
        return Ok(std::borrow::Cow::Borrowed(&bytes[..n * es]));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(n * es)
        .map_err(|_| Error::AllocationFailed {
            tensor: "a packed copy of x".to_owned(),
            bytes: n * es,
        })?;
    let dims: Vec<(usize, usize)> = sizes.iter().copied().zip(strides.iter().copied()).collect();
    cpu::each_offset(&dims, 0, |at| {
        out.extend_from_slice(&bytes[at * es..at * es + es])
    });
    Ok(std::borrow::Cow::Owned(out))
}

/// `binarize` on byte buffers, for callers that know the type only at run time: `x` described by
/// `desc` from byte 0 of `bytes`, thresholds of its type, into `out`, the packed output
/// (`x`'s shape with the last axis `ceil(D / 8)`, C order) of exactly that many bytes.
pub fn binarize_bytes(
    desc: &TensorDesc,
    bytes: &[u8],
    thresholds: &Thresholds,
    bitorder: BitOrder,
    out: &mut [u8],
) -> Result<()> {
    let s = bytes_shape(desc, bytes, thresholds)?;
    if out.len() != s.rows * s.nb {
        return Err(Error::BadArgument {
            op: BINARIZE,
            reason: format!(
                "the output holds {} bytes; shape {} needs {}",
                out.len(),
                ShapeText(s.out.clone()),
                s.rows * s.nb
            ),
        });
    }
    let x = packed_bytes(desc, bytes)?;
    let (cuts, _) = thresholds.parts();
    let or = thresholds.always_mask(s.d, bitorder);
    cpu::binarize::binarize(
        desc.data_type(),
        &x,
        s.d,
        cuts,
        or.as_deref(),
        bitorder == BitOrder::Big,
        out,
    );
    Ok(())
}

/// `np.packbits(x > threshold, axis=-1, bitorder=...)`: `x`'s shape with the last axis packed to
/// `ceil(D / 8)` bytes, bit `i` of a row at bit `7 - i % 8` of byte `i / 8` ([`BitOrder::Big`])
/// or bit `i % 8` ([`BitOrder::Little`]), padding bits zero. A NaN is never above its threshold.
///
/// ```
/// use tensorbits_runtime::{BitOrder, Tensor, binarize};
/// let x = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, f32::NAN, 0.0, 3.0, -0.5, 1.0, 9.0], &[1, 9])?;
/// let codes = binarize(&x, 0.0, BitOrder::Big)?;
/// assert_eq!(codes.shape(), &[1, 2]);
/// assert_eq!(codes.data(), &[0b1010_0101, 0b1000_0000]);
/// # Ok::<(), tensorbits_runtime::Error>(())
/// ```
pub fn binarize<'a, 'b, T: Element>(
    x: impl Into<TensorView<'a, T>>,
    threshold: impl Into<Threshold<'b, T>>,
    bitorder: BitOrder,
) -> Result<Tensor<u8>> {
    let x = x.into();
    let t = Thresholds::typed(threshold.into());
    let s = shape_of(&x.desc(), &t)?;
    let mut out = crate::alloc::zeroed_vec::<u8>(s.rows * s.nb, "the codes")?;
    run_typed(&x, &t, bitorder, &mut out, &s);
    Tensor::from_vec(out, &s.out)
}

/// [`binarize`] into `out`, a packed (C-order) tensor of `x`'s shape with the last axis
/// `ceil(D / 8)`.
pub fn binarize_into<'a, 'b, T: Element>(
    x: impl Into<TensorView<'a, T>>,
    threshold: impl Into<Threshold<'b, T>>,
    bitorder: BitOrder,
    mut out: TensorViewMut<'_, u8>,
) -> Result<()> {
    let x = x.into();
    let t = Thresholds::typed(threshold.into());
    let s = shape_of(&x.desc(), &t)?;
    if out.shape() != s.out.as_slice() {
        return Err(Error::OutputShape {
            op: BINARIZE,
            expected: ShapeText(s.out),
            got: ShapeText(out.shape().to_vec()),
        });
    }
    if !out.is_packed() {
        return Err(Error::BadArgument {
            op: BINARIZE,
            reason: "the output must be packed (C order); binarize writes whole rows of bytes"
                .to_owned(),
        });
    }
    let n = s.rows * s.nb;
    run_typed(&x, &t, bitorder, &mut out.data_mut()[..n], &s);
    Ok(())
}

fn run_typed<T: Element>(
    x: &TensorView<'_, T>,
    t: &Thresholds,
    bitorder: BitOrder,
    out: &mut [u8],
    s: &Shape,
) {
    let packed;
    let data: &[T] = if x.is_packed() {
        x.data()
    } else {
        packed = x.to_tensor();
        packed.data()
    };
    let n = s.rows * s.d;
    let bytes: &[u8] = match T::DATA_TYPE {
        // `bool` elements are bytes of 0 or 1.
        DataType::Bool => bool_bytes(&data[..n]),
        _ => bytemuck::cast_slice(T::as_words(&data[..n])),
    };
    let (cuts, _) = t.parts();
    cpu::binarize::binarize(
        T::DATA_TYPE,
        bytes,
        s.d,
        cuts,
        None,
        bitorder == BitOrder::Big,
        out,
    );
}

/// A `bool` slice's bytes (each 0 or 1).
fn bool_bytes<T: Element>(data: &[T]) -> &[u8] {
    bytemuck::cast_slice(T::as_words(data))
}

/// The largest integer `c` whose float64 rounding is at or below `t` (not NaN), so that for any
/// integer `x`, `(x as f64) > t` exactly when `x > c`. Rounding is monotone: below `F =
/// floor(t)`'s successor `F'`, the integers from `F` up to the midpoint round to `F` (the
/// midpoint itself to the even one of the two). Past i128's range, saturating is exact.
fn int_at_or_below(t: f64) -> i128 {
    let f = t.floor();
    let c = f as i128;
    if !f.is_finite() || f.abs() >= 2f64.powi(126) {
        return c;
    }
    let gap = (f.next_up() - f) as i128;
    if gap <= 1 {
        return c;
    }
    let mid = c + gap / 2;
    if mid as f64 <= f { mid } else { mid - 1 }
}
