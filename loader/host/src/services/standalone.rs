//! [`Standalone`]: the session services for a program that embeds the host without a
//! session of pi's kind (an agent of its own, an editor, a test): plugins get its UI, every
//! action they take goes to a sink it chooses (or nowhere), session reads answer from the
//! entries it gives (none by default), and plugin errors go to stderr as
//! `Extension error (<path>): <message>` lines unless it listens with
//! [`crate::Runner::on_error`].

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::plugin::call::{ExtensionError, RunnerConfig};
use crate::services::{HostServices, SessionOp, UiService};

/// Receives each action a plugin takes, as `{"call": NAME, ...fields}`: `send_message`
/// (`message`, `options`), `send_user_message` (`text`, `deliverAs`), `append_entry`
/// (`customType`, `data`), `set_session_name` (`name`), `set_label` (`entryId`, `label`),
/// `set_active_tools` (`names`), `abort`, `shutdown`, `session_op` (`op` and its fields),
/// `set_model` (`provider`, `id`), `exec` (`request`, `result`).
pub type ActionSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Session services for an embedding program (see the module documentation).
#[derive(Clone)]
pub struct Standalone {
    config: RunnerConfig,
    ui: Option<Arc<dyn UiService>>,
    actions: Option<ActionSink>,
    entries: Arc<Mutex<Value>>,
}

impl Standalone {
    /// Services for a runner built with `config` (the same the runner got), without a UI
    /// (dialogs answer their defaults) and dropping every action.
    pub fn new(config: RunnerConfig) -> Self {
        Standalone {
            config,
            ui: None,
            actions: None,
            entries: Arc::new(Mutex::new(json!([]))),
        }
    }

    /// With `ui` answering the plugins' dialogs and showing their notifications and status
    /// (give the runner a mode with a UI, such as `PI_MODE_RPC`, so plugins know they can ask).
    pub fn with_ui(mut self, ui: Arc<dyn UiService>) -> Self {
        self.ui = Some(ui);
        self
    }

    /// With `sink` receiving every action the plugins take. Session operations and model
    /// changes are then accepted (the sink decides what they mean); without a sink they are
    /// refused with "this host has no sessions".
    pub fn with_actions(mut self, sink: ActionSink) -> Self {
        self.actions = Some(sink);
        self
    }

    /// The session entries plugins read (`session_entries`, `session_branch`, the leaf is
    /// the last one's `id`): replace the value behind the lock at any time.
    pub fn entries(&self) -> Arc<Mutex<Value>> {
        Arc::clone(&self.entries)
    }

    fn act(&self, call: &str, fields: Value) -> Result<(), String> {
        let Some(sink) = &self.actions else {
            return Ok(());
        };
        let mut action = serde_json::Map::new();
        action.insert("call".into(), call.into());
        if let Value::Object(fields) = fields {
            action.extend(fields);
        }
        sink(Value::Object(action));
        Ok(())
    }

    fn needs_sink(&self) -> Result<(), String> {
        match self.actions {
            Some(_) => Ok(()),
            None => Err("this host has no sessions".into()),
        }
    }
}

impl HostServices for Standalone {
    fn session_entries(&self) -> Value {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    fn session_branch(&self) -> Value {
        self.session_entries()
    }
    fn session_leaf_id(&self) -> Option<String> {
        self.session_entries()
            .as_array()
            .and_then(|e| e.last())
            .and_then(|e| e["id"].as_str())
            .map(str::to_owned)
    }
    fn session_name(&self) -> Option<String> {
        None
    }
    fn set_session_name(&self, name: &str) -> Result<(), String> {
        self.act("set_session_name", json!({"name": name}))
    }
    fn set_label(&self, entry_id: &str, label: Option<&str>) -> Result<(), String> {
        self.act("set_label", json!({"entryId": entry_id, "label": label}))
    }
    fn append_entry(&self, custom_type: &str, data: Option<Value>) -> Result<(), String> {
        self.act(
            "append_entry",
            json!({"customType": custom_type, "data": data}),
        )
    }
    fn send_message(&self, _plugin: &str, message: Value, options: Value) -> Result<(), String> {
        self.act(
            "send_message",
            json!({"message": message, "options": options}),
        )
    }
    fn send_user_message(
        &self,
        _plugin: &str,
        text: String,
        deliver_as: u32,
    ) -> Result<(), String> {
        let deliver_as = crate::services::deliver_as_name(deliver_as);
        self.act(
            "send_user_message",
            json!({"text": text, "deliverAs": deliver_as}),
        )
    }
    fn send_user_content(
        &self,
        _plugin: &str,
        content: Value,
        deliver_as: u32,
    ) -> Result<(), String> {
        let deliver_as = crate::services::deliver_as_name(deliver_as);
        self.act(
            "send_user_message",
            json!({"content": content, "deliverAs": deliver_as}),
        )
    }
    fn active_tools(&self) -> Vec<String> {
        Vec::new()
    }
    fn all_tools(&self) -> Value {
        json!([])
    }
    fn set_active_tools(&self, names: Vec<String>) {
        let _ = self.act("set_active_tools", json!({"names": names}));
    }
    fn is_idle(&self) -> bool {
        true
    }
    fn abort(&self) {
        let _ = self.act("abort", json!({}));
    }
    fn has_pending_messages(&self) -> bool {
        false
    }
    fn model(&self) -> Option<Value> {
        None
    }
    fn runner_config(&self) -> Option<RunnerConfig> {
        Some(self.config.clone())
    }
    fn report_error(&self, error: &ExtensionError) {
        eprintln!(
            "Extension error ({}): {}",
            crate::guards::display::escape(&error.extension_path),
            crate::guards::display::escape(&error.error)
        );
    }
    fn ui(&self) -> Option<Arc<dyn UiService>> {
        self.ui.clone()
    }
    fn request_session_op(&self, _plugin: &str, op: SessionOp) -> Result<(), String> {
        self.needs_sink()?;
        self.act(
            "session_op",
            crate::serve::client_services::session_op_params(op),
        )
    }
    fn request_model(&self, provider: &str, id: &str) -> Result<bool, String> {
        self.needs_sink()?;
        self.act("set_model", json!({"provider": provider, "id": id}))?;
        Ok(true)
    }
    fn request_shutdown(&self) {
        let _ = self.act("shutdown", json!({}));
    }
    fn observe_exec(&self, request: &Value, output: &Value) {
        let _ = self.act("exec", json!({"request": request, "result": output}));
    }
}
