//! Pairwise ops and knn on the CPU: the drivers.
//!
//! An op's pair kernel ([`pair`], generic over its element function) computes a tile: rows of `a`
//! against rows of `b`. Sums of bit counts of expressions that are the same at every width (`&`,
//! `|`, `^`, `!`) run on whole 64-bit words, as FAISS's Hamming kernels do: `b` is packed eight rows
//! at a time word by word, so each word of a row of `a` meets eight rows of `b` in one vector, and
//! eight rows of `a` share every load of `b` (register blocking); with AVX-512 VPOPCNTDQ the counts
//! are one instruction per eight pairs, with AVX2 a nibble lookup (`vpshufb`). Codes
//! whose size is not a multiple of eight bytes (4, 12, 20 bytes) end in a word padded with zeros,
//! and what the padding counts (for an expression such as XNOR that is one on two zeros) is taken
//! off. Anything else runs element by element on the op's own word type. The tiles themselves are
//! in `tiles.rs`, their instruction-set versions in `simd.rs`.
//!
//! The drivers below are compiled once: they pack `b`, cut the work into tiles spread over the
//! thread pool (`crate::pool`), and write the tiles in the output type ([`run`]) or keep the `k` smallest
//! distances of each row of `a` ([`knn`](super::knn::knn), in `knn.rs`, with `select.rs` choosing
//! the candidates) without ever holding the `M x N` matrix.

use super::simd;
use super::strategy::{
    Level, PairSplit, PairWork, pair_parallel_bytes, pair_plan, stream_rows, streams_by_call,
};
use super::tiles::{PACK_ROWS, code_word, last_word_bytes};
use super::tuning::{CALL_ROWS, TILE_BYTES, WHOLE_PACK_BYTES, WHOLE_PACK_PARALLEL_BYTES};
use crate::MAX_RANK;
use crate::element::{Lanes, WideExpr, Word, by_const, write_elem};
use crate::error::Result;
use crate::op::{InputBuffer, PairOut, PairTask, Plan, ReduceOp};

/// An op's pair kernel as a call borrows it (see [`PairKernel`](crate::op::PairKernel)).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct PairRef<'k> {
    /// The tile kernel.
    pub run: &'k (dyn Fn(&PairTask<'_>, &mut PairOut<'_, '_>) + Sync),
    /// Whether it computes on whole 64-bit words, which a packed `b` then serves.
    pub wide: bool,
}

/// The tile computation generated kernels call: `elem` is the op's element function at the element
/// type's word, giving the count or bits to combine; `E` its expression under the count at whole
/// words, used (when `use_wide`) for the packed part of a sum.
#[doc(hidden)]
#[inline(always)]
pub fn pair<W: Word, E: WideExpr>(
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
    elem: impl Fn([W; 2]) -> u64,
    use_wide: bool,
) {
    match use_wide && task.op == ReduceOp::Sum && (task.packed.is_some() || task.wide_words > 0) {
        true => pair_form::<E>(task, out),
        false => simd::pair_elems(task, out, &elem),
    }
}

/// The pair kernels of the common pairwise sums, compiled here once: sums of the bit counts of
/// XOR (Hamming distance), XNOR (agreements), AND and OR of two codes. `#[bitwise_op]` gives an op
/// whose expression under the count has one of these truth tables the runtime's kernel instead of
/// instantiating [`pair`] (the tiles for every instruction set, code size and output size) in the
/// user's crate, where each release rebuild would compile it again.
macro_rules! pair_forms {
    ($($(#[$doc:meta])* $name:ident, $expr:ident, |$x:ident| $e:expr;)*) => {$(
        struct $expr;

        impl WideExpr for $expr {
            #[inline(always)]
            fn wide<L: Lanes>($x: [L; 2]) -> L {
                $e
            }
        }

        $(#[$doc])*
        #[doc(hidden)]
        pub fn $name(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
            pair_form::<$expr>(task, out)
        }
    )*};
}

pair_forms! {
    /// Sums of `(a ^ b).count_ones()`.
    pair_xor, XorForm, |x| L::xor(x[0], x[1]);
    /// Sums of `(a & b).count_ones()`.
    pair_and, AndForm, |x| L::and(x[0], x[1]);
}

thread_local! {
    /// [`pair_table`]'s counts of `a & b` and of `b`'s rows, kept between calls.
    static TABLE_TILE: std::cell::Cell<(Vec<u64>, Vec<u64>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// The pair kernel of the sums of `f(a, b).count_ones()` for any function `f` of the two inputs'
/// bits, given by its truth table `t` (bit `2 * x + y` is `f` on a bit `x` of `a` and `y` of `b`),
/// compiled here once: an op that declares any such sum instantiates no tile. Over the `W` bits of
/// two codes, with `n = |a & b|`,
///
/// `count = f(0,0) W + (f(1,0) - f(0,0)) |a| + (f(0,1) - f(0,0)) |b|
///          + (f(1,1) - f(1,0) - f(0,1) + f(0,0)) n`,
///
/// since the bits where both are one number `n`, where only `a` is one `|a| - n`, where only `b`
/// is `|b| - n`, and where neither is `W - |a| - |b| + n`. `n` comes from [`pair_and`]'s tile,
/// the rows' counts from their bytes. Where the rows' counts cancel once `n` is written as
/// `(|a| + |b| - |a ^ b|) / 2` (XOR and XNOR), the count is `c W + d |a ^ b|`, from
/// [`pair_xor`]'s tile alone. The bits past a code's valid ones are zero, as they are for every
/// pair kernel, and the caller takes off what `f(0, 0)` counts there.
#[doc(hidden)]
pub fn pair_table(task: &PairTask<'_>, out: &mut PairOut<'_, '_>, t: u8) {
    let f = |x: u8, y: u8| i64::from((t >> (2 * x + y)) & 1);
    let (c_w, c_a, c_b) = (f(0, 0), f(1, 0) - f(0, 0), f(0, 1) - f(0, 0));
    let c_n = f(1, 1) - f(1, 0) - f(0, 1) + f(0, 0);
    // `c_a |a| + c_b |b| + c_n n` with `n = (|a| + |b| - x) / 2` is `-c_n / 2 x` when these cancel
    // (XOR and XNOR): then `c_n` below is the coefficient of `x`, the XOR tile's count.
    let by_xor = c_n != 0 && c_a == -c_n / 2 && c_b == -c_n / 2 && c_n % 2 == 0;
    let (c_a, c_b, c_n) = match by_xor {
        true => (0, 0, -c_n / 2),
        false => (c_a, c_b, c_n),
    };
    let (ni, nj) = (task.a_rows, task.b_rows);
    let bytes = task.code_bytes();
    let bits = i64::try_from(bytes * 8).unwrap_or(i64::MAX);
    let (mut tile, mut b_ones) = TABLE_TILE.take();
    tile.clear();
    tile.resize(ni * nj, 0);
    if c_n != 0 && bytes > 0 {
        let mut counts = PairOut::tile(&mut tile, nj.max(1));
        match by_xor {
            true => pair_form::<XorForm>(task, &mut counts),
            false => pair_form::<AndForm>(task, &mut counts),
        }
    }
    match c_b {
        0 => {
            b_ones.clear();
            b_ones.resize(nj, 0);
        }
        _ => rows_ones(task, &mut b_ones),
    }
    let mut row = [0u64; 64];
    for i in 0..ni {
        let a_ones = match c_a {
            _ if bytes == 0 => 0,
            0 => 0,
            _ => simd::ones(&task.a[i * task.a_stride..][..bytes]) as i64,
        };
        let base = c_w * bits + c_a * a_ones;
        for j0 in (0..nj).step_by(row.len()) {
            let part = &mut row[..(nj - j0).min(64)];
            for (c, v) in part.iter_mut().enumerate() {
                let j = j0 + c;
                // A count of `f` over the codes' bits: at least 0 and at most their bits.
                *v = (base + c_b * b_ones[j] as i64 + c_n * tile[i * nj + j] as i64) as u64;
            }
            out.put_run(i, j0, part);
        }
    }
    TABLE_TILE.set((tile, b_ones));
}

/// The ones of each of `task`'s rows of `b`, into `out`: from `b` as it lies, or (where the
/// driver packed it, and may not pass it as bytes) each row's lane of its block's words, the
/// words past a code's end being zero.
pub(super) fn rows_ones(task: &PairTask<'_>, out: &mut Vec<u64>) {
    let bytes = task.code_bytes();
    out.clear();
    out.resize(task.b_rows, 0);
    match task.packed {
        _ if bytes == 0 => {}
        Some(p) => simd::lane_ones(p, task.wide_words, out),
        None => simd::rows_ones(task.b, task.b_stride, bytes, out),
    }
}

/// A sum's tile on whole words: `b` packed, or as it lies; codes of no bytes sum to nothing.
#[inline(always)]
fn pair_form<E: WideExpr>(task: &PairTask<'_>, out: &mut PairOut<'_, '_>) {
    debug_assert_eq!(
        task.op,
        ReduceOp::Sum,
        "the runtime's pair kernels are sums"
    );
    match task.packed {
        Some(packed) => {
            if !simd::stream_few::<E>(task, out) {
                simd::pair_wide::<E>(task, packed, out)
            }
        }
        None if task.wide_words > 0 => simd::pair_words::<E>(task, out),
        None => {
            for i in 0..task.a_rows {
                for j in 0..task.b_rows {
                    out.put(i, j, task.identity);
                }
            }
        }
    }
}

/// Rows of one input of a pairwise plan for one batch index: contiguous within each row (the input
/// as it is, when its last dimension has stride 1), else gathered into a packed copy.
pub(super) struct Rows<'a> {
    pub(super) bytes: std::borrow::Cow<'a, [u8]>,
    pub(super) stride: usize,
}

fn rows<'a>(
    src: &'a [u8],
    base: usize,
    n: usize,
    row_stride: usize,
    elems: usize,
    ks: usize,
    es: usize,
) -> Result<Rows<'a>> {
    if ks == 1 || elems <= 1 {
        let start = (base * es).min(src.len());
        return Ok(Rows {
            bytes: std::borrow::Cow::Borrowed(&src[start..]),
            stride: row_stride * es,
        });
    }
    // A strided input (a broadcast one, with zero strides, included) may be much smaller than its
    // packed copy: memory that cannot be had is an error, not an abort.
    let bytes = n
        .checked_mul(elems)
        .and_then(|v| v.checked_mul(es))
        .unwrap_or(usize::MAX);
    let mut packed = crate::alloc::zeroed_vec::<u8>(bytes, "a packed copy of a pairwise input")?;
    for r in 0..n {
        for e in 0..elems {
            let at = (base + r * row_stride + e * ks) * es;
            packed[(r * elems + e) * es..(r * elems + e + 1) * es]
                .copy_from_slice(&src[at..at + es]);
        }
    }
    Ok(Rows {
        bytes: std::borrow::Cow::Owned(packed),
        stride: elems * es,
    })
}

/// Rows `j0..j0 + nj` of `b` packed for the wide path into `buf`: per block of eight rows, each
/// of the first `ww` words of the eight rows in turn; missing rows are zero. One L1-sized tile at a
/// time, just before the rows of `a` pass over it, so that `b` is never copied whole.
fn pack_tile<'t>(
    b: &Rows<'_>,
    (j0, nj): (usize, usize),
    (ww, row_bytes): (usize, usize),
    buf: &'t mut Vec<u64>,
) -> &'t [u64] {
    buf.clear();
    buf.resize(nj.div_ceil(8) * ww * 8, 0);
    pack_into(b, (j0, nj), (ww, row_bytes), buf);
    buf
}

/// [`pack_tile`] into `buf`, zeroed and of `nj.div_ceil(8) * ww * 8` words.
fn pack_into(
    b: &Rows<'_>,
    (j0, nj): (usize, usize),
    (ww, row_bytes): (usize, usize),
    buf: &mut [u64],
) {
    // Codes in consecutive rows: each block is a transpose of eight rows' words, read as words
    // (the general loop below tests each word for the end of its code), with the word count a
    // constant for codes of up to eight words so that the loops unroll.
    if b.stride == row_bytes && row_bytes >= 8 {
        let rows = &b.bytes[j0 * row_bytes..(j0 + nj) * row_bytes];
        // Codes of 16 bytes eight at a time in vector registers where the CPU has them.
        let done = match ww == 2 && row_bytes == 16 {
            true => simd::pack16(rows, buf),
            false => 0,
        };
        let (rows, buf) = (&rows[done * row_bytes..], &mut buf[done * ww..]);
        by_const!(ww, WW in [1, 2, 3, 4, 5, 6, 7, 8] =>
            transpose_words::<WW>(rows, buf, ww, row_bytes),
            _ => transpose_words::<0>(rows, buf, ww, row_bytes));
        return;
    }
    let last = last_word_bytes(row_bytes, ww);
    for (blk, d) in buf.chunks_exact_mut(ww * 8).enumerate() {
        // Row `j0 + 8 * blk + c` goes to lane `c` of each of the block's words.
        for c in 0..8.min(nj - blk * 8) {
            let row = &b.bytes[(j0 + blk * 8 + c) * b.stride..];
            for w in 0..ww {
                d[w * 8 + c] = code_word(row, w, ww, last);
            }
        }
    }
}

/// All of `b`'s rows packed once (by the pool's threads, a tile each, where it is large) for a
/// run whose tasks of rows would each pack every tile of `b` again (100 queries against 1,000
/// codes of 128 bytes, in seven tasks, spent a quarter of the call packing). `None` where `b` is
/// not packed in tiles or is past [`WHOLE_PACK_BYTES`], or where the memory cannot be had: the
/// tasks then pack their own tiles.
pub(super) fn pack_whole_b(bt: &Batch<'_>, s: &Shape) -> Option<Vec<u64>> {
    if !bt.pack || s.ww == 0 || !fits_whole(s) {
        return None;
    }
    let words = s.n.div_ceil(8) * s.ww * 8;
    let mut packed = crate::alloc::zeroed_vec::<u64>(words, "b packed for the wide kernel").ok()?;
    let row_bytes = s.code_bytes();
    let rows = (TILE_BYTES / row_bytes.max(1)).max(8).next_multiple_of(8);
    let parts: Vec<&mut [u64]> = packed.chunks_mut(rows / 8 * s.ww * 8).collect();
    let one = |t: usize, d: &mut [u64]| {
        let j0 = t * rows;
        pack_into(&bt.b, (j0, (s.n - j0).min(rows)), (s.ww, row_bytes), d);
    };
    // A small `b` is packed by the caller: a dispatch to the team and its wait cost more than
    // packing 1,000 codes of 64 bytes (ten queries against them spent a fifth of the call in
    // the team's two dispatches).
    match words * 8 >= WHOLE_PACK_PARALLEL_BYTES {
        true => crate::pool::each(parts, one),
        false => parts.into_iter().enumerate().for_each(|(t, d)| one(t, d)),
    }
    Some(packed)
}

/// Whether all of `b` packed for the wide kernel takes at most [`WHOLE_PACK_BYTES`].
pub(super) fn fits_whole(s: &Shape) -> bool {
    let bytes = s.n.div_ceil(8).saturating_mul(s.ww * 64);
    bytes <= WHOLE_PACK_BYTES
}

/// [`pack_tile`] for codes of `row_bytes` bytes (at least eight), `ww` words (`WW` where not
/// zero), in consecutive `rows`: block `blk`'s word `w` of row `c` to
/// `buf[(blk * ww + w) * 8 + c]`. A last word that is part of one is read as the eight bytes
/// that end the code, shifted down past those of the word before, as the word tile reads it.
#[inline(always)]
fn transpose_words<const WW: usize>(rows: &[u8], buf: &mut [u64], ww: usize, row_bytes: usize) {
    let ww = if WW == 0 { ww } else { WW };
    let shift = 8 * (8 - last_word_bytes(row_bytes, ww));
    let word = |code: &[u8], from: usize| {
        let b = code.get(from..from + 8).unwrap_or_default();
        u64::from_le_bytes(b.try_into().unwrap_or([0; 8]))
    };
    // The tile's codes in one `chunks_exact`: one per block divided each block's length by the
    // code size, a `div` per eight codes that was a third of the packing of 16-byte codes.
    let mut codes = rows.chunks_exact(row_bytes);
    for d in buf.chunks_exact_mut(ww * 8) {
        for c in 0..8 {
            let Some(code) = codes.next() else { return };
            for w in 0..ww - 1 {
                d[w * 8 + c] = word(code, w * 8);
            }
            d[(ww - 1) * 8 + c] = word(code, row_bytes - 8) >> shift;
        }
    }
}

/// The packed form of rows `j0..j0 + nj` of `b` for the wide kernel (`j0` a multiple of eight):
/// `b` itself where it already is, a tile packed into `buf` where the batch packs, else none.
pub(super) fn packed_for<'t>(
    bt: &'t Batch<'_>,
    s: &Shape,
    (j0, nj): (usize, usize),
    buf: &'t mut Vec<u64>,
) -> Option<&'t [u64]> {
    if let Some(p) = bt.in_place {
        return Some(&p[(j0 / 8 * s.ww * 8).min(p.len())..]);
    }
    bt.pack
        .then(|| pack_tile(&bt.b, (j0, nj), (s.ww, s.code_bytes()), buf))
}

/// `b` read in place as its packed form: codes of one word in consecutive, aligned rows, whole
/// blocks of eight, are already what [`pack_tile`] would make of them.
fn in_place_packing<'a>(b: &Rows<'a>, s: &Shape) -> Option<&'a [u64]> {
    match b.bytes {
        std::borrow::Cow::Borrowed(bytes)
            if s.ww == 1 && s.code_bytes() == 8 && b.stride == 8 && s.n.is_multiple_of(8) =>
        {
            bytemuck::try_cast_slice(bytes.get(..s.n * 8)?).ok()
        }
        _ => None,
    }
}

/// One batch index of a pairwise plan: rows of `a` and `b` and where the output goes.
pub(super) struct Batch<'a> {
    pub(super) a: Rows<'a>,
    pub(super) b: Rows<'a>,
    /// `b` in its packed form, read in place.
    pub(super) in_place: Option<&'a [u64]>,
    /// Whether tiles of `b` are packed for the wide kernel (enough rows of `a` to pay for it).
    pub(super) pack: bool,
    /// Whether the kernel streams the rows of `a` against `b` as it lies (vector registers).
    pub(super) streamed: bool,
    pub(super) out_base: usize,
}

impl Batch<'_> {
    /// This batch with all of `b` read from `packed`, made by [`pack_whole_b`].
    pub(super) fn with_packed<'p>(&'p self, packed: &'p [u64]) -> Batch<'p> {
        let rows = |r: &'p Rows<'_>| Rows {
            bytes: std::borrow::Cow::Borrowed(&r.bytes[..]),
            stride: r.stride,
        };
        Batch {
            a: rows(&self.a),
            b: rows(&self.b),
            in_place: Some(packed),
            pack: false,
            streamed: false,
            out_base: self.out_base,
        }
    }
}

impl<'a> Batch<'a> {
    /// A batch of rows `a` and `b`, whose output starts at element `out_base`; `wide_sum` where
    /// the kernel is wide and the reduction a sum: `b` is then packed for the wide kernel, in
    /// place when it already is (whatever the rows of `a`), else in tiles when enough rows of `a`
    /// pay for it. `call_rows`: the most rows of `a` a kernel call takes (knn's calls take a
    /// block of rows, which stream whatever the rows of `a`, but for the sizes where
    /// [`streams_by_call`] says the call's rows decide).
    fn new(
        s: &Shape,
        (a, b): (Rows<'a>, Rows<'a>),
        wide_sum: bool,
        out_base: usize,
        call_rows: usize,
    ) -> Batch<'a> {
        let wide_sum = wide_sum && s.ww > 0;
        let in_place = if wide_sum {
            in_place_packing(&b, s)
        } else {
            None
        };
        // Rows that stream read `b` as it lies.
        let level = Level::current();
        let rows = match streams_by_call(level, s.code_bytes()) {
            true => s.m,
            false => s.m.min(call_rows),
        };
        let streamed = rows < stream_rows(level, s.code_bytes())
            && b.stride == s.code_bytes()
            && simd::streams(s.code_bytes());
        let pack = wide_sum && in_place.is_none() && s.m >= PACK_ROWS && !streamed;
        Batch {
            a,
            b,
            in_place,
            pack,
            streamed,
            out_base,
        }
    }
}

/// Geometry of a pairwise plan.
pub(super) struct Shape {
    pub(super) nb: usize,
    pub(super) m: usize,
    pub(super) n: usize,
    /// Elements per code.
    pub(super) elems: usize,
    pub(super) es: usize,
    pub(super) ww: usize,
}

impl Shape {
    /// Bytes per code.
    pub(super) fn code_bytes(&self) -> usize {
        self.elems * self.es
    }

    /// The bytes of codes `pairs` pairs of codes read: the measure of a call's work.
    pub(super) fn work(&self, pairs: usize) -> usize {
        pairs
            .saturating_mul(self.elems.max(1))
            .saturating_mul(self.es)
    }

    /// The largest distance a sum of bit counts can reach: the bits of a code.
    pub(super) fn max_distance(&self) -> u64 {
        (self.code_bytes() * 8) as u64
    }
}

pub(super) fn shape(plan: &Plan) -> Shape {
    let nd = plan.iter.len();
    let es = plan.in_dtype.size();
    let elems = plan.iter[nd - 1];
    Shape {
        nb: nd - 3,
        m: plan.iter[nd - 3],
        n: plan.iter[nd - 2],
        elems,
        es,
        // Codes of a size not a multiple of eight bytes end in a word padded with zeros.
        ww: (elems * es).div_ceil(8),
    }
}

/// Every batch index of the plan, with each input's rows; made before anything is written, so
/// that memory a packed copy cannot have leaves the output untouched.
pub(super) fn batches<'a>(
    plan: &Plan,
    s: &Shape,
    inputs: &[InputBuffer<'a>],
    wide: bool,
    call_rows: usize,
) -> Result<Vec<Batch<'a>>> {
    let nd = plan.iter.len();
    let src = |k: usize| match inputs.get(k) {
        Some(InputBuffer::Bytes(b)) => *b,
        _ => &[][..],
    };
    let (sa, sb) = (&plan.in_strides[0], &plan.in_strides[1]);
    let count: usize = plan.iter[..s.nb].iter().product();
    let mut out = Vec::with_capacity(count);
    let mut idx = [0usize; MAX_RANK];
    for _ in 0..count {
        let off = |st: &[usize]| (0..s.nb).map(|d| idx[d] * st[d]).sum::<usize>();
        let a = rows(src(0), off(sa), s.m, sa[nd - 3], s.elems, sa[nd - 1], s.es)?;
        let b = rows(src(1), off(sb), s.n, sb[nd - 2], s.elems, sb[nd - 1], s.es)?;
        let wide_sum = wide && plan.reduce == Some(ReduceOp::Sum);
        out.push(Batch::new(
            s,
            (a, b),
            wide_sum,
            off(&plan.out_strides),
            call_rows,
        ));
        for d in (0..s.nb).rev() {
            idx[d] += 1;
            if idx[d] < plan.iter[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

/// How a plan's pairs reduce, and the value of an empty reduction.
pub(super) fn how(plan: &Plan) -> (ReduceOp, u64) {
    let op = plan.reduce.unwrap_or(ReduceOp::Sum);
    (op, super::accum::identity(op, plan.in_dtype))
}

pub(super) fn task<'t>(
    (op, identity): (ReduceOp, u64),
    s: &Shape,
    bt: &'t Batch<'_>,
    (i0, ni): (usize, usize),
    (j0, nj): (usize, usize),
    packed: Option<&'t [u64]>,
) -> PairTask<'t> {
    PairTask {
        a: &bt.a.bytes[(i0 * bt.a.stride).min(bt.a.bytes.len())..],
        a_rows: ni,
        a_stride: bt.a.stride,
        b: &bt.b.bytes[(j0 * bt.b.stride).min(bt.b.bytes.len())..],
        b_rows: nj,
        b_stride: bt.b.stride,
        elems: s.elems,
        elem_size: s.es,
        packed,
        wide_words: s.ww,
        op,
        identity,
    }
}

/// Runs a validated pairwise plan into `out`.
pub(crate) fn run(
    plan: &Plan,
    inputs: &[InputBuffer<'_>],
    out: &mut [u8],
    pair: PairRef<'_>,
) -> Result<()> {
    let s = shape(plan);
    if plan.count == 0 {
        return Ok(());
    }
    let nd = plan.iter.len();
    let job = Job {
        so: (plan.out_strides[nd - 3], plan.out_strides[nd - 2]),
        oes: plan.out_dtype.size(),
        how: how(plan),
        work: s.work(plan.count),
        s,
    };
    for bt in batches(plan, &job.s, inputs, pair.wide, usize::MAX)? {
        let region = &mut out[bt.out_base * job.oes..];
        run_batch(&job, &bt, region, pair);
    }
    Ok(())
}

/// [`run`] for one pair of packed matrices, with no plan: rows of `a` `[m, elems]` and `b`
/// `[n, elems]` of `dtype`, their pair sums into the packed `[m, n]` `out` of `oes`-byte
/// elements. The caller validated the call, whose results are the counts as they are (no
/// epilogue, no valid bits), and the lengths of the three buffers. A call of a few microseconds
/// (one query against a thousand codes) spent more in building and copying the plan than in
/// counting.
pub(crate) fn run_packed(
    pair: PairRef<'_>,
    (m, n, elems): (usize, usize, usize),
    dtype: crate::DataType,
    oes: usize,
    (a, b): (&[u8], &[u8]),
    out: &mut [u8],
) {
    let es = dtype.size();
    let s = Shape {
        nb: 0,
        m,
        n,
        elems,
        es,
        ww: (elems * es).div_ceil(8),
    };
    let count = m * n;
    if count == 0 {
        return;
    }
    let job = Job {
        so: (n, 1),
        oes,
        how: (ReduceOp::Sum, super::accum::identity(ReduceOp::Sum, dtype)),
        work: s.work(count),
        s,
    };
    let row = |src| Rows {
        bytes: std::borrow::Cow::Borrowed(src),
        stride: elems * es,
    };
    let bt = Batch::new(&job.s, (row(a), row(b)), pair.wide, 0, usize::MAX);
    run_batch(&job, &bt, out, pair);
}

/// What every batch of a pairwise run shares.
struct Job {
    s: Shape,
    /// The output's strides (in elements) along the rows of `a` and of `b`, and its element size.
    so: (usize, usize),
    oes: usize,
    how: (ReduceOp, u64),
    /// Bytes of codes the whole run reads (rows of `a` times rows of `b` times the code size).
    work: usize,
}

/// One batch of a pairwise run into `region`, its output from the batch's first element.
fn run_batch(job: &Job, bt: &Batch<'_>, region: &mut [u8], pair: PairRef<'_>) {
    let (s, oes, (so_m, so_n)) = (&job.s, job.oes, job.so);
    let lookup = bt.pack && simd::tile_by_lookup();
    // The pool is asked for its size only when the work could be split: a small call notices
    // the lock.
    let pool = match job.work >= pair_parallel_bytes(lookup) {
        true => crate::pool::num_threads(),
        false => 1,
    };
    let plan = pair_plan(
        &PairWork {
            code_bytes: s.code_bytes(),
            rows_a: s.m,
            rows_b: s.n,
            out_bytes: oes,
            work: job.work,
            packed_rows: so_n == 1 && so_m == s.n,
            contiguous_rows: so_n == 1,
            pack: bt.pack,
            lookup,
        },
        pool,
    );
    let (nb, step) = (plan.tile_rows, plan.call_rows);
    // Rows `i0..i1` of `a` against all of `b`: `b` in tiles that stay in L1 while rows of `a`
    // pass over them. Rows of the output that are contiguous (`so_n == 1`) are written in place,
    // in the output type; others go through a tile of `u64`s scattered to their strides. `out`
    // starts at row `origin` of the batch's output.
    // An output past the caches is written around them where a kernel can.
    let non_temporal =
        s.m.saturating_mul(s.n).saturating_mul(oes) >= super::stream::pair_stream_bytes();
    let rows_of =
        |bt: &Batch<'_>, (i0, i1): (usize, usize), out: &mut [u8], origin: usize, so_m: usize| {
            let (mut tile, mut pbuf) = (Vec::new(), Vec::new());
            for j0 in (0..s.n).step_by(nb) {
                let nj = (s.n - j0).min(nb);
                let packed = packed_for(bt, s, (j0, nj), &mut pbuf);
                for r0 in (i0..i1).step_by(step) {
                    let ni = (i1 - r0).min(step);
                    let t = task(job.how, s, bt, (r0, ni), (j0, nj), packed);
                    if so_n == 1 {
                        let first = ((r0 - origin) * so_m + j0) * oes;
                        let mut o = PairOut {
                            bytes: &mut out[first..],
                            es: oes,
                            stride: so_m,
                            rows: None,
                            col: 0,
                            non_temporal,
                        };
                        (pair.run)(&t, &mut o);
                    } else {
                        tile.resize(ni * nj, 0);
                        (pair.run)(&t, &mut PairOut::tile(&mut tile, nj));
                        for r in 0..ni {
                            for (c, &v) in tile[r * nj..(r + 1) * nj].iter().enumerate() {
                                let at = (r0 - origin + r) * so_m + (j0 + c) * so_n;
                                write_elem(out, at, oes, v);
                            }
                        }
                    }
                }
            }
        };
    match plan.split {
        PairSplit::Columns { cols: cols_per, .. } => {
            // Each task writes its columns of every output row, a row at a time.
            let mut parts: Vec<Vec<&mut [u8]>> = Vec::new();
            parts.resize_with(s.n.div_ceil(cols_per), Vec::new);
            let len = (s.m * s.n * oes).min(region.len());
            for row in region[..len].chunks_mut(s.n * oes) {
                let mut rest = row;
                for part in parts.iter_mut() {
                    let (head, tail) = rest.split_at_mut((cols_per * oes).min(rest.len()));
                    part.push(head);
                    rest = tail;
                }
            }
            crate::pool::each(parts, |t, mut rows_out| {
                let (c0, c1) = (t * cols_per, ((t + 1) * cols_per).min(s.n));
                let mut pbuf = Vec::new();
                for j0 in (c0..c1).step_by(nb) {
                    let nj = (c1 - j0).min(nb);
                    let packed = packed_for(bt, s, (j0, nj), &mut pbuf);
                    for r0 in (0..s.m).step_by(CALL_ROWS) {
                        let ni = (s.m - r0).min(CALL_ROWS);
                        let tk = task(job.how, s, bt, (r0, ni), (j0, nj), packed);
                        let mut o = PairOut {
                            bytes: &mut [],
                            es: oes,
                            stride: 0,
                            rows: Some(&mut rows_out[r0..r0 + ni]),
                            // Columns from j0, in slices that start at c0.
                            col: j0 - c0,
                            non_temporal,
                        };
                        (pair.run)(&tk, &mut o);
                    }
                }
            });
        }
        PairSplit::Rows {
            rows: rows_per,
            pack_whole: whole,
        } => {
            // Blocks of output rows are disjoint slices. Blocks that pass over all of `b`, several
            // a thread, share one packed copy of it; a share a thread packs its own tiles.
            let out_bytes = s.m * s.n * oes;
            let bytes = rows_per * s.n * oes;
            let len = out_bytes.min(region.len());
            let chunks: Vec<&mut [u8]> = region[..len].chunks_mut(bytes).collect();
            let whole = whole.then(|| pack_whole_b(bt, s)).flatten();
            let shared = whole.as_deref().map(|p| bt.with_packed(p));
            let bt = shared.as_ref().unwrap_or(bt);
            crate::pool::each(chunks, |t, chunk| {
                let m0 = t * rows_per;
                rows_of(bt, (m0, (m0 + rows_per).min(s.m)), chunk, m0, s.n);
            });
        }
        PairSplit::Alone => rows_of(bt, (0, s.m), region, 0, so_m),
    }
}
