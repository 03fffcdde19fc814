//! The agent loop, in pi's order (reference pi-hooks.md 2.4, pi-observed.md 3):
//!
//! `input` -> `before_agent_start` -> `agent_start` -> per turn: `turn_start`, the turn's new
//! messages (`message_start`/`message_end`), `context`, the model (`message_start`,
//! `message_update`..., `message_end`), the tool calls, `turn_end` -> ... -> `agent_end`.
//!
//! Tool calls of one assistant message: `tool_execution_start` and `tool_call` for each in
//! source order (a blocked call ends at once with its reason as an error result, and gets no
//! `tool_result`), then the allowed ones run concurrently, each followed by its `tool_result`
//! patch chain and `tool_execution_end` in completion order; the `toolResult` messages are
//! then added in source order.
//!
//! Every event goes to the plugins first, then to the mode's event sink (JSON output, RPC).

mod handle;
pub mod model;
mod plugin_tool;
mod services;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::runner::Runner;
use crate::runner::events::{InputOutcome, ToolCallOutcome};
use crate::session::SessionStore;
use crate::tools::{CancelToken, Tool, ToolInvocation, ToolOutput};
pub use handle::AgentHandle;
use model::{Model, ModelRequest};

/// Milliseconds since the Unix epoch, as pi's timestamps.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Where the mode wants events (JSON lines, RPC).
pub type EventSink = Box<dyn FnMut(&Value) + Send>;

/// The base system prompt.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are an expert coding assistant running inside pi-hooks. \
You help the user by reading files, running commands, editing code and writing new files, using the \
tools available to you.";

/// How the agent runs.
pub struct AgentConfig {
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The base system prompt.
    pub system_prompt: String,
    /// `input.source` for prompts from this mode ("interactive" in print mode, as pi, or "rpc").
    pub input_source: &'static str,
}

/// A prompt a plugin queued while the agent was idle (runs after the current call).
enum PendingRun {
    User(String),
    Message(Value),
}

#[derive(Default)]
struct Queues {
    steer: Vec<Value>,
    follow_up: Vec<Value>,
    next_turn: Vec<Value>,
    runs: VecDeque<PendingRun>,
    /// A plugin command asked for a new session (`Some(parentSession)`): performed once the
    /// command has returned, before the queued runs.
    new_session: Option<Option<String>>,
}

/// State shared by the loop and the services plugins call.
struct Shared {
    session: Mutex<SessionStore>,
    messages: Mutex<Vec<Value>>,
    queues: Mutex<Queues>,
    active_tools: Mutex<Vec<String>>,
    all_tools: Value,
    streaming: AtomicBool,
    abort: Mutex<CancelToken>,
    model_info: Value,
    sink: Mutex<EventSink>,
    ui: Mutex<Option<Arc<dyn crate::services::UiService>>>,
}

impl Shared {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sink(&self, event: &Value) {
        (Self::lock(&self.sink))(event);
    }

    fn abort_token(&self) -> CancelToken {
        Self::lock(&self.abort).clone()
    }
}

/// The part of the agent the tool threads share.
struct Core {
    runner: Arc<Runner>,
    tools: Vec<Arc<dyn Tool>>,
    shared: Arc<Shared>,
    config: AgentConfig,
}

/// The agent: a model, tools, a session, and the plugins' runner.
pub struct Agent {
    model: Box<dyn Model>,
    core: Core,
}

impl Agent {
    /// An agent over `runner`'s plugins with `builtin` tools (a plugin tool with a built-in's
    /// name replaces it; between plugins the first registration wins).
    pub fn new(
        runner: Arc<Runner>,
        model: Box<dyn Model>,
        builtin: Vec<Box<dyn Tool>>,
        session: SessionStore,
        config: AgentConfig,
        sink: EventSink,
    ) -> Agent {
        let tools = plugin_tool::merge_tools(&runner, builtin, &config.cwd);
        let all_tools: Value = tools
            .iter()
            .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()}))
            .collect();
        let messages = session.context_messages();
        let shared = Arc::new(Shared {
            session: Mutex::new(session),
            messages: Mutex::new(messages),
            queues: Mutex::new(Queues::default()),
            active_tools: Mutex::new(tools.iter().map(|t| t.name().to_owned()).collect()),
            all_tools,
            streaming: AtomicBool::new(false),
            abort: Mutex::new(CancelToken::new()),
            model_info: model.info(),
            sink: Mutex::new(sink),
            ui: Mutex::new(None),
        });
        runner.bind_services(Arc::new(services::AgentServices::new(
            shared.clone(),
            Arc::downgrade(&runner),
        )));
        Agent {
            model,
            core: Core {
                runner,
                tools,
                shared,
                config,
            },
        }
    }

    /// The runner.
    pub fn runner(&self) -> &Arc<Runner> {
        &self.core.runner
    }

    /// A handle a mode uses from other threads while this agent runs.
    pub fn handle(&self) -> AgentHandle {
        AgentHandle::new(self.core.shared.clone())
    }

    /// Binds the mode: `session_start`, the legacy `session` start event, then
    /// `resources_discover` with reason "startup".
    pub fn start(&mut self) {
        let core = &self.core;
        core.runner
            .emit(json!({"type": "session_start", "reason": "startup"}));
        core.emit_legacy_session("start");
        core.runner
            .emit_resources_discover(&core.config.cwd.to_string_lossy(), "startup");
        self.drain_runs();
    }

    /// Ends the session: `session_shutdown` and the legacy `session` shutdown event.
    pub fn shutdown(&mut self) {
        let core = &self.core;
        core.runner
            .emit(json!({"type": "session_shutdown", "reason": "quit"}));
        core.emit_legacy_session("shutdown");
    }

    /// Handles one prompt: a plugin command, or `input` and then an agent run. Runs what
    /// plugins queued meanwhile (`send_user_message`, triggered turns) after it.
    pub fn prompt(&mut self, text: &str) {
        let source = self.core.config.input_source;
        self.prompt_from(text, source);
        self.drain_runs();
    }

    fn drain_runs(&mut self) {
        loop {
            let requested = Shared::lock(&self.core.shared.queues).new_session.take();
            if let Some(parent) = requested {
                if let Err(error) = self.replace_session(parent) {
                    self.core.runner.emit_error(&crate::runner::ExtensionError {
                        extension_path: "<runtime>".into(),
                        event: "new_session".into(),
                        error,
                    });
                }
                continue;
            }
            let next = Shared::lock(&self.core.shared.queues).runs.pop_front();
            match next {
                Some(PendingRun::User(text)) => self.prompt_from(&text, "extension"),
                Some(PendingRun::Message(message)) => {
                    let system_prompt = self.core.config.system_prompt.clone();
                    self.run(vec![message], system_prompt, "");
                }
                None => break,
            }
        }
    }

    fn prompt_from(&mut self, text: &str, source: &str) {
        if plugin_tool::run_command(&self.core.runner, text, &self.core.config.cwd) {
            return;
        }
        let (text, images) = match self.core.runner.emit_input(text, None, source) {
            InputOutcome::Handled(_) => return,
            InputOutcome::Transform { text, images } => (text, images),
            InputOutcome::Continue => (text.to_owned(), None),
        };
        let mut content = vec![json!({"type": "text", "text": text})];
        if let Some(Value::Array(images)) = &images {
            content.extend(images.iter().cloned());
        }
        let mut pending = vec![json!({"role": "user", "content": content, "timestamp": now_ms()})];
        pending.append(&mut Shared::lock(&self.core.shared.queues).next_turn);
        let mut system_prompt = self.core.config.system_prompt.clone();
        if let Some(outcome) =
            self.core
                .runner
                .emit_before_agent_start(&text, images, &system_prompt)
        {
            pending.extend(outcome.messages.into_iter().map(custom_message));
            if let Some(prompt) = outcome.system_prompt {
                system_prompt = prompt;
            }
        }
        self.run(pending, system_prompt, &text);
    }

    /// One agent run.
    fn run(&mut self, mut pending: Vec<Value>, system_prompt: String, prompt: &str) {
        let core = &self.core;
        let abort = CancelToken::new();
        *Shared::lock(&core.shared.abort) = abort.clone();
        core.shared.streaming.store(true, Ordering::Release);
        self.model.new_prompt(prompt);
        core.runner.set_system_prompt(&system_prompt);
        core.emit(json!({"type": "agent_start"}));
        let mut new_messages = Vec::new();
        let mut turn_index = 0u64;
        loop {
            core.emit(
                json!({"type": "turn_start", "turnIndex": turn_index, "timestamp": now_ms()}),
            );
            for message in pending.drain(..) {
                core.add_message(&message);
                new_messages.push(message);
            }
            let messages = Shared::lock(&core.shared.messages).clone();
            let context = core.runner.emit_context(messages);
            let tools = core.active_tool_specs();
            let assistant = if abort.is_cancelled() {
                let message = aborted_message(&core.shared.model_info);
                core.emit(json!({"type": "message_start", "message": message}));
                message
            } else {
                let request = ModelRequest {
                    system_prompt: &system_prompt,
                    messages: &context,
                    tools: &tools,
                };
                let mut started = false;
                let mut message = self.model.complete(&request, &mut |event, partial| {
                    if !started {
                        started = true;
                        core.emit(json!({"type": "message_start", "message": partial}));
                    }
                    core.emit(json!({"type": "message_update", "message": partial, "assistantMessageEvent": event}));
                });
                if abort.is_cancelled() {
                    message["stopReason"] = "aborted".into();
                }
                message
            };
            core.end_assistant(&assistant);
            new_messages.push(assistant.clone());
            let stop = assistant["stopReason"]
                .as_str()
                .unwrap_or("stop")
                .to_owned();
            let calls: Vec<Value> = assistant["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "toolCall")
                .cloned()
                .collect();
            let results = if stop == "aborted" || stop == "error" {
                Vec::new()
            } else {
                core.execute_tools(&calls)
            };
            new_messages.extend(results.iter().cloned());
            core.emit(json!({"type": "turn_end", "turnIndex": turn_index, "message": assistant, "toolResults": results}));
            turn_index += 1;
            if stop == "aborted" || stop == "error" {
                break;
            }
            if abort.is_cancelled() {
                // Aborted after the model answered (during the tools): one more turn ends the
                // run with an assistant message whose stopReason is "aborted", as in pi.
                continue;
            }
            let steer = std::mem::take(&mut Shared::lock(&core.shared.queues).steer);
            if !steer.is_empty() {
                pending = steer;
                continue;
            }
            if !calls.is_empty() {
                continue;
            }
            let follow_up = std::mem::take(&mut Shared::lock(&core.shared.queues).follow_up);
            if !follow_up.is_empty() {
                pending = follow_up;
                continue;
            }
            break;
        }
        // As in pi 0.73.1, the agent is not idle yet while `agent_end` handlers run: a
        // followUp (or steer) sent there is queued and delivered inside the next prompt's run,
        // not run on its own; a user message without deliverAs is refused as busy. It is idle
        // before the mode shows `agent_end`, so a client that prompts on reading it is heard.
        let end = json!({"type": "agent_end", "messages": new_messages});
        if core.runner.has_handlers("agent_end") {
            core.runner.emit(end.clone());
        }
        core.shared.streaming.store(false, Ordering::Release);
        core.shared.sink(&end);
    }

    /// Starts a new session, as pi's `newSession`: `session_before_switch` with reason
    /// "new" (and the legacy `session` event with reason "before_clear"), which can cancel
    /// it; otherwise the current session file is closed (its lock released), a new one is
    /// created beside it (in memory when the current one is), with `parent_session` in its
    /// header, the conversation and the queued messages are cleared, and plugins get
    /// `session_switch` `{reason:"new", previousSessionFile}` (and the legacy `session` event
    /// with reason "clear"). `session_start` is not emitted again, as in pi.
    ///
    /// `Ok(true)` when a plugin cancelled it. Refused while a run is in progress. What plugins
    /// queued meanwhile (`send_user_message`...) runs after it.
    pub fn new_session(&mut self, parent_session: Option<String>) -> Result<bool, String> {
        let outcome = self.replace_session(parent_session);
        self.drain_runs();
        outcome
    }

    fn replace_session(&mut self, parent_session: Option<String>) -> Result<bool, String> {
        let core = &self.core;
        if core.shared.streaming.load(Ordering::Acquire) {
            return Err(
                "cannot start a new session while the agent is running; abort the run first".into(),
            );
        }
        let cancelled = |result: Option<Value>| {
            result
                .as_ref()
                .and_then(|r| r.get("cancel"))
                .is_some_and(crate::runner::truthy)
        };
        if core.runner.has_handlers("session_before_switch")
            && cancelled(
                core.runner
                    .emit_session_before(json!({"type": "session_before_switch", "reason": "new"})),
            )
        {
            return Ok(true);
        }
        if core.runner.has_handlers("session")
            && cancelled(
                core.runner
                    .emit_legacy_session("before_clear", core.session_fields()),
            )
        {
            return Ok(true);
        }
        let previous = {
            let mut session = Shared::lock(&core.shared.session);
            let next = match session.path() {
                Some(path) => {
                    let dir = path.parent().unwrap_or(std::path::Path::new("."));
                    SessionStore::create_with_parent(
                        crate::session::new_session_path(dir),
                        &core.config.cwd,
                        parent_session.as_deref(),
                    )
                    .map_err(|e| format!("cannot create the new session: {e}"))?
                }
                None => SessionStore::in_memory(&core.config.cwd),
            };
            // The old store is dropped here: its file is closed and its lock released.
            let old = std::mem::replace(&mut *session, next);
            old.path().map(|p| p.to_string_lossy().into_owned())
        };
        Shared::lock(&core.shared.messages).clear();
        {
            let mut queues = Shared::lock(&core.shared.queues);
            queues.steer.clear();
            queues.follow_up.clear();
            queues.next_turn.clear();
        }
        let current = Shared::lock(&core.shared.session)
            .path()
            .map(|p| p.to_string_lossy().into_owned());
        core.runner.set_session_file(current);
        core.runner.emit(json!({
            "type": "session_switch",
            "reason": "new",
            "previousSessionFile": previous,
        }));
        if core.runner.has_handlers("session") {
            let mut fields = core.session_fields();
            fields.insert("previousSessionFile".into(), previous.into());
            core.runner.emit_legacy_session("clear", fields);
        }
        Ok(false)
    }

    /// The text of the last assistant message.
    pub fn last_assistant_text(&self) -> Option<String> {
        last_assistant_text(&Shared::lock(&self.core.shared.messages))
    }

    /// Aborts the current run (the next check point stops it).
    pub fn abort(&self) {
        self.core.shared.abort_token().cancel();
    }

    /// The session's header line.
    pub fn session_header(&self) -> Value {
        Shared::lock(&self.core.shared.session).header().clone()
    }
}

/// The text of the last assistant message in `messages`.
fn last_assistant_text(messages: &[Value]) -> Option<String> {
    let last = messages.iter().rev().find(|m| m["role"] == "assistant")?;
    let text: Vec<&str> = last["content"]
        .as_array()?
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    Some(text.join(""))
}

/// A `before_agent_start` / `send_message` message as pi stores it.
fn custom_message(message: Value) -> Value {
    let mut out = json!({
        "role": "custom",
        "customType": message.get("customType").cloned().unwrap_or_else(|| "extension".into()),
        "content": message.get("content").cloned().unwrap_or_else(|| "".into()),
        "display": message.get("display").cloned().unwrap_or(Value::Bool(true)),
    });
    if let Some(details) = message.get("details").filter(|d| !d.is_null()) {
        out["details"] = details.clone();
    }
    out["timestamp"] = now_ms().into();
    out
}

fn aborted_message(model: &Value) -> Value {
    json!({
        "role": "assistant", "content": [], "api": model["api"], "provider": model["provider"],
        "model": model["id"], "stopReason": "aborted", "timestamp": now_ms(),
    })
}

impl Core {
    /// Sends an event to the plugins (when any listens), then to the mode.
    fn emit(&self, event: Value) {
        let name = event["type"].as_str().unwrap_or_default();
        if self.runner.has_handlers(name) {
            self.runner.emit(event.clone());
        }
        self.shared.sink(&event);
    }

    /// The legacy `session` event (seed 003) with the session's entries and file; the
    /// entries are copied only when some plugin listens.
    fn emit_legacy_session(&self, reason: &str) {
        if self.runner.has_handlers("session") {
            self.runner
                .emit_legacy_session(reason, self.session_fields());
        }
    }

    fn session_fields(&self) -> Map<String, Value> {
        let session = Shared::lock(&self.shared.session);
        let mut fields = Map::new();
        fields.insert("entries".into(), Value::Array(session.entries().to_vec()));
        fields.insert(
            "sessionFile".into(),
            session
                .path()
                .map_or(Value::Null, |p| p.to_string_lossy().into_owned().into()),
        );
        fields.insert("previousSessionFile".into(), Value::Null);
        fields
    }

    /// Adds a message: `message_start`, the session entry, the agent state, `message_end`.
    fn add_message(&self, message: &Value) {
        self.emit(json!({"type": "message_start", "message": message}));
        self.persist(message);
        self.emit(json!({"type": "message_end", "message": message}));
    }

    /// Ends the assistant message (its start and updates were streamed).
    fn end_assistant(&self, message: &Value) {
        self.persist(message);
        self.emit(json!({"type": "message_end", "message": message}));
    }

    fn persist(&self, message: &Value) {
        Shared::lock(&self.shared.messages).push(message.clone());
        let mut session = Shared::lock(&self.shared.session);
        let written = if message["role"] == "custom" {
            session.append_custom_message(
                message["customType"].as_str().unwrap_or_default(),
                message["content"].clone(),
                message["display"].as_bool().unwrap_or(true),
                message.get("details").cloned(),
            )
        } else {
            session.append_message(message)
        };
        if let Err(error) = written {
            eprintln!("pi-hooks: cannot write the session: {error}");
        }
    }

    fn active_tool_specs(&self) -> Vec<Value> {
        let active = Shared::lock(&self.shared.active_tools).clone();
        self.tools
            .iter()
            .filter(|t| active.iter().any(|a| a == t.name()))
            .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()}))
            .collect()
    }

    fn find_tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let active = Shared::lock(&self.shared.active_tools);
        if !active.iter().any(|a| a == name) {
            return None;
        }
        self.tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Runs the tool calls of one assistant message; returns the toolResult messages in
    /// source order.
    fn execute_tools(&self, calls: &[Value]) -> Vec<Value> {
        let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
        let mut allowed: Vec<(usize, Arc<dyn Tool>)> = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            let (id, name, args) = call_parts(call);
            self.emit(json!({"type": "tool_execution_start", "toolCallId": id, "toolName": name, "args": args}));
            let Some(tool) = self.find_tool(name) else {
                outputs[index] = Some(
                    self.finish_early(call, ToolOutput::error(format!("Tool {name} not found"))),
                );
                continue;
            };
            if let Err(message) = tool.validate(args) {
                outputs[index] = Some(self.finish_early(call, ToolOutput::error(message)));
                continue;
            }
            if self.runner.has_handlers("tool_call")
                && let ToolCallOutcome::Block { reason } = self
                    .runner
                    .emit_tool_call(Runner::tool_call_payload(id, name, args))
            {
                outputs[index] = Some(self.finish_early(call, ToolOutput::error(reason)));
                continue;
            }
            allowed.push((index, tool));
        }
        if allowed.len() == 1 {
            let (index, tool) = allowed.pop().expect("one tool");
            outputs[index] = Some(self.run_tool(tool.as_ref(), &calls[index]));
        } else {
            std::thread::scope(|scope| {
                let running: Vec<_> = allowed
                    .into_iter()
                    .map(|(index, tool)| {
                        (
                            index,
                            scope.spawn(move || self.run_tool(tool.as_ref(), &calls[index])),
                        )
                    })
                    .collect();
                for (index, handle) in running {
                    let output = handle
                        .join()
                        .unwrap_or_else(|_| ToolOutput::error("the tool panicked"));
                    outputs[index] = Some(output);
                }
            });
        }
        calls
            .iter()
            .zip(outputs)
            .map(|(call, output)| {
                let (id, name, _) = call_parts(call);
                let output = output.expect("every call has an output");
                let mut message = json!({"role": "toolResult", "toolCallId": id, "toolName": name, "content": output.content});
                message["details"] = if output.details.is_null() { json!({}) } else { output.details };
                message["isError"] = output.is_error.into();
                message["timestamp"] = now_ms().into();
                self.add_message(&message);
                message
            })
            .collect()
    }

    /// A call that ends before running (blocked, unknown tool): no `tool_result`.
    fn finish_early(&self, call: &Value, output: ToolOutput) -> ToolOutput {
        let (id, name, _) = call_parts(call);
        self.emit(json!({"type": "tool_execution_end", "toolCallId": id, "toolName": name, "result": output.to_json(), "isError": output.is_error}));
        output
    }

    /// Executes one allowed call: updates, the `tool_result` patch chain, the end event.
    fn run_tool(&self, tool: &dyn Tool, call: &Value) -> ToolOutput {
        let (id, name, args) = call_parts(call);
        let cancel = self.shared.abort_token();
        let on_update = |partial: ToolOutput| {
            self.emit(json!({"type": "tool_execution_update", "toolCallId": id, "toolName": name, "args": args, "partialResult": partial.to_json()}));
        };
        let invocation = ToolInvocation {
            tool_call_id: id,
            args,
            cwd: &self.config.cwd,
            cancel: &cancel,
            on_update: &on_update,
        };
        let mut output = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tool.execute(&invocation)
        })) {
            Ok(Ok(output)) => output,
            Ok(Err(message)) => ToolOutput::error(message),
            Err(_) => ToolOutput::error(format!("Tool {name} panicked")),
        };
        if let Some(patch) = self.runner.emit_tool_result(
            id,
            name,
            args,
            Value::Array(output.content.clone()),
            output.details.clone(),
            output.is_error,
        ) {
            output.content = match patch.content {
                Value::Array(blocks) => blocks,
                other => vec![other],
            };
            output.details = patch.details;
            output.is_error = patch.is_error;
        }
        self.emit(json!({"type": "tool_execution_end", "toolCallId": id, "toolName": name, "result": output.to_json(), "isError": output.is_error}));
        output
    }
}

/// `(id, name, arguments)` of a toolCall block.
fn call_parts(call: &Value) -> (&str, &str, &Value) {
    (
        call["id"].as_str().unwrap_or_default(),
        call["name"].as_str().unwrap_or_default(),
        &call["arguments"],
    )
}
