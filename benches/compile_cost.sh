#!/usr/bin/env bash
# What declaring and calling ops costs a user's release build. Generates a small binary crate that
# depends on this checkout, in three variants: no ops; ten user-declared ops that main never calls;
# the same ten ops each called on one data type. For each: one warm-up build, then three rebuilds
# after touching main.rs, and the median wall time. Usage: bash benches/compile_cost.sh [runs]
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

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for v in none declared called; do
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
