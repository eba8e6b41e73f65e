//! Fallible allocation of tensors: memory a call cannot have is an [`Error::AllocationFailed`], not
//! an abort, whatever the entry point.

#![allow(
    unsafe_code,
    reason = "a zeroed allocation handed to a Vec; see the SAFETY notes"
)]

use crate::element::Element;
use crate::error::{Error, Result};
use std::alloc::Layout;

/// `n` zero elements (`false` for `bool`). Large vectors are zeroed by the allocator, which gets
/// fresh pages from the system already zero, so outputs are written once, by the kernel.
pub(crate) fn zeroed_vec<T: Element>(n: usize, tensor: &str) -> Result<Vec<T>> {
    let failed = || Error::AllocationFailed {
        tensor: tensor.to_owned(),
        bytes: n.saturating_mul(size_of::<T>()),
    };
    let layout = Layout::array::<T>(n).map_err(|_| failed())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    check_allocation(layout.size(), tensor)?;
    // SAFETY: `layout` has a non-zero size, as `alloc_zeroed` requires.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(failed());
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `[T; n]`, which is
    // what a `Vec<T>` of capacity `n` deallocates with; all its bytes are zero, and the all-zero
    // pattern is a valid value of every element type (`Element: Zeroable`), so its `n` elements
    // are initialised.
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Refuses a request of `bytes` for `tensor` that this process could not be given: where the
/// bytes it holds (its resident set) and the request together pass the memory and swap it may
/// ever use: the machine's memory and swap, or less where its control group caps them. The allocator, where the system overcommits, would grant it,
/// and the first writes past that bound end the process (in a container, the out-of-memory killer
/// at the container's limit) instead of returning [`Error::AllocationFailed`]. Every allocation of
/// an output or a copy, the library's own and those a front end makes with numpy or for a file,
/// is checked here first. Requests below 16 MiB are not compared.
///
/// # Errors
///
/// [`Error::AllocationFailed`] naming `tensor` and `bytes`.
pub fn check_allocation(bytes: usize, tensor: &str) -> Result<()> {
    let refused = bytes >= CHECK_FROM
        && backable_bytes().is_some_and(|m| (bytes as u64).saturating_add(resident_bytes()) > m);
    if refused {
        return Err(Error::AllocationFailed {
            tensor: tensor.to_owned(),
            bytes,
        });
    }
    Ok(())
}

/// [`check_allocation`] of two arrays a call allocates together (knn's distances and indices):
/// pages not yet written are not resident, so the second array's check would not count the first.
pub(crate) fn check_pair(a: usize, b: usize, what: &str) -> Result<()> {
    check_allocation(a.saturating_add(b), what)
}

/// Sizes from which [`check_allocation`] compares the request with [`backable_bytes`]: small
/// enough that a container of a few hundred MiB is not ended by one request, large enough that
/// reading `/proc/self/status` is a small part of writing the request's pages.
const CHECK_FROM: usize = 16 << 20;

/// The bytes of this process's memory that are resident (`VmRSS` of Linux's
/// `/proc/self/status`), or 0 where that cannot be read.
fn resident_bytes() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(0, |kib| kib.saturating_mul(1024))
}

/// The most memory this process could ever be given, in bytes: the machine's memory and swap
/// (`MemTotal` and `SwapTotal` of Linux's `/proc/meminfo`), or less where the process's control
/// group caps it ([`cgroup_bytes`]); read once, `None` where `/proc/meminfo` cannot be read. An
/// allocation larger than that can never be backed, yet where the system overcommits memory
/// (`vm.overcommit_memory = 1`, common on container hosts) the allocator grants it, and the first
/// writes past the limit end the process: a packed copy of a stride-0 view of 2 TiB ran on until
/// killed on a 128 GiB machine, where a machine that refuses the allocation returns
/// [`Error::AllocationFailed`]; in a container limited to a few GiB the out-of-memory killer ends
/// the process at that limit, whatever the host has. [`check_allocation`] adds the memory the
/// process holds to each request and refuses what passes this bound, whatever the overcommit
/// policy, also where the request would only be touched in part (a large [`zeroed_vec`] a caller
/// fills sparsely). Other processes' memory is not counted.
fn backable_bytes() -> Option<u64> {
    static BYTES: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = info.lines().find(|l| l.starts_with(key))?;
            line[key.len()..]
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<u64>()
                .ok()?
                .checked_mul(1024)
        };
        let swap = kib("SwapTotal:").unwrap_or(0);
        let machine = kib("MemTotal:")?.saturating_add(swap);
        let group = cgroup_bytes(
            &std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
            &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
            |path| std::fs::read_to_string(path).ok(),
            swap,
        );
        Some(group.map_or(machine, |g| g.min(machine)))
    })
}

/// The memory and swap that the control group of a process may use at most, in bytes, or `None`
/// where no limit applies or none can be read. `cgroup` is the process's `/proc/self/cgroup`,
/// `mountinfo` its `/proc/self/mountinfo`, `read` reads a file, and `swap` is the machine's swap.
///
/// The limits of the process's group and of every group above it apply, so the least of them
/// counts. cgroup v2: `memory.max` plus `memory.swap.max` (no more than `swap`; `max` is no
/// limit). cgroup v1: `memory.limit_in_bytes` plus `swap`, or `memory.memsw.limit_in_bytes`
/// (memory and swap together, where swap is accounted) where that is less. Where both hierarchies
/// are mounted (hybrid systems), the lower bound counts. A group's directory is the hierarchy's
/// mount point joined with the group's path below the mount's root; where that path is not below
/// it (a cgroup namespace), the mount point itself, the namespace's root group, is read.
fn cgroup_bytes(
    cgroup: &str,
    mountinfo: &str,
    read: impl Fn(&std::path::Path) -> Option<String>,
    swap: u64,
) -> Option<u64> {
    use std::path::{Path, PathBuf};
    // A limit file's value: `max` (v2) is no limit; v1's "no limit" is a number near 2^63,
    // larger than any machine, which the caller's minimum leaves aside.
    let value = |dir: &Path, file: &str| -> Option<u64> {
        let text = read(&dir.join(file))?;
        text.trim().parse().ok()
    };
    // The least value of `file` in `dir` and every directory above it up to `top`.
    let least = |dir: &Path, top: &Path, file: &str| -> Option<u64> {
        dir.ancestors()
            .take_while(|d| d.starts_with(top))
            .filter_map(|d| value(d, file))
            .min()
    };
    // Each mounted hierarchy: (is v2, super options, mount root, mount point).
    let mounts = mountinfo.lines().filter_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (root, point) = (*left.get(3)?, *left.get(4)?);
        let (fstype, options) = (*right.first()?, right.get(2).copied().unwrap_or(""));
        let v2 = match fstype {
            "cgroup2" => true,
            "cgroup" => false,
            _ => return None,
        };
        Some((v2, options, unescape(root), unescape(point)))
    });
    let bound = |(v2, options, root, point): (bool, &str, String, String)| -> Option<u64> {
        if !v2 && !options.split(',').any(|o| o == "memory") {
            return None;
        }
        // The process's group in this hierarchy: `0::path` in v2, `N:...,memory,...:path` in v1.
        let path = cgroup.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
            let ours = match v2 {
                true => id == "0" && controllers.is_empty(),
                false => controllers.split(',').any(|c| c == "memory"),
            };
            ours.then_some(path)
        })?;
        let top = PathBuf::from(&point);
        let dir = match Path::new(path).strip_prefix(&root) {
            Ok(below) => top.join(below),
            Err(_) => top.clone(),
        };
        match v2 {
            true => least(&dir, &top, "memory.max").map(|memory| {
                let swap = least(&dir, &top, "memory.swap.max").map_or(swap, |s| s.min(swap));
                memory.saturating_add(swap)
            }),
            false => {
                let memory = least(&dir, &top, "memory.limit_in_bytes");
                let with_swap = least(&dir, &top, "memory.memsw.limit_in_bytes");
                [memory.map(|m| m.saturating_add(swap)), with_swap]
                    .into_iter()
                    .flatten()
                    .min()
            }
        }
    };
    mounts.filter_map(bound).min()
}

/// A path of `/proc/self/mountinfo`, whose space, tab, newline and backslash are written as
/// three octal digits after a backslash.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let code = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(code).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `n` bytes for a buffer the caller fills, as [`zeroed_vec`].
#[cfg(feature = "gpu")]
pub(crate) fn zeroed_bytes(n: usize, tensor: &str) -> Result<Vec<u8>> {
    zeroed_vec::<u8>(n, tensor)
}

#[cfg(test)]
mod tests {
    #[test]
    fn allocation_failure_is_an_error() {
        let e = super::zeroed_vec::<u64>(usize::MAX / 4, "OutputTensor").unwrap_err();
        assert!(e.to_string().contains("cannot allocate"), "{e}");
        let e = super::zeroed_vec::<u8>(1 << 62, "OutputTensor").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("OutputTensor: cannot allocate {} bytes", 1u64 << 62)
        );
        assert_eq!(super::zeroed_vec::<u32>(3, "t").unwrap(), vec![0; 3]);
        assert!(super::zeroed_vec::<bool>(0, "t").unwrap().is_empty());
    }

    /// Reads the files of a made-up `/sys/fs/cgroup`.
    fn group(cgroup: &str, mountinfo: &str, files: &[(&str, &str)], swap: u64) -> Option<u64> {
        let files: std::collections::HashMap<_, _> = files.iter().copied().collect();
        super::cgroup_bytes(
            cgroup,
            mountinfo,
            |p| files.get(p.to_str()?).map(|v| format!("{v}\n")),
            swap,
        )
    }

    const V2: &str = "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n\
                      22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw";
    const GIB: u64 = 1 << 30;

    /// cgroup v2: the least `memory.max` of the group and the groups above it, plus the least
    /// `memory.swap.max` where that is below the machine's swap; `max` is no limit.
    #[test]
    fn a_v2_group_and_its_parents_cap_the_memory() {
        let cgroup = "0::/user.slice/app.scope\n";
        let below = |memory: &str, parent: &str, swap: &str| {
            let files = [
                ("/sys/fs/cgroup/user.slice/app.scope/memory.max", memory),
                ("/sys/fs/cgroup/user.slice/memory.max", parent),
                ("/sys/fs/cgroup/user.slice/app.scope/memory.swap.max", swap),
                ("/sys/fs/memory.max", "1"), // above the mount point: not read
            ];
            group(cgroup, V2, &files, 2 * GIB)
        };
        assert_eq!(below("4294967296", "max", "0"), Some(4 * GIB));
        assert_eq!(below("max", "3221225472", "0"), Some(3 * GIB));
        assert_eq!(below("4294967296", "max", "1073741824"), Some(5 * GIB));
        assert_eq!(below("4294967296", "max", "max"), Some(6 * GIB));
        assert_eq!(below("max", "max", "0"), None);
        // A container's namespace: its group is the mount's root.
        let files = [("/sys/fs/cgroup/memory.max", "536870912")];
        assert_eq!(group("0::/\n", V2, &files, 0), Some(GIB / 2));
    }

    /// cgroup v1, alone or beside a v2 mount without the memory controller (hybrid): the memory
    /// limit plus the machine's swap, or memory and swap together where that is less; a mount
    /// whose root is the group's path is read at its mount point.
    #[test]
    fn a_v1_memory_group_caps_the_memory() {
        let mountinfo = "25 24 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                         26 24 0:23 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                         27 24 0:24 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw";
        let cgroup = "4:memory:/process_api/abc\n1:cpu:/\n0::/\n";
        let unlimited = "9223372036854771712";
        let files = |memory, both| {
            [
                (
                    "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes",
                    memory,
                ),
                (
                    "/sys/fs/cgroup/memory/process_api/abc/memory.memsw.limit_in_bytes",
                    both,
                ),
                ("/sys/fs/cgroup/memory/memory.limit_in_bytes", unlimited),
                ("/sys/fs/cgroup/cpu/memory.limit_in_bytes", "1"),
            ]
        };
        let read = |memory, both, swap| group(cgroup, mountinfo, &files(memory, both), swap);
        assert_eq!(read("2147483648", unlimited, GIB), Some(3 * GIB));
        assert_eq!(read("2147483648", "2684354560", GIB), Some(5 * GIB / 2));
        // Unlimited: a bound past any machine, which MemTotal then caps.
        assert!(read(unlimited, unlimited, 0).is_some_and(|b| b > 1 << 62));
        // The mount's root is the group itself (a v1 container without a namespace).
        let mountinfo =
            "26 24 0:23 /docker/c\\040d /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory";
        let files = [("/sys/fs/cgroup/mem ory/memory.limit_in_bytes", "1073741824")];
        assert_eq!(
            group("4:memory:/docker/c d\n", mountinfo, &files, 0),
            Some(GIB)
        );
    }

    /// No control group with a memory controller, or files that cannot be read or parsed: no
    /// bound from the group.
    #[test]
    fn no_group_no_bound() {
        assert_eq!(group("", "", &[], 0), None);
        assert_eq!(group("0::/a\n", V2, &[], 0), None);
        let files = [("/sys/fs/cgroup/a/memory.max", "lots")];
        assert_eq!(group("0::/a\n", V2, &files, 0), None);
        let cpu_only = "25 24 0:22 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu";
        let files = [("/sys/fs/cgroup/cpu/memory.limit_in_bytes", "1")];
        assert_eq!(group("1:cpu:/\n", cpu_only, &files, 0), None);
    }

    /// A request larger than the memory and swap this process could have is refused before the
    /// allocator is asked (which, overcommitting, could grant it), and so is one that passes it
    /// with the memory the process holds; one below the check's size is not compared.
    #[test]
    fn more_than_the_machine_holds_is_refused_first() {
        let read = super::backable_bytes();
        if cfg!(target_os = "linux") {
            assert!(read.is_some(), "/proc/meminfo unread");
        }
        let Some(m) = read else {
            return;
        };
        assert!(m >= 1 << 20, "{m} bytes");
        let past = usize::try_from(m)
            .unwrap_or(usize::MAX)
            .saturating_add(1 << 30);
        let e = match super::zeroed_vec::<u8>(past, "packed") {
            Ok(v) => panic!("{} bytes granted past the machine's {m}", v.len()),
            Err(e) => e,
        };
        assert_eq!(
            e.to_string(),
            format!("packed: cannot allocate {past} bytes")
        );
        assert_eq!(
            super::zeroed_vec::<u8>(1 << 20, "t").unwrap().len(),
            1 << 20
        );
        // The process holds some memory, so a request of the whole bound is past it.
        assert!(super::resident_bytes() > 0);
        let whole = usize::try_from(m).unwrap_or(usize::MAX);
        assert!(super::check_allocation(whole, "t").is_err());
        assert!(super::check_allocation(super::CHECK_FROM - 1, "t").is_ok());
        assert!(super::check_allocation(super::CHECK_FROM, "t").is_ok());
    }
}
