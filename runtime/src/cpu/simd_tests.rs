//! The dispatchers of `simd.rs` at every instruction set this CPU runs, against plain loops.

use crate::cpu::strategy::Level;
use crate::element::IntWord;

/// `pack16` packs whole groups of eight codes of 16 bytes as the wide tile reads them (block
/// `g`'s word `w` of code `c` at `buf[g * 16 + w * 8 + c]`), as many as `rows` and `buf` both
/// hold, and writes nothing past them.
#[test]
fn pack16_packs_whole_groups_as_the_tile_reads_them() {
    let rows: Vec<u8> = (0..16 * 43).map(|i| (i * 37 + 11) as u8).collect();
    let word = |c: usize, w: usize| {
        let at = c * 16 + w * 8;
        u64::from_le_bytes(rows[at..at + 8].try_into().unwrap())
    };
    type Pack = fn(&[u8], &mut [u64]) -> usize;
    let mut versions: Vec<(&str, Pack)> =
        vec![("dispatched", |r, b| crate::cpu::simd::pack16(r, b))];
    if Level::current() != Level::Baseline {
        // SAFETY: the level's detection found AVX2 and POPCNT.
        versions.push(("avx2", |r, b| unsafe {
            crate::cpu::simd::pack16::avx2(r, b)
        }));
    }
    for (name, pack) in versions {
        for (codes, blocks) in [(43, 6), (43, 4), (40, 5), (7, 1), (0, 2)] {
            let mut buf = vec![u64::MAX; blocks * 16 + 3];
            let done = pack(&rows[..codes * 16], &mut buf[..blocks * 16]);
            // None on the baseline, which leaves every code to the scalar transpose.
            let vector = Level::current() != Level::Baseline;
            let can = if vector {
                (codes / 8).min(blocks) * 8
            } else {
                0
            };
            assert_eq!(done, can, "{name}, {codes} codes, {blocks} blocks");
            for (i, &v) in buf.iter().enumerate() {
                let (g, w, c) = (i / 16, i % 16 / 8, i % 8);
                let want = if i < done * 2 {
                    word(g * 8 + c, w)
                } else {
                    u64::MAX
                };
                assert_eq!(v, want, "{name}, {codes} codes, {blocks} blocks, word {i}");
            }
        }
    }
}

/// Every version of `scan_below` this CPU runs offers `f` the same values in the same order as
/// a plain loop that compares each value against the limit as it stands, for limits that `f`
/// lowers (as knn's selection does), keeps, or never reaches, over lengths around the groups
/// of sixteen.
#[test]
fn scan_below_matches_a_plain_loop() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // Small values, and values on both sides of the top bit, where a signed compare would
    // misorder them (the AVX2 scan tests the sign of each value minus a limit below 2^63,
    // which reads values 2^63 above it as below too); `u16`
    // distances too, against limits inside and past their range.
    let lens = [0, 1, 15, 16, 17, 31, 32, 33, 100, 1000];
    for (n, high) in lens
        .iter()
        .map(|&n| (n, false))
        .chain(lens.map(|n| (n, true)))
    {
        let (wide, short): (Vec<u64>, Vec<u16>) = (0..n)
            .map(|_| {
                let x = next();
                let top = |t: u64| match (high, x >> 62) {
                    (true, 0) => t - x % 40,
                    (true, 1) => (t / 2 + 1) + x % 40,
                    (true, 2) => t / 2 - x % 40,
                    _ => x % 40,
                };
                (top(u64::MAX), top(u64::from(u16::MAX)) as u16)
            })
            .unzip();
        let starts = [
            0,
            1,
            20,
            41,
            1 << 15,
            (1 << 15) + 20,
            65535 - 20,
            65535,
            65536,
        ];
        scan_matches(&wide, &starts, n, high);
        scan_matches(
            &wide,
            &[1 << 63, (1 << 63) + 20, u64::MAX - 20, u64::MAX],
            n,
            high,
        );
        scan_matches(&short, &starts, n, high);
        scan_matches(&short, &[u64::MAX], n, high);
    }
}

/// [`scan_below_matches_a_plain_loop`] for values `v` from each limit of `starts`.
fn scan_matches<D: crate::cpu::kernel::Dist>(v: &[D], starts: &[u64], n: usize, high: bool) {
    type Scan<D> = fn(&[D], u64, &mut dyn FnMut(usize, u64) -> u64);
    fn plain<D: crate::cpu::kernel::Dist>(
        v: &[D],
        mut limit: u64,
        f: &mut dyn FnMut(usize, u64) -> u64,
    ) {
        for (i, &d) in v.iter().enumerate() {
            if d.into() < limit {
                limit = f(i, d.into());
            }
        }
    }
    let mut versions: Vec<(&str, Scan<D>)> = vec![("baseline", |v, l, f| {
        crate::cpu::simd::scan_below::baseline(v, l, f)
    })];
    if Level::current() != Level::Baseline {
        // SAFETY: the level's detection found AVX2 and POPCNT.
        versions.push(("avx2", |v, l, f| unsafe {
            crate::cpu::simd::scan_below::avx2(v, l, f)
        }));
    }
    if Level::current() == Level::Avx512 {
        // SAFETY: the level's detection found every feature `scan_below::avx512` is compiled for.
        versions.push(("avx512", |v, l, f| unsafe {
            crate::cpu::simd::scan_below::avx512(v, l, f)
        }));
    }
    versions.push(("dispatched", |v, l, f| {
        crate::cpu::simd::scan_below(v, l, f)
    }));
    // The limit falls to each value taken (a best-so-far), stays, or falls by one.
    let rules: [fn(u64, u64) -> u64; 3] = [|_, d| d, |l, _| l, |l, _| l.saturating_sub(1)];
    for (r, rule) in rules.iter().enumerate() {
        for &start in starts {
            let run = |scan: Scan<D>| {
                let (mut seen, mut limit) = (Vec::new(), start);
                scan(v, start, &mut |i, d| {
                    seen.push((i, d));
                    limit = rule(limit, d);
                    limit
                });
                seen
            };
            let want = run(plain::<D>);
            for (name, scan) in &versions {
                assert_eq!(
                    run(*scan),
                    want,
                    "{name}, {n} values of {} bytes (high {high}), rule {r}, from {start}",
                    size_of::<D>()
                );
            }
        }
    }
}

/// Each version of the hot loop this CPU runs gives the baseline's result, for shifts and
/// counts (where the instruction sets differ most) at every width and tail length.
#[test]
fn every_instruction_set_gives_the_baseline_result() {
    fn words<W: IntWord>(seed: u64, n: usize, from: fn(u64) -> W) -> Vec<W> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                from(if x.is_multiple_of(3) { x % 70 } else { x })
            })
            .collect()
    }
    fn check<W: IntWord + PartialEq + std::fmt::Debug>(from: fn(u64) -> W) {
        let mixed = |[a, b]: [W; 2]| a.shl(b).xor(a.shr(b)).or(a.wrapping_shr(b).not());
        let count = |[a]: [W; 1]| a.count_ones();
        // Around the size below which the dispatch takes the AVX2 version too.
        let small = crate::cpu::tuning::SMALL_BYTES / size_of::<W>();
        for n in [
            0,
            1,
            7,
            31,
            64,
            65,
            129,
            1000,
            small,
            small + 1,
            3 * small + 5,
        ] {
            let (a, b) = (words(n as u64 + 1, n, from), words(n as u64 + 99, n, from));
            let (mut base, mut base_c) = (vec![W::lit(0); n], vec![0u32; n]);
            crate::cpu::kernel::compute(&[&a[..], &b[..]], &mut base, &mixed);
            crate::cpu::kernel::compute(&[&a[..]], &mut base_c, &count);
            let mut got = vec![W::lit(0); n];
            let mut got_c = vec![0u32; n];
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 was detected on this CPU.
                unsafe {
                    crate::cpu::simd::hot_loop::avx2(&[&a[..], &b[..]], &mut got, &mixed);
                    crate::cpu::simd::hot_loop::avx2(&[&a[..]], &mut got_c, &count);
                }
                assert_eq!((&got, &got_c), (&base, &base_c), "AVX2, {n} elements");
            }
            if Level::current() == Level::Avx512 {
                // SAFETY: the level's detection found every feature `hot_loop::avx512` is
                // compiled for.
                unsafe {
                    crate::cpu::simd::hot_loop::avx512(&[&a[..], &b[..]], &mut got, &mixed);
                    crate::cpu::simd::hot_loop::avx512(&[&a[..]], &mut got_c, &count);
                }
                assert_eq!((&got, &got_c), (&base, &base_c), "AVX-512, {n} elements");
            }
            crate::cpu::simd::compute(&[&a[..], &b[..]], &mut got, &mixed);
            assert_eq!(got, base, "dispatched, {n} elements");
            // Into a new vector: every version, and the dispatch.
            let lanes = [&a[..], &b[..]];
            assert_eq!(crate::cpu::kernel::compute_new(&lanes, n, &mixed), base);
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 was detected on this CPU.
                let v = unsafe { crate::cpu::simd::hot_loop_new::avx2(&lanes, n, &mixed) };
                assert_eq!(v.into_vec(), base, "AVX2 into a new vector, {n} elements");
            }
            if Level::current() == Level::Avx512 {
                // SAFETY: the level's detection found every feature `hot_loop_new::avx512` is
                // compiled for.
                let v = unsafe { crate::cpu::simd::hot_loop_new::avx512(&[&a[..]], n, &count) };
                assert_eq!(
                    v.into_vec(),
                    base_c,
                    "AVX-512 into a new vector, {n} elements"
                );
            }
            assert_eq!(crate::cpu::simd::compute_new(&[&a[..]], n, &count), base_c);
        }
    }
    check::<u8>(|v| v as u8);
    check::<i8>(|v| v as i8);
    check::<u16>(|v| v as u16);
    check::<i16>(|v| v as i16);
    check::<u32>(|v| v as u32);
    check::<i32>(|v| v as i32);
    check::<u64>(|v| v);
    check::<i64>(|v| v as i64);
}

/// Each version of the fused reduction loops gives the baseline's result, row by row and
/// column by column over one to four rows.
#[test]
fn every_instruction_set_folds_alike() {
    fn check<W: IntWord>(from: fn(u64) -> W) {
        let words = |seed: u64, n: usize| -> Vec<W> {
            let mut x = seed;
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    from(x)
                })
                .collect()
        };
        let count = |[a, b]: [W; 2]| a.xor(b).count_ones();
        let bits = |[a, b]: [W; 2]| a.and(b.not());
        for (outs, row) in [(1, 1), (3, 7), (5, 0), (64, 0), (2, 100), (77, 0)] {
            let n = outs * row.max(1);
            let rows: Vec<[Vec<W>; 2]> = (0..4)
                .map(|r| [words(r * 2 + 1, n), words(r * 2 + 2, n)])
                .collect();
            let groups: Vec<[&[W]; 2]> = rows.iter().map(|[a, b]| [&a[..], &b[..]]).collect();
            let used = if row == 0 { &groups[..] } else { &groups[..1] };
            for g in 1..=used.len() {
                let base = |f: &dyn Fn(&mut [u64])| {
                    let mut acc = vec![7u64; outs];
                    f(&mut acc);
                    acc
                };
                let c0 = base(&|acc| {
                    crate::cpu::simd::fold_count::baseline(&used[..g], acc, row, &count)
                });
                let x0 = base(&|acc| {
                    crate::cpu::simd::fold_bits::baseline::<W, 2, { crate::cpu::accum::FOLD_XOR }>(
                        &used[..g],
                        acc,
                        row,
                        &bits,
                    )
                });
                // The reference: element by element.
                let mut want_c = vec![7u64; outs];
                let mut want_x = vec![7u64; outs];
                for (o, (wc, wx)) in want_c.iter_mut().zip(&mut want_x).enumerate() {
                    for gr in &used[..g] {
                        let idx: Vec<usize> = match row {
                            0 => vec![o],
                            _ => (o * row..(o + 1) * row).collect(),
                        };
                        for i in idx {
                            *wc += u64::from(count([gr[0][i], gr[1][i]]));
                            *wx ^= bits([gr[0][i], gr[1][i]]).bits();
                        }
                    }
                }
                assert_eq!(
                    (&c0, &x0),
                    (&want_c, &want_x),
                    "baseline {outs} x {row}, {g}"
                );
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: AVX2 was detected on this CPU.
                    let c = base(&|acc| unsafe {
                        crate::cpu::simd::fold_count::avx2(&used[..g], acc, row, &count)
                    });
                    // SAFETY: AVX2 was detected on this CPU.
                    let x = base(&|acc| unsafe {
                        crate::cpu::simd::fold_bits::avx2::<W, 2, { crate::cpu::accum::FOLD_XOR }>(
                            &used[..g],
                            acc,
                            row,
                            &bits,
                        )
                    });
                    assert_eq!((&c, &x), (&want_c, &want_x), "AVX2 {outs} x {row}, {g}");
                }
                if Level::current() == Level::Avx512 {
                    // SAFETY: the level's detection found every feature these are compiled for.
                    let c = base(&|acc| unsafe {
                        crate::cpu::simd::fold_count::avx512(&used[..g], acc, row, &count)
                    });
                    // SAFETY: as above.
                    let x = base(&|acc| unsafe {
                        crate::cpu::simd::fold_bits::avx512::<W, 2, { crate::cpu::accum::FOLD_XOR }>(
                            &used[..g],
                            acc,
                            row,
                            &bits,
                        )
                    });
                    assert_eq!((&c, &x), (&want_c, &want_x), "AVX-512 {outs} x {row}, {g}");
                }
            }
        }
    }
    check::<u8>(|v| v as u8);
    check::<i16>(|v| v as i16);
    check::<u32>(|v| v as u32);
    check::<u64>(|v| v);
}

/// Every version of `rows_ones` this CPU runs counts each row's ones as a plain loop does: rows
/// of every size up to 300 bytes (the sizes of whole words with the word count a constant among
/// them), consecutive or apart, and writes no count past its rows.
#[test]
fn rows_ones_counts_each_row() {
    type Count = fn(&[u8], usize, usize, &mut [u64]);
    let mut versions: Vec<(&str, Count)> = vec![
        ("baseline", |r, s, b, o| {
            crate::cpu::simd::rows_ones::baseline(r, s, b, o)
        }),
        ("dispatched", |r, s, b, o| {
            crate::cpu::simd::rows_ones(r, s, b, o)
        }),
    ];
    if Level::current() != Level::Baseline {
        // SAFETY: the level's detection found AVX2 and POPCNT.
        versions.push(("avx2", |r, s, b, o| unsafe {
            crate::cpu::simd::rows_ones::avx2(r, s, b, o)
        }));
    }
    if Level::current() == Level::Avx512 {
        // SAFETY: the level's detection found every feature `rows_ones::avx512` is compiled for.
        versions.push(("avx512", |r, s, b, o| unsafe {
            crate::cpu::simd::rows_ones::avx512(r, s, b, o)
        }));
    }
    let data: Vec<u8> = (0..40_000u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
        .collect();
    for (name, count) in &versions {
        for bytes in 0..=300 {
            for stride in [bytes, bytes + 3] {
                let rows = (data.len() / stride.max(1)).min(37);
                let mut out = vec![u64::MAX; rows + 1];
                count(&data, stride, bytes, &mut out[..rows]);
                for (j, &got) in out[..rows].iter().enumerate() {
                    let row = &data[j * stride..j * stride + bytes];
                    let want: u64 = row.iter().map(|b| u64::from(b.count_ones())).sum();
                    assert_eq!(
                        got, want,
                        "{name}: row {j} of {bytes} bytes, stride {stride}"
                    );
                }
                assert_eq!(
                    out[rows],
                    u64::MAX,
                    "{name}: {bytes} bytes wrote past its rows"
                );
            }
        }
    }
}
