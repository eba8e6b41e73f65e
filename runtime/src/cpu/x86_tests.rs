//! The x86_64 kernels against each other and the scalar ones: every stream, block and scan at every
//! instruction set this CPU has, and the portable streams.

#![allow(
    unsafe_code,
    reason = "tests of x86_64 kernels; each use states its safety"
)]

use super::avx512_stream::*;
use super::strategy::Level;
use super::x86::*;
use crate::element::{Lanes, WideExpr};
use crate::op::{PairOut, PairTask, ReduceOp};

impl<const VPOPCNT: bool> Avx512<VPOPCNT> {
    /// The token, where the CPU has the features it stands for.
    pub(super) fn detect() -> Option<Self> {
        let base = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw");
        let count = std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("avx512bitalg");
        // SAFETY: the features were detected.
        (base && (count || !VPOPCNT)).then(|| unsafe { Self::new_unchecked() })
    }
}

impl Avx2 {
    /// The token, where the CPU has AVX2 and POPCNT.
    pub(super) fn detect() -> Option<Self> {
        let has = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt");
        // SAFETY: the features were detected.
        has.then(|| unsafe { Self::new_unchecked() })
    }
}

/// The tests' expressions: `Xnor` counts the padding too, which the kernels take off; `Mixed`
/// has every operator.
macro_rules! exprs {
    ($($name:ident = |$x:ident| $e:expr;)*) => {$(
        struct $name;
        impl WideExpr for $name {
            fn wide<L: Lanes>($x: [L; 2]) -> L {
                $e
            }
        }
    )*};
}
exprs! {
    Xor = |x| x[0].xor(x[1]);
    Xnor = |x| x[0].xor(x[1]).not();
    And = |x| x[0].and(x[1]);
    Mixed = |x| x[0].xor(x[1]).not().or(x[0].and(x[1].not()));
}

/// `check::<E>(name, args...)` for each of the tests' expressions.
macro_rules! each_expr {
    ($check:ident($($arg:expr),*)) => {
        $check::<Xor>("XOR" $(, $arg)*);
        $check::<Xnor>("XNOR" $(, $arg)*);
        $check::<And>("AND" $(, $arg)*);
        $check::<Mixed>("MIXED" $(, $arg)*);
    };
}

/// A xorshift generator from `seed`: the tests' data, the same on every run.
fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// `m` rows of `a` against `n` codes of `bytes` bytes in consecutive rows of `b`, as the
/// streams take them.
fn consecutive<'t>(a: &'t [u8], m: usize, b: &'t [u8], n: usize, bytes: usize) -> PairTask<'t> {
    PairTask {
        a,
        a_rows: m,
        a_stride: bytes,
        b,
        b_rows: n,
        b_stride: bytes,
        elems: bytes,
        elem_size: 1,
        packed: None,
        wide_words: bytes.div_ceil(8),
        op: ReduceOp::Sum,
        identity: 0,
    }
}

/// The word-by-word tile's counts of `task` (`n` codes of `b`), one `u64` per pair.
fn tile_counts<E: WideExpr>(task: &PairTask<'_>, n: usize) -> Vec<u64> {
    let mut want = vec![0u64; task.a_rows * n];
    super::tiles::pair_words_body::<E, _>(
        super::tiles::Scalar,
        task,
        &mut PairOut::tile(&mut want, n),
    );
    want
}

/// Rows of `ww` words as the AVX2 blocks read them: each row's low nibbles, then its high ones,
/// each word four times over.
fn nibbles(rows: &[u64], ww: usize) -> Vec<u64> {
    use super::tiles::NIBBLE;
    rows.chunks_exact(ww)
        .flat_map(|row| {
            let lo = row.iter().map(|&w| w & NIBBLE);
            lo.chain(row.iter().map(|&w| (w >> 4) & NIBBLE))
                .flat_map(|x| [x; 4])
        })
        .collect()
}

/// Each instruction set's register blocks of the wide pair tile give the scalar blocks'
/// counts, for expressions with every operator and for every unrolled and general width.
#[test]
fn every_instruction_set_counts_blocks_alike() {
    use super::tiles::{Block, RB, Scalar};
    fn check<E: WideExpr>() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        for ww in [1usize, 2, 3, 4, 5, 6, 7, 8, 16, 40] {
            let aw: Vec<u64> = (0..RB * ww).map(|_| next()).collect();
            let pb: Vec<u64> = (0..ww * 8).map(|_| next()).collect();
            let mut want = [[0u64; 8]; RB];
            Scalar.block_any::<E, RB>(&aw, &pb, ww, &mut want);
            // The scalar blocks against a plain count.
            for (r, row) in want.iter().enumerate() {
                for (c, &v) in row.iter().enumerate() {
                    let n: u64 = (0..ww)
                        .map(|w| u64::from(E::wide([aw[r * ww + w], pb[w * 8 + c]]).count_ones()))
                        .sum();
                    assert_eq!(v, n, "scalar, {ww} words");
                }
            }
            let mut got = [[7u64; 8]; RB];
            if std::arch::is_x86_feature_detected!("avx2") {
                let nibbles = nibbles(&aw, ww);
                Avx2::detect()
                    .expect("AVX2 was detected")
                    .block_any::<E, RB>(&nibbles, &pb, ww, &mut got);
                assert_eq!(got, want, "AVX2, {ww} words");
                if ww == 4 {
                    Avx2::detect()
                        .expect("AVX2 was detected")
                        .block::<E, 4, RB>(&nibbles, &pb, &mut got);
                    assert_eq!(got, want, "AVX2 unrolled, {ww} words");
                }
                for r in 0..RB {
                    let mut one = [[7u64; 8]; 1];
                    let row = &nibbles[r * 8 * ww..(r + 1) * 8 * ww];
                    Avx2::detect()
                        .expect("AVX2 was detected")
                        .block_any::<E, 1>(row, &pb, ww, &mut one);
                    assert_eq!(one[0], want[r], "AVX2 one row, {ww} words");
                }
            }
            if Level::current() == Level::Avx512 {
                Avx512::<true>::detect()
                    .expect("AVX-512 was detected")
                    .block_any::<E, RB>(&aw, &pb, ww, &mut got);
                // One row at a time, as for the last rows of `a`.
                for r in 0..RB {
                    let mut one = [[7u64; 8]; 1];
                    Avx512::<true>::detect()
                        .expect("AVX-512 was detected")
                        .block_any::<E, 1>(&aw[r * ww..(r + 1) * ww], &pb, ww, &mut one);
                    assert_eq!(one[0], want[r], "AVX-512 one row, {ww} words");
                }
                assert_eq!(got, want, "AVX-512, {ww} words");
            }
        }
    }
    check::<Xor>();
    check::<Mixed>();
}

/// The AVX2 blocks write their counts into an output of each element size as the scalar
/// blocks do, for a block of eight rows, of four and of one, and write nothing else.
#[test]
fn x86_blocks_write_every_output_type_as_scalar_blocks_do() {
    use super::tiles::{Block, Scalar};
    if !std::arch::is_x86_feature_detected!("avx2") {
        return;
    }
    fn check<const WW: usize, const R: usize, const ES: usize>(next: &mut impl FnMut() -> u64) {
        let blocks = 3;
        let aw: Vec<u64> = (0..R * WW).map(|_| next()).collect();
        let packed: Vec<u64> = (0..blocks * WW * 8).map(|_| next()).collect();
        let nibbles = nibbles(&aw, WW);
        // Rows a stride apart with bytes between them, and bytes past the last.
        let stride = blocks * 8 * ES + 5;
        let mut want = vec![0xA5u8; R * stride + 7];
        Scalar.blocks_out::<Mixed, WW, R>(ES, &aw, &packed, blocks, &mut want, stride);
        let mut got = vec![0xA5u8; R * stride + 7];
        Avx2::detect()
            .expect("AVX2 was detected")
            .blocks_out::<Mixed, WW, R>(ES, &nibbles, &packed, blocks, &mut got, stride);
        assert_eq!(got, want, "{WW} words, {R} rows, {ES}-byte elements");
        // AVX-512's blocks (whole words, two blocks a store and the third alone).
        if let Some(isa) = Avx512::<true>::detect() {
            let mut got = vec![0xA5u8; R * stride + 7];
            isa.blocks_out::<Mixed, WW, R>(ES, &aw, &packed, blocks, &mut got, stride);
            assert_eq!(
                got, want,
                "AVX-512: {WW} words, {R} rows, {ES}-byte elements"
            );
        }
    }
    let mut next = xorshift(0x2545_F491_4F6C_DD1D);
    check::<1, 8, 1>(&mut next);
    check::<1, 8, 2>(&mut next);
    check::<1, 8, 4>(&mut next);
    check::<1, 8, 8>(&mut next);
    check::<2, 8, 1>(&mut next);
    check::<2, 8, 4>(&mut next);
    check::<2, 8, 2>(&mut next);
    check::<2, 4, 1>(&mut next);
    check::<2, 1, 4>(&mut next);
    check::<3, 4, 4>(&mut next);
    check::<2, 8, 8>(&mut next);
    check::<5, 1, 8>(&mut next);
    // Counts past the output's type (up to 512 bits), narrowed by truncation as the scalar
    // blocks narrow them.
    check::<8, 8, 1>(&mut next);
    check::<8, 4, 2>(&mut next);
}

/// The AVX2 word tile's `popcnt` ([`WordCount`] for `Avx2`) counts as `count_ones` does,
/// on words with the top bit, no bit and every bit set (the word tile counting by it:
/// `word_tile_counts_every_width_as_bytes_do`).
#[test]
fn avx2_popcnt_counts_as_count_ones_does() {
    use super::tiles::WordCount;
    if !(std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt"))
    {
        return;
    }
    let mut next = xorshift(0x5DEE_CE66_D1CE_4E5B);
    for x in [
        0,
        1,
        u64::MAX,
        1 << 63,
        (1 << 63) | 1,
        0x5555_5555_5555_5555,
    ]
    .into_iter()
    .chain((0..1000).map(|_| next()))
    {
        assert_eq!(
            Avx2::detect().expect("AVX2 was detected").count(x),
            u64::from(x.count_ones()),
            "{x:#x}"
        );
    }
}

/// The word tile, with the compiler's count and (where the CPU has it) the AVX2 `popcnt`
/// count, gives every pair the count of its bytes' bits one byte at a time, for every code
/// width from 1 to 72 bytes and some longer ones, back to back (whose part-words are read as
/// the eight bytes that end a code) and with a gap between rows, past the tile's run of 64
/// results, for an expression that counts padding and one that does not.
#[test]
fn word_tile_counts_every_width_as_bytes_do() {
    use super::tiles::{Scalar, pair_words_body};
    fn check<E: WideExpr>(name: &str) {
        let mut next = xorshift(0x0DDB_A11C_0FFE_E123);
        let avx2 = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt");
        for bytes in (1..=72).chain([96, 100, 128, 129, 200, 256, 264]) {
            for (m, n, gap) in [
                (1usize, 1, 0usize),
                (2, 67, 0),
                (3, 130, 0),
                (2, 67, 3),
                (2, 67, 5),
            ] {
                let stride = bytes + gap;
                let a: Vec<u8> = (0..m * stride).map(|_| next() as u8).collect();
                let b: Vec<u8> = (0..n * stride).map(|_| next() as u8).collect();
                let mut task = consecutive(&a, m, &b, n, bytes);
                (task.a_stride, task.b_stride) = (stride, stride);
                let want: Vec<u64> = (0..m * n)
                    .map(|p| {
                        let (ar, br) = (&a[p / n * stride..], &b[p % n * stride..]);
                        (0..bytes)
                            .map(|x| {
                                let e = E::wide([u64::from(ar[x]), u64::from(br[x])]);
                                u64::from((e & 0xff).count_ones())
                            })
                            .sum()
                    })
                    .collect();
                let mut got = vec![7u64; m * n];
                pair_words_body::<E, _>(Scalar, &task, &mut PairOut::tile(&mut got, n));
                assert_eq!(
                    got, want,
                    "{name}, {m}x{n} codes of {bytes} bytes, gap {gap}"
                );
                if avx2 {
                    got.fill(7);
                    pair_words_body::<E, _>(
                        Avx2::detect().expect("AVX2 was detected"),
                        &task,
                        &mut PairOut::tile(&mut got, n),
                    );
                    assert_eq!(got, want, "{name} (popcnt), {m}x{n}x{bytes}, gap {gap}");
                }
            }
        }
    }
    check::<Xor>("XOR");
    check::<Mixed>("mixed");
}

/// The streaming kernels give the word-by-word tile's counts for every code size they take
/// (whole words; four bytes; under four bytes and five to seven, widened to lanes; multiples
/// of four widened to a power of two; other sizes in windows of two or four words, or one
/// per register), every
/// expression (XNOR counts the padding, which is taken off), one to three rows of `a`, and
/// database sizes around the eight codes of a register; each output element is written once.
#[test]
fn every_stream_gives_the_word_tile_counts() {
    fn check<E: WideExpr>(name: &str, vpopcnt: bool) {
        let sizes: Vec<usize> = (4..=64)
            .step_by(4)
            .chain([128, 192, 256])
            .chain([9, 10, 11, 13, 14, 15, 17, 18, 22, 25, 30, 31, 33, 47, 63])
            .chain([65, 96, 100, 127, 129, 200, 255])
            .chain([1, 2, 3, 5, 6, 7])
            .chain([257, 300, 320, 511, 520, 1000, 1024])
            .collect();
        let name = format!("{name}, VPOPCNTDQ {vpopcnt}");
        stream_takes::<E>(&name, 0x2545_F491_4F6C_DD1D, &sizes, &[], |task, out| {
            avx512_stream::<E>(vpopcnt, task, out)
        });
    }
    for vpopcnt in avx512_forms() {
        each_expr!(check(vpopcnt));
    }
}

/// Runs `stream` into outputs of 8, 4, 2 and 1 bytes (those that fit `bytes`' counts, as the
/// validator chooses them) at unaligned offsets with guards on both sides, and checks that each
/// holds `want` in every element and that nothing outside was written. `false` where the stream
/// took none of them (and wrote nothing).
fn every_output_size(
    want: &[u64],
    bytes: usize,
    m: usize,
    n: usize,
    what: &str,
    mut stream: impl FnMut(&mut PairOut<'_, '_>) -> bool,
) -> bool {
    const GUARD: usize = 64;
    let mut taken = false;
    for (es, off) in [(8, 0), (8, 3), (4, 1), (2, 5), (1, 7)] {
        if es < 8 && (bytes * 8) >> (8 * es) != 0 {
            continue;
        }
        let len = m * n * es;
        let mut buf = vec![0xA5u8; len + 2 * GUARD + off];
        let mut out = PairOut {
            bytes: &mut buf[GUARD + off..GUARD + off + len],
            es,
            stride: n,
            rows: None,
            col: 0,
            non_temporal: false,
        };
        if !stream(&mut out) {
            assert!(
                buf.iter().all(|&x| x == 0xA5),
                "{what}, es {es}: written, not taken"
            );
            continue;
        }
        taken = true;
        let got: Vec<u64> = buf[GUARD + off..GUARD + off + len]
            .chunks_exact(es)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..es].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        assert_eq!(got, want, "{what}, es {es}");
        let outside = buf[..GUARD + off].iter().chain(&buf[GUARD + off + len..]);
        assert!(
            outside.into_iter().all(|&x| x == 0xA5),
            "{what}, es {es}: a byte written outside"
        );
    }
    taken
}

/// The forms of the AVX-512 streams this CPU runs: with VPOPCNTDQ (`true`) where the level is
/// `avx512`, and with F and BW alone (`false`, the nibble-lookup count) wherever F and BW are
/// present, AVX-512 CPUs included, so that a CPU with VPOPCNTDQ tests both.
fn avx512_forms() -> Vec<bool> {
    let full = Level::current() == Level::Avx512;
    let bw = std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw");
    [(full, true), (bw, false)]
        .into_iter()
        .filter_map(|(has, form)| has.then_some(form))
        .collect()
}

/// The AVX-512 stream in the form `vpopcnt` names (see [`avx512_forms`]).
fn avx512_stream<E: WideExpr>(
    vpopcnt: bool,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) -> bool {
    match vpopcnt {
        true => Avx512::<true>::detect()
            .expect("AVX-512 was detected")
            .stream::<E>(task, out),
        // SAFETY: `avx512_forms` offers this form only where AVX2, POPCNT, AVX-512F and
        // AVX-512BW were detected.
        false => unsafe { stream_bw::<E>(task, out) },
    }
}

/// `stream` gives the word tile's counts for codes of each of `sizes` bytes: one to three rows
/// of `a`, database sizes around the eight codes of a step, and outputs of 1, 2, 4 and 8 bytes
/// at unaligned offsets with guards on both sides, written in every element and nowhere else.
/// Codes of each of `left` bytes it leaves to the tiles, unwritten.
fn stream_takes<E: WideExpr>(
    name: &str,
    seed: u64,
    sizes: &[usize],
    left: &[usize],
    stream: impl Fn(&PairTask<'_>, &mut PairOut<'_, '_>) -> bool,
) {
    let mut next = xorshift(seed);
    for &bytes in sizes {
        for (m, n) in [
            (1, 0),
            (1, 1),
            (1, 7),
            (2, 8),
            (1, 9),
            (3, 63),
            (1, 64),
            (2, 201),
        ] {
            let a: Vec<u8> = (0..m * bytes + 3).map(|_| next() as u8).collect();
            let b: Vec<u8> = (0..n * bytes).map(|_| next() as u8).collect();
            let task = consecutive(&a, m, &b, n, bytes);
            let want = tile_counts::<E>(&task, n);
            let what = format!("{name}, {bytes} bytes, {m} x {n}");
            let streamed = every_output_size(&want, bytes, m, n, &what, |out| stream(&task, out));
            assert!(streamed, "{what}: not streamed");
        }
    }
    for &bytes in left {
        let (a, b) = (vec![0u8; 2 * bytes], vec![0u8; 9 * bytes]);
        let task = consecutive(&a, 2, &b, 9, bytes);
        let mut got = vec![u64::MAX; 18];
        let taken = stream(&task, &mut PairOut::tile(&mut got, 9));
        assert!(
            !taken && got.iter().all(|&x| x == u64::MAX),
            "{name}, {bytes} bytes"
        );
    }
}

/// The AVX2 streams give the word tile's counts ([`stream_takes`]): codes of 4, 8 to 16 bytes
/// and multiples of 16 from 32, every expression (XNOR counts what a narrow code or a masked
/// word leaves).
#[test]
fn avx2_streams_give_the_word_tile_counts() {
    if Level::current() == Level::Baseline {
        return;
    }
    fn check<E: WideExpr>(name: &str) {
        // Multiples of 16 bytes from 32: one, two, three and four registers a code, and
        // seventeen (a code's byte counts summed by `vpsadbw` every sixteen), each also with
        // a half register after them (48, 80, 144: the count of the half's high lanes, which
        // XNOR and MIXED would make nonzero, is masked off; 528: sixteen and a half).
        let sizes = [
            4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 32, 48, 64, 80, 96, 128, 144, 256, 528, 544,
        ];
        // Sizes the AVX2 streams do not take are left to the tiles, unwritten.
        let left = [1, 2, 3, 5, 7, 17, 20, 24, 40, 56, 88];
        let avx2 = Avx2::detect().expect("AVX2 was detected");
        stream_takes::<E>(name, 0xD1B5_4A32_D192_ED03, &sizes, &left, |task, out| {
            avx2.stream::<E>(task, out)
        });
        // With AVX-512 F and BW, 15 bytes stays in these windows; the sizes about it do not.
        assert!(!bw_streams(15));
        assert!([4, 8, 14, 16, 32, 48, 64].into_iter().all(bw_streams));
    }
    each_expr!(check());
}

/// The portable streams (any CPU) give the word tile's counts: codes of 8 and 16 bytes, and from
/// 32 bytes one to many registers with and without a part of one more (of any byte count, which
/// XNOR and MIXED would count past the code without the mask), every expression, database sizes
/// around the eight codes of a step, and every output size; other sizes are left unwritten.
#[test]
fn portable_streams_give_the_word_tile_counts() {
    use super::portable::{Portable, portable_streams};
    fn check<E: WideExpr>(name: &str) {
        let sizes = [
            8, 16, 32, 33, 40, 63, 64, 65, 96, 100, 128, 131, 256, 300, 1027,
        ];
        let left = [1, 4, 7, 9, 12, 15, 17, 24, 31];
        assert!(sizes.into_iter().all(portable_streams), "{name}");
        assert!(!left.into_iter().any(portable_streams), "{name}");
        stream_takes::<E>(name, 0x9E37_79B9_7F4A_7C15, &sizes, &left, |task, out| {
            Portable.stream::<E>(task, out)
        });
    }
    each_expr!(check());
}

/// The AVX2 stream of codes of a multiple of 16 bytes sums a code's byte counts in bytes for
/// at most sixteen registers: codes equal to the query under XNOR (every bit counts, eight a
/// byte) of 32 and more registers (1,040 bytes: 32 and a half), whose byte sums would pass
/// 255 without that bound, give every bit, and AND of all-ones codes alike.
#[test]
fn long_avx2_codes_count_every_bit() {
    if Level::current() == Level::Baseline {
        return;
    }
    for bytes in [512, 1024, 1040, 2048, 4096] {
        let n = 9;
        let a = vec![0xFFu8; bytes];
        let b = vec![0xFFu8; n * bytes];
        let task = consecutive(&a, 1, &b, n, bytes);
        fn streamed<E: WideExpr>(task: &PairTask<'_>, n: usize) -> Vec<u64> {
            let mut got = vec![0u64; n];
            let taken = Avx2::detect()
                .expect("AVX2 was detected")
                .stream::<E>(task, &mut PairOut::tile(&mut got, n));
            assert!(taken, "{} bytes not streamed", task.elems);
            got
        }
        for (name, got) in [
            ("XNOR", streamed::<Xnor>(&task, n)),
            ("AND", streamed::<And>(&task, n)),
        ] {
            assert_eq!(got, vec![bytes as u64 * 8; n], "{name}, {bytes} bytes");
        }
    }
}

/// Long rows align their stores: at every offset of the output from a cache line, for
/// outputs of 1, 2, 4 and 8 bytes, stored as usual and around the caches (non-temporal
/// stores, which fault where not aligned), the streams give the word tile's counts in every element,
/// with rows that end on a store, on eight codes, and past them (counted one by one), and
/// write nothing before or after the output.
#[test]
fn long_rows_store_aligned_at_every_offset() {
    let sizes = [1, 2, 3, 4, 7, 8, 10, 12, 16, 18, 31, 64, 100, 128, 300, 512];
    for vpopcnt in avx512_forms() {
        long_rows_store_aligned(&sizes, |task, out| {
            avx512_stream::<Xnor>(vpopcnt, task, out)
        });
    }
    // The AVX2 streams, which narrow by truncation too.
    if let Some(avx2) = Avx2::detect() {
        let sizes = [4, 8, 10, 15, 16, 32, 48, 64, 96, 128, 160, 512];
        long_rows_store_aligned(&sizes, |task, out| avx2.stream::<Xnor>(task, out));
    }
}

fn long_rows_store_aligned(
    sizes: &[usize],
    stream: impl Fn(&PairTask<'_>, &mut PairOut<'_, '_>) -> bool,
) {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    const GUARD: usize = 128;
    for &bytes in sizes {
        for n in [256, 264, 271, 272, 1000] {
            let m = 2;
            let a: Vec<u8> = (0..m * bytes).map(|_| next() as u8).collect();
            let b: Vec<u8> = (0..n * bytes).map(|_| next() as u8).collect();
            let task = consecutive(&a, m, &b, n, bytes);
            let want = tile_counts::<Xnor>(&task, n);
            for (es, non_temporal) in [1, 2, 4, 8]
                .into_iter()
                .flat_map(|e| [(e, false), (e, true)])
            {
                for off in (0..64).step_by(es) {
                    let len = m * n * es;
                    let mut buf = vec![0xA5u8; len + 2 * GUARD + 64];
                    let start = GUARD + (64 - buf.as_ptr() as usize % 64) % 64 + off;
                    let mut out = PairOut {
                        bytes: &mut buf[start..start + len],
                        es,
                        stride: n,
                        rows: None,
                        col: 0,
                        non_temporal,
                    };
                    assert!(stream(&task, &mut out), "{bytes} bytes not streamed");
                    let at = |i: usize| {
                        let mut w = [0u8; 8];
                        w[..es].copy_from_slice(&buf[start + i * es..start + (i + 1) * es]);
                        u64::from_le_bytes(w)
                    };
                    let mask = if es == 8 {
                        u64::MAX
                    } else {
                        (1 << (8 * es)) - 1
                    };
                    for (i, &w) in want.iter().enumerate() {
                        assert_eq!(
                            at(i),
                            w & mask,
                            "{bytes} bytes, n {n}, es {es}, +{off}, {non_temporal}"
                        );
                    }
                    assert!(
                        buf[..start]
                            .iter()
                            .chain(&buf[start + len..])
                            .all(|&x| x == 0xA5),
                        "a byte outside the output: {bytes} bytes, n {n}, es {es}, +{off}"
                    );
                }
            }
        }
    }
}
