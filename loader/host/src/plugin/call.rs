//! Calling into a plugin: the one primitive every call goes through (`invoke`: the call
//! lock, the crash guard's label, the C++ exception barrier, the context the plugin gets),
//! the entry points for each kind of call (event handlers, commands, shortcuts, completions,
//! renderers, tools, event-bus deliveries, timer callbacks), what a call produced
//! ([`CallOutcome`], [`HandlerOutcome`]), how the host calls ([`RunnerConfig`]) and the
//! error a failed call reports ([`ExtensionError`]). The host services that call into plugins
//! (timers, the event bus) and the runner build on these.

use std::time::Duration;

use pi_hooks_abi::ffi::*;
use serde::Serialize;

use crate::guards::crash_guard::{self, Activity, CallSite};
use crate::guards::exception_barrier;
use crate::host_api::context::{CallContext, CallDetail, CallKind, CallScope};
use crate::host_api::result::ResultBuilder;
use crate::host_api::value::{CText, HostValue};
use crate::plugin::registrations::{Command, EventHandler, Renderer, Shortcut, Tool, UserData};
use crate::plugin::state::{Phase, PluginState};

pub use crate::plugin_files::settings::DEFAULT_HOOK_TIMEOUT;

/// An error reported by a handler: `{extensionPath, event, error}` as pi reports them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionError {
    /// The plugin's path.
    #[serde(rename = "extensionPath")]
    pub extension_path: String,
    /// The event being dispatched.
    pub event: String,
    /// What went wrong.
    pub error: String,
}

/// How the host calls plugins: in which directory and mode, under which time limits, with
/// which session file (the runner's dispatches and the calls made outside them, timer
/// callbacks and `exec`'s default directory, alike).
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The session's working directory.
    pub cwd: String,
    /// One of `PI_MODE_*`.
    pub mode: u32,
    /// Time limit per handler for every event but `tool_call`.
    pub hook_timeout: Duration,
    /// Time limit per `tool_call` handler (`None`: untimed).
    pub tool_call_timeout: Option<Duration>,
    /// The session file plugins see.
    pub session_file: Option<String>,
}

impl RunnerConfig {
    /// A configuration for `cwd` in `mode` (a `PI_MODE_*`) with the default `hookTimeout`
    /// (30 s), an untimed `tool_call` and no session file.
    pub fn new(cwd: &std::path::Path, mode: u32) -> Self {
        RunnerConfig {
            cwd: cwd.to_string_lossy().into_owned(),
            mode,
            hook_timeout: DEFAULT_HOOK_TIMEOUT,
            tool_call_timeout: None,
            session_file: None,
        }
    }

    /// With the `hookTimeout` and `toolCallTimeout` of the settings files that were read
    /// (the user's, which a project's may only raise).
    pub fn with_settings(mut self, settings: &[crate::plugin_files::settings::Settings]) -> Self {
        (self.hook_timeout, self.tool_call_timeout) =
            crate::plugin_files::settings::timeouts(settings);
        self
    }
}

/// What one handler call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerOutcome {
    /// The status it returned.
    pub status: PiStatus,
    /// The result it built, if any.
    pub result: Option<serde_json::Value>,
    /// The error message it set, if any.
    pub error: Option<String>,
    /// The system prompt it set through `set_system_prompt` (before_agent_start), if any.
    pub system_prompt: Option<String>,
}

/// What one call into a plugin produced, as the dispatch loop carries it from handler to
/// chain: 24 bytes, with the result and the rare error message and system prompt boxed, so
/// the hot path moves three words per handler, not a whole [`HandlerOutcome`].
#[derive(Debug)]
pub struct CallOutcome {
    /// The status it returned.
    pub status: PiStatus,
    /// The result it built, if any.
    pub result: Option<Box<serde_json::Value>>,
    /// The error message it set and the system prompt it set, if either.
    pub detail: Option<Box<CallDetail>>,
}

impl CallOutcome {
    /// The result, unboxed.
    #[inline]
    pub fn take_result(&mut self) -> Option<serde_json::Value> {
        self.result.take().map(|b| *b)
    }

    /// Whether the call succeeded and left nothing: no result, no error message, no system
    /// prompt (a handler that returned `PI_OK` and decided nothing).
    #[inline(always)]
    pub fn left_nothing(&self) -> bool {
        self.status == PI_OK && self.result.is_none() && self.detail.is_none()
    }

    /// The system prompt the plugin set, if any.
    pub fn take_system_prompt(&mut self) -> Option<String> {
        self.detail.as_mut().and_then(|d| d.system_prompt.take())
    }

    /// The error text of a failed call: the plugin's message, or the status name.
    pub fn error_text(&self) -> String {
        match self.detail.as_ref().and_then(|d| d.error.as_ref()) {
            Some(message) => message.clone(),
            None => format!(
                "handler returned {}",
                pi_hooks_abi::sdk::status_name(self.status)
            ),
        }
    }

    fn refused(status: PiStatus, message: &str) -> Self {
        CallOutcome {
            status,
            result: None,
            detail: Some(Box::new(CallDetail {
                error: Some(message.to_owned()),
                system_prompt: None,
            })),
        }
    }
}

impl From<CallOutcome> for HandlerOutcome {
    fn from(outcome: CallOutcome) -> Self {
        let detail = outcome.detail.map(|d| *d).unwrap_or_default();
        HandlerOutcome {
            status: outcome.status,
            result: outcome.result.map(|b| *b),
            error: detail.error,
            system_prompt: detail.system_prompt,
        }
    }
}

impl HandlerOutcome {
    /// Whether the host did not call the plugin because the instance was retired: a reload
    /// replaced it after the caller looked it up, so the caller may look up again and call
    /// the new instance.
    pub fn met_a_retired_instance(&self) -> bool {
        self.status == PI_ERR_CANCELLED && self.error.as_deref() == Some(NOT_CALLED_RETIRED)
    }

    /// An outcome the host decided without calling the plugin.
    pub fn refused(status: PiStatus, message: impl Into<String>) -> Self {
        HandlerOutcome {
            status,
            result: None,
            error: Some(message.into()),
            system_prompt: None,
        }
    }

    /// The error text of a failed call: the plugin's message, or the status name.
    pub fn error_text(&self) -> String {
        match &self.error {
            Some(message) => message.clone(),
            None => format!(
                "handler returned {}",
                pi_hooks_abi::sdk::status_name(self.status)
            ),
        }
    }
}

/// Calls `handler` of the plugin behind `state` (see [`crate::plugin::LoadedPlugin::call_handler`]).
///
/// `on_start` runs once the plugin is free and the call begins (the timed runner starts the
/// handler's clock there).
#[inline]
pub fn call_handler(
    state: &PluginState,
    handler: &EventHandler,
    payload: &HostValue,
    scope: &CallScope,
    on_start: impl FnOnce(),
) -> CallOutcome {
    invoke(
        state,
        (Activity::Event, &handler.event),
        CallContext::new(scope, state),
        on_start,
        |ctx, result| {
            let mut thrown = exception_barrier::Thrown::new();
            // SAFETY: the handler and user data were registered by this plugin, which is active
            // (checked by `invoke` under the call lock); payload, context and result outlive the
            // call.
            let status = unsafe {
                exception_barrier::event(
                    handler.handler,
                    handler.user_data.0,
                    payload.as_ptr(),
                    ctx,
                    result,
                    &mut thrown,
                )
            };
            thrown.check(status)
        },
    )
}

/// Runs `call` (a call into the plugin behind `state` that is not an event handler) and, with
/// the hook trace on, reports it as a `kind` call of `name` with its time and status.
fn traced(
    kind: &'static str,
    name: &str,
    state: &PluginState,
    call: impl FnOnce() -> HandlerOutcome,
) -> HandlerOutcome {
    if !crate::observe::trace::on() {
        return call();
    }
    let started = std::time::Instant::now();
    let outcome = call();
    crate::observe::trace::call(
        kind,
        name,
        state,
        started.elapsed(),
        outcome.status,
        outcome.error.as_deref(),
    );
    outcome
}

/// Runs a plugin's slash command with the text after its name.
pub fn call_command(
    state: &PluginState,
    command: &Command,
    args: &str,
    scope: &CallScope,
) -> HandlerOutcome {
    traced("command", &command.name, state, || {
        run_command(state, command, args, scope)
    })
}

fn run_command(
    state: &PluginState,
    command: &Command,
    args: &str,
    scope: &CallScope,
) -> HandlerOutcome {
    let args = CText::new(args);
    HandlerOutcome::from(invoke(
        state,
        (Activity::Command, &command.name),
        CallContext::new(scope, state),
        || {},
        |ctx, _| {
            // SAFETY: as in `call_handler`; `args` outlives the call.
            unsafe {
                exception_barrier::command(
                    command.handler,
                    command.user_data.0,
                    args.as_pi_str(),
                    ctx,
                )
            }
        },
    ))
}

/// Calls a keyboard shortcut's handler (pi's `ExtensionContext`: an event's context, with
/// the mode's UI).
pub fn call_shortcut(
    state: &PluginState,
    shortcut: &Shortcut,
    scope: &CallScope,
) -> HandlerOutcome {
    traced("shortcut", &shortcut.key, state, || {
        run_shortcut(state, shortcut, scope)
    })
}

fn run_shortcut(state: &PluginState, shortcut: &Shortcut, scope: &CallScope) -> HandlerOutcome {
    HandlerOutcome::from(invoke(
        state,
        (Activity::Shortcut, &shortcut.key),
        CallContext::new(scope, state),
        || {},
        |ctx, _| {
            // SAFETY: the handler and its user data were registered together by this plugin,
            // which is active (checked by `invoke` under the call lock); `ctx` outlives the
            // call.
            unsafe { exception_barrier::shortcut(shortcut.handler, shortcut.user_data.0, ctx) }
        },
    ))
}

/// Calls a command's argument completions with the text typed after the command's name; the
/// outcome's result is the completions it set (a JSON array of `{value, label,
/// description?}`), if any. `None` when the command registered no completions.
pub fn call_completions(
    state: &PluginState,
    command: &Command,
    prefix: &str,
) -> Option<HandlerOutcome> {
    let complete = command.complete?;
    let scope = CallScope::new(CallKind::Command, "", PI_MODE_PRINT);
    let prefix = CText::new(prefix);
    Some(HandlerOutcome::from(invoke(
        state,
        (Activity::Command, &command.name),
        CallContext::new(&scope, state),
        || {},
        |_, result| {
            // SAFETY: the completion function and user data were registered together with the
            // command by this plugin, which is active (checked by `invoke` under the call
            // lock); `prefix` and `result` outlive the call.
            unsafe {
                exception_barrier::complete(
                    complete,
                    command.user_data.0,
                    prefix.as_pi_str(),
                    result,
                )
            }
        },
    )))
}

/// Calls a plugin's message renderer with a custom message and `{"expanded": bool}`; the
/// outcome's result is the lines it set (a JSON array of strings), if any.
pub fn call_renderer(
    state: &PluginState,
    renderer: &Renderer,
    message: &HostValue,
    options: &HostValue,
) -> HandlerOutcome {
    let scope = CallScope::new(CallKind::Event, "", PI_MODE_PRINT);
    HandlerOutcome::from(invoke(
        state,
        (Activity::Render, &renderer.custom_type),
        CallContext::new(&scope, state),
        || {},
        |_, result| {
            // SAFETY: the renderer and its user data were registered together by this plugin,
            // which is active (checked by `invoke` under the call lock); `message`, `options`
            // and `result` outlive the call.
            unsafe {
                exception_barrier::render(
                    renderer.render,
                    renderer.user_data.0,
                    message.as_ptr(),
                    options.as_ptr(),
                    result,
                )
            }
        },
    ))
}

/// Runs a plugin's tool. `on_update` receives the partial results it streams.
pub fn call_tool(
    state: &PluginState,
    tool: &Tool,
    tool_call_id: &str,
    params: &HostValue,
    scope: &CallScope,
    on_update: &(dyn Fn(serde_json::Value) + Sync),
) -> HandlerOutcome {
    traced("tool", &tool.name, state, || {
        run_tool(state, tool, tool_call_id, params, scope, on_update)
    })
}

fn run_tool(
    state: &PluginState,
    tool: &Tool,
    tool_call_id: &str,
    params: &HostValue,
    scope: &CallScope,
    on_update: &(dyn Fn(serde_json::Value) + Sync),
) -> HandlerOutcome {
    let id = CText::new(tool_call_id);
    HandlerOutcome::from(invoke(
        state,
        (Activity::Tool, &tool.name),
        CallContext::new(scope, state).with_tool_update(on_update),
        || {},
        |ctx, result| {
            // SAFETY: as in `call_handler`; `id` and `params` outlive the call.
            unsafe {
                exception_barrier::tool(
                    tool.execute,
                    tool.user_data.0,
                    id.as_pi_str(),
                    params.as_ptr(),
                    ctx,
                    result,
                )
            }
        },
    ))
}

/// Calls a handler the plugin subscribed to the event bus (`events_on`) with one emission,
/// through `invoke` like every call into a plugin (call lock, active check, crash marker,
/// exception barrier). A bus handler gets no context: the host-side context `invoke` opens
/// for the call (kind `Event`, no cwd) is never handed to the plugin. The crash report names
/// the call `bus:<channel>`.
pub fn call_bus_handler(
    state: &PluginState,
    handler: PiBusHandler,
    user_data: UserData,
    channel: &CText,
    data: &HostValue,
) -> HandlerOutcome {
    let scope = CallScope::new(CallKind::Event, "", PI_MODE_PRINT);
    let site_name = format!("bus:{}", channel.as_str());
    traced("bus", channel.as_str(), state, || {
        HandlerOutcome::from(invoke(
            state,
            (Activity::Event, &site_name),
            CallContext::new(&scope, state),
            || {},
            |_, _| {
                // SAFETY: the handler and user data were subscribed together by this plugin, which
                // is active (checked by `invoke` under the call lock); `channel` and `data` outlive
                // the call.
                unsafe {
                    exception_barrier::bus(handler, user_data.0, channel.as_pi_str(), data.as_ptr())
                }
            },
        ))
    })
}

/// Runs a timer callback the plugin gave to `timer_start` (the timer module calls it on a
/// blocking thread of the host's runtime, see `loader/host/src/services/timers.rs`). `on_start` runs once
/// the plugin is free and the call begins, as in [`call_handler`].
pub fn call_timer(
    state: &PluginState,
    callback: PiTimerFn,
    user_data: UserData,
    timer_id: u64,
    scope: &CallScope,
    on_start: impl FnOnce(),
) -> HandlerOutcome {
    if !crate::observe::trace::on() {
        return run_timer(state, callback, user_data, timer_id, scope, on_start);
    }
    traced("timer", &timer_id.to_string(), state, || {
        run_timer(state, callback, user_data, timer_id, scope, on_start)
    })
}

fn run_timer(
    state: &PluginState,
    callback: PiTimerFn,
    user_data: UserData,
    timer_id: u64,
    scope: &CallScope,
    on_start: impl FnOnce(),
) -> HandlerOutcome {
    HandlerOutcome::from(invoke(
        state,
        (Activity::Timer, ""),
        CallContext::new(scope, state),
        on_start,
        |ctx, _| {
            // SAFETY: the callback and user data were given together to `timer_start` by this
            // plugin, which is active (checked by `invoke` under the call lock); the context
            // outlives the call.
            unsafe { exception_barrier::timer(callback, user_data.0, timer_id, ctx) }
        },
    ))
}

/// The one way into a plugin: skips a plugin still busy with a call that timed out, takes
/// the call lock (calls never overlap), checks the plugin is active, and collects the result
/// and error message. (An `extern "C"` call cannot unwind: the plugin side stops panics, as
/// the SDK does.) While the plugin runs, `crash_guard` knows which plugin and `what` it runs.
#[inline(always)]
fn invoke(
    state: &PluginState,
    what: (Activity, &str),
    ctx: CallContext<'_>,
    on_start: impl FnOnce(),
    call: impl FnOnce(*mut PiContext, *mut PiResult) -> Result<PiStatus, String>,
) -> CallOutcome {
    let mut result = ResultBuilder::new();
    let status = {
        let Some(serialised) = state.lock_calls_unless_stuck() else {
            return not_called_busy(state);
        };
        if state.phase() != Phase::Active {
            return not_called_retired();
        }
        let handles = serialised.open(state.slot(), ctx.address(), result.address());
        // The call starts now: time spent waiting for the plugin to be free is not its own.
        on_start();
        let site = CallSite::new(&state.name, &state.path, what.0, what.1);
        let running = crash_guard::enter(&site);
        // A throw becomes the call's error here, so only the status lives on (the hot
        // path carries no `Result` past the releases below).
        let status = match call(handles.context, handles.result) {
            Ok(status) => status,
            Err(what) => {
                ctx.threw(what);
                PI_ERR_PANIC
            }
        };
        drop(running);
        // Releasing the lock retires this call's handles and clears a stuck mark (whoever
        // holds the lock is the only call such a mark can be about).
        drop(serialised);
        status
    };
    CallOutcome {
        status,
        result: result.into_value(),
        detail: ctx.finish(),
    }
}

#[cold]
#[inline(never)]
fn not_called_busy(state: &PluginState) -> CallOutcome {
    if state.is_waiting_idle() {
        return CallOutcome::refused(
            PI_ERR_UNAVAILABLE,
            "not called: a command of the plugin is waiting for the agent to be idle (wait_for_idle)",
        );
    }
    CallOutcome::refused(
        PI_ERR_TIMEOUT,
        "not called: the plugin is still running an earlier call that timed out",
    )
}

/// The reason a call into a retired instance gives (its plugin was unloaded or replaced by a
/// reload between the lookup and the call).
pub const NOT_CALLED_RETIRED: &str = "not called: the plugin was retired";

#[cold]
#[inline(never)]
fn not_called_retired() -> CallOutcome {
    CallOutcome::refused(PI_ERR_CANCELLED, NOT_CALLED_RETIRED)
}
