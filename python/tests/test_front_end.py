"""Front-end promises: in-place calls on arrays no description expresses, packed copies that cannot
be allocated, and lists of floats."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import has_gpu


def test_in_place_on_an_unaligned_array():
    x = np.frombuffer(bytearray(9), np.uint16, offset=1)
    x[:] = [1, 2, 3, 4]
    tb.bitwise_not(x, out=x)
    np.testing.assert_array_equal(x, [65534, 65533, 65532, 65531])


def test_in_place_on_a_byte_stride_that_is_not_whole_elements():
    buf = np.zeros(4 * 5, np.uint8)
    x = np.ndarray((4,), np.uint32, buf, strides=(5,))
    x[:] = [1, 2, 3, 0xFFFF0000]
    want = ~x
    tb.bitwise_not(x, out=x)
    np.testing.assert_array_equal(x, want)
    y = np.ndarray((4,), np.uint32, buf, strides=(5,))
    tb.bitwise_xor(y, np.uint32(7), out=y)
    np.testing.assert_array_equal(y, want ^ 7)


def test_a_packed_copy_that_cannot_be_allocated_is_memory_error():
    # Rows of 2^40 bytes from one byte of memory: the pairwise kernels' packed copy of such an
    # input would need 2 TiB.
    a = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(2, 1 << 40), strides=(0, 0))
    with pytest.raises(MemoryError):
        tb.hamming_cdist(a, a, dtype=np.uint64)
    with pytest.raises(MemoryError):
        tb.knn(a, a, 1, dtype=np.uint64)


def test_lists_of_floats_are_not_truncated():
    a = np.array([3, 5], np.uint8)
    with pytest.raises(TypeError):
        tb.bitwise_and(a, [1.9, 2.5])
    with pytest.raises(TypeError):
        tb.bitwise_and([1.9, 2.5], a)
    np.testing.assert_array_equal(tb.bitwise_and(a, [1, 4]), [1, 4])
    f = np.array([1.5, -0.0], np.float32)
    np.testing.assert_array_equal(tb.bitwise_xor(f, [1.5, 2.0]).view(np.uint32),
                                  f.view(np.uint32) ^ np.array([1.5, 2.0], np.float32).view(np.uint32))


def test_knn_takes_k_by_name_as_faiss_and_scikit_learn_do():
    q = np.array([[0], [255]], np.uint8)
    db = np.array([[15], [0], [255]], np.uint8)
    d, i = tb.knn(q, db, k=2)
    np.testing.assert_array_equal(d, [[0, 4], [0, 4]])
    np.testing.assert_array_equal(i, [[1, 0], [2, 0]])
    d2, i2 = tb.knn(q, db, 2)
    np.testing.assert_array_equal(i2, i)


def test_help_shows_the_default_axes_by_name():
    import inspect

    for f in [tb.bitwise_xor_reduce, tb.hamming_distance]:
        text = str(inspect.signature(f))
        assert "object at 0x" not in text, text
        assert "<op's axes>" in text, text


def test_int8_codes_count_their_stored_bits():
    # sentence-transformers' precision="binary" gives int8 codes: the same bits as uint8.
    rng = np.random.default_rng(7)
    q = rng.integers(-128, 128, size=(3, 16), dtype=np.int8)
    db = rng.integers(-128, 128, size=(500, 16), dtype=np.int8)
    want_d, want_i = tb.knn(q.view(np.uint8), db.view(np.uint8), 5)
    for device in ["cpu"] + (["gpu"] if has_gpu() else []):
        d, i = tb.knn(q, db, 5, device=device)
        np.testing.assert_array_equal(d, want_d)
        np.testing.assert_array_equal(i, want_i)
        np.testing.assert_array_equal(tb.hamming_cdist(q, db, device=device),
                                      tb.hamming_cdist(q.view(np.uint8), db.view(np.uint8)))


def test_an_axis_out_of_range_is_numpy_s_axis_error():
    x = np.zeros((2, 3), np.uint8)
    with pytest.raises(np.exceptions.AxisError) as e:
        tb.bitwise_xor_reduce(x, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        np.bitwise_xor.reduce(x, axis=2)
    # Still a ValueError, as it was, and an IndexError, as numpy's is.
    assert isinstance(e.value, ValueError) and isinstance(e.value, IndexError)
    assert "axis 2 is out of range" in str(e.value)


def test_one_version_everywhere():
    import importlib.metadata
    import pathlib
    import re

    cargo = pathlib.Path(__file__).resolve().parents[2] / "Cargo.toml"
    want = re.search(r'^version = "([^"]+)"', cargo.read_text(), re.M).group(1)
    assert tb.__version__ == want
    assert importlib.metadata.version("tensorbits") == want


def test_every_standard_op_has_a_python_function():
    # The op table is the Rust one; a new op without a function of the package fails here.
    from tensorbits import _native

    covered = {
        _native.op_index(tb._RUNS[n])
        for n in tb.__all__
        if n in tb._RUNS
    }
    missing = [op[0] for i, op in enumerate(tb.ops()) if i not in covered]
    assert not missing, f"ops without a Python function: {missing}"


def test_bool_and_float_codes_are_told_to_pack_their_bits():
    emb = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float32)
    for bad in [emb, emb > 0]:
        with pytest.raises(TypeError, match="np.packbits"):
            tb.knn(bad, bad, 1)
        with pytest.raises(TypeError, match="np.packbits"):
            tb.hamming_cdist(bad, bad)
    codes = np.packbits(emb > 0, axis=-1)
    d, i = tb.knn(codes, codes, 1)
    np.testing.assert_array_equal(i[:, 0], np.arange(4))


FRONTS = [
    (tb.hamming_cdist,
     "(a, b, /, *, out=None, dtype=None, device='auto', level=None, bits=None, bitorder='big')"),
    (tb.binary_dot,
     "(a, b, /, *, bits=None, bitorder='big', dtype=None, out=None, device='auto', level=None)"),
    (tb.knn,
     "(a, b, /, k, *, op='hamming_cdist', largest=None, bits=None, bitorder='big', dtype=None, "
     "device='auto', level=None, id_offset=0)"),
]


@pytest.mark.parametrize("f, signature", FRONTS, ids=lambda x: getattr(x, "__name__", "sig"))
def test_the_builtin_fronts_read_as_functions(f, signature):
    # hamming_cdist and binary_dot are builtins (no Python frame on their plain call): their
    # signature, name, module, docstring and help are a function's.
    import inspect
    import pydoc

    assert str(inspect.signature(f)) == signature
    assert f.__name__ in tb.__all__ and f.__module__ == "tensorbits"
    assert f.__doc__.lstrip().startswith(("All-pairs", "Dot products", "The ``k`` rows")), \
        f.__doc__[:60]
    assert "Examples" in f.__doc__ and "--\n" not in f.__doc__[:200]
    text = pydoc.render_doc(f, renderer=pydoc.plaintext)
    assert f.__name__ + signature in text and "Parameters" in text


@pytest.mark.parametrize("f", [tb.hamming_cdist, tb.binary_dot], ids=lambda f: f.__name__)
def test_the_builtin_fronts_pass_every_keyword_on(f):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, (3, 5), dtype=np.uint8)
    b = rng.integers(0, 256, (7, 5), dtype=np.uint8)
    bits = np.unpackbits(a, axis=-1).astype(np.int64), np.unpackbits(b, axis=-1).astype(np.int64)
    differ = (bits[0][:, None, :] != bits[1][None, :, :]).sum(-1)
    want = differ if f is tb.hamming_cdist else 40 - 2 * differ
    # The defaults spelled out, the plain call's keywords, and ones that take the general path.
    for kw in [{}, {"out": None, "dtype": None, "device": "auto", "level": None, "bits": None,
                    "bitorder": "big"},
               {"device": "cpu"}, {"bits": 40}, {"dtype": "int64" if f is tb.binary_dot
                                                 else "uint64"}]:
        got = f(a, b, **kw)
        np.testing.assert_array_equal(got, want, err_msg=str(kw))
    out = np.full((3, 7), 99, np.int32 if f is tb.binary_dot else np.uint32)
    assert f(a, b, out=out) is out
    np.testing.assert_array_equal(out, want)
    # Fewer bits, from either end of each row.
    little = np.unpackbits(a, axis=-1, bitorder="little")[:, :12].astype(np.int64), \
        np.unpackbits(b, axis=-1, bitorder="little")[:, :12].astype(np.int64)
    differ = (little[0][:, None, :] != little[1][None, :, :]).sum(-1)
    got = f(a, b, bits=12, bitorder="little")
    np.testing.assert_array_equal(got, differ if f is tb.hamming_cdist else 12 - 2 * differ)
    # Errors are the general path's, naming the arguments.
    with pytest.raises(TypeError, match="device"):
        f(a, b, device=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'outt'"):
        f(a, b, outt=None)
    with pytest.raises(TypeError):
        f(a, b, None)
    with pytest.raises(ValueError, match="does not match"):
        f(a, b[:, :4])


def test_bool_counts_and_signed_binary_dot_codes(rng):
    b = rng.integers(0, 2, (4, 9)).astype(bool)
    got = tb.bitwise_count(b)
    assert got.dtype == np.uint8 and np.array_equal(got, b.astype(np.uint8))
    for dt in ["int8", "int16", "int32", "int64"]:
        a = rng.integers(-100, 100, (3, 4)).astype(dt)
        w = rng.integers(-100, 100, (5, 4)).astype(dt)
        u = f"u{np.dtype(dt).itemsize}"
        np.testing.assert_array_equal(tb.binary_dot(a, w), tb.binary_dot(a.view(u), w.view(u)))
        d1, i1 = tb.knn(a, w, 2, op="binary_dot")
        d2, i2 = tb.knn(a.view(u), w.view(u), 2, op="binary_dot")
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_array_equal(i1, i2)


def test_the_knn_front_passes_every_keyword_on(rng):
    # knn's plain call runs in Rust; every other call, and a plain one that fails, takes the
    # general path, with the keywords as given.
    a = rng.integers(0, 256, (4, 6), dtype=np.uint8)
    b = rng.integers(0, 256, (30, 6), dtype=np.uint8)
    differ = (np.unpackbits(a, axis=-1)[:, None, :] != np.unpackbits(b, axis=-1)[None]).sum(-1)
    order = np.argsort(differ, axis=1, kind="stable")[:, :5]
    want = np.take_along_axis(differ, order, 1), order
    for kw in [{}, {"op": "hamming_cdist"}, {"k": 5}, {"largest": False}, {"bits": 48},
               {"device": "cpu"}, {"level": None}, {"id_offset": 0}, {"dtype": "uint64"},
               {"bitorder": "big"}]:
        k = kw.pop("k", None)
        d, i = tb.knn(a, b, k=k, **kw) if k is not None else tb.knn(a, b, np.int64(5), **kw)
        np.testing.assert_array_equal(d, want[0], err_msg=str(kw))
        np.testing.assert_array_equal(i, want[1], err_msg=str(kw))
    d, i = tb.knn(a, b, 5, id_offset=100)
    np.testing.assert_array_equal(i, want[1] + 100)
    d, i = tb.knn(a, b, 5, op="binary_dot")
    dots = 48 - 2 * differ
    top = np.argsort(-dots, axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(i, top)
    np.testing.assert_array_equal(d, np.take_along_axis(dots, top, 1))
    # A list, a non-contiguous array and a Fortran-order one give the same neighbours.
    for b2 in [b.tolist(), np.asfortranarray(b), np.repeat(b, 2, axis=0)[::2]]:
        np.testing.assert_array_equal(tb.knn(a, b2, 5)[1], want[1])
    # Errors are the general path's, naming the arguments.
    with pytest.raises(ValueError, match="k must not be negative"):
        tb.knn(a, b, -1)
    with pytest.raises(TypeError, match="not a bool"):
        tb.knn(a, b, True)
    with pytest.raises(ValueError, match=r"\bk\b"):
        tb.knn(a, b, 31)
    with pytest.raises(ValueError, match="k = "):
        tb.knn(a, b, 2**64)
    with pytest.raises(TypeError, match="op"):
        tb.knn(a, b, 1, op=3)
    with pytest.raises(ValueError):
        tb.knn(a, b, 1, op="no_such_op")
    with pytest.raises(TypeError, match="not a bool"):
        tb.knn(a, b, 1, id_offset=False)
    with pytest.raises(ValueError, match="does not match|length"):
        tb.knn(a, b[:, :4], 1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'kk'"):
        tb.knn(a, b, 1, kk=2)
