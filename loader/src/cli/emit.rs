//! `pi-hooks emit PLUGIN EVENT`: fires one event (or runs one command) at one plugin without
//! a session and prints its decision and every host call it made as one JSON object, for
//! testing a plugin from a shell script or CI. The work is `crate::testing::PluginTest`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::{CommandError, write_stderr, write_stdout};
use crate::display::escape;
use crate::testing::PluginTest;

/// `pi-hooks emit`'s arguments.
#[derive(Debug, Args)]
pub(super) struct EmitArgs {
    /// The plugin library.
    plugin: PathBuf,
    /// The event (see docs/events.md), or `/NAME` to run the plugin's command NAME.
    event: String,
    /// The payload: the event's fields as a JSON object without `type`, or `@FILE` to read it
    /// from a file.
    #[arg(long, default_value = "{}", value_name = "JSON")]
    payload: String,
    /// Answers for the plugin's dialogs, in order: a JSON array of pi's
    /// `extension_ui_response` fields, such as `[{"confirmed": true}, {"value": "No"}]`; a
    /// bare `true`/`false` stands for `{"confirmed": …}` and a bare string for `{"value": …}`.
    /// Dialogs past the last answer are cancelled.
    #[arg(long = "ui-answers", value_name = "JSON")]
    ui_answers: Option<String>,
    /// Run as without a UI (pi's print mode): dialogs answer their defaults at once.
    #[arg(long = "no-ui", conflicts_with = "ui_answers")]
    no_ui: bool,
    /// The arguments of a `/NAME` command.
    #[arg(long, default_value = "", value_name = "TEXT")]
    args: String,
}

/// Runs `pi-hooks emit`.
pub(super) fn emit(args: EmitArgs) -> Result<ExitCode, CommandError> {
    let payload = read_json(&args.payload, "--payload")?;
    if !payload.is_object() {
        return Err(CommandError::failed(format!(
            "--payload must be a JSON object (the event's fields without `type`), got {}",
            escape(&payload.to_string())
        )));
    }
    let answers = match &args.ui_answers {
        Some(text) => match read_json(text, "--ui-answers")? {
            Value::Array(answers) => answers.into_iter().map(answer_fields).collect(),
            other => {
                return Err(CommandError::failed(format!(
                    "--ui-answers must be a JSON array of answers such as [{{\"confirmed\": true}}], got {}",
                    escape(&other.to_string())
                )));
            }
        },
        None => Vec::new(),
    };
    let command = args.event.strip_prefix('/');
    if command.is_none() && !crate::event_names::is_known(&args.event) {
        let name = escape(&args.event);
        let hint = crate::event_names::nearest(&args.event)
            .map(|known| format!("; did you mean \"{known}\"?"))
            .unwrap_or_default();
        write_stderr(&format!(
            "pi-hooks: warning: \"{name}\" is not an event the host emits{hint} (docs/events.md lists them)"
        ));
    }
    let plugin = PluginTest::load_with(&args.plugin, !args.no_ui).map_err(CommandError::failed)?;
    plugin.answer_dialogs(answers);
    let emitted = match command {
        Some(name) => plugin.command(name, &args.args),
        None => plugin.emit(&args.event, payload),
    }
    .map_err(|e| CommandError::failed(escape(&e)))?;
    let text = serde_json::to_string_pretty(&emitted.to_json()).unwrap_or_default();
    write_stdout(&format!("{text}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// Parses `text` as JSON, or the file it names with a leading `@`.
fn read_json(text: &str, option: &str) -> Result<Value, CommandError> {
    let (text, source) = match text.strip_prefix('@') {
        Some(path) => (
            std::fs::read_to_string(path).map_err(|e| {
                CommandError::failed(format!("{option}: cannot read {}: {e}", escape(path)))
            })?,
            format!("{option} file {}", escape(path)),
        ),
        None => (text.to_owned(), option.to_owned()),
    };
    serde_json::from_str(&text)
        .map_err(|e| CommandError::failed(format!("{source} is not valid JSON: {e}")))
}

/// A `--ui-answers` item as `extension_ui_response` fields: `true` is `{"confirmed": true}`,
/// `"No"` is `{"value": "No"}`, an object is taken as it is.
fn answer_fields(answer: Value) -> Value {
    match answer {
        Value::Bool(confirmed) => serde_json::json!({"confirmed": confirmed}),
        Value::String(value) => serde_json::json!({"value": value}),
        other => other,
    }
}
