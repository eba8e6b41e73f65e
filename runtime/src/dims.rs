//! `Dims`: up to eight sizes or strides, stored inline so calls on small tensors never allocate.

use crate::MAX_RANK;
use std::fmt;
use std::ops::{Deref, DerefMut};

/// Up to [`MAX_RANK`] numbers (sizes or element strides), inline.
#[derive(Clone, Copy, Eq, Default)]
#[repr(C)]
pub struct Dims {
    d: [usize; MAX_RANK],
    len: u8,
}

impl Dims {
    /// No entries.
    pub const EMPTY: Dims = Dims {
        len: 0,
        d: [0; MAX_RANK],
    };

    /// From a slice; `None` when it has more than eight entries.
    pub fn new(s: &[usize]) -> Option<Dims> {
        if s.len() > MAX_RANK {
            return None;
        }
        let mut d = [0; MAX_RANK];
        d[..s.len()].copy_from_slice(s);
        Some(Dims {
            len: s.len() as u8,
            d,
        })
    }

    /// `n` copies of `v` (n <= 8).
    pub fn filled(n: usize, v: usize) -> Dims {
        assert!(n <= MAX_RANK, "Dims::filled: {n} > {MAX_RANK}");
        let mut d = [0; MAX_RANK];
        d[..n].fill(v);
        Dims { len: n as u8, d }
    }

    /// Appends one entry; the caller keeps the length within eight.
    pub(crate) fn push(&mut self, v: usize) {
        self.d[self.len as usize] = v;
        self.len += 1;
    }

    /// Product of the entries, `None` on overflow.
    #[inline]
    pub fn product(&self) -> Option<usize> {
        self.iter().try_fold(1usize, |acc, &x| acc.checked_mul(x))
    }

    /// Packed (C-order) strides for these sizes, `None` on overflow.
    pub fn packed_strides(&self) -> Option<Dims> {
        let mut s = Dims::filled(self.len(), 0);
        let mut acc = 1usize;
        for i in (0..self.len()).rev() {
            s[i] = acc;
            acc = acc.checked_mul(self[i].max(1))?;
        }
        Some(s)
    }
}

/// Entries past `len` are always zero, so comparing the used entries is comparing the whole; an
/// inline loop over them beats a call to `memcmp` for the short shapes of small calls.
impl PartialEq for Dims {
    #[inline]
    fn eq(&self, other: &Dims) -> bool {
        self.len == other.len && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl Dims {
    /// Packed strides that saturate instead of failing. Only a tensor with a size-0 dimension can
    /// overflow them, and it addresses no element with them; owned tensors keep these.
    #[inline]
    pub(crate) fn packed_strides_saturating(&self) -> Dims {
        let mut s = Dims {
            len: self.len,
            d: [0; MAX_RANK],
        };
        let mut acc = 1usize;
        for i in (0..self.len as usize).rev() {
            s.d[i] = acc;
            acc = acc.saturating_mul(self.d[i].max(1));
        }
        s
    }
}

impl std::hash::Hash for Dims {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl Deref for Dims {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        &self.d[..self.len as usize]
    }
}

impl DerefMut for Dims {
    #[inline]
    fn deref_mut(&mut self) -> &mut [usize] {
        &mut self.d[..self.len as usize]
    }
}

impl fmt::Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
