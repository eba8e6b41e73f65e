# Types of the public API. The functions are made at import time (one factory per kind of op), so
# their signatures are written here; CI checks them against the built package with mypy's stubtest.
import os
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

__version__: str
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

class _SupportsDLPack(Protocol):
    """An array in host memory that numpy reads through DLPack, such as a PyTorch CPU tensor."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> Any: ...

class _Default:
    """The default axes of a reduction: the op's own, shown as ``<op's axes>``."""

    def __repr__(self) -> str: ...

_DEFAULT: Final[_Default]

_Tensor = TypeVar("_Tensor", bound=_SupportsDLPack)
_Out = TypeVar("_Out")
_Scalar = bool | int | float | np.generic
_ArrayLike = NDArray[Any] | _Scalar | Sequence[Any]
_Input = _ArrayLike | _SupportsDLPack
_Device = Literal["auto", "cpu", "gpu"]
_BitOrder = Literal["big", "little"]
_Broadcast = Literal["numpy", "none", "pdpd"]
_DType = str | type[np.generic] | np.dtype[Any]
_Axis = int | Sequence[int] | None | _Default

# Each op: numpy arrays in, a numpy array out; a tensor in (PyTorch), a tensor of its type out;
# `out=` given, `out` returned; anything else (Python or numpy scalars) gives Any, as numpy's stubs
# do, since a 0-d result is a numpy scalar.

@overload
def bitwise_and(
    x1: NDArray[Any],
    x2: _ArrayLike,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> NDArray[Any]: ...
@overload
def bitwise_and(
    x1: _Tensor,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Tensor: ...
@overload
def bitwise_and(
    x1: _Input,
    x2: _Input,
    /,
    out: _Out,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Out: ...
@overload
def bitwise_and(
    x1: _Input,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> Any: ...
@overload
def bitwise_or(
    x1: NDArray[Any],
    x2: _ArrayLike,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> NDArray[Any]: ...
@overload
def bitwise_or(
    x1: _Tensor,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Tensor: ...
@overload
def bitwise_or(
    x1: _Input,
    x2: _Input,
    /,
    out: _Out,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Out: ...
@overload
def bitwise_or(
    x1: _Input,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> Any: ...
@overload
def bitwise_xor(
    x1: NDArray[Any],
    x2: _ArrayLike,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> NDArray[Any]: ...
@overload
def bitwise_xor(
    x1: _Tensor,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Tensor: ...
@overload
def bitwise_xor(
    x1: _Input,
    x2: _Input,
    /,
    out: _Out,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Out: ...
@overload
def bitwise_xor(
    x1: _Input,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> Any: ...
@overload
def left_shift(
    x1: NDArray[Any],
    x2: _ArrayLike,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> NDArray[Any]: ...
@overload
def left_shift(
    x1: _Tensor,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Tensor: ...
@overload
def left_shift(
    x1: _Input,
    x2: _Input,
    /,
    out: _Out,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Out: ...
@overload
def left_shift(
    x1: _Input,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> Any: ...
@overload
def right_shift(
    x1: NDArray[Any],
    x2: _ArrayLike,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> NDArray[Any]: ...
@overload
def right_shift(
    x1: _Tensor,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Tensor: ...
@overload
def right_shift(
    x1: _Input,
    x2: _Input,
    /,
    out: _Out,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> _Out: ...
@overload
def right_shift(
    x1: _Input,
    x2: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
) -> Any: ...
@overload
def bitwise_not(
    x: NDArray[Any],
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
) -> NDArray[Any]: ...
@overload
def bitwise_not(
    x: _Tensor,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
) -> _Tensor: ...
@overload
def bitwise_not(
    x: _Input,
    /,
    out: _Out,
    *,
    device: _Device = "auto",
    level: str | None = None,
) -> _Out: ...
@overload
def bitwise_not(
    x: _Input,
    /,
    out: None = None,
    *,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...

invert = bitwise_not
bitwise_invert = bitwise_not
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift

@overload
def bitwise_count(
    x: NDArray[Any],
    /,
    out: None = None,
    *,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> NDArray[Any]: ...
@overload
def bitwise_count(
    x: _Tensor,
    /,
    out: None = None,
    *,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Tensor: ...
@overload
def bitwise_count(
    x: _Input,
    /,
    out: _Out,
    *,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Out: ...
@overload
def bitwise_count(
    x: _Input,
    /,
    out: None = None,
    *,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_and_reduce(
    x: NDArray[Any],
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_and_reduce(
    x: _Tensor,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Tensor: ...
@overload
def bitwise_and_reduce(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: _Out,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Out: ...
@overload
def bitwise_and_reduce(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_or_reduce(
    x: NDArray[Any],
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_or_reduce(
    x: _Tensor,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Tensor: ...
@overload
def bitwise_or_reduce(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: _Out,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Out: ...
@overload
def bitwise_or_reduce(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_xor_reduce(
    x: NDArray[Any],
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_xor_reduce(
    x: _Tensor,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Tensor: ...
@overload
def bitwise_xor_reduce(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: _Out,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Out: ...
@overload
def bitwise_xor_reduce(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_count_sum(
    x: NDArray[Any],
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def bitwise_count_sum(
    x: _Tensor,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Tensor: ...
@overload
def bitwise_count_sum(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: _Out,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> _Out: ...
@overload
def bitwise_count_sum(
    x: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
) -> Any: ...
@overload
def hamming_distance(
    x1: NDArray[Any],
    x2: _ArrayLike,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
@overload
def hamming_distance(
    x1: _Tensor,
    x2: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Tensor: ...
@overload
def hamming_distance(
    x1: _Input,
    x2: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: _Out,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Out: ...
@overload
def hamming_distance(
    x1: _Input,
    x2: _Input,
    /,
    axis: _Axis = ...,
    *,
    out: None = None,
    keepdims: bool = False,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
@overload
def hamming_cdist(
    a: NDArray[Any],
    b: _ArrayLike,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> NDArray[Any]: ...
@overload
def hamming_cdist(
    a: _Tensor,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Tensor: ...
@overload
def hamming_cdist(
    a: _Input,
    b: _Input,
    /,
    *,
    out: _Out,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Out: ...
@overload
def hamming_cdist(
    a: _Input,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
@overload
def binary_dot(
    a: NDArray[Any],
    b: _ArrayLike,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> NDArray[Any]: ...
@overload
def binary_dot(
    a: _Tensor,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Tensor: ...
@overload
def binary_dot(
    a: _Input,
    b: _Input,
    /,
    *,
    out: _Out,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Out: ...
@overload
def binary_dot(
    a: _Input,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
@overload
def tanimoto(
    a: NDArray[Any],
    b: _ArrayLike,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> NDArray[Any]: ...
@overload
def tanimoto(
    a: _Tensor,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Tensor: ...
@overload
def tanimoto(
    a: _Input,
    b: _Input,
    /,
    *,
    out: _Out,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Out: ...
@overload
def tanimoto(
    a: _Input,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
@overload
def dice(
    a: NDArray[Any],
    b: _ArrayLike,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> NDArray[Any]: ...
@overload
def dice(
    a: _Tensor,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Tensor: ...
@overload
def dice(
    a: _Input,
    b: _Input,
    /,
    *,
    out: _Out,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> _Out: ...
@overload
def dice(
    a: _Input,
    b: _Input,
    /,
    *,
    out: None = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
class Database:
    op: str
    bits: int | None
    bitorder: str
    scanned: int
    def __init__(
        self,
        codes: _ArrayLike,
        /,
        *,
        op: str = "tanimoto",
        bits: int | None = None,
        bitorder: _BitOrder = "big",
    ) -> None: ...
    def __len__(self) -> int: ...
    @property
    def shape(self) -> tuple[int, int]: ...
    def knn(
        self,
        queries: _ArrayLike,
        k: int,
        /,
        *,
        largest: bool | None = None,
        dtype: _DType | None = None,
        bits: int | None = None,
        bitorder: _BitOrder = "big",
    ) -> tuple[NDArray[Any], NDArray[np.int64]]: ...
    def range_search(
        self,
        queries: _ArrayLike,
        threshold: float,
        /,
        *,
        largest: bool | None = None,
        dtype: _DType | None = None,
        bits: int | None = None,
        bitorder: _BitOrder = "big",
    ) -> tuple[NDArray[np.int64], NDArray[Any], NDArray[np.int64]]: ...
    def save(self, path: str | os.PathLike[str]) -> None: ...
    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True) -> Database: ...

@overload
def knn(
    a: NDArray[Any],
    b: _ArrayLike | Database,
    /,
    k: int,
    *,
    op: str = "hamming_cdist",
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    id_offset: int = 0,
) -> tuple[NDArray[Any], NDArray[np.int64]]: ...
@overload
def knn(
    a: _Tensor,
    b: _Input,
    /,
    k: int,
    *,
    op: str = "hamming_cdist",
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    id_offset: int = 0,
) -> tuple[_Tensor, _Tensor]: ...
@overload
def knn(
    a: _Input,
    b: _Input,
    /,
    k: int,
    *,
    op: str = "hamming_cdist",
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    id_offset: int = 0,
) -> tuple[Any, Any]: ...
@overload
def merge_topk(
    parts: Sequence[tuple[NDArray[Any], NDArray[np.int64]]],
    k: int,
    *,
    largest: bool | None = None,
) -> tuple[NDArray[Any], NDArray[np.int64]]: ...
@overload
def merge_topk(
    parts: Sequence[tuple[Any, Any]],
    k: int,
    *,
    largest: bool | None = None,
) -> tuple[Any, Any]: ...
@overload
def range_search(
    a: NDArray[Any] | _ArrayLike,
    b: NDArray[Any] | _ArrayLike | Database,
    /,
    threshold: float,
    *,
    op: str = "hamming_cdist",
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
    dtype: _DType | None = None,
    device: _Device = "auto",
) -> tuple[NDArray[np.int64], NDArray[Any], NDArray[np.int64]]: ...
@overload
def range_search(
    a: _Tensor,
    b: _Input,
    /,
    threshold: float,
    *,
    op: str = "hamming_cdist",
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
    dtype: _DType | None = None,
    device: _Device = "auto",
) -> tuple[_Tensor, _Tensor, _Tensor]: ...
@overload
def binarize(
    x: NDArray[Any] | _ArrayLike,
    /,
    threshold: _Scalar | _ArrayLike = 0,
    *,
    bitorder: _BitOrder = "big",
    out: None = None,
    device: _Device = "auto",
) -> NDArray[np.uint8]: ...
@overload
def binarize(
    x: _Input,
    /,
    threshold: _Scalar | _ArrayLike = 0,
    *,
    bitorder: _BitOrder = "big",
    out: Any = None,
    device: _Device = "auto",
) -> Any: ...
def rescore(
    queries: _Input,
    codes: _Input,
    candidates: _Input,
    /,
    k: int | None = None,
    *,
    bitorder: _BitOrder = "big",
) -> tuple[Any, Any]: ...
def run(
    op: str | int,
    *inputs: _Input,
    out: Any = None,
    dtype: _DType | None = None,
    device: _Device = "auto",
    level: str | None = None,
    broadcast: _Broadcast | None = None,
    broadcast_axis: int | None = None,
    axis: _Axis = ...,
    keepdims: bool = False,
    bits: int | None = None,
    bitorder: _BitOrder = "big",
) -> Any: ...
def ops() -> list[tuple[str, str, list[str], str]]: ...
def gpu_name() -> str: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def cpu_instruction_set() -> Literal["baseline", "avx2", "avx512bw", "avx512", "portable"]: ...
