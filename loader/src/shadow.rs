//! Shadow copies: the system loader opens a private copy of exactly the bytes that were read,
//! hashed and trust-checked, never the user's file itself. So a rebuilt plugin is always seen
//! as new code (glibc and macOS hand back a cached image for a path they already opened), and
//! nothing can be swapped in between the check and the load.
//!
//! - **Linux**: the bytes go into a sealed `memfd` (no file on disk, nothing to clean up,
//!   nothing another process can plant) named after the plugin, opened through
//!   `/proc/self/fd/N`. Each load is a new inode, so a rebuilt plugin loads as new code.
//! - **Elsewhere**, or when `PI_HOOKS_SHADOW=file` is set, or when no memfd can be made: a
//!   content-addressed file `<cache>/<name>-<sha256 prefix>.<ext>` in a folder private to the
//!   user (created `0700`; refused when another user can write to it). An existing copy is
//!   reused only when its bytes hash to the trusted SHA-256; a damaged or planted one is
//!   replaced. New copies are written under an unpredictable temporary name and renamed.

use std::path::{Path, PathBuf};

use crate::files::{MAX_PLUGIN_BYTES, read_regular};
use crate::library::PluginFile;
use crate::trust::sha256_hex;

/// A private copy of a plugin's bytes, ready for the system loader.
pub struct ShadowCopy {
    /// The path to open.
    pub path: PathBuf,
    /// The memfd behind `path` (Linux). It stays open as long as the library is loaded:
    /// glibc finds an already loaded library by its name, so a `/proc/self/fd/N` name must
    /// not be reused by another plugin while the first is mapped.
    #[cfg(target_os = "linux")]
    _memfd: Option<std::os::fd::OwnedFd>,
}

impl ShadowCopy {
    /// Keeps what backs the copy alive for the rest of the process (libraries are never
    /// closed, see `OpenedLibrary`).
    pub fn keep_forever(self) {
        #[cfg(target_os = "linux")]
        std::mem::forget(self._memfd);
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
    let path = PathBuf::from(format!("/proc/self/fd/{}", owned.as_raw_fd()));
    // Whether /proc is mounted is checked once per process, not once per plugin.
    static PROC_FD_PATHS_WORK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*PROC_FD_PATHS_WORK.get_or_init(|| path.exists()) {
        return None;
    }
    Some(ShadowCopy {
        path,
        _memfd: Some(owned),
    })
}

/// The content-addressed copy in `cache`, verified against the file's SHA-256.
fn file_copy(file: &PluginFile, cache: &Path) -> Result<ShadowCopy, String> {
    ensure_private_dir(cache)?;
    let ext = file
        .path
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    let stem = safe_stem(file);
    let sha256 = file.sha256();
    let target = cache.join(format!("{stem}-{}{ext}", &sha256[..16]));
    let intact =
        read_regular(&target, MAX_PLUGIN_BYTES).is_ok_and(|bytes| sha256_hex(&bytes) == sha256);
    if !intact {
        write_copy(file, cache, &stem, &target)?;
    }
    Ok(ShadowCopy {
        path: target,
        #[cfg(target_os = "linux")]
        _memfd: None,
    })
}

/// Writes the bytes under an unpredictable temporary name beside `target` and renames it over
/// `target` (replacing a damaged copy), so no host ever opens a partial file.
fn write_copy(file: &PluginFile, cache: &Path, stem: &str, target: &Path) -> Result<(), String> {
    use std::io::Write;
    let fail =
        |e: std::io::Error| format!("cannot write the shadow copy in {}: {e}", cache.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{stem}-"))
        .suffix(".tmp")
        .tempfile_in(cache)
        .map_err(fail)?;
    tmp.write_all(&file.bytes).map_err(fail)?;
    tmp.persist(target).map_err(|e| fail(e.error))?;
    Ok(())
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
                crate::display::escape(&dir.display().to_string()),
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
    fn file_cache_replaces_a_planted_copy_and_refuses_a_shared_folder() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let file = plugin_file(dir.path(), b"the trusted bytes");
        let first = file_copy(&file, &cache).unwrap();
        assert_eq!(std::fs::read(&first.path).unwrap(), file.bytes);
        // Someone replaces the copy with other bytes of the same length.
        std::fs::write(&first.path, b"the planted  bytes").unwrap();
        let again = file_copy(&file, &cache).unwrap();
        assert_eq!(again.path, first.path);
        assert_eq!(std::fs::read(&again.path).unwrap(), file.bytes);
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
