//! Reporting a refusal: the confined child sends a `denied` notification
//! (`{"action", "reason", "plugin", "grant", "source"}`) to the host ([`denied`]); the host
//! shows it ([`show`]) on the terminal and in the JSON stream (as an extension error of the
//! event `sandbox`) and in the hook trace (an action `denied`).
//!
//! The child reports its own checks' refusals, the seccomp filter's (`super::seccomp`) and
//! Landlock's, as the supervisor names them (`super::supervisor`). Refusals found before the
//! protocol is up (in the plugin's static constructors, while the child loads it) wait and
//! are sent right after the child's `hello` ([`send_to`]).
//!
//! The host never takes the child's word for whose refusal it is: a child runs the plugin, which
//! may write anything to the protocol. [`vouch`] checks a `denied` notification (its action
//! and reason short strings, nothing else in it, the plugin, grant and source it names, if
//! any, the ones the host gave the child) and builds the one the host shows from the host's
//! own grant; a notification that fails is a broken protocol (the host kills the child,
//! `crate::isolate::child`), and the host passes on at most [`REPORT_BYTES_PER_SECOND`] of
//! refusals a second per child, as it does the child's stderr.
//!
//! The supervisor names a refused allocation or process while the plugin's thread may hold
//! the memory allocator's locks, so it cannot allocate: [`Prepared`] holds the words known
//! ahead, and [`Prepared::denied_without_allocating`] writes the line from the stack.

use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};

use super::Grant;
use crate::plugin::state::PluginState;
use crate::runner::ExtensionError;
use crate::serve::LineWriter;
use crate::services::HostServices;

/// The most refusals kept while the protocol is not up yet.
const MAX_PENDING: usize = 100;

#[derive(Default)]
struct Sink {
    out: Option<LineWriter>,
    pending: Vec<Value>,
    /// Refusals not kept while the protocol was not up ([`MAX_PENDING`] were waiting).
    dropped: usize,
}

static SINK: Mutex<Sink> = Mutex::new(Sink {
    out: None,
    pending: Vec::new(),
    dropped: 0,
});

/// Sends a `denied` notification for `action` (`exec`, `socket`, `ptrace`, ...) with the
/// `reason` a reader understands.
pub fn denied(action: &str, reason: &str, grant: &Grant) {
    let line = json!({
        "type": "notification",
        "method": "denied",
        "params": {
            "action": action,
            "reason": reason,
            "plugin": grant.plugin,
            "grant": grant.summary(),
            "source": grant.source,
        },
    });
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    match &sink.out {
        Some(out) => out.line(&line),
        None if sink.pending.len() < MAX_PENDING => sink.pending.push(line),
        None => sink.dropped += 1,
    }
}

/// The longest `denied` line sent without allocating (a longer one is left to [`denied`]).
const LINE_MAX: usize = 8192;

/// The longest action a `denied` notification may name (the child's own are a word).
pub const MAX_ACTION_BYTES: usize = 64;

/// The longest reason a `denied` notification may give (the child's own name a call and a
/// path or two).
pub const MAX_REASON_BYTES: usize = 16 * 1024;

/// The most of a child's refusals (their actions' and reasons' bytes) the host shows per
/// second, as much as of its stderr (`crate::isolate::child`).
pub const REPORT_BYTES_PER_SECOND: usize = 64 * 1024;

/// Checks a child's `denied` notification `params` against the grant the host gave it
/// (`None`: the child is not confined, and has nothing to report) and returns the params the
/// host shows: the child's action and reason, the host's plugin, grant and source (and
/// `atLoad` when the child said the refusal was made while it loaded the plugin). `Err`
/// says why the notification breaks the protocol (the child's words in it escaped and cut).
pub fn vouch(params: &Value, grant: Option<&Grant>) -> Result<Value, String> {
    let Some(grant) = grant else {
        return Err("a sandbox refusal, but it is not confined".into());
    };
    let Some(fields) = params.as_object() else {
        return Err("a sandbox refusal whose params are not an object".into());
    };
    let text = |key: &str, limit: usize| -> Result<&str, String> {
        match fields.get(key) {
            Some(Value::String(text)) if text.len() <= limit => Ok(text),
            Some(Value::String(text)) => Err(format!(
                "a sandbox refusal whose {key} is {} bytes long, over the limit of {limit}",
                text.len()
            )),
            _ => Err(format!("a sandbox refusal without a string {key}")),
        }
    };
    let action = text("action", MAX_ACTION_BYTES)?;
    let reason = text("reason", MAX_REASON_BYTES)?;
    let summary = grant.summary();
    for (key, ours) in [
        ("plugin", grant.plugin.as_str()),
        ("grant", summary.as_str()),
        ("source", grant.source.as_str()),
    ] {
        match fields.get(key) {
            None => {}
            Some(Value::String(theirs)) if theirs == ours => {}
            Some(theirs) => {
                let theirs = theirs.to_string();
                let cut: String = theirs.chars().take(80).collect();
                return Err(format!(
                    "a sandbox refusal naming {key} {} where the host gave it {}",
                    crate::guards::display::escape(&cut),
                    crate::guards::display::escape(&format!("{ours:?}"))
                ));
            }
        }
    }
    let at_load = match fields.get("atLoad") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err("a sandbox refusal whose atLoad is not a boolean".into()),
    };
    if let Some(other) = fields.keys().find(|key| {
        !matches!(
            key.as_str(),
            "action" | "reason" | "plugin" | "grant" | "source" | "atLoad"
        )
    }) {
        let cut: String = other.chars().take(40).collect();
        return Err(format!(
            "a sandbox refusal with an unknown field {:?}",
            crate::guards::display::escape(&cut)
        ));
    }
    let mut shown = json!({
        "action": action,
        "reason": reason,
        "plugin": grant.plugin,
        "grant": summary,
        "source": grant.source,
    });
    if at_load {
        shown["atLoad"] = true.into();
    }
    Ok(shown)
}

/// A `denied` notification as written on the wire.
#[derive(Serialize)]
struct Notification<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    method: &'static str,
    params: Params<'a>,
}

/// Its `params` (the same keys [`denied`] writes).
#[derive(Serialize)]
struct Params<'a> {
    action: &'a str,
    reason: &'a str,
    plugin: &'a str,
    grant: &'a str,
    source: &'a str,
}

impl<'a> Notification<'a> {
    fn new(action: &'a str, reason: &'a str, prepared: &'a Prepared) -> Self {
        Notification {
            kind: "notification",
            method: "denied",
            params: Params {
                action,
                reason,
                plugin: &prepared.plugin,
                grant: &prepared.grant,
                source: &prepared.source,
            },
        }
    }
}

/// The words of a `denied` notification known ahead (the grant's), so that one can be sent
/// later without allocating.
pub struct Prepared {
    plugin: String,
    grant: String,
    source: String,
    /// The line's length with an empty action and reason.
    fixed: usize,
}

impl Prepared {
    /// Prepares the notifications of `grant`'s refusals.
    pub fn new(grant: &Grant) -> Self {
        let mut prepared = Prepared {
            plugin: grant.plugin.clone(),
            grant: grant.summary(),
            source: grant.source.clone(),
            fixed: 0,
        };
        prepared.fixed = serde_json::to_vec(&Notification::new("", "", &prepared))
            .map_or(usize::MAX, |line| line.len());
        prepared
    }

    /// Sends a `denied` notification for `action` with `reason` as [`denied`] does, but
    /// without allocating and without waiting for the refusals' lock: the line is written
    /// on the stack (serde_json writes into a slice without allocating), and sent only if
    /// nobody holds that lock (its holder may be allocating, and the allocator's lock may
    /// be held by the thread whose call is refused). The protocol's writer may still
    /// allocate (with the ring transport its buffer grows past the longest line it sent
    /// before) and waits for its own lock, held while a line is written. `false`: not sent
    /// (the lock was held, the protocol is not up yet, or the line is too long); send it
    /// another way.
    pub fn denied_without_allocating(&self, action: &str, reason: &str) -> bool {
        let mut buffer = [0u8; LINE_MAX];
        let Some(line) = self.line_on_stack(action, reason, &mut buffer) else {
            return false;
        };
        let Ok(sink) = SINK.try_lock() else {
            return false;
        };
        match &sink.out {
            // LineWriter::text writes the text and a newline (to a file, or into the ring
            // transport's buffer) under its own lock.
            Some(out) => {
                out.text(line);
                true
            }
            None => false,
        }
    }
}

impl Prepared {
    /// The notification's line, written into `buffer` (`None`: it does not fit).
    fn line_on_stack<'b>(
        &self,
        action: &str,
        reason: &str,
        buffer: &'b mut [u8; LINE_MAX],
    ) -> Option<&'b str> {
        // Escaping writes at most six bytes for one (`\u001f`).
        let longest = self.fixed.saturating_add(6 * (action.len() + reason.len()));
        if longest > LINE_MAX {
            return None;
        }
        let mut rest = &mut buffer[..];
        // Cannot fail: the buffer holds the longest line (a failure would allocate its error).
        serde_json::to_writer(&mut rest, &Notification::new(action, reason, self)).ok()?;
        let written = LINE_MAX - rest.len();
        std::str::from_utf8(&buffer[..written]).ok()
    }
}

/// From now on refusals go to `out` (the serve protocol, after its `hello`); those that
/// waited go first.
pub fn send_to(out: LineWriter) {
    let mut sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    for mut line in std::mem::take(&mut sink.pending) {
        // Refused while the child loaded the plugin, not during a call.
        line["params"]["atLoad"] = true.into();
        out.line(&line);
    }
    if sink.dropped > 0 {
        // The child's stderr reaches the host's.
        eprintln!(
            "pi-hooks: sandbox: {} more refusals made while the plugin loaded were not reported (at most {MAX_PENDING} are kept until the host connects)",
            sink.dropped
        );
        sink.dropped = 0;
    }
    sink.out = Some(out);
}

/// The reasons of the refusals waiting for the protocol (for tests of what reports them).
#[cfg(test)]
pub fn pending_reasons() -> Vec<String> {
    let sink = SINK.lock().unwrap_or_else(|e| e.into_inner());
    sink.pending
        .iter()
        .filter_map(|line| line["params"]["reason"].as_str().map(str::to_owned))
        .collect()
}

/// The words of a `denied` notification's report: one line, `sandbox denied ACTION: REASON`,
/// then `(grant from SOURCE)` unless the reason names the source already. The reason says
/// what was refused and the entry that would allow it; the whole grant is not repeated (it
/// stays in the notification's `grant`, in the trace, and in `pi-hooks list`).
fn message(params: &Value) -> String {
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
    let (reason, source) = (text("reason"), text("source"));
    if source.is_empty() || reason.contains(source) {
        format!("sandbox denied {}: {reason}", text("action"))
    } else {
        format!(
            "sandbox denied {}: {reason} (grant from {source})",
            text("action")
        )
    }
}

/// The host's side, for a plugin not bound to a session (no session services to report
/// through): the report goes to stderr.
pub fn show_unbound(state: &PluginState, params: &Value) {
    eprintln!(
        "Extension error ({}): {}",
        crate::guards::display::escape(&state.path),
        crate::guards::display::escape(&message(params))
    );
}

/// The host's side: shows a child's `denied` notification for the plugin behind `state`.
pub fn show(state: &PluginState, params: &Value, services: &dyn HostServices) {
    let message = message(params);
    services.report_error(&ExtensionError {
        extension_path: state.path.clone(),
        event: "sandbox".to_owned(),
        error: message.clone(),
    });
    if crate::observe::trace::on() {
        crate::observe::trace::action(state, "denied", params, Err(&message), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> Grant {
        Grant {
            plugin: "gate".into(),
            source: "package \"gate\" 1.0".into(),
            read: vec!["/tmp/a".into()],
            write: Vec::new(),
            network: crate::packages::manifest::Network::None,
            exec: Vec::new(),
            exec_paths: Vec::new(),
            memory_mib: None,
            data: std::path::PathBuf::new(),
        }
    }

    #[test]
    fn the_host_vouches_only_for_its_own_grant() {
        let grant = grant();
        let honest = json!({"action": "read", "reason": "open /etc/shadow", "plugin": "gate",
            "grant": grant.summary(), "source": grant.source, "atLoad": true});
        let shown = vouch(&honest, Some(&grant)).unwrap();
        assert_eq!(shown, honest);
        // Only action and reason: the host fills in the rest.
        let bare = vouch(&json!({"action": "exec", "reason": "r"}), Some(&grant)).unwrap();
        assert_eq!(bare["plugin"], "gate");
        assert_eq!(bare["grant"], grant.summary());
        for forged in [
            json!({"action": "a", "reason": "r", "plugin": "other"}),
            json!({"action": "a", "reason": "r", "grant": "everything"}),
            json!({"action": "a", "reason": "r", "source": "settings of root"}),
            json!({"action": "a", "reason": "r", "plugin": {"nested": [1, 2]}}),
            json!({"action": "a", "reason": "r", "extra": 1}),
            json!({"action": "a", "reason": 7}),
            json!({"action": "a".repeat(MAX_ACTION_BYTES + 1), "reason": "r"}),
            json!({"action": "a", "reason": "r".repeat(MAX_REASON_BYTES + 1)}),
            json!({"action": "a", "reason": "r", "atLoad": "yes"}),
            json!("denied"),
        ] {
            assert!(vouch(&forged, Some(&grant)).is_err(), "{forged}");
        }
        let error = vouch(
            &json!({"action": "a", "reason": "r", "plugin": "\u{1b}]0;x\u{7}"}),
            Some(&grant),
        )
        .unwrap_err();
        assert!(!error.contains('\u{1b}'), "{error}");
        assert!(vouch(&json!({"action": "a", "reason": "r"}), None).is_err());
    }

    #[test]
    fn a_line_written_on_the_stack_is_the_same_notification() {
        let grant = Grant {
            plugin: "gate".into(),
            source: "package \"gate\" 1.0".into(),
            read: vec!["/tmp/a\nb".into()],
            write: Vec::new(),
            network: crate::packages::manifest::Network::None,
            exec: vec!["git".into()],
            exec_paths: Vec::new(),
            memory_mib: Some(64),
            data: std::path::PathBuf::new(),
        };
        let prepared = Prepared::new(&grant);
        let mut buffer = [0u8; LINE_MAX];
        let reason = "allocation of 1 MiB refused: \u{1f}";
        let line = prepared
            .line_on_stack("memory", reason, &mut buffer)
            .unwrap();
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["type"], "notification");
        assert_eq!(value["method"], "denied");
        assert_eq!(
            value["params"],
            json!({
                "action": "memory",
                "reason": reason,
                "plugin": "gate",
                "grant": grant.summary(),
                "source": grant.source,
            })
        );
        // Too long for the stack: left to `denied`.
        let long = "x".repeat(LINE_MAX);
        assert!(
            prepared
                .line_on_stack("memory", &long, &mut buffer)
                .is_none()
        );
    }
}
