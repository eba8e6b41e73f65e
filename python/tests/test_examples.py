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
