#!/usr/bin/env python3
"""tensorbits.range_search beside FAISS's IndexBinaryFlat.range_search: the same codes, queries
and radii, in one process and one run, the results checked equal before they are timed.

Usage:
    pip install numpy faiss-cpu
    bash python/build_wheel.sh /tmp/wheel && pip install /tmp/wheel/tensorbits-*.whl
    python3 benches/range_search.py [--runs 5] [--quick]

Cases are deduplication (64-bit perceptual hashes, small radii) and binary embeddings (256 and
1024 bits, radii around a few near neighbours each). Both libraries use every core. Times are
medians of --runs after one warm-up; the ratio is FAISS's median over ours. Writes
benches/results/range_search.md. --quick shrinks the databases tenfold, to check the script.
"""
import argparse
import os
import platform
import time

import numpy as np

import tensorbits as tb

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def median_time(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def near_copies(rng, base, count, flips):
    """`count` codes, each a random row of `base` with about `flips` bits flipped."""
    rows = base[rng.integers(0, len(base), count)]
    bits = np.unpackbits(rows, axis=1)
    p = flips / bits.shape[1]
    bits ^= (rng.random(bits.shape) < p).astype(np.uint8)
    return np.packbits(bits, axis=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    import faiss

    scale = 10 if args.quick else 1
    rng = np.random.default_rng(60)
    # (name, bits, database rows, queries, radius)
    cases = [
        ("pHash dedup", 64, 1_000_000, 1000, 9),
        ("pHash dedup, one query", 64, 1_000_000, 1, 9),
        ("256-bit embeddings", 256, 1_000_000, 100, 90),
        ("1024-bit embeddings", 1024, 200_000, 100, 420),
    ]
    lines = [
        "# Range search: tensorbits beside FAISS",
        "",
        f"`python3 benches/range_search.py --runs {args.runs}` on {platform.machine()}, "
        f"{os.cpu_count()} threads, faiss-cpu {faiss.__version__}, CPU kernels "
        f"{tb.cpu_instruction_set()}. Medians of {args.runs} runs; the ratio is FAISS's time "
        "over ours (above 1: we are faster). Hits are checked equal first.",
        "",
        "| case | codes | queries | radius | hits | tensorbits ms | FAISS ms | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, bits, n, m, radius in cases:
        n //= scale
        db = rng.integers(0, 256, (n, bits // 8), dtype=np.uint8)
        # Queries near some codes: each has a few hits, as a duplicate would.
        q = near_copies(rng, db, m, radius // 3)
        index = faiss.IndexBinaryFlat(bits)
        index.add(db)
        fl, fd, fi = index.range_search(q, radius)
        ol, od, oi = tb.range_search(q, db, radius)
        assert np.array_equal(fl.astype(np.int64), ol) and np.array_equal(fi, oi)
        assert np.array_equal(fd.astype(np.int64), od.astype(np.int64))
        ours = median_time(lambda: tb.range_search(q, db, radius), args.runs)
        theirs = median_time(lambda: index.range_search(q, radius), args.runs)
        lines.append(
            f"| {name} | {n:,} x {bits} bits | {m:,} | {radius} | {len(oi):,} | "
            f"{ours * 1e3:.2f} | {theirs * 1e3:.2f} | {theirs / ours:.2f}x |"
        )
        print(lines[-1], flush=True)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "range_search.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
