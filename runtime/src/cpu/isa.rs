//! The instruction sets of this CPU, detected once, and [`multiversion!`], which writes a function
//! three times (for the x86_64 baseline, for AVX2 and for AVX-512) and the dispatcher that calls
//! the best one this CPU runs.
//!
//! The baseline build only assumes SSE2, which has no per-lane variable shifts and no vector bit
//! count; the versions are the same Rust compiled with more features enabled, so the compiler
//! vectorizes each loop for the wider registers.

/// The instruction-set levels a process can run its CPU kernels at, from the least to the most:
/// the x86_64 baseline, AVX2 (with POPCNT), AVX2 with AVX-512 F and BW for the byte-count streams
/// (no VPOPCNTDQ), and the whole AVX-512 level (with VPOPCNTDQ and BITALG). Their names are the
/// values [`CPU_ENV`] takes and [`instruction_set`] reports.
#[cfg(target_arch = "x86_64")]
const LEVELS: [&str; 4] = ["baseline", "avx2", "avx512bw", "avx512"];

/// The environment variable that caps the CPU kernels' instruction set (`baseline`, `avx2`,
/// `avx512bw` or `avx512`), read once per process: to compare the versions' speed on one machine,
/// or to run as a machine without AVX-512 would. A level above this CPU's runs at this CPU's.
pub const CPU_ENV: &str = "TENSORBITS_CPU";

/// The level this CPU runs, an index into [`LEVELS`].
#[cfg(target_arch = "x86_64")]
fn detected() -> usize {
    use std::arch::is_x86_feature_detected as has;
    if !(has!("avx2") && has!("popcnt")) {
        0
    } else if !(has!("avx512f") && has!("avx512bw")) {
        1
    } else if !(has!("avx512vpopcntdq") && has!("avx512bitalg")) {
        2
    } else {
        3
    }
}

/// The level the kernels run at, given this CPU's and the value of [`CPU_ENV`] (absent: `None`),
/// with the warning a value that is not a level, or is above this CPU's, earns.
#[cfg(target_arch = "x86_64")]
fn capped(cpu: usize, var: Option<&std::ffi::OsStr>) -> (usize, Option<String>) {
    let Some(var) = var else {
        return (cpu, None);
    };
    let text = var.to_string_lossy();
    match LEVELS.iter().position(|l| text.eq_ignore_ascii_case(l)) {
        Some(asked) if asked <= cpu => (asked, None),
        Some(_) => (
            cpu,
            Some(format!(
                "tensorbits: {CPU_ENV}={text} asks for more than this CPU runs; the CPU kernels use {}",
                LEVELS[cpu]
            )),
        ),
        None => (
            cpu,
            Some(format!(
                "tensorbits: {CPU_ENV}={text:?} is not one of {}; the CPU kernels use {}, the most this CPU runs",
                LEVELS.join(", "),
                LEVELS[cpu]
            )),
        ),
    }
}

/// The level the kernels run at, an index into [`LEVELS`]: detected once, capped by [`CPU_ENV`]
/// (a bad value is reported once on stderr), so that small calls pay one load for the dispatch,
/// not a feature test per feature.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn level() -> usize {
    use std::sync::atomic::{AtomicU8, Ordering};
    static LEVEL: AtomicU8 = AtomicU8::new(0);
    match LEVEL.load(Ordering::Relaxed) {
        0 => first_level(&LEVEL),
        l => usize::from(l - 1),
    }
}

/// [`level`]'s first call: detects, reads [`CPU_ENV`], stores the level plus one in `cell`.
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn first_level(cell: &std::sync::atomic::AtomicU8) -> usize {
    use std::sync::atomic::Ordering;
    let (level, warning) = capped(detected(), std::env::var_os(CPU_ENV).as_deref());
    // Threads that race here compute the same level; only the one that stores first reports the
    // warning.
    if cell
        .compare_exchange(0, level as u8 + 1, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
        && let Some(w) = warning
    {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "{w}");
    }
    level
}

impl super::strategy::Level {
    /// The level of this process (detected once, capped by [`CPU_ENV`]), as the strategy takes it.
    #[inline(always)]
    pub(crate) fn current() -> Self {
        use super::strategy::Level;
        #[cfg(target_arch = "x86_64")]
        {
            match level() {
                0 => Level::Baseline,
                1 => Level::Avx2,
                2 => Level::Avx512Bw,
                _ => Level::Avx512,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Level::Baseline
        }
    }
}

/// The instruction set the CPU kernels run at in this process: `"baseline"`, `"avx2"`,
/// `"avx512bw"` or `"avx512"` on x86_64 (the best this CPU runs, or less where [`CPU_ENV`] says
/// so), `"portable"` elsewhere. Every level gives the same bits; only the speed differs.
pub fn instruction_set() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        LEVELS[level()]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "portable"
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
/// BW, VPOPCNTDQ, BITALG and POPCNT); the dispatcher `name` calls the best one the level
/// ([`Level::current`](super::strategy::Level::current)) allows (tests call each version
/// directly). The signature is written in both the caller's module and that child module (which
/// glob imports the caller's), the body in the child only: its paths resolve there. A body per
/// version takes the form `{ baseline => e1, avx2 => e2, avx512 => e3 }`, for versions that
/// differ (vector blocks only one instruction set may make); `e2` and `e3` find the proof of
/// their features in the constant `AVX2` (and `e3` in `AVX512`), a value of `Avx2` (and
/// `Avx512`) made once here, of the types the caller's module imports. A body must not hand the
/// constants to an item of its own (an `impl` or a `fn` reachable from outside the version): they
/// prove the features only where the version runs.
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
            match $crate::cpu::strategy::Level::current() {
                $crate::cpu::strategy::Level::Avx512 => {
                    // SAFETY: the level's detection found every feature `avx512` is compiled for.
                    return unsafe { $name::avx512::<$($param)*>($($arg),*) }
                }
                $crate::cpu::strategy::Level::Avx2 | $crate::cpu::strategy::Level::Avx512Bw => {
                    // SAFETY: the level's detection found AVX2 and POPCNT.
                    return unsafe { $name::avx2::<$($param)*>($($arg),*) }
                }
                $crate::cpu::strategy::Level::Baseline => {}
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
            $crate::cpu::isa::isa_fn! { avx2 =>
                pub(super) fn avx2<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    #[allow(dead_code, reason = "the proof, for a body that asks for it")]
                    const AVX2: Avx2 =
                        // SAFETY: this version runs only where the level's detection found AVX2
                        // and POPCNT.
                        unsafe { Avx2::new_unchecked() };
                    $avx2
                }
            }

            #[cfg(target_arch = "x86_64")]
            $crate::cpu::isa::isa_fn! { avx512 =>
                pub(super) fn avx512<$($gen)*>($($arg: $ty),*) $(-> $ret)? {
                    #[allow(dead_code, reason = "the proofs, for a body that asks for them")]
                    const AVX2: Avx2 =
                        // SAFETY: this version runs only where the level's detection found
                        // AVX-512 F, BW, VPOPCNTDQ and BITALG, and AVX2 and POPCNT.
                        unsafe { Avx2::new_unchecked() };
                    #[allow(dead_code, reason = "the proofs, for a body that asks for them")]
                    const AVX512: Avx512 =
                        // SAFETY: as for `AVX2`.
                        unsafe { Avx512::<true>::new_unchecked() };
                    $avx512
                }
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

/// Compiles a function item for the features of a level: `avx2` (AVX2 and POPCNT), `avx512bw`
/// (those and AVX-512 F and BW, no VPOPCNTDQ) or `avx512` (AVX-512 F, BW, VPOPCNTDQ and BITALG).
/// The only place a feature string is written: [`multiversion`]'s versions and every kernel
/// outside it take their features from here.
#[cfg(target_arch = "x86_64")]
macro_rules! isa_fn {
    (avx2 => $($item:tt)*) => {
        #[target_feature(enable = "avx2,popcnt")]
        $($item)*
    };
    (avx512bw => $($item:tt)*) => {
        #[target_feature(enable = "avx2,popcnt,avx512f,avx512bw")]
        $($item)*
    };
    (avx512 => $($item:tt)*) => {
        #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx512bitalg,popcnt")]
        $($item)*
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use isa_fn;

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::{LEVELS, capped};
    use std::ffi::OsStr;

    /// The variable caps the level at or below this CPU's, in any case; a level above it, or a
    /// value that is no level, leaves this CPU's and says why.
    #[test]
    fn the_variable_caps_the_level_and_reports_what_it_cannot_do() {
        for (cpu, cpu_name) in LEVELS.iter().enumerate() {
            assert_eq!(capped(cpu, None), (cpu, None));
            for (asked, name) in LEVELS.iter().enumerate() {
                for text in [name.to_string(), name.to_uppercase()] {
                    let (level, warning) = capped(cpu, Some(OsStr::new(&text)));
                    if asked <= cpu {
                        assert_eq!((level, warning), (asked, None), "{text} on {cpu}");
                    } else {
                        assert_eq!(level, cpu);
                        assert_eq!(
                            warning.as_deref(),
                            Some(
                                format!(
                                    "tensorbits: TENSORBITS_CPU={text} asks for more than this CPU \
                                     runs; the CPU kernels use {cpu_name}"
                                )
                                .as_str()
                            )
                        );
                    }
                }
            }
            for bad in ["", "avx-512", "sse4", "avx2 "] {
                let (level, warning) = capped(cpu, Some(OsStr::new(bad)));
                assert_eq!(level, cpu);
                assert_eq!(
                    warning.unwrap(),
                    format!(
                        "tensorbits: TENSORBITS_CPU={bad:?} is not one of baseline, avx2, \
                         avx512bw, avx512; the CPU kernels use {cpu_name}, the most this CPU runs"
                    )
                );
            }
        }
    }

    /// The level the kernels dispatch on is the one the process reports.
    #[test]
    fn the_level_names_what_runs() {
        use crate::cpu::strategy::Level;
        let name = super::instruction_set();
        let levels = [Level::Baseline, Level::Avx2, Level::Avx512Bw, Level::Avx512];
        let named = LEVELS.iter().position(|l| *l == name).map(|i| levels[i]);
        assert_eq!(named, Some(Level::current()), "{name}");
        if std::env::var_os(super::CPU_ENV).is_none() {
            assert_eq!(super::level(), super::detected());
        }
    }

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
