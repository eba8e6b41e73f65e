//! Tensor descriptions, following `DML_BUFFER_TENSOR_DESC`, and the rules that make one valid.

use super::Name;
use crate::error::{Error, Result, ShapeText};
use crate::{DataType, Dims, MAX_RANK};

/// Describes a tensor in a byte buffer, as `DML_BUFFER_TENSOR_DESC` does: data type, sizes, optional
/// element strides, the total size in bytes the binding provides, and an optional guaranteed alignment
/// of the base offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TensorDesc {
    data_type: DataType,
    sizes: Dims,
    strides: Option<Dims>,
    total_bytes: usize,
    alignment: Option<usize>,
}

impl TensorDesc {
    /// A packed (C-order) tensor; the total size is the smallest valid one. Fails for more than eight
    /// dimensions or sizes that overflow.
    pub fn new(data_type: DataType, sizes: &[usize]) -> Result<TensorDesc> {
        let dims = Dims::new(sizes).ok_or_else(|| Error::RankTooLarge {
            tensor: "tensor".to_owned(),
            rank: sizes.len(),
        })?;
        let mut d = TensorDesc {
            data_type,
            sizes: dims,
            strides: None,
            total_bytes: 0,
            alignment: None,
        };
        d.total_bytes = d.required_bytes("tensor")?;
        Ok(d)
    }

    /// A description from parts already known to fit in eight dimensions, with the smallest valid total
    /// size (0 if the sizes overflow, which `validate` then reports).
    pub(crate) fn from_parts(
        data_type: DataType,
        sizes: Dims,
        strides: Option<Dims>,
    ) -> TensorDesc {
        let mut d = TensorDesc {
            data_type,
            sizes,
            strides,
            total_bytes: 0,
            alignment: None,
        };
        d.total_bytes = d.required_bytes("tensor").unwrap_or(0);
        d
    }

    /// Sets element strides (0 broadcasts, on inputs only) and grows the total size to the smallest
    /// valid one if it was smaller. Fails when the count differs from the rank or sizes overflow.
    pub fn with_strides(mut self, strides: &[usize]) -> Result<TensorDesc> {
        if strides.len() != self.sizes.len() {
            return Err(Error::StridesLength {
                tensor: "tensor".to_owned(),
                strides: strides.len(),
                rank: self.sizes.len(),
            });
        }
        self.strides = Dims::new(strides);
        self.total_bytes = self.total_bytes.max(self.required_bytes("tensor")?);
        Ok(self)
    }

    /// Sets the total size in bytes the binding provides (`TotalTensorSizeInBytes`).
    pub fn with_total_bytes(mut self, total_bytes: usize) -> TensorDesc {
        self.total_bytes = total_bytes;
        self
    }

    /// Promises that the base offset is a multiple of `alignment` (`GuaranteedBaseOffsetAlignment`).
    pub fn with_alignment(mut self, alignment: usize) -> TensorDesc {
        self.alignment = Some(alignment);
        self
    }

    /// A zero-filled buffer of [`total_bytes`](Self::total_bytes) bytes, for a tensor of this
    /// description. Memory that cannot be had is [`Error::AllocationFailed`] naming `tensor` and the
    /// size, never an abort.
    pub fn zeroed_buffer(&self, tensor: &str) -> Result<Vec<u8>> {
        crate::alloc::zeroed_vec(self.total_bytes, tensor)
    }

    /// The element type.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// Sizes, one per dimension.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// Explicit strides, when given.
    pub fn strides(&self) -> Option<&[usize]> {
        self.strides.as_deref()
    }

    /// Whether the elements lie packed in C order (no strides, or the packed ones spelled out).
    pub(crate) fn is_packed(&self) -> bool {
        self.strides.is_none() || self.strides == self.sizes.packed_strides()
    }

    /// Strides in elements: the explicit ones, or packed C-order ones.
    pub fn effective_strides(&self) -> Dims {
        self.strides
            .or_else(|| self.sizes.packed_strides())
            .unwrap_or_else(|| Dims::filled(self.sizes.len(), 0))
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.sizes.len()
    }

    /// The declared total size in bytes.
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    /// The promised base-offset alignment.
    pub fn alignment(&self) -> Option<usize> {
        self.alignment
    }

    /// Number of elements (0 if any size is 0), `None` on overflow.
    pub fn element_count(&self) -> Option<usize> {
        self.sizes.product()
    }

    pub(crate) fn dims(&self) -> Dims {
        self.sizes
    }

    /// Bytes from the first element to the end of the last one reached: `(dot(sizes-1, strides)+1) *
    /// element size`, or 0 for an empty tensor.
    pub fn extent_bytes(&self, tensor: &str) -> Result<usize> {
        self.extent_bytes_of(tensor)
    }

    pub(crate) fn extent_bytes_of(&self, tensor: impl Name) -> Result<usize> {
        let overflow = || Error::SizeOverflow {
            tensor: tensor.name(),
            sizes: ShapeText(self.sizes.to_vec()),
        };
        if self.sizes.contains(&0) {
            return Ok(0);
        }
        if self.strides.is_none() {
            // Packed: the extent is the element count.
            return self
                .sizes
                .product()
                .and_then(|n| n.checked_mul(self.data_type.size()))
                .ok_or_else(overflow);
        }
        let strides = match self.strides {
            Some(s) => s,
            None => self.sizes.packed_strides().ok_or_else(overflow)?,
        };
        let mut last = 0usize;
        for (&n, &s) in self.sizes.iter().zip(strides.iter()) {
            last = (n - 1)
                .checked_mul(s)
                .and_then(|x| x.checked_add(last))
                .ok_or_else(overflow)?;
        }
        last.checked_add(1)
            .and_then(|x| x.checked_mul(self.data_type.size()))
            .ok_or_else(overflow)
    }

    /// The smallest valid `total_bytes`: the extent rounded up to a multiple of 4, as DirectML requires.
    pub fn required_bytes(&self, tensor: &str) -> Result<usize> {
        self.required_bytes_of(tensor)
    }

    pub(crate) fn required_bytes_of(&self, tensor: impl Name) -> Result<usize> {
        let extent = self.extent_bytes_of(tensor)?;
        extent
            .checked_next_multiple_of(4)
            .ok_or_else(|| Error::SizeOverflow {
                tensor: tensor.name(),
                sizes: ShapeText(self.sizes.to_vec()),
            })
    }

    /// Checks the description on its own: rank, strides, alignment, total size; for an output, also
    /// that no stride is 0 and no two elements share memory.
    pub fn validate(&self, tensor: &str, is_output: bool) -> Result<()> {
        self.validate_as(tensor, is_output)
    }

    pub(crate) fn validate_as(&self, tensor: impl Name, is_output: bool) -> Result<()> {
        let name = || tensor.name();
        if self.sizes.len() > MAX_RANK {
            return Err(Error::RankTooLarge {
                tensor: name(),
                rank: self.sizes.len(),
            });
        }
        if let Some(a) = self.alignment
            && (!a.is_power_of_two() || a < self.data_type.size())
        {
            return Err(Error::BadAlignment {
                tensor: name(),
                alignment: a,
                elem: self.data_type.size(),
            });
        }
        self.element_count().ok_or_else(|| Error::SizeOverflow {
            tensor: name(),
            sizes: ShapeText(self.sizes.to_vec()),
        })?;
        let required = self.required_bytes_of(tensor)?;
        if self.total_bytes < required {
            return Err(Error::TotalBytesTooSmall {
                tensor: name(),
                total: self.total_bytes,
                required,
                sizes: ShapeText(self.sizes.to_vec()),
                strides: ShapeText(self.effective_strides().to_vec()),
            });
        }
        if is_output && let Some(strides) = self.strides {
            check_output_strides(&self.sizes, &strides)?;
        }
        Ok(())
    }
}

/// Output strides must be non-zero and never map two indices to one element. The test is the usual
/// sufficient one: sorted by stride, each stride exceeds the furthest offset the smaller ones reach.
fn check_output_strides(sizes: &Dims, strides: &Dims) -> Result<()> {
    if let Some(dim) = strides.iter().position(|&s| s == 0) {
        return Err(Error::ZeroOutputStride { dim });
    }
    if sizes.contains(&0) {
        return Ok(());
    }
    let mut order: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] > 1).collect();
    order.sort_by_key(|&i| strides[i]);
    let mut reach = 0usize; // furthest offset reachable with the dims seen so far
    for &i in &order {
        if strides[i] <= reach {
            return Err(Error::SelfOverlappingOutput {
                sizes: ShapeText(sizes.to_vec()),
                strides: ShapeText(strides.to_vec()),
                dim: i,
            });
        }
        reach = reach.saturating_add((sizes[i] - 1).saturating_mul(strides[i]));
    }
    Ok(())
}

/// Renames the `tensor` placeholder in construction errors to the tensor's real name.
pub(crate) fn name_error(e: Error, tensor: &str) -> Error {
    match e {
        Error::RankTooLarge { rank, .. } => Error::RankTooLarge {
            tensor: tensor.to_owned(),
            rank,
        },
        Error::StridesLength { strides, rank, .. } => Error::StridesLength {
            tensor: tensor.to_owned(),
            strides,
            rank,
        },
        Error::SizeOverflow { sizes, .. } => Error::SizeOverflow {
            tensor: tensor.to_owned(),
            sizes,
        },
        other => other,
    }
}
