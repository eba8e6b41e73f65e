#!/usr/bin/env bash
# Builds the Python package as one wheel for every CPython from 3.10 on x86_64 Linux with glibc 2.17
# or newer (cp310-abi3-manylinux_2_17_x86_64), then checks it: auditwheel's verdict, an install into
# a fresh virtual environment with numpy alone, an import and one op. Prints the wheel's path and
# sha256 last.
#
#   bash python/build_wheel.sh [OUT_DIR]      # OUT_DIR defaults to target/wheels
#
# The tools are pinned and installed into target/wheel-tools: maturin builds, zig links against
# glibc 2.17's symbols whatever the builder's glibc is, auditwheel checks. Two builds of one
# checkout give the same bytes: the Rust SBOM is off (python/pyproject.toml), paths of the checkout
# and of cargo's home are remapped, and file times come from SOURCE_DATE_EPOCH. To check that:
#
#   bash python/build_wheel.sh /tmp/w1 && rm -rf target/wheel-build &&
#       bash python/build_wheel.sh /tmp/w2 && cmp /tmp/w1/*.whl /tmp/w2/*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

MATURIN_VERSION=1.16.0
ZIGLANG_VERSION=0.15.2
AUDITWHEEL_VERSION=6.8.2
# maturin writes the platform tag both ways, as pip accepts it: manylinux2014_x86_64.manylinux_2_17_x86_64.
TAG=cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64

OUT=${1:-target/wheels}
# The output directory before minutes of building, not after.
if ! mkdir -p "$OUT" 2>/dev/null || [ ! -w "$OUT" ]; then
    echo "error: cannot write the wheel into $OUT: not a writable directory" >&2
    exit 2
fi
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *)
        echo "error: this script builds the x86_64 Linux wheel; on $(uname -s)-$(uname -m), run 'pip install ./python'" >&2
        exit 2
        ;;
esac

TOOLS=target/wheel-tools
[ -x "$TOOLS/bin/python" ] || python3 -m venv "$TOOLS"
"$TOOLS/bin/python" -m pip install -q --disable-pip-version-check \
    "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION" "auditwheel==$AUDITWHEEL_VERSION"

# The wheel's own target directory: its RUSTFLAGS differ from a plain build's, and sharing one
# directory would make each rebuild the other.
export CARGO_TARGET_DIR="$ROOT/target/wheel-build"
CARGO_HOME_DIR=${CARGO_HOME:-$HOME/.cargo}
export RUSTFLAGS="--remap-path-prefix=$ROOT=/tensorbits --remap-path-prefix=$CARGO_HOME_DIR=/cargo"
# Rust passes the linker --strip-debug by default, which zig takes as stripping every symbol. The
# wheel keeps its symbol table (for profilers and CI's check for intrinsics compiled out of line):
# the link strips nothing, and objcopy takes the debug sections out below.
export CARGO_PROFILE_RELEASE_STRIP=false
if ! command -v objcopy >/dev/null; then
    echo "error: objcopy not found; install binutils (apt-get install binutils)" >&2
    exit 2
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
PATH="$ROOT/$TOOLS/bin:$PATH" maturin build --release --locked --zig \
    --compatibility manylinux2014 --target x86_64-unknown-linux-gnu \
    --manifest-path python/Cargo.toml --out "$STAGE"

WHEELS=("$STAGE"/tensorbits-*.whl)
if [ "${#WHEELS[@]}" -ne 1 ] || [ ! -f "${WHEELS[0]}" ]; then
    echo "error: expected one wheel from maturin, found: ${WHEELS[*]}" >&2
    exit 1
fi
WHEEL=${WHEELS[0]}

# The extension without its debug sections (the standard library's and zig's libunwind's, which name
# the directory zig ran in), rewritten in place with the same entries, order and times, and RECORD's
# hash and size for it.
"$TOOLS/bin/python" - "$WHEEL" <<'EOF'
import base64, csv, hashlib, io, os, subprocess, sys, tempfile, zipfile

path = sys.argv[1]
with zipfile.ZipFile(path) as z:
    entries = [(info, z.read(info)) for info in z.infolist()]
data = {info.filename: blob for info, blob in entries}
for name in data:
    if name.endswith(".so"):
        with tempfile.TemporaryDirectory() as tmp:
            so = os.path.join(tmp, "ext.so")
            with open(so, "wb") as f:
                f.write(data[name])
            subprocess.run(["objcopy", "--strip-debug", so], check=True)
            with open(so, "rb") as f:
                data[name] = f.read()
(record,) = [n for n in data if n.endswith(".dist-info/RECORD")]
rows = list(csv.reader(io.StringIO(data[record].decode())))
for row in rows:
    if row[0] != record:
        blob = data[row[0]]
        digest = base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()
        row[1:3] = [f"sha256={digest}", str(len(blob))]
out = io.StringIO()
csv.writer(out, lineterminator="\n").writerows(rows)
data[record] = out.getvalue().encode()
with zipfile.ZipFile(path + ".new", "w") as z:
    for info, _ in entries:
        z.writestr(info, data[info.filename])
os.replace(path + ".new", path)
EOF
case "$(basename "$WHEEL")" in
    *-"$TAG".whl) ;;
    *)
        echo "error: $(basename "$WHEEL") is not tagged $TAG" >&2
        exit 1
        ;;
esac

SIZE=$(stat -c %s "$WHEEL")
MAX=$((10 * 1024 * 1024))
if [ "$SIZE" -gt "$MAX" ]; then
    echo "error: $(basename "$WHEEL") has $SIZE bytes, over $MAX" >&2
    exit 1
fi

# auditwheel reads the extension's symbol versions: every one must be in manylinux_2_17's set.
SHOW=$("$TOOLS/bin/auditwheel" show "$WHEEL")
echo "$SHOW"
if ! tr -s ' \n' '  ' <<<"$SHOW" | grep -q 'is consistent with the following platform tag: "manylinux_2_17_x86_64"'; then
    echo "error: auditwheel does not place $(basename "$WHEEL") at manylinux_2_17_x86_64" >&2
    exit 1
fi

# A fresh environment with numpy alone, run from outside the checkout so that nothing of the
# source tree can be imported.
CHECK=$(mktemp -d)
trap 'rm -rf "$STAGE" "$CHECK"' EXIT
python3 -m venv "$CHECK/venv"
"$CHECK/venv/bin/python" -m pip install -q --disable-pip-version-check numpy
START=$(date +%s%N)
"$CHECK/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$WHEEL"
END=$(date +%s%N)
(cd "$CHECK" && "$CHECK/venv/bin/python" - <<'EOF'
import numpy as np
import tensorbits as tb

a = np.array([[0b1010, 0xFF]], dtype=np.uint8)
b = np.array([[0b0110, 0x0F], [0b1010, 0xFF]], dtype=np.uint8)
d, i = tb.knn(a, b, 2)
assert d.tolist() == [[0, 6]] and i.tolist() == [[1, 0]], (d, i)
assert "site-packages" in tb.__file__, tb.__file__
print(f"imported {tb.__file__}; knn ran on numpy arrays")
EOF
)
echo "installed in $(((END - START) / 1000000)) ms"

cp "$WHEEL" "$OUT/"
FINAL="$OUT/$(basename "$WHEEL")"
echo "$FINAL"
sha256sum "$FINAL"
