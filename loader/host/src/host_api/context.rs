//! `PiContext` on the host side: the context of one call into a plugin.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pi_hooks_abi::ffi::*;

use super::value::{CText, HostValue};
use super::{barrier, read_str};
use crate::guards::handles;
use crate::plugin::state::PluginState;
use crate::services::{HostServices, SessionOp, TreeOptions};

/// What a call into a plugin left besides its status and result: the error message it set
/// (or the host's reason for not calling it) and the system prompt it set (the rare parts of
/// a [`crate::plugin::call::CallOutcome`]).
#[derive(Debug, Default)]
pub struct CallDetail {
    /// The error message the plugin set (or the host's reason for not calling it).
    pub error: Option<String>,
    /// The system prompt it set through `set_system_prompt` (before_agent_start).
    pub system_prompt: Option<String>,
}

/// What kind of call a context belongs to; decides which context functions work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// An event handler.
    Event,
    /// `before_agent_start`: the system prompt may be replaced.
    BeforeAgentStart,
    /// A command handler: session control allowed.
    Command,
    /// A tool's execute: `tool_update` allowed.
    Tool,
    /// A timer callback.
    Timer,
}

/// What every call of one dispatch shares: where, in which mode, and for what kind of call.
/// pi builds one context per emission; so does the host, and each handler call gets a small
/// [`CallContext`] pointing at it.
pub struct CallScope {
    kind: CallKind,
    cwd: CText,
    mode: u32,
    has_ui: bool,
    session_file: Option<CText>,
    /// The system prompt handlers see; replaced only by the runner between calls. Contexts
    /// keep the `Arc` they read, so a replacement never frees text a plugin still holds.
    system_prompt: Mutex<Arc<CText>>,
    pause: PauseClock,
}

/// Time spent in UI dialogs during a dispatch: it does not count against handler timeouts.
#[derive(Debug, Default)]
pub struct PauseClock {
    in_dialog: AtomicUsize,
    paused_ns: AtomicU64,
}

impl PauseClock {
    /// Runs `f` (a dialog) with the clock paused.
    pub fn pause<T>(&self, f: impl FnOnce() -> T) -> T {
        self.in_dialog.fetch_add(1, Ordering::AcqRel);
        let started = std::time::Instant::now();
        let result = f();
        let spent = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.paused_ns.fetch_add(spent, Ordering::AcqRel);
        self.in_dialog.fetch_sub(1, Ordering::AcqRel);
        result
    }

    /// Total time spent in dialogs so far.
    pub fn paused(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.paused_ns.load(Ordering::Acquire))
    }

    /// Whether a dialog is open right now.
    pub fn in_dialog(&self) -> bool {
        self.in_dialog.load(Ordering::Acquire) > 0
    }
}

impl CallScope {
    /// A scope for calls of `kind` in `cwd` and `mode` (a `PI_MODE_*`).
    pub fn new(kind: CallKind, cwd: &str, mode: u32) -> Self {
        CallScope {
            kind,
            cwd: CText::new(cwd),
            mode,
            has_ui: matches!(mode, PI_MODE_RPC | PI_MODE_INTERACTIVE),
            session_file: None,
            system_prompt: Mutex::new(Arc::new(CText::new(""))),
            pause: PauseClock::default(),
        }
    }

    /// The dialog clock of this dispatch.
    pub fn pause_clock(&self) -> &PauseClock {
        &self.pause
    }

    /// Sets the session file the plugin sees.
    pub fn with_session_file(mut self, path: Option<&str>) -> Self {
        self.session_file = path.map(CText::new);
        self
    }

    /// The kind of call.
    pub fn kind(&self) -> CallKind {
        self.kind
    }

    /// The system prompt handlers see.
    pub fn system_prompt(&self) -> Arc<CText> {
        self.system_prompt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the system prompt plugins see from now on (the runner chains it).
    pub fn replace_system_prompt(&self, prompt: &str) {
        *self.system_prompt.lock().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(CText::new(prompt));
    }
}

/// The context of one call into one plugin; the plugin's `PiContext *` token leads here for
/// the call. It is used only on the thread running the call (the token is refused elsewhere,
/// see `crate::guards::handles`), one host function at a time, so its cells need no lock. What a
/// call rarely leaves (an error message, system prompts) lives in a box made on first use, so
/// a context costs a few stores to make and nothing to finish.
pub struct CallContext<'s> {
    scope: &'s CallScope,
    plugin: &'s PluginState,
    tool_update: Option<&'s (dyn Fn(serde_json::Value) + Sync)>,
    left: RefCell<Option<Box<LeftByCall>>>,
}

/// What a call left in its context besides its result.
#[derive(Default)]
struct LeftByCall {
    error: Option<String>,
    /// Prompts this call read or set, newest last; kept so earlier reads stay valid.
    prompts: Vec<Arc<CText>>,
    prompt_set: bool,
    /// Other texts this call read (the thinking level), kept until it returns.
    texts: Vec<Arc<CText>>,
}

impl<'s> CallContext<'s> {
    /// A context for a call into `plugin` within `scope`.
    #[inline]
    pub fn new(scope: &'s CallScope, plugin: &'s PluginState) -> Self {
        CallContext {
            scope,
            plugin,
            tool_update: None,
            left: RefCell::new(None),
        }
    }

    /// Lets a tool's execute stream partial results to `on_update`.
    pub fn with_tool_update(mut self, on_update: &'s (dyn Fn(serde_json::Value) + Sync)) -> Self {
        self.tool_update = Some(on_update);
        self
    }

    /// Where this context lives, for the call slot (plugins get a token, see
    /// `crate::guards::handles`).
    #[inline]
    pub fn address(&self) -> *const std::os::raw::c_void {
        (self as *const CallContext<'_>).cast()
    }

    /// After the call: the error message the plugin set and the system prompt it set with
    /// `set_system_prompt`, if either (`None` in the common case, at no cost).
    #[inline(always)]
    pub fn finish(self) -> Option<Box<CallDetail>> {
        let left = self.left.into_inner()?;
        Some(left_detail(*left))
    }

    /// The plugin this call is into.
    pub(crate) fn plugin(&self) -> &PluginState {
        self.plugin
    }

    /// The session services bound to the call's plugin (`None` before a mode binds them).
    pub(crate) fn services(&self) -> Option<std::sync::Arc<dyn HostServices>> {
        self.plugin.services()
    }

    /// The dispatch's dialog clock: time in a dialog does not count against timeouts.
    pub(crate) fn pause_clock(&self) -> &PauseClock {
        self.scope.pause_clock()
    }

    /// The kind of call (what decides which context functions work).
    pub(crate) fn kind(&self) -> CallKind {
        self.scope.kind
    }

    /// The session file the call sees, if any.
    pub(crate) fn session_file(&self) -> Option<&str> {
        self.scope.session_file.as_ref().map(CText::as_str)
    }

    /// Whether the call has a UI.
    pub(crate) fn has_ui(&self) -> bool {
        self.scope.has_ui
    }

    /// The call's mode (a `PI_MODE_*`).
    pub(crate) fn mode(&self) -> u32 {
        self.scope.mode
    }

    /// The system prompt the call's dispatch shows its handlers (what `get_system_prompt`
    /// answers before the call sets one).
    pub(crate) fn scope_system_prompt(&self) -> Arc<CText> {
        self.scope.system_prompt()
    }

    /// Records that the plugin threw a C++ exception out of the call (`what` is its text):
    /// the call's error message, replacing any the plugin set.
    #[cold]
    #[inline(never)]
    pub(crate) fn threw(&self, what: String) {
        self.left_mut(|left| left.error = Some(format!("threw a C++ exception: {what}")));
    }

    /// Runs `f` on what the call left, making the box on first use.
    fn left_mut<T>(&self, f: impl FnOnce(&mut LeftByCall) -> T) -> T {
        f(self.left.borrow_mut().get_or_insert_with(Box::default))
    }
}

#[cold]
fn left_detail(left: LeftByCall) -> Box<CallDetail> {
    Box::new(CallDetail {
        error: left.error,
        system_prompt: if left.prompt_set {
            left.prompts.last().map(|p| p.as_str().to_owned())
        } else {
            None
        },
    })
}

/// Runs `f` on the call context behind `ctx`. NULL, a wild pointer, or the context of a call
/// that has returned yields `default` (`PI_ERR_INVALID_ARG` for functions with a status); so
/// does a panic.
pub(crate) fn with_ctx<T: Copy>(
    ctx: *mut PiContext,
    default: T,
    f: impl FnOnce(&CallContext<'_>) -> T,
) -> T {
    barrier(default, || {
        handles::with_context(ctx, |address, _| {
            // SAFETY: the call slot hands out the address `invoke` opened the call with, the
            // CallContext of a call that is still running, and keeps the call from returning
            // (pinned) until this function is done with it.
            f(unsafe { &*address.cast::<CallContext<'_>>() })
        })
        .unwrap_or(default)
    })
}

/// Hands an owned value to the plugin through the out-pointer `out` (NULL for `None`).
pub(crate) fn write_owned_value(
    out: *mut *mut PiValue,
    value: Option<serde_json::Value>,
) -> PiStatus {
    if out.is_null() {
        return PI_ERR_INVALID_ARG;
    }
    let ptr = value.map_or(std::ptr::null_mut(), |v| {
        HostValue::from_json(v).into_owned_ptr()
    });
    // SAFETY: `out` is a non-NULL out-pointer from the plugin (ABI contract).
    unsafe { out.write(ptr) };
    PI_OK
}

const NO_STR: PiStr = PiStr {
    ptr: std::ptr::null(),
    len: 0,
};

/// Runs `f` with the session services bound to the call's plugin; unbound: unavailable.
fn with_services(ctx: *mut PiContext, f: impl FnOnce(&dyn HostServices) -> PiStatus) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| match c.plugin.services() {
        Some(services) => f(services.as_ref()),
        None => PI_ERR_UNAVAILABLE,
    })
}

unsafe extern "C" fn plugin(ctx: *mut PiContext) -> *mut PiPlugin {
    with_ctx(ctx, std::ptr::null_mut(), |c| c.plugin.as_handle())
}

unsafe extern "C" fn cwd(ctx: *mut PiContext) -> PiStr {
    with_ctx(ctx, NO_STR, |c| c.scope.cwd.as_pi_str())
}

unsafe extern "C" fn has_ui(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, false, |c| c.scope.has_ui)
}

unsafe extern "C" fn mode(ctx: *mut PiContext) -> u32 {
    with_ctx(ctx, 0, |c| c.scope.mode)
}

unsafe extern "C" fn session_file(ctx: *mut PiContext) -> PiStr {
    with_ctx(ctx, NO_STR, |c| {
        c.scope
            .session_file
            .as_ref()
            .map_or(NO_STR, CText::as_pi_str)
    })
}

unsafe extern "C" fn set_error(ctx: *mut PiContext, message: PiStr) {
    with_ctx(ctx, (), |c| {
        // SAFETY: `message` is a plugin string valid for the call.
        let text = unsafe { read_str(message) }.unwrap_or("(error message was not UTF-8)");
        c.left_mut(|left| left.error = Some(text.to_owned()));
    })
}

unsafe extern "C" fn get_system_prompt(ctx: *mut PiContext) -> PiStr {
    with_ctx(ctx, NO_STR, |c| {
        c.left_mut(|left| {
            if left.prompts.is_empty() {
                left.prompts.push(c.scope.system_prompt());
            }
            // The Arc stays in the context until the call returns, so the text does too (the
            // box it is in is not moved or freed before then).
            left.prompts.last().map_or(NO_STR, |p| p.as_pi_str())
        })
    })
}

unsafe extern "C" fn set_system_prompt(ctx: *mut PiContext, prompt: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        if c.scope.kind != CallKind::BeforeAgentStart {
            return PI_ERR_UNAVAILABLE;
        }
        // SAFETY: `prompt` is a plugin string valid for the call.
        match unsafe { read_str(prompt) } {
            Ok(text) => {
                // Kept in this call's context: a call that is abandoned for overrunning its
                // time cannot change the prompt other handlers see.
                c.left_mut(|left| {
                    left.prompts.push(Arc::new(CText::new(text)));
                    left.prompt_set = true;
                });
                PI_OK
            }
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn is_idle(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, true, |c| {
        c.plugin.services().is_none_or(|s| s.is_idle())
    })
}

unsafe extern "C" fn is_aborted(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, false, |c| {
        c.plugin.services().is_some_and(|s| s.is_run_aborted())
    })
}

unsafe extern "C" fn is_project_trusted(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, false, |c| {
        c.plugin.services().is_some_and(|s| s.is_project_trusted())
    })
}

unsafe extern "C" fn system_prompt_options(
    ctx: *mut PiContext,
    out: *mut *mut PiValue,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // pi offers `getSystemPromptOptions()` on a command's context only.
        if c.scope.kind != CallKind::Command {
            return PI_ERR_UNAVAILABLE;
        }
        let options = c
            .plugin
            .services()
            .and_then(|s| s.system_prompt_options())
            .unwrap_or_else(|| serde_json::json!({"cwd": c.scope.cwd.as_str()}));
        write_owned_value(out, Some(options))
    })
}

unsafe extern "C" fn thinking_level(ctx: *mut PiContext) -> PiStr {
    with_ctx(ctx, NO_STR, |c| {
        let level = c
            .plugin
            .services()
            .map_or_else(|| "off".to_owned(), |s| s.thinking_level());
        c.left_mut(|left| {
            left.texts.push(Arc::new(CText::new(&level)));
            // The Arc stays in the context until the call returns, so the text does too.
            left.texts.last().map_or(NO_STR, |t| t.as_pi_str())
        })
    })
}

unsafe extern "C" fn has_pending_messages(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, false, |c| {
        c.plugin
            .services()
            .is_some_and(|s| s.has_pending_messages())
    })
}

unsafe extern "C" fn abort(ctx: *mut PiContext) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        let services = c.plugin.services();
        if crate::observe::trace::on() {
            let outcome = match services {
                Some(_) => Ok(None),
                None => Err("unavailable: no session"),
            };
            crate::observe::trace::action(c.plugin, "abort", &serde_json::json!({}), outcome, None);
        }
        match services {
            Some(services) => {
                services.abort();
                PI_OK
            }
            None => PI_ERR_UNAVAILABLE,
        }
    })
}

unsafe extern "C" fn session_entries(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_services(ctx, |s| write_owned_value(out, Some(s.session_entries())))
}

unsafe extern "C" fn session_branch(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_services(ctx, |s| write_owned_value(out, Some(s.session_branch())))
}

unsafe extern "C" fn session_leaf_id(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_services(ctx, |s| {
        write_owned_value(out, s.session_leaf_id().map(serde_json::Value::String))
    })
}

unsafe extern "C" fn model(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        write_owned_value(out, c.plugin.services().and_then(|s| s.model()))
    })
}

unsafe extern "C" fn context_usage(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        write_owned_value(out, c.plugin.services().and_then(|s| s.context_usage()))
    })
}

unsafe extern "C" fn tool_update(ctx: *mut PiContext, partial: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        let Some(on_update) = c.tool_update else {
            return PI_ERR_UNAVAILABLE;
        };
        // SAFETY: `partial` is a plugin string valid for the call.
        match unsafe { read_str(partial) }.map(serde_json::from_str::<serde_json::Value>) {
            Ok(Ok(value)) => {
                on_update(value);
                PI_OK
            }
            Ok(Err(_)) => PI_ERR_INVALID_ARG,
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn shutdown(ctx: *mut PiContext) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| match c.plugin.services() {
        Some(services) if crate::observe::trace::on() => {
            crate::observe::trace::action(
                c.plugin,
                "shutdown",
                &serde_json::json!({}),
                Ok(None),
                None,
            );
            services.request_shutdown();
            PI_OK
        }
        Some(services) => {
            services.request_shutdown();
            PI_OK
        }
        None => PI_ERR_UNAVAILABLE,
    })
}

/// Parses an options string: empty means `{}`; anything but a JSON object is
/// `PI_ERR_INVALID_ARG`.
fn options_object(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, PiStatus> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(fields)) => Ok(fields),
        _ => Err(PI_ERR_INVALID_ARG),
    }
}

/// An optional string field: absent or null is `None`, another type `PI_ERR_INVALID_ARG`.
fn optional_string(
    fields: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Result<Option<String>, PiStatus> {
    match fields.get(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(PI_ERR_INVALID_ARG),
    }
}

/// Queues a session operation for after the current call. `command_only` limits it to
/// command handlers; `*cancelled` (may be NULL) is set to false: a cancellation happens
/// after this call returns, seen by the `session_before_*` handler that makes it.
///
/// # Safety
/// `cancelled` is NULL or a valid out-pointer.
unsafe fn queue_session_op(
    c: &CallContext,
    name: &'static str,
    command_only: bool,
    cancelled: *mut bool,
    op: impl FnOnce() -> Result<SessionOp, PiStatus>,
) -> PiStatus {
    let refused = |why: &str| {
        if crate::observe::trace::on() {
            crate::observe::trace::action(c.plugin, name, &serde_json::Value::Null, Err(why), None);
        }
        PI_ERR_UNAVAILABLE
    };
    if command_only && c.scope.kind != CallKind::Command {
        return refused("unavailable: only a command may do this");
    }
    let op = match op() {
        Ok(op) => op,
        Err(status) => return status,
    };
    let Some(services) = c.plugin.services() else {
        return refused("unavailable: no session");
    };
    let args = crate::observe::trace::on().then(|| session_op_args(&op));
    let queued = services.request_session_op(&c.plugin.path, op);
    if let Some(args) = args {
        let outcome = match &queued {
            Ok(()) => Ok(None),
            Err(message) => Err(message.as_str()),
        };
        crate::observe::trace::action(c.plugin, name, &args, outcome, None);
    }
    match queued {
        Ok(()) => {
            if !cancelled.is_null() {
                // SAFETY: a non-NULL out-pointer from the plugin (ABI contract).
                unsafe { cancelled.write(false) };
            }
            PI_OK
        }
        Err(_) => PI_ERR_UNAVAILABLE,
    }
}

/// A session operation's arguments, for the hook trace.
fn session_op_args(op: &SessionOp) -> serde_json::Value {
    use serde_json::json;
    match op {
        SessionOp::New(parent) => json!({"parentSession": parent}),
        SessionOp::Switch(path) => json!({"sessionPath": path}),
        SessionOp::Fork(entry) => json!({"entryId": entry}),
        SessionOp::Tree(target, options) => json!({
            "targetId": target,
            "summarize": options.summarize,
            "customInstructions": options.custom_instructions,
            "replaceInstructions": options.replace_instructions,
            "label": options.label,
        }),
        SessionOp::Compact(instructions) => json!({"customInstructions": instructions}),
        SessionOp::Reload => json!({}),
    }
}

/// Any call kind: the compaction runs once the current prompt or command is over.
unsafe extern "C" fn compact(ctx: *mut PiContext, options: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // SAFETY: `options` is a plugin string valid for the call; NULL out-pointer.
        unsafe {
            queue_session_op(c, "compact", false, std::ptr::null_mut(), || {
                let fields = options_object(read_str(options)?)?;
                Ok(SessionOp::Compact(optional_string(
                    &fields,
                    "customInstructions",
                )?))
            })
        }
    })
}

unsafe extern "C" fn wait_for_idle(ctx: *mut PiContext) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        if c.scope.kind != CallKind::Command {
            return PI_ERR_UNAVAILABLE;
        }
        match c.plugin.services() {
            Some(services) => {
                c.plugin.waiting_for_idle(|| services.wait_for_idle());
                PI_OK
            }
            None => PI_ERR_UNAVAILABLE,
        }
    })
}

unsafe extern "C" fn new_session(
    ctx: *mut PiContext,
    options: PiStr,
    cancelled: *mut bool,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // SAFETY: `options` is a plugin string valid for the call; `cancelled` is NULL or
        // valid (ABI contract).
        unsafe {
            queue_session_op(c, "newSession", true, cancelled, || {
                let fields = options_object(read_str(options)?)?;
                Ok(SessionOp::New(optional_string(&fields, "parentSession")?))
            })
        }
    })
}

unsafe extern "C" fn fork(ctx: *mut PiContext, entry_id: PiStr, cancelled: *mut bool) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // SAFETY: as in `new_session`.
        unsafe {
            queue_session_op(c, "fork", true, cancelled, || {
                Ok(SessionOp::Fork(read_str(entry_id)?.to_owned()))
            })
        }
    })
}

unsafe extern "C" fn navigate_tree(
    ctx: *mut PiContext,
    target: PiStr,
    options: PiStr,
    cancelled: *mut bool,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // SAFETY: as in `new_session`.
        unsafe {
            queue_session_op(c, "navigateTree", true, cancelled, || {
                let target = read_str(target)?.to_owned();
                let fields = options_object(read_str(options)?)?;
                let flag = |name: &str| match fields.get(name) {
                    None | Some(serde_json::Value::Null) => Ok(None),
                    Some(serde_json::Value::Bool(on)) => Ok(Some(*on)),
                    Some(_) => Err(PI_ERR_INVALID_ARG),
                };
                let options = TreeOptions {
                    summarize: flag("summarize")?.unwrap_or(false),
                    custom_instructions: optional_string(&fields, "customInstructions")?,
                    replace_instructions: flag("replaceInstructions")?,
                    label: optional_string(&fields, "label")?,
                };
                Ok(SessionOp::Tree(target, options))
            })
        }
    })
}

unsafe extern "C" fn switch_session(
    ctx: *mut PiContext,
    path: PiStr,
    cancelled: *mut bool,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // SAFETY: as in `new_session`.
        unsafe {
            queue_session_op(c, "switchSession", true, cancelled, || {
                Ok(SessionOp::Switch(read_str(path)?.to_owned()))
            })
        }
    })
}

unsafe extern "C" fn reload(ctx: *mut PiContext) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        // SAFETY: a NULL out-pointer.
        unsafe {
            queue_session_op(c, "reload", true, std::ptr::null_mut(), || {
                Ok(SessionOp::Reload)
            })
        }
    })
}

/// The host's `PiContextApi`.
pub static CONTEXT_API: PiContextApi = PiContextApi {
    struct_size: size_of::<PiContextApi>() as u32,
    reserved: 0,
    plugin,
    cwd,
    has_ui,
    mode,
    session_file,
    set_error,
    get_system_prompt,
    set_system_prompt,
    is_idle,
    abort,
    has_pending_messages,
    session_entries,
    session_branch,
    session_leaf_id,
    model,
    context_usage,
    tool_update,
    shutdown,
    compact,
    wait_for_idle,
    new_session,
    fork,
    navigate_tree,
    switch_session,
    reload,
    is_aborted,
    is_project_trusted,
    system_prompt_options,
    thinking_level,
};
