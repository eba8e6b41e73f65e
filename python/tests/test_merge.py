"""merge_topk and knn's id_offset: knn over shards of the codes, merged in any tree, equals knn
over all of them, ties included, for any chunking; narrower parts give a narrower result; bad
parts raise."""
import numpy as np
import pytest

import tensorbits as tb


def _shards(q, db, k, cuts, **kw):
    return [tb.knn(q, db[lo:hi], min(k, hi - lo), id_offset=lo, **kw)
            for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


@pytest.mark.parametrize("cuts", [[0, 500], [0, 1, 2, 500], [0, 3, 77, 78, 300, 500],
                                  list(range(0, 500, 9)) + [500]])
@pytest.mark.parametrize("k", [1, 10, 120, 500])
def test_sharded_knn_merges_to_the_whole_knn(cuts, k):
    rng = np.random.default_rng(len(cuts) * 1000 + k)
    # 32-bit codes with few bits set: distances tie constantly.
    q = (rng.integers(0, 2**32, (6, 1), dtype=np.uint32)
         & rng.integers(0, 2**32, (6, 1), dtype=np.uint32))
    db = (rng.integers(0, 2**32, (500, 1), dtype=np.uint32)
          & rng.integers(0, 2**32, (500, 1), dtype=np.uint32)
          & rng.integers(0, 2**32, (500, 1), dtype=np.uint32))
    want = tb.knn(q, db, k)
    parts = _shards(q, db, k, cuts)
    flat = tb.merge_topk(parts, k)
    tree = parts
    while len(tree) > 1:
        tree = [tb.merge_topk(tree[i:i + 2], k) for i in range(0, len(tree), 2)]
    for got in (flat, tree[0]):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[0].dtype == want[0].dtype and got[1].dtype == np.int64


def test_largest_first_ops_merge_largest_first():
    rng = np.random.default_rng(3)
    q = rng.integers(0, 256, (4, 2), dtype=np.uint8)
    db = rng.integers(0, 256, (300, 2), dtype=np.uint8)
    want = tb.knn(q, db, 20, op="binary_dot")
    parts = _shards(q, db, 20, [0, 5, 140, 300], op="binary_dot")
    got = tb.merge_topk(parts, 20, largest=True)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(ValueError, match="order"):
        tb.merge_topk(parts, 20)


def test_fewer_candidates_than_k_are_never_padded():
    d, i = tb.merge_topk([(np.array([[1, 5]], np.uint32), np.array([[4, 0]])),
                          (np.array([[5]], np.uint32), np.array([[2]]))], 10)
    assert d.tolist() == [[1, 5, 5]] and i.tolist() == [[4, 0, 2]]


def test_id_offset_shifts_the_indices():
    rng = np.random.default_rng(5)
    q = rng.integers(0, 256, (3, 4), dtype=np.uint8)
    db = rng.integers(0, 256, (40, 4), dtype=np.uint8)
    d0, i0 = tb.knn(q, db, 5)
    d1, i1 = tb.knn(q, db, 5, id_offset=10**12)
    np.testing.assert_array_equal(d0, d1)
    np.testing.assert_array_equal(i0 + 10**12, i1)
    with pytest.raises(ValueError, match="int64"):
        tb.knn(q, db, 5, id_offset=2**63 - 3)
    with pytest.raises(ValueError):
        tb.knn(q, db, 5, id_offset=-1)


def test_bad_parts_raise():
    d = np.array([[1, 2]], np.uint32)
    i = np.array([[0, 1]], np.int64)
    with pytest.raises(ValueError, match="-1"):
        tb.merge_topk([(d, np.array([[0, -1]]))], 2)
    with pytest.raises(ValueError, match="order"):
        tb.merge_topk([(d[:, ::-1], i)], 2)
    with pytest.raises(ValueError, match="rows"):
        tb.merge_topk([(d, i), (np.ones((2, 1), np.uint32), np.ones((2, 1), np.int64))], 2)
    with pytest.raises(TypeError, match="dtype|uint16|part 0"):
        tb.merge_topk([(d, i), (d.astype(np.uint16), i)], 2)
    with pytest.raises(TypeError, match="pair"):
        tb.merge_topk([d], 2)
    with pytest.raises(TypeError, match="sequence"):
        tb.merge_topk((d, i), 2)
    with pytest.raises(ValueError, match="NaN"):
        tb.merge_topk([(np.array([[np.nan]], np.float32), np.array([[0]]))], 1)
    assert tb.merge_topk([], 3)[0].shape == (0, 0)
