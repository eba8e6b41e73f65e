"""Tanimoto and Dice against exact fractions of unpacked bits and against RDKit on real
fingerprints (Morgan radius 2, 2048 bits, of the molecules of RDKit's own ``first_5K.smi``):
the values bit for bit, knn's ranking and range search's hits decided with ``Fraction``."""
import os
from fractions import Fraction

import numpy as np
import pytest

import tensorbits as tb


def _counts(a, b, bits=None, bitorder="big"):
    ua = np.unpackbits(a, axis=-1, bitorder=bitorder).astype(np.int64)
    ub = np.unpackbits(b, axis=-1, bitorder=bitorder).astype(np.int64)
    if bits is not None:
        ua, ub = ua[:, :bits], ub[:, :bits]
    return ua.sum(1), ub.sum(1), ua @ ub.T


def _fractions(op, a, b, **kw):
    na, nb, both = _counts(a, b, **kw)
    num = both if op == "tanimoto" else 2 * both
    den = na[:, None] + nb[None, :] - both if op == "tanimoto" else na[:, None] + nb[None, :]
    return [[Fraction(int(n), int(d)) if d else Fraction(0) for n, d in zip(rn, rd)]
            for rn, rd in zip(num, den)]


def _rounded(fracs, dtype):
    return np.array([[f.numerator / f.denominator for f in row] for row in fracs]).astype(dtype)


def _codes(rng, rows, k, density):
    x = rng.integers(0, 256, (rows, k), dtype=np.uint8)
    for _ in range(density):
        x &= rng.integers(0, 256, (rows, k), dtype=np.uint8)
    x[::7] = 0
    return x


@pytest.mark.parametrize("op", ["tanimoto", "dice"])
@pytest.mark.parametrize("m,n,k", [(1, 50, 1), (7, 300, 8), (3, 100, 33), (2, 40, 256)])
def test_values_are_the_exact_fractions_rounded_once(op, m, n, k):
    rng = np.random.default_rng(m * 1000 + k)
    a, b = _codes(rng, m, k, 2), _codes(rng, n, k, 1)
    fracs = _fractions(op, a, b)
    f = getattr(tb, op)
    got = f(a, b)
    assert got.dtype == np.float32 and got.shape == (m, n)
    np.testing.assert_array_equal(got.view(np.uint32), _rounded(fracs, np.float32).view(np.uint32))
    got = f(a, b, dtype="float64")
    np.testing.assert_array_equal(got.view(np.uint64), _rounded(fracs, np.float64).view(np.uint64))
    # Valid bits, either bit order.
    bits = 8 * k - 3
    for order in ("big", "little"):
        fracs = _fractions(op, a, b, bits=bits, bitorder=order)
        got = f(a, b, bits=bits, bitorder=order, dtype=np.float64)
        np.testing.assert_array_equal(got, _rounded(fracs, np.float64))


def test_knn_ranks_exact_fractions_most_similar_first():
    rng = np.random.default_rng(5)
    a, b = _codes(rng, 6, 4, 3), _codes(rng, 500, 4, 3)
    for op in ("tanimoto", "dice"):
        fracs = _fractions(op, a, b)
        for k in (1, 10, 500):
            s, i = tb.knn(a, b, k, op=op)
            assert s.dtype == np.float32 and i.dtype == np.int64
            for r, row in enumerate(fracs):
                order = sorted(range(len(row)), key=lambda j: (-row[j], j))[:k]
                np.testing.assert_array_equal(i[r], order)
                np.testing.assert_array_equal(s[r], _rounded([[row[j] for j in order]], np.float32)[0])
        # The least similar first, on request.
        s, i = tb.knn(a, b, 5, op=op, largest=False, dtype="float64")
        for r, row in enumerate(fracs):
            np.testing.assert_array_equal(i[r], sorted(range(len(row)), key=lambda j: (row[j], j))[:5])


@pytest.mark.parametrize("t", [0.0, 0.1, 0.2, 1 / 3, 0.5, 0.7, 1.0, 1.5, -1.0, float("inf")])
def test_range_search_compares_exact_fractions(t):
    rng = np.random.default_rng(9)
    a, b = _codes(rng, 5, 2, 2), _codes(rng, 700, 2, 2)
    fracs = _fractions("tanimoto", a, b)
    lims, values, indices = tb.range_search(a, b, t, op="tanimoto")
    want_lims, want_idx, want_vals = [0], [], []
    for row in fracs:
        # Nothing reaches an infinite threshold; Fraction(t) is t's exact value.
        js = [] if np.isinf(t) else [j for j, f in enumerate(row) if f >= Fraction(t)]
        want_idx += js
        want_vals += [row[j] for j in js]
        want_lims.append(len(want_idx))
    np.testing.assert_array_equal(lims, want_lims)
    np.testing.assert_array_equal(indices, want_idx)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values, _rounded([want_vals], np.float32)[0] if want_vals else [])


def test_int8_codes_count_their_stored_bits():
    rng = np.random.default_rng(3)
    a, b = _codes(rng, 3, 16, 1), _codes(rng, 9, 16, 1)
    np.testing.assert_array_equal(tb.tanimoto(a.view(np.int8), b.view(np.int8)), tb.tanimoto(a, b))


def test_integer_outputs_are_refused():
    a = np.zeros((2, 4), np.uint8)
    with pytest.raises((TypeError, ValueError), match="float32|f32"):
        tb.tanimoto(a, a, dtype="uint32")


def _rdkit():
    if os.environ.get("TENSORBITS_REQUIRE_RDKIT") == "1":
        import rdkit  # noqa: F401
    return pytest.importorskip("rdkit")


def _morgan(count):
    """Morgan fingerprints (radius 2, 2048 bits) of the first `count` molecules of RDKit's
    first_5K.smi that parse, as RDKit's bit vectors and as packed rows."""
    _rdkit()
    from rdkit import Chem, DataStructs, RDConfig, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    path = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    fps = []
    with open(path) as f:
        for line in f:
            mol = Chem.MolFromSmiles(line.split()[0])
            if mol is not None:
                fps.append(gen.GetFingerprint(mol))
            if len(fps) == count:
                break
    rows = np.zeros((len(fps), 2048), np.uint8)
    for r, fp in zip(rows, fps):
        DataStructs.ConvertToNumpyArray(fp, r)
    return fps, np.packbits(rows, axis=-1), DataStructs


def test_tanimoto_and_dice_equal_rdkit_on_morgan_fingerprints():
    fps, codes, DataStructs = _morgan(1500)
    queries = list(range(0, len(fps), 97))
    a = codes[queries]
    t64 = tb.tanimoto(a, codes, dtype="float64")
    d64 = tb.dice(a, codes, dtype="float64")
    t32 = tb.tanimoto(a, codes)
    for r, q in enumerate(queries):
        want = np.array(DataStructs.BulkTanimotoSimilarity(fps[q], fps))
        np.testing.assert_array_equal(t64[r].view(np.uint64), want.view(np.uint64))
        np.testing.assert_array_equal(t32[r], want.astype(np.float32))
        want = np.array(DataStructs.BulkDiceSimilarity(fps[q], fps))
        np.testing.assert_array_equal(d64[r].view(np.uint64), want.view(np.uint64))
        # One pair at a time too.
        assert DataStructs.TanimotoSimilarity(fps[q], fps[5]) == t64[r, 5]
        assert DataStructs.DiceSimilarity(fps[q], fps[5]) == d64[r, 5]


def test_thresholds_at_values_the_fingerprints_reach():
    fps, codes, DataStructs = _morgan(1500)
    a = codes[:4]
    na, nb, both = _counts(a, codes)
    exact = [[Fraction(int(c), int(x + y - c)) if x + y - c else Fraction(0)
              for y, c in zip(nb, row)] for x, row in zip(na, both)]
    sims = np.array([DataStructs.BulkTanimotoSimilarity(fps[q], fps) for q in range(4)])
    # Thresholds equal to values RDKit gives (each the double nearest an achievable fraction,
    # above or below it), and the fractions' own neighbours.
    reached = np.unique(sims[sims > 0])
    for t in [reached[len(reached) // 2], reached[-2], 0.7, np.nextafter(0.5, 1), 0.5]:
        t = float(t)
        lims, values, indices = tb.range_search(a, codes, t, op="tanimoto", dtype="float64")
        for r in range(4):
            want = [j for j, f in enumerate(exact[r]) if f >= Fraction(t)]
            np.testing.assert_array_equal(indices[lims[r]:lims[r + 1]], want)
            np.testing.assert_array_equal(values[lims[r]:lims[r + 1]], sims[r, want])
    s, i = tb.knn(a, codes, 20, op="tanimoto", dtype="float64")
    for r in range(4):
        order = sorted(range(len(fps)), key=lambda j: (-exact[r][j], j))[:20]
        np.testing.assert_array_equal(i[r], order)
        np.testing.assert_array_equal(s[r], sims[r, order])


@pytest.mark.parametrize("op,dtype", [("tanimoto", None), ("dice", "float64"),
                                      ("hamming_cdist", None), ("binary_dot", None)])
def test_a_database_gives_the_plain_results(op, dtype, tmp_path):
    rng = np.random.default_rng(21)
    codes = np.concatenate([_codes(rng, 300, 16, d) for d in (1, 2, 3)])
    queries = np.concatenate([codes[:3], _codes(rng, 4, 16, 2)])
    for bits, order in ((None, "big"), (123, "little")):
        db = tb.Database(codes, op=op, bits=bits, bitorder=order)
        for largest in (None, True, False):
            for k in (1, 10, len(codes)):
                want = tb.knn(queries, codes, k, op=op, largest=largest, bits=bits, bitorder=order,
                              dtype=dtype)
                got = db.knn(queries, k, largest=largest, dtype=dtype)
                np.testing.assert_array_equal(got[1], want[1])
                np.testing.assert_array_equal(got[0], want[0])
            for t in (0.3, 0.5, 0.8, 40, 100):
                want = tb.range_search(queries, codes, t, op=op, largest=largest, bits=bits,
                                       bitorder=order, dtype=dtype)
                got = tb.range_search(queries, db, t, op=op, largest=largest, dtype=dtype)
                for w, g in zip(want, got):
                    np.testing.assert_array_equal(g, w)
    # Saved, loaded memory-mapped, the same.
    db = tb.Database(codes, op=op)
    db.save(tmp_path / "db")
    again = tb.Database.load(tmp_path / "db")
    for w, g in zip(db.knn(queries, 7), again.knn(queries, 7)):
        np.testing.assert_array_equal(g, w)


def test_a_database_compares_fewer_rows_and_refuses_what_is_not_its_own(tmp_path):
    rng = np.random.default_rng(22)
    codes = np.concatenate([_codes(rng, 1000, 32, d) for d in (0, 1, 2, 3)])
    db = tb.Database(codes)
    lims, _, idx = db.range_search(codes[5:6], 0.9)
    assert 5 in idx and db.scanned < len(codes) // 2
    assert len(db) == len(codes) and db.shape == codes.shape
    with pytest.raises(ValueError, match="bits"):
        db.knn(codes[:1], 3, bits=100)
    with pytest.raises(ValueError, match="prepared for"):
        tb.knn(codes[:1], db, 3, op="dice")
    with pytest.raises(ValueError):
        tb.Database(codes, op="hamming_distance")
    # Float codes: the argument named as the caller wrote it, with the way to pack them.
    for floats in (codes.astype(np.float32), codes.astype(np.float64).tolist()):
        with pytest.raises(TypeError, match=r"^Database: codes is float\d+; .*tb\.binarize"):
            tb.Database(floats)
    # Parts changed on disk are refused when loaded.
    db.save(tmp_path / "db")
    counts = np.load(tmp_path / "db" / "counts.npy")
    counts[3] += 1
    np.save(tmp_path / "db" / "counts.npy", counts)
    with pytest.raises(ValueError):
        tb.Database.load(tmp_path / "db")


def test_a_database_of_morgan_fingerprints_gives_the_plain_results():
    fps, codes, _ = _morgan(1500)
    db = tb.Database(codes, op="tanimoto")
    queries = codes[::150]
    for w, g in zip(tb.knn(queries, codes, 50, op="tanimoto"), db.knn(queries, 50)):
        np.testing.assert_array_equal(g, w)
    for t in (0.5, 0.7):
        want = tb.range_search(queries, codes, t, op="tanimoto", dtype="float64")
        got = db.range_search(queries, t, dtype="float64")
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
        assert db.scanned < len(queries) * len(codes)


def test_the_gpu_gives_the_cpus_similarities(gpu):
    """device="gpu": the device counts, the host divides; every value, rank and hit the CPU's."""
    rng = np.random.default_rng(29)
    a = rng.integers(0, 256, (5, 256), dtype=np.uint8) & rng.integers(0, 256, (5, 256), dtype=np.uint8)
    b = rng.integers(0, 256, (900, 256), dtype=np.uint8) & rng.integers(0, 256, (900, 256), dtype=np.uint8)
    b[3] = 0
    a[1] = 0
    for op in (tb.tanimoto, tb.dice):
        for kw in ({}, {"bits": 2045, "bitorder": "little"}, {"dtype": np.float64}):
            want = op(a, b, device="cpu", **kw)
            got = op(a, b, device=gpu, **kw)
            assert got.dtype == want.dtype
            assert got.tobytes() == want.tobytes()
    # Views through strides, as they are.
    want = tb.tanimoto(a[:, ::2], b[::3, ::2], device="cpu")
    assert tb.tanimoto(a[:, ::2], b[::3, ::2], device=gpu).tobytes() == want.tobytes()
    for k in (1, 10, 900):
        want = tb.knn(a, b, k, op="tanimoto", device="cpu")
        got = tb.knn(a, b, k, op="tanimoto", device=gpu)
        for x, y in zip(got, want):
            assert x.tobytes() == y.tobytes()
    for t in (0.0, 0.25, 1 / 3, 1.0):
        want = tb.range_search(a, b, t, op="dice", device="cpu")
        got = tb.range_search(a, b, t, op="dice", device=gpu)
        for x, y in zip(got, want):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
