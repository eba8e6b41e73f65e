"""An outside suite: the onnx package's node test cases for the bitwise ops and BitShift (signed
opset-28 shifts included), generated in memory by ``collect_testcases`` (the wheel ships the
generators, not the data files), run through the package on the CPU and the GPU and compared
bit for bit with ONNX's expected outputs."""
import warnings

import numpy as np
import pytest

import tensorbits as tb
from conftest import has_gpu

onnx_node = pytest.importorskip("onnx.backend.test.case.node")

DEVICES = ["cpu"] + (["gpu"] if has_gpu() else [])


def _cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = onnx_node.collect_testcases(None)
    return [c for c in cases if c.model.graph.node[0].op_type
            in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "BitShift")]


CASES = _cases()


def _function(node):
    if node.op_type == "BitShift":
        direction = {a.name: a.s for a in node.attribute}["direction"]
        return tb.left_shift if direction == b"LEFT" else tb.right_shift
    return {"BitwiseAnd": tb.bitwise_and, "BitwiseOr": tb.bitwise_or,
            "BitwiseXor": tb.bitwise_xor, "BitwiseNot": tb.bitwise_not}[node.op_type]


def test_the_suite_is_there():
    # The onnx release this was written against has 43 such cases; a newer one may add some.
    assert len(CASES) >= 43, [c.name for c in CASES]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node_case(case, device):
    f = _function(case.model.graph.node[0])
    for inputs, outputs in case.data_sets:
        got = f(*[np.asarray(x) for x in inputs], device=device)
        want = np.asarray(outputs[0])
        assert got.dtype == want.dtype and got.shape == want.shape, case.name
        assert got.tobytes() == want.tobytes(), (case.name, got, want)
