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
"pdpd"`` and, for ``pdpd``, ``axis=``.

Semantics are the library's (see its README): ops act on the stored bits of every type (floats
included); shifts by a negative count or one at least the bit width give 0 (or -1 for a right
shift of a negative value); ``bitwise_count`` counts the bits of the stored two's complement
pattern, so ``bitwise_count(np.int8(-1))`` is 8 where numpy's is 1 (numpy counts the absolute
value). There is no type promotion: the inputs of a call share one dtype.

Errors: a dtype the op does not support raises ``TypeError``; shapes, broadcasting and axes raise
``ValueError``; a GPU failure raises ``RuntimeError``; each with the library's message.
"""

import operator
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
    "left_shift",
    "right_shift",
    "bitwise_count",
    "bitwise_and_reduce",
    "bitwise_or_reduce",
    "bitwise_xor_reduce",
    "bitwise_count_sum",
    "hamming_distance",
    "hamming_cdist",
    "knn",
    "run",
    "ops",
    "gpu_name",
    "set_num_threads",
    "get_num_threads",
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
    if flips:
        index = tuple(slice(None, None, -1) if j in flips else slice(None) for j in range(result.ndim))
        result = result[index]
    return wrap(result) if wrap is not None else result


def _axes(axis, ndim):
    if axis is _DEFAULT:
        return None
    if axis is None:
        return list(range(ndim))
    if isinstance(axis, (tuple, list)):
        return [operator.index(a) for a in axis]
    return [operator.index(axis)]


def _dtype_name(dtype):
    return None if dtype is None else np.dtype(dtype).name


def _call(op, xs, names, out, dtype=None, device="auto", level=None, broadcast=None,
          axis=None, axes=_DEFAULT, keepdims=False):
    arrays, wrap = _inputs(xs, names)
    out_array = _out(out)
    axes = _axes(axes, max((a.ndim for a in arrays), default=0))
    if not isinstance(device, str):
        raise TypeError(f"device: expected \"cpu\", \"gpu\" or \"auto\", got {type(device).__name__}")
    result, flips = _native.run(
        op, arrays, out_array, _dtype_name(dtype), device, level, broadcast,
        None if axis is None else operator.index(axis), axes, bool(keepdims),
    )
    if out is not None:
        return out[0] if isinstance(out, tuple) else out
    return _present(result, flips, wrap)


def _named(f, name, doc):
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def _runs(op):
    """Marks a function with the op it runs (a test checks that every op has one)."""

    def mark(f):
        f.__tensorbits_op__ = op
        return f

    return mark


def _binary(name, op, doc):
    index = _native.op_index(op)

    def f(x1, x2, /, out=None, *, device="auto", level=None, broadcast=None, axis=None):
        if type(x1) is np.ndarray and type(x2) is np.ndarray and (out is None or type(out) is np.ndarray):
            # The common case, without the conversions of `_call`.
            result, flips = _native.run(index, [x1, x2], out, None, device, level, broadcast, axis,
                                        None, False)
            return out if out is not None else (_present(result, flips, None) if flips else result)
        return _call(index, [x1, x2], ["x1", "x2"], out, device=device, level=level,
                     broadcast=broadcast, axis=axis)

    return _runs(op)(_named(f, name, doc))


bitwise_and = _binary("bitwise_and", "and", "Element-wise AND of the bits of ``x1`` and ``x2``.")
bitwise_or = _binary("bitwise_or", "or", "Element-wise OR of the bits of ``x1`` and ``x2``.")
bitwise_xor = _binary("bitwise_xor", "xor", "Element-wise XOR of the bits of ``x1`` and ``x2``.")
left_shift = _binary(
    "left_shift", "shl",
    "``x1 << x2`` element-wise; a count that is negative or at least the bit width gives 0.",
)
right_shift = _binary(
    "right_shift", "shr",
    "``x1 >> x2`` element-wise, arithmetic for signed types; a count that is negative or at least "
    "the bit width gives 0, or -1 for a negative ``x1``.",
)


@_runs("not")
def bitwise_not(x, /, out=None, *, device="auto", level=None):
    """Element-wise NOT of the bits of ``x`` (logical NOT for bool)."""
    return _call("not", [x], ["x"], out, device=device, level=level)


invert = bitwise_not


@_runs("popcount")
def bitwise_count(x, /, out=None, *, dtype=None, device="auto", level=None):
    """The number of set bits of each element's stored pattern (uint8, or ``dtype="uint32"``).

    Signed values count their two's complement bits: ``bitwise_count(np.int8(-1))`` is 8, where
    numpy's ``bitwise_count`` counts the absolute value and gives 1.
    """
    return _call("popcount", [x], ["x"], out, dtype=dtype, device=device, level=level)


def _reduction(name, op, doc):
    def f(x, /, axis=_DEFAULT, *, out=None, keepdims=False, dtype=None, device="auto", level=None):
        return _call(op, [x], ["x"], out, dtype=dtype, device=device, level=level,
                     axes=axis, keepdims=keepdims)

    return _runs(op)(_named(f, name, doc))


bitwise_and_reduce = _reduction(
    "bitwise_and_reduce", "and_reduce",
    "AND of the elements along ``axis`` (default: all axes; an int, a tuple, or None for all). "
    "An empty reduction gives all ones.",
)
bitwise_or_reduce = _reduction(
    "bitwise_or_reduce", "or_reduce", "OR of the elements along ``axis`` (default: all)."
)
bitwise_xor_reduce = _reduction(
    "bitwise_xor_reduce", "xor_reduce", "XOR of the elements along ``axis`` (default: all)."
)
bitwise_count_sum = _reduction(
    "bitwise_count_sum", "popcount_sum",
    "Set bits summed along ``axis`` (default: all), as uint32 (or ``dtype=``: a sum that could "
    "pass the output type is refused before running).",
)


@_runs("hamming")
def hamming_distance(x1, x2, /, axis=_DEFAULT, *, out=None, keepdims=False, dtype=None,
                     device="auto", level=None, broadcast=None):
    """Bits that differ between ``x1`` and ``x2``, summed along ``axis`` (default: the last)."""
    return _call("hamming", [x1, x2], ["x1", "x2"], out, dtype=dtype, device=device, level=level,
                 broadcast=broadcast, axes=axis, keepdims=keepdims)


def _packed_codes(a, b, name):
    """Bool or float codes are refused with the way to pack them, not an op's name."""
    for x, which in ((a, "a"), (b, "b")):
        if x.dtype.kind in "bfc":
            raise TypeError(
                f"{name}: {which} is {x.dtype}; binary codes are packed bits of an unsigned or "
                f"signed integer type: pack bools (or the signs of float embeddings) first, "
                f"e.g. np.packbits(emb > 0, axis=-1)"
            )


@_runs("hamming_cdist")
def hamming_cdist(a, b, /, *, out=None, dtype=None, device="auto", level=None):
    """All-pairs Hamming distances: ``a [..., M, K]`` and ``b [..., N, K]`` give ``[..., M, N]``."""
    _packed_codes(*_inputs([a, b], ["a", "b"])[0], "hamming_cdist")
    return _call("hamming_cdist", [a, b], ["a", "b"], out, dtype=dtype, device=device, level=level)


def knn(a, b, /, k, *, dtype=None, device="auto", level=None):
    """The ``k`` rows of ``b`` nearest each row of ``a`` in Hamming distance.

    Returns ``(distances, indices)``, both ``[..., M, k]``: distances ascending, ties by the lower
    index, indices int64. The same on the CPU and the GPU, bit for bit.
    """
    (a, b), wrap = _inputs([a, b], ["a", "b"])
    _packed_codes(a, b, "knn")
    k = operator.index(k)
    if k < 0:
        raise ValueError(f"k must not be negative, got {k}")
    if not isinstance(device, str):
        raise TypeError(f"device: expected \"cpu\", \"gpu\" or \"auto\", got {type(device).__name__}")
    d, i, flips = _native.knn("hamming_cdist", a, b, k, _dtype_name(dtype), device, level)
    return _present(d, flips, wrap), _present(i, flips, wrap)


def run(op, *inputs, out=None, dtype=None, device="auto", level=None, broadcast=None, axis=None,
        axes=_DEFAULT, keepdims=False):
    """Runs a standard op by any of its names (``"xor"``, ``"BitwiseXor"``, ``"ELEMENT_WISE_BIT_XOR"``)."""
    names = [f"input {i}" for i in range(len(inputs))]
    return _call(op, list(inputs), names, out, dtype=dtype, device=device, level=level,
                 broadcast=broadcast, axis=axis, axes=axes, keepdims=keepdims)


def ops():
    """The standard ops: ``(name, short name, inputs, summary)`` for each."""
    return _native.ops()


def gpu_name():
    """The GPU the package runs on with ``device="gpu"`` (``RuntimeError`` if there is none)."""
    return _native.gpu_name()


def set_num_threads(n):
    """Sets the number of threads the CPU kernels spread large calls over; ``0`` restores the
    default (the number of logical CPUs, or ``RAYON_NUM_THREADS``)."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"set_num_threads: expected a count of 0 or more, got {n}")
    _native.set_num_threads(n)


def get_num_threads():
    """The number of threads the CPU kernels spread large calls over."""
    return _native.get_num_threads()


try:  # threadpoolctl's threadpool_limits() and threadpool_info() see tensorbits when installed.
    from . import _threadpoolctl  # noqa: F401
except ImportError:
    pass
