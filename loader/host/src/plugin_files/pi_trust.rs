//! pi's project trust (pi 0.79 and later), read so that one decision holds for both hosts: a
//! project pi does not trust runs no project native plugin.
//!
//! pi decides (its `dist/core/project-trust.js`), first match wins:
//!
//! 1. `--approve` / `--no-approve` on the command line;
//! 2. (an extension's `project_trust` answer, which pi-hooks' own host does not ask);
//! 3. the nearest saved decision for the project folder or one of its parents in
//!    `<agentDir>/trust.json` (`{"<canonical folder>": true | false | null}`), which pi's
//!    `/trust` writes;
//! 4. `defaultProjectTrust` of the user's settings (`"always"`, `"never"`; anything else is
//!    pi's default `"ask"`).
//!
//! pi asks in its terminal UI when nothing decided, and declines elsewhere. pi-hooks has no
//! such question: there pi-hooks' own per-file trust (`pi-hooks trust FILE`, a pinned
//! SHA-256; [`super::trust`]) decides alone.
//!
//! How the two combine (a difference on purpose: pi trusts a folder, pi-hooks pins a
//! library's exact bytes): pi's "no" is final, and a project plugin is then not loaded even
//! if its file is pinned; pi's "yes" or no decision leaves it to the pin, so a project plugin
//! still loads only with the exact bytes the user trusted. When pi declines, the project's
//! `settings.json` is not read either, as in pi.
//!
//! Inside pi, `pi-hooks serve` is told pi's own decision (which includes pi's question and
//! the `project_trust` handlers) by the bridge: the environment variable
//! [`DECISION_ENV`] (`yes` or `no`) or serve's `--approve` / `--no-approve`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

/// The environment variable through which the pi bridge gives `pi-hooks serve` pi's decision
/// for the session's project: `yes` (pi trusts it) or `no`. Any other value is taken as `no`
/// (fail closed) and said.
pub const DECISION_ENV: &str = "PI_HOOKS_PROJECT_TRUST";

/// What pi decided for a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PiTrust {
    /// pi trusts the project; why (for messages).
    Trusted(String),
    /// pi does not trust the project; why, and how to change it.
    Declined(String),
    /// Nothing decided (pi would ask in its terminal UI).
    Undecided,
}

impl PiTrust {
    /// Whether pi declined the project.
    pub fn declined(&self) -> Option<&str> {
        match self {
            PiTrust::Declined(why) => Some(why),
            _ => None,
        }
    }
}

/// The command line's `--approve` (`Some(true)`) or `--no-approve` (`Some(false)`).
static OVERRIDE: Mutex<Option<bool>> = Mutex::new(None);

/// Sets this process's `--approve` / `--no-approve` (pi's one-run decision, before anything
/// else); `None` clears it.
pub fn set_override(trusted: Option<bool>) {
    *OVERRIDE.lock().unwrap_or_else(|e| e.into_inner()) = trusted;
}

/// The project folders pi asks trust for (its `TRUST_REQUIRING_PROJECT_CONFIG_RESOURCES`,
/// plus pi-hooks' own `hooks`).
const PROJECT_RESOURCES: [&str; 9] = [
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
    "hooks",
];

/// pi's decision for the project at `cwd`, read as the module's documentation says.
pub fn decide(agent_dir: &Path, cwd: &Path) -> PiTrust {
    let overridden = *OVERRIDE.lock().unwrap_or_else(|e| e.into_inner());
    match overridden {
        Some(true) => return PiTrust::Trusted("--approve".into()),
        Some(false) => {
            return PiTrust::Declined(
                "--no-approve was given; run without it (or with --approve) to load them".into(),
            );
        }
        None => {}
    }
    if let Some(value) = std::env::var_os(DECISION_ENV) {
        return match value.to_str() {
            Some("yes") => PiTrust::Trusted(format!("pi trusts it ({DECISION_ENV}=yes)")),
            Some("no") => PiTrust::Declined(format!(
                "pi does not trust this project ({DECISION_ENV}=no, pi's decision); trust it in pi (`/trust`, or `pi --approve`)"
            )),
            _ => PiTrust::Declined(format!(
                "{DECISION_ENV} is {}, not yes or no, so the project counts as not trusted; set it to yes or no",
                crate::guards::display::escape(&value.to_string_lossy())
            )),
        };
    }
    let canonical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let store = agent_dir.join("trust.json");
    let saved = match nearest_saved(&store, &canonical) {
        Ok(saved) => saved,
        Err(why) => return PiTrust::Declined(why),
    };
    let config = canonical.join(".pi");
    if !PROJECT_RESOURCES.iter().any(|r| config.join(r).exists()) {
        // pi: no protected resources, so the saved decision or trusted.
        return match saved {
            Some((_, false)) => declined_by(&store, saved),
            _ => PiTrust::Trusted("the project has nothing pi protects".into()),
        };
    }
    match saved {
        Some((ref folder, true)) => PiTrust::Trusted(format!(
            "saved for {} in {}",
            folder.display(),
            store.display()
        )),
        Some((_, false)) => declined_by(&store, saved),
        None => match default_project_trust(agent_dir).as_deref() {
            Some("always") => PiTrust::Trusted("defaultProjectTrust is \"always\"".into()),
            Some("never") => PiTrust::Declined(format!(
                "`defaultProjectTrust` is \"never\" in {} and no decision is saved for it in {}; trust it in pi (`/trust`) or run with --approve",
                agent_dir.join("settings.json").display(),
                store.display()
            )),
            _ => PiTrust::Undecided,
        },
    }
}

fn declined_by(store: &Path, saved: Option<(PathBuf, bool)>) -> PiTrust {
    let folder = saved.map(|(f, _)| f).unwrap_or_default();
    PiTrust::Declined(format!(
        "pi does not trust this project (`false` for {} in {}); trust it in pi (`/trust`) or run with --approve",
        crate::guards::display::escape(&folder.display().to_string()),
        crate::guards::display::escape(&store.display().to_string())
    ))
}

/// pi's `findNearestTrustEntry`: the decision saved for `folder` or its nearest parent.
/// A trust store that cannot be read is an error (pi stops on it too), so nothing of the
/// project loads.
fn nearest_saved(store: &Path, folder: &Path) -> Result<Option<(PathBuf, bool)>, String> {
    let bytes = match crate::plugin_files::files::read_regular(store, 1 << 22) {
        Ok(bytes) => bytes,
        Err(crate::plugin_files::files::ReadError::NotFound) => return Ok(None),
        Err(e) => {
            return Err(format!(
                "pi's trust store {}: {e}; the project counts as not trusted until it is fixed",
                store.display()
            ));
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let invalid = |what: String| {
        format!(
            "pi's trust store {} is not valid ({what}); the project counts as not trusted until it is fixed (pi refuses it too)",
            store.display()
        )
    };
    let value: Value = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(invalid("expected an object".into()));
    };
    let mut saved = Vec::new();
    for (key, value) in &map {
        match value {
            Value::Bool(decision) => saved.push((PathBuf::from(key), *decision)),
            Value::Null => {}
            _ => {
                return Err(invalid(format!(
                    "value for {key:?} must be true, false, or null"
                )));
            }
        }
    }
    let mut current = Some(folder);
    while let Some(dir) = current {
        if let Some((key, decision)) = saved.iter().find(|(key, _)| key == dir) {
            return Ok(Some((key.clone(), *decision)));
        }
        current = dir.parent();
    }
    Ok(None)
}

/// `defaultProjectTrust` of the user's settings (pi reads it from there only).
fn default_project_trust(agent_dir: &Path) -> Option<String> {
    let bytes = crate::plugin_files::files::read_regular(
        &agent_dir.join("settings.json"),
        crate::plugin_files::files::MAX_SETTINGS_BYTES,
    )
    .ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value
        .get("defaultProjectTrust")?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_saved_decision_applies_and_garbage_declines() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("trust.json");
        assert_eq!(nearest_saved(&store, Path::new("/a/b/c")), Ok(None));
        std::fs::write(&store, r#"{"/a": true, "/a/b": false, "/x": null}"#).unwrap();
        assert_eq!(
            nearest_saved(&store, Path::new("/a/b/c")),
            Ok(Some(("/a/b".into(), false)))
        );
        assert_eq!(
            nearest_saved(&store, Path::new("/a/z")),
            Ok(Some(("/a".into(), true)))
        );
        assert_eq!(nearest_saved(&store, Path::new("/x/y")), Ok(None));
        std::fs::write(&store, r#"{"/a": "yes"}"#).unwrap();
        assert!(
            nearest_saved(&store, Path::new("/a"))
                .unwrap_err()
                .contains("must be true, false, or null")
        );
    }
}
