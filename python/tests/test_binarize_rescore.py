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


def _layouts(rng, x_dtype, m, d):
    """x of every layout the sweep covers, with an ``out`` that may share x's memory."""
    item = np.dtype(x_dtype).itemsize
    nb = (d + 7) // 8
    size = 2 * m * d * item + m * nb + 64
    buf = np.zeros(size + 16, np.uint8)
    for _ in range(24):
        base = int(rng.integers(0, 8))
        raw = buf[base:base + m * d * item * 2 + 8]
        kind = rng.integers(0, 4)
        if kind == 0:   # C-contiguous, maybe unaligned
            x = np.ndarray((m, d), x_dtype, buffer=raw, offset=0)
        elif kind == 1:  # strided rows
            x = np.ndarray((m, d), x_dtype, buffer=raw, offset=0, strides=(2 * d * item, item))
        elif kind == 2:  # reversed last axis
            x = np.ndarray((m, d), x_dtype, buffer=raw, offset=(d - 1) * item,
                           strides=(d * item, -item))
        else:           # zero-size
            x = np.ndarray((m, 0) if rng.integers(0, 2) else (0, d), x_dtype, buffer=raw)
        x[...] = near_zero(rng, x.shape, x_dtype)
        shape = x.shape[:-1] + ((x.shape[-1] + 7) // 8,)
        # An out over x's own bytes (any offset), or apart from it.
        at = int(rng.integers(0, max(1, x.nbytes))) if rng.integers(0, 3) else size
        need = int(np.prod(shape))
        out = buf[at:at + need].reshape(shape) if at + need <= buf.size else np.empty(shape, np.uint8)
        yield x, out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "int16", "float64", "uint8", "int64"])
def test_binarize_layouts_and_overlapping_out_are_packbits(rng, device, dtype):
    """Unaligned, strided, reversed and zero-size x, with an out that overlaps x at any offset:
    the codes are np.packbits of x as it was before the call."""
    for m, d in [(3, 9), (2, 16), (5, 3)]:
        for x, out in _layouts(rng, dtype, m, d):
            want = np.packbits(x.copy() > 0, axis=-1)
            got = tb.binarize(x, 0, out=out, device=device)
            assert got is out
            np.testing.assert_array_equal(out, want, err_msg=f"{x.shape} {x.strides}")


def test_numpy_scalar_thresholds_are_strong(rng):
    """NEP 50: a numpy float64 scalar makes a float32 x compare at float64, as numpy does."""
    x = np.array([[0.1, 1.0]], np.float32)
    for t in [np.float64(0.1), np.float64(x.mean()), np.percentile(x, 50), np.int64(0)]:
        np.testing.assert_array_equal(tb.binarize(x, t), np.packbits(x > t, axis=-1))
    assert tb.binarize(x, np.float64(0.1))[0, 0] == 192


def test_int64_against_floats_rounds_as_numpy():
    """numpy rounds int64 and uint64 values to float64 before comparing with a float."""
    for dtype in [np.int64, np.uint64]:
        base = [2**53, 2**62, 2**63 - 4096] + ([-(2**60)] if dtype is np.int64 else [2**64 - 4096])
        x = np.array([[b + o for o in range(-3, 5)] for b in base], dtype=dtype)
        for t in [float(2**53), 2.0**53 + 2, 2.0**62, float(2**63 - 4096), -(2.0**60), 2.0**64]:
            np.testing.assert_array_equal(tb.binarize(x, t), np.packbits(x > t, axis=-1),
                                          err_msg=f"{dtype} {t}")


def test_huge_python_int_thresholds():
    x = np.array([[1, -2, 3]], np.int64)
    np.testing.assert_array_equal(tb.binarize(x, 2**200), np.packbits(x > 2**62, axis=-1))
    np.testing.assert_array_equal(tb.binarize(x, -(2**200)), np.packbits(x > -(2**62), axis=-1))
    u = np.array([[2**64 - 1, 0]], np.uint64)
    assert tb.binarize(u, 2**200)[0, 0] == 0 and tb.binarize(u, -(2**200))[0, 0] == 192


@pytest.mark.parametrize("cdtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                    "uint32", "uint64"])
def test_rescore_candidate_ids_of_every_dtype(rng, cdtype):
    """Only -1 is padding; any other id outside [0, N) is named, never dropped or wrapped."""
    q = rng.standard_normal((2, 16)).astype(np.float32)
    codes = rng.integers(0, 256, (5, 2), dtype=np.uint8)
    cands = np.array([[0, 4, 2], [3, 1, 1]], dtype=cdtype)
    s, i = tb.rescore(q, codes, cands, k=2)
    s64, i64 = tb.rescore(q, codes, cands.astype(np.int64), k=2)
    np.testing.assert_array_equal(i, i64)
    assert s.tobytes() == s64.tobytes()
    info = np.iinfo(cdtype)
    bad = [5, int(info.max)] + ([-2, int(info.min)] if info.min < 0 else [])
    if info.bits == 64 and info.min == 0:
        bad.append(2**63)
    for v in bad:
        c = cands.copy()
        c[1, 2] = v
        with pytest.raises(ValueError, match=rf"candidate {v} \(query 1, column 2\)"):
            tb.rescore(q, codes, c)
    if info.min < 0:
        c = cands.copy()
        c[0, 1] = -1
        s, i = tb.rescore(q, codes, c)
        assert i[0, 2] == -1 and s[0, 2] == -np.inf


def test_rescore_zero_sizes_and_unaligned(rng):
    q = rng.standard_normal((3, 16))
    codes = rng.integers(0, 256, (4, 2), dtype=np.uint8)
    s, i = tb.rescore(q[:0], codes, np.zeros((0, 2), np.int64))
    assert s.shape == i.shape == (0, 2)
    s, i = tb.rescore(q, codes, np.zeros((3, 0), np.int64))
    assert s.shape == i.shape == (3, 0)
    buf = np.zeros(3 * 16 * 8 + 1, np.uint8)
    qu = np.ndarray((3, 16), np.float64, buffer=buf, offset=1)
    qu[...] = q
    cands = np.array([[0, 1], [2, 3], [3, 0]])
    s1, i1 = tb.rescore(qu, codes, cands, k=1)
    s2, i2 = tb.rescore(q, codes, cands, k=1)
    assert s1.tobytes() == s2.tobytes() and np.array_equal(i1, i2)
