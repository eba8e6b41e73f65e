"""The CPU kernels' instruction set: cpu_instruction_set, TENSORBITS_CPU, and the same bits at every
level this CPU runs."""

import os
import subprocess
import sys

import pytest

import tensorbits as tb

LEVELS = ["baseline", "avx2", "avx512bw", "avx512"]

# Knn, all-pairs distances, reductions and element-wise calls on codes of several dtypes and
# widths, past 65,536 database rows and past the parallel threshold; prints a digest of every
# result's bytes and the level that ran.
SCRIPT = r"""
import hashlib, numpy as np, tensorbits as tb
rng = np.random.default_rng(7)
h = hashlib.sha256()
for dtype, width in [(np.uint8, 8), (np.uint8, 12), (np.uint16, 8), (np.uint32, 6), (np.uint64, 2),
                     (np.uint8, 40), (np.uint64, 32)]:
    db = rng.integers(0, np.iinfo(dtype).max, size=(70_000, width), dtype=dtype, endpoint=True)
    q = rng.integers(0, np.iinfo(dtype).max, size=(9, width), dtype=dtype, endpoint=True)
    for k in (1, 10, 300):
        d, i = tb.knn(q, db, k)
        h.update(d.tobytes()); h.update(i.tobytes())
    d, i = tb.knn(q[:1], db, 1000)
    h.update(d.tobytes()); h.update(i.tobytes())
    h.update(tb.hamming_cdist(q, db).tobytes())
    h.update(tb.bitwise_count_sum(db, axis=-1).tobytes())
x = rng.integers(0, 2**32, size=1 << 19, dtype=np.uint32)
h.update(tb.bitwise_xor(x, x[::-1]).tobytes())
h.update(tb.bitwise_count(x).tobytes())
h.update(tb.bitwise_xor_reduce(x.reshape(512, -1), axis=1).tobytes())
print(tb.cpu_instruction_set(), h.hexdigest())
"""


def _run(level):
    env = dict(os.environ)
    env.pop("TENSORBITS_CPU", None)
    if level is not None:
        env["TENSORBITS_CPU"] = level
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(), r.stderr


def test_the_level_is_named():
    assert tb.cpu_instruction_set() in LEVELS + ["portable"]


def test_threadpoolctl_lists_the_level():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "tensorbits"]
    assert len(info) == 1 and info[0]["architecture"] == tb.cpu_instruction_set()


def test_every_level_gives_the_same_bits():
    (best, reference), quiet = _run(None)
    assert quiet == ""
    if best == "portable":
        return
    for level in LEVELS[: LEVELS.index(best)]:
        (ran, digest), err = _run(level)
        assert (ran, err) == (level, "")
        assert digest == reference, level
    # A value that is no level, or a level above this CPU's, runs at this CPU's and says why.
    (ran, digest), err = _run("avx-512")
    assert (ran, digest) == (best, reference)
    assert err == (
        'tensorbits: TENSORBITS_CPU="avx-512" is not one of baseline, avx2, avx512bw, avx512; '
        f"the CPU kernels use {best}, the most this CPU runs\n"
    )
    if best != "avx512":
        (ran, _), err = _run("avx512")
        assert ran == best and "asks for more than this CPU runs" in err
