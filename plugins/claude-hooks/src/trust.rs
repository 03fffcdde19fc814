//! Trust for project hooks. A repository's `.claude/settings.json` (and
//! `.claude/settings.local.json`) names commands the repository controls, so its hooks run
//! only once the user approved exactly that configuration: the SHA-256 of the file's `hooks`
//! section (as JSON text), pinned per file in the user's agent directory
//! (`<agentDir>/claude-hooks/trusted-hooks.json`), never in the project. `/claude-hooks trust`
//! pins what is there now; a changed section needs a new approval.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The trust of one project settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// Approved with this exact hooks section.
    Trusted,
    /// Never approved.
    New,
    /// Approved once, changed since.
    Changed,
}

impl TrustState {
    /// A phrase for the one-line notice.
    pub fn describe(self) -> &'static str {
        match self {
            TrustState::Trusted => "trusted",
            TrustState::New => "not trusted yet",
            TrustState::Changed => "changed since you trusted them",
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
    #[serde(default)]
    configs: BTreeMap<String, Entry>,
}

/// The user's approvals of project hook configurations.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: File,
}

/// The agent directory: `PI_CODING_AGENT_DIR`, else `~/.pi/agent` (as pi and pi-hooks). A
/// relative one is refused (None), as pi-hooks refuses it: the store must never end up
/// inside the project.
pub fn agent_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => home_dir()?.join(".pi").join("agent"),
    };
    dir.is_absolute().then_some(dir)
}

/// `$HOME`, if it is set and absolute.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// The SHA-256 of a hooks section (its JSON text) as lowercase hex.
pub fn hooks_hash(hooks: &serde_json::Value) -> String {
    format!("{:x}", Sha256::digest(hooks.to_string().as_bytes()))
}

impl TrustStore {
    /// The store file under `agent_dir`.
    pub fn path_in(agent_dir: &Path) -> PathBuf {
        agent_dir.join("claude-hooks").join("trusted-hooks.json")
    }

    /// Reads the store at `path` (missing: empty). A file that cannot be read or parsed is an
    /// error naming it: approvals are never silently dropped.
    pub fn open(path: PathBuf) -> Result<TrustStore, String> {
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                format!(
                    "{}: not a trust store ({e}); fix or delete it, then run /claude-hooks trust",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File {
                version: 1,
                ..File::default()
            },
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        Ok(TrustStore { path, file })
    }

    /// The state of the settings file `config` whose hooks section hashes to `sha256`.
    pub fn state(&self, config: &Path, sha256: &str) -> TrustState {
        match self
            .file
            .configs
            .get(&config.to_string_lossy().into_owned())
        {
            Some(entry) if entry.sha256 == sha256 => TrustState::Trusted,
            Some(_) => TrustState::Changed,
            None => TrustState::New,
        }
    }

    /// Pins `config` to `sha256`.
    pub fn trust(&mut self, config: &Path, sha256: &str) {
        let trusted_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        self.file.configs.insert(
            config.to_string_lossy().into_owned(),
            Entry {
                sha256: sha256.to_owned(),
                trusted_at,
            },
        );
    }

    /// Writes the store (a temporary file renamed into place, so a crash leaves the old one).
    pub fn save(&self) -> Result<(), String> {
        let fail = |e: std::io::Error| format!("cannot write {}: {e}", self.path.display());
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(fail)?;
        let text = serde_json::to_string_pretty(&self.file).map_err(|e| e.to_string())?;
        let temp = self
            .path
            .with_extension(format!("json.{}", std::process::id()));
        std::fs::write(&temp, text + "\n").map_err(fail)?;
        std::fs::rename(&temp, &self.path).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_section_needs_new_approval() {
        let dir = tempfile::tempdir().unwrap();
        let path = TrustStore::path_in(dir.path());
        let config = Path::new("/p/.claude/settings.json");
        let first = hooks_hash(&json!({"Stop": []}));
        let mut store = TrustStore::open(path.clone()).unwrap();
        assert_eq!(store.state(config, &first), TrustState::New);
        store.trust(config, &first);
        store.save().unwrap();
        let store = TrustStore::open(path.clone()).unwrap();
        assert_eq!(store.state(config, &first), TrustState::Trusted);
        let second = hooks_hash(&json!({"Stop": [{"hooks": []}]}));
        assert_eq!(store.state(config, &second), TrustState::Changed);
        std::fs::write(&path, "{oops").unwrap();
        let error = TrustStore::open(path).unwrap_err();
        assert!(error.contains("trusted-hooks.json"), "{error}");
    }
}
