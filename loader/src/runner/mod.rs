//! The event runner: dispatches every event to the loaded plugins with pi's semantics.
//!
//! Plugins run in load order, and within a plugin in registration order, one handler at a
//! time. How the results of one event combine is decided per event in [`events`] (notify,
//! input chain, before_agent_start accumulation, context chain, tool_call block
//! short-circuit, tool_result patch chain, cancel short-circuit, first-wins, accumulate).
//!
//! Errors: a failing handler of any event but `tool_call` is reported to the error
//! listeners and the chain goes on with the state from before it; in `tool_call` an error,
//! a panic or a timeout blocks the tool (fail closed).
//!
//! Timeouts: every event but `tool_call` runs under `hookTimeout` (default 30 s); `tool_call`
//! is untimed unless `toolCallTimeout` is set. An untimed dispatch calls the handlers inline
//! on the calling thread (the hot path: an indirect call, a lock and the payload reads per
//! handler). A timed dispatch hands the whole chain to a worker thread once per event; when a
//! handler overruns, the runner reports it, abandons that worker (the plugin gets no new
//! calls until the stuck call returns) and carries on with the next handler on a fresh one.

pub mod events;
mod render;
mod timed;

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use pi_hooks_abi::ffi::PI_OK;
use serde::Serialize;
use serde_json::Value;

use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::{CallOutcome, LoadedPlugin, call_handler};
use crate::registry::{EventHandler, PluginState};
use crate::services::HostServices;

pub use crate::settings::DEFAULT_HOOK_TIMEOUT;

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

/// An error listener.
pub type ErrorListener = Arc<dyn Fn(&ExtensionError) + Send + Sync>;

/// How the runner calls plugins.
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

/// One handler in dispatch order.
#[derive(Clone)]
pub(crate) struct Slot {
    pub(crate) state: Arc<PluginState>,
    pub(crate) handler: EventHandler,
}

impl Slot {
    pub(crate) fn path(&self) -> &str {
        &self.state.path
    }

    #[inline]
    pub(crate) fn call(
        &self,
        payload: &HostValue,
        scope: &CallScope,
        on_start: impl FnOnce(),
    ) -> CallOutcome {
        call_handler(&self.state, &self.handler, payload, scope, on_start)
    }
}

/// How a chain goes on after a handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Call the next handler.
    Continue,
    /// Stop: later handlers are skipped.
    Stop,
}

/// The combination rule of one event: the state a dispatch carries from handler to handler.
pub(crate) trait Chain: Send + 'static {
    /// The payload the next handler sees (rebuild it only when the state changed).
    fn payload(&mut self) -> &Arc<HostValue>;
    /// Takes a successful handler's outcome (`outcome.result` `None`: it returned nothing).
    fn absorb(&mut self, slot: &Slot, outcome: CallOutcome, scope: &CallScope) -> Flow;
    /// Takes a failed call (error status, panic, timeout). The default reports it and goes
    /// on with the state unchanged.
    fn fail(
        &mut self,
        slot: &Slot,
        error: String,
        errors: &mut Vec<ExtensionError>,
        event: &str,
        _scope: &CallScope,
    ) -> Flow {
        errors.push(ExtensionError {
            extension_path: slot.path().to_owned(),
            event: event.to_owned(),
            error,
        });
        Flow::Continue
    }
}

/// The event runner for one set of loaded plugins.
pub struct Runner {
    plugins: Vec<Arc<LoadedPlugin>>,
    /// Handlers per event name (FxHash: the names are few, short and not attacker-chosen).
    index: HashMap<String, Arc<[Slot]>, BuildHasherDefault<rustc_hash::FxHasher>>,
    listeners: Mutex<Vec<(u64, ErrorListener)>>,
    next_listener: AtomicU64,
    /// The configuration as built; the current session file is `session_file`.
    config: RunnerConfig,
    /// The session file plugins see (changes with a new session).
    session_file: RwLock<Option<String>>,
    workers: timed::Workers,
    /// The scope shared by dispatches that do not change it (everything but
    /// before_agent_start), so the hot path allocates nothing for it. Replaced (not changed)
    /// when the session file changes: a dispatch under way keeps the scope it started with.
    event_scope: RwLock<Arc<CallScope>>,
}

impl Runner {
    /// A runner over `plugins` (in load order).
    pub fn new(plugins: Vec<Arc<LoadedPlugin>>, config: RunnerConfig) -> Self {
        let mut index: HashMap<String, Vec<Slot>> = HashMap::new();
        for plugin in &plugins {
            for handler in plugin.registrations().events {
                index.entry(handler.event.clone()).or_default().push(Slot {
                    state: plugin.state().clone(),
                    handler,
                });
            }
        }
        let event_scope = Arc::new(
            CallScope::new(CallKind::Event, &config.cwd, config.mode)
                .with_session_file(config.session_file.as_deref()),
        );
        Runner {
            event_scope: RwLock::new(event_scope),
            plugins,
            index: index.into_iter().map(|(k, v)| (k, Arc::from(v))).collect(),
            listeners: Mutex::new(Vec::new()),
            next_listener: AtomicU64::new(1),
            session_file: RwLock::new(config.session_file.clone()),
            config,
            workers: timed::Workers::default(),
        }
    }

    /// The plugins, in load order.
    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// The configuration (a copy: the session file changes with a new session).
    pub fn config(&self) -> RunnerConfig {
        let mut config = self.config.clone();
        config.session_file = self.session_file();
        config
    }

    /// The session file plugins see.
    pub fn session_file(&self) -> Option<String> {
        self.session_file
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets the session file plugins see from the next dispatch on (a new session).
    pub fn set_session_file(&self, path: Option<String>) {
        let scope = CallScope::new(CallKind::Event, &self.config.cwd, self.config.mode)
            .with_session_file(path.as_deref());
        let mut current = self.event_scope.write().unwrap_or_else(|e| e.into_inner());
        scope.replace_system_prompt(current.system_prompt().as_str());
        *current = Arc::new(scope);
        *self.session_file.write().unwrap_or_else(|e| e.into_inner()) = path;
    }

    /// Binds the session services every plugin's actions use (a mode does this once).
    pub fn bind_services(&self, services: Arc<dyn HostServices>) {
        for plugin in &self.plugins {
            plugin.state().bind_services(Some(services.clone()));
        }
    }

    /// Whether any plugin handles `event`.
    pub fn has_handlers(&self, event: &str) -> bool {
        self.index.get(event).is_some_and(|slots| !slots.is_empty())
    }

    /// Sets the system prompt handlers read through `get_system_prompt` (the agent sets the
    /// run's prompt before each run).
    pub fn set_system_prompt(&self, prompt: &str) {
        self.event_scope().replace_system_prompt(prompt);
    }

    /// Subscribes an error listener; returns its id for [`Runner::unsubscribe`].
    pub fn on_error(&self, listener: ErrorListener) -> u64 {
        let id = self.next_listener.fetch_add(1, Ordering::Relaxed);
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id, listener));
        id
    }

    /// Removes an error listener.
    pub fn unsubscribe(&self, id: u64) {
        self.listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(i, _)| *i != id);
    }

    /// Reports an error to every listener, in subscription order. A panicking listener is
    /// ignored.
    pub fn emit_error(&self, error: &ExtensionError) {
        let listeners: Vec<ErrorListener> = self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(_, l)| l.clone())
            .collect();
        for listener in listeners {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(error)));
        }
    }

    /// A fresh scope of `kind` (for dispatches that change their scope).
    pub(crate) fn new_scope(&self, kind: CallKind) -> Arc<CallScope> {
        Arc::new(
            CallScope::new(kind, &self.config.cwd, self.config.mode)
                .with_session_file(self.session_file().as_deref()),
        )
    }

    /// The shared scope for ordinary event dispatches.
    pub(crate) fn event_scope(&self) -> Arc<CallScope> {
        self.event_scope
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs `chain` over the handlers of `event`, timed or inline, and reports errors.
    pub(crate) fn run<C: Chain>(
        &self,
        event: &str,
        scope: &Arc<CallScope>,
        chain: C,
        timeout: Option<Duration>,
    ) -> C {
        let Some(slots) = self.index.get(event) else {
            return chain;
        };
        let (chain, errors) = match timeout {
            None => run_inline(event, slots, scope, chain),
            Some(limit) => self
                .workers
                .run(event, slots.clone(), scope.clone(), chain, limit),
        };
        for error in &errors {
            self.emit_error(error);
        }
        chain
    }
}

/// Runs a chain on the calling thread.
fn run_inline<C: Chain>(
    event: &str,
    slots: &[Slot],
    scope: &CallScope,
    mut chain: C,
) -> (C, Vec<ExtensionError>) {
    let mut errors = Vec::new();
    for slot in slots {
        let outcome = slot.call(chain.payload(), scope, || {});
        if step(&mut chain, slot, outcome, scope, &mut errors, event) == Flow::Stop {
            break;
        }
    }
    (chain, errors)
}

/// Feeds one outcome to the chain.
#[inline]
pub(crate) fn step<C: Chain>(
    chain: &mut C,
    slot: &Slot,
    outcome: CallOutcome,
    scope: &CallScope,
    errors: &mut Vec<ExtensionError>,
    event: &str,
) -> Flow {
    if outcome.status == PI_OK {
        chain.absorb(slot, outcome, scope)
    } else {
        let text = outcome.error_text();
        chain.fail(slot, text, errors, event, scope)
    }
}

/// JS truthiness of a handler result: `None`, null, false, 0 and "" are "no result".
pub(crate) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}
