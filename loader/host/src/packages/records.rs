//! The records that decide what a package may do, kept where only the user's own commands
//! write: under the agent directory, never in a project.
//!
//! `<agentDir>/pi-hooks/records/<scope>/` holds, for the user (`user`) and for each project
//! (`project.<first 32 hex digits of the SHA-256 of its canonical path>`):
//!
//! - `install/<package>.json`: what `pi-hooks install` verified and the user accepted (the
//!   library's SHA-256, the signer, the capabilities that are the package's grant);
//! - `seen/<package>.json`: what pi-hooks first loaded of a package pi installed, which
//!   stands for the user's acceptance (`super::first_seen`);
//! - `verified/<SHA-256 of the library's canonical path>.json`: that a library's bytes were
//!   hashed and matched their pin, and the file's identity then (`super::verified`).
//!
//! A package's own folder, in the project or the agent directory, holds only the package's
//! files: they are data checked against these records, never the record. Every file here is
//! read and written through [`Beneath`], so a symbolic link placed anywhere under the agent
//! directory's `pi-hooks/` is refused, never followed; `<package>` is the validated name's
//! folder name ([`crate::identity::PackageName::folder_name`]), one per package.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::store::Scope;
use crate::identity::PackageName;
use crate::plugin_files::beneath::Beneath;

/// The largest record read.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// The kinds of record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// What `pi-hooks install` verified and the user accepted.
    Install,
    /// What pi-hooks first loaded of a package pi installed.
    Seen,
    /// That a library's bytes matched their pin, and the file's identity then.
    Verified,
}

impl Kind {
    fn folder(self) -> &'static str {
        match self {
            Kind::Install => "install",
            Kind::Seen => "seen",
            Kind::Verified => "verified",
        }
    }
}

/// One scope's records.
#[derive(Debug, Clone)]
pub struct Records {
    agent_dir: PathBuf,
    /// The scope's folder, relative to the agent directory.
    relative: PathBuf,
}

impl Records {
    /// The records of `scope` (the project's: of `cwd`, by its canonical path).
    pub fn of(scope: Scope, agent_dir: &Path, cwd: &Path) -> Records {
        let folder = match scope {
            Scope::User => "user".to_owned(),
            Scope::Project => format!("project.{}", project_key(cwd)),
        };
        Records {
            agent_dir: agent_dir.to_path_buf(),
            relative: Path::new("pi-hooks").join("records").join(folder),
        }
    }

    /// The folder of `kind`'s records (for messages and tests).
    pub fn folder(&self, kind: Kind) -> PathBuf {
        self.agent_dir.join(&self.relative).join(kind.folder())
    }

    fn open(&self, kind: Kind, create: bool) -> Result<Option<Beneath>, String> {
        if !create && !self.agent_dir.is_dir() {
            return Ok(None);
        }
        let root = Beneath::open(&self.agent_dir, create)?;
        root.dir(&self.relative.join(kind.folder()), create)
    }

    /// The record `key` of `kind`, if there is one that reads as a `T`.
    pub fn read<T: DeserializeOwned>(&self, kind: Kind, key: &RecordKey) -> Option<T> {
        let folder = self.open(kind, false).ok().flatten()?;
        let bytes = folder.read_file(&key.file, MAX_RECORD_BYTES).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The record `key` of `kind`: `Ok(None)` when there is none, `Err` naming the file and
    /// why when one is there but cannot be read as a `T` (so a caller can refuse what it
    /// records rather than go on as if there were none).
    pub fn read_checked<T: DeserializeOwned>(
        &self,
        kind: Kind,
        key: &RecordKey,
    ) -> Result<Option<T>, String> {
        let file = self.folder(kind).join(&key.file);
        let shown = || crate::guards::display::escape(&file.display().to_string()).into_owned();
        let Some(folder) = self.open(kind, false)? else {
            return Ok(None);
        };
        let bytes = match folder.read_file(&key.file, MAX_RECORD_BYTES) {
            Ok(bytes) => bytes,
            Err(crate::plugin_files::files::ReadError::NotFound) => return Ok(None),
            Err(e) => return Err(format!("the record {} cannot be read: {e}", shown())),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| format!("the record {} cannot be read: {e}", shown()))
    }

    /// The records of `kind` that are there but cannot be read as a `T`: each file, and why.
    pub fn unreadable<T: DeserializeOwned>(&self, kind: Kind) -> Vec<(PathBuf, String)> {
        let Ok(Some(folder)) = self.open(kind, false) else {
            return Vec::new();
        };
        let mut names = folder.names();
        names.sort();
        names
            .iter()
            .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
            .filter_map(|name| {
                let key = RecordKey { file: name.clone() };
                match self.read_checked::<T>(kind, &key) {
                    Err(why) => Some((self.folder(kind).join(name), why)),
                    Ok(_) => None,
                }
            })
            .collect()
    }

    /// Writes the record `key` of `kind` (whole or not at all, readable by the user only).
    pub fn write<T: Serialize>(
        &self,
        kind: Kind,
        key: &RecordKey,
        value: &T,
    ) -> Result<(), String> {
        let folder = self
            .open(kind, true)?
            .ok_or_else(|| format!("cannot create {}", self.folder(kind).display()))?;
        let mut text = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
        text.push(b'\n');
        folder.write_file(&key.file, &text, 0o600)
    }

    /// Removes the record `key` of `kind` (none there is not an error).
    pub fn remove(&self, kind: Kind, key: &RecordKey) -> Result<(), String> {
        match self.open(kind, false)? {
            Some(folder) => folder.remove(&key.file),
            None => Ok(()),
        }
    }

    /// Every record of `kind` that reads as a `T`.
    pub fn all<T: DeserializeOwned>(&self, kind: Kind) -> Vec<T> {
        let Ok(Some(folder)) = self.open(kind, false) else {
            return Vec::new();
        };
        let mut names = folder.names();
        names.sort();
        names
            .iter()
            .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
            .filter_map(|name| folder.read_file(name, MAX_RECORD_BYTES).ok())
            .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
            .collect()
    }
}

/// The file a record is kept in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordKey {
    file: String,
}

impl RecordKey {
    /// The record of a package.
    pub fn package(name: &PackageName) -> RecordKey {
        RecordKey {
            file: format!("{}.json", name.folder_name()),
        }
    }

    /// The record of the package named `name`, when it is a valid package name.
    pub fn package_named(name: &str) -> Option<RecordKey> {
        PackageName::parse(name)
            .ok()
            .map(|n| RecordKey::package(&n))
    }

    /// The record of the library file at `path` (by its canonical path).
    pub fn library(path: &Path) -> RecordKey {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        RecordKey {
            file: format!(
                "{}.json",
                crate::plugin_files::trust::sha256_hex(canonical.as_os_str().as_encoded_bytes())
            ),
        }
    }
}

impl RecordKey {
    /// The file name the record is kept under.
    pub fn file_name(&self) -> &str {
        &self.file
    }
}

/// What names a project's records: the SHA-256 of its canonical path, 32 hex digits.
fn project_key(cwd: &Path) -> String {
    let canonical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    crate::plugin_files::trust::sha256_hex(canonical.as_os_str().as_encoded_bytes())[..32]
        .to_owned()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn records_live_under_the_agent_dir_by_scope() {
        let agent = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let user = Records::of(Scope::User, agent.path(), project.path());
        let local = Records::of(Scope::Project, agent.path(), project.path());
        let key = RecordKey::package_named("@acme/gate").unwrap();
        user.write(Kind::Install, &key, &serde_json::json!({"v": 1}))
            .unwrap();
        assert_eq!(
            user.read::<serde_json::Value>(Kind::Install, &key),
            Some(serde_json::json!({"v": 1}))
        );
        assert_eq!(local.read::<serde_json::Value>(Kind::Install, &key), None);
        assert!(user.folder(Kind::Install).starts_with(agent.path()));
        assert!(user.folder(Kind::Install).join("@acme+gate.json").is_file());
        assert_eq!(user.all::<serde_json::Value>(Kind::Install).len(), 1);
        user.remove(Kind::Install, &key).unwrap();
        assert_eq!(user.read::<serde_json::Value>(Kind::Install, &key), None);
        assert!(RecordKey::package_named("@acme gate").is_none());
        // A link planted on the way is refused, not followed.
        let seen = agent.path().join("pi-hooks/records/user/seen");
        std::os::unix::fs::symlink(project.path(), &seen).unwrap();
        assert!(user.write(Kind::Seen, &key, &1).is_err());
        assert_eq!(std::fs::read_dir(project.path()).unwrap().count(), 0);
    }
}
