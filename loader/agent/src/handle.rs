//! [`AgentHandle`]: what a mode may read and do while the agent's own thread runs a prompt
//! (queue steering and follow-up messages, abort, read the state and the messages).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use std::path::PathBuf;

use super::{Shared, now_ms};
use pi_hooks_host::runner::Runner;
use pi_hooks_host::runner::events::InputOutcome;
use pi_hooks_host::services::UiService;

/// A cloneable handle on the agent's shared state.
#[derive(Clone)]
pub struct AgentHandle {
    shared: Arc<Shared>,
    runner: Arc<Runner>,
    cwd: PathBuf,
    input_source: &'static str,
}

impl AgentHandle {
    pub(super) fn new(
        shared: Arc<Shared>,
        runner: Arc<Runner>,
        cwd: PathBuf,
        input_source: &'static str,
    ) -> Self {
        AgentHandle {
            shared,
            runner,
            cwd,
            input_source,
        }
    }

    /// Whether `text` names a plugin command (`/name args`) that would run.
    pub fn is_plugin_command(&self, text: &str) -> bool {
        super::plugin_tool::is_command(&self.runner, text)
    }

    /// A prompt while a run is in progress, as pi's `prompt` treats it while streaming: a
    /// plugin command (`/name args`) runs at once; otherwise `input` handlers see the text
    /// (and may handle or transform it), and it is queued as a steering or follow-up message
    /// by `streaming_behavior` (`"steer"` or `"followUp"`); without one, pi's error. Call it
    /// on a thread that may block: the command or the handlers may wait for dialogs.
    ///
    /// Gives pi 1.6's disposition: `"handled"` (a command ran, or a handler handled the
    /// text) or `"queued"`.
    pub fn prompt_while_running(
        &self,
        text: &str,
        images: Option<&Value>,
        streaming_behavior: Option<&str>,
    ) -> Result<&'static str, String> {
        if text.trim() == "/reload" {
            return Err(super::reload::BUSY.into());
        }
        if super::plugin_tool::run_command(&self.runner, text, &self.cwd) {
            return Ok("handled");
        }
        let (text, images) = match self
            .runner
            .emit_input(text, images.cloned(), self.input_source)
        {
            InputOutcome::Handled(_) => return Ok("handled"),
            InputOutcome::Transform { text, images } => (text, images),
            InputOutcome::Continue => (text.to_owned(), images.cloned()),
        };
        match streaming_behavior {
            Some("followUp") => self.follow_up(&text, images.as_ref()),
            Some("steer") => self.steer(&text, images.as_ref()),
            _ => return Err(super::ALREADY_PROCESSING.into()),
        }
        Ok("queued")
    }

    /// RPC `steer` / `follow_up` as pi 1.6's `_queueUserInput`: `input` handlers see the text
    /// first (source: the mode's, `"rpc"`), and may handle it (`"handled"`) or transform it;
    /// then it is queued (`"queued"`). The caller refuses a plugin command's text before.
    /// Call it on a thread that may block when [`AgentHandle::has_input_handlers`]: the
    /// handlers may wait for dialogs.
    pub fn queue_input(&self, text: &str, images: Option<&Value>, steer: bool) -> &'static str {
        let (text, images) = if self.has_input_handlers() {
            // pi 1.6: `streamingBehavior` says how a message sent during a run is queued
            // (absent when the agent is idle).
            let behavior = self
                .is_streaming()
                .then_some(if steer { "steer" } else { "followUp" });
            match self.runner.emit_input_streaming(
                text,
                images.cloned(),
                self.input_source,
                behavior,
            ) {
                InputOutcome::Handled(_) => return "handled",
                InputOutcome::Transform { text, images } => (text, images),
                InputOutcome::Continue => (text.to_owned(), images.cloned()),
            }
        } else {
            (text.to_owned(), images.cloned())
        };
        if steer {
            self.steer(&text, images.as_ref());
        } else {
            self.follow_up(&text, images.as_ref());
        }
        "queued"
    }

    /// Whether a plugin handles the `input` event (then queueing a message runs plugin code).
    pub fn has_input_handlers(&self) -> bool {
        self.has_handlers("input")
    }

    /// Whether a loaded plugin handles `event`.
    pub fn has_handlers(&self, event: &str) -> bool {
        self.runner.has_handlers(event)
    }

    /// pi 1.6's `clear_queue`: the steering and follow-up messages waiting are dropped and
    /// their texts returned as `{steering, followUp}`; a `queue_update` with both empty goes
    /// to the mode.
    pub fn clear_queue(&self) -> Value {
        {
            let mut queues = Shared::lock(&self.shared.queues);
            queues.steer.clear();
            queues.follow_up.clear();
        }
        let (steering, follow_up) = self.shared.clear_queued_texts();
        json!({"steering": steering, "followUp": follow_up})
    }

    /// pi's `getEntries`: every session entry in file order (the header excluded).
    pub fn entries(&self) -> Vec<Value> {
        Shared::lock(&self.shared.session).entries().to_vec()
    }

    /// The id of the session's leaf entry (`None` for an empty session).
    pub fn leaf_id(&self) -> Option<String> {
        Shared::lock(&self.shared.session)
            .leaf_id()
            .map(str::to_owned)
    }

    /// Whether a run is in progress.
    pub fn is_streaming(&self) -> bool {
        self.shared.streaming.load(Ordering::Acquire)
    }

    /// Aborts the current run (the next check point stops it).
    pub fn abort(&self) {
        self.shared.abort_token().cancel();
        self.abort_retry();
    }

    /// Cancels a retry waiting to start (RPC `abort_retry`); the run is not retried.
    pub fn abort_retry(&self) {
        Shared::lock(&self.shared.retry_cancel).cancel();
    }

    /// Whether runs that failed with a transient error are retried.
    pub fn auto_retry(&self) -> bool {
        self.shared.auto_retry.load(Ordering::Acquire)
    }

    /// Turns automatic retry on or off (RPC `set_auto_retry`).
    pub fn set_auto_retry(&self, enabled: bool) {
        self.shared.auto_retry.store(enabled, Ordering::Release);
    }

    /// Queues a steering user message (delivered after the current turn's tools).
    pub fn steer(&self, text: &str, images: Option<&Value>) {
        let message = user_message(text, images);
        Shared::lock(&self.shared.queues).steer.push(message);
        self.shared.queue_update(text, true);
    }

    /// Queues a follow-up user message (delivered when the run would end).
    pub fn follow_up(&self, text: &str, images: Option<&Value>) {
        let message = user_message(text, images);
        Shared::lock(&self.shared.queues).follow_up.push(message);
        self.shared.queue_update(text, false);
    }

    /// How many steering and follow-up messages wait.
    pub fn pending_message_count(&self) -> usize {
        let queues = Shared::lock(&self.shared.queues);
        queues.steer.len() + queues.follow_up.len() + queues.user_pending.len()
    }

    /// The agent's messages (the context the model sees).
    pub fn messages(&self) -> Vec<Value> {
        Shared::lock(&self.shared.messages).clone()
    }

    /// The current model, as `{id, provider, api, ...}`.
    pub fn model(&self) -> Value {
        self.shared.model_info()
    }

    /// Every model the provider offers.
    pub fn available_models(&self) -> Vec<Value> {
        self.shared.available_models.clone()
    }

    /// Selects a model from the next model call on (RPC `set_model` while a prompt runs);
    /// returns it, or pi's `Model not found` error.
    pub fn request_model(&self, provider: &str, id: &str) -> Result<Value, String> {
        let model = self
            .shared
            .available_models
            .iter()
            .find(|m| m["provider"] == provider && m["id"] == id)
            .cloned()
            .ok_or_else(|| format!("Model not found: {provider}/{id}"))?;
        Shared::lock(&self.shared.queues).model_request = Some((model.clone(), "set"));
        Ok(model)
    }

    /// The lines a plugin's renderer gives for a custom message (see
    /// [`Runner::render_message`]); `Ok(None)`: no renderer, default rendering.
    pub fn render_message(
        &self,
        message: &Value,
        expanded: bool,
    ) -> Result<Option<Vec<String>>, String> {
        self.runner
            .render_message(message, expanded)
            .map_err(|e| e.error)
    }

    /// The argument completions of plugin command `name` for `prefix` (see
    /// [`Runner::command_completions`]).
    pub fn command_completions(
        &self,
        name: &str,
        prefix: &str,
    ) -> Result<Option<Vec<Value>>, String> {
        self.runner
            .command_completions(name, prefix)
            .map_err(|e| e.error)
    }

    /// The plugins loaded now, in load order (after every reload, the new ones).
    pub fn plugins(&self) -> Vec<std::sync::Arc<pi_hooks_host::plugin::LoadedPlugin>> {
        self.runner.plugins()
    }

    /// The plugin commands that run, as `(name, description, has completions)`: the first
    /// registration of a name in load order, built-in names left out (their plugins were
    /// warned at load).
    pub fn commands(&self) -> Vec<(String, String, bool)> {
        let mut seen = std::collections::HashSet::new();
        let mut list = Vec::new();
        for plugin in self.runner.plugins() {
            for command in plugin.registrations().commands {
                if !pi_hooks_host::plugin::registrations::is_builtin_command(&command.name)
                    && seen.insert(command.name.clone())
                {
                    let completes = command.complete.is_some();
                    list.push((command.name, command.description, completes));
                }
            }
        }
        list
    }

    /// pi's `user_bash` event for a `!command` (`!!`: `exclude_from_context`), run in the
    /// session's cwd: the first truthy result (`{result}` or `{command, cwd, env}`). Plugin
    /// code: call it on a thread that may block.
    pub fn user_bash(&self, command: &str, exclude_from_context: bool) -> Option<Value> {
        self.runner
            .emit_user_bash(command, exclude_from_context, &self.cwd.to_string_lossy())
    }

    /// Runs the plugin shortcut whose key `matches` accepts (the last registration in load
    /// order); `false` when no plugin registered such a key. Plugin code: call it on a
    /// thread that may block (the handler may open dialogs).
    pub fn run_shortcut(&self, matches: impl Fn(&str) -> bool) -> bool {
        let Some((plugin, shortcut)) = self.runner.find_shortcut(matches) else {
            return false;
        };
        let _ = self
            .runner
            .run_shortcut(&plugin, &shortcut, &self.cwd.to_string_lossy());
        true
    }

    /// Every plugin shortcut as `(plugin path, key)`, in load order.
    pub fn shortcuts(&self) -> Vec<(String, String)> {
        self.runner
            .shortcuts()
            .into_iter()
            .map(|(plugin, shortcut)| (plugin.path.clone(), shortcut.key))
            .collect()
    }

    /// Whether a plugin asked the host to shut down.
    pub fn shutdown_requested(&self) -> bool {
        self.shared.shutdown_requested.load(Ordering::Acquire)
    }

    /// Whether a compaction is running.
    pub fn is_compacting(&self) -> bool {
        self.shared.compacting.load(Ordering::Acquire)
    }

    /// The text of the user message a plugin command's `fork` took off, once (`None` when no
    /// such fork happened since the last call): pi's interactive mode puts it into the
    /// editor and redraws the conversation.
    pub fn take_forked_text(&self) -> Option<String> {
        Shared::lock(&self.shared.forked_text).take()
    }

    /// Whether the context is compacted automatically.
    pub fn auto_compaction(&self) -> bool {
        self.shared.auto_compaction.load(Ordering::Acquire)
    }

    /// Turns automatic compaction on or off (RPC `set_auto_compaction`).
    pub fn set_auto_compaction(&self, enabled: bool) {
        self.shared
            .auto_compaction
            .store(enabled, Ordering::Release);
    }

    /// pi's `getUserMessagesForForking`: `{entryId, text}` of every user message entry, in
    /// file order.
    pub fn fork_messages(&self) -> Vec<Value> {
        Shared::lock(&self.shared.session)
            .entries()
            .iter()
            .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
            .map(|e| json!({"entryId": e["id"], "text": super::session_ops::user_text(&e["message"]["content"])}))
            .collect()
    }

    /// The session file (`None` in memory), id and name.
    pub fn session_info(&self) -> (Option<String>, String, Option<String>) {
        let session = Shared::lock(&self.shared.session);
        (
            session.path().map(|p| p.to_string_lossy().into_owned()),
            session.id().to_owned(),
            session.session_name(),
        )
    }

    /// Names the session (a `session_info` entry), then tells the plugins with
    /// `session_info_changed {name}` (pi 0.80.3; `name` absent when it was cleared), then
    /// the mode.
    pub fn set_session_name(&self, name: &str) -> Result<(), String> {
        let current = {
            let mut session = Shared::lock(&self.shared.session);
            session
                .append_session_info(name)
                .map_err(|e| e.to_string())?;
            session.session_name()
        };
        if self.runner.has_handlers("session_info_changed") {
            let mut event = serde_json::json!({"type": "session_info_changed"});
            if let Some(current) = current {
                event["name"] = current.into();
            }
            self.runner.emit(event);
        }
        self.shared.session_info_changed();
        Ok(())
    }

    /// The text of the last assistant message.
    pub fn last_assistant_text(&self) -> Option<String> {
        super::last_assistant_text(&Shared::lock(&self.shared.messages))
    }

    /// Adds a message outside a run (RPC `bash`'s `bashExecution`): to the agent's messages
    /// and the session.
    pub fn append_message(&self, message: Value) -> Result<(), String> {
        Shared::lock(&self.shared.session)
            .append_message(&message)
            .map_err(|e| e.to_string())?;
        Shared::lock(&self.shared.messages).push(message);
        Ok(())
    }

    /// Sets how the mode is told that plugins queued work while the agent was idle; the mode
    /// then runs [`super::Agent::run_queued`] on the agent's thread.
    pub fn set_waker(&self, waker: super::Waker) {
        *Shared::lock(&self.shared.waker) = Some(waker);
    }

    /// Drops the waker (the mode is ending; what it holds is released).
    pub fn clear_waker(&self) {
        *Shared::lock(&self.shared.waker) = None;
    }

    /// Binds the mode's user interface: plugins' `PiUiApi` calls go to it from now on.
    /// The plugins that failed to load are shown on it at once (a status).
    pub fn bind_ui(&self, ui: Arc<dyn UiService>) {
        *Shared::lock(&self.shared.ui) = Some(ui.clone());
        if !self.runner.not_loaded().is_empty() {
            self.runner.show_not_loaded(&*ui);
        }
    }
}

/// A user message as pi stores it (text, then images).
fn user_message(text: &str, images: Option<&Value>) -> Value {
    let mut content = vec![json!({"type": "text", "text": text})];
    if let Some(Value::Array(images)) = images {
        content.extend(images.iter().cloned());
    }
    json!({"role": "user", "content": content, "timestamp": now_ms()})
}
