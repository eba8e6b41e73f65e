"""Reductions, Hamming distances and knn against numpy."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import INT_TYPES, bits, random_array

REDUCTIONS = [
    (tb.bitwise_and_reduce, np.bitwise_and, np.logical_and),
    (tb.bitwise_or_reduce, np.bitwise_or, np.logical_or),
    (tb.bitwise_xor_reduce, np.bitwise_xor, np.logical_xor),
]


def np_reduce(ufunc, logical, x, axis, keepdims):
    if x.dtype == bool:
        return logical.reduce(x, axis=axis, keepdims=keepdims)
    return ufunc.reduce(bits(x), axis=axis, keepdims=keepdims).view(x.dtype)


@pytest.mark.parametrize("dtype", INT_TYPES + ["bool", "float32"])
@pytest.mark.parametrize("ops", REDUCTIONS, ids=["and", "or", "xor"])
def test_reductions(rng, dtype, ops):
    ours, ufunc, logical = ops
    x = random_array(rng, (4, 5, 6), dtype)
    for axis in [None, 0, 1, 2, -1, (0, 2), (2, 0), (-3, -2)]:
        for keepdims in [False, True]:
            for v in [x, x[::-1, :, ::2], x.transpose(2, 0, 1)]:
                got = ours(v, axis=axis, keepdims=keepdims)
                want = np_reduce(ufunc, logical, v, axis, keepdims)
                assert got.shape == want.shape, (axis, keepdims)
                np.testing.assert_array_equal(bits(got), bits(want))


def test_default_axes_and_empty_reductions():
    x = np.arange(24, dtype=np.uint16).reshape(2, 3, 4)
    assert tb.bitwise_xor_reduce(x).shape == ()  # every axis by default
    assert tb.bitwise_xor_reduce(x) == np.bitwise_xor.reduce(x, axis=None)
    e = np.zeros((3, 0), np.uint8)
    assert tb.bitwise_and_reduce(e, axis=1).tolist() == [255, 255, 255]
    assert tb.bitwise_or_reduce(e, axis=1).tolist() == [0, 0, 0]
    assert tb.bitwise_xor_reduce(e, axis=1).tolist() == [0, 0, 0]
    assert tb.bitwise_count_sum(e, axis=1).tolist() == [0, 0, 0]
    assert tb.bitwise_and_reduce(np.zeros(0, bool)).tolist() is True


@pytest.mark.parametrize("dtype", INT_TYPES + ["float64"])
def test_count_sum(rng, dtype):
    x = random_array(rng, (3, 50), dtype)
    for axis in [None, 0, 1]:
        got = tb.bitwise_count_sum(x, axis=axis)
        want = np.bitwise_count(bits(x)).astype(np.uint64).sum(axis=axis)
        np.testing.assert_array_equal(got, want)


def test_sum_overflow_is_refused_before_running():
    x = np.zeros((2, 100), np.uint8)
    with pytest.raises(ValueError, match="800"):
        tb.bitwise_count_sum(x, axis=1, dtype="uint8")
    assert tb.bitwise_count_sum(x[:, :31], axis=1, dtype="uint8").tolist() == [0, 0]


def test_axis_errors():
    x = np.zeros((2, 3), np.uint8)
    with pytest.raises(ValueError, match="out of range|axis"):
        tb.bitwise_xor_reduce(x, axis=2)
    with pytest.raises(ValueError, match="once"):
        tb.bitwise_xor_reduce(x, axis=(0, -2))
    with pytest.raises(TypeError):
        tb.bitwise_xor_reduce(x, axis=1.5)


@pytest.mark.parametrize("dtype", ["uint8", "uint64", "int16", "int64"])
def test_hamming_distance(rng, dtype):
    a, b = random_array(rng, (7, 40), dtype), random_array(rng, (7, 40), dtype)
    want = np.bitwise_count(bits(a) ^ bits(b)).astype(np.uint64)
    np.testing.assert_array_equal(tb.hamming_distance(a, b), want.sum(-1))
    np.testing.assert_array_equal(tb.hamming_distance(a, b, axis=0), want.sum(0))
    np.testing.assert_array_equal(tb.hamming_distance(a, b[0], axis=None), want_b0(a, b))
    np.testing.assert_array_equal(
        tb.hamming_distance(a[::-1], b[:, ::-1], keepdims=True),
        np.bitwise_count(bits(a[::-1]) ^ bits(b[:, ::-1])).astype(np.uint64).sum(-1, keepdims=True),
    )


def want_b0(a, b):
    return np.bitwise_count(bits(a) ^ bits(b[0])).astype(np.uint64).sum()


def np_cdist(a, b):
    x = bits(a)[..., :, None, :] ^ bits(b)[..., None, :, :]
    return np.bitwise_count(x).astype(np.uint64).sum(-1)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_hamming_cdist(rng, dtype):
    for sa, sb in [((9, 4), (13, 4)), ((2, 5, 3), (7, 3)), ((3, 1, 4, 6), (2, 5, 6)), ((0, 4), (3, 4)),
                   ((4, 0), (3, 0))]:
        a, b = random_array(rng, sa, dtype), random_array(rng, sb, dtype)
        got = tb.hamming_cdist(a, b)
        np.testing.assert_array_equal(got, np_cdist(a, b))
    a, b = random_array(rng, (6, 5), dtype), random_array(rng, (8, 5), dtype)
    for va, vb in [(a[::-1], b), (a, b[::-1]), (a[:, ::-1], b[:, ::-1]), (a[:, ::-1], b), (a.T.copy().T, b[::2])]:
        np.testing.assert_array_equal(tb.hamming_cdist(va, vb), np_cdist(va, vb))


def np_knn(a, b, k):
    d = np_cdist(a, b)
    idx = np.argsort(d, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(d, idx, -1), idx


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint64"])
def test_knn(rng, dtype):
    # Few distinct codes, so many ties: broken by the lower index.
    a = random_array(rng, (20, 3), dtype) & np.array(3, dtype)
    b = random_array(rng, (300, 3), dtype) & np.array(3, dtype)
    for k in [0, 1, 7, 300]:
        d, i = tb.knn(a, b, k)
        wd, wi = np_knn(a, b, k)
        assert i.dtype == np.int64 and d.shape == (20, k)
        np.testing.assert_array_equal(d, wd)
        np.testing.assert_array_equal(i, wi)
    for va, vb in [(a[::-1], b), (a, b[::-1]), (a[:, ::-1], b[:, ::-1])]:
        d, i = tb.knn(va, vb, 5)
        wd, wi = np_knn(va, vb, 5)
        np.testing.assert_array_equal(d, wd)
        np.testing.assert_array_equal(i, wi)
    with pytest.raises(ValueError, match="k"):
        tb.knn(a, b, 301)
    with pytest.raises(TypeError, match="np.packbits"):
        tb.hamming_cdist(a[:, :1].astype("f4"), b[:, :1].astype("f4"))
    with pytest.raises(ValueError):
        tb.knn(a, b, -1)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int32", "uint64"])
def test_plain_matrices_take_one_call_with_the_general_paths_results(rng, dtype):
    """Plain C-contiguous matrices go through one Rust call; views, batches and GPU calls take the
    general path. Both give the reference's results and the same errors."""
    for m, n, kdim in [(1, 1, 1), (1, 1000, 2), (3, 517, 4), (70, 1016, 1), (9, 20005, 3)]:
        a, b = random_array(rng, (m, kdim), dtype), random_array(rng, (n, kdim), dtype)
        want = np_cdist(a, b)
        got = tb.hamming_cdist(a, b)
        assert got.dtype == np.uint32 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(tb.hamming_cdist(a, b, dtype="uint64"), want)
        out = np.full((m, n), 7, np.uint16)
        assert tb.hamming_cdist(a, b, out=out) is out
        np.testing.assert_array_equal(out, want)
        # A view of the same values: the general path.
        np.testing.assert_array_equal(tb.hamming_cdist(a[:, ::-1], b[:, ::-1]), want)
        k = min(n, 5)
        d, i = tb.knn(a, b, k)
        wd, wi = np_knn(a, b, k)
        assert d.dtype == np.uint32 and i.dtype == np.int64
        np.testing.assert_array_equal(d, wd)
        np.testing.assert_array_equal(i, wi)
        d16, i16 = tb.knn(a, b, k, dtype="uint16")
        assert d16.dtype == np.uint16
        np.testing.assert_array_equal(d16, wd)
        np.testing.assert_array_equal(i16, wi)
    a, b = random_array(rng, (4, 3), dtype), random_array(rng, (6, 3), dtype)
    # Errors: the general path's, whichever path the call starts on.
    with pytest.raises(ValueError, match="K: 2 vs 3"):
        tb.hamming_cdist(a, b[:, :2].copy())
    with pytest.raises(ValueError, match="shape"):
        tb.hamming_cdist(a, b, out=np.empty((4, 5), np.uint32))
    with pytest.raises(TypeError, match="share one dtype"):
        tb.hamming_cdist(a, b.astype("int16" if dtype != "int16" else "int8"))
    with pytest.raises(TypeError, match="np.packbits"):
        tb.knn(a.astype("f8"), b.astype("f8"), 1)
    with pytest.raises(ValueError, match="k"):
        tb.knn(a, b, 7)
    with pytest.raises(TypeError):
        tb.hamming_cdist(a, b, dtype="float32")
    # An output that overlaps an input: the input is read before the output is written.
    buf = np.zeros(64, np.uint32)
    codes = a.view(np.uint8).reshape(4, -1)
    buf.view(np.uint8)[:codes.size] = codes.ravel()
    shared = buf.view(np.uint8)[:codes.size].reshape(codes.shape)
    other = b.view(np.uint8).reshape(6, -1)
    want = np_cdist(codes.copy(), other)
    np.testing.assert_array_equal(tb.hamming_cdist(shared, other, out=buf[:24].reshape(4, 6)), want)


def test_batched_knn(rng):
    a = random_array(rng, (2, 5, 4), "uint8")
    b = random_array(rng, (2, 50, 4), "uint8")
    d, i = tb.knn(a, b, 3)
    for n in range(2):
        wd, wi = np_knn(a[n], b[n], 3)
        np.testing.assert_array_equal(d[n], wd)
        np.testing.assert_array_equal(i[n], wi)
