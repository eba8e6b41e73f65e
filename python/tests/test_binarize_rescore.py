"""binarize against ``np.packbits(x > threshold)`` for every dtype, threshold kind and bit order
(NaNs, infinities and -0.0 included, on the CPU and the GPU), and rescore against the numpy
rescoring sentence-transformers does (``unpackbits`` then a float product)."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import ALL_TYPES, has_gpu, random_array

DEVICES = ["cpu"] + (["gpu"] if has_gpu() else [])


def near_zero(rng, shape, dtype):
    """Small values around 0 (where thresholds sit), with random bit patterns mixed in."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    small = rng.integers(-4, 5, size=shape)
    if dtype.kind == "u":
        small = np.abs(small)
    x = small.astype(dtype)
    mask = rng.random(shape) < 0.3
    x[mask] = random_array(rng, shape, dtype)[mask]
    return x


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bitorder", ["big", "little"])
@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("shape", [(9,), (3, 7), (2, 3, 64), (4, 130)])
def test_scalar_thresholds_are_numpys(rng, device, bitorder, dtype, shape):
    x = near_zero(rng, shape, dtype)
    for t in [0, 1, -1, 0.5, -0.5, 2.75, np.float32(0.1), np.int16(-3), True]:
        want = np.packbits(x > t, axis=-1, bitorder=bitorder)
        got = tb.binarize(x, t, bitorder=bitorder, device=device)
        assert got.dtype == np.uint8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype} t={t!r}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("tdtype", ["int8", "int64", "uint8", "float16", "float32", "float64"])
def test_per_dimension_thresholds_are_numpys(rng, device, dtype, tdtype):
    x = near_zero(rng, (5, 21), dtype)
    t = near_zero(rng, (21,), tdtype)
    want = np.packbits(x > t, axis=-1)
    np.testing.assert_array_equal(tb.binarize(x, t, device=device), want)


def test_out_of_range_and_special_thresholds():
    u = np.arange(0, 256, 5, dtype=np.uint8)
    i = np.arange(-128, 128, 7, dtype=np.int8)
    f = np.array([-np.inf, -1.0, -0.0, 0.0, 1e-8, np.nan, np.inf, 3.0], dtype=np.float32)
    for x in (u, i, f):
        for t in [-1, -1000, 300, 10**30, -(10**30), 255.5, -0.5, float("inf"), float("-inf"),
                  float("nan"), 0.1]:
            np.testing.assert_array_equal(tb.binarize(x, t), np.packbits(x > t), err_msg=f"{x.dtype} {t}")


def test_python_numbers_are_cast_to_a_float_dtype_as_numpy_casts_them():
    # 16777219 rounds to 16777220 in float32, so numpy's x > 16777219 is False at 16777220.
    x = np.array([16777216, 16777218, 16777220, 16777222], dtype=np.float32)
    for t in [16777219, 16777219.0, 0.1, 1e40, -1e40]:
        with np.errstate(over="ignore"):
            want = np.packbits(x > t)
        np.testing.assert_array_equal(tb.binarize(x, t), want, err_msg=repr(t))
    h = np.array([1.0, 2.0, np.inf, -np.inf], dtype=np.float16)
    for t in [70000, 1e10, -1e10, 2.0001]:
        with np.errstate(over="ignore"):
            want = np.packbits(h > t)
        np.testing.assert_array_equal(tb.binarize(h, t), want, err_msg=repr(t))


def test_views_out_and_tensors(rng):
    x = rng.standard_normal((6, 40))
    view = x[::2, ::-3]
    np.testing.assert_array_equal(tb.binarize(view), np.packbits(view > 0, axis=-1))
    out = np.zeros((6, 5), dtype=np.uint8)
    assert tb.binarize(x, out=out) is out
    np.testing.assert_array_equal(out, np.packbits(x > 0, axis=-1))
    strided = np.zeros((6, 10), dtype=np.uint8)[:, ::2]
    tb.binarize(x, out=strided)
    np.testing.assert_array_equal(strided, np.packbits(x > 0, axis=-1))
    torch = pytest.importorskip("torch")
    got = tb.binarize(torch.from_numpy(x))
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), np.packbits(x > 0, axis=-1))


def test_binarize_errors():
    x = np.ones((3, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="2 thresholds for a last axis of 8"):
        tb.binarize(x, np.zeros(2))
    with pytest.raises(ValueError, match="0-d"):
        tb.binarize(np.float32(1.0))
    with pytest.raises(TypeError, match="numbers"):
        tb.binarize(np.array(["a"]))
    with pytest.raises(ValueError, match="shape"):
        tb.binarize(x, out=np.zeros((3, 2), dtype=np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        tb.binarize(x, out=np.zeros((3, 1), dtype=np.int8))
    with pytest.raises(ValueError, match="bitorder"):
        tb.binarize(x, bitorder="middle")


def reference_rescore(q, codes, cands, k, bitorder):
    """sentence-transformers' rescoring: unpack, read bits as ±1, a float64 product, sort."""
    d = q.shape[1]
    signs = np.unpackbits(codes, axis=-1, bitorder=bitorder)[:, :d].astype(np.float64) * 2 - 1
    scores, idx = [], []
    for i in range(q.shape[0]):
        c = cands[i][cands[i] >= 0]
        s = signs[c] @ q[i].astype(np.float64)
        order = sorted(range(len(c)), key=lambda j: (-s[j], c[j]))[:k]
        pad = k - len(order)
        scores.append(np.concatenate([s[order].astype(np.float32), np.full(pad, -np.inf, np.float32)]))
        idx.append(np.concatenate([c[order], np.full(pad, -1)]))
    return np.array(scores, dtype=np.float32), np.array(idx, dtype=np.int64)


@pytest.mark.parametrize("bitorder", ["big", "little"])
@pytest.mark.parametrize("qdtype", ["float32", "float64"])
@pytest.mark.parametrize("d,c,k", [(7, 5, None), (64, 40, 10), (130, 200, 17), (384, 12, 12)])
def test_rescore_is_the_float_product_of_unpacked_codes(rng, bitorder, qdtype, d, c, k):
    n, m = 300, 6
    db = rng.standard_normal((n, d))
    codes = tb.binarize(db, bitorder=bitorder)
    # Multiples of 1/8: the float32 sums are exact, so they equal the float64 reference.
    q = (rng.integers(-40, 41, size=(m, d)) / 8).astype(qdtype)
    cands = rng.integers(-1, n, size=(m, c))
    got_s, got_i = tb.rescore(q, codes, cands, k, bitorder=bitorder)
    want_s, want_i = reference_rescore(q, codes, cands, c if k is None else k, bitorder)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_s.view(np.uint32), want_s.view(np.uint32))
    assert got_s.dtype == np.float32 and got_i.dtype == np.int64


def test_rescore_errors():
    q = np.ones((2, 9), dtype=np.float32)
    codes = np.zeros((4, 2), dtype=np.uint8)
    with pytest.raises(ValueError, match="candidate 4"):
        tb.rescore(q, codes, np.array([[0, 4], [1, 2]]))
    with pytest.raises(ValueError, match="k = 3"):
        tb.rescore(q, codes, np.array([[0, 1], [1, 2]]), 3)
    with pytest.raises(ValueError, match="9 values"):
        tb.rescore(q, codes[:, :1], np.array([[0, 1], [1, 2]]))
    with pytest.raises(TypeError, match="uint8"):
        tb.rescore(q, codes.astype(np.uint16), np.array([[0, 1], [1, 2]]))
    with pytest.raises(TypeError, match="integer"):
        tb.rescore(q, codes, np.array([[0.0, 1.0], [1.0, 2.0]]))
