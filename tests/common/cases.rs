//! Random test cases shared by the CPU reference test and the GPU differential test: an op (standard
//! or custom), a type, a broadcast mode, shapes, layouts, data with special values, and sometimes an
//! in-place alias.

#![allow(dead_code, reason = "each test binary uses a different part")]

use super::Rng;
use tensorbits::{Broadcast, BroadcastMode, DataType, Op, OpInfo, TensorDesc, bitwise_op};

/// A user-defined 3-input op, as in the custom_op example.
#[bitwise_op(
    name = "BIT_SELECT",
    inputs = [a, b, mask],
    compute = (a & mask) | (b & !mask),
    broadcast = [numpy, none, pdpd],
    in_place = [a, mask],
    support(FL_4_1 = [u8, u16, u32, u64], EXT = [u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bool]),
)]
pub struct BitSelect;

/// Literals, wrapping shifts and mixed operators in one expression.
#[bitwise_op(
    name = "TEST_MIXED",
    inputs = [a, b],
    compute = (a.wrapping_shl(b) ^ !a) | (b >> 1),
    broadcast = [numpy],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]),
)]
pub struct Mixed;

/// The element-wise ops: the standard ones (reductions are tested in reductions.rs) and two of
/// this file's own.
pub fn ops() -> Vec<&'static OpInfo> {
    let mut v: Vec<&'static OpInfo> = tensorbits::ops::ALL
        .into_iter()
        .filter(|o| o.reduce().is_none())
        .collect();
    v.push(<BitSelect as Op>::INFO);
    v.push(<Mixed as Op>::INFO);
    v
}

/// Special bit patterns worth hitting on purpose: NaN with payloads, -0.0, infinities, all ones,
/// sign bits, shift counts at the width edges.
pub fn special(dt: DataType, rng: &mut Rng) -> u64 {
    let w = dt.bits() as u64;
    let m = super::mask(dt);
    let picks: [u64; 10] = match dt {
        DataType::F32 => [
            0x7fc0_0001,
            0xffa0_0000,
            0x8000_0000,
            0x7f80_0000,
            0,
            m,
            1,
            31,
            32,
            33,
        ],
        DataType::F64 => [
            0x7ff8_0000_0000_0001,
            0xfff4_0000_0000_0000,
            1 << 63,
            0x7ff0 << 48,
            0,
            m,
            1,
            63,
            64,
            65,
        ],
        DataType::F16 => [0x7e01, 0xfd00, 0x8000, 0x7c00, 0, m, 1, 15, 16, 17],
        _ => [
            0,
            m,
            1,
            m >> 1,
            (m >> 1) + 1,
            w - 1,
            w,
            w + 1,
            m & !(w - 1),
            2 * w,
        ],
    };
    picks[rng.below(picks.len())] & m
}

#[derive(Debug)]
pub struct Case {
    pub op: &'static OpInfo,
    pub dt: DataType,
    pub out_dt: DataType,
    pub broadcast: Broadcast,
    pub out_shape: Vec<usize>,
    pub in_shapes: Vec<Vec<usize>>,
    /// Start dimension of each input in the output (numpy: right-aligned).
    pub starts: Vec<usize>,
}

/// Mostly ranks 0 to 4 with sizes up to 4; one case in six has rank 5 to 8 with sizes up to 2, so the
/// full rank range is covered without huge tensors.
fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let (rank, max) = if rng.chance(16) {
        (5 + rng.below(4), 2)
    } else {
        (rng.below(5), 4)
    };
    (0..rank)
        .map(|_| if rng.chance(4) { 0 } else { 1 + rng.below(max) })
        .collect()
}

pub fn make_case(rng: &mut Rng) -> Case {
    let ops = ops();
    let op = ops[rng.below(ops.len())];
    let types = op.all_types();
    let dt = types[rng.below(types.len())];
    let out_dt = match op.output_types() {
        Some(o) => o[rng.below(o.len())],
        None => dt,
    };
    let mode = if op.arity() == 1 {
        BroadcastMode::None
    } else {
        op.broadcast_modes()[rng.below(op.broadcast_modes().len())]
    };
    let out_shape = random_shape(rng);
    let r = out_shape.len();
    let mut in_shapes = Vec::new();
    let mut starts = Vec::new();
    let mut broadcast = match mode {
        BroadcastMode::None => Broadcast::None,
        BroadcastMode::Numpy => Broadcast::Numpy,
        BroadcastMode::Pdpd => Broadcast::PDPD,
    };
    // pdpd: every later input shares one axis; pick its placement first.
    let (pd_start, pd_len, pd_trailing) = {
        let start = rng.below(r + 1);
        let len = rng.below(r - start + 1);
        // Trailing 1s are ignored by pdpd; add one only where the rank stays within 8.
        let trailing = if len < tensorbits::MAX_RANK {
            rng.below(2)
        } else {
            0
        };
        (start, len, trailing)
    };
    for k in 0..op.arity() {
        let (shape, start) = match mode {
            BroadcastMode::None => (out_shape.clone(), 0),
            BroadcastMode::Numpy => {
                let drop = rng.below(r + 1);
                let s: Vec<usize> = out_shape[drop..]
                    .iter()
                    .map(|&n| if rng.chance(30) { 1 } else { n })
                    .collect();
                (s, drop)
            }
            BroadcastMode::Pdpd if k == 0 => (out_shape.clone(), 0),
            BroadcastMode::Pdpd => {
                let mut s: Vec<usize> = out_shape[pd_start..pd_start + pd_len]
                    .iter()
                    .map(|&n| if rng.chance(30) { 1 } else { n })
                    .collect();
                s.extend(std::iter::repeat_n(1, pd_trailing));
                (s, pd_start)
            }
        };
        in_shapes.push(shape);
        starts.push(start);
    }
    if mode == BroadcastMode::Pdpd {
        let default_fits = in_shapes[1..].iter().all(|s| pd_start + s.len() == r);
        broadcast = if default_fits && rng.chance(50) {
            Broadcast::PDPD
        } else {
            Broadcast::Pdpd {
                axis: pd_start as i64,
            }
        };
    }
    // numpy: the output may be larger than what any input reaches (all inputs dropped a dim or set it
    // to 1); shrink it to the true broadcast shape so the case is valid.
    let out_shape = if mode == BroadcastMode::Numpy {
        let mut o = vec![1usize; in_shapes.iter().map(Vec::len).max().unwrap_or(0)];
        let ro = o.len();
        for s in &in_shapes {
            for (j, &n) in s.iter().enumerate() {
                let k = ro - s.len() + j;
                if n != 1 {
                    o[k] = n;
                }
            }
        }
        starts = in_shapes.iter().map(|s| ro - s.len()).collect();
        o
    } else {
        out_shape
    };
    Case {
        op,
        dt,
        out_dt,
        broadcast,
        out_shape,
        in_shapes,
        starts,
    }
}

/// A random layout: dims in a random order with padding; sometimes a 0 stride on an input dimension.
pub fn random_strides(rng: &mut Rng, shape: &[usize], allow_zero: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..shape.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut strides = vec![0; shape.len()];
    let mut acc = 1 + rng.below(2);
    for &d in order.iter().rev() {
        strides[d] = acc;
        acc *= shape[d].max(1) + rng.below(2);
    }
    if allow_zero && !shape.is_empty() && rng.chance(30) {
        strides[rng.below(shape.len())] = 0;
    }
    strides
}

/// A case with its tensors: descriptions, input bytes, the output description, and the output
/// buffer's initial bytes (a sentinel, or the aliased input's bytes when running in place).
#[derive(Debug)]
pub struct Built {
    pub case: Case,
    pub descs: Vec<TensorDesc>,
    pub datas: Vec<Vec<u8>>,
    pub alias: Option<usize>,
    pub out_desc: TensorDesc,
    pub out_init: Vec<u8>,
}

pub const SENTINEL: u8 = 0xA5;

pub fn build(seed: u64) -> Built {
    let mut rng = Rng(seed);
    let c = make_case(&mut rng);
    build_case(c, &mut rng, true)
}

/// A case whose inputs and output are packed tensors of the output's shape (sometimes in place):
/// the calls that small-call fast paths take.
pub fn build_packed(seed: u64) -> Built {
    let mut rng = Rng(seed);
    let mut c = make_case(&mut rng);
    for (shape, start) in c.in_shapes.iter_mut().zip(&mut c.starts) {
        shape.clone_from(&c.out_shape);
        *start = 0;
    }
    if let Broadcast::Pdpd { .. } = c.broadcast {
        c.broadcast = Broadcast::PDPD;
    }
    build_case(c, &mut rng, false)
}

fn build_case(c: Case, rng: &mut Rng, strides: bool) -> Built {
    let esz = c.dt.size();
    let mut descs = Vec::new();
    let mut datas = Vec::new();
    for shape in &c.in_shapes {
        let mut d = TensorDesc::new(c.dt, shape).unwrap();
        if strides && rng.chance(50) {
            d = d.with_strides(&random_strides(rng, shape, true)).unwrap();
        }
        let mut bytes = vec![0u8; d.total_bytes()];
        for i in 0..bytes.len() / esz {
            let v = if rng.chance(20) {
                special(c.dt, rng)
            } else {
                rng.next()
            };
            bytes[i * esz..(i + 1) * esz].copy_from_slice(&v.to_le_bytes()[..esz]);
        }
        descs.push(d);
        datas.push(bytes);
    }
    // In place: an allowed input of the output's shape and type becomes the output.
    let alias =
        c.op.in_place()
            .iter()
            .copied()
            .filter(|&k| {
                c.in_shapes[k] == c.out_shape && descs[k].strides().is_none_or(|s| !s.contains(&0))
            })
            .find(|_| rng.chance(40));
    let mut out_desc = TensorDesc::new(c.out_dt, &c.out_shape).unwrap();
    if let Some(k) = alias {
        out_desc = descs[k];
    } else if strides && rng.chance(50) {
        out_desc = out_desc
            .with_strides(&random_strides(rng, &c.out_shape, false))
            .unwrap();
    }
    let out_init = match alias {
        Some(k) => datas[k].clone(),
        None => vec![SENTINEL; out_desc.total_bytes()],
    };
    Built {
        case: c,
        descs,
        datas,
        alias,
        out_desc,
        out_init,
    }
}

impl Built {
    /// The call of this case.
    pub fn call(&self) -> tensorbits::Call {
        tensorbits::Call {
            level: tensorbits::FeatureLevel::EXT,
            broadcast: Some(self.case.broadcast),
            ..Default::default()
        }
    }

    /// Runs the case on the CPU through the dynamic entry point, into a copy of `out_init`.
    pub fn run_cpu(&self) -> Result<Vec<u8>, tensorbits::Error> {
        let mut out = self.out_init.clone();
        let inputs: Vec<tensorbits::Input<'_>> = (0..self.case.op.arity())
            .map(|k| {
                if Some(k) == self.alias {
                    tensorbits::Input::Output
                } else {
                    tensorbits::Input::Bytes(&self.descs[k], &self.datas[k])
                }
            })
            .collect();
        tensorbits::execute(
            self.case.op,
            &self.call(),
            &inputs,
            &self.out_desc,
            &mut out,
        )?;
        Ok(out)
    }

    /// The case compiled once and executed, with every buffer starting `offset` bytes into an
    /// allocation (so an odd offset misaligns them for the kernel's words).
    pub fn run_compiled(&self, offset: usize) -> Result<Vec<u8>, tensorbits::Error> {
        let descs: Vec<&TensorDesc> = (0..self.case.op.arity())
            .map(|k| {
                if Some(k) == self.alias {
                    &self.out_desc
                } else {
                    &self.descs[k]
                }
            })
            .collect();
        let compiled = tensorbits::compile(self.case.op, &self.call(), &descs, &self.out_desc)?;
        let shifted: Vec<Vec<u8>> = self
            .datas
            .iter()
            .map(|d| [vec![0u8; offset], d.clone()].concat())
            .collect();
        let buffers: Vec<tensorbits::InputBuffer<'_>> = (0..self.case.op.arity())
            .map(|k| {
                if Some(k) == self.alias {
                    tensorbits::InputBuffer::Output
                } else {
                    tensorbits::InputBuffer::Bytes(&shifted[k][offset..])
                }
            })
            .collect();
        let mut out = [vec![0u8; offset], self.out_init.clone()].concat();
        compiled.execute(&buffers, &mut out[offset..])?;
        Ok(out.split_off(offset))
    }
}
