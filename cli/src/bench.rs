//! `tensorbits bench`: throughput of one op on one shape, type and device, and its ratio to a plain
//! copy of the same number of bytes on the same device, measured in the same run: on the CPU a
//! parallel `copy_from_slice`, on a GPU a trivial WGSL copy kernel. Pairwise ops and knn also
//! report distances per second.

use crate::Fail;
use clap::Args;
use std::time::{Duration, Instant};
use tensorbits::wgpu;
use tensorbits::{Call, DataType, GpuExecutor, GpuInput, GpuRegion, Input, TensorDesc};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The op, in any spelling (see `tensorbits run --help`).
    pub op: String,
    /// Element type of the inputs.
    #[arg(long)]
    pub dtype: String,
    /// Shape of the first input (and of the others unless --shape-b), e.g. 4096,4096.
    #[arg(long, value_delimiter = ',', required = true)]
    pub shape: Vec<usize>,
    /// Shape of the second and later inputs (broadcast numpy-style onto the first).
    #[arg(long, value_delimiter = ',')]
    pub shape_b: Option<Vec<usize>>,
    /// Where to run.
    #[arg(long, value_enum, default_value = "cpu")]
    pub device: BenchDevice,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 9)]
    pub runs: usize,
    /// For a reduction: the axes to reduce (default: the op's own).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub axes: Option<Vec<i64>>,
    /// For a pairwise sum op: time knn with this k instead of the full distance matrix.
    #[arg(long, value_name = "K")]
    pub knn: Option<usize>,
}

/// What is timed: the op into its output, or knn of a pairwise op.
#[derive(Clone, Copy)]
enum Work {
    Run,
    Knn(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchDevice {
    /// The CPU executor.
    Cpu,
    /// The default GPU adapter.
    Gpu,
}

/// `copy_from_slice` on every core, the executor's way: one contiguous range per task, a few tasks
/// per thread, below 1 MiB on the calling thread alone.
pub fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    use rayon::prelude::*;
    let threads = rayon::current_num_threads();
    if dst.len() < tensorbits::cpu::PARALLEL_BYTES || threads < 2 {
        dst.copy_from_slice(src);
        return;
    }
    let per = (dst.len() / (threads * 4))
        .max(tensorbits::cpu::PARALLEL_BYTES / 4)
        .next_multiple_of(64);
    dst.par_chunks_mut(per)
        .zip(src.par_chunks(per))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `len` bytes of test data, or the error naming the size when they cannot be allocated.
fn fill(len: usize) -> Result<Vec<u8>, Fail> {
    let mut v = zeroed(len)?;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for b in v.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Small values keep shift counts in range half of the time.
        *b = (x >> 56) as u8 & if x & 1 == 0 { 0x07 } else { 0xff };
    }
    Ok(v)
}

fn zeroed(len: usize) -> Result<Vec<u8>, Fail> {
    Ok(TensorDesc::new(DataType::U8, &[len])?.zeroed_buffer("the benchmark's data")?)
}

pub fn bench(a: BenchArgs) -> Result<(), Fail> {
    let op = crate::run::resolve(&a.op, None)?;
    let dt = DataType::from_name(&a.dtype)
        .ok_or_else(|| Fail::input(format!("unknown data type '{}'", a.dtype)))?;
    if a.runs == 0 {
        return Err(Fail::input("--runs must be at least 1"));
    }
    let first = TensorDesc::new(dt, &a.shape)?;
    let other = TensorDesc::new(dt, a.shape_b.as_deref().unwrap_or(&a.shape))?;
    let descs: Vec<TensorDesc> = (0..op.arity())
        .map(|k| if k == 0 { first } else { other })
        .collect();
    let refs: Vec<&TensorDesc> = descs.iter().collect();
    let call = Call {
        level: tensorbits::FeatureLevel::EXT,
        broadcast: (op.arity() > 1 && !op.is_pairwise()).then_some(tensorbits::Broadcast::Numpy),
        axes: a.axes.as_deref().map(tensorbits::Axes::new).transpose()?,
        ..Default::default()
    };
    let out_dt = op.default_output(dt);
    let plan = tensorbits::validate_new_output(op, &call, &refs, out_dt)?;
    // Distances computed: every output element of a pairwise op; knn computes the same ones.
    let distances = op.is_pairwise().then_some(plan.element_count());
    let work = match a.knn {
        Some(k) => Work::Knn(k),
        None => Work::Run,
    };
    let out_shape: Vec<usize> = match work {
        Work::Knn(k) => tensorbits::validate_knn(op, &call, &refs, k, out_dt)?
            .output_shape()
            .to_vec(),
        Work::Run => plan.output_shape().to_vec(),
    };
    let out_desc = TensorDesc::new(out_dt, &out_shape)?;
    let idx_desc = TensorDesc::new(DataType::I64, &out_shape)?;
    let datas: Vec<Vec<u8>> = descs
        .iter()
        .map(|d| fill(d.total_bytes()))
        .collect::<Result<_, _>>()?;
    let out_elems = out_desc.element_count().unwrap_or(0);
    let moved: usize = descs
        .iter()
        .map(|d| d.element_count().unwrap_or(0) * dt.size())
        .sum::<usize>()
        + out_elems * out_dt.size()
        + if let Work::Knn(_) = work {
            out_elems * 8
        } else {
            0
        };
    let outs = (&out_desc, &idx_desc);
    let (op_t, copy_t, device) = match a.device {
        BenchDevice::Cpu => {
            let mut out = out_desc.zeroed_buffer("OutputTensor")?;
            let mut idx = match work {
                Work::Knn(_) => idx_desc.zeroed_buffer("indices")?,
                Work::Run => Vec::new(),
            };
            let inputs: Vec<Input<'_>> = descs
                .iter()
                .zip(&datas)
                .map(|(d, b)| Input::Bytes(d, b))
                .collect();
            let mut run = || -> Result<(), Fail> {
                match work {
                    Work::Run => tensorbits::execute(op, &call, &inputs, &out_desc, &mut out)?,
                    Work::Knn(k) => tensorbits::knn(
                        op,
                        &call,
                        &inputs,
                        k,
                        (&out_desc, &mut out),
                        (&idx_desc, &mut idx),
                    )?,
                }
                Ok(())
            };
            // The copy moves the same bytes: half read, half written.
            let src = fill(moved / 2)?;
            let mut dst = zeroed(moved / 2)?;
            let mut op_times = Vec::new();
            let mut copy_times = Vec::new();
            run()?; // warm-up
            for _ in 0..a.runs {
                let t = Instant::now();
                run()?;
                op_times.push(t.elapsed());
                let t = Instant::now();
                parallel_copy(&mut dst, &src);
                std::hint::black_box(&mut dst);
                copy_times.push(t.elapsed());
            }
            (median(op_times), median(copy_times), "CPU".to_owned())
        }
        BenchDevice::Gpu => gpu_bench(&a, op, &call, work, &descs, &datas, outs, moved)?,
    };
    let gbs = |t: Duration| moved as f64 / t.as_secs_f64() / 1e9;
    let what = match work {
        Work::Knn(k) => format!("{} knn k={k}", op.name()),
        Work::Run => op.name().to_owned(),
    };
    say!(
        "{what} {} {:?}{} on {device}: {:.2} GB/s (median of {} runs, {:.3} ms; {} bytes read+written)",
        dt,
        a.shape,
        a.shape_b
            .as_ref()
            .map(|s| format!(" with {s:?}"))
            .unwrap_or_default(),
        gbs(op_t),
        a.runs,
        op_t.as_secs_f64() * 1e3,
        moved
    );
    if let Some(n) = distances {
        say!(
            "distances: {:.3} G/s ({n} distances)",
            n as f64 / op_t.as_secs_f64() / 1e9
        );
    }
    say!(
        "copy of the same bytes: {:.2} GB/s ({:.3} ms); ratio op/copy: {:.2}x",
        gbs(copy_t),
        copy_t.as_secs_f64() * 1e3,
        copy_t.as_secs_f64() / op_t.as_secs_f64()
    );
    Ok(())
}

#[allow(
    clippy::too_many_arguments,
    reason = "the benchmark's inputs, prepared by the caller"
)]
fn gpu_bench(
    a: &BenchArgs,
    op: &'static tensorbits::OpInfo,
    call: &Call,
    work: Work,
    descs: &[TensorDesc],
    datas: &[Vec<u8>],
    (out_desc, idx_desc): (&TensorDesc, &TensorDesc),
    moved: usize,
) -> Result<(Duration, Duration, String), Fail> {
    let g = GpuExecutor::new_blocking()?;
    let new = |len: usize, init: &[u8]| g.storage_buffer("bench", len, init);
    let bufs: Vec<wgpu::Buffer> = datas
        .iter()
        .map(|d| new(d.len(), d))
        .collect::<Result<_, _>>()?;
    let out = new(out_desc.total_bytes(), &[])?;
    // The indices exist for knn alone: an element-wise op of N elements would otherwise ask for
    // 8N bytes it never touches (1 GiB of u8 asked for an 8 GiB buffer, past most devices' limit).
    let idx = new(
        match work {
            Work::Knn(_) => idx_desc.total_bytes(),
            Work::Run => 0,
        },
        &[],
    )?;
    let copier = Copier::new(&g);
    let half = (moved as u64 / 2).div_ceil(4) * 4;
    let (src, dst) = (new(half as usize, &[])?, new(half as usize, &[])?);
    let inputs: Vec<GpuInput<'_>> = descs
        .iter()
        .zip(&bufs)
        .map(|(d, b)| {
            GpuInput::Region(GpuRegion {
                buffer: b,
                offset: 0,
                desc: *d,
            })
        })
        .collect();
    let region = GpuRegion {
        buffer: &out,
        offset: 0,
        desc: *out_desc,
    };
    let wait = || {
        g.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Fail::Device(e.to_string()))
    };
    let stamps = Timestamps::new(&g);
    // Each run records the work between two timestamps when the device has them (the kernels' own
    // time), else it is timed by the wall clock from submission to completion. The op and the copy
    // are timed the same way.
    let time =
        |record: &dyn Fn(&mut wgpu::CommandEncoder) -> Result<(), Fail>| -> Result<Duration, Fail> {
            let mut enc = g.device().create_command_encoder(&Default::default());
            let t = Instant::now();
            if let Some(s) = &stamps {
                enc.write_timestamp(&s.set, 0);
            }
            record(&mut enc)?;
            if let Some(s) = &stamps {
                enc.write_timestamp(&s.set, 1);
                enc.resolve_query_set(&s.set, 0..2, &s.resolve, 0);
                enc.copy_buffer_to_buffer(&s.resolve, 0, &s.read, 0, 16);
            }
            g.queue().submit([enc.finish()]);
            wait()?;
            let wall = t.elapsed();
            match &stamps {
                Some(s) => Ok(s.elapsed(&g)?),
                None => Ok(wall),
            }
        };
    let op_run = |enc: &mut wgpu::CommandEncoder| -> Result<(), Fail> {
        match work {
            Work::Run => g.execute(op, call, &inputs, &region, Some(enc))?,
            Work::Knn(k) => {
                let regions: Vec<GpuRegion<'_>> = inputs
                    .iter()
                    .filter_map(|i| match i {
                        GpuInput::Region(r) => Some(*r),
                        GpuInput::Output => None,
                    })
                    .collect();
                // Bound for knn alone: the index buffer has its full size only here.
                let idx_region = GpuRegion {
                    buffer: &idx,
                    offset: 0,
                    desc: *idx_desc,
                };
                g.knn(
                    op,
                    call,
                    [&regions[0], &regions[1]],
                    k,
                    (&region, &idx_region),
                    Some(enc),
                )?
            }
        }
        Ok(())
    };
    // The baseline: a trivial WGSL kernel copying the same bytes, a vec4<u32> per invocation.
    let copy_run = |enc: &mut wgpu::CommandEncoder| -> Result<(), Fail> {
        copier.record(&g, &src, &dst, half, enc);
        Ok(())
    };
    time(&op_run)?;
    time(&copy_run)?;
    let mut ot = Vec::new();
    let mut ct = Vec::new();
    for _ in 0..a.runs {
        ot.push(time(&op_run)?);
        ct.push(time(&copy_run)?);
    }
    let how = if stamps.is_some() {
        "kernel time from timestamp queries"
    } else {
        "wall clock: this device has no timestamp queries"
    };
    Ok((
        median(ot),
        median(ct),
        format!("GPU: {} ({how})", g.describe()),
    ))
}

/// A two-entry timestamp query set and the buffers that read it back.
struct Timestamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    period_ns: f64,
}

impl Timestamps {
    fn new(g: &GpuExecutor) -> Option<Timestamps> {
        let needed =
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
        if !g.device().features().contains(needed) {
            return None;
        }
        let buffer = |usage| {
            g.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size: 16,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(Timestamps {
            set: g.device().create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("bench"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolve: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            read: buffer(wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC),
            period_ns: f64::from(g.queue().get_timestamp_period()),
        })
    }

    fn elapsed(&self, g: &GpuExecutor) -> Result<Duration, tensorbits::Error> {
        let b = g.read_bytes(&self.read, 0, 16)?;
        let tick = |i: usize| u64::from_le_bytes(std::array::from_fn(|k| b[i + k]));
        let ns = tick(8).saturating_sub(tick(0)) as f64 * self.period_ns;
        Ok(Duration::from_nanos(ns as u64))
    }
}

/// A trivial WGSL copy kernel, the GPU's baseline: each invocation moves one `vec4<u32>`.
struct Copier {
    pipeline: wgpu::ComputePipeline,
}

const COPY_WGSL: &str = "@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i < arrayLength(&dst)) { dst[i] = src[i]; }
}
";

impl Copier {
    fn new(g: &GpuExecutor) -> Copier {
        let module = g
            .device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("bench copy"),
                source: wgpu::ShaderSource::Wgsl(COPY_WGSL.into()),
            });
        let pipeline = g
            .device()
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("bench copy"),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        Copier { pipeline }
    }

    /// Copies `bytes` (a multiple of 4) of `src` into `dst`, in windows the device can bind.
    fn record(
        &self,
        g: &GpuExecutor,
        src: &wgpu::Buffer,
        dst: &wgpu::Buffer,
        bytes: u64,
        enc: &mut wgpu::CommandEncoder,
    ) {
        let limits = g.device().limits();
        let step = (limits.max_storage_buffer_binding_size / 256 * 256).max(256);
        let mut at = 0;
        while at < bytes {
            let len = (bytes - at).min(step) / 16 * 16;
            if len == 0 {
                break;
            }
            let window = |buffer| {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: at,
                    size: std::num::NonZeroU64::new(len),
                })
            };
            let group = g.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bench copy"),
                layout: &self.pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: window(src),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: window(dst),
                    },
                ],
            });
            let groups = (len / 16).div_ceil(64);
            let max = u64::from(limits.max_compute_workgroups_per_dimension);
            let gx = groups.min(max);
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(gx as u32, groups.div_ceil(gx) as u32, 1);
            at += len;
        }
    }
}
