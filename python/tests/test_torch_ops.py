"""``import tensorbits.torch``: every function as ``torch.ops.tensorbits.<name>``, checked with
``torch.library.opcheck``, against the numpy front end bit for bit, without copies, and inside
``torch.compile(fullgraph=True)``."""
import numpy as np
import pytest

import tensorbits as tb
from conftest import bits, random_array


@pytest.fixture(scope="module")
def ops(torch):
    import tensorbits.torch as tbt

    return tbt


def tensor(torch, a):
    return torch.from_numpy(np.ascontiguousarray(a))


def as_torch(torch, a):
    """An argument as the torch op takes it: arrays (and lists of them) as tensors."""
    if isinstance(a, np.ndarray):
        return tensor(torch, a)
    if isinstance(a, list):
        return [as_torch(torch, x) for x in a]
    return a


def same(got, want):
    """Equal shapes, dtypes and bits."""
    got = got.numpy()
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(bits(got), bits(want))


INTS = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]


def cases(torch, rng):
    """(op name, args, kwargs, the numpy front end's call) for every registered op."""
    out = []
    for dtype in INTS + ["bool"]:
        a = random_array(rng, (5, 7), dtype)
        b = random_array(rng, (7,), dtype)
        for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            out.append((name, (a, b), {}, getattr(tb, name)))
        out.append(("bitwise_not", (a,), {}, tb.bitwise_not))
        out.append(("invert", (a,), {}, tb.invert))
    for dtype in INTS:
        a = random_array(rng, (4, 6), dtype)
        width = np.dtype(dtype).itemsize * 8
        s = rng.integers(0, width, size=(6,)).astype(dtype)
        out.append(("left_shift", (a, s), {}, tb.left_shift))
        out.append(("right_shift", (a, s), {}, tb.right_shift))
    for dtype in INTS + ["float16", "float32", "float64"]:
        x = random_array(rng, (3, 9), dtype)
        out.append(("bitwise_count", (x,), {}, tb.bitwise_count))
        out.append(("bitwise_count", (x,), {"dtype": torch.uint32}, None))
        out.append(("bitwise_count_sum", (x,), {}, tb.bitwise_count_sum))
        out.append(("bitwise_count_sum", (x,), {"axis": [1], "keepdims": True}, None))
    for dtype in INTS:
        x = random_array(rng, (4, 3, 5), dtype)
        for name in ("bitwise_and_reduce", "bitwise_or_reduce", "bitwise_xor_reduce"):
            out.append((name, (x,), {}, getattr(tb, name)))
            out.append((name, (x,), {"axis": [0, -1]}, None))
            out.append((name, (x,), {"axis": [1], "keepdims": True}, None))
            out.append((name, (x,), {"axis": []}, None))
    for dtype in ("uint8", "uint16", "uint64", "int32"):
        a = random_array(rng, (2, 6, 4), dtype)
        b = random_array(rng, (5, 4), dtype)
        out.append(("hamming_distance", (a, a[::-1]), {}, tb.hamming_distance))
        out.append(("hamming_distance", (a, b[:1]), {"axis": None}, None))
        out.append(("hamming_distance", (a, a), {"axis": [0, 2], "keepdims": True,
                                                 "dtype": torch.uint64}, None))
        out.append(("hamming_cdist", (a, b), {}, tb.hamming_cdist))
        out.append(("hamming_cdist", (a, b), {"dtype": torch.uint16}, None))
        out.append(("knn", (a, b, 3), {}, tb.knn))
        if dtype.startswith("u"):
            out.append(("binary_dot", (a, b), {}, tb.binary_dot))
            out.append(("knn", (a, b, 5), {"op": "binary_dot"}, None))
            out.append(("tanimoto", (a, b), {}, tb.tanimoto))
            out.append(("dice", (a, b), {"dtype": torch.float64}, tb.dice))
            out.append(("knn", (a, b, 4), {"op": "tanimoto"}, None))
        out.append(("knn", (a, b, 2), {"largest": True, "dtype": torch.uint64}, None))
    a = random_array(rng, (6, 3), "uint8")
    for order in ("big", "little"):
        out.append(("hamming_cdist", (a, a), {"bits": 19, "bitorder": order}, None))
        out.append(("knn", (a, a, 4), {"bits": 21, "bitorder": order}, None))
        out.append(("hamming_distance", (a, a[::-1]), {"bits": 13, "bitorder": order}, None))
        out.append(("range_search", (a, a, 9.0), {"bits": 21, "bitorder": order}, None))
    q = random_array(rng, (4, 3), "uint8")
    db = random_array(rng, (50, 3), "uint8")
    out.append(("knn", (q, db, 3), {"id_offset": 100}, None))
    for op, largest in (("hamming_cdist", None), ("binary_dot", True)):
        p1 = tb.knn(q, db[:20], 5, op=op)
        p2 = tb.knn(q, db[20:23], 3, op=op, id_offset=20)
        p3 = tb.knn(q, db[23:], 9, op=op, id_offset=23)
        parts = ([p1[0], p2[0], p3[0]], [p1[1], p2[1], p3[1]])
        out.append(("merge_topk", (*parts, 7), {"largest": largest}, None))
        out.append(("merge_topk", (*parts, 50), {"largest": largest}, None))
    for dtype in ("uint8", "uint32", "int16"):
        a = random_array(rng, (5, 4), dtype)
        b = random_array(rng, (60, 4), dtype)
        width = 4 * np.dtype(dtype).itemsize * 8
        out.append(("range_search", (a, b, width / 2), {}, tb.range_search))
        out.append(("range_search", (a, b, width / 2 + 3), {"largest": True,
                                                            "dtype": torch.uint16}, None))
        if dtype.startswith("u"):
            out.append(("range_search", (a, b, 4.0), {"op": "binary_dot"}, None))
            out.append(("range_search", (a, b, 0.25), {"op": "tanimoto"}, None))
    for dtype in ("float32", "float16", "float64", "int16", "uint8", "bool", "int64"):
        x = random_array(rng, (4, 13), dtype)
        out.append(("binarize", (x,), {}, tb.binarize))
        out.append(("binarize", (x,), {"bitorder": "little"}, None))
    x = rng.standard_normal((8, 20)).astype(np.float32)
    out.append(("binarize", (x,), {"threshold": 0.25}, None))
    out.append(("binarize", (x,), {"thresholds": x.mean(axis=0)}, None))
    codes = tb.binarize(rng.standard_normal((30, 20)))
    cand = rng.integers(-1, 30, size=(8, 6))
    out.append(("rescore", (x, codes, cand), {}, tb.rescore))
    out.append(("rescore", (x.astype(np.float64), codes, cand, 4), {"bitorder": "big"}, None))
    return out


def numpy_call(name, args, kwargs):
    """The numpy front end's call with the same arguments."""
    import torch

    kw = dict(kwargs)
    if isinstance(kw.get("dtype"), torch.dtype):
        kw["dtype"] = str(kw["dtype"]).removeprefix("torch.")
    if "axis" in kw:
        # None is the op's own axes, as the numpy functions' default.
        axis = kw.pop("axis")
        if axis is not None:
            kw["axis"] = tuple(axis)
    if name == "binarize" and "thresholds" in kw:
        kw["threshold"] = kw.pop("thresholds")
    if name == "rescore" and len(args) == 4:
        return tb.rescore(*args, **kw)
    if name == "merge_topk":
        return tb.merge_topk(list(zip(args[0], args[1])), args[2], **kw)
    return getattr(tb, name)(*args, **kw)


def test_every_function_is_registered(torch, ops):
    for name in ops.__all__:
        assert hasattr(torch.ops.tensorbits, name), name
    missing = sorted(set(tb.__all__) - set(ops.__all__))
    # The rest are not tensor functions (run takes any op by name: each has its own here; a
    # Database is an object). The array API's aliases (bitwise_invert, ...) are registered by
    # their first names.
    assert missing == [
        "Database",
        "bitwise_invert",
        "bitwise_left_shift",
        "bitwise_right_shift",
        "cpu_instruction_set",
        "get_num_threads",
        "gpu_name",
        "ops",
        "run",
        "set_num_threads",
    ], missing


def test_results_equal_the_numpy_front_end_bit_for_bit(torch, ops, rng):
    for name, args, kwargs, _ in cases(torch, rng):
        targs = [as_torch(torch, a) for a in args]
        tkw = {k: tensor(torch, v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        got = getattr(torch.ops.tensorbits, name)(*targs, **tkw)
        want = numpy_call(name, args, kwargs)
        if isinstance(want, tuple):
            assert isinstance(got, tuple) and len(got) == len(want), name
            for g, w in zip(got, want):
                same(g, w)
        else:
            same(got, want)


def test_opcheck_passes_for_every_op(torch, ops, rng):
    seen = set()
    for name, args, kwargs, _ in cases(torch, rng):
        targs = tuple(as_torch(torch, a) for a in args)
        tkw = {k: tensor(torch, v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        op = getattr(torch.ops.tensorbits, name)
        result = torch.library.opcheck(op, targs, tkw)
        assert all(v == "SUCCESS" for v in result.values()), (name, kwargs, result)
        seen.add(name)
    assert seen == set(ops.__all__), set(ops.__all__) - seen


def test_fake_tensors_give_shapes_and_dtypes_without_running(torch, ops):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty((3, 1000, 32), dtype=torch.uint8)
        b = torch.empty((200000, 32), dtype=torch.uint8)
        d = torch.ops.tensorbits.hamming_cdist(a, b)
        assert d.shape == (3, 1000, 200000) and d.dtype == torch.uint32
        d, i = torch.ops.tensorbits.knn(a, b, 10, op="binary_dot")
        assert d.shape == (3, 1000, 10) and d.dtype == torch.int32 and i.dtype == torch.int64
        x = torch.empty((5, 2, 769), dtype=torch.float16)
        assert torch.ops.tensorbits.binarize(x).shape == (5, 2, 97)
        s = torch.ops.tensorbits.bitwise_count_sum(a, axis=[1], keepdims=True, dtype=torch.uint64)
        assert s.shape == (3, 1, 32) and s.dtype == torch.uint64
        # A dtype the op lacks is refused when the graph is traced, as the call would be.
        with pytest.raises(TypeError):
            torch.ops.tensorbits.left_shift(x, x)


def test_tensors_cross_without_copies(torch, ops, rng):
    for dtype in INTS + ["bool", "float16", "float32", "float64"]:
        base = tensor(torch, random_array(rng, (6, 10), dtype))
        t = base[::2, 1::3]  # strided: a copy would be contiguous
        host = ops._host(t, "x", "test")
        assert host.ctypes.data == t.data_ptr(), dtype
        assert host.strides == tuple(s * t.element_size() for s in t.stride()), dtype
        r = np.arange(6, dtype=host.dtype if dtype != "bool" else np.uint8)
        assert ops._result(r).data_ptr() == r.ctypes.data, dtype


def test_other_devices_and_dtypes_are_clear_errors(torch, ops):
    # Meta tensors get shapes (test_meta_tensors_get_shapes_and_dtypes); the data of a tensor on
    # another device than the CPU is refused with the way to move it.
    a = torch.zeros((2, 4), dtype=torch.uint8, device="meta")
    with pytest.raises(RuntimeError, match=r"a is on meta.*run on the CPU.*a\.cpu\(\)"):
        ops._host(a, "a", "hamming_cdist")
    x = torch.zeros((2, 4), dtype=torch.bfloat16)
    with pytest.raises(TypeError, match=r"bfloat16.*x\.view\(torch\.int16\)"):
        torch.ops.tensorbits.bitwise_count(x)
    u = torch.zeros((2, 4), dtype=torch.uint8)
    with pytest.raises(ValueError, match="k = 5 is more than"):
        torch.ops.tensorbits.knn(u, u, 5)


def test_fullgraph_compile_of_binarize_knn_and_post_processing(torch, ops, rng):
    emb = torch.from_numpy(rng.standard_normal((300, 64)).astype(np.float32))
    queries = torch.from_numpy(rng.standard_normal((7, 64)).astype(np.float32))
    thresholds = emb.median(dim=0).values
    labels = torch.from_numpy(rng.integers(0, 5, size=300))

    def search(queries, emb, labels):
        codes = ops.binarize(emb, thresholds)
        q = ops.binarize(queries, thresholds)
        d, i = torch.ops.tensorbits.knn(q, codes, 12)
        # Post-processing in torch: a similarity from the distances (exact: a power-of-two
        # divisor), the neighbours' labels voted, and the float rescoring of the candidates.
        score = 1.0 - d.to(torch.float32) / 64.0
        votes = torch.nn.functional.one_hot(labels[i], 5).sum(dim=1).argmax(dim=1)
        s, j = torch.ops.tensorbits.rescore(queries, codes, i, 5)
        return score, i, votes, s, j

    eager = search(queries, emb, labels)
    torch._dynamo.reset()
    compiled = torch.compile(search, fullgraph=True)(queries, emb, labels)
    for e, c in zip(eager, compiled):
        assert e.dtype == c.dtype and e.shape == c.shape
        np.testing.assert_array_equal(bits(c.numpy()), bits(e.numpy()))
    # The eager results are the numpy front end's.
    d, i = tb.knn(tb.binarize(queries.numpy(), thresholds.numpy()),
                  tb.binarize(emb.numpy(), thresholds.numpy()), 12)
    np.testing.assert_array_equal(eager[1].numpy(), i)


def test_the_readme_example_runs_and_prints_what_it_says(torch, capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### PyTorch operators", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    torch._dynamo.reset()
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.strip()
    said = block.split("print(", 1)[1].split("# ", 1)[1].splitlines()[0].strip()
    assert printed == said


def test_the_module_docstring_example_runs(torch, ops):
    import doctest

    result = doctest.testmod(ops, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0, result


def test_meta_tensors_get_shapes_and_dtypes(torch, ops):
    meta = lambda shape, dt=torch.uint8: torch.empty(shape, dtype=dt, device="meta")  # noqa: E731
    r = torch.ops.tensorbits.bitwise_and(meta((3, 4)), meta((4,)))
    assert r.device.type == "meta" and tuple(r.shape) == (3, 4) and r.dtype == torch.uint8
    d, i = torch.ops.tensorbits.knn(meta((5, 8)), meta((7, 8)), 3)
    assert d.device.type == "meta" and tuple(d.shape) == (5, 3) and i.dtype == torch.int64
    c = torch.ops.tensorbits.binarize(meta((2, 9), torch.float32))
    assert tuple(c.shape) == (2, 2) and c.dtype == torch.uint8
