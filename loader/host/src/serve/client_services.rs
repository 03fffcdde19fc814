//! The serve mode's [`HostServices`] and [`UiService`]: every plugin call that needs the
//! client becomes a `{"type":"request","id":"s<n>","method":…,"params":…}` line and blocks
//! the calling plugin's thread (only it) until the client's
//! `{"type":"response","id":…,"result"|"error":…}` arrives (read by the input task, which never
//! waits), a dialog's timeout passes, or stdin closes. Fire-and-forget UI calls go out as
//! `{"type":"notification","method":"ui","params":…}` lines and wait for nothing.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::runner::{ExtensionError, RunnerConfig};
use crate::serve::LineWriter;
use crate::services::{HostServices, SessionOp, UiService};

/// The requests waiting for the client's responses.
pub struct ClientLink {
    out: LineWriter,
    next: AtomicU64,
    waiting: Mutex<HashMap<String, Sender<Result<Value, String>>>>,
    closed: AtomicBool,
    /// The ring transport: responses are read from it by the waiting call itself.
    #[cfg(target_os = "linux")]
    ring: Option<Arc<super::ChildRing>>,
    /// Stdin read by its waiters (Unix): responses are read by the waiting call itself.
    #[cfg(unix)]
    stdin: Option<Arc<super::StdinLink>>,
}

impl ClientLink {
    /// A link writing its requests to `out`.
    pub fn new(out: LineWriter) -> Arc<Self> {
        Arc::new(ClientLink {
            out,
            next: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            #[cfg(target_os = "linux")]
            ring: None,
            #[cfg(unix)]
            stdin: None,
        })
    }

    /// A link over stdin read by its waiters: requests go out through `out` and each waits
    /// for its response on `stdin`, reading it itself when no other thread does.
    #[cfg(unix)]
    pub fn over_stdin(out: LineWriter, stdin: Arc<super::StdinLink>) -> Arc<Self> {
        Arc::new(ClientLink {
            out,
            next: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            #[cfg(target_os = "linux")]
            ring: None,
            stdin: Some(stdin),
        })
    }

    /// A link over the ring transport: requests go out through `out` (the ring's writer) and
    /// each waits for its response on `ring`.
    #[cfg(target_os = "linux")]
    pub fn over_ring(out: LineWriter, ring: Arc<super::ChildRing>) -> Arc<Self> {
        Arc::new(ClientLink {
            out,
            next: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            ring: Some(ring),
            stdin: None,
        })
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sender<Result<Value, String>>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends `method` with `params` and waits for the answer (`timeout` `None`: until the
    /// answer or stdin closes). `Err` names why there is no result.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, String> {
        if self.closed.load(Ordering::Acquire) {
            return Err("the serve client has gone (stdin closed)".into());
        }
        let id = format!("s{}", self.next.fetch_add(1, Ordering::Relaxed));
        #[cfg(target_os = "linux")]
        if let Some(ring) = &self.ring {
            ring.expect(&id);
            self.out.line(&json!({
                "type": "request",
                "id": id,
                "method": method,
                "params": params,
            }));
            return answered(method, ring.response(&id, timeout));
        }
        #[cfg(unix)]
        if let Some(stdin) = &self.stdin {
            stdin.expect(&id);
            self.out.line(&json!({
                "type": "request",
                "id": id,
                "method": method,
                "params": params,
            }));
            return answered(method, stdin.response(&id, timeout));
        }
        let (sender, receiver) = channel();
        self.waiting().insert(id.clone(), sender);
        self.out.line(&json!({
            "type": "request",
            "id": id,
            "method": method,
            "params": params,
        }));
        let answer = match timeout {
            Some(limit) => receiver
                .recv_timeout(limit)
                .map_err(|_| format!("the client did not answer {method} in time")),
            None => receiver
                .recv()
                .map_err(|_| "the serve client has gone (stdin closed)".to_owned()),
        };
        self.waiting().remove(&id);
        answer.and_then(|inner| inner)
    }

    /// Sends a notification (nothing is waited for).
    pub fn notify(&self, method: &str, params: Value) {
        self.out
            .line(&json!({"type": "notification", "method": method, "params": params}));
    }

    /// Hands a `response` line to the request with its `id`. `Err` (for an error line) when
    /// no request waits for that id.
    pub fn resolve(&self, response: &Value) -> Result<(), String> {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return Err(
                "a response needs a string \"id\" (the \"s<n>\" of the request it answers)".into(),
            );
        };
        let Some(waiter) = self.waiting().remove(id) else {
            return Err(format!(
                "no request with id {id:?} is waiting (answered already, timed out, or never sent)"
            ));
        };
        let answer = match response.get("error") {
            Some(error) if !error.is_null() => Err(match error.as_str() {
                Some(text) => text.to_owned(),
                None => error.to_string(),
            }),
            _ => Ok(response.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(answer);
        Ok(())
    }

    /// Stdin closed: every waiting request fails, new ones at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.waiting().clear();
        #[cfg(target_os = "linux")]
        if let Some(ring) = &self.ring {
            ring.close();
        }
        #[cfg(unix)]
        if let Some(stdin) = &self.stdin {
            stdin.close();
        }
    }
}

/// The services bound to every plugin in serve mode.
pub struct ClientServices {
    link: Arc<ClientLink>,
    config: RunnerConfig,
    ui: Arc<ClientUi>,
    /// The runner whose configuration (mode and session file, as the client's requests set
    /// them) timers and `exec` use; `config` until [`ClientServices::follow`].
    runner: std::sync::OnceLock<std::sync::Weak<crate::runner::Runner>>,
}

impl ClientServices {
    /// Services over `link`; timers and `exec` use `config`.
    pub fn new(link: Arc<ClientLink>, config: RunnerConfig) -> Self {
        let ui = Arc::new(ClientUi {
            link: link.clone(),
            isolated: AtomicBool::new(false),
        });
        ClientServices {
            link,
            config,
            ui,
            runner: std::sync::OnceLock::new(),
        }
    }

    /// Timers and `exec` use `runner`'s configuration from now on: the mode and session file
    /// the client's last request carried, as they would in the client's own process.
    pub fn follow(&self, runner: &Arc<crate::runner::Runner>) {
        let _ = self.runner.set(Arc::downgrade(runner));
    }

    fn ask(&self, method: &str, params: Value) -> Result<Value, String> {
        self.link.request(method, params, None)
    }

    /// Asks and turns a failure into `default`.
    fn read(&self, method: &str, default: Value) -> Value {
        self.ask(method, json!({})).unwrap_or(default)
    }

    /// Asks for `method` and keeps only whether it succeeded (the answer carries no value).
    fn ask_for_ack(&self, method: &str, params: Value) -> Result<(), String> {
        self.ask(method, params).map(|_| ())
    }
}

/// A [`SessionOp`] as the `params` of a `session_op` request.
pub(crate) fn session_op_params(op: SessionOp) -> Value {
    match op {
        SessionOp::New(parent) => json!({"op": "new", "parentSession": parent}),
        SessionOp::Switch(path) => json!({"op": "switch", "sessionPath": path}),
        SessionOp::Fork(entry) => json!({"op": "fork", "entryId": entry}),
        SessionOp::Tree(target, options) => json!({
            "op": "tree",
            "targetId": target,
            "summarize": options.summarize,
            "customInstructions": options.custom_instructions,
            "replaceInstructions": options.replace_instructions,
            "label": options.label,
        }),
        SessionOp::Compact(instructions) => {
            json!({"op": "compact", "customInstructions": instructions})
        }
        SessionOp::Reload => json!({"op": "reload"}),
    }
}

impl HostServices for ClientServices {
    fn session_entries(&self) -> Value {
        self.read("session_entries", json!([]))
    }

    fn session_branch(&self) -> Value {
        self.read("session_branch", json!([]))
    }

    fn session_leaf_id(&self) -> Option<String> {
        self.read("session_leaf_id", Value::Null)
            .as_str()
            .map(str::to_owned)
    }

    fn session_name(&self) -> Option<String> {
        self.read("session_name", Value::Null)
            .as_str()
            .map(str::to_owned)
    }

    fn set_session_name(&self, name: &str) -> Result<(), String> {
        self.ask_for_ack("set_session_name", json!({"name": name}))
    }

    fn set_label(&self, entry_id: &str, label: Option<&str>) -> Result<(), String> {
        self.ask_for_ack("set_label", json!({"entryId": entry_id, "label": label}))
    }

    fn append_entry(&self, custom_type: &str, data: Option<Value>) -> Result<(), String> {
        self.ask_for_ack(
            "append_entry",
            json!({"customType": custom_type, "data": data}),
        )
    }

    fn send_message(
        &self,
        plugin_path: &str,
        message: Value,
        options: Value,
    ) -> Result<(), String> {
        self.ask_for_ack(
            "send_message",
            json!({"extensionPath": plugin_path, "message": message, "options": options}),
        )
    }

    fn send_user_message(
        &self,
        plugin_path: &str,
        text: String,
        deliver_as: u32,
    ) -> Result<(), String> {
        let deliver_as = crate::services::deliver_as_name(deliver_as);
        self.ask_for_ack(
            "send_user_message",
            json!({"extensionPath": plugin_path, "text": text, "deliverAs": deliver_as}),
        )
    }

    fn send_user_content(
        &self,
        plugin_path: &str,
        content: Value,
        deliver_as: u32,
    ) -> Result<(), String> {
        let deliver_as = crate::services::deliver_as_name(deliver_as);
        self.ask_for_ack(
            "send_user_message",
            json!({"extensionPath": plugin_path, "content": content, "deliverAs": deliver_as}),
        )
    }

    fn active_tools(&self) -> Vec<String> {
        serde_json::from_value(self.read("active_tools", json!([]))).unwrap_or_default()
    }

    fn all_tools(&self) -> Value {
        self.read("all_tools", json!([]))
    }

    fn set_active_tools(&self, names: Vec<String>) {
        let _ = self.ask_for_ack("set_active_tools", json!({"names": names}));
    }

    fn is_run_aborted(&self) -> bool {
        self.read("is_aborted", Value::Bool(false))
            .as_bool()
            .unwrap_or(false)
    }

    fn is_project_trusted(&self) -> bool {
        self.read("is_project_trusted", Value::Bool(false))
            .as_bool()
            .unwrap_or(false)
    }

    fn system_prompt_options(&self) -> Option<Value> {
        Some(self.read("system_prompt_options", Value::Null)).filter(Value::is_object)
    }

    fn thinking_level(&self) -> String {
        match self.read("thinking_level", Value::Null) {
            Value::String(level) => level,
            _ => "off".to_owned(),
        }
    }

    fn is_idle(&self) -> bool {
        self.read("is_idle", Value::Bool(true))
            .as_bool()
            .unwrap_or(true)
    }

    fn abort(&self) {
        self.link.notify("abort", json!({}));
    }

    fn has_pending_messages(&self) -> bool {
        self.read("has_pending_messages", Value::Bool(false))
            .as_bool()
            .unwrap_or(false)
    }

    fn model(&self) -> Option<Value> {
        Some(self.read("model", Value::Null)).filter(|v| !v.is_null())
    }

    fn runner_config(&self) -> Option<RunnerConfig> {
        match self.runner.get().and_then(std::sync::Weak::upgrade) {
            Some(runner) => Some(runner.config()),
            None => Some(self.config.clone()),
        }
    }

    fn report_error(&self, error: &ExtensionError) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "Extension error ({}): {}",
            crate::guards::display::escape(&error.extension_path),
            crate::guards::display::escape(&error.error)
        );
        let mut line = serde_json::to_value(error).unwrap_or_default();
        line["type"] = "extension_error".into();
        self.link.out.line(&line);
    }

    fn ui(&self) -> Option<Arc<dyn UiService>> {
        Some(self.ui.clone())
    }

    fn request_session_op(&self, plugin_path: &str, op: SessionOp) -> Result<(), String> {
        let mut params = session_op_params(op);
        params["extensionPath"] = plugin_path.into();
        self.ask_for_ack("session_op", params)
    }

    fn request_model(&self, provider: &str, id: &str) -> Result<bool, String> {
        self.ask("set_model", json!({"provider": provider, "id": id}))
            .map(|answer| answer.as_bool().unwrap_or(false))
    }

    fn request_shutdown(&self) {
        self.link.notify("shutdown", json!({}));
    }

    fn wait_for_idle(&self) {
        let _ = self.ask("wait_for_idle", json!({}));
    }

    fn context_usage(&self) -> Option<Value> {
        Some(self.read("context_usage", Value::Null)).filter(|v| !v.is_null())
    }

    /// An isolated plugin's child: while the host's agent runs, a token a thread of this
    /// child cancels once the host says the run was aborted (it asks `is_aborted` every
    /// 100 ms until the `exec` holding the token has ended), so an `exec` with
    /// `PI_EXEC_CANCEL_ON_ABORT` stops as it does in process. Another client: none.
    fn run_abort_token(&self) -> Option<crate::services::CancelToken> {
        if !self.ui.isolated() || self.is_idle() {
            return None;
        }
        let token = crate::services::CancelToken::new();
        let watched = token.clone();
        let link = self.link.clone();
        let watcher = std::thread::Builder::new()
            .name("pi-hooks-abort-watch".into())
            .spawn(move || {
                while watched.is_shared() && !link.closed.load(Ordering::Acquire) {
                    let answer = link.request("is_aborted", json!({}), Some(ABORT_POLL * 10));
                    if answer.ok().and_then(|a| a.as_bool()) == Some(true) {
                        watched.cancel();
                        return;
                    }
                    std::thread::sleep(ABORT_POLL);
                }
            });
        // Without the thread the program runs to its end, as one without the flag does.
        watcher.ok().map(|_| token)
    }
}

/// How often an isolated plugin's child asks whether the run was aborted while an `exec`
/// that asked to be cancelled with it runs.
const ABORT_POLL: Duration = Duration::from_millis(100);

/// Plugins' `PiUiApi` calls: dialogs are `ui` requests, the rest `ui` notifications; an
/// isolated plugin's child also asks its host for the editor's text (`editor_text`) and
/// hands on the working message (`working_message`), which another client would not know.
pub struct ClientUi {
    link: Arc<ClientLink>,
    /// The client is the host of an isolated plugin (`serve --protocol-fd`).
    isolated: AtomicBool,
}

impl ClientUi {
    fn isolated(&self) -> bool {
        self.isolated.load(Ordering::Relaxed)
    }
}

impl UiService for ClientUi {
    fn dialog(&self, request: Value, timeout: Option<Duration>) -> Option<Value> {
        self.link.request("ui", request, timeout).ok()
    }

    fn fire(&self, request: Value) {
        self.link.notify("ui", request);
    }

    fn reset(&self) {
        self.link.notify("ui_reset", json!({}));
    }

    fn editor_text(&self) -> Option<String> {
        if !self.isolated() {
            return None;
        }
        self.link
            .request("editor_text", json!({}), None)
            .ok()
            .and_then(|text| text.as_str().map(str::to_owned))
    }

    fn set_working_message(&self, message: Option<String>) {
        if self.isolated() {
            self.link
                .notify("working_message", json!({"message": message}));
        }
    }
}

/// The bus of an isolated plugin's child, routed to its host (`crate::services::event_bus`'s
/// module doc): emissions are `bus_emit` notifications, later subscriptions `bus_on` ones.
struct HostBus(Arc<ClientLink>);

impl crate::services::event_bus::Remote for HostBus {
    fn emit(&self, channel: &str, data: &Value) -> Result<(), pi_hooks_abi::ffi::PiStatus> {
        if self.0.closed.load(Ordering::Acquire) {
            return Err(pi_hooks_abi::ffi::PI_ERR);
        }
        self.0
            .notify("bus_emit", json!({"channel": channel, "data": data}));
        Ok(())
    }

    fn subscribed(&self, channel: &str) {
        self.0.notify("bus_on", json!({"channel": channel}));
    }
}

impl ClientServices {
    /// Makes these services those of an isolated plugin's child (`serve --protocol-fd`), whose
    /// client is the host: the event bus goes to the host's, and the UI asks it for the
    /// editor's text and hands it the working message. Call it after the `hello`.
    pub fn serve_isolated_plugin(&self) {
        self.ui.isolated.store(true, Ordering::Relaxed);
        crate::services::event_bus::route_to(Box::new(HostBus(self.link.clone())));
    }
}

/// A response awaited over the ring or stdin, or why none came, in the words a plugin gets.
#[cfg(unix)]
fn answered(
    method: &str,
    response: Result<Result<Value, String>, super::stdin_link::Stopped>,
) -> Result<Value, String> {
    match response {
        Ok(answer) => answer,
        Err(super::stdin_link::Stopped::TimedOut) => {
            Err(format!("the client did not answer {method} in time"))
        }
        Err(super::stdin_link::Stopped::Closed) => {
            Err("the serve client has gone (stdin closed)".into())
        }
    }
}
