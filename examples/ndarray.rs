//! Standard ops on ndarray arrays and views (the `ndarray` feature): a transposed view, a reversed
//! view read in place, a result written into a strided view, and knn over binary codes.
//!
//! Run with `cargo run --example ndarray --features ndarray`. It prints:
//!
//! ```text
//! a ^ b.t() = [[1, 3], [0, 7]]
//! !a[::-1] = [[252, 251], [255, 254]] (strides [-2, 1]: a reversed view of the result)
//! every other element of out = [0, 2, 0, 4, 0, 8] (popcounts of [255, 15, 3] written from the end)
//! knn: distances [[0, 1]], indices [[1, 0]]
//! ```

use tensorbits::ndarray::{Array1, ArrayD, array, s};
use tensorbits::{NdOp, Options, ops};

fn main() -> Result<(), tensorbits::Error> {
    let opts = Options::new();
    let a = array![[0u8, 1], [3, 4]];
    let b = array![[1u8, 3], [2, 3]];
    // Any strides: the transpose is read where it lies.
    let x: ArrayD<u8> = ops::BitXor::run_nd(&opts, &[a.view(), b.t()])?;
    println!("a ^ b.t() = {:?}", to_vec2(&x));
    assert_eq!(x, (&a ^ &b.t()).into_dyn());
    // A reversed view: the call is reversed, so nothing is copied and the result comes back as a
    // reversed view of its own array.
    let n: ArrayD<u8> = ops::BitNot::run_nd(&opts, &[a.slice(s![..;-1, ..])])?;
    println!(
        "!a[::-1] = {:?} (strides {:?}: a reversed view of the result)",
        to_vec2(&n),
        n.strides()
    );
    assert_eq!(n, a.slice(s![..;-1, ..]).mapv(|v| !v).into_dyn());
    // Into every other element of an existing array, from its end.
    let v = array![255u8, 15, 3];
    let mut out = Array1::<u8>::zeros(6);
    ops::BitCount::run_nd_into(&opts, &[v.view()], out.slice_mut(s![1..;-2]))?;
    println!(
        "every other element of out = {:?} (popcounts of [255, 15, 3] written from the end)",
        out.to_vec()
    );
    assert_eq!(out.to_vec(), [0, 2, 0, 4, 0, 8]);
    // The nearest rows of `codes` to each query.
    let codes = array![[0b1010u8, 0xff], [0b1011, 0xff], [0, 0]];
    let queries = array![[0b1011u8, 0xff]];
    let (d, i): (ArrayD<u32>, ArrayD<i64>) =
        ops::HammingCdist::knn_nd(&opts, queries.view(), codes.view(), 2)?;
    println!(
        "knn: distances {:?}, indices {:?}",
        to_vec2(&d),
        to_vec2(&i)
    );
    assert_eq!(
        (to_vec2(&d), to_vec2(&i)),
        (vec![vec![0, 1]], vec![vec![1, 0]])
    );
    Ok(())
}

fn to_vec2<T: Copy>(x: &ArrayD<T>) -> Vec<Vec<T>> {
    x.outer_iter()
        .map(|r| r.iter().copied().collect())
        .collect()
}
