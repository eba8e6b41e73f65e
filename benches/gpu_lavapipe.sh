#!/usr/bin/env bash
# The GPU cases of BENCHMARKS.md ("GPU: bounded work"), each timed on the device (timestamp
# queries) against a WGSL copy of the same bytes in the same run. BIN may name another build of the
# tool (an earlier commit's, to compare before and after).
set -euo pipefail
BIN="${BIN:-target/release/tensorbits}"
RUNS="${RUNS:-3}"
run() { echo "\$ tensorbits bench $*"; "$BIN" bench "$@" --device gpu --runs "$RUNS"; }
run hamming --dtype u64 --shape 1000000,16
run xor_reduce --dtype u32 --shape 4096,4096 --axes -1
run xor_reduce --dtype u32 --shape 4096,4096 --axes 0
run xor_reduce --dtype u32 --shape 16777216
run popcount_sum --dtype u8 --shape 67108864
run xor_reduce --dtype u8 --shape 262144,256 --axes 0
run hamming_cdist --dtype u8 --shape 1000,32 --shape-b 100000,32
run hamming_cdist --dtype u8 --shape 100,32 --shape-b 100000,32 --knn 10
run hamming_cdist --dtype u8 --shape 10,32 --shape-b 1000000,32 --knn 10
run hamming_cdist --dtype u8 --shape 10,32 --shape-b 1000000,32 --knn 100
