#!/usr/bin/env python3
"""tensorbits' all-pairs Hamming distances and exact kNN beside FAISS, usearch and NumKong, over a
grid of shapes, one process per library.

Usage:
    pip install numpy faiss-cpu usearch numkong matplotlib ./python
    python3 benches/grid.py [--runs 3] [--rounds 3] [--sizes 4,8,...] [--queries 1,10,...] [--db 1000,...]
                            [--k 1,10,100,1000] [--max-cdist 2e7] [--max-knn 1e8]
                            [--peers tensorbits,faiss] [--dtype uint8]

The grid: code sizes of 4 to 256 bytes (u8 codes), 1 to 10,000 queries, databases of 1,000 to
1,000,000 codes, and k of 1 to 1,000; for `hamming_cdist` (into a preallocated uint32 array;
`faiss.hammings` into int32, `numkong.hammings_packed` with the database packed beforehand) and
`knn` (`faiss.IndexBinaryFlat.search`, usearch's exact `search(..., metric=Hamming, exact=True)`).
Cells with more than --max-cdist distances (the output's memory) or --max-knn distances (the time
of a run) are left out. Each library runs in its own process (`--peer NAME --json FILE`), one after
the other with a pause between, on the same arrays (made from the same seed); BLAS threads, which
none uses, are limited to one. Every library uses all cores, with its threads' default waiting
(OpenMP's spin-then-sleep for FAISS). A cell's time is the median of --runs samples, each
repeating the call for about 2 ms. With --rounds R the libraries' processes run R times in turn
(tensorbits, FAISS, ..., tensorbits, FAISS, ...) and a cell keeps each library's fastest of its
R medians: on a shared virtual machine the host's load changes over seconds, and in one round a
cell's ratio moved between 0.6x and 3x from run to run, the same for either library. Writes
benches/results/grid.md (the
table, the minimum and the geometric mean of the ratios per peer, and the CPU with the kernels it
runs) and grid.png; --name NAME writes NAME.md, NAME.png and NAME_PEER.json instead.

--isa LEVEL (baseline, avx2, avx512bw) runs tensorbits' CPU kernels at most at that instruction
set (TENSORBITS_CPU) and FAISS at the matching SIMD level (faiss.SIMDConfig: NONE, AVX2, AVX512), so
that one machine measures both as a CPU without AVX-512 VPOPCNTDQ would run them; NumKong and
usearch run their best.

--dtype gives tensorbits the same codes as uint16, uint32 or uint64 rows (the same bits, a code
size a multiple of the type's), so that wider integer codes are held to the same peers, which
take bytes.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
PEERS = ["tensorbits", "faiss", "usearch", "numkong"]
# FAISS's SIMD level beside each --isa of tensorbits.
FAISS_LEVELS = {"baseline": "NONE", "avx2": "AVX2", "avx512bw": "AVX512"}


def cell_time(fn, runs):
    """Median over `runs` samples of the seconds per call; a sample repeats the call until it
    takes about 2 ms, since one call of a few microseconds would time mostly the timer and a cold
    cache. The calls first run for at least 20 ms and three calls, untimed: each cell's output is
    new, and the first calls into a new array of tens of megabytes pay for its pages (faults, and
    on a virtual machine the host's backing of them) for several calls, unevenly between
    libraries and runs. Every library is timed alike."""
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < 0.02:
        fn()
        calls += 1
    t = time.perf_counter()
    fn()
    one = time.perf_counter() - t
    number = max(1, min(100_000, int(0.002 / max(one, 1e-9))))
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t) / number)
    return sorted(times)[len(times) // 2]


def ints(text):
    return [int(float(x)) for x in text.split(",") if x]


def cells(args):
    """Every cell of the grid within the caps: (op, code bytes, queries, database, k)."""
    out = []
    for size in args.sizes:
        for n in args.db:
            for q in args.queries:
                if q * n <= args.max_cdist:
                    out.append(("cdist", size, q, n, 0))
                for k in args.k:
                    if k <= n and q * n <= args.max_knn:
                        out.append(("knn", size, q, n, k))
    return out


_BASES = {}


def data(size, q, n):
    """The same codes in every process: the seed depends on the shape only."""
    if (size, n) not in _BASES:
        _BASES.clear()
        rng = np.random.default_rng(size * 1_000_003 + n)
        _BASES[size, n] = rng.integers(0, 256, (n, size), dtype=np.uint8)
    queries = np.random.default_rng(size * 7 + q).integers(0, 256, (q, size), dtype=np.uint8)
    return queries, _BASES[size, n]


def runner(peer, op, queries, base, k, dtype="uint8"):
    """A function running the cell's work with `peer`, or None where the peer has no such op."""
    q, n, size = len(queries), len(base), queries.shape[1]
    if peer == "tensorbits":
        import tensorbits as tb

        queries, base = queries.view(dtype), base.view(dtype)

        if op == "cdist":
            out = np.empty((q, n), np.uint32)
            return lambda: tb.hamming_cdist(queries, base, out=out)
        return lambda: tb.knn(queries, base, k=k)
    if peer == "faiss":
        import faiss

        level = FAISS_LEVELS.get(os.environ.get("TENSORBITS_CPU", ""))
        if level:
            faiss.SIMDConfig.set_level(getattr(faiss, "SIMDLevel_" + level))

        if op == "cdist":
            dis = np.empty((q, n), np.int32)
            return lambda: faiss.hammings(faiss.swig_ptr(queries), faiss.swig_ptr(base), q, n, size,
                                          faiss.swig_ptr(dis))
        index = faiss.IndexBinaryFlat(size * 8)
        index.add(base)
        return lambda: index.search(queries, k)
    if peer == "usearch":
        from usearch.index import MetricKind, search

        if op == "cdist":
            return None
        return lambda: search(base, queries, k, metric=MetricKind.Hamming, exact=True)
    if peer == "numkong":
        import numkong

        if op != "cdist":
            return None
        packed = numkong.hammings_pack(base)
        return lambda: numkong.hammings_packed(queries, packed)
    raise ValueError(peer)


def measure(args):
    """One library over the grid: seconds per cell, written as JSON."""
    results = {}
    rejected = {}
    last = None
    for op, size, q, n, k in cells(args):
        if (size, q, n) != last:
            queries, base = data(size, q, n)
            last = (size, q, n)
        try:
            fn = runner(args.peer, op, queries, base, k, args.dtype)
        except ImportError:
            break
        if fn is None:
            continue
        try:
            t = cell_time(fn, args.runs)
        except RuntimeError as e:
            # A shape the peer rejects (FAISS's AVX2 `hammings` asserts codes of a multiple of 8
            # bytes): no cell for it, and the report says so.
            why = str(e).splitlines()[-1]
            rejected[f"{op},{size},{q},{n},{k}"] = why[why.find("Error: ") + 7:] if "Error: " in why else why
            print(f"{args.peer} {op} {size}B q={q} n={n} k={k}: rejected: {why}", flush=True)
            continue
        results[f"{op},{size},{q},{n},{k}"] = t
        print(f"{args.peer} {op} {size}B q={q} n={n} k={k}: {t * 1e3:.3f} ms", flush=True)
    if rejected:
        results["rejected"] = rejected
    with open(args.json, "w") as f:
        json.dump(results, f)


def cpu():
    """The processor's model and the widest popcount the CPU kernels use on it (AVX-512 VPOPCNTDQ
    streams, or the AVX2 tiles), from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return "unknown CPU"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), "unknown CPU")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    isa = ("AVX-512 VPOPCNTDQ" if "avx512_vpopcntdq" in flags
           else "AVX2, no AVX-512 VPOPCNTDQ" if "avx2" in flags else "no AVX2")
    capped = os.environ.get("TENSORBITS_CPU")
    if capped in FAISS_LEVELS:
        isa += (f"; tensorbits' kernels capped at {capped} (TENSORBITS_CPU), FAISS at SIMD level "
                f"{FAISS_LEVELS[capped]}")
    return f"{model}, {isa}"


def cpu_ticks():
    """(steal, total) clock ticks of every CPU so far, from /proc/stat's `cpu` line, or None where
    there is none: on a virtual machine, steal is time the host gave this machine's CPUs to
    others, which stretches whichever library runs then."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (fields[7], sum(fields[:8])) if len(fields) >= 8 else None


def report(args, times, steal=None, rejected=None):
    steal = steal or {}
    rejected = {p: r for p, r in (rejected or {}).items() if r}
    ours = times["tensorbits"]
    lines = [
        "# Hamming distances and kNN over a grid of shapes",
        "",
        f"`python3 benches/grid.py --runs {args.runs} --rounds {args.rounds} --sizes {','.join(map(str, args.sizes))} "
        f"--queries {','.join(map(str, args.queries))} --db {','.join(map(str, args.db))} "
        f"--k {','.join(map(str, args.k))} --max-cdist {args.max_cdist:g} --max-knn {args.max_knn:g}"
        + (f" --dtype {args.dtype}" if args.dtype != "uint8" else "") + "`: "
        f"{os.cpu_count()} CPUs ({cpu()}), medians of {args.runs} samples of at least 2 ms each (one call where a call takes longer) after 20 ms of untimed calls, one process per library, "
        f"{args.rounds} round(s) in turn, each cell the fastest round (of the libraries measured in "
        f"this run: --peers {args.peers}). Ratio: the "
        "peer's time over tensorbits' (above 1: tensorbits is faster).",
        "",
    ]
    if steal:
        lines += [
            "CPU time the host took from this machine while each library ran (steal): "
            + ", ".join(f"{p} {100 * f:.0f}%" for p, f in steal.items())
            + (". Above a few percent the host's load, not the libraries, sets ratios: "
               "run again." if max(steal.values()) > 0.03 else "."),
            "",
        ]
    lines += [
        "| op | code bytes | queries | database | k | tensorbits ms | "
        + " | ".join(f"{p} ratio" for p in PEERS[1:]) + " |",
        "|---|---|---|---|---|---|" + "---|" * (len(PEERS) - 1),
    ]
    ratios = {p: [] for p in PEERS[1:]}
    for key, t in ours.items():
        op, size, q, n, k = key.split(",")
        row = [op, size, q, n, k if op == "knn" else "", f"{t * 1e3:.3f}"]
        for p in PEERS[1:]:
            if key in times.get(p, {}):
                r = times[p][key] / t
                ratios[p].append((r, key))
                row.append(f"{r:.2f}")
            else:
                row.append("")
        lines.append("| " + " | ".join(row) + " |")
    for p, rs in rejected.items():
        whys = sorted(set(rs.values()))
        lines += ["", f"{p} rejected {len(rs)} shape(s), left out of its ratios ("
                  + "; ".join(f"`{w}`" for w in whys) + "): " + ", ".join(sorted(rs))]
    lines += ["", "| peer | shapes | minimum ratio (shape) | geometric mean |", "|---|---|---|---|"]
    for p, rs in ratios.items():
        if rs:
            lo = min(rs)
            gm = math.exp(sum(math.log(r) for r, _ in rs) / len(rs))
            lines.append(f"| {p} | {len(rs)} | {lo[0]:.2f} ({lo[1]}) | {gm:.2f} |")
    with open(os.path.join(RESULTS, f"{args.name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[-len(ratios) - 2:]))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(9, 4))
    for p, rs in ratios.items():
        if rs:
            ax.scatter(range(len(rs)), sorted(r for r, _ in rs), s=10, label=p)
    ax.axhline(1.0, color="gray", lw=0.8)
    ax.set_yscale("log")
    ax.set_ylabel("peer time / tensorbits time")
    ax.set_xlabel("grid cells, sorted by ratio")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, f"{args.name}.png"), dpi=100)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1,
                   help="each library's process this many times, in turn; a cell keeps each "
                        "library's fastest median")
    p.add_argument("--sizes", type=ints, default=ints("4,8,12,16,24,32,48,64,128,256"))
    p.add_argument("--queries", type=ints, default=ints("1,10,100,1000,10000"))
    p.add_argument("--db", type=ints, default=ints("1000,100000,1000000"))
    p.add_argument("--k", type=ints, default=ints("1,10,100,1000"))
    p.add_argument("--max-cdist", type=float, default=2e7)
    p.add_argument("--max-knn", type=float, default=1e8)
    p.add_argument("--peers", default=",".join(PEERS),
                   help="libraries to measure now; the others' last results (grid_PEER.json) are "
                        "reused")
    p.add_argument("--dtype", default="uint8", choices=["uint8", "uint16", "uint32", "uint64"],
                   help="the integer type of tensorbits' codes (the peers take the same bytes)")
    p.add_argument("--name", default="grid",
                   help="the results' file stem under benches/results (NAME.md, NAME.png, "
                        "NAME_PEER.json), so that a run on another CPU or subset keeps the others")
    p.add_argument("--isa", choices=list(FAISS_LEVELS),
                   help="cap tensorbits' CPU kernels (TENSORBITS_CPU) and FAISS's SIMD level")
    p.add_argument("--peer", choices=PEERS)
    p.add_argument("--json")
    args = p.parse_args()
    if args.isa:
        os.environ["TENSORBITS_CPU"] = args.isa
    if args.peer:
        return measure(args)
    times, steal, rejected = {}, {}, {}
    passed = [a for a in sys.argv[1:]]
    ticks = {}
    args.rounds = max(1, args.rounds)
    for _ in range(args.rounds):
        for peer in PEERS:
            if peer not in args.peers.split(","):
                continue
            path = os.path.join(RESULTS, f"{args.name}_{peer}.json")
            part = path + ".round"
            before = cpu_ticks()
            subprocess.run([sys.executable, __file__, *passed, "--peer", peer, "--json", part],
                           check=True)
            after = cpu_ticks()
            if before and after and after[1] > before[1]:
                s, t = ticks.get(peer, (0, 0))
                ticks[peer] = (s + after[0] - before[0], t + after[1] - before[1])
            with open(part) as f:
                got = json.load(f)
            os.remove(part)
            rejected.setdefault(peer, {}).update(got.pop("rejected", {}))
            best = times.setdefault(peer, {})
            for key, t in got.items():
                best[key] = min(t, best.get(key, t))
            # Each round's best so far is kept at once: a later round that fails loses nothing.
            with open(path, "w") as f:
                json.dump({**best, "rejected": rejected[peer]}, f)
            time.sleep(2)  # threads the last library left spinning go to sleep
    for peer in PEERS:
        path = os.path.join(RESULTS, f"{args.name}_{peer}.json")
        if peer not in times and os.path.exists(path):
            with open(path) as f:
                times[peer] = json.load(f)
            rejected[peer] = times[peer].pop("rejected", {})
    steal = {p: s / t for p, (s, t) in ticks.items() if t}
    report(args, times, steal, rejected)


if __name__ == "__main__":
    main()
