//! `tensorbits run`, `ops` and `devices`.

use crate::output::Output;
use crate::{Fail, npy};
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use tensorbits::wgpu;
use tensorbits::{
    Broadcast, Call, DataType, FeatureLevel, GpuExecutor, GpuInput, GpuRegion, Input, OpInfo,
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
    /// Output type of a bit count: u8 (default) or u32.
    #[arg(long, value_name = "DTYPE")]
    pub out_dtype: Option<String>,
    /// Direction of ONNX's BitShift.
    #[arg(long, value_enum)]
    pub direction: Option<Direction>,
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

pub fn run(a: RunArgs) -> Result<(), Fail> {
    let op = resolve(&a.op, a.direction)?;
    let level = FeatureLevel::parse(&a.level).ok_or_else(|| {
        Fail::input(format!(
            "unknown feature level '{}'; expected one of: {}",
            a.level,
            FeatureLevel::all_names(true, ", ")
        ))
    })?;
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
        ..Default::default()
    };
    let in_dt = arrays.first().map_or(DataType::U8, |x| x.desc.data_type());
    let out_dt = match &a.out_dtype {
        Some(s) => DataType::from_name(s).ok_or_else(|| {
            Fail::input(format!(
                "unknown data type '{s}' for --out-dtype; expected u8 or u32"
            ))
        })?,
        None => op.default_output(in_dt),
    };
    // The library's validator decides everything about the call, including the output's shape.
    let plan = tensorbits::validate_new_output(op, &call, &descs, out_dt).map_err(with_hint)?;
    let shape = plan.output_shape();
    if !npy::numpy_can_hold(out_dt, shape) {
        return Err(Fail::input(format!(
            "the output of shape {shape:?} ({out_dt}) would be a file numpy cannot load: its non-zero sizes times the item size exceed 2**63 - 1 bytes"
        )));
    }
    let out_desc = TensorDesc::new(out_dt, shape)?;
    let mut out = out_desc.zeroed_buffer("OutputTensor")?;
    let gpu = match a.device {
        DeviceArg::Cpu => None,
        DeviceArg::Gpu => Some(GpuExecutor::new_blocking()?),
        DeviceArg::Auto => GpuExecutor::new_blocking().ok().filter(|g| {
            g.adapter_info()
                .is_some_and(|i| i.device_type != wgpu::DeviceType::Cpu)
        }),
    };
    match &gpu {
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

/// Adds what to do to the errors whose fix is not obvious from the command line.
fn with_hint(e: tensorbits::Error) -> Fail {
    match &e {
        tensorbits::Error::DataTypeMismatch {
            tensor, expected, ..
        } => Fail::input(format!(
            "{e}; save {tensor} as {expected} first, for example with numpy's `b.astype(a.dtype)` (numpy's default integer type is int64)"
        )),
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
    say!("CPU: {threads} hardware threads");
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    if adapters.is_empty() {
        say!(
            "GPU: no adapter found (on Linux without a GPU, Mesa's lavapipe provides one: mesa-vulkan-drivers)"
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
