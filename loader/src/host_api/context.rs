//! `PiContext` on the host side: the context of one call into a plugin.

use std::sync::Mutex;

use pi_hooks_abi::ffi::*;

use super::value::{CText, HostValue};
use super::{barrier, read_str};
use crate::registry::PluginState;

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

/// The context of one call. `*mut PiContext` points here, for the duration of the call.
pub struct CallContext<'p> {
    plugin: &'p PluginState,
    kind: CallKind,
    cwd: CText,
    mode: u32,
    has_ui: bool,
    session_file: Option<CText>,
    system_prompt: Mutex<CText>,
    system_prompt_set: Mutex<bool>,
    error: Mutex<Option<String>>,
}

impl<'p> CallContext<'p> {
    /// A context for a call into `plugin`.
    pub fn new(plugin: &'p PluginState, kind: CallKind, cwd: &str, mode: u32) -> Self {
        CallContext {
            plugin,
            kind,
            cwd: CText::new(cwd),
            mode,
            has_ui: matches!(mode, PI_MODE_RPC | PI_MODE_INTERACTIVE),
            session_file: None,
            system_prompt: Mutex::new(CText::new("")),
            system_prompt_set: Mutex::new(false),
            error: Mutex::new(None),
        }
    }

    /// Sets the session file the plugin sees.
    pub fn with_session_file(mut self, path: Option<&str>) -> Self {
        self.session_file = path.map(CText::new);
        self
    }

    /// Sets the system prompt the plugin sees.
    pub fn with_system_prompt(self, prompt: &str) -> Self {
        *self.system_prompt.lock().unwrap_or_else(|e| e.into_inner()) = CText::new(prompt);
        self
    }

    /// The pointer handed to the plugin.
    pub fn as_ptr(&self) -> *mut PiContext {
        (self as *const CallContext<'_>).cast_mut().cast()
    }

    /// The error message the plugin set, if any.
    pub fn take_error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The system prompt, if the plugin replaced it through `set_system_prompt`.
    pub fn replaced_system_prompt(&self) -> Option<String> {
        let set = *self
            .system_prompt_set
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        set.then(|| {
            self.system_prompt
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_str()
                .to_owned()
        })
    }
}

/// Runs `f` on the call context behind `ctx`; NULL or a panic yields `default`.
pub(crate) fn with_ctx<T: Copy>(
    ctx: *mut PiContext,
    default: T,
    f: impl FnOnce(&CallContext<'_>) -> T,
) -> T {
    barrier(default, || {
        // SAFETY: plugins pass the context of the call in progress, which outlives the call.
        match unsafe { ctx.cast::<CallContext<'_>>().cast_const().as_ref() } {
            Some(c) => f(c),
            None => default,
        }
    })
}

/// Hands an owned value to the plugin through `out`.
pub(crate) fn give(out: *mut *mut PiValue, value: Option<serde_json::Value>) -> PiStatus {
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

unsafe extern "C" fn plugin(ctx: *mut PiContext) -> *mut PiPlugin {
    with_ctx(ctx, std::ptr::null_mut(), |c| c.plugin.as_handle())
}

unsafe extern "C" fn cwd(ctx: *mut PiContext) -> PiStr {
    with_ctx(ctx, NO_STR, |c| c.cwd.as_pi_str())
}

unsafe extern "C" fn has_ui(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, false, |c| c.has_ui)
}

unsafe extern "C" fn mode(ctx: *mut PiContext) -> u32 {
    with_ctx(ctx, 0, |c| c.mode)
}

unsafe extern "C" fn session_file(ctx: *mut PiContext) -> PiStr {
    with_ctx(ctx, NO_STR, |c| {
        c.session_file.as_ref().map_or(NO_STR, CText::as_pi_str)
    })
}

unsafe extern "C" fn set_error(ctx: *mut PiContext, message: PiStr) {
    with_ctx(ctx, (), |c| {
        // SAFETY: `message` is a plugin string valid for the call.
        let text = unsafe { read_str(message) }.unwrap_or("(error message was not UTF-8)");
        *c.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(text.to_owned());
    })
}

unsafe extern "C" fn get_system_prompt(ctx: *mut PiContext) -> PiStr {
    // The CText lives in the context until the call ends; replacing it is only possible
    // through set_system_prompt, which the SDK documents as invalidating earlier reads.
    with_ctx(ctx, NO_STR, |c| {
        c.system_prompt
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_pi_str()
    })
}

unsafe extern "C" fn set_system_prompt(ctx: *mut PiContext, prompt: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        if c.kind != CallKind::BeforeAgentStart {
            return PI_ERR_UNAVAILABLE;
        }
        // SAFETY: `prompt` is a plugin string valid for the call.
        match unsafe { read_str(prompt) } {
            Ok(text) => {
                *c.system_prompt.lock().unwrap_or_else(|e| e.into_inner()) = CText::new(text);
                *c.system_prompt_set
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = true;
                PI_OK
            }
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn is_idle(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, true, |_| true)
}

unsafe extern "C" fn has_pending_messages(ctx: *mut PiContext) -> bool {
    with_ctx(ctx, false, |_| false)
}

/// A session service no mode provides yet.
fn unavailable(ctx: *mut PiContext) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_ERR_UNAVAILABLE)
}

unsafe extern "C" fn abort(ctx: *mut PiContext) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn session_entries(ctx: *mut PiContext, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn session_branch(ctx: *mut PiContext, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn session_leaf_id(ctx: *mut PiContext, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn model(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| give(out, None))
}

unsafe extern "C" fn context_usage(ctx: *mut PiContext, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn tool_update(ctx: *mut PiContext, _partial: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        if c.kind == CallKind::Tool {
            PI_OK
        } else {
            PI_ERR_UNAVAILABLE
        }
    })
}

unsafe extern "C" fn shutdown(ctx: *mut PiContext) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn compact(ctx: *mut PiContext, _options: PiStr) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn wait_for_idle(ctx: *mut PiContext) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn new_session(
    ctx: *mut PiContext,
    _options: PiStr,
    _cancelled: *mut bool,
) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn fork(
    ctx: *mut PiContext,
    _entry_id: PiStr,
    _cancelled: *mut bool,
) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn navigate_tree(
    ctx: *mut PiContext,
    _target: PiStr,
    _options: PiStr,
    _cancelled: *mut bool,
) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn switch_session(
    ctx: *mut PiContext,
    _path: PiStr,
    _cancelled: *mut bool,
) -> PiStatus {
    unavailable(ctx)
}

unsafe extern "C" fn reload(ctx: *mut PiContext) -> PiStatus {
    unavailable(ctx)
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
};
