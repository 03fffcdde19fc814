//! Safe extraction of a package tarball (`.tgz`, npm's layout: every entry under `package/`).
//!
//! Only regular files and folders are accepted: an entry with an absolute path, a `..` part,
//! a link, a device or a FIFO is refused, as is an entry over [`MAX_ENTRY_BYTES`], a package
//! over [`MAX_PACKAGE_BYTES`] or [`MAX_ENTRIES`]. Refusal leaves nothing behind: the caller
//! extracts into a fresh staging folder and drops it on error.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// The largest single entry, uncompressed.
pub const MAX_ENTRY_BYTES: u64 = 64 << 20;
/// The largest package, uncompressed, all entries together.
pub const MAX_PACKAGE_BYTES: u64 = 256 << 20;
/// The most entries a package may have.
pub const MAX_ENTRIES: usize = 10_000;

/// Size limits (the defaults above; tests lower them).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// See [`MAX_ENTRY_BYTES`].
    pub entry_bytes: u64,
    /// See [`MAX_PACKAGE_BYTES`].
    pub package_bytes: u64,
    /// See [`MAX_ENTRIES`].
    pub entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            entry_bytes: MAX_ENTRY_BYTES,
            package_bytes: MAX_PACKAGE_BYTES,
            entries: MAX_ENTRIES,
        }
    }
}

impl Limits {
    /// The defaults, each lowered by `PI_HOOKS_PACKAGE_MAX_ENTRY_BYTES` /
    /// `PI_HOOKS_PACKAGE_MAX_BYTES` when set (never raised).
    pub fn from_env() -> Limits {
        let mut limits = Limits::default();
        let read = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        if let Some(n) = read("PI_HOOKS_PACKAGE_MAX_ENTRY_BYTES") {
            limits.entry_bytes = limits.entry_bytes.min(n);
        }
        if let Some(n) = read("PI_HOOKS_PACKAGE_MAX_BYTES") {
            limits.package_bytes = limits.package_bytes.min(n);
        }
        limits
    }
}

/// Extracts the gzip-compressed tarball `reader` into `into` (which must exist and be empty):
/// the contents of `package/` land directly in `into`. `what` names the tarball in errors.
pub fn extract_tgz(
    reader: impl Read,
    into: &Path,
    limits: Limits,
    what: &str,
) -> Result<(), String> {
    let gz = flate2::read::GzDecoder::new(reader);
    let mut archive = tar::Archive::new(gz);
    let entries = archive.entries().map_err(|e| {
        format!("{what} is not a gzip-compressed tarball ({e}); pack it with `pi-hooks pack`")
    })?;
    let (mut total, mut count) = (0u64, 0usize);
    for entry in entries {
        let mut entry =
            entry.map_err(|e| format!("{what} is damaged ({e}); download or pack it again"))?;
        count += 1;
        if count > limits.entries {
            return Err(format!(
                "{what} has more than {} entries; nothing was installed",
                limits.entries
            ));
        }
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let relative = inside_package(&raw).map_err(|e| {
            format!("{what}: the entry {shown:?} {e}; nothing was installed. Only take packages from publishers you trust, and repack this one")
        })?;
        let kind = entry.header().entry_type();
        let size = entry.header().size().unwrap_or(u64::MAX);
        if kind.is_dir() {
            if let Some(rel) = relative {
                std::fs::create_dir_all(into.join(rel))
                    .map_err(|e| format!("cannot create a folder under {}: {e}", into.display()))?;
            }
            continue;
        }
        if !kind.is_file() {
            let what_kind = if kind.is_symlink() {
                "a symbolic link"
            } else if kind.is_hard_link() {
                "a hard link"
            } else if kind.is_character_special() || kind.is_block_special() {
                "a device file"
            } else if kind.is_fifo() {
                "a FIFO"
            } else if kind.is_pax_global_extensions()
                || kind.is_pax_local_extensions()
                || kind.is_gnu_longname()
            {
                continue;
            } else {
                "not a regular file"
            };
            return Err(format!(
                "{what}: the entry {shown:?} is {what_kind}; packages hold only regular files and folders, nothing was installed"
            ));
        }
        let Some(rel) = relative else {
            return Err(format!(
                "{what}: the entry {shown:?} is not a file inside package/; nothing was installed"
            ));
        };
        if size > limits.entry_bytes {
            return Err(format!(
                "{what}: the entry {shown:?} is {size} bytes, over the limit of {} per file; nothing was installed",
                limits.entry_bytes
            ));
        }
        total = total.saturating_add(size);
        if total > limits.package_bytes {
            return Err(format!(
                "{what} is over the limit of {} bytes uncompressed; nothing was installed",
                limits.package_bytes
            ));
        }
        let target = into.join(&rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(|e| {
                format!("{what}: cannot write the entry {shown:?} ({e}); nothing was installed")
            })?;
        // The header's size is checked above; the copy is bounded too, in case it lied.
        let copied = std::io::copy(&mut (&mut entry).take(limits.entry_bytes + 1), &mut out)
            .map_err(|e| format!("{what} is damaged ({e}); download or pack it again"))?;
        if copied > limits.entry_bytes {
            return Err(format!(
                "{what}: the entry {shown:?} is over the limit of {} bytes; nothing was installed",
                limits.entry_bytes
            ));
        }
    }
    if !into.join("package.json").is_file() {
        return Err(format!(
            "{what} has no package/package.json; it is not a package (pack one with `pi-hooks pack`)"
        ));
    }
    Ok(())
}

/// The path of an entry relative to `package/`: `None` for `package/` itself, an error for
/// anything absolute, with `..`, or outside `package/`.
fn inside_package(raw: &[u8]) -> Result<Option<PathBuf>, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "has a name that is not UTF-8".to_owned())?;
    if text.starts_with('/') || text.starts_with('\\') || text.contains(':') {
        return Err("has an absolute path".to_owned());
    }
    let path = Path::new(text);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_owned()),
            Component::CurDir => {}
            Component::ParentDir => return Err("has a `..` part".to_owned()),
            Component::RootDir | Component::Prefix(_) => {
                return Err("has an absolute path".to_owned());
            }
        }
    }
    if parts.first().map(|p| p.as_os_str()) != Some(std::ffi::OsStr::new("package")) {
        return Err("is not under package/ (npm's layout)".to_owned());
    }
    if parts.len() == 1 {
        return Ok(None);
    }
    Ok(Some(parts[1..].iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_stay_inside_the_package() {
        assert_eq!(
            inside_package(b"package/a/b").unwrap(),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(inside_package(b"./package/").unwrap(), None);
        assert!(inside_package(b"package/../x").unwrap_err().contains(".."));
        assert!(
            inside_package(b"/etc/passwd")
                .unwrap_err()
                .contains("absolute")
        );
        assert!(inside_package(b"other/x").is_err());
    }
}
