//! Trust for project plugins: a plugin a cloned repository brings loads only after the user
//! approved exactly its bytes. Approvals live in the user's agent directory
//! (`<agentDir>/trusted-plugins.json`), never in the project, pinned to the file's SHA-256.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The trust state of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustState {
    /// Approved with these exact bytes.
    Trusted,
    /// Never approved.
    New,
    /// Approved once, but the bytes changed since.
    Changed,
    /// From a source that needs no trust (global folders, user settings, command line).
    NotRequired,
}

impl TrustState {
    /// A phrase for listings.
    pub fn describe(self) -> &'static str {
        match self {
            TrustState::Trusted => "trusted",
            TrustState::New => "not trusted yet",
            TrustState::Changed => "changed since it was trusted",
            TrustState::NotRequired => "no trust needed",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    sha256: String,
    #[serde(rename = "trustedAt")]
    trusted_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    plugins: BTreeMap<String, Entry>,
}

/// The user's trust store.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: File,
}

impl TrustStore {
    /// The store's path in `agent_dir`.
    pub fn path_in(agent_dir: &Path) -> PathBuf {
        agent_dir.join("trusted-plugins.json")
    }

    /// Reads the store. A missing file is an empty store; an unreadable or malformed one is
    /// an error, and the caller must then trust nothing (fail closed).
    pub fn load(agent_dir: &Path) -> Result<TrustStore, String> {
        let path = Self::path_in(agent_dir);
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                format!(
                    "trust store {} is not valid ({e}); no project plugin loads until it is fixed or removed",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File { version: 1, plugins: BTreeMap::new() },
            Err(e) => {
                return Err(format!(
                    "cannot read trust store {} ({e}); no project plugin loads until it is readable",
                    path.display()
                ));
            }
        };
        Ok(TrustStore { path, file })
    }

    /// The state of the file at `canonical` with content hash `sha256`.
    pub fn state(&self, canonical: &Path, sha256: &str) -> TrustState {
        match self.file.plugins.get(&key(canonical)) {
            Some(entry) if entry.sha256 == sha256 => TrustState::Trusted,
            Some(_) => TrustState::Changed,
            None => TrustState::New,
        }
    }

    /// Approves the file at `canonical` with content hash `sha256`.
    pub fn trust(&mut self, canonical: &Path, sha256: &str) {
        let trusted_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.file.plugins.insert(
            key(canonical),
            Entry {
                sha256: sha256.to_owned(),
                trusted_at,
            },
        );
    }

    /// Withdraws approval; whether there was one.
    pub fn untrust(&mut self, canonical: &Path) -> bool {
        self.file.plugins.remove(&key(canonical)).is_some()
    }

    /// Writes the store atomically (temporary file, then rename), readable by the user only;
    /// a link in its place is replaced, never written through.
    pub fn save(&self) -> Result<(), String> {
        let fail = |e: String| format!("cannot write trust store {}: {e}", self.path.display());
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("trusted-plugins.json");
        let mut text = serde_json::to_string_pretty(&self.file).map_err(|e| fail(e.to_string()))?;
        text.push('\n');
        crate::plugin_files::beneath::Beneath::open(dir, true)
            .and_then(|folder| folder.write_file(name, text.as_bytes(), 0o600))
            .map_err(fail)
    }
}

fn key(canonical: &Path) -> String {
    canonical.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_to_content_and_fails_closed_on_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = TrustStore::load(dir.path()).unwrap();
        let plugin = Path::new("/p/x.so");
        assert_eq!(store.state(plugin, "aa"), TrustState::New);
        store.trust(plugin, "aa");
        store.save().unwrap();
        let store = TrustStore::load(dir.path()).unwrap();
        assert_eq!(store.state(plugin, "aa"), TrustState::Trusted);
        assert_eq!(store.state(plugin, "bb"), TrustState::Changed);
        std::fs::write(TrustStore::path_in(dir.path()), "garbage").unwrap();
        assert!(
            TrustStore::load(dir.path())
                .unwrap_err()
                .contains("no project plugin loads")
        );
    }
}
