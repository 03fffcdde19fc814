//! How long a hook may run: its own `timeout` (Claude Code's field, seconds), up to what is
//! left of the time the host gives the plugin's handler.
//!
//! pi-hooks times every event handler but `tool_call`'s with `hookTimeout` (milliseconds in
//! `settings.json`, default 30 s; see loader/host/src/plugin_files/settings.rs), and
//! `tool_call`'s with `toolCallTimeout` (unset: untimed). A handler that overruns is
//! abandoned by the host and its plugin gets no other call until the stuck one returns, so a
//! hook allowed its full `"timeout": 120` on `PostToolUse` would cost the plugin every later
//! event. claude-hooks therefore cuts each hook at the handler's limit (less a small margin),
//! and a hook cut there says which setting cut it and where to raise it. pi itself has no
//! such limit; pi-hooks' `serve` (the bridge) applies the same settings, so the ceiling is the
//! same in pi and in pi-hooks.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The host's default `hookTimeout` (pi-hooks' `DEFAULT_HOOK_TIMEOUT`).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The time the host gives the handler running the hooks of one event.
#[derive(Debug, Clone)]
pub struct HandlerLimit {
    /// `hookTimeout` or `toolCallTimeout`.
    pub setting: &'static str,
    /// Its value.
    pub limit: Duration,
    /// The file it came from (`None`: the default).
    pub from: Option<PathBuf>,
    /// The user's settings file, where it can be raised.
    pub user_file: PathBuf,
    /// When the hooks must have ended for the handler to return in time.
    pub deadline: Instant,
}

impl HandlerLimit {
    /// The limit in force for the handler of the Claude Code `event` that started at
    /// `started`, with the settings of `agent_dir` and the project `cwd` as the host reads
    /// them: the user's decide, a project's may only raise. `None`: the handler is untimed
    /// (`PreToolUse` without `toolCallTimeout`).
    pub fn of(event: &str, agent_dir: &Path, cwd: &Path, started: Instant) -> Option<Self> {
        // PreToolUse and the Notification before an `ask` run in pi's tool_call handler.
        let setting = if matches!(event, "PreToolUse" | "Notification") {
            "toolCallTimeout"
        } else {
            "hookTimeout"
        };
        let user_file = agent_dir.join("settings.json");
        let project_file = cwd.join(".pi").join("settings.json");
        let user = millis(&user_file, setting).map(|ms| (ms, user_file.clone()));
        let project = millis(&project_file, setting).map(|ms| (ms, project_file));
        let (limit, from) = match (user, project) {
            (Some(user), Some(project)) if project.0 > user.0 => (project.0, Some(project.1)),
            (Some(user), _) => (user.0, Some(user.1)),
            (None, project) if setting == "hookTimeout" => match project {
                Some(p) if Duration::from_millis(p.0) > DEFAULT_HOOK_TIMEOUT => (p.0, Some(p.1)),
                _ => (DEFAULT_HOOK_TIMEOUT.as_millis() as u64, None),
            },
            // toolCallTimeout: a project's alone does not time the user's tool_call.
            (None, _) => return None,
        };
        let limit = Duration::from_millis(limit);
        let margin = (limit / 10).min(Duration::from_millis(500));
        Some(HandlerLimit {
            setting,
            limit,
            from,
            user_file,
            deadline: started + limit - margin,
        })
    }

    /// Why a hook cut at this limit stopped, for the user: the setting, its value, where it
    /// came from, the hook's own `timeout`, and where to raise the setting.
    pub fn cut_message(&self, ran: Duration, own_secs: f64) -> String {
        let from = match &self.from {
            Some(file) => format!("set in {}", file.display()),
            None => "the default".to_owned(),
        };
        format!(
            "timed out after {}s: cut at pi-hooks' {} ({} ms, {from}), before its own \"timeout\": {}; raise \"{}\" (milliseconds) in {} to give it its time",
            crate::run::fmt_secs((ran.as_millis() as f64 / 100.0).round() / 10.0),
            self.setting,
            self.limit.as_millis(),
            crate::run::fmt_secs(own_secs),
            self.setting,
            self.user_file.display(),
        )
    }
}

/// A whole number of milliseconds at `key` of the JSON file `path`, if it has one.
fn millis(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Value>(&text)
        .ok()?
        .get(key)?
        .as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_decides_a_project_only_raises_and_pre_tool_use_is_untimed_by_default() {
        let dir = tempfile::tempdir().unwrap();
        let (agent, cwd) = (dir.path().join("agent"), dir.path().join("project"));
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        let now = Instant::now();
        let limit = |event| HandlerLimit::of(event, &agent, &cwd, now);
        assert_eq!(limit("Stop").unwrap().limit, DEFAULT_HOOK_TIMEOUT);
        assert!(limit("PreToolUse").is_none());
        std::fs::write(cwd.join(".pi/settings.json"), r#"{"hookTimeout": 1000}"#).unwrap();
        assert_eq!(limit("Stop").unwrap().limit, DEFAULT_HOOK_TIMEOUT);
        std::fs::write(
            agent.join("settings.json"),
            r#"{"hookTimeout": 500, "toolCallTimeout": 2000}"#,
        )
        .unwrap();
        let stop = limit("Stop").unwrap();
        assert_eq!(stop.limit, Duration::from_millis(1000));
        assert_eq!(stop.from.as_deref(), Some(&*cwd.join(".pi/settings.json")));
        assert_eq!(stop.deadline, now + Duration::from_millis(900));
        assert_eq!(
            limit("PreToolUse").unwrap().limit,
            Duration::from_millis(2000)
        );
        let message = stop.cut_message(Duration::from_millis(880), 120.0);
        assert!(
            message.starts_with(
                "timed out after 0.9s: cut at pi-hooks' hookTimeout (1000 ms, set in "
            ),
            "{message}"
        );
        assert!(
            message.contains(
                "before its own \"timeout\": 120; raise \"hookTimeout\" (milliseconds) in "
            ),
            "{message}"
        );
    }
}
