//! `.npy` files for the command-line tests, written and read by hand (independently of the tool),
//! and the tool itself.

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tensorbits::DataType;

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tensorbits"));
    c.env_remove("TENSORBITS_REQUIRE_GPU");
    c
}

pub fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tensorbits-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

pub fn descr(dt: DataType, big: bool) -> String {
    let kind = match dt {
        DataType::Bool => 'b',
        t if t.is_float() => 'f',
        t if t.is_signed() => 'i',
        _ => 'u',
    };
    let order = if dt.size() == 1 {
        '|'
    } else if big {
        '>'
    } else {
        '<'
    };
    format!("{order}{kind}{}", dt.size())
}

/// An `.npy` file by hand (independent of the tool's npyz): `version` 1, 2 or 3; `data` holds the
/// elements little-endian in C order and is rewritten for big-endian or Fortran order.
pub fn npy_bytes(
    descr: &str,
    shape: &[usize],
    fortran: bool,
    version: u8,
    payload: &[u8],
) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let tuple = if shape.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {tuple}, }}",
        if fortran { "True" } else { "False" }
    );
    let prefix = if version == 1 { 10 } else { 12 };
    while !(prefix + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend((header.len() as u16).to_le_bytes());
    } else {
        out.extend((header.len() as u32).to_le_bytes());
    }
    out.extend(header.as_bytes());
    out.extend(payload);
    out
}

pub fn write_npy(
    path: &Path,
    dt: DataType,
    shape: &[usize],
    le_c_data: &[u8],
    fortran: bool,
    big: bool,
    version: u8,
) {
    let es = dt.size();
    let n = le_c_data.len() / es;
    let mut elems: Vec<Vec<u8>> = le_c_data.chunks(es).map(|c| c.to_vec()).collect();
    if big {
        for e in &mut elems {
            e.reverse();
        }
    }
    let order: Vec<usize> = if fortran {
        // Element i of the Fortran file is the C element whose index has the first dim fastest.
        let mut idx = Vec::with_capacity(n);
        for f in 0..n {
            let mut rem = f;
            let mut c = 0;
            let mut stride = 1;
            let mut cstrides = vec![1usize; shape.len()];
            for d in (0..shape.len()).rev() {
                cstrides[d] = stride;
                stride *= shape[d];
            }
            for d in 0..shape.len() {
                c += (rem % shape[d]) * cstrides[d];
                rem /= shape[d];
            }
            idx.push(c);
        }
        idx
    } else {
        (0..n).collect()
    };
    let payload: Vec<u8> = order.iter().flat_map(|&i| elems[i].clone()).collect();
    std::fs::write(
        path,
        npy_bytes(&descr(dt, big), shape, fortran, version, &payload),
    )
    .unwrap();
}

/// Reads what the tool writes: little-endian, C order. Returns the descr, shape and data.
pub fn read_npy(path: &Path) -> (String, Vec<usize>, Vec<u8>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..6], b"\x93NUMPY");
    let (len, start) = if b[6] == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12)
    };
    let h = std::str::from_utf8(&b[start..start + len]).unwrap();
    let d = h
        .split("'descr': '")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap()
        .to_owned();
    assert!(h.contains("'fortran_order': False"), "{h}");
    let s = h
        .split("'shape': (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let shape: Vec<usize> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().unwrap())
        .collect();
    (d, shape, b[start + len..].to_vec())
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}
