#!/usr/bin/env python3
"""Turns criterion's results for `cargo bench --bench cpu` into BENCHMARKS.md's CPU table and chart.

Usage: cargo bench --bench cpu && python3 benches/report.py
Reads target/criterion/<group>/{op,copy}/new/estimates.json (medians) and each group's bytes moved,
writes benches/results/cpu.md (a Markdown table) and benches/results/cpu.png (ratios to copy).
"""
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CRIT = os.path.join(ROOT, "target", "criterion")
OUT = os.path.join(ROOT, "benches", "results")
MIB64 = 64 << 20

# (group, label, bytes read+written, target ratio)
CASES = [(f"xor_64mib_{t}", f"XOR {t}, 2 x 64 MiB", 3 * MIB64, 1.0) for t in ["u8", "u16", "u32", "u64", "f16", "f32", "f64"]]
CASES += [
    ("broadcast_u32_row_4096", "XOR u32 (4096,4096) ^ (4096,)", 2 * 4096 * 4096 * 4 + 4096 * 4, 0.8),
    ("broadcast_u32_col_4096x1", "XOR u32 (4096,4096) ^ (4096,1)", 2 * 4096 * 4096 * 4 + 4096 * 4, 0.8),
]
for t, size in [("u8", 1), ("u32", 4)]:
    n = MIB64 // size
    CASES += [
        (f"not_64mib_{t}", f"NOT {t}, 64 MiB", 2 * MIB64, 0.8),
        (f"shl_64mib_{t}", f"SHL {t}, 2 x 64 MiB", 3 * MIB64, 0.8),
        (f"shr_64mib_{t}", f"SHR {t}, 2 x 64 MiB", 3 * MIB64, 0.8),
        (f"popcount_64mib_{t}", f"POPCOUNT {t} -> u8, 64 MiB", MIB64 + n, 0.8),
    ]


def median_ns(*path):
    with open(os.path.join(CRIT, *path, "new", "estimates.json")) as f:
        return json.load(f)["median"]["point_estimate"]


def main():
    rows = []
    for group, label, moved, target in CASES:
        try:
            op, copy = median_ns(group, "op"), median_ns(group, "copy")
        except FileNotFoundError:
            print(f"missing results for {group}; run `cargo bench --bench cpu` first", file=sys.stderr)
            continue
        rows.append((label, op, copy, moved / op, moved / copy, copy / op, target))
    tiny = {}
    for kind in ["new_output", "into"]:
        for variant in ["tensorbits", "tensorbits_compiled"]:
            try:
                tiny[(kind, variant)] = (median_ns("tiny_64_u32", kind, variant), median_ns("tiny_64_u32", kind, "hand_loop"))
            except FileNotFoundError:
                pass
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "cpu.md"), "w") as f:
        f.write("| case | tensorbits | GB/s | copy | GB/s | ratio | target | met |\n")
        f.write("|---|---:|---:|---:|---:|---:|---:|:-:|\n")
        for label, op, copy, gop, gcopy, ratio, target in rows:
            f.write(f"| {label} | {op / 1e6:.2f} ms | {gop:.1f} | {copy / 1e6:.2f} ms | {gcopy:.1f} | "
                    f"{ratio:.2f}x | {target:.1f}x | {'yes' if ratio >= target else 'no'} |\n")
        if tiny:
            f.write("\n| 64 x u32 XOR | tensorbits | hand-written loop | ratio | target | met |\n")
            f.write("|---|---:|---:|---:|---:|:-:|\n")
            names = {
                ("new_output", "tensorbits"): "new output, one-shot `run`",
                ("into", "tensorbits"): "into existing, one-shot `run_into`",
                ("new_output", "tensorbits_compiled"): "new output, `Compiled::execute_new`",
                ("into", "tensorbits_compiled"): "into existing, `Compiled::execute_typed`",
            }
            for key, (ours, hand) in tiny.items():
                what = names[key]
                r = ours / hand
                f.write(f"| {what} | {ours:.1f} ns | {hand:.1f} ns | {r:.1f}x | 3.0x | {'yes' if r <= 3 else 'no'} |\n")
    print(open(os.path.join(OUT, "cpu.md")).read())
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed; no chart (pip install matplotlib)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(10, 6))
    labels = [r[0] for r in rows]
    ratios = [r[5] for r in rows]
    colors = ["tab:green" if r[5] >= r[6] else "tab:red" for r in rows]
    ax.barh(labels, ratios, color=colors)
    for i, r in enumerate(rows):
        ax.plot([r[6], r[6]], [i - 0.4, i + 0.4], color="black", linewidth=1)
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("throughput relative to a parallel copy of the same bytes (higher is better; bar = target)")
    ax.set_title("tensorbits CPU executor: ratio to copy_from_slice, same run (criterion medians)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "cpu.png"), dpi=110)
    print("wrote", os.path.join(OUT, "cpu.png"))


if __name__ == "__main__":
    main()
