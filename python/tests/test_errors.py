"""Bad inputs raise TypeError, ValueError or OverflowError with the library's message, never a panic."""
import itertools
import re

import numpy as np
import pytest

import tensorbits as tb


def test_dtype_errors_are_type_errors():
    with pytest.raises(TypeError, match="does not support dtype float32"):
        tb.left_shift(np.zeros(3, np.float32), np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="no data type for numpy's complex128"):
        tb.bitwise_and(np.zeros(3, complex), np.zeros(3, complex))
    with pytest.raises(TypeError, match="no data type"):
        tb.bitwise_not(np.zeros(3, ">u4"))  # not the machine's byte order
    with pytest.raises(TypeError, match=r"dtypes supported at EXT: int8, int16, int32, int64, "
                       r"uint8, uint16, uint32, uint64$"):
        tb.left_shift(np.zeros(3, np.float32), np.zeros(3, np.float32))
    # Integers promote as in numpy; a float with an integer does not: one sentence, in numpy's
    # names.
    with pytest.raises(TypeError, match=r"x2 has dtype float32, but the inputs of a call share "
                       r"one dtype, x1's uint8"):
        tb.bitwise_and(np.zeros(3, np.uint8), np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="expected a numpy array"):
        tb.bitwise_not("abc")
    with pytest.raises(TypeError):
        tb.bitwise_not(np.zeros(3, object))
    with pytest.raises(TypeError):
        tb.bitwise_and(np.zeros(3, np.int32), 1.5)


def test_shape_errors_are_value_errors():
    with pytest.raises(ValueError, match="does not match"):
        tb.bitwise_or(np.zeros((2, 3), np.uint8), np.zeros((4,), np.uint8))
    with pytest.raises(ValueError, match="out has shape"):
        tb.bitwise_or(np.zeros(3, np.uint8), np.zeros(3, np.uint8), out=np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="rank|dimensions"):
        tb.bitwise_not(np.zeros((1,) * 9, np.uint8))
    with pytest.raises(ValueError, match="read-only"):
        tb.bitwise_not(np.zeros(3, np.uint8), out=np.broadcast_to(np.zeros(1, np.uint8), (3,)))
    with pytest.raises(ValueError, match="device"):
        tb.bitwise_not(np.zeros(3, np.uint8), device="tpu")
    with pytest.raises(ValueError, match="broadcast"):
        tb.bitwise_and(np.zeros(3, np.uint8), np.zeros(3, np.uint8), broadcast="sideways")
    with pytest.raises(ValueError):
        tb.hamming_cdist(np.zeros((2, 3), np.uint8), np.zeros((2, 4), np.uint8))
    with pytest.raises(ValueError):
        tb.hamming_cdist(np.zeros(3, np.uint8), np.zeros(3, np.uint8))


def test_messages_name_the_parameters():
    """A message names each tensor as the function's signature does (x1, x2, a, b, x, out), never
    by the library's names (ATensor), on the plain-array paths and the general ones."""
    u8 = np.uint8
    cases = [
        (lambda: tb.bitwise_xor(np.zeros((3, 4), u8), np.zeros((3, 5), u8)),
         r"x2 shape \[3, 5\] does not match x1 shape \[3, 4\]"),
        (lambda: tb.bitwise_xor(np.zeros((3, 4), u8)[:, ::2], np.zeros((3, 5), u8)),
         r"x2 shape \[3, 5\] does not match x1 shape \[3, 2\]"),
        (lambda: tb.bitwise_xor(np.zeros(3, u8), np.zeros(3, u8), out=np.zeros(4, u8)),
         r"out has shape \[4\]"),
        (lambda: tb.left_shift(np.zeros(3, np.float32), np.zeros(3, np.float32)),
         r"dtype float32 \(x1\)"),
        (lambda: tb.bitwise_count(np.zeros(3, u8), out=np.zeros(4, u8)), r"out has shape"),
        (lambda: tb.hamming_distance(np.zeros((3, 4), u8), np.zeros((2, 4), u8)),
         r"x2 shape \[2, 4\] does not match x1 shape \[3, 4\]"),
        (lambda: tb.hamming_cdist(np.zeros((3, 4), u8), np.zeros((3, 5), u8)),
         r"b shape \[3, 5\] does not match a shape \[3, 4\]"),
        (lambda: tb.hamming_cdist(np.zeros((3, 4), u8), np.zeros((3, 5), u8), device="cpu",
                                  level="EXT"),
         r"b shape \[3, 5\] does not match a shape \[3, 4\]"),
        (lambda: tb.knn(np.zeros((3, 4), u8), np.zeros((3, 4), u8), 5), r"rows of b"),
        (lambda: tb.knn(np.zeros((3, 4), u8), np.zeros((3, 5), u8), 1, level="EXT"),
         r"b shape \[3, 5\] does not match a shape \[3, 4\]"),
        (lambda: tb.run("xor", np.zeros(3, u8), np.zeros(2, u8)),
         r"input 1 shape \[2\] does not match input 0 shape \[3\]"),
    ]
    for call, pattern in cases:
        with pytest.raises((TypeError, ValueError)) as info:
            call()
        message = str(info.value)
        assert "Tensor" not in message, message
        assert re.search(pattern, message), message


@pytest.mark.parametrize("f", [tb.hamming_cdist, tb.binary_dot])
def test_bad_bits_and_bitorder_are_errors(f):
    # The defaults skip these checks on the fast path; any other value is checked.
    a = np.zeros((2, 4), np.uint8)
    with pytest.raises(ValueError, match="bitorder must be 'big' or 'little'.*'middle'"):
        f(a, a, bitorder="middle")
    with pytest.raises(ValueError, match="bitorder must be 'big' or 'little'.*None"):
        f(a, a, bitorder=None)
    with pytest.raises(ValueError, match="bits must not be negative, got -1"):
        f(a, a, bits=-1)
    with pytest.raises(TypeError):
        f(a, a, bits=1.5)
    assert f(a, a, bits=8, bitorder="little").shape == (2, 2)


def test_messages_are_one_line():
    try:
        tb.bitwise_or(np.zeros((2, 3), np.uint8), np.zeros((4,), np.uint8))
    except ValueError as e:
        assert "\n" not in str(e) and str(e)
    else:
        pytest.fail("no error")


def test_no_panic_on_any_bad_input():
    # PanicException derives from BaseException, so it would escape `except Exception`.
    rng = np.random.default_rng(7)
    arrays = [
        np.zeros(0, np.uint8), np.zeros((3, 0, 2), np.uint16), np.zeros((1,) * 8, np.uint32),
        np.zeros((1,) * 9, np.uint8), np.arange(6, dtype=np.int64).reshape(2, 3)[:, ::-1],
        np.zeros(5, np.float16), np.zeros(4, complex), np.zeros(3, bool),
        np.broadcast_to(np.zeros(1, np.uint8), (4, 4)), np.zeros((2, 1 << 20), np.uint8)[:, ::4096],
        np.zeros(3, ">u2"), np.zeros(10, np.uint8)[1:].view(np.uint8),
    ]
    others = [None, 0, -1, 1 << 70, 2.5, True, "x", [1, 2], (1, 2), np.int8(-3)]
    funcs = [tb.bitwise_and, tb.bitwise_xor, tb.left_shift, tb.right_shift, tb.hamming_distance,
             tb.hamming_cdist]
    seen = 0
    for f, a, b in itertools.product(funcs, arrays, arrays + others):
        try:
            f(a, b)
        except (TypeError, ValueError, OverflowError):
            seen += 1
    for f, a, axis in itertools.product(
        [tb.bitwise_xor_reduce, tb.bitwise_count_sum], arrays, [None, 0, -1, 9, -9, (0, 0), (), 1.5]
    ):
        try:
            f(a, axis=axis, dtype=rng.choice(["uint8", "uint16", None]))
        except (TypeError, ValueError, OverflowError):
            seen += 1
    for a, b, k in itertools.product(arrays, arrays, [0, 1, 5, -1, 1 << 64, "3"]):
        try:
            tb.knn(a, b, k)
        except (TypeError, ValueError, OverflowError):
            seen += 1
    for out in [np.zeros(3, np.uint8), np.zeros((3, 3), np.uint8)[:, 0], np.zeros(3, np.uint16),
                np.zeros(3, np.uint8)[::-1], np.broadcast_to(np.zeros(1, np.uint8), (3,)), 5, "out"]:
        try:
            tb.bitwise_not(np.arange(3, dtype=np.uint8), out=out)
        except (TypeError, ValueError, OverflowError):
            seen += 1
    assert seen > 100


def test_arguments_numpy_refuses_are_refused_with_numpys_types():
    a = np.zeros((2, 4), np.uint8)
    x = np.zeros((3, 4), np.uint8)
    for kw in [{"largest": "no"}, {"bits": True}]:
        with pytest.raises(TypeError):
            tb.knn(a, a, 1, **kw)
    with pytest.raises(TypeError):
        tb.knn(a, a, True)
    with pytest.raises(TypeError):
        tb.bitwise_xor_reduce(x, axis=1, keepdims="no")
    for axis in [True, [0, 1], (0, True)]:
        with pytest.raises(TypeError):
            tb.bitwise_xor_reduce(x, axis=axis)
    for kw in [{"k": 2**64}, {"bits": 2**64}]:
        with pytest.raises(ValueError):
            tb.knn(a, a, **({"k": 1} | kw))
    with pytest.raises(ValueError):
        tb.rescore(np.zeros((1, 8)), a, np.zeros((1, 1), np.int64), k=2**64)
    # What numpy takes still works: numpy bools and integers.
    tb.knn(a, a, np.int64(1), largest=np.bool_(False), bits=np.int32(8))
    tb.bitwise_xor_reduce(x, axis=(np.int64(0), 1), keepdims=np.bool_(True))


def test_messages_name_the_function_and_argument():
    a = np.zeros((3, 2), np.uint8)
    with pytest.raises(ValueError, match=r"^knn: k = 5 is more than the 3 rows"):
        tb.knn(a, a, 5)
    with pytest.raises(TypeError, match=r"tb\.binarize"):
        tb.knn(a.astype(np.float32), a.astype(np.float32), 1)
    with pytest.raises(TypeError, match=r"^x: tensorbits has no data type for numpy's >u2"):
        tb.bitwise_not(np.ones(3, ">u2"))
    with pytest.raises(TypeError, match=r"^x: tensorbits has no data type for numpy's complex64"):
        tb.bitwise_not(np.ones(3, np.complex64))
    with pytest.raises(TypeError, match=r"^x1: tensorbits has no data type"):
        tb.bitwise_and(np.ones(3, ">u2"), np.ones(3, ">u2"))
