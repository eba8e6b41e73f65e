"""``out=`` sharing memory with the inputs, for every function that takes ``out=``, on the CPU
and the GPU: the result is what numpy computes from copies of the inputs taken before the call,
whatever the overlap; an ``out`` whose own elements overlap is refused with one message naming
the op."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import has_gpu

DEVICES = ["cpu"] + (["gpu"] if has_gpu() else [])

# (function, how many inputs, numpy's result from copies, out shape from the input shape)
ELEMENT_WISE = [
    (tb.bitwise_and, 2, np.bitwise_and),
    (tb.bitwise_or, 2, np.bitwise_or),
    (tb.bitwise_xor, 2, np.bitwise_xor),
    (tb.bitwise_not, 1, np.bitwise_not),
    (tb.left_shift, 2, lambda a, b: np.left_shift(a, b % 8)),
]


def _view(buf, dtype, shape, rng):
    """A view of ``shape`` into ``buf`` at a random element offset, forwards or reversed."""
    item = np.dtype(dtype).itemsize
    n = int(np.prod(shape))
    start = int(rng.integers(0, buf.size // item - n + 1))
    v = buf.view(dtype)[start:start + n].reshape(shape)
    return v[..., ::-1] if rng.integers(0, 2) else v


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["uint8", "int16", "uint32", "int64"])
def test_element_wise_out_over_its_inputs(rng, device, dtype):
    for f, arity, ref in ELEMENT_WISE:
        for _ in range(12):
            buf = rng.integers(0, 256, 8 * 64, dtype=np.uint8)
            shape = (3, int(rng.integers(1, 9)))
            xs = [_view(buf, dtype, shape, rng) for _ in range(arity)]
            if f is tb.left_shift:
                xs[1] = xs[1].copy() % 8
            out = _view(buf, dtype, shape, rng)
            want = ref(*[x.copy() for x in xs])
            got = f(*xs, out=out, device=device)
            assert got is out
            np.testing.assert_array_equal(out, want, err_msg=f"{f.__name__} {device}")


@pytest.mark.parametrize("device", DEVICES)
def test_count_reduction_and_cdist_out_over_inputs(rng, device):
    for _ in range(12):
        buf = rng.integers(0, 256, 8 * 128, dtype=np.uint8)
        x = _view(buf, np.uint32, (4, 6), rng)
        out = _view(buf, np.uint32, (4, 6), rng)
        want = np.bitwise_count(x.copy()).astype(np.uint32) if hasattr(np, "bitwise_count") else \
            np.unpackbits(x.copy().view(np.uint8), axis=-1).reshape(4, 6, 32).sum(-1, dtype=np.uint32)
        tb.bitwise_count(x, out=out, dtype="uint32", device=device)
        np.testing.assert_array_equal(out, want)

        x = _view(buf, np.uint32, (4, 6), rng)
        out = _view(buf, np.uint32, (4,), rng)
        want = np.bitwise_xor.reduce(x.copy(), axis=1)
        tb.bitwise_xor_reduce(x, axis=1, out=out, device=device)
        np.testing.assert_array_equal(out, want)

        a = _view(buf, np.uint8, (3, 8), rng)
        b = _view(buf, np.uint8, (5, 8), rng)
        out = _view(buf, np.uint32, (3, 5), rng)
        ac, bc = a.copy(), b.copy()
        want = np.unpackbits(ac[:, None, :] ^ bc[None, :, :], axis=-1).sum(-1, dtype=np.uint32)
        tb.hamming_cdist(a, b, out=out, device=device)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("device", DEVICES)
def test_binarize_out_over_x(rng, device):
    for _ in range(27):
        buf = rng.standard_normal(64).astype(np.float32)
        x = buf[:16].reshape(2, 8) if rng.integers(0, 2) else buf[8:40].reshape(2, 16)
        at = int(rng.integers(0, 60))
        shape = x.shape[:-1] + (x.shape[-1] // 8,)
        out = buf.view(np.uint8)[at:at + int(np.prod(shape))].reshape(shape)
        want = np.packbits(x.copy() > 0, axis=-1)
        tb.binarize(x, out=out, device=device)
        np.testing.assert_array_equal(out, want)


def test_self_overlapping_out_is_refused_as_stride_0():
    buf = np.zeros(64, np.uint8)
    a = np.arange(4, dtype=np.int16)
    outs = [
        np.ndarray((4,), np.int16, buffer=buf, strides=(0,)),
        np.ndarray((4,), np.int16, buffer=buf, strides=(1,)),
        np.ndarray((3, 3), np.int16, buffer=buf, strides=(2, 2)),
        np.ndarray((4,), np.int16, buffer=buf, offset=6, strides=(-1,)),
    ]
    for out in outs:
        before = buf.copy()
        with pytest.raises(ValueError, match=r"ELEMENT_WISE_BIT_AND: out has overlapping elements"):
            tb.bitwise_and(np.ones(out.shape, np.int16), np.ones(out.shape, np.int16), out=out)
        np.testing.assert_array_equal(buf, before)
    # Strides that keep elements apart, odd byte strides included, are written.
    out = np.ndarray((4,), np.int16, buffer=buf, strides=(3,))
    tb.bitwise_not(a, out=out)
    np.testing.assert_array_equal(out, ~a)
