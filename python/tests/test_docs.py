"""Every public function has a numpydoc docstring whose examples run (doctest), and the package
follows numpy where a numpy user would notice: 0-d results are scalars."""

import doctest
import inspect
import pydoc
import re

import numpy as np
import pytest

import tensorbits as tb

OPS = [getattr(tb, n) for n in tb.__all__ if n in tb._RUNS] + [tb.knn, tb.binarize, tb.rescore]


def test_docstring_examples_run():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    examples = 0
    for test in finder.find(tb, "tensorbits", globs={"np": np, "tb": tb}):
        runner.run(test)
        examples += len(test.examples)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    assert examples >= 30
    # Every function that runs an op shows it at work.
    for f in OPS:
        assert ">>> " in f.__doc__, f.__name__


def _sections(doc):
    return set(re.findall(r"^\s*(\w[\w ]*)\n\s*-{3,}$", doc, flags=re.M))


@pytest.mark.parametrize("f", OPS, ids=lambda f: f.__name__)
def test_numpydoc_sections_and_every_parameter(f):
    doc = f.__doc__
    assert {"Parameters", "Returns", "Raises", "Examples"} <= _sections(doc), f.__name__
    params = doc.split("Parameters\n")[1].split("Returns\n")[0]
    documented = set()
    for line in params.splitlines():
        m = re.match(r"^ {4}(\*?\w[\w, *]*?)(?: :|$)", line)
        if m:
            documented |= {p.strip().lstrip("*") for p in m.group(1).split(",")}
    names = set(inspect.signature(f).parameters)
    assert names <= documented, (f.__name__, names - documented)
    assert "<" not in doc.replace("<<", "").replace("``<", ""), "a marker was not replaced"


def test_help_reads_like_numpy():
    text = pydoc.render_doc(tb.knn, renderer=pydoc.plaintext)
    assert ("knn(a, b, /, k, *, op='hamming_cdist', largest=None, bits=None, bitorder='big', "
            "dtype=None, device='auto', level=None, id_offset=0)") in text
    for section in ("Parameters", "Returns", "Raises", "Examples"):
        assert section in text
    text = pydoc.render_doc(tb.bitwise_xor_reduce, renderer=pydoc.plaintext)
    assert "axis=<op's axes>" in text and "object at 0x" not in text


def test_zero_d_results_are_scalars_as_numpy_gives():
    x = np.arange(12, dtype=np.uint16).reshape(3, 4)
    for ours, theirs in [
        (tb.bitwise_xor_reduce(x), np.bitwise_xor.reduce(x, axis=None)),
        (tb.bitwise_and(np.uint8(12), np.uint8(6)), np.bitwise_and(np.uint8(12), np.uint8(6))),
        (tb.bitwise_not(np.array(5, dtype=np.int8)), np.bitwise_not(np.array(5, dtype=np.int8))),
        (tb.bitwise_xor(np.array(3, dtype=np.uint8), 1), np.bitwise_xor(np.array(3, dtype=np.uint8), 1)),
        (tb.hamming_distance(x[0], x[1]), None),
        (tb.bitwise_count_sum(x, axis=(0, 1)), None),
    ]:
        assert isinstance(ours, np.generic) and not isinstance(ours, np.ndarray)
        if theirs is not None:
            assert type(ours) is type(theirs) and ours == theirs
    # keepdims and out= keep arrays.
    assert isinstance(tb.bitwise_xor_reduce(x, keepdims=True), np.ndarray)
    out = np.zeros((), dtype=np.uint16)
    assert tb.bitwise_xor_reduce(x, out=out) is out
    assert out == np.bitwise_xor.reduce(x, axis=None)


def test_pdpd_axis_has_its_own_name():
    a = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    b = np.arange(3, dtype=np.uint8)
    got = tb.bitwise_xor(a, b, broadcast="pdpd", broadcast_axis=1)
    np.testing.assert_array_equal(got, a ^ b[None, :, None])
    with pytest.raises(TypeError):
        tb.bitwise_xor(a, b, broadcast="pdpd", axis=1)
