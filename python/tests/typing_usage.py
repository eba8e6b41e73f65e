"""How a typed program uses tensorbits: CI runs `mypy --strict` on this file (and it runs as a
script). `reveal_type` is avoided; the annotations are what mypy checks."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

import tensorbits as tb

codes: NDArray[np.uint8] = np.random.default_rng(0).integers(0, 256, (100, 32), dtype=np.uint8)
queries: NDArray[np.uint8] = codes[:5]

x: NDArray[Any] = tb.bitwise_xor(codes, queries[0])
y: NDArray[Any] = tb.bitwise_and(codes, 3, device="cpu", broadcast="numpy")
z: NDArray[Any] = tb.left_shift(codes, 1, level="3_0")
n: NDArray[Any] = tb.bitwise_not(codes)
c: NDArray[Any] = tb.bitwise_count(codes, dtype="uint32")
same: NDArray[np.uint8] = np.empty_like(codes)
into: NDArray[np.uint8] = tb.bitwise_or(codes, codes, out=same)
d: NDArray[Any] = tb.hamming_cdist(queries, codes)
distances: NDArray[Any]
indices: NDArray[np.int64]
distances, indices = tb.knn(queries, codes, k=10, device="auto")
lims: NDArray[np.int64]
hits: NDArray[np.int64]
lims, _, hits = tb.range_search(queries, codes, 20.5, op="hamming_cdist")
similar: NDArray[Any] = tb.tanimoto(queries, codes, dtype="float64")
db = tb.Database(codes, op="tanimoto")
best, best_rows = db.knn(queries, 3)
lims2, _, hits2 = tb.range_search(queries, db, 0.5)
scanned: int = db.scanned
total: int = int(tb.bitwise_count_sum(codes))
rows: NDArray[Any] = tb.bitwise_xor_reduce(codes, axis=1)
h: NDArray[Any] = tb.hamming_distance(codes, codes[::-1], axis=-1, keepdims=True)
r: Any = tb.run("xor", codes, codes)
names: list[str] = [name for name, _, _, _ in tb.ops()]
tb.set_num_threads(0)
threads: int = tb.get_num_threads()
version: str = tb.__version__
assert d.shape == (5, 100) and indices.shape == (5, 10) and lims.shape == (6,) and total > 0 and threads >= 1
print("typed usage ran:", len(names), "ops")
