//! Every tuned number of the CPU kernels: the sizes from which work is split over threads or
//! stored around the caches, the block sizes of the tiles, and the sizes at which one kernel takes
//! over from another. Each has its reason in one line and the benchmark that measures it; the
//! figures behind a value are in the history of the commit that set it. Change a value here, run
//! its benchmark before and after in one session, and keep the change only where it wins.
//!
//! The benchmarks: `cargo bench --bench cpu -- GROUP` (criterion, `benches/cpu.rs`);
//! `python3 benches/grid.py` (all-pairs and knn beside FAISS over a grid of shapes, with
//! `--sizes`, `--queries`, `--db`, `--k` and `--isa` to pick cells); `tensorbits bench OP --dtype T
//! --shape S` (one element-wise or reduction call, with its copy speed beside it).

// Threads.

/// Output bytes from which element-wise and reduction calls use the thread pool: below, waking
/// a helper costs more than it saves. `cargo bench --bench cpu -- tiny`, `tensorbits bench`.
pub const PARALLEL_BYTES: usize = 1 << 20;

/// Code bytes read (rows of `a` x rows of `b` x code size) from which all-pairs work uses the
/// pool's spinning team. `python3 benches/grid.py --db 1000 --queries 1,10,100`.
pub(crate) const PAIR_PARALLEL_BYTES: usize = PARALLEL_BYTES / 2;

/// The same where the AVX2 nibble-lookup tile counts (slower per pair, so less work pays for the
/// split). `python3 benches/grid.py --isa avx2 --db 1000 --queries 1,10,100`.
pub(crate) const LOOKUP_PAIR_PARALLEL_BYTES: usize = 64 << 10;

/// Code bytes from which knn splits rows of `a` over the team: selection costs more than
/// counting. `python3 benches/grid.py --db 1000 --queries 10,100 --k 1,10`.
pub(crate) const KNN_PARALLEL_BYTES: usize = 64 << 10;

/// Code bytes from which knn splits `b` among a few rows of `a` (each split costs a merge of
/// every row's lists). `python3 benches/grid.py --queries 1,10 --sizes 256 --k 100`.
pub(crate) const KNN_SPLIT_BYTES: usize = 4 * PARALLEL_BYTES;

/// Selection bytes up to which knn splits `b` for many rows where the AVX2 tile counts (each task
/// keeps every row's lists). `python3 benches/grid.py --isa avx2 --queries 100,1000`.
pub(crate) const SPLIT_SELECTION_BYTES: usize = 512 << 10;

/// Output bytes up to which all-pairs work gives each thread one share of the rows, not blocks
/// taken in turn (a small output's cache lines then stay with one core).
/// `python3 benches/grid.py --queries 10,100 --db 1000,10000`.
pub(crate) const SHARE_OUTPUT_BYTES: usize = 2 << 20;

/// Bytes of `b` packed once for all threads at most (about a core's L2, where every thread reads
/// the copy from cache); past it each task packs its tiles. `python3 benches/grid.py --db 10000`.
pub(crate) const WHOLE_PACK_BYTES: usize = 1 << 20;

/// Bytes of `b` packed whole from which the team packs it, a tile a task.
/// `python3 benches/grid.py --db 100000 --queries 100`.
pub(crate) const WHOLE_PACK_PARALLEL_BYTES: usize = 256 << 10;

// Stores.

/// Output bytes from which contiguous outputs are written with streaming stores: past the caches,
/// a normal store first reads the line it overwrites. `tensorbits bench xor --shape 16777216`.
pub const STREAM_BYTES: usize = 8 << 20;

/// Codes in a row from which the wide tile aligns its stores: below, the extra codes it takes to
/// align cost more than the split stores they avoid. `python3 benches/grid.py --db 1000,10000`.
pub(crate) const ALIGN_FROM: usize = 256;

// Tiles and blocks.

/// Rows of `b` per tile: a tile of [`MB`] rows of `a` keeps `MB x NB` accumulators in L1.
/// `cargo bench --bench cpu -- cdist_few`.
pub(crate) const NB: usize = 256;

/// Rows of `a` per kernel call into a tile of `u64`s (knn's, or a strided output's).
/// `cargo bench --bench cpu -- knn`.
pub(crate) const MB: usize = 8;

/// Rows of `a` per kernel call into packed output rows (each call has a fixed cost).
/// `python3 benches/grid.py --queries 100,1000`.
pub(crate) const CALL_ROWS: usize = 64;

/// Bytes of `b`'s rows per all-pairs tile: they stay in L1 while rows of `a` pass over them.
/// `python3 benches/grid.py --sizes 32,256 --db 100000`.
pub(crate) const TILE_BYTES: usize = 32 << 10;

/// Bytes of the widest tensor per run handed to an element-wise kernel: the run's scratch stays
/// in L1 and each call has enough work to hide its cost. `tensorbits bench xor --shape 1048576`.
pub(crate) const CHUNK_BYTES: usize = 8192;

/// Bytes of `b`'s rows a ratio tile counts `a & b` over before it counts the rows themselves:
/// half a core's L2, so the second read hits the cache (`benches/compare_similarity.py`, one
/// query against 200,000).
pub(crate) const RATIO_B_BYTES: usize = 256 << 10;

/// Queries a prepared database takes together through its groups of rows: each group's rows come
/// from memory once for all of them (`benches/compare_similarity.py`, knn with k = 1000).
pub(crate) const DATABASE_BLOCK: usize = 16;

/// Bytes of a group's rows a database's block of queries passes over before the next: half a
/// core's L2 (`benches/compare_similarity.py`, knn with k = 1000).
pub(crate) const DATABASE_PART_BYTES: usize = 256 << 10;

/// Bytes of each input per call of a reduction's fused kernel when it reads them in place.
/// `tensorbits bench bitwise_count_sum --shape 4096,4096`.
pub(crate) const DIRECT_BYTES: usize = 8 * CHUNK_BYTES;

/// Rows of inputs a reduction's fused kernel takes in per call when it reduces column by column.
/// `tensorbits bench bitwise_count_sum --shape 64,65536 --axis 0`.
pub(crate) const FOLD_ROWS: usize = 4;

/// Bytes of a stream's codes past which codes of more than four registers are read one after
/// another, the query's registers loaded again for each, rather than register by register across
/// eight codes: from memory, only loads in order keep up. About a core's L2.
/// `python3 benches/grid.py --sizes 300,520,1024 --queries 1,10 --db 1000,100000`.
pub(crate) const LONG_CACHED_BYTES: usize = 1 << 20;

// Kernel choice.

/// Bytes per code from which codes of whole 32-byte registers stream through the portable
/// vector (the baseline and targets other than x86_64) rather than the word tile: there both
/// count every word with the same instructions, and below it, or with part of a register, the
/// tile's unrolled words ran ahead (at 40 bytes, twice as fast).
/// `TENSORBITS_CPU=baseline`, `hamming_cdist` of 1 and 3 queries against 100,000 codes.
pub(crate) const PORTABLE_STREAM_BYTES: usize = 128;

/// Rows of `a` below which codes of 9 to 32 bytes stream through vector registers rather than
/// pack `b` for the wide tile: from two register blocks of rows the packing pays for itself.
/// `python3 benches/grid.py --sizes 12,16,32 --queries 1,10,100`.
pub(crate) const STREAM_ROWS: usize = 16;

/// The same for codes of 33 to 64 bytes: each of the tile's tasks packs its tiles of `b` again,
/// which only many rows amortize. `python3 benches/grid.py --sizes 48,64 --queries 10,100`.
pub(crate) const MEDIUM_STREAM_ROWS: usize = 4 * STREAM_ROWS;

/// The same for codes of more than 64 bytes, where the stream reads `b` as it lies and runs
/// further ahead the longer the codes. `python3 benches/grid.py --sizes 128,256 --queries 10,100`.
pub(crate) const LONG_STREAM_ROWS: usize = 8 * STREAM_ROWS;

/// Rows below which codes of 9 to 63 bytes that are not a multiple of four and fit no window of
/// two or four words stream, one per register: from ten rows the packing of `b` pays for itself.
/// `python3 benches/grid.py --sizes 13,21,31 --queries 1,10`.
pub(crate) const WINDOW_STREAM_ROWS: usize = 4;

/// Rows of `a` below which streamed rows keep streaming where `b` was packed for the tile anyway
/// (a task of a larger call, or `b` packed as it lies): the packing is then already paid for.
/// `python3 benches/grid.py --sizes 16,32 --queries 10,100 --db 1000`.
pub(crate) const PACKED_STREAM_ROWS: usize = STREAM_ROWS;

/// At `avx2`, rows below which codes of 9 to 16 bytes stream: the tile counts eight rows per
/// load of `b` by the same nibble lookup, and reads a large `b` once for them.
/// `python3 benches/grid.py --isa avx2 --sizes 12,16 --queries 1,10`.
pub(crate) const AVX2_WINDOW_STREAM_ROWS: usize = 2;

/// At `avx2`, rows below which codes of 32 bytes (one register each) stream: at 16 rows the tile
/// ran ahead. `python3 benches/grid.py --isa avx2 --sizes 32 --queries 10,100`.
pub(crate) const AVX2_REGISTER_STREAM_ROWS: usize = 16;

/// At `avx2`, rows below which codes of 48 bytes (a register and a half) stream: the stream ran
/// ahead to ten rows, the tile from 16. `python3 benches/grid.py --isa avx2 --sizes 48 --queries 10`.
pub(crate) const AVX2_REGISTER_HALF_STREAM_ROWS: usize = 12;

/// At `avx2`, rows below which codes of a multiple of 16 bytes from 64 stream.
/// `python3 benches/grid.py --isa avx2 --sizes 64,128 --queries 10,100`.
pub(crate) const AVX2_LONG_STREAM_ROWS: usize = 32;

/// At `avx2`, rows of a task below which those codes stream where `b` was packed anyway: knn's
/// blocks of eight rows ran behind the tile. `python3 benches/grid.py --isa avx2 --sizes 64 --queries 100`.
pub(crate) const AVX2_PACKED_STREAM_ROWS: usize = 8;

/// At `avx512bw`, rows below which codes under 64 bytes that stream one per register stream:
/// their nibble lookup counts a whole register per code, and the AVX2 tile caught up from about
/// ten rows. `python3 benches/grid.py --isa avx512bw --sizes 24,40 --queries 1,10`.
pub(crate) const BW_STREAM_ROWS: usize = 8;

/// Output bytes up to which the hot loops run their AVX2 version where AVX-512 is present: a few
/// hundred bytes straddle cache lines on the allocator's 16-byte alignment, and cores that split
/// 512-bit operations gain nothing. `cargo bench --bench cpu -- tiny`.
#[cfg(target_arch = "x86_64")]
pub(crate) const SMALL_BYTES: usize = 1024;

/// Words in a code above which the AVX2 word tile counts by `popcnt` rather than the compiler's
/// vectorized count. `python3 benches/grid.py --isa avx2 --sizes 8,32,64 --queries 1`.
#[cfg(target_arch = "x86_64")]
pub(crate) const AVX2_POPCNT_WORDS: usize = 4;

/// The largest distance (bits per code) for which knn counts candidates per distance value
/// rather than keeping a heap. `cargo bench --bench cpu -- knn`.
pub(crate) const COUNT_MAX: u64 = 1 << 13;
