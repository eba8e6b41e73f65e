//! The pair tiles: rows of `a` against rows of `b` for one call of an op's pair kernel, generic
//! over the instruction set ([`Block`]) so that `simd` compiles each for the versions it runs.
//! Sums of bit counts of expressions that are the same at every width run on whole 64-bit words:
//! `b` as it lies ([`pair_words_body`], for few rows of `a`) or packed eight rows at a time
//! ([`pair_wide_body`], register-blocked over [`RB`] rows of `a`); anything else element by element
//! ([`pair_elems_body`]).

#[cfg(target_arch = "x86_64")]
use crate::element::out_size;
use crate::element::{WideExpr, Word, by_const, write8};
use crate::op::{PairOut, PairTask, ReduceOp};

/// Rows of `a` at which packing `b` pays: below, each pair of rows is counted word by word on `b`
/// as it lies, since packing costs as much as counting a few rows against it.
pub(crate) const PACK_ROWS: usize = RB;

/// Whole words, `b` as it lies: each pair of rows counts `E` word by word (each word's bits
/// counted by `c`), the last word of a code whose size is not a multiple of eight bytes padded with
/// zeros. For few rows of `a` (one query), where packing `b` would cost more than the counts.
#[inline(always)]
pub(crate) fn pair_words_body<E: WideExpr, C: WordCount>(
    c: C,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) {
    let full = task.code_bytes() == task.wide_words * 8;
    // Every width to six words has an instance, its loop over a code's words unrolled: with the
    // width known only at run time, codes of 20, 28 and 40 bytes ran well behind these instances
    // (AVX2).
    match full {
        true => by_const!(task.wide_words, WW in [1, 2, 3, 4, 5, 6, 8, 16] =>
            words_rows::<E, C, WW, true>(c, task, out),
            _ => words_rows::<E, C, 0, true>(c, task, out)),
        false => by_const!(task.wide_words, WW in [1, 2, 3, 4, 5, 6] =>
            words_rows::<E, C, WW, false>(c, task, out),
            _ => words_rows::<E, C, 0, false>(c, task, out)),
    }
}

/// How the word tile counts the bits of one word.
pub(crate) trait WordCount: Copy {
    /// The number of bits set in `x`.
    fn count(self, x: u64) -> u64;
}

/// The compiler's bit count, [`u64::count_ones`]: one `popcnt` where the version is compiled for
/// it, which the compiler may also vectorize across codes (see `Avx2`'s count in `x86_blocks.rs`).
impl WordCount for Scalar {
    #[inline(always)]
    fn count(self, x: u64) -> u64 {
        u64::from(x.count_ones())
    }
}

/// [`pair_words_body`] for codes of `WW` words (0: any number, `task.wide_words`), `FULL` when
/// the last is whole (no padding).
#[inline(always)]
fn words_rows<E: WideExpr, C: WordCount, const WW: usize, const FULL: bool>(
    c: C,
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
) {
    let ww = if WW == 0 { task.wide_words } else { WW };
    let row_bytes = task.code_bytes();
    let last = last_word_bytes(row_bytes, ww);
    let pad = padding_count::<E>(row_bytes, ww);
    let mut aw = vec![0u64; ww];
    for i in 0..task.a_rows {
        let ar = &task.a[i * task.a_stride..];
        for (w, x) in aw.iter_mut().enumerate() {
            *x = code_word(ar, w, ww, last);
        }
        let aw = &aw[..ww];
        // Results a run at a time, written together (narrowed in a loop the compiler vectorizes).
        let mut run = [0u64; 64];
        for j0 in (0..task.b_rows).step_by(run.len()) {
            let nj = (task.b_rows - j0).min(run.len());
            if FULL && task.b_stride == ww * 8 {
                // Codes back to back, each of whole words: exact chunks, so that the loop holds
                // no bounds check and reads each word straight into its XOR (codes of 32 bytes:
                // 24 instructions a code through the checked loop below, near FAISS's 4 POPCNTs
                // and their adds through this one).
                let codes = &task.b[j0 * ww * 8..(j0 + nj) * ww * 8];
                for (d, br) in run[..nj].iter_mut().zip(codes.chunks_exact(ww * 8)) {
                    *d = whole_words_count::<E, C>(c, aw, br);
                }
            } else if !FULL && row_bytes >= 8 && task.b_stride == row_bytes {
                // Codes back to back whose last word is part of one: that word is read as the
                // eight bytes that end the code, shifted down past those of the word before, so
                // that every load is whole and unchecked. This loop runs ahead of the checked loop
                // below, and the more so for longer codes.
                let codes = &task.b[j0 * row_bytes..(j0 + nj) * row_bytes];
                for (d, br) in run[..nj].iter_mut().zip(codes.chunks_exact(row_bytes)) {
                    *d = part_words_count::<E, C>(c, aw, br, last) - pad;
                }
            } else {
                for (x, d) in run[..nj].iter_mut().enumerate() {
                    let at = (j0 + x) * task.b_stride;
                    *d = if FULL {
                        // Whole words: the row's exact bytes, so that the loads need no checks.
                        whole_words_count::<E, C>(c, aw, &task.b[at..at + ww * 8])
                    } else if row_bytes >= 8 {
                        // A part word, as codes back to back read it (above).
                        part_words_count::<E, C>(c, aw, &task.b[at..at + row_bytes], last) - pad
                    } else {
                        let br = &task.b[at..];
                        let mut s = 0;
                        for (w, &a) in aw.iter().enumerate() {
                            s += c.count(E::wide([a, code_word(br, w, ww, last)]));
                        }
                        s - pad
                    };
                }
            }
            out.put_run(i, j0, &run[..nj]);
        }
    }
}

/// The count of `E` between the words `aw` and the code of whole words `br` (little-endian, as
/// many bytes as `aw` has words times eight), four words a step into four sums: for codes of a
/// number of words only known at run time, a loop of one word a step ran at six instructions a
/// word, with each word's count waiting on the last one's add, well behind the same `popcnt`s in
/// a loop whose width is known when compiled.
#[inline(always)]
fn whole_words_count<E: WideExpr, C: WordCount>(c: C, aw: &[u64], br: &[u8]) -> u64 {
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let (a4, a_rest) = aw.as_chunks::<4>();
    let (b4, b_rest) = br.as_chunks::<32>();
    let mut s = [0u64; 4];
    for (a, b) in a4.iter().zip(b4) {
        for (l, sl) in s.iter_mut().enumerate() {
            *sl += c.count(E::wide([a[l], word(&b[l * 8..l * 8 + 8])]));
        }
    }
    for (&a, b) in a_rest.iter().zip(b_rest.chunks_exact(8)) {
        s[0] += c.count(E::wide([a, word(b)]));
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

/// The count of `E` between the words `aw` (the last holding the code's `last` bytes past its
/// whole words, zero above) and the code `br` of at least eight bytes, not a whole number of
/// words: its whole words as in [`whole_words_count`], its last word the eight bytes that end it,
/// shifted down by the bytes of the word before that they repeat.
#[inline(always)]
fn part_words_count<E: WideExpr, C: WordCount>(c: C, aw: &[u64], br: &[u8], last: usize) -> u64 {
    let Some((&a_last, a_whole)) = aw.split_last() else {
        return 0;
    };
    let whole = br.get(..a_whole.len() * 8).unwrap_or_default();
    let end = br.last_chunk::<8>().copied().unwrap_or([0; 8]);
    let b_last = u64::from_le_bytes(end) >> (8 * (8 - last));
    whole_words_count::<E, C>(c, a_whole, whole) + c.count(E::wide([a_last, b_last]))
}

/// Bytes of a code's last 64-bit word that belong to it (1 to 8): codes whose size is not a
/// multiple of eight bytes end in a word padded with zeros.
#[inline(always)]
pub(crate) fn last_word_bytes(row_bytes: usize, ww: usize) -> usize {
    row_bytes + 8 - ww * 8
}

/// What the zero padding of a code's last word adds to each pair's count of `E`: nothing where
/// `E` of two zeros is zero (AND, OR, XOR), every padding bit where it is one (XNOR).
#[inline(always)]
pub(crate) fn padding_count<E: WideExpr>(row_bytes: usize, ww: usize) -> u64 {
    if E::wide([0u64, 0u64]) & 1 == 1 {
        (ww * 64 - row_bytes * 8) as u64
    } else {
        0
    }
}

/// Word `w` of the code starting at `row[0]` (of `ww` words, the last `last` bytes long), its
/// missing bytes zero. The code's bytes are read as one word wherever eight bytes lie in `row`.
#[inline(always)]
pub(crate) fn code_word(row: &[u8], w: usize, ww: usize, last: usize) -> u64 {
    let at = w * 8;
    if let Some(b) = row.get(at..at + 8) {
        let v = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        if w + 1 < ww || last == 8 {
            v
        } else {
            v & (u64::MAX >> (64 - 8 * last))
        }
    } else {
        let mut b = [0u8; 8];
        let n = if w + 1 < ww { 8 } else { last };
        b[..n].copy_from_slice(&row[at..at + n]);
        u64::from_le_bytes(b)
    }
}

/// The low four bits of each byte of a word: a row's nibbles for a block that reads them
/// ([`Block::NIBBLES`]).
pub(crate) const NIBBLE: u64 = 0x0f0f_0f0f_0f0f_0f0f;

/// Words of `aw` a row of `a` takes in the register blocks of `B` for codes of `ww` words: `ww`,
/// or eight times that where `B` reads each row as its nibbles in vectors of four.
#[inline(always)]
pub(crate) fn a_words<B: Block>(ww: usize) -> usize {
    if B::NIBBLES { 8 * ww } else { ww }
}

/// Whether a `blocks_out` of `B` for `R` rows of codes of `WW` words and `es`-byte results finds
/// every row's results inside `dst` (of `dst_len` bytes, rows `stride` bytes apart), every block
/// inside `packed` and every row inside `aw`: checked once for the call, not per store.
#[inline(always)]
#[cfg(target_arch = "x86_64")]
pub(crate) fn blocks_fit<B: Block, const WW: usize, const R: usize>(
    es: usize,
    aw: &[u64],
    packed: &[u64],
    blocks: usize,
    dst_len: usize,
    stride: usize,
) -> bool {
    let fits = (R - 1)
        .checked_mul(stride)
        .and_then(|x| x.checked_add(blocks * 8 * out_size(es)))
        .is_some_and(|end| end <= dst_len);
    fits && packed.len() >= blocks * WW * 8 && aw.len() >= R * a_words::<B>(WW)
}

/// A row of `a` (`ww` words from `row`, the last `last` bytes long) as the blocks of `B` read
/// it, into `words` ([`a_words`] of them).
#[inline(always)]
fn a_row<B: Block>(row: &[u8], ww: usize, last: usize, words: &mut [u64]) {
    for w in 0..ww {
        let word = code_word(row, w, ww, last);
        if B::NIBBLES {
            words[4 * w..4 * w + 4].fill(word & NIBBLE);
            words[4 * (ww + w)..4 * (ww + w) + 4].fill((word >> 4) & NIBBLE);
        } else {
            words[w] = word;
        }
    }
}

/// Rows of `a` per register block of the wide tile: eight rows against eight packed rows of `b`
/// keep 8 vector accumulators, so each load of `b` serves eight rows.
pub(crate) const RB: usize = 8;

/// Rows of `a` in the block that takes the last rows of a call, where fewer than [`RB`] remain.
const QB: usize = 4;

/// The wide tile: rows of `a` [`RB`] at a time against packed blocks of eight rows of `b`, every
/// code a whole number of words (the last padded with zeros, and what the padding counts taken
/// off).
#[inline(always)]
pub(crate) fn pair_wide_body<E: WideExpr, B: Block>(
    isa: B,
    task: &PairTask<'_>,
    packed: &[u64],
    out: &mut PairOut<'_, '_>,
) {
    let ww = task.wide_words;
    let row_bytes = task.code_bytes();
    let last = last_word_bytes(row_bytes, ww);
    let pad = padding_count::<E>(row_bytes, ww);
    let blocks = task.b_rows.div_ceil(8);
    if packed.len() < blocks * ww * 8 {
        debug_assert!(false, "pair_wide: packed b too short");
        return;
    }
    // The rows' words, aligned (or their nibbles, `aws` words a row, where the block reads them
    // so): on the stack for up to 32 words a row, in a buffer cleared only as large as the codes
    // need (a call of one query against a thousand short codes noticed the clearing of 2 KiB).
    // Aligned to the cache line, so that no vector of a row's nibbles (which the AVX2 block
    // reads as operands) straddles two lines: at the alignment of `u64`s, one in two could.
    #[repr(C, align(64))]
    struct Lines<const N: usize>([u64; N]);
    let aws = a_words::<B>(ww);
    let mut short = Lines([0u64; RB * 8]);
    let mut stack;
    let mut heap = Vec::new();
    let aw: &mut [u64] = if aws <= 8 {
        &mut short.0[..RB * aws]
    } else if aws <= 32 {
        stack = Lines([0u64; RB * 32]);
        &mut stack.0[..RB * aws]
    } else {
        heap.resize(RB * aws + 8, 0);
        let at = heap.as_ptr().align_offset(64).min(8);
        &mut heap[at..at + RB * aws]
    };
    let mut acc = [[0u64; 8]; RB];
    for i0 in (0..task.a_rows).step_by(RB) {
        let ri = (task.a_rows - i0).min(RB);
        // Rows past the last repeat the last one and are not written.
        for r in 0..RB {
            let row = &task.a[(i0 + r.min(ri - 1)) * task.a_stride..];
            a_row::<B>(row, ww, last, &mut aw[r * aws..(r + 1) * aws]);
        }
        // Whole blocks go from the registers to the output (in its type) where the padding adds
        // nothing to the counts.
        let whole = if pad == 0 { task.b_rows / 8 } else { 0 };
        if ri == RB {
            blocks_out::<E, B, RB>(isa, aw, packed, ww, whole, out, i0);
        } else {
            // The last rows of `a`: four in a block where there are four, the rest one at a time.
            // A row alone loads and prepares each word of `b` for itself (the AVX2 block its
            // nibbles, at a shift and two masks a word), and a task of five rows (ten queries on
            // two threads) had counted every row so.
            let quad = if ri >= QB { QB } else { 0 };
            if quad > 0 {
                blocks_out::<E, B, QB>(isa, &aw[..QB * aws], packed, ww, whole, out, i0);
            }
            for r in quad..ri {
                let a1 = &aw[r * aws..(r + 1) * aws];
                blocks_out::<E, B, 1>(isa, a1, packed, ww, whole, out, i0 + r);
            }
        }
        for jb in whole..blocks {
            let pb = &packed[jb * ww * 8..(jb + 1) * ww * 8];
            if ri == RB {
                block::<E, B, RB>(isa, aw, pb, ww, &mut acc);
            } else {
                // The last rows of `a`, one at a time: a block of eight would count every row
                // eight times over when `a` has fewer (a single query, say).
                for (r, acc_r) in acc.iter_mut().enumerate().take(ri) {
                    let mut one = [[0u64; 8]; 1];
                    block::<E, B, 1>(isa, &aw[r * aws..(r + 1) * aws], pb, ww, &mut one);
                    *acc_r = one[0];
                }
            }
            let cols = (task.b_rows - jb * 8).min(8);
            for (r, acc_r) in acc.iter_mut().enumerate().take(ri) {
                for a in acc_r.iter_mut() {
                    *a = a.wrapping_sub(pad);
                }
                if cols == 8 {
                    // A whole block: eight results narrowed in registers.
                    out.put8(i0 + r, jb * 8, acc_r);
                } else {
                    out.put_run(i0 + r, jb * 8, &acc_r[..cols]);
                }
            }
        }
    }
}

/// The first `blocks` packed blocks of `b` against `R` rows of `a`, the results written to rows
/// `i0..i0 + R` of `out`: the output size and the word count are constants in the loop.
#[inline(always)]
fn blocks_out<E: WideExpr, B: Block, const R: usize>(
    isa: B,
    aw: &[u64],
    packed: &[u64],
    ww: usize,
    blocks: usize,
    out: &mut PairOut<'_, '_>,
    i0: usize,
) {
    // Inlined, as every function of the tile is, so that it is compiled for the instruction set of
    // the version that calls it.
    #[inline(always)]
    fn each<E: WideExpr, B: Block, const R: usize, const WW: usize>(
        isa: B,
        aw: &[u64],
        packed: &[u64],
        blocks: usize,
        out: &mut PairOut<'_, '_>,
        i0: usize,
    ) {
        let es = out.es;
        match out.block_region(i0, 0, R, blocks * 8) {
            Some((dst, stride)) => isa.blocks_out::<E, WW, R>(es, aw, packed, blocks, dst, stride),
            None => {
                for (jb, pb) in packed.chunks_exact(WW * 8).take(blocks).enumerate() {
                    let mut acc = [[0u64; 8]; R];
                    isa.block::<E, WW, R>(aw, pb, &mut acc);
                    for (r, acc_r) in acc.iter().enumerate() {
                        out.put8(i0 + r, jb * 8, acc_r);
                    }
                }
            }
        }
    }
    by_const!(ww, WW in [1, 2, 3, 4, 5, 6, 8, 16] =>
        each::<E, B, R, WW>(isa, aw, packed, blocks, out, i0),
        _ => {
            for (jb, pb) in packed.chunks_exact(ww * 8).take(blocks).enumerate() {
                let mut acc = [[0u64; 8]; R];
                isa.block_any::<E, R>(aw, pb, ww, &mut acc);
                for (r, acc_r) in acc.iter().enumerate() {
                    out.put8(i0 + r, jb * 8, acc_r);
                }
            }
        }
    )
}

/// `R` rows of `a` (`ww` words each, in `aw`) against a packed block of eight rows of `b`. Codes of
/// up to six words, eight and sixteen are unrolled, so the accumulators stay in registers: for
/// codes of five words, the loop over a count known at run time ran behind the word tile, and
/// the unrolled one ahead of it (AVX2).
#[inline(always)]
fn block<E: WideExpr, B: Block, const R: usize>(
    isa: B,
    aw: &[u64],
    pb: &[u64],
    ww: usize,
    acc: &mut [[u64; 8]; R],
) {
    by_const!(ww, WW in [1, 2, 3, 4, 5, 6, 8, 16] =>
        isa.block::<E, WW, R>(aw, pb, acc),
        _ => isa.block_any::<E, R>(aw, pb, ww, acc))
}

/// A register block of the wide tile on one instruction set: `R` rows of `a` (`ww` words each, in
/// `aw`) against eight packed rows of `b` (`pb`), each pair's count of `E` over the words. A value
/// of the type is the proof that the CPU runs the instructions it uses.
pub(crate) trait Block: Copy {
    /// Whether a row of `a` comes to the block as its nibbles: the low four bits of each byte of
    /// its `ww` words ([`NIBBLE`]), then the high four bits shifted down, each word four times
    /// over (a vector of four lanes), `8 * ww` words in all. A lookup by nibble then shifts and
    /// masks only `b`, once for all the block's rows, and reads the row's vectors as they lie.
    const NIBBLES: bool = false;
    /// The block for codes of `WW` words, unrolled (the word count a constant), into `out`.
    #[inline(always)]
    fn block<E: WideExpr, const WW: usize, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        out: &mut [[u64; 8]; R],
    ) {
        self.block_any::<E, R>(&aw[..R * a_words::<Self>(WW)], &pb[..WW * 8], WW, out)
    }
    /// [`block`](Self::block) for the first `blocks` packed blocks of `b`, the results written in
    /// the output's type: row `r`'s from byte `r * stride` of `dst`, one after another.
    #[inline(always)]
    fn blocks_out<E: WideExpr, const WW: usize, const R: usize>(
        self,
        es: usize,
        aw: &[u64],
        packed: &[u64],
        blocks: usize,
        dst: &mut [u8],
        stride: usize,
    ) {
        for (jb, pb) in packed.chunks_exact(WW * 8).take(blocks).enumerate() {
            let mut acc = [[0u64; 8]; R];
            self.block::<E, WW, R>(aw, pb, &mut acc);
            for (r, acc_r) in acc.iter().enumerate() {
                write8(es, &mut dst[r * stride + jb * 8 * es..], acc_r);
            }
        }
    }
    /// The block for any number of words, into `out`: row `r` of `a` in
    /// `aw[r * a_words::<Self>(ww)..]`.
    fn block_any<E: WideExpr, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        ww: usize,
        out: &mut [[u64; 8]; R],
    );
}

/// Scalar blocks, for any CPU: the compiler's bit count of each word.
#[derive(Clone, Copy)]
pub(crate) struct Scalar;

impl Block for Scalar {
    #[inline(always)]
    fn block_any<E: WideExpr, const R: usize>(
        self,
        aw: &[u64],
        pb: &[u64],
        ww: usize,
        acc: &mut [[u64; 8]; R],
    ) {
        *acc = [[0u64; 8]; R];
        for (r, acc_r) in acc.iter_mut().enumerate() {
            for (w, bw) in pb.chunks_exact(8).enumerate().take(ww) {
                let av = aw[r * ww + w];
                for (a, &b) in acc_r.iter_mut().zip(bw) {
                    *a += u64::from(E::wide([av, b]).count_ones());
                }
            }
        }
    }
}

#[inline(always)]
fn read<W: Word>(row: &[u8], e: usize, es: usize) -> W {
    bytemuck::pod_read_unaligned(&row[e * es..e * es + es])
}

/// Element by element: each pair of rows folds `elem` over its `k` elements.
#[inline(always)]
pub(crate) fn pair_elems_body<W: Word>(
    task: &PairTask<'_>,
    out: &mut PairOut<'_, '_>,
    elem: &impl Fn([W; 2]) -> u64,
) {
    let es = task.elem_size;
    let row_bytes = task.elems * es;
    // Rows of no element (K = 0) may lie past the end of empty buffers.
    fn row(buf: &[u8], at: usize, len: usize) -> &[u8] {
        if len == 0 { &[] } else { &buf[at..at + len] }
    }
    for i in 0..task.a_rows {
        let ar = row(task.a, i * task.a_stride, row_bytes);
        for j in 0..task.b_rows {
            let br = row(task.b, j * task.b_stride, row_bytes);
            let mut acc = task.identity;
            match task.op {
                ReduceOp::Sum => {
                    for e in 0..task.elems {
                        acc += elem([read::<W>(ar, e, es), read::<W>(br, e, es)]);
                    }
                }
                op => {
                    for e in 0..task.elems {
                        acc = op.combine(acc, elem([read::<W>(ar, e, es), read::<W>(br, e, es)]));
                    }
                }
            }
            out.put(i, j, acc);
        }
    }
}
