"""Element-wise ops against numpy, on every dtype, shape, stride and output kind."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import ALL_TYPES, INT_TYPES, bits, random_array

BINARY = [
    (tb.bitwise_and, np.bitwise_and, np.logical_and),
    (tb.bitwise_or, np.bitwise_or, np.logical_or),
    (tb.bitwise_xor, np.bitwise_xor, np.logical_xor),
]


def expect_binary(np_op, logical, a, b):
    if a.dtype == bool:
        return logical(a, b)
    return np_op(bits(a), bits(b)).view(a.dtype)


def expect_not(a):
    return np.logical_not(a) if a.dtype == bool else np.invert(bits(a)).view(a.dtype)


def assert_same_bits(got, want):
    # An array, or a numpy scalar for a 0-d result, as numpy's functions give.
    assert isinstance(got, np.ndarray) if np.ndim(want) else isinstance(got, np.generic), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(bits(got), bits(want))


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("ops", BINARY, ids=["and", "or", "xor"])
def test_binary_every_type(rng, dtype, ops):
    ours, np_op, logical = ops
    for sa, sb in [((37,), (37,)), ((3, 4), (4,)), ((2, 1, 5), (3, 1)), ((), (6,)), ((), ()),
                   ((0, 3), (1, 3)), ((4, 0), (4, 1)), ((2, 3, 1, 2, 1, 2, 1, 3), (3,))]:
        a, b = random_array(rng, sa, dtype), random_array(rng, sb, dtype)
        assert_same_bits(ours(a, b), expect_binary(np_op, logical, a, b))


@pytest.mark.parametrize("dtype", ALL_TYPES)
def test_not_every_type(rng, dtype):
    for shape in [(), (0,), (129,), (3, 5, 7)]:
        a = random_array(rng, shape, dtype)
        assert_same_bits(tb.bitwise_not(a), expect_not(a))
        assert_same_bits(tb.invert(a), expect_not(a))


def views(x):
    """Non-contiguous, reversed, transposed and broadcast views of a 2-d array."""
    return {
        "strided": x[::2, 1::3],
        "reversed rows": x[::-1],
        "reversed both": x[::-1, ::-1],
        "reversed step": x[:, ::-2],
        "transposed": x.T,
        "reversed transposed": x.T[::-1],
        "column": x[:, 3],
        "broadcast": np.broadcast_to(x[0], x.shape),
    }


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "uint64", "bool"])
def test_views_of_any_strides(rng, dtype):
    x = random_array(rng, (12, 10), dtype)
    y = random_array(rng, (12, 10), dtype)
    for name, v in views(x).items():
        for other_name, w in views(y).items():
            if v.shape != w.shape:
                continue
            got = tb.bitwise_xor(v, w)
            assert_same_bits(got, expect_binary(np.bitwise_xor, np.logical_xor, v, w))
        assert_same_bits(tb.bitwise_not(v), expect_not(v)), name


def test_reversed_input_is_not_copied(rng):
    # A reversed input reverses the whole call: the new result is a reversed view of its own
    # packed array, which shows the input was read where it lies.
    x = random_array(rng, (1000,), "uint32")
    got = tb.bitwise_not(x[::-1])
    assert got.strides == (-4,)
    assert_same_bits(got, expect_not(x[::-1]))


def test_unaligned_and_odd_strides(rng):
    raw = random_array(rng, (4 * 50 + 1,), "uint8")
    unaligned = raw[1:].view(np.uint32)
    assert not unaligned.flags.aligned
    assert_same_bits(tb.bitwise_not(unaligned), expect_not(unaligned))
    rec = np.zeros(20, dtype=[("a", "u2"), ("b", "u1")])
    rec["a"] = np.arange(20)
    field = rec["a"]  # a stride of 3 bytes
    assert_same_bits(tb.bitwise_xor(field, 7), np.bitwise_xor(field, np.uint16(7)))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64", "bool"])
def test_out(rng, dtype):
    a, b = random_array(rng, (6, 8), dtype), random_array(rng, (6, 8), dtype)
    want = expect_binary(np.bitwise_and, np.logical_and, a, b)
    out = np.empty((6, 8), dtype)
    assert tb.bitwise_and(a, b, out) is out
    assert_same_bits(out, want)
    # A strided output: the elements between its own are left as they were.
    big = random_array(rng, (6, 16), dtype)
    before = big.copy()
    r = tb.bitwise_and(a, b, out=big[:, ::2])
    assert r.base is big or r.base is big.base
    assert_same_bits(big[:, ::2], want)
    assert_same_bits(big[:, 1::2], before[:, 1::2])
    # A reversed output.
    rev = np.empty((6, 8), dtype)
    tb.bitwise_and(a, b, out=rev[::-1])
    assert_same_bits(rev[::-1], want)
    # A reversed output with an input reversed the other way round.
    rev2 = np.empty((6, 8), dtype)
    tb.bitwise_and(a[:, ::-1], b, out=rev2[::-1])
    assert_same_bits(rev2[::-1], expect_binary(np.bitwise_and, np.logical_and, a[:, ::-1], b))


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float16"])
def test_out_aliasing_inputs(rng, dtype):
    a, b = random_array(rng, (5, 9), dtype), random_array(rng, (5, 9), dtype)
    want = expect_binary(np.bitwise_or, np.logical_or, a, b)
    x = a.copy()
    tb.bitwise_or(x, b, out=x)  # in place
    assert_same_bits(x, want)
    y = b.copy()
    tb.bitwise_or(a, y, out=y)  # the second input in place
    assert_same_bits(y, want)
    # Overlapping but not identical: numpy's semantics (as if the inputs were read first).
    z = random_array(rng, (20,), dtype)
    zw = expect_binary(np.bitwise_xor, np.logical_xor, z[:-1], z[1:])
    tb.bitwise_xor(z[:-1], z[1:], out=z[1:])
    assert_same_bits(z[1:], zw)
    w = random_array(rng, (20,), dtype)
    ww = expect_not(w[::-1])
    tb.bitwise_not(w[::-1], out=w)
    assert_same_bits(w, ww)


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_python_scalars_take_the_array_dtype(rng, dtype):
    a = random_array(rng, (10,), dtype)
    info = np.iinfo(dtype)
    for s in [0, 1, info.max, info.min]:
        assert_same_bits(tb.bitwise_xor(a, s), np.bitwise_xor(a, np.array(s, dtype)))
        assert_same_bits(tb.bitwise_and(s, a), np.bitwise_and(np.array(s, dtype), a))
    with pytest.raises(OverflowError):
        tb.bitwise_xor(a, int(info.max) + 1)
    t = tb.bitwise_or(True, np.array([False, True]))
    assert t.dtype == bool and t.tolist() == [True, True]
    assert tb.bitwise_xor(5, 3) == 6


def test_broadcast_modes(rng):
    a = random_array(rng, (2, 3, 4), "uint16")
    b = random_array(rng, (3,), "uint16")
    got = tb.bitwise_xor(a, b, broadcast="pdpd", broadcast_axis=1)
    assert_same_bits(got, np.bitwise_xor(a, b[None, :, None]))
    with pytest.raises(ValueError, match="does not match|must be equal"):
        tb.bitwise_xor(a, a[:, :, :1], broadcast="none")
    assert_same_bits(tb.bitwise_xor(a, a[:, :, :1]), np.bitwise_xor(a, a[:, :, :1]))


def test_levels(rng):
    a = random_array(rng, (4,), "int8")
    assert_same_bits(tb.bitwise_and(a, a, level="4_1"), a)
    with pytest.raises(TypeError, match="does not support dtype int8"):
        tb.bitwise_and(a, a, level="3_0")
    with pytest.raises(TypeError, match="bool"):
        tb.bitwise_and(np.array([True]), np.array([True]), level="6_4")
    with pytest.raises(ValueError, match="unknown feature level"):
        tb.bitwise_and(a, a, level="9_9")


def test_threads_run_concurrently_with_the_same_results(rng):
    import threading

    a = random_array(rng, (1 << 20,), "uint32")
    b = random_array(rng, (1 << 20,), "uint32")
    want = np.bitwise_xor(a, b)
    results = [None] * 4

    def work(i):
        results[i] = tb.bitwise_xor(a, b)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        assert_same_bits(r, want)


def test_the_gil_is_released_while_a_kernel_runs(rng):
    # While another thread is inside a long kernel, this thread keeps running Python code: with
    # the GIL held for the kernel's whole length it could not run an iteration until the kernel
    # returned. (A count of iterations, not a time, is asserted.)
    import threading

    a = random_array(rng, (256, 32), "uint8")
    b = random_array(rng, (1 << 21, 32), "uint8")  # 2^29 distances: a tenth of a second or more
    started = threading.Event()
    done = []

    def work():
        started.set()
        done.append(tb.knn(a, b, 5))

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    spins = 0
    while t.is_alive():
        spins += 1
    t.join()
    assert done and done[0][0].shape == (256, 5)
    # Held, the loop runs only before the call enters the kernel and after it returns: some
    # thousands of iterations; released, hundreds of thousands.
    assert spins > 100000, spins


@pytest.mark.parametrize("dtype", ALL_TYPES)
@pytest.mark.parametrize("n", [1, 64, 1000, 300_000])
def test_plain_arrays_take_one_call_with_numpys_results(dtype, n):
    """C-contiguous arrays of one shape go through one call into Rust (the fast path of loops over
    small arrays, and of large plain arrays): the same bits, dtype and scalar type as numpy."""
    rng = np.random.default_rng(n)
    a = random_array(rng, (n,), dtype)
    b = random_array(rng, (n,), dtype)
    for tb_op, np_op, logical in BINARY:
        got = tb._native.run_plain(tb._native.op_index(tb._RUNS[tb_op.__name__]), a, b, None)
        assert got is not None, "a plain call fell back to the general path"
        want = expect_binary(np_op, logical, a, b)
        assert_same_bits(got, want)
        assert got.dtype.type is want.dtype.type
        out = np.empty_like(a)
        assert tb_op(a, b, out=out) is out
        assert_same_bits(out, want)
    assert_same_bits(tb.bitwise_not(a), expect_not(a))
    if a.dtype != bool:
        got = tb.bitwise_count(a)
        assert got.dtype.type is np.uint8
        want = [bin(int(v)).count("1") for v in bits(a)]
        np.testing.assert_array_equal(got, want)


class _Sub(np.ndarray):
    pass


def test_calls_that_are_not_plain_take_the_general_path_with_the_same_results():
    rng = np.random.default_rng(5)
    a = random_array(rng, (6, 40), np.uint16)
    b = random_array(rng, (6, 40), np.uint16)
    index = tb._native.op_index("xor")
    not_plain = {
        "strided": (a[:, ::2], b[:, ::2], None),
        "transposed": (a.T, b.T, None),
        "broadcast": (a, b[:1], None),
        "0-d": (a[0, 0][()], b[0, 0][()], None),
        "in place": (a.copy(), b, "x1"),
        "subclass": (a.view(_Sub), b.view(_Sub), None),
    }
    for name, (x1, x2, out) in not_plain.items():
        o = x1 if out == "x1" else None
        want = np.bitwise_xor(np.asarray(x1), np.asarray(x2))
        if isinstance(x1, np.ndarray):
            assert tb._native.run_plain(index, x1, x2, o) is None, name
        got = tb.bitwise_xor(x1, x2, out=o)
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=name)
        if o is not None:
            assert got is o
    # Two dtypes: the general path promotes integers as numpy does, and refuses a float with an
    # integer (whose bits are not numbers) with its error.
    assert tb._native.run_plain(index, a, b.astype(np.int16), None) is None
    np.testing.assert_array_equal(tb.bitwise_xor(a, b.astype(np.int16)), a ^ b.astype(np.int16))
    with pytest.raises(TypeError, match="share one dtype"):
        tb.bitwise_xor(a, b.astype(np.float32))
    # Byte-swapped dtypes: the general path's error.
    swapped = a.astype(">u2")
    assert tb._native.run_plain(index, swapped, swapped, None) is None
    with pytest.raises(TypeError, match=">u2"):
        tb.bitwise_xor(swapped, swapped)


def test_mixed_integer_dtypes_promote_as_numpy(rng):
    """NEP 50: mixed integer and bool inputs compute in numpy's promoted dtype, as numpy's
    bitwise ufuncs and the array API do; pairs with no integer dtype are refused as numpy
    refuses them."""
    kinds = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    pairs = [
        (tb.bitwise_and, np.bitwise_and), (tb.bitwise_or, np.bitwise_or),
        (tb.bitwise_xor, np.bitwise_xor),
    ]
    for d1 in kinds:
        for d2 in kinds:
            x1 = rng.integers(0, 100, (3, 4)).astype(d1)
            x2 = rng.integers(0, 100, (4,)).astype(d2)
            for f, ref in pairs:
                try:
                    want = ref(x1, x2)
                except TypeError:
                    with pytest.raises(TypeError):
                        f(x1, x2)
                    continue
                got = f(x1, x2)
                assert got.dtype == want.dtype, (d1, d2)
                np.testing.assert_array_equal(got, want)
            if d1 != "bool" and d2 != "bool":
                s1, s2 = x1, (x2 % 4).astype(d2)
                try:
                    want = np.left_shift(s1, s2)
                except TypeError:
                    with pytest.raises(TypeError):
                        tb.bitwise_left_shift(s1, s2)
                    continue
                got = tb.bitwise_left_shift(s1, s2)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
    x = np.arange(8, dtype=np.uint8)
    assert tb.bitwise_and(x, np.uint16(3)).dtype == np.uint16
    np.testing.assert_array_equal(tb.bitwise_invert(x), ~x)
    np.testing.assert_array_equal(tb.bitwise_right_shift(x, np.uint8(1)), x >> 1)
