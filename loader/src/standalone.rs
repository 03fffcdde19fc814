//! [`Standalone`]: the session services for a program that embeds the host without a
//! session of pi's kind (an agent of its own, an editor): plugins get its UI, their
//! messages and entries go to callbacks it chooses (or nowhere), session reads answer empty,
//! and plugin errors go to stderr as `Extension error (<path>): <message>` lines unless it
//! listens with [`crate::Runner::on_error`].

use std::sync::Arc;

use serde_json::{Value, json};

use crate::runner::{ExtensionError, RunnerConfig};
use crate::services::{HostServices, UiService};

/// Called with each message or entry a plugin sends: `{"call": "send_message", message,
/// options}`, `{"call": "send_user_message", text, deliverAs}` or `{"call": "append_entry",
/// customType, data}`.
pub type ActionSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Session services for an embedding program (see the module documentation).
#[derive(Clone)]
pub struct Standalone {
    config: RunnerConfig,
    ui: Option<Arc<dyn UiService>>,
    actions: Option<ActionSink>,
}

impl Standalone {
    /// Services for a runner built with `config` (the same the runner got), without a UI
    /// (dialogs answer their defaults) and dropping messages and entries.
    pub fn new(config: RunnerConfig) -> Self {
        Standalone {
            config,
            ui: None,
            actions: None,
        }
    }

    /// With `ui` answering the plugins' dialogs and showing their notifications and status
    /// (give the runner a mode with a UI, such as `PI_MODE_RPC`, so plugins know they can ask).
    pub fn with_ui(mut self, ui: Arc<dyn UiService>) -> Self {
        self.ui = Some(ui);
        self
    }

    /// With `sink` receiving the plugins' messages and entries.
    pub fn with_actions(mut self, sink: ActionSink) -> Self {
        self.actions = Some(sink);
        self
    }

    fn act(&self, action: Value) -> Result<(), String> {
        if let Some(sink) = &self.actions {
            sink(action);
        }
        Ok(())
    }
}

impl HostServices for Standalone {
    fn session_entries(&self) -> Value {
        json!([])
    }
    fn session_branch(&self) -> Value {
        json!([])
    }
    fn session_leaf_id(&self) -> Option<String> {
        None
    }
    fn session_name(&self) -> Option<String> {
        None
    }
    fn set_session_name(&self, _name: &str) -> Result<(), String> {
        Ok(())
    }
    fn set_label(&self, _entry_id: &str, _label: Option<&str>) -> Result<(), String> {
        Ok(())
    }
    fn append_entry(&self, custom_type: &str, data: Option<Value>) -> Result<(), String> {
        self.act(json!({"call": "append_entry", "customType": custom_type, "data": data}))
    }
    fn send_message(&self, _plugin: &str, message: Value, options: Value) -> Result<(), String> {
        self.act(json!({"call": "send_message", "message": message, "options": options}))
    }
    fn send_user_message(
        &self,
        _plugin: &str,
        text: String,
        deliver_as: u32,
    ) -> Result<(), String> {
        self.act(json!({"call": "send_user_message", "text": text, "deliverAs": deliver_as}))
    }
    fn active_tools(&self) -> Vec<String> {
        Vec::new()
    }
    fn all_tools(&self) -> Value {
        json!([])
    }
    fn set_active_tools(&self, _names: Vec<String>) {}
    fn is_idle(&self) -> bool {
        true
    }
    fn abort(&self) {}
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
            crate::display::escape(&error.extension_path),
            crate::display::escape(&error.error)
        );
    }
    fn ui(&self) -> Option<Arc<dyn UiService>> {
        self.ui.clone()
    }
}
