"""A forked child (multiprocessing's "fork" start method, DataLoader workers) keeps working after
its parent used the thread pool and the GPU, as it does with numpy, FAISS and PyTorch."""

import os
import time

import numpy as np
import pytest

import tensorbits as tb

from conftest import has_gpu


def _in_child(work, timeout=60.0):
    """Runs `work()` in a forked child; its exit status, or a failure if it hangs."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if work() else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail(f"the forked child hung for {timeout:.0f} s")


def _large_calls(device):
    """Calls past the size at which work is spread over threads, checked against numpy."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, size=1 << 20, dtype=np.uint32)  # 4 MiB
    y = rng.integers(0, 2**32, size=1 << 20, dtype=np.uint32)
    codes = rng.integers(0, 256, size=(20000, 64), dtype=np.uint8)
    ok = np.array_equal(tb.bitwise_xor(x, y, device=device), x ^ y)
    ok &= int(tb.bitwise_xor_reduce(x, device=device)) == int(np.bitwise_xor.reduce(x))
    d = tb.hamming_cdist(codes[:40], codes, device=device)
    ok &= bool(d[np.arange(40), np.arange(40)].max() == 0)
    return bool(ok)


@pytest.fixture
def threads():
    before = tb.get_num_threads()
    tb.set_num_threads(4)  # parallel paths even on a one-core machine
    yield
    tb.set_num_threads(0)
    assert tb.get_num_threads() == before


def test_a_forked_child_runs_large_cpu_calls(threads):
    assert _large_calls("cpu")
    assert _in_child(lambda: _large_calls("cpu")) == 0
    # The parent's pool still works, and a grandchild's.
    assert _large_calls("cpu")
    assert _in_child(lambda: _in_child(lambda: _large_calls("cpu")) == 0) == 0


@pytest.mark.skipif(not has_gpu(), reason="no GPU")
def test_a_forked_child_runs_gpu_calls(threads):
    assert _large_calls("gpu")
    assert _in_child(lambda: _large_calls("gpu") and _large_calls("cpu")) == 0
    assert _large_calls("gpu")


def test_multiprocessing_fork_pool(threads):
    import multiprocessing

    _large_calls("cpu")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        result = pool.map_async(_large_calls, ["cpu", "cpu"])
        assert result.get(timeout=60) == [True, True]
