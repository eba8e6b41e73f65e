//! The instruction sets of this CPU, detected once, and [`multiversion!`], which writes a function
//! three times (for the x86_64 baseline, for AVX2 and for AVX-512) and the dispatcher that calls
//! the best one this CPU runs.
//!
//! The baseline build only assumes SSE2, which has no per-lane variable shifts and no vector bit
//! count; the versions are the same Rust compiled with more features enabled, so the compiler
//! vectorizes each loop for the wider registers.

/// The instruction sets the hot loops are compiled for.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Isa {
    Baseline = 1,
    /// AVX2 and POPCNT.
    Avx2 = 2,
    /// AVX-512 F, BW, VPOPCNTDQ and BITALG, and AVX2 and POPCNT.
    Avx512 = 3,
}

/// The best [`Isa`] of this CPU, detected once: small calls pay one load for the dispatch, not a
/// feature test per feature.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn isa() -> Isa {
    use std::sync::atomic::{AtomicU8, Ordering};
    static ISA: AtomicU8 = AtomicU8::new(0);
    match ISA.load(Ordering::Relaxed) {
        3 => Isa::Avx512,
        2 => Isa::Avx2,
        1 => Isa::Baseline,
        _ => {
            // AVX2 is tested with AVX-512 too: the small calls of the AVX-512 level run the
            // AVX2 versions.
            let isa = if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                && std::arch::is_x86_feature_detected!("avx512bitalg")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                Isa::Avx512
            } else if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                Isa::Avx2
            } else {
                Isa::Baseline
            };
            ISA.store(isa as u8, Ordering::Relaxed);
            isa
        }
    }
}

/// Whether this CPU has AVX-512 F and BW (with AVX2 and POPCNT) but not the whole [`Isa::Avx512`]
/// level (no VPOPCNTDQ: Skylake and Cascade Lake Xeons), detected once: the AVX-512 streams then
/// run with each lane counted by nibble lookup (`wide::stream_bw`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn avx512bw() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static BW: AtomicU8 = AtomicU8::new(0);
    match BW.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => {
            let bw = isa() == Isa::Avx2
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw");
            BW.store(1 + u8::from(bw), Ordering::Relaxed);
            bw
        }
    }
}

/// Bytes of this CPU's largest data cache as CPUID describes it (its deterministic cache
/// parameters: leaf 4 on Intel, 0x8000001D on AMD), read once; 0 where it describes none.
#[cfg(target_arch = "x86_64")]
pub(crate) fn last_cache_bytes() -> usize {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let caches = |leaf: u32| {
            (0..16)
                .map(|sub| __cpuid_count(leaf, sub))
                .take_while(|r| r.eax & 0x1F != 0)
                // Data and unified caches (type 1 and 3); not instruction caches (2).
                .filter(|r| r.eax & 0x1F != 2)
                .map(|r| {
                    let ways = ((r.ebx >> 22) & 0x3FF) as usize + 1;
                    let parts = ((r.ebx >> 12) & 0x3FF) as usize + 1;
                    let line = (r.ebx & 0xFFF) as usize + 1;
                    ways * parts * line * (r.ecx as usize + 1)
                })
                .max()
                .unwrap_or(0)
        };
        let intel = if __cpuid(0).eax >= 4 { caches(4) } else { 0 };
        if intel == 0 && __cpuid(0x8000_0000).eax >= 0x8000_001D {
            caches(0x8000_001D)
        } else {
            intel
        }
    })
}

/// Writes a function three times and a dispatcher named after it:
///
/// ```text
/// multiversion! {
///     /// Docs and attributes of the dispatcher.
///     pub(crate) fn name[W: Word, const N: usize][W, N](x: &[W; N], f: &impl Fn(W) -> u32) -> u32 {
///         body(x, f)
///     }
/// }
/// ```
///
/// The first brackets hold the generic parameters, the second the arguments the dispatcher passes
/// to them (its turbofish). `body` is compiled in a private module `name` three times: as
/// `name::baseline`, `name::avx2` (with AVX2 and POPCNT enabled) and `name::avx512` (AVX-512 F,
/// BW, VPOPCNTDQ, BITALG and POPCNT); the dispatcher `name` calls the best one [`isa`] detected
/// on this CPU (tests call each version directly). The signature is written in both the
/// caller's module and that child module (which glob imports the caller's), the body in the
/// child only: its paths resolve there. A body per version takes the form
/// `{ baseline => e1, avx2 => e2, avx512 => e3 }`, for versions that differ (vector blocks only
/// one instruction set may make).
macro_rules! multiversion {
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident [$($gen:tt)*] [$($param:tt)*]
            ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        {
            baseline => $base:expr,
            avx2 => $avx2:expr,
            avx512 => $avx512:expr $(,)?
        }
    ) => {
        $(#[$attr])*
        $vis fn $name<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            match $crate::cpu::isa::isa() {
                $crate::cpu::isa::Isa::Avx512 => {
                    // SAFETY: `isa` detected every feature `avx512` is compiled for on this CPU.
                    return unsafe { $name::avx512::<$($param)*>($($arg),*) }
                }
                $crate::cpu::isa::Isa::Avx2 => {
                    // SAFETY: `isa` detected AVX2 and POPCNT on this CPU.
                    return unsafe { $name::avx2::<$($param)*>($($arg),*) }
                }
                $crate::cpu::isa::Isa::Baseline => {}
            }
            $name::baseline::<$($param)*>($($arg),*)
        }

        /// The versions of the function of the same name: for the baseline, for AVX2 and for
        /// AVX-512.
        #[allow(
            clippy::extra_unused_type_parameters,
            reason = "a version with a body of its own may not need every parameter"
        )]
        mod $name {
            #[allow(unused_imports, reason = "the body's paths, whichever it uses")]
            use super::*;

            #[inline(always)]
            pub(super) fn baseline<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                $base
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,popcnt")]
            pub(super) fn avx2<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                $avx2
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
            pub(super) fn avx512<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                $avx512
            }
        }
    };
    (
        $(#[$attr:meta])*
        $vis:vis fn $name:ident [$($gen:tt)*] [$($param:tt)*]
            ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?
        $body:block
    ) => {
        $crate::cpu::isa::multiversion! {
            $(#[$attr])*
            $vis fn $name [$($gen)*] [$($param)*] ($($arg: $ty),*) $(-> $ret)? {
                baseline => $body,
                avx2 => $body,
                avx512 => $body,
            }
        }
    };
}
pub(crate) use multiversion;

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    /// CPUID's largest data cache is the largest data or unified cache Linux lists (which it reads
    /// from the same leaves), where it lists any.
    #[test]
    fn last_cache_is_the_largest_the_system_lists() {
        let Ok(dirs) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") else {
            return;
        };
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
        let listed = dirs
            .flatten()
            .filter(|d| d.file_name().to_string_lossy().starts_with("index"))
            .filter(|d| read(d.path().join("type")).is_some_and(|t| t.trim() != "Instruction"))
            .filter_map(|d| read(d.path().join("size")))
            .filter_map(|s| s.trim().strip_suffix('K')?.parse::<usize>().ok())
            .max();
        if let Some(kib) = listed {
            assert_eq!(super::last_cache_bytes(), kib << 10);
        }
    }
}
