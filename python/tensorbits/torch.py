"""tensorbits as PyTorch operators: ``import tensorbits.torch`` registers each function of the
package as ``torch.ops.tensorbits.<name>`` with ``torch.library.custom_op``.

Each op has a fake (meta) implementation that gives its results' shapes and dtypes without
running it, so the ops stay whole inside ``torch.compile(fullgraph=True)`` graphs and pass
``torch.library.opcheck``. CPU tensors go in and come out without copies, every dtype numpy has
(uint16, uint32 and uint64 included). Tensors on another device raise a ``RuntimeError`` that
says to move them to the CPU.

>>> import torch
>>> import tensorbits.torch  # registers torch.ops.tensorbits.*
>>> codes = torch.tensor([[0b0000], [0b0111], [0b0001], [0b1111]], dtype=torch.uint8)
>>> d, i = torch.ops.tensorbits.knn(torch.tensor([[0b0011]], dtype=torch.uint8), codes, 3)
>>> d, i
(tensor([[1, 1, 2]], dtype=torch.uint32), tensor([[1, 2, 0]]))

The ops are also this module's attributes (``tensorbits.torch.knn`` is
``torch.ops.tensorbits.knn``), and ``binarize`` here takes a tensor of thresholds in the place of
a number, as ``tensorbits.binarize`` does.
"""

import functools

import numpy as np
import torch

# Custom ops import Dynamo on their first call, and Dynamo imports triton where it is installed.
# triton's LLVM crashes the process when it loads after Mesa's (lavapipe's) LLVM: load it now,
# before this process makes a GPU device on lavapipe.
import torch._dynamo  # noqa: F401

import tensorbits as _tb

__all__ = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "bitwise_not",
    "invert",
    "bitwise_count",
    "bitwise_and_reduce",
    "bitwise_or_reduce",
    "bitwise_xor_reduce",
    "bitwise_count_sum",
    "hamming_distance",
    "hamming_cdist",
    "binary_dot",
    "tanimoto",
    "dice",
    "knn",
    "merge_topk",
    "range_search",
    "binarize",
    "rescore",
]

_LIBRARY = "tensorbits"

# torch's dtypes that numpy has, and so tensorbits: the tensors of these cross without a copy.
_NUMPY = {
    torch.bool: np.dtype(np.bool_),
    torch.uint8: np.dtype(np.uint8),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.complex64: np.dtype(np.complex64),
    torch.complex128: np.dtype(np.complex128),
}
for _name in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        _NUMPY[getattr(torch, _name)] = np.dtype(_name)
_TORCH = {v: k for k, v in _NUMPY.items()}


def _check(t, name, op, meta=True):
    """The checks every input passes, in the real and the fake implementation alike; ``meta``
    tensors (shapes and dtypes, no data) reach only the fake ones."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"tensorbits.{op}: {name} must be a tensor, got {type(t).__name__}")
    if t.device.type != "cpu" and not (meta and t.device.type == "meta"):
        raise RuntimeError(
            f"tensorbits.{op}: {name} is on {t.device}; tensorbits' PyTorch ops run on the CPU: "
            f"move the inputs there first ({name}.cpu()) and the results back (.to(device))"
        )
    if t.dtype not in _NUMPY:
        width = t.element_size() * 8
        raise TypeError(
            f"tensorbits.{op}: {name} is {t.dtype}, which numpy has no dtype for; view its bits "
            f"as integers of the same width first ({name}.view(torch.int{width}))"
        )


def _host(t, name, op):
    """The numpy array over a CPU tensor's own memory (no copy, any strides)."""
    _check(t, name, op, meta=False)
    return t.detach().numpy()


def _result(x):
    """A new numpy result as a tensor over the same memory."""
    return torch.from_numpy(np.asarray(x))


def _np_dtype(dtype, op):
    if dtype is None:
        return None
    if dtype not in _NUMPY:
        raise TypeError(f"tensorbits.{op}: dtype {dtype} has no numpy dtype")
    return _NUMPY[dtype]


_PROBED: dict = {}  # (fn, dtypes, ndims, kwargs) -> torch.dtype


def _probe(fn, dtypes, ndims, kwargs):
    """The dtype of ``fn``'s (first) result for inputs of ``dtypes`` and ranks ``ndims``, from a
    call on one-element arrays (once per key): what the fake implementations report, and the same
    errors for the same dtypes and arguments as the real call."""
    key = (fn, dtypes, ndims, kwargs)
    dtype = _PROBED.get(key)
    if dtype is None:
        arrays = [np.zeros((1,) * nd, dtype=_NUMPY[dt]) for dt, nd in zip(dtypes, ndims)]
        result = fn(*arrays, **dict(kwargs))
        if isinstance(result, tuple):
            result = result[0]
        dtype = _PROBED[key] = _TORCH[np.asarray(result).dtype]
    return dtype


def _kw(**kwargs):
    """Keyword arguments as a hashable key for ``_probe``: lists become tuples."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))


def _axes(axis):
    """The numpy-front ``axis`` argument: the op's own axes for ``None``."""
    return {} if axis is None else {"axis": tuple(axis)}


def _reduced(shape, axis, default, keepdims):
    """``shape`` with ``axis`` (or the op's ``default`` axes) summed away or kept as 1."""
    nd = len(shape)
    axes = default(nd) if axis is None else [a + nd if a < 0 else a for a in axis]
    if keepdims:
        return [1 if d in axes else s for d, s in enumerate(shape)]
    return [s for d, s in enumerate(shape) if d not in axes]


def _register(name, schema, impl, fake):
    op = torch.library.custom_op(f"{_LIBRARY}::{name}", impl, mutates_args=(), schema=schema)
    op.register_fake(fake)
    return getattr(getattr(torch.ops, _LIBRARY), name)


def _elementwise(name):
    fn = getattr(_tb, name)

    def impl(x1, x2):
        return _result(fn(_host(x1, "x1", name), _host(x2, "x2", name)))

    def fake(x1, x2):
        _check(x1, "x1", name)
        _check(x2, "x2", name)
        dtype = _probe(fn, (x1.dtype, x2.dtype), (1, 1), ())
        return x1.new_empty(torch.broadcast_shapes(x1.shape, x2.shape), dtype=dtype)

    return _register(name, "(Tensor x1, Tensor x2) -> Tensor", impl, fake)


def _unary(name, fn):
    def impl(x):
        return _result(fn(_host(x, "x", name)))

    def fake(x):
        _check(x, "x", name)
        return x.new_empty(x.shape, dtype=_probe(fn, (x.dtype,), (1,), ()))

    return _register(name, "(Tensor x) -> Tensor", impl, fake)


def _count(name):
    fn = getattr(_tb, name)

    def impl(x, dtype=None):
        return _result(fn(_host(x, "x", name), dtype=_np_dtype(dtype, name)))

    def fake(x, dtype=None):
        _check(x, "x", name)
        out = _probe(fn, (x.dtype,), (1,), _kw(dtype=_np_dtype(dtype, name)))
        return x.new_empty(x.shape, dtype=out)

    return _register(name, "(Tensor x, ScalarType? dtype=None) -> Tensor", impl, fake)


def _every_axis(nd):
    return list(range(nd))


def _last_axis(nd):
    return [nd - 1]


def _reduction(name):
    fn = getattr(_tb, name)

    def impl(x, axis=None, keepdims=False, dtype=None):
        return _result(fn(_host(x, "x", name), keepdims=keepdims, dtype=_np_dtype(dtype, name),
                          **_axes(axis)))

    def fake(x, axis=None, keepdims=False, dtype=None):
        _check(x, "x", name)
        kw = _kw(keepdims=keepdims, dtype=_np_dtype(dtype, name), **_axes(axis))
        out = _probe(fn, (x.dtype,), (x.dim(),), kw)
        return x.new_empty(_reduced(list(x.shape), axis, _every_axis, keepdims), dtype=out)

    return _register(
        name,
        "(Tensor x, int[]? axis=None, bool keepdims=False, ScalarType? dtype=None) -> Tensor",
        impl,
        fake,
    )


def _hamming_distance():
    name = "hamming_distance"
    fn = _tb.hamming_distance

    def impl(x1, x2, axis=None, keepdims=False, dtype=None, bits=None, bitorder="big"):
        return _result(fn(_host(x1, "x1", name), _host(x2, "x2", name), keepdims=keepdims,
                          dtype=_np_dtype(dtype, name), bits=bits, bitorder=bitorder,
                          **_axes(axis)))

    def fake(x1, x2, axis=None, keepdims=False, dtype=None, bits=None, bitorder="big"):
        _check(x1, "x1", name)
        _check(x2, "x2", name)
        shape = list(torch.broadcast_shapes(x1.shape, x2.shape))
        kw = _kw(keepdims=keepdims, dtype=_np_dtype(dtype, name), bitorder=bitorder, **_axes(axis))
        out = _probe(fn, (x1.dtype, x2.dtype), (len(shape), len(shape)), kw)
        return x1.new_empty(_reduced(shape, axis, _last_axis, keepdims), dtype=out)

    return _register(
        name,
        "(Tensor x1, Tensor x2, int[]? axis=None, bool keepdims=False, ScalarType? dtype=None, "
        "int? bits=None, str bitorder=\"big\") -> Tensor",
        impl,
        fake,
    )


def _codes(a, b, name):
    _check(a, "a", name)
    _check(b, "b", name)
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError(
            f"tensorbits.{name}: codes are [..., rows, K]; got a of {a.dim()} and b of "
            f"{b.dim()} dimensions"
        )
    return list(torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]))


def _pairwise(name):
    fn = getattr(_tb, name)

    def impl(a, b, dtype=None, bits=None, bitorder="big"):
        return _result(fn(_host(a, "a", name), _host(b, "b", name), dtype=_np_dtype(dtype, name),
                          bits=bits, bitorder=bitorder))

    def fake(a, b, dtype=None, bits=None, bitorder="big"):
        batch = _codes(a, b, name)
        kw = _kw(dtype=_np_dtype(dtype, name), bitorder=bitorder)
        out = _probe(fn, (a.dtype, b.dtype), (2, 2), kw)
        return a.new_empty(batch + [a.shape[-2], b.shape[-2]], dtype=out)

    return _register(
        name,
        "(Tensor a, Tensor b, ScalarType? dtype=None, int? bits=None, str bitorder=\"big\") "
        "-> Tensor",
        impl,
        fake,
    )


_knn_1 = functools.partial(_tb.knn, k=1)


def _knn():
    name = "knn"

    def impl(a, b, k, op="hamming_cdist", largest=None, bits=None, bitorder="big", dtype=None,
             id_offset=0):
        d, i = _tb.knn(_host(a, "a", name), _host(b, "b", name), k, op=op, largest=largest,
                       bits=bits, bitorder=bitorder, dtype=_np_dtype(dtype, name),
                       id_offset=id_offset)
        return _result(d), _result(i)

    def fake(a, b, k, op="hamming_cdist", largest=None, bits=None, bitorder="big", dtype=None,
             id_offset=0):
        if id_offset < 0:
            raise ValueError(f"id_offset must not be negative, got {id_offset}")
        batch = _codes(a, b, name)
        if k < 0:
            raise ValueError(f"k must not be negative, got {k}")
        kw = _kw(op=op, largest=largest, bitorder=bitorder, dtype=_np_dtype(dtype, name))
        out = _probe(_knn_1, (a.dtype, b.dtype), (2, 2), kw)
        shape = batch + [a.shape[-2], k]
        return a.new_empty(shape, dtype=out), a.new_empty(shape, dtype=torch.int64)

    return _register(
        name,
        "(Tensor a, Tensor b, int k, str op=\"hamming_cdist\", bool? largest=None, "
        "int? bits=None, str bitorder=\"big\", ScalarType? dtype=None, int id_offset=0) "
        "-> (Tensor, Tensor)",
        impl,
        fake,
    )


def _merge_topk():
    name = "merge_topk"

    def impl(values, indices, k, largest=None):
        if len(values) != len(indices):
            raise ValueError(f"tensorbits.{name}: {len(values)} values and {len(indices)} indices")
        parts = [(_host(v, "values", name), _host(i, "indices", name))
                 for v, i in zip(values, indices)]
        d, i = _tb.merge_topk(parts, k, largest=largest)
        return _result(d), _result(i)

    def fake(values, indices, k, largest=None):
        if len(values) != len(indices):
            raise ValueError(f"tensorbits.{name}: {len(values)} values and {len(indices)} indices")
        for v, i in zip(values, indices):
            _check(v, "values", name)
            _check(i, "indices", name)
        if k < 0:
            raise ValueError(f"k must not be negative, got {k}")
        rows = values[0].shape[0] if values else 0
        width = min(k, sum(v.shape[-1] for v in values))
        dtype = values[0].dtype if values else torch.int64
        like = values[0] if values else torch.empty(0)
        return (like.new_empty([rows, width], dtype=dtype),
                like.new_empty([rows, width], dtype=torch.int64))

    return _register(
        name,
        "(Tensor[] values, Tensor[] indices, int k, bool? largest=None) -> (Tensor, Tensor)",
        impl,
        fake,
    )


def _range_values(a, b, **kwargs):
    """range_search's values alone, for ``_probe``."""
    return _tb.range_search(a, b, 0, **kwargs)[1]


def _range_search():
    name = "range_search"

    def impl(a, b, threshold, op="hamming_cdist", largest=None, bits=None, bitorder="big",
             dtype=None):
        lims, values, indices = _tb.range_search(
            _host(a, "a", name), _host(b, "b", name), threshold, op=op, largest=largest,
            bits=bits, bitorder=bitorder, dtype=_np_dtype(dtype, name))
        return _result(lims), _result(values), _result(indices)

    def fake(a, b, threshold, op="hamming_cdist", largest=None, bits=None, bitorder="big",
             dtype=None):
        _check(a, "a", name)
        _check(b, "b", name)
        if a.dim() != 2 or b.dim() != 2:
            raise ValueError(
                f"tensorbits.{name}: codes are [M, K] and [N, K]; got a of {a.dim()} and b of "
                f"{b.dim()} dimensions"
            )
        kw = _kw(op=op, largest=largest, bitorder=bitorder, dtype=_np_dtype(dtype, name))
        out = _probe(_range_values, (a.dtype, b.dtype), (2, 2), kw)
        # The number of hits is known only once the search has run.
        hits = torch.library.get_ctx().new_dynamic_size()
        return (a.new_empty([a.shape[0] + 1], dtype=torch.int64), a.new_empty([hits], dtype=out),
                a.new_empty([hits], dtype=torch.int64))

    return _register(
        name,
        "(Tensor a, Tensor b, float threshold, str op=\"hamming_cdist\", bool? largest=None, "
        "int? bits=None, str bitorder=\"big\", ScalarType? dtype=None) -> (Tensor, Tensor, Tensor)",
        impl,
        fake,
    )


def _binarize():
    name = "binarize"

    def impl(x, threshold=0, thresholds=None, bitorder="big"):
        t = threshold if thresholds is None else _host(thresholds, "thresholds", name)
        return _result(_tb.binarize(_host(x, "x", name), t, bitorder=bitorder))

    def fake(x, threshold=0, thresholds=None, bitorder="big"):
        _check(x, "x", name)
        if thresholds is not None:
            _check(thresholds, "thresholds", name)
        _probe(_tb.binarize, (x.dtype,), (1,), _kw(bitorder=bitorder))
        if x.dim() == 0:
            raise ValueError("x: binarize packs the last axis; got a 0-d tensor")
        return x.new_empty(list(x.shape[:-1]) + [(x.shape[-1] + 7) // 8], dtype=torch.uint8)

    return _register(
        name,
        "(Tensor x, Scalar threshold=0, Tensor? thresholds=None, str bitorder=\"big\") -> Tensor",
        impl,
        fake,
    )


def _rescore():
    name = "rescore"

    def impl(queries, codes, candidates, k=None, bitorder="big"):
        s, i = _tb.rescore(_host(queries, "queries", name), _host(codes, "codes", name),
                           _host(candidates, "candidates", name), k, bitorder=bitorder)
        return _result(s), _result(i)

    def fake(queries, codes, candidates, k=None, bitorder="big"):
        for t, n in ((queries, "queries"), (codes, "codes"), (candidates, "candidates")):
            _check(t, n, name)
        if queries.dim() != 2 or candidates.dim() != 2:
            raise ValueError(
                f"tensorbits.rescore: queries and candidates are [M, D] and [M, C]; got "
                f"{queries.dim()} and {candidates.dim()} dimensions"
            )
        shape = [queries.shape[0], candidates.shape[1] if k is None else k]
        return (queries.new_empty(shape, dtype=torch.float32),
                queries.new_empty(shape, dtype=torch.int64))

    return _register(
        name,
        "(Tensor queries, Tensor codes, Tensor candidates, int? k=None, str bitorder=\"big\") "
        "-> (Tensor, Tensor)",
        impl,
        fake,
    )


bitwise_and = _elementwise("bitwise_and")
bitwise_or = _elementwise("bitwise_or")
bitwise_xor = _elementwise("bitwise_xor")
left_shift = _elementwise("left_shift")
right_shift = _elementwise("right_shift")
bitwise_not = _unary("bitwise_not", _tb.bitwise_not)
invert = _unary("invert", _tb.invert)
bitwise_count = _count("bitwise_count")
bitwise_and_reduce = _reduction("bitwise_and_reduce")
bitwise_or_reduce = _reduction("bitwise_or_reduce")
bitwise_xor_reduce = _reduction("bitwise_xor_reduce")
bitwise_count_sum = _reduction("bitwise_count_sum")
hamming_distance = _hamming_distance()
hamming_cdist = _pairwise("hamming_cdist")
binary_dot = _pairwise("binary_dot")
tanimoto = _pairwise("tanimoto")
dice = _pairwise("dice")
knn = _knn()
merge_topk = _merge_topk()
range_search = _range_search()
rescore = _rescore()
_binarize_op = _binarize()


def binarize(x, threshold=0, *, bitorder="big"):
    """``torch.ops.tensorbits.binarize``, with ``threshold`` a number or a tensor (one threshold
    per element of the last axis, or a 0-d one), as ``tensorbits.binarize`` takes it."""
    if isinstance(threshold, torch.Tensor):
        return _binarize_op(x, thresholds=threshold, bitorder=bitorder)
    return _binarize_op(x, threshold, bitorder=bitorder)
