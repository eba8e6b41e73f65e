"""The recipes of docs/reference.md for engines other than Dask: Ray Data's run on Ray where it is
installed (CI installs it: TENSORBITS_REQUIRE_RAY=1); Spark's merge, whose engine needs Java,
checked in numpy."""
import os
import pathlib

import numpy as np
import pytest

import tensorbits as tb

DOC = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text()
SECTION = DOC.split("### Past one machine: Dask, Ray, Spark", 1)[1]
BLOCKS = [b.split("```", 1)[0] for b in SECTION.split("```python\n")[1:3]]


def _tied(rng, rows):
    x = rng.integers(0, 2**32, (rows, 1), dtype=np.uint32)
    return (x & rng.integers(0, 2**32, (rows, 1), dtype=np.uint32)).view(np.uint8)


def test_the_ray_recipe_gives_the_whole_knn():
    try:
        import ray
    except ImportError:
        if os.environ.get("TENSORBITS_REQUIRE_RAY") == "1":
            pytest.fail("TENSORBITS_REQUIRE_RAY=1 but ray is not installed")
        pytest.skip("ray is not installed")
    rng = np.random.default_rng(21)
    codes, queries, k = _tied(rng, 3000), rng.integers(0, 256, (6, 4), dtype=np.uint8), 25
    block = BLOCKS[0].replace("batch_size=100_000", "batch_size=700")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        scope = {"codes": codes, "queries": queries, "k": k}
        exec(compile(block, "reference.md", "exec"), scope)
    finally:
        ray.shutdown()
    want = tb.knn(queries, codes, k)
    np.testing.assert_array_equal(scope["distances"], want[0])
    np.testing.assert_array_equal(scope["indices"], want[1])


def test_the_spark_recipes_window_gives_the_whole_knn():
    # The recipe's partition function on shuffled partitions, then its window in numpy.
    assert "mapInArrow" in BLOCKS[1] and 'orderBy("distance", "id")' in BLOCKS[1]
    rng = np.random.default_rng(22)
    codes, queries, k = _tied(rng, 2000), rng.integers(0, 256, (5, 4), dtype=np.uint8), 30
    ids = rng.permutation(len(codes))
    rows = []
    for part in np.array_split(ids, 7):
        order = np.argsort(part)
        d, i = tb.knn(queries, codes[part][order], min(k, len(part)))
        q = np.repeat(np.arange(len(queries)), d.shape[1])
        rows.append(np.stack([q, part[order][i].ravel(), d.ravel().astype(np.int64)], axis=1))
    rows = np.concatenate(rows)
    want = tb.knn(queries, codes, k)
    for q in range(len(queries)):
        mine = rows[rows[:, 0] == q]
        top = mine[np.lexsort((mine[:, 1], mine[:, 2]))][:k]
        np.testing.assert_array_equal(top[:, 2], want[0][q])
        np.testing.assert_array_equal(top[:, 1], want[1][q])
