//! `.npy` files, read as numpy's own reader (`numpy.lib.format`) reads them: what it refuses is
//! refused here, with a message. The header is a Python literal, parsed in linear time as
//! `ast.literal_eval` would ([`crate::literal`]); the rules numpy then applies are here: a header of at most 10000 bytes
//! (numpy's `max_header_size`), a dict of exactly `descr`, `fortran_order` and `shape`, a shape
//! that is a tuple of non-negative integers whose non-zero sizes times the item size fit in 63 bits,
//! `fortran_order` a bool, and one of the twelve data types. Big-endian elements are byte-swapped
//! and Fortran order becomes column-major strides in the tensor description, which the library
//! reads directly. Outputs are written little-endian in C order, version 1.0.

use crate::Fail;
use crate::literal::{self, Value};
use std::io::{Read, Write};
use std::path::Path;
use tensorbits::{DataType, TensorDesc};

/// An array read from a file: its description and little-endian element bytes (in file order).
pub struct Array {
    pub desc: TensorDesc,
    pub bytes: Vec<u8>,
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// numpy's default `max_header_size`: larger headers are refused as unsafe to parse.
const MAX_HEADER: usize = 10_000;

/// The descr numpy writes for a data type on a little-endian machine.
pub fn descr(dt: DataType) -> String {
    let order = if dt.size() == 1 { '|' } else { '<' };
    format!("{order}{}{}", dt.numpy_kind(), dt.size())
}

fn supported() -> String {
    let all: Vec<String> = DataType::ALL.iter().map(|&t| descr(t)).collect();
    format!("{} (either byte order)", all.join(" "))
}

/// A descr string: the data type and whether it is big-endian.
fn parse_descr(s: &str) -> Option<(DataType, bool)> {
    let mut chars = s.chars();
    let (order, rest) = match chars.next()? {
        c @ ('<' | '>' | '|' | '=') => (c, chars.as_str()),
        _ => ('=', s),
    };
    let kind = rest.chars().next()?;
    let size: usize = rest.get(1..)?.parse().ok()?;
    let dt = DataType::from_numpy_kind(kind, size)?;
    // `=` is the machine's order; this tool runs on little-endian machines only.
    Some((dt, order == '>' && size > 1))
}

/// What numpy's reader keeps of a header.
struct Header {
    dtype: DataType,
    big: bool,
    fortran: bool,
    shape: Vec<usize>,
}

/// The rules numpy applies to the parsed header dict.
fn check_header(v: &Value) -> Result<Header, String> {
    let Value::Dict(entries) = v else {
        return Err(format!("the header is not a dict: {v}"));
    };
    let mut keys: Vec<String> = Vec::new();
    let (mut descr_v, mut fortran_v, mut shape_v) = (None, None, None);
    for (k, val) in entries {
        let Value::String(k) = k else {
            return Err(format!("the header has a key that is not a string: {k}"));
        };
        if keys.contains(k) {
            return Err(format!("the header repeats the key '{k}'"));
        }
        keys.push(k.clone());
        match k.as_str() {
            "descr" => descr_v = Some(val),
            "fortran_order" => fortran_v = Some(val),
            "shape" => shape_v = Some(val),
            other => {
                return Err(format!(
                    "the header has the key '{other}'; numpy's headers have exactly 'descr', 'fortran_order' and 'shape'"
                ));
            }
        }
    }
    let (Some(descr_v), Some(fortran_v), Some(shape_v)) = (descr_v, fortran_v, shape_v) else {
        return Err(format!(
            "the header has the keys [{}]; numpy's headers have exactly 'descr', 'fortran_order' and 'shape'",
            keys.iter()
                .map(|k| format!("'{k}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let fortran = match fortran_v {
        Value::Boolean(b) => *b,
        other => {
            return Err(format!(
                "'fortran_order' must be True or False, not {other}"
            ));
        }
    };
    let Value::Tuple(dims) = shape_v else {
        return Err(format!(
            "'shape' must be a tuple of non-negative integers, such as (3, 4), not {shape_v}"
        ));
    };
    let mut shape = Vec::with_capacity(dims.len());
    for d in dims {
        let n = d.as_i64().filter(|n| *n >= 0);
        match n {
            Some(n) => shape.push(n as u64),
            None => {
                return Err(format!(
                    "'shape' must be a tuple of non-negative integers below 2**63, not {shape_v}"
                ));
            }
        }
    }
    let (dtype, big) = match descr_v {
        Value::String(s) => parse_descr(s).ok_or_else(|| {
            format!(
                "data type '{s}' is not supported; supported: {}",
                supported()
            )
        })?,
        other => {
            return Err(format!(
                "data type {other} is not supported (structured types are not); supported: {}",
                supported()
            ));
        }
    };
    // numpy multiplies the non-zero sizes and the item size in its index type, a signed 64-bit
    // integer on the machines this tool runs on: it cannot hold a larger array, even an empty one.
    let fits = shape
        .iter()
        .filter(|&&n| n != 0)
        .try_fold(dtype.size() as u64, |acc, &n| acc.checked_mul(n))
        .is_some_and(|b| b <= i64::MAX as u64);
    if !fits {
        return Err(format!(
            "shape {} of '{}' is too large: its non-zero sizes times the item size exceed 2**63 - 1 bytes, more than numpy can hold",
            tuple(&shape),
            descr(dtype)
        ));
    }
    let shape = shape
        .iter()
        .map(|&n| usize::try_from(n))
        .collect::<Result<_, _>>()
        .map_err(|_| format!("shape {} does not fit in memory", tuple(&shape)))?;
    Ok(Header {
        dtype,
        big,
        fortran,
        shape,
    })
}

fn tuple<T: std::fmt::Display>(shape: &[T]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// What kind of file system object a path is, for messages.
fn kind(m: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

pub fn read(path: &Path) -> Result<Array, Fail> {
    let name = path.display();
    let cannot = |e: std::io::Error| Fail::input(format!("cannot read {name}: {e}"));
    let meta = std::fs::metadata(path).map_err(cannot)?;
    // Reading a FIFO with no writer would wait forever; a device never ends.
    if !meta.is_file() {
        return Err(Fail::input(format!(
            "cannot read {name}: it is {}, not a regular .npy file",
            kind(&meta)
        )));
    }
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let invalid = |what: String| Fail::input(format!("{name} is not a valid .npy file: {what}"));
    let mut lead = [0u8; 8];
    file.read_exact(&mut lead)
        .map_err(|_| invalid("the file ends inside its header".into()))?;
    if &lead[..6] != MAGIC {
        return Err(invalid(
            "it does not start with numpy's magic string".into(),
        ));
    }
    let (major, minor) = (lead[6], lead[7]);
    if !(1..=3).contains(&major) || minor != 0 {
        return Err(invalid(format!(
            "format version {major}.{minor} is not one of 1.0, 2.0, 3.0"
        )));
    }
    let header_len = if major == 1 {
        let mut b = [0u8; 2];
        file.read_exact(&mut b)
            .map_err(|_| invalid("the file ends inside its header".into()))?;
        u16::from_le_bytes(b) as usize
    } else {
        let mut b = [0u8; 4];
        file.read_exact(&mut b)
            .map_err(|_| invalid("the file ends inside its header".into()))?;
        u32::from_le_bytes(b) as usize
    };
    if header_len > MAX_HEADER {
        return Err(invalid(format!(
            "its header is {header_len} bytes; numpy refuses headers over {MAX_HEADER} bytes"
        )));
    }
    let mut raw = vec![0u8; header_len];
    file.read_exact(&mut raw)
        .map_err(|_| invalid("the file ends inside its header".into()))?;
    // Versions 1 and 2 store the header in latin-1, version 3 in UTF-8.
    let text: String = if major == 3 {
        String::from_utf8(raw).map_err(|_| invalid("its header is not UTF-8".into()))?
    } else {
        raw.iter().map(|&b| b as char).collect()
    };
    let value = literal::parse(text.trim_matches([' ', '\t', '\n', '\r', '\x0c']))
        .map_err(|e| invalid(format!("its header is not a Python literal: {e}")))?;
    let h = check_header(&value).map_err(|e| Fail::input(format!("{name}: {e}")))?;
    let mut desc = TensorDesc::new(h.dtype, &h.shape)
        .map_err(|e| Fail::input(format!("{name}: {}", rename(&e.to_string()))))?;
    if h.fortran && h.shape.len() > 1 {
        // Column-major: the first index varies fastest.
        let mut strides = vec![0usize; h.shape.len()];
        let mut acc = 1usize;
        for (s, &n) in strides.iter_mut().zip(&h.shape) {
            *s = acc;
            acc = acc.saturating_mul(n.max(1));
        }
        desc = desc
            .with_strides(&strides)
            .map_err(|e| Fail::input(format!("{name}: {e}")))?;
    }
    let dt = h.dtype;
    // The header's checks bound this product.
    let need = desc.element_count().unwrap_or(0) * dt.size();
    let offset = (if major == 1 { 10 } else { 12 } + header_len) as u64;
    let have = meta.len().saturating_sub(offset);
    if have < need as u64 {
        return Err(Fail::input(format!(
            "{name}: the data is {have} bytes, but shape {} of '{}' needs {need}; the file is truncated",
            tuple(&h.shape),
            descr(dt)
        )));
    }
    let mut bytes = desc.zeroed_buffer(&name.to_string())?;
    file.read_exact(&mut bytes[..need]).map_err(cannot)?;
    if h.big && dt.size() > 1 {
        for e in bytes[..need].chunks_exact_mut(dt.size()) {
            e.reverse();
        }
    }
    // `bool` elements are bytes; any non-zero byte is true, as the library reads them.
    Ok(Array { desc, bytes })
}

/// Library messages name a tensor "tensor" when it has no role yet; in a file it is the file.
fn rename(msg: &str) -> String {
    msg.strip_prefix("tensor ")
        .map_or_else(|| msg.to_owned(), |m| format!("the array {m}"))
}

/// Whether numpy can hold an array of `shape` and `dt` (see [`check_header`]).
pub fn numpy_can_hold(dt: DataType, shape: &[usize]) -> bool {
    shape
        .iter()
        .filter(|&&n| n != 0)
        .try_fold(dt.size() as u64, |acc, &n| acc.checked_mul(n as u64))
        .is_some_and(|b| b <= i64::MAX as u64)
}

/// Writes a C-order little-endian array of `dt` from its packed bytes, as `np.save` does.
pub fn write(
    out: &mut (impl Write + ?Sized),
    dt: DataType,
    shape: &[usize],
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        descr(dt),
        tuple(shape)
    );
    // The data starts at a multiple of 64 bytes, after a newline-terminated, space-padded header.
    let (version, prefix) = if header.len() + 11 <= 65535 {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    while !(prefix + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    out.write_all(MAGIC)?;
    out.write_all(&[version, 0])?;
    if version == 1 {
        out.write_all(&(header.len() as u16).to_le_bytes())?;
    } else {
        out.write_all(&(header.len() as u32).to_le_bytes())?;
    }
    out.write_all(header.as_bytes())?;
    let n = shape.iter().product::<usize>() * dt.size();
    out.write_all(&bytes[..n])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Result<Header, String> {
        check_header(&literal::parse(text).map_err(|e| e.to_string())?)
    }

    #[test]
    fn numpy_rules() {
        let h = header("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }").unwrap();
        assert_eq!(
            (h.dtype, h.big, h.fortran, h.shape),
            (DataType::I32, true, true, vec![2, 3])
        );
        assert!(header("{'descr': '|b1', 'fortran_order': False, 'shape': ()}").is_ok());
        for bad in [
            "{'descr': '<u4', 'fortran_order': False, 'shape': [3, 4]}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1}",
            "{'descr': '<u4', 'fortran_order': False}",
            "{'descr': '<u4', 'fortran_order': 0, 'shape': (3,)}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (0, 9223372036854775808)}",
            "{'descr': '<u4', 'fortran_order': False, 'shape': (0, 4611686018427387904)}",
            "{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}",
            "{'descr': [('a', '<u4')], 'fortran_order': False, 'shape': (3,)}",
            "{'descr': '<u4', 'descr': '<u4', 'fortran_order': False, 'shape': (3,)}",
            "['descr', 'fortran_order', 'shape']",
        ] {
            assert!(header(bad).is_err(), "{bad}");
        }
        // Non-zero sizes times the item size up to 2**63 - 1 are what numpy holds.
        assert!(
            header("{'descr': '|u1', 'fortran_order': False, 'shape': (0, 9223372036854775807)}")
                .is_ok()
        );
    }

    #[test]
    fn written_headers_are_numpy_aligned() {
        for shape in [&[][..], &[3], &[2, 3, 4]] {
            let mut out = Vec::new();
            let n: usize = shape.iter().product();
            write(&mut out, DataType::U16, shape, &vec![7u8; n * 2]).unwrap();
            let hl = u16::from_le_bytes([out[8], out[9]]) as usize;
            assert_eq!((10 + hl) % 64, 0);
            assert_eq!(out.len(), 10 + hl + n * 2);
        }
    }
}
