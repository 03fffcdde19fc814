//! Typed views of event payloads.

use super::value::Value;

/// A `tool_call` event: `{type, toolCallId, toolName, input}`, read without copying.
#[derive(Clone, Copy, Debug)]
pub struct ToolCall<'a> {
    event: Value<'a>,
}

impl<'a> ToolCall<'a> {
    pub(crate) fn new(event: Value<'a>) -> Self {
        ToolCall { event }
    }

    /// The tool's name, for example "bash".
    pub fn tool_name(&self) -> &'a str {
        self.event.get("toolName").as_str().unwrap_or("")
    }

    /// The id of this call.
    pub fn tool_call_id(&self) -> &'a str {
        self.event.get("toolCallId").as_str().unwrap_or("")
    }

    /// The arguments the model gave, for example `{"command": "ls"}` for bash.
    pub fn input(&self) -> Value<'a> {
        self.event.get("input")
    }

    /// A string argument of the input (`input.command`, `input.path` ...).
    pub fn input_str(&self, key: &str) -> Option<&'a str> {
        self.input().get(key).as_str()
    }

    /// The whole event.
    pub fn event(&self) -> Value<'a> {
        self.event
    }
}
