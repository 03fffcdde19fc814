//! The hooks configuration, read from where Claude Code reads it and merged as it merges:
//! `~/.claude/settings.json` (user), `<project>/.claude/settings.json` (project, shared) and
//! `<project>/.claude/settings.local.json` (project, local). Hooks from every file run (the
//! lists are concatenated per event, user first); `disableAllHooks` takes the value of the
//! most specific file that sets it (local, then project, then user). A project file's hooks
//! are left out until the user trusted that exact hooks section (see [`crate::trust`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::matcher::Matcher;
use crate::trust::{TrustState, TrustStore, hooks_hash};

/// Claude Code's default time limit of a command hook, in seconds (its hooks reference:
/// "Defaults: 600 for command").
pub const DEFAULT_TIMEOUT_SECS: f64 = 600.0;
/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// The events this plugin runs (see the README for the pi event each maps to).
pub const SUPPORTED_EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "PreCompact",
    "Notification",
];

/// Where a settings file sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `~/.claude/settings.json`: the user's own, no trust needed.
    User,
    /// `.claude/settings.json` in the project.
    Project,
    /// `.claude/settings.local.json` in the project.
    Local,
}

/// One settings file that has a `hooks` section.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file.
    pub path: PathBuf,
    /// Where it sits.
    pub scope: Scope,
    /// The SHA-256 of its hooks section.
    pub sha256: String,
    /// Its trust (always `Trusted` for the user's file).
    pub trust: TrustState,
    /// How many hook commands it has.
    pub commands: usize,
}

/// A command hook.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCommand {
    /// The shell command.
    pub command: String,
    /// Its time limit in seconds.
    pub timeout_secs: f64,
    /// `async: true`: started and not waited for; its output is ignored.
    pub run_async: bool,
}

#[derive(Debug, Clone)]
struct Group {
    matcher: Matcher,
    hooks: Vec<HookCommand>,
}

/// What a problem is worth telling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Something the user must fix (a broken file, an invalid field).
    Warning,
    /// Something pi cannot do (an event or hook type without an equivalent).
    Info,
}

/// The merged configuration.
#[derive(Debug, Default)]
pub struct Config {
    events: HashMap<String, Vec<Group>>,
    /// Every settings file with hooks, trusted or not.
    pub sources: Vec<Source>,
    /// What was wrong or left out, one line each.
    pub problems: Vec<(Severity, String)>,
    /// `disableAllHooks: true`.
    pub disabled: bool,
}

impl Config {
    /// Reads and merges the files for the project `project` and the home `home`, with the
    /// user's approvals `trust` (None: no project hooks run).
    pub fn load(project: &Path, home: Option<&Path>, trust: Option<&TrustStore>) -> Config {
        let mut config = Config::default();
        let user = home.map(|h| h.join(".claude").join("settings.json"));
        let mut files = Vec::new();
        if let Some(user) = &user {
            files.push((user.clone(), Scope::User));
        }
        let dot_claude = project.join(".claude");
        for (name, scope) in [
            ("settings.json", Scope::Project),
            ("settings.local.json", Scope::Local),
        ] {
            let path = dot_claude.join(name);
            // The project is the home folder: its settings.json is the user's own.
            if user.as_ref().is_some_and(|u| same_file(u, &path)) {
                continue;
            }
            files.push((path, scope));
        }
        let mut disable = None;
        for (path, scope) in files {
            let Some(settings) = config.read_settings(&path) else {
                continue;
            };
            if let Some(flag) = settings.get("disableAllHooks") {
                match flag.as_bool() {
                    Some(flag) => disable = Some(flag),
                    None => config.warn(format!(
                        "{}: disableAllHooks must be true or false, not {flag}; ignored",
                        path.display()
                    )),
                }
            }
            let Some(hooks) = settings.get("hooks") else {
                continue;
            };
            let sha256 = hooks_hash(hooks);
            let state = match scope {
                Scope::User => TrustState::Trusted,
                _ => trust.map_or(TrustState::New, |t| t.state(&path, &sha256)),
            };
            let groups = config.parse_hooks(&path, hooks);
            let commands = groups.iter().map(|(_, g)| g.hooks.len()).sum();
            if state == TrustState::Trusted {
                for (event, group) in groups {
                    config.events.entry(event).or_default().push(group);
                }
            }
            config.sources.push(Source {
                path,
                scope,
                sha256,
                trust: state,
                commands,
            });
        }
        config.disabled = disable.unwrap_or(false);
        config
    }

    /// The hooks of `event` whose matcher selects `subject` (None: the event has no matcher,
    /// every group runs), identical commands once (the first one's timeout), in file order.
    pub fn matching(&self, event: &str, subject: Option<&str>) -> Vec<HookCommand> {
        let mut out: Vec<HookCommand> = Vec::new();
        if self.disabled {
            return out;
        }
        for group in self.events.get(event).into_iter().flatten() {
            if subject.is_some_and(|s| !group.matcher.matches(s)) {
                continue;
            }
            for hook in &group.hooks {
                if !out.iter().any(|h| h.command == hook.command) {
                    out.push(hook.clone());
                }
            }
        }
        out
    }

    /// Whether any hook is configured for `event` (before matching).
    pub fn has(&self, event: &str) -> bool {
        !self.disabled && self.events.get(event).is_some_and(|g| !g.is_empty())
    }

    /// The project files whose hooks are left out until trusted.
    pub fn untrusted(&self) -> impl Iterator<Item = &Source> {
        self.sources
            .iter()
            .filter(|s| s.trust != TrustState::Trusted && s.commands > 0)
    }

    fn warn(&mut self, text: String) {
        self.problems.push((Severity::Warning, text));
    }

    /// Reads one settings file: None when it is missing or unusable (then a problem says why).
    fn read_settings(&mut self, path: &Path) -> Option<Value> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.warn(format!("cannot read {}: {e}", path.display()));
                return None;
            }
        };
        if !meta.is_file() {
            self.warn(format!("{} is not a regular file; ignored", path.display()));
            return None;
        }
        if meta.len() > MAX_SETTINGS_BYTES {
            self.warn(format!(
                "{} is larger than 1 MiB ({} bytes); ignored",
                path.display(),
                meta.len()
            ));
            return None;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                self.warn(format!("cannot read {}: {e}", path.display()));
                return None;
            }
        };
        match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => Some(value),
            Ok(_) => {
                self.warn(format!(
                    "{}: settings must be a JSON object; its hooks do not run",
                    path.display()
                ));
                None
            }
            Err(e) => {
                self.warn(format!(
                    "{}: invalid JSON ({e}); fix the file, its hooks do not run",
                    path.display()
                ));
                None
            }
        }
    }

    /// `hooks` → event → `[{matcher, hooks: [{type, command, timeout}]}]`; what does not fit
    /// is reported and left out.
    fn parse_hooks(&mut self, path: &Path, hooks: &Value) -> Vec<(String, Group)> {
        let file = path.display().to_string();
        let Some(events) = hooks.as_object() else {
            self.warn(format!(
                "{file}: \"hooks\" must be an object of event names"
            ));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (event, groups) in events {
            if !SUPPORTED_EVENTS.contains(&event.as_str()) {
                self.problems.push((
                    Severity::Info,
                    format!(
                        "{file}: {event} hooks do not run: {}",
                        unsupported_why(event)
                    ),
                ));
                continue;
            }
            let Some(groups) = groups.as_array() else {
                self.warn(format!("{file}: hooks.{event} must be an array"));
                continue;
            };
            for (g, group) in groups.iter().enumerate() {
                let at = format!("{file}: hooks.{event}[{g}]");
                let matcher_text = match group.get("matcher") {
                    None | Some(Value::Null) => "",
                    Some(Value::String(text)) => text.as_str(),
                    Some(other) => {
                        self.warn(format!("{at}.matcher must be a string, not {other}"));
                        continue;
                    }
                };
                let (matcher, error) = Matcher::new(matcher_text);
                if let Some(error) = error {
                    self.warn(format!(
                        "{at}.matcher {matcher_text:?} is not a valid regular expression ({}); it matches nothing",
                        error.lines().last().unwrap_or_default().trim()
                    ));
                }
                let Some(list) = group.get("hooks").and_then(Value::as_array) else {
                    self.warn(format!("{at}.hooks must be an array of hooks"));
                    continue;
                };
                let mut commands = Vec::new();
                for (h, hook) in list.iter().enumerate() {
                    if let Some(command) = self.parse_command(&format!("{at}.hooks[{h}]"), hook) {
                        commands.push(command);
                    }
                }
                out.push((
                    event.clone(),
                    Group {
                        matcher,
                        hooks: commands,
                    },
                ));
            }
        }
        out
    }

    fn parse_command(&mut self, at: &str, hook: &Value) -> Option<HookCommand> {
        match hook.get("type").and_then(Value::as_str) {
            Some("command") => {}
            Some(kind @ ("prompt" | "agent" | "http" | "mcp_tool")) => {
                self.problems.push((
                    Severity::Info,
                    format!("{at}: \"{kind}\" hooks do not run here: only \"command\" hooks are supported"),
                ));
                return None;
            }
            other => {
                self.warn(format!(
                    "{at}.type must be \"command\", not {}",
                    other.map_or_else(|| "missing".to_owned(), |t| format!("{t:?}"))
                ));
                return None;
            }
        }
        let Some(command) = hook
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
        else {
            self.warn(format!("{at}.command must be a non-empty string"));
            return None;
        };
        let timeout_secs = match hook.get("timeout") {
            None | Some(Value::Null) => DEFAULT_TIMEOUT_SECS,
            Some(value) => match value.as_f64().filter(|t| *t > 0.0 && t.is_finite()) {
                Some(secs) => secs,
                None => {
                    self.warn(format!(
                        "{at}.timeout must be a positive number of seconds, not {value}; using {DEFAULT_TIMEOUT_SECS}"
                    ));
                    DEFAULT_TIMEOUT_SECS
                }
            },
        };
        Some(HookCommand {
            command: command.to_owned(),
            timeout_secs,
            run_async: hook.get("async").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// Why a Claude Code event has no pi equivalent.
fn unsupported_why(event: &str) -> &'static str {
    match event {
        "SubagentStart" | "SubagentStop" => "pi has no subagents",
        "PermissionRequest" | "PermissionDenied" => {
            "pi has no permission dialogs of its own (use PreToolUse with \"ask\")"
        }
        "TeammateIdle" | "TaskCreated" | "TaskCompleted" => "pi has no agent teams or task lists",
        "WorktreeCreate" | "WorktreeRemove" => "pi has no worktree commands",
        "PostCompact" => "use SessionStart with the matcher \"compact\"",
        _ => "not an event this plugin knows",
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(path: &Path, value: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, value.to_string()).unwrap();
    }

    #[test]
    fn files_merge_and_project_hooks_wait_for_trust() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        let hook = |c: &str| json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": c}]}]}});
        write(&home.join(".claude/settings.json"), &hook("user"));
        write(&project.join(".claude/settings.json"), &hook("project"));
        let config = Config::load(&project, Some(&home), None);
        let names: Vec<_> = config
            .matching("PreToolUse", Some("Bash"))
            .into_iter()
            .map(|h| h.command)
            .collect();
        assert_eq!(names, ["user"]);
        assert_eq!(config.untrusted().count(), 1);

        let store_path = TrustStore::path_in(&dir.path().join("agent"));
        let mut store = TrustStore::open(store_path).unwrap();
        let source = config.untrusted().next().unwrap();
        store.trust(&source.path, &source.sha256);
        let config = Config::load(&project, Some(&home), Some(&store));
        let names: Vec<_> = config
            .matching("PreToolUse", Some("Bash"))
            .into_iter()
            .map(|h| h.command)
            .collect();
        assert_eq!(names, ["user", "project"]);
        assert!(config.matching("PreToolUse", Some("Read")).is_empty());
        assert_eq!(
            config.matching("PreToolUse", Some("Bash"))[0].timeout_secs,
            DEFAULT_TIMEOUT_SECS
        );
    }

    #[test]
    fn identical_commands_run_once_and_problems_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        write(
            &home.join(".claude/settings.json"),
            &json!({"hooks": {
                "Stop": [
                    {"hooks": [{"type": "command", "command": "a", "timeout": 5}]},
                    {"hooks": [{"type": "command", "command": "a"}, {"type": "prompt", "prompt": "x"}]},
                    {"hooks": [{"type": "command", "command": "b", "timeout": "soon"}]}
                ],
                "SubagentStop": []
            }}),
        );
        let config = Config::load(&dir.path().join("p"), Some(&home), None);
        let hooks = config.matching("Stop", None);
        assert_eq!(hooks.len(), 2);
        assert_eq!(hooks[0].timeout_secs, 5.0);
        let text: Vec<_> = config.problems.iter().map(|(_, t)| t.as_str()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("hooks.Stop[2].hooks[0].timeout must be a positive number")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("SubagentStop hooks do not run: pi has no subagents")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("\"prompt\" hooks do not run here")),
            "{text:?}"
        );
    }
}
