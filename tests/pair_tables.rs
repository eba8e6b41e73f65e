//! Every function of two bits under `count_ones()`: the sixteen truth tables, each declared as an
//! op, summed pairwise in both bit orders with valid bits that are not a whole number of bytes,
//! for every code width, as all-pairs sums and as knn (smallest and largest first), on the CPU (the
//! runtime's kernels: XOR, XNOR, AND and OR tiles, the other tables from `|a & b|` and the rows'
//! counts) and the GPU, against a count bit by bit.

mod common;

use common::{Rng, knn_reference};
use tensorbits::{BitOrder, Options, Target, Tensor, bitwise_op};

/// One op's sums and knn of `c`'s codes as `$t`.
macro_rules! typed_run {
    ($op:ident, $t:ty, $opts:expr, $c:expr) => {{
        let (opts, c): (&Options, &Codes) = ($opts, $c);
        let k = c.row_bytes / c.es;
        let a = Tensor::<$t>::from_vec(bytemuck::pod_collect_to_vec(&c.a), &[c.m, k]).unwrap();
        let b = Tensor::<$t>::from_vec(bytemuck::pod_collect_to_vec(&c.b), &[c.n, k]).unwrap();
        let sums = $op::run_on(&c.target, opts, &a, &b).unwrap();
        let kk = c.n.min(5);
        let knn = |largest: bool| -> Vec<(i64, i64)> {
            let (d, i) = $op::knn_on(&c.target, &opts.largest(largest), &a, &b, kk).unwrap();
            d.data()
                .iter()
                .zip(i.data())
                .map(|(&d, &i)| (i64::from(d), i))
                .collect()
        };
        let sums: Vec<i64> = sums.data().iter().map(|&x| i64::from(x)).collect();
        (sums, [knn(false), knn(true)])
    }};
}

/// Declares a pairwise sum of `compute` over `u8` to `u64` codes into `u32`, with its truth table,
/// and `every_table`, which hands each op's table and run to a check.
macro_rules! table_ops {
    ($($name:ident, $table:literal, $compute:expr;)*) => {
        $(
            #[bitwise_op(
                inputs = [a, b],
                compute = $compute,
                reduce = sum,
                pairwise,
                support(EXT = [u8, u16, u32, u64]),
                output = [u32],
            )]
            pub struct $name;
        )*

        fn every_table(check: &mut dyn FnMut(u8, &dyn Fn(&Options, &Codes) -> Results)) {
            $(
                check($table, &|opts, c| match c.es {
                    1 => typed_run!($name, u8, opts, c),
                    2 => typed_run!($name, u16, opts, c),
                    4 => typed_run!($name, u32, opts, c),
                    _ => typed_run!($name, u64, opts, c),
                });
            )*
        }
    };
}

table_ops! {
    Never, 0b0000, (a & !a & b).count_ones();
    Nor, 0b0001, (!(a | b)).count_ones();
    OnlyB, 0b0010, (!a & b).count_ones();
    NotA, 0b0011, (!a | (b & !b)).count_ones();
    OnlyA, 0b0100, (a & !b).count_ones();
    NotB, 0b0101, (!b | (a & !a)).count_ones();
    Xor, 0b0110, (a ^ b).count_ones();
    Nand, 0b0111, (!(a & b)).count_ones();
    And, 0b1000, (b & a).count_ones();
    Xnor, 0b1001, (!a ^ b).count_ones();
    B, 0b1010, (b | (a & !a)).count_ones();
    AImpliesB, 0b1011, (!a | b).count_ones();
    A, 0b1100, (a | (b & !b)).count_ones();
    BImpliesA, 0b1101, (a | !b).count_ones();
    Or, 0b1110, (a | b).count_ones();
    Always, 0b1111, (a | !a | b).count_ones();
}

/// `m` rows of `a` and `n` of `b`, `row_bytes` each, as one of the code types.
struct Codes {
    a: Vec<u8>,
    b: Vec<u8>,
    m: usize,
    n: usize,
    row_bytes: usize,
    es: usize,
    target: Target<'static>,
}

/// All-pairs sums, then knn's distances and indices smallest first and largest first.
type Results = (Vec<i64>, [Vec<(i64, i64)>; 2]);

/// The count of `table` over the first `bits` bits of each pair of rows, bit by bit.
fn reference(c: &Codes, bits: usize, order: BitOrder, table: u8) -> Vec<i64> {
    let bit = |row: &[u8], i: usize| u8::from(row[i / 8] & order.mask(i) != 0);
    let mut out = Vec::with_capacity(c.m * c.n);
    for i in 0..c.m {
        for j in 0..c.n {
            let (ra, rb) = (
                &c.a[i * c.row_bytes..][..c.row_bytes],
                &c.b[j * c.row_bytes..][..c.row_bytes],
            );
            let count = (0..bits)
                .filter(|&t| (table >> (2 * bit(ra, t) + bit(rb, t))) & 1 == 1)
                .count();
            out.push(count as i64);
        }
    }
    out
}

/// Fails at the first element where `got` and `want` differ, naming it.
fn same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: element {i} is {:?}, not {:?}", got[i], want[i]);
    }
}

#[test]
fn every_function_of_two_bits_counts_exactly() {
    let mut rng = Rng(61);
    let mut targets = vec![Target::Cpu];
    if let Some(g) = common::gpu::gpu() {
        targets.push(Target::Gpu(g));
    }
    let mut checked = 0;
    for target in targets {
        // Few rows (the streams), many (the packed tiles), knn's blocks and ranges of `b`, codes
        // shorter than a word, of whole words and of a part word.
        for &(m, n, row_bytes, bits) in &[
            (1, 300, 12, 91),
            (3, 40, 1, 7),
            (9, 33, 3, 17),
            (20, 700, 32, 250),
            (5, 2000, 8, 63),
            (70, 90, 24, 190),
            (2, 17, 40, 313),
            // Codes of no bytes: every sum is empty.
            (3, 9, 0, 0),
        ] {
            let mut fill = |rows: usize| -> Vec<u8> {
                (0..rows * row_bytes).map(|_| rng.next() as u8).collect()
            };
            let (a, b) = (fill(m), fill(n));
            for es in [1, 2, 4, 8] {
                if row_bytes % es != 0 || (row_bytes == 0 && es > 1) {
                    continue;
                }
                let codes = Codes {
                    a: a.clone(),
                    b: b.clone(),
                    m,
                    n,
                    row_bytes,
                    es,
                    target,
                };
                for order in [BitOrder::Big, BitOrder::Little] {
                    let opts = Options::new().bits(bits).bitorder(order);
                    every_table(&mut |table, run| {
                        let what = format!(
                            "table {table:04b} on {}, {m}x{n} rows of {row_bytes} bytes as \
                             {es}-byte elements, {bits} bits {order:?}",
                            target.describe()
                        );
                        let want = reference(&codes, bits, order, table);
                        let (sums, [near, far]) = run(&opts, &codes);
                        same(&sums, &want, &format!("sums: {what}"));
                        let k = n.min(5);
                        same(
                            &near,
                            &knn_reference(&want, n, k, false).concat(),
                            &format!("knn smallest: {what}"),
                        );
                        same(
                            &far,
                            &knn_reference(&want, n, k, true).concat(),
                            &format!("knn largest: {what}"),
                        );
                        checked += 1;
                    });
                }
            }
        }
    }
    assert!(checked >= 16 * 2 * 8, "{checked} cases");
}
