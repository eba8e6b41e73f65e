"""tensorbits: bitwise tensor operators with exact bits on the CPU and on any GPU.

Functions follow numpy's names and conventions (``bitwise_and``, ``bitwise_or``, ``bitwise_xor``,
``bitwise_not``/``invert``, ``left_shift``, ``right_shift``, ``bitwise_count``), and add
reductions (``bitwise_xor_reduce`` ...), Hamming distances (``hamming_distance``,
``hamming_cdist``) and binary k-nearest-neighbour search (``knn``).

Inputs are numpy arrays of any strides, which are read where they lie (reversed views included),
objects with ``__dlpack__`` such as PyTorch CPU tensors, which come in through DLPack without a
copy and whose type the result takes, and Python scalars, which take the other input's dtype.
Every call takes ``device="cpu" | "gpu" | "auto"`` (``auto`` runs on the CPU: the data lies in host
memory, where the CPU kernels run at memory bandwidth) and ``level=`` (a DirectML feature level
such as ``"3_0"``, default ``"EXT"``). Element-wise ops also take ``broadcast="numpy" | "none" |
"pdpd"`` and, for ``pdpd``, ``broadcast_axis=``. Results follow numpy: a 0-d result is a numpy
scalar. The reductions reduce every axis by default, as ``np.sum`` does (``np.bitwise_xor.reduce``
reduces axis 0: pass ``axis=0`` for its result).

The examples in the docstrings assume ``import numpy as np`` and ``import tensorbits as tb``.

Semantics are the library's (see its README): ops act on the stored bits of every type (floats
included); shifts by a negative count or one at least the bit width give 0 (or -1 for a right
shift of a negative value); ``bitwise_count`` counts the bits of the stored two's complement
pattern, so ``bitwise_count(np.int8(-1))`` is 8 where numpy's is 1 (numpy counts the absolute
value). There is no type promotion: the inputs of a call share one dtype.

Errors: a dtype the op does not support raises ``TypeError``; shapes, broadcasting and axes raise
``ValueError``; a GPU failure raises ``RuntimeError``; each with the library's message, naming
tensors by the function's parameters (``x1``, ``a``, ``out``).
"""

import math
import operator
import os
import sys

import numpy as np

from . import _native

__version__ = _native.__version__

__all__ = [
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "invert",
    "bitwise_invert",
    "left_shift",
    "right_shift",
    "bitwise_left_shift",
    "bitwise_right_shift",
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
    "Database",
    "binarize",
    "rescore",
    "run",
    "ops",
    "gpu_name",
    "set_num_threads",
    "get_num_threads",
    "cpu_instruction_set",
]

class _Default:
    """The default of an ``axis``/``axes`` argument: the op's own axes. Shown as ``<op's axes>``."""

    __slots__ = ()

    def __repr__(self):
        return "<op's axes>"


_DEFAULT = _Default()


def _wrapper(x):
    """A function giving a numpy result the type of ``x``, a ``__dlpack__`` object."""
    module = sys.modules.get(type(x).__module__.split(".")[0])
    from_dlpack = getattr(module, "from_dlpack", None)
    if from_dlpack is None or module is np:
        return None

    def wrap(result):
        if any(s < 0 for s in result.strides):
            result = np.ascontiguousarray(result)
        return from_dlpack(result)

    return wrap


def _from_dlpack(x, name):
    try:
        return np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise TypeError(
            f"{name}: cannot read this {type(x).__name__} through DLPack in place ({e}); "
            "tensorbits takes arrays in host (CPU) memory"
        ) from e


def _scalar(x, dtype, name):
    """A Python scalar as a 0-d array of ``dtype``, refusing values the dtype cannot hold."""
    dtype = np.dtype(dtype)
    if isinstance(x, (bool, np.bool_)) or dtype.kind == "b":
        if dtype.kind == "b" and not isinstance(x, (bool, np.bool_)) and x not in (0, 1):
            raise OverflowError(f"{name}: {x!r} is not a bool")
        return np.asarray(x, dtype=dtype)
    if isinstance(x, int):
        if dtype.kind not in "iu":
            raise TypeError(f"{name}: an integer does not take the dtype {dtype}")
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(f"{name}: Python integer {x} out of bounds for {dtype}")
        return np.asarray(x, dtype=dtype)
    if isinstance(x, float):
        if dtype.kind != "f":
            raise TypeError(f"{name}: a float does not take the dtype {dtype}")
        return np.asarray(x, dtype=dtype)
    return np.asarray(x)


def _inputs(xs, names):
    """numpy arrays for the inputs, and the function giving results the callers' type."""
    arrays = [None] * len(xs)
    wrap = None
    for i, x in enumerate(xs):
        if isinstance(x, np.ndarray):
            arrays[i] = x
        elif hasattr(x, "__dlpack__") and not isinstance(x, np.generic):
            arrays[i] = _from_dlpack(x, names[i])
            wrap = wrap or _wrapper(x)
        elif isinstance(x, np.generic):
            arrays[i] = np.asarray(x)
    ref = next((a for a in arrays if a is not None), None)
    for i, x in enumerate(xs):
        if arrays[i] is None:
            if isinstance(x, (bool, int, float)):
                arrays[i] = _scalar(x, ref.dtype, names[i]) if ref is not None else np.asarray(x)
            elif isinstance(x, (list, tuple)):
                raw = np.asarray(x)
                # Floats are not truncated into an integer dtype: numpy refuses them too.
                if ref is not None and raw.dtype.kind in "fc" and ref.dtype.kind not in "fc":
                    raise TypeError(
                        f"{names[i]}: a list of {raw.dtype} does not take the dtype {ref.dtype} "
                        f"without losing its values; convert it with np.asarray(..., "
                        f"dtype=np.{ref.dtype}) if that is meant"
                    )
                arrays[i] = np.asarray(x, dtype=ref.dtype) if ref is not None else raw
            else:
                raise TypeError(
                    f"{names[i]}: expected a numpy array, an object with __dlpack__ or a "
                    f"Python scalar, got {type(x).__name__}"
                )
            ref = ref if ref is not None else arrays[i]
    return arrays, wrap


def _out(out):
    if out is None:
        return None
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("out: expected one array")
        out = out[0]
    if isinstance(out, np.ndarray):
        return out
    if hasattr(out, "__dlpack__"):
        return _from_dlpack(out, "out")
    raise TypeError(f"out: expected a numpy array or an object with __dlpack__, got {type(out).__name__}")


def _present(result, flips, wrap):
    """A new result as the caller gets it: reversed back along ``flips``, a numpy scalar when 0-d
    (as numpy's functions give), or the input's array type through ``wrap``."""
    if flips:
        index = tuple(slice(None, None, -1) if j in flips else slice(None) for j in range(result.ndim))
        result = result[index]
    if wrap is not None:
        return wrap(result)
    return result[()] if result.ndim == 0 else result


def _axes(axis, ndim):
    if axis is _DEFAULT:
        return None
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, list):
        raise TypeError("axis must be an integer or a tuple of integers, not a list (as numpy)")
    axes = list(axis) if isinstance(axis, tuple) else [axis]
    for a in axes:
        if isinstance(a, (bool, np.bool_)):
            raise TypeError("axis must be an integer or a tuple of integers, not a bool")
    return [operator.index(a) for a in axes]


def _dtype_name(dtype):
    return None if dtype is None else np.dtype(dtype).name


_OP_INDEX = {}


def _op_index(op):
    """The index of the op named ``op`` (any of its names), looked up once per name."""
    index = _OP_INDEX.get(op)
    if index is None:
        index = _OP_INDEX[op] = _native.op_index(op)
    return index


_TENSOR_NAME = None
_SPEC_NAMES = {}


def _spec_names(op):
    """The library's names of the op's tensors (DirectML's ``ATensor``, ``BTensor``, from the
    spec's input names), looked up once per op."""
    names = _SPEC_NAMES.get(op)
    if names is None:
        names = ((), ())
        for name, _short, inputs, _summary in _native.ops():
            if _native.op_index(name) == op:
                names = (tuple("".join(p[:1].upper() + p[1:] for p in i.split("_")) + "Tensor"
                               for i in inputs), tuple(inputs))
        _SPEC_NAMES[op] = names
    return names


def _renamed(e, op, names, out):
    """``e`` with the tensors its message names by the library's names (``ATensor``) named by the
    function's parameters (``x1``), and the output by ``out`` (or "the result" when none was
    given): the names a Python caller sees in the signature."""
    global _TENSOR_NAME
    if not e.args or not isinstance(e.args[0], str):
        return e
    if _TENSOR_NAME is None:
        import re

        _TENSOR_NAME = re.compile(r"\b[A-Z][A-Za-z0-9]*Tensor\b")
    tensors, inputs = _spec_names(op)
    table = dict(zip(tensors, names))
    table["OutputTensor"] = "out" if out is not None else "the result"
    message = _TENSOR_NAME.sub(lambda m: table.get(m.group(0), m.group(0)), e.args[0])
    # A message about one input's array ("input: ...") names it as the signature does ("x: ...").
    for spec, given in zip(inputs, names):
        if message.startswith(spec + ": "):
            message = given + message[len(spec):]
            break
    e.args = (message,) + e.args[1:]
    return e


_ERRORS = (ValueError, TypeError, RuntimeError, MemoryError)


def _plain(xs, out):
    """Whether every input (and ``out``) is a plain numpy array: the common case, which needs none
    of the conversions."""
    for x in xs:
        if type(x) is not np.ndarray:
            return False
    return out is None or type(out) is np.ndarray


_run_plain = _native.run_plain


def _bitorder(bitorder):
    """numpy's spelling of a bit order, checked before any work."""
    if bitorder not in ("big", "little"):
        raise ValueError(f"bitorder must be 'big' or 'little' (as np.packbits), got {bitorder!r}")
    return bitorder


def _count(v, name):
    """A count argument (``k``, ``bits``) as numpy takes integers: not a bool, not negative, and
    ``ValueError`` (not ``OverflowError``) past what any array holds."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, not a bool")
    v = operator.index(v)
    if v < 0:
        raise ValueError(f"{name} must not be negative, got {v}")
    if v > 2**63 - 1:
        raise ValueError(f"{name} = {v} is more than any array holds")
    return v


def _flag(v, name):
    """A bool argument (``keepdims``, ``largest``): True or False, as numpy's keywords take them."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise TypeError(f"{name} must be True or False, got {type(v).__name__}")


def _bits(bits):
    if bits is None:
        return None
    return _count(bits, "bits")


def _call(op, xs, names, out, dtype=None, device="auto", level=None, broadcast=None,
          axis=None, axes=_DEFAULT, keepdims=False, bits=None, bitorder="big"):
    if type(op) is str:
        op = _op_index(op)
    try:
        return _call_checked(op, xs, names, out, dtype, device, level, broadcast, axis, axes,
                             keepdims, bits, bitorder)
    except _ERRORS as e:
        raise _renamed(e, op, names, out)


def _call_checked(op, xs, names, out, dtype, device, level, broadcast, axis, axes, keepdims, bits,
                  bitorder):
    if _plain(xs, out):
        arrays, wrap, out_array = xs, None, out
    else:
        arrays, wrap = _inputs(xs, names)
        out_array = _out(out)
    if axes is not _DEFAULT:
        axes = _axes(axes, max((a.ndim for a in arrays), default=0))
    else:
        axes = None
    if not isinstance(device, str):
        raise TypeError(f"device: expected \"cpu\", \"gpu\" or \"auto\", got {type(device).__name__}")
    result, flips = _native.run(
        op, arrays, out_array, _dtype_name(dtype), device, level, broadcast,
        None if axis is None else operator.index(axis), axes, _flag(keepdims, "keepdims"),
        _bits(bits), _bitorder(bitorder),
    )
    if out is not None:
        return out[0] if isinstance(out, tuple) else out
    return _present(result, flips, wrap)


# Parts of the docstrings that many functions share, in numpydoc's sections.
_DOC = {
    "x1, x2": """x1, x2 : array_like
    numpy arrays (bool, int8 to int64, uint8 to uint64, float16 to float64; floats are bit
    patterns), objects with ``__dlpack__`` such as PyTorch CPU tensors, or Python scalars, which
    take the other input's dtype. Integer and bool arrays and numpy scalars of two dtypes are
    promoted as numpy promotes them (``uint16`` with ``uint8`` computes in ``uint16``). Any strides, reversed views included, are read in place.""",
    "x": """x : array_like
    A numpy array (bool, int8 to int64, uint8 to uint64, float16 to float64; floats are bit
    patterns), an object with ``__dlpack__`` such as a PyTorch CPU tensor, or a numpy scalar.""",
    "out": """out : ndarray or tensor, optional
    Where to write the result, of its shape and dtype and any strides; it may be an input (in
    place). It is returned.""",
    "out new": """out : ndarray or tensor, optional
    Where to write the result, of its shape and dtype and any strides. It is returned.""",
    "device": """device : {"auto", "cpu", "gpu"}, default "auto"
    Where the call runs: ``"auto"`` runs on the CPU, where the data lies; ``"gpu"`` on the
    package's GPU (``gpu_name()``), with the same bits.""",
    "level": """level : str, optional
    A DirectML feature level, such as ``"3_0"``: a dtype the op lacks at that level raises
    ``TypeError``. Default: every dtype the library has (``"EXT"``).""",
    "broadcast": """broadcast : {"numpy", "none", "pdpd"}, optional
    How the shapes broadcast: numpy's rules (the default), equal shapes only, or PaddlePaddle's
    (``x2``'s shape is a run of ``x1``'s dimensions starting at ``broadcast_axis``).""",
    "broadcast_axis": """broadcast_axis : int, optional
    For ``broadcast="pdpd"``: the dimension of ``x1`` where ``x2``'s shape starts (default, and
    ``-1``: ``x1.ndim - x2.ndim``).""",
    "axis": """axis : None or int or tuple of ints, optional
    The axes to reduce, negative ones counted from the end. Default, and ``None``: every axis, as
    ``np.sum`` does. (``np.bitwise_xor.reduce`` reduces axis 0 by default: pass ``axis=0`` for
    its result.)""",
    "keepdims": """keepdims : bool, default False
    Keep each reduced axis as a dimension of size 1.""",
    "bits": """bits : int, optional
    Only the first ``bits`` bits of each row count; the rest is padding, whatever it holds. A row
    is a byte string as ``np.packbits(x, axis=-1)`` makes it, so the codes of ``D``-dimensional
    vectors give exact results with ``bits=D``. More bits than a row has raise ``ValueError``.
bitorder : {"big", "little"}, default "big"
    The order of the bits in each byte, as ``np.packbits``'s ``bitorder``.""",
    "returns": """Returns
-------
ndarray
    A new array, or a numpy scalar where numpy gives one (a 0-d result); ``out`` when given; a
    tensor of the input's type (``torch.Tensor``) for ``__dlpack__`` inputs.""",
    "raises": """Raises
------
TypeError
    A dtype the op does not support (at ``level``), inputs of two dtypes, or an ``out`` of
    another dtype.
ValueError
    Shapes that do not fit together, or an ``out`` of another shape.
RuntimeError
    ``device="gpu"`` without a GPU, or a failure of the GPU.
MemoryError
    Memory for the result (or for a copy of an input) cannot be allocated.""",
}


def _doc(text):
    """A docstring with ``<name>`` replaced by the shared part ``name`` (indented as the marker)."""
    for name, part in _DOC.items():
        marker = f"<{name}>"
        while marker in text:
            at = text.index(marker)
            indent = text[text.rindex("\n", 0, at) + 1:at]
            text = text.replace(marker, part.replace("\n", "\n" + indent), 1)
    return text


def _named(f, name, doc):
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _doc(doc)
    return f


# The op each public function runs, by the function's name (a test checks that every op has one).
_RUNS = {}


def _runs(op):
    """Records the op a function runs."""

    def mark(f):
        _RUNS[f.__name__] = op
        return f

    return mark


def _front(native, op, doc):
    """A builtin front of ``_native`` (``hamming_cdist``, ``binary_dot``) with its docstring: the
    plain call with default keywords runs in Rust with no Python frame, and anything else goes on
    to ``_pairwise``."""
    return _runs(op)(_native.with_doc(native, _doc(doc), __name__))


def _promoted(x1, x2):
    """Two numpy arrays (or scalars) of integer or bool dtypes in the dtype numpy promotes them to
    (NEP 50), as numpy's bitwise ufuncs compute; other inputs as they are. The Rust API keeps
    DirectML's one dtype for both."""
    if not (isinstance(x1, (np.ndarray, np.generic)) and isinstance(x2, (np.ndarray, np.generic))):
        return x1, x2
    d1, d2 = x1.dtype, x2.dtype
    if d1 == d2 or d1.kind not in "biu" or d2.kind not in "biu":
        return x1, x2
    dt = np.result_type(d1, d2)
    if dt.kind not in "biu":
        raise TypeError(
            f"x1 is {d1} and x2 is {d2}, which numpy promotes to {dt}: no integer dtype holds "
            f"both, and numpy's bitwise ufuncs refuse them too; convert one first (e.g. "
            f"x2.astype(np.{d1}))"
        )
    for x, name in ((x1, "x1"), (x2, "x2")):
        if x.dtype != dt:
            _native.check_allocation(x.size * dt.itemsize, name)
    return np.asarray(x1, dtype=dt), np.asarray(x2, dtype=dt)


def _binary(name, op, summary, example):
    index = _native.op_index(op)

    def f(x1, x2, /, out=None, *, device="auto", level=None, broadcast=None, broadcast_axis=None):
        x1, x2 = _promoted(x1, x2)
        if device == "auto" and level is None and broadcast is None and broadcast_axis is None:
            # Plain numpy arrays of one shape (a loop over small arrays): one call into Rust.
            try:
                result = _run_plain(index, x1, x2, out)
            except _ERRORS as e:
                raise _renamed(e, index, ("x1", "x2"), out)
            if result is not None:
                return result
        return _call(index, [x1, x2], ["x1", "x2"], out, device=device, level=level,
                     broadcast=broadcast, axis=broadcast_axis)

    doc = f"""{summary}

    Parameters
    ----------
    <x1, x2>
    <out>
    <device>
    <level>
    <broadcast>
    <broadcast_axis>

    <returns>

    <raises>

    See Also
    --------
    numpy.{name}

    Examples
    --------
{example}
    """
    return _runs(op)(_named(f, name, doc))


bitwise_and = _binary(
    "bitwise_and", "and",
    "Element-wise AND of the bits of ``x1`` and ``x2``.",
    """    >>> tb.bitwise_and(np.array([12, 10], dtype=np.uint8), 6)
    array([4, 2], dtype=uint8)
    >>> tb.bitwise_and(np.array([True, True]), np.array([False, True]))
    array([False,  True])""",
)
bitwise_or = _binary(
    "bitwise_or", "or",
    "Element-wise OR of the bits of ``x1`` and ``x2``.",
    """    >>> tb.bitwise_or(np.array([12, 10], dtype=np.uint8), 1)
    array([13, 11], dtype=uint8)""",
)
bitwise_xor = _binary(
    "bitwise_xor", "xor",
    "Element-wise XOR of the bits of ``x1`` and ``x2``.",
    """    >>> tb.bitwise_xor(np.array([12, 10], dtype=np.uint8), 6)
    array([10, 12], dtype=uint8)

    Floats are bit patterns: XOR with the sign bit negates.

    >>> tb.bitwise_xor(np.array([1.5, -2.0], dtype=np.float32), np.float32(-0.0))
    array([-1.5,  2. ], dtype=float32)""",
)
left_shift = _binary(
    "left_shift", "shl",
    """``x1 << x2`` element-wise.

    A count that is negative or at least the bit width gives 0 (numpy's result for a count past the
    width; numpy's result for a negative count is undefined).""",
    """    >>> tb.left_shift(np.array([1, 3], dtype=np.uint8), np.array([2, 7], dtype=np.uint8))
    array([  4, 128], dtype=uint8)
    >>> tb.left_shift(np.array([1], dtype=np.uint8), 9)
    array([0], dtype=uint8)""",
)
right_shift = _binary(
    "right_shift", "shr",
    """``x1 >> x2`` element-wise, arithmetic for signed types.

    A count that is negative or at least the bit width gives 0, or -1 for a negative ``x1``.""",
    """    >>> tb.right_shift(np.array([-16, 16], dtype=np.int8), 2)
    array([-4,  4], dtype=int8)
    >>> tb.right_shift(np.array([-16, 16], dtype=np.int8), 8)
    array([-1,  0], dtype=int8)""",
)


_NOT = _op_index("not")
_POPCOUNT = _op_index("popcount")


@_runs("not")
def bitwise_not(x, /, out=None, *, device="auto", level=None):
    if device == "auto" and level is None:
        try:
            result = _run_plain(_NOT, x, None, out)
        except _ERRORS as e:
            raise _renamed(e, _NOT, ("x",), out)
        if result is not None:
            return result
    return _call(_NOT, [x], ["x"], out, device=device, level=level)


_named(bitwise_not, "bitwise_not", """Element-wise NOT of the bits of ``x`` (logical NOT for bool).

    ``invert`` is the same function.

    Parameters
    ----------
    <x>
    <out>
    <device>
    <level>

    <returns>

    <raises>

    See Also
    --------
    numpy.bitwise_not

    Examples
    --------
    >>> tb.bitwise_not(np.array([0, 5], dtype=np.uint8))
    array([255, 250], dtype=uint8)
    >>> tb.bitwise_not(np.array([True, False]))
    array([False,  True])
    """)
invert = bitwise_not
# The array API standard's names.
bitwise_invert = bitwise_not
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


@_runs("popcount")
def bitwise_count(x, /, out=None, *, dtype=None, device="auto", level=None):
    if isinstance(x, (np.ndarray, np.bool_)) and x.dtype == np.bool_:
        # numpy counts a bool as 0 or 1 (any non-zero byte is True): the count of a uint8 0 or 1.
        x = (np.asarray(x).view(np.uint8) != 0).view(np.uint8)
    if dtype is None and device == "auto" and level is None:
        try:
            result = _run_plain(_POPCOUNT, x, None, out)
        except _ERRORS as e:
            raise _renamed(e, _POPCOUNT, ("x",), out)
        if result is not None:
            return result
    return _call(_POPCOUNT, [x], ["x"], out, dtype=dtype, device=device, level=level)


_named(bitwise_count, "bitwise_count", """The number of set bits of each element's stored pattern.

    Signed values count their two's complement bits: ``bitwise_count(np.int8(-1))`` is 8, where
    ``numpy.bitwise_count`` counts the absolute value and gives 1. Floats count their bits.

    Parameters
    ----------
    <x>
    <out>
    dtype : {"uint8", "uint32"}, optional
        The result's dtype (default uint8).
    <device>
    <level>

    <returns>

    <raises>

    See Also
    --------
    numpy.bitwise_count

    Examples
    --------
    >>> tb.bitwise_count(np.array([0, 7, 255], dtype=np.uint8))
    array([0, 3, 8], dtype=uint8)
    >>> int(tb.bitwise_count(np.int8(-1)))
    8
    """)


def _reduction(name, op, summary, example, empty, dtype_doc):
    def f(x, /, axis=_DEFAULT, *, out=None, keepdims=False, dtype=None, device="auto", level=None):
        return _call(op, [x], ["x"], out, dtype=dtype, device=device, level=level,
                     axes=axis, keepdims=keepdims)

    doc = f"""{summary}

    {empty}

    Parameters
    ----------
    <x>
    <axis>
    <out new>
    <keepdims>
    {dtype_doc}
    <device>
    <level>

    <returns>

    <raises>

    Examples
    --------
{example}
    """
    return _runs(op)(_named(f, name, doc))


_SAME_DTYPE = """dtype : None
        The result has the input's dtype (the argument is there for the signature of the sums)."""

bitwise_and_reduce = _reduction(
    "bitwise_and_reduce", "and_reduce",
    "AND of the elements along ``axis``; ``np.bitwise_and.reduce`` with every axis by default.",
    """    >>> x = np.array([[12, 10], [6, 15]], dtype=np.uint8)
    >>> tb.bitwise_and_reduce(x, axis=0)
    array([ 4, 10], dtype=uint8)
    >>> int(tb.bitwise_and_reduce(x))
    0""",
    "An empty reduction gives all ones (every bit set), numpy's identity for AND.",
    _SAME_DTYPE,
)
bitwise_or_reduce = _reduction(
    "bitwise_or_reduce", "or_reduce",
    "OR of the elements along ``axis``; ``np.bitwise_or.reduce`` with every axis by default.",
    """    >>> x = np.array([[1, 2], [4, 8]], dtype=np.uint8)
    >>> tb.bitwise_or_reduce(x, axis=1)
    array([ 3, 12], dtype=uint8)""",
    "An empty reduction gives 0.",
    _SAME_DTYPE,
)
bitwise_xor_reduce = _reduction(
    "bitwise_xor_reduce", "xor_reduce",
    "XOR of the elements along ``axis``; ``np.bitwise_xor.reduce`` with every axis by default.",
    """    >>> x = np.array([[1, 3], [7, 15]], dtype=np.uint8)
    >>> tb.bitwise_xor_reduce(x, axis=0)
    array([ 6, 12], dtype=uint8)
    >>> int(tb.bitwise_xor_reduce(x))
    10""",
    "An empty reduction gives 0.",
    _SAME_DTYPE,
)
bitwise_count_sum = _reduction(
    "bitwise_count_sum", "popcount_sum",
    "The set bits of the elements, summed along ``axis``.",
    """    >>> x = np.array([[1, 3], [7, 255]], dtype=np.uint8)
    >>> tb.bitwise_count_sum(x, axis=1)
    array([ 3, 11], dtype=uint32)
    >>> int(tb.bitwise_count_sum(x))
    14""",
    "Signed values count their two's complement bits; an empty reduction gives 0.",
    """dtype : {"uint8", "uint16", "uint32", "uint64"}, optional
        The result's dtype (default uint32). A sum that could pass it, from the number of
        elements reduced and their bit width, raises ``ValueError`` before anything runs.""",
)


@_runs("hamming")
def hamming_distance(x1, x2, /, axis=_DEFAULT, *, out=None, keepdims=False, dtype=None,
                     device="auto", level=None, broadcast=None, bits=None, bitorder="big"):
    return _call("hamming", [x1, x2], ["x1", "x2"], out, dtype=dtype, device=device, level=level,
                 broadcast=broadcast, axes=axis, keepdims=keepdims, bits=bits, bitorder=bitorder)


_named(hamming_distance, "hamming_distance", """The number of bits that differ between ``x1`` and ``x2``, summed along ``axis``.

    ``bitwise_count(bitwise_xor(x1, x2))`` summed, in one pass: for rows of packed binary codes,
    the Hamming distance of each pair of rows.

    Parameters
    ----------
    <x1, x2>
    axis : None or int or tuple of ints, optional
        The axes to sum over, negative ones counted from the end. Default: the last axis; ``None``:
        every axis.
    <out new>
    <keepdims>
    dtype : {"uint8", "uint16", "uint32", "uint64"}, optional
        The result's dtype (default uint32); a sum that could pass it raises ``ValueError``.
    <device>
    <level>
    broadcast : {"numpy", "none"}, optional
        How the shapes broadcast before the sum: numpy's rules (the default) or equal shapes only.
    <bits>
        For the last axis alone.

    <returns>

    <raises>

    See Also
    --------
    hamming_cdist : every row of one array against every row of another.

    Examples
    --------
    >>> a = np.array([[0b1111, 0], [1, 1]], dtype=np.uint8)
    >>> b = np.array([[0b0101, 1], [1, 1]], dtype=np.uint8)
    >>> tb.hamming_distance(a, b)
    array([3, 0], dtype=uint32)
    """)


def _packed_codes(a, b, name, names=("a", "b")):
    """Bool or float codes are refused with the way to pack them, not an op's name; ``names`` are
    the arguments' as the caller took them."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        a, b = _inputs([a, b], list(names))[0]
    for x, which in zip((a, b), names):
        if x.dtype.kind in "bfc":
            raise TypeError(
                f"{name}: {which} is {x.dtype}; binary codes are packed bits of an unsigned or "
                f"signed integer type: pack float embeddings (or bools) first with "
                f"tb.binarize(emb), which gives np.packbits(emb > 0, axis=-1)"
            )


_CODES = """a : array_like
        Codes ``[..., M, K]``: ``M`` rows of ``K`` integers (uint8 to uint64, or int8 to int64,
        whose stored bits count), such as ``np.packbits(embeddings > 0, axis=-1)``.
    b : array_like
        Codes ``[..., N, K]`` of the same dtype; leading dimensions broadcast."""


_pair_plain = _native.pair_plain
_knn_plain = _native.knn_plain


_UNSIGNED_OPS = None


def _unsigned_ops():
    """The indices of the ops that count bits of unsigned codes only, looked up once."""
    global _UNSIGNED_OPS
    if _UNSIGNED_OPS is None:
        _UNSIGNED_OPS = frozenset(_op_index(n) for n in ("binary_dot", "tanimoto", "dice"))
    return _UNSIGNED_OPS


def _unsigned_codes(index, a, b):
    """int8 to int64 codes (sentence-transformers' ``precision="binary"`` is int8) as the unsigned
    type of their width for an op that counts bits of unsigned codes only (``binary_dot`` and the
    similarities): the stored bits are the same, and only they count."""
    if index not in _unsigned_ops():
        return a, b
    def view(x):
        if isinstance(x, np.ndarray) and x.dtype.kind == "i":
            return x.view(f"u{x.dtype.itemsize}")
        return x
    return view(a), view(b)


def _plain_codes(index, a, b):
    """Whether ``a`` and ``b`` go to Rust as they are: numpy arrays (no subclass) of integer
    codes, aligned, in C order and native byte order, which the op need not view as unsigned."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or not a.ndim or not b.ndim:
        return False
    ka, kb = a.dtype.kind, b.dtype.kind
    if ka not in ("u", "i") or kb not in ("u", "i"):
        return False
    if (ka == "i" or kb == "i") and index in _unsigned_ops():
        return False
    fa, fb = a.flags, b.flags
    return (fa.c_contiguous and fb.c_contiguous and fa.aligned and fb.aligned
            and a.dtype.isnative and b.dtype.isnative)


def _pairwise(index, name, a, b, out, dtype, device, level, bits, bitorder):
    # The general path of the builtin fronts (`_native.hamming_cdist`, `_native.binary_dot`), which
    # call it with every keyword (the defaults where left out) when their plain call does not
    # apply or fails; the plain call is tried again here, so that its errors name the arguments.
    # The defaults skip the checks of bits and bitorder.
    if bits is not None:
        bits = _bits(bits)
    if bitorder != "big":
        bitorder = _bitorder(bitorder)
    a, b = _unsigned_codes(index, a, b)
    if (device == "auto" or device == "cpu") and level is None:
        # Plain matrices of integer codes: one call into Rust.
        try:
            result = _pair_plain(index, a, b, out, None if dtype is None else _dtype_name(dtype),
                                 bits, bitorder)
        except _ERRORS as e:
            raise _renamed(e, index, ("a", "b"), out)
        if result is not None:
            return result
    _packed_codes(a, b, name)
    return _call(index, [a, b], ["a", "b"], out, dtype=dtype, device=device, level=level,
                 bits=bits, bitorder=bitorder)


hamming_cdist = _front(_native.hamming_cdist, "hamming_cdist", f"""All-pairs Hamming distances between the rows of ``a`` and the rows of ``b``.

    The distance of rows ``i`` and ``j`` is the number of bits that differ, as
    ``scipy.spatial.distance.cdist(..., "hamming")`` times the bit count, or FAISS's
    ``hammings``.

    Parameters
    ----------
    {_CODES}
    out : ndarray or tensor, optional
        Where to write the result, ``[..., M, N]`` of its dtype and any strides. It is returned.
    dtype : {{"uint16", "uint32", "uint64"}}, optional
        The result's dtype (default uint32); a distance that could pass it raises ``ValueError``.
    <device>
    <level>
    <bits>

    Returns
    -------
    ndarray
        ``[..., M, N]`` distances; ``out`` when given; a tensor of the input's type for
        ``__dlpack__`` inputs.

    <raises>

    See Also
    --------
    knn : the ``k`` smallest distances of each row, without the whole matrix.

    Examples
    --------
    >>> a = np.array([[0b1111], [0]], dtype=np.uint8)
    >>> b = np.array([[0b0001], [0b0011], [255]], dtype=np.uint8)
    >>> tb.hamming_cdist(a, b)
    array([[3, 2, 4],
           [1, 2, 8]], dtype=uint32)
    """)


binary_dot = _front(_native.binary_dot, "binary_dot", f"""Dot products of ±1 vectors stored as bits, between the rows of ``a`` and the rows of ``b``.

    Bit ``1`` stands for +1 and ``0`` for -1, so the product of two rows is the number of bits
    that agree minus the number that differ: ``bits - 2 * hamming``. The product of a binary
    network's dense layer (XNOR-popcount), and the similarity of binary embeddings; ``knn(...,
    op="binary_dot")`` returns the largest first.

    Parameters
    ----------
    {{_CODES}}
    <bits>
    dtype : {{"int32", "int64", "int16"}}, optional
        The result's dtype (default int32); a product that could pass it raises ``ValueError``.
    out : ndarray or tensor, optional
        Where to write the result, ``[..., M, N]`` of its dtype and any strides. It is returned.
    <device>
    <level>

    Returns
    -------
    ndarray
        ``[..., M, N]`` products; ``out`` when given; a tensor of the input's type for
        ``__dlpack__`` inputs.

    <raises>

    See Also
    --------
    knn : the ``k`` largest products of each row, with ``op="binary_dot"``.
    hamming_cdist : the bits that differ.

    Examples
    --------
    >>> x = np.array([[1, -1, 1, 1, -1], [-1, -1, 1, -1, 1]])
    >>> w = np.array([[1, 1, 1, -1, -1]])
    >>> a, b = np.packbits(x > 0, axis=-1), np.packbits(w > 0, axis=-1)
    >>> tb.binary_dot(a, b, bits=5)
    array([[ 1],
           [-1]], dtype=int32)
    >>> x @ w.T
    array([[ 1],
           [-1]])
    """.replace("{_CODES}", _CODES))


_SIMILARITY = """Parameters
    ----------
    {_CODES}
    <bits>
    dtype : {{"float32", "float64"}}, optional
        The result's dtype (default float32): the exact fraction rounded once to it.
    out : ndarray or tensor, optional
        Where to write the result, ``[..., M, N]`` of its dtype and any strides. It is returned.
    <device>
    <level>

    Returns
    -------
    ndarray
        ``[..., M, N]`` similarities from 0 to 1 (0 for two rows with no bits set, as RDKit
        gives); ``out`` when given; a tensor of the input's type for ``__dlpack__`` inputs.

    <raises>""".replace("{_CODES}", _CODES)


tanimoto = _front(_native.tanimoto, "tanimoto", f"""Tanimoto (Jaccard) similarities of fingerprints, between the rows of ``a`` and the rows of ``b``.

    The similarity of rows ``i`` and ``j`` is the number of bits set in both over the number set
    in either, ``|a & b| / |a | b|``: RDKit's ``TanimotoSimilarity`` of two bit vectors, computed
    as an exact fraction and rounded once. ``knn(..., op="tanimoto")`` ranks the exact fractions,
    the most similar first, and ``range_search(..., op="tanimoto")`` keeps every row at least a
    threshold, compared exactly.

    {_SIMILARITY}

    See Also
    --------
    dice : twice the shared bits over the bits of each.
    knn : the ``k`` most similar rows of ``b``, with ``op="tanimoto"``.
    range_search : every row at least a threshold, with ``op="tanimoto"``.

    Examples
    --------
    >>> a = np.array([[0b11110000]], dtype=np.uint8)
    >>> b = np.array([[0b11110000], [0b11000000], [0b00111100], [0]], dtype=np.uint8)
    >>> tb.tanimoto(a, b)
    array([[1.        , 0.5       , 0.33333334, 0.        ]], dtype=float32)
    """)


dice = _front(_native.dice, "dice", f"""Dice similarities of fingerprints, between the rows of ``a`` and the rows of ``b``.

    The similarity of rows ``i`` and ``j`` is twice the number of bits set in both over the
    numbers set in each, ``2 |a & b| / (|a| + |b|)``: RDKit's ``DiceSimilarity`` of two bit
    vectors, computed as an exact fraction and rounded once.

    {_SIMILARITY}

    See Also
    --------
    tanimoto : the shared bits over the bits set in either.

    Examples
    --------
    >>> a = np.array([[0b11110000]], dtype=np.uint8)
    >>> b = np.array([[0b11000000], [0b00111100]], dtype=np.uint8)
    >>> tb.dice(a, b)
    array([[0.6666667, 0.5      ]], dtype=float32)
    """)


class Database:
    """Codes prepared for repeated ``knn`` and ``range_search`` under one op.

    The rows are counted once and ordered by their count of ones, so that each query compares
    only the rows whose count lets them reach its results (BitBound, for Tanimoto: a row of
    ``|b|`` bits is at most ``min(|a|, |b|) / max(|a|, |b|)`` similar to a query of ``|a|``
    bits; the same bound holds for Dice, Hamming and the dot products of ±1 vectors). The
    results are those of the plain calls on the codes, ties and all.

    Parameters
    ----------
    codes : array_like
        ``[N, K]`` integer codes, as ``b`` of ``knn``.
    op : str, default "tanimoto"
        ``"tanimoto"``, ``"dice"``, ``"hamming_cdist"``, ``"binary_dot"``, or another pairwise
        op whose count is a function of two bits.
    <bits>

    Attributes
    ----------
    scanned : int
        The rows the last ``knn`` or ``range_search`` compared, over all its queries (``M * N``
        for a scan of everything).

    Examples
    --------
    >>> codes = np.array([[0b11110000], [0b11000000], [0b00001111], [0b11111000]], np.uint8)
    >>> db = tb.Database(codes, op="tanimoto")
    >>> db.knn(codes[:1], 2)
    (array([[1. , 0.8]], dtype=float32), array([[0, 3]]))
    >>> lims, values, indices = db.range_search(codes[:1], 0.5)
    >>> indices
    array([0, 1, 3])
    >>> db.save("/tmp/fingerprints.tbdb")
    >>> again = tb.Database.load("/tmp/fingerprints.tbdb")
    >>> again.knn(codes[:1], 2)[1]
    array([[0, 3]])
    """

    def __init__(self, codes, /, *, op="tanimoto", bits=None, bitorder="big"):
        if not isinstance(op, str):
            raise TypeError(f"op: expected the name of a pairwise op, got {type(op).__name__}")
        self._index = _op_index(op)
        self.op = op
        self.bits, self.bitorder = _bits(bits), _bitorder(bitorder)
        codes = np.asarray(codes)
        codes, _ = _unsigned_codes(self._index, codes, codes)
        if codes.ndim != 2:
            raise ValueError(f"codes: expected an [N, K] array, got shape {codes.shape}")
        _packed_codes(codes, codes, "Database", ("codes", "codes"))
        codes = np.require(codes, codes.dtype.newbyteorder("="), ["C", "A"])
        self._dtype, self._k = codes.dtype.name, codes.shape[1]
        self.scanned = 0
        try:
            self._parts = _native.db_prepare(self._index, codes, self.bits, self.bitorder)
        except _ERRORS as e:
            raise _renamed(e, self._index, ("codes", "codes"), None)

    def __len__(self):
        return len(self._parts[1])

    @property
    def shape(self):
        """``(N, K)``: the rows and elements per row of the codes it was built from."""
        return (len(self), self._k)

    def __repr__(self):
        return (f"tensorbits.Database({len(self)} rows of {self._k} {self._dtype}, "
                f"op={self.op!r})")

    def _queries(self, queries, largest, bits, bitorder):
        if bits is not None and _bits(bits) != self.bits or \
                bitorder != "big" and _bitorder(bitorder) != self.bitorder:
            raise ValueError(f"the database counts bits={self.bits}, bitorder={self.bitorder!r}; "
                             f"a query cannot change them")
        if largest is not None:
            largest = _flag(largest, "largest")
        q = np.asarray(queries)
        q, _ = _unsigned_codes(self._index, q, q)
        if q.ndim != 2:
            raise ValueError(f"queries: expected an [M, K] array, got shape {q.shape}")
        if not (q.flags.c_contiguous and q.flags.aligned and q.dtype.isnative):
            q = np.require(q, q.dtype.newbyteorder("="), ["C", "A"])
        return q, largest

    def knn(self, queries, k, /, *, largest=None, dtype=None, bits=None, bitorder="big"):
        """The ``k`` best rows for each query, as ``tb.knn(queries, codes, k, op=...)`` gives
        them: ``(values, indices)``, ``[M, k]`` each, indices into the codes the database was
        built from."""
        k = _count(k, "k")
        q, largest = self._queries(queries, largest, bits, bitorder)
        try:
            v, i, self.scanned = _native.db_knn(self._index, self._dtype, self._k, *self._parts, q,
                                                k, _dtype_name(dtype), largest, self.bits,
                                                self.bitorder)
        except _ERRORS as e:
            raise _renamed(e, self._index, ("queries", "codes"), None)
        return v, i

    def range_search(self, queries, threshold, /, *, largest=None, dtype=None, bits=None,
                     bitorder="big"):
        """Every row passing ``threshold`` for each query, as ``tb.range_search(queries, codes,
        threshold, op=...)`` gives them: ``(lims, values, indices)``."""
        if isinstance(threshold, (bool, np.bool_)) or not isinstance(
                threshold, (int, float, np.integer, np.floating)):
            raise TypeError(f"threshold: expected a real number, got {type(threshold).__name__}")
        threshold = float(threshold)
        q, largest = self._queries(queries, largest, bits, bitorder)
        try:
            lims, v, i, self.scanned = _native.db_range(self._index, self._dtype, self._k,
                                                        *self._parts, q, threshold,
                                                        _dtype_name(dtype), largest, self.bits,
                                                        self.bitorder)
        except _ERRORS as e:
            raise _renamed(e, self._index, ("queries", "codes"), None)
        return lims, v, i

    def save(self, path):
        """Writes the database to the directory ``path``: its parts as ``.npy`` files
        (``codes.npy``, ``counts.npy``, ``order.npy``) and its settings as ``database.json``."""
        import json

        os.makedirs(path, exist_ok=True)
        for name, part in zip(("codes", "counts", "order"), self._parts):
            np.save(os.path.join(path, f"{name}.npy"), part)
        meta = {"format": 1, "op": self.op, "dtype": self._dtype, "k": self._k,
                "bits": self.bits, "bitorder": self.bitorder}
        with open(os.path.join(path, "database.json"), "w") as f:
            json.dump(meta, f)

    @classmethod
    def load(cls, path, *, mmap=True):
        """The database ``save`` wrote to ``path``; with ``mmap`` (the default) its parts are
        memory-mapped, not read. Its parts are checked: counts, order and padding."""
        import json

        with open(os.path.join(path, "database.json")) as f:
            meta = json.load(f)
        if meta.get("format") != 1:
            raise ValueError(f"{path}: not a database this version writes")
        db = cls.__new__(cls)
        db._index = _op_index(meta["op"])
        db.op, db._dtype, db._k = meta["op"], meta["dtype"], int(meta["k"])
        db.bits, db.bitorder = meta["bits"], meta["bitorder"]
        db.scanned = 0
        mode = "r" if mmap else None
        # Base-class views of the memory maps (no copy), as the kernels take arrays.
        db._parts = tuple(np.asarray(np.load(os.path.join(path, f"{name}.npy"), mmap_mode=mode))
                          for name in ("codes", "counts", "order"))
        try:
            _native.db_check(db._index, db._dtype, db._k, *db._parts, db.bits, db.bitorder)
        except _ERRORS as e:
            raise ValueError(f"{path}: {e}") from None
        return db


Database.__doc__ = _doc(Database.__doc__)


def _database_op(db, op, device):
    """A call with a Database for ``b``: its op is the database's (the default names none)."""
    if op != "hamming_cdist" and _op_index(op) != db._index:
        raise ValueError(f"op={op!r}, but the database was prepared for {db.op!r}")
    if device not in ("auto", "cpu"):
        raise ValueError(f"device={device!r}: a Database runs on the CPU")


def _knn(a, b, /, k, *, op="hamming_cdist", largest=None, bits=None, bitorder="big", dtype=None,
         device="auto", level=None, id_offset=0):
    # The general path of the builtin front `_native.knn`, which runs the plain call itself (numpy
    # codes, the default keywords) and gives everything else, or a plain call that failed, to this
    # function with the keywords as given.
    k = _count(k, "k")
    id_offset = _count(id_offset, "id_offset")
    if id_offset:
        # The rows of b are below N: the last index, N - 1 + id_offset, must fit an int64.
        if id_offset > 2**63 - 1 - max(_rows(b) - 1, 0):
            raise ValueError(f"id_offset = {id_offset} takes the indices past int64")
        d, i = _knn(a, b, k, op=op, largest=largest, bits=bits, bitorder=bitorder, dtype=dtype,
                    device=device, level=level)
        i += id_offset
        return d, i
    if not isinstance(op, str):
        raise TypeError(f"op: expected the name of a pairwise sum op, got {type(op).__name__}")
    if isinstance(b, Database):
        _database_op(b, op, device)
        return b.knn(a, k, largest=largest, dtype=dtype, bits=bits, bitorder=bitorder)
    index = _op_index(op)
    if largest is not None:
        largest = _flag(largest, "largest")
    bits, bitorder = _bits(bits), _bitorder(bitorder)
    (a, b), wrap = _inputs([a, b], ["a", "b"])
    a, b = _unsigned_codes(index, a, b)
    if (device == "auto" or device == "cpu") and level is None and wrap is None:
        # Plain matrices of integer codes: one call into Rust.
        try:
            result = _knn_plain(index, a, b, k, None if dtype is None else _dtype_name(dtype),
                                largest, bits, bitorder)
        except _ERRORS as e:
            raise _renamed(e, index, ("a", "b"), None)
        if result is not None:
            return result
    _packed_codes(a, b, "knn")
    if not isinstance(device, str):
        raise TypeError(f"device: expected \"cpu\", \"gpu\" or \"auto\", got {type(device).__name__}")
    try:
        d, i, flips = _native.knn_any(index, a, b, k, _dtype_name(dtype), device, level, largest,
                                  bits, bitorder)
    except _ERRORS as e:
        raise _renamed(e, index, ("a", "b"), None)
    return _present(d, flips, wrap), _present(i, flips, wrap)


knn = _native.with_doc(_native.knn, _doc(f"""The ``k`` rows of ``b`` nearest each row of ``a`` in Hamming distance: exact search.

    The same results as FAISS's ``IndexBinaryFlat.search`` and ``knn_hamming``, ties included,
    and the same on the CPU and the GPU, bit for bit.

    Parameters
    ----------
    {_CODES}
    k : int
        How many neighbours per row, from 0 to ``N``.
    op : str, default "hamming_cdist"
        Any pairwise sum or ratio op by name: ``"hamming_cdist"`` (distances, smallest first),
        ``"binary_dot"`` (the dot products of ±1 vectors, largest first), ``"tanimoto"`` or
        ``"dice"`` (similarities of fingerprints, largest first, ranked by their exact
        fractions).
    largest : bool, optional
        Return the largest values first (``True``) or the smallest (``False``); default: the
        op's own order.
    <bits>
    dtype : {{"uint16", "uint32", "uint64", "int16", "int32", "int64"}}, optional
        The values' dtype, one of the op's (default uint32 for distances, int32 for dot
        products); a value that could pass it raises ``ValueError``.
    <device>
    <level>
    id_offset : int, default 0
        Added to every index: the first row of ``b`` in a larger database, so that the results of
        shards merge directly (:func:`merge_topk`).

    Returns
    -------
    distances : ndarray
        ``[..., M, k]``, in the op's order (or ``largest``'s) along the last axis.
    indices : ndarray
        ``[..., M, k]`` int64 rows of ``b``; equal values in ascending index order.

    Raises
    ------
    TypeError
        Codes of a dtype the op does not support, of two dtypes, or bool or float codes (pack
        their bits first: ``np.packbits(emb > 0, axis=-1)``).
    ValueError
        Rows of ``a`` and ``b`` of other lengths, leading dimensions that do not broadcast, or a
        ``k`` below 0 or above ``N``.
    RuntimeError
        ``device="gpu"`` without a GPU, or a failure of the GPU.
    MemoryError
        Memory for the results (or for a copy of an input) cannot be allocated.

    See Also
    --------
    hamming_cdist : every distance.

    Examples
    --------
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b1111]], dtype=np.uint8)
    >>> d, i = tb.knn(np.array([[0b0011]], dtype=np.uint8), codes, k=3)
    >>> d
    array([[1, 1, 2]], dtype=uint32)
    >>> i
    array([[1, 2, 0]])
    """), __name__)


def range_search(a, b, /, threshold, *, op="hamming_cdist", largest=None, bits=None,
                 bitorder="big", dtype=None, device="auto"):
    # The common call straight into Rust: the checked path below would pass it on as it is. An
    # error goes on to the checked path, which names the arguments, but for memory, which is not
    # asked for a second time.
    if (type(op) is str and largest is None and bits is None and dtype is None
            and type(device) is str and type(bitorder) is str and bitorder == "big"
            and (type(threshold) is float and threshold == threshold
                 or type(threshold) is int and -2**53 <= threshold <= 2**53)):
        index = _OP_INDEX.get(op)
        if index is not None and _plain_codes(index, a, b):
            try:
                return _native.range_plain(index, a, b, float(threshold), None, None, None,
                                           "big", device)
            except MemoryError as e:
                raise _renamed(e, index, ("a", "b"), None)
            except _ERRORS:
                pass
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise TypeError(f"threshold: expected a real number, got {type(threshold).__name__}")
    if isinstance(threshold, (int, np.integer)) and abs(int(threshold)) > 2**53:
        raise ValueError(f"threshold = {threshold} is past what a float64 holds exactly")
    threshold = float(threshold)
    if threshold != threshold:
        raise ValueError("threshold is NaN; give a number")
    if not isinstance(op, str):
        raise TypeError(f"op: expected the name of a pairwise sum op, got {type(op).__name__}")
    if not isinstance(device, str):
        raise TypeError(f"device: expected \"cpu\", \"gpu\" or \"auto\", got {type(device).__name__}")
    if isinstance(b, Database):
        _database_op(b, op, device)
        return b.range_search(a, threshold, largest=largest, dtype=dtype, bits=bits,
                              bitorder=bitorder)
    index = _op_index(op)
    if largest is not None:
        largest = _flag(largest, "largest")
    bits, bitorder = _bits(bits), _bitorder(bitorder)
    (a, b), wrap = _inputs([a, b], ["a", "b"])
    a, b = _unsigned_codes(index, a, b)
    _packed_codes(a, b, "range_search")
    # The kernels read rows as they lie in memory: C order, native byte order.
    a, b = (np.require(x, x.dtype.newbyteorder("="), ["C", "A"]) for x in (a, b))
    try:
        lims, values, indices = _native.range_plain(index, a, b, threshold, _dtype_name(dtype),
                                                    largest, bits, bitorder, device)
    except _ERRORS as e:
        raise _renamed(e, index, ("a", "b"), None)
    if wrap is not None:
        return wrap(lims), wrap(values), wrap(indices)
    return lims, values, indices


_named(range_search, "range_search", f"""Every row of ``b`` within ``threshold`` of each row of ``a``: exact range search.

    FAISS's layout and rule: for distances (``"hamming_cdist"``), the hits of row ``i`` are the
    rows of ``b`` at a distance ``d < threshold``, as ``IndexBinaryFlat.range_search`` takes a
    radius; for ops ranked largest first (``"binary_dot"``, or ``largest=True``), those whose
    value is at least ``threshold``. The threshold is compared at its exact value.

    Parameters
    ----------
    a : array_like
        Codes ``[M, K]``: ``M`` rows of ``K`` integers (uint8 to uint64, or int8 to int64), the
        packed bits of each query (``np.packbits(x, axis=-1)`` makes them).
    b : array_like
        Codes ``[N, K]`` of the same dtype.
    threshold : float
        The radius (hits below it) or, largest first, the least value of a hit.
    op : str, default "hamming_cdist"
        Any pairwise sum or ratio op by name, such as ``"binary_dot"`` or ``"tanimoto"``, whose
        similarities pass at or above ``threshold``, compared as exact fractions.
    largest : bool, optional
        Rank the largest values first (hits at or above ``threshold``) or the smallest (hits
        below it); default: the op's own order.
    <bits>
    dtype : {{"uint16", "uint32", "uint64", "int16", "int32", "int64", "float32", "float64"}}, optional
        The values' dtype, one of the op's (default uint32 for distances, int32 for dot
        products, float32 for similarities).
    <device>

    Returns
    -------
    lims : ndarray
        ``M + 1`` int64 offsets: row ``i``'s hits are ``lims[i]:lims[i + 1]`` of the others.
    values : ndarray
        The hits' values, row after row.
    indices : ndarray
        The hits' rows of ``b`` (int64), each row's in ascending order.

    Raises
    ------
    TypeError
        Codes of a dtype the op does not support, of two dtypes, or bool or float codes; a
        threshold that is not a number.
    ValueError
        Inputs that are not matrices, rows of ``a`` and ``b`` of other lengths, a NaN threshold.
    RuntimeError
        ``device="gpu"`` without a GPU, or a failure of the GPU.
    MemoryError
        Memory for the hits cannot be allocated.

    See Also
    --------
    knn : the ``k`` nearest rows instead of those within a threshold.

    Examples
    --------
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b1111]], dtype=np.uint8)
    >>> lims, d, i = tb.range_search(np.array([[0b0011]], dtype=np.uint8), codes, 2)
    >>> lims, d, i
    (array([0, 2]), array([1, 1], dtype=uint32), array([1, 2]))
    """)


def _rows(b):
    """The rows of codes ``b`` (``[..., N, K]``), for the largest index knn returns."""
    shape = getattr(b, "shape", None)
    if shape is None:
        shape = np.shape(b)
    return int(shape[-2]) if len(shape) >= 2 else 0


def merge_topk(parts, k, *, largest=None):
    k = _count(k, "k")
    largest = False if largest is None else _flag(largest, "largest")
    if (isinstance(parts, tuple) and len(parts) == 2
            and all(hasattr(x, "shape") or hasattr(x, "__dlpack__") for x in parts)):
        raise TypeError("parts: expected a sequence of (values, indices) pairs, got one pair; "
                        "wrap it in a list")
    values, indices, wrap = [], [], None
    for p, part in enumerate(parts):
        try:
            v, i = part
        except (TypeError, ValueError):
            raise TypeError(f"parts[{p}]: expected a (values, indices) pair") from None
        (v,), wv = _inputs([v], ["values"])
        (i,), wi = _inputs([i], ["indices"])
        wrap = wrap or wv or wi
        if v.dtype.kind not in "iuf":
            raise TypeError(f"parts[{p}]: values of {v.dtype}; knn's values are numbers")
        if i.dtype.kind not in "iu" or (i.dtype.kind == "u" and i.size and i.max() > 2**63 - 1):
            raise TypeError(f"parts[{p}]: indices of {i.dtype}; knn's indices are int64")
        # Arrays unpickled from another process may be unaligned: the kernels read aligned ones.
        values.append(np.require(v, v.dtype.newbyteorder("="), ["C", "A"]))
        indices.append(np.require(i, np.int64, ["C", "A"]))
    d, i = _native.merge_topk(values, indices, k, largest)
    if wrap is not None:
        return wrap(d), wrap(i)
    return d, i


_named(merge_topk, "merge_topk", """Each row's best ``k`` over several knn results: the exact merge of shards.

    Entries rank as :func:`knn` ranks them, by value and then by the lower index, so the merge is
    associative: knn over shards of ``b`` (each with ``id_offset`` its first row), merged in any
    order or tree, equals knn over all of ``b``, ties included. Parts narrower than ``k`` are
    taken as they are, and nothing is padded: the result is narrower where fewer candidates exist.

    Parameters
    ----------
    parts : sequence of (values, indices)
        knn's results over the same queries: ``[M, k_i]`` values of one dtype and ``[M, k_i]``
        int64 indices, each row ranked.
    k : int
        How many to keep per row.
    largest : bool, optional
        The parts rank the largest values first (similarities, ``binary_dot``); default: the
        smallest first (distances).

    Returns
    -------
    values : ndarray
        ``[M, min(k, sum of k_i)]``.
    indices : ndarray
        ``[M, min(k, sum of k_i)]`` int64.

    Raises
    ------
    TypeError
        A part that is not a pair of arrays, values of two dtypes, or indices that are not integers.
    ValueError
        Parts of other rows or shapes, rows out of knn's order, NaN values, or a negative index
        (FAISS pads missing neighbours with -1; drop them first).

    Examples
    --------
    >>> q = np.array([[0b0011]], dtype=np.uint8)
    >>> codes = np.array([[0b0000], [0b0111], [0b0001], [0b1111]], dtype=np.uint8)
    >>> first = tb.knn(q, codes[:2], k=2)
    >>> second = tb.knn(q, codes[2:], k=2, id_offset=2)
    >>> tb.merge_topk([first, second], k=3)
    (array([[1, 1, 2]], dtype=uint32), array([[1, 2, 0]]))
    """)


def _threshold_parts(x, threshold):
    """``threshold`` as ``_native.binarize`` takes it, compared as numpy compares ``x >
    threshold``: a Python float against a float array in the array's dtype (NEP 50), a Python int
    exactly, and arrays at the dtype they promote to with ``x``, exactly."""
    if isinstance(threshold, (bool, np.bool_)):
        return {"ints": [int(threshold)]}
    if isinstance(threshold, np.generic):
        # numpy scalars are strong (NEP 50): np.float64(0.1) makes a float32 x compare at
        # float64, as a 0-d array would.
        threshold = np.asarray(threshold)
    elif isinstance(threshold, int) and x.dtype.kind != "f":
        # Past any integer dtype's range, every value is below (or above) it; the native layer
        # takes 128-bit integers.
        threshold = max(-(2**65), min(2**65, threshold))
    if isinstance(threshold, (int, float)) and x.dtype.kind == "f":
        # numpy casts a Python number to the array's float dtype (NEP 50).
        try:
            with np.errstate(over="ignore"):
                return {"typed": np.asarray([threshold], dtype=x.dtype)}
        except OverflowError:
            return {"ints": [threshold]}
    if isinstance(threshold, int):
        return {"ints": [threshold]}
    if isinstance(threshold, float):
        return {"reals": [threshold]}
    if hasattr(threshold, "__dlpack__") and not isinstance(threshold, (np.ndarray, np.generic)):
        threshold = _from_dlpack(threshold, "threshold")
    t = np.asarray(threshold)
    if t.ndim > 1:
        raise ValueError(
            f"threshold: expected a scalar or a vector over the last axis, got shape {t.shape}"
        )
    if t.dtype.kind not in "biuf":
        raise TypeError(f"threshold: expected numbers, got dtype {t.dtype}")
    t = t.reshape(-1)
    if np.result_type(x.dtype, t.dtype) == x.dtype:
        return {"typed": np.ascontiguousarray(t, dtype=x.dtype)}
    if t.dtype.kind == "f" or (x.dtype.kind == "f" and t.dtype.itemsize == 8):
        # numpy compares at float64 here: so does this, exactly.
        return {"reals": t.astype(np.float64).tolist()}
    return {"ints": [int(v) for v in t.tolist()]}


def _empty(shape, dtype, name):
    """``np.empty(shape, dtype)``, or ``MemoryError`` where this process could not hold it (numpy's
    allocator overcommits, and in a container the out-of-memory killer would end the process)."""
    _native.check_allocation(math.prod(shape) * np.dtype(dtype).itemsize, name)
    return np.empty(shape, dtype=dtype)


def binarize(x, /, threshold=0, *, bitorder="big", out=None, device="auto"):
    (x,), wrap = _inputs([x], ["x"])
    if x.dtype.kind not in "biuf":
        raise TypeError(f"x: binarize takes numbers, got dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError("x: binarize packs the last axis; got a 0-d array")
    bitorder = _bitorder(bitorder)
    if not isinstance(device, str):
        raise TypeError(f"device: expected \"cpu\", \"gpu\" or \"auto\", got {type(device).__name__}")
    parts = _threshold_parts(x, threshold)
    shape = x.shape[:-1] + ((x.shape[-1] + 7) // 8,)
    if not x.flags.c_contiguous:
        _native.check_allocation(x.size * x.itemsize, "x")
    x = np.ascontiguousarray(x)
    target = _out(out)
    if target is not None:
        if target.dtype != np.uint8:
            raise TypeError(f"out: the codes are uint8, got {target.dtype}")
        if target.shape != shape:
            raise ValueError(f"out: expected shape {shape}, got {target.shape}")
    direct = target is not None and target.flags.c_contiguous and target.flags.writeable
    codes = target if direct else _empty(shape, np.uint8, "codes")
    _native.binarize(x, codes, bitorder, device, **parts)
    if target is not None:
        if not direct:
            target[...] = codes
        return out[0] if isinstance(out, tuple) else out
    return wrap(codes) if wrap is not None else codes


_named(binarize, "binarize", """Binary codes of real vectors: ``np.packbits(x > threshold, axis=-1, bitorder=...)`` in one pass.

    The first step of binary embeddings (sentence-transformers' ``ubinary`` precision) and of a
    binary network's activations. Every numeric dtype, and the same bits on the CPU and the GPU. A
    NaN is never above its threshold (its bit is 0), as in numpy.

    Parameters
    ----------
    x : array_like
        ``[..., D]`` numbers: bool, int8 to int64, uint8 to uint64, float16, float32 or float64.
    threshold : scalar or array_like, default 0
        One threshold, or one per element of the last axis (``D`` of them). Compared as numpy
        compares ``x > threshold``: a Python float at ``x``'s float dtype, a numpy scalar or
        array at the dtype it promotes to with ``x`` (int64 and uint64 values are rounded to
        float64 against a float, as numpy rounds them), Python integers exactly, of any size.
    bitorder : {"big", "little"}, default "big"
        The order of the bits in each byte, as ``np.packbits``'s ``bitorder``.
    out : ndarray, optional
        Where to write the codes, uint8 of shape ``[..., ceil(D / 8)]``. It is returned.
    <device>

    Returns
    -------
    ndarray
        uint8 codes ``[..., ceil(D / 8)]``, padding bits 0; ``out`` when given; a tensor of the
        input's type for ``__dlpack__`` inputs.

    Raises
    ------
    TypeError
        A dtype that is not a number, or an ``out`` that is not uint8.
    ValueError
        A 0-d ``x``, thresholds of another length than the last axis, or an ``out`` of another
        shape.
    RuntimeError
        ``device="gpu"`` without a GPU, or a failure of the GPU.

    See Also
    --------
    knn : search the codes.
    rescore : rescore the candidates with the float queries.

    Examples
    --------
    >>> x = np.array([[0.5, -1.0, 2.0, np.nan, 0.0, 3.0, -0.5, 1.0, 9.0]], dtype=np.float32)
    >>> tb.binarize(x)
    array([[165, 128]], dtype=uint8)
    >>> np.packbits(x > 0, axis=-1)
    array([[165, 128]], dtype=uint8)
    """)


def rescore(queries, codes, candidates, /, k=None, *, bitorder="big"):
    (queries, codes, candidates), wrap = _inputs([queries, codes, candidates],
                                                 ["queries", "codes", "candidates"])
    bitorder = _bitorder(bitorder)
    if queries.dtype.kind not in "f":
        if queries.dtype.kind not in "biu":
            raise TypeError(f"queries: expected float32 or float64, got {queries.dtype}")
        queries = queries.astype(np.float64)
    if queries.dtype not in (np.float16, np.float32, np.float64):
        queries = queries.astype(np.float64)
    if codes.dtype != np.uint8:
        raise TypeError(
            f"codes: expected uint8 codes (tb.binarize or np.packbits makes them), got {codes.dtype}"
        )
    if candidates.dtype.kind not in "iu":
        raise TypeError(f"candidates: expected integer row indices, got {candidates.dtype}")
    if candidates.dtype != np.int64:
        # A checked cast: uint64 ids past int64 are named, never wrapped to negative ids.
        if candidates.dtype == np.uint64 and candidates.size:
            past = np.argwhere(candidates > np.iinfo(np.int64).max)
            if len(past):
                at = tuple(int(i) for i in past[0])
                raise ValueError(
                    f"rescore: candidate {int(candidates[at])} (query {at[0] if len(at) > 1 else 0}, "
                    f"column {at[-1]}) is not a row of the {codes.shape[0] if codes.ndim else 0} "
                    "codes, nor -1 (padding)")
        candidates = candidates.astype(np.int64)
    if k is not None:
        k = _count(k, "k")
    scores, idx = _native.rescore(queries, codes, candidates, k, bitorder)
    if wrap is not None:
        return wrap(scores), wrap(idx)
    return scores, idx


_named(rescore, "rescore", """Rescore binary-search candidates with the float queries, without unpacking the codes.

    The last step of binary search (sentence-transformers' ``rescore=True``): the score of code
    row ``c`` for a query ``q`` of ``D`` values is ``sum_j q_j * (2 * bit_j(c) - 1)``, the dot
    product of the query with the code read as ±1, over the code's first ``D`` bits. Read from
    per-byte tables of each query, in float64, rounded once to float32.

    Parameters
    ----------
    queries : array_like
        ``[M, D]`` float32 or float64 queries.
    codes : array_like
        ``[N, B]`` uint8 codes of the database, ``B >= ceil(D / 8)`` (``tb.binarize`` or
        ``np.packbits`` makes them).
    candidates : array_like
        ``[M, C]`` rows of ``codes`` per query, of any integer dtype, such as ``knn``'s
        indices; ``-1`` entries are skipped (FAISS pads with them), and any other id outside
        ``[0, N)`` raises ``ValueError`` naming its query and column.
    k : int, optional
        How many to return per query (default ``C``).
    bitorder : {"big", "little"}, default "big"
        The codes' bit order, as ``np.packbits``'s ``bitorder``.

    Returns
    -------
    scores : ndarray
        ``[M, k]`` float32, descending; equal scores in ascending index order. A query with fewer
        than ``k`` valid candidates is padded with ``-inf``.
    indices : ndarray
        ``[M, k]`` int64 rows of ``codes``; ``-1`` where padded.

    Raises
    ------
    TypeError
        Queries that are not numbers, codes that are not uint8, candidates that are not integers.
    ValueError
        Shapes that do not fit (more query values than code bits, a row of candidates per
        query), a candidate that is not a row of ``codes``, or ``k`` above ``C``.

    See Also
    --------
    binarize, knn

    Examples
    --------
    >>> q = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    >>> codes = tb.binarize(np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]]))
    >>> tb.rescore(q, codes, np.array([[1, 0, -1]]), 2)
    (array([[ 3.5, -3.5]], dtype=float32), array([[0, 1]]))
    """)


def run(op, *inputs, out=None, dtype=None, device="auto", level=None, broadcast=None,
        broadcast_axis=None, axis=_DEFAULT, keepdims=False, bits=None, bitorder="big"):
    names = [f"input {i}" for i in range(len(inputs))]
    return _call(op, list(inputs), names, out, dtype=dtype, device=device, level=level,
                 broadcast=broadcast, axis=broadcast_axis, axes=axis, keepdims=keepdims,
                 bits=bits, bitorder=bitorder)


_named(run, "run", """Runs a standard op by any of its names.

    Parameters
    ----------
    op : str
        The op's name, short name or DirectML name: ``"xor"``, ``"BitwiseXor"``,
        ``"ELEMENT_WISE_BIT_XOR"`` (``ops()`` lists them).
    *inputs : array_like
        The op's inputs, as its function takes them.
    out, dtype, device, level, broadcast, broadcast_axis, axis, keepdims, bits, bitorder
        As the op's function takes them; ``axis`` is a reduction's, ``bits`` and ``bitorder`` a
        sum's over the last axis.

    <returns>

    <raises>

    Examples
    --------
    >>> tb.run("ELEMENT_WISE_BIT_XOR", np.array([12], dtype=np.uint8), 6)
    array([10], dtype=uint8)
    """)


def ops():
    """The standard ops.

    Returns
    -------
    list of tuple
        ``(name, short name, input names, summary)`` for each op.

    Examples
    --------
    >>> [short for _, short, _, _ in tb.ops()][:3]
    ['and', 'or', 'xor']
    """
    return _native.ops()


def gpu_name():
    """The GPU that ``device="gpu"`` runs on: its name, driver and backend.

    Raises
    ------
    RuntimeError
        There is no GPU (or no Vulkan, Metal or DirectX 12 driver).
    """
    return _native.gpu_name()


def set_num_threads(n):
    """Sets the number of threads the CPU kernels spread large calls over.

    Parameters
    ----------
    n : int
        The thread count from the next call on, at most the CPUs the process may use (its
        affinity and CPU quota; a larger ``n`` warns, and ``get_num_threads`` reports the count
        in force); ``0`` restores the default (the number of logical CPUs, or
        ``RAYON_NUM_THREADS`` when set). threadpoolctl's ``threadpool_limits`` sets it
        too (``user_api="tensorbits"``).

    Raises
    ------
    ValueError
        ``n`` is negative.

    Examples
    --------
    >>> tb.set_num_threads(1)
    >>> tb.get_num_threads()
    1
    >>> tb.set_num_threads(0)
    """
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"set_num_threads: expected a count of 0 or more, got {n}")
    _native.set_num_threads(min(n, 2**32))
    if n > 0 and _native.get_num_threads() < n:
        import warnings

        warnings.warn(f"set_num_threads({n}): this process may use {_native.get_num_threads()} "
                      "CPUs (its affinity and CPU quota); that many threads are in force",
                      RuntimeWarning, stacklevel=2)


def get_num_threads():
    """The number of threads the CPU kernels spread large calls over.

    Returns
    -------
    int
        The count ``set_num_threads`` set, or the default: the number of logical CPUs, or
        ``RAYON_NUM_THREADS`` when set.
    """
    return _native.get_num_threads()


def cpu_instruction_set():
    """The instruction set the CPU kernels run at in this process.

    Every level gives the same bits; only the speed differs. The environment variable
    ``TENSORBITS_CPU`` (``baseline``, ``avx2``, ``avx512bw`` or ``avx512``), read at the first call
    of a kernel, caps it below what the CPU runs: to compare the versions on one machine, or to run
    as a machine without AVX-512 would. A value that is no level, or one above this CPU's, leaves
    the CPU's level and prints one line on stderr saying so.

    Returns
    -------
    str
        ``"avx512"`` (AVX-512 with VPOPCNTDQ and BITALG), ``"avx512bw"`` (AVX2 kernels with AVX-512
        BW byte counts: Skylake and Cascade Lake Xeons), ``"avx2"``, ``"baseline"`` (x86_64 with
        SSE2), or ``"portable"`` on other architectures.
    """
    return _native.cpu_instruction_set()


try:  # threadpoolctl's threadpool_limits() and threadpool_info() see tensorbits when installed.
    from . import _threadpoolctl  # noqa: F401
except ImportError:
    pass
