#!/usr/bin/env python3
"""tensorbits beside numpy on the same machine, same shapes and types, in one run.

Usage: cargo build --release && pip install ./python && python3 benches/compare_numpy.py [--runs 7]
For each case it runs `tensorbits bench` (CPU, all cores), times numpy's ufunc into a
preallocated output (numpy runs its ufuncs on one thread) and, when the Python package is
installed, the package's function of the same name on the same arrays into the same output;
medians of --runs. A last table times calls on small arrays, where the cost of a call shows.
Writes benches/results/numpy.md. Bytes counted: read plus written, as for tensorbits.
"""
import argparse
import os
import re
import subprocess

import numpy as np

from compare_hamming import median_time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BIN = os.path.join(ROOT, "target", "release", "tensorbits")
MIB64 = 64 << 20

CASES = [
    # (label, tensorbits op, dtype, shape, shape_b or None, numpy function)
    ("XOR u8, 64 MiB", "xor", "u8", [MIB64], None, lambda a, b, o: np.bitwise_xor(a, b, out=o)),
    ("XOR u32, 64 MiB", "xor", "u32", [MIB64 // 4], None, lambda a, b, o: np.bitwise_xor(a, b, out=o)),
    # numpy has no bitwise ops on floats: its users XOR the bits through a uint32 view.
    ("XOR f32 (numpy: uint32 view), 64 MiB", "xor", "f32", [MIB64 // 4], None, lambda a, b, o: np.bitwise_xor(a, b, out=o)),
    ("XOR u64, 64 MiB", "xor", "u64", [MIB64 // 8], None, lambda a, b, o: np.bitwise_xor(a, b, out=o)),
    ("XOR u32 (4096,4096)^(4096,)", "xor", "u32", [4096, 4096], [4096], lambda a, b, o: np.bitwise_xor(a, b, out=o)),
    ("XOR u32 (4096,4096)^(4096,1)", "xor", "u32", [4096, 4096], [4096, 1], lambda a, b, o: np.bitwise_xor(a, b, out=o)),
    ("NOT u8, 64 MiB", "not", "u8", [MIB64], None, lambda a, b, o: np.invert(a, out=o)),
    ("SHL u32, 64 MiB", "shl", "u32", [MIB64 // 4], None, lambda a, b, o: np.left_shift(a, b, out=o)),
    ("SHR u8, 64 MiB", "shr", "u8", [MIB64], None, lambda a, b, o: np.right_shift(a, b, out=o)),
    ("POPCOUNT u32 -> u8, 64 MiB", "popcount", "u32", [MIB64 // 4], None, lambda a, b, o: np.bitwise_count(a, out=o)),
]


try:
    import tensorbits as tbpy
except ImportError:
    tbpy = None

# The Python package's function for each case's op, called as numpy's is.
PY = {
    "xor": lambda a, b, o: tbpy.bitwise_xor(a, b, out=o),
    "not": lambda a, b, o: tbpy.bitwise_not(a, out=o),
    "shl": lambda a, b, o: tbpy.left_shift(a, b, out=o),
    "shr": lambda a, b, o: tbpy.right_shift(a, b, out=o),
    "popcount": lambda a, b, o: tbpy.bitwise_count(a, out=o),
}


def ours(op, dtype, shape, shape_b, runs):
    args = [BIN, "bench", op, "--dtype", dtype, "--shape", ",".join(map(str, shape)), "--runs", str(runs)]
    if shape_b:
        args += ["--shape-b", ",".join(map(str, shape_b))]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    gbs = float(re.search(r"on CPU: ([0-9.]+) GB/s", out).group(1))
    copy = float(re.search(r"copy of the same bytes: ([0-9.]+) GB/s", out).group(1))
    return gbs, copy


def numpy_time(fn, a, b, o, runs):
    return median_time(lambda: fn(a, b, o), runs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    rng = np.random.default_rng(1)
    rows = []
    for label, op, dtype, shape, shape_b, fn in CASES:
        npt = np.dtype({"u8": np.uint8, "u32": np.uint32, "f32": np.uint32, "u64": np.uint64}[dtype])
        a = rng.integers(0, 256, size=shape, dtype=np.uint64).astype(npt)
        b = rng.integers(0, 8, size=shape_b or shape, dtype=np.uint64).astype(npt)
        odt = np.uint8 if op == "popcount" else npt
        o = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=odt)
        moved = a.nbytes + o.nbytes + (b.nbytes if op not in ("not", "popcount") else 0)
        t = numpy_time(fn, a, b, o, args.runs)
        if dtype == "f32" and tbpy is not None:
            a, b, o = a.view(np.float32), b.view(np.float32), o.view(np.float32)
        pyg = moved / numpy_time(PY[op], a, b, o, args.runs) / 1e9 if tbpy else None
        tb, copy = ours(op, dtype, shape, shape_b, args.runs)
        rows.append((label, tb, moved / t / 1e9, copy, pyg))
        print(f"{label}: tensorbits {tb:.1f} GB/s, numpy {moved / t / 1e9:.1f} GB/s, copy {copy:.1f} GB/s, "
              f"Python package {pyg if pyg is None else round(pyg, 1)} GB/s", flush=True)
    small = []
    if tbpy is not None:
        for n in [64, 4096, 65536]:
            a = rng.integers(0, 256, size=n, dtype=np.uint64).astype(np.uint32)
            b = rng.integers(0, 256, size=n, dtype=np.uint64).astype(np.uint32)
            o = np.empty_like(a)
            calls = 2000 if n <= 4096 else 200

            def loop(f):
                def run(a, b, o):
                    for _ in range(calls):
                        f(a, b, o)
                return run

            tn = numpy_time(loop(lambda a, b, o: np.bitwise_xor(a, b, out=o)), a, b, o, args.runs) / calls
            tp = numpy_time(loop(PY["xor"]), a, b, o, args.runs) / calls
            small.append((f"{n}, into out", tp * 1e6, tn * 1e6))
            tn = numpy_time(loop(lambda a, b, o: np.bitwise_xor(a, b)), a, b, o, args.runs) / calls
            tp = numpy_time(loop(lambda a, b, o: tbpy.bitwise_xor(a, b)), a, b, o, args.runs) / calls
            small.append((f"{n}, new array", tp * 1e6, tn * 1e6))
    os.makedirs(os.path.join(ROOT, "benches", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benches", "results", "numpy.md"), "w") as f:
        f.write(f"| case | tensorbits GB/s | numpy {np.__version__} GB/s | tensorbits / numpy | parallel copy GB/s "
                "| Python package GB/s | Python package / numpy |\n")
        f.write("|---|---:|---:|---:|---:|---:|---:|\n")
        for label, tb, npg, copy, pyg in rows:
            py = f"{pyg:.1f} | {pyg / npg:.1f}x" if pyg else "- | -"
            f.write(f"| {label} | {tb:.1f} | {npg:.1f} | {tb / npg:.1f}x | {copy:.1f} | {py} |\n")
        if small:
            f.write("\nOne call on small arrays (XOR u32, into a preallocated output or a new array), "
                    "microseconds per call:\n\n")
            f.write("| elements | tensorbits.bitwise_xor | numpy.bitwise_xor | ratio |\n|---:|---:|---:|---:|\n")
            for n, tp, tn in small:
                f.write(f"| {n} | {tp:.2f} | {tn:.2f} | {tp / tn:.1f}x |\n")
    print(open(os.path.join(ROOT, "benches", "results", "numpy.md")).read())


if __name__ == "__main__":
    main()
