"""The README shows what the binary-embedding example prints; this keeps the two the same."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_binary_search_example_prints_what_the_readme_shows():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Binary-embedding search", 1)[1]
    # The recalls the README quotes, against the lines the example prints.
    shown = re.search(r"\(([0-9.]+) from Hamming distances\s+alone, ([0-9.]+) after", section)
    assert shown, "the README quotes the example's recall@10"
    run = subprocess.run(
        [sys.executable, str(ROOT / "python" / "examples" / "binary_search.py")],
        capture_output=True, text=True, check=True, timeout=300,
    )
    recalls = re.findall(r"recall@10, (?:Hamming distance only|after tb.rescore): +([0-9.]+)",
                         run.stdout)
    assert recalls == [shown.group(1), shown.group(2)], run.stdout


def test_binary_search_snippet_runs_on_float_embeddings():
    """The README's binary-embedding snippet, run on float documents and queries it leaves to the reader."""
    import numpy as np

    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Binary-embedding search", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    rng = np.random.default_rng(3)
    scope = {
        "docs": rng.standard_normal((500, 384), dtype=np.float32),
        "queries": rng.standard_normal((7, 384), dtype=np.float32),
    }
    exec(compile(block, "README.md", "exec"), scope)
    assert scope["doc_codes"].shape == (500, 48) and scope["doc_codes"].dtype == np.uint8
    assert scope["candidates"].shape == (7, 40)
    assert scope["scores"].shape == (7, 10) and scope["top10"].shape == (7, 10)
    # The rescored ten are candidates of their query, best first.
    for q in range(7):
        assert set(scope["top10"][q]) <= set(scope["candidates"][q])
        assert (np.diff(scope["scores"][q]) <= 0).all()


def test_the_database_snippet_gives_the_plain_calls_results(tmp_path, monkeypatch):
    """The README's prepared-database snippet, on sparse 2048-bit fingerprints, saved and loaded."""
    import numpy as np

    import tensorbits as tb

    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Similarity search", 1)[1]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    rng = np.random.default_rng(5)
    # About 50 bits set in 2048, as Morgan fingerprints have; a few rows copied so that 0.7 is met.
    bits = rng.random((3000, 2048)) < 50 / 2048
    fingerprints = np.packbits(bits, axis=-1)
    queries = fingerprints[rng.integers(0, 3000, 9)].copy()
    queries[0] = 0  # no bits set: 0 / 0 is 0, below the threshold
    monkeypatch.chdir(tmp_path)
    scope = {"tb": tb, "fingerprints": fingerprints, "queries": queries}
    exec(compile(block, "README.md", "exec"), scope)
    assert (tmp_path / "chembl.tbdb").exists()
    want = tb.range_search(queries, fingerprints, 0.7, op="tanimoto")
    for got, expected in zip((scope["lims"], scope["sims"], scope["rows"]), want):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)
    assert scope["lims"][-1] >= 8  # each copied row finds itself
    assert isinstance(scope["db"], tb.Database)
    results = scope["db"].range_search(queries, 0.7)
    for got, expected in zip(results, want):
        np.testing.assert_array_equal(got, expected)
