"""range_search against the full matrix of values from unpacked bits: FAISS's layout (lims,
values, indices), distances below a radius, similarities at or above a threshold, exact
thresholds, valid bits, the inputs numpy users have (strided, big-endian, int8), and the errors."""
import numpy as np
import pytest

import tensorbits as tb


def _bits(codes, bits, bitorder):
    u = np.unpackbits(codes.view(np.uint8).reshape(codes.shape[0], -1), axis=-1, bitorder=bitorder)
    return u[:, :bits] if bits is not None else u


def _reference(a, b, threshold, op, largest, bits=None, bitorder="big"):
    """(lims, values, indices) from every value, computed from the unpacked bits."""
    ua, ub = _bits(a, bits, bitorder), _bits(b, bits, bitorder)
    ham = (ua[:, None, :] != ub[None, :, :]).sum(-1).astype(np.int64)
    width = ua.shape[1]
    values = width - 2 * ham if op == "binary_dot" else ham
    lims, vals, idx = [0], [], []
    for row in values:
        hit = row >= np.ceil(threshold) if largest else row < np.ceil(threshold)
        if np.isinf(threshold):
            hit = np.full(row.shape, (threshold > 0) != largest)
        js = np.nonzero(hit)[0]
        vals.extend(row[js])
        idx.extend(js)
        lims.append(len(idx))
    return np.array(lims), np.array(vals, dtype=np.int64), np.array(idx, dtype=np.int64)


def _check(a, b, threshold, op="hamming_cdist", largest=None, **kw):
    lims, values, indices = tb.range_search(a, b, threshold, op=op, largest=largest, **kw)
    rank_largest = largest if largest is not None else op == "binary_dot"
    want = _reference(a, b, threshold, op, rank_largest, kw.get("bits"), kw.get("bitorder", "big"))
    assert lims.dtype == np.int64 and indices.dtype == np.int64
    assert lims.shape == (a.shape[0] + 1,)
    np.testing.assert_array_equal(lims, want[0])
    np.testing.assert_array_equal(values.astype(np.int64), want[1])
    np.testing.assert_array_equal(indices, want[2])
    return lims, values, indices


@pytest.mark.parametrize("m,n,k", [(4, 300, 1), (9, 2000, 8), (1, 50_000, 16), (30, 700, 40)])
def test_hamming_radius_as_faiss_takes_it(m, n, k):
    rng = np.random.default_rng(m * n + k)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    # Near duplicates of the queries among random codes: hits at small radii.
    b = rng.integers(0, 256, (n, k), dtype=np.uint8)
    b[: m * 3] = np.repeat(a, 3, axis=0) ^ (rng.random((m * 3, k)) < 0.02).astype(np.uint8)
    bits = 8 * k
    for t in [0, 1, 2.5, bits / 4, bits / 2 - 0.5, bits, bits + 1, -1, np.inf, -np.inf]:
        _, values, _ = _check(a, b, t)
        assert values.dtype == np.uint32


def test_similarities_rank_largest_first():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (5, 16), dtype=np.uint8)
    b = rng.integers(0, 256, (3000, 16), dtype=np.uint8)
    for t in [-128, -3.5, 0, 16, 40, 128, 129]:
        _, values, _ = _check(a, b, t, op="binary_dot")
        assert values.dtype == np.int32
        # Hamming asked for the farthest codes.
        _check(a, b, abs(t), largest=True)
    # int8 codes (sentence-transformers' binary precision) count their stored bits.
    _check(a.view(np.int8), b.view(np.int8), 10, op="binary_dot")


@pytest.mark.parametrize("bitorder", ["big", "little"])
def test_valid_bits_count_only_the_codes_bits(bitorder):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (3, 5), dtype=np.uint8)
    b = rng.integers(0, 256, (900, 5), dtype=np.uint8)
    for t in [3, 10, 19]:
        _check(a, b, t, bits=37, bitorder=bitorder)


def test_arrays_as_numpy_users_have_them():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**16, (40, 12), dtype=np.uint16)
    # Strided rows, a transposed copy's view and big-endian codes read as their values.
    a, b = base[:6:2, :4], base[::3, 4:8]
    want = _check(np.ascontiguousarray(a), np.ascontiguousarray(b), 25)
    got = tb.range_search(a, b, 25)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)
    got = tb.range_search(a.astype(">u2"), b.astype(">u2"), 25)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)
    # A list beside an array takes the array's dtype, as other functions take them.
    lims, values, indices = tb.range_search(np.array([[3]], np.uint8), [[0], [7], [255]], 3)
    assert (lims.tolist(), values.tolist(), indices.tolist()) == ([0, 2], [2, 1], [0, 1])


def test_no_rows_and_no_hits():
    a = np.zeros((0, 8), np.uint8)
    lims, values, indices = tb.range_search(a, np.zeros((5, 8), np.uint8), 3)
    assert lims.tolist() == [0] and values.size == 0 and indices.size == 0
    lims, values, indices = tb.range_search(np.zeros((2, 8), np.uint8), np.zeros((0, 8), np.uint8), 3)
    assert lims.tolist() == [0, 0, 0] and values.size == 0


def test_values_of_another_dtype():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, (2, 8), dtype=np.uint8)
    b = rng.integers(0, 256, (500, 8), dtype=np.uint8)
    _, v16, i16 = tb.range_search(a, b, 30, dtype=np.uint16)
    _, v32, i32 = tb.range_search(a, b, 30)
    assert v16.dtype == np.uint16
    np.testing.assert_array_equal(v16, v32)
    np.testing.assert_array_equal(i16, i32)


def test_bad_calls_raise_typed_errors():
    a = np.zeros((2, 8), np.uint8)
    b = np.zeros((5, 8), np.uint8)
    with pytest.raises(ValueError, match="NaN"):
        tb.range_search(a, b, float("nan"))
    with pytest.raises(TypeError, match="threshold"):
        tb.range_search(a, b, "3")
    with pytest.raises(TypeError, match="threshold"):
        tb.range_search(a, b, True)
    with pytest.raises(ValueError, match=r"\[N, K\]"):
        tb.range_search(a[None], b, 3)
    with pytest.raises(ValueError):
        tb.range_search(a, np.zeros((5, 4), np.uint8), 3)
    with pytest.raises(TypeError, match="packbits"):
        tb.range_search(a.astype(np.float32), b.astype(np.float32), 3)
    with pytest.raises(TypeError):
        tb.range_search(a, b.astype(np.uint16), 3)
    with pytest.raises(ValueError):
        tb.range_search(a, b, 3, op="no_such_op")
    with pytest.raises(ValueError, match="range_search need distances"):
        tb.range_search(a, b, 3, op="bitwise_xor")
    with pytest.raises(TypeError, match="uint32"):
        tb.range_search(a, b, 3, dtype=np.int8)


def test_torch_tensors_come_back_as_tensors(torch):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, (3, 8), dtype=np.uint8)
    b = rng.integers(0, 256, (400, 8), dtype=np.uint8)
    want = tb.range_search(a, b, 28)
    got = tb.range_search(torch.from_numpy(a), torch.from_numpy(b), 28)
    for x, y in zip(got, want):
        assert isinstance(x, torch.Tensor)
        np.testing.assert_array_equal(x.numpy(), y)


def test_the_gpu_finds_the_cpus_hits(gpu):
    rng = np.random.default_rng(13)
    a = rng.integers(0, 256, (7, 8), dtype=np.uint8)
    b = rng.integers(0, 256, (5000, 8), dtype=np.uint8)
    for t, kw in [(25, {}), (40, {"largest": True}), (-2.5, {"op": "binary_dot"}),
                  (30, {"dtype": np.uint16}), (np.inf, {}), (12, {"bits": 50, "bitorder": "little"})]:
        want = tb.range_search(a, b, t, device="cpu", **kw)
        got = tb.range_search(a, b, t, device="gpu", **kw)
        for x, y in zip(got, want):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="device"):
        tb.range_search(a, b, 3, device="tpu")


def test_hamming_radius_equals_faiss_range_search():
    """FAISS, a peer for tests (CI installs it: TENSORBITS_REQUIRE_FAISS=1)."""
    import os

    try:
        import faiss
    except ImportError:
        if os.environ.get("TENSORBITS_REQUIRE_FAISS") == "1":
            pytest.fail("TENSORBITS_REQUIRE_FAISS=1 but faiss is not installed")
        pytest.skip("faiss is not installed")
    rng = np.random.default_rng(17)
    for m, n, k in [(5, 10_000, 8), (40, 20_000, 32), (1, 50_000, 16), (3, 1000, 4), (7, 3000, 128)]:
        a = rng.integers(0, 256, (m, k), dtype=np.uint8)
        b = rng.integers(0, 256, (n, k), dtype=np.uint8)
        b[:m] = a ^ (rng.random((m, k)) < 0.05).astype(np.uint8)
        index = faiss.IndexBinaryFlat(8 * k)
        index.add(b)
        for radius in [0, 1, 2 * k, 4 * k - k // 2, 4 * k, 8 * k + 1]:
            fl, fd, fi = index.range_search(a, radius)
            lims, values, indices = tb.range_search(a, b, radius)
            np.testing.assert_array_equal(lims, fl.astype(np.int64))
            np.testing.assert_array_equal(indices, fi)
            np.testing.assert_array_equal(values.astype(np.int64), fd.astype(np.int64))
