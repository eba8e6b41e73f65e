"""Binary embeddings and networks against numpy: binary_dot, valid bits in both bit orders, and
knn by any pairwise sum op in either order, on the CPU and the GPU."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import has_gpu

DEVICES = ["cpu"] + (["gpu"] if has_gpu() else [])
CODE_TYPES = ["uint8", "uint16", "uint32", "uint64"]


def signs(codes, d, bitorder):
    """The ±1 matrix of the first ``d`` bits of each row of packed codes (their bytes)."""
    raw = np.ascontiguousarray(codes).view(np.uint8).reshape(codes.shape[0], -1)
    return np.where(np.unpackbits(raw, axis=-1, bitorder=bitorder)[:, :d] > 0, 1, -1)


def garbage_padding(codes, d, bitorder, rng):
    """The codes with random bits past the first ``d`` of each row."""
    raw = np.ascontiguousarray(codes).view(np.uint8).reshape(codes.shape[0], -1).copy()
    unpacked = np.unpackbits(raw, axis=-1, bitorder=bitorder)
    unpacked[:, d:] = rng.integers(0, 2, size=unpacked[:, d:].shape)
    return np.packbits(unpacked, axis=-1, bitorder=bitorder).view(codes.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bitorder", ["big", "little"])
@pytest.mark.parametrize("dtype", CODE_TYPES)
@pytest.mark.parametrize("d", [1, 7, 63, 64, 100, 257])
def test_binary_dot_is_the_product_of_signs(rng, device, bitorder, dtype, d):
    size = np.dtype(dtype).itemsize
    row_bytes = -(-d // (8 * size)) * size
    x = rng.standard_normal((9, d))
    y = rng.standard_normal((31, d))
    pad = lambda v: np.pad(np.packbits(v > 0, axis=-1, bitorder=bitorder), ((0, 0), (0, row_bytes - -(-d // 8))))
    a = garbage_padding(pad(x).view(dtype), d, bitorder, rng)
    b = garbage_padding(pad(y).view(dtype), d, bitorder, rng)
    want = np.where(x > 0, 1, -1) @ np.where(y > 0, 1, -1).T
    got = tb.binary_dot(a, b, bits=d, bitorder=bitorder, device=device)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tb.binary_dot(a, b, bits=d, bitorder=bitorder, device=device,
                                                dtype=np.int64), want)
    # The Hamming distance of the same bits.
    ham = tb.hamming_cdist(a, b, bits=d, bitorder=bitorder, device=device)
    np.testing.assert_array_equal(ham, (d - want) // 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k", [1, 5, 40, 200])
def test_knn_by_op_in_either_order(rng, device, k):
    d = 45
    a = np.packbits(rng.standard_normal((7, d)) > 0, axis=-1)
    b = np.packbits(rng.standard_normal((200, d)) > 0, axis=-1)
    dot = signs(a, d, "big") @ signs(b, d, "big").T
    ham = (d - dot) // 2
    cases = [
        ("binary_dot", None, dot, True),
        ("binary_dot", True, dot, True),
        ("binary_dot", False, dot, False),
        ("xnor_dot", None, dot, True),
        ("hamming_cdist", None, ham, False),
        ("hamming_cdist", True, ham, True),
    ]
    for op, largest, values, descending in cases:
        got_d, got_i = tb.knn(a, b, k, op=op, largest=largest, bits=d, device=device)
        order = np.argsort(-values if descending else values, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(got_i, order, err_msg=f"{op} largest={largest}")
        np.testing.assert_array_equal(got_d, np.take_along_axis(values, order, 1))


def test_knn_through_views_and_batches_matches_the_plain_path(rng):
    a = rng.integers(0, 256, size=(2, 6, 5), dtype=np.uint8)
    b = rng.integers(0, 256, size=(2, 50, 5), dtype=np.uint8)
    for i in range(2):
        d_all, i_all = tb.knn(a[:, :, ::-1], b[:, :, ::-1], 4, op="binary_dot", bits=37)
        d_one, i_one = tb.knn(np.ascontiguousarray(a[i, :, ::-1]), np.ascontiguousarray(b[i, :, ::-1]),
                              4, op="binary_dot", bits=37)
        np.testing.assert_array_equal(d_all[i], d_one)
        np.testing.assert_array_equal(i_all[i], i_one)


def test_valid_bits_over_the_last_axis(rng):
    x = rng.integers(0, 256, size=(3, 4, 6), dtype=np.uint8)
    y = rng.integers(0, 256, size=(4, 6), dtype=np.uint8)
    for bitorder in ("big", "little"):
        ux = np.unpackbits(x, axis=-1, bitorder=bitorder)[..., :43]
        uy = np.unpackbits(y, axis=-1, bitorder=bitorder)[..., :43]
        want = (ux != uy).sum(axis=-1)
        got = tb.hamming_distance(x, y, bits=43, bitorder=bitorder)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(tb.run("hamming", x, y, bits=43, bitorder=bitorder), want)


def test_errors_say_what_is_wrong():
    a = np.zeros((2, 3), np.uint8)
    with pytest.raises(ValueError, match="more than the 24 bits of a row"):
        tb.binary_dot(a, a, bits=25)
    with pytest.raises(ValueError, match="bitorder must be 'big' or 'little'"):
        tb.binary_dot(a, a, bitorder="middle")
    with pytest.raises(ValueError, match="must not be negative"):
        tb.knn(a, a, 1, bits=-1)
    with pytest.raises(ValueError, match="reduce the last axis alone"):
        tb.hamming_distance(a, a, axis=0, bits=3)
    with pytest.raises(ValueError, match="element-wise"):
        tb.run("xor", a, a, bits=3)
    with pytest.raises(ValueError, match="not a pairwise sum"):
        tb.knn(a, a, 1, op="xor")
    with pytest.raises(ValueError, match="unknown op"):
        tb.knn(a, a, 1, op="cosine")
    # binary_dot views int8 codes as uint8; the op itself (tb.run) keeps its unsigned types.
    with pytest.raises(TypeError, match="BINARY_DOT"):
        tb.run("binary_dot", np.zeros((2, 3), np.int8), np.zeros((2, 3), np.int8))
    # A dot product of 4,096 bits does not fit int16.
    big = np.zeros((1, 4096), np.uint8)
    with pytest.raises(ValueError, match="from -32768 to 32768"):
        tb.binary_dot(big, big, dtype=np.int16)
