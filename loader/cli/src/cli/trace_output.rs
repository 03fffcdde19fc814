//! Where the hook trace and the host's diagnostics go: the `pi-hooks` binary's `tracing`
//! subscriber, installed once, first thing, for every command.
//!
//! - The host's diagnostics ([`pi_hooks_host::observe::diagnostics`]: a plugin's `log` lines, the host's
//!   warnings about calls it refused) keep their lines, `[NAME] LEVEL: TEXT` and
//!   `[pi-hooks] TEXT`, on stderr, above the level `PI_HOOKS_LOG` names (default `warn`).
//! - The hook trace ([`pi_hooks_host::observe::trace`]) is off unless `--trace[=text|json]` or
//!   `PI_HOOKS_TRACE=1|text|json` asks for it (the flag wins). Its records go to stderr, or
//!   to the file `PI_HOOKS_TRACE_FILE` names (appended to), as lines a person reads
//!   (`trace: tool_call -> permission-gate (libpermission_gate.so) 14µs: blocked "…"`) or as
//!   one JSON object per line (`{"trace":"handler","time":…,"event":"tool_call",…}`). Never
//!   to stdout: in RPC, JSON and serve mode stdout is the protocol.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::Mutex;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, SubscriberExt};

use pi_hooks_host::guards::display::escape;

/// How the trace is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Lines a person reads, each starting with `trace: `.
    Text,
    /// One JSON object per line, each starting with `{"trace":`.
    Json,
}

/// The trace `PI_HOOKS_TRACE` asks for: `1`, `true`, `on`, `text` (text), `json`; `0`,
/// `false`, `off` or nothing: none. `Err` for another value.
fn from_env() -> Result<Option<TraceFormat>, String> {
    let Some(value) = std::env::var_os("PI_HOOKS_TRACE") else {
        return Ok(None);
    };
    let value = value.to_string_lossy().trim().to_ascii_lowercase();
    match value.as_str() {
        "" | "0" | "false" | "off" | "no" => Ok(None),
        "1" | "true" | "on" | "yes" | "text" => Ok(Some(TraceFormat::Text)),
        "json" => Ok(Some(TraceFormat::Json)),
        other => Err(format!(
            "pi-hooks: PI_HOOKS_TRACE={} is not one of 1, text, json or 0; the trace is off",
            escape(other)
        )),
    }
}

/// The trace the command line (`flag`) or else the environment asks for.
pub(super) fn requested(flag: Option<TraceFormat>) -> Option<TraceFormat> {
    flag.or_else(|| from_env().ok().flatten())
}

/// Installs the process's subscriber: the diagnostics always, the trace when `flag` or
/// `PI_HOOKS_TRACE` asks for it (and then turns the host's emission on).
pub(super) fn install(flag: Option<TraceFormat>) {
    let mut warnings = Vec::new();
    let format = match flag {
        Some(format) => Some(format),
        None => from_env().unwrap_or_else(|warning| {
            warnings.push(warning);
            None
        }),
    };
    let diagnostics = DiagnosticsLayer.with_filter(
        Targets::new()
            .with_target("pi_hooks", pi_hooks_host::observe::diagnostics::log_level())
            .with_target(pi_hooks_host::observe::trace::TARGET, LevelFilter::OFF),
    );
    let trace = format.map(|format| {
        let (out, warning) = TraceOut::from_env();
        warnings.extend(warning);
        TraceLayer {
            format,
            out: Mutex::new(out),
        }
        .with_filter(
            Targets::new().with_target(pi_hooks_host::observe::trace::TARGET, LevelFilter::TRACE),
        )
    });
    let subscriber = tracing_subscriber::registry().with(diagnostics).with(trace);
    if tracing::subscriber::set_global_default(subscriber).is_ok() && format.is_some() {
        pi_hooks_host::observe::trace::enable(true);
    }
    for warning in warnings {
        super::write_stderr(&warning);
    }
}

/// The fields of one event, in the order they were recorded.
#[derive(Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), format!("{value:?}").into());
    }
}

impl Fields {
    fn of(event: &Event<'_>) -> Self {
        let mut fields = Fields::default();
        event.record(&mut fields);
        fields
    }

    fn text(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }
}

/// Writes the host's diagnostics as they always were.
struct DiagnosticsLayer;

impl<S: Subscriber> Layer<S> for DiagnosticsLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let fields = Fields::of(event);
        let message = fields.text("message").unwrap_or_default();
        let metadata = event.metadata();
        let line = if metadata.target() == pi_hooks_host::observe::diagnostics::PLUGIN_LOG {
            format!(
                "[{}] {}: {message}",
                fields.text("plugin").unwrap_or_default(),
                pi_hooks_host::observe::diagnostics::level_label(*metadata.level())
            )
        } else {
            format!("[pi-hooks] {message}")
        };
        // A closed stderr is ignored: nothing else can be told about it.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// Where the trace goes.
enum TraceOut {
    Stderr,
    File(std::fs::File),
}

impl TraceOut {
    /// The file `PI_HOOKS_TRACE_FILE` names (appended to), else stderr; with a warning when
    /// the file cannot be opened.
    fn from_env() -> (TraceOut, Option<String>) {
        let Some(path) = std::env::var_os("PI_HOOKS_TRACE_FILE").filter(|p| !p.is_empty()) else {
            return (TraceOut::Stderr, None);
        };
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => (TraceOut::File(file), None),
            Err(error) => (
                TraceOut::Stderr,
                Some(format!(
                    "pi-hooks: PI_HOOKS_TRACE_FILE: cannot open {}: {error}; the trace goes to stderr",
                    escape(&path.to_string_lossy())
                )),
            ),
        }
    }

    fn line(&mut self, line: &str) {
        // One write per line, so lines of different threads never interleave; a write
        // that fails is ignored (the trace must never stop the host).
        let mut buffer = String::with_capacity(line.len() + 1);
        buffer.push_str(line);
        buffer.push('\n');
        let _ = match self {
            TraceOut::Stderr => std::io::stderr().lock().write_all(buffer.as_bytes()),
            TraceOut::File(file) => file.write_all(buffer.as_bytes()),
        };
    }
}

/// Writes the trace's records.
struct TraceLayer {
    format: TraceFormat,
    out: Mutex<TraceOut>,
}

impl<S: Subscriber> Layer<S> for TraceLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let fields = Fields::of(event);
        let line = match self.format {
            TraceFormat::Text => text_line(&fields),
            TraceFormat::Json => json_line(fields),
        };
        self.out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .line(&line);
    }
}

/// The record as one JSON object: `trace` first, then `time`, then its fields, with the
/// JSON ones (`args`, `answer`, `result`) as JSON.
fn json_line(fields: Fields) -> String {
    let mut record = Map::new();
    let mut fields = fields.0;
    record.insert(
        "trace".to_owned(),
        fields.shift_remove("trace").unwrap_or(Value::Null),
    );
    record.insert("time".to_owned(), jiff::Timestamp::now().to_string().into());
    for (name, value) in fields {
        let value = match value {
            Value::String(text)
                if pi_hooks_host::observe::trace::JSON_FIELDS.contains(&name.as_str()) =>
            {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
            other => other,
        };
        record.insert(name, value);
    }
    Value::Object(record).to_string()
}

/// `micros` as a person reads it: `14µs`, `1.25ms`, `2.50s`.
fn duration(micros: u64) -> String {
    match micros {
        0..1_000 => format!("{micros}µs"),
        1_000..1_000_000 => format!("{:.2}ms", micros as f64 / 1e3),
        _ => format!("{:.2}s", micros as f64 / 1e6),
    }
}

/// At most `limit` characters of `text`, with `…` when cut.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}…", &text[..at]),
    }
}

/// `text` quoted, escaped and cut for a trace line.
fn quoted(text: &str) -> String {
    format!("\"{}\"", escape(&cut(text, 200)))
}

/// `key=value, ...` of a JSON object's fields (strings quoted, the rest as compact JSON).
fn summary(value: &Value) -> String {
    let one = |value: &Value| match value {
        Value::String(text) => quoted(text),
        other => escape(&cut(&other.to_string(), 200)).into_owned(),
    };
    match value {
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{}={}", escape(k), one(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => one(other),
    }
}

/// The record as a line a person reads.
fn text_line(fields: &Fields) -> String {
    let text = |name: &str| fields.text(name).unwrap_or_default();
    let number = |name: &str| fields.0.get(name).and_then(Value::as_u64);
    // `plugin (file)`: the name and the file, escaped (both are the plugin's).
    let who = || {
        let path = text("path");
        let file = std::path::Path::new(path)
            .file_name()
            .map_or_else(|| path.to_owned(), |f| f.to_string_lossy().into_owned());
        match fields.text("plugin") {
            Some(plugin) => format!("{} ({})", escape(plugin), escape(&file)),
            None => escape(&file).into_owned(),
        }
    };
    let took = || number("micros").map(duration);
    let during = || {
        fields
            .text("during")
            .map(|d| format!(" during {}", escape(d)))
            .unwrap_or_default()
    };
    // `ui notify <- plugin (file) during EVENT 12µs: args`: a call a plugin made.
    let call_head = |line: &mut String, kind: &str, name: &str| {
        let _ = write!(line, "{kind} {} <- {}{}", escape(name), who(), during());
        if let Some(took) = took() {
            let _ = write!(line, " {took}");
        }
        let args = fields
            .text("args")
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or(Value::Null);
        let args = summary(&args);
        if !args.is_empty() {
            let _ = write!(line, ": {args}");
        }
    };
    let mut line = String::from("trace: ");
    match text("trace") {
        "handler" => {
            let _ = write!(
                line,
                "{} -> {} {}: {}",
                escape(text("event")),
                who(),
                took().unwrap_or_default(),
                text("decision")
            );
            let said = fields.text("reason").or(fields.text("error"));
            if let Some(said) = said {
                let _ = write!(line, " {}", quoted(said));
            }
            if let Some(detail) = fields.text("detail") {
                match said {
                    Some(_) => {
                        let _ = write!(line, " ({})", escape(&cut(detail, 200)));
                    }
                    None => {
                        let _ = write!(line, ": {}", escape(&cut(detail, 200)));
                    }
                }
            }
        }
        "event" => {
            let _ = write!(
                line,
                "{} done in {}: {} of {} handlers called",
                escape(text("event")),
                took().unwrap_or_default(),
                number("called").unwrap_or_default(),
                number("handlers").unwrap_or_default()
            );
        }
        "load" => {
            let _ = write!(
                line,
                "load {} {}: {}",
                who(),
                took().unwrap_or_default(),
                text("decision")
            );
            if let Some(init) = number("initMicros") {
                let _ = write!(line, " (init {})", duration(init));
            }
            if let Some(error) = fields.text("error") {
                let _ = write!(line, " {}", quoted(error));
            }
            if text("decision") == "untrusted" {
                line.push_str(" (a project plugin waiting for trust; none of its code ran)");
            }
        }
        "ui" => {
            call_head(&mut line, "ui", text("method"));
            if let Some(answer) = fields.text("answer") {
                let answer = serde_json::from_str(answer).unwrap_or(Value::Null);
                let _ = write!(line, " -> {}", summary(&answer));
            }
            if fields.0.get("shown") == Some(&Value::Bool(false)) {
                line.push_str(" [no UI in this mode: not shown]");
            }
        }
        "action" => {
            call_head(&mut line, "action", text("action"));
            line.push_str(" -> ");
            match (fields.text("error"), fields.text("result")) {
                (Some(error), _) => {
                    let _ = write!(line, "refused {}", quoted(error));
                }
                (None, Some(result)) => {
                    let result = serde_json::from_str(result).unwrap_or(Value::Null);
                    let _ = write!(line, "{}", summary(&result));
                }
                (None, None) => line.push_str("ok"),
            }
        }
        kind => {
            // A call that is not an event handler: command, tool, timer, shortcut, bus.
            let name = match kind {
                "command" => format!("/{}", escape(text("name"))),
                _ => escape(text("name")).into_owned(),
            };
            let _ = write!(
                line,
                "{} {name} -> {} {}: {}",
                escape(kind),
                who(),
                took().unwrap_or_default(),
                text("decision")
            );
            if let Some(error) = fields.text("error") {
                let _ = write!(line, " {}", quoted(error));
            }
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value) -> Fields {
        match value {
            Value::Object(map) => Fields(map),
            _ => unreachable!(),
        }
    }

    #[test]
    fn text_lines_read_as_sentences() {
        let blocked = fields(json!({
            "trace": "handler", "event": "tool_call", "plugin": "permission-gate",
            "path": "/x/libpermission_gate.so", "decision": "blocked",
            "reason": "Blocked rm -rf", "micros": 14
        }));
        assert_eq!(
            text_line(&blocked),
            "trace: tool_call -> permission-gate (libpermission_gate.so) 14µs: blocked \"Blocked rm -rf\""
        );
        let notify = fields(json!({
            "trace": "ui", "method": "notify", "plugin": "c", "path": "/x/libc.so",
            "during": "command /count", "args": "{\"message\":\"hi\\u001b\",\"notifyType\":\"info\"}",
            "shown": false
        }));
        assert_eq!(
            text_line(&notify),
            "trace: ui notify <- c (libc.so) during command /count: message=\"hi\\e\", notifyType=\"info\" [no UI in this mode: not shown]"
        );
        let event = fields(
            json!({"trace": "event", "event": "input", "handlers": 3, "called": 1, "micros": 1500}),
        );
        assert_eq!(
            text_line(&event),
            "trace: input done in 1.50ms: 1 of 3 handlers called"
        );
        let refused = fields(json!({
            "trace": "action", "action": "sendMessage", "plugin": "p", "path": "/x/libp.so",
            "during": "init", "args": "null", "decision": "refused",
            "error": "unavailable: the plugin is not active yet (during init)"
        }));
        assert_eq!(
            text_line(&refused),
            "trace: action sendMessage <- p (libp.so) during init -> refused \"unavailable: the plugin is not active yet (during init)\""
        );
    }

    #[test]
    fn json_lines_put_the_kind_first_and_parse_json_fields() {
        let line = json_line(fields(json!({
            "method": "confirm", "trace": "ui", "args": "{\"title\":\"t\"}", "answer": "true"
        })));
        assert!(line.starts_with("{\"trace\":\"ui\",\"time\":"), "{line}");
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["args"], json!({"title": "t"}));
        assert_eq!(value["answer"], json!(true));
    }

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(duration(999), "999µs");
        assert_eq!(duration(1_250), "1.25ms");
        assert_eq!(duration(2_500_000), "2.50s");
    }
}
