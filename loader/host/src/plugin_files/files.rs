//! Reading files a repository may control: only regular files, opened without blocking, and
//! never more than a cap. A FIFO, a device (`/dev/zero`, `/dev/stdin`) or a socket named as a
//! plugin or settings file is refused in bounded time instead of hanging the host or filling
//! its memory.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The largest plugin library the host reads (256 MiB). A debug build of a large Rust plugin
/// is tens of MiB; anything near this is not a plugin.
pub const MAX_PLUGIN_BYTES: u64 = 256 << 20;

/// The largest settings file the host reads (4 MiB).
pub const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The path is not there.
    NotFound,
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// A directory, FIFO, device or socket: the text says which.
    NotRegular(&'static str),
    /// Larger than the cap (or grew past it while being read).
    TooLarge {
        /// The cap in bytes.
        limit: u64,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotFound => write!(f, "file not found; check the path"),
            ReadError::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied => write!(
                f,
                "cannot read the file (permission denied); make it readable (chmod u+r) or remove it"
            ),
            ReadError::Io(e) => write!(f, "cannot read the file: {e}"),
            ReadError::NotRegular(kind) => write!(
                f,
                "is {kind}, not a regular file; only regular files are read (point at the file itself)"
            ),
            ReadError::TooLarge { limit } => write!(
                f,
                "is larger than {} MiB, the most the host reads for this kind of file; point at the right file",
                limit >> 20
            ),
        }
    }
}

/// Reads the regular file at `path` (symlinks followed), at most `limit` bytes. The file is
/// opened with `O_NONBLOCK` and checked on the open descriptor, so a FIFO never blocks the
/// open and nothing can be swapped in between the check and the read.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    read_regular_with_identity(path, limit).map(|(bytes, _)| bytes)
}

/// What tells one state of a file from another without reading it: device, inode, size,
/// modification and status-change times (ns). Any write to the file changes its status-change
/// time (`ctime`), which no one but root can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileIdentity {
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: i128,
    /// Status-change time, ns since the epoch.
    pub ctime_ns: i128,
}

impl FileIdentity {
    /// The identity in `meta` (None where the platform has no inodes and ctimes).
    pub fn of(meta: &std::fs::Metadata) -> Option<FileIdentity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
            Some(FileIdentity {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
    }
}

/// [`read_regular`], with the file's identity when it was the same before and after the read
/// (None when it changed meanwhile, or the platform has none): the identity of exactly the
/// bytes returned.
pub fn read_regular_with_identity(
    path: &Path,
    limit: u64,
) -> Result<(Vec<u8>, Option<FileIdentity>), ReadError> {
    let file = open_regular(path)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if meta.len() > limit {
        return Err(ReadError::TooLarge { limit });
    }
    let before = FileIdentity::of(&meta);
    let bytes = read_capped(&file, meta.len(), limit)?;
    let after = file.metadata().ok().as_ref().and_then(FileIdentity::of);
    let identity = before.filter(|b| after == Some(*b) && b.size == bytes.len() as u64);
    Ok((bytes, identity))
}

/// Opens the regular file at `path` (symlinks followed) for reading, as [`read_regular`]
/// does (`O_NONBLOCK`, checked on the open descriptor), for a caller that streams it: a
/// FIFO, a device or a socket is refused without blocking. The caller caps what it reads.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::NotFound,
        _ => ReadError::Io(e),
    })?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind_of(&meta.file_type())));
    }
    Ok(file)
}

/// Reads `file` (of `expected` bytes by its metadata) to its end, refusing more than `limit`.
pub(crate) fn read_capped(file: &File, expected: u64, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    // One byte past the cap tells a file that grew while being read.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { limit });
    }
    Ok(bytes)
}

/// "a directory", "a FIFO (named pipe)", ... for a file type that is not a regular file.
pub fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_fifos_and_big_files_quickly() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_regular(&fifo, 10),
            Err(ReadError::NotRegular("a FIFO (named pipe)"))
        ));
        assert!(matches!(
            read_regular(Path::new("/dev/zero"), 10),
            Err(ReadError::NotRegular("a character device"))
        ));
        let big = dir.path().join("big");
        std::fs::write(&big, [0u8; 11]).unwrap();
        assert!(matches!(
            read_regular(&big, 10),
            Err(ReadError::TooLarge { limit: 10 })
        ));
        assert_eq!(read_regular(&big, 11).unwrap().len(), 11);
        assert!(matches!(
            read_regular(&dir.path().join("none"), 10),
            Err(ReadError::NotFound)
        ));
        assert!(matches!(
            open_regular(&fifo),
            Err(ReadError::NotRegular("a FIFO (named pipe)"))
        ));
        assert!(matches!(
            open_regular(Path::new("/dev/zero")),
            Err(ReadError::NotRegular("a character device"))
        ));
        assert!(open_regular(&big).is_ok());
    }
}
