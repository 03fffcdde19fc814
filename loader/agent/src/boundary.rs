//! pi 1.6's run boundaries for plugins (issue 33, item 4): `turn_end` and
//! `agent_before_settle` with their `{entries, continue}` results, and `agent_settled`.
//!
//! pi 1.6 (`dist/core/agent-session.js`): after each turn, `turn_end` handlers may append
//! session entries and ask for one more model request; after the run's `agent_end` (and its
//! retries and compaction), `agent_before_settle` may do the same (skipped after an abort);
//! then `agent_settled {aborted}` ends the prompt.
//!
//! Differences on purpose: the boundary payload's `context` preview is built once per event
//! from the current branch (pi rebuilds it after each handler with the drafts applied), and
//! its `llmMessages` are the context messages as this host sends them (pi-hooks keeps the
//! system prompt out of the transcript). Of pi's drafts, `custom` and `custom_message` are
//! written; `context_edit` and `compaction` drafts are reported as errors and not written
//! (this host's session store writes neither from a draft yet).

use serde_json::{Value, json};

use super::{Core, Shared};
use pi_hooks_host::runner::ExtensionError;

/// The outcome of the last activity, as pi's boundary events give it: `completed`,
/// `aborted` or `error`, from the assistant message's `stopReason`.
pub(super) fn outcome_of(assistant: &Value) -> &'static str {
    match assistant["stopReason"].as_str() {
        Some("aborted") => "aborted",
        Some("error") => "error",
        _ => "completed",
    }
}

impl Core {
    /// The id of the session entry holding `message` (searched from the leaf back).
    pub(super) fn entry_id_of(&self, message: &Value) -> Option<String> {
        let session = Shared::lock(&self.shared.session);
        session
            .branch()
            .iter()
            .rev()
            .find(|e| e["type"] == "message" && e["message"] == *message)
            .and_then(|e| e["id"].as_str().map(str::to_owned))
    }

    /// Whether a model request could follow now: the context has a message that is not the
    /// assistant's last answer, or messages wait in the queues (pi's `canContinue`).
    fn can_continue(&self) -> bool {
        let last_role = Shared::lock(&self.shared.messages)
            .last()
            .map(|m| m["role"].as_str().unwrap_or_default().to_owned());
        let queues = Shared::lock(&self.shared.queues);
        let queued = !queues.steer.is_empty() || !queues.follow_up.is_empty();
        match last_role.as_deref() {
            None => false,
            // pi: after an answer, only queued messages make a request possible.
            Some("assistant") => queued,
            Some(_) => true,
        }
    }

    /// pi's `BoundaryContextPreview` for a boundary payload.
    fn boundary_context(&self) -> Value {
        let messages = Shared::lock(&self.shared.messages).clone();
        let entries = Shared::lock(&self.shared.session).branch();
        let pending: Vec<Value> = {
            let queues = Shared::lock(&self.shared.queues);
            queues
                .steer
                .iter()
                .chain(queues.follow_up.iter())
                .cloned()
                .collect()
        };
        json!({
            "contextEntries": entries,
            "contextMessages": messages,
            "llmMessages": messages,
            "pendingMessages": pending,
            "canContinue": self.can_continue(),
        })
    }

    /// Dispatches the boundary `event` (`turn_end` with its fields, or `agent_before_settle`)
    /// to the plugins with `entries: []`, `continue: false`, `context` and `outcome`, writes
    /// the entries they gave and answers whether they asked for one more model request that
    /// can be made (a request without a runnable context is reported, as pi reports it).
    pub(super) fn boundary(&self, mut event: Value, outcome: &str) -> bool {
        let name = event["type"].as_str().unwrap_or_default().to_owned();
        if !self.runner.has_handlers(&name) {
            return false;
        }
        event["entries"] = json!([]);
        event["continue"] = false.into();
        event["context"] = self.boundary_context();
        event["outcome"] = outcome.into();
        let Some(decided) = self.runner.emit_boundary(event) else {
            return false;
        };
        self.flush_user_messages();
        self.commit_drafts(&name, &decided.entries);
        if decided.continue_run && !self.can_continue() {
            self.runner.emit_error(&ExtensionError {
                extension_path: "<boundary>".into(),
                event: name.clone(),
                error: format!("{name} requested continuation without runnable model context"),
            });
            return false;
        }
        decided.continue_run
    }

    /// Writes a boundary's drafts: `custom` entries, and `custom_message` entries, which
    /// also join the context the next request sends.
    fn commit_drafts(&self, event: &str, drafts: &[Value]) {
        for draft in drafts {
            let kind = draft["type"].as_str().unwrap_or_default();
            let written = match kind {
                "custom" => Shared::lock(&self.shared.session).append_custom(
                    draft["customType"].as_str().unwrap_or_default(),
                    draft.get("data").filter(|d| !d.is_null()).cloned(),
                ),
                "custom_message" => {
                    let display = draft["display"].as_bool().unwrap_or(true);
                    let details = draft.get("details").filter(|d| !d.is_null()).cloned();
                    let mut message = json!({
                        "role": "custom",
                        "customType": draft["customType"],
                        "content": draft["content"],
                        "display": display,
                        "timestamp": super::now_ms(),
                    });
                    if let Some(details) = &details {
                        message["details"] = details.clone();
                    }
                    Shared::lock(&self.shared.messages).push(message);
                    Shared::lock(&self.shared.session).append_custom_message(
                        draft["customType"].as_str().unwrap_or_default(),
                        draft["content"].clone(),
                        display,
                        details,
                    )
                }
                _ => {
                    self.runner.emit_error(&ExtensionError {
                        extension_path: "<boundary>".into(),
                        event: event.to_owned(),
                        error: format!(
                            "a {kind} entry from {event} is not written: pi-hooks writes custom and custom_message boundary entries only"
                        ),
                    });
                    continue;
                }
            };
            if let Err(error) = written {
                eprintln!("pi-hooks: cannot write the session: {error}");
            }
        }
    }
}
