#!/usr/bin/env bash
# The headline ratios of BENCHMARKS.md through `tensorbits bench` (op and copy timed alternately,
# median of 11 runs each). Usage: cargo build --release -p tensorbits-cli && bash benches/headline.sh
set -euo pipefail
B="$(dirname "$0")/../target/release/tensorbits"
M=$((64 << 20))
run() { "$B" bench "$@" --runs 11 | paste - - | sed -E 's/ \(median of [0-9]+ runs, [0-9.]+ ms; [0-9]+ bytes read\+written\)//'; }
for t in u8:1 u16:2 u32:4 u64:8 f16:2 f32:4 f64:8; do
    run xor --dtype "${t%:*}" --shape $((M / ${t#*:}))
done
run xor --dtype u32 --shape 4096,4096 --shape-b 4096
run xor --dtype u32 --shape 4096,4096 --shape-b 4096,1
for t in u8:1 u32:4; do
    for op in not shl shr popcount; do
        run "$op" --dtype "${t%:*}" --shape $((M / ${t#*:}))
    done
done
