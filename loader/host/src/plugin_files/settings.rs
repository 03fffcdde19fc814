//! `settings.json`: the project's (`<cwd>/.pi/settings.json`) and the user's
//! (`<agentDir>/settings.json`). Only the keys the host uses are read; others are ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

/// The host's keys of one settings file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The file they came from.
    pub path: PathBuf,
    /// `hooks`: plugin paths, relative to the settings file's folder.
    pub hooks: Vec<String>,
    /// `extensions`: more plugin paths, same rules.
    pub extensions: Vec<String>,
    /// `hookTimeout` in milliseconds.
    pub hook_timeout_ms: Option<u64>,
    /// `toolCallTimeout` in milliseconds.
    pub tool_call_timeout_ms: Option<u64>,
    /// `streamIdleTimeout` in milliseconds: the longest a model server's stream may go
    /// without an event.
    pub stream_idle_timeout_ms: Option<u64>,
    /// `compaction`: `{enabled?, reserveTokens?, keepRecentTokens?}`.
    pub compaction: Option<pi_hooks_session::compaction::CompactionSettings>,
    /// `retry`: `{enabled?, maxRetries?, baseDelayMs?}`.
    pub retry: Option<RetrySettings>,
    /// Whether the file is the project's (`<cwd>/.pi/settings.json`) rather than the user's.
    pub project: bool,
    /// `isolate`: which plugins run in a `pi-hooks serve` child (see `crate::isolate`).
    pub isolate: crate::isolate::IsolateSetting,
    /// `sandbox`: grants for plugins, by name (see `crate::sandbox`); read from the user's
    /// settings only.
    pub sandbox: Vec<crate::sandbox::SettingsGrant>,
    /// pi's `defaultProvider`: the provider a session starts with.
    pub default_provider: Option<String>,
    /// pi's `defaultModel`: the model id a session starts with.
    pub default_model: Option<String>,
}

impl Settings {
    /// The folder relative plugin paths are resolved against.
    pub fn base_dir(&self) -> &Path {
        self.path.parent().unwrap_or_else(|| Path::new("."))
    }
}

/// Reads a settings file: `Ok(None)` when it does not exist, `Err` with a message naming the
/// file, the key and what to do when it cannot be used.
pub fn read_settings(path: &Path) -> Result<Option<Settings>, String> {
    use crate::plugin_files::files::{MAX_SETTINGS_BYTES, ReadError, read_regular};
    let bytes = match read_regular(path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::NotFound) => return Ok(None),
        Err(e) => {
            return Err(format!(
                "settings file {e}; plugins it lists were not loaded"
            ));
        }
    };
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        let at = crate::plugin_files::settings_write::json_error(&bytes, &e);
        format!(
            "settings file is not valid JSON at line {}, column {}: {}; fix it or remove it. Plugins it lists were not loaded",
            at.line, at.column, at.message
        )
    })?;
    let Value::Object(map) = value else {
        return Err(format!(
            "settings file must hold a JSON object, found {}; plugins it lists were not loaded",
            kind_of(&value)
        ));
    };
    Ok(Some(Settings {
        path: path.to_path_buf(),
        hooks: string_list(&map, "hooks")?,
        extensions: string_list(&map, "extensions")?,
        hook_timeout_ms: millis(&map, "hookTimeout")?,
        tool_call_timeout_ms: millis(&map, "toolCallTimeout")?,
        stream_idle_timeout_ms: millis(&map, "streamIdleTimeout")?,
        compaction: match map.get("compaction") {
            None | Some(Value::Null) => None,
            Some(value) => Some(
                pi_hooks_session::compaction::CompactionSettings::from_settings_value(value)
                    .map_err(|e| {
                        format!("{e}; fix the settings file. Plugins it lists were not loaded")
                    })?,
            ),
        },
        retry: match map.get("retry") {
            None | Some(Value::Null) => None,
            Some(value) => Some(RetrySettings::from_settings_value(value).map_err(|e| {
                format!("{e}; fix the settings file. Plugins it lists were not loaded")
            })?),
        },
        project: false,
        isolate: match map.get("isolate") {
            None => crate::isolate::IsolateSetting::Off,
            Some(value) => crate::isolate::IsolateSetting::from_settings_value(value)?,
        },
        sandbox: match map.get("sandbox") {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => crate::sandbox::SettingsGrant::list_from_settings_value(value)?,
        },
        default_provider: text(&map, "defaultProvider")?,
        default_model: text(&map, "defaultModel")?,
    }))
}

/// pi's `defaultProvider` and `defaultModel` of the user's settings, each replaced by the
/// project's when it sets it (pi's order); `(None, None)` when neither sets them or a file
/// cannot be read (the plugin loader reports such a file).
pub fn default_model(agent_dir: &Path, cwd: &Path) -> (Option<String>, Option<String>) {
    let files = [
        agent_dir.join("settings.json"),
        cwd.join(".pi").join("settings.json"),
    ];
    let mut chosen = (None, None);
    for settings in files.iter().filter_map(|f| read_settings(f).ok().flatten()) {
        if settings.default_provider.is_some() {
            chosen.0 = settings.default_provider;
        }
        if settings.default_model.is_some() {
            chosen.1 = settings.default_model;
        }
    }
    chosen
}

/// `streamIdleTimeout` in force, if a settings file sets it: the user's, which a project's
/// may raise but not lower (as `hookTimeout`). Files that cannot be read are left out (the
/// plugin loader reports them).
pub fn stream_idle_timeout(agent_dir: &Path, cwd: &Path) -> Option<Duration> {
    let user = read_settings(&agent_dir.join("settings.json"))
        .ok()
        .flatten()
        .and_then(|s| s.stream_idle_timeout_ms);
    let project = read_settings(&cwd.join(".pi").join("settings.json"))
        .ok()
        .flatten()
        .and_then(|s| s.stream_idle_timeout_ms);
    match (user, project) {
        (Some(user), Some(project)) => Some(user.max(project)),
        (user, None) => user,
        (None, Some(project)) => Some(project),
    }
    .map(Duration::from_millis)
}

/// The handler time limits in force: `(hookTimeout, toolCallTimeout)`. The user's settings
/// decide; a project's settings may only raise a limit, never lower it, so a cloned
/// repository cannot time out the user's plugins (a `tool_result` redaction, say) by
/// setting `hookTimeout: 1`. `toolCallTimeout` unset means untimed.
pub fn timeouts(settings: &[Settings]) -> (Duration, Option<Duration>) {
    let user = settings.iter().find(|s| !s.project);
    let project = settings.iter().find(|s| s.project);
    let mut hook = user
        .and_then(|s| s.hook_timeout_ms)
        .map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_millis);
    if let Some(raised) = project
        .and_then(|s| s.hook_timeout_ms)
        .map(Duration::from_millis)
    {
        hook = hook.max(raised);
    }
    let mut tool_call = user
        .and_then(|s| s.tool_call_timeout_ms)
        .map(Duration::from_millis);
    if let (Some(limit), Some(raised)) = (tool_call, project.and_then(|s| s.tool_call_timeout_ms)) {
        tool_call = Some(limit.max(Duration::from_millis(raised)));
    }
    (hook, tool_call)
}

/// The compaction settings in force: the project's `compaction` over the user's (as pi
/// merges settings), pi's defaults without either.
pub fn compaction(settings: &[Settings]) -> pi_hooks_session::compaction::CompactionSettings {
    let pick = |project: bool| {
        settings
            .iter()
            .find(|s| s.project == project)
            .and_then(|s| s.compaction)
    };
    pick(true).or_else(|| pick(false)).unwrap_or_default()
}

/// pi's automatic retry of a transient model error (settings.json `retry`): after a run that
/// ended in an error such as a rate limit, an overloaded or unreachable server, the run is
/// retried up to `max_retries` times, waiting `base_delay_ms * 2^(attempt - 1)` before each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySettings {
    /// Whether failed runs are retried (`true`).
    pub enabled: bool,
    /// How many retries at most (3).
    pub max_retries: u32,
    /// The first retry's delay in milliseconds (2000); each next one doubles it.
    pub base_delay_ms: u64,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 2000,
        }
    }
}

impl RetrySettings {
    /// Reads settings.json's `retry` value (pi's keys; others, such as `provider`, are
    /// ignored); an error names the key, the value found and what is expected.
    pub fn from_settings_value(retry: &Value) -> Result<RetrySettings, String> {
        let Value::Object(map) = retry else {
            return Err(format!(
                "settings key `retry` must be an object like {{\"enabled\": true, \"maxRetries\": 3, \"baseDelayMs\": 2000}}, found {retry}"
            ));
        };
        let mut settings = RetrySettings::default();
        if let Some(value) = map.get("enabled") {
            settings.enabled = value.as_bool().ok_or_else(|| {
                format!("settings key `retry.enabled` must be true or false, found {value}")
            })?;
        }
        if let Some(value) = map.get("maxRetries") {
            settings.max_retries = value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    format!("settings key `retry.maxRetries` must be a whole number, found {value}")
                })?;
        }
        if let Some(value) = map.get("baseDelayMs") {
            settings.base_delay_ms = value.as_u64().ok_or_else(|| {
                format!(
                    "settings key `retry.baseDelayMs` must be a whole number of milliseconds, found {value}"
                )
            })?;
        }
        Ok(settings)
    }
}

/// The retry settings in force: the project's `retry` over the user's, pi's defaults without
/// either.
pub fn retry(settings: &[Settings]) -> RetrySettings {
    let pick = |project: bool| {
        settings
            .iter()
            .find(|s| s.project == project)
            .and_then(|s| s.retry)
    };
    pick(true).or_else(|| pick(false)).unwrap_or_default()
}

/// The default `hookTimeout`: 30 seconds.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(30);

fn string_list(map: &serde_json::Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    let wrong = |found: &Value| {
        format!(
            "`{key}` must be an array of path strings, found {}; fix the settings file. Plugins it lists were not loaded",
            kind_of(found)
        )
    };
    match map.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(|| wrong(item)))
            .collect(),
        Some(other) => Err(wrong(other)),
    }
}

fn text(map: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(format!(
            "`{key}` must be a string, found {}; fix the settings file. Plugins it lists were not loaded",
            kind_of(other)
        )),
    }
}

fn millis(map: &serde_json::Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            format!(
                "`{key}` must be a whole number of milliseconds, found {}; fix the settings file",
                kind_of(v)
            )
        }),
    }
}

fn kind_of(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({s:?})"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lists_and_reports_wrong_types() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        assert_eq!(read_settings(&path), Ok(None));
        std::fs::write(
            &path,
            r#"{"hooks": ["a.so"], "extensions": ["b.so"], "hookTimeout": 5}"#,
        )
        .unwrap();
        let s = read_settings(&path).unwrap().unwrap();
        assert_eq!(
            (s.hooks, s.extensions, s.hook_timeout_ms),
            (vec!["a.so".into()], vec!["b.so".into()], Some(5))
        );
        std::fs::write(&path, r#"{"hooks": 3}"#).unwrap();
        let e = read_settings(&path).unwrap_err();
        assert!(
            e.contains("`hooks` must be an array of path strings, found a number (3)"),
            "{e}"
        );
        std::fs::write(&path, "{not json").unwrap();
        assert!(read_settings(&path).unwrap_err().contains("not valid JSON"));
        std::fs::write(&path, "{\n  \"hooks\": [],\n  // mine\n}").unwrap();
        let e = read_settings(&path).unwrap_err();
        assert!(
            e.contains("not valid JSON at line 3, column 3: Comments are not allowed"),
            "{e}"
        );
        std::fs::write(&path, "{\"hooks\": [\"a.so\",]}").unwrap();
        let e = read_settings(&path).unwrap_err();
        assert!(e.contains("at line 1, column 18: Trailing commas"), "{e}");
    }

    #[test]
    fn a_project_may_raise_timeouts_but_not_lower_them() {
        let make = |project, hook, tool| Settings {
            hook_timeout_ms: hook,
            tool_call_timeout_ms: tool,
            project,
            ..Settings::default()
        };
        let ms = Duration::from_millis;
        assert_eq!(timeouts(&[]), (DEFAULT_HOOK_TIMEOUT, None));
        assert_eq!(
            timeouts(&[make(true, Some(1), Some(1))]),
            (DEFAULT_HOOK_TIMEOUT, None)
        );
        assert_eq!(
            timeouts(&[make(true, Some(60_000), None)]),
            (ms(60_000), None)
        );
        let user = make(false, Some(200), Some(100));
        assert_eq!(
            timeouts(&[make(true, Some(1), Some(1)), user.clone()]),
            (ms(200), Some(ms(100)))
        );
        assert_eq!(
            timeouts(&[make(true, Some(900), Some(500)), user]),
            (ms(900), Some(ms(500)))
        );
    }
}
