//! Where an output goes, as `np.save` and `cp` treat a path: a symbolic link is followed and its
//! target written; a device or a FIFO is written into as it is; a regular file (new or existing) is
//! replaced atomically, through a temporary file beside it that a failure or a signal removes. No
//! path is ever replaced by something of another kind, and a file this user may not write is
//! refused, as `cp` refuses it.

use crate::Fail;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A resolved output path.
pub struct Output {
    /// What the user named, for messages.
    shown: PathBuf,
    /// The path written, symbolic links resolved.
    target: PathBuf,
    kind: Kind,
}

enum Kind {
    /// A regular file, new or existing: written to a temporary file and renamed over it. The
    /// permissions of an existing file are kept.
    Regular(Option<std::fs::Permissions>),
    /// A device, a FIFO or a socket: opened and written as it is.
    Special,
}

/// The temporary file being written, so that a signal can remove it.
static PENDING: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Removes the temporary output file, if any, when SIGINT, SIGTERM or SIGHUP arrives, then lets
/// the signal end the process as it would have.
pub fn clean_up_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            if let Some(p) = PENDING.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = std::fs::remove_file(p);
            }
            let _ = signal_hook::low_level::emulate_default_handler(sig);
            std::process::exit(128 + sig);
        }
    });
}

impl Output {
    /// Resolves `path` before any work is done, so a path that cannot be written fails early.
    /// Whether two outputs are one file: their paths after links, with folders compared as the
    /// system names them (`a/x.npy` and `./a/../a/x.npy` are one file).
    pub fn same_file(&self, other: &Output) -> bool {
        let key = |p: &Path| {
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = dir.unwrap_or(Path::new(".")).canonicalize().ok()?;
            Some((dir, p.file_name()?.to_owned()))
        };
        match (key(&self.target), key(&other.target)) {
            (Some(a), Some(b)) => a == b,
            _ => self.target == other.target,
        }
    }

    /// What the user named.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    pub fn resolve(path: &Path) -> Result<Output, Fail> {
        let shown = path.to_path_buf();
        let fail = |why: String| Fail::input(format!("cannot write {}: {why}", path.display()));
        let mut target = path.to_path_buf();
        // Linux follows at most 40 links in a path; a longer chain is a loop.
        for _ in 0..40 {
            match std::fs::symlink_metadata(&target) {
                Ok(m) if m.file_type().is_symlink() => {
                    let link = std::fs::read_link(&target).map_err(|e| fail(e.to_string()))?;
                    target = match target.parent() {
                        Some(dir) if link.is_relative() => dir.join(link),
                        _ => link,
                    };
                }
                Ok(m) if m.is_dir() => return Err(fail("it is a folder".into())),
                Ok(m) if m.is_file() => {
                    // As `cp`: a file this user may not write is not replaced (the rename would
                    // only need the folder's permission). Opening for writing, without
                    // truncating, asks the system and changes nothing.
                    if let Err(e) = std::fs::OpenOptions::new().write(true).open(&target) {
                        return Err(fail(if e.kind() == std::io::ErrorKind::PermissionDenied {
                            "the file exists and is read-only for this user; it is left as it \
                             was (change its permissions, or write elsewhere)"
                                .into()
                        } else {
                            e.to_string()
                        }));
                    }
                    return Ok(Output {
                        shown,
                        target,
                        kind: Kind::Regular(Some(m.permissions())),
                    });
                }
                Ok(_) => {
                    return Ok(Output {
                        shown,
                        target,
                        kind: Kind::Special,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let dir = target
                        .parent()
                        .filter(|p| !p.as_os_str().is_empty())
                        .unwrap_or(Path::new("."));
                    if !dir.is_dir() {
                        return Err(fail(format!("folder {} does not exist", dir.display())));
                    }
                    return Ok(Output {
                        shown,
                        target,
                        kind: Kind::Regular(None),
                    });
                }
                Err(e) => return Err(fail(e.to_string())),
            }
        }
        Err(fail("too many levels of symbolic links".into()))
    }

    /// Writes the file with `write`; on failure nothing is left behind and nothing is replaced.
    pub fn write(
        &self,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), Fail> {
        let fail =
            |e: std::io::Error| Fail::input(format!("cannot write {}: {e}", self.shown.display()));
        match &self.kind {
            Kind::Special => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&self.target)
                    .map_err(fail)?;
                let mut w = std::io::BufWriter::new(f);
                write(&mut w).map_err(fail)?;
                w.flush().map_err(fail)
            }
            Kind::Regular(perms) => {
                let dir = self
                    .target
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                let mut builder = tempfile::Builder::new();
                builder.prefix(".tensorbits-").suffix(".npy.tmp");
                // A new file gets what the user's umask allows, as np.save's would.
                let default = {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::Permissions::from_mode(0o666)
                };
                builder.permissions(perms.clone().unwrap_or(default));
                let tmp = builder.tempfile_in(dir).map_err(fail)?;
                *PENDING.lock().unwrap_or_else(|p| p.into_inner()) = Some(tmp.path().to_owned());
                let result = (|| {
                    let mut w = std::io::BufWriter::new(tmp.as_file());
                    write(&mut w)?;
                    w.flush()?;
                    drop(w);
                    tmp.as_file().sync_all()?;
                    if let Some(p) = perms {
                        // The creation mode passed the umask; an existing file's mode is kept as is.
                        std::fs::set_permissions(tmp.path(), p.clone())?;
                    }
                    tmp.persist(&self.target).map_err(|e| e.error)
                })();
                PENDING.lock().unwrap_or_else(|p| p.into_inner()).take();
                result.map(|_| ()).map_err(fail)
            }
        }
    }
}
