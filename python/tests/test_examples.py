"""The README shows what the binary-embedding example prints; this keeps the two the same."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_binary_search_example_prints_what_the_readme_shows():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Binary-embedding search", 1)[1]
    shown = re.search(r"It prints:\n\n```text\n(.*?)```", section, flags=re.S).group(1)
    run = subprocess.run(
        [sys.executable, str(ROOT / "python" / "examples" / "binary_search.py")],
        capture_output=True, text=True, check=True, timeout=300,
    )
    assert run.stdout == shown
