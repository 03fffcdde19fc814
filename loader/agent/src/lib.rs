//! The agent loop, in pi 0.73.1's order:
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

mod boundary;
mod compaction;
mod handle;
pub mod model;
mod plugin_tool;
mod reload;
mod retry;
mod services;
mod session_ops;
mod tool_calls;
pub mod tools;
mod toolset;
mod tree;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::tools::{CancelToken, Tool};
pub use handle::AgentHandle;
use model::{Model, ModelRequest};
use pi_hooks_host::runner::Runner;
use pi_hooks_host::runner::events::InputOutcome;
pub use pi_hooks_host::services::{SessionOp, TreeOptions};
use pi_hooks_session::SessionStore;
use session_ops::apply_model_request;
pub use session_ops::{ForkOutcome, ForkPosition};
pub use tree::TreeOutcome;

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

/// pi's error for a prompt while a run is in progress without `streamingBehavior`.
pub const ALREADY_PROCESSING: &str = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";

/// How the agent runs.
pub struct AgentConfig {
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The base system prompt.
    pub system_prompt: String,
    /// `input.source` for prompts from this mode ("interactive" in print mode, as pi, or "rpc").
    pub input_source: &'static str,
    /// Compaction settings (settings.json `compaction`).
    pub compaction: pi_hooks_session::compaction::CompactionSettings,
    /// Automatic retry of transient model errors (settings.json `retry`).
    pub retry: pi_hooks_host::plugin_files::settings::RetrySettings,
    /// Where plugins were discovered, for `/reload` (`None`: reload is refused).
    pub discovery: Option<pi_hooks_host::plugin_files::discover::DiscoveryOptions>,
}

/// A prompt a plugin queued while the agent was idle (runs after the current call).
enum PendingRun {
    /// A user message: its text and images (content blocks, or `None`).
    User(String, Option<Value>),
    Message(Value),
}

#[derive(Default)]
struct Queues {
    steer: Vec<Value>,
    follow_up: Vec<Value>,
    /// User messages plugins sent while the agent streamed (`send_user_message` with a
    /// `deliverAs`), waiting for their `input` event before they join `steer` or `follow_up`:
    /// `(text, images, PI_DELIVER_*)`.
    user_pending: Vec<(String, Option<Value>, u32)>,
    next_turn: Vec<Value>,
    /// Custom messages a plugin sent with `triggerTurn: false` while the agent ran: appended
    /// once the turn ends (after `turn_end`'s handlers) or the run does, never between a tool
    /// call and its result (pi 1.6's `_pendingCustomMessages`).
    pending_custom: Vec<Value>,
    runs: VecDeque<PendingRun>,
    /// Session operations plugin commands asked for (`(plugin path, operation)`): performed
    /// once the command has returned, before the queued runs.
    session_ops: VecDeque<(String, SessionOp)>,
    /// A model a plugin or the mode selected, applied before the next model call (or once
    /// the current command or prompt is over): `(model, source)`.
    model_request: Option<(Value, &'static str)>,
}

/// State shared by the loop and the services plugins call.
struct Shared {
    session: Mutex<SessionStore>,
    messages: Mutex<Vec<Value>>,
    queues: Mutex<Queues>,
    active_tools: Mutex<Vec<String>>,
    /// `[{name, description, parameters}]` of every tool (updated with the tool set).
    all_tools: Mutex<Value>,
    streaming: AtomicBool,
    abort: Mutex<CancelToken>,
    /// The selected model (pi's `Model` object).
    model_info: Mutex<Value>,
    /// Every model the provider offers.
    available_models: Vec<Value>,
    /// Whether a compaction is running (`get_state`'s `isCompacting`).
    compacting: AtomicBool,
    /// A plugin command's `fork` happened: the text of the user message forked off (empty
    /// for a fork at an entry that is not one), for the interactive mode to put back into
    /// its editor (see [`AgentHandle::take_forked_text`]).
    forked_text: Mutex<Option<String>>,
    /// Whether the context is compacted automatically when it nears the context window.
    auto_compaction: AtomicBool,
    /// Whether a run that failed with a transient error is retried (RPC `set_auto_retry`).
    auto_retry: AtomicBool,
    /// The retry attempt in progress (0: none), see `retry.rs`.
    retry_attempt: std::sync::atomic::AtomicU32,
    /// Cancels the wait before a retry (RPC `abort_retry`, and any abort).
    retry_cancel: Mutex<CancelToken>,
    /// A plugin asked the host to shut down (`PiContextApi::shutdown`).
    shutdown_requested: AtomicBool,
    sink: Mutex<EventSink>,
    /// The texts of the `steer` and `follow_up` messages a client queued and the run has not
    /// taken yet, for pi's `queue_update` events (see [`Shared::queue_update`]).
    queued_texts: Mutex<QueuedTexts>,
    ui: Mutex<Option<Arc<dyn pi_hooks_host::services::UiService>>>,
    /// How a mode that stays up between prompts (RPC) is told that plugins queued work while
    /// the agent was idle (a timer's `send_user_message`): it then calls [`Agent::run_queued`].
    waker: Mutex<Option<Waker>>,
}

/// See `Shared::waker`.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// See `Shared::queued_texts`.
#[derive(Default)]
struct QueuedTexts {
    steering: Vec<String>,
    follow_up: Vec<String>,
}

impl Shared {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `event` to the mode. As pi does, a user message that a client queued with
    /// `steer` or `follow_up` leaves the queue when its `message_start` goes out, and a
    /// `queue_update` saying so goes out just before it.
    fn sink(&self, event: &Value) {
        let mut sink = Self::lock(&self.sink);
        if event["type"] == "message_start" && event["message"]["role"] == "user" {
            let text = session_ops::user_text(&event["message"]["content"]);
            let mut queued = Self::lock(&self.queued_texts);
            let taken = match queued.steering.iter().position(|t| *t == text) {
                Some(at) => Some(queued.steering.remove(at)),
                None => queued
                    .follow_up
                    .iter()
                    .position(|t| *t == text)
                    .map(|at| queued.follow_up.remove(at)),
            };
            if taken.is_some() {
                sink(&queue_update_event(&queued));
            }
        }
        sink(event)
    }

    /// Records a client's `steer` (or `follow_up`) text and tells the mode with pi's
    /// `queue_update {steering, followUp}` (the texts still waiting, in order).
    fn queue_update(&self, text: &str, steering: bool) {
        let mut sink = Self::lock(&self.sink);
        let mut queued = Self::lock(&self.queued_texts);
        if steering {
            queued.steering.push(text.to_owned());
        } else {
            queued.follow_up.push(text.to_owned());
        }
        sink(&queue_update_event(&queued));
    }

    /// Empties the texts a client queued (RPC `clear_queue`), tells the mode with an empty
    /// `queue_update`, and gives the texts back as `(steering, followUp)`.
    fn clear_queued_texts(&self) -> (Vec<String>, Vec<String>) {
        let mut sink = Self::lock(&self.sink);
        let mut queued = Self::lock(&self.queued_texts);
        let taken = std::mem::take(&mut *queued);
        sink(&queue_update_event(&queued));
        (taken.steering, taken.follow_up)
    }

    /// Appends a plugin's custom message outside a turn (a `custom_message` entry) and shows
    /// it to the mode (`message_start`, `message_end`).
    fn append_custom_message(&self, message: &Value) -> Result<(), String> {
        Self::lock(&self.messages).push(message.clone());
        Self::lock(&self.session)
            .append_custom_message(
                message["customType"].as_str().unwrap_or_default(),
                message["content"].clone(),
                message["display"].as_bool().unwrap_or(true),
                message.get("details").cloned(),
            )
            .map_err(|e| e.to_string())?;
        self.sink(&serde_json::json!({"type": "message_start", "message": message}));
        self.sink(&serde_json::json!({"type": "message_end", "message": message}));
        Ok(())
    }

    /// Appends the custom messages that waited for the end of a turn or run
    /// ([`Queues::pending_custom`]).
    fn flush_pending_custom(&self) {
        let pending = std::mem::take(&mut Self::lock(&self.queues).pending_custom);
        for message in pending {
            if let Err(error) = self.append_custom_message(&message) {
                eprintln!("pi-hooks: cannot write the session: {error}");
            }
        }
    }

    /// A session entry was appended outside a run's messages (a plugin's `append_entry`):
    /// pi 1.6's `entry_appended {entry}` line for the mode.
    fn entry_appended(&self, id: &str) {
        let entry = Self::lock(&self.session).entry(id).cloned();
        if let Some(entry) = entry {
            self.sink(&serde_json::json!({"type": "entry_appended", "entry": entry}));
        }
    }

    /// The session's name changed: pi 1.6's `session_info_changed {name?}` line for the mode
    /// (`name` left out when the session has none).
    fn session_info_changed(&self) {
        let name = Self::lock(&self.session).session_name();
        let mut event = serde_json::json!({"type": "session_info_changed"});
        if let Some(name) = name {
            event["name"] = name.into();
        }
        self.sink(&event);
    }

    fn abort_token(&self) -> CancelToken {
        Self::lock(&self.abort).clone()
    }

    /// Tells the mode that queued work waits (see `waker`).
    fn wake(&self) {
        let waker = Self::lock(&self.waker).clone();
        if let Some(waker) = waker {
            waker();
        }
    }

    fn model_info(&self) -> Value {
        Self::lock(&self.model_info).clone()
    }

    fn is_streaming(&self) -> bool {
        self.streaming.load(Ordering::Acquire)
    }
}

/// The part of the agent the tool threads share.
struct Core {
    runner: Arc<Runner>,
    /// The built-in tools (plugin tools of the same name replace them).
    builtin: Vec<Arc<dyn Tool>>,
    /// The merged tools, kept in step with the plugin set.
    toolset: Mutex<toolset::ToolSet>,
    shared: Arc<Shared>,
    config: AgentConfig,
}

/// The agent: a model, tools, a session, and the plugins' runner.
pub struct Agent {
    model: Box<dyn Model>,
    core: Core,
    /// The `--watch` watcher, when started.
    watching: Option<reload::Watching>,
    /// A context overflow was already answered by one compaction and retry since the last
    /// user prompt (pi's `_overflowRecoveryAttempted`).
    overflow_recovery_attempted: bool,
    /// How many runs are in progress on this thread: a retry or an overflow recovery runs
    /// inside the run it continues, and only the outermost one settles (`agent_settled`).
    run_depth: u32,
    /// Called once when the prompt being handled starts its run (see
    /// [`Agent::prompt_with_images_then`]).
    run_started: Option<Box<dyn FnOnce() + Send>>,
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
        let mut model = model;
        model.set_headers_hook(headers_hook(&runner));
        let builtin: Vec<Arc<dyn Tool>> = builtin.into_iter().map(Arc::from).collect();
        let tools = plugin_tool::merge_tools(&runner, &builtin, &config.cwd);
        let all_tools = toolset::describe(&tools);
        let tools_key = (runner.generation(), runner.session_file());
        let messages = session.context_messages();
        let shared = Arc::new(Shared {
            session: Mutex::new(session),
            messages: Mutex::new(messages),
            queues: Mutex::new(Queues::default()),
            active_tools: Mutex::new(tools.iter().map(|t| t.name().to_owned()).collect()),
            all_tools: Mutex::new(all_tools),
            streaming: AtomicBool::new(false),
            abort: Mutex::new(CancelToken::new()),
            model_info: Mutex::new(model.info()),
            available_models: model.available(),
            compacting: AtomicBool::new(false),
            forked_text: Mutex::new(None),
            auto_compaction: AtomicBool::new(config.compaction.enabled),
            auto_retry: AtomicBool::new(config.retry.enabled),
            retry_attempt: std::sync::atomic::AtomicU32::new(0),
            retry_cancel: Mutex::new(CancelToken::new()),
            shutdown_requested: AtomicBool::new(false),
            sink: Mutex::new(sink),
            queued_texts: Mutex::default(),
            ui: Mutex::new(None),
            waker: Mutex::new(None),
        });
        runner.bind_services(Arc::new(services::AgentServices::new(
            shared.clone(),
            Arc::downgrade(&runner),
        )));
        Agent {
            model,
            watching: None,
            overflow_recovery_attempted: false,
            run_depth: 0,
            run_started: None,
            core: Core {
                runner,
                builtin,
                toolset: toolset::ToolSet::new(tools_key, tools),
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
        AgentHandle::new(
            self.core.shared.clone(),
            self.core.runner.clone(),
            self.core.config.cwd.clone(),
            self.core.config.input_source,
        )
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
        self.prompt_with_images(text, None);
    }

    /// [`Agent::prompt`] with images (RPC `prompt`'s `images`: `{type:"image", data,
    /// mimeType}` blocks): as in pi they reach the `input` event, `before_agent_start` and the
    /// user message after its text.
    pub fn prompt_with_images(&mut self, text: &str, images: Option<&Value>) {
        self.prompt_with_images_then(text, images, Box::new(|| {}), || {});
    }

    /// [`Agent::prompt_with_images`] with pi 1.6's two moments of a prompt: `started` is
    /// called when the prompt starts a run (after `input` and `before_agent_start`, before
    /// `agent_start` reaches anyone: pi's `preflightResult("started")`), `own_done` once the
    /// prompt itself is over (its run has settled, or a command or an `input` handler
    /// handled it and `started` was never called), before what plugins queued meanwhile
    /// runs. RPC answers the prompt at one of the two.
    pub fn prompt_with_images_then(
        &mut self,
        text: &str,
        images: Option<&Value>,
        started: Box<dyn FnOnce() + Send>,
        own_done: impl FnOnce(),
    ) {
        let source = self.core.config.input_source;
        let images = images.filter(|i| i.as_array().is_some_and(|a| !a.is_empty()));
        self.run_started = Some(started);
        self.prompt_from(text, source, images.cloned());
        self.run_started = None;
        // A plugin command's session operations belong to it (pi awaits them inside the
        // command): done before the prompt counts as over.
        self.drain_session_ops();
        own_done();
        self.drain_runs();
    }

    /// Performs the session operations plugin commands asked for (a model selection first).
    fn drain_session_ops(&mut self) {
        loop {
            self.apply_model_request();
            let op = Shared::lock(&self.core.shared.queues)
                .session_ops
                .pop_front();
            let Some((plugin, op)) = op else { break };
            self.perform_requested(&plugin, op);
        }
    }

    /// Runs what plugins queued while the agent was idle (a timer's `send_user_message`, a
    /// `send_message` with `triggerTurn`, a timer's `compact`), as pi starts such a run at
    /// once. Modes that stay up between prompts (RPC) call it when their waker
    /// ([`AgentHandle::set_waker`]) is called.
    pub fn run_queued(&mut self) {
        self.drain_runs();
    }

    /// Runs the steering or follow-up messages a client queued that no run took (queued just
    /// as a run ended, after its last look at the queues) as a run of their own, at once, as
    /// pi's `continue()` runs queued messages; gives whether it started one. Steering messages
    /// go first, as in a run.
    pub fn run_left_queued(&mut self) -> bool {
        let queued = {
            let mut queues = Shared::lock(&self.core.shared.queues);
            match std::mem::take(&mut queues.steer) {
                steer if !steer.is_empty() => steer,
                _ => std::mem::take(&mut queues.follow_up),
            }
        };
        if queued.is_empty() {
            return false;
        }
        let system_prompt = self.core.config.system_prompt.clone();
        self.run(queued, system_prompt, "");
        true
    }

    /// Runs what plugins queued: session operations first, then prompts and triggered turns,
    /// until nothing is left. A model selection is applied first.
    fn drain_runs(&mut self) {
        loop {
            self.apply_model_request();
            let op = Shared::lock(&self.core.shared.queues)
                .session_ops
                .pop_front();
            if let Some((plugin, op)) = op {
                self.perform_requested(&plugin, op);
                continue;
            }
            let next = Shared::lock(&self.core.shared.queues).runs.pop_front();
            match next {
                Some(PendingRun::User(text, images)) => {
                    self.prompt_from(&text, "extension", images)
                }
                Some(PendingRun::Message(message)) => {
                    let system_prompt = self.core.config.system_prompt.clone();
                    self.run(vec![message], system_prompt, "");
                }
                None => break,
            }
        }
    }

    fn prompt_from(&mut self, text: &str, source: &str, images: Option<Value>) {
        // `/reload` is the host's own command in every mode (pi has it in its terminal UI).
        if source != "extension" && text.trim() == "/reload" {
            if let Err(error) = self.reload_now() {
                self.core
                    .runner
                    .emit_error(&pi_hooks_host::runner::ExtensionError {
                        extension_path: "<runtime>".into(),
                        event: "reload".into(),
                        error,
                    });
            }
            return;
        }
        // A plugin's `send_user_message` is not checked for commands, as in pi.
        if source != "extension"
            && plugin_tool::run_command(&self.core.runner, text, &self.core.config.cwd)
        {
            return;
        }
        let (text, images) = match self.core.runner.emit_input(text, images.clone(), source) {
            InputOutcome::Handled(_) => return,
            InputOutcome::Transform { text, images } => (text, images),
            InputOutcome::Continue => (text.to_owned(), images),
        };
        self.overflow_recovery_attempted = false;
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

    /// One agent run, and when it is not a retry or recovery inside another, its settling
    /// (pi 1.6): `agent_before_settle` (not after an abort), whose `continue` starts one more
    /// run from the context as it is, then `agent_settled {aborted}`.
    fn run(&mut self, pending: Vec<Value>, system_prompt: String, prompt: &str) {
        self.run_depth += 1;
        self.run_once(pending, system_prompt.clone(), prompt);
        self.run_depth -= 1;
        if self.run_depth == 0 {
            self.settle(&system_prompt);
        }
    }

    /// pi 1.6's end of a prompt's activity, after `agent_end` and any retry or compaction:
    /// messages still queued (a follow-up or steer an `agent_end` handler sent) start a run of
    /// their own at once (`agent_start` ... `agent_end`, no `before_agent_start`), as pi's
    /// `agent.continue()`; then `agent_before_settle`, whose `continue` runs once more (and
    /// messages queued while its handlers ran start a run, as above); then `agent_settled`.
    fn settle(&mut self, system_prompt: &str) {
        loop {
            if self.core.shared.abort_token().is_cancelled() {
                break;
            }
            let queued = {
                let mut queues = Shared::lock(&self.core.shared.queues);
                // Steering first; follow-ups then (pi's `continue()`).
                match std::mem::take(&mut queues.steer) {
                    steer if !steer.is_empty() => steer,
                    _ => std::mem::take(&mut queues.follow_up),
                }
            };
            if !queued.is_empty() {
                self.run_depth += 1;
                self.run_once(queued, system_prompt.to_owned(), "");
                self.run_depth -= 1;
                continue;
            }
            let outcome = Shared::lock(&self.core.shared.messages)
                .iter()
                .rev()
                .find(|m| m["role"] == "assistant")
                .map_or("completed", boundary::outcome_of);
            if !self
                .core
                .boundary(json!({"type": "agent_before_settle"}), outcome)
            {
                // A message queued meanwhile (a client's `follow_up` while the handlers ran)
                // continues the activity, as pi's `result.continue || hasQueuedMessages()`.
                let queues = Shared::lock(&self.core.shared.queues);
                if queues.steer.is_empty() && queues.follow_up.is_empty() {
                    break;
                }
                continue;
            }
            self.run_depth += 1;
            self.run_once(Vec::new(), system_prompt.to_owned(), "");
            self.run_depth -= 1;
        }
        // Custom messages sent during the run's end (`agent_end` handlers) join now, before
        // it settles (pi's `finally`).
        self.core.shared.flush_pending_custom();
        // Plugins first, then the mode's line, as pi emits it.
        let aborted = self.core.shared.abort_token().is_cancelled();
        if self.core.runner.has_handlers("agent_settled") {
            self.core
                .runner
                .emit(json!({"type": "agent_settled", "aborted": aborted}));
            self.core.flush_user_messages();
        }
        self.core
            .shared
            .sink(&json!({"type": "agent_settled", "aborted": aborted}));
    }

    /// One agent run: `agent_start` ... `agent_end`, then a retry or a compaction.
    fn run_once(&mut self, mut pending: Vec<Value>, system_prompt: String, prompt: &str) {
        if let Some(started) = self.run_started.take() {
            started();
        }
        let abort = CancelToken::new();
        let core = &self.core;
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
                // As stored: a `message_end` handler may have replaced it.
                new_messages.push(core.add_message(&message));
            }
            let messages = Shared::lock(&core.shared.messages).clone();
            let context = core.runner.emit_context(messages);
            // pi 1.6: then `context_with_system` (this host keeps the system prompt apart, so
            // its messages are the same conversation).
            let context = core.runner.emit_context_with_system(context);
            let tools = core.active_tool_specs();
            let assistant = if abort.is_cancelled() {
                let message = aborted_message(&core.shared.model_info());
                core.emit(json!({"type": "message_start", "message": message}));
                message
            } else {
                let request = ModelRequest {
                    system_prompt: &system_prompt,
                    messages: &context,
                    tools: &tools,
                };
                apply_model_request(self.model.as_mut(), core);
                let body = core.provider_request(self.model.request_body(&request));
                let mut started = false;
                let mut message = self.model.complete(&body, &abort, &mut |event, partial| {
                    if !started {
                        started = true;
                        core.emit(json!({"type": "message_start", "message": partial}));
                    }
                    // pi's agent loop turns the stream's `start` into `message_start` and its
                    // `done` / `error` into `message_end`: only the deltas are updates.
                    if !matches!(event["type"].as_str(), Some("start" | "done" | "error")) {
                        core.emit(json!({"type": "message_update", "message": partial, "assistantMessageEvent": event}));
                    }
                    // A tool call's arguments are complete: its `tool_call` comes once the
                    // message ends, so isolated plugins that handle it wake up now.
                    if event["type"] == "toolcall_end" {
                        pi_hooks_host::isolate::get_ready("tool_call");
                    }
                });
                if abort.is_cancelled() {
                    message["stopReason"] = "aborted".into();
                }
                message
            };
            let assistant = core.end_assistant(&assistant);
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
            let (results, terminate) = if stop == "aborted" || stop == "error" {
                (Vec::new(), false)
            } else {
                core.execute_tools(&calls)
            };
            new_messages.extend(results.iter().cloned());
            // pi 1.6: `turn_end` is a boundary for plugins (`{entries, continue}`).
            let turn_end = json!({"type": "turn_end", "turnIndex": turn_index, "message": assistant, "toolResults": results});
            let asked_continue = core.turn_end(turn_end, &assistant, &results);
            core.shared.flush_pending_custom();
            turn_index += 1;
            if stop == "aborted" || stop == "error" {
                break;
            }
            if abort.is_cancelled() {
                // Aborted after the model answered (during the tools): one more turn ends the
                // run with an assistant message whose stopReason is "aborted", as in pi.
                continue;
            }
            core.flush_user_messages();
            let steer = std::mem::take(&mut Shared::lock(&core.shared.queues).steer);
            if !steer.is_empty() {
                pending = steer;
                continue;
            }
            // pi 1.6: a batch whose every call was blocked with `terminate` ends the run.
            if !calls.is_empty() && !terminate {
                continue;
            }
            let follow_up = std::mem::take(&mut Shared::lock(&core.shared.queues).follow_up);
            if !follow_up.is_empty() {
                pending = follow_up;
                continue;
            }
            // A `turn_end` handler asked for one more request (a context-only turn).
            if asked_continue {
                continue;
            }
            break;
        }
        // The agent is not idle yet while `agent_end` handlers run: a followUp (or steer)
        // sent there is queued and, as in pi 1.6, runs at once as a run of its own before the
        // prompt settles (`settle`); a user message without deliverAs is refused as busy.
        let end = json!({"type": "agent_end", "messages": new_messages});
        if core.runner.has_handlers("agent_end") {
            // A followUp sent by an `agent_end` handler: its `input` and `queue_update` come
            // right after that handler, before later handlers see `agent_end` and before the
            // mode shows it, as in pi (whose send runs `input` inside the call).
            core.runner
                .emit_each(end.clone(), || core.flush_user_messages());
        }
        core.shared.streaming.store(false, Ordering::Release);
        // pi 1.6 tells clients (not plugins) whether the run is retried.
        let mut end = end;
        end["willRetry"] = retry::will_retry(core, &new_messages, &abort).into();
        core.shared.sink(&end);
        // pi's order: a transient error is retried first; only a run that is not retried
        // goes on to the compaction check.
        if self.check_retry() {
            return;
        }
        self.check_compaction();
    }

    /// The text of the last assistant message.
    pub fn last_assistant_text(&self) -> Option<String> {
        last_assistant_text(&Shared::lock(&self.core.shared.messages))
    }

    /// Aborts the current run (the next check point stops it) and a retry waiting to start.
    pub fn abort(&self) {
        self.core.shared.abort_token().cancel();
        Shared::lock(&self.core.shared.retry_cancel).cancel();
    }

    /// The id of the session's leaf entry.
    pub fn leaf_id(&self) -> Option<String> {
        Shared::lock(&self.core.shared.session)
            .leaf_id()
            .map(str::to_owned)
    }

    /// The session's header line.
    pub fn session_header(&self) -> Value {
        Shared::lock(&self.core.shared.session).header().clone()
    }
}

/// pi 1.6's `before_provider_headers` (0.80.4) around a provider's HTTP headers: the plugins
/// see `{headers}` (names in lower case, as pi's providers give them; HTTP does not mind) and
/// give back the changes, `null`
/// deleting a header; nothing to do (no handler) costs one check.
fn headers_hook(runner: &Arc<Runner>) -> model::HeadersHook {
    let runner = Arc::downgrade(runner);
    Arc::new(move |headers: Vec<(String, String)>| {
        let Some(runner) = runner.upgrade() else {
            return headers;
        };
        if !runner.has_handlers("before_provider_headers") {
            return headers;
        }
        let map: serde_json::Map<String, Value> = headers
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), Value::String(value)))
            .collect();
        runner
            .emit_before_provider_headers(map)
            .into_iter()
            .filter_map(|(name, value)| match value {
                Value::String(value) => Some((name, value)),
                _ => None,
            })
            .collect()
    })
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
    /// Sends an event to the plugins (when any listens), then to the mode. The mode gets
    /// pi's agent event as pi's RPC and JSON modes print it: `turn_start` and `turn_end`
    /// without the `turnIndex` and `timestamp` that pi adds for extensions only.
    fn emit(&self, mut event: Value) {
        let name = event["type"].as_str().unwrap_or_default();
        if self.runner.has_handlers(name) {
            self.runner.emit(event.clone());
            // A user message a handler sent passes `input` as soon as the handler returned,
            // before the next event (pi runs it inside the `sendUserMessage` call).
            self.flush_user_messages();
        }
        if matches!(name, "turn_start" | "turn_end")
            && let Some(fields) = event.as_object_mut()
        {
            fields.remove("turnIndex");
            fields.remove("timestamp");
        }
        self.shared.sink(&event);
    }

    /// Passes the user messages plugins sent while streaming through the `input` event
    /// (source "extension", as pi's `sendUserMessage` prompts), then queues them as steering
    /// or follow-up messages; a handler may handle (drop) or transform them.
    fn flush_user_messages(&self) {
        let pending = std::mem::take(&mut Shared::lock(&self.shared.queues).user_pending);
        if pending.is_empty() {
            return;
        }
        for (text, images, deliver_as) in pending {
            let follow_up = deliver_as == pi_hooks_abi::ffi::PI_DELIVER_FOLLOW_UP;
            // pi 1.6: `input.streamingBehavior` says how a message sent while streaming goes.
            let behavior = if follow_up { "followUp" } else { "steer" };
            let (text, images) = match self.runner.emit_input_streaming(
                &text,
                images.clone(),
                "extension",
                Some(behavior),
            ) {
                InputOutcome::Handled(_) => continue,
                InputOutcome::Transform { text, images } => (text, images),
                InputOutcome::Continue => (text, images),
            };
            let mut content = vec![json!({"type": "text", "text": text})];
            if let Some(Value::Array(images)) = images {
                content.extend(images);
            }
            let message = json!({"role": "user", "content": content, "timestamp": now_ms()});
            let mut queues = Shared::lock(&self.shared.queues);
            if follow_up {
                queues.follow_up.push(message);
            } else {
                queues.steer.push(message);
            }
            drop(queues);
            self.shared.queue_update(&text, !follow_up);
        }
    }

    /// The provider request hook around a model call: `before_provider_request` (a result
    /// other than "nothing", even `null`, replaces the body), then `after_provider_response`
    /// (the scripted provider answers like an HTTP 200 with no headers). Both go to plugins
    /// only, as in pi.
    fn provider_request(&self, body: Value) -> Value {
        let body = if self.runner.has_handlers("before_provider_request") {
            self.runner.emit_before_provider_request(body)
        } else {
            body
        };
        if self.runner.has_handlers("after_provider_response") {
            self.runner
                .emit(json!({"type": "after_provider_response", "status": 200, "headers": {}}));
        }
        body
    }

    /// The legacy `session` event (pi's older hook API) with the session's entries and file; the
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

    /// Adds a message: `message_start`, `message_end` (which may replace it), the session
    /// entry and the agent state; returns the message as stored.
    fn add_message(&self, message: &Value) -> Value {
        self.emit(json!({"type": "message_start", "message": message}));
        self.end_message(message)
    }

    /// Ends the assistant message (its start and updates were streamed); returns it as stored.
    fn end_assistant(&self, message: &Value) -> Value {
        let message = self.end_message(message);
        if message["stopReason"] != "error" {
            retry::note_success(self);
        }
        message
    }

    /// `message_end` as pi 1.6 runs it: the plugins first, whose `{message}` results chain
    /// and replace the message (same role only), then the session entry and the agent state
    /// get the final message, then the mode sees it.
    fn end_message(&self, message: &Value) -> Value {
        let message = if self.runner.has_handlers("message_end") {
            let replaced = self.runner.emit_message_end(message);
            self.flush_user_messages();
            match replaced {
                // pi: a replacement without content gets empty content.
                Some(mut replaced) => {
                    if replaced.get("content").is_none_or(Value::is_null) {
                        replaced["content"] = json!([]);
                    }
                    replaced
                }
                None => message.clone(),
            }
        } else {
            message.clone()
        };
        self.persist(&message);
        self.shared
            .sink(&json!({"type": "message_end", "message": message}));
        message
    }

    /// `turn_end`: a boundary for the plugins (pi 1.6: `messageEntryId`,
    /// `toolResultEntryIds`, `entries`, `continue`, `context`, `outcome` beside pi 0.73.1's
    /// fields), then the mode's line; answers whether a handler asked for one more request.
    fn turn_end(&self, mut event: Value, assistant: &Value, results: &[Value]) -> bool {
        let mut asked = false;
        if self.runner.has_handlers("turn_end") {
            let mut plugin_event = event.clone();
            plugin_event["messageEntryId"] = self.entry_id_of(assistant).into();
            plugin_event["toolResultEntryIds"] = results
                .iter()
                .filter_map(|r| self.entry_id_of(r))
                .collect::<Vec<_>>()
                .into();
            asked = self.boundary(plugin_event, boundary::outcome_of(assistant));
        }
        if let Some(fields) = event.as_object_mut() {
            fields.remove("turnIndex");
        }
        self.shared.sink(&event);
        asked
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
}

/// pi's `queue_update` event.
fn queue_update_event(queued: &QueuedTexts) -> Value {
    serde_json::json!({
        "type": "queue_update",
        "steering": queued.steering,
        "followUp": queued.follow_up,
    })
}
