//! One loaded plugin instance: its library, its host-side state, its init, its calls and its
//! retirement.

use std::sync::{Arc, OnceLock};

use pi_hooks_abi::ffi::*;

use crate::crash_guard::{self, Activity, CallSite};
use crate::discover::Origin;
use crate::display::escape;
use crate::exception_barrier;
use crate::host_api;
use crate::host_api::context::{CallContext, CallKind, CallScope};
use crate::host_api::result::ResultBuilder;
use crate::host_api::value::{CText, HostValue};
use crate::library::OpenedLibrary;
use crate::registry::{
    Command, EventHandler, Phase, PluginState, Registrations, Renderer, Shortcut, Tool, UserData,
};
use crate::trust::TrustState;

/// A plugin whose init succeeded. Dropping it retires it: no more calls, shutdown, cleanups,
/// and the library stays mapped (see `OpenedLibrary`).
pub struct LoadedPlugin {
    /// Path as discovered.
    pub path: String,
    /// Where it came from.
    pub origin: Origin,
    /// Trust state when it was loaded.
    pub trust: TrustState,
    sha256: OnceLock<String>,
    /// What the user should know about this plugin although it loaded (an event name no
    /// host version emits, say), one line each.
    pub warnings: Vec<String>,
    state: Arc<PluginState>,
    library: OpenedLibrary,
    /// Set once [`LoadedPlugin::retire`] ran.
    retired: std::sync::atomic::AtomicBool,
    /// How long its load and its init took.
    timing: LoadTiming,
}

/// How long a plugin took to load (`pi-hooks list --json` shows it, and the hook trace).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadTiming {
    /// The whole load: reading the file, checking it, opening the library, the init (zero
    /// until the loader sets it).
    pub load: std::time::Duration,
    /// The plugin's init alone (for an isolated plugin: its proxy's; the child process was
    /// started and its `hello` read before, within `load`).
    pub init: std::time::Duration,
}

/// The line for a plugin that tried to register more than the host takes.
fn over_limit_warning() -> String {
    format!(
        "it tried to make more than {} registrations (handlers, commands, tools, renderers, flags and shortcuts together); those past the limit were refused with PI_ERR",
        crate::registry::MAX_REGISTRATIONS
    )
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

/// The rarely present parts of a [`CallOutcome`].
#[derive(Debug, Default)]
pub struct CallDetail {
    /// The error message the plugin set (or the host's reason for not calling it).
    pub error: Option<String>,
    /// The system prompt it set through `set_system_prompt` (before_agent_start).
    pub system_prompt: Option<String>,
}

impl CallOutcome {
    /// The result, unboxed.
    #[inline]
    pub fn take_result(&mut self) -> Option<serde_json::Value> {
        self.result.take().map(|b| *b)
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

impl LoadedPlugin {
    /// Runs the plugin's init with a fresh state. On failure every registration is dropped,
    /// the plugin's cleanups run, and the error says why.
    pub fn init(
        library: OpenedLibrary,
        path: String,
        origin: Origin,
        trust: TrustState,
        sha256: Option<String>,
    ) -> Result<Self, String> {
        let state = PluginState::create(library.name.clone(), path.clone())?;
        let init = library
            .descriptor
            .init
            .ok_or("its descriptor has no init function")?;
        let site = CallSite::new(&state.name, &state.path, Activity::Init, "");
        let init_started = std::time::Instant::now();
        let running = crash_guard::enter(&site);
        // SAFETY: the descriptor was checked; init gets the host table, valid for the life of
        // the process, and the handle of `state`, which lives until the plugin is retired.
        let status =
            unsafe { exception_barrier::init(init, host_api::host_api(), state.as_handle()) };
        drop(running);
        let init_time = init_started.elapsed();
        let (status, thrown) = match status {
            Ok(status) => (status, None),
            Err(what) => (PI_ERR_PANIC, Some(what)),
        };
        let plugin = LoadedPlugin {
            path,
            origin,
            trust,
            sha256: sha256.map(OnceLock::from).unwrap_or_default(),
            warnings: Vec::new(),
            state,
            library,
            retired: std::sync::atomic::AtomicBool::new(false),
            timing: LoadTiming {
                load: std::time::Duration::ZERO,
                init: init_time,
            },
        };
        if status == PI_OK {
            plugin.state.set_phase(Phase::Active);
            let mut plugin = plugin;
            let registrations = plugin.registrations();
            plugin.warnings = registrations
                .event_names()
                .iter()
                .filter_map(|name| crate::event_names::unknown_event_warning(name))
                .collect();
            if registrations.over_limit {
                plugin.warnings.push(over_limit_warning());
            }
            return Ok(plugin);
        }
        let detail = match thrown {
            Some(what) => format!("threw a C++ exception: {what}"),
            None => plugin
                .state
                .init_error()
                .unwrap_or_else(|| "no message".to_owned()),
        };
        let what = if status == PI_ERR_PANIC {
            "panicked"
        } else {
            "failed"
        };
        let limit = if plugin.state.registrations().over_limit {
            format!(" ({})", over_limit_warning())
        } else {
            String::new()
        };
        Err(format!(
            "its init {what} ({}: {detail}){limit}; the plugin was not loaded",
            pi_hooks_abi::sdk::status_name(status)
        ))
    }

    /// SHA-256 of the bytes that were loaded, hex. Computed at load only where trust needs
    /// it; otherwise on first use, from the private copy the library was loaded from (the
    /// same bytes: a sealed memfd, or the verified file copy).
    pub fn sha256(&self) -> &str {
        self.sha256.get_or_init(|| {
            std::fs::read(&self.library.shadow_path)
                .map(|bytes| crate::trust::sha256_hex(&bytes))
                .unwrap_or_default()
        })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.library.name
    }

    /// The plugin's version.
    pub fn version(&self) -> &str {
        &self.library.version
    }

    /// The plugin's description.
    pub fn description(&self) -> &str {
        &self.library.description
    }

    /// `major.minor` of the ABI the plugin was built for.
    pub fn abi(&self) -> String {
        format!(
            "{}.{}",
            self.library.descriptor.abi_major, self.library.descriptor.abi_minor
        )
    }

    /// How long its load and init took.
    pub fn load_timing(&self) -> LoadTiming {
        self.timing
    }

    /// Sets the time of the whole load (the loader, once it is done).
    pub(crate) fn set_load_time(&mut self, load: std::time::Duration) {
        self.timing.load = load;
    }

    /// The host-side state (registrations, phase, call lock).
    pub fn state(&self) -> &Arc<PluginState> {
        &self.state
    }

    /// A copy of what the plugin registered.
    pub fn registrations(&self) -> Registrations {
        self.state.registrations()
    }

    /// Calls one of this plugin's event handlers with `payload`, in `scope`. Calls into the
    /// plugin are serialised; a plugin still busy with a call that timed out is not called
    /// (the outcome says so).
    pub fn call_handler(
        &self,
        handler: &EventHandler,
        payload: &HostValue,
        scope: &CallScope,
    ) -> HandlerOutcome {
        call_handler(&self.state, handler, payload, scope, || {}).into()
    }

    /// Calls every handler this plugin registered for `event`, in registration order, with
    /// the same payload.
    pub fn call_event(
        &self,
        event: &str,
        payload: &HostValue,
        scope: &CallScope,
    ) -> Vec<HandlerOutcome> {
        let handlers: Vec<_> = self.state.with_registrations(|r| {
            r.events
                .iter()
                .filter(|h| h.event == event)
                .cloned()
                .collect()
        });
        handlers
            .iter()
            .map(|h| {
                if !crate::trace::on() {
                    return self.call_handler(h, payload, scope);
                }
                let mut began = None;
                let outcome = call_handler(&self.state, h, payload, scope, || {
                    began = Some(std::time::Instant::now());
                });
                let elapsed = began.map_or(std::time::Duration::ZERO, |b| b.elapsed());
                let decision = crate::trace::Decision::of(event, &outcome);
                crate::trace::handler(event, &self.state, elapsed, &decision);
                outcome.into()
            })
            .collect()
    }
}

/// Calls `handler` of the plugin behind `state` (see [`LoadedPlugin::call_handler`]).
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
    if !crate::trace::on() {
        return call();
    }
    let started = std::time::Instant::now();
    let outcome = call();
    crate::trace::call(
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
/// blocking thread of the host's runtime, see `loader/src/timers.rs`). `on_start` runs once
/// the plugin is free and the call begins, as in [`call_handler`].
pub fn call_timer(
    state: &PluginState,
    callback: PiTimerFn,
    user_data: UserData,
    timer_id: u64,
    scope: &CallScope,
    on_start: impl FnOnce(),
) -> HandlerOutcome {
    if !crate::trace::on() {
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
        let status = call(handles.context, handles.result);
        drop(running);
        // Releasing the lock retires this call's handles and clears a stuck mark (whoever
        // holds the lock is the only call such a mark can be about).
        drop(serialised);
        status
    };
    let mut detail = ctx.finish();
    let status = match status {
        Ok(status) => status,
        Err(what) => {
            let detail = detail.get_or_insert_with(Box::default);
            detail.error = Some(format!("threw a C++ exception: {what}"));
            PI_ERR_PANIC
        }
    };
    CallOutcome {
        status,
        result: result.into_value(),
        detail,
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

#[cold]
#[inline(never)]
fn not_called_retired() -> CallOutcome {
    CallOutcome::refused(PI_ERR_CANCELLED, "not called: the plugin was retired")
}

/// How long retiring a plugin waits for a call still running inside it.
const RETIRE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl LoadedPlugin {
    /// Retires this instance: no new call enters it, the host-side
    /// teardown it registered runs (its timers are cancelled, its `exec` children killed, its
    /// event-bus subscriptions removed), a call still running inside it is waited for (at
    /// most two seconds), then its `shutdown` and its cleanups run, once. Its library stays
    /// mapped (see [`crate::library::OpenedLibrary`]). Idempotent: the second call does
    /// nothing and returns `true`.
    ///
    /// Returns `false` when a call was still running inside the plugin after the wait: the
    /// plugin was retired without its shutdown and cleanups (the call keeps the state and the
    /// code alive; waiting longer could hang the host).
    ///
    /// Dropping the last `LoadedPlugin` retires it too; a reload retires the old instance
    /// explicitly, once no dispatch can still reach it (see `crate::reload`).
    pub fn retire(&self) -> bool {
        self.retire_with(false)
    }

    /// Retires this instance as a reload does: as [`LoadedPlugin::retire`], but a call still
    /// running inside it (a plugin tool waiting on its `exec` child, a command) first gets up
    /// to two seconds to finish with its host services, before the plugin's timers and
    /// children are stopped. No new call enters meanwhile ([`Phase::Draining`]).
    pub fn retire_after_calls(&self) -> bool {
        self.retire_with(true)
    }

    fn retire_with(&self, drain_first: bool) -> bool {
        if self.retired.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return true;
        }
        let was_active = self.state.phase() == Phase::Active;
        // A call that overran its time (stuck) is not waited for twice.
        let drained = if drain_first && was_active && !self.state.is_stuck() {
            self.state.set_phase(Phase::Draining);
            self.state.lock_calls_within(RETIRE_WAIT)
        } else {
            None
        };
        self.state.bind_services(None);
        // No new call enters from here on; what the plugin started (timers, children) stops.
        self.state.set_phase(Phase::Retired);
        self.state.run_retire_hooks();
        let serialised = drained.or_else(|| self.state.lock_calls_within(RETIRE_WAIT));
        let Some(_serialised) = serialised else {
            // A call (one that timed out, typically) is still running inside the plugin. Its
            // state and library stay alive (the call holds the state; libraries are never
            // closed), so skipping shutdown and cleanups is safe; waiting could hang the host.
            eprintln!(
                "pi-hooks: plugin {} ({}) is still running a call after {}s; retired without its shutdown",
                escape(&self.state.name),
                escape(&self.path),
                RETIRE_WAIT.as_secs()
            );
            return false;
        };
        let (name, path) = (&self.state.name, &self.state.path);
        if was_active && let Some(shutdown) = self.library.descriptor.shutdown {
            let site = CallSite::new(name, path, Activity::Shutdown, "");
            let _running = crash_guard::enter(&site);
            // SAFETY: the plugin is loaded and its handle alive; shutdown runs once, with no
            // other call in flight (call lock held).
            let shut = unsafe { exception_barrier::shutdown(shutdown, self.state.as_handle()) };
            if let Err(what) = shut {
                eprintln!(
                    "pi-hooks: plugin {} ({}): its shutdown threw a C++ exception: {}",
                    escape(&self.state.name),
                    escape(&self.path),
                    escape(&what)
                );
            }
        }
        let site = CallSite::new(name, path, Activity::Cleanup, "");
        for (cleanup, data) in self.state.take_cleanups() {
            let _running = crash_guard::enter(&site);
            // SAFETY: each cleanup was registered by the plugin for exactly this data and
            // runs once.
            if let Err(what) = unsafe { exception_barrier::cleanup(cleanup, data.0) } {
                eprintln!(
                    "pi-hooks: plugin {} ({}): a cleanup threw a C++ exception: {}",
                    escape(&self.state.name),
                    escape(&self.path),
                    escape(&what)
                );
            }
        }
        true
    }

    /// Whether [`LoadedPlugin::retire`] ran.
    pub fn is_retired(&self) -> bool {
        self.retired.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        self.retire();
    }
}
