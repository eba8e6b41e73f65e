"""In a container whose memory is capped (a control group's limit), a call whose new arrays could
not fit raises MemoryError instead of being ended by the out-of-memory killer, and a call that fits
still runs. The test makes a 2 GiB memory group where the machine lets it (root, a writable
cgroup v1 or v2 hierarchy with the memory controller) and runs the calls in a child inside it;
elsewhere it is skipped, saying why."""

import os
import subprocess
import sys
import textwrap

import pytest

LIMIT = 2 << 30


def _mounts():
    """(mount point, version) of the hierarchies with the memory controller."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, kind = left.split(), right.split()
            if len(fields) < 5 or not kind:
                continue
            point = fields[4].replace("\\040", " ")
            if kind[0] == "cgroup" and "memory" in kind[-1].split(","):
                found.append((point, 1))
            elif kind[0] == "cgroup2":
                try:
                    with open(os.path.join(point, "cgroup.subtree_control")) as c:
                        if "memory" in c.read().split():
                            found.append((point, 2))
                except OSError:
                    pass
    return found


def _write(path, value):
    with open(path, "w") as f:
        f.write(value)


def _make_group():
    """A new memory group capped at LIMIT (swap included): its directory, or the reason none
    could be made."""
    reasons = []
    for point, version in _mounts():
        group = os.path.join(point, f"tensorbits-test-{os.getpid()}")
        try:
            os.mkdir(group)
        except OSError as e:
            reasons.append(f"{point}: {e.strerror}")
            continue
        try:
            if version == 1:
                _write(os.path.join(group, "memory.limit_in_bytes"), str(LIMIT))
                both = os.path.join(group, "memory.memsw.limit_in_bytes")
                if os.path.exists(both):
                    _write(both, str(LIMIT))
            else:
                _write(os.path.join(group, "memory.max"), str(LIMIT))
                if os.path.exists(os.path.join(group, "memory.swap.max")):
                    _write(os.path.join(group, "memory.swap.max"), "0")
            return group, None
        except OSError as e:
            os.rmdir(group)
            reasons.append(f"{group}: {e.strerror}")
    return None, "; ".join(reasons) or "no cgroup hierarchy with the memory controller is mounted"


# Each call's new arrays pass the 2 GiB limit, though its inputs are small (broadcast views
# hold one element), or pass it with the memory the child holds: it must survive each with
# MemoryError.
CHILD = textwrap.dedent(
    """
    import numpy as np
    import tensorbits as tb

    G = 1 << 30
    one = lambda dtype, n: np.broadcast_to(np.ones(1, dtype), (n,))
    codes = lambda rows: np.zeros((rows, 8), np.uint8)
    cases = {
        "bitwise_not": lambda: tb.bitwise_not(one(np.uint8, 3 * G)),
        "bitwise_and, broadcast": lambda: tb.bitwise_and(
            np.zeros((1 << 16, 1), np.uint32), np.zeros((1, 1 << 14), np.uint32)),
        "left_shift, promoted": lambda: tb.left_shift(one(np.uint8, 3 * G // 2), np.uint16(1)),
        "bitwise_count": lambda: tb.bitwise_count(one(np.uint64, 5 * G // 2)),
        "hamming_cdist": lambda: tb.hamming_cdist(codes(1 << 16), codes(1 << 14)),
        "binary_dot": lambda: tb.binary_dot(codes(1 << 16), codes(1 << 14)),
        # 1.8 GiB of indices and the distances: each fits alone, both do not.
        "knn": lambda: tb.knn(codes(15000), codes(1 << 14), k=1 << 14),
        "binarize": lambda: tb.binarize(np.broadcast_to(np.float32(1), (1 << 15, 1 << 19)), 0),
        # Every pair a hit: 2^27 of them.
        "range_search": lambda: tb.range_search(codes(1 << 13), codes(1 << 14), 1),
    }
    try:
        tb.gpu_name()
        cases["range_search, gpu"] = lambda: tb.range_search(
            codes(1 << 13), codes(1 << 14), 1, device="gpu")
    except RuntimeError:
        pass
    print(f"cases: {len(cases) + 1}", flush=True)
    def run(name, call):
        try:
            call()
        except MemoryError as e:
            print(f"{name}: MemoryError: {e}", flush=True)
        else:
            print(f"{name}: granted", flush=True)

    for name, call in cases.items():
        run(name, call)
    # Below the limit alone, past it with the memory the process holds.
    held = np.ones(1200 << 20, np.uint8)
    run("bitwise_xor, held", lambda: tb.bitwise_xor(held, np.uint8(1)))
    del held
    # Within the limit, calls still run.
    x = tb.bitwise_not(one(np.uint8, G // 2))
    print("within:", x.shape[0] == G // 2 and int(x[-1]) == 254, flush=True)
    """
)


def test_calls_past_a_containers_memory_raise_memoryerror():
    if not sys.platform.startswith("linux"):
        pytest.skip("control groups are Linux's")
    group, why = _make_group()
    if group is None:
        pytest.skip(f"skipped: no 2 GiB memory group could be made here ({why})")
    try:
        r = subprocess.run(
            [sys.executable, "-c", CHILD],
            preexec_fn=lambda: _write(os.path.join(group, "cgroup.procs"), str(os.getpid())),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        os.rmdir(group)
    assert r.returncode == 0, (
        f"the child ended with {r.returncode} (-9: killed for memory) after:\n{r.stdout}{r.stderr}"
    )
    lines = r.stdout.splitlines()
    granted = [line for line in lines if line.endswith(": granted")]
    assert not granted, granted
    refused = [line for line in lines if ": MemoryError: " in line]
    assert len(refused) == int(lines[0].removeprefix("cases: ")), r.stdout
    assert all("cannot allocate" in line for line in refused), r.stdout
    assert lines[-1] == "within: True", r.stdout
