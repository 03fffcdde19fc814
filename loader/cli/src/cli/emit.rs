//! `pi-hooks emit PLUGIN EVENT`: fires one event (or runs one command) at one plugin without
//! a session and prints its decision and every host call it made as one JSON object, for
//! testing a plugin from a shell script or CI; `pi-hooks emit PLUGIN --steps FILE` fires a
//! sequence of them at one loaded instance (a command that counts what earlier events did)
//! and prints one such object per step. The work is `pi_hooks_host::testing::PluginTest`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::{CommandError, write_stderr, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::testing::PluginTest;

/// `pi-hooks emit`'s arguments.
#[derive(Debug, Args)]
pub(super) struct EmitArgs {
    /// The plugin library.
    plugin: PathBuf,
    /// The event (see docs/events.md), or `/NAME` to run the plugin's command NAME.
    #[arg(required_unless_present = "steps")]
    event: Option<String>,
    /// A sequence of steps for one loaded instance of the plugin, instead of EVENT: a JSON
    /// array (or `@FILE`) of `{"event": NAME, "payload": {...}}` and `{"command": NAME,
    /// "args": TEXT}` objects, each optionally with `"uiAnswers": [...]` for its dialogs.
    /// Prints a JSON array with one result per step; entries a step appends
    /// (`append_entry`) are in the session later steps read.
    #[arg(long, value_name = "JSON", conflicts_with_all = ["event", "payload", "args", "ui_answers"])]
    steps: Option<String>,
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
    #[command(flatten)]
    confine: super::confine::ConfineArg,
}

/// Runs `pi-hooks emit`.
pub(super) fn emit(args: EmitArgs) -> Result<ExitCode, CommandError> {
    let steps = match (&args.steps, &args.event) {
        (Some(steps), _) => read_steps(steps)?,
        (None, Some(event)) => vec![Step {
            target: target(event),
            payload: read_json(&args.payload, "--payload")?,
            answers: match &args.ui_answers {
                Some(text) => read_answers(read_json(text, "--ui-answers")?, "--ui-answers")?,
                None => Vec::new(),
            },
            args: args.args.clone(),
            label: "--payload".to_owned(),
        }],
        (None, None) => unreachable!("clap requires EVENT unless --steps is given"),
    };
    for step in &steps {
        check_step(step)?;
    }
    if let Some(grant) = &args.confine.confine {
        let cwd = super::current_dir();
        let agent = pi_hooks_host::plugin_files::paths::agent_dir().map_err(CommandError::setup)?;
        let plugin =
            pi_hooks_host::plugin_files::paths::resolve(&args.plugin.to_string_lossy(), &cwd);
        super::confine::confine(grant, &[plugin], &cwd, &agent)?;
    }
    let plugin = PluginTest::load_with(&args.plugin, !args.no_ui).map_err(CommandError::failed)?;
    let mut results = Vec::with_capacity(steps.len());
    for step in steps {
        plugin.answer_dialogs(step.answers);
        let emitted = match &step.target {
            Target::Command(name) => plugin.command(name, &step.args),
            Target::Event(name) => plugin.emit(name, step.payload),
        }
        .map_err(|e| match step.label.strip_suffix(": \"payload\"") {
            Some(which) => CommandError::failed(format!("{which}: {}", escape(&e))),
            None => CommandError::failed(escape(&e)),
        })?;
        let mut json = emitted.to_json();
        if args.steps.is_some() {
            let (key, name) = match &step.target {
                Target::Command(name) => ("command", name),
                Target::Event(name) => ("event", name),
            };
            json[key] = name.clone().into();
        }
        results.push(json);
    }
    let shown = match args.steps {
        Some(_) => Value::Array(results),
        None => results.pop().unwrap_or_default(),
    };
    let text = serde_json::to_string_pretty(&shown).unwrap_or_default();
    write_stdout(&format!("{text}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// What one step fires.
enum Target {
    /// An event by name.
    Event(String),
    /// The plugin's command of this name (without the `/`).
    Command(String),
}

/// `/NAME` is a command, anything else an event.
fn target(text: &str) -> Target {
    match text.strip_prefix('/') {
        Some(name) => Target::Command(name.to_owned()),
        None => Target::Event(text.to_owned()),
    }
}

/// One event or command of `emit`, with its dialog answers.
struct Step {
    target: Target,
    payload: Value,
    answers: Vec<Value>,
    args: String,
    /// Where the payload came from, for messages (`--payload`, `step 2`).
    label: String,
}

/// Refuses a payload that is not an object; warns about an event the host never emits.
fn check_step(step: &Step) -> Result<(), CommandError> {
    if !step.payload.is_object() {
        return Err(CommandError::failed(format!(
            "{} must be a JSON object (the event's fields without `type`), got {}",
            step.label,
            escape(&step.payload.to_string())
        )));
    }
    if let Target::Event(event) = &step.target
        && !pi_hooks_host::plugin::event_names::is_known(event)
    {
        let name = escape(event);
        let hint = pi_hooks_host::plugin::event_names::nearest(event)
            .map(|known| format!("; did you mean \"{known}\"?"))
            .unwrap_or_default();
        write_stderr(&format!(
            "pi-hooks: warning: \"{name}\" is not an event the host emits{hint} (docs/events.md lists them)"
        ));
    }
    Ok(())
}

/// The dialog answers of `--ui-answers` or a step's `uiAnswers`.
fn read_answers(value: Value, source: &str) -> Result<Vec<Value>, CommandError> {
    match value {
        Value::Array(answers) => Ok(answers.into_iter().map(answer_fields).collect()),
        other => Err(CommandError::failed(format!(
            "{source} must be a JSON array of answers such as [{{\"confirmed\": true}}], got {}",
            escape(&other.to_string())
        ))),
    }
}

/// The steps of `--steps` (inline JSON or `@FILE`).
fn read_steps(text: &str) -> Result<Vec<Step>, CommandError> {
    let Value::Array(items) = read_json(text, "--steps")? else {
        return Err(CommandError::failed(
            "--steps must be a JSON array of steps such as [{\"event\": \"session_start\", \"payload\": {\"reason\": \"startup\"}}, {\"command\": \"stats\"}]",
        ));
    };
    let mut steps = Vec::with_capacity(items.len());
    for (n, item) in items.into_iter().enumerate() {
        let step = format!("--steps: step {}", n + 1);
        let Value::Object(mut fields) = item else {
            return Err(CommandError::failed(format!(
                "{step} is not a JSON object with \"event\" or \"command\""
            )));
        };
        let label = &step;
        let text_field =
            |fields: &mut serde_json::Map<String, Value>, key: &str| match fields.remove(key) {
                None => Ok(None),
                Some(Value::String(text)) => Ok(Some(text)),
                Some(other) => Err(CommandError::failed(format!(
                    "{label}: \"{key}\" must be a string, got {}",
                    escape(&other.to_string())
                ))),
            };
        let event = text_field(&mut fields, "event")?;
        let command = text_field(&mut fields, "command")?;
        let target = match (event, command) {
            (Some(event), None) => target(&event),
            (None, Some(command)) => {
                Target::Command(command.strip_prefix('/').unwrap_or(&command).to_owned())
            }
            _ => {
                return Err(CommandError::failed(format!(
                    "{label} needs exactly one of \"event\" and \"command\""
                )));
            }
        };
        let args = text_field(&mut fields, "args")?.unwrap_or_default();
        let payload = fields
            .remove("payload")
            .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        let answers = match fields.remove("uiAnswers") {
            Some(answers) => read_answers(answers, &format!("{label}: \"uiAnswers\""))?,
            None => Vec::new(),
        };
        if let Some(key) = fields.keys().next() {
            return Err(CommandError::failed(format!(
                "{label}: unknown field \"{}\" (a step has event or command, payload, args, uiAnswers)",
                escape(key)
            )));
        }
        steps.push(Step {
            target,
            payload,
            answers,
            args,
            label: format!("{step}: \"payload\""),
        });
    }
    Ok(steps)
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
