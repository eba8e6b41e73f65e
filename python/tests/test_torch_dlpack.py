"""PyTorch tensors and other __dlpack__ objects: in without a copy, out as the caller's type."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import bits, random_array


class Capsule:
    """A minimal DLPack producer over a numpy array (no from_dlpack in its module's namespace)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_objects_are_read_in_place(rng):
    a = random_array(rng, (6, 7), "uint32")
    b = random_array(rng, (7,), "uint32")
    got = tb.bitwise_xor(Capsule(a), Capsule(b))
    np.testing.assert_array_equal(got, a ^ b)
    # Written through DLPack into the producer's own memory: no copy on the way in.
    out = np.zeros((6, 7), np.uint32)
    tb.bitwise_xor(a, b, out=Capsule(out))
    np.testing.assert_array_equal(out, a ^ b)
    d, i = tb.knn(Capsule(a), Capsule(a), 2)
    assert (d[:, 0] == 0).all()


TORCH_TYPES = ["uint8", "int8", "int16", "int32", "int64", "bool", "float16", "float32", "float64",
               "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", TORCH_TYPES)
def test_torch_in_torch_out(torch, rng, dtype):
    a = random_array(rng, (5, 8), dtype)
    b = random_array(rng, (8,), dtype)
    ta, tb_ = torch.from_numpy(a), torch.from_numpy(b)
    got = tb.bitwise_xor(ta, tb_)
    assert isinstance(got, torch.Tensor)
    assert str(got.dtype) == f"torch.{dtype}"
    want = np.logical_xor(a, b) if dtype == "bool" else (bits(a) ^ bits(b)).view(dtype)
    np.testing.assert_array_equal(bits(got.numpy()), bits(want))
    n = tb.bitwise_not(ta)
    assert isinstance(n, torch.Tensor)
    if dtype in ("uint8", "int8", "int16", "int32", "int64", "bool"):
        # Where torch has the op, the bits are torch's.
        assert torch.equal(got, torch.bitwise_xor(ta, tb_))
        assert torch.equal(n, torch.bitwise_not(ta))
        assert torch.equal(tb.bitwise_and(ta, tb_), torch.bitwise_and(ta, tb_))
        assert torch.equal(tb.bitwise_or(ta, tb_), torch.bitwise_or(ta, tb_))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
def test_torch_shifts(torch, rng, dtype):
    width = np.dtype(dtype).itemsize * 8
    a = torch.from_numpy(random_array(rng, (64,), dtype))
    counts = torch.from_numpy(np.arange(64).astype(dtype) % width)
    assert torch.equal(tb.left_shift(a, counts), torch.bitwise_left_shift(a, counts))
    assert torch.equal(tb.right_shift(a, counts), torch.bitwise_right_shift(a, counts))
    # Counts torch refuses or leaves to the hardware are defined here, as numpy's.
    big = torch.full((64,), width + 1, dtype=a.dtype)
    np.testing.assert_array_equal(tb.left_shift(a, big).numpy(), np.left_shift(a.numpy(), big.numpy()))


def test_torch_views_out_and_reductions(torch, rng):
    x = torch.from_numpy(random_array(rng, (6, 10), "int32"))
    v = x[:, ::3].t()  # a strided, transposed view
    assert torch.equal(tb.bitwise_not(v), torch.bitwise_not(v))
    out = torch.zeros(6, 10, dtype=torch.int32)
    r = tb.bitwise_xor(x, 7, out=out)
    assert r is out
    assert torch.equal(out, torch.bitwise_xor(x, torch.tensor(7, dtype=torch.int32)))
    counts = tb.bitwise_count(x)
    assert isinstance(counts, torch.Tensor) and counts.dtype == torch.uint8
    np.testing.assert_array_equal(counts.numpy(), np.bitwise_count(x.numpy().view(np.uint32)))
    s = tb.bitwise_xor_reduce(x, axis=0)
    assert isinstance(s, torch.Tensor)
    np.testing.assert_array_equal(s.numpy(), np.bitwise_xor.reduce(x.numpy(), axis=0))
    codes = torch.from_numpy(random_array(rng, (50, 4), "uint8"))
    d, i = tb.knn(codes[:5], codes, 3)
    assert isinstance(d, torch.Tensor) and i.dtype == torch.int64
    assert torch.equal(i[:, 0], torch.arange(5))


def test_torch_mixed_with_reversed_numpy(torch, rng):
    a = random_array(rng, (9,), "uint8")
    t = torch.from_numpy(random_array(rng, (9,), "uint8"))
    got = tb.bitwise_and(a[::-1], t)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), a[::-1] & t.numpy())
