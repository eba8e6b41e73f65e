"""Shifts over the whole count range and bit counts, against numpy."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import ALL_TYPES, INT_TYPES, bits, random_array


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_shifts_over_every_count(rng, dtype):
    dt = np.dtype(dtype)
    width = dt.itemsize * 8
    lo = -3 if dt.kind == "i" else 0
    counts = np.arange(lo, width + 4).astype(dt)
    values = random_array(rng, (counts.size, 7), dtype)
    values[:, 0] = np.iinfo(dt).min
    values[:, 1] = np.iinfo(dt).max
    values[:, 2] = 1
    c = counts[:, None]
    for ours, theirs in [(tb.left_shift, np.left_shift), (tb.right_shift, np.right_shift)]:
        got = ours(values, c)
        want = theirs(values, c)
        assert got.dtype == dt
        np.testing.assert_array_equal(bits(got), bits(want))
        # A Python scalar count.
        for k in [0, 1, width - 1, width, width + 5]:
            np.testing.assert_array_equal(bits(ours(values, k)), bits(theirs(values, dt.type(k))))


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_shifts_refuse_other_types(dtype):
    x = np.zeros(3, dtype)
    with pytest.raises(TypeError, match="does not support"):
        tb.left_shift(x, x)


@pytest.mark.parametrize("dtype", [t for t in ALL_TYPES if t != "bool"])
def test_bitwise_count(rng, dtype):
    x = random_array(rng, (5, 33), dtype)
    u = bits(x)
    want = np.bitwise_count(u)  # the stored bits
    got = tb.bitwise_count(x)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, want)
    wide = tb.bitwise_count(x, dtype="uint32")
    assert wide.dtype == np.uint32
    np.testing.assert_array_equal(wide, want)
    if np.dtype(dtype).kind == "u":
        # Where both define it the same, ours is numpy's.
        np.testing.assert_array_equal(got, np.bitwise_count(x))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_bitwise_count_of_negative_values_counts_stored_bits(dtype):
    x = np.array([-1, -2, np.iinfo(dtype).min, 5], dtype)
    width = np.dtype(dtype).itemsize * 8
    got = tb.bitwise_count(x)
    assert got.tolist() == [width, width - 1, 1, 2]
    # numpy counts the absolute value instead: the documented difference.
    assert np.bitwise_count(x).tolist()[:2] == [1, 1]


def test_bitwise_count_refuses_other_output_types():
    with pytest.raises(TypeError):
        tb.bitwise_count(np.zeros(3, np.uint8), dtype="int64")
    with pytest.raises(TypeError, match="no data type"):
        tb.bitwise_count(np.zeros(3, np.uint8), dtype="complex64")
