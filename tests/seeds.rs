//! The examples of the seed documents (DirectML's BIT_NOT, BIT_XOR and BIT_COUNT pages, OpenVINO's
//! BitwiseXor-13), through the typed API.

use tensorbits::ops::{BitCount, BitNot, BitXor};
use tensorbits::{Broadcast, Options, Tensor};

#[test]
fn not_u8() {
    let x = Tensor::from_vec(vec![0u8, 128, 42, 255], &[2, 2]).unwrap();
    let y = BitNot::run(&x).unwrap();
    assert_eq!(y.shape(), &[2, 2]);
    assert_eq!(y.data(), &[255, 127, 213, 0]);
}

#[test]
fn xor_u8() {
    let a = Tensor::from_vec(vec![21u8, 120], &[2]).unwrap();
    let b = Tensor::from_vec(vec![3u8, 37], &[2]).unwrap();
    assert_eq!(BitXor::run(&a, &b).unwrap().data(), &[22, 93]);
}

#[test]
fn xor_bool() {
    let a = Tensor::from_vec(vec![true, false, false], &[3]).unwrap();
    let b = Tensor::from_vec(vec![true, true, false], &[3]).unwrap();
    assert_eq!(BitXor::run(&a, &b).unwrap().data(), &[false, true, false]);
}

#[test]
fn xor_numpy_broadcast_8_1_6_1_with_7_1_5() {
    let a = Tensor::from_vec((0..48u32).collect(), &[8, 1, 6, 1]).unwrap();
    let b = Tensor::from_vec((0..35u32).map(|v| v * 1000).collect(), &[7, 1, 5]).unwrap();
    let y = BitXor::run_with(&Options::new().broadcast(Broadcast::Numpy), &a, &b).unwrap();
    assert_eq!(y.shape(), &[8, 7, 6, 5]);
    for i in 0..8 {
        for j in 0..7 {
            for k in 0..6 {
                for l in 0..5 {
                    let want = a.data()[i * 6 + k] ^ b.data()[j * 5 + l];
                    assert_eq!(
                        y.data()[((i * 7 + j) * 6 + k) * 5 + l],
                        want,
                        "at [{i},{j},{k},{l}]"
                    );
                }
            }
        }
    }
}

#[test]
fn bit_count_u32() {
    let x = Tensor::from_vec(vec![0u32, 123, 456, 789], &[2, 2]).unwrap();
    // No annotation: `run` gives the first declared output type, u8.
    let y = BitCount::run(&x).unwrap();
    assert_eq!(y.shape(), &[2, 2]);
    assert_eq!(y.data(), &[0u8, 6, 4, 5]);
    let y32 = BitCount::run_with(&Options::new().output::<u32>(), &x).unwrap();
    let _: &Tensor<u32> = &y32;
    assert_eq!(y32.data(), &[0, 6, 4, 5]);
}

#[test]
fn the_default_broadcast_of_xor_is_numpy() {
    let a = Tensor::from_vec(vec![1u8, 2, 3, 4], &[2, 2]).unwrap();
    let b = Tensor::scalar(0xf0u8);
    assert_eq!(
        BitXor::run(&a, &b).unwrap().data(),
        &[0xf1, 0xf2, 0xf3, 0xf4]
    );
}
