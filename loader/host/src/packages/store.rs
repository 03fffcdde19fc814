//! Installed packages: where they live, what was recorded when they were installed, and the
//! `packages` list of `settings.json` that pi and pi-hooks share.
//!
//! A package installed for the user from a `.tgz` or a folder lives in
//! `<agentDir>/pi-hooks/packages/<name>/`, one for the project in
//! `<cwd>/.pi/pi-hooks/packages/<name>/`; one from npm or git lives where pi puts those
//! ([`super::pi_sources`]) and that folder holds only its record (naming the package's
//! folder). Beside its files,
//! `.pi-hooks-install.json` records what was verified at install (source, version, signer,
//! the chosen library and its SHA-256, capabilities). Every load verifies the library against
//! that SHA-256 again. Changes happen under a lock (`.lock` in the store folder) and each
//! write is atomic (a temporary file or folder, then a rename), so two installs at once, or
//! an install interrupted halfway, never leave a half-written package or settings file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifest::{Capabilities, Registers};

/// The file in an installed package's folder that records its install.
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

/// Where a scope keeps its packages and its settings.
#[derive(Debug, Clone)]
pub struct Store {
    /// The scope.
    pub scope: Scope,
    /// The folder of installed packages.
    pub dir: PathBuf,
    /// The `settings.json` whose `packages` lists them.
    pub settings: PathBuf,
}

impl Store {
    /// The store of `scope`.
    pub fn new(scope: Scope, agent_dir: &Path, cwd: &Path) -> Store {
        match scope {
            Scope::User => Store {
                scope,
                dir: agent_dir.join("pi-hooks").join("packages"),
                settings: agent_dir.join("settings.json"),
            },
            Scope::Project => Store {
                scope,
                dir: cwd.join(".pi").join("pi-hooks").join("packages"),
                settings: cwd.join(".pi").join("settings.json"),
            },
        }
    }

    /// The folder of package `name`.
    pub fn package_dir(&self, name: &str) -> PathBuf {
        self.dir.join(folder_name(name))
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
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let path = self.dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("cannot open the lock {}: {e}", path.display()))?;
        #[cfg(unix)]
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
        self.recover();
        Ok(StoreLock { _file: file })
    }

    /// Mends what an install killed halfway left (call with the lock held): a version moved
    /// aside (`.old-NAME-PID`) whose replacement never arrived goes back in place, and
    /// staging folders and versions already replaced are removed.
    fn recover(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with(".staging-") {
                let _ = std::fs::remove_dir_all(entry.path());
            } else if let Some(rest) = file_name.strip_prefix(".old-")
                && let Some((name, _pid)) = rest.rsplit_once('-')
            {
                let target = self.dir.join(name);
                if target.exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                } else {
                    let _ = std::fs::rename(entry.path(), target);
                }
            }
        }
    }

    /// A fresh, empty staging folder inside the store (dropped when the guard is).
    pub fn staging(&self) -> Result<tempfile::TempDir, String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
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
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut records: Vec<InstallRecord> = entries
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|e| read_record(&e.path()).ok())
            .collect();
        records.sort_by(|a, b| a.name.cmp(&b.name));
        records
    }

    /// The record of package `name`, if it is installed.
    pub fn record(&self, name: &str) -> Option<InstallRecord> {
        read_record(&self.package_dir(name)).ok()
    }

    /// Puts the verified package in `staging` in place of `name`'s current version (if any),
    /// writes its record, and lists `record.source` in `packages` of the settings. Call with
    /// the lock held. The old version is removed only after the new one is in place; the
    /// settings are written last, atomically.
    pub fn commit(&self, staging: tempfile::TempDir, record: &InstallRecord) -> Result<(), String> {
        let text = serde_json::to_string_pretty(record).unwrap_or_default();
        std::fs::write(staging.path().join(RECORD_FILE), text)
            .map_err(|e| format!("cannot write the install record: {e}"))?;
        let target = self.package_dir(&record.name);
        let staged = staging.keep();
        let old = if target.exists() {
            let old = self.dir.join(format!(
                ".old-{}-{}",
                folder_name(&record.name),
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&old);
            std::fs::rename(&target, &old)
                .map_err(|e| format!("cannot move the installed version aside: {e}"))?;
            Some(old)
        } else {
            None
        };
        if let Err(e) = std::fs::rename(&staged, &target) {
            if let Some(old) = &old {
                let _ = std::fs::rename(old, &target);
            }
            let _ = std::fs::remove_dir_all(&staged);
            return Err(format!(
                "cannot put the package in place at {}: {e}",
                target.display()
            ));
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
            // Put the old version back: the settings were not changed.
            let _ = std::fs::remove_dir_all(&target);
            if let Some(old) = &old {
                let _ = std::fs::rename(old, &target);
            }
            return Err(e);
        }
        if let Some(old) = old {
            let _ = std::fs::remove_dir_all(old);
        }
        Ok(())
    }

    /// Removes package `name`: its entry in `packages`, then its folder. Call with the lock
    /// held. `Ok(None)` when it is not installed.
    pub fn remove(&self, name: &str) -> Result<Option<InstallRecord>, String> {
        let Some(record) = self.record(name) else {
            return Ok(None);
        };
        self.update_settings_packages(|list| {
            list.retain(|entry| entry_source(entry) != Some(record.source.as_str()));
        })?;
        let dir = self.package_dir(name);
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot remove {}: {e}", dir.display()))?;
        Ok(Some(record))
    }
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

fn read_record(dir: &Path) -> Result<InstallRecord, String> {
    let bytes = crate::plugin_files::files::read_regular(&dir.join(RECORD_FILE), 1 << 20)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
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
