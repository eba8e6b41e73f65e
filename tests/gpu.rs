//! The GPU executor against the CPU one, bit for bit: every op and type through random shapes,
//! broadcast modes, strides and in-place runs, in caller buffers at offsets that are not multiples of
//! 4, with sentinel bytes around every output that must survive. Also the seed examples on the GPU,
//! lowered device limits (split dispatches), the caller's command encoder, and errors.

mod common;

use common::Rng;
use common::cases::{Built, build};
use common::gpu::{gpu, small_gpu};
use proptest::prelude::*;
use tensorbits::ops::{BitCount, BitNot, BitXor};
use tensorbits::wgpu;
use tensorbits::{
    Broadcast, Call, DataType, Error, FeatureLevel, GpuExecutor, GpuInput, GpuRegion, Op, Options,
    Tensor, TensorDesc,
};

const PAD: u8 = 0x5A;

/// A buffer holding `data` at `offset`, `PAD` bytes around it, its size a multiple of 4.
fn buffer(g: &GpuExecutor, data: &[u8], offset: usize, tail: usize) -> wgpu::Buffer {
    let mut bytes = vec![PAD; offset];
    bytes.extend_from_slice(data);
    bytes.extend(std::iter::repeat_n(PAD, tail));
    bytes.resize(bytes.len().div_ceil(4).max(1) * 4, PAD);
    let b = g.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test"),
        size: bytes.len() as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    g.queue().write_buffer(&b, 0, &bytes);
    b
}

/// An offset that is a multiple of `es` and often not of 4 (or beyond the 256-byte binding alignment).
fn offset(rng: &mut Rng, es: usize) -> usize {
    match rng.below(4) {
        0 => 0,
        1 => es * (1 + rng.below(3)),
        2 => 256 + es * rng.below(4),
        _ => es * rng.below(40),
    }
}

fn check_on(g: &GpuExecutor, seed: u64, small: bool) {
    let built = build(seed);
    let cpu = built
        .run_cpu()
        .unwrap_or_else(|e| panic!("seed {seed}: CPU: {e}"));
    let call = built.call();
    let Built {
        case: c,
        descs,
        datas,
        alias,
        out_desc,
        out_init,
    } = built;
    let mut rng = Rng(seed ^ 0xD1CE);

    // The same call on the GPU, in buffers at awkward offsets.
    let in_bufs: Vec<(wgpu::Buffer, usize)> = datas
        .iter()
        .map(|d| {
            let off = offset(&mut rng, c.dt.size());
            (buffer(g, d, off, rng.below(7)), off)
        })
        .collect();
    let o_off = offset(&mut rng, c.out_dt.size());
    let tail = rng.below(7);
    let out_buf = buffer(g, &out_init, o_off, tail);
    let gin: Vec<GpuInput<'_>> = (0..c.op.arity())
        .map(|k| {
            if Some(k) == alias {
                GpuInput::Output
            } else {
                GpuInput::Region(GpuRegion {
                    buffer: &in_bufs[k].0,
                    offset: in_bufs[k].1 as u64,
                    desc: descs[k],
                })
            }
        })
        .collect();
    let out_region = GpuRegion {
        buffer: &out_buf,
        offset: o_off as u64,
        desc: out_desc,
    };
    g.execute(c.op, &call, &gin, &out_region, None)
        .unwrap_or_else(|e| panic!("seed {seed} (small limits: {small}): GPU: {e}\n{c:?}"));
    let got = g.read_bytes(&out_buf, 0, out_buf.size()).unwrap();
    assert!(
        got[..o_off].iter().all(|&b| b == PAD),
        "seed {seed}: bytes before the output were written\n{c:?}"
    );
    assert!(
        got[o_off + cpu.len()..].iter().all(|&b| b == PAD),
        "seed {seed}: bytes after the output were written\n{c:?}"
    );
    let region = &got[o_off..o_off + cpu.len()];
    if region != cpu.as_slice() {
        let i = region
            .iter()
            .zip(&cpu)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "seed {seed} (small limits: {small}): GPU and CPU differ first at output byte {i}: gpu {:02x?} cpu {:02x?}\n{} {} -> {} {:?}\n{c:?}",
            &region[i..(i + 8).min(region.len())],
            &cpu[i..(i + 8).min(cpu.len())],
            c.op.name(),
            c.dt,
            c.out_dt,
            out_desc
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn gpu_matches_cpu_bit_for_bit(seed in any::<u64>()) {
        if let Some(g) = gpu() {
            check_on(g, seed, false);
        }
    }

    #[test]
    fn gpu_with_lowered_limits_matches_cpu(seed in any::<u64>()) {
        if let Some(g) = small_gpu() {
            check_on(g, seed, true);
        }
    }
}

#[test]
fn every_op_and_type_on_the_gpu() {
    let Some(g) = gpu() else { return };
    let mut seen = std::collections::HashSet::new();
    let want: usize = common::cases::ops()
        .iter()
        .map(|o| o.all_types().len())
        .sum();
    let mut seed = 0u64;
    while seen.len() < want && seed < 200_000 {
        let c = common::cases::make_case(&mut Rng(seed));
        if seen.insert((c.op.name(), c.dt)) {
            check_on(g, seed, false);
        }
        seed += 1;
    }
    assert_eq!(seen.len(), want);
}

#[test]
fn seed_examples_on_the_gpu() {
    let Some(g) = gpu() else { return };
    let x = g
        .upload(&Tensor::from_vec(vec![0u8, 128, 42, 255], &[2, 2]).unwrap())
        .unwrap();
    let y = g
        .download(&BitNot::run_gpu(g, &Options::new(), &x).unwrap())
        .unwrap();
    assert_eq!(y.data(), &[255, 127, 213, 0]);
    assert_eq!(y.shape(), &[2, 2]);

    let a = g
        .upload(&Tensor::from_vec(vec![21u8, 120], &[2]).unwrap())
        .unwrap();
    let b = g
        .upload(&Tensor::from_vec(vec![3u8, 37], &[2]).unwrap())
        .unwrap();
    assert_eq!(
        g.download(&BitXor::run_gpu(g, &Options::new(), &a, &b).unwrap())
            .unwrap()
            .data(),
        &[22, 93]
    );

    let p = g
        .upload(&Tensor::from_vec(vec![true, false, false], &[3]).unwrap())
        .unwrap();
    let q = g
        .upload(&Tensor::from_vec(vec![true, true, false], &[3]).unwrap())
        .unwrap();
    assert_eq!(
        g.download(&BitXor::run_gpu(g, &Options::new(), &p, &q).unwrap())
            .unwrap()
            .data(),
        &[false, true, false]
    );

    let a = Tensor::from_vec((0..48u32).collect(), &[8, 1, 6, 1]).unwrap();
    let b = Tensor::from_vec((0..35u32).map(|v| v * 1000).collect(), &[7, 1, 5]).unwrap();
    let opts = Options::new().broadcast(Broadcast::Numpy);
    let y = g
        .download(
            &BitXor::run_gpu(g, &opts, &g.upload(&a).unwrap(), &g.upload(&b).unwrap()).unwrap(),
        )
        .unwrap();
    assert_eq!(y, BitXor::run_with(&opts, &a, &b).unwrap());
    assert_eq!(y.shape(), &[8, 7, 6, 5]);

    let x = g
        .upload(&Tensor::from_vec(vec![0u32, 123, 456, 789], &[2, 2]).unwrap())
        .unwrap();
    let c: Tensor<u8> = g
        .download(&BitCount::run_gpu(g, &Options::new(), &x).unwrap())
        .unwrap();
    assert_eq!(c.data(), &[0, 6, 4, 5]);
}

/// Outputs of 1, 2, 3 and 5 bytes at offsets that are not multiples of 4: every byte but the output's
/// elements keeps its value (even the padding a description's total size rounds up to), although the
/// GPU works on whole 4-byte words.
#[test]
fn tiny_outputs_write_no_byte_outside() {
    let Some(g) = gpu() else { return };
    for n in [1usize, 2, 3, 5] {
        for off in 0..8usize {
            let a: Vec<u8> = (0..n as u8)
                .map(|i| i.wrapping_mul(37).wrapping_add(1))
                .collect();
            let d = TensorDesc::new(DataType::U8, &[n]).unwrap();
            let ab = buffer(g, &a, 0, 0);
            let ob = buffer(g, &[], 0, 16);
            let region = GpuRegion {
                buffer: &ob,
                offset: off as u64,
                desc: d,
            };
            let inp = GpuRegion {
                buffer: &ab,
                offset: 0,
                desc: d,
            };
            g.execute(
                <BitNot as Op>::INFO,
                &Call::default(),
                &[GpuInput::Region(inp)],
                &region,
                None,
            )
            .unwrap();
            let got = g.read_bytes(&ob, 0, ob.size()).unwrap();
            for (i, &byte) in got.iter().enumerate() {
                let want = if (off..off + n).contains(&i) {
                    !a[i - off]
                } else {
                    PAD
                };
                assert_eq!(byte, want, "{n} bytes at offset {off}: byte {i}");
            }
        }
    }
}

#[test]
fn large_tensors_split_under_lowered_limits() {
    let Some(g) = small_gpu() else { return };
    // 100 000 u8 (far past a 4 KiB binding and 4x4 workgroups of 64) and a broadcast u64 case.
    let a = Tensor::from_vec((0..100_000u32).map(|i| (i * 7) as u8).collect(), &[100_000]).unwrap();
    let b = Tensor::from_vec(
        (0..100_000u32).map(|i| (i >> 3) as u8).collect(),
        &[100_000],
    )
    .unwrap();
    let y = g
        .download(
            &BitXor::run_gpu(
                g,
                &Options::new(),
                &g.upload(&a).unwrap(),
                &g.upload(&b).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(y, BitXor::run(&a, &b).unwrap());
    let m = Tensor::from_vec(
        (0..3000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect(),
        &[300, 10],
    )
    .unwrap();
    let r = Tensor::from_vec((0..10u64).collect(), &[10]).unwrap();
    let opts = Options::new().broadcast(Broadcast::Numpy);
    let y = g
        .download(
            &BitXor::run_gpu(g, &opts, &g.upload(&m).unwrap(), &g.upload(&r).unwrap()).unwrap(),
        )
        .unwrap();
    assert_eq!(y, BitXor::run_with(&opts, &m, &r).unwrap());
}

#[test]
fn recording_into_the_callers_encoder() {
    let Some(g) = gpu() else { return };
    let d = TensorDesc::new(DataType::U32, &[4]).unwrap();
    let a = buffer(g, bytemuck::cast_slice(&[1u32, 2, 3, 4]), 0, 0);
    let b = buffer(g, bytemuck::cast_slice(&[0x10u32, 0x20, 0x30, 0x40]), 0, 0);
    let o = buffer(g, &[0; 16], 0, 0);
    let mut enc = g.device().create_command_encoder(&Default::default());
    let ins = [
        GpuInput::Region(GpuRegion {
            buffer: &a,
            offset: 0,
            desc: d,
        }),
        GpuInput::Region(GpuRegion {
            buffer: &b,
            offset: 0,
            desc: d,
        }),
    ];
    g.execute(
        <BitXor as Op>::INFO,
        &Call::default(),
        &ins,
        &GpuRegion {
            buffer: &o,
            offset: 0,
            desc: d,
        },
        Some(&mut enc),
    )
    .unwrap();
    // Nothing runs until the caller submits.
    assert_eq!(g.read_bytes(&o, 0, 16).unwrap(), vec![0; 16]);
    g.queue().submit([enc.finish()]);
    let got: Vec<u32> = bytemuck::cast_slice(&g.read_bytes(&o, 0, 16).unwrap()).to_vec();
    assert_eq!(got, [0x11, 0x22, 0x33, 0x44]);
}

#[test]
fn inputs_sharing_the_output_buffer() {
    let Some(g) = gpu() else { return };
    let d = TensorDesc::new(DataType::U16, &[3]).unwrap();
    let words: Vec<u8> = [1u16, 2, 3, 0xff00, 0xff00, 0xff00]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let buf = buffer(g, &words, 0, 8);
    let at = |offset| GpuRegion {
        buffer: &buf,
        offset,
        desc: d,
    };
    // a at 0, b at 6, output at 12 (disjoint), then in place on a.
    g.execute(
        <BitXor as Op>::INFO,
        &Call::default(),
        &[GpuInput::Region(at(0)), GpuInput::Region(at(6))],
        &at(12),
        None,
    )
    .unwrap();
    g.execute(
        <BitXor as Op>::INFO,
        &Call::default(),
        &[GpuInput::Region(at(0)), GpuInput::Region(at(6))],
        &at(0),
        None,
    )
    .unwrap();
    let got = g.read_bytes(&buf, 0, 20).unwrap();
    let v: Vec<u16> = got[..18]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(
        v,
        [
            0xff01, 0xff02, 0xff03, 0xff00, 0xff00, 0xff00, 0xff01, 0xff02, 0xff03
        ]
    );
    // A partial overlap is an error, found before any work is recorded.
    let e = g
        .execute(
            <BitXor as Op>::INFO,
            &Call::default(),
            &[GpuInput::Region(at(2)), GpuInput::Region(at(6))],
            &at(0),
            None,
        )
        .unwrap_err();
    assert!(matches!(e, Error::PartialOverlap { .. }), "{e}");
}

#[test]
fn gpu_errors_are_values() {
    let Some(g) = gpu() else { return };
    let d = TensorDesc::new(DataType::U32, &[4]).unwrap();
    let no_storage = g.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 16,
        usage: wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let ok = buffer(g, &[0; 32], 0, 0);
    let r = GpuRegion {
        buffer: &ok,
        offset: 0,
        desc: d,
    };
    let e = g
        .execute(
            <BitNot as Op>::INFO,
            &Call::default(),
            &[GpuInput::Region(r)],
            &GpuRegion {
                buffer: &no_storage,
                offset: 0,
                desc: d,
            },
            None,
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::GpuBuffer { .. }) && e.to_string().contains("STORAGE"),
        "{e}"
    );
    // Misaligned for the element size.
    let e = g
        .execute(
            <BitNot as Op>::INFO,
            &Call::default(),
            &[GpuInput::Region(r)],
            &GpuRegion {
                buffer: &ok,
                offset: 2,
                desc: d,
            },
            None,
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("not a multiple of the element size 4"),
        "{e}"
    );
    // A destroyed buffer: wgpu's own validation error comes back as an Err, not a panic.
    let gone = buffer(g, &[0; 16], 0, 0);
    gone.destroy();
    let e = g
        .execute(
            <BitNot as Op>::INFO,
            &Call::default(),
            &[GpuInput::Region(r)],
            &GpuRegion {
                buffer: &gone,
                offset: 0,
                desc: d,
            },
            None,
        )
        .unwrap_err();
    assert!(matches!(e, Error::Gpu { .. }), "{e}");
    // Size 0: nothing to do.
    let z = TensorDesc::new(DataType::U32, &[0, 3]).unwrap();
    let zr = GpuRegion {
        buffer: &ok,
        offset: 0,
        desc: z,
    };
    g.execute(
        <BitNot as Op>::INFO,
        &Call::default(),
        &[GpuInput::Region(zr)],
        &zr,
        None,
    )
    .unwrap();
}

#[test]
fn capabilities_follow_the_table_and_the_word_width() {
    let Some(g) = gpu() else { return };
    let xor = <BitXor as Op>::INFO;
    let caps = g.capabilities(xor, FeatureLevel::FL_3_0);
    let types: Vec<DataType> = caps.iter().map(|c| c.0).collect();
    assert_eq!(types, xor.types_at(FeatureLevel::FL_3_0));
    for (t, s) in g.capabilities(xor, FeatureLevel::EXT) {
        let native = s == tensorbits::GpuTypeSupport::Native;
        assert_eq!(native, t.bits() == 32, "{t}");
    }
    assert!(g.capabilities(xor, FeatureLevel::FL_2_1).is_empty());
}
