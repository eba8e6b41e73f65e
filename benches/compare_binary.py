#!/usr/bin/env python3
"""binarize and rescore beside what numpy users write today, same arrays, one run.

Usage: pip install ./python && python3 benches/compare_binary.py [--runs 7]
- binarize: `tb.binarize(x)` against `np.packbits(x > 0, axis=-1)` and against a copy of x's
  bytes (`x.copy()`, new arrays both; and `np.copyto` against `out=`, into preallocated arrays),
  per dtype, 64 MiB of input;
- rescore: `tb.rescore(q, codes, cands, 10)` against sentence-transformers' numpy rescoring
  (`np.unpackbits` of the candidates' codes, a float product with the query, `argsort`).
Medians of --runs; ratios above 1 mean tensorbits is faster. Writes benches/results/binary.md.
"""
import argparse
import os

import numpy as np

import tensorbits as tb
from compare_hamming import median_time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MIB64 = 64 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    lines = ["# binarize and rescore beside numpy", "",
             f"{tb.get_num_threads()} threads for tensorbits; numpy runs on one.", "",
             "| case | tensorbits (ms) | numpy packbits (ms) | copy of x (ms) | vs packbits | vs copy |",
             "|---|---|---|---|---|---|"]
    for dtype in ["uint8", "int16", "float16", "float32", "float64"]:
        n = MIB64 // np.dtype(dtype).itemsize
        x = (rng.standard_normal(n // 384 * 384) * 4).astype(dtype).reshape(-1, 384)
        t_tb = median_time(lambda: tb.binarize(x), args.runs)
        t_np = median_time(lambda: np.packbits(x > 0, axis=-1), args.runs)
        t_cp = median_time(lambda: x.copy(), args.runs)
        lines.append(f"| binarize {dtype} [{x.shape[0]}, 384], new arrays | {t_tb*1e3:.2f} | "
                     f"{t_np*1e3:.2f} | {t_cp*1e3:.2f} | {t_np/t_tb:.1f}x | {t_cp/t_tb:.2f}x |")
        out = np.empty((x.shape[0], 48), dtype=np.uint8)
        dst = np.empty_like(x)
        tb.binarize(x, out=out)
        np.copyto(dst, x)
        t_tb = median_time(lambda: tb.binarize(x, out=out), args.runs)
        t_cp = median_time(lambda: np.copyto(dst, x), args.runs)
        lines.append(f"| binarize {dtype}, into preallocated | {t_tb*1e3:.2f} | | {t_cp*1e3:.2f} | "
                     f"| {t_cp/t_tb:.2f}x |")
    lines += ["", "| rescore (M queries x C candidates, D dims) | tensorbits (ms) | numpy (ms) | speed-up |",
              "|---|---|---|---|"]
    for m, c, d, n in [(100, 40, 384, 20_000), (1000, 40, 1024, 100_000), (10, 400, 768, 100_000)]:
        codes = np.packbits(rng.standard_normal((n, d)) > 0, axis=-1)
        q = rng.standard_normal((m, d)).astype(np.float32)
        cands = rng.integers(0, n, size=(m, c))

        def numpy_rescore():
            bits = np.unpackbits(codes[cands], axis=-1).astype(np.float32)
            scores = np.einsum("qd,qkd->qk", q, bits)
            order = np.argsort(-scores, axis=1, kind="stable")[:, :10]
            return np.take_along_axis(cands, order, axis=1)

        t_tb = median_time(lambda: tb.rescore(q, codes, cands, 10), args.runs)
        t_np = median_time(numpy_rescore, args.runs)
        lines.append(f"| {m} x {c}, {d} | {t_tb*1e3:.2f} | {t_np*1e3:.2f} | {t_np/t_tb:.1f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.join(ROOT, "benches", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benches", "results", "binary.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
