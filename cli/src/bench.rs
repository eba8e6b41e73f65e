//! `tensorbits bench`: throughput of one op on one shape, type and device, and its ratio to a plain
//! copy of the same number of bytes on the same device, measured in the same run.

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
        broadcast: (op.arity() > 1).then_some(tensorbits::Broadcast::Numpy),
        ..Default::default()
    };
    let out_dt = op.default_output(dt);
    let plan = tensorbits::validate_new_output(op, &call, &refs, out_dt)?;
    let out_desc = TensorDesc::new(out_dt, plan.output_shape())?;
    let datas: Vec<Vec<u8>> = descs
        .iter()
        .map(|d| fill(d.total_bytes()))
        .collect::<Result<_, _>>()?;
    let moved: usize = descs
        .iter()
        .map(|d| d.element_count().unwrap_or(0) * dt.size())
        .sum::<usize>()
        + plan.element_count() * out_dt.size();
    let (op_t, copy_t, device) = match a.device {
        BenchDevice::Cpu => {
            let mut out = out_desc.zeroed_buffer("OutputTensor")?;
            let inputs: Vec<Input<'_>> = descs
                .iter()
                .zip(&datas)
                .map(|(d, b)| Input::Bytes(d, b))
                .collect();
            // The copy moves the same bytes: half read, half written.
            let src = fill(moved / 2)?;
            let mut dst = zeroed(moved / 2)?;
            let mut op_times = Vec::new();
            let mut copy_times = Vec::new();
            tensorbits::execute(op, &call, &inputs, &out_desc, &mut out)?; // warm-up
            for _ in 0..a.runs {
                let t = Instant::now();
                tensorbits::execute(op, &call, &inputs, &out_desc, &mut out)?;
                op_times.push(t.elapsed());
                let t = Instant::now();
                parallel_copy(&mut dst, &src);
                std::hint::black_box(&mut dst);
                copy_times.push(t.elapsed());
            }
            (median(op_times), median(copy_times), "CPU".to_owned())
        }
        BenchDevice::Gpu => gpu_bench(&a, op, &call, &descs, &datas, &out_desc, moved)?,
    };
    let gbs = |t: Duration| moved as f64 / t.as_secs_f64() / 1e9;
    say!(
        "{} {} {:?}{} on {device}: {:.2} GB/s (median of {} runs, {:.3} ms; {} bytes read+written)",
        op.name(),
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
    say!(
        "copy of the same bytes: {:.2} GB/s ({:.3} ms); ratio op/copy: {:.2}x",
        gbs(copy_t),
        copy_t.as_secs_f64() * 1e3,
        copy_t.as_secs_f64() / op_t.as_secs_f64()
    );
    Ok(())
}

fn gpu_bench(
    a: &BenchArgs,
    op: &'static tensorbits::OpInfo,
    call: &Call,
    descs: &[TensorDesc],
    datas: &[Vec<u8>],
    out_desc: &TensorDesc,
    moved: usize,
) -> Result<(Duration, Duration, String), Fail> {
    let g = GpuExecutor::new_blocking()?;
    let new = |len: usize, init: &[u8]| g.storage_buffer("bench", len, init);
    let bufs: Vec<wgpu::Buffer> = datas
        .iter()
        .map(|d| new(d.len(), d))
        .collect::<Result<_, _>>()?;
    let out = new(out_desc.total_bytes(), &[])?;
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
        Ok(g.execute(op, call, &inputs, &region, Some(enc))?)
    };
    let copy_run = |enc: &mut wgpu::CommandEncoder| -> Result<(), Fail> {
        enc.copy_buffer_to_buffer(&src, 0, &dst, 0, half);
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
