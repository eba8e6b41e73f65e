//! `tensorbits binarize`: `np.packbits(x > threshold, axis=-1, bitorder=...)` of a `.npy` file.

use crate::output::Output;
use crate::run::{BitOrderArg, DeviceArg, device, loadable};
use crate::{Fail, npy};
use clap::Args;
use half::f16;
use std::path::PathBuf;
use tensorbits::{BitOrder, DataType, TensorDesc, Thresholds};

#[derive(Args, Debug)]
pub struct BinarizeArgs {
    /// Numbers to binarize (`[..., D]`, any numeric dtype).
    #[arg(value_name = "X.npy")]
    pub x: PathBuf,
    /// Output: uint8 codes `[..., ceil(D / 8)]`, as np.packbits(x > threshold, axis=-1).
    #[arg(short, long, value_name = "CODES.npy")]
    pub output: PathBuf,
    /// One threshold for every element (default 0), compared as numpy compares `x > T` with a
    /// Python number: at x's float type for float x, exactly for integer x.
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub threshold: Option<String>,
    /// One threshold per element of the last axis: a .npy vector of D numbers, compared exactly.
    #[arg(long, value_name = "T.npy", conflicts_with = "threshold")]
    pub thresholds: Option<PathBuf>,
    /// The order of the bits in each byte, as np.packbits's bitorder.
    #[arg(long, value_enum, default_value = "big")]
    pub bitorder: BitOrderArg,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: DeviceArg,
}

/// A number given on the command line as numpy compares a Python number with an array of
/// `dtype`: a real rounded to a float type as numpy casts it, an integer exactly otherwise.
fn scalar(dtype: DataType, text: &str) -> Result<Thresholds, Fail> {
    let t = text.trim();
    let real = || {
        t.parse::<f64>().map_err(|_| {
            Fail::input(format!(
                "--threshold {text:?} is not a number (examples: 0, -0.5, 1e-3, inf)"
            ))
        })
    };
    if dtype.is_float() {
        let v = real()?;
        let bytes = match dtype {
            DataType::F16 => f16::from_f64(v).to_le_bytes().to_vec(),
            DataType::F32 => (v as f32).to_le_bytes().to_vec(),
            _ => v.to_le_bytes().to_vec(),
        };
        return Thresholds::from_le_bytes(dtype, &bytes)
            .ok_or_else(|| Fail::input("internal: a threshold of the wrong size"));
    }
    match t.parse::<i128>() {
        Ok(i) => Ok(Thresholds::from_i128(dtype, &[i])),
        Err(_) => Ok(Thresholds::from_f64(dtype, &[real()?])),
    }
}

/// The numbers of a .npy vector, exactly: integers as integers, floats as reals.
fn vector(dtype: DataType, path: &std::path::Path) -> Result<Thresholds, Fail> {
    let a = npy::read(path)?;
    let d = &a.desc;
    if d.rank() != 1 {
        return Err(Fail::input(format!(
            "{}: the thresholds must be a vector (one per element of x's last axis), got shape {:?}",
            path.display(),
            d.sizes()
        )));
    }
    let es = d.data_type().size();
    let stride = d.effective_strides().first().copied().unwrap_or(1);
    let raw: Vec<u64> = (0..d.sizes()[0])
        .map(|i| {
            let at = i * stride * es;
            let mut b = [0u8; 8];
            b[..es].copy_from_slice(&a.bytes[at..at + es]);
            u64::from_le_bytes(b)
        })
        .collect();
    let t = d.data_type();
    let w = es * 8;
    Ok(match t {
        DataType::F16 => Thresholds::from_f64(
            dtype,
            &raw.iter()
                .map(|&v| f16::from_bits(v as u16).to_f64())
                .collect::<Vec<_>>(),
        ),
        DataType::F32 => Thresholds::from_f64(
            dtype,
            &raw.iter()
                .map(|&v| f64::from(f32::from_bits(v as u32)))
                .collect::<Vec<_>>(),
        ),
        DataType::F64 => Thresholds::from_f64(
            dtype,
            &raw.iter().map(|&v| f64::from_bits(v)).collect::<Vec<_>>(),
        ),
        DataType::Bool => Thresholds::from_i128(
            dtype,
            &raw.iter().map(|&v| i128::from(v != 0)).collect::<Vec<_>>(),
        ),
        _ if t.is_signed() => Thresholds::from_i128(
            dtype,
            &raw.iter()
                .map(|&v| i128::from(((v << (64 - w)) as i64) >> (64 - w)))
                .collect::<Vec<_>>(),
        ),
        _ => Thresholds::from_i128(
            dtype,
            &raw.iter().map(|&v| i128::from(v)).collect::<Vec<_>>(),
        ),
    })
}

pub fn binarize(a: BinarizeArgs) -> Result<(), Fail> {
    let out = Output::resolve(&a.output)?;
    let x = npy::read(&a.x)?;
    let dtype = x.desc.data_type();
    let t = match (&a.threshold, &a.thresholds) {
        (Some(s), _) => scalar(dtype, s)?,
        (None, Some(p)) => vector(dtype, p)?,
        (None, None) => Thresholds::from_i128(dtype, &[0]),
    };
    let order = match a.bitorder {
        BitOrderArg::Big => BitOrder::Big,
        BitOrderArg::Little => BitOrder::Little,
    };
    let Some(&d) = x.desc.sizes().last() else {
        return Err(Fail::input(format!(
            "{}: x is a 0-d array; binarize packs the last axis of an array of at least one dimension",
            a.x.display()
        )));
    };
    let mut shape = x.desc.sizes().to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = d.div_ceil(8);
    loadable(DataType::U8, &shape)?;
    let codes = match device(a.device, x.bytes.len() as u128)? {
        None => {
            // The description's buffer is rounded up to 4 bytes; the codes are the elements.
            let mut codes = TensorDesc::new(DataType::U8, &shape)?.zeroed_buffer("codes")?;
            codes.truncate(shape.iter().product());
            tensorbits::binarize_bytes(&x.desc, &x.bytes, &t, order, &mut codes)?;
            codes
        }
        Some(g) => g.binarize_bytes(&x.desc, &x.bytes, &t, order)?,
    };
    out.write(|w| npy::write(w, DataType::U8, &shape, &codes))
}
