//! The session services plugins reach through the host tables, backed by the agent's state.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use pi_hooks_abi::ffi::{PI_DELIVER_FOLLOW_UP, PI_DELIVER_STEER};
use serde_json::Value;

use super::{PendingRun, Shared, custom_message};
use pi_hooks_host::runner::{ExtensionError, Runner, RunnerConfig};
use pi_hooks_host::services::{HostServices, SessionOp};

/// [`HostServices`] over the agent's shared state.
pub(super) struct AgentServices {
    shared: Arc<Shared>,
    /// The runner, for its configuration and error listeners. Weak: the runner owns the
    /// plugins, which own these services.
    runner: Weak<Runner>,
}

impl AgentServices {
    pub(super) fn new(shared: Arc<Shared>, runner: Weak<Runner>) -> Self {
        AgentServices { shared, runner }
    }

    fn streaming(&self) -> bool {
        self.shared.streaming.load(Ordering::Acquire)
    }
}

impl AgentServices {
    /// A user message a plugin sent (pi's `sendUserMessage`): a prompt when the agent is
    /// idle; while it streams, queued by `deliver_as` after its `input` event (see
    /// `flush_user_messages`), or refused without one.
    fn queue_user_message(
        &self,
        _plugin_path: &str,
        text: String,
        images: Option<Value>,
        deliver_as: u32,
    ) -> Result<(), String> {
        let mut queues = Shared::lock(&self.shared.queues);
        if !self.streaming() {
            queues.runs.push_back(PendingRun::User(text, images));
            drop(queues);
            self.shared.wake();
            return Ok(());
        }
        match deliver_as {
            // Its `input` event runs once this call has returned (see `flush_user_messages`).
            PI_DELIVER_STEER | PI_DELIVER_FOLLOW_UP => {
                queues.user_pending.push((text, images, deliver_as))
            }
            _ => {
                drop(queues);
                // As pi reports its rejected prompt: a `<runtime>` error of send_user_message.
                self.report_error(&ExtensionError {
                    extension_path: "<runtime>".into(),
                    event: "send_user_message".into(),
                    error: super::ALREADY_PROCESSING.into(),
                });
                return Err(super::ALREADY_PROCESSING.into());
            }
        }
        Ok(())
    }
}

impl HostServices for AgentServices {
    fn session_entries(&self) -> Value {
        Value::Array(Shared::lock(&self.shared.session).entries().to_vec())
    }

    fn session_branch(&self) -> Value {
        Value::Array(Shared::lock(&self.shared.session).branch())
    }

    fn session_leaf_id(&self) -> Option<String> {
        Shared::lock(&self.shared.session)
            .leaf_id()
            .map(str::to_owned)
    }

    /// pi's `BuildSystemPromptOptions` as far as this host has them: the folder and the
    /// active tools (pi-hooks builds its prompt from `--system-prompt` or its default).
    fn system_prompt_options(&self) -> Option<Value> {
        let tools = Shared::lock(&self.shared.active_tools).clone();
        let cwd = Shared::lock(&self.shared.session).cwd().to_owned();
        Some(serde_json::json!({"cwd": cwd, "selectedTools": tools}))
    }

    fn session_name(&self) -> Option<String> {
        Shared::lock(&self.shared.session).session_name()
    }

    fn set_session_name(&self, name: &str) -> Result<(), String> {
        Shared::lock(&self.shared.session)
            .append_session_info(name)
            .map(drop)
            .map_err(|e| e.to_string())?;
        self.shared.session_info_changed();
        Ok(())
    }

    fn set_label(&self, entry_id: &str, label: Option<&str>) -> Result<(), String> {
        Shared::lock(&self.shared.session)
            .append_label(entry_id, label)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn append_entry(&self, custom_type: &str, data: Option<Value>) -> Result<(), String> {
        let id = Shared::lock(&self.shared.session)
            .append_custom(custom_type, data)
            .map_err(|e| e.to_string())?;
        self.shared.entry_appended(&id);
        Ok(())
    }

    /// pi's rules: `nextTurn` waits for the next prompt; while streaming the message steers
    /// (or follows up); idle with `triggerTurn` it starts a run; idle without, it is stored
    /// and shown (to the mode, not to plugins).
    fn send_message(
        &self,
        _plugin_path: &str,
        message: Value,
        options: Value,
    ) -> Result<(), String> {
        let message = custom_message(message);
        let deliver_as = options.get("deliverAs").and_then(Value::as_str);
        // pi 1.6's `sendCustomMessage`: while the agent runs, a message queues as a steer
        // (or follow-up) that continues the run unless `triggerTurn` is false, in which case
        // it waits for the end of the turn; idle, `triggerTurn` starts a run, else it is
        // appended at once.
        let trigger = options.get("triggerTurn").and_then(Value::as_bool);
        let mut queues = Shared::lock(&self.shared.queues);
        if deliver_as == Some("nextTurn") {
            queues.next_turn.push(message);
        } else if self.streaming() && trigger != Some(false) {
            if deliver_as == Some("followUp") {
                queues.follow_up.push(message)
            } else {
                queues.steer.push(message)
            }
        } else if trigger == Some(true) {
            queues.runs.push_back(PendingRun::Message(message));
            drop(queues);
            self.shared.wake();
        } else if self.streaming() {
            queues.pending_custom.push(message);
        } else {
            drop(queues);
            self.shared.append_custom_message(&message)?;
        }
        Ok(())
    }

    fn send_user_message(
        &self,
        plugin_path: &str,
        text: String,
        deliver_as: u32,
    ) -> Result<(), String> {
        self.queue_user_message(plugin_path, text, None, deliver_as)
    }

    fn send_user_content(
        &self,
        plugin_path: &str,
        content: Value,
        deliver_as: u32,
    ) -> Result<(), String> {
        let (text, images) = pi_hooks_host::services::split_user_content(&content);
        self.queue_user_message(plugin_path, text, images, deliver_as)
    }

    fn active_tools(&self) -> Vec<String> {
        Shared::lock(&self.shared.active_tools).clone()
    }

    fn all_tools(&self) -> Value {
        Shared::lock(&self.shared.all_tools).clone()
    }

    fn set_active_tools(&self, names: Vec<String>) {
        let known: Vec<String> = names
            .into_iter()
            .filter(|n| {
                Shared::lock(&self.shared.all_tools)
                    .as_array()
                    .is_some_and(|all| all.iter().any(|t| t["name"] == n.as_str()))
            })
            .collect();
        *Shared::lock(&self.shared.active_tools) = known;
    }

    fn is_idle(&self) -> bool {
        !self.streaming()
    }

    fn abort(&self) {
        self.shared.abort_token().cancel();
    }

    fn has_pending_messages(&self) -> bool {
        let queues = Shared::lock(&self.shared.queues);
        !queues.steer.is_empty() || !queues.follow_up.is_empty() || !queues.user_pending.is_empty()
    }

    fn model(&self) -> Option<Value> {
        Some(self.shared.model_info())
    }

    fn runner_config(&self) -> Option<RunnerConfig> {
        self.runner.upgrade().map(|runner| runner.config().clone())
    }

    fn report_error(&self, error: &ExtensionError) {
        if let Some(runner) = self.runner.upgrade() {
            runner.emit_error(error);
        }
    }

    fn ui(&self) -> Option<Arc<dyn pi_hooks_host::services::UiService>> {
        Shared::lock(&self.shared.ui).clone()
    }

    fn request_session_op(&self, plugin_path: &str, op: SessionOp) -> Result<(), String> {
        // Performed by the agent's loop after the command returns (see `Agent::drain_runs`):
        // its `session_before_*` events may call the asking plugin again.
        Shared::lock(&self.shared.queues)
            .session_ops
            .push_back((plugin_path.to_owned(), op));
        self.shared.wake();
        Ok(())
    }

    fn request_model(&self, provider: &str, id: &str) -> Result<bool, String> {
        let Some(model) = self
            .shared
            .available_models
            .iter()
            .find(|m| m["provider"] == provider && m["id"] == id)
        else {
            return Ok(false);
        };
        Shared::lock(&self.shared.queues).model_request = Some((model.clone(), "set"));
        self.shared.wake();
        Ok(true)
    }

    fn context_usage(&self) -> Option<Value> {
        let messages = Shared::lock(&self.shared.messages).clone();
        super::compaction::context_usage(&messages, &self.shared.model_info())
    }

    fn request_shutdown(&self) {
        self.shared
            .shutdown_requested
            .store(true, std::sync::atomic::Ordering::Release);
    }

    fn run_abort_token(&self) -> Option<crate::tools::CancelToken> {
        self.streaming().then(|| self.shared.abort_token())
    }

    fn wait_for_idle(&self) {
        while self.streaming() {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}
