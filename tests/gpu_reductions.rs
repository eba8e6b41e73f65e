//! Reductions, pairwise ops and knn on the GPU against the CPU, bit for bit: random cases of every
//! op and type on the GPU's own limits and on limits lowered so that launches are split, every
//! byte of the output buffers compared (so nothing outside the output is written), and the typed
//! forms (`run_on`, `knn_on`).

mod common;

use common::reduce::*;
use common::{Rng, gpu};
use proptest::prelude::*;
use tensorbits::{
    DataType, GpuExecutor, GpuInput, GpuRegion, Input, Options, Target, Tensor, TensorDesc,
    execute, knn, ops,
};

/// A buffer holding `bytes` at `offset` after some filler, for a region.
fn upload(g: &GpuExecutor, bytes: &[u8], offset: usize) -> wgpu::Buffer {
    let mut all = vec![0x5Au8; offset];
    all.extend_from_slice(bytes);
    g.storage_buffer("test", all.len(), &all).unwrap()
}

use tensorbits::wgpu;

fn read_all(g: &GpuExecutor, b: &wgpu::Buffer) -> Vec<u8> {
    g.read_bytes(b, 0, b.size()).unwrap()
}

/// Whether a GPU error is the device's limits refusing a layout they cannot bind: allowed only on
/// the device whose limits are lowered to a few KiB, where a single strided row can exceed them.
fn refused(e: &tensorbits::Error, small: bool) -> bool {
    small && matches!(e, tensorbits::Error::GpuUnsupported { .. })
}

fn check_axes_on(g: &GpuExecutor, seed: u64, small: bool) {
    let mut rng = Rng(seed);
    let c = axes_case(&mut rng);
    let descs: Vec<&TensorDesc> = c.ins.iter().map(|(d, _)| d).collect();
    let Ok(plan) = tensorbits::validate_new_output(c.op, &c.call, &descs, c.out_dt) else {
        return;
    };
    let od = TensorDesc::new(c.out_dt, plan.output_shape()).unwrap();
    let pad = c.out_dt.size().max(4) * rng.below(3);
    let init: Vec<u8> = (0..od.total_bytes() + pad + 8)
        .map(|i| i as u8 ^ 0xC3)
        .collect();
    // The CPU on the same bytes, at the same place in the same buffer.
    let inputs: Vec<Input<'_>> = c.ins.iter().map(|(d, b)| Input::Bytes(d, b)).collect();
    let mut want = init.clone();
    execute(
        c.op,
        &c.call,
        &inputs,
        &od,
        &mut want[pad..pad + od.total_bytes()],
    )
    .unwrap_or_else(|e| panic!("seed {seed}: CPU: {e}"));
    let es = c.dt.size();
    let offsets: Vec<usize> = c.ins.iter().map(|_| es * rng.below(5)).collect();
    let bufs: Vec<wgpu::Buffer> = c
        .ins
        .iter()
        .zip(&offsets)
        .map(|((_, b), &o)| upload(g, b, o))
        .collect();
    let gin: Vec<GpuInput<'_>> = c
        .ins
        .iter()
        .zip(&bufs)
        .zip(&offsets)
        .map(|(((d, _), b), &o)| {
            GpuInput::Region(GpuRegion {
                buffer: b,
                offset: o as u64,
                desc: *d,
            })
        })
        .collect();
    let out = g.storage_buffer("out", init.len(), &init).unwrap();
    let region = GpuRegion {
        buffer: &out,
        offset: pad as u64,
        desc: od,
    };
    match g.execute(c.op, &c.call, &gin, &region, None) {
        Err(e) if refused(&e, small) => return,
        r => r.unwrap_or_else(|e| panic!("seed {seed}: GPU: {} {}: {e}", c.op.name(), c.dt)),
    }
    let got = read_all(g, &out);
    assert_eq!(
        &got[..init.len()],
        &want[..],
        "seed {seed}: {} {} -> {} {:?} shapes {:?}",
        c.op.name(),
        c.dt,
        c.out_dt,
        c.call,
        descs.iter().map(|d| d.sizes().to_vec()).collect::<Vec<_>>()
    );
}

fn check_pairwise_on(g: &GpuExecutor, seed: u64, small: bool) {
    let mut rng = Rng(seed);
    let all = pairwise_ops();
    let op = all[rng.below(all.len())];
    let types = op.all_types();
    let dt = types[rng.below(types.len())];
    let out_dt = op.output_types().map_or(dt, |o| o[rng.below(o.len())]);
    let batch: Vec<usize> = (0..rng.below(3)).map(|_| 1 + rng.below(3)).collect();
    let bb = broadcastable(&mut rng, &batch);
    let (m, n, k) = (rng.below(20), 1 + rng.below(40), rng.below(24));
    let mut sa = batch.clone();
    sa.extend([m, k]);
    let mut sb = bb;
    sb.extend([n, k]);
    let a = tensor(&mut rng, dt, &sa, true);
    let b = tensor(&mut rng, dt, &sb, true);
    let call = tensorbits::Call::default();
    let descs = [&a.0, &b.0];
    let Ok(plan) = tensorbits::validate_new_output(op, &call, &descs, out_dt) else {
        return;
    };
    let od = TensorDesc::new(out_dt, plan.output_shape()).unwrap();
    let inputs = [Input::Bytes(&a.0, &a.1), Input::Bytes(&b.0, &b.1)];
    let init: Vec<u8> = (0..od.total_bytes() + 8).map(|i| i as u8 ^ 0x3C).collect();
    let mut want = init.clone();
    execute(op, &call, &inputs, &od, &mut want[..od.total_bytes()]).unwrap();
    let (ba, bbuf) = (upload(g, &a.1, 0), upload(g, &b.1, 0));
    let out = g.storage_buffer("out", init.len(), &init).unwrap();
    let region = |buffer, desc| GpuRegion {
        buffer,
        offset: 0,
        desc,
    };
    let ran = g.execute(
        op,
        &call,
        &[
            GpuInput::Region(region(&ba, a.0)),
            GpuInput::Region(region(&bbuf, b.0)),
        ],
        &region(&out, od),
        None,
    );
    match ran {
        Err(e) if refused(&e, small) => return,
        r => r.unwrap_or_else(|e| panic!("seed {seed}: GPU: {}: {e}", op.name())),
    }
    assert_eq!(
        &read_all(g, &out)[..init.len()],
        &want[..],
        "seed {seed}: {} {dt} a {sa:?} b {sb:?}",
        op.name()
    );
    if op.reduce() != Some(tensorbits::ReduceOp::Sum) {
        return;
    }
    // knn, ties included: the same lists as the CPU's.
    let kk = rng.below(n + 1);
    let Ok(kplan) = tensorbits::validate_knn(op, &call, &descs, kk, out_dt) else {
        return;
    };
    let dd = TensorDesc::new(out_dt, kplan.output_shape()).unwrap();
    let id = TensorDesc::new(DataType::I64, kplan.output_shape()).unwrap();
    let (mut wd, mut wi) = (
        vec![0x11u8; dd.total_bytes()],
        vec![0x22u8; id.total_bytes()],
    );
    knn(op, &call, &inputs, kk, (&dd, &mut wd), (&id, &mut wi)).unwrap();
    let gd = g
        .storage_buffer("dist", wd.len(), &vec![0x11u8; wd.len()])
        .unwrap();
    let gi = g
        .storage_buffer("idx", wi.len(), &vec![0x22u8; wi.len()])
        .unwrap();
    let ran = g.knn(
        op,
        &call,
        [&region(&ba, a.0), &region(&bbuf, b.0)],
        kk,
        (&region(&gd, dd), &region(&gi, id)),
        None,
    );
    match ran {
        Err(e) if refused(&e, small) => return,
        r => r.unwrap_or_else(|e| panic!("seed {seed}: GPU knn: {e}")),
    }
    assert_eq!(
        &read_all(g, &gd)[..wd.len()],
        &wd[..],
        "seed {seed}: distances"
    );
    assert_eq!(
        &read_all(g, &gi)[..wi.len()],
        &wi[..],
        "seed {seed}: indices"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn reductions_on_the_gpu_match_the_cpu(seed in any::<u64>()) {
        if let Some(g) = gpu::gpu() {
            check_axes_on(g, seed, false);
        }
    }

    #[test]
    fn pairwise_and_knn_on_the_gpu_match_the_cpu(seed in any::<u64>()) {
        if let Some(g) = gpu::gpu() {
            check_pairwise_on(g, seed, false);
        }
    }

    #[test]
    fn split_launches_match_the_cpu(seed in any::<u64>()) {
        if let Some(g) = gpu::small_gpu() {
            check_axes_on(g, seed, true);
            check_pairwise_on(g, seed, true);
        }
    }
}

#[test]
fn typed_forms_on_the_gpu() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let x = Tensor::from_vec(vec![1u8, 2, 4, 7, 7, 7], &[2, 3]).unwrap();
    let opts = Options::new().axes([0]);
    let y = ops::BitXorReduce::run_on(&t, &opts, &x).unwrap();
    assert_eq!(y.data(), &[6, 5, 3]);
    let q = Tensor::from_vec(vec![0u8, 255], &[2, 1]).unwrap();
    let base = Tensor::from_vec(vec![15u8, 0, 255], &[3, 1]).unwrap();
    let d = ops::HammingCdist::run_on(&t, &Options::new(), &q, &base).unwrap();
    assert_eq!(d.data(), &[4u32, 0, 8, 4, 8, 0]);
    let (dist, idx) = ops::HammingCdist::knn_on(&t, &Options::new(), &q, &base, 2).unwrap();
    assert_eq!(
        (dist.data(), idx.data()),
        (&[0u32, 4, 0, 4][..], &[1i64, 0, 2, 0][..])
    );
    // More neighbours than one pass finds: several passes, ties by index.
    let many = Tensor::from_vec((0..200u32).map(|i| i % 7).collect(), &[200, 1]).unwrap();
    let one = Tensor::from_vec(vec![0u32], &[1, 1]).unwrap();
    let (gd, gi) = ops::HammingCdist::knn_on(&t, &Options::new(), &one, &many, 50).unwrap();
    let (cd, ci) = ops::HammingCdist::knn(&one, &many, 50).unwrap();
    assert_eq!((gd.data(), gi.data()), (cd.data(), ci.data()));
}

/// Both reduction kernels on shapes that choose each: one invocation per output for short
/// reductions and for many outputs reduced along an outer axis, a workgroup per output for long
/// contiguous ones; with axes of several dimensions and a sum, an `and` and an `xor`.
#[test]
fn both_reduction_kernels_match_the_cpu() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let mut rng = Rng(5);
    let cases: &[(&[usize], &[i64])] = &[
        (&[3000, 16], &[-1]),     // short rows, many outputs
        (&[100, 2000], &[0]),     // many outputs, outer axis: long strided columns
        (&[300, 512], &[0]),      // few outputs, outer axis
        (&[40, 3000], &[1]),      // long contiguous rows
        (&[3, 50, 70], &[0, 2]),  // an outer and the inner axis
        (&[6, 7, 300], &[1, 2]),  // long reductions over two axes
        (&[1200, 3, 5], &[1, 2]), // many short ones over two axes
    ];
    for (shape, axes) in cases {
        let n: usize = shape.iter().product();
        let data: Vec<u16> = (0..n).map(|_| rng.next() as u16).collect();
        let x = Tensor::from_vec(data, shape).unwrap();
        let opts = Options::new().axes(tensorbits::Axes::new(axes).unwrap());
        let cpu = ops::BitXorReduce::run_with(&opts, &x).unwrap();
        let gpu = ops::BitXorReduce::run_on(&t, &opts, &x).unwrap();
        assert_eq!(gpu.data(), cpu.data(), "xor {shape:?} {axes:?}");
        let cpu = ops::BitAndReduce::run_with(&opts, &x).unwrap();
        let gpu = ops::BitAndReduce::run_on(&t, &opts, &x).unwrap();
        assert_eq!(gpu.data(), cpu.data(), "and {shape:?} {axes:?}");
        let o32 = opts.output::<u32>();
        let cpu = ops::BitCountSum::run_with(&o32, &x).unwrap();
        let gpu = ops::BitCountSum::run_on(&t, &o32, &x).unwrap();
        assert_eq!(gpu.data(), cpu.data(), "sum {shape:?} {axes:?}");
    }
}

/// Pairwise ops and knn on rows of whole 32-bit words (the words kernels) and on rows that are not
/// (the element kernels), against the CPU: codes of 32 and of 31 bytes, and `u16` codes of 6
/// elements, with more rows than one workgroup takes on either side.
#[test]
fn word_and_element_kernels_match_the_cpu() {
    let Some(g) = gpu::gpu() else { return };
    let t = Target::Gpu(g);
    let mut rng = Rng(9);
    for (m, n, k) in [(37usize, 150usize, 32usize), (37, 150, 31), (20, 70, 4)] {
        let a: Vec<u8> = (0..m * k).map(|_| rng.next() as u8).collect();
        let b: Vec<u8> = (0..n * k).map(|_| rng.next() as u8).collect();
        let (a, b) = (
            Tensor::from_vec(a, &[m, k]).unwrap(),
            Tensor::from_vec(b, &[n, k]).unwrap(),
        );
        let cpu = ops::HammingCdist::run(&a, &b).unwrap();
        let gpu = ops::HammingCdist::run_on(&t, &Options::new(), &a, &b).unwrap();
        assert_eq!(gpu.data(), cpu.data(), "cdist u8 k {k}");
        let (cd, ci) = ops::HammingCdist::knn(&a, &b, 7).unwrap();
        let (gd, gi) = ops::HammingCdist::knn_on(&t, &Options::new(), &a, &b, 7).unwrap();
        assert_eq!(
            (gd.data(), gi.data()),
            (cd.data(), ci.data()),
            "knn u8 k {k}"
        );
    }
    let a: Vec<u16> = (0..40 * 6).map(|_| rng.next() as u16).collect();
    let b: Vec<u16> = (0..90 * 6).map(|_| rng.next() as u16).collect();
    let (a, b) = (
        Tensor::from_vec(a, &[40, 6]).unwrap(),
        Tensor::from_vec(b, &[90, 6]).unwrap(),
    );
    let cpu = ops::HammingCdist::run(&a, &b).unwrap();
    let gpu = ops::HammingCdist::run_on(&t, &Options::new(), &a, &b).unwrap();
    assert_eq!(gpu.data(), cpu.data(), "cdist u16");
}
