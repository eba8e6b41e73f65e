#!/usr/bin/env python3
"""Tanimoto similarity beside its peers, in one process and one run, each result checked equal
before it is timed:

- all pairs (1,000 queries x 200,000 fingerprints): NumKong's ``jaccards_packed`` (float32
  distances, ``1 - similarity``) against ``tb.tanimoto``;
- one query against 200,000: RDKit's ``BulkTanimotoSimilarity`` against ``tb.tanimoto``;
- Hamming range search: FAISS's ``IndexBinaryFlat.range_search`` against ``tb.range_search``;
- a prepared ``tb.Database`` of a million fingerprints, threshold 0.7 and knn with k = 1000,
  against the plain calls, with the share of rows it compared.

Fingerprints are 2048 bits with the density of real ones: each row's bit count is drawn from the
Morgan fingerprints (radius 2) of RDKit's ``first_5K.smi``, its bits set at random.

Usage:
    pip install numpy rdkit numkong faiss-cpu
    bash python/build_wheel.sh /tmp/wheel && pip install /tmp/wheel/tensorbits-*.whl
    python3 benches/compare_similarity.py [--runs 5] [--quick]

Times are medians of --runs after one warm-up, every library on every core; the ratio is the
peer's median over ours. Writes benches/results/compare_similarity.md. --quick shrinks the
databases tenfold, to check the script.
"""
import argparse
import os
import platform
import time

import numpy as np

import tensorbits as tb

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
BITS = 2048


def median_time(fn, runs):
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def nci_counts():
    """The bit counts of the Morgan fingerprints (radius 2, 2048 bits) of first_5K.smi."""
    from rdkit import Chem, RDConfig, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=BITS)
    counts = []
    with open(os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")) as f:
        for line in f:
            mol = Chem.MolFromSmiles(line.split()[0])
            if mol is not None:
                counts.append(gen.GetFingerprint(mol).GetNumOnBits())
    return np.array(counts)


def fingerprints(rng, counts, rows):
    """`rows` packed fingerprints, each with about a bit count drawn from `counts` (random
    positions, a few of which may repeat)."""
    out = []
    for start in range(0, rows, 100_000):
        c = min(100_000, rows - start)
        n = rng.choice(counts, c)
        pos = rng.integers(0, BITS, (c, int(n.max(initial=1))))
        keep = np.arange(pos.shape[1])[None, :] < n[:, None]
        bits = np.zeros((c, BITS), bool)
        rows_at = np.broadcast_to(np.arange(c)[:, None], pos.shape)
        bits[rows_at[keep], pos[keep]] = True
        out.append(np.packbits(bits, axis=1))
    return np.concatenate(out)


def near(rng, codes, count, flips):
    """`count` rows of `codes`, each with about `flips` bits flipped: queries with neighbours."""
    rows = codes[rng.integers(0, len(codes), count)]
    bits = np.unpackbits(rows, axis=1)
    bits ^= (rng.random(bits.shape) < flips / BITS).astype(np.uint8)
    return np.packbits(bits, axis=1)


def rdkit_vectors(codes):
    from rdkit import DataStructs

    out = []
    for row in np.unpackbits(codes, axis=1):
        v = DataStructs.ExplicitBitVect(BITS)
        v.SetBitsFromList(np.flatnonzero(row).tolist())
        out.append(v)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    import faiss
    import numkong as nk
    from rdkit import DataStructs

    scale = 10 if args.quick else 1
    rng = np.random.default_rng(13)
    counts = nci_counts()
    n = 200_000 // scale
    db = fingerprints(rng, counts, n)
    queries = fingerprints(rng, counts, 1000 // scale)
    rows = []

    # All pairs against NumKong, float32 both (NumKong's are distances: 1 - similarity).
    packed = nk.hammings_pack(db)
    ours = tb.tanimoto(queries, db)
    theirs = np.asarray(nk.jaccards_packed(queries, packed))
    worst = float(np.abs((1 - theirs) - ours).max())
    assert worst < 1e-6, worst
    t_nk = median_time(lambda: nk.jaccards_packed(queries, packed), args.runs)
    t_tb = median_time(lambda: tb.tanimoto(queries, db), args.runs)
    pairs = queries.shape[0] * n
    rows.append((f"all pairs, {queries.shape[0]} x {n}", "NumKong jaccards_packed", t_nk, t_tb,
                 f"{pairs / t_tb / 1e6:.0f} M pairs/s"))

    # One query against the database, against RDKit (one thread: it has no other).
    vecs = rdkit_vectors(db)
    q = rdkit_vectors(queries[:1])[0]
    want = np.array(DataStructs.BulkTanimotoSimilarity(q, vecs))
    got = tb.tanimoto(queries[:1], db, dtype="float64")[0]
    assert np.array_equal(want, got)
    t_rd = median_time(lambda: DataStructs.BulkTanimotoSimilarity(q, vecs), args.runs)
    t_tb = median_time(lambda: tb.tanimoto(queries[:1], db), args.runs)
    rows.append((f"one query x {n}", "RDKit BulkTanimotoSimilarity", t_rd, t_tb,
                 f"{n / t_tb / 1e6:.0f} M pairs/s"))

    # Hamming range search against FAISS: 256-bit codes, a radius of a few neighbours each.
    codes = rng.integers(0, 256, (1_000_000 // scale, 32), dtype=np.uint8)
    hq = codes[rng.integers(0, len(codes), 100)] ^ (rng.random((100, 32)) < 0.02).astype(np.uint8)
    index = faiss.IndexBinaryFlat(256)
    index.add(codes)
    lims, d, i = index.range_search(hq, 90)
    mine = tb.range_search(hq, codes, 90)
    assert np.array_equal(lims, mine[0]) and np.array_equal(i, mine[2])
    assert np.array_equal(d, mine[1])
    t_fa = median_time(lambda: index.range_search(hq, 90), args.runs)
    t_tb = median_time(lambda: tb.range_search(hq, codes, 90), args.runs)
    rows.append((f"Hamming range, 100 x {len(codes)}, 256 bits", "FAISS range_search", t_fa, t_tb,
                 f"{int(lims[-1])} hits"))

    # The prepared database: threshold search and knn over a million fingerprints, against the
    # plain calls (which compare every row), the pruning given as the rows compared.
    big = fingerprints(rng, counts, 1_000_000 // scale)
    t = time.perf_counter()
    db = tb.Database(big, op="tanimoto")
    build = time.perf_counter() - t
    qs = near(rng, big, 100, 40)
    m, nb = len(qs), len(big)
    for name, plain, prepared in [
        ("threshold 0.7", lambda: tb.range_search(qs, big, 0.7, op="tanimoto"),
         lambda: db.range_search(qs, 0.7)),
        ("knn k = 1000", lambda: tb.knn(qs, big, 1000, op="tanimoto"),
         lambda: db.knn(qs, 1000)),
    ]:
        for w, g in zip(plain(), prepared()):
            assert np.array_equal(w, g)
        scanned = db.scanned
        t_plain = median_time(plain, args.runs)
        t_db = median_time(prepared, args.runs)
        rows.append((f"{name}, {m} x {nb}, prepared database", "the plain call", t_plain, t_db,
                     f"{t_db / m * 1e3:.2f} ms a query; {scanned / (m * nb):.1%} of rows "
                     f"compared; built in {build:.2f} s"))

    lines = [
        "# Similarity search against its peers",
        "",
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"instruction set {tb.cpu_instruction_set()}, --runs {args.runs}"
        + (" --quick" if args.quick else ""),
        "",
        "| case | peer | peer ms | tensorbits ms | ratio | note |",
        "|---|---|---:|---:|---:|---|",
    ]
    for case, peer, tp, tt, note in rows:
        lines.append(f"| {case} | {peer} | {tp * 1e3:.2f} | {tt * 1e3:.2f} | {tp / tt:.2f}x | {note} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, "compare_similarity.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
