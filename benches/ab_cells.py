"""Times a few all-pairs and knn cells with two installs of tensorbits, alternating processes, and
prints each build's median and their ratio: an A/B of two builds on one noisy machine.

    python3 benches/ab_cells.py OLD_PYTHON NEW_PYTHON [--rounds 6] [--cells streams]

Each PYTHON is an interpreter with numpy and one build of tensorbits installed (for instance a
venv with the wheel of `bash python/build_wheel.sh` from each commit). A cell is (op, code bytes,
queries, database, k); cdist writes uint32 into a preallocated output.
"""

import argparse
import statistics
import subprocess
import sys

CELLS = [
    ("knn", 16, 100, 1000, 10),
    ("knn", 16, 10, 1000, 10),
    ("knn", 8, 1000, 1000, 10),
    ("cdist", 8, 1000, 1000, 0),
    ("cdist", 4, 1000, 1000, 0),
    ("cdist", 16, 100, 1000, 0),
    ("knn", 32, 100, 100000, 10),
]

# `--cells streams`: one and ten queries against rows of `b` as they lie, the vector streams' sizes.
STREAMS = [
    (op, size, m, 100000, 10 if op == "knn" else 0)
    for size in (4, 8, 12, 16, 32, 48, 64, 96, 128, 200, 256, 512)
    for op, m in (("cdist", 1), ("knn", 10))
]

# Run in each interpreter: the median time per call of every cell, in seconds, on one line.
CHILD = """
import sys, time, numpy as np, tensorbits as tb
cells = eval(sys.argv[1])
rng = np.random.default_rng(0)
out = []
for op, size, m, n, k in cells:
    a = rng.integers(0, 256, (m, size), dtype=np.uint8)
    b = rng.integers(0, 256, (n, size), dtype=np.uint8)
    if op == "knn":
        f = lambda: tb.knn(a, b, k)
    else:
        o = np.empty((m, n), np.uint32)
        f = lambda: tb.hamming_cdist(a, b, out=o)
    for _ in range(3):
        f()
    t0 = time.perf_counter(); f(); once = time.perf_counter() - t0
    reps = max(1, int(0.05 / max(once, 1e-7)))
    times = []
    for _ in range(15):
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        times.append((time.perf_counter() - t0) / reps)
    out.append(sorted(times)[len(times) // 2])
print(" ".join(repr(t) for t in out))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--cells", choices=["default", "streams"], default="default")
    args = p.parse_args()
    cells = STREAMS if args.cells == "streams" else CELLS
    times = {"old": [], "new": []}
    for rnd in range(args.rounds):
        # Each build goes first in every other round: the process that runs first can read
        # faster or slower for it alone.
        for name in ("old", "new") if rnd % 2 == 0 else ("new", "old"):
            py = getattr(args, name)
            r = subprocess.run([py, "-c", CHILD, repr(cells)], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"error: {py}: {r.stderr.strip()}")
            times[name].append([float(x) for x in r.stdout.split()])
    print("| op | code bytes | queries | database | k | old (us) | new (us) | new / old |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for i, (op, size, m, n, k) in enumerate(cells):
        old = statistics.median(t[i] for t in times["old"])
        new = statistics.median(t[i] for t in times["new"])
        print(f"| {op} | {size} | {m} | {n} | {k or ''} | {old * 1e6:.1f} | {new * 1e6:.1f} | {new / old:.2f} |")


if __name__ == "__main__":
    main()
