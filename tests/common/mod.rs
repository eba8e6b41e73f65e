//! A plain scalar reference for the ops, written independently of the library: bit patterns as `u64`,
//! its own broadcasting, one element at a time.

#![allow(dead_code, reason = "each test binary uses a different part")]

pub mod cases;
pub mod gpu;
pub mod reduce;

use tensorbits::DataType;

/// splitmix64: a small deterministic generator, so a failing proptest seed reproduces exactly.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

pub fn mask(dt: DataType) -> u64 {
    u64::MAX >> (64 - dt.bits())
}

/// Sign-extends a bit pattern of `dt`'s width.
pub fn signed(dt: DataType, v: u64) -> i64 {
    let sh = 64 - dt.bits();
    ((v << sh) as i64) >> sh
}

/// One element of op `name` on bit patterns `x` of type `dt`; returns the output's bit pattern.
pub fn eval(name: &str, dt: DataType, x: &[u64]) -> u64 {
    let m = mask(dt);
    let b = |v: u64| (v != 0) as u64;
    let is_bool = dt == DataType::Bool;
    match name {
        "ELEMENT_WISE_BIT_AND" if is_bool => b(x[0]) & b(x[1]),
        "ELEMENT_WISE_BIT_OR" if is_bool => b(x[0]) | b(x[1]),
        "ELEMENT_WISE_BIT_XOR" if is_bool => b(x[0]) ^ b(x[1]),
        "ELEMENT_WISE_BIT_NOT" if is_bool => 1 - b(x[0]),
        "ELEMENT_WISE_BIT_AND" => x[0] & x[1],
        "ELEMENT_WISE_BIT_OR" => x[0] | x[1],
        "ELEMENT_WISE_BIT_XOR" => x[0] ^ x[1],
        "ELEMENT_WISE_BIT_NOT" => !x[0] & m,
        "ELEMENT_WISE_BIT_SHIFT_LEFT" => shl(dt, x[0], x[1]),
        "ELEMENT_WISE_BIT_SHIFT_RIGHT" => shr(dt, x[0], x[1]),
        "ELEMENT_WISE_BIT_COUNT" => (x[0] & m).count_ones() as u64,
        "BIT_SELECT" if is_bool => (b(x[0]) & b(x[2])) | (b(x[1]) & (1 - b(x[2]))),
        "BIT_SELECT" => (x[0] & x[2]) | (x[1] & !x[2] & m),
        // (a.wrapping_shl(b) ^ !a) | (b >> 1)
        "TEST_MIXED" => {
            let w = dt.bits() as u64;
            let wshl = (x[0] << (x[1] % w)) & m;
            (wshl ^ (!x[0] & m)) | shr(dt, x[1], 1)
        }
        other => panic!("no reference for {other}"),
    }
}

fn count_in_range(dt: DataType, c: u64) -> Option<u32> {
    let w = dt.bits() as i64;
    let c = if dt.is_signed() {
        signed(dt, c)
    } else {
        c as i64
    };
    // An unsigned u64 count >= 2^63 reads as negative here, which is out of range either way.
    (0..w).contains(&c).then_some(c as u32)
}

pub fn shl(dt: DataType, v: u64, c: u64) -> u64 {
    match count_in_range(dt, c) {
        Some(c) => (v << c) & mask(dt),
        None => 0,
    }
}

pub fn shr(dt: DataType, v: u64, c: u64) -> u64 {
    let m = mask(dt);
    if dt.is_signed() {
        let s = signed(dt, v);
        match count_in_range(dt, c) {
            Some(c) => (s >> c) as u64 & m,
            None if s < 0 => m,
            None => 0,
        }
    } else {
        match count_in_range(dt, c) {
            Some(c) => (v & m) >> c,
            None => 0,
        }
    }
}

/// Reads element `index` (in elements) of `dt` from little-endian bytes.
pub fn read(bytes: &[u8], dt: DataType, index: usize) -> u64 {
    let s = dt.size();
    let mut buf = [0u8; 8];
    buf[..s].copy_from_slice(&bytes[index * s..index * s + s]);
    u64::from_le_bytes(buf)
}

/// All multi-indices of `shape` in C order.
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in shape {
        let mut next = Vec::new();
        for prefix in &out {
            for i in 0..n {
                let mut p = prefix.clone();
                p.push(i);
                next.push(p);
            }
        }
        out = next;
    }
    out
}

/// How an input's dimensions map onto the output's: numpy right-aligns; pdpd starts at `axis`.
pub fn input_coords(out_idx: &[usize], in_shape: &[usize], start: usize) -> Vec<usize> {
    (0..in_shape.len())
        .map(|j| {
            let k = start + j;
            if in_shape[j] == 1 || k >= out_idx.len() {
                0
            } else {
                out_idx[k]
            }
        })
        .collect()
}

/// The reference knn: every row's `(value, index)` pairs, best first (largest or smallest), ties by
/// the lower index, cut to `k`.
pub fn knn_reference(values: &[i64], n: usize, k: usize, largest: bool) -> Vec<Vec<(i64, i64)>> {
    values
        .chunks(n)
        .map(|row| {
            let mut v: Vec<(i64, i64)> = row
                .iter()
                .enumerate()
                .map(|(j, &d)| (d, j as i64))
                .collect();
            v.sort_by_key(|&(d, j)| (if largest { -d } else { d }, j));
            v.truncate(k);
            v
        })
        .collect()
}
