//! Splits one element-wise kernel launch into dispatches that respect the device's limits: every
//! tensor's bound window at most `max_storage_buffer_binding_size` bytes, starting at a multiple of
//! `min_storage_buffer_offset_alignment`, and at most `max_compute_workgroups_per_dimension`
//! workgroups in x and in y. Pure arithmetic, so it is tested without a GPU. Reductions, pairwise
//! ops and knn are planned by [`plan`](super::plan).

use crate::MAX_RANK;
use tensorbits_core::wgsl::{Header, Layout, OUTPUT_SLOT, SLOTS, WORKGROUP_SIZE, params_bytes};

/// The limits that shape dispatches.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest binding, in bytes.
    pub max_binding: u64,
    /// Alignment of binding offsets, in bytes.
    pub offset_align: u64,
    /// Workgroups per dimension.
    pub max_groups: u32,
}

/// A launch to split: the collapsed iteration space and, per tensor, its element strides, element
/// size (the unit for [`Layout::Words`] is 16 bytes) and byte offset in its buffer.
#[derive(Clone, Debug)]
pub struct Launch {
    pub layout: Layout,
    pub dims: Vec<u64>,
    /// `strides[t][d]`, elements; slot 8 is the output.
    pub strides: [Vec<u64>; SLOTS],
    pub elem: [u64; SLOTS],
    pub offset: [u64; SLOTS],
    /// Which slots are used (inputs `0..arity`, and the output).
    pub arity: usize,
    /// Output element bits (the contiguous layout writes whole words of narrow outputs).
    pub out_bits: u32,
}

/// A bound window of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Window {
    pub offset: u64,
    pub size: u64,
}

/// One dispatch: its uniform block, windows and workgroup counts.
#[derive(Clone, Debug)]
pub struct Dispatch {
    pub params: Vec<u8>,
    pub windows: [Window; SLOTS],
    pub groups: (u32, u32),
}

/// Why a launch cannot be split to fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooLarge {
    pub slot: usize,
    pub bytes: u64,
}

fn slots(l: &Launch) -> impl Iterator<Item = usize> + '_ {
    (0..l.arity).chain(std::iter::once(OUTPUT_SLOT))
}

/// Splits `l` into dispatches, each fitting `lim`.
pub fn split(l: &Launch, lim: &Limits) -> Result<Vec<Dispatch>, TooLarge> {
    let mut out = Vec::new();
    let origin = [0u64; SLOTS];
    split_box(l, lim, 0, l.dims.clone(), origin, &mut out)?;
    Ok(out)
}

/// A box is the plan's dimensions from `first` on, with sizes `dims` and its corner at element
/// `origin[t]` of each tensor.
fn split_box(
    l: &Launch,
    lim: &Limits,
    first: usize,
    dims: Vec<u64>,
    origin: [u64; SLOTS],
    out: &mut Vec<Dispatch>,
) -> Result<(), TooLarge> {
    let count: u64 = dims.iter().product();
    if count == 0 {
        return Ok(());
    }
    let mut windows = [Window::default(); SLOTS];
    let mut base = [0u64; SLOTS];
    let mut fits = true;
    let end_align = if l.layout == Layout::Words { 16 } else { 4 };
    for t in slots(l) {
        let reach: u64 = dims
            .iter()
            .enumerate()
            .map(|(i, n)| n.saturating_sub(1) * l.strides[t][first + i])
            .sum();
        let lo = l.offset[t] + origin[t] * l.elem[t];
        (windows[t], base[t]) = window(lo, reach + 1, l.elem[t], end_align, lim);
        fits &= windows[t].size <= lim.max_binding;
    }
    let units = invocations(l, count, base[OUTPUT_SLOT]);
    let max_units = u64::from(lim.max_groups).pow(2) * u64::from(WORKGROUP_SIZE);
    let small_enough = units <= max_units && count <= u64::from(u32::MAX);
    if fits && small_enough {
        out.push(dispatch(
            l, lim, first, &dims, &windows, &base, count, units,
        ));
        return Ok(());
    }
    let Some(&d0) = dims.first() else {
        // A single element that does not fit its window cannot be split further.
        let slot = slots(l)
            .find(|&t| windows[t].size > lim.max_binding)
            .unwrap_or(OUTPUT_SLOT);
        return Err(TooLarge {
            slot,
            bytes: windows[slot].size,
        });
    };
    if d0 == 1 && dims.len() > 1 {
        return split_box(l, lim, first + 1, dims[1..].to_vec(), origin, out);
    }
    let Some(at) = dims.iter().position(|&n| n > 1) else {
        let slot = slots(l)
            .find(|&t| windows[t].size > lim.max_binding)
            .unwrap_or(OUTPUT_SLOT);
        return Err(TooLarge {
            slot,
            bytes: windows[slot].size,
        });
    };
    // Halve the outermost dimension that can be; keep the first half a multiple of 64 elements
    // when the box is one-dimensional, so word-per-invocation layouts keep their alignment.
    let size = dims[at];
    let mut half = size / 2;
    if dims.len() == 1 && half > 64 {
        half = half / 64 * 64;
    }
    for (start, n) in [(0, half), (half, size - half)] {
        let mut o = origin;
        for t in slots(l) {
            o[t] += start * l.strides[t][first + at];
        }
        let mut d = dims.clone();
        d[at] = n;
        split_box(l, lim, first, d, o, out)?;
    }
    Ok(())
}

/// Invocations a dispatch of `count` elements needs in `l.layout`.
fn invocations(l: &Launch, count: u64, out_base: u64) -> u64 {
    match l.layout {
        Layout::Contiguous if l.out_bits < 32 => {
            let lanes = u64::from(32 / l.out_bits);
            (out_base + count - 1) / lanes - out_base / lanes + 1
        }
        _ => count,
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the pieces of one dispatch, computed by the caller"
)]
fn dispatch(
    l: &Launch,
    lim: &Limits,
    first: usize,
    dims: &[u64],
    windows: &[Window; SLOTS],
    base: &[u64; SLOTS],
    count: u64,
    units: u64,
) -> Dispatch {
    let groups = groups(units, u64::from(WORKGROUP_SIZE), lim);
    // Every value fits in u32: windows are at most 4 GiB and counts were checked.
    let w = word;
    let sizes: Vec<u32> = dims.iter().map(|&v| w(v)).collect();
    let base: [u32; SLOTS] = std::array::from_fn(|t| w(base[t]));
    let strides: [[u32; MAX_RANK]; SLOTS] = std::array::from_fn(|t| {
        std::array::from_fn(|d| {
            if d < dims.len() {
                w(l.strides[t][first + d])
            } else {
                0
            }
        })
    });
    let header = Header {
        count: w(units),
        elements: w(count),
        kept: dims.len() as u32,
        ..Header::default()
    };
    let p = params_bytes(&header, &sizes, &base, &strides);
    Dispatch {
        params: p,
        windows: *windows,
        groups,
    }
}

/// The window binding `count` units of `unit` bytes from byte `lo` of a buffer: it starts at the
/// multiple of the offset alignment at or below `lo` and ends at the next multiple of `end_align`.
/// Returns it and the first unit's index within it.
pub fn window(lo: u64, count: u64, unit: u64, end_align: u64, lim: &Limits) -> (Window, u64) {
    let start = lo / lim.offset_align * lim.offset_align;
    let end = (lo + count * unit).div_ceil(end_align) * end_align;
    (
        Window {
            offset: start,
            size: end - start,
        },
        (lo - start) / unit,
    )
}

/// A value of the uniform block (the callers checked that it fits; the largest `u32` if not).
pub fn word(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Workgroups in x and y for `units` units of work, `per` to a workgroup, at most
/// `max_compute_workgroups_per_dimension` in each.
pub fn groups(units: u64, per: u64, lim: &Limits) -> (u32, u32) {
    let g = units.div_ceil(per);
    let gx = g.min(u64::from(lim.max_groups));
    (word(gx), word(g.div_ceil(gx.max(1))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contiguous(n: u64, elem: u64, layout: Layout) -> Launch {
        let mut strides: [Vec<u64>; SLOTS] = Default::default();
        for s in strides.iter_mut() {
            *s = vec![1];
        }
        Launch {
            layout,
            dims: vec![n],
            strides,
            elem: [elem; SLOTS],
            offset: [0; SLOTS],
            arity: 2,
            out_bits: (elem * 8) as u32,
        }
    }

    #[test]
    fn small_launch_is_one_dispatch() {
        let lim = Limits {
            max_binding: 1 << 27,
            offset_align: 256,
            max_groups: 65535,
        };
        let d = split(&contiguous(1000, 4, Layout::Contiguous), &lim).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].windows[OUTPUT_SLOT],
            Window {
                offset: 0,
                size: 4000
            }
        );
        assert_eq!(d[0].groups, (16, 1));
    }

    #[test]
    fn large_launch_is_split_into_fitting_windows_covering_everything() {
        let lim = Limits {
            max_binding: 1024,
            offset_align: 256,
            max_groups: 65535,
        };
        let d = split(&contiguous(10_000, 1, Layout::Contiguous), &lim).unwrap();
        assert!(d.len() > 1);
        let mut covered = 0u64;
        for x in &d {
            assert!(x.windows.iter().all(|w| w.size <= 1024));
            assert_eq!(x.windows[OUTPUT_SLOT].offset % 256, 0);
            covered += u64::from(u32::from_le_bytes(x.params[8..12].try_into().unwrap()));
        }
        assert_eq!(covered, 10_000, "every element in exactly one dispatch");
    }

    #[test]
    fn workgroup_limit_splits_and_uses_two_dimensions() {
        let lim = Limits {
            max_binding: 1 << 30,
            offset_align: 256,
            max_groups: 4,
        };
        let d = split(&contiguous(5000, 4, Layout::Strided), &lim).unwrap();
        assert!(d.len() > 1);
        for x in &d {
            assert!(x.groups.0 <= 4 && x.groups.1 <= 4, "{:?}", x.groups);
        }
        let lim = Limits {
            max_binding: 1 << 30,
            offset_align: 256,
            max_groups: 8,
        };
        let d = split(&contiguous(1000, 4, Layout::Strided), &lim).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].groups, (8, 2));
    }

    #[test]
    fn an_element_wider_than_the_limit_is_an_error() {
        let lim = Limits {
            max_binding: 4,
            offset_align: 256,
            max_groups: 65535,
        };
        let mut l = contiguous(2, 8, Layout::Strided);
        l.offset = [256; SLOTS];
        assert!(split(&l, &lim).is_err());
    }
}
