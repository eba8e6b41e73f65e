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


def test_batched_knn(rng):
    a = random_array(rng, (2, 5, 4), "uint8")
    b = random_array(rng, (2, 50, 4), "uint8")
    d, i = tb.knn(a, b, 3)
    for n in range(2):
        wd, wi = np_knn(a[n], b[n], 3)
        np.testing.assert_array_equal(d[n], wd)
        np.testing.assert_array_equal(i[n], wi)
