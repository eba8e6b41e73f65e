#!/usr/bin/env python3
"""tensorbits' Hamming distances and kNN beside FAISS over many shapes, through the Python package.

Usage:
    pip install numpy faiss-cpu ./python
    python3 benches/compare_hamming_shapes.py [--runs 7]

For code sizes of 8, 32 and 128 bytes (u8), all-pairs distances (`tensorbits.hamming_cdist` into a
preallocated uint32 array, `faiss.hammings` into a preallocated int32 array) and kNN with k = 10
(`tensorbits.knn`, `faiss.IndexBinaryFlat.search`), from a single query to many, medians of --runs
in one run. Both use all cores (BLAS threads, which neither uses, are limited to one). Writes
benches/results/hamming_shapes.md.
"""
import argparse
import os
import time

# Neither side calls BLAS: idle BLAS threads only add noise on a small machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import faiss
import numpy as np

import tensorbits as tb
from compare_hamming import median_time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def paused_median_time(fn, runs):
    # A pause first, so that threads the other library left spinning have gone to sleep.
    time.sleep(0.2)
    return median_time(fn, runs)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for k in [8, 32, 128]:
        for m, n in [(1, 200000), (10, 100000), (100, 10000), (1000, 1000), (10000, 100), (1000, 100000)]:
            a = rng.integers(0, 256, (m, k), dtype=np.uint8)
            b = rng.integers(0, 256, (n, k), dtype=np.uint8)
            out = np.empty((m, n), np.uint32)
            dis = np.empty((m, n), np.int32)
            t1 = paused_median_time(lambda: tb.hamming_cdist(a, b, out=out), args.runs)
            t2 = paused_median_time(lambda: faiss.hammings(faiss.swig_ptr(a), faiss.swig_ptr(b), m, n, k,
                                                    faiss.swig_ptr(dis)), args.runs)
            assert (out.astype(np.int64) == dis).all()
            rows.append(("cdist", k, m, n, m * n / t1 / 1e9, m * n / t2 / 1e9))
            print(*rows[-1], flush=True)
    for k in [8, 32, 128]:
        for m, n in [(1, 1000000), (10, 1000000), (100, 100000), (1000, 100000)]:
            a = rng.integers(0, 256, (m, k), dtype=np.uint8)
            b = rng.integers(0, 256, (n, k), dtype=np.uint8)
            index = faiss.IndexBinaryFlat(k * 8)
            index.add(b)
            runs = max(args.runs // 2, 3)
            t1 = paused_median_time(lambda: tb.knn(a, b, 10), runs)
            t2 = paused_median_time(lambda: index.search(a, 10), runs)
            d1, _ = tb.knn(a, b, 10)
            d2, _ = index.search(a, 10)
            assert (d1.astype(np.int64) == d2).all()
            rows.append(("knn k=10", k, m, n, m * n / t1 / 1e9, m * n / t2 / 1e9))
            print(*rows[-1], flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, "hamming_shapes.md")
    with open(path, "w") as f:
        f.write(f"faiss {faiss.__version__}, numpy {np.__version__}; {os.cpu_count()} CPUs; medians of "
                f"{args.runs} runs (knn: {max(args.runs // 2, 3)}); G distances/s.\n\n")
        f.write("| op | code bytes | M (queries) | N | tensorbits | faiss | tensorbits / faiss |\n")
        f.write("|---|---:|---:|---:|---:|---:|---:|\n")
        for op, k, m, n, o, fa in rows:
            f.write(f"| {op} | {k} | {m} | {n} | {o:.3f} | {fa:.3f} | {o / fa:.2f}x |\n")
    print(open(path).read())


if __name__ == "__main__":
    main()
