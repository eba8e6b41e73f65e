# The extension module's functions, which tensorbits/__init__.py wraps.
from typing import Any

import numpy as np
from numpy.typing import NDArray

__version__: str
__all__ = [
    "__version__",
    "run",
    "run_plain",
    "pair_plain",
    "knn_plain",
    "range_plain",
    "merge_topk",
    "hamming_cdist",
    "binary_dot",
    "db_prepare",
    "db_check",
    "db_knn",
    "db_range",
    "tanimoto",
    "dice",
    "with_doc",
    "op_index",
    "binarize",
    "rescore",
    "knn",
    "knn_any",
    "gpu_name",
    "check_allocation",
    "ops",
    "set_num_threads",
    "get_num_threads",
    "cpu_instruction_set",
]

def run(
    op: Any,
    inputs: list[Any],
    out: Any,
    out_dtype: str | None,
    device: str,
    level: str | None,
    broadcast: str | None,
    bcast_axis: int | None,
    axes: list[int] | None,
    keepdims: bool,
    bits: int | None = None,
    bitorder: str = "big",
) -> tuple[NDArray[Any], list[int]]: ...
def run_plain(op: int, x1: Any, x2: Any | None, out: Any | None) -> NDArray[Any] | None: ...
def pair_plain(
    op: int,
    a: Any,
    b: Any,
    out: Any | None,
    dtype: str | None,
    bits: int | None = None,
    bitorder: str = "big",
) -> NDArray[Any] | None: ...
def knn_plain(
    op: int,
    a: Any,
    b: Any,
    k: int,
    dtype: str | None,
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: str = "big",
) -> tuple[NDArray[Any], NDArray[np.int64]] | None: ...
def merge_topk(
    values: list[Any],
    indices: list[Any],
    k: int,
    largest: bool,
) -> tuple[NDArray[Any], NDArray[np.int64]]: ...
def db_prepare(
    op: int, codes: Any, bits: int | None = None, bitorder: str = "big"
) -> tuple[NDArray[np.uint8], NDArray[np.uint64], NDArray[np.int64]]: ...
def db_check(
    op: int,
    dtype: str,
    k: int,
    codes: Any,
    counts: Any,
    order: Any,
    bits: int | None = None,
    bitorder: str = "big",
) -> None: ...
def db_knn(
    op: int,
    dtype: str,
    k_elems: int,
    codes: Any,
    counts: Any,
    order: Any,
    queries: Any,
    k: int,
    out_dtype: str | None = None,
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: str = "big",
) -> tuple[NDArray[Any], NDArray[np.int64], int]: ...
def db_range(
    op: int,
    dtype: str,
    k_elems: int,
    codes: Any,
    counts: Any,
    order: Any,
    queries: Any,
    threshold: float,
    out_dtype: str | None = None,
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: str = "big",
) -> tuple[NDArray[np.int64], NDArray[Any], NDArray[np.int64], int]: ...
def range_plain(
    op: int,
    a: Any,
    b: Any,
    threshold: float,
    dtype: str | None,
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: str = "big",
    device: str = "cpu",
) -> tuple[NDArray[np.int64], NDArray[Any], NDArray[np.int64]]: ...
def hamming_cdist(
    a: Any,
    b: Any,
    /,
    *,
    out: Any = None,
    dtype: Any = None,
    device: Any = "auto",
    level: Any = None,
    bits: Any = None,
    bitorder: Any = "big",
) -> Any: ...
def binary_dot(
    a: Any,
    b: Any,
    /,
    *,
    bits: Any = None,
    bitorder: Any = "big",
    dtype: Any = None,
    out: Any = None,
    device: Any = "auto",
    level: Any = None,
) -> Any: ...
def tanimoto(
    a: Any,
    b: Any,
    /,
    *,
    bits: Any = None,
    bitorder: Any = "big",
    dtype: Any = None,
    out: Any = None,
    device: Any = "auto",
    level: Any = None,
) -> Any: ...
def dice(
    a: Any,
    b: Any,
    /,
    *,
    bits: Any = None,
    bitorder: Any = "big",
    dtype: Any = None,
    out: Any = None,
    device: Any = "auto",
    level: Any = None,
) -> Any: ...
def with_doc(f: Any, doc: str, module: str) -> Any: ...
def op_index(name: str) -> int: ...
def knn(
    a: Any,
    b: Any,
    /,
    k: Any,
    *,
    op: Any = "hamming_cdist",
    largest: Any = None,
    bits: Any = None,
    bitorder: Any = "big",
    dtype: Any = None,
    device: Any = "auto",
    level: Any = None,
    id_offset: Any = 0,
) -> Any: ...
def knn_any(
    op: Any,
    a: NDArray[Any],
    b: NDArray[Any],
    k: int,
    out_dtype: str | None,
    device: str,
    level: str | None,
    largest: bool | None = None,
    bits: int | None = None,
    bitorder: str = "big",
) -> tuple[NDArray[Any], NDArray[np.int64], list[int]]: ...
def gpu_name() -> str: ...
def check_allocation(nbytes: int, name: str) -> None: ...
def ops() -> list[tuple[str, str, list[str], str]]: ...
def set_num_threads(threads: int) -> None: ...
def get_num_threads() -> int: ...
def cpu_instruction_set() -> str: ...
def binarize(
    x: Any,
    out: Any,
    bitorder: str,
    device: str,
    typed: Any | None = None,
    reals: list[float] | None = None,
    ints: list[int] | None = None,
) -> None: ...
def rescore(
    queries: Any,
    codes: Any,
    candidates: Any,
    k: int | None,
    bitorder: str,
) -> tuple[NDArray[np.float32], NDArray[np.int64]]: ...
