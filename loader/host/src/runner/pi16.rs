//! Dispatch of the events and results pi 1.6 added (issue 33, item 4), each with pi 1.6.0's
//! combination rule (`dist/core/extensions/runner.js` of `@earendil-works/pi-coding-agent`):
//! the boundaries `turn_end` and `agent_before_settle` (`{entries, continue}`), the chained
//! `message_end` (`{message}`) and `context_with_system` (`{messages}`), the header
//! mutation of `before_provider_headers`, `tool_call`'s `terminate` and `project_trust`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::events::ToolCallOutcome;
use super::{Chain, ExtensionError, Flow, Runner, Slot, truthy};
use crate::host_api::context::CallScope;
use crate::host_api::value::HostValue;
use crate::plugin::call::CallOutcome;

/// The draft types a boundary result's `entries` may hold (pi 1.6's `SessionBoundaryDraft`).
pub const BOUNDARY_DRAFT_TYPES: [&str; 4] =
    ["custom", "custom_message", "context_edit", "compaction"];

/// Checks a boundary result's `entries`: an array of drafts, each an object whose `type` is
/// one of [`BOUNDARY_DRAFT_TYPES`] with that type's required fields. The error says which
/// entry and field is wrong.
pub fn check_boundary_entries(entries: &Value) -> Result<Vec<Value>, String> {
    let Value::Array(list) = entries else {
        return Err(format!("entries must be an array, got {entries}"));
    };
    for (i, draft) in list.iter().enumerate() {
        let kind = draft.get("type").and_then(Value::as_str).unwrap_or("");
        let needs: &[&str] = match kind {
            "custom" => &["customType"],
            "custom_message" => &["customType", "content"],
            "context_edit" => &["targetId", "replacement"],
            "compaction" => &["summary", "firstKeptEntryId"],
            _ => {
                return Err(format!(
                    "entries[{i}].type must be one of {}, got {}",
                    BOUNDARY_DRAFT_TYPES.join(", "),
                    draft.get("type").unwrap_or(&Value::Null)
                ));
            }
        };
        for field in needs {
            if draft.get(*field).is_none() {
                return Err(format!("entries[{i}] ({kind}) has no {field}"));
            }
        }
    }
    Ok(list.clone())
}

// ---------------------------------------------------------------------------------------
// boundaries: turn_end, agent_before_settle

/// What the handlers of a boundary (`turn_end`, `agent_before_settle`) decided.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BoundaryOutcome {
    /// The session entries to append (pi's drafts: `custom`, `custom_message`,
    /// `context_edit`, `compaction`), as the last handler that gave `entries` left them.
    pub entries: Vec<Value>,
    /// Whether one more model request was asked for.
    pub continue_run: bool,
}

struct BoundaryChain {
    base: Map<String, Value>,
    entries: Vec<Value>,
    continue_run: bool,
    /// Every result was well formed (pi: otherwise no entries and no continuation).
    valid: bool,
    problems: Vec<ExtensionError>,
    cache: Option<Arc<HostValue>>,
}

impl Chain for BoundaryChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let (base, entries, cont) = (&self.base, &self.entries, self.continue_run);
        self.cache.get_or_insert_with(|| {
            let mut event = base.clone();
            event.insert("entries".into(), Value::Array(entries.clone()));
            event.insert("continue".into(), Value::Bool(cont));
            Arc::new(HostValue::from_json(Value::Object(event)))
        })
    }

    fn absorb(&mut self, slot: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let Some(Value::Object(result)) = outcome.take_result().filter(truthy) else {
            return Flow::Continue;
        };
        let event = self.base.get("type").and_then(Value::as_str).unwrap_or("");
        if let Some(entries) = result.get("entries").filter(|e| !e.is_null()) {
            match check_boundary_entries(entries) {
                Ok(list) => {
                    self.entries = list;
                    self.valid = true;
                }
                Err(error) => {
                    self.valid = false;
                    self.problems.push(ExtensionError {
                        extension_path: slot.path().to_owned(),
                        event: event.to_owned(),
                        error: format!("Invalid boundary entries: {error}"),
                    });
                }
            }
        }
        if let Some(cont) = result.get("continue").and_then(Value::as_bool) {
            self.continue_run = cont;
        }
        self.cache = None;
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// message_end

struct MessageEndChain {
    message: Value,
    modified: bool,
    problems: Vec<ExtensionError>,
    cache: Option<Arc<HostValue>>,
}

impl Chain for MessageEndChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let message = &self.message;
        self.cache.get_or_insert_with(|| {
            Arc::new(HostValue::from_json(
                json!({"type": "message_end", "message": message}),
            ))
        })
    }

    fn absorb(&mut self, slot: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let Some(Value::Object(mut result)) = outcome.take_result().filter(truthy) else {
            return Flow::Continue;
        };
        let Some(message) = result.remove("message").filter(truthy) else {
            return Flow::Continue;
        };
        if message.get("role") != self.message.get("role") {
            self.problems.push(ExtensionError {
                extension_path: slot.path().to_owned(),
                event: "message_end".into(),
                error: "message_end handlers must return a message with the same role".into(),
            });
            return Flow::Continue;
        }
        self.message = message;
        self.modified = true;
        self.cache = None;
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// context_with_system

struct MessagesChain {
    name: &'static str,
    messages: Vec<Value>,
    cache: Option<Arc<HostValue>>,
}

impl Chain for MessagesChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let (name, messages) = (self.name, &self.messages);
        self.cache.get_or_insert_with(|| {
            Arc::new(HostValue::from_json(
                json!({"type": name, "messages": messages}),
            ))
        })
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        if let Some(Value::Object(mut result)) = outcome.take_result().filter(truthy)
            && let Some(Value::Array(messages)) = result.remove("messages")
        {
            self.messages = messages;
            self.cache = None;
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// before_provider_headers

struct HeadersChain {
    headers: Map<String, Value>,
    problems: Vec<ExtensionError>,
    cache: Option<Arc<HostValue>>,
}

impl Chain for HeadersChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let headers = &self.headers;
        self.cache.get_or_insert_with(|| {
            Arc::new(HostValue::from_json(
                json!({"type": "before_provider_headers", "headers": headers}),
            ))
        })
    }

    /// pi's handlers mutate `event.headers` in place; a native handler returns
    /// `{headers: {name: value | null}}`, merged over them (`null` deletes the header).
    fn absorb(&mut self, slot: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let Some(Value::Object(mut result)) = outcome.take_result().filter(truthy) else {
            return Flow::Continue;
        };
        match result.remove("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(changes)) => {
                for (name, value) in changes {
                    match value {
                        Value::String(_) | Value::Null => {
                            self.headers.insert(name, value);
                        }
                        other => self.problems.push(ExtensionError {
                            extension_path: slot.path().to_owned(),
                            event: "before_provider_headers".into(),
                            error: format!(
                                "header {name:?} must be a string or null (to delete it), got {other}"
                            ),
                        }),
                    }
                }
                self.cache = None;
            }
            Some(other) => self.problems.push(ExtensionError {
                extension_path: slot.path().to_owned(),
                event: "before_provider_headers".into(),
                error: format!("headers must be an object of header names, got {other}"),
            }),
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// project_trust

struct TrustChain {
    payload: Arc<HostValue>,
    decision: Option<Value>,
}

impl Chain for TrustChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        &self.payload
    }

    /// pi: the first `yes` or `no` decides; `undecided` (or nothing) asks the next handler.
    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let Some(result) = outcome.take_result().filter(truthy) else {
            return Flow::Continue;
        };
        match result.get("trusted").and_then(Value::as_str) {
            Some("yes" | "no") => {
                self.decision = Some(result);
                Flow::Stop
            }
            _ => Flow::Continue,
        }
    }
}

// ---------------------------------------------------------------------------------------
// the runner's dispatch API for them

impl Runner {
    fn report_all(&self, problems: &[ExtensionError]) {
        for problem in problems {
            self.emit_error(problem);
        }
    }

    /// Dispatches a boundary event (`turn_end` or `agent_before_settle`, pi 0.87.0):
    /// `base` is the event (`{"type", ...}` with its `context` and `outcome`), to which
    /// every handler's payload adds `entries` and `continue` as chained so far. A result's
    /// `entries` replaces the drafts, its `continue` the request for one more model call (pi's
    /// `emitBoundary`). A malformed `entries` is reported (`Invalid boundary entries: ...`) and,
    /// unless a later handler gives valid ones, the outcome is no entries and no continuation,
    /// as in pi. `None` when no plugin handles the event.
    pub fn emit_boundary(&self, base: Value) -> Option<BoundaryOutcome> {
        let name = base.get("type").and_then(Value::as_str)?.to_owned();
        if !self.has_handlers(&name) {
            return None;
        }
        let Value::Object(mut base) = base else {
            return None;
        };
        let entries = match base.remove("entries") {
            Some(Value::Array(entries)) => entries,
            _ => Vec::new(),
        };
        let continue_run = base
            .remove("continue")
            .and_then(|c| c.as_bool())
            .unwrap_or(false);
        let chain = BoundaryChain {
            base,
            entries,
            continue_run,
            valid: true,
            problems: Vec::new(),
            cache: None,
        };
        let chain = self.run(&name, None, chain, Some(self.hook_timeout()));
        self.report_all(&chain.problems);
        Some(if chain.valid {
            BoundaryOutcome {
                entries: chain.entries,
                continue_run: chain.continue_run,
            }
        } else {
            BoundaryOutcome::default()
        })
    }

    /// Dispatches `message_end` as pi 1.6 chains it: each handler sees the message as replaced
    /// so far; a result `{message}` replaces it when its `role` is the same (else reported:
    /// `message_end handlers must return a message with the same role`). `None` when no
    /// handler replaced it.
    pub fn emit_message_end(&self, message: &Value) -> Option<Value> {
        if !self.has_handlers("message_end") {
            return None;
        }
        let chain = MessageEndChain {
            message: message.clone(),
            modified: false,
            problems: Vec::new(),
            cache: None,
        };
        let chain = self.run("message_end", None, chain, Some(self.hook_timeout()));
        self.report_all(&chain.problems);
        chain.modified.then_some(chain.message)
    }

    /// Dispatches `context_with_system` (pi 0.87.0) after `context`: each handler sees the
    /// previous handler's messages; a result `{messages}` replaces them and the last ones are
    /// sent as they are.
    pub fn emit_context_with_system(&self, messages: Vec<Value>) -> Vec<Value> {
        if !self.has_handlers("context_with_system") {
            return messages;
        }
        let chain = MessagesChain {
            name: "context_with_system",
            messages,
            cache: None,
        };
        self.run(
            "context_with_system",
            None,
            chain,
            Some(self.hook_timeout()),
        )
        .messages
    }

    /// Dispatches `before_provider_headers` (pi 0.80.4) over the request's headers: a result
    /// `{headers: {name: string | null}}` is merged over them, `null` deleting a header (pi's
    /// handlers mutate `event.headers` in place, which a native handler cannot). Later
    /// handlers see the merged headers, deleted ones as `null`. Returns them, with the deleted
    /// ones still `null` (a client that mutates pi's object in place needs to know them).
    pub fn emit_before_provider_headers(&self, headers: Map<String, Value>) -> Map<String, Value> {
        if !self.has_handlers("before_provider_headers") {
            return headers;
        }
        let chain = HeadersChain {
            headers,
            problems: Vec::new(),
            cache: None,
        };
        let chain = self.run(
            "before_provider_headers",
            None,
            chain,
            Some(self.hook_timeout()),
        );
        self.report_all(&chain.problems);
        chain.headers
    }

    /// [`Runner::emit_tool_call`], plus whether the block asked the agent to stop after the
    /// current tool batch (`terminate: true` beside `block: true`, pi 0.84.1; only a block
    /// carries it, and pi stops only when every result of the batch has it).
    pub fn emit_tool_call_terminating(&self, payload: Arc<HostValue>) -> (ToolCallOutcome, bool) {
        self.emit_tool_call_full(payload)
    }

    /// Dispatches `project_trust {cwd}` (pi 0.79.0): the first result whose `trusted` is
    /// `"yes"` or `"no"` decides (`{trusted, remember?}` as returned); `"undecided"` asks
    /// the next handler. `None`: no handler decided.
    pub fn emit_project_trust(&self, cwd: &str) -> Option<Value> {
        if !self.has_handlers("project_trust") {
            return None;
        }
        let chain = TrustChain {
            payload: Arc::new(HostValue::from_json(
                json!({"type": "project_trust", "cwd": cwd}),
            )),
            decision: None,
        };
        self.run("project_trust", None, chain, Some(self.hook_timeout()))
            .decision
    }
}
