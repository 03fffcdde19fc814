//! One dispatch function per event kind, each with pi's combination rule, plus
//! the alternative result forms of pi's older hook API.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Chain, ExtensionError, Flow, Runner, Slot, truthy};
use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::LoadedPlugin;
use crate::plugin::call::CallOutcome;

/// A payload that is built once and rebuilt only when the chain state changes.
#[derive(Default)]
struct Cached(Option<Arc<HostValue>>);

impl Cached {
    fn get(&mut self, build: impl FnOnce() -> Value) -> &Arc<HostValue> {
        self.0
            .get_or_insert_with(|| Arc::new(HostValue::from_json(build())))
    }

    fn invalidate(&mut self) {
        self.0 = None;
    }
}

/// A truthy handler result, or `None`.
fn truthy_result(result: Option<Value>) -> Option<Value> {
    result.filter(truthy)
}

// ---------------------------------------------------------------------------------------
// notify

struct Notify(Arc<HostValue>);

impl Chain for Notify {
    const EMPTY_CONTINUES: bool = true;

    fn payload(&mut self) -> &Arc<HostValue> {
        &self.0
    }

    fn absorb(&mut self, _: &Slot, _: CallOutcome, _: &CallScope) -> Flow {
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// input

/// What the `input` event decided.
#[derive(Debug, Clone, PartialEq)]
pub enum InputOutcome {
    /// Go on with the original text.
    Continue,
    /// Go on with this text (and images).
    Transform {
        /// The final text.
        text: String,
        /// The final images (`None`: none).
        images: Option<Value>,
    },
    /// A handler handled the input: no prompt. The result as the handler returned it.
    Handled(Value),
}

struct InputChain {
    text: String,
    images: Option<Value>,
    source: String,
    /// pi 1.6's `streamingBehavior` (`"steer"` / `"followUp"`), when the input arrives
    /// while the agent streams.
    streaming_behavior: Option<&'static str>,
    handled: Option<Value>,
    cache: Cached,
}

impl Chain for InputChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let (text, images, source) = (&self.text, &self.images, &self.source);
        let streaming_behavior = self.streaming_behavior;
        self.cache.get(|| {
            let mut event = json!({"type": "input", "text": text, "source": source});
            if let Some(images) = images {
                event["images"] = images.clone();
            }
            if let Some(behavior) = streaming_behavior {
                event["streamingBehavior"] = behavior.into();
            }
            event
        })
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let result = outcome.take_result();
        match truthy_result(result) {
            // Alternative form: a plain string is a transform.
            Some(Value::String(text)) => {
                self.text = text;
                self.cache.invalidate();
            }
            Some(Value::Object(map)) => match map.get("action").and_then(Value::as_str) {
                Some("handled") => {
                    self.handled = Some(Value::Object(map));
                    return Flow::Stop;
                }
                Some("transform") => {
                    if let Some(text) = map.get("text").and_then(Value::as_str) {
                        self.text = text.to_owned();
                    }
                    if let Some(images) = map.get("images").filter(|v| !v.is_null()) {
                        self.images = Some(images.clone());
                    }
                    self.cache.invalidate();
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

/// What `before_agent_start` handlers added.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeAgentStartOutcome {
    /// The `message` results, in order (`{customType, content, display, details?}`).
    pub messages: Vec<Value>,
    /// The chained system prompt, when some handler set one.
    pub system_prompt: Option<String>,
}

struct BeforeAgentStartChain {
    prompt: String,
    images: Option<Value>,
    system_prompt: String,
    modified: bool,
    messages: Vec<Value>,
    cache: Cached,
}

impl BeforeAgentStartChain {
    /// Chains a new prompt: later handlers see it in the payload and through the context.
    fn set_prompt(&mut self, prompt: String, scope: &CallScope) {
        scope.replace_system_prompt(&prompt);
        self.system_prompt = prompt;
        self.modified = true;
        self.cache.invalidate();
    }
}

impl Chain for BeforeAgentStartChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let (prompt, images, system_prompt) = (&self.prompt, &self.images, &self.system_prompt);
        self.cache.get(|| {
            let mut event = json!({"type": "before_agent_start", "prompt": prompt, "systemPrompt": system_prompt});
            if let Some(images) = images {
                event["images"] = images.clone();
            }
            event
        })
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, scope: &CallScope) -> Flow {
        // `ctx.set_system_prompt` first, then a returned `systemPrompt` on top of it.
        if let Some(prompt) = outcome.take_system_prompt() {
            self.set_prompt(prompt, scope);
        }
        if let Some(Value::Object(map)) = truthy_result(outcome.take_result()) {
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
// context

struct ContextChain {
    messages: Vec<Value>,
    cache: Cached,
}

impl Chain for ContextChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let messages = &self.messages;
        self.cache
            .get(|| json!({"type": "context", "messages": messages}))
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let result = outcome.take_result();
        if let Some(Value::Object(mut map)) = truthy_result(result)
            && let Some(Value::Array(messages)) = map.remove("messages")
        {
            self.messages = messages;
            self.cache.invalidate();
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// before_provider_request

struct ProviderChain {
    body: Value,
    cache: Cached,
}

impl Chain for ProviderChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let body = &self.body;
        self.cache
            .get(|| json!({"type": "before_provider_request", "payload": body}))
    }

    /// pi: any result other than `undefined` (even `null`) replaces the payload.
    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        if let Some(result) = outcome.take_result() {
            self.body = result;
            self.cache.invalidate();
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// tool_call

/// What `tool_call` handlers decided.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCallOutcome {
    /// Run the tool. `last` is the last truthy non-blocking result, if any.
    Allow {
        /// The last truthy result.
        last: Option<Value>,
        /// The input the tool runs with when a handler rewrote it (the last `input` any
        /// handler returned); `None`: the tool runs with the input it was called with.
        input: Option<Value>,
    },
    /// Do not run the tool; the reason becomes its error result.
    Block {
        /// Why.
        reason: String,
    },
}

/// The `tool_call` chain: the payload the next handler sees and, once a handler decided
/// anything, what it decided. Kept to two words: the chain is moved through the dispatch
/// (`run`, the untimed loop, the return), and with the decision inline (two `serde_json`
/// values and a string, 184 bytes) every move was a `memcpy` call, about a third of the
/// instructions of a dispatch whose handlers decide nothing (BENCHMARKS §1).
struct ToolCallChain {
    payload: Arc<HostValue>,
    decided: Option<Box<ToolCallDecided>>,
}

/// What the `tool_call` handlers decided so far (see [`ToolCallChain`]).
#[derive(Default)]
struct ToolCallDecided {
    blocked: Option<String>,
    last: Option<Value>,
    input: Option<Value>,
    /// The block asked the agent to stop after the tool batch (pi 1.6's `terminate`).
    terminate: bool,
}

impl ToolCallChain {
    /// What was decided, made on the first decision.
    fn decided(&mut self) -> &mut ToolCallDecided {
        self.decided.get_or_insert_with(Box::default)
    }

    /// A handler's `input`: the tool's new arguments, which later handlers see (pi's
    /// handlers mutate `event.input` in place). Only an object can be a tool's arguments.
    fn rewrite(&mut self, slot: &Slot, input: Value) -> Flow {
        if !input.is_object() {
            self.decided().blocked = Some(format!(
                "Extension {} ({}) failed, blocking execution: a tool_call result's input must be an object, got {}",
                slot.state.name,
                slot.path(),
                kind_of(&input)
            ));
            return Flow::Stop;
        }
        let mut event = self.payload.to_json_value();
        event["input"] = input.clone();
        self.payload = Arc::new(HostValue::from_json(event));
        self.decided().input = Some(input);
        Flow::Continue
    }
}

/// The JSON type of `value`, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Chain for ToolCallChain {
    /// `absorb` of an empty outcome: no result, so nothing decided.
    const EMPTY_CONTINUES: bool = true;

    #[inline]
    fn payload(&mut self) -> &Arc<HostValue> {
        &self.payload
    }

    #[inline]
    fn absorb(&mut self, slot: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let result = outcome.take_result();
        let Some(mut result) = truthy_result(result) else {
            return Flow::Continue;
        };
        if result.get("block").is_some_and(truthy) {
            let reason = result
                .get("reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty());
            let terminate = result.get("terminate").is_some_and(truthy);
            let decided = self.decided();
            decided.blocked = Some(reason.unwrap_or("Tool execution was blocked").to_owned());
            decided.terminate = terminate;
            return Flow::Stop;
        }
        if let Some(input) = result.as_object_mut().and_then(|r| r.remove("input"))
            && !input.is_null()
        {
            let flow = self.rewrite(slot, input.clone());
            result["input"] = input;
            if matches!(flow, Flow::Stop) {
                return flow;
            }
        }
        self.decided().last = Some(result);
        Flow::Continue
    }

    /// Fail closed: any error blocks the tool, with a reason naming the plugin. pi reports
    /// nothing on the error channel for tool_call; neither does the host.
    fn fail(
        &mut self,
        slot: &Slot,
        error: String,
        _: &mut Vec<ExtensionError>,
        _: &str,
        _: &CallScope,
    ) -> Flow {
        self.decided().blocked = Some(format!(
            "Extension {} ({}) failed, blocking execution: {error}",
            slot.state.name,
            slot.path()
        ));
        Flow::Stop
    }
}

/// The outcome of a `tool_call` chain in which some handler decided something, and whether
/// its block said `terminate`.
fn decided_outcome(decided: ToolCallDecided) -> (ToolCallOutcome, bool) {
    match decided.blocked {
        Some(reason) => (ToolCallOutcome::Block { reason }, decided.terminate),
        None => (
            ToolCallOutcome::Allow {
                last: decided.last,
                input: decided.input,
            },
            false,
        ),
    }
}

// ---------------------------------------------------------------------------------------
// tool_result

/// The final state of a `tool_result` patch chain.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultPatch {
    /// Content blocks.
    pub content: Value,
    /// Details.
    pub details: Value,
    /// Whether the result is an error.
    pub is_error: bool,
}

struct ToolResultChain {
    tool_call_id: String,
    tool_name: String,
    input: Value,
    state: ToolResultPatch,
    patched: bool,
    cache: Cached,
}

impl Chain for ToolResultChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        let this = &*self;
        let event = json!({
            "type": "tool_result",
            "toolCallId": this.tool_call_id,
            "toolName": this.tool_name,
            "input": this.input,
            "content": this.state.content,
            "details": this.state.details,
            "isError": this.state.is_error,
        });
        let mut event = event;
        if this.state.details.is_null() {
            // pi leaves `details` out when a tool gave none.
            event.as_object_mut().map(|e| e.remove("details"));
        }
        self.cache.get(|| event)
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let result = outcome.take_result();
        let Some(Value::Object(map)) = truthy_result(result) else {
            return Flow::Continue;
        };
        if let Some(content) = map.get("content").filter(|v| !v.is_null()) {
            self.state.content = content.clone();
            self.patched = true;
        }
        if let Some(details) = map.get("details").filter(|v| !v.is_null()) {
            self.state.details = details.clone();
            self.patched = true;
        }
        if let Some(is_error) = map.get("isError").and_then(Value::as_bool) {
            self.state.is_error = is_error;
            self.patched = true;
        }
        self.cache.invalidate();
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// cancel short-circuit, last-wins, first-wins

/// How the results of a generic event combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Last truthy result, except that a truthy `cancel` returns at once.
    CancelShortCircuit,
    /// The last truthy result.
    LastWins,
    /// The first truthy result; later handlers are skipped.
    FirstWins,
}

struct RuleChain {
    payload: Arc<HostValue>,
    rule: Rule,
    /// `session_before_compact`: a plain string is a custom summary.
    string_is_summary: bool,
    result: Option<Value>,
}

impl Chain for RuleChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        &self.payload
    }

    fn absorb(&mut self, _: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let result = outcome.take_result();
        let Some(mut result) = truthy_result(result) else {
            return Flow::Continue;
        };
        if self.string_is_summary
            && let Value::String(summary) = &result
        {
            result = json!({"compaction": {"summary": summary}});
        }
        let cancel = result.get("cancel").is_some_and(truthy);
        self.result = Some(result);
        match self.rule {
            Rule::FirstWins => Flow::Stop,
            Rule::CancelShortCircuit if cancel => Flow::Stop,
            _ => Flow::Continue,
        }
    }
}

// ---------------------------------------------------------------------------------------
// resources_discover

/// Paths plugins contributed in `resources_discover`, each with the plugin that gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveredResources {
    /// `(path, plugin path)` of skills.
    pub skill_paths: Vec<(String, String)>,
    /// `(path, plugin path)` of prompt templates.
    pub prompt_paths: Vec<(String, String)>,
    /// `(path, plugin path)` of themes.
    pub theme_paths: Vec<(String, String)>,
}

struct ResourcesChain {
    payload: Arc<HostValue>,
    found: DiscoveredResources,
}

impl Chain for ResourcesChain {
    fn payload(&mut self) -> &Arc<HostValue> {
        &self.payload
    }

    fn absorb(&mut self, slot: &Slot, mut outcome: CallOutcome, _: &CallScope) -> Flow {
        let result = outcome.take_result();
        let Some(Value::Object(map)) = truthy_result(result) else {
            return Flow::Continue;
        };
        let lists = [
            ("skillPaths", &mut self.found.skill_paths),
            ("promptPaths", &mut self.found.prompt_paths),
            ("themePaths", &mut self.found.theme_paths),
        ];
        for (key, into) in lists {
            for path in map
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                into.push((path.to_owned(), slot.path().to_owned()));
            }
        }
        Flow::Continue
    }
}

// ---------------------------------------------------------------------------------------
// the runner's dispatch API

impl Runner {
    fn timeout(&self) -> Option<std::time::Duration> {
        Some(self.hook_timeout())
    }

    /// Dispatches a notify event (`{"type": name, ...}`): results are ignored, errors
    /// reported.
    pub fn emit(&self, event: Value) {
        let Some(name) = event.get("type").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        if !self.has_handlers(&name) {
            return;
        }
        let chain = Notify(Arc::new(HostValue::from_json(event)));
        self.run(&name, None, chain, self.timeout());
    }

    /// Dispatches the notification `event` (its `type` names it) handler by handler, calling
    /// `between` after each handler returned, before the next one runs: what a handler set in
    /// motion (a user message it sent, whose `input` event pi runs inside the send) happens
    /// before later handlers see the event, as in pi (`agent_end`). Same semantics as
    /// [`Runner::emit`] otherwise.
    pub fn emit_each(&self, event: Value, mut between: impl FnMut()) {
        let Some(name) = event.get("type").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        // The set is held to the end, as `run` holds it: a reload waits for the dispatch.
        let current = self.current.load();
        let Some(slots) = current.set.index.get(name.as_str()) else {
            return;
        };
        let payload = Arc::new(HostValue::from_json(event));
        for slot in slots.iter() {
            let one: Arc<[Slot]> = Arc::from([slot.clone()]);
            let chain = Notify(payload.clone());
            self.run_slots(&name, &one, &current.scope, chain, self.timeout());
            between();
        }
    }

    /// Dispatches `input`: transforms chain, the first `handled` stops; a plain string
    /// result is a transform.
    pub fn emit_input(&self, text: &str, images: Option<Value>, source: &str) -> InputOutcome {
        self.emit_input_streaming(text, images, source, None)
    }

    /// [`Runner::emit_input`] for an input that arrives while the agent streams: the
    /// payload's `streamingBehavior` (pi 0.77.0) says how it will be delivered, `"steer"` or
    /// `"followUp"` (`None`: the agent is idle, the field is left out).
    pub fn emit_input_streaming(
        &self,
        text: &str,
        images: Option<Value>,
        source: &str,
        streaming_behavior: Option<&'static str>,
    ) -> InputOutcome {
        if !self.has_handlers("input") {
            return InputOutcome::Continue;
        }
        let chain = InputChain {
            text: text.to_owned(),
            images: images.clone(),
            source: source.to_owned(),
            streaming_behavior,
            handled: None,
            cache: Cached::default(),
        };
        let chain = self.run("input", None, chain, self.timeout());
        match chain.handled {
            Some(handled) => InputOutcome::Handled(handled),
            None if chain.text != text || chain.images != images => InputOutcome::Transform {
                text: chain.text,
                images: chain.images,
            },
            None => InputOutcome::Continue,
        }
    }

    /// Dispatches `before_agent_start`: messages accumulate, `systemPrompt` chains (also
    /// through `ctx.set_system_prompt`). `None` when no handler added or changed anything.
    pub fn emit_before_agent_start(
        &self,
        prompt: &str,
        images: Option<Value>,
        system_prompt: &str,
    ) -> Option<BeforeAgentStartOutcome> {
        if !self.has_handlers("before_agent_start") {
            return None;
        }
        let scope = self.new_scope(CallKind::BeforeAgentStart);
        scope.replace_system_prompt(system_prompt);
        let chain = BeforeAgentStartChain {
            prompt: prompt.to_owned(),
            images,
            system_prompt: system_prompt.to_owned(),
            modified: false,
            messages: Vec::new(),
            cache: Cached::default(),
        };
        let chain = self.run("before_agent_start", Some(&scope), chain, self.timeout());
        (chain.modified || !chain.messages.is_empty()).then(|| BeforeAgentStartOutcome {
            messages: chain.messages,
            // pi: only a truthy combined prompt replaces the base prompt; "" restores it.
            system_prompt: Some(chain.system_prompt).filter(|p| chain.modified && !p.is_empty()),
        })
    }

    /// Dispatches `context` over a copy of the messages; each handler sees the previous
    /// one's output; returns the final messages.
    pub fn emit_context(&self, messages: Vec<Value>) -> Vec<Value> {
        if !self.has_handlers("context") {
            return messages;
        }
        let chain = ContextChain {
            messages,
            cache: Cached::default(),
        };
        self.run("context", None, chain, self.timeout()).messages
    }

    /// Dispatches `before_provider_request` over a provider request body; each handler sees
    /// the body as chained so far, and any result (even `null`) replaces it.
    pub fn emit_before_provider_request(&self, body: Value) -> Value {
        if !self.has_handlers("before_provider_request") {
            return body;
        }
        let chain = ProviderChain {
            body,
            cache: Cached::default(),
        };
        self.run("before_provider_request", None, chain, self.timeout())
            .body
    }

    /// The `tool_call` payload: build it once per call.
    pub fn tool_call_payload(tool_call_id: &str, tool_name: &str, input: &Value) -> Arc<HostValue> {
        Arc::new(HostValue::object([
            ("type", HostValue::string("tool_call")),
            ("toolCallId", HostValue::string(tool_call_id)),
            ("toolName", HostValue::string(tool_name)),
            ("input", HostValue::from_json_ref(input)),
        ]))
    }

    /// Dispatches `tool_call`: the first truthy `block` wins; any error, panic or timeout
    /// blocks (fail closed). A result's `input` replaces the tool's arguments: later handlers
    /// see it and the tool runs with it (pi's handlers mutate `event.input` in place). Untimed and inline unless `toolCallTimeout` is set.
    pub fn emit_tool_call(&self, payload: Arc<HostValue>) -> ToolCallOutcome {
        // The outcome is built here, in the caller's return slot, from the two-word chain:
        // no copy of the (large) outcome on the way out.
        match self.tool_call_chain(payload).decided {
            None => ToolCallOutcome::Allow {
                last: None,
                input: None,
            },
            Some(decided) => decided_outcome(*decided).0,
        }
    }

    /// [`Runner::emit_tool_call`] and whether the blocking result also said `terminate`.
    pub(crate) fn emit_tool_call_full(&self, payload: Arc<HostValue>) -> (ToolCallOutcome, bool) {
        match self.tool_call_chain(payload).decided {
            None => (
                ToolCallOutcome::Allow {
                    last: None,
                    input: None,
                },
                false,
            ),
            Some(decided) => decided_outcome(*decided),
        }
    }

    /// Runs the `tool_call` chain over `payload`.
    #[inline(always)]
    fn tool_call_chain(&self, payload: Arc<HostValue>) -> ToolCallChain {
        let chain = ToolCallChain {
            payload,
            decided: None,
        };
        self.run("tool_call", None, chain, self.tool_call_timeout())
    }

    /// Dispatches `tool_result` as a patch chain over content, details and isError (error
    /// results included). `None` when no handler patched anything.
    pub fn emit_tool_result(
        &self,
        tool_call_id: &str,
        tool_name: &str,
        input: &Value,
        content: Value,
        details: Value,
        is_error: bool,
    ) -> Option<ToolResultPatch> {
        if !self.has_handlers("tool_result") {
            return None;
        }
        let chain = ToolResultChain {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            input: input.clone(),
            state: ToolResultPatch {
                content,
                details,
                is_error,
            },
            patched: false,
            cache: Cached::default(),
        };
        let chain = self.run("tool_result", None, chain, self.timeout());
        chain.patched.then_some(chain.state)
    }

    fn emit_rule(&self, event: Value, rule: Rule, string_is_summary: bool) -> Option<Value> {
        let name = event.get("type").and_then(Value::as_str)?.to_owned();
        if !self.has_handlers(&name) {
            return None;
        }
        let chain = RuleChain {
            payload: Arc::new(HostValue::from_json(event)),
            rule,
            string_is_summary,
            result: None,
        };
        self.run(&name, None, chain, self.timeout()).result
    }

    /// Dispatches a `session_before_*` event (`{"type": ..., ...}`): the last truthy
    /// result, except that a truthy `cancel` returns at once. `session_before_compact` also
    /// takes a plain string as a custom summary (`{"compaction": {"summary": ...}}`).
    pub fn emit_session_before(&self, event: Value) -> Option<Value> {
        let compact = event.get("type").and_then(Value::as_str) == Some("session_before_compact");
        self.emit_rule(event, Rule::CancelShortCircuit, compact)
    }

    /// Dispatches the legacy `session` event with a `reason` (pi's older hook API): `before_*` reasons
    /// can cancel like `session_before_*`; others are notifications.
    pub fn emit_legacy_session(&self, reason: &str, fields: Map<String, Value>) -> Option<Value> {
        let mut event = fields;
        event.insert("type".into(), "session".into());
        event.insert("reason".into(), reason.into());
        self.emit_rule(Value::Object(event), Rule::CancelShortCircuit, false)
    }

    /// Dispatches `session.compacting`: the last truthy result wins.
    pub fn emit_session_compacting(&self, mut event: Value) -> Option<Value> {
        event["type"] = "session.compacting".into();
        self.emit_rule(event, Rule::LastWins, false)
    }

    /// Dispatches `user_bash`: the first truthy result wins (`{operations}`, `{result}`, or
    /// the rewrite form `{command, cwd, env}`).
    pub fn emit_user_bash(
        &self,
        command: &str,
        exclude_from_context: bool,
        cwd: &str,
    ) -> Option<Value> {
        let event = json!({"type": "user_bash", "command": command, "excludeFromContext": exclude_from_context, "cwd": cwd});
        self.emit_rule(event, Rule::FirstWins, false)
    }

    /// Dispatches `resources_discover`: paths accumulate, tagged with their plugin.
    pub fn emit_resources_discover(&self, cwd: &str, reason: &str) -> DiscoveredResources {
        if !self.has_handlers("resources_discover") {
            return DiscoveredResources::default();
        }
        let payload = Arc::new(HostValue::from_json(
            json!({"type": "resources_discover", "cwd": cwd, "reason": reason}),
        ));
        let chain = ResourcesChain {
            payload,
            found: DiscoveredResources::default(),
        };
        self.run("resources_discover", None, chain, self.timeout())
            .found
    }

    /// Dispatches a notify event (`{"type": name, ...}`) to the handlers of `plugin` only
    /// (a single-plugin reload's `session_shutdown` and `session_start`), under
    /// `hookTimeout`; errors are reported.
    pub fn emit_to(&self, plugin: &LoadedPlugin, event: Value) {
        let Some(name) = event.get("type").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        let chain = Notify(Arc::new(HostValue::from_json(event)));
        self.run_on_plugin(plugin, &name, chain);
    }

    /// Dispatches `resources_discover` to the handlers of `plugin` only.
    pub fn emit_resources_discover_to(
        &self,
        plugin: &LoadedPlugin,
        cwd: &str,
        reason: &str,
    ) -> DiscoveredResources {
        let payload = Arc::new(HostValue::from_json(
            json!({"type": "resources_discover", "cwd": cwd, "reason": reason}),
        ));
        let chain = ResourcesChain {
            payload,
            found: DiscoveredResources::default(),
        };
        self.run_on_plugin(plugin, "resources_discover", chain)
            .found
    }
}

#[cfg(test)]
mod tests {
    use pi_hooks_abi::ffi::{PI_MODE_PRINT, PI_OK, PiContext, PiResult, PiStatus, PiValue};

    use super::*;
    use crate::plugin::registrations::{EventHandler, UserData};
    use crate::plugin::state::PluginState;
    use crate::runner::Chain;

    unsafe extern "C" fn allow(
        _: *mut std::os::raw::c_void,
        _: *const PiValue,
        _: *mut PiContext,
        _: *mut PiResult,
    ) -> PiStatus {
        PI_OK
    }

    fn empty() -> CallOutcome {
        CallOutcome {
            status: PI_OK,
            result: None,
            detail: None,
        }
    }

    /// The untimed loop skips `absorb` for a successful call that left nothing when the chain
    /// says `EMPTY_CONTINUES`: for those chains, `absorb` must do nothing with such an outcome.
    #[test]
    fn chains_that_skip_an_empty_outcome_would_not_have_changed() {
        let slot = Slot {
            state: PluginState::create("empty".into(), "/empty.so".into()).unwrap(),
            handler: EventHandler {
                event: "tool_call".into(),
                handler: allow,
                user_data: UserData(std::ptr::null_mut()),
            },
        };
        let scope = CallScope::new(CallKind::Event, "", PI_MODE_PRINT);
        assert!(empty().left_nothing());

        const { assert!(ToolCallChain::EMPTY_CONTINUES) };
        let payload = Arc::new(HostValue::from_json(json!({"type": "tool_call"})));
        let mut chain = ToolCallChain {
            payload: payload.clone(),
            decided: None,
        };
        assert_eq!(chain.absorb(&slot, empty(), &scope), Flow::Continue);
        assert!(chain.decided.is_none(), "nothing decided");
        assert!(Arc::ptr_eq(&chain.payload, &payload), "payload unchanged");

        const { assert!(Notify::EMPTY_CONTINUES) };
        let mut notify = Notify(payload.clone());
        assert_eq!(notify.absorb(&slot, empty(), &scope), Flow::Continue);
        assert!(Arc::ptr_eq(&notify.0, &payload));

        // Anything left is not empty: a result, an error, a failed status.
        let mut with_result = empty();
        with_result.result = Some(Box::new(json!({"block": true})));
        assert!(!with_result.left_nothing());
        let mut failed = empty();
        failed.status = pi_hooks_abi::ffi::PI_ERR_PANIC;
        assert!(!failed.left_nothing());
        let mut with_detail = empty();
        with_detail.detail = Some(Box::default());
        assert!(!with_detail.left_nothing());
    }
}
