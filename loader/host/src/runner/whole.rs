//! Dispatch entry points that take the client's whole event payload, for `pi-hooks serve`
//! (`crate::serve::protocol`): pi's event object passes to the plugins as pi built it, new
//! fields included (pi 1.6's `streamingBehavior`, `messageType`, `systemPromptOptions`,
//! `structuredContent`, `usage`, `parentToolCallId`, ...), and only the fields a combination
//! rule chains are replaced between handlers. The combination rules are the ones of
//! [`super::events`]; the field-by-field entry points there (`emit_input`, ...) stay what the
//! agent loop calls.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::events::{BeforeAgentStartOutcome, InputOutcome};
use super::{Chain, ExtensionError, Flow, Runner, Slot, truthy};
use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::call::CallOutcome;

/// pi's event object (its fields with `type`), converted for the plugins once and again only
/// after a handler changed a chained field.
struct Whole {
    fields: Map<String, Value>,
    cache: Option<Arc<HostValue>>,
}

impl Whole {
    /// `fields` with `type` set to `name` (first, as pi's objects have it).
    fn new(name: &str, fields: Map<String, Value>) -> Self {
        let mut event = Map::with_capacity(fields.len() + 1);
        event.insert("type".into(), name.into());
        for (key, value) in fields {
            if key != "type" {
                event.insert(key, value);
            }
        }
        Whole {
            fields: event,
            cache: None,
        }
    }

    fn payload(&mut self) -> &Arc<HostValue> {
        let fields = &self.fields;
        self.cache
            .get_or_insert_with(|| Arc::new(HostValue::from_json(Value::Object(fields.clone()))))
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key).filter(|v| !v.is_null())
    }

    fn set(&mut self, key: &str, value: Value) {
        self.fields.insert(key.to_owned(), value);
        self.cache = None;
    }

    fn remove(&mut self, key: &str) {
        if self.fields.shift_remove(key).is_some() {
            self.cache = None;
        }
    }
}

// ---------------------------------------------------------------------------------------
// input

struct InputWhole {
    event: Whole,
    handled: Option<Value>,
}

impl Chain for InputWhole {
    fn payload(&mut self) -> &Arc<HostValue> {
        self.event.payload()
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        match outcome.take_result().filter(truthy) {
            // Alternative form: a plain string is a transform.
            Some(Value::String(text)) => self.event.set("text", text.into()),
            Some(Value::Object(map)) => match map.get("action").and_then(Value::as_str) {
                Some("handled") => {
                    self.handled = Some(Value::Object(map));
                    return Flow::Stop;
                }
                Some("transform") => {
                    if let Some(text) = map.get("text").filter(|t| t.is_string()) {
                        self.event.set("text", text.clone());
                    }
                    if let Some(images) = map.get("images").filter(|v| !v.is_null()) {
                        self.event.set("images", images.clone());
                    }
                }
                _ => {}
            },
            _ => {}
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// before_agent_start

struct BeforeAgentStartWhole {
    event: Whole,
    modified: bool,
    messages: Vec<Value>,
}

impl BeforeAgentStartWhole {
    fn set_prompt(&mut self, prompt: String, scope: &CallScope) {
        scope.replace_system_prompt(&prompt);
        self.event.set("systemPrompt", prompt.into());
        self.modified = true;
    }

    fn system_prompt(&self) -> &str {
        self.event
            .get("systemPrompt")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

impl Chain for BeforeAgentStartWhole {
    fn payload(&mut self) -> &Arc<HostValue> {
        self.event.payload()
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, scope: &CallScope) -> Flow {
        // `ctx.set_system_prompt` first, then a returned `systemPrompt` on top of it.
        if let Some(prompt) = outcome.take_system_prompt() {
            self.set_prompt(prompt, scope);
        }
        if let Some(Value::Object(map)) = outcome.take_result().filter(truthy) {
            if let Some(message) = map.get("message").filter(|m| truthy(m)) {
                self.messages.push(message.clone());
            }
            if let Some(prompt) = map.get("systemPrompt").and_then(Value::as_str) {
                self.set_prompt(prompt.to_owned(), scope);
            }
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// tool_result

/// The fields of a `tool_result` a handler may change, in the order pi returns them.
const TOOL_RESULT_FIELDS: [&str; 5] = [
    "content",
    "details",
    "structuredContent",
    "isError",
    "usage",
];

struct ToolResultWhole {
    event: Whole,
    patched: bool,
}

impl Chain for ToolResultWhole {
    fn payload(&mut self) -> &Arc<HostValue> {
        self.event.payload()
    }

    /// pi 1.6's patch rule (`emitToolResult`): each field a handler returns replaces the
    /// current one; new `content` without `structuredContent` drops the structured content,
    /// which may no longer match it.
    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let Some(Value::Object(map)) = outcome.take_result().filter(truthy) else {
            return Flow::Continue;
        };
        let given = |key: &str| map.get(key).filter(|v| !v.is_null());
        if let Some(content) = given("content") {
            self.event.set("content", content.clone());
            if given("structuredContent").is_none() {
                self.event.remove("structuredContent");
            }
            self.patched = true;
        }
        for key in ["details", "structuredContent", "usage"] {
            if let Some(value) = given(key) {
                self.event.set(key, value.clone());
                self.patched = true;
            }
        }
        if let Some(is_error) = map.get("isError").filter(|v| v.is_boolean()) {
            self.event.set("isError", is_error.clone());
            self.patched = true;
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// user_bash

struct UserBashWhole {
    event: Whole,
    result: Option<Value>,
    error: Option<String>,
}

impl Chain for UserBashWhole {
    fn payload(&mut self) -> &Arc<HostValue> {
        self.event.payload()
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        match outcome.take_result().filter(truthy) {
            Some(result) => {
                self.result = Some(result);
                Flow::Stop
            }
            None => Flow::Continue,
        }
    }

    /// pi 1.6 (`emitUserBash`): a failing handler is reported and the command does not run.
    fn fail(
        &mut self,
        slot: &Slot,
        error: String,
        errors: &mut Vec<ExtensionError>,
        event: &str,
        _: &CallScope,
    ) -> Flow {
        errors.push(ExtensionError {
            extension_path: slot.path().to_owned(),
            event: event.to_owned(),
            error: error.clone(),
        });
        self.error = Some(format!(
            "Extension {} ({}) failed in user_bash: {error}",
            slot.state.name,
            slot.path()
        ));
        Flow::Stop
    }
}

// ---------------------------------------------------------------------------------------
// the entry points

impl Runner {
    /// Dispatches `input` over pi's whole event (`text`, `images?`, `source`,
    /// `streamingBehavior?`, ...): transforms chain `text` and `images`, the first `handled`
    /// stops; a plain string result is a transform. The rule of [`Runner::emit_input`].
    pub fn emit_input_event(&self, event: Map<String, Value>) -> InputOutcome {
        if !self.has_handlers("input") {
            return InputOutcome::Continue;
        }
        let text = event.get("text").cloned();
        let images = event.get("images").filter(|v| !v.is_null()).cloned();
        let chain = InputWhole {
            event: Whole::new("input", event),
            handled: None,
        };
        let chain = self.run("input", None, chain, Some(self.hook_timeout()));
        if let Some(handled) = chain.handled {
            return InputOutcome::Handled(handled);
        }
        let new_text = chain.event.get("text").cloned();
        let new_images = chain.event.get("images").cloned();
        if new_text == text && new_images == images {
            return InputOutcome::Continue;
        }
        InputOutcome::Transform {
            text: new_text
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            images: new_images,
        }
    }

    /// Dispatches `before_agent_start` over pi's whole event: pi 1.6's two forms
    /// (`messageType` `"user"` with `prompt` and `images`, `"custom"` with the `message` that
    /// starts the run and no `prompt`), `systemPromptOptions` and whatever else pi sends reach
    /// the handlers as given. Messages accumulate and `systemPrompt` chains (also through
    /// `ctx.set_system_prompt`), as [`Runner::emit_before_agent_start`]. `None` when no
    /// handler added or changed anything. `systemPromptOptions` is a copy: a native handler
    /// changes the prompt through `systemPrompt`, not by mutating the options in place.
    pub fn emit_before_agent_start_event(
        &self,
        event: Map<String, Value>,
    ) -> Option<BeforeAgentStartOutcome> {
        if !self.has_handlers("before_agent_start") {
            return None;
        }
        let scope = self.new_scope(CallKind::BeforeAgentStart);
        let mut chain = BeforeAgentStartWhole {
            event: Whole::new("before_agent_start", event),
            modified: false,
            messages: Vec::new(),
        };
        if !chain
            .event
            .fields
            .get("systemPrompt")
            .is_some_and(Value::is_string)
        {
            chain.event.set("systemPrompt", "".into());
        }
        scope.replace_system_prompt(chain.system_prompt());
        let chain = self.run(
            "before_agent_start",
            Some(&scope),
            chain,
            Some(self.hook_timeout()),
        );
        let prompt = chain.system_prompt().to_owned();
        (chain.modified || !chain.messages.is_empty()).then(|| BeforeAgentStartOutcome {
            messages: chain.messages,
            // pi: only a truthy combined prompt replaces the base prompt; "" restores it.
            system_prompt: Some(prompt).filter(|p| chain.modified && !p.is_empty()),
        })
    }

    /// Dispatches `tool_result` over pi's whole event (`parentToolCallId`,
    /// `structuredContent`, `usage` included) as pi 1.6's patch chain over `content`,
    /// `details`, `structuredContent`, `isError` and `usage`. `None` when no handler patched
    /// anything; otherwise those five fields as the chain left them (a field the event lacks
    /// is left out).
    pub fn emit_tool_result_event(&self, event: Map<String, Value>) -> Option<Map<String, Value>> {
        if !self.has_handlers("tool_result") {
            return None;
        }
        let chain = ToolResultWhole {
            event: Whole::new("tool_result", event),
            patched: false,
        };
        let chain = self.run("tool_result", None, chain, Some(self.hook_timeout()));
        chain.patched.then(|| {
            TOOL_RESULT_FIELDS
                .iter()
                .filter_map(|key| Some(((*key).to_owned(), chain.event.get(key)?.clone())))
                .collect()
        })
    }

    /// Dispatches `user_bash` over pi's whole event: the first truthy result wins (`Ok(None)`:
    /// none). A failing handler fails closed, as in pi 1.6 (0.86.0): it is reported and the
    /// dispatch ends with `Err` naming the plugin, so the client does not run the command.
    pub fn emit_user_bash_event(&self, event: Map<String, Value>) -> Result<Option<Value>, String> {
        if !self.has_handlers("user_bash") {
            return Ok(None);
        }
        let chain = UserBashWhole {
            event: Whole::new("user_bash", event),
            result: None,
            error: None,
        };
        let chain = self.run("user_bash", None, chain, Some(self.hook_timeout()));
        match chain.error {
            Some(error) => Err(error),
            None => Ok(chain.result),
        }
    }

    /// The `tool_call` payload from pi's whole event (`parentToolCallId` and any other field
    /// included), for [`Runner::emit_tool_call`].
    pub fn tool_call_event_payload(event: Map<String, Value>) -> Arc<HostValue> {
        let Whole { fields, .. } = Whole::new("tool_call", event);
        Arc::new(HostValue::from_json(Value::Object(fields)))
    }
}
