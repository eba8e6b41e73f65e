//! Ten 16-byte queries against 1,000 16-byte codes into `u32` distances, five ways, on one
//! thread in a hot loop: the medians of 2,001 calls per way, five rounds. Every way's output is
//! compared with a plain loop's before it is timed. Needs an x86-64 CPU with AVX2 and POPCNT.

use std::arch::x86_64::*;
use std::time::Instant;

/// Codes of `b` and rows of `a`.
const N: usize = 1000;
const M: usize = 10;

/// Bit counts of the 32 bytes of `v` by nibble lookup, as the library's AVX2 kernels count.
#[inline(always)]
unsafe fn byte_counts(v: __m256i) -> __m256i {
    unsafe {
        let lut = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2,
            3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let lo = _mm256_and_si256(v, low);
        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
        _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
    }
}

/// The four 64-bit lanes of `v` (each below 2^32) as four `u32`s.
#[inline(always)]
unsafe fn low_halves(v: __m256i) -> __m128i {
    unsafe {
        let (lo, hi) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(
            _mm_castsi128_ps(lo),
            _mm_castsi128_ps(hi),
        ))
    }
}

/// Four distances of row `x` (its two words broadcast) against the four codes whose words are
/// `b0` and `b1`.
#[inline(always)]
unsafe fn four(x: (__m256i, __m256i), b0: __m256i, b1: __m256i) -> __m256i {
    unsafe {
        let c = _mm256_add_epi8(
            byte_counts(_mm256_xor_si256(b0, x.0)),
            byte_counts(_mm256_xor_si256(b1, x.1)),
        );
        _mm256_sad_epu8(c, _mm256_setzero_si256())
    }
}

#[inline(always)]
unsafe fn row(a: &[u64; 2]) -> (__m256i, __m256i) {
    unsafe {
        (
            _mm256_set1_epi64x(a[0] as i64),
            _mm256_set1_epi64x(a[1] as i64),
        )
    }
}

/// `b` packed as the library's wide tile packs it (per block of eight codes, word `w` of code
/// `c` at `w * 8 + c`), `R` rows of `a` per load of a block.
#[inline(always)]
unsafe fn packed_rows<const R: usize>(a: &[[u64; 2]], packed: &[u64], out: &mut [u32], i0: usize) {
    unsafe {
        let mut x = [(_mm256_setzero_si256(), _mm256_setzero_si256()); R];
        for (r, x) in x.iter_mut().enumerate() {
            *x = row(&a[i0 + r]);
        }
        for jb in 0..N / 8 {
            let pb = packed.as_ptr().add(jb * 16);
            for h in 0..2 {
                let b0 = _mm256_loadu_si256(pb.add(h * 4).cast());
                let b1 = _mm256_loadu_si256(pb.add(8 + h * 4).cast());
                let mut s = [_mm256_setzero_si256(); R];
                for r in 0..R {
                    s[r] = four(x[r], b0, b1);
                }
                for r in 0..R {
                    let o = out.as_mut_ptr().add((i0 + r) * N + jb * 8 + h * 4);
                    _mm_storeu_si128(o.cast(), low_halves(s[r]));
                }
            }
        }
    }
}

/// What the library's tile does: eight rows per load, the rows left over one at a time.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn packed_eight(a: &[[u64; 2]], packed: &[u64], out: &mut [u32]) {
    unsafe {
        let mut i = 0;
        while i + 8 <= M {
            packed_rows::<8>(a, packed, out, i);
            i += 8;
        }
        for i in i..M {
            packed_rows::<1>(a, packed, out, i);
        }
    }
}

/// The same one row at a time.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn packed_one(a: &[[u64; 2]], packed: &[u64], out: &mut [u32]) {
    unsafe {
        for i in 0..M {
            packed_rows::<1>(a, packed, out, i);
        }
    }
}

/// FAISS's method: two scalar `popcnt`s a distance (two rows per load of `b`).
#[target_feature(enable = "avx2,popcnt")]
unsafe fn scalar(a: &[[u64; 2]], b: &[[u64; 2]], out: &mut [u32]) {
    let pc = |x: u64| x.count_ones();
    let mut i = 0;
    while i + 2 <= M {
        let (p, q) = (a[i], a[i + 1]);
        let (o0, o1) = out[i * N..(i + 2) * N].split_at_mut(N);
        for ((d0, d1), c) in o0.iter_mut().zip(o1.iter_mut()).zip(b) {
            *d0 = pc(p[0] ^ c[0]) + pc(p[1] ^ c[1]);
            *d1 = pc(q[0] ^ c[0]) + pc(q[1] ^ c[1]);
        }
        i += 2;
    }
    for i in i..M {
        for (d, c) in out[i * N..(i + 1) * N].iter_mut().zip(b) {
            *d = pc(a[i][0] ^ c[0]) + pc(a[i][1] ^ c[1]);
        }
    }
}

/// Half of each packed block by lookup and half by `popcnt`: the vector and the integer pipes
/// at once.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn mixed(a: &[[u64; 2]], packed: &[u64], out: &mut [u32]) {
    unsafe {
        for i in 0..M {
            let x = row(&a[i]);
            let o = out.as_mut_ptr().add(i * N);
            for jb in 0..N / 8 {
                let pb = packed.as_ptr().add(jb * 16);
                let b0 = _mm256_loadu_si256(pb.cast());
                let b1 = _mm256_loadu_si256(pb.add(8).cast());
                _mm_storeu_si128(o.add(jb * 8).cast(), low_halves(four(x, b0, b1)));
                for c in 4..8 {
                    *o.add(jb * 8 + c) = (a[i][0] ^ *pb.add(c)).count_ones()
                        + (a[i][1] ^ *pb.add(8 + c)).count_ones();
                }
            }
        }
    }
}

/// `b` as it lies, two codes to a register, `R` rows per load.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn as_it_lies<const R: usize>(a: &[[u64; 2]], b: &[[u64; 2]], out: &mut [u32]) {
    unsafe {
        let mut i = 0;
        while i + R <= M {
            lies_rows::<R>(a, b, out, i);
            i += R;
        }
        for i in i..M {
            lies_rows::<1>(a, b, out, i);
        }
    }
}

#[inline(always)]
unsafe fn lies_rows<const R: usize>(a: &[[u64; 2]], b: &[[u64; 2]], out: &mut [u32], i: usize) {
    unsafe {
        let mut x = [_mm256_setzero_si256(); R];
        for (r, x) in x.iter_mut().enumerate() {
            let (w0, w1) = (a[i + r][0] as i64, a[i + r][1] as i64);
            *x = _mm256_setr_epi64x(w0, w1, w0, w1);
        }
        let bp = b.as_ptr() as *const u64;
        let z = _mm256_setzero_si256();
        for j in (0..N).step_by(8) {
            // Closures (`array::map`) would not inherit the target features: plain arrays.
            let p = bp.add(j * 2);
            let v = [
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(4).cast()),
                _mm256_loadu_si256(p.add(8).cast()),
                _mm256_loadu_si256(p.add(12).cast()),
            ];
            for (r, x) in x.iter().enumerate() {
                // Lanes of each register: code 2q's words, then code 2q + 1's; each code's sum
                // in the low lane of its pair.
                let mut d = [z; 4];
                for q in 0..4 {
                    let c = _mm256_sad_epu8(byte_counts(_mm256_xor_si256(v[q], *x)), z);
                    d[q] = _mm256_add_epi64(c, _mm256_srli_si256::<8>(c));
                }
                let e0 = _mm256_or_si256(d[0], _mm256_slli_epi64::<32>(d[1]));
                let e1 = _mm256_or_si256(d[2], _mm256_slli_epi64::<32>(d[3]));
                let f = _mm256_unpacklo_epi64(e0, e1);
                let g = _mm256_permutevar8x32_epi32(f, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
                _mm256_storeu_si256(out.as_mut_ptr().add((i + r) * N + j).cast(), g);
            }
        }
    }
}

fn main() {
    assert!(
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt"),
        "this comparison needs AVX2 and POPCNT"
    );
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let a: Vec<[u64; 2]> = (0..M).map(|_| [rnd(), rnd()]).collect();
    let b: Vec<[u64; 2]> = (0..N).map(|_| [rnd(), rnd()]).collect();
    let mut packed = vec![0u64; N * 2];
    for (j, c) in b.iter().enumerate() {
        packed[j / 8 * 16 + j % 8] = c[0];
        packed[j / 8 * 16 + 8 + j % 8] = c[1];
    }
    let want: Vec<u32> = (0..M * N)
        .map(|x| {
            let (i, j) = (x / N, x % N);
            (a[i][0] ^ b[j][0]).count_ones() + (a[i][1] ^ b[j][1]).count_ones()
        })
        .collect();
    let ways: [(&str, &dyn Fn(&mut [u32])); 7] = [
        ("packed, eight rows per load", &|o| unsafe {
            packed_eight(&a, &packed, o)
        }),
        ("packed, one row per load", &|o| unsafe {
            packed_one(&a, &packed, o)
        }),
        ("scalar popcnt", &|o| unsafe { scalar(&a, &b, o) }),
        ("half lookup, half popcnt", &|o| unsafe {
            mixed(&a, &packed, o)
        }),
        ("as it lies, one row", &|o| unsafe {
            as_it_lies::<1>(&a, &b, o)
        }),
        ("as it lies, two rows", &|o| unsafe {
            as_it_lies::<2>(&a, &b, o)
        }),
        ("as it lies, four rows", &|o| unsafe {
            as_it_lies::<4>(&a, &b, o)
        }),
    ];
    let mut out = vec![0u32; M * N];
    for round in 0..5 {
        for (name, f) in &ways {
            out.fill(0);
            f(&mut out);
            assert!(out == want, "{name}: distances differ from a plain loop's");
            let mut t: Vec<u128> = (0..2001)
                .map(|_| {
                    let start = Instant::now();
                    f(std::hint::black_box(&mut out));
                    start.elapsed().as_nanos()
                })
                .collect();
            t.sort_unstable();
            println!(
                "round {round}: {name}: {:.2} us",
                t[t.len() / 2] as f64 / 1000.0
            );
        }
    }
}
