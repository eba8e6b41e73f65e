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
    if layout.size() > BEYOND_CHECK && backable_bytes().is_some_and(|m| layout.size() as u64 > m) {
        return Err(failed());
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

/// Sizes above which [`zeroed_vec`] first compares the request with [`backable_bytes`].
const BEYOND_CHECK: usize = 1 << 30;

/// The memory and swap of this machine in bytes (`MemTotal` and `SwapTotal` of Linux's
/// `/proc/meminfo`, read once), or `None` where they cannot be read. An allocation larger than
/// both can never be backed, yet where the system overcommits memory (`vm.overcommit_memory = 1`,
/// common on container hosts) the allocator grants it, and the first writes past the machine's
/// memory end the process: a packed copy of a stride-0 view of 2 TiB ran on until killed on a
/// 128 GiB machine, where a machine that refuses the allocation returns
/// [`Error::AllocationFailed`]. Requests past this size are refused whatever the overcommit
/// policy, also where they would only be touched in part (a large [`zeroed_vec`] a caller fills
/// sparsely). A container's memory limit (cgroups) is lower than `MemTotal` and not consulted:
/// this refuses what no process on the machine could have, not all that this one cannot.
fn backable_bytes() -> Option<u64> {
    static BYTES: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(key))?;
            line[key.len()..]
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        };
        let total = kib("MemTotal:")?.checked_add(kib("SwapTotal:").unwrap_or(0))?;
        total.checked_mul(1024)
    })
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

    /// A request larger than the machine's memory and swap is refused before the allocator is
    /// asked (which, overcommitting, could grant it); one below the check's size is not compared.
    #[test]
    fn more_than_the_machine_holds_is_refused_first() {
        let read = super::backable_bytes();
        if cfg!(target_os = "linux") {
            assert!(read.is_some(), "/proc/meminfo unread");
        }
        let Some(m) = read else {
            return;
        };
        assert!(m >= 1 << 20, "{m} bytes");
        let past = usize::try_from(m)
            .unwrap_or(usize::MAX)
            .saturating_add(1 << 30);
        let e = match super::zeroed_vec::<u8>(past, "packed") {
            Ok(v) => panic!("{} bytes granted past the machine's {m}", v.len()),
            Err(e) => e,
        };
        assert_eq!(
            e.to_string(),
            format!("packed: cannot allocate {past} bytes")
        );
        assert_eq!(
            super::zeroed_vec::<u8>(1 << 20, "t").unwrap().len(),
            1 << 20
        );
    }
}
