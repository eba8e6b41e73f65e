//! The command-line tool, through the built binary: every op on every type round-trips through
//! `.npy` files and agrees with the library; broadcast modes; header versions 1-3, big-endian and
//! Fortran-order inputs; and a corpus of bad inputs, each exit 2 with one `error:` line naming the
//! problem and no output file left behind.

#[path = "../../tests/common/mod.rs"]
mod common;
mod files;

use common::Rng;
use files::{bin, descr, npy_bytes, p, read_npy, run, tmp, write_npy};
use std::path::Path;
use std::process::Command;
use tensorbits::{Call, DataType, FeatureLevel, Input, TensorDesc, execute, ops};

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
    for op in ops::ALL.into_iter().filter(|o| o.reduce().is_none()) {
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
            ..Default::default()
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
            ..Default::default()
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
    for op in ops::ALL.into_iter().filter(|o| o.reduce().is_none()) {
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

/// The README's command-line block, run line by line in a directory with the files it names (`a.npy`
/// and `b.npy` as its numpy lines write them): every command succeeds but the one it shows
/// failing, which prints the error line shown under it, and `y.npy` holds what it shows.
#[test]
fn the_readme_commands_run_as_shown() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md beside the workspace");
    let section = readme
        .split("## The command-line tool")
        .nth(1)
        .expect("the README's command-line section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("its sh block");
    let dir = tmp("readme");
    std::fs::create_dir_all(&dir).unwrap();
    let u16s = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let a = [1u16, 2, 3, 4, 5, 6];
    let b = [0x100u16, 0x200, 0x300];
    write_npy(
        &dir.join("a.npy"),
        DataType::U16,
        &[2, 3],
        &u16s(&a),
        false,
        false,
        1,
    );
    write_npy(
        &dir.join("b.npy"),
        DataType::U16,
        &[3],
        &u16s(&b),
        false,
        false,
        1,
    );
    // The files the block only names: any content of a shape its command takes.
    let mut rng = Rng(41);
    for (name, dt, shape) in [
        ("x.npy", DataType::U8, [6, 8]),
        ("queries.npy", DataType::U8, [4, 32]),
        ("codes.npy", DataType::U8, [300, 32]),
        ("fps.npy", DataType::U8, [200, 256]),
        ("emb.npy", DataType::F32, [5, 64]),
    ] {
        let data = random_bytes(&mut rng, dt, shape[0] * shape[1]);
        write_npy(&dir.join(name), dt, &shape, &data, false, false, 1);
    }
    let lines: Vec<&str> = block.lines().collect();
    let mut ran = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (cmd, comment) = line.split_once("  #").unwrap_or((line, ""));
        let mut args: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(args[0], "tensorbits", "{line}");
        if args[1] == "bench" {
            // The same command on a database a hundredth the size: this build is unoptimized.
            for arg in &mut args {
                if *arg == "100000,32" {
                    *arg = "1000,32";
                }
            }
        }
        let out = bin().current_dir(&dir).args(&args[1..]).output().unwrap();
        if comment.contains("exit status 2") {
            let err = one_clean_error_line(&out, 2);
            let shown = lines[i + 1].trim_start_matches("# ");
            assert_eq!(err, shown, "the error of `{cmd}`");
        } else {
            assert!(
                out.status.success(),
                "`{cmd}`: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if ran == 0 {
            // The first command writes y.npy, and the line under it shows its contents.
            let (_, shape, data) = read_npy(&dir.join("y.npy"));
            let got: Vec<u16> = data
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            let want: Vec<u16> = (0..6).map(|j| a[j] ^ b[j % 3]).collect();
            assert_eq!((shape, &got), (vec![2, 3], &want));
            let shown = format!(
                "[[{}, {}, {}], [{}, {}, {}]]",
                got[0], got[1], got[2], got[3], got[4], got[5]
            );
            assert!(lines[i + 1].contains(&shown), "{} vs {shown}", lines[i + 1]);
        }
        ran += 1;
    }
    assert!(ran >= 8, "only {ran} commands in the README's block");
}

/// Where no Vulkan driver loads, the GPU is a one-line error and `auto` runs on the CPU: wgpu's
/// OpenGL backend (which Mesa also provides, and on which wgpu panics when its context lock is
/// held for a second) is used only when `WGPU_BACKEND` asks for it.
#[test]
fn without_vulkan_gl_is_not_taken_unasked() {
    let mut rng = Rng(17);
    let data = random_bytes(&mut rng, DataType::U8, 4096);
    let f = tmp("novk_in.npy");
    write_npy(&f, DataType::U8, &[4096], &data, false, false, 1);
    let (og, oa, oc) = (
        tmp("novk_gpu.npy"),
        tmp("novk_auto.npy"),
        tmp("novk_cpu.npy"),
    );
    let _ = std::fs::remove_file(&og);
    let run = |out: &Path, device: &str| {
        bin()
            .args(["run", "xor", p(&f), p(&f), "-o", p(out), "--device", device])
            .env("VK_DRIVER_FILES", "/nonexistent.json")
            .env("VK_ICD_FILENAMES", "/nonexistent.json")
            .env_remove("WGPU_BACKEND")
            .output()
            .unwrap()
    };
    let gpu = run(&og, "gpu");
    let line = one_clean_error_line(&gpu, 1);
    assert!(line.contains("no GPU is available"), "{line}");
    assert!(!og.exists(), "an output file after an error");
    let auto = run(&oa, "auto");
    assert!(
        auto.status.success(),
        "{}",
        String::from_utf8_lossy(&auto.stderr)
    );
    assert!(run(&oc, "cpu").status.success());
    assert_eq!(std::fs::read(&oa).unwrap(), std::fs::read(&oc).unwrap());
    // `devices` lists what `--device gpu` would look at: no adapter, and how to ask for OpenGL.
    let devices = bin()
        .arg("devices")
        .env("VK_DRIVER_FILES", "/nonexistent.json")
        .env("VK_ICD_FILENAMES", "/nonexistent.json")
        .env_remove("WGPU_BACKEND")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&devices.stdout);
    assert!(
        devices.status.success()
            && listed.contains("GPU: no adapter found")
            && !listed.contains("Gl,"),
        "{listed}"
    );
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

/// `bench --device gpu` allocates what the op uses: an element-wise op of 256 Mi u8 elements
/// needs no index buffer (it had asked for one of 8 bytes an element, 2 GiB, past lavapipe's
/// largest buffer, and failed), and knn times the same way with its indices.
#[test]
fn gpu_bench_allocates_what_the_op_uses() {
    if common::gpu::gpu().is_none() {
        return;
    }
    for args in [
        &["bench", "xor", "--dtype", "u8", "--shape", "268435456"][..],
        &[
            "bench",
            "hamming_cdist",
            "--dtype",
            "u8",
            "--shape",
            "3,32",
            "--shape-b",
            "1000,32",
            "--knn",
            "5",
        ][..],
    ] {
        let r = run(&[args, &["--device", "gpu", "--runs", "1"]].concat());
        let s = String::from_utf8_lossy(&r.stdout);
        assert!(
            r.status.success() && s.contains("on GPU: ") && s.contains("ratio op/copy"),
            "{args:?}: {s}{}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
}

/// The one-line contract of a failure, with no control byte (a hostile header must not reach the
/// terminal raw), and the exit status.
fn one_clean_error_line(r: &std::process::Output, status: i32) -> String {
    let err = String::from_utf8_lossy(&r.stderr).into_owned();
    assert_eq!(r.status.code(), Some(status), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "want one line, got {err:?}");
    assert!(lines[0].starts_with("error: "), "{err:?}");
    assert!(
        !lines[0].chars().any(char::is_control),
        "control bytes in {err:?}"
    );
    lines[0].to_owned()
}

/// No temporary file of the tool's is left in `dir`.
fn no_leftovers(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(".tensorbits-"),
            "temporary file {name} left behind"
        );
    }
}

#[test]
fn outputs_follow_links_and_write_into_fifos_and_devices() {
    let dir = tmp("paths");
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("a.npy");
    write_npy(
        &input,
        DataType::U8,
        &[2, 3],
        &[0, 1, 2, 3, 4, 5],
        false,
        false,
        1,
    );
    let expected = [255u8, 254, 253, 252, 251, 250];

    // A regular file is replaced, keeping its permissions.
    let regular = dir.join("regular.npy");
    std::fs::write(&regular, b"old contents").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&regular, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let r = run(&["run", "not", p(&input), "-o", p(&regular)]);
    assert!(r.status.success(), "{r:?}");
    let (_, shape, data) = read_npy(&regular);
    assert_eq!((shape, data), (vec![2, 3], expected.to_vec()));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&regular).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    // A file this user may not write is refused, as `cp` refuses it, and left as it was. Root
    // may write any file, so the tool runs as an unprivileged user where this test is root.
    let locked = dir.join("locked.npy");
    let _ = std::fs::remove_file(&locked);
    std::fs::write(&locked, b"read-only contents").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid() == 0
    });
    let r = if root {
        // `nobody` needs to reach the folders and the binary; the test's folders are world-readable.
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_tensorbits"))
            .args(["run", "not", p(&input), "-o", p(&locked)])
            .output()
            .expect("setpriv runs the tool as an unprivileged user")
    } else {
        run(&["run", "not", p(&input), "-o", p(&locked)])
    };
    let line = one_clean_error_line(&r, 2);
    assert!(line.contains("read-only"), "{line}");
    assert_eq!(std::fs::read(&locked).unwrap(), b"read-only contents");

    // A symbolic link stays a link, and its target receives the array.
    let target = dir.join("target.npy");
    let link = dir.join("link.npy");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("target.npy", &link).unwrap();
    let r = run(&["run", "not", p(&input), "-o", p(&link)]);
    assert!(r.status.success(), "{r:?}");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(read_npy(&target).2, expected.to_vec());

    // A FIFO stays a FIFO; a reader on the other end receives the file.
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let fifo_path = fifo.clone();
    let reader = std::thread::spawn(move || std::fs::read(fifo_path).unwrap());
    let r = run(&["run", "not", p(&input), "-o", p(&fifo)]);
    assert!(r.status.success(), "{r:?}");
    let got = reader.join().unwrap();
    {
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }
    let copy = dir.join("from_fifo.npy");
    std::fs::write(&copy, got).unwrap();
    assert_eq!(read_npy(&copy).2, expected.to_vec());

    // A character device is written into, not replaced (/dev/null is safe to write).
    let r = run(&["run", "not", p(&input), "-o", "/dev/null"]);
    assert!(r.status.success(), "{r:?}");
    {
        use std::os::unix::fs::FileTypeExt;
        let t = std::fs::metadata("/dev/null").unwrap().file_type();
        assert!(t.is_char_device(), "/dev/null is no longer a device");
    }
    // A device that refuses the bytes is a one-line error, and stays a device.
    let r = run(&["run", "not", p(&input), "-o", "/dev/full"]);
    let line = one_clean_error_line(&r, 2);
    assert!(line.contains("cannot write /dev/full"), "{line}");
    no_leftovers(&dir);
}

#[test]
fn sizes_that_cannot_be_allocated_are_one_line_errors() {
    let dir = tmp("oversize");
    std::fs::create_dir_all(&dir).unwrap();
    let row = dir.join("row.npy");
    let col = dir.join("col.npy");
    write_npy(
        &row,
        DataType::U8,
        &[1, 1 << 20],
        &vec![1; 1 << 20],
        false,
        false,
        1,
    );
    write_npy(
        &col,
        DataType::U8,
        &[1 << 20, 1],
        &vec![1; 1 << 20],
        false,
        false,
        1,
    );
    let out = dir.join("out.npy");
    std::fs::write(&out, b"keep me").unwrap();
    // 2**40 bytes of output: more than this machine (or any test machine) can allocate.
    let r = run(&[
        "run",
        "xor",
        p(&row),
        p(&col),
        "-o",
        p(&out),
        "--device",
        "cpu",
    ]);
    let line = one_clean_error_line(&r, 2);
    assert!(
        line.contains("cannot allocate 1099511627776 bytes"),
        "{line}"
    );
    let r = run(&["bench", "xor", "--dtype", "u8", "--shape", "1099511627776"]);
    let line = one_clean_error_line(&r, 2);
    assert!(
        line.contains("cannot allocate 1099511627776 bytes"),
        "{line}"
    );
    if common::gpu::gpu().is_some() {
        let r = run(&[
            "run",
            "xor",
            p(&row),
            p(&col),
            "-o",
            p(&out),
            "--device",
            "gpu",
        ]);
        let line = one_clean_error_line(&r, 2);
        assert!(line.contains("1099511627776 bytes"), "{line}");
        // Past the device's max_buffer_size but within the host's memory: 4 GiB.
        let (r2, c2) = (dir.join("r2.npy"), dir.join("c2.npy"));
        write_npy(
            &r2,
            DataType::U8,
            &[1, 1 << 16],
            &vec![1; 1 << 16],
            false,
            false,
            1,
        );
        write_npy(
            &c2,
            DataType::U8,
            &[1 << 16, 1],
            &vec![1; 1 << 16],
            false,
            false,
            1,
        );
        let r = run(&[
            "run",
            "xor",
            p(&r2),
            p(&c2),
            "-o",
            p(&out),
            "--device",
            "gpu",
        ]);
        let line = one_clean_error_line(&r, 2);
        assert!(line.contains("4294967296 bytes"), "{line}");
    }
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    no_leftovers(&dir);
}

#[test]
fn headers_numpy_refuses_are_refused() {
    let dir = tmp("headers");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out.npy");
    let file = |name: &str, header: &str, payload: &[u8]| {
        let mut h = header.to_owned();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((h.len() as u16).to_le_bytes());
        b.extend(h.as_bytes());
        b.extend(payload);
        let f = dir.join(name);
        std::fs::write(&f, b).unwrap();
        f
    };
    let cases = [
        (
            file(
                "extra.npy",
                "{'descr': '<u4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                &[0; 8],
            ),
            "the header has the key 'x'",
        ),
        (
            file(
                "list.npy",
                "{'descr': '<u4', 'fortran_order': False, 'shape': [3, 4]}",
                &[0; 48],
            ),
            "'shape' must be a tuple",
        ),
        (
            file(
                "huge.npy",
                "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 9223372036854775808)}",
                &[],
            ),
            "below 2**63",
        ),
        (
            file(
                "huge_bytes.npy",
                "{'descr': '<u4', 'fortran_order': False, 'shape': (0, 4611686018427387904)}",
                &[],
            ),
            "exceed 2**63 - 1 bytes",
        ),
        (
            file(
                "order.npy",
                "{'descr': '<u4', 'fortran_order': 0, 'shape': (2,)}",
                &[0; 8],
            ),
            "'fortran_order' must be True or False",
        ),
        (
            file(
                "escape.npy",
                "{'descr': '\u{1b}[2J\u{1b}[31m<u4', 'fortran_order': False, 'shape': (2,)}",
                &[0; 8],
            ),
            "'\\u{1b}[2J\\u{1b}[31m<u4' is not supported",
        ),
        (
            file("missing.npy", "{'descr': '<u4', 'shape': (2,)}", &[0; 8]),
            "exactly 'descr', 'fortran_order' and 'shape'",
        ),
    ];
    for (f, words) in &cases {
        std::fs::write(&out, b"keep me").unwrap();
        let r = run(&["run", "not", p(f), "-o", p(&out)]);
        let line = one_clean_error_line(&r, 2);
        assert!(line.contains(words), "{}: {line}", f.display());
        assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    }
    // Nested brackets in a header are parsed in linear time: deeper than Python's parser takes
    // (200) is refused at once, and 200 levels get numpy's own refusal of what they hold.
    for (name, open, close, depth, words) in [
        ("deep_list.npy", "[", "]", 4900, "nested brackets"),
        ("deep_dict.npy", "{1: ", "}", 1900, "nested brackets"),
        ("deep_tuple.npy", "(", ")", 201, "nested brackets"),
        ("deep_ok.npy", "[", "]", 199, "'shape' must be a tuple"),
    ] {
        let inner = if open == "{1: " { "1" } else { "" };
        let header = format!(
            "{{'descr': '<u4', 'fortran_order': False, 'shape': {}{inner}{}}}",
            open.repeat(depth),
            close.repeat(depth)
        );
        let mut h = header.clone();
        while !(12 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x02\x00".to_vec();
        b.extend((h.len() as u32).to_le_bytes());
        b.extend(h.as_bytes());
        let f = dir.join(name);
        std::fs::write(&f, b).unwrap();
        let started = std::time::Instant::now();
        let r = run(&["run", "not", p(&f), "-o", p(&out)]);
        let line = one_clean_error_line(&r, 2);
        assert!(line.contains(words), "{name}: {line}");
        // Not a timing figure: a hang (the old parser took minutes) fails here, not in CI's limit.
        assert!(
            started.elapsed().as_secs() < 30,
            "{name} took {:?}",
            started.elapsed()
        );
    }
    // An empty array numpy can hold is accepted, and its output is one numpy can load.
    let ok = file(
        "empty_ok.npy",
        "{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4611686018427387904)}",
        &[],
    );
    let r = run(&["run", "not", p(&ok), "-o", p(&out)]);
    assert!(r.status.success(), "{r:?}");
    assert_eq!(read_npy(&out).1, vec![0, 1 << 62]);
    // Reading a FIFO with no writer would wait forever: it is refused, as is a folder.
    let fifo = dir.join("in_fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let r = run(&["run", "not", p(&fifo), "-o", p(&out)]);
    assert!(one_clean_error_line(&r, 2).contains("it is a FIFO"));
    let r = run(&["run", "not", p(&dir), "-o", p(&out)]);
    assert!(one_clean_error_line(&r, 2).contains("it is a folder"));
    no_leftovers(&dir);
}

#[test]
fn usage_mistakes_are_one_line_errors() {
    let dir = tmp("usage");
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a.npy");
    let counts = dir.join("counts.npy");
    write_npy(
        &a,
        DataType::U16,
        &[4],
        &[1, 0, 2, 0, 3, 0, 4, 0],
        false,
        false,
        1,
    );
    write_npy(&counts, DataType::I64, &[4], &[1; 32], false, false, 1);
    let out = dir.join("out.npy");
    let o = p(&out);
    // No subcommand: one line naming the subcommands, not a screen of help on stderr.
    let line = one_clean_error_line(&bin().output().unwrap(), 2);
    assert!(
        line.contains("run, knn, range, merge, binarize, ops, devices, bench"),
        "{line}"
    );
    for level in ["", "FL_", "DML_FEATURE_LEVEL_", "fl_", " "] {
        let r = run(&["run", "not", p(&a), "-o", o, "--level", level]);
        let line = one_clean_error_line(&r, 2);
        assert!(line.contains("unknown feature level"), "{level:?}: {line}");
    }
    let r = run(&[
        "run",
        "not",
        p(&a),
        "-o",
        o,
        "--broadcast",
        "pdpd",
        "--axis",
        "0",
    ]);
    let line = one_clean_error_line(&r, 2);
    assert!(
        line.contains("does not accept broadcast mode `pdpd`"),
        "{line}"
    );
    let r = run(&["run", "shl", p(&a), p(&counts), "-o", o]);
    let line = one_clean_error_line(&r, 2);
    assert!(line.contains("b.astype(a.dtype)"), "{line}");
    assert!(!out.exists());
}

#[test]
fn an_error_on_a_full_stderr_still_exits_2() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let r = bin()
        .args(["run", "nand", "x.npy", "-o", "y.npy"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let r = bin().stderr(full).output().unwrap();
    assert_eq!(r.status.code(), Some(2), "{r:?}");
}

#[test]
fn a_signal_during_the_write_leaves_no_temporary_file() {
    let dir = tmp("signal");
    std::fs::create_dir_all(&dir).unwrap();
    // A sparse input: 128 MiB of zeros that cost no disk; writing its output takes long enough to
    // be caught in the middle.
    let input = dir.join("big.npy");
    let n = 128usize << 20;
    let head = npy_bytes("|u1", &[n], false, 1, &[]);
    let f = std::fs::File::create(&input).unwrap();
    std::io::Write::write_all(&mut &f, &head).unwrap();
    f.set_len((head.len() + n) as u64).unwrap();
    drop(f);
    let out = dir.join("out.npy");
    std::fs::write(&out, b"keep me").unwrap();
    let mut child = bin()
        .args(["run", "not", p(&input), "-o", p(&out), "--device", "cpu"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let tmp_of = || {
        std::fs::read_dir(&dir).unwrap().find_map(|e| {
            let e = e.unwrap();
            e.file_name()
                .to_string_lossy()
                .starts_with(".tensorbits-")
                .then(|| e.path())
        })
    };
    let start = std::time::Instant::now();
    let mut seen = false;
    while start.elapsed() < std::time::Duration::from_secs(60) {
        if tmp_of().is_some() {
            seen = true;
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    assert!(seen, "the temporary output file never appeared");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    {
        use std::os::unix::process::ExitStatusExt;
        // The write may have finished just before the signal; otherwise the signal ended it.
        assert!(
            status.success() || status.signal() == Some(15),
            "{status:?}"
        );
    }
    if !status.success() {
        assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    }
    no_leftovers(&dir);
}

#[test]
fn reductions_and_knn_end_to_end() {
    let dir = tmp("reduce");
    std::fs::create_dir_all(&dir).unwrap();
    let f = |name: &str| dir.join(name);
    write_npy(
        &f("a.npy"),
        DataType::U8,
        &[2, 2],
        &[0b1011, 0xff, 0, 1],
        false,
        false,
        1,
    );
    write_npy(
        &f("b.npy"),
        DataType::U8,
        &[2, 2],
        &[0b0001, 0x0f, 0, 0],
        false,
        false,
        2,
    );
    write_npy(
        &f("x.npy"),
        DataType::U8,
        &[2, 3],
        &[1, 2, 4, 7, 7, 7],
        false,
        false,
        1,
    );
    // Fortran order: the same logical [[1, 2, 4], [7, 7, 7]].
    write_npy(
        &f("xf.npy"),
        DataType::U8,
        &[2, 3],
        &[1, 2, 4, 7, 7, 7],
        true,
        false,
        3,
    );
    write_npy(
        &f("q.npy"),
        DataType::U8,
        &[2, 1],
        &[0, 255],
        false,
        false,
        1,
    );
    write_npy(
        &f("base.npy"),
        DataType::U8,
        &[3, 1],
        &[15, 0, 255],
        false,
        false,
        1,
    );
    let o = f("o.npy");
    let ok = |args: &[&str]| {
        let r = run(args);
        assert!(
            r.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    };
    ok(&[
        "run",
        "hamming",
        p(&f("a.npy")),
        p(&f("b.npy")),
        "-o",
        p(&o),
    ]);
    let (d, shape, data) = read_npy(&o);
    assert_eq!(
        (d.as_str(), shape, data),
        ("<u4", vec![2], vec![6, 0, 0, 0, 1, 0, 0, 0])
    );
    for x in ["x.npy", "xf.npy"] {
        ok(&["run", "xor_reduce", p(&f(x)), "-o", p(&o), "--axes", "1"]);
        assert_eq!(read_npy(&o).2, vec![7, 7]);
        ok(&[
            "run",
            "bitwise_xor.reduce",
            p(&f(x)),
            "-o",
            p(&o),
            "--axes",
            "-2",
            "--keepdims",
        ]);
        let (_, shape, data) = read_npy(&o);
        assert_eq!((shape, data), (vec![1, 3], vec![6, 5, 3]));
    }
    ok(&[
        "run",
        "popcount_sum",
        p(&f("x.npy")),
        "-o",
        p(&o),
        "--out-dtype",
        "u16",
    ]);
    let (d, shape, data) = read_npy(&o);
    assert_eq!((d.as_str(), shape, data), ("<u2", vec![], vec![12, 0]));
    ok(&[
        "run",
        "cdist",
        p(&f("q.npy")),
        p(&f("base.npy")),
        "-o",
        p(&o),
    ]);
    let four = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    assert_eq!(read_npy(&o).2, four(&[4, 0, 8, 4, 8, 0]));
    let (idx, dist) = (f("i.npy"), f("d.npy"));
    let devices: &[&str] = if common::gpu::gpu().is_some() {
        &["cpu", "gpu"]
    } else {
        &["cpu"]
    };
    for dev in devices {
        ok(&[
            "knn",
            p(&f("q.npy")),
            p(&f("base.npy")),
            "-k",
            "2",
            "-o",
            p(&idx),
            "--distances",
            p(&dist),
            "--device",
            dev,
        ]);
        let (di, si, bi) = read_npy(&idx);
        let idxs: Vec<i64> = bi
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            (di.as_str(), si, idxs),
            ("<i8", vec![2, 2], vec![1, 0, 2, 0]),
            "{dev}"
        );
        assert_eq!(read_npy(&dist).2, four(&[0, 4, 0, 4]), "{dev}");
    }
    // Mistakes are one line each.
    let (x, q, base, a, b) = (
        f("x.npy"),
        f("q.npy"),
        f("base.npy"),
        f("a.npy"),
        f("b.npy"),
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "xor_reduce", p(&x), "-o", p(&o), "--axes", "2"],
            "axis 2 is out of range",
        ),
        (
            vec!["run", "xor_reduce", p(&x), "-o", p(&o), "--axes", "0,-2"],
            "both name dimension 0",
        ),
        (
            vec!["run", "xor", p(&x), p(&x), "-o", p(&o), "--axes", "0"],
            "is element-wise",
        ),
        (
            vec!["knn", p(&q), p(&base), "-k", "4", "-o", p(&o)],
            "k = 4 is more than the 3 rows",
        ),
        (
            vec!["knn", p(&q), p(&x), "-k", "1", "-o", p(&o)],
            "K: 3 vs 1",
        ),
        (
            vec!["knn", p(&a), p(&b), "-k", "1", "-o", p(&o), "--op", "xor"],
            "is not a pairwise sum",
        ),
        (
            vec![
                "run",
                "popcount_sum",
                p(&x),
                "-o",
                p(&o),
                "--out-dtype",
                "f32",
            ],
            "expected one of u32, u64, u16, u8",
        ),
    ];
    for (args, words) in cases {
        fails(&args, &o, words);
    }
}

/// At sizes past the GPU's old limits, `--device gpu` writes the same files as `--device cpu`:
/// knn over a million 8-byte codes for k = 1, 10, 17 and 100, over all ties with k = N/2 and over
/// more than 128 MiB of codes, the four reductions over 70,000 rows along axis 0, a bit-count sum
/// over 5M elements, and a Hamming distance over a row of 4M words.
#[test]
fn gpu_files_match_the_cpu_at_scale() {
    if common::gpu::gpu().is_none() {
        return;
    }
    let mut rng = Rng(77);
    let f = |name: &str| tmp(&format!("scale_{name}"));
    let (n, bytes) = (1_000_000, 8);
    write_npy(
        &f("db.npy"),
        DataType::U8,
        &[n, bytes],
        &random_bytes(&mut rng, DataType::U8, n * bytes),
        false,
        false,
        1,
    );
    write_npy(
        &f("q.npy"),
        DataType::U8,
        &[3, bytes],
        &random_bytes(&mut rng, DataType::U8, 3 * bytes),
        false,
        false,
        1,
    );
    write_npy(
        &f("rows.npy"),
        DataType::U8,
        &[70_000, 300],
        &random_bytes(&mut rng, DataType::U8, 70_000 * 300),
        false,
        false,
        1,
    );
    write_npy(
        &f("long.npy"),
        DataType::U8,
        &[5_000_000],
        &random_bytes(&mut rng, DataType::U8, 5_000_000),
        false,
        false,
        1,
    );
    let both = |args: &[&str], outs: &[&str]| {
        let mut files = Vec::new();
        for dev in ["cpu", "gpu"] {
            let named: Vec<std::path::PathBuf> =
                outs.iter().map(|o| f(&format!("{dev}_{o}"))).collect();
            let mut a: Vec<&str> = args.to_vec();
            a.extend(["-o", p(&named[0])]);
            if let Some(d) = named.get(1) {
                a.extend(["--distances", p(d)]);
            }
            a.extend(["--device", dev]);
            let r = run(&a);
            assert!(
                r.status.success(),
                "{dev}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            files.push(
                named
                    .iter()
                    .map(|x| std::fs::read(x).unwrap())
                    .collect::<Vec<_>>(),
            );
        }
        assert!(files[0] == files[1], "{args:?}: the GPU's files differ");
    };
    for k in ["1", "10", "17", "100"] {
        let (q, db) = (f("q.npy"), f("db.npy"));
        both(&["knn", p(&q), p(&db), "-k", k], &["i.npy", "d.npy"]);
    }
    // All ties: every code equal, half the database asked for.
    write_npy(
        &f("ties.npy"),
        DataType::U8,
        &[20_000, bytes],
        &vec![0x3C; 20_000 * bytes],
        false,
        false,
        1,
    );
    let (q, ties) = (f("q.npy"), f("ties.npy"));
    both(
        &["knn", p(&q), p(&ties), "-k", "10000"],
        &["i.npy", "d.npy"],
    );
    // More than 128 MiB of 32-byte codes: split over several bindings.
    let big = (130 << 20) / 32;
    write_npy(
        &f("big.npy"),
        DataType::U8,
        &[big, 32],
        &random_bytes(&mut rng, DataType::U8, big * 32),
        false,
        false,
        1,
    );
    write_npy(
        &f("q32.npy"),
        DataType::U8,
        &[2, 32],
        &random_bytes(&mut rng, DataType::U8, 64),
        false,
        false,
        1,
    );
    let (q32, bigf) = (f("q32.npy"), f("big.npy"));
    both(&["knn", p(&q32), p(&bigf), "-k", "5"], &["i.npy", "d.npy"]);
    std::fs::remove_file(&bigf).ok();
    let rows = f("rows.npy");
    for op in ["xor_reduce", "and_reduce", "or_reduce"] {
        both(&["run", op, p(&rows), "--axes", "0"], &["x.npy"]);
    }
    both(
        &[
            "run",
            "popcount_sum",
            p(&rows),
            "--axes",
            "0",
            "--out-dtype",
            "u32",
        ],
        &["x.npy"],
    );
    // A Hamming distance over one row of 4M words.
    for name in ["ha.npy", "hb.npy"] {
        write_npy(
            &f(name),
            DataType::U32,
            &[1, 4 << 20],
            &random_bytes(&mut rng, DataType::U32, 4 << 20),
            false,
            false,
            1,
        );
    }
    let (ha, hb) = (f("ha.npy"), f("hb.npy"));
    both(&["run", "hamming", p(&ha), p(&hb)], &["h.npy"]);
    let long = f("long.npy");
    both(
        &["run", "popcount_sum", p(&long), "--out-dtype", "u32"],
        &["s.npy"],
    );
}

/// Lists and values that start with a minus sign are values, not flags (`--axes -1,0`, the help's
/// own example, `--axes -1`, `--axis -1`); and knn refuses one path for its two outputs, however it
/// is spelled, instead of losing the indices.
#[test]
fn negative_lists_and_one_path_for_two_outputs() {
    let f = |name: &str| tmp(&format!("neg_{name}"));
    let x = f("x.npy");
    write_npy(
        &x,
        DataType::U8,
        &[2, 3],
        &[1, 2, 4, 7, 7, 7],
        false,
        false,
        1,
    );
    let (o1, o2) = (f("o1.npy"), f("o2.npy"));
    for (spelled, same) in [("-1,0", "0,1"), ("-1", "1"), ("-2", "0")] {
        let r = run(&["run", "xor_reduce", p(&x), "-o", p(&o1), "--axes", spelled]);
        assert!(
            r.status.success(),
            "{spelled}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let r = run(&["run", "xor_reduce", p(&x), "-o", p(&o2), "--axes", same]);
        assert!(r.status.success());
        assert_eq!(
            read_npy(&o1),
            read_npy(&o2),
            "--axes {spelled} against {same}"
        );
    }
    assert_eq!(read_npy(&o1).2, [6, 5, 3]);
    let y = f("y.npy");
    write_npy(&y, DataType::U8, &[3], &[1, 2, 4], false, false, 1);
    let r = run(&[
        "run",
        "xor",
        p(&x),
        p(&y),
        "-o",
        p(&o1),
        "--broadcast",
        "pdpd",
        "--axis",
        "-1",
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(read_npy(&o1).2, [0, 0, 0, 6, 5, 3]);
    // One file for the indices and the distances, spelled the same or not.
    let out = f("both.npy");
    let other = out
        .parent()
        .unwrap()
        .join(".")
        .join(out.file_name().unwrap());
    for distances in [&out, &other] {
        let args = ["knn", p(&x), p(&x), "-k", "1", "-o", p(&out), "--distances"];
        fails(&[&args[..], &[p(distances)]].concat(), &out, "both name");
    }
}

/// `binary_dot` with valid bits in both bit orders, knn by `--op` in both orders (`--largest`,
/// `--smallest`), agreeing with the library's calls; bits past a row and a bad bit order are one
/// line each, exit 2.
#[test]
fn binary_dot_valid_bits_and_largest_first_knn() {
    let dir = tmp("binary");
    std::fs::create_dir_all(&dir).unwrap();
    let f = |name: &str| dir.join(name);
    let mut rng = Rng(31);
    let (m, n, k) = (5, 40, 3);
    let a = random_bytes(&mut rng, DataType::U8, m * k);
    let b = random_bytes(&mut rng, DataType::U8, n * k);
    write_npy(&f("a.npy"), DataType::U8, &[m, k], &a, false, false, 1);
    write_npy(&f("b.npy"), DataType::U8, &[n, k], &b, false, false, 1);
    let ok = |args: &[&str]| {
        let r = run(args);
        assert!(
            r.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    };
    let dot = <ops::BinaryDot as tensorbits::Op>::INFO;
    let ham = <ops::HammingCdist as tensorbits::Op>::INFO;
    let ins = [
        (DataType::U8, vec![m, k], a.clone()),
        (DataType::U8, vec![n, k], b.clone()),
    ];
    let o = f("o.npy");
    for (order, name) in [
        (tensorbits::BitOrder::Big, "big"),
        (tensorbits::BitOrder::Little, "little"),
    ] {
        let call = Call::default().bits(21).bitorder(order);
        ok(&[
            "run",
            "binary_dot",
            p(&f("a.npy")),
            p(&f("b.npy")),
            "-o",
            p(&o),
            "--bits",
            "21",
            "--bitorder",
            name,
        ]);
        let (d, shape, data) = read_npy(&o);
        assert_eq!((d.as_str(), shape), ("<i4", vec![m, n]));
        assert_eq!(data, library(dot, call, &ins, DataType::I32).1, "{name}");
        // knn: the op's order, and each override, against the library's knn.
        for (op, info, flag) in [
            ("binary_dot", dot, None),
            ("binary_dot", dot, Some("--smallest")),
            ("hamming_cdist", ham, Some("--largest")),
        ] {
            let (idx, dist, fa, fb) = (f("i.npy"), f("d.npy"), f("a.npy"), f("b.npy"));
            let mut args = vec![
                "knn",
                p(&fa),
                p(&fb),
                "-k",
                "7",
                "--op",
                op,
                "-o",
                p(&idx),
                "--distances",
                p(&dist),
                "--bits",
                "21",
                "--bitorder",
                name,
            ];
            args.extend(flag);
            ok(&args);
            let mut c = call;
            if let Some(flag) = flag {
                c = c.largest(flag == "--largest");
            }
            let out_dt = info.default_output(DataType::U8);
            let (ad, bd) = (
                TensorDesc::new(DataType::U8, &[m, k]).unwrap(),
                TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
            );
            let dd = TensorDesc::new(out_dt, &[m, 7]).unwrap();
            let id = TensorDesc::new(DataType::I64, &[m, 7]).unwrap();
            let (mut wd, mut wi) = (vec![0u8; dd.total_bytes()], vec![0u8; id.total_bytes()]);
            tensorbits::knn(
                info,
                &c,
                &[Input::Bytes(&ad, &a), Input::Bytes(&bd, &b)],
                7,
                (&dd, &mut wd),
                (&id, &mut wi),
            )
            .unwrap();
            assert_eq!(read_npy(&idx).2, wi, "{op} {flag:?} {name}");
            assert_eq!(read_npy(&dist).2, wd, "{op} {flag:?} {name}");
        }
    }
    let r = run(&[
        "run",
        "binary_dot",
        p(&f("a.npy")),
        p(&f("b.npy")),
        "-o",
        p(&o),
        "--bits",
        "25",
    ]);
    let line = one_clean_error_line(&r, 2);
    assert!(line.contains("more than the 24 bits of a row"), "{line}");
    let r = run(&[
        "run",
        "binary_dot",
        p(&f("a.npy")),
        p(&f("b.npy")),
        "-o",
        p(&o),
        "--bitorder",
        "middle",
    ]);
    one_clean_error_line(&r, 2);
    let r = run(&[
        "knn",
        p(&f("a.npy")),
        p(&f("b.npy")),
        "-k",
        "1",
        "-o",
        p(&o),
        "--largest",
        "--smallest",
    ]);
    one_clean_error_line(&r, 2);
}

/// `binarize`: a scalar threshold (negative, as numpy casts a Python float to float32), one per
/// dimension from a file, both bit orders, the GPU, and the mistakes.
#[test]
fn binarize_files_as_packbits_of_a_comparison() {
    let dir = tmp("binarize");
    std::fs::create_dir_all(&dir).unwrap();
    let f = |name: &str| dir.join(name);
    let (rows, d) = (7, 21);
    let mut rng = Rng(77);
    let x: Vec<f32> = (0..rows * d)
        .map(|_| (rng.next() % 17) as f32 / 4.0 - 2.0)
        .collect();
    let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&f("x.npy"), DataType::F32, &[rows, d], &xb, false, false, 1);
    let t: Vec<f64> = (0..d).map(|i| (i % 5) as f64 * 0.5 - 1.0).collect();
    let tb: Vec<u8> = t.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_npy(&f("t.npy"), DataType::F64, &[d], &tb, false, false, 1);
    let pack = |bit: &dyn Fn(usize) -> bool, big: bool| -> Vec<u8> {
        let nb = d.div_ceil(8);
        let mut out = vec![0u8; rows * nb];
        for r in 0..rows {
            for i in 0..d {
                if bit(r * d + i) {
                    out[r * nb + i / 8] |= if big { 0x80 >> (i % 8) } else { 1 << (i % 8) };
                }
            }
        }
        out
    };
    let o = f("codes.npy");
    let mut devices = vec!["cpu"];
    if tensorbits::GpuExecutor::new_blocking().is_ok() {
        devices.push("gpu");
    }
    for device in devices {
        for (order, big) in [("big", true), ("little", false)] {
            let r = run(&[
                "binarize",
                p(&f("x.npy")),
                "-o",
                p(&o),
                "--threshold",
                "-0.5",
                "--bitorder",
                order,
                "--device",
                device,
            ]);
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            let (descr, shape, data) = read_npy(&o);
            assert_eq!((descr.as_str(), shape), ("|u1", vec![rows, 3]));
            assert_eq!(data, pack(&|i| x[i] > -0.5, big), "{device} {order}");
            let r = run(&[
                "binarize",
                p(&f("x.npy")),
                "-o",
                p(&o),
                "--thresholds",
                p(&f("t.npy")),
                "--bitorder",
                order,
                "--device",
                device,
            ]);
            assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
            let (_, _, data) = read_npy(&o);
            assert_eq!(
                data,
                pack(&|i| f64::from(x[i]) > t[i % d], big),
                "{device} {order}"
            );
        }
    }
    let r = run(&["binarize", p(&f("x.npy")), "-o", p(&o)]);
    assert!(r.status.success());
    assert_eq!(read_npy(&o).2, pack(&|i| x[i] > 0.0, true));
    fails(
        &[
            "binarize",
            p(&f("x.npy")),
            "-o",
            p(&f("bad.npy")),
            "--threshold",
            "half",
        ],
        &f("bad.npy"),
        "is not a number",
    );
    write_npy(
        &f("t3.npy"),
        DataType::F64,
        &[3],
        &tb[..24],
        false,
        false,
        1,
    );
    fails(
        &[
            "binarize",
            p(&f("x.npy")),
            "-o",
            p(&f("bad.npy")),
            "--thresholds",
            p(&f("t3.npy")),
        ],
        &f("bad.npy"),
        "3 thresholds for a last axis of 21 elements",
    );
    fails(
        &[
            "binarize",
            p(&f("x.npy")),
            "-o",
            p(&f("bad.npy")),
            "--threshold",
            "0",
            "--thresholds",
            p(&f("t.npy")),
        ],
        &f("bad.npy"),
        "cannot be used with",
    );
}

/// Every instruction set this CPU runs (`TENSORBITS_CPU` caps it; `devices` names it) writes the
/// same files, at sizes past the kernels' limits: knn over more than 65,536 codes of the short,
/// middle and long widths with small and large k, all-pairs distances, a parallel element-wise
/// call and reductions. A value that is no level, or one above this CPU's, is one line on stderr
/// and the CPU's own level.
#[test]
fn every_instruction_set_writes_the_same_files() {
    let level = |var: Option<&str>| {
        let mut c = bin();
        c.arg("devices");
        if let Some(v) = var {
            c.env("TENSORBITS_CPU", v);
        }
        let r = c.output().unwrap();
        let out = String::from_utf8_lossy(&r.stdout).into_owned();
        let line = out.lines().next().unwrap_or_default().to_owned();
        let name = line
            .split("kernels: ")
            .nth(1)
            .and_then(|s| s.split([' ', ',', ')']).next())
            .unwrap_or_else(|| panic!("no level in {line:?}"))
            .to_owned();
        (name, String::from_utf8_lossy(&r.stderr).into_owned())
    };
    const LEVELS: [&str; 4] = ["baseline", "avx2", "avx512bw", "avx512"];
    let (best, quiet) = level(None);
    assert!(quiet.is_empty(), "{quiet}");
    let top = LEVELS.iter().position(|l| *l == best);
    // Other architectures have one portable level.
    let Some(top) = top else {
        assert_eq!(best, "portable");
        return;
    };
    let (same, warning) = level(Some("sse9"));
    assert_eq!(same, best);
    assert_eq!(
        warning.trim_end(),
        format!(
            "tensorbits: TENSORBITS_CPU=\"sse9\" is not one of baseline, avx2, avx512bw, avx512; \
             the CPU kernels use {best}, the most this CPU runs"
        )
    );
    for asked in &LEVELS[..=top] {
        assert_eq!(level(Some(asked)).0, *asked);
    }

    let mut rng = Rng(1905);
    let f = |name: &str| tmp(&format!("isa_{name}"));
    const WIDTHS: [usize; 5] = [4, 8, 16, 48, 256];
    for bytes in WIDTHS {
        // Twenty queries against 3,000 codes: rows of `a` in one share a thread, which at the
        // AVX2 levels pack their own tiles of `b`. Forty against 70,000: many rows, which at
        // those levels split `b` when it is too large to pack whole; against 3,000, all-pairs
        // distances in one share a thread.
        let files = [
            ("db", 70_000),
            ("q", 10),
            ("q1", 1),
            ("small", 3000),
            ("q20", 20),
            ("q40", 40),
        ];
        for (name, rows) in files {
            let path = f(&format!("{name}{bytes}.npy"));
            let data = random_bytes(&mut rng, DataType::U8, rows * bytes);
            write_npy(&path, DataType::U8, &[rows, bytes], &data, false, false, 1);
        }
    }
    let [long, long2] = ["long.npy", "long2.npy"].map(|name| {
        let path = f(name);
        let data = random_bytes(&mut rng, DataType::U32, 600_000);
        write_npy(&path, DataType::U32, &[600_000], &data, false, false, 1);
        path
    });
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let mut calls: Vec<Vec<String>> = Vec::new();
    let knn = |q: &str, db: &str, k: &str| {
        ["knn", q, db, "-k", k, "-o", "IDX", "--distances", "DIST"]
            .map(str::to_owned)
            .to_vec()
    };
    for bytes in WIDTHS {
        let db = s(&f(&format!("db{bytes}.npy")));
        for q in ["q", "q1"] {
            let q = s(&f(&format!("{q}{bytes}.npy")));
            for k in ["1", "10", "1000"] {
                calls.push(knn(&q, &db, k));
            }
        }
        let (q20, small) = (
            s(&f(&format!("q20{bytes}.npy"))),
            s(&f(&format!("small{bytes}.npy"))),
        );
        let q40 = s(&f(&format!("q40{bytes}.npy")));
        for k in ["1", "10"] {
            calls.push(knn(&q20, &small, k));
            calls.push(knn(&q40, &db, k));
        }
        // An output of 480,000 bytes: the rows of `a` one share a thread.
        calls.push(
            ["run", "cdist", &q40, &small, "-o", "OUT"]
                .map(str::to_owned)
                .to_vec(),
        );
        let q = s(&f(&format!("q{bytes}.npy")));
        calls.push(
            ["run", "cdist", &q, &db, "-o", "OUT"]
                .map(str::to_owned)
                .to_vec(),
        );
        calls.push(
            ["run", "popcount_sum", &db, "-o", "OUT", "--axes", "1"]
                .map(str::to_owned)
                .to_vec(),
        );
        // Range search at a radius near a code's expected distance: a few hits a row.
        let radius = (bytes * 4 - bytes / 2).to_string();
        for (q, b) in [(&q40, &db), (&q20, &small)] {
            calls.push(
                [
                    "range",
                    q.as_str(),
                    b.as_str(),
                    "-t",
                    &radius,
                    "-o",
                    "PREFIX",
                ]
                .map(str::to_owned)
                .to_vec(),
            );
        }
    }
    for op in ["xor", "popcount", "xor_reduce"] {
        let mut c = vec!["run".to_owned(), op.to_owned(), s(&long)];
        if op == "xor" {
            c.push(s(&long2));
        }
        c.extend(["-o", "OUT"].map(str::to_owned));
        calls.push(c);
    }
    let outputs = |var: Option<&str>| -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let (o, idx, dist) = (
                f(&format!("o{i}.npy")),
                f(&format!("i{i}.npy")),
                f(&format!("d{i}.npy")),
            );
            let args: Vec<String> = call
                .iter()
                .map(|a| match a.as_str() {
                    "OUT" => s(&o),
                    "PREFIX" => s(&f(&format!("r{i}"))),
                    "IDX" => s(&idx),
                    "DIST" => s(&dist),
                    _ => a.clone(),
                })
                .collect();
            let mut c = bin();
            c.args(&args);
            if let Some(v) = var {
                c.env("TENSORBITS_CPU", v);
            }
            let r = c.output().unwrap();
            assert!(
                r.status.success() && r.stderr.is_empty(),
                "{var:?} {args:?}: {}",
                String::from_utf8_lossy(&r.stderr)
            );
            let hits = ["lims", "values", "indices"].map(|p| f(&format!("r{i}_{p}.npy")));
            for path in [&o, &idx, &dist].into_iter().chain(&hits) {
                if let Ok(b) = std::fs::read(path) {
                    all.push(b);
                    std::fs::remove_file(path).unwrap();
                }
            }
        }
        all
    };
    let reference = outputs(None);
    let count = |name: &str| calls.iter().filter(|c| c[0] == name).count();
    assert_eq!(
        reference.len(),
        calls.len() + count("knn") + 2 * count("range")
    );
    for asked in &LEVELS[..top] {
        let got = outputs(Some(asked));
        assert_eq!(got.len(), reference.len());
        for (i, (a, b)) in reference.iter().zip(&got).enumerate() {
            assert!(a == b, "file {i} differs at {asked}");
        }
    }
}

/// A new memory control group capped at `limit` bytes (swap included), made where the machine lets
/// the test (root, a writable cgroup v1 or v2 hierarchy with the memory controller): its directory,
/// or why none could be made.
fn memory_group(limit: u64) -> Result<std::path::PathBuf, String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
    let mut why = Vec::new();
    for line in info.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let (fields, kind): (Vec<&str>, Vec<&str>) = (
            left.split_whitespace().collect(),
            right.split_whitespace().collect(),
        );
        let (Some(point), Some(&fs), Some(opts)) = (fields.get(4), kind.first(), kind.last())
        else {
            continue;
        };
        let point = Path::new(point);
        let v1 = fs == "cgroup" && opts.split(',').any(|o| o == "memory");
        let v2 = fs == "cgroup2"
            && std::fs::read_to_string(point.join("cgroup.subtree_control"))
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"));
        if !v1 && !v2 {
            continue;
        }
        let group = point.join(format!("tensorbits-cli-test-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&group) {
            why.push(format!("{}: {e}", point.display()));
            continue;
        }
        let limits: &[(&str, String)] = if v1 {
            &[
                ("memory.limit_in_bytes", limit.to_string()),
                ("memory.memsw.limit_in_bytes", limit.to_string()),
            ]
        } else {
            &[
                ("memory.max", limit.to_string()),
                ("memory.swap.max", "0".to_owned()),
            ]
        };
        let set = limits
            .iter()
            .enumerate()
            .try_for_each(|(i, (file, value))| {
                let path = group.join(file);
                // The swap files exist only where swap is accounted.
                if i > 0 && !path.exists() {
                    return Ok(());
                }
                std::fs::write(path, value)
            });
        match set {
            Ok(()) => return Ok(group),
            Err(e) => {
                let _ = std::fs::remove_dir(&group);
                why.push(format!("{}: {e}", group.display()));
            }
        }
    }
    if why.is_empty() {
        why.push("no cgroup hierarchy with the memory controller is mounted".to_owned());
    }
    Err(why.join("; "))
}

/// In a container capped at 2 GiB, outputs past the cap are one `error:` line and exit 2, not the
/// out-of-memory killer's signal, and work within the cap still runs.
#[test]
fn outputs_past_a_containers_memory_are_one_line_errors() {
    let group = match memory_group(2 << 30) {
        Ok(g) => g,
        Err(why) => {
            eprintln!("skipped: no 2 GiB memory group could be made here ({why})");
            return;
        }
    };
    let dir = tmp("cgroup");
    std::fs::create_dir_all(&dir).unwrap();
    let (row, col, codes) = (
        dir.join("row.npy"),
        dir.join("col.npy"),
        dir.join("codes.npy"),
    );
    write_npy(
        &row,
        DataType::U16,
        &[1, 1 << 15],
        &vec![1; 1 << 16],
        false,
        false,
        1,
    );
    write_npy(
        &col,
        DataType::U16,
        &[1 << 16, 1],
        &vec![1; 1 << 17],
        false,
        false,
        1,
    );
    write_npy(
        &codes,
        DataType::U8,
        &[1 << 14, 8],
        &vec![1; 1 << 17],
        false,
        false,
        1,
    );
    let (queries, rows) = (dir.join("queries.npy"), dir.join("rows.npy"));
    write_npy(
        &queries,
        DataType::U8,
        &[15000, 8],
        &vec![1; 120_000],
        false,
        false,
        1,
    );
    write_npy(
        &rows,
        DataType::U8,
        &[1 << 16, 8],
        &vec![1; 1 << 19],
        false,
        false,
        1,
    );
    let out = dir.join("out.npy");
    // Runs the tool inside the group: the shell moves itself there, then becomes the tool.
    let in_group = |args: &[&str]| {
        Command::new("sh")
            .arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&group)
            .arg(env!("CARGO_BIN_EXE_tensorbits"))
            .args(args)
            .output()
            .expect("sh runs the tool")
    };
    let cases: [&[&str]; 3] = [
        // 4 GiB of output from 192 KiB of input, and 4 GiB of distances.
        &[
            "run",
            "xor",
            p(&row),
            p(&col),
            "-o",
            p(&out),
            "--device",
            "cpu",
        ],
        &[
            "run",
            "hamming_cdist",
            p(&rows),
            p(&codes),
            "-o",
            p(&out),
            "--device",
            "cpu",
        ],
        // 1.8 GiB of indices and the distances: each fits alone, both do not.
        &[
            "knn",
            p(&queries),
            p(&codes),
            "-k",
            "16384",
            "-o",
            p(&out),
            "--device",
            "cpu",
        ],
    ];
    let results: Vec<_> = cases.iter().map(|args| in_group(args)).collect();
    let left = out.exists();
    let fits = in_group(&["run", "not", p(&col), "-o", p(&out), "--device", "cpu"]);
    std::fs::remove_dir(&group).unwrap();
    for (args, r) in cases.iter().zip(&results) {
        assert_ne!(r.status.code(), None, "{args:?} was killed: {r:?}");
        let line = one_clean_error_line(r, 2);
        assert!(line.contains("cannot allocate"), "{args:?}: {line}");
    }
    assert!(!left, "a refused call left {}", out.display());
    assert!(fits.status.success(), "{fits:?}");
    assert!(read_npy(&out).2 == vec![0xfe; 1 << 17], "not of 0x0101");
}

#[test]
fn range_writes_faiss_layout_files_as_the_library_gives_them() {
    let dir = tmp("range");
    std::fs::create_dir_all(&dir).unwrap();
    let f = |name: &str| dir.join(name);
    let mut rng = Rng(60);
    let (m, n, k) = (6, 3000, 4);
    let a = random_bytes(&mut rng, DataType::U8, m * k);
    let b = random_bytes(&mut rng, DataType::U8, n * k);
    write_npy(&f("a.npy"), DataType::U8, &[m, k], &a, false, false, 1);
    write_npy(&f("b.npy"), DataType::U8, &[n, k], &b, false, false, 1);
    let (da, db) = (
        TensorDesc::new(DataType::U8, &[m, k]).unwrap(),
        TensorDesc::new(DataType::U8, &[n, k]).unwrap(),
    );
    let prefix = f("hits");
    let (fa, fb) = (f("a.npy"), f("b.npy"));
    for (op, t, flag) in [
        ("hamming_cdist", "9", None),
        ("hamming_cdist", "9.5", None),
        ("binary_dot", "-4", None),
        ("hamming_cdist", "20", Some("--largest")),
    ] {
        let mut args = vec!["range", p(&fa), p(&fb), "-t", t, "--op", op];
        args.extend(["-o", p(&prefix)]);
        args.extend(flag);
        let r = run(&args);
        assert!(
            r.status.success() && r.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let info = ops::lookup(op).unwrap();
        let call = Call {
            largest: flag.map(|_| true),
            ..Call::default()
        };
        let want = tensorbits::range_search(
            info,
            &call,
            &[Input::Bytes(&da, &a), Input::Bytes(&db, &b)],
            t.parse().unwrap(),
            info.default_output(DataType::U8),
        )
        .unwrap();
        assert!(want.indices.len() > 10, "{op} {t}: too few hits to test");
        let read = |part: &str| read_npy(&f(&format!("hits_{part}.npy")));
        let ints = |v: &[i64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let (ld, ls, lims) = read("lims");
        assert_eq!(
            (ld.as_str(), ls, lims),
            ("<i8", vec![m + 1], ints(&want.lims))
        );
        let (_, vs, values) = read("values");
        assert_eq!(
            (vs, values),
            (vec![want.indices.len()], want.values.clone())
        );
        let (id, is, indices) = read("indices");
        assert_eq!(
            (id.as_str(), is, indices),
            ("<i8", vec![want.indices.len()], ints(&want.indices))
        );
    }
    // The GPU writes the same files.
    if common::gpu::gpu().is_some() {
        let cpu: Vec<Vec<u8>> = ["lims", "values", "indices"]
            .iter()
            .map(|part| std::fs::read(f(&format!("hits_{part}.npy"))).unwrap())
            .collect();
        let r = run(&[
            "range",
            p(&fa),
            p(&fb),
            "-t",
            "20",
            "--largest",
            "--device",
            "gpu",
            "-o",
            p(&prefix),
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        for (part, want) in ["lims", "values", "indices"].iter().zip(cpu) {
            assert_eq!(
                std::fs::read(f(&format!("hits_{part}.npy"))).unwrap(),
                want,
                "{part}"
            );
        }
    }
    // A file name for the prefix, and a threshold that is not a number, are refused.
    let out = f("hits.npy");
    fails(
        &[
            "range",
            p(&f("a.npy")),
            p(&f("b.npy")),
            "-t",
            "3",
            "-o",
            p(&out),
        ],
        &out,
        "prefix",
    );
    fails(
        &[
            "range",
            p(&f("a.npy")),
            p(&f("b.npy")),
            "-t",
            "nan",
            "-o",
            p(&prefix),
        ],
        &f("hits_none.npy"),
        "NaN",
    );
}

#[test]
fn knn_over_shards_merges_into_the_whole_files() {
    let dir = tmp("merge");
    std::fs::create_dir_all(&dir).unwrap();
    let f = |name: &str| dir.join(name);
    let mut rng = Rng(61);
    let (m, n, k) = (5, 700, 30);
    // Two-byte codes: many ties.
    let q = random_bytes(&mut rng, DataType::U8, m * 2);
    let db = random_bytes(&mut rng, DataType::U8, n * 2);
    write_npy(&f("q.npy"), DataType::U8, &[m, 2], &q, false, false, 1);
    write_npy(&f("db.npy"), DataType::U8, &[n, 2], &db, false, false, 1);
    let ok = |args: &[&str]| {
        let r = run(args);
        assert!(
            r.status.success() && r.stderr.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    };
    let (fq, fdb) = (f("q.npy"), f("db.npy"));
    let (wi, wd) = (f("whole_i.npy"), f("whole_d.npy"));
    ok(&[
        "knn",
        p(&fq),
        p(&fdb),
        "-k",
        "30",
        "-o",
        p(&wi),
        "--distances",
        p(&wd),
    ]);
    let mut args: Vec<String> = vec!["merge".into()];
    for (s, (r0, r1)) in [(0usize, 10usize), (10, 11), (11, 400), (400, n)]
        .into_iter()
        .enumerate()
    {
        let shard = f(&format!("shard{s}.npy"));
        write_npy(
            &shard,
            DataType::U8,
            &[r1 - r0, 2],
            &db[r0 * 2..r1 * 2],
            false,
            false,
            1,
        );
        let (si, sd) = (f(&format!("i{s}.npy")), f(&format!("d{s}.npy")));
        let kk = k.min(r1 - r0).to_string();
        let off = r0.to_string();
        ok(&[
            "knn",
            p(&fq),
            p(&shard),
            "-k",
            &kk,
            "--id-offset",
            &off,
            "-o",
            p(&si),
            "--distances",
            p(&sd),
        ]);
        args.extend([p(&sd).to_owned(), p(&si).to_owned()]);
    }
    let (mi, md) = (f("merged_i.npy"), f("merged_d.npy"));
    args.extend(["-k", "30", "-o", p(&mi), "--distances", p(&md)].map(str::to_owned));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&refs);
    assert_eq!(std::fs::read(&mi).unwrap(), std::fs::read(&wi).unwrap());
    assert_eq!(std::fs::read(&md).unwrap(), std::fs::read(&wd).unwrap());
    // An odd count of files, and indices that are not int64, are refused.
    fails(
        &["merge", p(&wd), "-k", "3", "-o", p(&f("x.npy"))],
        &f("x.npy"),
        "pairs",
    );
    fails(
        &["merge", p(&wd), p(&wd), "-k", "3", "-o", p(&f("x.npy"))],
        &f("x.npy"),
        "int64",
    );
    // No neighbours asked for, parts over other queries, and parts of two ops are refused.
    let (d0, i0, x) = (f("d0.npy"), f("i0.npy"), f("x.npy"));
    for cmd in [
        ["merge", p(&d0), p(&i0), "-k", "0"],
        ["knn", p(&fq), p(&fdb), "-k", "0"],
    ] {
        let args = [&cmd[..], &["-o", p(&x)]].concat();
        fails(&args, &x, "k must be at least 1");
    }
    let (one_d, one_i, float_d) = (f("one_d.npy"), f("one_i.npy"), f("float_d.npy"));
    write_npy(&one_d, DataType::U32, &[1, 1], &[0; 4], false, false, 1);
    write_npy(&one_i, DataType::I64, &[1, 1], &[0; 8], false, false, 1);
    write_npy(
        &float_d,
        DataType::F32,
        &[m, 1],
        &vec![0; m * 4],
        false,
        false,
        1,
    );
    let m_i = f("m_i.npy");
    write_npy(
        &m_i,
        DataType::I64,
        &[m, 1],
        &vec![0; m * 8],
        false,
        false,
        1,
    );
    let merge = |d: &Path, i: &Path| {
        ["merge", p(&d0), p(&i0), p(d), p(i), "-k", "3", "-o", p(&x)].map(str::to_owned)
    };
    for (args, words) in [
        (merge(&one_d, &one_i), "every part is over the same queries"),
        (merge(&float_d, &m_i), "merge the results of one op"),
    ] {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&refs, &x, words);
    }
    fails(
        &[
            "knn",
            p(&fq),
            p(&fdb),
            "-k",
            "3",
            "--id-offset",
            "9223372036854775800",
            "-o",
            p(&f("x.npy")),
        ],
        &f("x.npy"),
        "int64",
    );
}
