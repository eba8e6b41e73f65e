//! Typed tensors: owned ([`Tensor`]) and borrowed strided views ([`TensorView`], [`TensorViewMut`]).

use crate::error::{Error, Result, ShapeText};
use crate::validate::desc::name_error;
use crate::{Dims, Element, TensorDesc};
use std::fmt;

/// An owned, packed (C-order) tensor.
// The shape first, in C layout: a tensor returned by value is written with the shape's 16-byte
// pieces at the offsets where the caller's copy reads it back, so those loads forward from the
// stores (with the vector first, every 16-byte piece of the shape straddled two stores).
#[derive(Clone, PartialEq)]
#[repr(C)]
pub struct Tensor<T> {
    shape: Dims,
    data: Vec<T>,
}

impl<T: Element> Tensor<T> {
    /// A tensor of `shape` holding `data` in C order. Fails when the lengths differ or the rank is
    /// over eight.
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Result<Tensor<T>> {
        let dims = Dims::new(shape).ok_or_else(|| Error::RankTooLarge {
            tensor: "tensor".to_owned(),
            rank: shape.len(),
        })?;
        let expected = dims.product().ok_or_else(|| Error::SizeOverflow {
            tensor: "tensor".to_owned(),
            sizes: ShapeText(shape.to_vec()),
        })?;
        if data.len() != expected {
            return Err(Error::DataLength {
                tensor: "tensor".to_owned(),
                len: data.len(),
                shape: ShapeText(shape.to_vec()),
                expected,
            });
        }
        Ok(Tensor { data, shape: dims })
    }

    /// A tensor whose shape and length the validator already checked.
    #[inline]
    pub(crate) fn from_checked(data: Vec<T>, shape: Dims) -> Tensor<T> {
        Tensor { data, shape }
    }

    /// A rank-0 tensor.
    pub fn scalar(value: T) -> Tensor<T> {
        Tensor {
            data: vec![value],
            shape: Dims::default(),
        }
    }

    /// A tensor of `shape` filled with zeros (`false` for `bool`).
    pub fn zeros(shape: &[usize]) -> Result<Tensor<T>> {
        let n = Dims::new(shape)
            .ok_or_else(|| Error::RankTooLarge {
                tensor: "tensor".to_owned(),
                rank: shape.len(),
            })?
            .product()
            .ok_or_else(|| Error::SizeOverflow {
                tensor: "tensor".to_owned(),
                sizes: ShapeText(shape.to_vec()),
            })?;
        Tensor::from_vec(crate::alloc::zeroed_vec(n, "tensor")?, shape)
    }

    /// The sizes.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements in C order.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// The elements in C order, mutably.
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// Gives the elements back.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }

    /// A borrowed view.
    #[inline]
    pub fn view(&self) -> TensorView<'_, T> {
        TensorView {
            data: &self.data,
            layout: Layout::Tensor { sizes: &self.shape },
        }
    }

    /// A mutable borrowed view.
    #[inline]
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T> {
        TensorViewMut {
            data: &mut self.data,
            layout: Layout::Tensor { sizes: &self.shape },
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor(shape={:?}, ", &*self.shape)?;
        nested(f, &self.data, &self.shape)?;
        f.write_str(")")
    }
}

/// Prints nested lists, numpy style: `[[255, 127], [213, 0]]`.
impl<T: fmt::Debug> fmt::Display for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        nested(f, &self.data, &self.shape)
    }
}

fn nested<T: fmt::Debug>(f: &mut fmt::Formatter<'_>, data: &[T], shape: &[usize]) -> fmt::Result {
    match shape.split_first() {
        None => match data.first() {
            Some(v) => write!(f, "{v:?}"),
            None => f.write_str("[]"),
        },
        Some((&n, rest)) => {
            let step = rest.iter().product::<usize>();
            f.write_str("[")?;
            for i in 0..n {
                if i > 0 {
                    f.write_str(", ")?;
                }
                nested(f, data.get(i * step..(i + 1) * step).unwrap_or(&[]), rest)?;
            }
            f.write_str("]")
        }
    }
}

/// Checks that a view's elements lie inside its slice and returns the description.
fn view_desc<T: Element>(
    len: usize,
    sizes: &[usize],
    strides: Option<&[usize]>,
    out: bool,
) -> Result<TensorDesc> {
    let name = if out { "OutputTensor" } else { "tensor" };
    let mut d = TensorDesc::new(T::DATA_TYPE, sizes).map_err(|e| name_error(e, name))?;
    if let Some(s) = strides {
        d = d.with_strides(s).map_err(|e| name_error(e, name))?;
    }
    d.validate(name, out)?;
    let extent = d.extent_bytes(name)?;
    let have = len * size_of::<T>();
    if extent > have {
        return Err(Error::BufferTooSmall {
            tensor: name.to_owned(),
            len: have,
            required: extent,
        });
    }
    Ok(d)
}

/// A view's sizes and strides.
#[derive(Clone, Copy)]
enum Layout<'a> {
    /// Borrowed from a [`Tensor`], which is packed: a view of a tensor is one pointer to its shape,
    /// which small calls notice. Its strides are computed when asked for, so that a `Tensor` (moved
    /// on every return) holds a `Vec` and one shape.
    Tensor { sizes: &'a Dims },
    /// The view's own, with whether they are packed in C order, decided once at construction.
    Own {
        sizes: Dims,
        strides: Dims,
        packed: bool,
    },
}

impl Layout<'_> {
    fn new(sizes: Dims, strides: Dims) -> Layout<'static> {
        Layout::Own {
            sizes,
            strides,
            packed: is_packed(&sizes, &strides),
        }
    }

    #[inline]
    fn sizes(&self) -> &Dims {
        match self {
            Layout::Tensor { sizes } => sizes,
            Layout::Own { sizes, .. } => sizes,
        }
    }

    #[inline]
    fn strides(&self) -> Dims {
        match self {
            Layout::Tensor { sizes } => sizes.packed_strides_saturating(),
            Layout::Own { strides, .. } => *strides,
        }
    }

    /// The description of a view of `T` with this layout. Packed views are described without
    /// strides, which keeps validation on its fast path.
    #[inline]
    fn desc<T: Element>(&self) -> TensorDesc {
        let strides = (!self.packed()).then(|| self.strides());
        TensorDesc::from_parts(T::DATA_TYPE, *self.sizes(), strides)
    }

    /// A view's `Debug`: shape, strides and the slice it covers.
    fn debug<T: fmt::Debug>(
        &self,
        f: &mut fmt::Formatter<'_>,
        name: &str,
        data: &[T],
    ) -> fmt::Result {
        f.debug_struct(name)
            .field("shape", &&**self.sizes())
            .field("strides", &&*self.strides())
            .field("data", &data)
            .finish()
    }

    #[inline]
    fn packed(&self) -> bool {
        match self {
            Layout::Tensor { .. } => true,
            Layout::Own { packed, .. } => *packed,
        }
    }
}

/// A borrowed tensor with element strides over a slice (0 strides broadcast).
#[derive(Clone, Copy)]
pub struct TensorView<'a, T> {
    data: &'a [T],
    layout: Layout<'a>,
}

impl<T: fmt::Debug> fmt::Debug for TensorView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.layout.debug(f, "TensorView", self.data)
    }
}

impl<'a, T: Element> TensorView<'a, T> {
    /// A packed view of `sizes` over `data` (which may be longer).
    pub fn new(data: &'a [T], sizes: &[usize]) -> Result<Self> {
        let d = view_desc::<T>(data.len(), sizes, None, false)?;
        Ok(TensorView {
            data,
            layout: Layout::new(d.dims(), d.effective_strides()),
        })
    }

    /// A strided view: element `[i0, i1, ...]` is `data[i0*strides[0] + i1*strides[1] + ...]`.
    pub fn with_strides(data: &'a [T], sizes: &[usize], strides: &[usize]) -> Result<Self> {
        let d = view_desc::<T>(data.len(), sizes, Some(strides), false)?;
        Ok(TensorView {
            data,
            layout: Layout::new(d.dims(), d.effective_strides()),
        })
    }

    /// The sizes.
    pub fn shape(&self) -> &[usize] {
        self.layout.sizes()
    }

    /// The element strides (C-order ones for a view of a [`Tensor`]).
    pub fn strides(&self) -> Dims {
        self.layout.strides()
    }

    /// The underlying slice.
    pub fn data(&self) -> &'a [T] {
        self.data
    }

    /// The description of this view.
    pub fn desc(&self) -> TensorDesc {
        self.layout.desc::<T>()
    }

    /// Whether the view is packed in C order.
    pub fn is_packed(&self) -> bool {
        self.layout.packed()
    }

    pub(crate) fn dims(&self) -> &Dims {
        self.layout.sizes()
    }

    /// Copies the elements into an owned packed tensor.
    pub fn to_tensor(&self) -> Tensor<T> {
        let sizes = self.layout.sizes();
        let mut out = Vec::with_capacity(sizes.product().unwrap_or(0));
        gather(self.data, sizes, &self.layout.strides(), 0, 0, &mut out);
        Tensor {
            data: out,
            shape: *sizes,
        }
    }
}

fn gather<T: Copy>(
    data: &[T],
    sizes: &[usize],
    strides: &[usize],
    d: usize,
    off: usize,
    out: &mut Vec<T>,
) {
    if d == sizes.len() {
        out.push(data[off]);
        return;
    }
    for i in 0..sizes[d] {
        gather(data, sizes, strides, d + 1, off + i * strides[d], out);
    }
}

/// Whether `strides` are the C-order strides of `sizes` (size-1 dimensions may have any stride).
fn is_packed(sizes: &Dims, strides: &Dims) -> bool {
    let mut expect = 1usize;
    for d in (0..sizes.len()).rev() {
        if sizes[d] != 1 && strides[d] != expect {
            return false;
        }
        expect = expect.saturating_mul(sizes[d]);
    }
    true
}

impl<'a, T: Element> From<&'a Tensor<T>> for TensorView<'a, T> {
    fn from(t: &'a Tensor<T>) -> Self {
        t.view()
    }
}

impl<'a, T: Element> From<&TensorView<'a, T>> for TensorView<'a, T> {
    fn from(t: &TensorView<'a, T>) -> Self {
        *t
    }
}

/// What an input of element type `T` may be: a [`Tensor<T>`] by reference, or a [`TensorView<T>`]
/// (or a reference to one). The typed methods of `#[bitwise_op]` ops take their inputs through it,
/// so that an input of another element type is one sentence: the inputs of a call share one element
/// type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an input of element type `{T}`",
    label = "expected a tensor of `{T}` here",
    note = "the inputs of one call share one element type (`{T}` here, from another input or the \
            call's types): convert one input (for example `Tensor::from_vec(t.data().iter().map(|&v| \
            v as {T}).collect(), t.shape())`), or call the op once per type"
)]
pub trait IntoView<'a, T> {
    /// The input as a view.
    fn into_view(self) -> TensorView<'a, T>;
}

impl<'a, T: Element> IntoView<'a, T> for &'a Tensor<T> {
    #[inline]
    fn into_view(self) -> TensorView<'a, T> {
        self.view()
    }
}

impl<'a, T: Element> IntoView<'a, T> for TensorView<'a, T> {
    #[inline]
    fn into_view(self) -> TensorView<'a, T> {
        self
    }
}

impl<'a, T: Element> IntoView<'a, T> for &TensorView<'a, T> {
    #[inline]
    fn into_view(self) -> TensorView<'a, T> {
        *self
    }
}

/// A mutable borrowed tensor with element strides: the destination of `run_into` and in-place calls.
/// Strides must be non-zero and no two elements may share memory.
pub struct TensorViewMut<'a, T> {
    data: &'a mut [T],
    layout: Layout<'a>,
}

impl<T: fmt::Debug> fmt::Debug for TensorViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.layout.debug(f, "TensorViewMut", self.data)
    }
}

impl<'a, T: Element> TensorViewMut<'a, T> {
    /// A packed view of `sizes` over `data` (which may be longer).
    pub fn new(data: &'a mut [T], sizes: &[usize]) -> Result<Self> {
        let d = view_desc::<T>(data.len(), sizes, None, true)?;
        Ok(TensorViewMut {
            data,
            layout: Layout::new(d.dims(), d.effective_strides()),
        })
    }

    /// A strided view (strides non-zero, elements distinct).
    pub fn with_strides(data: &'a mut [T], sizes: &[usize], strides: &[usize]) -> Result<Self> {
        let d = view_desc::<T>(data.len(), sizes, Some(strides), true)?;
        Ok(TensorViewMut {
            data,
            layout: Layout::new(d.dims(), d.effective_strides()),
        })
    }

    /// The sizes.
    pub fn shape(&self) -> &[usize] {
        self.layout.sizes()
    }

    /// The element strides (C-order ones for a view of a [`Tensor`]).
    pub fn strides(&self) -> Dims {
        self.layout.strides()
    }

    /// The description of this view.
    pub fn desc(&self) -> TensorDesc {
        self.layout.desc::<T>()
    }

    /// The view's elements as an immutable view.
    pub fn as_view(&self) -> TensorView<'_, T> {
        TensorView {
            data: self.data,
            layout: self.layout,
        }
    }

    pub(crate) fn data_mut(&mut self) -> &mut [T] {
        self.data
    }

    pub(crate) fn dims(&self) -> &Dims {
        self.layout.sizes()
    }

    pub(crate) fn is_packed(&self) -> bool {
        self.layout.packed()
    }
}

impl<'a, T: Element> From<&'a mut Tensor<T>> for TensorViewMut<'a, T> {
    fn from(t: &'a mut Tensor<T>) -> Self {
        t.view_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_report_their_strides_and_description() {
        let mut t = Tensor::from_vec((0..24u32).collect(), &[2, 3, 4]).unwrap();
        // A view of a tensor: C-order strides, computed on request, and a packed description.
        assert_eq!(&*t.view().strides(), &[12, 4, 1]);
        assert_eq!(&*t.view_mut().strides(), &[12, 4, 1]);
        assert_eq!(t.view().desc().strides(), None);
        assert!(t.view().is_packed());
        // A transposed view keeps its own strides and describes them.
        let data: Vec<u32> = (0..6).collect();
        let v = TensorView::with_strides(&data, &[3, 2], &[1, 3]).unwrap();
        assert_eq!(&*v.strides(), &[1, 3]);
        assert_eq!(v.desc().strides(), Some(&[1usize, 3][..]));
        assert!(!v.is_packed());
        assert_eq!(v.to_tensor().data(), &[0, 3, 1, 4, 2, 5]);
        // Size-1 dimensions may have any stride and still be packed.
        let w = TensorView::with_strides(&data, &[1, 6], &[99, 1]).unwrap();
        assert!(w.is_packed());
        assert_eq!(w.desc().strides(), None);
        // A rank-0 tensor has no strides.
        assert!(Tensor::scalar(7u8).view().strides().is_empty());
    }
}
