//! Installed packages: where they live, what was recorded when they were installed, and the
//! `packages` list of `settings.json` that pi and pi-hooks share.
//!
//! A package installed for the user from a `.tgz` or a folder lives in
//! `<agentDir>/pi-hooks/packages/<name>/`, one for the project in
//! `<cwd>/.pi/pi-hooks/packages/<name>/`; one from npm or git lives where pi puts those
//! ([`super::pi_sources`]). What was verified at install (source, version, signer, the chosen
//! library and its SHA-256, the capabilities accepted) is an install record under the agent
//! directory ([`super::records`]), never in the package's folder or the project: a file a
//! repository (or a confined plugin that may write there) controls is data checked against
//! the record, never the record. Every load verifies the library against that SHA-256
//! again. Changes happen under a lock (`.lock` in the store folder), each write is atomic (a
//! temporary file or folder, then a rename), and nothing between the store's root (the agent
//! directory, or the project's folder) and a package's folder may be a symbolic link: the
//! store is opened one folder at a time without following links ([`Beneath`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifest::{Capabilities, Registers};
use super::records::{Kind, RecordKey, Records};
use crate::plugin_files::beneath::Beneath;

/// The file in which an older pi-hooks recorded an install, beside the package's files (in
/// the user's store only is it still read; records now live in [`Records`]).
pub const RECORD_FILE: &str = ".pi-hooks-install.json";

/// For whom a package is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The user (`<agentDir>/settings.json`).
    User,
    /// The project (`<cwd>/.pi/settings.json`); its plugins load once trusted.
    Project,
}

/// Where a scope keeps its packages, their records and its settings.
#[derive(Debug, Clone)]
pub struct Store {
    /// The scope.
    pub scope: Scope,
    /// The folder of installed packages.
    pub dir: PathBuf,
    /// The `settings.json` whose `packages` lists them.
    pub settings: PathBuf,
    /// What decides what its packages may do (under the agent directory).
    pub records: Records,
    /// The folder `dir` lies beneath (the agent directory, or the project's folder): nothing
    /// between the two may be a symbolic link.
    root: PathBuf,
    /// `dir` relative to `root`.
    relative: PathBuf,
}

impl Store {
    /// The store of `scope`.
    pub fn new(scope: Scope, agent_dir: &Path, cwd: &Path) -> Store {
        let (root, relative, settings) = match scope {
            Scope::User => (
                agent_dir.to_path_buf(),
                Path::new("pi-hooks").join("packages"),
                agent_dir.join("settings.json"),
            ),
            Scope::Project => (
                cwd.to_path_buf(),
                Path::new(".pi").join("pi-hooks").join("packages"),
                cwd.join(".pi").join("settings.json"),
            ),
        };
        Store {
            scope,
            dir: root.join(&relative),
            settings,
            records: Records::of(scope, agent_dir, cwd),
            root,
            relative,
        }
    }

    /// The folder of package `name`.
    pub fn package_dir(&self, name: &str) -> PathBuf {
        self.dir.join(folder_name(name))
    }

    /// The store's folder, opened (and made when `create`) with no symbolic link between
    /// its root and it; `Ok(None)` when it does not exist and `create` is false.
    fn folder(&self, create: bool) -> Result<Option<Beneath>, String> {
        if !create && !self.dir.is_dir() {
            return Ok(None);
        }
        // The agent directory is made for a first install (a project's folder is there).
        Beneath::open(&self.root, create && self.scope == Scope::User)?.dir(&self.relative, create)
    }

    fn folder_made(&self) -> Result<Beneath, String> {
        self.folder(true)?
            .ok_or_else(|| format!("cannot create {}", self.dir.display()))
    }

    /// Changes the `packages` list of this scope's settings file with `change`, nothing else
    /// in it ([`crate::plugin_files::settings_write`]). The user's file is written through a
    /// symbolic link; the project's is refused when it or `.pi` is one (a cloned repository
    /// could link it to the user's settings). `Ok(false)`: nothing to change.
    pub fn update_settings_packages(
        &self,
        change: impl FnOnce(&mut Vec<Value>),
    ) -> Result<bool, String> {
        use crate::plugin_files::settings_write::{Links, update_packages};
        let links = match self.scope {
            Scope::User => Links::WriteThrough,
            Scope::Project => Links::RefuseBelow(
                self.settings
                    .parent()
                    .and_then(Path::parent)
                    .unwrap_or_else(|| Path::new("/")),
            ),
        };
        update_packages(&self.settings, links, change)
    }

    /// Whether `packages` can be recorded in this scope's settings file: `Err` (naming the
    /// file, the line and column) when a change would be refused. Writes nothing.
    pub fn check_settings(&self) -> Result<(), String> {
        self.update_settings_packages(|_| {}).map(drop)
    }

    /// Takes the store's lock (blocking until another install or removal is done).
    pub fn lock(&self) -> Result<StoreLock, String> {
        let folder = self.folder_made()?;
        let file = folder.lock_file(".lock")?;
        #[cfg(unix)]
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| format!("cannot lock {}: {e}", self.dir.join(".lock").display()))?;
        self.recover(&folder);
        Ok(StoreLock { _file: file })
    }

    /// Mends what an install killed halfway left (call with the lock held): a version moved
    /// aside (`.old-NAME-PID`) whose replacement never arrived goes back in place, and
    /// staging folders and versions already replaced are removed. Links are removed, never
    /// followed.
    fn recover(&self, folder: &Beneath) {
        let names = folder.names();
        for name in &names {
            if name.starts_with(".staging-") {
                let _ = folder.remove(name);
            } else if let Some(rest) = name.strip_prefix(".old-")
                && let Some((package, _pid)) = rest.rsplit_once('-')
            {
                if names.iter().any(|n| n == package) || !is_package_folder(package) {
                    let _ = folder.remove(name);
                } else {
                    let _ = folder.rename(name, package);
                }
            }
        }
    }

    /// A fresh, empty staging folder inside the store (dropped when the guard is).
    pub fn staging(&self) -> Result<tempfile::TempDir, String> {
        self.folder_made()?;
        tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(&self.dir)
            .map_err(|e| {
                format!(
                    "cannot create a staging folder in {}: {e}",
                    self.dir.display()
                )
            })
    }

    /// Every installed package's record, by name.
    pub fn installed(&self) -> Vec<InstallRecord> {
        let mut records: Vec<InstallRecord> = self.records.all(Kind::Install);
        if self.scope == Scope::User {
            // Installed before records moved to `records/`: the record beside the package,
            // in the user's own store.
            let known: Vec<String> = records.iter().map(|r| r.name.clone()).collect();
            if let Ok(Some(folder)) = self.folder(false) {
                for name in folder.names() {
                    if let Some(record) = self.legacy_record(&name)
                        && !known.contains(&record.name)
                    {
                        records.push(record);
                    }
                }
            }
        }
        records.sort_by(|a, b| a.name.cmp(&b.name));
        records
    }

    /// The record of package `name`, if it is installed.
    pub fn record(&self, name: &str) -> Option<InstallRecord> {
        let key = RecordKey::package_named(name)?;
        self.records
            .read::<InstallRecord>(Kind::Install, &key)
            .filter(|r| r.name == name)
            .or_else(|| {
                (self.scope == Scope::User)
                    .then(|| self.legacy_record(&folder_name(name)))
                    .flatten()
                    .filter(|r| r.name == name)
            })
    }

    /// A record an older pi-hooks kept beside a package in the user's store.
    fn legacy_record(&self, folder: &str) -> Option<InstallRecord> {
        if !is_package_folder(folder) {
            return None;
        }
        let package = self
            .folder(false)
            .ok()??
            .dir(Path::new(folder), false)
            .ok()??;
        let bytes = package.read_file(RECORD_FILE, 1 << 20).ok()?;
        let record: InstallRecord = serde_json::from_slice(&bytes).ok()?;
        (folder_name(&record.name) == folder).then_some(record)
    }

    /// Puts the verified package in `staging` in place of `name`'s current version (if any),
    /// writes its record, and lists `record.source` in `packages` of the settings. Call with
    /// the lock held. The old version is removed only after the new one is in place; the
    /// settings are written last, atomically.
    pub fn commit(&self, staging: tempfile::TempDir, record: &InstallRecord) -> Result<(), String> {
        let key = RecordKey::package_named(&record.name).ok_or_else(|| {
            format!(
                "{:?} is not a valid package name",
                crate::guards::display::escape(&record.name)
            )
        })?;
        let folder = self.folder_made()?;
        let target = folder_name(&record.name);
        let staged = staging.keep();
        let staged_name = staged
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
            .unwrap_or_default();
        // A record of an older pi-hooks inside the package folder is never taken from it.
        let _ = Beneath::open(&staged, false).and_then(|s| s.remove(RECORD_FILE));
        let old_name = format!(".old-{target}-{}", std::process::id());
        let had_old = folder.names().contains(&target);
        if had_old {
            let _ = folder.remove(&old_name);
            folder
                .rename(&target, &old_name)
                .map_err(|e| format!("cannot move the installed version aside: {e}"))?;
        }
        let restore = |folder: &Beneath| {
            let _ = folder.remove(&target);
            if had_old {
                let _ = folder.rename(&old_name, &target);
            }
        };
        if let Err(e) = folder.rename(&staged_name, &target) {
            if had_old {
                let _ = folder.rename(&old_name, &target);
            }
            let _ = folder.remove(&staged_name);
            return Err(format!(
                "cannot put the package in place at {}: {e}",
                self.dir.join(&target).display()
            ));
        }
        let previous = self.records.read::<InstallRecord>(Kind::Install, &key);
        if let Err(e) = self.records.write(Kind::Install, &key, record) {
            restore(&folder);
            return Err(format!("cannot write the install record: {e}"));
        }
        if let Err(e) = self.update_settings_packages(|list| {
            let source = Value::String(record.source.clone());
            if let Some(previous) = &record.replaces_source {
                list.retain(|entry| entry_source(entry) != Some(previous.as_str()));
            }
            if !list
                .iter()
                .any(|entry| entry_source(entry) == Some(record.source.as_str()))
            {
                list.push(source);
            }
        }) {
            // Put the old version and its record back: the settings were not changed.
            restore(&folder);
            let _ = match &previous {
                Some(previous) => self.records.write(Kind::Install, &key, previous),
                None => self.records.remove(Kind::Install, &key),
            };
            return Err(e);
        }
        if had_old {
            let _ = folder.remove(&old_name);
        }
        Ok(())
    }

    /// Removes package `name`: its entry in `packages`, its folder in this store (only
    /// there: a package kept elsewhere keeps its files), then its record. Call with the lock
    /// held. `Ok(None)` when it is not installed.
    pub fn remove(&self, name: &str) -> Result<Option<InstallRecord>, String> {
        let Some(record) = self.record(name) else {
            return Ok(None);
        };
        self.update_settings_packages(|list| {
            list.retain(|entry| entry_source(entry) != Some(record.source.as_str()));
        })?;
        if let Some(folder) = self.folder(false)? {
            folder.remove(&folder_name(name))?;
        }
        if let Some(key) = RecordKey::package_named(name) {
            self.records.remove(Kind::Install, &key)?;
        }
        Ok(Some(record))
    }
}

/// Whether `name` can be a package's folder in a store (a valid package name's folder
/// name), so that nothing else there is taken for one.
fn is_package_folder(name: &str) -> bool {
    crate::identity::PackageName::parse(&name.replacen('+', "/", 1))
        .is_ok_and(|n| n.folder_name() == name)
}

/// Held while a store changes.
pub struct StoreLock {
    _file: std::fs::File,
}

/// What was verified when a package was installed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InstallRecord {
    /// The package's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its entry in `packages` (pi's source form).
    pub source: String,
    /// What the user gave `install` (a `.tgz` path, a folder, a git URL).
    pub origin: String,
    /// Whether the source names a version or ref, so `update` leaves it as it is.
    pub pinned: bool,
    /// The signer's minisign public key (base64), pinned at the first install.
    pub signer: Option<String>,
    /// The platform whose library was chosen.
    pub platform: String,
    /// The library, relative to the package folder.
    pub library: String,
    /// Its SHA-256, verified at install and at every load.
    pub sha256: String,
    /// The ABI it was built for.
    pub abi: String,
    /// The plugin's description.
    #[serde(default)]
    pub description: String,
    /// What it registers.
    #[serde(default)]
    pub registers: Registers,
    /// What it declared it needs (`None`: unrestricted), as the user accepted it.
    pub capabilities: Option<Capabilities>,
    /// The package's folder when it is not in the store: where pi puts npm and git packages
    /// (the store keeps only this record then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<PathBuf>,
    /// A different source this install replaces in `packages` (an update from elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces_source: Option<String>,
}

/// The folder name of a package: its name with `/` (npm scopes) made `+`.
fn folder_name(name: &str) -> String {
    name.replace('/', "+")
}

/// The source of one `packages` entry: the string, or the object form's `source`.
pub fn entry_source(entry: &Value) -> Option<&str> {
    match entry {
        Value::String(s) => Some(s),
        Value::Object(map) => map.get("source").and_then(Value::as_str),
        _ => None,
    }
}

/// The `packages` sources of a settings file, in order (empty when it has none or cannot be
/// read: the plugin loader reports a broken settings file).
pub fn settings_packages(settings: &Path) -> Vec<String> {
    let Ok(bytes) = crate::plugin_files::files::read_regular(
        settings,
        crate::plugin_files::files::MAX_SETTINGS_BYTES,
    ) else {
        return Vec::new();
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Vec::new();
    };
    value
        .get("packages")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(entry_source)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
