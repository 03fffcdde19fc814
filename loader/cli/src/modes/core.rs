//! The session core every mode shares: the runner over the loaded plugins, plugin errors on
//! stderr (and, where the mode wants them, as `extension_error` lines), the agent, and the
//! stdout line writer. A mode only turns the core's events and UI requests into its medium.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use pi_hooks_agent::model::Model;
use pi_hooks_agent::tools::builtin::builtin_tools;
use pi_hooks_agent::{Agent, AgentConfig, DEFAULT_SYSTEM_PROMPT, EventSink};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::lifecycle::load::LoadReport;
use pi_hooks_host::runner::{Runner, RunnerConfig};
pub use pi_hooks_host::serve::LineWriter;
use pi_hooks_session::SessionStore;

/// What a mode starts a session from.
pub struct CoreSetup {
    /// Loaded plugins and settings.
    pub report: LoadReport,
    /// The model.
    pub model: Box<dyn Model>,
    /// The session.
    pub session: SessionStore,
    /// The working directory.
    pub cwd: PathBuf,
    /// The mode, a `PI_MODE_*`.
    pub mode: u32,
    /// `input.source` of the mode's prompts.
    pub input_source: &'static str,
    /// Where the plugins were discovered (for `/reload` and `--watch`).
    pub discovery: Option<pi_hooks_host::plugin_files::discover::DiscoveryOptions>,
    /// `--watch`: reload a plugin when its file is rebuilt.
    pub watch: bool,
}

/// Plugin load failures as lines a client reads (RPC and JSON mode), before anything else
/// the session writes: `{"type":"extension_error","extensionPath":…,"event":"load","error":…}`.
pub fn load_error_lines(report: &LoadReport, out: &LineWriter) {
    for error in &report.errors {
        out.line(&json!({
            "type": "extension_error",
            "extensionPath": error.path,
            "event": "load",
            "error": error.error,
        }));
    }
}

/// An agent event as pi 1.6's RPC and JSON modes print it (pi's `toJsonEvent`): a
/// `message_update` carries the delta only, as
/// `{type, usage, assistantMessageEvent}` (the partial message is left out, its `usage` is
/// kept), with the event's own `partial` left out too and a `toolcall_start` naming its call
/// (`id`, `toolName`, read from the partial message). Any other event is printed as it is.
pub fn json_event(event: &serde_json::Value) -> std::borrow::Cow<'_, serde_json::Value> {
    use std::borrow::Cow;
    if event["type"] != "message_update" {
        return Cow::Borrowed(event);
    }
    let message = &event["message"];
    let mut delta = event["assistantMessageEvent"].clone();
    if let Some(fields) = delta.as_object_mut() {
        fields.remove("partial");
        if fields.get("type").and_then(serde_json::Value::as_str) == Some("toolcall_start") {
            let index = fields
                .get("contentIndex")
                .and_then(serde_json::Value::as_u64)
                .and_then(|i| usize::try_from(i).ok());
            let call = index
                .and_then(|i| message["content"].get(i))
                .filter(|block| block["type"] == "toolCall");
            if let Some(call) = call {
                fields.insert("id".into(), call["id"].clone());
                fields.insert("toolName".into(), call["name"].clone());
            }
        }
    }
    let mut line = serde_json::Map::new();
    line.insert("type".into(), "message_update".into());
    if let Some(usage) = message.get("usage") {
        line.insert("usage".into(), usage.clone());
    }
    line.insert("assistantMessageEvent".into(), delta);
    Cow::Owned(serde_json::Value::Object(line))
}

/// Builds the runner and the agent. Plugin errors go to stderr as
/// `Extension error (<path>): <message>`, and to `error_lines` as pi's `extension_error`
/// objects when given. Events go to `sink`.
pub fn build(setup: CoreSetup, error_lines: Option<LineWriter>, sink: EventSink) -> Agent {
    let CoreSetup {
        report,
        model,
        session,
        cwd,
        mode,
        input_source,
        discovery,
        watch,
    } = setup;
    let config = RunnerConfig {
        session_file: session.path().map(|p| p.to_string_lossy().into_owned()),
        ..RunnerConfig::new(&cwd, mode).with_settings(&report.settings)
    };
    let runner = Arc::new(Runner::new(
        report.plugins.into_iter().map(Arc::new).collect(),
        config,
    ));
    runner.set_not_loaded(
        report
            .errors
            .iter()
            .filter(|e| pi_hooks_host::plugin_files::paths::has_library_suffix(Path::new(&e.path)))
            .map(|e| (e.path.clone(), e.error.clone()))
            .collect(),
    );
    runner.on_error(Arc::new(move |error| {
        // Escaped: the path and the message are the plugin's; a closed stderr is ignored.
        let _ = writeln!(
            std::io::stderr().lock(),
            "Extension error ({}): {}",
            escape(&error.extension_path),
            escape(&error.error)
        );
        if let Some(out) = &error_lines {
            let mut line = serde_json::to_value(error).unwrap_or_default();
            line["type"] = "extension_error".into();
            out.line(&line);
        }
    }));
    let config = AgentConfig {
        cwd,
        system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
        input_source,
        compaction: pi_hooks_host::plugin_files::settings::compaction(&report.settings),
        retry: pi_hooks_host::plugin_files::settings::retry(&report.settings),
        discovery,
    };
    let mut agent = Agent::new(runner, model, builtin_tools(), session, config, sink);
    if watch && let Err(error) = agent.watch() {
        let _ = writeln!(
            std::io::stderr().lock(),
            "pi-hooks: --watch: {}",
            escape(&error)
        );
    }
    agent
}

/// Ends a session: `session_shutdown`, then what plugins emitted on the event bus is
/// delivered before they are retired (bounded wait).
pub fn shutdown(agent: &mut Agent) {
    agent.shutdown();
    pi_hooks_host::services::event_bus::drain(pi_hooks_host::services::event_bus::SHUTDOWN_DRAIN);
}
