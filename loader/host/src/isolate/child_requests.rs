//! Answers an isolated plugin's `request` and `notification` lines (the table in
//! `docs/serve-protocol.md`, "Requests from `serve` to the client") through the host's own
//! services, with the context of the proxy's call in flight: a dialog goes to the session's
//! UI (its time paused on that call's clock, so it does not count against the handler's
//! timeout, as for an in-process plugin), a session operation is allowed where the call kind
//! allows it in process (most only from a command), a message is sent in the isolated
//! plugin's name. Plugin errors the child reports become the host's `Extension error`s with
//! the plugin's path.

use std::sync::Arc;
use std::time::Duration;

use pi_hooks_abi::ffi::PiContext;
use serde_json::{Value, json};

use super::child::Incoming;
use crate::host_api::context::{CallContext, CallKind, with_ctx};
use crate::host_api::value::CText;
use crate::plugin::state::PluginState;
use crate::runner::ExtensionError;
use crate::services::{HostServices, SessionOp, TreeOptions};

/// Runs `f` with the host-side context behind the call token `ctx` (`None` when the call has
/// returned or the token is not a live one).
fn with_call<T>(ctx: *mut PiContext, f: impl FnOnce(&CallContext<'_>) -> T) -> Option<T> {
    let mut out = None;
    with_ctx(ctx, (), |c| out = Some(f(c)));
    out
}

/// The `context` of a request to the child (docs/serve-protocol.md): the session file,
/// whether there is a UI, the mode and the system prompt, as the call behind `ctx` sees them;
/// `None` without a live call. The system prompt is left out when it is `sent`, the one the
/// child has already (the child keeps the last one it got); `sent` becomes the call's.
pub fn context_field(ctx: *mut PiContext, sent: &mut Option<Arc<CText>>) -> Option<String> {
    with_call(ctx, |c| {
        let prompt = c.scope_system_prompt();
        let known = sent
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &prompt) || s.as_str() == prompt.as_str());
        let mut context = json!({
            "sessionFile": c.session_file(),
            "hasUI": c.has_ui(),
            "mode": c.mode(),
        });
        if !known {
            context["systemPrompt"] = prompt.as_str().into();
        }
        *sent = Some(prompt);
        context.to_string()
    })
}

/// What answers the lines of one child for one call into the proxy.
pub struct Answerer<'a> {
    /// The proxy's host-side state (its path is the isolated plugin's).
    pub state: &'a PluginState,
    /// The context of the call in flight (`None` for calls without one: render,
    /// completions).
    pub ctx: Option<*mut PiContext>,
    /// Where a tool's partial results go (a `tool` call only).
    pub on_tool_update: Option<&'a dyn Fn(&Value)>,
    /// The last refusal the child's sandbox reported during this call (`action: reason`),
    /// for the crash report should the child die right after it.
    pub last_refusal: std::cell::RefCell<Option<String>>,
}

impl<'a> Answerer<'a> {
    /// An answerer for one call into the proxy of `state`.
    pub fn new(
        state: &'a PluginState,
        ctx: Option<*mut PiContext>,
        on_tool_update: Option<&'a dyn Fn(&Value)>,
    ) -> Self {
        Answerer {
            state,
            ctx,
            on_tool_update,
            last_refusal: std::cell::RefCell::new(None),
        }
    }
}

impl Answerer<'_> {
    /// Handles one line; a request's answer is returned.
    pub fn take(&self, line: Incoming<'_>) -> Option<Result<Value, String>> {
        match line {
            Incoming::Request { method, params } => {
                if !crate::observe::trace::on() {
                    return Some(self.perform_request(method, params));
                }
                let started = std::time::Instant::now();
                let answer = self.perform_request(method, params);
                self.trace_request(method, params, &answer, started.elapsed());
                Some(answer)
            }
            Incoming::Notification { method, params } => {
                self.notified(method, params);
                None
            }
            Incoming::ExtensionError { event, error } => {
                if let Some(services) = self.state.services() {
                    services.report_error(&ExtensionError {
                        extension_path: self.state.path.clone(),
                        event: event.to_owned(),
                        error: error.to_owned(),
                    });
                }
                None
            }
            Incoming::ToolUpdate(partial) => {
                if let Some(on_update) = self.on_tool_update {
                    on_update(partial);
                }
                None
            }
        }
    }

    fn services(&self) -> Result<Arc<dyn HostServices>, String> {
        self.state.services().ok_or_else(|| {
            "not available: the host has no session bound to the plugin yet".to_owned()
        })
    }

    /// The kind of the call in flight, if there is one.
    fn kind(&self) -> Option<CallKind> {
        with_call(self.ctx?, |c| c.kind())
    }

    /// Performs the child's request `method` through the host's services and gives the value
    /// that goes back to the child.
    fn perform_request(&self, method: &str, params: &Value) -> Result<Value, String> {
        let services = self.services()?;
        let s = services.as_ref();
        let text = |field: &str| {
            params
                .get(field)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("{method} needs a string {field:?}"))
        };
        let path = self.state.path.as_str();
        let no_value = |result: Result<(), String>| result.map(|()| Value::Null);
        match method {
            "ui" => Ok(self.dialog(s, params)),
            "editor_text" => Ok(Value::String(
                s.ui().and_then(|ui| ui.editor_text()).unwrap_or_default(),
            )),
            "send_message" => no_value(s.send_message(
                path,
                params.get("message").cloned().unwrap_or(Value::Null),
                params.get("options").cloned().unwrap_or(Value::Null),
            )),
            "send_user_message" => {
                let deliver_as = crate::services::deliver_as_code(
                    params.get("deliverAs").and_then(Value::as_str),
                );
                match params.get("content").filter(|c| !c.is_null()) {
                    Some(content) if crate::services::is_user_content(content) => {
                        no_value(s.send_user_content(path, content.clone(), deliver_as))
                    }
                    Some(_) => Err(
                        "send_user_message: content must be an array of text and image blocks"
                            .into(),
                    ),
                    None => no_value(s.send_user_message(path, text("text")?, deliver_as)),
                }
            }
            "append_entry" => no_value(s.append_entry(
                &text("customType")?,
                params.get("data").filter(|d| !d.is_null()).cloned(),
            )),
            "session_entries" => Ok(s.session_entries()),
            "session_branch" => Ok(s.session_branch()),
            "session_leaf_id" => Ok(s.session_leaf_id().map_or(Value::Null, Value::String)),
            "session_name" => Ok(s.session_name().map_or(Value::Null, Value::String)),
            "set_session_name" => no_value(s.set_session_name(&text("name")?)),
            "set_label" => no_value(s.set_label(
                &text("entryId")?,
                params.get("label").and_then(Value::as_str),
            )),
            "active_tools" => Ok(json!(s.active_tools())),
            "all_tools" => Ok(s.all_tools()),
            "set_active_tools" => {
                let names = params
                    .get("names")
                    .and_then(Value::as_array)
                    .map(|names| {
                        names
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                s.set_active_tools(names);
                Ok(Value::Null)
            }
            "is_idle" => Ok(Value::Bool(s.is_idle())),
            "is_aborted" => Ok(Value::Bool(s.is_run_aborted())),
            "has_pending_messages" => Ok(Value::Bool(s.has_pending_messages())),
            "model" => Ok(s.model().unwrap_or(Value::Null)),
            "context_usage" => Ok(s.context_usage().unwrap_or(Value::Null)),
            "session_op" => {
                let op = self.check_session_path(session_op(params)?)?;
                let from_command = self.kind() == Some(CallKind::Command);
                if !from_command && !matches!(op, SessionOp::Compact(_)) {
                    return Err(
                        "this session operation is only available in a command handler".into(),
                    );
                }
                no_value(s.request_session_op(path, op))
            }
            "set_model" => s
                .request_model(&text("provider")?, &text("id")?)
                .map(Value::Bool),
            "wait_for_idle" => {
                if self.kind() != Some(CallKind::Command) {
                    return Err("wait_for_idle is only available in a command handler".into());
                }
                s.wait_for_idle();
                Ok(Value::Null)
            }
            other => Err(format!(
                "the host does not know the request method {:?}",
                crate::guards::display::escape(other)
            )),
        }
    }

    /// A confined plugin (crate::sandbox) may switch to a session file only where its grant
    /// lets it read and write: the host reads and appends to that file on its behalf. A
    /// relative path is resolved against the session's working directory, once; the file is
    /// checked and opened here, by one handle ([`crate::sandbox::open_checked`]: a regular
    /// file whose real path lies in the grant), and the switch uses that handle
    /// ([`crate::sandbox::take_opened`]), so a swap during `session_before_switch` changes
    /// nothing. The operation goes on with the absolute path.
    fn check_session_path(&self, op: SessionOp) -> Result<SessionOp, String> {
        let Some(grant) = crate::sandbox::held(&self.state.path) else {
            return Ok(op);
        };
        let SessionOp::Switch(file) = &op else {
            return Ok(op);
        };
        let report = |reason: &String| {
            if let Ok(services) = self.services() {
                let params = json!({"action": "switchSession", "reason": reason, "plugin": grant.plugin, "grant": grant.summary(), "source": grant.source});
                crate::sandbox::report::show(self.state, &params, services.as_ref());
            }
        };
        let named = std::path::Path::new(file);
        let path = if named.is_absolute() {
            crate::sandbox::grant::normalize(named)
        } else {
            let cwd = self
                .services()
                .ok()
                .and_then(|s| s.runner_config())
                .map(|c| std::path::PathBuf::from(c.cwd))
                .filter(|cwd| cwd.is_absolute());
            let Some(cwd) = cwd else {
                let reason = format!(
                    "switchSession of {} denied: a relative path, and the session's working directory is not known; name the session file by an absolute path",
                    crate::guards::display::escape(file)
                );
                report(&reason);
                return Err(reason);
            };
            crate::sandbox::grant::normalize(&cwd.join(named))
        };
        #[cfg(target_os = "linux")]
        {
            let opened = crate::sandbox::open_checked(&grant, "switchSession", &path, true)
                .inspect_err(report)?;
            crate::sandbox::keep_opened(&path, opened);
        }
        #[cfg(not(target_os = "linux"))]
        crate::sandbox::check_path(&grant, "switchSession", &path, true).inspect_err(report)?;
        Ok(SessionOp::Switch(path.to_string_lossy().into_owned()))
    }

    /// A dialog: the session's UI answers (the wait paused on the call's clock), or, without
    /// a UI or a call, `{"cancelled": true}`, which the plugin reads as the dialog's default.
    fn dialog(&self, services: &dyn HostServices, request: &Value) -> Value {
        let cancelled = || json!({"cancelled": true});
        let Some(ui) = services.ui() else {
            return cancelled();
        };
        let Some(ctx) = self.ctx else {
            return cancelled();
        };
        let timeout = request
            .get("timeout")
            .and_then(Value::as_u64)
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis);
        with_call(ctx, |c| {
            c.pause_clock()
                .pause(|| ui.dialog(request.clone(), timeout))
        })
        .flatten()
        .unwrap_or_else(cancelled)
    }

    /// Reports a request of the child to the hook trace: a dialog with its answer, or an
    /// action (reads of the session are not reported).
    fn trace_request(
        &self,
        method: &str,
        params: &Value,
        answer: &Result<Value, String>,
        elapsed: Duration,
    ) {
        if method == "ui" {
            let shown = self.state.services().and_then(|s| s.ui()).is_some();
            let ui_method = params["method"].as_str().unwrap_or_default();
            let reply = answer.as_ref().ok();
            crate::observe::trace::ui(self.state, ui_method, params, shown, reply, Some(elapsed));
            return;
        }
        let action = match method {
            "send_message" => "sendMessage",
            "send_user_message" => "sendUserMessage",
            "append_entry" => "appendEntry",
            "set_session_name" => "setSessionName",
            "set_label" => "setLabel",
            "set_active_tools" => "setActiveTools",
            "set_model" => "setModel",
            "wait_for_idle" => "waitForIdle",
            "session_op" => match params["op"].as_str() {
                Some("new") => "newSession",
                Some("switch") => "switchSession",
                Some("tree") => "navigateTree",
                Some("fork") => "fork",
                Some("compact") => "compact",
                Some("reload") => "reload",
                _ => "session_op",
            },
            _ => return,
        };
        let outcome = match answer {
            Ok(Value::Null) => Ok(None),
            Ok(value) => Ok(Some(value)),
            Err(message) => Err(message.as_str()),
        };
        crate::observe::trace::action(self.state, action, params, outcome, None);
    }

    fn notified(&self, method: &str, params: &Value) {
        // The event bus: the proxy's business, with or without a session.
        if super::proxy::child_notification(self.state, method, params) {
            return;
        }
        let Ok(services) = self.services() else {
            if method == "denied" {
                // No session to show it in: stderr, so a refusal is never lost.
                crate::sandbox::report::show_unbound(self.state, params);
            }
            return;
        };
        if crate::observe::trace::on() {
            match method {
                "ui" => {
                    let ui_method = params["method"].as_str().unwrap_or_default();
                    let shown = services.ui().is_some();
                    crate::observe::trace::ui(self.state, ui_method, params, shown, None, None);
                }
                "abort" | "shutdown" => {
                    crate::observe::trace::action(self.state, method, &json!({}), Ok(None), None);
                }
                _ => {}
            }
        }
        match method {
            "ui" => {
                if let Some(ui) = services.ui() {
                    ui.fire(params.clone());
                }
            }
            "ui_reset" => {
                if let Some(ui) = services.ui() {
                    ui.reset();
                }
            }
            "working_message" => {
                if let Some(ui) = services.ui() {
                    let message = params.get("message").and_then(Value::as_str);
                    ui.set_working_message(message.map(str::to_owned));
                }
            }
            "abort" => services.abort(),
            "shutdown" => services.request_shutdown(),
            // A confined child refused its plugin something (crate::sandbox::report).
            "denied" => {
                let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
                // One made while the child loaded the plugin arrives during the first call,
                // but did not happen in it.
                if params.get("atLoad") != Some(&Value::Bool(true)) {
                    *self.last_refusal.borrow_mut() =
                        Some(format!("{}: {}", text("action"), text("reason")));
                }
                crate::sandbox::report::show(self.state, params, services.as_ref())
            }
            _ => {}
        }
    }
}

/// A `session_op` request's parameters as a [`SessionOp`].
fn session_op(params: &Value) -> Result<SessionOp, String> {
    let text = |field: &str| params.get(field).and_then(Value::as_str).map(str::to_owned);
    let needed = |field: &str| text(field).ok_or_else(|| format!("session_op needs {field:?}"));
    match params.get("op").and_then(Value::as_str) {
        Some("new") => Ok(SessionOp::New(text("parentSession"))),
        Some("switch") => Ok(SessionOp::Switch(needed("sessionPath")?)),
        Some("fork") => Ok(SessionOp::Fork(needed("entryId")?)),
        Some("tree") => Ok(SessionOp::Tree(
            needed("targetId")?,
            TreeOptions {
                summarize: params
                    .get("summarize")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                custom_instructions: text("customInstructions"),
                replace_instructions: params.get("replaceInstructions").and_then(Value::as_bool),
                label: text("label"),
            },
        )),
        Some("compact") => Ok(SessionOp::Compact(text("customInstructions"))),
        Some("reload") => Ok(SessionOp::Reload),
        other => Err(format!(
            "session_op: unknown op {}",
            other.map_or("(none)".to_owned(), |o| format!(
                "{:?}",
                crate::guards::display::escape(o)
            ))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_session_operations() {
        assert_eq!(
            session_op(&json!({"op": "fork", "entryId": "e1"})),
            Ok(SessionOp::Fork("e1".into()))
        );
        assert_eq!(
            session_op(&json!({"op": "tree", "targetId": "t", "summarize": true, "label": "x"})),
            Ok(SessionOp::Tree(
                "t".into(),
                TreeOptions {
                    summarize: true,
                    label: Some("x".into()),
                    ..TreeOptions::default()
                }
            ))
        );
        assert!(
            session_op(&json!({"op": "fork"}))
                .unwrap_err()
                .contains("entryId")
        );
        assert!(
            session_op(&json!({"op": "teleport"}))
                .unwrap_err()
                .contains("unknown op")
        );
    }
}
