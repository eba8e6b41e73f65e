//! The typed methods' small-call path (packed tensors of one shape, run with the element function at
//! the type's word, no plan) and their large same-shape path, on every op and type, against the
//! scalar reference in `common`: every length around the vector widths, views over longer slices
//! (nothing past the view is read or written), `run`, `run_with`, `run_into` and `run_on`.

mod common;

use common::{Rng, eval, mask, read};
use tensorbits::levels::EXT;
use tensorbits::ops::{
    BitAnd, BitAndSupports, BitCount, BitCountOutput, BitCountSupports, BitNot, BitNotSupports,
    BitOr, BitOrSupports, BitShiftLeft, BitShiftLeftSupports, BitShiftRight, BitShiftRightSupports,
    BitXor, BitXorSupports,
};
use tensorbits::{
    Element, Options, Target, Tensor, TensorView, TensorViewMut, cpu::PARALLEL_BYTES, f16,
};

/// Lengths around every vector width and unroll factor, and 0.
const LENGTHS: [usize; 16] = [0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 257, 1000];

/// Random elements of a type from random bits; shift counts often in range.
trait Gen: Element {
    fn random(rng: &mut Rng) -> Self;
}

macro_rules! gen_bits {
    ($($t:ty => $from:expr;)*) => {$(
        impl Gen for $t {
            fn random(rng: &mut Rng) -> Self {
                let v = if rng.chance(30) { rng.next() % 80 } else { rng.next() };
                $from(v)
            }
        }
    )*};
}

gen_bits! {
    u8 => |v: u64| v as u8; u16 => |v: u64| v as u16; u32 => |v: u64| v as u32; u64 => |v: u64| v;
    i8 => |v: u64| v as i8; i16 => |v: u64| v as i16; i32 => |v: u64| v as i32; i64 => |v: u64| v as i64;
    f16 => |v: u64| f16::from_bits(v as u16); f32 => |v: u64| f32::from_bits(v as u32);
    f64 => f64::from_bits; bool => |v: u64| v & 1 == 1;
}

fn tensor<T: Gen>(rng: &mut Rng, shape: &[usize]) -> Tensor<T> {
    let n = shape.iter().product();
    Tensor::from_vec((0..n).map(|_| T::random(rng)).collect(), shape).unwrap()
}

fn bytes<T: Element>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Compares `got` (elements of `O`) with the reference of `op` on `inputs`, element by element.
fn check<T: Element, O: Element>(op: &str, what: &str, inputs: &[&[T]], got: &[O]) {
    let (dt, out_dt) = (T::DATA_TYPE, O::DATA_TYPE);
    for (i, g) in got.iter().enumerate() {
        let args: Vec<u64> = inputs.iter().map(|x| read(bytes(x), dt, i)).collect();
        let want = eval(op, dt, &args) & mask(out_dt);
        let g = read(bytes(std::slice::from_ref(g)), out_dt, 0);
        assert_eq!(
            g,
            want,
            "{op} {dt} {what}: element {i} of {}: inputs {args:x?}",
            got.len()
        );
    }
}

/// The shapes tried for `n` elements: flat, and the same count as a rank-3 tensor.
fn shapes(n: usize) -> Vec<Vec<usize>> {
    vec![vec![n], vec![1, n, 1]]
}

macro_rules! binary_op {
    ($test:ident, $large:ident, $op:ident, $sup:ident, [$($t:ty),*]) => {
        #[test]
        fn $test() {
            fn one<T: $sup<EXT> + Gen>(rng: &mut Rng, shape: &[usize]) {
                let name = <$op as tensorbits::Op>::INFO.name();
                let (a, b) = (tensor::<T>(rng, shape), tensor::<T>(rng, shape));
                let n = a.data().len();
                let ins = [a.data(), b.data()];
                check(name, "run", &ins, $op::run(&a, &b).unwrap().data());
                let opts = Options::at(EXT);
                check(name, "run_with", &ins, $op::run_with(&opts, &a, &b).unwrap().data());
                let on = $op::run_on(&Target::Cpu, &opts, &a, &b).unwrap();
                check(name, "run_on", &ins, on.data());
                // Views over longer slices: the tails are neither read nor written.
                let mut long_a = a.data().to_vec();
                long_a.push(T::random(rng));
                let mut out: Vec<T> = (0..n + 3).map(|_| T::random(rng)).collect();
                let tail = out[n..].to_vec();
                let va = TensorView::new(&long_a, shape).unwrap();
                let vo = TensorViewMut::new(&mut out, shape).unwrap();
                $op::run_into(&opts, va, &b, vo).unwrap();
                check(name, "run_into", &ins, &out[..n]);
                assert_eq!(bytes(&out[n..]), bytes(&tail), "{name}: run_into wrote past its view");
            }
            let mut rng = Rng(0x5eed ^ line!() as u64);
            $(
                for n in LENGTHS {
                    for shape in shapes(n) {
                        one::<$t>(&mut rng, &shape);
                    }
                }
            )*
        }

        /// Above the thread-pool threshold: the one-dimensional plan.
        #[test]
        fn $large() {
            let mut rng = Rng(0x1a26e ^ line!() as u64);
            $(
                let n = PARALLEL_BYTES / size_of::<$t>() + 5;
                let (a, b) = (tensor::<$t>(&mut rng, &[n]), tensor::<$t>(&mut rng, &[n]));
                let name = <$op as tensorbits::Op>::INFO.name();
                check(name, "large", &[a.data(), b.data()], $op::run(&a, &b).unwrap().data());
            )*
        }
    };
}

const _: () = assert!(size_of::<bool>() == 1);

binary_op!(
    xor_small,
    xor_large,
    BitXor,
    BitXorSupports,
    [u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bool]
);
binary_op!(
    and_small,
    and_large,
    BitAnd,
    BitAndSupports,
    [u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bool]
);
binary_op!(
    or_small,
    or_large,
    BitOr,
    BitOrSupports,
    [u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bool]
);
binary_op!(
    shl_small,
    shl_large,
    BitShiftLeft,
    BitShiftLeftSupports,
    [u8, u16, u32, u64, i8, i16, i32, i64]
);
binary_op!(
    shr_small,
    shr_large,
    BitShiftRight,
    BitShiftRightSupports,
    [u8, u16, u32, u64, i8, i16, i32, i64]
);

#[test]
fn not_small_and_large() {
    fn one<T: BitNotSupports<EXT> + Gen>(rng: &mut Rng, shape: &[usize]) {
        let a = tensor::<T>(rng, shape);
        let n = a.data().len();
        check(
            "ELEMENT_WISE_BIT_NOT",
            "run",
            &[a.data()],
            BitNot::run(&a).unwrap().data(),
        );
        let mut out: Vec<T> = (0..n + 2).map(|_| T::random(rng)).collect();
        let tail = out[n..].to_vec();
        let vo = TensorViewMut::new(&mut out, shape).unwrap();
        BitNot::run_into(&Options::new(), &a, vo).unwrap();
        check("ELEMENT_WISE_BIT_NOT", "run_into", &[a.data()], &out[..n]);
        assert_eq!(
            bytes(&out[n..]),
            bytes(&tail),
            "NOT: run_into wrote past its view"
        );
    }
    macro_rules! each {
        ($($t:ty),*) => {$(
            let mut rng = Rng(7);
            for n in LENGTHS {
                for shape in shapes(n) {
                    one::<$t>(&mut rng, &shape);
                }
            }
            one::<$t>(&mut rng, &[PARALLEL_BYTES / size_of::<$t>() + 5]);
        )*};
    }
    each!(u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64, bool);
}

#[test]
fn count_small_and_large() {
    fn one<T: BitCountSupports<EXT> + Gen, O: BitCountOutput>(rng: &mut Rng, shape: &[usize]) {
        let a = tensor::<T>(rng, shape);
        let n = a.data().len();
        let name = "ELEMENT_WISE_BIT_COUNT";
        let c: Tensor<O> = BitCount::run_with(&Options::new().output::<O>(), &a).unwrap();
        check(name, "run", &[a.data()], c.data());
        let mut out = vec![O::ZERO; n + 2];
        let vo = TensorViewMut::new(&mut out, shape).unwrap();
        BitCount::run_into(&Options::new(), &a, vo).unwrap();
        check(name, "run_into", &[a.data()], &out[..n]);
        assert_eq!(
            bytes(&out[n..]),
            bytes(&[O::ZERO, O::ZERO]),
            "COUNT: wrote past its view"
        );
    }
    macro_rules! each {
        ($($t:ty),*) => {$(
            let mut rng = Rng(11);
            for n in LENGTHS {
                for shape in shapes(n) {
                    one::<$t, u8>(&mut rng, &shape);
                    one::<$t, u32>(&mut rng, &shape);
                }
            }
            one::<$t, u8>(&mut rng, &[PARALLEL_BYTES + 5]);
        )*};
    }
    each!(u8, u16, u32, u64, i8, i16, i32, i64, f16, f32, f64);
}

/// The dynamic API's shortcut for packed inputs of one shape (`execute_packed`, which the Python
/// package's loops over small arrays take) gives `execute`'s bytes and errors for every standard
/// element-wise op and type, small and past the parallel threshold; calls of another kind are
/// left to `execute`, with nothing written.
#[test]
fn execute_packed_matches_execute() {
    use tensorbits::{Call, DataType, Input, TensorDesc, execute, execute_packed, ops::ALL};
    let mut rng = Rng(41);
    let call = Call::default();
    for op in ALL.iter().filter(|op| op.reduce().is_none()) {
        for &dt in op.all_types() {
            let out_dt = op.default_output(dt);
            for shape in [
                vec![1],
                vec![64],
                vec![3, 0, 5],
                vec![PARALLEL_BYTES / 2 + 3],
            ] {
                let (desc, _) = common::reduce::tensor(&mut rng, dt, &shape, false);
                let inputs: Vec<Vec<u8>> = (0..op.arity())
                    .map(|_| common::reduce::tensor(&mut rng, dt, &shape, false).1)
                    .collect();
                let od = TensorDesc::new(out_dt, &shape).unwrap();
                let mut want = vec![0u8; od.total_bytes()];
                let bound: Vec<Input<'_>> = inputs.iter().map(|b| Input::Bytes(&desc, b)).collect();
                execute(op, &call, &bound, &od, &mut want).unwrap();
                // Exactly the elements' bytes (a description's total size is rounded up).
                let count: usize = shape.iter().product();
                let srcs: Vec<&[u8]> = inputs.iter().map(|b| &b[..count * dt.size()]).collect();
                let mut got = vec![0xA5u8; count * out_dt.size()];
                let done = execute_packed(op, &call, &shape, dt, out_dt, &srcs, &mut got).unwrap();
                assert!(done, "{} {dt} {shape:?} was not taken", op.name());
                assert_eq!(got, want[..got.len()], "{} {dt} {shape:?}", op.name());
            }
        }
    }
    let xor = <BitXor as tensorbits::Op>::INFO;
    let (a, b) = (vec![1u8; 8], vec![2u8; 8]);
    let mut out = vec![7u8; 8];
    // A buffer of another length, and a reduction: not taken, nothing written.
    let short = execute_packed(
        xor,
        &call,
        &[8],
        DataType::U8,
        DataType::U8,
        &[&a, &b[..7]],
        &mut out,
    );
    assert!(!short.unwrap());
    let sum = tensorbits::ops::ALL
        .iter()
        .find(|op| op.reduce().is_some())
        .unwrap();
    let t = sum.all_types()[0];
    let taken = execute_packed(sum, &call, &[8], t, sum.default_output(t), &[&a], &mut out);
    assert!(!taken.unwrap());
    assert_eq!(out, vec![7u8; 8]);
    // A type the op lacks: execute's error.
    let count = <BitCount as tensorbits::Op>::INFO;
    let e = execute_packed(
        count,
        &call,
        &[8],
        DataType::Bool,
        DataType::U8,
        &[&a],
        &mut out,
    )
    .unwrap_err();
    assert!(e.to_string().contains("does not support bool"), "{e}");
    assert_eq!(out, vec![7u8; 8]);
}

/// The small-call path reads the options by reference: their level is the marker's, and options
/// that an element-wise op cannot take are errors there as on the general path, with the output
/// left as it was.
#[test]
fn small_calls_check_their_options() {
    use tensorbits::levels::{FL_3_0, FL_4_1};
    use tensorbits::{Error, FeatureLevel};
    assert_eq!(Options::new().call().level, FeatureLevel::EXT);
    assert_eq!(Options::at(FL_4_1).call().level, FeatureLevel::FL_4_1);
    let at3 = Options::at(FL_3_0).output::<u32>().keepdims(false);
    assert_eq!(at3.call().level, FeatureLevel::FL_3_0);
    assert_eq!(
        Options::<FL_3_0>::default().call().level,
        FeatureLevel::FL_3_0
    );

    let a = Tensor::from_vec((0..64u32).collect(), &[64]).unwrap();
    let b = Tensor::from_vec((100..164u32).collect(), &[64]).unwrap();
    let mut out = Tensor::from_vec(vec![7u32; 64], &[64]).unwrap();
    let bad = [
        Options::new().axes([0]),
        Options::new().keepdims(true),
        Options::new().bits(3),
    ];
    for o in &bad {
        let e = BitXor::run_into(o, &a, &b, &mut out).unwrap_err();
        assert!(matches!(e, Error::NotAReduction { .. }), "{e}");
        let e = BitXor::run_with(o, &a, &b).unwrap_err();
        assert!(matches!(e, Error::NotAReduction { .. }), "{e}");
        assert!(out.data().iter().all(|&v| v == 7));
    }
    BitXor::run_into(&Options::at(FL_4_1), &a, &b, &mut out).unwrap();
    let want: Vec<u32> = (0..64u32).map(|i| i ^ (i + 100)).collect();
    assert_eq!(out.data(), &want[..]);
}
