"""The CPU thread pool's size: set_num_threads, get_num_threads, and threadpoolctl."""

import numpy as np
import pytest

import tensorbits as tb


@pytest.fixture
def restore():
    yield
    tb.set_num_threads(0)


def test_set_and_get_num_threads(restore):
    default = tb.get_num_threads()
    assert default >= 1
    for n in (1, min(3, default)):
        tb.set_num_threads(n)
        assert tb.get_num_threads() == n
        # Large calls still give the same bits on any number of threads.
        x = np.arange(1 << 20, dtype=np.uint32)
        assert np.array_equal(tb.bitwise_xor(x, x[::-1]), x ^ x[::-1])
        assert int(tb.bitwise_count_sum(x)) == int(np.bitwise_count(x).sum(dtype=np.uint64))
    tb.set_num_threads(0)
    assert tb.get_num_threads() == default


def test_bad_thread_counts(restore):
    with pytest.raises(ValueError, match="0 or more"):
        tb.set_num_threads(-1)
    with pytest.raises(TypeError):
        tb.set_num_threads(2.5)


def test_threadpoolctl_controls_the_pool(restore):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    info = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "tensorbits"]
    assert len(info) == 1 and info[0]["version"] == tb.__version__
    assert info[0]["num_threads"] == tb.get_num_threads()
    before = tb.get_num_threads()
    with threadpoolctl.threadpool_limits(limits=1, user_api="tensorbits"):
        assert tb.get_num_threads() == 1
    assert tb.get_num_threads() == before


def test_thread_counts_are_bounded_by_the_cpus(restore, monkeypatch):
    """Thousands of threads on a few CPUs stall the machine: a request past the CPUs the process
    may use warns and gets that many."""
    monkeypatch.delenv("RAYON_NUM_THREADS", raising=False)
    tb.set_num_threads(0)
    cpus = tb.get_num_threads()
    for n in (cpus + 1, 3000, 100_000, 2**70):
        with pytest.warns(RuntimeWarning, match="CPUs"):
            tb.set_num_threads(n)
        assert tb.get_num_threads() == cpus
    x = np.arange(1 << 20, dtype=np.uint32)
    assert np.array_equal(tb.bitwise_not(x), ~x)
