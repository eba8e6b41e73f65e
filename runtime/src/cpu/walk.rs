//! The walk over a [`Plan`]'s collapsed iteration space. It knows element sizes, not element types:
//! it cuts the work into contiguous runs of at most [`CHUNK_BYTES`] and hands each to the op's
//! kernel, so it is compiled once here, not once per op and type in every crate that declares ops.
//!
//! Inputs with stride 0 are filled into a small buffer, strided or misaligned ones gathered, an
//! in-place input read from the output before it is overwritten, and a strided or misaligned
//! output scattered from a buffer. Above [`PARALLEL_BYTES`] of output, when the output is packed in
//! iteration order, disjoint ranges of it are processed on the pool's threads; below, the calling
//! thread does all the work. Above [`STREAM_BYTES`], contiguous outputs are written with streaming
//! stores.

use super::tuning::{CHUNK_BYTES, PARALLEL_BYTES, STREAM_BYTES};
use crate::element::by_elem;
use crate::op::{InputBuffer, Plan};
use crate::{MAX_INPUTS, MAX_RANK};

/// A kernel over contiguous runs: each input slice holds `n` elements and the output slice `n`
/// elements, all aligned for their element type.
#[doc(hidden)]
pub type Kernel<'k> = &'k (dyn Fn(&[&[u8]], &mut [u8]) + Sync);

/// Element sizes and which buffers can be used in place (aligned for their element type).
#[derive(Clone, Copy)]
struct Geometry {
    arity: usize,
    ies: usize,
    oes: usize,
    in_aligned: [bool; MAX_INPUTS],
    out_aligned: bool,
}

fn aligned(b: &[u8], es: usize) -> bool {
    (b.as_ptr() as usize).is_multiple_of(es)
}

/// Runs `kernel` over every element of a validated plan. `out` holds the output's bytes from
/// element 0; each input's bytes start at its element 0 (or it is the output, in place).
pub(crate) fn run(plan: &Plan, inputs: &[InputBuffer<'_>], out: &mut [u8], kernel: Kernel<'_>) {
    let arity = inputs.len();
    if plan.count == 0 || arity == 0 || arity > MAX_INPUTS {
        return;
    }
    let (ies, oes) = (plan.in_dtype.size(), plan.out_dtype.size());
    let g = Geometry {
        arity,
        ies,
        oes,
        in_aligned: std::array::from_fn(|k| match inputs.get(k) {
            Some(InputBuffer::Bytes(b)) => aligned(b, ies),
            _ => false,
        }),
        out_aligned: aligned(out, oes),
    };
    let bytes = plan.count.saturating_mul(oes);
    let stream = bytes >= STREAM_BYTES;
    // One contiguous run below the thread and streaming thresholds: the kernel on the slices.
    if bytes < PARALLEL_BYTES && plan.is_one_run(arity) && g.out_aligned {
        let n = plan.count;
        let mut ins: [&[u8]; MAX_INPUTS] = [&[]; MAX_INPUTS];
        let direct = inputs.iter().enumerate().all(|(k, b)| match b {
            InputBuffer::Bytes(d) if g.in_aligned[k] => {
                ins[k] = &d[..n * ies];
                true
            }
            _ => false,
        });
        if direct {
            kernel(&ins[..arity], &mut out[..n * oes]);
            return;
        }
    }
    let threads = crate::pool::num_threads();
    if bytes >= PARALLEL_BYTES && threads > 1 && packed_in_order(plan) {
        // A few tasks per thread balance uneven cores; whole cache lines per task.
        let per = (plan.count / (threads * 4))
            .max(PARALLEL_BYTES / 4 / oes)
            .next_multiple_of(64);
        let chunks: Vec<&mut [u8]> = out[..plan.count * oes].chunks_mut(per * oes).collect();
        crate::pool::each(chunks, |t, chunk| {
            let len = chunk.len() / oes;
            segment(
                plan,
                g,
                inputs,
                chunk,
                t * per,
                len,
                t * per,
                stream,
                kernel,
            );
            if stream {
                super::stream::fence();
            }
        });
    } else {
        segment(plan, g, inputs, out, 0, plan.count, 0, stream, kernel);
        if stream {
            super::stream::fence();
        }
    }
}

/// Whether output offsets equal linear iteration indices, so that ranges of iterations are disjoint
/// ranges of the output slice.
fn packed_in_order(plan: &Plan) -> bool {
    let mut expect = 1usize;
    for d in (0..plan.iter.len()).rev() {
        if plan.iter[d] > 1 && plan.out_strides[d] != expect {
            return false;
        }
        expect = expect.saturating_mul(plan.iter[d]);
    }
    true
}

/// Scratch buffers of one thread, allocated on first need. `u64` words keep them aligned for every
/// element type.
struct Scratch {
    ins: [Vec<u64>; MAX_INPUTS],
    out: Vec<u64>,
}

pub(crate) fn scratch_bytes(v: &mut Vec<u64>, bytes: usize) -> &mut [u8] {
    let words = bytes.div_ceil(8);
    if v.len() < words {
        v.resize(words, 0);
    }
    &mut bytemuck::cast_slice_mut(v.as_mut_slice())[..bytes]
}

/// Iterations `start..start+len` of the plan into `out`, whose element 0 is iteration `shift`'s.
#[allow(
    clippy::too_many_arguments,
    reason = "the range's geometry, kept flat for the hot path"
)]
fn segment(
    plan: &Plan,
    g: Geometry,
    ins: &[InputBuffer<'_>],
    out: &mut [u8],
    start: usize,
    len: usize,
    shift: usize,
    stream: bool,
    kernel: Kernel<'_>,
) {
    let nd = plan.iter.len();
    let inner = plan.iter[nd - 1];
    let os = plan.out_strides[nd - 1];
    // Slots past the arity hold no strides.
    let n_in = g.arity;
    let is: [usize; MAX_INPUTS] = std::array::from_fn(|k| {
        if k < n_in {
            plan.in_strides[k][nd - 1]
        } else {
            0
        }
    });
    let mut idx = [0usize; MAX_RANK];
    let mut rem = start;
    for d in (0..nd).rev() {
        if rem == 0 {
            break;
        }
        idx[d] = rem % plan.iter[d];
        rem /= plan.iter[d];
    }
    let mut o_off: usize = (0..nd).map(|d| idx[d] * plan.out_strides[d]).sum();
    let mut i_off: [usize; MAX_INPUTS] = std::array::from_fn(|k| {
        if k < n_in {
            (0..nd).map(|d| idx[d] * plan.in_strides[k][d]).sum()
        } else {
            0
        }
    });
    let mut scratch = Scratch {
        ins: std::array::from_fn(|_| Vec::new()),
        out: Vec::new(),
    };
    let mut left = len;
    while left > 0 {
        let n = (inner - idx[nd - 1]).min(left);
        let run = Run {
            ob: o_off - shift,
            os,
            i_off,
            is,
            n,
        };
        row(g, ins, out, &run, stream, kernel, &mut scratch);
        left -= n;
        idx[nd - 1] += n;
        o_off += n * os;
        for (off, s) in i_off.iter_mut().zip(&is) {
            *off += n * s;
        }
        // Carry into the outer dimensions, as an odometer.
        let mut d = nd - 1;
        while idx[d] == plan.iter[d] && d > 0 {
            o_off -= plan.out_strides[d] * idx[d];
            for (off, st) in i_off.iter_mut().zip(&plan.in_strides).take(n_in) {
                *off -= st[d] * idx[d];
            }
            idx[d] = 0;
            d -= 1;
            idx[d] += 1;
            o_off += plan.out_strides[d];
            for (off, st) in i_off.iter_mut().zip(&plan.in_strides).take(n_in) {
                *off += st[d];
            }
        }
    }
}

/// `n` consecutive iterations along the innermost dimension: the output's first element `ob` and
/// stride `os`, each input's first element and stride, in elements.
struct Run {
    ob: usize,
    os: usize,
    i_off: [usize; MAX_INPUTS],
    is: [usize; MAX_INPUTS],
    n: usize,
}

/// One [`Run`], in steps of [`CHUNK_BYTES`].
fn row(
    g: Geometry,
    ins: &[InputBuffer<'_>],
    out: &mut [u8],
    r: &Run,
    stream: bool,
    kernel: Kernel<'_>,
    scratch: &mut Scratch,
) {
    let (ies, oes) = (g.ies, g.oes);
    let chunk = CHUNK_BYTES / ies.max(oes);
    let mut done = 0;
    while done < r.n {
        let m = chunk.min(r.n - done);
        let o0 = r.ob + done * r.os;
        // Fill the buffers of inputs that are not aligned contiguous slices.
        for (k, buf) in scratch.ins.iter_mut().enumerate().take(g.arity) {
            match ins[k] {
                InputBuffer::Bytes(_) if r.is[k] == 1 && g.in_aligned[k] => {}
                InputBuffer::Bytes(d) => {
                    let first = r.i_off[k] + done * r.is[k];
                    gather(scratch_bytes(buf, m * ies), d, first, r.is[k], ies);
                }
                // In place: the aliased input's elements are the output's, read before written.
                InputBuffer::Output => gather(scratch_bytes(buf, m * ies), out, o0, r.os, ies),
            }
        }
        let mut lanes: [&[u8]; MAX_INPUTS] = [&[]; MAX_INPUTS];
        for (k, lane) in lanes.iter_mut().enumerate().take(g.arity) {
            *lane = match ins[k] {
                InputBuffer::Bytes(d) if r.is[k] == 1 && g.in_aligned[k] => {
                    let b = (r.i_off[k] + done) * ies;
                    &d[b..b + m * ies]
                }
                _ => &bytemuck::cast_slice(&scratch.ins[k])[..m * ies],
            };
        }
        let lanes = &lanes[..g.arity];
        if r.os == 1 && !stream && g.out_aligned {
            kernel(lanes, &mut out[o0 * oes..(o0 + m) * oes]);
        } else {
            let buf = scratch_bytes(&mut scratch.out, m * oes);
            kernel(lanes, buf);
            if r.os == 1 {
                super::stream::copy(&mut out[o0 * oes..(o0 + m) * oes], buf);
            } else {
                scatter(out, o0, r.os, buf, oes);
            }
        }
        done += m;
    }
}

/// Copies `dst.len() / es` elements of `es` bytes from `src`, the first at element `first`, then
/// every `stride` elements (0 repeats one element).
pub(crate) fn gather(dst: &mut [u8], src: &[u8], first: usize, stride: usize, es: usize) {
    by_elem!(es, T => {
        let s = size_of::<T>();
        let read = |i: usize| bytemuck::pod_read_unaligned::<T>(&src[i * s..i * s + s]);
        // The scratch buffers are `u64`s, so `dst` is aligned for `T`.
        let dst: &mut [T] = bytemuck::cast_slice_mut(dst);
        if stride == 0 {
            dst.fill(read(first));
        } else {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = read(first + i * stride);
            }
        }
    })
}

/// Writes the elements of `src` into `out`, the first at element `first`, then every `stride`.
fn scatter(out: &mut [u8], first: usize, stride: usize, src: &[u8], es: usize) {
    by_elem!(es, T => {
        let s = size_of::<T>();
        // The scratch buffers are `u64`s, so `src` is aligned for `T`.
        let src: &[T] = bytemuck::cast_slice(src);
        for (i, v) in src.iter().enumerate() {
            let at = (first + i * stride) * s;
            out[at..at + s].copy_from_slice(bytemuck::bytes_of(v));
        }
    })
}

/// Runs `f` on `inputs`, or, for a plan with valid bits whose last element of each row holds
/// padding that is not all zero, on copies of them with that padding zeroed (`np.packbits` pads
/// with zeros, so codes it made are used as they are).
pub(crate) fn with_zeroed_padding<R>(
    plan: &crate::Plan,
    inputs: &[crate::InputBuffer<'_>],
    f: impl FnOnce(&[crate::InputBuffer<'_>]) -> R,
) -> R {
    let Some(copies) = zeroed_padding(plan, inputs) else {
        return f(inputs);
    };
    let zeroed: Vec<_> = inputs
        .iter()
        .zip(&copies)
        .map(|(i, c)| c.as_deref().map_or(*i, crate::InputBuffer::Bytes))
        .collect();
    f(&zeroed)
}

/// The copies [`with_zeroed_padding`] runs on, `None` where the inputs serve as they are.
fn zeroed_padding(
    plan: &crate::Plan,
    inputs: &[crate::InputBuffer<'_>],
) -> Option<Vec<Option<Vec<u8>>>> {
    let pad = plan.pad?;
    let es = plan.in_dtype.size();
    // The byte offset of each row's last element in input `i`.
    let rows = |i: usize, f: &mut dyn FnMut(usize)| {
        if let Some((dims, base)) = plan.padded_rows(i) {
            each_offset(&dims, base, |at| f(at * es));
        }
    };
    let mask = pad.mask.to_le_bytes();
    let mut any = false;
    for (i, input) in inputs.iter().enumerate() {
        if let crate::InputBuffer::Bytes(b) = input {
            rows(i, &mut |at| {
                any |= b[at..at + es].iter().zip(mask).any(|(x, m)| x & m != 0);
            });
        }
    }
    if !any {
        return None;
    }
    let copies = inputs
        .iter()
        .enumerate()
        .map(|(i, input)| match input {
            crate::InputBuffer::Bytes(b) => {
                let mut c = b.to_vec();
                rows(i, &mut |at| {
                    for (x, m) in c[at..at + es].iter_mut().zip(mask) {
                        *x &= !m;
                    }
                });
                Some(c)
            }
            crate::InputBuffer::Output => None,
        })
        .collect();
    Some(copies)
}

/// Calls `f` with the offset of every element of the dimensions `(size, stride)` from `base`, the
/// last dimension fastest. None for an empty dimension.
pub(crate) fn each_offset(dims: &[(usize, usize)], base: usize, mut f: impl FnMut(usize)) {
    if dims.iter().any(|&(n, _)| n == 0) {
        return;
    }
    let mut idx = [0usize; crate::MAX_RANK];
    let mut at = base;
    loop {
        f(at);
        let mut d = dims.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            at += dims[d].1;
            if idx[d] < dims[d].0 {
                break;
            }
            at -= dims[d].1 * dims[d].0;
            idx[d] = 0;
        }
    }
}
