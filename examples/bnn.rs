//! A binary network's dense layers: activations and weights binarized to bits, their ±1 dot
//! products by XNOR-popcount (`BINARY_DOT`), a per-channel threshold (a batch norm folded into
//! it) binarizing the products into the next layer's bits, and a last layer scoring 10 classes
//! over 100 hidden bits (valid bits: the 13 bytes of a row hold 100 bits and 4 of padding). Each
//! step is checked against the same arithmetic on ±1 integers.
//!
//! Prints:
//! ```text
//! layer 1: [4, 32] bytes of activations x [100, 32] bytes of weights -> [4, 100] i32
//! products equal the ±1 integer products: true
//! next layer's bits: [4, 13] u8 (100 bits a row)
//! layer 2 over bits(100): [4, 10] i32 equal the ±1 integer products: true
//! classes: [6, 3, 3, 8]
//! ```

use tensorbits::ops::BinaryDot;
use tensorbits::{BitOrder, Options, Tensor, binarize};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn signed(&mut self) -> f32 {
        (self.next() % 2001) as f32 / 1000.0 - 1.0
    }
}

/// `sign(x) . sign(w)` for rows of floats, +1 for a value above 0 and -1 otherwise: the
/// reference of a binary dense layer.
fn sign_products(x: &[f32], w: &[f32], d: usize) -> Vec<i32> {
    let s = |v: f32| if v > 0.0 { 1 } else { -1 };
    let mut out = Vec::new();
    for xr in x.chunks(d) {
        for wr in w.chunks(d) {
            out.push(xr.iter().zip(wr).map(|(&a, &b)| s(a) * s(b)).sum());
        }
    }
    out
}

fn main() -> Result<(), tensorbits::Error> {
    let mut rng = Rng(7);
    let (batch, d_in, hidden, classes) = (4, 256, 100, 10);
    let x: Vec<f32> = (0..batch * d_in).map(|_| rng.signed()).collect();
    let w1: Vec<f32> = (0..hidden * d_in).map(|_| rng.signed()).collect();
    let w2: Vec<f32> = (0..classes * hidden).map(|_| rng.signed()).collect();

    // Layer 1: binarize both, then the ±1 dot products by XNOR-popcount.
    let a = binarize(
        &Tensor::from_vec(x.clone(), &[batch, d_in])?,
        0.0f32,
        BitOrder::Big,
    )?;
    let w1_bits = binarize(
        &Tensor::from_vec(w1.clone(), &[hidden, d_in])?,
        0.0f32,
        BitOrder::Big,
    )?;
    let h = BinaryDot::run(&a, &w1_bits)?;
    println!(
        "layer 1: {:?} bytes of activations x {:?} bytes of weights -> {:?} i32",
        a.shape(),
        w1_bits.shape(),
        h.shape()
    );
    let layer1_exact = h.data() == sign_products(&x, &w1, d_in).as_slice();
    println!("products equal the ±1 integer products: {layer1_exact}");
    assert!(layer1_exact);

    // A threshold per channel (a batch norm folded into it), then the next layer's bits.
    let thresholds: Vec<i32> = (0..hidden as i32).map(|c| c % 7 - 3).collect();
    let next = binarize(&h, &thresholds, BitOrder::Big)?;
    println!(
        "next layer's bits: {:?} u8 ({hidden} bits a row)",
        next.shape()
    );

    // Layer 2 over the 100 valid bits of each row; the padding bits of the last byte do not count.
    let w2_bits = binarize(
        &Tensor::from_vec(w2.clone(), &[classes, hidden])?,
        0.0f32,
        BitOrder::Big,
    )?;
    let logits = BinaryDot::run_with(&Options::new().bits(hidden), &next, &w2_bits)?;
    let h_signs: Vec<f32> = h
        .data()
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if v > thresholds[i % hidden] {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let layer2_exact = logits.data() == sign_products(&h_signs, &w2, hidden).as_slice();
    println!(
        "layer 2 over bits({hidden}): {:?} i32 equal the ±1 integer products: {layer2_exact}",
        logits.shape()
    );
    assert!(layer2_exact);
    let classes_of: Vec<usize> = logits
        .data()
        .chunks(classes)
        .map(|row| {
            (0..classes)
                .max_by_key(|&c| (row[c], std::cmp::Reverse(c)))
                .unwrap_or(0)
        })
        .collect();
    println!("classes: {classes_of:?}");
    Ok(())
}
