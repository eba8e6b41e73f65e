//! `binarize`: `np.packbits(x > threshold, axis=-1, bitorder=...)` for every data type, special
//! values included, against a reference written here; the exact conversions of real and integer
//! thresholds; the errors; and the GPU kernel, bit for bit with the CPU, past one binding and past
//! 65,535 workgroups.

mod common;

use common::{Rng, cases::special, gpu};
use half::f16;
use tensorbits::{
    BitOrder, DataType, Error, Tensor, TensorDesc, TensorViewMut, Thresholds, binarize,
    binarize_bytes, binarize_into,
};

/// Bits of a value of `dt` as an exact real (`None` for NaN), or as an integer.
enum Num {
    Nan,
    Real(f64),
    Int(i128),
}

fn num(dt: DataType, v: u64) -> Num {
    let real = |f: f64| if f.is_nan() { Num::Nan } else { Num::Real(f) };
    match dt {
        DataType::F16 => real(f16::from_bits(v as u16).to_f64()),
        DataType::F32 => real(f64::from(f32::from_bits(v as u32))),
        DataType::F64 => real(f64::from_bits(v)),
        DataType::Bool => Num::Int(i128::from(v != 0)),
        d if d.is_signed() => Num::Int(i128::from(common::signed(d, v))),
        _ => Num::Int(i128::from(v)),
    }
}

/// `x > t` for two values of `dt`, from first principles.
fn above(dt: DataType, x: u64, t: u64) -> bool {
    match (num(dt, x), num(dt, t)) {
        (Num::Real(a), Num::Real(b)) => a > b,
        (Num::Int(a), Num::Int(b)) => a > b,
        _ => false,
    }
}

/// `np.packbits(bits, axis=-1, bitorder)` of rows of `d` booleans.
fn packbits(bits: &[bool], d: usize, order: BitOrder) -> Vec<u8> {
    let nb = d.div_ceil(8);
    let mut out = vec![0u8; bits.len() / d.max(1) * nb];
    for (r, row) in bits.chunks(d.max(1)).enumerate() {
        for (i, &b) in row.iter().enumerate() {
            if b {
                let at = match order {
                    BitOrder::Big => 7 - i % 8,
                    BitOrder::Little => i % 8,
                };
                out[r * nb + i / 8] |= 1 << at;
            }
        }
    }
    out
}

fn value(dt: DataType, rng: &mut Rng) -> u64 {
    let m = common::mask(dt);
    match rng.below(4) {
        0 => special(dt, rng),
        // Values near zero, where thresholds sit.
        1 => match dt {
            DataType::F16 => u64::from(f16::from_f32(rng.below(9) as f32 - 4.0).to_bits()),
            DataType::F32 => u64::from((rng.below(9) as f32 - 4.0).to_bits()),
            DataType::F64 => (rng.below(9) as f64 - 4.0).to_bits(),
            _ => (rng.below(9) as u64).wrapping_sub(4) & m,
        },
        _ => rng.next() & m,
    }
}

fn le_bytes(dt: DataType, vals: &[u64]) -> Vec<u8> {
    let es = dt.size();
    vals.iter()
        .flat_map(|v| v.to_le_bytes()[..es].to_vec())
        .collect()
}

/// One random call: the input's bits, the thresholds' bits (1 or `d`), the reference codes.
struct Call {
    dt: DataType,
    shape: Vec<usize>,
    x: Vec<u64>,
    t: Vec<u64>,
    order: BitOrder,
    expect: Vec<u8>,
}

fn random_call(dt: DataType, rng: &mut Rng) -> Call {
    let d = [1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 130, 257][rng.below(14)];
    let shape = match rng.below(3) {
        0 => vec![d],
        1 => vec![1 + rng.below(5), d],
        _ => vec![2, 1 + rng.below(3), d],
    };
    let n: usize = shape.iter().product();
    let x: Vec<u64> = (0..n).map(|_| value(dt, rng)).collect();
    let per = rng.chance(50);
    let t: Vec<u64> = (0..if per { d } else { 1 })
        .map(|_| value(dt, rng))
        .collect();
    let order = if rng.chance(50) {
        BitOrder::Big
    } else {
        BitOrder::Little
    };
    let bits: Vec<bool> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| above(dt, v, t[if per { i % d } else { 0 }]))
        .collect();
    let expect = packbits(&bits, d, order);
    Call {
        dt,
        shape,
        x,
        t,
        order,
        expect,
    }
}

fn run_cpu(c: &Call) -> Result<Vec<u8>, Error> {
    let desc = TensorDesc::new(c.dt, &c.shape)?;
    let t = Thresholds::from_le_bytes(c.dt, &le_bytes(c.dt, &c.t)).unwrap();
    let mut out = vec![0xa5u8; c.expect.len()];
    binarize_bytes(&desc, &le_bytes(c.dt, &c.x), &t, c.order, &mut out)?;
    Ok(out)
}

#[test]
fn every_type_matches_packbits_of_a_comparison() {
    let mut rng = Rng(19);
    for dt in DataType::ALL {
        for _ in 0..60 {
            let c = random_call(dt, &mut rng);
            assert_eq!(
                run_cpu(&c).unwrap(),
                c.expect,
                "{dt} {:?} {:?}",
                c.shape,
                c.order
            );
        }
    }
}

#[test]
fn long_rows_and_many_rows_spread_over_threads() {
    // Past the size from which a call runs on the thread pool, with rows that are not whole
    // bytes and per-dimension thresholds.
    let mut rng = Rng(7);
    for (rows, d, per) in [(20_000, 77, true), (3, 700_001, false), (40_000, 64, false)] {
        let x: Vec<f32> = (0..rows * d)
            .map(|_| (rng.below(2001) as f32 - 1000.0) / 7.0)
            .collect();
        let t: Vec<f32> = (0..d).map(|i| (i % 13) as f32 - 6.0).collect();
        let xt = Tensor::from_vec(x.clone(), &[rows, d]).unwrap();
        for order in [BitOrder::Big, BitOrder::Little] {
            let got = if per {
                binarize(&xt, &t, order).unwrap()
            } else {
                binarize(&xt, 0.5f32, order).unwrap()
            };
            let bits: Vec<bool> = x
                .iter()
                .enumerate()
                .map(|(i, &v)| v > if per { t[i % d] } else { 0.5 })
                .collect();
            assert_eq!(got.shape(), &[rows, d.div_ceil(8)]);
            assert_eq!(
                got.data(),
                packbits(&bits, d, order).as_slice(),
                "{rows}x{d}"
            );
        }
    }
}

#[test]
fn typed_entry_points_match_the_dynamic_one() {
    let x = [
        0.5f32,
        -1.0,
        2.0,
        f32::NAN,
        0.0,
        -0.0,
        3.0,
        -0.5,
        1.0,
        f32::INFINITY,
    ];
    let xt = Tensor::from_vec(x.to_vec(), &[2, 5]).unwrap();
    let codes = binarize(&xt, -0.0f32, BitOrder::Big).unwrap();
    // Row 0: 0.5, -1, 2, NaN, 0 -> 1 0 1 0 0; row 1: -0, 3, -0.5, 1, inf -> 0 1 0 1 1.
    assert_eq!(codes.data(), &[0b1010_0000, 0b0101_1000]);
    let little = binarize(&xt, &[0.0f32, 0.0, 1.5, 0.0, 0.0], BitOrder::Little).unwrap();
    assert_eq!(little.data(), &[0b0000_0101, 0b0001_1010]);
    // A strided view: the transpose of a [5, 2] tensor.
    let tr = Tensor::from_vec(vec![1u16, 0, 2, 5, 3, 0, 4, 9, 5, 1], &[5, 2]).unwrap();
    let view = tensorbits::TensorView::with_strides(tr.data(), &[2, 5], &[1, 2]).unwrap();
    let got = binarize(view, 2u16, BitOrder::Big).unwrap();
    // Columns: [1, 2, 3, 4, 5] and [0, 5, 0, 9, 1].
    assert_eq!(got.data(), &[0b0011_1000, 0b0101_0000]);
    let mut out = [0xffu8; 2];
    binarize_into(
        view,
        2u16,
        BitOrder::Big,
        TensorViewMut::new(&mut out, &[2, 1]).unwrap(),
    )
    .unwrap();
    assert_eq!(out, [0b0011_1000, 0b0101_0000]);
    let h = Tensor::from_vec(
        [
            0.25f32,
            -0.0,
            f32::NAN,
            7.0,
            -3.0,
            0.0,
            65504.0,
            -65504.0,
            1e-7,
        ]
        .map(f16::from_f32)
        .to_vec(),
        &[9],
    )
    .unwrap();
    assert_eq!(
        binarize(&h, f16::ZERO, BitOrder::Big).unwrap().data(),
        &[0b1001_0010, 0b1000_0000]
    );
    let b = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    assert_eq!(
        binarize(&b, false, BitOrder::Big).unwrap().data(),
        &[0b1010_0000]
    );
}

#[test]
fn real_thresholds_convert_exactly() {
    let mut rng = Rng(3);
    let reals = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.0,
        -1.0,
        127.5,
        -128.5,
        255.0,
        255.5,
        -1e30,
        1e30,
        0.1,
        -0.1,
        1e-300,
        65504.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        9.007_199_254_740_993e15,
    ];
    for dt in DataType::ALL {
        for _ in 0..40 {
            let d = 1 + rng.below(20);
            let mut x: Vec<u64> = (0..3 * d).map(|_| value(dt, &mut rng)).collect();
            let mut t: Vec<f64> = (0..d).map(|_| reals[rng.below(reals.len())]).collect();
            if matches!(dt, DataType::I64 | DataType::U64) && rng.below(2) == 0 {
                // Values and thresholds where float64 no longer holds every integer: numpy
                // rounds `x` to float64 before it compares, and so must the codes.
                for (i, v) in x.iter_mut().enumerate() {
                    let base = [1i128 << 53, 1 << 62, -(1 << 60), (1 << 64) - 4096][i % 4];
                    let near = base + rng.below(4096) as i128 - 2048;
                    *v = near as u64 & common::mask(dt);
                }
                for (j, th) in t.iter_mut().enumerate() {
                    let v = num(dt, x[j]);
                    if let Num::Int(i) = v {
                        // The value itself, its neighbours, and a half-way point, as floats.
                        *th = [
                            i as f64,
                            (i as f64).next_up(),
                            (i as f64).next_down(),
                            i as f64 + 0.5,
                        ][rng.below(4)];
                    }
                }
            }
            let exact = |v: u64| -> Option<f64> {
                match num(dt, v) {
                    Num::Nan => None,
                    Num::Real(f) => Some(f),
                    // numpy's comparison: the integer rounded to float64 (to nearest, ties
                    // to even), then compared.
                    Num::Int(i) => Some(i as f64),
                }
            };
            let bits: Vec<bool> = x
                .iter()
                .enumerate()
                .map(|(i, &v)| exact(v).is_some_and(|f| f > t[i % d]))
                .collect();
            let order = BitOrder::Big;
            let desc = TensorDesc::new(dt, &[3, d]).unwrap();
            let mut out = vec![0u8; 3 * d.div_ceil(8)];
            let th = Thresholds::from_f64(dt, &t);
            binarize_bytes(&desc, &le_bytes(dt, &x), &th, order, &mut out).unwrap();
            assert_eq!(out, packbits(&bits, d, order), "{dt} t={t:?}");
            if let Some(g) = gpu::gpu() {
                let got = g
                    .binarize_bytes(&desc, &le_bytes(dt, &x), &th, order)
                    .unwrap();
                assert_eq!(got, out, "GPU {dt} t={t:?}");
            }
        }
    }
}

#[test]
fn integer_thresholds_convert_exactly() {
    let ints: [i128; 12] = [
        0,
        -1,
        1,
        -129,
        128,
        255,
        256,
        -40_000,
        1 << 40,
        -(1 << 70),
        1 << 70,
        i128::from(u64::MAX),
    ];
    let mut rng = Rng(5);
    for dt in DataType::ALL {
        let d = 12;
        let x: Vec<u64> = (0..4 * d).map(|_| value(dt, &mut rng)).collect();
        let th = Thresholds::from_i128(dt, &ints);
        let bits: Vec<bool> = x
            .iter()
            .enumerate()
            .map(|(i, &v)| match num(dt, v) {
                Num::Nan => false,
                Num::Int(a) => a > ints[i % d],
                // The test's thresholds are exact in f64.
                Num::Real(f) => f > ints[i % d] as f64,
            })
            .collect();
        let desc = TensorDesc::new(dt, &[4, d]).unwrap();
        let mut out = vec![0u8; 4 * 2];
        binarize_bytes(&desc, &le_bytes(dt, &x), &th, BitOrder::Little, &mut out).unwrap();
        assert_eq!(out, packbits(&bits, d, BitOrder::Little), "{dt}");
        if let Some(g) = gpu::gpu() {
            let got = g
                .binarize_bytes(&desc, &le_bytes(dt, &x), &th, BitOrder::Little)
                .unwrap();
            assert_eq!(got, out, "GPU {dt}");
        }
    }
}

#[test]
fn bad_calls_are_typed_errors_and_write_nothing() {
    let x = Tensor::from_vec(vec![1.0f32; 12], &[3, 4]).unwrap();
    let e = binarize(&x, &[0.0f32, 1.0, 2.0], BitOrder::Big).unwrap_err();
    assert!(
        matches!(&e, Error::BadArgument { op: "binarize", .. })
            && e.to_string()
                .contains("3 thresholds for a last axis of 4 elements"),
        "{e}"
    );
    let s = Tensor::scalar(1.0f32);
    let e = binarize(&s, 0.0f32, BitOrder::Big).unwrap_err();
    assert!(e.to_string().contains("scalar"), "{e}");
    let mut out = [7u8; 4];
    let e = binarize_into(
        &x,
        0.0f32,
        BitOrder::Big,
        TensorViewMut::new(&mut out, &[4, 1]).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::OutputShape { .. }), "{e}");
    assert_eq!(out, [7u8; 4]);
    let desc = TensorDesc::new(DataType::F32, &[3, 4]).unwrap();
    let wrong = Thresholds::from_f64(DataType::F64, &[0.0]);
    let mut out = [7u8; 3];
    let e = binarize_bytes(&desc, &[0u8; 48], &wrong, BitOrder::Big, &mut out).unwrap_err();
    assert!(
        e.to_string().contains("thresholds take x's data type"),
        "{e}"
    );
    let right = Thresholds::from_f64(DataType::F32, &[0.0]);
    let e = binarize_bytes(&desc, &[0u8; 40], &right, BitOrder::Big, &mut out).unwrap_err();
    assert!(matches!(e, Error::BufferTooSmall { .. }), "{e}");
    let e = binarize_bytes(&desc, &[0u8; 48], &right, BitOrder::Big, &mut [0u8; 4]).unwrap_err();
    assert!(e.to_string().contains("the output holds 4 bytes"), "{e}");
    assert_eq!(out, [7u8; 3]);
}

#[test]
fn gpu_matches_the_cpu_bit_for_bit() {
    let Some(g) = gpu::gpu() else { return };
    let small = gpu::small_gpu();
    let mut rng = Rng(23);
    for dt in DataType::ALL {
        for _ in 0..12 {
            let c = random_call(dt, &mut rng);
            let desc = TensorDesc::new(c.dt, &c.shape).unwrap();
            let t = Thresholds::from_le_bytes(c.dt, &le_bytes(c.dt, &c.t)).unwrap();
            let x = le_bytes(c.dt, &c.x);
            let got = g.binarize_bytes(&desc, &x, &t, c.order).unwrap();
            assert_eq!(got, c.expect, "{dt} {:?} {:?}", c.shape, c.order);
            // Bindings of 4 KiB: rows in several dispatches, windows off the rows' starts.
            if let Some(s) = small
                && (desc.total_bytes() <= 2048 || c.shape.last() < Some(&200))
            {
                match s.binarize_bytes(&desc, &x, &t, c.order) {
                    Ok(got) => assert_eq!(got, c.expect, "small {dt} {:?}", c.shape),
                    Err(Error::GpuUnsupported { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }
    // Many rows on the small device: dozens of dispatches, rows of odd byte counts.
    if let Some(s) = small {
        let rows = 1000;
        let d = 13;
        let x: Vec<i16> = (0..rows * d).map(|_| rng.next() as i16).collect();
        let xt = Tensor::from_vec(x, &[rows, d]).unwrap();
        let cpu = binarize(&xt, -7i16, BitOrder::Big).unwrap();
        assert_eq!(
            s.binarize(&xt, -7i16, BitOrder::Big).unwrap().data(),
            cpu.data()
        );
    }
}

/// One input larger than a binding (128 MiB on lavapipe) and more output words than 65,535
/// workgroups of 64 invocations hold: several dispatches, each in two dimensions.
#[test]
fn gpu_past_one_binding_and_65535_workgroups() {
    let Some(g) = gpu::gpu() else { return };
    let rows = (1usize << 20) + 3;
    let d = 130; // 17 bytes a row: 4.46 million output words; 136 MB of input
    let mut rng = Rng(31);
    let x: Vec<u8> = (0..rows * d).map(|_| rng.next() as u8).collect();
    let xt = Tensor::from_vec(x, &[rows, d]).unwrap();
    let t: Vec<u8> = (0..d).map(|i| (i * 2) as u8).collect();
    let cpu = binarize(&xt, &t, BitOrder::Little).unwrap();
    let gpu = g.binarize(&xt, &t, BitOrder::Little).unwrap();
    assert_eq!(gpu.shape(), cpu.shape());
    assert!(gpu.data() == cpu.data(), "GPU and CPU codes differ");
    // Spot-check the CPU against the reference on a few rows.
    for r in [0, rows / 2, rows - 1] {
        let bits: Vec<bool> = (0..d).map(|i| xt.data()[r * d + i] > t[i]).collect();
        assert_eq!(
            &cpu.data()[r * 17..r * 17 + 17],
            packbits(&bits, d, BitOrder::Little).as_slice()
        );
    }
}

/// On regions of the caller's buffers (a framework's pooled buffers): `x` and the codes at offsets
/// inside larger buffers; the codes equal the CPU's and the bytes around them keep their values.
#[test]
fn gpu_on_regions_of_a_callers_buffers() {
    let Some(g) = gpu::gpu() else { return };
    let (rows, d) = (37usize, 45usize);
    let nb = d.div_ceil(8);
    let mut rng = Rng(99);
    let x: Vec<f32> = (0..rows * d)
        .map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let desc = TensorDesc::new(DataType::F32, &[rows, d]).unwrap();
    let thresholds = Thresholds::from_f64(DataType::F32, &[0.25]);
    let mut want = vec![0u8; rows * nb];
    binarize_bytes(
        &desc,
        bytemuck::cast_slice(&x),
        &thresholds,
        BitOrder::Little,
        &mut want,
    )
    .unwrap();
    // x at byte 256 + 8 of its buffer; the codes at byte 13 of a buffer of 0xAB bytes (garbage
    // where they go, too).
    let (x_at, out_at) = (264usize, 13usize);
    let mut xb = vec![0u8; x_at + x.len() * 4 + 40];
    xb[x_at..x_at + x.len() * 4].copy_from_slice(bytemuck::cast_slice(&x));
    let ob = vec![0xABu8; out_at + rows * nb + 11];
    let xbuf = g.storage_buffer("x", xb.len(), &xb).unwrap();
    let obuf = g
        .storage_buffer("codes", ob.len().div_ceil(4) * 4, &ob)
        .unwrap();
    let out_desc = TensorDesc::new(DataType::U8, &[rows, nb]).unwrap();
    g.binarize_into(
        &tensorbits::GpuRegion {
            buffer: &xbuf,
            offset: x_at as u64,
            desc,
        },
        &thresholds,
        BitOrder::Little,
        &tensorbits::GpuRegion {
            buffer: &obuf,
            offset: out_at as u64,
            desc: out_desc,
        },
        None,
    )
    .unwrap();
    let got = g.read_bytes(&obuf, 0, obuf.size()).unwrap();
    assert_eq!(&got[out_at..out_at + rows * nb], &want[..], "codes");
    assert!(
        got[..out_at].iter().all(|&b| b == 0xAB),
        "bytes before the codes"
    );
    assert!(
        got[out_at + rows * nb..ob.len()].iter().all(|&b| b == 0xAB),
        "bytes after the codes"
    );
    // A strided x, or codes of another shape, are refused before any work.
    let strided = desc.with_strides(&[1, rows]).unwrap();
    let e = g
        .binarize_into(
            &tensorbits::GpuRegion {
                buffer: &xbuf,
                offset: 0,
                desc: strided,
            },
            &thresholds,
            BitOrder::Little,
            &tensorbits::GpuRegion {
                buffer: &obuf,
                offset: 0,
                desc: out_desc,
            },
            None,
        )
        .unwrap_err();
    assert!(e.to_string().contains("packed"), "{e}");
}

/// `x` and the codes in one buffer (as a framework's memory pool places them): `x` is read from a
/// copy, and the codes are the CPU's.
#[test]
fn gpu_on_regions_of_one_buffer() {
    let Some(g) = gpu::gpu() else { return };
    let (rows, d) = (9usize, 21usize);
    let nb = d.div_ceil(8);
    let x: Vec<u16> = (0..rows * d).map(|i| (i * 7919 % 65_536) as u16).collect();
    let desc = TensorDesc::new(DataType::U16, &[rows, d]).unwrap();
    let thresholds = Thresholds::from_i128(DataType::U16, &[30_000]);
    let mut want = vec![0u8; rows * nb];
    binarize_bytes(
        &desc,
        bytemuck::cast_slice(&x),
        &thresholds,
        BitOrder::Big,
        &mut want,
    )
    .unwrap();
    let mut bytes = bytemuck::cast_slice::<u16, u8>(&x).to_vec();
    let out_at = bytes.len() + 2;
    bytes.resize(out_at + rows * nb + 5, 0x5A);
    let buf = g
        .storage_buffer("pool", bytes.len().div_ceil(4) * 4, &bytes)
        .unwrap();
    let out_desc = TensorDesc::new(DataType::U8, &[rows, nb]).unwrap();
    g.binarize_into(
        &tensorbits::GpuRegion {
            buffer: &buf,
            offset: 0,
            desc,
        },
        &thresholds,
        BitOrder::Big,
        &tensorbits::GpuRegion {
            buffer: &buf,
            offset: out_at as u64,
            desc: out_desc,
        },
        None,
    )
    .unwrap();
    let got = g.read_bytes(&buf, 0, buf.size()).unwrap();
    assert_eq!(&got[out_at..out_at + rows * nb], &want[..]);
    assert_eq!(&got[..out_at], &bytes[..out_at], "x and the bytes after it");
    assert!(
        got[out_at + rows * nb..bytes.len()]
            .iter()
            .all(|&b| b == 0x5A)
    );
}
