//! The typed API on every element type: floats by bits (NaN payloads, -0.0), bool normalisation,
//! levels, views with strides, `run_into` and in-place calls.

use tensorbits::levels::{FL_3_0, FL_4_1};
use tensorbits::ops::{BitAnd, BitCount, BitNot, BitOr, BitShiftLeft, BitShiftRight, BitXor};
use tensorbits::{Broadcast, Options, Tensor, TensorView, TensorViewMut, f16};

macro_rules! bitwise_on_bits {
    ($($name:ident: $t:ty, $bits:ty, [$($v:expr),*];)*) => {$(
        #[test]
        fn $name() {
            let vals: Vec<$t> = vec![$($v),*];
            let n = vals.len();
            let rev: Vec<$t> = vals.iter().rev().copied().collect();
            let a = Tensor::from_vec(vals.clone(), &[n]).unwrap();
            let b = Tensor::from_vec(rev.clone(), &[n]).unwrap();
            let bits = |v: $t| -> $bits { bytemuck::cast(v) };
            let x = BitXor::run(&a, &b).unwrap();
            let o = BitOr::run(&a, &b).unwrap();
            let d = BitAnd::run(&a, &b).unwrap();
            let nt = BitNot::run(&a).unwrap();
            for i in 0..n {
                assert_eq!(bits(x.data()[i]), bits(vals[i]) ^ bits(rev[i]));
                assert_eq!(bits(o.data()[i]), bits(vals[i]) | bits(rev[i]));
                assert_eq!(bits(d.data()[i]), bits(vals[i]) & bits(rev[i]));
                assert_eq!(bits(nt.data()[i]), !bits(vals[i]));
            }
            // NOT twice restores every pattern exactly, NaN payloads included.
            let back = BitNot::run(&nt).unwrap();
            let same: Vec<$bits> = back.data().iter().map(|&v| bits(v)).collect();
            let orig: Vec<$bits> = vals.iter().map(|&v| bits(v)).collect();
            assert_eq!(same, orig);
            let c: Tensor<u8> = BitCount::run(&a).unwrap();
            for i in 0..n {
                assert_eq!(c.data()[i] as u32, bits(vals[i]).count_ones());
            }
        }
    )*};
}

bitwise_on_bits! {
    f32_bits: f32, u32, [0.0, -0.0, f32::from_bits(0x7fc0_1234), f32::from_bits(0xff80_0001), f32::INFINITY, 1.5];
    f64_bits: f64, u64, [0.0, -0.0, f64::from_bits(0x7ff8_0000_dead_beef), f64::NEG_INFINITY, -2.25];
    f16_bits: f16, u16, [f16::ZERO, f16::NEG_ZERO, f16::from_bits(0x7e55), f16::from_bits(0xfc01), f16::ONE];
    u8_bits: u8, u8, [0, 1, 0x80, 0xff, 0x5a];
    u16_bits: u16, u16, [0, 1, 0x8000, 0xffff, 0x1234];
    u32_bits: u32, u32, [0, 1, 0x8000_0000, u32::MAX, 0xdead_beef];
    u64_bits: u64, u64, [0, 1, 1 << 63, u64::MAX, 0x0123_4567_89ab_cdef];
    i8_bits: i8, u8, [0, -1, i8::MIN, i8::MAX, 42];
    i16_bits: i16, u16, [0, -1, i16::MIN, i16::MAX, -1234];
    i32_bits: i32, u32, [0, -1, i32::MIN, i32::MAX, -123_456];
    i64_bits: i64, u64, [0, -1, i64::MIN, i64::MAX, -9_876_543_210];
}

#[test]
fn bool_ops_are_logical() {
    let a = Tensor::from_vec(vec![false, false, true, true], &[4]).unwrap();
    let b = Tensor::from_vec(vec![false, true, false, true], &[4]).unwrap();
    assert_eq!(
        BitAnd::run(&a, &b).unwrap().data(),
        &[false, false, false, true]
    );
    assert_eq!(
        BitOr::run(&a, &b).unwrap().data(),
        &[false, true, true, true]
    );
    assert_eq!(
        BitXor::run(&a, &b).unwrap().data(),
        &[false, true, true, false]
    );
    assert_eq!(BitNot::run(&a).unwrap().data(), &[true, true, false, false]);
}

#[test]
fn shifts_follow_the_decided_semantics() {
    let a = Tensor::from_vec(vec![-8i8, -8, -8, 8, 8, 1], &[6]).unwrap();
    let b = Tensor::from_vec(vec![1i8, 8, -1, 9, 3, 7], &[6]).unwrap();
    assert_eq!(
        BitShiftRight::run(&a, &b).unwrap().data(),
        &[-4, -1, -1, 0, 1, 0]
    );
    assert_eq!(
        BitShiftLeft::run(&a, &b).unwrap().data(),
        &[-16, 0, 0, 0, 64, -128]
    );
    let u = Tensor::from_vec(vec![0x80u8, 0x80, 1], &[3]).unwrap();
    let c = Tensor::from_vec(vec![7u8, 8, 255], &[3]).unwrap();
    assert_eq!(BitShiftRight::run(&u, &c).unwrap().data(), &[1, 0, 0]);
    assert_eq!(BitShiftLeft::run(&u, &c).unwrap().data(), &[0, 0, 0]);
}

#[test]
fn levels_are_honoured() {
    let a = Tensor::from_vec(vec![1u16, 2], &[2]).unwrap();
    let y = BitXor::run_with(&Options::at(FL_3_0), &a, &a).unwrap();
    assert_eq!(y.data(), &[0, 0]);
    let f = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    assert!(BitXor::run_with(&Options::at(FL_4_1), &f, &f).is_ok());
}

#[test]
fn strided_views_and_run_into() {
    // A column of a 3x2 matrix, and a broadcast row through a 0 stride.
    let m = [1u32, 2, 3, 4, 5, 6];
    let col = TensorView::with_strides(&m, &[3], &[2]).unwrap();
    let row = [0x100u32];
    let rep = TensorView::with_strides(&row, &[3], &[0]).unwrap();
    assert_eq!(
        BitXor::run(col, rep).unwrap().data(),
        &[0x101, 0x103, 0x105]
    );
    // Into every other element of a buffer: the gaps keep their values.
    let mut buf = [7u32; 6];
    let out = TensorViewMut::with_strides(&mut buf, &[3], &[2]).unwrap();
    BitXor::run_into(&Options::new(), col, rep, out).unwrap();
    assert_eq!(buf, [0x101, 7, 0x103, 7, 0x105, 7]);
    // Views say what they cover, whether they own their shape or borrow a tensor's.
    assert_eq!(
        format!("{col:?}"),
        "TensorView { shape: [3], strides: [2], data: [1, 2, 3, 4, 5, 6] }"
    );
    let t = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
    assert_eq!(
        format!("{:?}", t.view()),
        "TensorView { shape: [2, 2], strides: [2, 1], data: [1, 2, 3, 4] }"
    );
}

#[test]
fn in_place_on_each_allowed_input() {
    let mut a = Tensor::from_vec(vec![1u8, 2, 3], &[3]).unwrap();
    let b = Tensor::from_vec(vec![0xf0u8, 0xf0, 0xf0], &[3]).unwrap();
    BitXor::run_in_place_a(&Options::new(), &mut a, &b).unwrap();
    assert_eq!(a.data(), &[0xf1, 0xf2, 0xf3]);
    let mut b2 = b.clone();
    BitShiftLeft::run_in_place_b(&Options::new(), &a, &mut b2).unwrap();
    assert_eq!(b2.data(), &[0, 0, 0], "counts of 240 are out of range");
    let mut x = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    BitNot::run_in_place_input(&Options::new(), &mut x).unwrap();
    assert_eq!(x.data(), &[false, true]);
    // In place with a broadcast second input.
    let mut m = Tensor::from_vec(vec![1u16, 2, 3, 4], &[2, 2]).unwrap();
    let s = Tensor::scalar(0x100u16);
    BitOr::run_in_place_a(&Options::new().broadcast(Broadcast::Numpy), &mut m, &s).unwrap();
    assert_eq!(m.data(), &[0x101, 0x102, 0x103, 0x104]);
}

#[test]
fn rank_0_and_size_0() {
    let s = Tensor::scalar(0x0fu8);
    let y = BitNot::run(&s).unwrap();
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(y.data(), &[0xf0]);
    let e = Tensor::<u64>::zeros(&[3, 0, 2]).unwrap();
    let y = BitXor::run(&e, &e).unwrap();
    assert_eq!(y.shape(), &[3, 0, 2]);
    assert!(y.data().is_empty());
    let big = Tensor::<u8>::zeros(&[1, 1, 1, 1, 1, 1, 1, 2]).unwrap();
    assert_eq!(BitNot::run(&big).unwrap().data(), &[255, 255]);
}
