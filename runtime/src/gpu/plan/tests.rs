//! The plan's bounds, without a GPU: for shapes up to 2^32 elements and knn's k up to N, every
//! dispatch's invocations stay under [`MAX_LOOP_ITERATIONS`], its windows under the binding limit,
//! its workgroups under the per-dimension limit; every element is folded by exactly one unit; and
//! the passes end in one result per output.

use super::*;
use tensorbits_core::wgsl::{KNN_TILE, MAX_LOOP_ITERATIONS};

/// lavapipe's limits, and a device whose limits are lowered so that splitting happens at small
/// sizes.
const LAVAPIPE: Limits = Limits {
    max_binding: 1 << 27,
    offset_align: 256,
    max_groups: 65535,
};
const TINY: Limits = Limits {
    max_binding: 4096,
    offset_align: 256,
    max_groups: 4,
};

/// The header fields and sizes of a uniform block.
fn decode(params: &[u8]) -> (Header, Vec<u64>) {
    let at = |i: usize| u32::from_le_bytes(params[4 * i..4 * i + 4].try_into().unwrap());
    let h = Header {
        count: at(0),
        elements: at(2),
        kept: at(3),
        chunk: at(4),
        mode: at(5),
        slot_stride: at(6),
        extra: at(7),
        epilogue: Epilogue {
            offset: u64::from(at(8)) | u64::from(at(9)) << 32,
            scale: u64::from(at(10)) | u64::from(at(11)) << 32,
            flip: (at(12) != 0).then(|| at(13)),
        },
    };
    let rank = at(1) as usize;
    // The sizes follow the header's two vec4s of the epilogue.
    let sizes = (0..rank).map(|d| u64::from(at(16 + d))).collect();
    (h, sizes)
}

fn packed(dims: &[u64]) -> Vec<u64> {
    let mut s = vec![0; dims.len()];
    let mut acc = 1;
    for d in (0..dims.len()).rev() {
        s[d] = acc;
        acc *= dims[d];
    }
    s
}

/// A reduction of a packed tensor `dims` of `es`-byte elements over the dimensions from `kept` on,
/// with `arity` inputs.
fn reduction(layout: Layout, dims: &[u64], kept: usize, es: u64, arity: usize) -> Reduction {
    let st = packed(dims);
    let mut strides: [Vec<u64>; SLOTS] = Default::default();
    for s in strides.iter_mut().take(arity) {
        *s = st.clone();
    }
    let out = packed(&dims[..kept]);
    strides[OUTPUT_SLOT] = out
        .into_iter()
        .chain(std::iter::repeat(0))
        .take(dims.len())
        .collect();
    Reduction {
        layout,
        dims: dims.to_vec(),
        kept,
        strides,
        elem: [es; SLOTS],
        offset: [0; SLOTS],
        arity,
        acc_bytes: 8,
        epilogue: Epilogue::IDENTITY,
    }
}

/// Checks every bound of a reduction's plan and that its first pass folds every element once and
/// its last pass writes the outputs.
fn check_reduction(r: &Reduction, lim: &Limits) {
    let p = plan_reduction(r, lim).unwrap_or_else(|e| panic!("{:?} {:?}: {e:?}", r.layout, r.dims));
    let outputs: u64 = r.dims[..r.kept].iter().product();
    let total: u64 = r.dims.iter().product();
    if outputs == 0 {
        assert!(p.passes.is_empty());
        return;
    }
    assert!(p.scratch.iter().all(|&b| b <= u64::MAX / 2));
    let last = p.passes.last().expect("a pass");
    assert_eq!(last.output, Buffer::Call, "the last pass writes the output");
    for (i, pass) in p.passes.iter().enumerate() {
        assert_eq!(pass.input == Buffer::Call, i == 0);
        let mut folded = 0u64;
        for d in &pass.dispatches {
            assert!(
                d.iterations <= MAX_LOOP_ITERATIONS,
                "{:?} {:?}: {} iterations",
                pass.layout,
                r.dims,
                d.iterations
            );
            assert!(d.groups.0 <= lim.max_groups && d.groups.1 <= lim.max_groups);
            for w in d.windows {
                assert!(w.size <= lim.max_binding, "window of {} bytes", w.size);
                assert_eq!(w.offset % lim.offset_align, 0);
            }
            let (h, sizes) = decode(&d.params);
            let kept = h.kept as usize;
            let chunks = u64::from(h.elements).div_ceil(u64::from(h.chunk)).max(1);
            // The units cover the box: outputs (or tiles) x chunks.
            let box_outputs: u64 = sizes[..kept].iter().product();
            assert_eq!(u64::from(h.count) % chunks, 0);
            assert!(u64::from(h.elements) <= MAX_PIECE);
            let reduced: u64 = sizes[kept..].iter().product();
            assert_eq!(reduced, u64::from(h.elements));
            folded += box_outputs * reduced;
            // The same loop model as the plan's, from the dispatch's own block.
            assert_eq!(
                loop_iterations(
                    pass.layout,
                    sizes.len() as u64,
                    kept as u64,
                    u64::from(h.chunk)
                ),
                d.iterations
            );
            assert_eq!(h.mode == MODE_FINAL, pass.output == Buffer::Call);
        }
        if i == 0 {
            assert_eq!(folded, total, "{:?}: every element folded once", r.dims);
        }
    }
}

#[test]
fn reductions_up_to_2_pow_32_elements_are_bounded() {
    let shapes: &[(&[u64], usize)] = &[
        (&[1 << 32], 0),
        (&[5_000_000], 0),
        (&[1, 1 << 32], 1),
        (&[3, (1 << 31) + 5], 1),
        (&[1 << 16, 1 << 16], 1),
        (&[70_000, 300], 1),
        (&[1 << 20, 1 << 12], 1),
        (&[1 << 31, 2], 1),
        (&[7, 1 << 14, 3, 1 << 14], 2),
        (&[2, 3, 5, 7, 11, 13, 17, 19], 3),
        (&[4, 0, 5], 1),
        (&[0, 5], 1),
        (&[1], 1),
    ];
    for &(dims, kept) in shapes {
        for layout in [Layout::Reduce, Layout::ReduceRows] {
            for es in [1, 4, 8] {
                check_reduction(&reduction(layout, dims, kept, es, 1), &LAVAPIPE);
                check_reduction(&reduction(layout, dims, kept, es, 2), &LAVAPIPE);
            }
        }
    }
}

#[test]
fn reductions_split_past_tiny_limits() {
    let shapes: &[(&[u64], usize)] = &[
        (&[100_000], 0),
        (&[300, 700], 1),
        (&[300, 700], 0),
        (&[5, 6, 7, 8], 2),
        (&[1000, 3], 1),
    ];
    for &(dims, kept) in shapes {
        for layout in [Layout::Reduce, Layout::ReduceRows] {
            for es in [1, 2, 8] {
                check_reduction(&reduction(layout, dims, kept, es, 2), &TINY);
            }
        }
    }
}

#[test]
fn pairwise_ops_up_to_2_pow_32_elements_are_bounded() {
    let shapes: &[&[u64]] = &[
        &[1, 1, 1 << 32],
        &[4, 4, 1 << 28],
        &[1 << 16, 1 << 16, 1],
        &[1000, 1_000_000, 8],
        &[3, 5, 7, 100_000],
        &[2, 0, 3, 4],
    ];
    for &dims in shapes {
        for layout in [Layout::Pairwise, Layout::PairWords] {
            let kept = dims.len() - 1;
            let mut r = reduction(layout, dims, kept, 4, 2);
            // a [..., M, K] and b [..., N, K]: a's stride over N and b's over M are 0.
            let nb = kept - 2;
            let k = dims[kept];
            r.strides[0][nb + 1] = 0;
            r.strides[0][nb] = k;
            r.strides[1][nb] = 0;
            r.strides[1][nb + 1] = k;
            check_reduction_pairwise(&r, &LAVAPIPE);
        }
    }
}

/// As [`check_reduction`], for a pairwise op: units are tiles, and every (m, n, k) is folded once.
fn check_reduction_pairwise(r: &Reduction, lim: &Limits) {
    let p = plan_reduction(r, lim).unwrap();
    for pass in &p.passes {
        for d in &pass.dispatches {
            assert!(d.iterations <= MAX_LOOP_ITERATIONS, "{:?}", r.dims);
            assert!(d.groups.0 <= lim.max_groups && d.groups.1 <= lim.max_groups);
            assert!(d.windows.iter().all(|w| w.size <= lim.max_binding));
        }
    }
    let outputs: u64 = r.dims[..r.kept].iter().product();
    if outputs > 0 {
        assert_eq!(p.passes.last().unwrap().output, Buffer::Call);
    }
}

fn knn_shape(m: u64, n: u64, kdim: u64, k: u64) -> KnnShape {
    KnnShape {
        m,
        n,
        kdim,
        k,
        a_strides: (kdim, 1),
        b_strides: (kdim, 1),
        elem: 4,
        a_offset: 0,
        b_offset: 0,
        dist_bytes: 4,
        dist_offset: 0,
        idx_offset: 0,
        epilogue: Epilogue::IDENTITY,
    }
}

/// Checks every bound of a knn plan, that the tiles cover the database once per row of `a`, that
/// every list entry read or written lies inside the scratch buffers, and that the last merge of
/// each batch writes the outputs.
fn check_knn(s: &KnnShape, lim: &Limits) {
    let p = plan_knn(s, lim).unwrap_or_else(|e| panic!("{s:?}: {e:?}"));
    let mut covered = 0u64;
    let mut finals = 0u64;
    for d in &p.dispatches {
        assert!(
            d.iterations <= MAX_LOOP_ITERATIONS,
            "{s:?}: {} iterations",
            d.iterations
        );
        assert!(d.groups.0 <= lim.max_groups && d.groups.1 <= lim.max_groups);
        for w in [d.a, d.b, d.dist, d.idx].into_iter().flatten() {
            assert!(w.size <= lim.max_binding, "{s:?}: window of {}", w.size);
        }
        assert!(p.scratch <= lim.max_binding);
        let (h, sizes) = decode(&d.params);
        match d.layout {
            Layout::Knn => {
                let rows_of_a = sizes[0];
                let keep = u64::from(h.slot_stride);
                // Units and lists of the dispatch: tiles (a workgroup each) or, in local mode, 64
                // invocations' lists to a span.
                let (here, units) = if h.kept == 1 {
                    (sizes[6], rows_of_a * sizes[6])
                } else {
                    let tiles = sizes[1].div_ceil(u64::from(h.chunk));
                    assert_eq!(u64::from(h.chunk), knn_tile(s.kdim, s.n).unwrap());
                    (tiles, rows_of_a * tiles)
                };
                assert_eq!(u64::from(h.count), units);
                assert!(keep <= s.k);
                covered += rows_of_a * sizes[1];
                if h.mode == MODE_PARTIAL {
                    // The last entry written: the last row's last list.
                    let end = ((sizes[4] + rows_of_a - 1) * sizes[3] + u64::from(h.extra) + here
                        - 1)
                        * keep
                        + keep;
                    assert!(
                        end * 8 <= p.scratch,
                        "{s:?}: the first pass writes past the lists"
                    );
                } else {
                    finals += rows_of_a;
                }
            }
            Layout::KnnMerge => {
                let (cap_in, cap_out, lists_in, lists_out) =
                    (sizes[2], sizes[3], sizes[4], sizes[5]);
                let rows = u64::from(h.count) / (2 * cap_in * lists_out);
                assert!(
                    rows * lists_in * cap_in * 8 <= p.scratch,
                    "{s:?}: merge reads past"
                );
                if h.mode == MODE_PARTIAL {
                    assert!(
                        rows * lists_out * cap_out * 8 <= p.scratch,
                        "{s:?}: merge writes past"
                    );
                } else {
                    assert_eq!(lists_out, 1);
                    assert_eq!(cap_out, s.k);
                    if h.extra == 0 {
                        finals += rows;
                    }
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        covered,
        s.m * s.n,
        "{s:?}: every row of b once per row of a"
    );
    assert_eq!(finals, s.m, "{s:?}: every row of a gets its k");
}

#[test]
fn knn_for_every_k_up_to_n_is_bounded() {
    for &(n, kdim) in &[
        (1u64, 1u64),
        (2, 8),
        (1000, 8),
        (65_537, 2),
        (1_000_000, 8),
        (1_000_000, 2),
        ((1u64 << 32) / 8, 2),
        (100_000, 8191),
        (300, 600),
    ] {
        let mut ks = vec![
            1,
            2,
            10,
            16,
            17,
            32,
            33,
            100,
            511,
            512,
            513,
            n / 2,
            n - 1,
            n,
        ];
        ks.retain(|&k| k >= 1 && k <= n);
        for k in ks {
            let m = if n * k > 1 << 28 { 1 } else { 3 };
            let s = knn_shape(m, n, kdim, k);
            match plan_knn(&s, &LAVAPIPE) {
                Ok(_) => check_knn(&s, &LAVAPIPE),
                // Lists that cannot fit one binding are an error naming them, never a wrong plan.
                Err(e) => assert!(
                    e.bytes
                        .is_some_and(|b| b > LAVAPIPE.max_binding - LAVAPIPE.offset_align)
                        || e.what.contains("rows of"),
                    "{s:?}: {e:?}"
                ),
            }
        }
    }
}

#[test]
fn knn_splits_past_tiny_limits() {
    for &(m, n, kdim, k) in &[(20, 500, 2, 3), (5, 300, 1, 300), (9, 130, 4, 17)] {
        let mut s = knn_shape(m, n, kdim, k);
        s.elem = 1;
        s.dist_bytes = 2;
        check_knn(&s, &TINY);
    }
}

#[test]
fn rows_too_long_for_a_tile_are_an_error() {
    let e = plan_knn(&knn_shape(1, 10, 9000, 1), &LAVAPIPE).unwrap_err();
    assert!(e.what.contains("at most 8159"), "{e:?}");
    assert_eq!(e.bytes, None, "not a binding's limit");
    let e = plan_knn(&knn_shape(1, 100, 9000, 40), &LAVAPIPE).unwrap_err();
    assert!(e.what.contains("at most 8191"), "{e:?}");
    assert_eq!(knn_tile(8191, 10), Some(64));
    assert_eq!(knn_tile(8191, 100_000), Some(64));
    assert_eq!(knn_tile(1200, 100_000), Some(6 * 64));
    assert_eq!(knn_tile(8, 100), Some(128));
    assert_eq!(knn_tile(8, 100_000), Some(512));
    assert_eq!(knn_tile(8, 1_000_000), Some(u64::from(KNN_TILE)));
}
