//! Files written beneath a folder without following a symbolic link: what pi-hooks writes in
//! the agent directory (records, its store) and in a project's store.
//!
//! A [`Beneath`] holds an open descriptor of a folder. Every folder below it is reached one
//! component at a time from the descriptor above (`openat` with `O_NOFOLLOW | O_DIRECTORY`),
//! so a symbolic link anywhere beneath the root is refused, never followed, and nothing is
//! resolved by name a second time: what was checked is what is written. Files are written
//! whole or not at all (a new file made with `O_EXCL | O_NOFOLLOW`, synced, then renamed over
//! the old one; a link in the old one's place is replaced, never written through). The root
//! itself is the user's own path (their `~/.pi` may be a link to a dotfiles folder); only
//! what lies beneath it is held to these rules.

use std::path::{Component, Path, PathBuf};

use crate::plugin_files::files::ReadError;

/// An open folder, and the path it was opened by (for messages).
#[derive(Debug)]
pub struct Beneath {
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

/// The one path component `name` is, or an error naming it.
fn component(name: &str) -> Result<&str, String> {
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(_)), None) if !name.contains('/') && !name.contains('\\') => {
            Ok(name)
        }
        _ => Err(format!(
            "{:?} is not a single file name",
            crate::guards::display::escape(name)
        )),
    }
}

#[cfg(unix)]
mod imp {
    use super::*;
    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;
    use std::os::fd::{AsFd, OwnedFd};

    const DIR_FLAGS: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    fn describe(errno: Errno, path: &Path) -> String {
        match errno {
            Errno::LOOP | Errno::NOTDIR => format!(
                "{} is a symbolic link or not a folder; pi-hooks does not write through links there. Remove it (it may have come with a cloned repository)",
                path.display()
            ),
            other => format!("{}: {}", path.display(), std::io::Error::from(other)),
        }
    }

    impl Beneath {
        /// Opens `root`, creating it (mode 0700) when `create` and it is missing.
        pub fn open(root: &Path, create: bool) -> Result<Beneath, String> {
            if create {
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder
                    .create(root)
                    .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
            }
            let fd = rustix::fs::open(
                root,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| {
                format!(
                    "cannot open the folder {}: {}",
                    root.display(),
                    std::io::Error::from(e)
                )
            })?;
            Ok(Beneath {
                fd,
                path: root.to_path_buf(),
            })
        }

        /// The folder `relative` beneath this one, each component opened from the one above
        /// without following a link; missing ones are made (mode 0700) when `create`.
        /// `Ok(None)`: a component is missing and `create` is false.
        pub fn dir(&self, relative: &Path, create: bool) -> Result<Option<Beneath>, String> {
            let mut fd: OwnedFd = rustix::io::dup(&self.fd).map_err(|e| describe(e, &self.path))?;
            let mut path = self.path.clone();
            for part in relative.components() {
                let Component::Normal(name) = part else {
                    return Err(format!(
                        "{} is not a plain relative path",
                        relative.display()
                    ));
                };
                path.push(name);
                let opened = match rustix::fs::openat(&fd, name, DIR_FLAGS, Mode::empty()) {
                    Err(Errno::NOENT) if create => {
                        match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o700)) {
                            Ok(()) | Err(Errno::EXIST) => {}
                            Err(e) => return Err(describe(e, &path)),
                        }
                        rustix::fs::openat(&fd, name, DIR_FLAGS, Mode::empty())
                    }
                    Err(Errno::NOENT) => return Ok(None),
                    other => other,
                };
                fd = opened.map_err(|e| describe(e, &path))?;
            }
            Ok(Some(Beneath { fd, path }))
        }

        /// Writes `bytes` as the file `name` in this folder, whole or not at all, with
        /// `mode`: a new file beside it, synced, renamed over it.
        pub fn write_file(&self, name: &str, bytes: &[u8], mode: u32) -> Result<(), String> {
            use std::io::Write;
            let name = component(name)?;
            let target = self.path.join(name);
            let fail = |e: std::io::Error| format!("cannot write {}: {e}", target.display());
            let temp = format!(".{name}.{}-{}.tmp", std::process::id(), unique());
            let fd = rustix::fs::openat(
                &self.fd,
                temp.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            )
            .map_err(|e| fail(e.into()))?;
            let mut file = std::fs::File::from(fd);
            let written = file.write_all(bytes).and_then(|()| file.sync_all());
            drop(file);
            let renamed = written.and_then(|()| {
                rustix::fs::renameat(&self.fd, temp.as_str(), &self.fd, name).map_err(Into::into)
            });
            if let Err(e) = renamed {
                let _ = rustix::fs::unlinkat(&self.fd, temp.as_str(), AtFlags::empty());
                return Err(fail(e));
            }
            Ok(())
        }

        /// Reads the regular file `name` of this folder (a link, FIFO or device is refused
        /// without blocking), at most `limit` bytes.
        pub fn read_file(&self, name: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
            let name = component(name).map_err(|e| ReadError::Io(std::io::Error::other(e)))?;
            let fd = match rustix::fs::openat(
                &self.fd,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => return Err(ReadError::NotFound),
                Err(Errno::LOOP) => return Err(ReadError::NotRegular("a symbolic link")),
                Err(e) => return Err(ReadError::Io(e.into())),
            };
            let file = std::fs::File::from(fd);
            let meta = file.metadata().map_err(ReadError::Io)?;
            if !meta.is_file() {
                return Err(ReadError::NotRegular(crate::plugin_files::files::kind_of(
                    &meta.file_type(),
                )));
            }
            if meta.len() > limit {
                return Err(ReadError::TooLarge { limit });
            }
            crate::plugin_files::files::read_capped(&file, meta.len(), limit)
        }

        /// Removes `name` from this folder: a file or link itself, a folder with everything
        /// in it (links inside are removed, never followed). Missing is not an error.
        pub fn remove(&self, name: &str) -> Result<(), String> {
            let name = component(name)?;
            remove_at(self.fd.as_fd(), name, &self.path.join(name))
        }

        /// Renames `from` to `to`, both in this folder (replacing `to` if it is a file or an
        /// empty folder).
        pub fn rename(&self, from: &str, to: &str) -> Result<(), String> {
            let (from, to) = (component(from)?, component(to)?);
            rustix::fs::renameat(&self.fd, from, &self.fd, to).map_err(|e| {
                format!(
                    "cannot rename {} to {}: {}",
                    self.path.join(from).display(),
                    to,
                    std::io::Error::from(e)
                )
            })
        }

        /// The names in this folder (without `.` and `..`), unsorted.
        pub fn names(&self) -> Vec<String> {
            let Ok(fd) = rustix::fs::openat(&self.fd, ".", DIR_FLAGS, Mode::empty()) else {
                return Vec::new();
            };
            let Ok(dir) = rustix::fs::Dir::new(fd) else {
                return Vec::new();
            };
            dir.filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str().ok().map(str::to_owned))
                .filter(|name| name != "." && name != "..")
                .collect()
        }

        /// Opens (creating it, mode 0600) the file `name` here for locking; a link in its
        /// place is refused.
        pub fn lock_file(&self, name: &str) -> Result<std::fs::File, String> {
            let name = component(name)?;
            rustix::fs::openat(
                &self.fd,
                name,
                OFlags::RDWR
                    | OFlags::CREATE
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
            .map(std::fs::File::from)
            .map_err(|e| describe(e, &self.path.join(name)))
        }

        /// Makes the folder `name` here (mode 0700); `Err` when it exists.
        pub fn make_dir(&self, name: &str) -> Result<(), String> {
            let name = component(name)?;
            rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700))
                .map_err(|e| describe(e, &self.path.join(name)))
        }
    }

    fn remove_at(
        parent: std::os::fd::BorrowedFd<'_>,
        name: &str,
        shown: &Path,
    ) -> Result<(), String> {
        match rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => {
                let names: Vec<String> = match rustix::fs::Dir::read_from(&fd) {
                    Ok(dir) => dir
                        .filter_map(Result::ok)
                        .filter_map(|e| e.file_name().to_str().ok().map(str::to_owned))
                        .filter(|n| n != "." && n != "..")
                        .collect(),
                    Err(e) => return Err(describe(e, shown)),
                };
                for child in names {
                    remove_at(fd.as_fd(), &child, &shown.join(&child))?;
                }
                rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)
                    .map_err(|e| describe(e, shown))
            }
            Err(Errno::NOENT) => Ok(()),
            // A file, or a link (removed itself, never followed).
            Err(Errno::NOTDIR | Errno::LOOP) => {
                match rustix::fs::unlinkat(parent, name, AtFlags::empty()) {
                    Ok(()) | Err(Errno::NOENT) => Ok(()),
                    Err(e) => Err(describe(e, shown)),
                }
            }
            Err(e) => Err(describe(e, shown)),
        }
    }
}

/// A number no other temporary file of this process has.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(not(unix))]
mod imp {
    use super::*;

    /// Whether `path` is a symbolic link.
    fn is_link(path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
    }

    impl Beneath {
        /// Opens `root`, creating it when `create` and it is missing.
        pub fn open(root: &Path, create: bool) -> Result<Beneath, String> {
            if create {
                std::fs::create_dir_all(root)
                    .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
            }
            if !root.is_dir() {
                return Err(format!("{} is not a folder", root.display()));
            }
            Ok(Beneath {
                path: root.to_path_buf(),
            })
        }

        /// See the Unix version.
        pub fn dir(&self, relative: &Path, create: bool) -> Result<Option<Beneath>, String> {
            let mut path = self.path.clone();
            for part in relative.components() {
                let Component::Normal(name) = part else {
                    return Err(format!(
                        "{} is not a plain relative path",
                        relative.display()
                    ));
                };
                path.push(name);
                if is_link(&path) {
                    return Err(format!(
                        "{} is a symbolic link; pi-hooks does not write through links there",
                        path.display()
                    ));
                }
                if !path.exists() {
                    if !create {
                        return Ok(None);
                    }
                    std::fs::create_dir(&path)
                        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                }
            }
            Ok(Some(Beneath { path }))
        }

        /// See the Unix version.
        pub fn write_file(&self, name: &str, bytes: &[u8], _mode: u32) -> Result<(), String> {
            let name = component(name)?;
            let target = self.path.join(name);
            let mut temp = tempfile::NamedTempFile::new_in(&self.path)
                .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
            std::io::Write::write_all(&mut temp, bytes)
                .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
            temp.persist(&target)
                .map_err(|e| format!("cannot write {}: {}", target.display(), e.error))?;
            Ok(())
        }

        /// See the Unix version.
        pub fn read_file(&self, name: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
            let name = component(name).map_err(|e| ReadError::Io(std::io::Error::other(e)))?;
            let path = self.path.join(name);
            if is_link(&path) {
                return Err(ReadError::NotRegular("a symbolic link"));
            }
            crate::plugin_files::files::read_regular(&path, limit)
        }

        /// See the Unix version.
        pub fn remove(&self, name: &str) -> Result<(), String> {
            let name = component(name)?;
            let path = self.path.join(name);
            let result = match std::fs::symlink_metadata(&path) {
                Err(_) => Ok(()),
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
                Ok(_) => std::fs::remove_file(&path),
            };
            result.map_err(|e| format!("cannot remove {}: {e}", path.display()))
        }

        /// See the Unix version.
        pub fn rename(&self, from: &str, to: &str) -> Result<(), String> {
            let (from, to) = (component(from)?, component(to)?);
            std::fs::rename(self.path.join(from), self.path.join(to))
                .map_err(|e| format!("cannot rename {from} to {to}: {e}"))
        }

        /// See the Unix version.
        pub fn names(&self) -> Vec<String> {
            std::fs::read_dir(&self.path)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        }

        /// See the Unix version.
        pub fn lock_file(&self, name: &str) -> Result<std::fs::File, String> {
            let name = component(name)?;
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(self.path.join(name))
                .map_err(|e| format!("cannot open {}: {e}", self.path.join(name).display()))
        }

        /// See the Unix version.
        pub fn make_dir(&self, name: &str) -> Result<(), String> {
            let name = component(name)?;
            std::fs::create_dir(self.path.join(name))
                .map_err(|e| format!("cannot create {}: {e}", self.path.join(name).display()))
        }
    }
}

impl Beneath {
    /// The path this folder was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_beneath_the_root_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let root = Beneath::open(dir.path(), false).unwrap();
        // A link as a folder on the way: refused, nothing made beyond it.
        std::os::unix::fs::symlink(outside.path(), dir.path().join("a")).unwrap();
        let e = root.dir(Path::new("a/b"), true).unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!outside.path().join("b").exists());
        // A link in a file's place: replaced, not written through.
        let folder = root.dir(Path::new("x/y"), true).unwrap().unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("x/y/f")).unwrap();
        folder.write_file("f", b"new", 0o600).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(dir.path().join("x/y/f")).unwrap(), b"new");
        // Reading a link is refused; removing a tree removes links, not their targets.
        std::os::unix::fs::symlink(&victim, dir.path().join("x/y/g")).unwrap();
        assert!(matches!(
            folder.read_file("g", 100),
            Err(ReadError::NotRegular(_))
        ));
        std::os::unix::fs::symlink(outside.path(), dir.path().join("x/y/h")).unwrap();
        root.remove("x").unwrap();
        assert!(!dir.path().join("x").exists());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(root.dir(Path::new("../z"), true).is_err());
        assert!(folder.write_file("../f", b"", 0o600).is_err());
    }
}
