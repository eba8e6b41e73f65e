//! The arithmetic of ratio ops (`compute = N / D`, such as TANIMOTO): a pair's `N` and `D` from
//! its counts, the exact fraction rounded once to `f32` or `f64`, and the keys that order the
//! exact fractions for knn and range search ([`key`], [`key_limit`]). The CPU's tiles
//! (`cpu/ratio.rs`) compute the counts.

use crate::DataType;
use tensorbits_core::Ratio;

/// A validated ratio call: the ratio, and each row's elements and valid bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RatioPlan {
    pub(crate) ratio: Ratio,
    pub(crate) elements: u64,
    pub(crate) bits: u64,
    /// For knn and range search: whether the largest values come first (their keys then fall
    /// as the values grow).
    pub(crate) largest: bool,
}

/// What a ratio tile writes for each pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writes {
    /// The results, as the bits of an `f32` or `f64`.
    Values(DataType),
    /// knn's keys ([`key`]).
    Keys,
}

/// The most `|N|` or `|D|` may reach for results of `f32` (24 bits: an integer and its quotient
/// are then rounded once, through `f64`) or `f64` (53 bits: both are exact `f64`s).
pub(crate) const fn exact_bits(out: DataType) -> u32 {
    match out {
        DataType::F32 => 24,
        _ => 53,
    }
}

impl RatioPlan {
    /// The largest `|N|` and `|D|` any pair of the call can give.
    pub(crate) fn bounds(&self) -> (u128, u128) {
        (
            self.ratio.num.max_abs(self.elements, self.bits),
            self.ratio.den.max_abs(self.elements, self.bits),
        )
    }

    /// The largest sum of the magnitudes of the terms of `N` or `D`: what their sums in the
    /// kernels can reach on the way.
    pub(crate) fn terms(&self) -> u128 {
        let side = |c: tensorbits_core::Counts| {
            let m = [c.bits, c.a, c.b, c.both].map(|x| u128::from(x.unsigned_abs()));
            u128::from(c.constant.unsigned_abs()) * u128::from(self.elements)
                + m.iter().sum::<u128>() * u128::from(self.bits)
        };
        side(self.ratio.num).max(side(self.ratio.den))
    }
}

/// A call's ratio with its constant terms folded: `N = n[0] + n[1] |a| + n[2] |b| + n[3] |a & b|`
/// and `D` alike, in `i64` (validation bounds every term below 2^62), and what to write.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terms {
    pub(crate) n: [i64; 4],
    pub(crate) d: [i64; 4],
    pub(crate) writes: Writes,
    pub(crate) largest: bool,
    /// Every `|N|` and `|D|` below 2^24: an `f32` result is one `f32` division.
    pub(crate) small: bool,
    /// Every term of `N` and `D` an integer below 2^53, and every count below 2^32: both are
    /// summed exactly in `f64`.
    pub(crate) exact: bool,
}

impl Terms {
    pub(crate) fn new(rp: &RatioPlan, writes: Writes) -> Terms {
        let (e, w) = (rp.elements as i64, rp.bits as i64);
        let side = |c: tensorbits_core::Counts| [c.constant * e + c.bits * w, c.a, c.b, c.both];
        let (num, den) = rp.bounds();
        Terms {
            n: side(rp.ratio.num),
            d: side(rp.ratio.den),
            writes,
            largest: rp.largest,
            small: num.max(den) < 1 << 24,
            exact: rp.bits < 1 << 32 && rp.terms() < 1 << 53,
        }
    }
}

/// `n / d` rounded once to an `f64` (`|n|` and `|d|` below 2^53, so both are exact): 0 for 0 / 0,
/// an infinity for another number over 0.
#[inline(always)]
pub(crate) fn quotient(n: i64, d: i64) -> f64 {
    match (n, d) {
        (0, 0) => 0.0,
        _ => n as f64 / d as f64,
    }
}

/// `n / d` rounded once to an `f32`: through `f64` where both are below 2^24 (a quotient of two
/// `f32`s rounded to 53 bits and then to 24 is rounded once: 53 >= 2 * 24 + 2), else from the
/// `f64` quotient, whose one ambiguous case (it lies halfway between two `f32`s) is settled
/// against the exact fraction.
pub(crate) fn to_f32(n: i64, d: i64) -> f32 {
    let q = quotient(n, d);
    let small = n.unsigned_abs() < 1 << 24 && d.unsigned_abs() < 1 << 24;
    let bits = q.to_bits();
    if small || !q.is_finite() || q == 0.0 || bits & ((1 << 29) - 1) != 1 << 28 {
        return q as f32;
    }
    // `|q| = m * 2^e` lies halfway between two `f32`s: `|n / d|` against it, exactly. Both
    // sides are near `m * |d|` (below 2^106).
    let m = u128::from(bits & ((1 << 52) - 1) | 1 << 52);
    let e = ((bits >> 52) & 0x7ff) as i32 - 1075;
    let (n_abs, d_abs) = (u128::from(n.unsigned_abs()), u128::from(d.unsigned_abs()));
    let (lhs, rhs) = match e {
        0.. => (n_abs, (m * d_abs) << e),
        _ => (n_abs << -e, m * d_abs),
    };
    let half = f64::from_bits(bits & (0x7ff << 52)) / f64::from_bits((24 + 1023_u64) << 52);
    let mag = match lhs.cmp(&rhs) {
        std::cmp::Ordering::Equal => return q as f32,
        std::cmp::Ordering::Greater => q.abs() + half,
        std::cmp::Ordering::Less => q.abs() - half,
    };
    // Both neighbours are `f32`s: the conversion is exact.
    (mag as f32).copysign(q as f32)
}

/// knn's key of a quotient: ascending keys are ascending values, or with `largest` descending
/// ones. The quotient is `n / d` rounded to an `f64`; validation admits calls whose `|n| * |d|`
/// stays below 2^50, where two different fractions differ by more than an `f64`'s spacing near
/// them, so their quotients differ too and the keys order the exact fractions.
#[inline(always)]
pub(crate) fn key(q: f64, largest: bool) -> u64 {
    let b = q.to_bits();
    // -0.0 and 0.0 are one value.
    let b = if q == 0.0 { 0 } else { b };
    let asc = match b >> 63 {
        1 => !b,
        _ => b | 1 << 63,
    };
    match largest {
        true => !asc,
        false => asc,
    }
}

/// The quotient whose [`key`] is `k`.
pub(crate) fn key_value(k: u64, largest: bool) -> f64 {
    let asc = if largest { !k } else { k };
    let b = match asc >> 63 {
        1 => asc & !(1 << 63),
        _ => !asc,
    };
    f64::from_bits(b)
}

/// The result of a knn or range key, as an element of `out`. For `f32` the call's `|N|` and
/// `|D|` are below 2^24 (validation), where the `f64` quotient rounds to the `f32` one.
pub(crate) fn key_result(k: u64, largest: bool, out: DataType) -> u64 {
    let q = key_value(k, largest);
    match out {
        DataType::F32 => u64::from((q as f32).to_bits()),
        _ => q.to_bits(),
    }
}

/// The first key that misses `threshold`: pairs pass where `N / D >= threshold` (with `largest`)
/// or `N / D < threshold`, the fraction and the threshold compared exactly. Every result is a
/// fraction whose denominator is at most `den_max` and whose magnitude is at most `num_max`
/// (or an infinity, over 0); among those the smallest at least `threshold` decides.
pub(crate) fn key_limit(threshold: f64, largest: bool, num_max: u128, den_max: u128) -> u64 {
    let pass_from = if threshold.is_infinite() {
        threshold
    } else {
        let cap = (num_max + 1) as f64;
        let t = threshold.clamp(-cap, cap);
        let (p, q) = ceil_fraction(t, den_max.max(1) as i128);
        p as f64 / q as f64
    };
    let k = key(pass_from, largest);
    match largest {
        // Values at least `pass_from`: the keys up to its key.
        true => k.saturating_add(1),
        // Values below it: the keys below its key.
        false => k,
    }
}

/// The smallest fraction `p / q` at least `t` (finite, `|t|` at most 2^51) with `1 <= q <= max`
/// (at most 2^50): the Stern-Brocot descent toward `t`, a run of steps at a time.
fn ceil_fraction(t: f64, max: i128) -> (i128, i128) {
    // `t` as `a / b`, exactly.
    let (a, b) = exact(t, max);
    let floor = a.div_euclid(b);
    if a.rem_euclid(b) == 0 {
        return (floor, 1);
    }
    // The bounds `lp / lq < t < up / uq`, neighbours in the Stern-Brocot tree.
    let (mut lp, mut lq, mut up, mut uq) = (floor, 1i128, floor + 1, 1i128);
    loop {
        // `t - l` and `u - t`, times `b` and the bound's denominator (both positive).
        let below = a * lq - lp * b;
        let above = up * b - a * uq;
        // The lower bound moves up by runs of `u` while it stays below `t`.
        let k = ((below - 1) / above).min((max - lq) / uq);
        if k > 0 {
            (lp, lq) = (lp + k * up, lq + k * uq);
            continue;
        }
        // The upper bound moves down by runs of `l` while it stays at or above `t`.
        let k = (above / below).min((max - uq) / lq);
        if k > 0 {
            (up, uq) = (up + k * lp, uq + k * lq);
            if up * b == a * uq {
                return (up, uq);
            }
            continue;
        }
        return (up, uq);
    }
}

/// A finite `t` as `a / b` with `b` a power of two: exactly where `t`'s bits reach below 2^-112;
/// else, for a `t` closer to 0 than every fraction of denominator at most `max` but 0, a value
/// between it and 0 that no such fraction separates from it.
fn exact(t: f64, max: i128) -> (i128, i128) {
    if t == 0.0 {
        return (0, 1);
    }
    let bits = t.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let mut m = (bits & ((1 << 52) - 1)) as i128;
    let mut e = match exp {
        0 => -1074,
        _ => {
            m |= 1 << 52;
            exp - 1075
        }
    };
    let tz = m.trailing_zeros() as i32;
    m >>= tz;
    e += tz;
    let sign = if t < 0.0 { -1 } else { 1 };
    if e >= 0 {
        return (sign * (m << e), 1);
    }
    if e < -112 {
        // `|t| < 2^-59`, below `1 / max` (at least 2^-50): the same fractions lie on each side
        // of `t` as of `sign * 2^-60`.
        debug_assert!(max <= 1 << 50);
        return (sign, 1 << 60);
    }
    (sign * m, 1 << -e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n / d` against `t`, exactly: the sign of `n / d - t`.
    fn cmp_exact(n: i128, d: i128, t: f64) -> std::cmp::Ordering {
        let (a, b) = exact(t, 1 << 50);
        (n * b).cmp(&(a * d))
    }

    #[test]
    fn f32_results_are_rounded_once() {
        // Against the correctly rounded quotient by long division.
        fn reference(n: i64, d: i64) -> f32 {
            if d == 0 {
                return if n == 0 {
                    0.0
                } else {
                    f32::INFINITY.copysign(n as f32)
                };
            }
            let neg = (n < 0) != (d < 0);
            let (n, d) = (n.unsigned_abs() as u128, d.unsigned_abs() as u128);
            if n == 0 {
                return 0.0;
            }
            // The quotient with 26 significant bits and a sticky bit.
            let mut s: i32 = 0;
            while (n << s.max(0)) >> (-s).max(0) < d << 25 {
                s += 1;
            }
            while (n << s.max(0)) >> (-s).max(0) >= d << 26 {
                s -= 1;
            }
            let num = n << s.max(0);
            let den = d << (-s).max(0);
            let q = num / den;
            let sticky = !num.is_multiple_of(den);
            // `q` has 26 bits: 24 kept, then the half bit, then one more below it.
            let keep = q >> 2;
            let half = q & 2 != 0;
            let below = q & 1 != 0 || sticky;
            let up = half && (below || keep & 1 == 1);
            let m = keep + u128::from(up);
            let v = m as f64 * 2f64.powi(2 - s);
            let v = v as f32;
            if neg { -v } else { v }
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases: Vec<(i64, i64)> = vec![(0, 0), (1, 0), (-3, 0), (0, 5), (1, 3), (2, 3)];
        for _ in 0..20_000 {
            let bits = 1 + next() % 52;
            let n = (next() >> (64 - bits)) as i64;
            let d = 1 + (next() >> (64 - (1 + next() % 52))) as i64;
            cases.push((n, d));
            cases.push((-n, d));
        }
        // Fractions within half an f64 spacing of a point halfway between two f32s, `m / 2^30`
        // (`m` odd, of 25 bits): `n / d` with `n * 2^30 - m * d` = 1 or -1, whose `f64`
        // quotient is that point, and the point itself.
        for m in [(1u64 << 24) + 1, (1 << 24) + 3, (1 << 25) - 1, 0x1234567] {
            let mut inv = m;
            for _ in 0..6 {
                inv = inv.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(inv)));
            }
            let inv = inv & ((1 << 30) - 1);
            for (d0, side) in [((1u64 << 30) - inv, 1u64), (inv, u64::MAX)] {
                // `m * d = -side` modulo 2^30, with `d` past 2^28.
                let d = d0 | 1 << 30;
                let n = (m * d).wrapping_add(side) >> 30;
                assert_eq!((n << 30).wrapping_sub(m * d), side);
                assert_eq!(n as f64 / d as f64, m as f64 / (1u64 << 30) as f64);
                cases.push((n as i64, d as i64));
                cases.push((-(n as i64), d as i64));
            }
            cases.push((m as i64, 1 << 30));
        }
        for (n, d) in cases {
            assert_eq!(
                to_f32(n, d).to_bits(),
                reference(n, d).to_bits(),
                "{n} / {d}"
            );
        }
    }

    #[test]
    fn keys_order_values_and_come_back() {
        let vals = [
            f64::NEG_INFINITY,
            -3.5,
            -1e-300,
            0.0,
            1e-300,
            0.25,
            1.0,
            7.0,
            f64::INFINITY,
        ];
        for largest in [false, true] {
            let keys: Vec<u64> = vals.iter().map(|&v| key(v, largest)).collect();
            for w in keys.windows(2) {
                assert_eq!(w[0] < w[1], !largest);
            }
            for (&v, &k) in vals.iter().zip(&keys) {
                assert_eq!(key_value(k, largest).to_bits(), v.to_bits());
            }
        }
        assert_eq!(key(-0.0, false), key(0.0, false));
    }

    #[test]
    fn the_limit_is_the_smallest_fraction_at_least_the_threshold() {
        // Every fraction p / q with q <= 12 and |p| <= 30, against thresholds on and between them.
        let mut fracs = Vec::new();
        for q in 1..=12i128 {
            for p in -30..=30i128 {
                fracs.push((p, q));
            }
        }
        let mut ts: Vec<f64> = fracs.iter().map(|&(p, q)| p as f64 / q as f64).collect();
        ts.extend([
            0.7,
            -0.7,
            1e-30,
            -1e-30,
            0.5 + 1e-17,
            0.9999999999,
            2.5000001,
            100.0,
        ]);
        for &t in &ts {
            let (p, q) = ceil_fraction(t, 12);
            assert!((1..=12).contains(&q), "{t}: {p}/{q}");
            assert_ne!(cmp_exact(p, q, t), std::cmp::Ordering::Less, "{t}: {p}/{q}");
            for &(fp, fq) in &fracs {
                if cmp_exact(fp, fq, t) != std::cmp::Ordering::Less {
                    assert!(fp * q >= p * fq, "{t}: {fp}/{fq} below {p}/{q}");
                }
            }
            for largest in [false, true] {
                let limit = key_limit(t, largest, 30, 12);
                for &(fp, fq) in &fracs {
                    let v = quotient(fp as i64, fq as i64);
                    let hit = key(v, largest) < limit;
                    let exact = cmp_exact(fp, fq, t) != std::cmp::Ordering::Less;
                    assert_eq!(hit, exact == largest, "{t} {largest}: {fp}/{fq}");
                }
            }
        }
    }
}
