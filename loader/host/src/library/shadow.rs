//! Shadow copies: the system loader opens a private copy of exactly the bytes that were read,
//! hashed and trust-checked, never the user's file itself. So a rebuilt plugin is always seen
//! as new code (glibc and macOS hand back a cached image for a path they already opened), and
//! nothing can be swapped in between the check and the load.
//!
//! - **Linux**: the bytes go into a sealed `memfd` (no file on disk, nothing to clean up,
//!   nothing another process can plant) named after the plugin, opened through
//!   `/proc/self/fd/N`. Each load is a new inode, so a rebuilt plugin loads as new code. The
//!   memfd stays open while its plugin instance lives and is closed when the instance is
//!   dropped (the mapping keeps the bytes), so reloads do not use up file descriptors. The
//!   system loader finds an already loaded library by the name it was opened with, so a
//!   descriptor number that comes back is spelled differently each time
//!   (`/proc/self/fd/N`, `/proc/self/fd//N`, ...); past [`MAX_FD_NAME_REUSE`] spellings of one
//!   number the file cache is used instead.
//! - **Elsewhere**, or when `PI_HOOKS_SHADOW=file` is set, or when no memfd can be made: a
//!   file `<cache>/<name>-<sha256 prefix>-<random>.<ext>` in a folder private to the user
//!   (created `0700`; refused when another user can write to it), unique per load, so a
//!   reload of the same bytes is a fresh image too and nothing in the folder is ever reused
//!   (a planted or damaged file there is never opened). The copy is written under an
//!   unpredictable temporary name, locked (`flock`) and renamed; the lock is held while the
//!   copy may still be opened. Once the system loader has mapped it, the copy is deleted on
//!   Unix (a mapping outlives its file name); elsewhere it stays, locked, until the process
//!   ends. A copy whose load failed is deleted at once.
//!
//! **The cache stays bounded** ([`sweep`]): at the first file copy of a process and after
//! every reload, copies no process holds a lock on (left by a host that crashed or was
//! killed between writing and mapping them, or by older versions that named copies by
//! content only) are deleted; so are temporary files older than a minute. Several hosts may
//! share the folder: a copy another host is still opening is locked and left alone. The
//! folder may be deleted at any time no host is starting or reloading a plugin.

use std::path::{Path, PathBuf};

use crate::library::PluginFile;

/// A private copy of a plugin's bytes, ready for the system loader.
pub struct ShadowCopy {
    /// The path to open.
    pub path: PathBuf,
    /// The memfd behind `path` (Linux), open as long as the plugin instance lives (see
    /// [`Backing`]).
    #[cfg(target_os = "linux")]
    memfd: Option<std::os::fd::OwnedFd>,
    /// A file copy and its open, locked handle: deleted when the copy is dropped unused.
    file: Option<(PathBuf, std::fs::File)>,
}

impl ShadowCopy {
    /// The library was mapped from the copy. A file copy is deleted now on Unix (the
    /// mapping keeps its data; nothing opens the name again); elsewhere it stays locked until
    /// the process ends, and a later [`sweep`] deletes it. A memfd is handed back as the
    /// [`Backing`] the plugin instance keeps (its `/proc/self/fd/N` path stays readable while
    /// the instance lives).
    pub fn mapped(mut self) -> Backing {
        let backing = Backing {
            #[cfg(target_os = "linux")]
            _memfd: self.memfd.take(),
        };
        if let Some((path, locked)) = self.file.take() {
            if cfg!(unix) {
                let _ = std::fs::remove_file(&path);
                drop(locked);
            } else {
                std::mem::forget(locked);
            }
        }
        backing
    }
}

/// What keeps a loaded copy's path readable while its plugin instance lives: the memfd on
/// Linux (closed when the instance is dropped; the library stays mapped), nothing for file
/// copies.
pub struct Backing {
    #[cfg(target_os = "linux")]
    _memfd: Option<std::os::fd::OwnedFd>,
}

impl Backing {
    /// Nothing to keep: a plugin whose code is part of the host binary (the proxy of an
    /// isolated plugin, see `crate::isolate`).
    pub fn none() -> Self {
        Backing {
            #[cfg(target_os = "linux")]
            _memfd: None,
        }
    }
}

/// How many spellings of one `/proc/self/fd/N` path are used (each one more `/`) before
/// loads fall back to the file cache.
pub const MAX_FD_NAME_REUSE: usize = 1024;

/// A `/proc/self/fd/N` path no library was opened by before in this process, or `None` once
/// `fd`'s number has been spelled [`MAX_FD_NAME_REUSE`] times.
#[cfg(target_os = "linux")]
fn unique_fd_path(fd: i32) -> Option<PathBuf> {
    static USES: std::sync::Mutex<Option<rustc_hash::FxHashMap<i32, usize>>> =
        std::sync::Mutex::new(None);
    let mut uses = USES.lock().unwrap_or_else(|e| e.into_inner());
    let count = uses
        .get_or_insert_with(Default::default)
        .entry(fd)
        .or_insert(0);
    if *count >= MAX_FD_NAME_REUSE {
        return None;
    }
    let path = format!("/proc/self/fd/{}{fd}", "/".repeat(*count));
    *count += 1;
    Some(PathBuf::from(path))
}

impl Drop for ShadowCopy {
    /// A copy that was not kept (its load failed) leaves nothing behind.
    fn drop(&mut self) {
        if let Some((path, locked)) = self.file.take() {
            let _ = std::fs::remove_file(&path);
            drop(locked);
        }
    }
}

/// Makes the shadow copy of `file`: a memfd on Linux, else a verified file in `cache`.
pub fn shadow_copy(file: &PluginFile, cache: &Path) -> Result<ShadowCopy, String> {
    #[cfg(target_os = "linux")]
    if std::env::var_os("PI_HOOKS_SHADOW").is_none_or(|v| v != "file")
        && let Some(copy) = memfd_copy(file)
    {
        return Ok(copy);
    }
    file_copy(file, cache)
}

/// A name for the copy: the plugin file's stem, limited to characters that are safe in a
/// file name and in `/proc/self/maps`.
fn safe_stem(file: &PluginFile) -> String {
    let stem: String = file
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if stem.is_empty() {
        "plugin".to_owned()
    } else {
        stem
    }
}

/// The bytes in a sealed memfd, or `None` when the kernel cannot make one (or `/proc` is not
/// mounted): the caller then falls back to the file cache.
#[cfg(target_os = "linux")]
fn memfd_copy(file: &PluginFile) -> Option<ShadowCopy> {
    use std::io::Write;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    let name = std::ffi::CString::new(format!("pi-hooks:{}", safe_stem(file))).ok()?;
    // SAFETY: `name` is a valid NUL-terminated string; the flags are memfd_create's own.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut writer = std::fs::File::from(owned.try_clone().ok()?);
    writer.write_all(&file.bytes).ok()?;
    drop(writer);
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on a descriptor we own, with a plain integer argument.
    if unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return None;
    }
    // Whether /proc is mounted is checked once per process, not once per plugin.
    static PROC_FD_PATHS_WORK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let plain = PathBuf::from(format!("/proc/self/fd/{}", owned.as_raw_fd()));
    if !*PROC_FD_PATHS_WORK.get_or_init(|| plain.exists()) {
        return None;
    }
    let path = unique_fd_path(owned.as_raw_fd())?;
    Some(ShadowCopy {
        path,
        memfd: Some(owned),
        file: None,
    })
}

/// A new, uniquely named copy of the bytes in `cache`, locked until the system loader has
/// mapped it (see the module documentation).
fn file_copy(file: &PluginFile, cache: &Path) -> Result<ShadowCopy, String> {
    use std::io::Write;
    ensure_private_dir(cache)?;
    sweep_once(cache);
    let ext = file
        .path
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    let stem = safe_stem(file);
    let sha256 = file.sha256();
    let fail =
        |e: std::io::Error| format!("cannot write the shadow copy in {}: {e}", cache.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{stem}-"))
        .suffix(TEMP_SUFFIX)
        .tempfile_in(cache)
        .map_err(fail)?;
    lock(tmp.as_file()).map_err(fail)?;
    tmp.write_all(&file.bytes).map_err(fail)?;
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let unique = &unique[..16];
    let target = cache.join(format!("{stem}-{}-{unique}{ext}", &sha256[..16]));
    // The lock is on the open file, so it follows the file through the rename.
    let locked = tmp.persist_noclobber(&target).map_err(|e| fail(e.error))?;
    Ok(ShadowCopy {
        path: target.clone(),
        file: Some((target, locked)),
        #[cfg(target_os = "linux")]
        memfd: None,
    })
}

/// The suffix of copies being written.
const TEMP_SUFFIX: &str = ".tmp";

/// How old a temporary copy must be before [`sweep`] deletes it unlocked (it is locked right
/// after it is created; this covers the instant between the two).
const TEMP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Takes an exclusive `flock` on `file`, held as long as the file stays open.
fn lock(file: &std::fs::File) -> std::io::Result<()> {
    #[cfg(unix)]
    rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive)?;
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Whether nobody holds a lock on `path` (taking the lock, without waiting, shows it); the
/// open file keeps the lock until it is dropped.
fn unlocked(path: &Path) -> Option<std::fs::File> {
    let file = std::fs::File::open(path).ok()?;
    #[cfg(unix)]
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
    Some(file)
}

/// Deletes the copies in `cache` no process can still be opening: files no process holds a
/// lock on, and temporary files older than a minute. Quietly does nothing when the folder
/// does not exist, is not private, or cannot be read. Returns how many files it deleted.
///
/// On Unix a mapped copy is already gone (deleted right after mapping), so this only finds
/// what a crashed host left; elsewhere it also finds the copies of hosts that have ended
/// (a copy still mapped cannot be deleted there, and the attempt fails harmlessly).
pub fn sweep(cache: &Path) -> usize {
    if !private_dir(cache) {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(cache) else {
        return 0;
    };
    let mut deleted = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.ends_with(TEMP_SUFFIX) {
            let young = meta
                .modified()
                .ok()
                .and_then(|m| m.elapsed().ok())
                .is_none_or(|age| age < TEMP_GRACE);
            if young {
                continue;
            }
        }
        if let Some(_held) = unlocked(&path)
            && std::fs::remove_file(&path).is_ok()
        {
            deleted += 1;
        }
    }
    deleted
}

/// [`sweep`] once per cache folder per process (at its first file copy).
fn sweep_once(cache: &Path) {
    static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
    if !swept.iter().any(|p| p == cache) {
        swept.push(cache.to_path_buf());
        drop(swept);
        sweep(cache);
    }
}

/// Whether `dir` is a folder of this user's that no other user can write to.
fn private_dir(dir: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(dir) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        meta.is_dir() && meta.uid() == me && meta.mode() & 0o022 == 0
    }
    #[cfg(not(unix))]
    meta.is_dir()
}

/// Creates `dir` private to the user (`0700`) if it is missing, and refuses one that another
/// user owns or can write to: a copy planted there would run as the user's plugin.
fn ensure_private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| {
        format!(
            "cannot create the plugin cache folder {}: {e}; set PI_HOOKS_CACHE_DIR to a folder of yours",
            dir.display()
        )
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(dir)
            .map_err(|e| format!("cannot read the plugin cache folder {}: {e}", dir.display()))?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "the plugin cache folder {} can be written by another user (owner uid {}, mode {:o}), so a library planted there could run as your plugin; make it yours and private (chmod 700), or set PI_HOOKS_CACHE_DIR to a private folder",
                crate::guards::display::escape(&dir.display().to_string()),
                meta.uid(),
                meta.mode() & 0o777
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin_file(dir: &Path, bytes: &[u8]) -> PluginFile {
        PluginFile::new(dir.join("libx.so"), bytes.to_vec())
    }

    #[test]
    fn file_copies_are_unique_locked_swept_and_refused_in_a_shared_folder() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let file = plugin_file(dir.path(), b"the trusted bytes");
        // Something planted (or left by a crashed host) under a name a copy could have.
        std::fs::create_dir_all(&cache).unwrap();
        let planted = cache.join(format!("libx-{}.so", &file.sha256()[..16]));
        std::fs::write(&planted, b"the planted  bytes").unwrap();
        let first = file_copy(&file, &cache).unwrap();
        assert_eq!(std::fs::read(&first.path).unwrap(), file.bytes);
        assert!(
            !planted.exists(),
            "the first copy of a process sweeps the folder"
        );
        let again = file_copy(&file, &cache).unwrap();
        assert_ne!(again.path, first.path, "every load gets its own copy");
        // Both are locked while they may still be opened: a sweep leaves them.
        assert_eq!(sweep(&cache), 0);
        assert!(first.path.exists() && again.path.exists());
        // Kept (mapped): deleted on Unix. Dropped unused (a failed load): deleted.
        let first_path = first.path.clone();
        let _backing = first.mapped();
        assert_eq!(first_path.exists(), !cfg!(unix));
        let again_path = again.path.clone();
        drop(again);
        assert!(!again_path.exists());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
            let error = file_copy(&file, &cache).err().unwrap();
            assert!(error.contains("can be written by another user"), "{error}");
            assert!(error.contains("chmod 700"), "{error}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn memfd_copy_is_sealed_and_holds_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let file = plugin_file(dir.path(), b"some library bytes");
        let copy = memfd_copy(&file).expect("memfd");
        assert!(copy.path.starts_with("/proc/self/fd/"));
        assert_eq!(std::fs::read(&copy.path).unwrap(), file.bytes);
        // Sealed: it cannot be written through any descriptor.
        use std::io::Write;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&copy.path)
            .and_then(|mut f| f.write_all(b"changed"));
        assert!(written.is_err(), "a sealed memfd must refuse writes");
    }
}
