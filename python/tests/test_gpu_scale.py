"""device="gpu" at the sizes users have gives the CPU's bytes: knn over a million codes, reductions
over millions of elements and 70,000 rows, more than 128 MiB of codes, a Hamming row of 4M words,
broadcast (stride-0) inputs, similarities past 128 MiB, a self-overlapping out= refused as on the CPU, and a device failure
that leaves out= untouched. Each case is past a limit the GPU meets (lavapipe
ends an invocation after 65,535 loop iterations)."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import has_gpu


@pytest.fixture(scope="module")
def big_rng():
    return np.random.default_rng(2026)


@pytest.mark.parametrize("code_bytes", [32, 8])
def test_knn_over_a_million_codes(gpu, big_rng, code_bytes):
    db = big_rng.integers(0, 256, size=(1_000_000, code_bytes), dtype=np.uint8)
    q = big_rng.integers(0, 256, size=(3, code_bytes), dtype=np.uint8)
    q[0] = db[123_457] ^ np.uint8(4)
    for k in [1, 10, 17, 100]:
        dg, ig = tb.knn(q, db, k, device=gpu)
        dc, ic = tb.knn(q, db, k)
        np.testing.assert_array_equal(dg, dc)
        np.testing.assert_array_equal(ig, ic)
    assert ig[0, 0] == 123_457 or dg[0, 0] < 1


def test_knn_over_more_than_128_mib_of_codes(gpu, big_rng):
    db = big_rng.integers(0, 256, size=((130 << 20) // 32, 32), dtype=np.uint8)
    q = big_rng.integers(0, 256, size=(2, 32), dtype=np.uint8)
    dg, ig = tb.knn(q, db, 5, device=gpu)
    dc, ic = tb.knn(q, db, 5)
    np.testing.assert_array_equal(dg, dc)
    np.testing.assert_array_equal(ig, ic)
    # Range search over the same codes: its tiles' count and fill passes, past 65,535 workgroups
    # a dispatch, with few hits and with about half of all pairs.
    q[1] = db[4_000_001]
    for radius in (100, 128):
        got, want = tb.range_search(q, db, radius, device=gpu), tb.range_search(q, db, radius)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)
    assert 4_000_001 in got[2][got[0][1]:got[0][2]]


def test_similarity_over_more_than_128_mib_of_fingerprints(gpu, big_rng):
    """Ratio ops count on the device and divide on the host: all pairs, knn and range search
    past 128 MiB of codes, and rows of 2^27 bits (far past 65,535 iterations' worth each)."""
    db = big_rng.integers(0, 256, size=((130 << 20) // 256, 256), dtype=np.uint8)
    q = big_rng.integers(0, 256, size=(2, 256), dtype=np.uint8)
    assert tb.tanimoto(q, db, device=gpu).tobytes() == tb.tanimoto(q, db).tobytes()
    for x, y in zip(tb.knn(q, db, 5, op="tanimoto", device=gpu), tb.knn(q, db, 5, op="tanimoto")):
        assert x.tobytes() == y.tobytes()
    for x, y in zip(tb.range_search(q, db, 0.36, op="dice", device=gpu),
                    tb.range_search(q, db, 0.36, op="dice")):
        np.testing.assert_array_equal(x, y)
    long = big_rng.integers(0, 256, size=(3, 1 << 24), dtype=np.uint8)
    got = tb.tanimoto(long[:1], long, dtype=np.float64, device=gpu)
    assert got.tobytes() == tb.tanimoto(long[:1], long, dtype=np.float64).tobytes()
    assert got[0, 0] == 1.0


def test_knn_of_all_ties(gpu):
    db = np.full((40_000, 8), 0x5A, np.uint8)
    q = np.zeros((2, 8), np.uint8)
    k = 20_000
    dg, ig = tb.knn(q, db, k, device=gpu)
    np.testing.assert_array_equal(ig, np.broadcast_to(np.arange(k), (2, k)))
    np.testing.assert_array_equal(dg, np.full((2, k), 32))


def test_reductions_over_five_million_elements(gpu, big_rng):
    x = big_rng.integers(0, 256, size=5_000_000, dtype=np.uint8)
    assert tb.bitwise_count_sum(x, device=gpu) == tb.bitwise_count_sum(x)
    assert tb.bitwise_count_sum(x, device=gpu) == np.bitwise_count(x).sum()
    x2 = x.reshape(2, -1)
    for op in [tb.bitwise_and_reduce, tb.bitwise_or_reduce, tb.bitwise_xor_reduce, tb.bitwise_count_sum]:
        for axis in [None, -1]:
            np.testing.assert_array_equal(op(x2, axis=axis, device=gpu), op(x2, axis=axis))


def test_reductions_over_seventy_thousand_rows(gpu, big_rng):
    x = big_rng.integers(0, 256, size=(70_000, 300), dtype=np.uint8)
    np.testing.assert_array_equal(tb.bitwise_xor_reduce(x, axis=0, device=gpu),
                                  np.bitwise_xor.reduce(x, axis=0))
    for op in [tb.bitwise_and_reduce, tb.bitwise_or_reduce, tb.bitwise_count_sum]:
        np.testing.assert_array_equal(op(x, axis=0, device=gpu), op(x, axis=0))


def test_hamming_over_a_row_of_four_million_words(gpu, big_rng):
    a = big_rng.integers(0, 2**32, size=4 << 20, dtype=np.uint32)
    b = big_rng.integers(0, 2**32, size=4 << 20, dtype=np.uint32)
    assert tb.hamming_distance(a, b, device=gpu) == tb.hamming_distance(a, b)
    assert tb.hamming_distance(a, b, device=gpu) == np.bitwise_count(a ^ b).sum()


def test_broadcast_inputs_on_gpu(gpu, big_rng):
    a = np.broadcast_to(np.uint32(0xF0F0), (4,))
    b = big_rng.integers(0, 2**32, size=4, dtype=np.uint32)
    np.testing.assert_array_equal(tb.bitwise_and(a, b, device=gpu), a & b)
    rows = np.broadcast_to(big_rng.integers(0, 256, size=(1, 16), dtype=np.uint8), (50, 16))
    np.testing.assert_array_equal(tb.bitwise_xor_reduce(rows, axis=0, device=gpu),
                                  np.bitwise_xor.reduce(rows, axis=0))
    db = big_rng.integers(0, 256, size=(300, 16), dtype=np.uint8)
    dg, ig = tb.knn(rows[:3], db, 5, device=gpu)
    dc, ic = tb.knn(rows[:3], db, 5)
    np.testing.assert_array_equal(dg, dc)
    np.testing.assert_array_equal(ig, ic)


def test_self_overlapping_out_is_refused_on_gpu_as_on_cpu():
    a = np.arange(4, dtype=np.uint8)
    base = np.zeros(4, np.uint8)
    out = np.lib.stride_tricks.as_strided(base, shape=(4,), strides=(0,))
    with pytest.raises(ValueError) as cpu:
        tb.bitwise_not(a, out=out)
    if has_gpu():
        with pytest.raises(ValueError) as gpu:
            tb.bitwise_not(a, out=out, device="gpu")
        assert str(gpu.value) == str(cpu.value)
    np.testing.assert_array_equal(base, 0)



def test_a_gpu_failure_leaves_out_untouched(gpu):
    # 3 GiB of output, past lavapipe's max_buffer_size (2 GiB); np.zeros maps zero pages lazily
    # and the input is one broadcast byte, so the host holds only what is touched here.
    n = 3 << 30
    x = np.broadcast_to(np.uint8(1), (n,))
    out = np.zeros(n, np.uint8)
    out[:4] = 7
    out[-4:] = 7
    with pytest.raises(RuntimeError, match="max_buffer_size"):
        tb.bitwise_not(x, out=out, device=gpu)
    assert (out[:4] == 7).all() and (out[-4:] == 7).all()
    assert not out[4:4096].any() and not out[-4096:-4].any()
