//! tensorbits on burn's tensors: the wgpu device (burn's own buffers, on lavapipe in CI) and the
//! ndarray device each against a brute force over the same integers, and against each other, for
//! the standard ops and a declared one; strided views and pooled buffers' offsets; errors.

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use tensorbits::bitwise_op;
use tensorbits_burn::TensorBits;

/// `a & !b`, declared by the user.
#[bitwise_op(
    name = "AND_NOT",
    inputs = [a, b],
    compute = a & !b,
    broadcast = [numpy],
    support(EXT = [u8, u16, u32, u64, i8, i16, i32, i64]),
)]
pub struct AndNot;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

// burn's ndarray backend is the CPU backend this crate runs tensorbits' CPU kernels for.
#[allow(deprecated)]
fn devices() -> Vec<(&'static str, Device)> {
    let mut v = vec![("ndarray", Device::ndarray())];
    match tensorbits_burn::wgpu_device() {
        Ok(d) => v.push(("wgpu", d)),
        Err(e) => {
            assert!(
                std::env::var("TENSORBITS_REQUIRE_GPU").as_deref() != Ok("1"),
                "TENSORBITS_REQUIRE_GPU=1 but no wgpu device for burn: {e}"
            );
        }
    }
    v
}

fn ints(t: &Tensor<2, Int>) -> Vec<i64> {
    let d = t.clone().into_data();
    match d.dtype() {
        DType::I32 => d
            .try_to_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(i64::from)
            .collect(),
        DType::U32 => d
            .try_to_vec::<u32>()
            .unwrap()
            .into_iter()
            .map(i64::from)
            .collect(),
        DType::I64 => d.try_to_vec::<i64>().unwrap(),
        DType::U8 => d
            .try_to_vec::<u8>()
            .unwrap()
            .into_iter()
            .map(i64::from)
            .collect(),
        other => panic!("unexpected dtype {other:?}"),
    }
}

fn codes(rng: &mut Rng, rows: usize, k: usize, device: &Device) -> (Vec<i32>, Tensor<2, Int>) {
    let v: Vec<i32> = (0..rows * k).map(|_| rng.next() as i32).collect();
    let t =
        Tensor::<2, Int>::from_data(TensorData::new(v.clone(), [rows, k]), (device, DType::I32));
    (v, t)
}

fn hamming(a: &[i32], b: &[i32]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i64::from((x ^ y).count_ones()))
        .sum()
}

#[test]
fn standard_ops_match_a_brute_force_on_every_device() {
    let (m, n, k) = (7, 300, 3);
    for (name, device) in devices() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (av, a) = codes(&mut rng, m, k, &device);
        let (bv, b) = codes(&mut rng, n, k, &device);
        let row = |v: &[i32], i: usize| v[i * k..(i + 1) * k].to_vec();
        let d = a.hamming_cdist(&b).unwrap();
        assert_eq!(d.dims(), [m, n], "{name}");
        assert_eq!(d.dtype(), DType::U32, "{name}");
        let want: Vec<i64> = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| hamming(&row(&av, i), &row(&bv, j)))
            .collect();
        assert_eq!(ints(&d), want, "hamming_cdist on {name}");
        // knn: the 5 smallest distances of each row, ties by the lower index.
        let (dist, idx) = a.knn(&b, 5).unwrap();
        assert_eq!(idx.dtype(), DType::I64, "{name}");
        let (dist, idx) = (ints(&dist), ints(&idx));
        for i in 0..m {
            let mut order: Vec<(i64, i64)> = (0..n).map(|j| (want[i * n + j], j as i64)).collect();
            order.sort();
            let got: Vec<(i64, i64)> = (0..5).map(|c| (dist[i * 5 + c], idx[i * 5 + c])).collect();
            assert_eq!(got, order[..5], "knn row {i} on {name}");
        }
        let dot = ints(&a.binary_dot(&b).unwrap());
        assert_eq!(
            dot,
            want.iter().map(|h| 96 - 2 * h).collect::<Vec<_>>(),
            "binary_dot on {name}"
        );
        let c = ints(&a.bitwise_count().unwrap());
        assert_eq!(
            c,
            av.iter()
                .map(|x| i64::from(x.count_ones()))
                .collect::<Vec<_>>(),
            "bitwise_count on {name}"
        );
        let s = a.bitwise_count_sum(1).unwrap();
        assert_eq!(s.dims(), [m, 1], "{name}");
        assert_eq!(
            ints(&s),
            (0..m)
                .map(|i| row(&av, i)
                    .iter()
                    .map(|x| i64::from(x.count_ones()))
                    .sum::<i64>())
                .collect::<Vec<_>>(),
            "bitwise_count_sum on {name}"
        );
        let x = a.bitwise_xor_reduce(0).unwrap();
        assert_eq!(x.dims(), [1, k], "{name}");
        assert_eq!(
            ints(&x),
            (0..k)
                .map(|c| i64::from((0..m).fold(0i32, |acc, i| acc ^ av[i * k + c])))
                .collect::<Vec<_>>(),
            "bitwise_xor_reduce on {name}"
        );
        // Element-wise, broadcast as burn does: [m, k] with [1, k].
        let b0 = b.clone().slice([0..1, 0..k]);
        let an = a.apply::<AndNot>(&[&b0]).unwrap();
        assert_eq!(
            ints(&an),
            av.iter()
                .enumerate()
                .map(|(e, x)| i64::from(x & !bv[e % k]))
                .collect::<Vec<_>>(),
            "AND_NOT (declared) on {name}"
        );
        let sh = a.bits_shl(&Tensor::<2, Int>::from_data(
            TensorData::new(vec![0i32, 5, 31], [1, 3]),
            (&device, DType::I32),
        ));
        assert_eq!(
            ints(&sh.unwrap()),
            av.iter()
                .enumerate()
                .map(|(e, x)| i64::from(x.wrapping_shl([0, 5, 31][e % 3])))
                .collect::<Vec<_>>(),
            "shift left on {name}"
        );
    }
}

/// Views burn makes without a copy (a transpose, a slice) are read where they lie, and the
/// results of both devices are the same bits.
#[test]
fn strided_views_and_both_devices_agree() {
    let devices = devices();
    let mut results: Vec<Vec<Vec<i64>>> = Vec::new();
    for (_, device) in &devices {
        let mut rng = Rng(77);
        let (_, a) = codes(&mut rng, 40, 16, device);
        let (_, b) = codes(&mut rng, 16, 90, device);
        // b^T: [90, 16] with strides [1, 90]; a slice of a's rows and columns.
        let bt = b.swap_dims(0, 1);
        let a2 = a.clone().slice([3..37, 0..16]);
        let d = a2.hamming_cdist(&bt).unwrap();
        let (dist, idx) = a2.knn(&bt, 10).unwrap();
        let x = a
            .clone()
            .slice([0..40, 2..9])
            .bits_xor(&a.slice([0..40, 5..12]))
            .unwrap();
        results.push(vec![ints(&d), ints(&dist), ints(&idx), ints(&x)]);
    }
    // Against the same calls on packed copies, on the first device.
    let device = &devices[0].1;
    let mut rng = Rng(77);
    let (av, _) = codes(&mut rng, 40, 16, device);
    let (bv, _) = codes(&mut rng, 16, 90, device);
    let at = |r: usize, c: usize| av[r * 16 + c];
    let want_d: Vec<i64> = (3..37)
        .flat_map(|r| (0..90).map(move |j| (r, j)))
        .map(|(r, j)| {
            (0..16)
                .map(|c| i64::from((at(r, c) ^ bv[c * 90 + j]).count_ones()))
                .sum()
        })
        .collect();
    let want_x: Vec<i64> = (0..40)
        .flat_map(|r| (0..7).map(move |c| (r, c)))
        .map(|(r, c)| i64::from(at(r, 2 + c) ^ at(r, 5 + c)))
        .collect();
    for (r, (name, _)) in results.iter().zip(&devices) {
        assert_eq!(r[0], want_d, "cdist of views on {name}");
        assert_eq!(r[3], want_x, "xor of overlapping slices on {name}");
        assert_eq!(r, &results[0], "{name} against {}", devices[0].0);
    }
}

#[test]
fn bad_calls_are_errors() {
    for (name, device) in devices() {
        let mut rng = Rng(5);
        let (_, a) = codes(&mut rng, 4, 3, &device);
        let (_, b) = codes(&mut rng, 5, 2, &device);
        let e = a.hamming_cdist(&b).unwrap_err().to_string();
        assert!(e.contains("HAMMING_CDIST"), "{name}: {e}");
        let e = a.knn(&a, 5).unwrap_err().to_string();
        assert!(
            e.contains("k = 5 is more than the 4 rows of BTensor"),
            "{name}: {e}"
        );
        let u = Tensor::<2, Int>::from_data(
            TensorData::new(vec![1u32; 12], [4, 3]),
            (&device, DType::U32),
        );
        let e = a.bits_xor(&u).unwrap_err().to_string();
        assert!(e.contains("data type"), "{name}: {e}");
    }
    let devices = devices();
    if devices.len() == 2 {
        let mut rng = Rng(6);
        let (_, a) = codes(&mut rng, 4, 3, &devices[0].1);
        let (_, b) = codes(&mut rng, 4, 3, &devices[1].1);
        let e = a.bits_and(&b).unwrap_err().to_string();
        assert!(e.contains("different devices"), "{e}");
    }
}

/// knn over 300,000 codes of 32 bytes (past the GPU's per-invocation limits: the database is cut
/// into tiles whose lists are merged), k = 50, and the all-pairs distances of 64 queries, on burn's
/// wgpu device against the ndarray device.
#[test]
fn knn_at_scale_is_the_same_on_both_devices() {
    let devices = devices();
    if devices.len() < 2 {
        return;
    }
    let mut results = Vec::new();
    for (_, device) in &devices {
        let mut rng = Rng(2024);
        let (_, db) = codes(&mut rng, 300_000, 8, device);
        let q = db.clone().slice([1000..1064, 0..8]);
        let (d, i) = q.knn(&db, 50).unwrap();
        let c = q
            .hamming_cdist(&db.clone().slice([0..20_000, 0..8]))
            .unwrap();
        results.push((ints(&d), ints(&i), ints(&c)));
    }
    assert!(results[0] == results[1], "wgpu and ndarray differ");
    // Each query is row 1000 + r of the database: distance 0 there first.
    let (d, i, _) = &results[0];
    for r in 0..64 {
        assert_eq!((d[r * 50], i[r * 50]), (0, 1000 + r as i64));
    }
}

/// The README's example, on every device.
#[test]
fn the_readme_example_gives_what_it_says() {
    for (name, device) in devices() {
        let codes = Tensor::<2, Int>::from_data(
            TensorData::new(vec![0b0000i32, 0b0111, 0b0001, 0b1111], [4, 1]),
            (&device, DType::I32),
        );
        let query = codes.clone().slice([3..4, 0..1]);
        let (distances, indices) = query.knn(&codes, 2).unwrap();
        assert_eq!(
            (ints(&distances), ints(&indices)),
            (vec![0, 1], vec![3, 1]),
            "{name}"
        );
        assert_eq!(distances.dtype(), DType::U32);
        let counts = codes.bitwise_count().unwrap();
        assert_eq!(ints(&counts), [0, 3, 1, 4], "{name}");
    }
}

/// binarize of float tensors (a view too) equals numpy's packbits of the comparison, worked out
/// here, on every device; the codes then search with knn.
#[test]
fn binarize_float_tensors_then_search() {
    use tensorbits::BitOrder;
    use tensorbits_burn::FloatBits;
    let (rows, d) = (50usize, 45usize);
    let mut rng = Rng(31);
    let x: Vec<f32> = (0..rows * d)
        .map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let packbits = |v: &[f32], cols: usize, order: BitOrder| -> Vec<i64> {
        let nb = cols.div_ceil(8);
        let mut out = vec![0i64; v.len() / cols * nb];
        for (r, row) in v.chunks(cols).enumerate() {
            for (j, &e) in row.iter().enumerate() {
                if e > 0.25 {
                    let bit = if order == BitOrder::Big {
                        7 - j % 8
                    } else {
                        j % 8
                    };
                    out[r * nb + j / 8] |= 1 << bit;
                }
            }
        }
        out
    };
    for (name, device) in devices() {
        let t = Tensor::<2>::from_data(TensorData::new(x.clone(), [rows, d]), &device);
        for order in [BitOrder::Big, BitOrder::Little] {
            let codes = t.binarize(0.25, order).unwrap();
            assert_eq!(codes.dims(), [rows, d.div_ceil(8)], "{name}");
            assert_eq!(codes.dtype(), DType::U8, "{name}");
            assert_eq!(ints(&codes), packbits(&x, d, order), "{name} {order:?}");
        }
        // A view of columns 3..40: burn packs it first on the GPU.
        let view = t.clone().slice([0..rows, 3..40]);
        let cols: Vec<f32> = x.chunks(d).flat_map(|r| r[3..40].to_vec()).collect();
        let codes = view.binarize(0.25, BitOrder::Big).unwrap();
        assert_eq!(
            ints(&codes),
            packbits(&cols, 37, BitOrder::Big),
            "{name} view"
        );
        // (burn's own kernels cannot slice u8 tensors on WGSL: the whole codes are the queries.)
        let (dist, idx) = codes.knn(&codes, 1).unwrap();
        assert_eq!(ints(&dist), vec![0; rows], "{name}");
        assert_eq!(ints(&idx), (0..rows as i64).collect::<Vec<_>>(), "{name}");
    }
}
