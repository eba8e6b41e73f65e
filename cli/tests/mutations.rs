//! Property test of the tool against damaged `.npy` files: valid files of every layout are mutated
//! (bits flipped, truncated, extended, header fields and prefix bytes edited) and run through
//! `tensorbits run not`. Each run must either succeed with exactly the library's answer for the
//! file as this test reads it, or exit 2 with one `error:` line free of control bytes. The output
//! path holds a sentinel that a failure must leave untouched, and no temporary file may remain.

#[path = "../../tests/common/mod.rs"]
mod common;
mod files;

use common::Rng;
use files::{bin, descr, npy_bytes, read_npy, tmp};
use proptest::prelude::*;
use std::path::Path;
use tensorbits::{Call, DataType, Input, TensorDesc, execute, ops};

/// A valid file: data type, shape, Fortran order, big-endian, format version.
struct Base {
    dt: DataType,
    shape: Vec<usize>,
    fortran: bool,
    big: bool,
    version: u8,
}

fn bases() -> Vec<Base> {
    let mut v = Vec::new();
    for (i, &dt) in DataType::ALL.iter().enumerate() {
        let shape = match i % 4 {
            0 => vec![2, 3],
            1 => vec![5],
            2 => vec![],
            _ => vec![2, 1, 3],
        };
        v.push(Base {
            dt,
            shape,
            fortran: i % 3 == 0,
            big: i % 2 == 1,
            version: 1 + (i % 3) as u8,
        });
    }
    v
}

/// The file's bytes: the header written by hand, the payload in the file's own order and byte
/// order (the payload is random; its meaning is decided when the file is read back).
fn base_bytes(b: &Base, rng: &mut Rng) -> Vec<u8> {
    let n: usize = b.shape.iter().product();
    let payload: Vec<u8> = (0..n * b.dt.size()).map(|_| rng.next() as u8).collect();
    npy_bytes(
        &descr(b.dt, b.big),
        &b.shape,
        b.fortran,
        b.version,
        &payload,
    )
}

/// Header fields a mutation puts in place of the real ones.
const DESCRS: &[&str] = &[
    "<u4",
    ">u4",
    "|u1",
    "<f2",
    ">f8",
    "|b1",
    "<i2",
    "=i8",
    "u4",
    "<c8",
    "<U3",
    "|O",
    "<u3",
    "",
    "<i16",
    "\x1b[31m<u4",
];
const SHAPES: &[&str] = &[
    "(2, 3)",
    "(6,)",
    "()",
    "[2, 3]",
    "(2, 3, 1)",
    "(-1,)",
    "(0, 9223372036854775808)",
    "(3, 2)",
    "(100,)",
    "(2, 3,)",
    "None",
    "(1, 1, 1, 1, 1, 1, 1, 1, 1)",
    "(0,)",
];
const ORDERS: &[&str] = &["True", "False", "0", "None"];

fn with_header(bytes: &[u8], header: String) -> Vec<u8> {
    let (start, len) = header_span(bytes);
    let mut h = header;
    let prefix = start;
    while !(prefix + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = bytes[..prefix].to_vec();
    if prefix == 10 {
        out[8..10].copy_from_slice(&(h.len() as u16).to_le_bytes());
    } else {
        out[8..12].copy_from_slice(&(h.len() as u32).to_le_bytes());
    }
    out.extend(h.as_bytes());
    out.extend(&bytes[start + len..]);
    out
}

fn header_span(bytes: &[u8]) -> (usize, usize) {
    if bytes[6] == 1 {
        (10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize)
    } else {
        (
            12,
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
        )
    }
}

fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match rng.below(7) {
        0 => {
            for _ in 0..1 + rng.below(3) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        1 => b.truncate(rng.below(b.len())),
        2 => b.extend((0..1 + rng.below(64)).map(|_| rng.next() as u8)),
        3 => {
            let header = format!(
                "{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
                DESCRS[rng.below(DESCRS.len())],
                ORDERS[rng.below(ORDERS.len())],
                SHAPES[rng.below(SHAPES.len())]
            );
            b = with_header(&b, header);
        }
        4 => {
            let extra = [", 'x': 1", ", 'descr': '<u4'", ""][rng.below(3)];
            let header = format!(
                "{{'shape': {}, 'descr': '{}'{extra}, 'fortran_order': False}}",
                SHAPES[rng.below(SHAPES.len())],
                DESCRS[rng.below(DESCRS.len())]
            );
            b = with_header(&b, header);
        }
        5 => {
            // The version bytes.
            b[6] = rng.below(5) as u8;
            b[7] = rng.below(2) as u8;
        }
        _ => {
            // The header length field.
            b[8] = rng.next() as u8;
            if rng.chance(50) {
                b[9] = rng.next() as u8;
            }
        }
    }
    b
}

/// The file as this test reads it, for a file the tool accepted: descr, Fortran order, shape, and
/// the data bytes (little-endian, C order) the array holds.
fn read_back(bytes: &[u8]) -> (DataType, Vec<usize>, Vec<u8>) {
    let (start, len) = header_span(bytes);
    let h: String = bytes[start..start + len]
        .iter()
        .map(|&c| c as char)
        .collect();
    let after = |key: &str| {
        let i = h
            .find(&format!("'{key}':"))
            .unwrap_or_else(|| panic!("no {key} in {h:?}"));
        h[i + key.len() + 3..].trim_start().to_owned()
    };
    let d = after("descr");
    let q = d.chars().next().unwrap();
    let d: String = d[1..].chars().take_while(|&c| c != q).collect();
    let big = d.starts_with('>');
    let dt = DataType::ALL
        .into_iter()
        .find(|&t| descr(t, false)[1..] == d[d.len() - 2..])
        .unwrap_or_else(|| panic!("descr {d:?}"));
    let fortran = after("fortran_order").starts_with("True");
    let s = after("shape");
    assert!(s.starts_with('('), "{h:?}");
    let shape: Vec<usize> = s[1..s.find(')').unwrap()]
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().unwrap())
        .collect();
    let es = dt.size();
    let n: usize = shape.iter().product();
    let raw = &bytes[start + len..start + len + n * es];
    let mut c = vec![0u8; n * es];
    for f in 0..n {
        // File element `f` is C element `ci`.
        let ci = if fortran {
            let (mut rem, mut ci, mut stride) = (f, 0, 1);
            let mut cs = vec![1usize; shape.len()];
            for d in (0..shape.len()).rev() {
                cs[d] = stride;
                stride *= shape[d];
            }
            for d in 0..shape.len() {
                ci += (rem % shape[d]) * cs[d];
                rem /= shape[d];
            }
            ci
        } else {
            f
        };
        let mut e = raw[f * es..f * es + es].to_vec();
        if big {
            e.reverse();
        }
        c[ci * es..ci * es + es].copy_from_slice(&e);
    }
    (dt, shape, c)
}

/// NOT through the library's dynamic entry point.
fn expected(dt: DataType, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let op = ops::lookup("not").unwrap();
    let d = TensorDesc::new(dt, shape).unwrap();
    let mut input = data.to_vec();
    input.resize(d.total_bytes(), 0);
    let mut out = vec![0u8; d.total_bytes()];
    execute(
        op,
        &Call::default(),
        &[Input::Bytes(&d, &input)],
        &d,
        &mut out,
    )
    .unwrap();
    out.truncate(data.len());
    out
}

fn check(dir: &Path, case: usize, bytes: &[u8]) {
    let input = dir.join(format!("m{case}.npy"));
    let out = dir.join("out.npy");
    std::fs::write(&input, bytes).unwrap();
    std::fs::write(&out, b"sentinel").unwrap();
    let r = bin()
        .args(["run", "not"])
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .args(["--device", "cpu"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    match r.status.code() {
        Some(0) => {
            let (dt, shape, data) = read_back(bytes);
            let (d, got_shape, got) = read_npy(&out);
            assert_eq!(d, descr(dt, false), "case {case}");
            assert_eq!(got_shape, shape, "case {case}");
            assert_eq!(got, expected(dt, &shape, &data), "case {case}: {bytes:?}");
        }
        Some(2) => {
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "case {case}: {err:?}");
            assert!(lines[0].starts_with("error: "), "case {case}: {err:?}");
            assert!(
                !lines[0].chars().any(char::is_control),
                "case {case}: control bytes in {err:?}"
            );
            assert_eq!(
                std::fs::read(&out).unwrap(),
                b"sentinel",
                "case {case}: a failed run touched the output"
            );
        }
        other => panic!("case {case}: exit {other:?}: {err}"),
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(".tensorbits-"),
            "case {case}: {name} left"
        );
    }
    std::fs::remove_file(&input).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn damaged_files_give_the_right_bytes_or_one_clean_error(base in 0usize..12, seed in any::<u64>()) {
        let dir = tmp("mutations");
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = Rng(seed);
        let bases = bases();
        let valid = base_bytes(&bases[base], &mut rng);
        let damaged = mutate(&valid, &mut rng);
        check(&dir, base, &damaged);
    }
}

/// The unmutated files are all accepted, so the property above sees both outcomes.
#[test]
fn the_valid_files_round_trip() {
    let dir = tmp("mutations_valid");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(7);
    for (i, b) in bases().iter().enumerate() {
        let bytes = base_bytes(b, &mut rng);
        check(&dir, i, &bytes);
        assert!(dir.join("out.npy").exists());
        let (_, shape, _) = read_npy(&dir.join("out.npy"));
        assert_eq!(shape, b.shape);
    }
}
