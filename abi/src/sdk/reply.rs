//! What handlers return, and how it reaches the host's `PiResult`.

use super::error::{Result, check};
use super::strings::pi_str;
use crate::ffi::*;

/// A handler's result as the host will see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// No result (the handler returned nothing).
    None,
    /// A JSON result, for example `{"action":"transform","text":"..."}`.
    Json(serde_json::Value),
    /// `tool_call` only: block the tool with this reason.
    Block(String),
}

impl Reply {
    /// `tool_call`: blocks with `reason` and asks the agent to stop after this tool batch
    /// (pi 1.6's `terminate`: the run ends when every call of the batch was blocked so).
    pub fn block_and_terminate(reason: impl Into<String>) -> Reply {
        Reply::Json(serde_json::json!({"block": true, "reason": reason.into(), "terminate": true}))
    }

    /// `turn_end` / `agent_before_settle` (pi 1.6's boundaries): session entries to append
    /// (drafts such as `{"type": "custom_message", "customType": "note", "content": "...",
    /// "display": true}`) and whether to make one more model request.
    pub fn boundary(entries: Vec<serde_json::Value>, continue_run: bool) -> Reply {
        Reply::Json(serde_json::json!({"entries": entries, "continue": continue_run}))
    }

    /// `message_end`: replaces the message (it must keep its `role`).
    pub fn replace_message(message: serde_json::Value) -> Reply {
        Reply::Json(serde_json::json!({"message": message}))
    }
}

/// The answer of a `tool_call` handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCallDecision {
    /// Let the tool run (as far as this handler is concerned).
    Allow,
    /// Block the tool; the reason becomes its error result.
    Block(String),
    /// Let the tool run with this input (a JSON object) instead of the one it was called
    /// with; later handlers see it, and a later block still wins (pi's handlers mutate
    /// `event.input` in place).
    Rewrite(serde_json::Value),
}

impl ToolCallDecision {
    /// Blocks with `reason`.
    pub fn block(reason: impl Into<String>) -> Self {
        ToolCallDecision::Block(reason.into())
    }

    /// Runs the tool with `input` instead.
    pub fn rewrite(input: serde_json::Value) -> Self {
        ToolCallDecision::Rewrite(input)
    }
}

/// Converts a handler's return value into a [`Reply`].
pub trait IntoReply {
    /// The reply.
    fn into_reply(self) -> Reply;
}

impl IntoReply for Reply {
    fn into_reply(self) -> Reply {
        self
    }
}

impl IntoReply for () {
    fn into_reply(self) -> Reply {
        Reply::None
    }
}

impl IntoReply for serde_json::Value {
    fn into_reply(self) -> Reply {
        Reply::Json(self)
    }
}

/// A plain string: what pi takes as a string result (an `input` transform to that text, a
/// `session_before_compact` summary).
impl IntoReply for String {
    fn into_reply(self) -> Reply {
        Reply::Json(serde_json::Value::String(self))
    }
}

/// As [`String`].
impl IntoReply for &str {
    fn into_reply(self) -> Reply {
        Reply::Json(serde_json::Value::String(self.to_owned()))
    }
}

impl IntoReply for ToolCallDecision {
    fn into_reply(self) -> Reply {
        match self {
            ToolCallDecision::Allow => Reply::None,
            ToolCallDecision::Block(reason) => Reply::Block(reason),
            ToolCallDecision::Rewrite(input) => Reply::Json(serde_json::json!({"input": input})),
        }
    }
}

impl<T: IntoReply> IntoReply for Option<T> {
    fn into_reply(self) -> Reply {
        self.map_or(Reply::None, IntoReply::into_reply)
    }
}

/// Writes `reply` into the host's result.
///
/// # Safety
/// `result` must be the host's result of the current call under `host`.
pub(crate) unsafe fn write_reply(
    host: &PiHostApi,
    result: *mut PiResult,
    reply: Reply,
) -> Result<()> {
    // SAFETY: the results table is valid until unload (checked at init).
    let api = unsafe { &*host.results };
    match reply {
        Reply::None => Ok(()),
        Reply::Json(value) => {
            let text = value.to_string();
            // SAFETY: `result` is valid for this call; the text is borrowed for the call.
            check(unsafe { (api.set_json)(result, pi_str(&text)) }, "set_json")
        }
        Reply::Block(reason) => {
            check(
                // SAFETY: as above; no JSON is built on this path.
                unsafe { (api.set_bool)(result, pi_str("block"), true) },
                "set_bool",
            )?;
            // SAFETY: as above.
            check(
                unsafe { (api.set_string)(result, pi_str("reason"), pi_str(&reason)) },
                "set_string",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_1_6_results_have_pi_s_shapes() {
        assert_eq!(
            Reply::block_and_terminate("stop"),
            Reply::Json(serde_json::json!({"block": true, "reason": "stop", "terminate": true}))
        );
        let note = serde_json::json!({"type": "custom", "customType": "n"});
        assert_eq!(
            Reply::boundary(vec![note.clone()], true),
            Reply::Json(serde_json::json!({"entries": [note], "continue": true}))
        );
        let message = serde_json::json!({"role": "assistant", "content": []});
        assert_eq!(
            Reply::replace_message(message.clone()),
            Reply::Json(serde_json::json!({"message": message}))
        );
    }
}
