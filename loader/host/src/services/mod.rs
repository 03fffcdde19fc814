//! What a running session offers plugins: the bridge from the host-service tables
//! (`host_api`) to the agent loop and session store. A mode binds one [`HostServices`] to
//! every loaded plugin; before that (and in `pi-hooks inspect`) the services answer
//! `PI_ERR_UNAVAILABLE`, as pi's actions do before a mode binds them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

mod cancel;
pub mod event_bus;
pub mod exec;
pub mod runtime;
pub mod standalone;
pub mod timers;

pub use cancel::CancelToken;

use crate::plugin::call::{ExtensionError, RunnerConfig};

/// The session-side services plugins reach through `PiActionsApi` and `PiContextApi`.
/// Actions that lead to events are queued by the implementation and run after the current
/// plugin call returns, so a plugin never re-enters itself.
pub trait HostServices: Send + Sync {
    /// All session entries in file order.
    fn session_entries(&self) -> Value;
    /// The current branch, root first.
    fn session_branch(&self) -> Value;
    /// The current leaf entry's id.
    fn session_leaf_id(&self) -> Option<String>;
    /// The session's display name.
    fn session_name(&self) -> Option<String>;
    /// Sets the session's display name.
    fn set_session_name(&self, name: &str) -> Result<(), String>;
    /// Sets or clears the label of an entry.
    fn set_label(&self, entry_id: &str, label: Option<&str>) -> Result<(), String>;
    /// Appends a `custom` entry (on disk when this returns).
    fn append_entry(&self, custom_type: &str, data: Option<Value>) -> Result<(), String>;
    /// Queues a custom message (`options`: `triggerTurn`, `deliverAs`).
    fn send_message(&self, plugin_path: &str, message: Value, options: Value)
    -> Result<(), String>;
    /// Queues text as if the user typed it; `deliver_as` is a `PI_DELIVER_*`.
    fn send_user_message(
        &self,
        plugin_path: &str,
        text: String,
        deliver_as: u32,
    ) -> Result<(), String>;
    /// Queues content blocks (text and images, pi's `sendUserMessage` with an array) as if
    /// the user typed them. A host that cannot carry images refuses content that has one.
    fn send_user_content(
        &self,
        plugin_path: &str,
        content: Value,
        deliver_as: u32,
    ) -> Result<(), String> {
        let (text, images) = split_user_content(&content);
        if images.is_some() {
            return Err("this host cannot send images in a user message".into());
        }
        self.send_user_message(plugin_path, text, deliver_as)
    }
    /// Names of the active tools.
    fn active_tools(&self) -> Vec<String>;
    /// All tools as `{name, description, parameters}`.
    fn all_tools(&self) -> Value;
    /// Sets the active tools (unknown names are ignored).
    fn set_active_tools(&self, names: Vec<String>);
    /// Whether the agent is idle.
    fn is_idle(&self) -> bool;
    /// Aborts the current run (takes effect after the current call).
    fn abort(&self);
    /// Whether steering or follow-up messages wait.
    fn has_pending_messages(&self) -> bool;
    /// The current model as `{provider, id, ...}`.
    fn model(&self) -> Option<Value>;
    /// How the session's runner calls plugins (cwd, mode, `hookTimeout`, session file): calls
    /// the host makes outside an event dispatch (timer callbacks, `exec`'s default cwd) use
    /// the same. `None` once the session has ended.
    fn runner_config(&self) -> Option<RunnerConfig>;
    /// Reports the failure of a call made outside an event dispatch (a timer callback) to the
    /// mode's error listeners, as a handler error is reported (print and JSON mode: an
    /// `Extension error` line on stderr, and an `extension_error` line in JSON mode).
    fn report_error(&self, error: &ExtensionError);
    /// The mode's user interface, when it has one (RPC): `PiUiApi` dialogs and setters go
    /// there. `None` (the default): dialogs answer their defaults at once.
    fn ui(&self) -> Option<Arc<dyn UiService>> {
        None
    }
    /// Asks for a session operation, performed once the plugin command that asked has
    /// returned. `Err` when the mode offers no sessions.
    fn request_session_op(&self, plugin_path: &str, op: SessionOp) -> Result<(), String> {
        let _ = (plugin_path, op);
        Err("this mode has no session to change".into())
    }
    /// Selects the model `provider`/`id` from the next model call on (`model_select`
    /// follows once the current call has returned). `Ok(false)` when the provider does not
    /// offer it.
    fn request_model(&self, provider: &str, id: &str) -> Result<bool, String> {
        let _ = (provider, id);
        Err("this mode has no model".into())
    }
    /// Asks the host to shut down (pi's `ctx.shutdown()`): RPC mode ends once the current
    /// command is over (`session_shutdown`, exit 0); print and JSON modes end after their
    /// prompts anyway, so there it changes nothing.
    fn request_shutdown(&self) {}
    /// Blocks until the agent is idle (a command's `waitForIdle`).
    fn wait_for_idle(&self) {}
    /// The abort token of the agent's current run, `None` when no run is going (an `exec`
    /// with `PI_EXEC_CANCEL_ON_ABORT` stops when it is cancelled).
    fn run_abort_token(&self) -> Option<crate::services::CancelToken> {
        None
    }
    /// Whether the agent's current run was aborted (pi's `ctx.signal.aborted`): false when no
    /// run is going (the last run's token stays cancelled after it ended). A `serve` child
    /// asks its client.
    fn is_run_aborted(&self) -> bool {
        !self.is_idle() && self.run_abort_token().is_some_and(|t| t.is_cancelled())
    }
    /// Context window usage `{tokens, contextWindow, percent}`, when known.
    fn context_usage(&self) -> Option<Value> {
        None
    }
    /// Whether project-local trust is active (pi's `ctx.isProjectTrusted()`, ABI 1.7).
    /// False unless the host knows better; a `serve` child asks its client (pi's answer).
    fn is_project_trusted(&self) -> bool {
        false
    }
    /// The options the base system prompt is built from (pi's
    /// `ctx.getSystemPromptOptions()`, ABI 1.7); `None`: `{cwd}` only.
    fn system_prompt_options(&self) -> Option<Value> {
        None
    }
    /// The current thinking level (pi's `ctx.thinkingLevel`, ABI 1.7): `"off"` for a host
    /// without thinking levels.
    fn thinking_level(&self) -> String {
        "off".to_owned()
    }
    /// Sees a finished `exec` of the plugin: the request `{program, args, cwd, timeoutMs}`
    /// and what it produced (the value the plugin got). Nothing by default; `pi-hooks emit`
    /// and `crate::testing` record it.
    fn observe_exec(&self, request: &Value, output: &Value) {
        let _ = (request, output);
    }
}

/// The `input` text (the text blocks joined with newlines, as pi joins them) and the image
/// blocks (`None` when there are none) of user-message content.
pub fn split_user_content(content: &Value) -> (String, Option<Value>) {
    let blocks = content.as_array().map(Vec::as_slice).unwrap_or_default();
    let text = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let images: Vec<Value> = blocks
        .iter()
        .filter(|b| b["type"] == "image")
        .cloned()
        .collect();
    (text, (!images.is_empty()).then_some(Value::Array(images)))
}

/// Whether `content` is user-message content: an array of `{"type":"text","text":…}` and
/// `{"type":"image","data":…,"mimeType":…}` blocks.
pub fn is_user_content(content: &Value) -> bool {
    content.as_array().is_some_and(|blocks| {
        blocks.iter().all(|b| match b["type"].as_str() {
            Some("text") => b["text"].is_string(),
            Some("image") => b["data"].is_string() && b["mimeType"].is_string(),
            _ => false,
        })
    })
}

/// pi's name of a `PI_DELIVER_*` (`default`, `steer`, `followUp`, `nextTurn`), as the serve
/// protocol and the recorded actions write it.
pub fn deliver_as_name(deliver_as: u32) -> &'static str {
    use pi_hooks_abi::ffi::{PI_DELIVER_FOLLOW_UP, PI_DELIVER_NEXT_TURN, PI_DELIVER_STEER};
    match deliver_as {
        PI_DELIVER_STEER => "steer",
        PI_DELIVER_FOLLOW_UP => "followUp",
        PI_DELIVER_NEXT_TURN => "nextTurn",
        _ => "default",
    }
}

/// The `PI_DELIVER_*` of pi's name (anything else: `PI_DELIVER_DEFAULT`).
pub fn deliver_as_code(name: Option<&str>) -> u32 {
    use pi_hooks_abi::ffi::*;
    match name {
        Some("steer") => PI_DELIVER_STEER,
        Some("followUp") => PI_DELIVER_FOLLOW_UP,
        Some("nextTurn") => PI_DELIVER_NEXT_TURN,
        _ => PI_DELIVER_DEFAULT,
    }
}

/// Options of a tree navigation (pi's `navigateTree` options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeOptions {
    /// Summarize the branch left behind.
    pub summarize: bool,
    /// Instructions for the summary.
    pub custom_instructions: Option<String>,
    /// Whether `custom_instructions` replaces the default summary prompt.
    pub replace_instructions: Option<bool>,
    /// A label for the summary entry (or the target, without a summary).
    pub label: Option<String>,
}

/// A session operation a plugin command asked for (`PiContextApi`); the agent performs it
/// once the command has returned, so the asking plugin is never re-entered by the events it
/// leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionOp {
    /// A new session (`parentSession` for its header).
    New(Option<String>),
    /// Resume another session file.
    Switch(String),
    /// Fork before a user message.
    Fork(String),
    /// Move to another entry of the session tree.
    Tree(String, TreeOptions),
    /// Compact the context (custom instructions).
    Compact(Option<String>),
    /// Reload every plugin (`/reload`).
    Reload,
}

/// A mode's user interface as plugins reach it through `PiUiApi`. Requests are pi's
/// `extension_ui_request` objects without `type` and `id` (`method` and its fields, such as
/// `{"method":"confirm","title":…,"message":…,"timeout":5000}`); the mode turns them into its
/// own medium.
pub trait UiService: Send + Sync {
    /// Shows a dialog and blocks the calling thread (only it) until the answer: pi's
    /// `extension_ui_response` object (`confirmed`, `value` or `cancelled`), or `None` when
    /// `timeout` passed or the UI went away, which the caller turns into the dialog's default.
    fn dialog(&self, request: Value, timeout: Option<Duration>) -> Option<Value>;
    /// Sends a fire-and-forget request (`notify`, `setStatus`, `setWidget`, `setTitle`,
    /// `set_editor_text`); nothing is waited for.
    fn fire(&self, request: Value);
    /// Clears every status and widget plugins set (after `/reload`, as pi clears them).
    fn reset(&self) {}
    /// The text in the mode's prompt editor (`get_editor_text`); `None` (the default) where
    /// the mode has no editor of its own, which plugins read as `""`.
    fn editor_text(&self) -> Option<String> {
        None
    }
    /// Sets (`Some`) or resets (`None`) the message shown while the agent works; modes
    /// without such a line ignore it (the default), as pi's RPC mode does.
    fn set_working_message(&self, message: Option<String>) {
        let _ = message;
    }
}
