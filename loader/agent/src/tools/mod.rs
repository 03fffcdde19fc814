//! Tools the model can call: the built-in ones (`builtin`) and those plugins register. Every
//! call goes through the interception in the agent loop (tool_call, execute, tool_result).

pub mod builtin;
pub mod mutation_queue;
pub mod validation;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// What a tool produced: pi's tool result shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Content blocks (`{"type":"text","text":...}`, `{"type":"image",...}`).
    pub content: Vec<Value>,
    /// Tool-specific details (`Value::Null` when none).
    pub details: Value,
    /// Whether the result is an error.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![json!({"type": "text", "text": text.into()})],
            details: Value::Null,
            is_error: false,
        }
    }

    /// An error result with one text block and empty details, as pi builds them.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![json!({"type": "text", "text": message.into()})],
            details: json!({}),
            is_error: true,
        }
    }

    /// Sets the details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// The result as pi's JSON `{content, details?}` (details left out when null).
    pub fn to_json(&self) -> Value {
        let mut out = json!({"content": self.content});
        if !self.details.is_null() {
            out["details"] = self.details.clone();
        }
        out
    }
}

pub use pi_hooks_host::services::CancelToken;

/// One call of a tool.
pub struct ToolInvocation<'a> {
    /// The id the model gave the call.
    pub tool_call_id: &'a str,
    /// The arguments the model gave.
    pub args: &'a Value,
    /// The session's working directory; relative paths are resolved against it.
    pub cwd: &'a Path,
    /// Set when the run is aborted.
    pub cancel: &'a CancelToken,
    /// Streams a partial result (emitted as `tool_execution_update`).
    pub on_update: &'a (dyn Fn(ToolOutput) + Sync),
    /// The call's place in the line of the file it changes ([`Tool::mutated_file`]), taken in
    /// source order before the calls of a message run; `None` when there is none.
    pub file_ticket: Option<&'a mutation_queue::Ticket>,
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// A human label.
    fn label(&self) -> &str;
    /// The description the model reads.
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments.
    fn parameters(&self) -> Value;
    /// Runs the tool. `Err(message)` becomes an error result with that text.
    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String>;

    /// pi's `prepareArguments`: the arguments as the tool takes them, made from what the model
    /// sent (for example an older input shape converted), or `None` to keep them. They are
    /// prepared before [`Tool::validate`]; `tool_call` and `tool_result` handlers and the tool
    /// get the prepared arguments, while `tool_execution_start`/`update` show the model's.
    fn prepare_arguments(&self, _args: &Value) -> Option<Value> {
        None
    }

    /// The file a call with these (validated) arguments changes, for pi's per-file mutation
    /// queue ([`mutation_queue`]): `write` and `edit` give theirs, so that calls on one file run
    /// one at a time in source order.
    fn mutated_file(&self, _args: &Value, _cwd: &Path) -> Option<PathBuf> {
        None
    }

    /// Checks the arguments before `tool_call` fires and returns them coerced, as pi 1.6's
    /// `validateToolArguments` does (pi-schema: numeric strings, single values into arrays, an
    /// optional `null` dropped; see [`validation`]). Invalid arguments end the call with an
    /// error result listing every problem and no `tool_call` / `tool_result` events; the
    /// coerced arguments are what `tool_call` handlers and the tool get.
    fn validate(&self, args: &Value) -> Result<Value, String> {
        validation::validate_tool_arguments(self.name(), &self.parameters(), args)
    }
}
