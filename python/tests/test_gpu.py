"""device="gpu" gives the CPU's bits (lavapipe in CI)."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import ALL_TYPES, INT_TYPES, bits, random_array


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_elementwise_on_gpu(gpu, rng, dtype):
    a = random_array(rng, (7, 33), dtype)
    b = random_array(rng, (33,), dtype)
    for op in [tb.bitwise_and, tb.bitwise_or, tb.bitwise_xor]:
        np.testing.assert_array_equal(bits(op(a, b, device=gpu)), bits(op(a, b)))
        np.testing.assert_array_equal(bits(op(a[::-1, ::2], b[::2], device=gpu)),
                                      bits(op(a[::-1, ::2], b[::2])))
    np.testing.assert_array_equal(bits(tb.bitwise_not(a.T, device=gpu)), bits(tb.bitwise_not(a.T)))
    if dtype != "bool":
        np.testing.assert_array_equal(tb.bitwise_count(a, device=gpu), tb.bitwise_count(a))


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_shifts_on_gpu(gpu, rng, dtype):
    width = np.dtype(dtype).itemsize * 8
    a = random_array(rng, (width + 8, 5), dtype)
    c = (np.arange(-4, width + 4) if dtype[0] == "i" else np.arange(width + 8)).astype(dtype)[:, None]
    for op in [tb.left_shift, tb.right_shift]:
        np.testing.assert_array_equal(op(a, c, device=gpu), op(a, c))


def test_out_on_gpu(gpu, rng):
    a = random_array(rng, (4, 6), "uint16")
    big = random_array(rng, (4, 12), "uint16")
    before = big.copy()
    tb.bitwise_not(a, out=big[:, 1::2], device=gpu)
    np.testing.assert_array_equal(big[:, 1::2], ~a)
    np.testing.assert_array_equal(big[:, ::2], before[:, ::2])
    x = a.copy()
    tb.bitwise_xor(x, a[::-1], out=x, device=gpu)
    np.testing.assert_array_equal(x, a ^ a[::-1])


def test_reductions_and_knn_on_gpu(gpu, rng):
    x = random_array(rng, (5, 6, 7), "uint32")
    for op in [tb.bitwise_and_reduce, tb.bitwise_or_reduce, tb.bitwise_xor_reduce, tb.bitwise_count_sum]:
        for axis in [None, 0, (1, 2), -1]:
            np.testing.assert_array_equal(op(x, axis=axis, device=gpu), op(x, axis=axis))
    a = random_array(rng, (9, 8), "uint8") & 7
    b = random_array(rng, (200, 8), "uint8") & 7
    np.testing.assert_array_equal(tb.hamming_distance(a, b[:9], device=gpu), tb.hamming_distance(a, b[:9]))
    np.testing.assert_array_equal(tb.hamming_cdist(a, b, device=gpu), tb.hamming_cdist(a, b))
    dg, ig = tb.knn(a, b, 10, device=gpu)
    dc, ic = tb.knn(a, b, 10)
    np.testing.assert_array_equal(dg, dc)
    np.testing.assert_array_equal(ig, ic)


def test_gpu_errors_are_the_library_s(gpu):
    with pytest.raises(ValueError):
        tb.bitwise_xor(np.zeros(3, np.uint8), np.zeros(4, np.uint8), device=gpu)
    with pytest.raises(TypeError):
        tb.left_shift(np.zeros(3, np.float32), np.zeros(3, np.float32), device=gpu)


def test_a_broadcast_input_is_not_materialized_on_the_gpu(gpu):
    """One byte broadcast to 512 MiB: the host holds the result, the staging part and (where the
    GPU is the CPU, as lavapipe) the device's result buffer, not a copy of the input or a second
    copy of the result. Measured in a fresh process, whose peak is its own."""
    import subprocess
    import sys

    child = (
        "import resource, numpy as np, tensorbits as tb\n"
        "x = np.broadcast_to(np.uint8(1), (512 << 20,))\n"
        "tb.bitwise_not(x[:64], device='gpu')\n"  # the device made first: its own memory apart
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "y = tb.bitwise_not(x, device='gpu')\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "assert y.shape == x.shape and y[0] == 254 and y[-1] == 254\n"
        "print((after - before) >> 10)\n"
    )
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    grown = int(r.stdout.split()[-1])
    # The result (512 MiB), the device's copy of it on a CPU device (512 MiB) and the staging
    # part (64 MiB); reading back through a full-size staging buffer and a vector took 1.6 GiB.
    assert grown <= 1250, f"the peak grew by {grown} MiB for a 512 MiB result"
