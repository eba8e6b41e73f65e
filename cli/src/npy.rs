//! `.npy` files: npyz parses headers (versions 1 to 3) and writes outputs; the element bytes are
//! read here so that every `bool` byte, big-endian data and Fortran order are handled exactly:
//! big-endian elements are byte-swapped, and Fortran order becomes column-major strides in the
//! tensor description, which the library reads directly.

use crate::Fail;
use std::io::{BufReader, Read};
use std::path::Path;
use tensorbits::{DataType, TensorDesc};

/// An array read from a file: its description and little-endian element bytes (in file order).
pub struct Array {
    pub desc: TensorDesc,
    pub bytes: Vec<u8>,
}

const SUPPORTED: &str = "|b1 |u1 <u2 <u4 <u8 |i1 <i2 <i4 <i8 <f2 <f4 <f8 (either byte order)";

fn dtype_of(ts: &npyz::TypeStr) -> Option<DataType> {
    use npyz::TypeChar;
    Some(match (ts.type_char(), ts.size_field()) {
        (TypeChar::Bool, 1) => DataType::Bool,
        (TypeChar::Uint, 1) => DataType::U8,
        (TypeChar::Uint, 2) => DataType::U16,
        (TypeChar::Uint, 4) => DataType::U32,
        (TypeChar::Uint, 8) => DataType::U64,
        (TypeChar::Int, 1) => DataType::I8,
        (TypeChar::Int, 2) => DataType::I16,
        (TypeChar::Int, 4) => DataType::I32,
        (TypeChar::Int, 8) => DataType::I64,
        (TypeChar::Float, 2) => DataType::F16,
        (TypeChar::Float, 4) => DataType::F32,
        (TypeChar::Float, 8) => DataType::F64,
        _ => return None,
    })
}

pub fn read(path: &Path) -> Result<Array, Fail> {
    let name = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| Fail::input(format!("cannot read {name}: {e}")))?;
    let npy = npyz::NpyFile::new(BufReader::new(file)).map_err(|e| {
        let what = match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "the file ends inside its header".to_owned(),
            _ => e.to_string(),
        };
        Fail::input(format!("{name} is not a valid .npy file: {what}"))
    })?;
    let ts = match npy.dtype() {
        npyz::DType::Plain(ts) => ts,
        other => {
            return Err(Fail::input(format!(
                "{name}: structured data type {} is not supported; supported: {SUPPORTED}",
                other.descr()
            )));
        }
    };
    let dt = dtype_of(&ts).ok_or_else(|| {
        Fail::input(format!(
            "{name}: data type '{ts}' is not supported; supported: {SUPPORTED}"
        ))
    })?;
    let shape: Vec<usize> = npy
        .shape()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            Fail::input(format!(
                "{name}: shape {:?} does not fit in memory",
                npy.shape()
            ))
        })?;
    let fortran = npy.order() == npyz::Order::Fortran;
    let big = ts.endianness() == npyz::Endianness::Big;
    let mut desc = TensorDesc::new(dt, &shape)
        .map_err(|e| Fail::input(format!("{name}: {}", rename(&e.to_string()))))?;
    if fortran && shape.len() > 1 {
        // Column-major: the first index varies fastest.
        let mut strides = vec![0usize; shape.len()];
        let mut acc = 1usize;
        for (s, &n) in strides.iter_mut().zip(&shape) {
            *s = acc;
            acc = acc.saturating_mul(n.max(1));
        }
        desc = desc
            .with_strides(&strides)
            .map_err(|e| Fail::input(format!("{name}: {e}")))?;
    }
    let count = desc.element_count().unwrap_or(0);
    let need = count
        .checked_mul(dt.size())
        .ok_or_else(|| Fail::input(format!("{name}: shape {shape:?} is too large")))?;
    let mut bytes = Vec::with_capacity(need.min(1 << 30));
    npy.into_inner()
        .take(need as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| Fail::input(format!("cannot read {name}: {e}")))?;
    if bytes.len() < need {
        return Err(Fail::input(format!(
            "{name}: the data is {} bytes, but shape {shape:?} of '{ts}' needs {need}; the file is truncated",
            bytes.len()
        )));
    }
    if big && dt.size() > 1 {
        for e in bytes.chunks_exact_mut(dt.size()) {
            e.reverse();
        }
    }
    // Descriptions round their total size up to whole 4-byte words.
    bytes.resize(desc.total_bytes().max(need), 0);
    Ok(Array { desc, bytes })
}

/// Library messages name a tensor "tensor" when it has no role yet; in a file it is the file.
fn rename(msg: &str) -> String {
    msg.strip_prefix("tensor ")
        .map_or_else(|| msg.to_owned(), |m| format!("the array {m}"))
}

fn typed<T: npyz::Serialize + npyz::AutoSerialize + Copy>(
    out: &mut impl std::io::Write,
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    use npyz::WriterBuilder;
    let mut w = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(out)
        .begin_nd()?;
    w.extend(values)?;
    w.finish()
}

/// Writes a C-order little-endian array of `dt` from its packed bytes.
pub fn write(
    out: &mut impl std::io::Write,
    dt: DataType,
    shape: &[usize],
    bytes: &[u8],
) -> std::io::Result<()> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let n = shape.iter().product::<u64>() as usize * dt.size();
    let b = &bytes[..n];
    macro_rules! each {
        ($t:ty) => {
            typed(
                out,
                &shape,
                b.chunks_exact(size_of::<$t>())
                    .map(|c| bytemuck::pod_read_unaligned::<$t>(c)),
            )
        };
    }
    match dt {
        DataType::Bool => typed(out, &shape, b.iter().map(|&x| x != 0)),
        DataType::U8 => each!(u8),
        DataType::U16 => each!(u16),
        DataType::U32 => each!(u32),
        DataType::U64 => each!(u64),
        DataType::I8 => each!(i8),
        DataType::I16 => each!(i16),
        DataType::I32 => each!(i32),
        DataType::I64 => each!(i64),
        DataType::F16 => each!(half::f16),
        DataType::F32 => each!(f32),
        DataType::F64 => each!(f64),
    }
}
