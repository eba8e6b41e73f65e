"""tensorbits.dask on a dask.distributed LocalCluster of two worker processes: knn and range
search over chunked codes equal the single-process results bit for bit, ties included, for any
chunking (one chunk, uneven chunks, chunks narrower than k), largest-first ops, chunked queries;
a worker that dies mid-compute gives the same answer after dask's retry, never a partial one."""
import os

import numpy as np
import pytest

import tensorbits as tb


def _require(module):
    """dask, which CI installs (TENSORBITS_REQUIRE_DASK=1 makes its absence a failure)."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        if os.environ.get("TENSORBITS_REQUIRE_DASK") == "1":
            pytest.fail(f"TENSORBITS_REQUIRE_DASK=1 but {module} is not installed")
        pytest.skip(f"{module} is not installed")


@pytest.fixture(scope="module")
def client():
    distributed = _require("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def tbd():
    _require("dask.array")
    import tensorbits.dask as tbd

    return tbd


def _tied(rng, rows):
    """32-bit codes with few bits set: their distances tie constantly."""
    x = rng.integers(0, 2**32, (rows, 1), dtype=np.uint32)
    return x & rng.integers(0, 2**32, (rows, 1), dtype=np.uint32) & rng.integers(
        0, 2**32, (rows, 1), dtype=np.uint32)


@pytest.mark.parametrize("chunks", [(2000,), (7, 993, 1000), (1,) * 5 + (1995,), (333,) * 6 + (2,)])
@pytest.mark.parametrize("k", [1, 10, 400])
def test_knn_equals_the_whole_knn(client, tbd, chunks, k):
    import dask.array as da

    rng = np.random.default_rng(sum(chunks) + k + len(chunks))
    q, db = _tied(rng, 9), _tied(rng, 2000)
    want = tb.knn(q, db, k)
    b = da.from_array(db, chunks=(chunks, 1))
    d, i = tbd.knn(q, b, k, split_every=3)
    got = client.compute([d, i], sync=True)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0].dtype == want[0].dtype and got[1].dtype == np.int64


def test_largest_first_ops_and_chunked_queries(client, tbd):
    import dask.array as da

    rng = np.random.default_rng(8)
    q = rng.integers(0, 256, (50, 4), dtype=np.uint8)
    db = rng.integers(0, 256, (3000, 4), dtype=np.uint8)
    for kw in ({"op": "binary_dot"}, {"largest": True}, {"bits": 27, "bitorder": "little"}):
        want = tb.knn(q, db, 25, **kw)
        d, i = tbd.knn(da.from_array(q, chunks=(17, 2)), da.from_array(db, chunks=(700, 4)),
                       25, **kw)
        got = client.compute([d, i], sync=True)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_similarities_that_round_alike_rank_as_the_whole_call(client, tbd):
    import dask.array as da

    # 5718 / 10007 and 5722 / 10014 are one float32; the second fraction is the larger, in the
    # second chunk: merged by float32 values, the first chunk's lower index would win.
    bits = np.zeros((3, 16384), np.uint8)
    bits[0, :10007] = 1
    bits[1, :5718] = 1
    bits[2, :5722] = 1
    bits[2, 10007:10014] = 1
    codes = np.packbits(bits, axis=1)
    q, b = codes[:1], codes[1:]
    assert np.float32(5718 / 10007) == np.float32(5722 / 10014)
    want = tb.knn(q, b, 1, op="tanimoto")
    assert want[1][0, 0] == 1
    d, i = tbd.knn(q, da.from_array(b, chunks=(1, -1)), 1, op="tanimoto")
    got = client.compute([d, i], sync=True)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].dtype == np.float32


def test_range_search_equals_the_whole_search(client, tbd):
    import dask.array as da

    rng = np.random.default_rng(9)
    q = rng.integers(0, 256, (20, 8), dtype=np.uint8)
    db = rng.integers(0, 256, (5000, 8), dtype=np.uint8)
    for t, kw in ((26, {}), (10, {"op": "binary_dot"})):
        want = tb.range_search(q, db, t, **kw)
        parts = tbd.range_search(da.from_array(q, chunks=(6, 8)),
                                 da.from_array(db, chunks=((1, 999, 4000), 8)), t, **kw)
        got = client.compute(list(parts), sync=True)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
            assert g.dtype == w.dtype


def _die_once(block, marker):
    """A chunk's codes, read by a worker that dies the first time it reads them."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return block


def test_a_worker_that_dies_is_retried_not_skipped(client, tbd, tmp_path):
    import dask
    import dask.array as da

    rng = np.random.default_rng(10)
    q, db = _tied(rng, 5), _tied(rng, 900)
    want = tb.knn(q, db, 30)
    marker = str(tmp_path / "died")
    pieces = [da.from_array(db[:300], chunks=(300, 1)),
              da.from_delayed(dask.delayed(_die_once)(db[300:600], marker), (300, 1), db.dtype),
              da.from_array(db[600:], chunks=(300, 1))]
    d, i = tbd.knn(q, da.concatenate(pieces), 30)
    got = client.compute([d, i], sync=True)
    assert os.path.exists(marker), "the worker did not die: the test tests nothing"
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_bad_calls_raise_before_any_work(tbd):
    import dask.array as da

    b = da.zeros((100, 4), dtype=np.uint8, chunks=(30, 4))
    q = np.zeros((2, 4), np.uint8)
    with pytest.raises(ValueError, match="k = 101"):
        tbd.knn(q, b, 101)
    with pytest.raises(TypeError, match="dask array"):
        tbd.knn(q, np.zeros((100, 4), np.uint8), 3)
    with pytest.raises(TypeError):
        tbd.knn(q, b.astype(np.uint16), 3)
    with pytest.raises(ValueError, match="split_every"):
        tbd.knn(q, b, 3, split_every=1)
    with pytest.raises(TypeError, match="id_offset"):
        tbd.knn(q, b, 3, id_offset=5)


def test_the_module_examples_run(tbd):
    import doctest

    result = doctest.testmod(tbd, extraglobs={"np": np}, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, result


def test_the_readme_snippet_runs_on_a_stack_of_npy_shards(tbd, tmp_path):
    import pathlib

    import dask.array as da

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### Past one machine: Dask", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    rng = np.random.default_rng(12)
    codes = rng.integers(0, 256, (1000, 32), dtype=np.uint8)
    da.to_npy_stack(str(tmp_path / "codes"), da.from_array(codes, chunks=(300, 32)))
    queries = rng.integers(0, 256, (6, 32), dtype=np.uint8)
    # Workers of a cluster (the module's, if it runs) have their own working directory.
    block = block.replace('"codes/"', repr(str(tmp_path / "codes")))
    scope = {"queries": queries}
    exec(compile(block, "README.md", "exec"), scope)
    want = tb.knn(queries, codes, 10)
    np.testing.assert_array_equal(scope["distances"], want[0])
    np.testing.assert_array_equal(scope["indices"], want[1])


def test_np_save_shards_are_searched_where_they_lie(client, tbd, tmp_path):
    rng = np.random.default_rng(13)
    codes, q = _tied(rng, 4500).reshape(1500, 3), _tied(rng, 21).reshape(7, 3)
    # Uneven shards, one empty and one in Fortran order, named so that only a natural sort
    # ("4" before "12") gives the rows' order.
    cuts = [0, 5, 5, 700, 800, 1500]
    for j, (s, e) in enumerate(zip(cuts, cuts[1:])):
        part = codes[s:e] if j != 3 else np.asfortranarray(codes[s:e])
        np.save(tmp_path / f"shard_{j * 4}.npy", part)
    fortran = np.load(tmp_path / "shard_12.npy", mmap_mode="r")
    assert fortran.flags.f_contiguous and not fortran.flags.c_contiguous
    files = sorted(tmp_path.glob("*.npy"), key=lambda p: int(p.stem.split("_")[1]))
    # Each chunk is the file mapped, not read (the empty shard makes no chunk); moved or spilled
    # it is its path, and dask counts it as that, where a part of it is its bytes.
    import pickle

    from dask.sizeof import sizeof

    chunk = tbd.from_npy_files(tmp_path).to_delayed()[1, 0].compute(scheduler="sync")
    assert isinstance(chunk, np.memmap) and chunk._mmap is not None
    assert len(pickle.dumps(chunk)) < 1000 and sizeof(chunk) < 1000
    assert np.array_equal(pickle.loads(pickle.dumps(chunk)), codes[5:700])
    part = chunk[1:3]
    assert np.array_equal(pickle.loads(pickle.dumps(part)), codes[6:8])
    assert sizeof(part) == part.nbytes
    want = tb.knn(q, codes, 40)
    want_r = tb.range_search(q, codes, 3)
    for source in (tmp_path, str(tmp_path / "shard_*.npy"), files):
        b = tbd.from_npy_files(source)
        assert b.shape == codes.shape and b.dtype == codes.dtype
        d, i = tbd.knn(q, b, 40)
        got = client.compute([d, i], sync=True)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        got_r = client.compute(list(tbd.range_search(q, b, 3)), sync=True)
        for g, w in zip(got_r, want_r):
            np.testing.assert_array_equal(g, w)


def test_np_save_shards_that_do_not_fit_raise_naming_the_file(tbd, tmp_path):
    with pytest.raises(ValueError, match="no .npy files"):
        tbd.from_npy_files(tmp_path)
    with pytest.raises(ValueError, match="no file matches"):
        tbd.from_npy_files(str(tmp_path / "*.npy"))
    with pytest.raises(ValueError, match="no files given"):
        tbd.from_npy_files([])
    with pytest.raises(FileNotFoundError):
        tbd.from_npy_files([tmp_path / "missing.npy"])
    np.save(tmp_path / "a.npy", np.zeros((4, 8), np.uint8))
    cases = [("b.npy", b"not numpy", "b.npy: not a .npy file"),
             ("b.npy", np.zeros(8, np.uint8), r"b.npy: codes are \[N, K\]"),
             ("b.npy", np.zeros((4, 4), np.uint16), "b.npy: codes .* must agree"),
             ("b.npy", np.zeros((4, 9), np.uint8), "b.npy: codes .* must agree"),
             ("b.npy", np.array([[None]], dtype=object), "b.npy: a .npy file numpy cannot map")]
    for name, content, message in cases:
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        else:
            np.save(tmp_path / name, content, allow_pickle=True)
        with pytest.raises(ValueError, match=message):
            tbd.from_npy_files(tmp_path)
    (tmp_path / "b.npy").unlink()
    # A file named alone is read, though its name is also a glob pattern.
    odd = tmp_path / "[a].npy"
    np.save(odd, np.ones((3, 8), np.uint8))
    assert tbd.from_npy_files(odd).shape == (3, 8)
    odd.unlink()
    # A shard rewritten between building the graph and running it, of another shape or of the
    # same, is an error, not a search of other rows than the graph numbered.
    q = np.zeros((1, 8), np.uint8)
    for rows in (5, 4):
        b = tbd.from_npy_files(tmp_path)
        np.save(tmp_path / "a.npy", np.full((rows, 8), 255, np.uint8))
        with pytest.raises(ValueError, match="changed after it was opened"):
            tbd.knn(q, b, 2)[0].compute(scheduler="sync")
