//! Fallible allocation of tensors: memory a call cannot have is an [`Error::AllocationFailed`], not
//! an abort, whatever the entry point.

#![allow(
    unsafe_code,
    reason = "a zeroed allocation handed to a Vec; see the SAFETY notes"
)]

use crate::element::Element;
use crate::error::{Error, Result};
use std::alloc::Layout;

/// `n` zero elements (`false` for `bool`). Large vectors are zeroed by the allocator, which gets
/// fresh pages from the system already zero, so outputs are written once, by the kernel.
pub(crate) fn zeroed_vec<T: Element>(n: usize, tensor: &str) -> Result<Vec<T>> {
    let failed = || Error::AllocationFailed {
        tensor: tensor.to_owned(),
        bytes: n.saturating_mul(size_of::<T>()),
    };
    let layout = Layout::array::<T>(n).map_err(|_| failed())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: `layout` has a non-zero size, as `alloc_zeroed` requires.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(failed());
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[T; n]`, which is
    // what a `Vec<T>` of capacity `n` deallocates with; all its bytes are zero, and the all-zero
    // pattern is a valid value of every element type (`Element: Zeroable`), so its `n` elements
    // are initialised.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// `n` bytes for a buffer the caller fills, as [`zeroed_vec`].
#[cfg(feature = "gpu")]
pub(crate) fn zeroed_bytes(n: usize, tensor: &str) -> Result<Vec<u8>> {
    zeroed_vec::<u8>(n, tensor)
}

#[cfg(test)]
mod tests {
    #[test]
    fn allocation_failure_is_an_error() {
        let e = super::zeroed_vec::<u64>(usize::MAX / 4, "OutputTensor").unwrap_err();
        assert!(e.to_string().contains("cannot allocate"), "{e}");
        let e = super::zeroed_vec::<u8>(1 << 62, "OutputTensor").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("OutputTensor: cannot allocate {} bytes", 1u64 << 62)
        );
        assert_eq!(super::zeroed_vec::<u32>(3, "t").unwrap(), vec![0; 3]);
        assert!(super::zeroed_vec::<bool>(0, "t").unwrap().is_empty());
    }
}
