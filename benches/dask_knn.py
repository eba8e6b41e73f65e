#!/usr/bin/env python3
"""tensorbits.dask.knn on a LocalCluster beside tensorbits.knn in one process, on the same codes,
in one run: what the chunking, scheduling and merge cost.

Usage:
    pip install numpy "dask[array,distributed]"
    bash python/build_wheel.sh /tmp/wheel && pip install /tmp/wheel/tensorbits-*.whl
    python3 benches/dask_knn.py [--codes 4000000] [--bytes 32] [--queries 1000] [--k 10]
                                [--chunks 2,4,8,16,32] [--runs 3]

The cluster has one worker process per core, one thread each, and tensorbits uses one thread
in each worker (the single process uses every core). The codes are persisted on the workers
before timing, as a database read once from shared storage would be; the queries travel with
each call. Results are checked equal first. Times are medians of --runs. Writes
benches/results/dask_knn.md.
"""
import argparse
import os
import platform
import time

import numpy as np

import tensorbits as tb

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def median(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--codes", type=int, default=4_000_000)
    p.add_argument("--bytes", type=int, default=32)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--chunks", default="2,4,8,16,32")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()

    import dask.array as da
    from dask.distributed import Client, LocalCluster, wait

    import tensorbits.dask as tbd

    cores = os.cpu_count()
    rng = np.random.default_rng(61)
    db = rng.integers(0, 256, (args.codes, args.bytes), dtype=np.uint8)
    q = rng.integers(0, 256, (args.queries, args.bytes), dtype=np.uint8)
    want = tb.knn(q, db, args.k)
    single = median(lambda: tb.knn(q, db, args.k), args.runs)

    cluster = LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.run(tb.set_num_threads, 1)
    lines = [
        "# tensorbits.dask.knn beside tensorbits.knn",
        "",
        f"`python3 benches/dask_knn.py --codes {args.codes} --bytes {args.bytes} --queries "
        f"{args.queries} --k {args.k} --chunks {args.chunks} --runs {args.runs}` on "
        f"{platform.machine()}, {cores} cores, CPU kernels {tb.cpu_instruction_set()}: a "
        f"LocalCluster of {cores} worker processes (one thread each) against one process on "
        f"every core. Medians of {args.runs}; results checked equal.",
        "",
        f"Single process: {single * 1e3:.1f} ms.",
        "",
        "| chunks | dask ms | dask / single |",
        "|---:|---:|---:|",
    ]
    print(lines[4], flush=True)
    for chunks in [int(c) for c in args.chunks.split(",")]:
        rows = -(-args.codes // chunks)
        # Each chunk sent to the cluster once, as a database loaded there would be.
        parts = [client.scatter(db[r:r + rows]) for r in range(0, args.codes, rows)]
        b = da.concatenate([da.from_delayed(f, (min(rows, args.codes - r), args.bytes), db.dtype)
                            for f, r in zip(parts, range(0, args.codes, rows))])
        b = client.persist(b)
        wait(b)
        d, i = tbd.knn(q, b, args.k)
        got = client.compute([d, i], sync=True)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        t = median(lambda: client.compute([d, i], sync=True), args.runs)
        lines.append(f"| {chunks} | {t * 1e3:.1f} | {t / single:.2f}x |")
        print(lines[-1], flush=True)
        del b, parts
    client.close()
    cluster.close()
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "dask_knn.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
