//! Reporting a refusal: the confined child sends a `denied` notification
//! (`{"action", "reason", "plugin", "grant", "source"}`) to the host ([`denied`]); the host
//! shows it ([`show`]) on the terminal and in the JSON stream (as an extension error of the
//! event `sandbox`) and in the hook trace (an action `denied`).
//!
//! The child reports its own checks' refusals, the seccomp filter's (`super::seccomp`) and
//! Landlock's, as the supervisor names them (`super::supervisor`). Refusals found before the
//! protocol is up (in the plugin's static constructors, while the child loads it) wait and
//! are sent right after the child's `hello` ([`send_to`]).

use std::sync::Mutex;

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
}

static SINK: Mutex<Sink> = Mutex::new(Sink {
    out: None,
    pending: Vec::new(),
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
        None => {}
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
    sink.out = Some(out);
}

/// The host's side: shows a child's `denied` notification for the plugin behind `state`.
pub fn show(state: &PluginState, params: &Value, services: &dyn HostServices) {
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
    let message = format!(
        "sandbox denied {}: {} [grant from {}: {}]",
        text("action"),
        text("reason"),
        text("source"),
        text("grant")
    );
    services.report_error(&ExtensionError {
        extension_path: state.path.clone(),
        event: "sandbox".to_owned(),
        error: message.clone(),
    });
    if crate::observe::trace::on() {
        crate::observe::trace::action(state, "denied", params, Err(&message), None);
    }
}
