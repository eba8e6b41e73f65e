//! `NdOp` on ndarray views of any layout — sliced, stepped, transposed, broadcast and reversed —
//! against the typed API on packed copies of the same elements (itself checked against the
//! scalar reference in `reference.rs` and `reductions.rs`), and against ndarray's own operators.

use ndarray::{Array, ArrayD, ArrayView, ArrayViewD, Axis, IxDyn, Slice};
use proptest::prelude::*;
use tensorbits::{Error, NdOp, Options, Tensor, ops};

/// A packed tensor holding a view's elements in logical order.
fn packed<T: tensorbits::Element>(v: &ArrayViewD<'_, T>) -> Tensor<T> {
    Tensor::from_vec(v.iter().copied().collect(), v.shape()).unwrap()
}

fn same<T: tensorbits::Element>(got: &ArrayD<T>, want: &Tensor<T>) {
    assert_eq!(got.shape(), want.shape());
    let g: Vec<T> = got.iter().copied().collect();
    assert_eq!(&g[..], want.data());
}

/// One change of layout, applied to a view.
#[derive(Clone, Debug)]
enum Step {
    /// Every `step`-th element of an axis, from its end when negative.
    Slice(usize, isize),
    Reverse(usize),
    /// Swap two axes.
    Swap(usize, usize),
    /// A new leading axis of size 1.
    Broadcast,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            0..4usize,
            prop_oneof![Just(-2isize), Just(-1), Just(2), Just(3)]
        )
            .prop_map(|(a, s)| Step::Slice(a, s)),
        (0..4usize).prop_map(Step::Reverse),
        (0..4usize, 0..4usize).prop_map(|(a, b)| Step::Swap(a, b)),
        Just(Step::Broadcast),
    ]
}

fn apply<'a, T>(mut v: ArrayViewD<'a, T>, steps: &[Step]) -> ArrayViewD<'a, T> {
    for s in steps {
        let n = v.ndim();
        if n == 0 {
            break;
        }
        match *s {
            Step::Slice(a, st) => v.slice_axis_inplace(Axis(a % n), Slice::new(0, None, st)),
            Step::Reverse(a) => v.invert_axis(Axis(a % n)),
            Step::Swap(a, b) => v.swap_axes(a % n, b % n),
            // A new axis of size 1, which the other input's size then stretches.
            Step::Broadcast if n < 6 => v.insert_axis_inplace(Axis(0)),
            Step::Broadcast => {}
        }
    }
    v
}

fn base(shape: &[usize], seed: u32) -> ArrayD<u32> {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    Array::from_shape_fn(IxDyn(shape), |_| {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    })
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..6usize, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn element_wise_on_any_view(s in shape(), seed in any::<u32>(), sa in prop::collection::vec(step(), 0..4), sb in prop::collection::vec(step(), 0..4)) {
        let xa = base(&s, seed);
        let xb = base(&s, seed ^ 0x5555);
        let a = apply(xa.view(), &sa);
        // The second input: the same steps as the first, or its own (then broadcast from its last
        // axis when the shapes differ).
        let b0 = apply(xb.view(), &sa);
        let b1 = apply(xb.view(), &sb);
        let opts = Options::new();
        for b in [b0, b1] {
            let ta = packed(&a);
            let tb = packed(&b);
            match ops::BitXor::run_with(&opts.broadcast(tensorbits::Broadcast::Numpy), &ta, &tb) {
                Ok(want) => {
                    let got: ArrayD<u32> = ops::BitXor::run_nd(&opts, &[a.view(), b.view()]).unwrap();
                    same(&got, &want);
                    if a.shape() == b.shape() {
                        // ndarray's own operator agrees.
                        prop_assert_eq!(&got, &(&a ^ &b));
                        // Into a view of any layout, reversed axes included.
                        let mut full = ArrayD::<u32>::zeros(a.raw_dim());
                        {
                            let mut out = full.view_mut();
                            for ax in 0..out.ndim() {
                                if seed % (ax as u32 + 2) == 0 {
                                    out.invert_axis(Axis(ax));
                                }
                            }
                            ops::BitXor::run_nd_into(&opts, &[a.view(), b.view()], out).unwrap();
                        }
                        let mut written = full.view();
                        for ax in 0..written.ndim() {
                            if seed % (ax as u32 + 2) == 0 {
                                written.invert_axis(Axis(ax));
                            }
                        }
                        prop_assert_eq!(&written, &got.view());
                        // Into every other element of a larger array, from its end: the others
                        // are left as they were.
                        let flat: Vec<u32> = a.iter().copied().collect();
                        let n = flat.len();
                        let mut big = base(&[2 * n + 1], seed);
                        let before = big.clone();
                        let out = big.slice_mut(ndarray::s![1..;-2]).into_dyn();
                        ops::BitNot::run_nd_into(&opts, &[ArrayView::from(&flat[..])], out).unwrap();
                        for (i, (&g, &was)) in big.iter().zip(&before).enumerate() {
                            if i > 0 && i % 2 == 0 {
                                prop_assert_eq!(g, !flat[n - i / 2]);
                            } else {
                                prop_assert_eq!(g, was);
                            }
                        }
                    }
                }
                Err(e) => {
                    let got = ops::BitXor::run_nd::<u32, u32, _, _, _>(&opts, &[a.view(), b.view()]).unwrap_err();
                    prop_assert_eq!(got.to_string(), e.to_string());
                }
            }
        }
        let not: ArrayD<u32> = ops::BitNot::run_nd(&opts, &[a.view()]).unwrap();
        prop_assert_eq!(&not, &a.mapv(|v| !v));
        let counts: ArrayD<u8> = ops::BitCount::run_nd(&opts, &[a.view()]).unwrap();
        prop_assert_eq!(&counts, &a.mapv(|v| v.count_ones() as u8));
        let counts: ArrayD<u32> = ops::BitCount::run_nd(&opts, &[a.view()]).unwrap();
        prop_assert_eq!(&counts, &a.mapv(|v| v.count_ones()));
    }

    #[test]
    fn reductions_on_any_view(s in shape(), seed in any::<u32>(), steps in prop::collection::vec(step(), 0..4), axis in 0..4usize, keep in any::<bool>()) {
        let x = base(&s, seed);
        let v = apply(x.view(), &steps);
        let ax = (axis % v.ndim().max(1)) as i64;
        let opts = Options::new().axes([ax]).keepdims(keep);
        let want = ops::BitXorReduce::run_with(&opts, &packed(&v));
        let got: Result<ArrayD<u32>, Error> = ops::BitXorReduce::run_nd(&opts, &[v.view()]);
        match want {
            Ok(w) => same(&got.unwrap(), &w),
            Err(e) => prop_assert_eq!(got.unwrap_err().to_string(), e.to_string()),
        }
        let all = ops::BitCountSum::run_with(&Options::new(), &packed(&v)).unwrap();
        let got: ArrayD<u32> = ops::BitCountSum::run_nd(&Options::new(), &[v.view()]).unwrap();
        same(&got, &all);
        prop_assert_eq!(got.iter().next().copied(), Some(v.iter().map(|e| e.count_ones()).sum::<u32>()));
    }

    #[test]
    fn pairwise_and_knn_on_any_view(m in 0..7usize, n in 1..9usize, k in 1..5usize, seed in any::<u32>(), ra in any::<bool>(), rb in any::<bool>(), rk in any::<bool>(), t in any::<bool>()) {
        let xa = base(&[m, k], seed).mapv(|v| v & 0x0f0f);
        let xb = base(&[n, k], seed ^ 7).mapv(|v| v & 0x0f0f);
        let xbt = xb.t().to_owned();
        let mut a = xa.view();
        let mut b = if t { xbt.t() } else { xb.view() };
        if ra { a.invert_axis(Axis(0)); }
        if rb { b.invert_axis(Axis(0)); }
        if rk { a.invert_axis(Axis(1)); b.invert_axis(Axis(1)); }
        let (ta, tb) = (packed(&a.view().into_dyn()), packed(&b.view().into_dyn()));
        let opts = Options::new();
        let want = ops::HammingCdist::run_with(&opts, &ta, &tb).unwrap();
        let got: ArrayD<u32> = ops::HammingCdist::run_nd(&opts, &[a.view().into_dyn(), b.view().into_dyn()]).unwrap();
        same(&got, &want);
        let kk = n.min(3);
        let (wd, wi) = ops::HammingCdist::knn_with(&opts, &ta, &tb, kk).unwrap();
        let (gd, gi): (ArrayD<u32>, ArrayD<i64>) = ops::HammingCdist::knn_nd(&opts, a, b, kk).unwrap();
        same(&gd, &wd);
        same(&gi, &wi);
    }
}

#[test]
fn broadcast_views_with_stride_zero() {
    let x = base(&[3, 1, 4], 9);
    let y = base(&[5, 4], 3);
    let xb = x.broadcast(IxDyn(&[2, 3, 5, 4])).unwrap();
    let yr = y.slice(ndarray::s![..;-1, ..]).into_dyn();
    let got: ArrayD<u32> = ops::BitAnd::run_nd(&Options::new(), &[xb.view(), yr.view()]).unwrap();
    assert_eq!(got, &xb & &yr);
    let want = ops::BitAnd::run_with(&Options::new(), &packed(&xb), &packed(&yr)).unwrap();
    same(&got, &want);
}

#[test]
fn reversed_inputs_are_read_in_place() {
    // The result of a reversed input is itself reversed: a view of a packed array, not a copy.
    let x = Array::from_iter(0u16..1000);
    let got: ArrayD<u16> =
        ops::BitNot::run_nd(&Options::new(), &[x.slice(ndarray::s![..;-1])]).unwrap();
    assert_eq!(got.strides(), &[-1]);
    assert!(got.iter().copied().eq((0u16..1000).rev().map(|v| !v)));
}

#[test]
fn errors_are_the_library_s() {
    // Unsupported types are compile errors (ui/tests/ui/unsupported/ndarray_*.rs).
    let b = Array::from_elem(4, 1u8);
    let c = Array::from_elem(3, 1u8);
    let e =
        ops::BitAnd::run_nd::<u8, u8, _, _, _>(&Options::new(), &[b.view(), c.view()]).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let e = ops::BitAnd::run_nd::<u8, u8, _, _, _>(&Options::new(), &[b.view()]).unwrap_err();
    assert!(matches!(e, Error::InputCount { .. }), "{e}");
    let mut out = Array::from_elem(5, 0u8);
    let e = ops::BitNot::run_nd_into(&Options::new(), &[b.view()], out.view_mut()).unwrap_err();
    assert!(matches!(e, Error::OutputShape { .. }), "{e}");
    assert!(out.iter().all(|&v| v == 0), "nothing written on error");
    let e = ops::HammingCdist::knn_nd::<u8, u32, _, _, _, _>(
        &Options::new(),
        b.view().insert_axis(Axis(0)),
        b.view().insert_axis(Axis(0)),
        2,
    )
    .unwrap_err();
    assert!(matches!(e, Error::KTooLarge { .. }), "{e}");
}
