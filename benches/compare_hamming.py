#!/usr/bin/env python3
"""tensorbits' reductions, Hamming distances and binary kNN beside FAISS, NumKong and numpy, on
the same machine, same shapes and types, in one run.

Usage:
    pip install numpy faiss-cpu numkong matplotlib
    cargo build --release -p tensorbits-cli
    python3 benches/compare_hamming.py [--runs 5] [--quick]

Each case runs `tensorbits bench` (CPU, all cores; medians of --runs, with the bench's own
parallel copy of the same bytes measured in the same run) and times each peer on the same
random data (medians of --runs). FAISS runs on all cores (OpenMP); numpy on one; NumKong as it
comes. Writes benches/results/hamming.md, and benches/results/hamming.png when matplotlib is
installed. --quick shrinks every case tenfold, to check the script, not to quote.
"""
import argparse
import os
import re
import subprocess
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BIN = os.path.join(ROOT, "target", "release", "tensorbits")
RESULTS = os.path.join(ROOT, "benches", "results")


def median_time(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def ours(args, runs):
    """Runs `tensorbits bench` and returns (seconds, distances per second or None, copy ratio)."""
    cmd = [BIN, "bench", *args, "--runs", str(runs)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    ms = float(re.search(r"runs, ([0-9.]+) ms", out).group(1))
    d = re.search(r"distances: ([0-9.]+) G/s", out)
    ratio = float(re.search(r"ratio op/copy: ([0-9.]+)x", out).group(1))
    return ms / 1e3, (float(d.group(1)) * 1e9 if d else None), ratio, " ".join(cmd[1:])


def shape_arg(shape):
    return ",".join(map(str, shape))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    scale = 10 if args.quick else 1
    rng = np.random.default_rng(1)
    import faiss
    import numkong

    rows = []  # (case, peer, tensorbits figure, peer figure, unit, ratio, copy ratio, command)

    def report(case, peer, ours_fig, peer_fig, unit, copy_ratio, cmd):
        ratio = ours_fig / peer_fig
        rows.append((case, peer, ours_fig, peer_fig, unit, ratio, copy_ratio, cmd))
        print(f"{case} vs {peer}: {ours_fig:.3g} vs {peer_fig:.3g} {unit} = {ratio:.2f}x", flush=True)

    # 1. All-pairs distances: u8 codes of 32 bytes, 1000 x 100000.
    m, n, k = 1000 // scale, 100000 // scale, 32
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(0, 256, (n, k), dtype=np.uint8)
    case = f"HAMMING_CDIST u8 [{m}, 32] x [{n}, 32]"
    t, dps, cr, cmd = ours(["hamming_cdist", "--dtype", "u8", "--shape", shape_arg([m, k]),
                            "--shape-b", shape_arg([n, k])], args.runs)
    dis = np.empty((m, n), dtype=np.int32)
    ft = median_time(lambda: faiss.hammings(faiss.swig_ptr(a), faiss.swig_ptr(b), m, n, k,
                                            faiss.swig_ptr(dis)), args.runs)
    report(case, "faiss.hammings", dps / 1e9, m * n / ft / 1e9, "G distances/s", cr, cmd)
    packed = numkong.hammings_pack(b)
    nt = median_time(lambda: numkong.hammings_packed(a, packed), args.runs)
    report(case, "numkong.hammings_packed (b packed beforehand)", dps / 1e9, m * n / nt / 1e9,
           "G distances/s", cr, cmd)
    # numpy has no cdist of bit counts: broadcasting 16 rows of `a` at a time keeps it in memory.
    sub = max(m // 20, 1)

    def np_cdist():
        for i in range(0, sub, 16):
            np.bitwise_count(a[i:i + 16, None, :] ^ b[None, :, :]).sum(-1, dtype=np.uint32)

    pt = median_time(np_cdist, max(args.runs // 2, 1))
    report(case, f"numpy bitwise_count, broadcast ({sub} rows)", dps / 1e9, sub * n / pt / 1e9,
           "G distances/s", cr, cmd)

    # 2. kNN: k = 10, 1000 queries against 1M codes of 32 bytes.
    q, n = 1000 // scale, 1000000 // scale
    base = rng.integers(0, 256, (n, k), dtype=np.uint8)
    queries = rng.integers(0, 256, (q, k), dtype=np.uint8)
    case = f"knn k=10, u8 [{q}, 32] against [{n}, 32]"
    t, dps, cr, cmd = ours(["hamming_cdist", "--dtype", "u8", "--shape", shape_arg([q, k]),
                            "--shape-b", shape_arg([n, k]), "--knn", "10"], args.runs)
    index = faiss.IndexBinaryFlat(k * 8)
    index.add(base)
    st = median_time(lambda: index.search(queries, 10), max(args.runs // 2, 1))
    report(case, "faiss.IndexBinaryFlat.search", dps / 1e9, q * n / st / 1e9, "G distances/s",
           cr, cmd)

    # 3. Row-wise Hamming distance, [1M, 16] u64.
    r = 1000000 // scale
    x = rng.integers(0, 2**63, (r, 16), dtype=np.uint64)
    y = rng.integers(0, 2**63, (r, 16), dtype=np.uint64)
    case = f"HAMMING_DISTANCE u64 [{r}, 16], last axis"
    t, _, cr, cmd = ours(["hamming_distance", "--dtype", "u64", "--shape", shape_arg([r, 16])],
                         args.runs)
    xv, yv = x.view(np.uint8), y.view(np.uint8)
    kt = median_time(lambda: numkong.hamming(xv, yv, "uint1"), args.runs)
    report(case, "numkong.hamming (uint1)", 1 / t, 1 / kt, "calls/s", cr, cmd)
    nt = median_time(lambda: np.bitwise_count(x ^ y).sum(-1), args.runs)
    report(case, "numpy bitwise_count(a ^ b).sum(-1)", 1 / t, 1 / nt, "calls/s", cr, cmd)

    # 4. XOR reductions of a 64 MiB u32 tensor, along each axis.
    side = 4096 if not args.quick else 1024
    z = rng.integers(0, 2**32, (side, side), dtype=np.uint32)
    for axis in (-1, 0):
        case = f"BIT_XOR_REDUCE u32 [{side}, {side}], axis {axis}"
        t, _, cr, cmd = ours(["bit_xor_reduce", "--dtype", "u32", "--shape",
                              shape_arg([side, side]), f"--axes={axis}"], args.runs)
        nt = median_time(lambda: np.bitwise_xor.reduce(z, axis=axis), args.runs)
        report(case, "numpy bitwise_xor.reduce", z.nbytes / t / 1e9, z.nbytes / nt / 1e9,
               "GB/s read", cr, cmd)

    os.makedirs(RESULTS, exist_ok=True)
    md = os.path.join(RESULTS, "hamming.md")
    with open(md, "w") as f:
        f.write(f"numpy {np.__version__}, faiss {faiss.__version__}, numkong "
                f"{getattr(numkong, '__version__', '?')}; {os.cpu_count()} CPUs; medians of "
                f"{args.runs} runs{' (--quick: shapes shrunk tenfold)' if args.quick else ''}.\n\n")
        f.write("| case | peer | tensorbits | peer | unit | tensorbits / peer | "
                "tensorbits / copy |\n|---|---|---:|---:|---|---:|---:|\n")
        for case, peer, o, pf, unit, ratio, cr, _ in rows:
            f.write(f"| {case} | {peer} | {o:.3g} | {pf:.3g} | {unit} | {ratio:.2f}x | "
                    f"{cr:.2f}x |\n")
        f.write("\ntensorbits / copy: the op's time against the bench's parallel copy of the "
                "same bytes, measured in the same run. Commands:\n\n")
        for cmd in dict.fromkeys(c for *_, c in rows):
            f.write(f"    tensorbits {cmd}\n")
    print(open(md).read())
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart")
        return
    labels = [f"{c}\nvs {p}" for c, p, *_ in rows]
    ratios = [r[5] for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(rows) + 1.5))
    ax.barh(range(len(rows)), ratios, color=["#2a7" if v >= 1 else "#c44" for v in ratios])
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("tensorbits / peer (higher is better; 1 = same speed)")
    ax.set_title("tensorbits beside FAISS, NumKong and numpy (CPU)")
    for i, v in enumerate(ratios):
        ax.text(v, i, f" {v:.2f}x", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "hamming.png"), dpi=110)
    print("wrote", os.path.join(RESULTS, "hamming.png"))


if __name__ == "__main__":
    main()
