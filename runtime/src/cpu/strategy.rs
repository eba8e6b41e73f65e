//! How all-pairs and knn work is cut: pure functions of the call's shape and the threads at hand, so
//! that every choice can be read in one place and checked by a table of cases. The thresholds it
//! compares with are in `tuning.rs`.

use super::tuning::{
    AVX2_LONG_STREAM_ROWS, AVX2_PACKED_STREAM_ROWS, AVX2_REGISTER_HALF_STREAM_ROWS,
    AVX2_REGISTER_STREAM_ROWS, AVX2_WINDOW_STREAM_ROWS, BW_STREAM_ROWS, CALL_ROWS,
    KNN_PARALLEL_BYTES, KNN_SPLIT_BYTES, LONG_STREAM_ROWS, LOOKUP_PAIR_PARALLEL_BYTES, MB,
    MEDIUM_STREAM_ROWS, NB, PACKED_STREAM_ROWS, PAIR_PARALLEL_BYTES, PORTABLE_STREAM_BYTES,
    SHARE_OUTPUT_BYTES, SPLIT_SELECTION_BYTES, STREAM_ROWS, TILE_BYTES, WINDOW_STREAM_ROWS,
};

/// The level the CPU kernels run at, as the strategy sees it: the four levels `TENSORBITS_CPU`
/// names (the portable build is `Baseline`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "the portable build runs at `Baseline` alone")
)]
pub(crate) enum Level {
    Baseline,
    /// AVX2 and POPCNT.
    Avx2,
    /// AVX2 with AVX-512 F and BW, without VPOPCNTDQ.
    Avx512Bw,
    /// AVX-512 F, BW, VPOPCNTDQ and BITALG.
    Avx512,
}

/// Words per window of the AVX-512 streams' windows for codes of `bytes` bytes (2 or 4), or 8
/// where they fit no smaller window: the least `L` such that every code of a register of
/// `8 / L` windows lies in its window of `L * 8` bytes from the 32-bit piece it starts in.
pub(crate) fn window_words(bytes: usize) -> usize {
    [2, 4]
        .into_iter()
        .find(|&l| (0..8 / l).all(|w| (w * bytes) % 4 + bytes <= l * 8))
        .unwrap_or(8)
}

/// Whether the AVX2 streams hold codes of `bytes` bytes in whole registers and at most a half
/// more: multiples of 16 bytes from 32.
pub(crate) fn long_avx2_codes(bytes: usize) -> bool {
    bytes >= 32 && bytes.is_multiple_of(16)
}

/// Whether codes of `bytes` bytes in consecutive rows take the portable streams where no
/// instruction set above the baseline runs: whole registers of [`PORTABLE_STREAM_BYTES`] or more.
pub(crate) fn portable_codes(bytes: usize) -> bool {
    bytes >= PORTABLE_STREAM_BYTES && bytes.is_multiple_of(32)
}

/// Whether codes of `bytes` bytes take the AVX2 streams of [`long_avx2_codes`] at `level`: at
/// `avx2` alone (`avx512bw` streams them through the AVX-512 registers).
fn long_avx2(level: Level, bytes: usize) -> bool {
    level == Level::Avx2 && long_avx2_codes(bytes)
}

/// Rows of `a` below which codes of `bytes` bytes in consecutive rows stream through vector
/// registers rather than pack `b` for the wide tile, at `level` (where a stream takes them):
/// codes of 8 bytes or fewer always stream (one load, one count and a narrowing per eight codes
/// outrun the tile at any count of rows); longer codes for fewer rows the shorter they are.
pub(crate) fn stream_rows(level: Level, bytes: usize) -> usize {
    let avx2 = matches!(level, Level::Avx2 | Level::Avx512Bw);
    if avx2 && (9..=16).contains(&bytes) {
        return AVX2_WINDOW_STREAM_ROWS;
    }
    if long_avx2(level, bytes) {
        return match bytes {
            32 => AVX2_REGISTER_STREAM_ROWS,
            48 => AVX2_REGISTER_HALF_STREAM_ROWS,
            _ => AVX2_LONG_STREAM_ROWS,
        };
    }
    // One code per register (no window of two or four words holds it).
    let one_per_register = bytes < 64 && window_words(bytes) == 8;
    if level == Level::Avx512Bw && one_per_register {
        return BW_STREAM_ROWS;
    }
    if bytes <= 8 {
        usize::MAX
    } else if one_per_register && !bytes.is_multiple_of(4) {
        WINDOW_STREAM_ROWS
    } else if bytes <= 32 {
        STREAM_ROWS
    } else if bytes <= 64 {
        MEDIUM_STREAM_ROWS
    } else {
        LONG_STREAM_ROWS
    }
}

/// Rows of a task below which codes of `bytes` bytes stream even where `b` was packed for the
/// wide tile (a task of a call with enough rows to pack, or `b` packed as it lies): at most
/// [`PACKED_STREAM_ROWS`] for codes of more than 8 bytes, whose packing is then paid for.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "only the x86_64 streams take packed rows")
)]
pub(crate) fn packed_stream_rows(level: Level, bytes: usize) -> usize {
    if long_avx2(level, bytes) {
        return AVX2_PACKED_STREAM_ROWS;
    }
    match bytes <= 8 {
        true => stream_rows(level, bytes),
        false => stream_rows(level, bytes).min(PACKED_STREAM_ROWS),
    }
}

/// Whether a call's rows of `a`, not a kernel call's, decide if codes of `bytes` bytes stream:
/// the AVX2 streams of [`long_avx2_codes`], where knn's blocks of eight rows of a call of 100
/// queries or more had streamed and run behind the packed tile.
pub(crate) fn streams_by_call(level: Level, bytes: usize) -> bool {
    long_avx2(level, bytes)
}

/// One batch of all-pairs work, as the strategy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PairWork {
    /// Bytes per code (elements per code times the element size).
    pub code_bytes: usize,
    /// Rows of `a` and of `b`.
    pub rows_a: usize,
    pub rows_b: usize,
    /// Bytes per output element.
    pub out_bytes: usize,
    /// Bytes of codes the whole call reads (rows of `a` x rows of `b` x code bytes, all batches).
    pub work: usize,
    /// The output's rows are packed and follow each other (`[M, N]` in C order).
    pub packed_rows: bool,
    /// Each output row's elements are contiguous (its column stride is one element).
    pub contiguous_rows: bool,
    /// `b` is packed for the wide tile (whole 64-bit words, eight rows at a time).
    pub pack: bool,
    /// The wide tile counts by nibble lookup (AVX2 without VPOPCNTDQ): slower per pair.
    pub lookup: bool,
}

/// How a batch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PairPlan {
    /// Threads that share the work; 1 is the calling thread alone.
    pub threads: usize,
    /// Rows of `b` per tile.
    pub tile_rows: usize,
    /// Rows of `a` per kernel call.
    pub call_rows: usize,
    pub split: PairSplit,
}

/// How the rows are shared among the threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PairSplit {
    /// The calling thread computes every row.
    Alone,
    /// `tasks` ranges of `cols` rows of `b` each (the last may be shorter), each task writing its
    /// columns of every output row: for a handful of rows of `a` that do not share evenly.
    Columns { tasks: usize, cols: usize },
    /// Blocks of `rows` output rows, taken by the threads in turn; `pack_whole`: more blocks than
    /// threads, so `b` is packed once for them all (where it is small enough).
    Rows { rows: usize, pack_whole: bool },
}

/// The work from which all-pairs work may be split over threads; below, the pool need not be
/// asked its size.
pub(crate) fn pair_parallel_bytes(lookup: bool) -> usize {
    match lookup {
        true => LOOKUP_PAIR_PARALLEL_BYTES,
        false => PAIR_PARALLEL_BYTES,
    }
}

/// The plan for `w` with `threads` threads in the pool.
pub(crate) fn pair_plan(w: &PairWork, threads: usize) -> PairPlan {
    let enough = pair_parallel_bytes(w.pack && w.lookup);
    let threads = match w.work >= enough && threads > 1 {
        true => threads,
        false => 1,
    };
    // About TILE_BYTES of codes, whole packed blocks of eight rows.
    let tile_rows = (TILE_BYTES / w.code_bytes.max(1))
        .max(8)
        .next_multiple_of(8);
    // One pass of a kernel call's rows of `a` over `b` as it lies reuses no tile: all of `b` in
    // one call, with no per-tile cost.
    let tile_rows = match !w.pack && w.rows_a <= MB && w.contiguous_rows {
        true => w.rows_b.max(1),
        false => tile_rows,
    };
    // Contiguous output rows take many rows of `a` per call (the kernel blocks them itself).
    let call_rows = match w.contiguous_rows {
        true => CALL_ROWS,
        false => MB,
    };
    let (m, n) = (w.rows_a, w.rows_b);
    let few_rows = m < 8 * threads;
    // Rows that share evenly among the threads, within an eighth.
    let even_rows = m >= threads && 8 * (m.div_ceil(threads) * threads - m) <= m;
    let split = if threads == 1 || !w.packed_rows {
        PairSplit::Alone
    } else if few_rows && !even_rows {
        // Ranges of `b`: rows of `a` would leave threads idle, and neighbouring columns of one
        // output row written by two threads share cache lines.
        let tasks = (2 * threads).min(n.div_ceil(NB)).max(1);
        PairSplit::Columns {
            tasks,
            cols: n.div_ceil(tasks).next_multiple_of(NB),
        }
    } else {
        // One share a thread for a handful of rows or a small output (its lines stay with one
        // core), else a few blocks a thread, which balance better.
        let out = m.saturating_mul(n).saturating_mul(w.out_bytes);
        let rows = match few_rows || out <= SHARE_OUTPUT_BYTES {
            true => m.div_ceil(threads),
            false => m.div_ceil(4 * threads).next_multiple_of(MB),
        };
        PairSplit::Rows {
            rows,
            pack_whole: m.div_ceil(rows.max(1)) > threads,
        }
    };
    PairPlan {
        threads: match split {
            PairSplit::Alone => 1,
            _ => threads,
        },
        tile_rows,
        call_rows,
        split,
    }
}

/// One knn batch, as the strategy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KnnWork {
    /// Rows of `a` (queries) and of `b` (the database).
    pub rows_a: usize,
    pub rows_b: usize,
    /// Bytes of codes the call reads (rows of `a` x rows of `b` x code bytes).
    pub work: usize,
    /// The wide tile counts by nibble lookup (AVX2 without VPOPCNTDQ) over a packed `b`.
    pub lookup: bool,
    /// All of `b` packed fits the size packed once for every thread.
    pub b_fits_whole: bool,
    /// Bytes of the selections of all rows of `a` (their lists of candidates).
    pub selection_bytes: usize,
}

/// How a knn batch is shared among the threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KnnSplit {
    /// Blocks of `rows` rows of `a` against all of `b`, into their place (one block on one
    /// thread when `threads` is 1); `pack_whole`: `b` packed once for many blocks a thread.
    Rows { rows: usize, pack_whole: bool },
    /// `tasks` ranges of `cols` rows of `b`, each against every row of `a`, their lists merged.
    Columns { tasks: usize, cols: usize },
}

/// How a knn batch runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KnnPlan {
    /// Threads that share the work; 1 is the calling thread alone.
    pub threads: usize,
    pub split: KnnSplit,
}

/// The plan for `w` with `threads` threads in the pool (asked for only where `w.work` reaches
/// [`KNN_PARALLEL_BYTES`]: 1 otherwise).
pub(crate) fn knn_plan(w: &KnnWork, threads: usize) -> KnnPlan {
    let (m, n) = (w.rows_a, w.rows_b);
    let threads = match w.work >= KNN_PARALLEL_BYTES {
        true => threads.max(1),
        false => 1,
    };
    // Splitting `b` costs a merge of each row's lists; fewer rows than threads have nothing else
    // to split, and a lone query splits where all-pairs work does.
    let split_b = w.work >= KNN_SPLIT_BYTES || (m < threads && w.work >= PAIR_PARALLEL_BYTES);
    // Where the lookup tile counts, many rows against a `b` too large to pack whole split `b`
    // while their selections stay small: each block of rows would pack all of `b` again.
    let lookup_split =
        split_b && w.lookup && !w.b_fits_whole && w.selection_bytes <= SPLIT_SELECTION_BYTES;
    let many_rows = m >= 2 * threads * MB && !lookup_split;
    let row_split = many_rows || (!split_b && m >= threads);
    let parallel = threads > 1 && (row_split || split_b);
    let split = if !parallel || row_split {
        // Blocks of rows when there are many (at least eight tasks a thread, taken as the
        // threads free up, so that they end together), else one share per thread.
        let rows = match (parallel, many_rows) {
            (false, _) => m,
            (true, true) => MB * (m.div_ceil(MB) / (8 * threads)).max(1),
            (true, false) => m.div_ceil(threads),
        };
        KnnSplit::Rows {
            rows,
            pack_whole: parallel && many_rows,
        }
    } else {
        let tasks = (2 * threads).min(n.div_ceil(NB)).max(1);
        KnnSplit::Columns {
            tasks,
            cols: n.div_ceil(tasks).next_multiple_of(NB),
        }
    };
    KnnPlan {
        threads: if parallel { threads } else { 1 },
        split,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_portable_streams_take_long_codes_of_whole_registers() {
        let cases = [
            (8, false),
            (32, false),
            (96, false),
            (PORTABLE_STREAM_BYTES - 32, false),
            (PORTABLE_STREAM_BYTES, true),
            (PORTABLE_STREAM_BYTES + 8, false),
            (PORTABLE_STREAM_BYTES + 32, true),
            (256, true),
            (4096, true),
        ];
        for (bytes, want) in cases {
            assert_eq!(portable_codes(bytes), want, "{bytes} bytes");
        }
    }

    #[test]
    fn the_rows_below_which_each_code_size_streams() {
        use Level::*;
        const ALL: usize = usize::MAX;
        // Short names, so that each case keeps to one line.
        let (s, w, m, l, bw) = (
            STREAM_ROWS,
            WINDOW_STREAM_ROWS,
            MEDIUM_STREAM_ROWS,
            LONG_STREAM_ROWS,
            BW_STREAM_ROWS,
        );
        let (w2, r2, h2, l2) = (
            AVX2_WINDOW_STREAM_ROWS,
            AVX2_REGISTER_STREAM_ROWS,
            AVX2_REGISTER_HALF_STREAM_ROWS,
            AVX2_LONG_STREAM_ROWS,
        );
        // (code bytes, rows at baseline and avx512, at avx2, at avx512bw)
        let cases: &[(usize, usize, usize, usize)] = &[
            (1, ALL, ALL, ALL),
            (4, ALL, ALL, ALL),
            (8, ALL, ALL, ALL),
            (9, s, w2, w2),
            (16, s, w2, w2),
            (21, s, s, s),
            (31, w, w, bw),
            (32, s, r2, s),
            (40, m, m, bw),
            (48, m, h2, bw),
            (63, w, w, bw),
            (64, m, l2, m),
            (72, l, l, l),
            (80, l, l2, l),
            (256, l, l2, l),
        ];
        for &(bytes, plain, avx2, bw) in cases {
            for (level, want) in [
                (Baseline, plain),
                (Avx512, plain),
                (Avx2, avx2),
                (Avx512Bw, bw),
            ] {
                assert_eq!(
                    stream_rows(level, bytes),
                    want,
                    "{bytes} bytes at {level:?}"
                );
                let packed = match (long_avx2(level, bytes), bytes <= 8) {
                    (true, _) => AVX2_PACKED_STREAM_ROWS,
                    (false, true) => ALL,
                    (false, false) => want.min(PACKED_STREAM_ROWS),
                };
                assert_eq!(
                    packed_stream_rows(level, bytes),
                    packed,
                    "{bytes} bytes at {level:?}, packed"
                );
                assert_eq!(
                    streams_by_call(level, bytes),
                    level == Avx2 && bytes >= 32 && bytes % 16 == 0,
                    "{bytes} bytes at {level:?}"
                );
            }
        }
    }

    /// `m` queries against `n` codes of `bytes` bytes into a packed `u32` output, `b` packed,
    /// counted with VPOPCNTDQ.
    fn work(m: usize, n: usize, bytes: usize) -> PairWork {
        PairWork {
            code_bytes: bytes,
            rows_a: m,
            rows_b: n,
            out_bytes: 4,
            work: m * n * bytes,
            packed_rows: true,
            contiguous_rows: true,
            pack: true,
            lookup: false,
        }
    }

    #[test]
    fn the_plan_of_each_shape() {
        use PairSplit::*;
        let plan = |threads, tile_rows, call_rows, split| PairPlan {
            threads,
            tile_rows,
            call_rows,
            split,
        };
        let rows = |rows, pack_whole| Rows { rows, pack_whole };
        let ranges = Columns {
            tasks: 4,
            cols: 25_088,
        };
        let cases: &[(PairWork, usize, PairPlan)] = &[
            // Too little work for a second thread.
            (work(1, 1000, 8), 2, plan(1, 4096, 64, Alone)),
            // The same work where the lookup tile counts: enough for two.
            (
                PairWork {
                    lookup: true,
                    ..work(10, 1000, 8)
                },
                2,
                plan(2, 4096, 64, rows(5, false)),
            ),
            // One thread in the pool.
            (work(1000, 100_000, 32), 1, plan(1, 1024, 64, Alone)),
            // Three queries on two threads: ranges of `b`.
            (work(3, 100_000, 32), 2, plan(2, 1024, 64, ranges)),
            // Four queries share evenly: one share each.
            (work(4, 100_000, 32), 2, plan(2, 1024, 64, rows(2, false))),
            // A large output: blocks of whole kernel blocks, `b` packed once.
            (
                work(1000, 100_000, 32),
                2,
                plan(2, 1024, 64, rows(128, true)),
            ),
            // An output of at most 2 MiB: one share a thread.
            (work(100, 5000, 16), 2, plan(2, 2048, 64, rows(50, false))),
            // A strided output: rows of `a` eight at a time, into a tile, on this thread.
            (
                PairWork {
                    packed_rows: false,
                    contiguous_rows: false,
                    ..work(1000, 100_000, 32)
                },
                2,
                plan(1, 1024, 8, Alone),
            ),
            // `b` as it lies and a kernel call's rows of `a`: all of `b` in one tile.
            (
                PairWork {
                    pack: false,
                    ..work(8, 3000, 3)
                },
                2,
                plan(1, 3000, 64, Alone),
            ),
            // Codes longer than a tile's bytes: whole blocks of eight rows still.
            (work(2, 10, 1 << 20), 2, plan(2, 8, 64, rows(1, false))),
        ];
        for (i, (w, threads, want)) in cases.iter().enumerate() {
            assert_eq!(pair_plan(w, *threads), *want, "case {i}: {w:?}");
        }
    }

    /// Every split covers each output row and column once.
    #[test]
    fn splits_cover_the_output() {
        for m in [1, 2, 3, 5, 7, 9, 15, 16, 17, 100, 1000] {
            for n in [1, 255, 256, 257, 5000, 100_000] {
                for threads in [2, 3, 4, 16] {
                    let plan = pair_plan(&work(m, n, 1 << 16), threads);
                    match plan.split {
                        PairSplit::Columns { tasks, cols } => {
                            assert!(tasks * cols >= n && (tasks - 1) * cols < n + cols);
                            assert!(cols.is_multiple_of(NB) && n.div_ceil(cols) <= tasks);
                        }
                        PairSplit::Rows { rows, .. } => assert!(rows >= 1 && rows <= m),
                        // Packed rows run alone only when the work is too small to split.
                        PairSplit::Alone => assert!(m * n * (1 << 16) < PAIR_PARALLEL_BYTES),
                    }
                }
            }
        }
    }

    /// `m` queries against `n` codes of `bytes` bytes with VPOPCNTDQ, `b` too large to pack whole.
    fn knn(m: usize, n: usize, bytes: usize) -> KnnWork {
        KnnWork {
            rows_a: m,
            rows_b: n,
            work: m * n * bytes,
            lookup: false,
            b_fits_whole: false,
            selection_bytes: m * 10 * 16,
        }
    }

    #[test]
    fn the_knn_plan_of_each_shape() {
        use KnnSplit::*;
        let rows = |threads, rows, pack_whole| KnnPlan {
            threads,
            split: Rows { rows, pack_whole },
        };
        let ranges = KnnPlan {
            threads: 2,
            split: Columns {
                tasks: 4,
                cols: 25_088,
            },
        };
        let cases: &[(KnnWork, usize, KnnPlan)] = &[
            // Too little work to split: every row on this thread.
            (knn(10, 100, 8), 2, rows(1, 10, false)),
            // One query against many codes: ranges of `b`, merged.
            (knn(1, 100_000, 32), 2, ranges),
            // Ten queries, `b` not worth splitting: one share of rows each.
            (knn(10, 1000, 64), 2, rows(2, 5, false)),
            // Ten queries against a large `b`: ranges of it.
            (knn(10, 100_000, 64), 2, ranges),
            // Many queries: blocks of eight rows, eight tasks a thread at least, `b` packed once.
            (knn(1000, 100_000, 32), 2, rows(2, 56, true)),
            // The same where the lookup tile counts and the selections are small: ranges of `b`.
            (
                KnnWork {
                    lookup: true,
                    ..knn(100, 100_000, 16)
                },
                2,
                ranges,
            ),
            // ... but not where `b` packs whole.
            (
                KnnWork {
                    lookup: true,
                    b_fits_whole: true,
                    ..knn(100, 100_000, 16)
                },
                2,
                rows(2, 8, true),
            ),
            // One thread in the pool.
            (knn(1000, 100_000, 32), 1, rows(1, 1000, false)),
        ];
        for (i, (w, threads, want)) in cases.iter().enumerate() {
            assert_eq!(knn_plan(w, *threads), *want, "case {i}: {w:?}");
        }
    }
}
