//! A user-defined op: a fused 3-input bit select, `(a & mask) | (b & !mask)`, declared with
//! `#[bitwise_op]` and its own data-type table. Shows a typed call, broadcasting the mask, an in-place
//! call, the op's metadata, and its generated "Tensor support" table.
//!
//! Prints:
//! ```text
//! bit_select([0xff00, 0x0ff0], [0x00ff, 0xf00f], mask=[0xf0f0, 0xf0f0]) = [0xf00f, 0x00ff]
//! ...
//! ```
//! then the mask broadcast from one element, an in-place run, and the support table.

use tensorbits::{Broadcast, Op, Options, Tensor, bitwise_op};

/// Takes each bit from `a` where `mask` has a 1, and from `b` where it has a 0.
#[bitwise_op(
    name = "BIT_SELECT",
    inputs = [a, b, mask],
    compute = (a & mask) | (b & !mask),
    dims = 0..=8,
    broadcast = [numpy, none],
    in_place = [a],
    support(
        FL_4_1 = [u8, u16, u32, u64],
        EXT = [u8, u16, u32, u64, i8, i16, i32, i64, bool],
    ),
)]
pub struct BitSelect;

fn hex(t: &Tensor<u16>) -> String {
    let v: Vec<String> = t.data().iter().map(|x| format!("{x:#06x}")).collect();
    format!("[{}]", v.join(", "))
}

fn main() -> Result<(), tensorbits::Error> {
    let a = Tensor::from_vec(vec![0xff00u16, 0x0ff0], &[2])?;
    let b = Tensor::from_vec(vec![0x00ffu16, 0xf00f], &[2])?;
    let mask = Tensor::from_vec(vec![0xf0f0u16, 0xf0f0], &[2])?;
    let y = BitSelect::run(&a, &b, &mask)?;
    println!(
        "bit_select({}, {}, mask={}) = {}",
        hex(&a),
        hex(&b),
        hex(&mask),
        hex(&y)
    );

    // One mask for every element, by numpy broadcasting of a rank-0 tensor.
    let one = Tensor::scalar(0x00ffu16);
    let y = BitSelect::run_with(&Options::new().broadcast(Broadcast::Numpy), &a, &b, &one)?;
    println!("with scalar mask {:#06x}: {}", one.data()[0], hex(&y));

    // In place on `a`, as the spec allows.
    let mut a2 = a.clone();
    BitSelect::run_in_place_a(&Options::new(), &mut a2, &b, &mask)?;
    println!("in place on a: {}", hex(&a2));

    let info = <BitSelect as Op>::INFO;
    println!(
        "{}: {} inputs, computes `{}`",
        info.name(),
        info.arity(),
        info.compute()
    );
    print!("{}", info.support_table().to_text());
    Ok(())
}
