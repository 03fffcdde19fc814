//! RPC commands: one parsed stdin line in, at most one `response` line out, as pi 1.6.0's
//! RPC mode answers (`prompt`, `steer` and `follow_up` with
//! `data.disposition`; `clear_queue`, `get_entries`, `get_tree`,
//! `get_available_thinking_levels`; every failure with the request's `id`). Commands that
//! only read or queue run here, on the input task, so they answer while a prompt runs; a
//! prompt is handed to the agent's thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::ui::RpcUi;
use crate::modes::core::LineWriter;
use pi_hooks_agent::{Agent, AgentHandle, ForkPosition};

/// Work for the agent's thread.
pub type Job = Box<dyn FnOnce(&mut Agent) + Send>;

/// Commands pi has that this host does not offer (thinking levels, queue modes and HTML
/// export).
const NOT_OFFERED: &[&str] = &[
    "set_thinking_level",
    "cycle_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "export_html",
];

/// What the input task needs to answer commands.
pub struct Commands {
    /// Stdout.
    pub out: LineWriter,
    /// The agent's state.
    pub agent: AgentHandle,
    /// The UI sub-protocol.
    pub ui: Arc<RpcUi>,
    /// The agent thread's queue.
    pub jobs: Sender<Job>,
    /// Prompts queued or running on the agent's thread.
    pub prompts: Arc<PromptGate>,
    /// The response of the prompt being started: written when its run starts (`started`)
    /// or once it was handled without one (`handled`).
    pub pending: Arc<std::sync::Mutex<Option<Value>>>,
    /// The session's working directory (`bash` runs there).
    pub cwd: std::path::PathBuf,
    /// The running `bash` command.
    pub bash: Arc<super::bash::BashControl>,
}

/// Whether a prompt is queued or running on the agent's thread (then a new `prompt` needs
/// `streamingBehavior`). A prompt counts from the moment it is accepted until its run's
/// `agent_end` is written, or until its job ends when it started no run (a command, a
/// `handled` input): whichever comes first.
#[derive(Debug, Default)]
pub struct PromptGate {
    busy: AtomicUsize,
    /// Set when the current job's prompt no longer counts.
    finished: std::sync::atomic::AtomicBool,
}

impl PromptGate {
    /// Whether a prompt is queued or running.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    /// A prompt was accepted.
    fn accept(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
    }

    /// The agent's thread starts the accepted prompt.
    fn start(&self) {
        self.finished.store(false, Ordering::Release);
    }

    /// The current prompt no longer counts (its run ended, or its job did); once per prompt.
    pub fn finish(&self) {
        if !self.finished.swap(true, Ordering::AcqRel) {
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// An accepted prompt never reached the agent's thread.
    fn withdraw(&self) {
        self.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The `reload` response's data: the plugins now running (`reloaded` false when the old
/// instance was kept because its new version failed), the failures, the plugins unloaded,
/// and how long it took.
fn reload_data(report: &pi_hooks_host::lifecycle::reload::ReloadAllReport) -> Value {
    json!({
        "plugins": report.plugins.iter().map(|(p, fresh)| json!({
            "name": p.name(), "version": p.version(), "path": p.path, "reloaded": fresh,
        })).collect::<Vec<_>>(),
        "errors": report.errors.iter().map(|e| json!({"path": e.path, "error": e.error})).collect::<Vec<_>>(),
        "untrusted": report.untrusted.iter().map(|u| &u.path).collect::<Vec<_>>(),
        "unloaded": report.unloaded,
        "ms": report.elapsed.as_secs_f64() * 1000.0,
    })
}

/// `{"id"?, "type":"response", "command", "success":true, "data"?}`.
fn success(id: Option<&Value>, command: &str, data: Option<Value>) -> Value {
    let mut line = Map::new();
    if let Some(id) = id {
        line.insert("id".into(), id.clone());
    }
    line.insert("type".into(), "response".into());
    line.insert("command".into(), command.into());
    line.insert("success".into(), true.into());
    if let Some(data) = data {
        line.insert("data".into(), data);
    }
    Value::Object(line)
}

/// `{"id"?, "type":"response", "command"?, "success":false, "error"}`.
fn failure(id: Option<&Value>, command: Option<Value>, error: &str) -> Value {
    let mut line = Map::new();
    if let Some(id) = id {
        line.insert("id".into(), id.clone());
    }
    line.insert("type".into(), "response".into());
    if let Some(command) = command {
        line.insert("command".into(), command);
    }
    line.insert("success".into(), false.into());
    line.insert("error".into(), error.into());
    Value::Object(line)
}

/// How JavaScript's template literal shows `command.type` (`undefined` when absent).
fn js_text(value: Option<&Value>) -> String {
    match value {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| js_text(Some(v)))
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(other) => other.to_string(),
    }
}

/// The error for a command field that is missing or of the wrong type, for example
/// `prompt: "message" must be a string, not a number`.
fn wrong_field(command_name: &str, field: &str, wanted: &str, command: &Value) -> String {
    let found = match command.get(field) {
        None => "missing".to_owned(),
        Some(Value::Null) => "null".to_owned(),
        Some(Value::Bool(_)) => "not a boolean".to_owned(),
        Some(Value::Number(_)) => "not a number".to_owned(),
        Some(Value::String(_)) => "not a string".to_owned(),
        Some(Value::Array(_)) => "not an array".to_owned(),
        Some(Value::Object(_)) => "not an object".to_owned(),
    };
    format!("{command_name}: \"{field}\" must be {wanted}, {found}")
}

/// The `message` of a `prompt`, `steer` or `follow_up` (a string), with `images` checked
/// (absent or an array).
fn message_of<'a>(command_name: &str, command: &'a Value) -> Result<&'a str, String> {
    let Some(text) = command.get("message").and_then(Value::as_str) else {
        return Err(wrong_field(command_name, "message", "a string", command));
    };
    match command.get("images") {
        None | Some(Value::Array(_)) => Ok(text),
        Some(_) => Err(wrong_field(command_name, "images", "an array", command)),
    }
}

impl Commands {
    /// Handles one stdin line.
    pub fn line(&self, line: &str) {
        let parsed: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(error) => {
                let message = pi_hooks_host::serve::framing::parse_error_message(line, &error);
                return self.parse_failure(&message);
            }
        };
        if parsed.is_null() {
            // `null.type` throws in pi's handler, inside its parse try block.
            return self.parse_failure("Cannot read properties of null (reading 'type')");
        }
        let kind = parsed.get("type");
        if kind.and_then(Value::as_str) == Some("extension_ui_response") {
            self.ui.resolve(parsed);
            return;
        }
        let id = parsed.get("id");
        let Some(name) = kind.and_then(Value::as_str) else {
            let error = format!("Unknown command: {}", js_text(kind));
            return self.out.line(&failure(id, kind.cloned(), &error));
        };
        let response = match self.command(name, &parsed, id) {
            Some(Ok(data)) => success(id, name, data),
            Some(Err(error)) => failure(id, Some(name.into()), &error),
            None => return,
        };
        self.out.line(&response);
        if self.agent.shutdown_requested() {
            // A plugin asked to shut down (a timer, say): the agent's thread does it after
            // this command, as pi checks after each response.
            let _ = self.jobs.send(Box::new(|_| {}));
        }
    }

    /// A line over [`pi_hooks_host::serve::framing::MAX_LINE_BYTES`], dropped unread: a `parse` failure
    /// naming its size and the limit.
    pub fn too_long(&self, bytes: usize) {
        self.parse_failure(&format!(
            "line of {bytes} bytes is longer than pi-hooks' limit of {} bytes per line; \
             send the command in less text",
            pi_hooks_host::serve::framing::MAX_LINE_BYTES
        ));
    }

    fn parse_failure(&self, message: &str) {
        let error = format!("Failed to parse command: {message}");
        self.out.line(&failure(None, Some("parse".into()), &error));
    }

    /// Runs a command: `Some(Ok(data))`, `Some(Err(message))`, or `None` when the response
    /// is written elsewhere (later for a prompt, an abort or a bash command). Every failure
    /// carries the request's `id`, an unknown command's too (pi 1.6).
    fn command(
        &self,
        name: &str,
        command: &Value,
        id: Option<&Value>,
    ) -> Option<Result<Option<Value>, String>> {
        let agent = &self.agent;
        Some(Ok(match name {
            "prompt" => return self.prompt(command, id),
            "steer" => return self.queue_input("steer", command, id),
            "follow_up" => return self.queue_input("follow_up", command, id),
            "clear_queue" => Some(agent.clear_queue()),
            "get_available_thinking_levels" => {
                // This host sends no reasoning level: "off" is the only one, as pi lists it
                // for a model without reasoning.
                Some(json!({"levels": ["off"]}))
            }
            "get_entries" => {
                let entries = agent.entries();
                let entries = match command.get("since") {
                    None | Some(Value::Null) => entries,
                    Some(since) => {
                        let Some(at) = entries.iter().position(|e| e["id"] == *since) else {
                            return Some(Err(format!("Entry not found: {}", js_text(Some(since)))));
                        };
                        entries[at + 1..].to_vec()
                    }
                };
                Some(json!({"entries": entries, "leafId": agent.leaf_id()}))
            }
            "get_tree" => {
                self.get_tree(id);
                return None;
            }
            "abort" => {
                self.abort(id.cloned());
                return None;
            }
            "bash" => {
                self.bash(command, id.cloned());
                return None;
            }
            "new_session" => return self.new_session(command, id),
            "switch_session" => {
                let Some(path) = command.get("sessionPath").and_then(Value::as_str) else {
                    return Some(Err(wrong_field(name, "sessionPath", "a string", command)));
                };
                let path = path.to_owned();
                return self.on_agent("switch_session", id, move |agent| {
                    let cancelled = agent.switch_session(&path)?;
                    Ok(Some(json!({"cancelled": cancelled})))
                });
            }
            "fork" => {
                let Some(entry) = command.get("entryId").and_then(Value::as_str) else {
                    return Some(Err(wrong_field(name, "entryId", "a string", command)));
                };
                let entry = entry.to_owned();
                return self.on_agent("fork", id, move |agent| {
                    let outcome = agent.fork(&entry, ForkPosition::Before)?;
                    // pi leaves `text` out (undefined) when a plugin cancelled.
                    let mut data = json!({"cancelled": outcome.cancelled});
                    if let Some(text) = outcome.text {
                        data["text"] = text.into();
                    }
                    Ok(Some(data))
                });
            }
            "clone" => {
                return self.on_agent("clone", id, move |agent| {
                    let Some(leaf) = agent.leaf_id() else {
                        return Err("Cannot clone session: no current entry selected".into());
                    };
                    let outcome = agent.fork(&leaf, ForkPosition::At)?;
                    Ok(Some(json!({"cancelled": outcome.cancelled})))
                });
            }
            "get_fork_messages" => Some(json!({"messages": agent.fork_messages()})),
            "compact" => {
                let instructions = match command.get("customInstructions") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(text)) => Some(text.clone()),
                    Some(_) => {
                        return Some(Err(wrong_field(
                            name,
                            "customInstructions",
                            "a string",
                            command,
                        )));
                    }
                };
                // pi aborts the current run first.
                agent.abort();
                return self.on_agent("compact", id, move |agent| {
                    agent.compact(instructions.as_deref()).map(Some)
                });
            }
            "set_auto_compaction" => {
                let Some(enabled) = command.get("enabled").and_then(Value::as_bool) else {
                    return Some(Err(wrong_field(name, "enabled", "a boolean", command)));
                };
                agent.set_auto_compaction(enabled);
                None
            }
            "set_auto_retry" => {
                let Some(enabled) = command.get("enabled").and_then(Value::as_bool) else {
                    return Some(Err(wrong_field(name, "enabled", "a boolean", command)));
                };
                agent.set_auto_retry(enabled);
                None
            }
            "abort_retry" => {
                agent.abort_retry();
                None
            }
            "set_model" => return self.set_model(command, id),
            // A pi-hooks addition (pi's RPC has no reload): every plugin, as `/reload`.
            "reload" => {
                return self.on_agent("reload", id, |agent| {
                    let report = agent.reload()?;
                    Ok(Some(reload_data(&report)))
                });
            }
            "get_command_completions" => {
                let Some(command_name) = command.get("name").and_then(Value::as_str) else {
                    return Some(Err(wrong_field(name, "name", "a string", command)));
                };
                let prefix = match command.get("prefix") {
                    None | Some(Value::Null) => "",
                    Some(Value::String(prefix)) => prefix.as_str(),
                    Some(_) => return Some(Err(wrong_field(name, "prefix", "a string", command))),
                };
                let (command_name, prefix) = (command_name.to_owned(), prefix.to_owned());
                let (agent, out, id) = (agent.clone(), self.out.clone(), id.cloned());
                // Plugin code: on a thread that may block, not on this input task.
                pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
                    let line = match agent.command_completions(&command_name, &prefix) {
                        Ok(items) => success(
                            id.as_ref(),
                            "get_command_completions",
                            Some(json!({ "completions": items })),
                        ),
                        Err(error) => {
                            failure(id.as_ref(), Some("get_command_completions".into()), &error)
                        }
                    };
                    out.line(&line);
                });
                return None;
            }
            "render_message" => {
                let Some(message) = command.get("message").filter(|m| m.is_object()) else {
                    return Some(Err(wrong_field(name, "message", "an object", command)));
                };
                let expanded = command
                    .get("expanded")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let (message, agent, out, id) = (
                    message.clone(),
                    agent.clone(),
                    self.out.clone(),
                    id.cloned(),
                );
                // Plugin code: on a thread that may block, not on this input task.
                pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
                    let line = match agent.render_message(&message, expanded) {
                        Ok(lines) => success(
                            id.as_ref(),
                            "render_message",
                            Some(json!({ "lines": lines })),
                        ),
                        Err(error) => failure(id.as_ref(), Some("render_message".into()), &error),
                    };
                    out.line(&line);
                });
                return None;
            }
            "cycle_model" => {
                return self.on_agent("cycle_model", id, |agent| {
                    Ok(Some(agent.cycle_model().unwrap_or(Value::Null)))
                });
            }
            "abort_bash" => {
                self.bash.abort();
                None
            }
            "get_state" => Some(self.state()),
            "get_messages" => Some(json!({"messages": agent.messages()})),
            "get_commands" => Some(json!({
                "commands": super::plugin_commands(&agent.plugins())
            })),
            "get_last_assistant_text" => Some(json!({"text": agent.last_assistant_text()})),
            "get_session_stats" => Some(self.stats()),
            "get_available_models" => Some(json!({"models": agent.available_models()})),
            "set_session_name" => {
                let Some(name) = command.get("name").and_then(Value::as_str) else {
                    return Some(Err(wrong_field(name, "name", "a string", command)));
                };
                let name = name.trim();
                if name.is_empty() {
                    return Some(Err("Session name cannot be empty".into()));
                }
                if let Err(error) = agent.set_session_name(name) {
                    return Some(Err(error));
                }
                None
            }
            _ if NOT_OFFERED.contains(&name) => {
                return Some(Err(format!(
                    "{name} is not supported by pi-hooks (this host has no such feature yet)"
                )));
            }
            _ => return Some(Err(format!("Unknown command: {name}"))),
        }))
    }

    /// `prompt`: while a run is in progress, queued by `streamingBehavior`; otherwise handed
    /// to the agent's thread, which answers after preflight (before the run's first event,
    /// or when a plugin command handled it).
    fn prompt(&self, command: &Value, id: Option<&Value>) -> Option<Result<Option<Value>, String>> {
        let text = match message_of("prompt", command) {
            Ok(text) => text,
            Err(error) => return Some(Err(error)),
        };
        let streaming = self.agent.is_streaming();
        // A command behind queued prompts that have not started a run yet keeps its place in
        // the queue (the normal path below), so commands run in the order they were sent.
        let queued_command = !streaming && self.agent.is_plugin_command(text);
        if (self.prompts.busy() || streaming) && !queued_command {
            // As pi: a plugin command runs at once, `input` handlers see the text, then it is
            // queued by `streamingBehavior`. On a thread of its own: a command may wait for a
            // dialog, whose answer this input task must go on reading.
            let agent = self.agent.clone();
            let out = self.out.clone();
            let id = id.cloned();
            let text = text.to_owned();
            let images = command.get("images").cloned();
            let behavior = command
                .get("streamingBehavior")
                .and_then(Value::as_str)
                .map(str::to_owned);
            pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
                let line =
                    match agent.prompt_while_running(&text, images.as_ref(), behavior.as_deref()) {
                        Ok(disposition) => {
                            success(id.as_ref(), "prompt", Some(disposition_data(disposition)))
                        }
                        Err(error) => failure(id.as_ref(), Some("prompt".into()), &error),
                    };
                out.line(&line);
            });
            return None;
        }
        let response = success(id, "prompt", Some(disposition_data("started")));
        let text = text.to_owned();
        let images = command.get("images").cloned();
        let out = self.out.clone();
        let prompts = self.prompts.clone();
        let pending = self.pending.clone();
        self.prompts.accept();
        let job: Job = Box::new(move |agent| {
            prompts.start();
            *pending.lock().unwrap_or_else(|e| e.into_inner()) = Some(response);
            // A run starts: answered after preflight, as pi 1.6 answers, "started", before
            // the run's `agent_start` reaches plugins or the client.
            let started = {
                let (pending, out) = (pending.clone(), out.clone());
                Box::new(move || {
                    if let Some(response) = pending.lock().unwrap_or_else(|e| e.into_inner()).take()
                    {
                        out.line(&response);
                    }
                })
            };
            agent.prompt_with_images_then(&text, images.as_ref(), started, || {
                // No run (a command, a handled input): the prompt is done before its
                // response is read, so the client's next prompt is accepted. It is answered
                // as pi 1.6 answers it, "handled", before what plugins queued meanwhile runs.
                prompts.finish();
                if let Some(mut response) = pending.lock().unwrap_or_else(|e| e.into_inner()).take()
                {
                    response["data"] = disposition_data("handled");
                    out.line(&response);
                }
            });
        });
        if self.jobs.send(job).is_err() {
            self.prompts.withdraw();
            return Some(Err("the agent has stopped".into()));
        }
        None
    }

    /// `steer` / `follow_up` (`name`), as pi 1.6's: a plugin command's text is refused, then
    /// `input` handlers see the text and it is queued; answered with `data.disposition`
    /// (`"queued"` or `"handled"`). With `input` handlers it runs on a thread that may block
    /// (a handler may wait for a dialog, whose answer this input task must go on reading).
    fn queue_input(
        &self,
        name: &'static str,
        command: &Value,
        id: Option<&Value>,
    ) -> Option<Result<Option<Value>, String>> {
        let text = match message_of(name, command) {
            Ok(text) => text,
            Err(error) => return Some(Err(error)),
        };
        if let Some(refused) = queued_plugin_command(&self.agent, text) {
            return Some(Err(refused));
        }
        let steer = name == "steer";
        let images = command.get("images");
        if !self.agent.has_input_handlers() {
            let disposition = self.agent.queue_input(text, images, steer);
            return Some(Ok(Some(disposition_data(disposition))));
        }
        let (agent, out, id) = (self.agent.clone(), self.out.clone(), id.cloned());
        let (text, images) = (text.to_owned(), images.cloned());
        pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
            let disposition = agent.queue_input(&text, images.as_ref(), steer);
            out.line(&success(
                id.as_ref(),
                name,
                Some(disposition_data(disposition)),
            ));
        });
        None
    }

    /// `get_tree`: pi's `getTree()` as `{tree, leafId}`. A session is a chain as deep as it
    /// is long, and JSON is written (and dropped) recursively: the answer is built and
    /// written on a thread with a stack sized for that, not on this input task.
    fn get_tree(&self, id: Option<&Value>) {
        let entries = self.agent.entries();
        let leaf = self.agent.leaf_id();
        let (out, request) = (self.out.clone(), id.cloned());
        let stack = 64 * 1024 * 1024 + entries.len() * 4096;
        let spawned = std::thread::Builder::new()
            .name("pi-hooks-rpc-tree".into())
            .stack_size(stack)
            .spawn(move || {
                let tree = super::tree::session_tree(entries);
                let line = success(
                    request.as_ref(),
                    "get_tree",
                    Some(json!({"tree": tree, "leafId": leaf})),
                );
                out.line(&line);
            });
        if let Err(error) = spawned {
            self.out.line(&failure(
                id,
                Some("get_tree".into()),
                &format!("get_tree: cannot start a thread: {error}"),
            ));
        }
    }

    /// `new_session{parentSession?}`: run on the agent's thread, answered with
    /// `{"cancelled": bool}` once plugins have seen it. Refused while a prompt is queued or
    /// running.
    fn new_session(
        &self,
        command: &Value,
        id: Option<&Value>,
    ) -> Option<Result<Option<Value>, String>> {
        let parent = match command.get("parentSession") {
            None | Some(Value::Null) => None,
            Some(Value::String(parent)) => Some(parent.clone()),
            Some(_) => {
                return Some(Err(wrong_field(
                    "new_session",
                    "parentSession",
                    "a string",
                    command,
                )));
            }
        };
        self.on_agent("new_session", id, move |agent| {
            let cancelled = agent.new_session(parent)?;
            Ok(Some(json!({"cancelled": cancelled})))
        })
    }

    /// `set_model{provider, modelId}`: pi's `Model not found` error for a model the provider
    /// does not offer; while a prompt runs, the model is used from the next model call on.
    fn set_model(
        &self,
        command: &Value,
        id: Option<&Value>,
    ) -> Option<Result<Option<Value>, String>> {
        let field = |name: &str| command.get(name).and_then(Value::as_str).map(str::to_owned);
        let (Some(provider), Some(model_id)) = (field("provider"), field("modelId")) else {
            let missing = if field("provider").is_none() {
                "provider"
            } else {
                "modelId"
            };
            return Some(Err(wrong_field("set_model", missing, "a string", command)));
        };
        if self.prompts.busy() || self.agent.is_streaming() {
            return Some(self.agent.request_model(&provider, &model_id).map(Some));
        }
        self.on_agent("set_model", id, move |agent| {
            agent.set_model(&provider, &model_id).map(Some)
        })
    }

    /// Runs `work` on the agent's thread (after any queued prompt) and answers with its
    /// result. Refused while a prompt is queued or running: session operations wait for an
    /// idle agent, as pi's do after aborting.
    fn on_agent(
        &self,
        name: &'static str,
        id: Option<&Value>,
        work: impl FnOnce(&mut Agent) -> Result<Option<Value>, String> + Send + 'static,
    ) -> Option<Result<Option<Value>, String>> {
        if name != "compact" && (self.prompts.busy() || self.agent.is_streaming()) {
            return Some(Err(format!(
                "{name}: the agent is running a prompt; send abort first, then {name}"
            )));
        }
        let out = self.out.clone();
        let id = id.cloned();
        let job: Job = Box::new(move |agent| {
            let line = match work(agent) {
                Ok(data) => success(id.as_ref(), name, data),
                Err(error) => failure(id.as_ref(), Some(name.into()), &error),
            };
            out.line(&line);
        });
        if self.jobs.send(job).is_err() {
            return Some(Err("the agent has stopped".into()));
        }
        None
    }

    /// `abort`: stops the run and answers once the agent is idle, as pi awaits it.
    fn abort(&self, id: Option<Value>) {
        self.agent.abort();
        let out = self.out.clone();
        let prompts = self.prompts.clone();
        let agent = self.agent.clone();
        pi_hooks_host::services::runtime::handle().spawn(async move {
            while prompts.busy() || agent.is_streaming() {
                agent.abort();
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            out.line(&success(id.as_ref(), "abort", None));
        });
    }

    /// `bash{command, excludeFromContext?}`, as pi 1.6's: plugins' `user_bash` first (a
    /// `{result}` answers it without running anything; `{command, cwd, env}` changes what
    /// runs, as for `!command` in the terminal), then the shell, its output streamed as `bash_execution_update {id, delta}`
    /// lines (the request's `id`, left out when it has none); answered with pi's
    /// `BashResult` once the command has ended, recorded with `excludeFromContext` when asked.
    fn bash(&self, command: &Value, id: Option<Value>) {
        let Some(text) = command.get("command").and_then(Value::as_str) else {
            let error = wrong_field("bash", "command", "a string", command);
            return self
                .out
                .line(&failure(id.as_ref(), Some("bash".into()), &error));
        };
        let excluded = match command.get("excludeFromContext") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(excluded)) => *excluded,
            Some(_) => {
                let error = wrong_field("bash", "excludeFromContext", "a boolean", command);
                return self
                    .out
                    .line(&failure(id.as_ref(), Some("bash".into()), &error));
            }
        };
        let updates = {
            let (out, id) = (self.out.clone(), id.clone());
            Box::new(move |delta: &str| {
                let mut line = Map::new();
                line.insert("type".into(), "bash_execution_update".into());
                if let Some(id) = &id {
                    line.insert("id".into(), id.clone());
                }
                line.insert("delta".into(), delta.into());
                out.line(&Value::Object(line));
            })
        };
        let run = super::bash::BashRun {
            command: text.to_owned(),
            cwd: self.cwd.clone(),
            env: Vec::new(),
            exclude_from_context: excluded,
        };
        let (agent, out, bash) = (self.agent.clone(), self.out.clone(), self.bash.clone());
        if !agent.has_handlers("user_bash") {
            // Started here, so an `abort_bash` read after this line reaches it.
            let running = bash.execute_streaming(run, agent, updates);
            pi_hooks_host::services::runtime::handle().spawn(async move {
                let line = match running.await {
                    Ok(result) => success(id.as_ref(), "bash", Some(result)),
                    Err(error) => failure(id.as_ref(), Some("bash".into()), &error),
                };
                out.line(&line);
            });
            return;
        }
        pi_hooks_host::services::runtime::handle().spawn(async move {
            // Plugin code: on a thread that may block (a handler may open a dialog).
            let answer = {
                let (agent, text) = (agent.clone(), run.command.clone());
                tokio::task::spawn_blocking(move || agent.user_bash(&text, excluded))
                    .await
                    .ok()
                    .flatten()
            };
            let result = match answer {
                Some(answer) if answer.get("result").is_some_and(Value::is_object) => {
                    let result = answer["result"].clone();
                    super::bash::record(&agent, &run.command, result, excluded).await
                }
                answer => {
                    // `{command, cwd, env}`: what runs instead (as `!command` in the terminal).
                    let answer = answer.unwrap_or_default();
                    let run = super::bash::BashRun {
                        command: answer["command"]
                            .as_str()
                            .map_or(run.command, str::to_owned),
                        cwd: answer["cwd"]
                            .as_str()
                            .map_or(run.cwd, std::path::PathBuf::from),
                        env: answer["env"]
                            .as_object()
                            .into_iter()
                            .flatten()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect(),
                        exclude_from_context: excluded,
                    };
                    bash.execute_streaming(run, agent, updates).await
                }
            };
            let line = match result {
                Ok(result) => success(id.as_ref(), "bash", Some(result)),
                Err(error) => failure(id.as_ref(), Some("bash".into()), &error),
            };
            out.line(&line);
        });
    }

    /// pi's `RpcSessionState`.
    fn state(&self) -> Value {
        let agent = &self.agent;
        let (file, id, name) = agent.session_info();
        let mut state = json!({
            "model": agent.model(),
            "thinkingLevel": "off",
            "isStreaming": agent.is_streaming(),
            "isCompacting": agent.is_compacting(),
            "steeringMode": "one-at-a-time",
            "followUpMode": "one-at-a-time",
            "sessionFile": file,
            "sessionId": id,
        });
        if let Some(name) = name {
            state["sessionName"] = name.into();
        }
        state["autoCompactionEnabled"] = agent.auto_compaction().into();
        state["messageCount"] = agent.messages().len().into();
        state["pendingMessageCount"] = agent.pending_message_count().into();
        state
    }

    /// pi's `SessionStats`: message counts, token sums and cost from the assistant usage.
    fn stats(&self) -> Value {
        let messages = self.agent.messages();
        let (file, id, _) = self.agent.session_info();
        let count = |role: &str| messages.iter().filter(|m| m["role"] == role).count();
        let assistant = || messages.iter().filter(|m| m["role"] == "assistant");
        let tool_calls: usize = assistant()
            .filter_map(|m| m["content"].as_array())
            .map(|blocks| blocks.iter().filter(|b| b["type"] == "toolCall").count())
            .sum();
        let sum =
            |field: &str| -> u64 { assistant().filter_map(|m| m["usage"][field].as_u64()).sum() };
        let (input, output) = (sum("input"), sum("output"));
        let (cache_read, cache_write) = (sum("cacheRead"), sum("cacheWrite"));
        let cost: f64 = assistant()
            .filter_map(|m| m["usage"]["cost"]["total"].as_f64())
            .sum();
        json!({
            "sessionFile": file,
            "sessionId": id,
            "userMessages": count("user"),
            "assistantMessages": count("assistant"),
            "toolCalls": tool_calls,
            "toolResults": count("toolResult"),
            "totalMessages": messages.len(),
            "tokens": {
                "input": input,
                "output": output,
                "cacheRead": cache_read,
                "cacheWrite": cache_write,
                "total": input + output + cache_read + cache_write,
            },
            "cost": cost,
        })
    }
}

/// `{"disposition": …}`: pi 1.6's `data` of a `prompt`, `steer` or `follow_up` response.
fn disposition_data(disposition: &str) -> Value {
    json!({ "disposition": disposition })
}

/// pi's refusal of a plugin command's text as a `steer` or `follow_up` message (a command
/// runs, it is never queued as text), or `None` for any other text.
fn queued_plugin_command(agent: &pi_hooks_agent::AgentHandle, text: &str) -> Option<String> {
    let rest = text.strip_prefix('/')?;
    let name = rest.split(' ').next().unwrap_or_default();
    agent
        .commands()
        .iter()
        .any(|(command, _, _)| command == name)
        .then(|| {
            format!(
                "Extension command \"/{name}\" cannot be queued. Use prompt() or execute the command when not streaming."
            )
        })
}
