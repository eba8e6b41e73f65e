"""All-pairs Hamming distances of a few queries against a database, with the database and the
output placed at chosen offsets from a 64-byte cache line: tensorbits.hamming_cdist (into out)
against faiss.hammings on the same arrays, in one process. numpy places arrays of a few
kilobytes 16 bytes apart, so a grid cell of such a size lands on any of these offsets.

    python3 benches/cdist_alignment.py [--bytes 8] [--queries 10] [--db 1000]

Prints one line per pair of offsets: the minimum over 7 samples of 5,000 calls, per call.
"""

import argparse
import os
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def placed(nbytes, offset):
    """`nbytes` bytes starting `offset` bytes past a cache line."""
    raw = np.empty(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + nbytes]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bytes", type=int, default=8)
    p.add_argument("--queries", type=int, default=10)
    p.add_argument("--db", type=int, default=1000)
    args = p.parse_args()
    import tensorbits as tb

    try:
        import faiss
    except ImportError:
        faiss = None
    q, n, size = args.queries, args.db, args.bytes
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (q, size), dtype=np.uint8)
    codes = rng.integers(0, 256, (n, size), dtype=np.uint8)
    number = max(1, int(5e6 / (q * n)))
    print(f"{q} x {n} codes of {size} bytes, us per call (min of 7 x {number} calls)")
    for b_off in (0, 16, 32, 48):
        for out_off in (0, 16, 32, 48):
            b = placed(n * size, b_off).reshape(n, size)
            b[:] = codes
            out = placed(q * n * 4, out_off).view(np.uint32).reshape(q, n)
            t = min(timeit.repeat(lambda: tb.hamming_cdist(a, b, out=out), number=number,
                                  repeat=7)) / number
            line = f"database +{b_off:2d}, output +{out_off:2d}: tensorbits {t * 1e6:7.3f}"
            if faiss is not None:
                dis = out.view(np.int32)
                f = min(timeit.repeat(
                    lambda: faiss.hammings(faiss.swig_ptr(a), faiss.swig_ptr(b), q, n, size,
                                           faiss.swig_ptr(dis)),
                    number=number, repeat=7)) / number
                line += f"  faiss {f * 1e6:7.3f}  ratio {f / t:5.2f}"
            print(line)


if __name__ == "__main__":
    main()
