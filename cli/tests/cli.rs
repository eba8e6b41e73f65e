//! The command-line tool, through the built binary: every op on every type round-trips through
//! `.npy` files and agrees with the library; broadcast modes; header versions 1-3, big-endian and
//! Fortran-order inputs; and a corpus of bad inputs, each exit 2 with one `error:` line naming the
//! problem and no output file left behind.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::Rng;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tensorbits::{Call, DataType, FeatureLevel, Input, TensorDesc, execute, ops};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tensorbits"));
    c.env_remove("TENSORBITS_REQUIRE_GPU");
    c
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tensorbits-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn descr(dt: DataType, big: bool) -> String {
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
fn npy_bytes(descr: &str, shape: &[usize], fortran: bool, version: u8, payload: &[u8]) -> Vec<u8> {
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
    while (prefix + header.len() + 1) % 64 != 0 {
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

fn write_npy(
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
fn read_npy(path: &Path) -> (String, Vec<usize>, Vec<u8>) {
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

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn random_bytes(rng: &mut Rng, dt: DataType, n: usize) -> Vec<u8> {
    (0..n * dt.size()).map(|_| rng.next() as u8).collect()
}

/// The library's answer for packed C-order inputs (through the same dynamic entry point).
fn library(
    op: &'static tensorbits::OpInfo,
    call: Call,
    inputs: &[(DataType, Vec<usize>, Vec<u8>)],
    out_dt: DataType,
) -> (Vec<usize>, Vec<u8>) {
    let mut descs = Vec::new();
    let mut datas = Vec::new();
    for (dt, shape, data) in inputs {
        let d = TensorDesc::new(*dt, shape).unwrap();
        let mut b = data.clone();
        b.resize(d.total_bytes(), 0);
        descs.push(d);
        datas.push(b);
    }
    let refs: Vec<&TensorDesc> = descs.iter().collect();
    let plan = tensorbits::validate_new_output(op, &call, &refs, out_dt).unwrap();
    let od = TensorDesc::new(out_dt, plan.output_shape()).unwrap();
    let mut out = vec![0u8; od.total_bytes()];
    let ins: Vec<Input<'_>> = descs
        .iter()
        .zip(&datas)
        .map(|(d, b)| Input::Bytes(d, b))
        .collect();
    execute(op, &call, &ins, &od, &mut out).unwrap();
    out.truncate(plan.element_count() * out_dt.size());
    (plan.output_shape().to_vec(), out)
}

fn bool_norm(dt: DataType, bytes: &mut [u8]) {
    // A .npy bool written by the tool is 0 or 1; the library's output already is.
    if dt == DataType::Bool {
        for b in bytes {
            *b = (*b != 0) as u8;
        }
    }
}

#[test]
fn every_op_and_type_round_trips_through_files() {
    let mut rng = Rng(7);
    for op in ops::ALL {
        for &dt in op.all_types() {
            for out_dt in op.output_types().map_or(vec![dt], |o| o.to_vec()) {
                let shape = vec![2, 3];
                let inputs: Vec<(DataType, Vec<usize>, Vec<u8>)> = (0..op.arity())
                    .map(|_| (dt, shape.clone(), random_bytes(&mut rng, dt, 6)))
                    .collect();
                let mut files = Vec::new();
                for (k, (dt, shape, data)) in inputs.iter().enumerate() {
                    let f = tmp(&format!("rt_{}_{}_{k}.npy", op.type_name(), dt));
                    let mut d = data.clone();
                    bool_norm(*dt, &mut d);
                    write_npy(&f, *dt, shape, &d, false, false, 1);
                    files.push(f);
                }
                let inputs: Vec<(DataType, Vec<usize>, Vec<u8>)> = inputs
                    .into_iter()
                    .map(|(dt, s, mut d)| {
                        bool_norm(dt, &mut d);
                        (dt, s, d)
                    })
                    .collect();
                let out = tmp(&format!("rt_{}_{}_{}_out.npy", op.type_name(), dt, out_dt));
                let mut args = vec!["run", op.name()];
                args.extend(files.iter().map(|f| p(f)));
                args.extend([
                    "-o",
                    p(&out),
                    "--device",
                    "cpu",
                    "--out-dtype",
                    out_dt.name(),
                ]);
                if op.output_types().is_none() {
                    args.truncate(args.len() - 2);
                }
                let r = run(&args);
                assert!(
                    r.status.success(),
                    "{} {dt}: {}",
                    op.name(),
                    String::from_utf8_lossy(&r.stderr)
                );
                let (d, s, data) = read_npy(&out);
                let (ws, wd) = library(op, Call::default(), &inputs, out_dt);
                assert_eq!(d, descr(out_dt, false));
                assert_eq!(s, ws);
                assert_eq!(data, wd, "{} {dt} -> {out_dt}", op.name());
            }
        }
    }
}

#[test]
fn broadcast_modes_and_axis() {
    let mut rng = Rng(11);
    let a = random_bytes(&mut rng, DataType::U16, 24);
    let b = random_bytes(&mut rng, DataType::U16, 3);
    let (fa, fb) = (tmp("bc_a.npy"), tmp("bc_b.npy"));
    write_npy(&fa, DataType::U16, &[2, 3, 4], &a, false, false, 1);
    write_npy(&fb, DataType::U16, &[3, 1], &b, false, false, 1);
    let xor = ops::find("xor").unwrap();
    let out = tmp("bc_out.npy");
    // numpy: (2,3,4) with (3,1) -> (2,3,4).
    let r = run(&[
        "run",
        "xor",
        p(&fa),
        p(&fb),
        "-o",
        p(&out),
        "--device",
        "cpu",
        "--broadcast",
        "numpy",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let want = library(
        xor,
        Call {
            level: FeatureLevel::EXT,
            broadcast: Some(tensorbits::Broadcast::Numpy),
        },
        &[
            (DataType::U16, vec![2, 3, 4], a.clone()),
            (DataType::U16, vec![3, 1], b.clone()),
        ],
        DataType::U16,
    );
    assert_eq!(read_npy(&out).2, want.1);
    // pdpd with axis 1: (3,1) onto (2,3,4) from dimension 1, trailing 1 ignored.
    let r = run(&[
        "run",
        "xor",
        p(&fa),
        p(&fb),
        "-o",
        p(&out),
        "--device",
        "cpu",
        "--broadcast",
        "pdpd",
        "--axis",
        "1",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let want = library(
        xor,
        Call {
            level: FeatureLevel::EXT,
            broadcast: Some(tensorbits::Broadcast::Pdpd { axis: 1 }),
        },
        &[
            (DataType::U16, vec![2, 3, 4], a.clone()),
            (DataType::U16, vec![3, 1], b.clone()),
        ],
        DataType::U16,
    );
    assert_eq!(read_npy(&out).2, want.1);
    // none: equal shapes run, different ones are refused.
    let r = run(&[
        "run",
        "xor",
        p(&fa),
        p(&fa),
        "-o",
        p(&out),
        "--device",
        "cpu",
        "--broadcast",
        "none",
    ]);
    assert!(r.status.success());
}

#[test]
fn header_versions_big_endian_and_fortran_order() {
    let mut rng = Rng(3);
    for dt in [
        DataType::U8,
        DataType::I16,
        DataType::F32,
        DataType::U64,
        DataType::F16,
        DataType::Bool,
    ] {
        let mut a = random_bytes(&mut rng, dt, 24);
        let mut b = random_bytes(&mut rng, dt, 24);
        bool_norm(dt, &mut a);
        bool_norm(dt, &mut b);
        let want = library(
            ops::find("xor").unwrap(),
            Call::default(),
            &[
                (dt, vec![2, 3, 4], a.clone()),
                (dt, vec![2, 3, 4], b.clone()),
            ],
            dt,
        );
        for (version, fortran, big) in [
            (1, false, false),
            (2, true, false),
            (3, false, true),
            (1, true, true),
        ] {
            let (fa, fb, out) = (tmp("v_a.npy"), tmp("v_b.npy"), tmp("v_out.npy"));
            write_npy(&fa, dt, &[2, 3, 4], &a, fortran, big, version);
            write_npy(&fb, dt, &[2, 3, 4], &b, !fortran, false, 1);
            let r = run(&[
                "run",
                "bitwise_xor",
                p(&fa),
                p(&fb),
                "-o",
                p(&out),
                "--device",
                "cpu",
            ]);
            assert!(
                r.status.success(),
                "{dt} v{version} F{fortran} BE{big}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            let (d, s, data) = read_npy(&out);
            assert_eq!(
                (d.as_str(), s.as_slice()),
                (descr(dt, false).as_str(), &[2usize, 3, 4][..])
            );
            assert_eq!(
                data, want.1,
                "{dt} v{version} fortran {fortran} big-endian {big}"
            );
        }
    }
}

#[test]
fn gpu_device_gives_the_same_file() {
    let Some(_) = common::gpu::gpu() else { return };
    let mut rng = Rng(5);
    for op in ops::ALL {
        for &dt in op.all_types() {
            let mut data = random_bytes(&mut rng, dt, 10);
            bool_norm(dt, &mut data);
            let f = tmp("gpu_in.npy");
            write_npy(&f, dt, &[10], &data, false, false, 1);
            let (oc, og) = (tmp("gpu_cpu.npy"), tmp("gpu_gpu.npy"));
            let mut args: Vec<&str> = vec!["run", op.name()];
            args.extend(std::iter::repeat_n(p(&f), op.arity()));
            let rc = bin()
                .args(&args)
                .args(["-o", p(&oc), "--device", "cpu"])
                .output()
                .unwrap();
            let rg = bin()
                .args(&args)
                .args(["-o", p(&og), "--device", "gpu"])
                .output()
                .unwrap();
            assert!(
                rc.status.success() && rg.status.success(),
                "{}",
                String::from_utf8_lossy(&rg.stderr)
            );
            assert_eq!(
                std::fs::read(&oc).unwrap(),
                std::fs::read(&og).unwrap(),
                "{} {dt}",
                op.name()
            );
        }
    }
}

/// Runs a failing command: exit 2, exactly one stderr line starting `error:` that contains `words`,
/// and no output file.
fn fails(args: &[&str], out: &Path, words: &str) {
    let _ = std::fs::remove_file(out);
    let r = run(args);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: want one line, got {err:?}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(
        lines[0].contains(words),
        "{args:?}: {err:?} does not mention {words:?}"
    );
    assert!(!out.exists(), "{args:?}: an output file was left behind");
    assert!(!err.contains("panicked") && !err.contains("backtrace"));
}

#[test]
fn bad_inputs_exit_2_with_one_line() {
    let out = tmp("bad_out.npy");
    let good = tmp("bad_good.npy");
    write_npy(&good, DataType::U8, &[2, 2], &[1, 2, 3, 4], false, false, 1);
    let file = |name: &str, bytes: Vec<u8>| {
        let f = tmp(name);
        std::fs::write(&f, bytes).unwrap();
        f
    };
    let full = std::fs::read(&good).unwrap();
    let truncated = file("bad_trunc_header.npy", full[..20].to_vec());
    let magic = file(
        "bad_magic.npy",
        b"\x93NUMPX\x01\x00"
            .iter()
            .copied()
            .chain(full[8..].iter().copied())
            .collect(),
    );
    let header = file(
        "bad_header.npy",
        npy_bytes("<u4", &[2], false, 1, &[0; 8])
            .iter()
            .map(|&c| if c == b'{' { b'[' } else { c })
            .collect(),
    );
    let c8 = file("bad_c8.npy", npy_bytes("<c8", &[2], false, 1, &[0; 16]));
    let u3 = file("bad_u3.npy", npy_bytes("<U3", &[2], false, 1, &[0; 24]));
    let obj = file("bad_obj.npy", npy_bytes("|O", &[2], false, 1, &[0; 16]));
    let short = file(
        "bad_short.npy",
        npy_bytes("<u4", &[2, 3], false, 1, &[0; 20]),
    );
    let nine = file("bad_nine.npy", npy_bytes("|u1", &[1; 9], false, 1, &[0; 1]));
    let f32s = tmp("bad_f32.npy");
    write_npy(&f32s, DataType::F32, &[2], &[0; 8], false, false, 1);
    let other = tmp("bad_other.npy");
    write_npy(&other, DataType::U8, &[3], &[1, 2, 3], false, false, 1);
    let o = p(&out);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "xor", p(&truncated), p(&good), "-o", o],
            "bad_trunc_header.npy is not a valid .npy file",
        ),
        (
            vec!["run", "xor", p(&magic), p(&good), "-o", o],
            "bad_magic.npy is not a valid .npy file",
        ),
        (
            vec!["run", "xor", p(&header), p(&good), "-o", o],
            "bad_header.npy is not a valid .npy file",
        ),
        (
            vec!["run", "xor", p(&c8), p(&c8), "-o", o],
            "data type '<c8' is not supported",
        ),
        (
            vec!["run", "xor", p(&u3), p(&u3), "-o", o],
            "'<U3' is not supported",
        ),
        (
            vec!["run", "xor", p(&obj), p(&obj), "-o", o],
            "'|O' is not supported",
        ),
        (
            vec!["run", "xor", p(&short), p(&short), "-o", o],
            "the file is truncated",
        ),
        (
            vec!["run", "not", p(&nine), "-o", o],
            "9 dimensions; at most 8",
        ),
        (
            vec!["run", "xor", p(&good), "-o", o],
            "takes 2 input tensor(s) (a, b), got 1",
        ),
        (
            vec!["run", "not", p(&good), p(&good), "-o", o],
            "takes 1 input tensor(s)",
        ),
        (
            vec!["run", "nand", p(&good), p(&good), "-o", o],
            "unknown op `nand`",
        ),
        (
            vec!["run", "xor", p(&f32s), p(&f32s), "-o", o, "--level", "3_0"],
            "does not support f32 (ATensor) at FL_3_0",
        ),
        (
            vec![
                "run",
                "xor",
                p(&good),
                p(&other),
                "-o",
                o,
                "--broadcast",
                "none",
            ],
            "does not match ATensor shape [2, 2]",
        ),
        (
            vec![
                "run",
                "xor",
                p(&good),
                p(&good),
                "-o",
                "/no/such/folder/out.npy",
            ],
            "folder /no/such/folder does not exist",
        ),
        (
            vec!["run", "xor", p(&good), p(&good), "-o", o, "--level", "9_9"],
            "unknown feature level '9_9'",
        ),
        (
            vec!["run", "xor", p(&good), p(&good), "-o", o, "--device", "tpu"],
            "invalid value 'tpu'",
        ),
        (
            vec!["run", "xor", "/no/such/input.npy", p(&good), "-o", o],
            "cannot read /no/such/input.npy",
        ),
        (
            vec!["run", "BitShift", p(&good), p(&good), "-o", o],
            "needs --direction left or right",
        ),
        (
            vec!["run", "popcount", p(&good), "-o", o, "--out-dtype", "f32"],
            "expected one of u8, u32",
        ),
        (vec!["frobnicate"], "unrecognized subcommand 'frobnicate'"),
    ];
    for (args, words) in cases {
        fails(&args, &out, words);
    }
}

#[test]
fn help_ops_devices_and_bench() {
    for sub in [
        &["--help"][..],
        &["run", "--help"],
        &["ops", "--help"],
        &["devices", "--help"],
        &["bench", "--help"],
    ] {
        let r = run(sub);
        assert!(r.status.success(), "{sub:?}");
        assert!(
            String::from_utf8_lossy(&r.stdout).contains("Usage: tensorbits"),
            "{sub:?}"
        );
    }
    let r = run(&["ops"]);
    let s = String::from_utf8_lossy(&r.stdout);
    for op in ops::ALL {
        assert!(s.contains(op.name()), "{s}");
    }
    let r = run(&["ops", "DML_ELEMENT_WISE_BIT_COUNT_OPERATOR_DESC"]);
    let s = String::from_utf8_lossy(&r.stdout);
    // The table comes from the op's metadata: BIT_COUNT outputs UINT32/UINT8 at every level.
    assert!(
        s.contains("DML_FEATURE_LEVEL_4_1 and above")
            && s.contains("DML_FEATURE_LEVEL_3_0 and above"),
        "{s}"
    );
    assert!(
        s.contains("OutputTensor  Output  0 to 8                      UINT32, UINT8"),
        "{s}"
    );
    let r = run(&["devices"]);
    assert!(
        String::from_utf8_lossy(&r.stdout).starts_with("CPU: "),
        "{:?}",
        r
    );
    let r = run(&[
        "bench", "xor", "--dtype", "u32", "--shape", "1000", "--runs", "3",
    ]);
    let s = String::from_utf8_lossy(&r.stdout);
    assert!(
        r.status.success() && s.contains("GB/s") && s.contains("ratio op/copy"),
        "{s}{}",
        String::from_utf8_lossy(&r.stderr)
    );
}
