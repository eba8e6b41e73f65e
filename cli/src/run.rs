//! `tensorbits run`, `knn`, `ops` and `devices`.

use crate::output::Output;
use crate::{Fail, npy};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use tensorbits::wgpu;
use tensorbits::{
    Axes, Broadcast, Call, DataType, FeatureLevel, GpuExecutor, GpuInput, GpuRegion, Input, OpInfo,
    TensorDesc, ops,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceArg {
    /// A hardware GPU when wgpu finds one, else the CPU (a software adapter such as lavapipe is slower
    /// than the CPU executor).
    Auto,
    /// The CPU executor.
    Cpu,
    /// A GPU, software ones included; fails (status 1) when none is found.
    Gpu,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BroadcastArg {
    /// Shapes must be equal.
    None,
    /// numpy/ONNX multidirectional broadcasting.
    Numpy,
    /// PaddlePaddle broadcasting of later inputs onto the first, from --axis.
    Pdpd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Direction {
    /// ONNX BitShift direction="LEFT".
    Left,
    /// ONNX BitShift direction="RIGHT".
    Right,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The op, in any spelling: short (xor, not, shl, popcount), DirectML (ELEMENT_WISE_BIT_XOR, also
    /// with DML_ and _OPERATOR_DESC), ONNX (BitwiseXor, BitShift with --direction), OpenVINO
    /// (BitwiseLeftShift), numpy (bitwise_xor, invert, left_shift, bitwise_count); case-insensitive.
    pub op: String,
    /// Input .npy files (1 to 8; versions 1-3; any byte order; C or Fortran order).
    #[arg(required = true, value_name = "IN.npy")]
    pub inputs: Vec<PathBuf>,
    /// Output .npy file (little-endian, C order).
    #[arg(short, long, value_name = "OUT.npy")]
    pub output: PathBuf,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: DeviceArg,
    /// Feature level the call is validated against: 1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, 5_0 to 5_3,
    /// 6_0 to 6_4, or ext.
    #[arg(long, default_value = "ext")]
    pub level: String,
    /// Broadcast mode (default: the op's own default).
    #[arg(long, value_enum)]
    pub broadcast: Option<BroadcastArg>,
    /// Axis for --broadcast pdpd (-1: rank(A) - rank(B)).
    #[arg(long, allow_negative_numbers = true)]
    pub axis: Option<i64>,
    /// Output type of an op that counts bits: one of the op's output types (`tensorbits ops OP`
    /// lists them; BIT_COUNT: u8 or u32).
    #[arg(long, value_name = "DTYPE")]
    pub out_dtype: Option<String>,
    /// Direction of ONNX's BitShift.
    #[arg(long, value_enum)]
    pub direction: Option<Direction>,
    /// For a reduction: the axes to reduce, comma-separated, negative ones from the end (default:
    /// the op's own, all axes unless it names some).
    // Values may start with a hyphen: `--axes -1,0` is a list, not a flag.
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        value_name = "AXES"
    )]
    pub axes: Option<Vec<i64>>,
    /// For a reduction: keep each reduced dimension as a dimension of size 1.
    #[arg(long)]
    pub keepdims: bool,
    #[command(flatten)]
    pub valid: ValidBitsArgs,
}

/// Valid bits of a sum over the last axis.
#[derive(Args, Debug)]
pub struct ValidBitsArgs {
    /// For a sum over the last axis: only the first D bits of each row count, the rest is padding
    /// (rows as np.packbits(x, axis=-1) makes them, e.g. --bits 768 for 768-dimensional codes).
    #[arg(long, value_name = "D")]
    pub bits: Option<usize>,
    /// The order of the bits in each byte, as np.packbits's bitorder.
    #[arg(long, value_enum, default_value = "big")]
    pub bitorder: BitOrderArg,
}

/// numpy's bit orders.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BitOrderArg {
    /// The first bit of a byte is its most significant (numpy's default).
    Big,
    /// The first bit of a byte is its least significant.
    Little,
}

impl ValidBitsArgs {
    /// The call with these valid bits.
    fn on(&self, mut call: Call) -> Call {
        call.bits = self.bits;
        call.bitorder = match self.bitorder {
            BitOrderArg::Big => tensorbits::BitOrder::Big,
            BitOrderArg::Little => tensorbits::BitOrder::Little,
        };
        call
    }
}

/// `-k`: a count of neighbours, at least one (a search for none is a slip, not a file to write).
fn neighbours(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("k must be at least 1".to_owned()),
        Ok(k) => Ok(k),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Args, Debug)]
pub struct KnnArgs {
    /// Rows to search for (`[..., M, K]`).
    #[arg(value_name = "A.npy")]
    pub a: PathBuf,
    /// Rows to search in (`[..., N, K]`).
    #[arg(value_name = "B.npy")]
    pub b: PathBuf,
    /// Neighbours per row of A (at least 1).
    #[arg(short, long, value_parser = neighbours)]
    pub k: usize,
    /// Output: the neighbours' row indices in B (int64, `[..., M, k]`), nearest first, ties by the
    /// lower index.
    #[arg(short, long, value_name = "INDICES.npy")]
    pub output: PathBuf,
    /// Also write the neighbours' distances here (`[..., M, k]`).
    #[arg(long, value_name = "D.npy")]
    pub distances: Option<PathBuf>,
    /// The pairwise sum op that measures distance.
    #[arg(long, default_value = "hamming_cdist")]
    pub op: String,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: DeviceArg,
    /// Feature level the call is validated against (as for `run`).
    #[arg(long, default_value = "ext")]
    pub level: String,
    /// Type of the distances: one of the op's output types (HAMMING_CDIST: u32, u64, u16;
    /// BINARY_DOT: i32, i64, i16).
    #[arg(long, value_name = "DTYPE")]
    pub out_dtype: Option<String>,
    /// The largest values first (similarities such as binary_dot's are largest first already).
    #[arg(long, conflicts_with = "smallest")]
    pub largest: bool,
    /// The smallest values first (distances such as hamming_cdist's are smallest first already).
    #[arg(long)]
    pub smallest: bool,
    /// Added to every index: B's first row in a larger database, so that shards' results merge
    /// directly (`tensorbits merge`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub id_offset: u64,
    #[command(flatten)]
    pub valid: ValidBitsArgs,
}

#[derive(Args)]
pub struct RangeArgs {
    /// Rows to search for (`[M, K]`).
    #[arg(value_name = "A.npy")]
    pub a: PathBuf,
    /// Rows to search in (`[N, K]`).
    #[arg(value_name = "B.npy")]
    pub b: PathBuf,
    /// Hits are the rows of B whose distance is below it (a Hamming radius, as FAISS's
    /// range_search), or whose value is at least it for ops ranked largest first.
    #[arg(short, long, value_name = "T", allow_negative_numbers = true)]
    pub threshold: f64,
    /// Output prefix: writes PREFIX_lims.npy (int64, M + 1 offsets), PREFIX_values.npy and
    /// PREFIX_indices.npy (int64); row i's hits are lims[i]..lims[i + 1], in ascending index order.
    #[arg(short, long, value_name = "PREFIX")]
    pub output: PathBuf,
    /// The pairwise sum op that measures distance or similarity.
    #[arg(long, default_value = "hamming_cdist")]
    pub op: String,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: DeviceArg,
    /// Feature level the call is validated against (as for `run`).
    #[arg(long, default_value = "ext")]
    pub level: String,
    /// Type of the values: one of the op's output types.
    #[arg(long, value_name = "DTYPE")]
    pub out_dtype: Option<String>,
    /// Rank the largest values first: hits are those at least the threshold.
    #[arg(long, conflicts_with = "smallest")]
    pub largest: bool,
    /// Rank the smallest values first: hits are those below the threshold.
    #[arg(long)]
    pub smallest: bool,
    #[command(flatten)]
    pub valid: ValidBitsArgs,
}

/// `tensorbits range`: every row of B within the threshold of each row of A, as three files.
pub fn range(a: RangeArgs) -> Result<(), Fail> {
    let op = resolve(&a.op, None)?;
    let level = level(&a.level)?;
    if a.threshold.is_nan() {
        return Err(Fail::input("--threshold is NaN; give a number"));
    }
    let prefix = a.output.clone().into_os_string();
    if prefix.to_string_lossy().ends_with(".npy") {
        return Err(Fail::input(format!(
            "-o takes a prefix, not a file: range writes three arrays, {p}_lims.npy, \
             {p}_values.npy and {p}_indices.npy",
            p = a.output.display()
        )));
    }
    let name = |part: &str| {
        let mut p = prefix.clone();
        p.push(format!("_{part}.npy"));
        PathBuf::from(p)
    };
    let outs = [
        Output::resolve(&name("lims"))?,
        Output::resolve(&name("values"))?,
        Output::resolve(&name("indices"))?,
    ];
    let arrays = [npy::read(&a.a)?, npy::read(&a.b)?];
    let mut call = a.valid.on(Call::at(level));
    if a.largest || a.smallest {
        call.largest = Some(a.largest);
    }
    let out_dt = out_dtype(op, a.out_dtype.as_deref(), arrays[0].desc.data_type())?;
    let rows_b = arrays[1].desc.sizes().first().copied().unwrap_or(1);
    let work = (arrays[0].bytes.len() as u128).saturating_mul(rows_b as u128);
    let r = match &device(a.device, work)? {
        None => {
            let inputs = [
                Input::Bytes(&arrays[0].desc, &arrays[0].bytes),
                Input::Bytes(&arrays[1].desc, &arrays[1].bytes),
            ];
            tensorbits::range_search(op, &call, &inputs, a.threshold, out_dt).map_err(with_hint)?
        }
        Some(g) => {
            let bufs = [
                g.storage_buffer("ATensor", arrays[0].bytes.len(), &arrays[0].bytes)?,
                g.storage_buffer("BTensor", arrays[1].bytes.len(), &arrays[1].bytes)?,
            ];
            let region = |i: usize| GpuRegion {
                buffer: &bufs[i],
                offset: 0,
                desc: arrays[i].desc,
            };
            g.range_search(op, &call, [&region(0), &region(1)], a.threshold, out_dt)
                .map_err(with_hint)?
        }
    };
    let ints = |v: &[i64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let hits = r.indices.len();
    outs[0].write(|w| npy::write(w, DataType::I64, &[r.lims.len()], &ints(&r.lims)))?;
    outs[1].write(|w| npy::write(w, out_dt, &[hits], &r.values))?;
    outs[2].write(|w| npy::write(w, DataType::I64, &[hits], &ints(&r.indices)))?;
    Ok(())
}

#[derive(Args)]
pub struct MergeArgs {
    /// knn's results over the same queries, in pairs: each part's distances (`[M, k_i]`), then
    /// its indices (int64, `[M, k_i]`).
    #[arg(value_name = "D.npy I.npy", required = true, num_args = 1..)]
    pub parts: Vec<PathBuf>,
    /// Neighbours to keep per row (at least 1).
    #[arg(short, long, value_parser = neighbours)]
    pub k: usize,
    /// Output: the merged indices (int64, `[M, min(k, sum of k_i)]`), best first, ties by the
    /// lower index; never padded.
    #[arg(short, long, value_name = "INDICES.npy")]
    pub output: PathBuf,
    /// Also write the merged distances here.
    #[arg(long, value_name = "D.npy")]
    pub distances: Option<PathBuf>,
    /// The parts rank the largest values first (similarities such as binary_dot's); by default
    /// the smallest (distances).
    #[arg(long)]
    pub largest: bool,
}

/// `tensorbits merge`: the exact merge of knn results over shards.
pub fn merge(a: MergeArgs) -> Result<(), Fail> {
    if !a.parts.len().is_multiple_of(2) {
        return Err(Fail::input(format!(
            "merge takes pairs of files, each part's distances then its indices; got {} files",
            a.parts.len()
        )));
    }
    let indices_out = Output::resolve(&a.output)?;
    let distances_out = a.distances.as_deref().map(Output::resolve).transpose()?;
    if let Some(d) = &distances_out
        && d.same_file(&indices_out)
    {
        return Err(Fail::input(format!(
            "-o and --distances both name {}",
            d.shown().display()
        )));
    }
    let mut arrays = Vec::with_capacity(a.parts.len());
    for path in &a.parts {
        arrays.push((path, npy::read(path)?));
    }
    let mut dtype = None;
    let mut rows = None;
    let mut indices: Vec<Vec<i64>> = Vec::new();
    for pair in arrays.chunks_exact(2) {
        let ((dp, d), (ip, i)) = (&pair[0], &pair[1]);
        let (ds, is) = (d.desc.sizes(), i.desc.sizes());
        if ds.len() != 2 || ds != is || i.desc.data_type() != DataType::I64 {
            return Err(Fail::input(format!(
                "{} ({:?}, {}) and {} ({:?}, {}) are not a knn result: distances and int64 \
                 indices of one shape [M, k]",
                dp.display(),
                ds,
                d.desc.data_type().numpy_name(),
                ip.display(),
                is,
                i.desc.data_type().numpy_name()
            )));
        }
        if *dtype.get_or_insert(d.desc.data_type()) != d.desc.data_type() {
            return Err(Fail::input(format!(
                "{} holds {}, the first part {}: merge the results of one op",
                dp.display(),
                d.desc.data_type().numpy_name(),
                dtype.map_or("", |t| t.numpy_name())
            )));
        }
        if *rows.get_or_insert(ds[0]) != ds[0] {
            return Err(Fail::input(format!(
                "{} has {} rows, the first part {}: every part is over the same queries",
                dp.display(),
                ds[0],
                rows.unwrap_or(0)
            )));
        }
        let n = ds[0] * ds[1];
        indices.push(
            i.bytes[..n * 8]
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
        );
    }
    let parts: Vec<tensorbits::TopkPart<'_>> = arrays
        .chunks_exact(2)
        .zip(&indices)
        .map(|(pair, idx)| tensorbits::TopkPart {
            values: &pair[0].1.bytes[..idx.len() * pair[0].1.desc.data_type().size()],
            indices: idx,
            width: pair[0].1.desc.sizes()[1],
        })
        .collect();
    let dtype = dtype.unwrap_or(DataType::U32);
    let rows = rows.unwrap_or(0);
    let (values, merged, width) =
        tensorbits::merge_topk_bytes(dtype, rows, &parts, a.k, a.largest)?;
    let shape = [rows, width];
    let idx: Vec<u8> = merged.iter().flat_map(|x| x.to_le_bytes()).collect();
    indices_out.write(|w| npy::write(w, DataType::I64, &shape, &idx))?;
    if let Some(d) = distances_out {
        d.write(|w| npy::write(w, dtype, &shape, &values))?;
    }
    Ok(())
}

/// Resolves an op name (and ONNX BitShift's direction).
pub fn resolve(name: &str, direction: Option<Direction>) -> Result<&'static OpInfo, Fail> {
    let squashed = name.replace('_', "").to_ascii_lowercase();
    if squashed == "bitshift" && direction.is_none() {
        return Err(Fail::input(
            "ONNX's BitShift needs --direction left or right",
        ));
    }
    if squashed != "bitshift" && direction.is_some() {
        return Err(Fail::input("--direction applies only to ONNX's BitShift"));
    }
    let dir = direction.map(|d| match d {
        Direction::Left => "left",
        Direction::Right => "right",
    });
    ops::find_with_direction(name, dir)
        .ok_or_else(|| Fail::from(ops::lookup(name).err().unwrap_or_else(|| unknown(name))))
}

fn unknown(name: &str) -> tensorbits::Error {
    tensorbits::Error::UnknownOp {
        name: name.to_owned(),
        known: String::new(),
    }
}

/// A `--level` value.
fn level(text: &str) -> Result<FeatureLevel, Fail> {
    FeatureLevel::parse(text).ok_or_else(|| {
        Fail::input(format!(
            "unknown feature level '{text}'; expected one of: {}",
            FeatureLevel::all_names(true, ", ")
        ))
    })
}

/// An `--out-dtype` value, or the op's default output type for `in_dt`.
fn out_dtype(op: &OpInfo, text: Option<&str>, in_dt: DataType) -> Result<DataType, Fail> {
    let Some(s) = text else {
        return Ok(op.default_output(in_dt));
    };
    let allowed: Vec<&str> = op.output_types().map_or_else(
        || vec![in_dt.name()],
        |o| o.iter().map(|t| t.name()).collect(),
    );
    DataType::from_name(s).ok_or_else(|| {
        Fail::input(format!(
            "unknown data type '{s}' for --out-dtype; {} writes one of: {}",
            op.name(),
            allowed.join(", ")
        ))
    })
}

/// Work (bytes read and written, or pairs of rows times their bytes) below which `--device auto`
/// stays on the CPU without looking for a GPU: finding an adapter and making its device costs
/// more than such a call on the CPU. Measured by `tensorbits bench <op> --device gpu` against
/// `--device cpu` at growing sizes.
const AUTO_GPU_MIN_WORK: u128 = 1 << 26;

/// The device a command runs on: a GPU for `gpu` (failing without one), a hardware GPU for `auto`
/// when there is one and the call's `work` is worth it (see [`AUTO_GPU_MIN_WORK`]).
pub(crate) fn device(d: DeviceArg, work: u128) -> Result<Option<GpuExecutor>, Fail> {
    Ok(match d {
        DeviceArg::Cpu => None,
        DeviceArg::Gpu => Some(GpuExecutor::new_blocking()?),
        DeviceArg::Auto if work < AUTO_GPU_MIN_WORK => None,
        DeviceArg::Auto => {
            #[cfg(test)]
            tests::PROBES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            GpuExecutor::new_blocking().ok().filter(|g| {
                g.adapter_info()
                    .is_some_and(|i| i.device_type != wgpu::DeviceType::Cpu)
            })
        }
    })
}

/// Refuses an output numpy could not load.
pub(crate) fn loadable(dt: DataType, shape: &[usize]) -> Result<(), Fail> {
    if npy::numpy_can_hold(dt, shape) {
        return Ok(());
    }
    Err(Fail::input(format!(
        "the output of shape {shape:?} ({dt}) would be a file numpy cannot load: its non-zero sizes times the item size exceed 2**63 - 1 bytes"
    )))
}

pub fn run(a: RunArgs) -> Result<(), Fail> {
    let op = resolve(&a.op, a.direction)?;
    let level = level(&a.level)?;
    let broadcast = match (a.broadcast, a.axis) {
        (Some(BroadcastArg::Pdpd), axis) => Some(Broadcast::Pdpd {
            axis: axis.unwrap_or(-1),
        }),
        (_, Some(_)) => return Err(Fail::input("--axis applies only to --broadcast pdpd")),
        (Some(BroadcastArg::None), None) => Some(Broadcast::None),
        (Some(BroadcastArg::Numpy), None) => Some(Broadcast::Numpy),
        (None, None) => None,
    };
    let output = Output::resolve(&a.output)?;
    let arrays: Vec<npy::Array> = a
        .inputs
        .iter()
        .map(|p| npy::read(p))
        .collect::<Result<_, _>>()?;
    let descs: Vec<&TensorDesc> = arrays.iter().map(|x| &x.desc).collect();
    let call = Call {
        level,
        broadcast,
        axes: a.axes.as_deref().map(Axes::new).transpose()?,
        keepdims: a.keepdims,
        ..a.valid.on(Call::default())
    };
    let in_dt = arrays.first().map_or(DataType::U8, |x| x.desc.data_type());
    let out_dt = out_dtype(op, a.out_dtype.as_deref(), in_dt)?;
    // The library's validator decides everything about the call, including the output's shape.
    let plan = tensorbits::validate_new_output(op, &call, &descs, out_dt).map_err(with_hint)?;
    let shape = plan.output_shape();
    loadable(out_dt, shape)?;
    let out_desc = TensorDesc::new(out_dt, shape)?;
    let mut out = out_desc.zeroed_buffer("OutputTensor")?;
    let read: u128 = arrays.iter().map(|x| x.bytes.len() as u128).sum();
    let work = if op.is_pairwise() {
        // Every row of the first input meets every row of the second.
        let rows = descs
            .get(1)
            .and_then(|d| d.sizes().iter().rev().nth(1).copied())
            .unwrap_or(1);
        read.saturating_mul(rows as u128)
    } else {
        read + out.len() as u128
    };
    match &device(a.device, work)? {
        None => {
            let inputs: Vec<Input<'_>> = arrays
                .iter()
                .map(|x| Input::Bytes(&x.desc, &x.bytes))
                .collect();
            tensorbits::execute(op, &call, &inputs, &out_desc, &mut out)?;
        }
        Some(g) => out = run_gpu(g, op, &call, &arrays, &out_desc)?,
    }
    output.write(|w| npy::write(w, out_dt, plan.output_shape(), &out))
}

/// `tensorbits knn`: for each row of A, the k nearest rows of B under a pairwise sum op.
pub fn knn(a: KnnArgs) -> Result<(), Fail> {
    let op = resolve(&a.op, None)?;
    let level = level(&a.level)?;
    let indices_out = Output::resolve(&a.output)?;
    let distances_out = a.distances.as_deref().map(Output::resolve).transpose()?;
    if let Some(d) = &distances_out
        && d.same_file(&indices_out)
    {
        return Err(Fail::input(format!(
            "-o and --distances both name {}: knn writes two arrays, the indices and the \
             distances, and needs a file for each",
            d.shown().display()
        )));
    }
    let arrays = [npy::read(&a.a)?, npy::read(&a.b)?];
    let mut call = a.valid.on(Call::at(level));
    if a.largest || a.smallest {
        call.largest = Some(a.largest);
    }
    let out_dt = out_dtype(op, a.out_dtype.as_deref(), arrays[0].desc.data_type())?;
    let descs = [&arrays[0].desc, &arrays[1].desc];
    let plan = tensorbits::validate_knn(op, &call, &descs, a.k, out_dt).map_err(with_hint)?;
    let shape = plan.output_shape();
    loadable(DataType::I64, shape)?;
    let dd = TensorDesc::new(out_dt, shape)?;
    let id = TensorDesc::new(DataType::I64, shape)?;
    let rows_b = arrays[1]
        .desc
        .sizes()
        .iter()
        .rev()
        .nth(1)
        .copied()
        .unwrap_or(1);
    if a.id_offset > i64::MAX as u64 - (rows_b as u64).saturating_sub(1) {
        return Err(Fail::input(format!(
            "--id-offset {} takes the indices past int64",
            a.id_offset
        )));
    }
    let work = (arrays[0].bytes.len() as u128).saturating_mul(rows_b as u128);
    let (mut dist, mut idx) = match &device(a.device, work)? {
        None => {
            tensorbits::check_allocation(
                dd.total_bytes().saturating_add(id.total_bytes()),
                "the distances and indices",
            )?;
            let mut dist = dd.zeroed_buffer("distances")?;
            let mut idx = id.zeroed_buffer("indices")?;
            let inputs = [
                Input::Bytes(&arrays[0].desc, &arrays[0].bytes),
                Input::Bytes(&arrays[1].desc, &arrays[1].bytes),
            ];
            tensorbits::knn(op, &call, &inputs, a.k, (&dd, &mut dist), (&id, &mut idx))?;
            (dist, idx)
        }
        Some(g) => {
            let bufs = [
                g.storage_buffer("ATensor", arrays[0].bytes.len(), &arrays[0].bytes)?,
                g.storage_buffer("BTensor", arrays[1].bytes.len(), &arrays[1].bytes)?,
            ];
            let gd = g.storage_buffer("distances", dd.total_bytes(), &[])?;
            let gi = g.storage_buffer("indices", id.total_bytes(), &[])?;
            let region = |buffer, desc| GpuRegion {
                buffer,
                offset: 0,
                desc,
            };
            g.knn(
                op,
                &call,
                [
                    &region(&bufs[0], arrays[0].desc),
                    &region(&bufs[1], arrays[1].desc),
                ],
                a.k,
                (&region(&gd, dd), &region(&gi, id)),
                None,
            )?;
            let read = |b: &wgpu::Buffer, len: usize| -> Result<Vec<u8>, Fail> {
                let mut v = g.read_bytes(b, 0, b.size())?;
                v.truncate(len);
                Ok(v)
            };
            (read(&gd, dd.total_bytes())?, read(&gi, id.total_bytes())?)
        }
    };
    idx.truncate(id.total_bytes());
    dist.truncate(dd.total_bytes());
    if a.id_offset > 0 {
        for c in idx.chunks_exact_mut(8) {
            let v = i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) + a.id_offset as i64;
            c.copy_from_slice(&v.to_le_bytes());
        }
    }
    indices_out.write(|w| npy::write(w, DataType::I64, shape, &idx))?;
    if let Some(d) = distances_out {
        d.write(|w| npy::write(w, out_dt, shape, &dist))?;
    }
    Ok(())
}

/// Adds what to do to the errors whose fix is not obvious from the command line.
fn with_hint(e: tensorbits::Error) -> Fail {
    match &e {
        tensorbits::Error::DataTypeMismatch {
            tensor, expected, ..
        } => Fail::input(format!(
            "{e}; save {tensor} as {expected} first, for example with numpy's `b.astype(a.dtype)` (numpy's default integer type is int64)"
        )),
        tensorbits::Error::UnsupportedDataType { op, dtype, .. }
            if (dtype.is_float() || *dtype == DataType::Bool)
                && tensorbits::ops::lookup(op).is_ok_and(|o| o.is_pairwise()) =>
        {
            Fail::input(format!(
                "{e}; binary codes are packed bits of an integer type: make them from float \
                 embeddings (or bools) with `tensorbits binarize X.npy -o CODES.npy`, which \
                 writes np.packbits(X > 0, axis=-1)"
            ))
        }
        _ => Fail::from(e),
    }
}

fn run_gpu(
    g: &GpuExecutor,
    op: &OpInfo,
    call: &Call,
    arrays: &[npy::Array],
    out_desc: &TensorDesc,
) -> Result<Vec<u8>, Fail> {
    let bufs: Vec<wgpu::Buffer> = arrays
        .iter()
        .enumerate()
        .map(|(k, x)| g.storage_buffer(&op.tensor_name(k), x.bytes.len(), &x.bytes))
        .collect::<Result<_, _>>()?;
    let out = g.storage_buffer("OutputTensor", out_desc.total_bytes(), &[])?;
    let inputs: Vec<GpuInput<'_>> = arrays
        .iter()
        .zip(&bufs)
        .map(|(x, b)| {
            GpuInput::Region(GpuRegion {
                buffer: b,
                offset: 0,
                desc: x.desc,
            })
        })
        .collect();
    g.execute(
        op,
        call,
        &inputs,
        &GpuRegion {
            buffer: &out,
            offset: 0,
            desc: *out_desc,
        },
        None,
    )?;
    let mut bytes = g.read_bytes(&out, 0, out.size())?;
    bytes.truncate(out_desc.total_bytes());
    Ok(bytes)
}

/// The other names each standard op answers to, for `ops`.
fn names(op: &OpInfo) -> String {
    let mut v: Vec<&str> = ops::aliases(op).to_vec();
    if op.name().contains("SHIFT") {
        v.push(if op.name().ends_with("LEFT") {
            "BitShift --direction left"
        } else {
            "BitShift --direction right"
        });
    }
    v.join(", ")
}

pub fn ops(which: Option<&str>) -> Result<(), Fail> {
    match which {
        None => {
            say!(
                "{:<30} {:<14} {:<10} {:<20} ALSO KNOWN AS",
                "OP",
                "STRUCT",
                "SINCE",
                "COMPUTES"
            );
            for op in ops::ALL {
                say!(
                    "{:<30} {:<14} {:<10} {:<20} {}",
                    op.name(),
                    op.type_name(),
                    op.introduced().name(),
                    op.compute(),
                    names(op)
                );
            }
            say!("\n`tensorbits ops OP` prints an op's support tables.");
        }
        Some(name) if name.replace('_', "").eq_ignore_ascii_case("bitshift") => {
            // ONNX's BitShift is two ops here, one per direction.
            ops(Some("shl"))?;
            say!("");
            ops(Some("shr"))?;
        }
        Some(name) => {
            let op = resolve(name, None)?;
            say!("{} ({}): {}", op.name(), op.type_name(), op.summary());
            say!("computes: {}", op.compute());
            if let Some(r) = op.reduce() {
                let over = if op.is_pairwise() {
                    "the last dimension of both inputs, pairwise: [..., M, K] and [..., N, K] give [..., M, N]"
                        .to_owned()
                } else {
                    match op.default_axes() {
                        Some(a) => format!("axes {a:?} unless --axes names others"),
                        None => "all axes unless --axes names some".to_owned(),
                    }
                };
                say!("reduces: {r} over {over}");
            }
            let modes: Vec<&str> = op.broadcast_modes().iter().map(|m| m.name()).collect();
            if !modes.is_empty() {
                say!("broadcast: {} (default {})", modes.join(", "), modes[0]);
            }
            let inplace: Vec<String> = op.in_place().iter().map(|&k| op.tensor_name(k)).collect();
            say!(
                "in place: {}",
                if inplace.is_empty() {
                    "no".to_owned()
                } else {
                    inplace.join(", ")
                }
            );
            say!("also known as: {}\n", names(op));
            say!("{}", op.support_table().to_text().trim_end());
        }
    }
    Ok(())
}

pub fn devices() -> Result<(), Fail> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let set = tensorbits::cpu::instruction_set();
    match std::env::var_os(tensorbits::cpu::CPU_ENV) {
        Some(v) => say!(
            "CPU: {threads} hardware threads, kernels: {set} ({}={})",
            tensorbits::cpu::CPU_ENV,
            v.to_string_lossy()
        ),
        None => say!("CPU: {threads} hardware threads, kernels: {set}"),
    }
    // The adapters of the backends `--device gpu` looks at (OpenGL only where WGPU_BACKEND names it).
    let desc = GpuExecutor::instance_descriptor();
    let backends = desc.backends;
    let instance = wgpu::Instance::new(desc);
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    if adapters.is_empty() {
        say!(
            "GPU: no adapter found (on Linux without a GPU, Mesa's lavapipe provides one: mesa-vulkan-drivers; WGPU_BACKEND=gl takes OpenGL)"
        );
    }
    for a in adapters {
        let i = a.get_info();
        let f = a.features();
        let l = a.limits();
        say!(
            "GPU: {} ({:?}, {:?}), driver {} {}",
            i.name,
            i.backend,
            i.device_type,
            i.driver,
            i.driver_info
        );
        let yes = |b: bool| if b { "yes" } else { "no" };
        say!(
            "  features: SHADER_INT64 {}, SHADER_F16 {}, TIMESTAMP_QUERY {}",
            yes(f.contains(wgpu::Features::SHADER_INT64)),
            yes(f.contains(wgpu::Features::SHADER_F16)),
            yes(f.contains(wgpu::Features::TIMESTAMP_QUERY))
        );
        say!(
            "  limits: max_storage_buffer_binding_size {} B, max_buffer_size {} B, max_compute_workgroups_per_dimension {}, min_storage_buffer_offset_alignment {} B",
            l.max_storage_buffer_binding_size,
            l.max_buffer_size,
            l.max_compute_workgroups_per_dimension,
            l.min_storage_buffer_offset_alignment
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) static PROBES: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);

    /// Small calls under `--device auto` stay on the CPU without looking for an adapter (the
    /// probe is most of such a call's time); `cpu` never looks.
    #[test]
    fn auto_looks_for_a_gpu_only_for_large_work() {
        for work in [0, 1, AUTO_GPU_MIN_WORK - 1] {
            assert!(matches!(device(DeviceArg::Auto, work), Ok(None)));
        }
        assert!(matches!(device(DeviceArg::Cpu, u128::MAX), Ok(None)));
        assert_eq!(PROBES.load(std::sync::atomic::Ordering::SeqCst), 0);
    }
}
