#!/usr/bin/env bash
# What declaring and calling ops costs a user's release build. Generates a small binary crate that
# depends on this checkout, in three variants: no ops; ten user-declared ops that main never calls;
# the same ten ops each called on one data type; two ops called through every entry point (typed CPU
# calls, in place, knn, and the GPU through run_on and knn_on); one pairwise sum of `a & !b`. For each: one
# warm-up build, then three rebuilds after touching main.rs, and the median wall time.
# Usage: bash benches/compile_cost.sh [runs]; VARIANTS="pairwise called" picks some.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-3}"
work="$root/target/compile-cost"
mkdir -p "$work"
export CARGO_TARGET_DIR="$work/target"

ops='
use tensorbits::{bitwise_op, Tensor};

#[bitwise_op(inputs = [a, b], compute = a & !b, broadcast = [numpy], support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]))]
pub struct AndNot;
#[bitwise_op(inputs = [a, b, m], compute = (a & m) | (b & !m), broadcast = [numpy], support(EXT = [u8, u16, u32, u64]))]
pub struct Select;
#[bitwise_op(inputs = [a, b], compute = !(a ^ b), broadcast = [numpy], support(EXT = [u8, u16, u32, u64, bool]))]
pub struct Xnor;
#[bitwise_op(inputs = [a, b], compute = !(a & b), broadcast = [numpy], support(EXT = [u8, u16, u32, u64, f32]))]
pub struct Nand;
#[bitwise_op(inputs = [a, b], compute = !(a | b), broadcast = [numpy], support(EXT = [u8, u16, u32, u64, f64]))]
pub struct Nor;
#[bitwise_op(inputs = [a, b], compute = a.wrapping_shl(b), broadcast = [numpy], support(EXT = [u8, u16, u32, u64]))]
pub struct RotLike;
#[bitwise_op(inputs = [a], compute = a ^ 255, support(EXT = [u8, u16, u32, u64]))]
pub struct FlipLow;
#[bitwise_op(inputs = [a, b], compute = (a ^ b).count_ones(), broadcast = [numpy], output = [u8, u32], support(EXT = [u8, u16, u32, u64]))]
pub struct Dist;
#[bitwise_op(inputs = [a, b], compute = (a >> b) & 1, broadcast = [numpy], support(EXT = [u8, u16, u32, u64, i32]))]
pub struct BitAt;
#[bitwise_op(inputs = [a, b, c], compute = a ^ b ^ c, broadcast = [numpy], support(EXT = [u8, u16, u32, u64]))]
pub struct Xor3;
'
calls='
    let a = Tensor::from_vec((0..64u32).collect(), &[64])?;
    let b = Tensor::from_vec((0..64u32).map(|x| x * 7).collect(), &[64])?;
    let c = Tensor::from_vec((0..64u32).map(|x| x ^ 5).collect(), &[64])?;
    let mut sum = 0u64;
    sum += AndNot::run(&a, &b)?.data()[3] as u64;
    sum += Select::run(&a, &b, &c)?.data()[3] as u64;
    sum += Xnor::run(&a, &b)?.data()[3] as u64;
    sum += Nand::run(&a, &b)?.data()[3] as u64;
    sum += Nor::run(&a, &b)?.data()[3] as u64;
    sum += RotLike::run(&a, &b)?.data()[3] as u64;
    sum += FlipLow::run(&a)?.data()[3] as u64;
    let d: Tensor<u8> = Dist::run(&a, &b)?;
    sum += d.data()[3] as u64;
    sum += BitAt::run(&a, &b)?.data()[3] as u64;
    sum += Xor3::run(&a, &b, &c)?.data()[3] as u64;
    println!("{sum}");
'
make_crate() { # name, main.rs body
    local dir="$work/$1"
    mkdir -p "$dir/src"
    cat > "$dir/Cargo.toml" <<TOML
[package]
name = "cost-$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
tensorbits = { path = "$root" }

[workspace]
TOML
    printf '%s\n' "$2" > "$dir/src/main.rs"
}
make_crate none 'use tensorbits::Tensor;
fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec((0..64u32).collect(), &[64])?;
    println!("{}", a.data()[3]);
    Ok(())
}'
make_crate declared "$ops
fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec((0..64u32).collect(), &[64])?;
    println!(\"{}\", a.data()[3]);
    Ok(())
}"
make_crate called "$ops
fn main() -> Result<(), tensorbits::Error> {
$calls
    Ok(())
}"

# Two ops called through every entry point: typed CPU calls (new output, options, into an
# existing tensor, in place), the GPU through run_on, and knn on the CPU and through knn_on.
entries_ops='
use tensorbits::{bitwise_op, GpuExecutor, Options, Target, Tensor};

#[bitwise_op(inputs = [a, b], compute = a & !b, broadcast = [numpy], in_place = [a], support(EXT = [u8, u16, u32, u64]))]
pub struct AndNot;
#[bitwise_op(inputs = [a, b], compute = (a ^ b).count_ones(), reduce = sum, pairwise, output = [u32, u16], support(EXT = [u8, u16, u32, u64]))]
pub struct Codes;
'
entries_calls='
    let a = Tensor::from_vec((0..64u32).collect(), &[8, 8])?;
    let b = Tensor::from_vec((0..64u32).map(|x| x * 7).collect(), &[8, 8])?;
    let opts = Options::new();
    let mut sum = AndNot::run(&a, &b)?.data()[3] as u64;
    sum += AndNot::run_with(&opts, &a, &b)?.data()[3] as u64;
    let mut out = Tensor::from_vec(vec![0u32; 64], &[8, 8])?;
    AndNot::run_into(&opts, &a, &b, &mut out)?;
    let mut c = a.clone();
    AndNot::run_in_place_a(&opts, &mut c, &b)?;
    sum += (out.data()[3] ^ c.data()[3]) as u64;
    sum += Codes::run(&a, &b)?.data()[3] as u64;
    let (d, i) = Codes::knn(&a, &b, 3)?;
    sum += d.data()[0] as u64 + i.data()[0] as u64;
    if let Ok(gpu) = GpuExecutor::new_blocking() {
        let t = Target::Gpu(&gpu);
        sum += AndNot::run_on(&t, &opts, &a, &b)?.data()[3] as u64;
        sum += Codes::run_on(&t, &opts, &a, &b)?.data()[3] as u64;
        let (d, _) = Codes::knn_on(&t, &opts, &a, &b, 3)?;
        sum += d.data()[0] as u64;
    }
    println!("{sum}");
'
make_crate entries "$entries_ops
fn main() -> Result<(), tensorbits::Error> {
$entries_calls
    Ok(())
}"

# A pairwise sum of a two-input function that has no tile of its own in the runtime (`a & !b`),
# called all-pairs and through knn: the runtime computes it from `|a & b|` and the rows' counts,
# so the crate compiles no tile.
make_crate pairwise '
use tensorbits::{bitwise_op, Tensor};

#[bitwise_op(inputs = [a, b], compute = (a & !b).count_ones(), reduce = sum, pairwise, output = [u32], support(EXT = [u8, u16, u32, u64]))]
pub struct OnlyA;

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec((0..64u32).collect(), &[8, 8])?;
    let b = Tensor::from_vec((0..64u32).map(|x| x * 7).collect(), &[8, 8])?;
    let mut sum = OnlyA::run(&a, &b)?.data()[3] as u64;
    let (d, i) = OnlyA::knn(&a, &b, 3)?;
    sum += d.data()[0] as u64 + i.data()[0] as u64;
    println!("{sum}");
    Ok(())
}'

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for v in ${VARIANTS:-none declared called entries pairwise}; do
    (cd "$work/$v" && cargo build --release -q)
    times=()
    for _ in $(seq "$runs"); do
        touch "$work/$v/src/main.rs"
        s=$(date +%s.%N)
        (cd "$work/$v" && cargo build --release -q)
        e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc)")
    done
    m=$(printf '%s\n' "${times[@]}" | median)
    printf '%-9s median %6.2f s of %s rebuilds (%s)\n' "$v" "$m" "$runs" "${times[*]}"
done
