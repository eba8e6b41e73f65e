//! numpy arrays as the library's tensor descriptions and byte slices, read where they lie.
//!
//! Every array is read through its data pointer, sizes and byte strides. A stride the library's
//! descriptions cannot express after the call's axes are reversed ([`tensorbits::orient`]) —
//! still negative, not a multiple of the element size, or an unaligned base — makes that input a
//! packed copy, and that output a packed buffer scattered back after the kernel. An input whose
//! memory overlaps the output is copied first, unless it is exactly the output and the op runs in
//! place on it.

use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use tensorbits::{DataType, Dims, OpInfo, Orientation, SignedLayout, TensorDesc};

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};

use crate::py_err;

/// The data type of a numpy dtype name (`uint8`, `float16`, `bool`, ...), or of the library's
/// own spellings (`u8`, `UINT8`).
pub(crate) fn dtype_from_numpy_name(name: &str) -> Option<DataType> {
    DataType::from_name(name)
}

/// A new C-ordered numpy array of `shape` and `dtype`, uninitialized (every element is written).
pub(crate) fn empty<'py>(
    py: Python<'py>,
    shape: &[usize],
    dtype: DataType,
) -> PyResult<Bound<'py, PyAny>> {
    check_new(shape, &[dtype], "OutputTensor")?;
    static EMPTY: pyo3::sync::PyOnceLock<pyo3::Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    EMPTY
        .import(py, "numpy", "empty")?
        .call1((shape.to_vec(), dtype.numpy_name()))
}

/// Refuses new outputs of `shape`, one of each of `dtypes`, that this process could not hold
/// together with `MemoryError`, before numpy allocates them: numpy's allocator overcommits (its
/// pages are not resident until written, so outputs made together are checked together), and in a
/// container the out-of-memory killer would end the process on the first writes past its limit.
pub(crate) fn check_new(shape: &[usize], dtypes: &[DataType], name: &str) -> PyResult<()> {
    let item: usize = dtypes.iter().map(|d| d.size()).sum();
    let bytes = shape
        .iter()
        .try_fold(item, |n, &d| n.checked_mul(d))
        .unwrap_or(usize::MAX);
    tensorbits::check_allocation(bytes, name).map_err(py_err)
}

/// A numpy array's data pointer, type and layout (byte strides, signed).
#[derive(Clone, Debug)]
pub(crate) struct Arr {
    addr: usize,
    pub(crate) dtype: DataType,
    item: usize,
    shape: Vec<usize>,
    strides: Vec<isize>,
}

const NPY_ARRAY_WRITEABLE: i32 = 0x0400;

impl Arr {
    /// Reads `obj`, which must be a numpy array of one of the library's types; an output must be
    /// writable.
    pub(crate) fn read(obj: &Bound<'_, PyAny>, name: &str, output: bool) -> PyResult<Arr> {
        let a = obj.cast::<PyUntypedArray>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{name}: expected a numpy array or an object with __dlpack__, got {}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "an unknown type".to_owned(), |n| n.to_string())
            ))
        })?;
        let d = a.dtype();
        let item = d.itemsize();
        let kind = d.kind();
        let dtype = DataType::from_numpy_kind(char::from(kind), item);
        let dtype = match dtype {
            Some(t) if d.is_native_byteorder() != Some(false) && !d.has_fields() => t,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "{name}: tensorbits has no data type for numpy's {}; it has {}",
                    d.str()
                        .map_or_else(|_| "dtype".to_owned(), |s| s.to_string()),
                    DataType::all_numpy_names(", ")
                )));
            }
        };
        let ptr = a.as_array_ptr();
        // SAFETY: `ptr` is the live array object `a` borrows; its `data` and `flags` fields are
        // plain reads of the struct numpy keeps for as long as the object lives.
        let (addr, flags) = unsafe { ((*ptr).fields.data as usize, (*ptr).fields.flags) };
        if output && flags & NPY_ARRAY_WRITEABLE == 0 {
            return Err(PyValueError::new_err(format!(
                "{name}: the output array is read-only"
            )));
        }
        Ok(Arr {
            addr,
            dtype,
            item,
            shape: a.shape().to_vec(),
            strides: a.strides().to_vec(),
        })
    }

    /// The sizes.
    pub(crate) fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements of a C-contiguous, aligned array as bytes, where they lie; `None` for any
    /// other layout. The caller keeps the array alive, and unwritten, while it reads them.
    pub(crate) fn contiguous_bytes(&self) -> Option<&[u8]> {
        let n = self.count();
        if n == 0 {
            return Some(&[]);
        }
        let packed = Dims::new(&self.shape)
            .and_then(|d| d.packed_strides())
            .is_some_and(|p| {
                self.shape
                    .iter()
                    .zip(p.iter().zip(&self.strides))
                    .all(|(&size, (&e, &s))| size <= 1 || s == (e * self.item) as isize)
            });
        if !packed || !self.addr.is_multiple_of(self.item) {
            return None;
        }
        // SAFETY: a C-contiguous array's `n` elements are the `n * item` bytes from its data
        // pointer, which numpy keeps alive while the array object lives (the caller holds it).
        Some(unsafe { std::slice::from_raw_parts(self.addr as *const u8, n * self.item) })
    }

    /// Like [`contiguous_bytes`](Self::contiguous_bytes), writable, for an output array.
    #[allow(
        clippy::mut_from_ref,
        reason = "the bytes are numpy's, not this description's"
    )]
    pub(crate) fn contiguous_bytes_mut(&self) -> Option<&mut [u8]> {
        let n = self.contiguous_bytes()?.len();
        if n == 0 {
            return Some(&mut []);
        }
        // SAFETY: as `contiguous_bytes`; the array was read as a writable output, and nothing
        // else reads or writes its memory while the caller writes it.
        Some(unsafe { std::slice::from_raw_parts_mut(self.addr as *mut u8, n) })
    }

    /// The elements in C order: where they lie when the array is C-contiguous, aligned and clear
    /// of `avoid` (an output about to be written), else a packed copy aligned for any element
    /// type. No elements give an empty, aligned slice.
    pub(crate) fn packed(&self, avoid: Option<&Arr>) -> PyResult<Packed<'_>> {
        if self.count() > 0
            && !avoid.is_some_and(|o| self.overlaps(o))
            && let Some(b) = self.contiguous_bytes()
        {
            return Ok(Packed::Borrowed(b));
        }
        let words = if self.count() == 0 {
            Vec::new()
        } else {
            self.gather()?.1
        };
        Ok(Packed::Owned(words, self.count() * self.item))
    }

    /// Refuses an output two of whose elements share memory (a stride of 0, or strides too small
    /// for the sizes, in bytes, whatever their sign): one message for both, naming the op. The
    /// test is the usual sufficient one, as the library's own check: sorted by stride, each
    /// stride passes the furthest byte the smaller ones reach.
    pub(crate) fn check_output(&self, op: &str) -> PyResult<()> {
        if self.count() == 0 {
            return Ok(());
        }
        let mut order: Vec<usize> = (0..self.shape.len())
            .filter(|&i| self.shape[i] > 1)
            .collect();
        order.sort_by_key(|&i| self.strides[i].unsigned_abs());
        let mut reach = self.item; // bytes covered from the first element's start
        for &i in &order {
            let s = self.strides[i].unsigned_abs();
            if s < reach {
                return Err(PyValueError::new_err(format!(
                    "{op}: out has overlapping elements: its strides {:?} (bytes) for shape {:?} \
                     give two elements the same memory along axis {i}; write to an array whose \
                     elements are apart (np.empty or a copy of out)",
                    self.strides, self.shape
                )));
            }
            reach = reach.saturating_add((self.shape[i] - 1).saturating_mul(s));
        }
        Ok(())
    }

    /// Whether an axis with more than one element walks backwards.
    pub(crate) fn reversed(&self) -> bool {
        self.shape
            .iter()
            .zip(&self.strides)
            .any(|(&n, &s)| n > 1 && s < 0)
    }

    /// Sizes and signed strides, for [`tensorbits::orient`] (only the strides' signs matter).
    pub(crate) fn layout(&self) -> SignedLayout<'_> {
        SignedLayout {
            sizes: &self.shape,
            strides: &self.strides,
        }
    }

    /// A packed description of the same sizes and type, to validate shapes with.
    pub(crate) fn shape_desc(&self) -> PyResult<TensorDesc> {
        TensorDesc::new(self.dtype, &self.shape).map_err(py_err)
    }

    /// The description with element strides `s`, left packed (no explicit strides) when they are
    /// the packed ones, which keeps the executor's packed fast paths.
    fn desc_with(&self, s: &[usize]) -> PyResult<TensorDesc> {
        let d = self.shape_desc()?;
        let mut packed = 1usize;
        let is_packed = self.shape.iter().zip(s).rev().all(|(&n, &st)| {
            let ok = n <= 1 || st == packed;
            packed = packed.saturating_mul(n);
            ok
        });
        if is_packed {
            Ok(d)
        } else {
            // The total size is what the elements span (rounded to 4 bytes), not the packed
            // size: a broadcast (stride 0) input is as small in a GPU buffer as in memory.
            let d = d.with_strides(s).map_err(py_err)?;
            let span = d.required_bytes("tensor").map_err(py_err)?;
            Ok(d.with_total_bytes(span))
        }
    }

    fn count(&self) -> usize {
        self.shape.iter().product()
    }

    /// The same elements with the flagged axes reversed.
    pub(crate) fn flipped(&self, flags: &[bool]) -> Arr {
        let mut a = self.clone();
        for (j, &f) in flags.iter().enumerate() {
            if f && j < a.shape.len() && a.shape[j] > 0 {
                let step = a.strides[j].wrapping_mul(a.shape[j] as isize - 1);
                a.addr = a.addr.wrapping_add_signed(step);
                a.strides[j] = -a.strides[j];
            }
        }
        a
    }

    /// Strides in elements, size-1 axes given `unit` (their stride never matters), or `None`
    /// when a stride is negative or not a multiple of the element size, or the base unaligned.
    fn element_strides(&self, unit: usize) -> Option<Vec<usize>> {
        if self.count() == 0 {
            // No elements: numpy gives such arrays strides of 0; packed ones describe them.
            return Dims::new(&self.shape)
                .and_then(|d| d.packed_strides())
                .map(|d| d.to_vec());
        }
        if !self.addr.is_multiple_of(self.item) {
            return None;
        }
        self.shape
            .iter()
            .zip(&self.strides)
            .map(|(&n, &s)| match n {
                0 | 1 => Some(unit),
                _ if s >= 0 && (s as usize).is_multiple_of(self.item) => {
                    Some(s as usize / self.item)
                }
                _ => None,
            })
            .collect()
    }

    /// The address range of the elements, `[lo, hi)`; empty for no elements.
    fn span(&self) -> (usize, usize) {
        if self.count() == 0 {
            return (self.addr, self.addr);
        }
        let (mut lo, mut hi) = (self.addr, self.addr);
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let step = s.wrapping_mul(n as isize - 1);
            if step < 0 {
                lo = lo.wrapping_add_signed(step);
            } else {
                hi = hi.wrapping_add_signed(step);
            }
        }
        (lo, hi + self.item)
    }

    /// Whether `o` is this array, element for element, in a layout a description expresses (so
    /// that an op may run in place on it). Two layouts that no description expresses (unaligned,
    /// or with a byte stride that is not a whole number of elements) are never the same: the
    /// output of such a call is a temporary, which an input cannot stand for.
    fn same_as(&self, o: &Arr) -> bool {
        let mine = self.element_strides(0);
        self.addr == o.addr
            && self.dtype == o.dtype
            && self.shape == o.shape
            && mine.is_some()
            && mine == o.element_strides(0)
    }

    fn overlaps(&self, o: &Arr) -> bool {
        let (a, b) = (self.span(), o.span());
        a.0 < b.1 && b.0 < a.1
    }

    /// Calls `f(byte offset from addr)` for every element in C order.
    fn for_each_offset(&self, mut f: impl FnMut(isize)) {
        if self.count() == 0 {
            return;
        }
        let rank = self.shape.len();
        let mut idx = vec![0usize; rank];
        let mut off = 0isize;
        loop {
            f(off);
            let mut d = rank;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                off += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                off -= self.strides[d] * self.shape[d] as isize;
                idx[d] = 0;
            }
        }
    }

    /// A packed copy of the elements, in a buffer aligned for any element type.
    fn gather(&self) -> PyResult<(TensorDesc, Vec<u64>)> {
        let desc = self.shape_desc()?;
        let bytes = self.count() * self.item;
        let mut words = Vec::new();
        words
            .try_reserve_exact(bytes.div_ceil(8))
            .map_err(|_| PyMemoryError::new_err(format!("cannot allocate {bytes} bytes")))?;
        words.resize(bytes.div_ceil(8), 0);
        let dst: &mut [u8] = bytemuck_bytes_mut(&mut words);
        let mut at = 0;
        let item = self.item;
        let base = self.addr;
        self.for_each_offset(|off| {
            // SAFETY: every offset walked is an element of the array numpy describes, alive for
            // the duration of this call; `dst` is a separate allocation of `count * item` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    base.wrapping_add_signed(off) as *const u8,
                    dst[at..at + item].as_mut_ptr(),
                    item,
                );
            }
            at += item;
        });
        Ok((desc, words))
    }

    /// The output as the kernel will write it: the array's own memory when the description can
    /// express its layout, else a packed buffer scattered back by [`TargetGuard::finish`].
    pub(crate) fn target(&self) -> PyResult<Target> {
        // A self-overlapping output (stride 0 on a writable array) keeps its strides: the
        // validator rejects it through the description.
        let (desc, temp) = match self.element_strides(1) {
            Some(s) => (self.desc_with(&s)?, None),
            None => {
                let desc = self.shape_desc()?;
                let n = desc.total_bytes().div_ceil(8);
                tensorbits::check_allocation(n * 8, "a packed copy of out").map_err(py_err)?;
                let mut v = Vec::new();
                v.try_reserve_exact(n).map_err(|_| {
                    PyMemoryError::new_err(format!("cannot allocate {} bytes", n * 8))
                })?;
                v.resize(n, 0);
                (desc, Some(v))
            }
        };
        Ok(Target {
            arr: self.clone(),
            desc,
            temp: std::sync::Mutex::new(temp),
        })
    }
}

fn bytemuck_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u8 has no alignment or validity requirements, and the length covers exactly the
    // words' bytes.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) }
}

fn bytes_of(words: &[u64], len: usize) -> &[u8] {
    // SAFETY: as `bytemuck_bytes_mut`; `len` is at most the words' bytes.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len.min(words.len() * 8)) }
}

/// An input's elements in C order, borrowed or copied ([`Arr::packed`]).
pub(crate) enum Packed<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u64>, usize),
}

impl Packed<'_> {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Packed::Borrowed(b) => b,
            Packed::Owned(v, len) => bytes_of(v, *len),
        }
    }
}

/// An output, written in place or through a packed buffer.
pub(crate) struct Target {
    arr: Arr,
    pub(crate) desc: TensorDesc,
    temp: std::sync::Mutex<Option<Vec<u64>>>,
}

impl Target {
    pub(crate) fn lock(&self) -> TargetGuard<'_> {
        TargetGuard {
            t: self,
            temp: self.temp.lock().unwrap_or_else(|e| e.into_inner()),
            desc: self.desc,
        }
    }
}

/// Access to a [`Target`] while a kernel runs.
pub(crate) struct TargetGuard<'a> {
    t: &'a Target,
    temp: std::sync::MutexGuard<'a, Option<Vec<u64>>>,
    pub(crate) desc: TensorDesc,
}

impl TargetGuard<'_> {
    /// The bytes the kernel writes, starting at element 0.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        let len = self.desc.total_bytes();
        match self.temp.as_mut() {
            Some(v) => &mut bytemuck_bytes_mut(v)[..len],
            None => {
                let (lo, hi) = self.t.arr.span();
                // SAFETY: the array's elements lie in `[lo, hi)` and its strides are
                // non-negative here, so `lo` is element 0; numpy keeps the memory alive and
                // writable for the call, and no input slice overlaps it (`Buffers::prepare`
                // copied any that did). The kernel writes only the elements.
                unsafe { std::slice::from_raw_parts_mut(lo as *mut u8, hi - lo) }
            }
        }
    }

    /// Scatters a packed buffer back to the array's elements.
    pub(crate) fn finish(&mut self) {
        if let Some(v) = self.temp.as_ref() {
            let len = self.desc.total_bytes();
            write_elements(&self.t.arr, bytes_of(v, len));
        }
    }

    /// Writes the packed result of `len` bytes in a GPU `buffer` to the array's elements: read
    /// straight into the array where it is packed, else into a packed copy scattered to them.
    pub(crate) fn read_gpu(
        &mut self,
        g: &tensorbits::GpuExecutor,
        buffer: &tensorbits::wgpu::Buffer,
        len: usize,
    ) -> Result<(), tensorbits::Error> {
        if self.temp.is_none() && self.desc.strides().is_none() {
            return g.read_into(buffer, 0, self.bytes());
        }
        write_elements(&self.t.arr, &g.read_bytes(buffer, 0, len as u64)?);
        Ok(())
    }
}

fn write_elements(arr: &Arr, packed: &[u8]) {
    let item = arr.item;
    let mut at = 0;
    arr.for_each_offset(|off| {
        if at + item <= packed.len() {
            // SAFETY: every offset walked is an element of the writable array numpy describes,
            // alive for the call; `packed` is a separate buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    packed[at..].as_ptr(),
                    arr.addr.wrapping_add_signed(off) as *mut u8,
                    item,
                );
            }
        }
        at += item;
    });
}

enum Source {
    /// Bytes starting at element 0 in the caller's memory: address and length.
    Borrowed(usize, usize),
    Owned(Vec<u64>, usize),
    /// The input is the output (in place).
    Output,
}

/// The inputs of one call, described and ready to bind.
pub(crate) struct Buffers {
    descs: Vec<TensorDesc>,
    sources: Vec<Source>,
    in_place: Option<usize>,
}

impl Buffers {
    /// Describes each input after the orientation's reversals, copying those whose layout a
    /// description cannot express, or whose memory overlaps the output (`out`, after its
    /// reversal) other than as the op's in-place input.
    pub(crate) fn prepare(
        ins: &[Arr],
        orientation: &Orientation,
        out: Option<&Arr>,
        op: &OpInfo,
        allow_in_place: bool,
    ) -> PyResult<Buffers> {
        let mut b = Buffers {
            descs: Vec::new(),
            sources: Vec::new(),
            in_place: None,
        };
        for (i, a) in ins.iter().enumerate() {
            let flags = orientation.inputs.get(i).map_or(&[][..], |f| &f[..]);
            let a = a.flipped(flags);
            if let Some(o) = out
                && allow_in_place
                && a.same_as(o)
                && op.in_place().contains(&i)
                && b.in_place.is_none()
            {
                b.descs.push(o.shape_desc()?);
                b.sources.push(Source::Output);
                b.in_place = Some(i);
                continue;
            }
            let overlaps = out.is_some_and(|o| a.overlaps(o));
            match a.element_strides(0).filter(|_| !overlaps) {
                Some(s) => {
                    let desc = a.desc_with(&s)?;
                    let (lo, hi) = a.span();
                    b.descs.push(desc);
                    b.sources.push(Source::Borrowed(lo, hi - lo));
                }
                None => {
                    let (desc, words) = a.gather()?;
                    let len = a.count() * a.item;
                    b.descs.push(desc);
                    b.sources.push(Source::Owned(words, len));
                }
            }
        }
        Ok(b)
    }

    fn slices(&self) -> Vec<&[u8]> {
        self.sources
            .iter()
            .map(|s| match s {
                // SAFETY: the range holds the elements of an array the caller keeps alive for
                // the call; it does not overlap the output (`prepare` copied any input that did).
                Source::Borrowed(addr, len) => unsafe {
                    std::slice::from_raw_parts(*addr as *const u8, *len)
                },
                Source::Owned(v, len) => bytes_of(v, *len),
                Source::Output => &[][..],
            })
            .collect()
    }

    /// Descriptions, byte slices (empty for the in-place input) and the in-place input's index.
    pub(crate) fn inputs(&self) -> (Vec<TensorDesc>, Vec<&[u8]>, Option<usize>) {
        (self.descs.clone(), self.slices(), self.in_place)
    }
}
