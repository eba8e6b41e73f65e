import os

import numpy as np
import pytest

import tensorbits as tb

# torch's custom ops and torch.compile load triton (with its own LLVM) where it is installed, which
# crashes a process that loaded Mesa's lavapipe (also LLVM) first: as tensorbits.torch does, load
# it before any test makes a GPU device.
try:
    import torch._dynamo  # noqa: F401
except ImportError:
    pass

INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float16", "float32", "float64"]
ALL_TYPES = ["bool"] + INT_TYPES + FLOAT_TYPES


def bits(x):
    """The stored bits of an array, as unsigned integers of the same width (compare bits, not values)."""
    x = np.asarray(x)
    return x.view(f"u{x.dtype.itemsize}")


def random_array(rng, shape, dtype):
    """Random elements of every bit pattern (NaNs, -0.0 and infinities included for floats)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=(*shape, dtype.itemsize), dtype=np.uint8)
    return np.ascontiguousarray(raw).view(dtype).reshape(shape)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def has_gpu():
    try:
        tb.gpu_name()
        return True
    except RuntimeError:
        return False


@pytest.fixture(scope="session")
def gpu():
    """Skips GPU tests where no device exists, unless TENSORBITS_REQUIRE_GPU=1 (CI) makes it a failure."""
    if has_gpu():
        return "gpu"
    if os.environ.get("TENSORBITS_REQUIRE_GPU") == "1":
        pytest.fail("TENSORBITS_REQUIRE_GPU=1 but no GPU adapter was found")
    pytest.skip("no GPU adapter")


@pytest.fixture(scope="session")
def torch():
    """PyTorch, which CI installs (TENSORBITS_REQUIRE_TORCH=1 makes its absence a failure)."""
    try:
        import torch as t

        return t
    except ImportError:
        if os.environ.get("TENSORBITS_REQUIRE_TORCH") == "1":
            pytest.fail("TENSORBITS_REQUIRE_TORCH=1 but torch is not installed")
        pytest.skip("torch is not installed")
