"""One grid cell, tensorbits and FAISS alternating in one process.

On a shared virtual machine the host's load moves whole stretches of a run by up to 2x, which a
grid that runs each library in its own process minutes apart reads as a ratio. Here the two
libraries' batches alternate, each call timed in batches of about 2 ms, and the best batch of
each is kept: both see the same host.

    python3 benches/alternate.py cdist 12 1 1000
    python3 benches/alternate.py knn 64 10 100000 10 --rounds 200

prints `cdist 12 1x1000: tensorbits 1.91 us  faiss 2.88 us  ratio 1.51` (the ratio is FAISS's
time over tensorbits': above 1, tensorbits is faster).
"""

import argparse
import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grid  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", choices=["cdist", "knn"])
    p.add_argument("bytes", type=int)
    p.add_argument("queries", type=int)
    p.add_argument("database", type=int)
    p.add_argument("k", type=int, nargs="?", default=10)
    p.add_argument("--rounds", type=int, default=100)
    args = p.parse_args()
    queries, base = grid.data(args.bytes, args.queries, args.database)
    fns = {peer: grid.runner(peer, args.op, queries, base, args.k) for peer in ("tensorbits", "faiss")}
    for f in fns.values():
        f()
    once = min(timeit.timeit(f, number=1) for f in fns.values())
    number = max(1, int(0.002 / max(once, 1e-7)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(args.rounds):
        for peer, f in fns.items():
            best[peer] = min(best[peer], timeit.timeit(f, number=number) / number)
    shape = f"{args.op} {args.bytes} {args.queries}x{args.database}" + (f" k={args.k}" if args.op == "knn" else "")
    tb, fa = best["tensorbits"], best["faiss"]
    print(f"{shape}: tensorbits {tb * 1e6:.2f} us  faiss {fa * 1e6:.2f} us  ratio {fa / tb:.2f}")


if __name__ == "__main__":
    main()
