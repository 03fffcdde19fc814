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
//!
//! The plugins and their per-event handler index are one immutable [`PluginSet`] behind an
//! atomic pointer swap (`arc_swap::ArcSwap`). A dispatch takes the set once, at its start,
//! and runs its whole chain on it, so it sees either the handlers from before a reload or
//! the ones after it, never a mix and never none. Reloads (see [`crate::lifecycle::reload`]) build a new
//! set beside the current one, swap it in with [`Runner::replace_plugins`], wait for the
//! dispatches still running on the old set to finish, then retire the instances the new set
//! no longer holds.

pub mod events;
mod lookup;
pub mod pi16;
mod render;
mod shortcuts;
mod timed;
mod whole;

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use pi_hooks_abi::ffi::PI_OK;
use serde_json::Value;

use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::LoadedPlugin;
use crate::plugin::call::{CallOutcome, call_handler};
use crate::plugin::registrations::EventHandler;
use crate::plugin::state::PluginState;
use crate::services::HostServices;

pub use crate::plugin::call::{DEFAULT_HOOK_TIMEOUT, ExtensionError, RunnerConfig};

/// An error listener.
pub type ErrorListener = Arc<dyn Fn(&ExtensionError) + Send + Sync>;

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
    /// Whether a successful call that left nothing (no result, no error message, no system
    /// prompt) leaves the chain as it was and goes on: the untimed loop then skips
    /// [`Chain::absorb`] for it (the hot path's common case: a gate that lets the call
    /// through). `false` unless the chain's `absorb` does nothing with such an outcome.
    const EMPTY_CONTINUES: bool = false;
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

const TOOL_CALL: &str = "tool_call";

/// Handlers per event name (FxHash: the names are few, short and not attacker-chosen).
type EventIndex = HashMap<String, Arc<[Slot]>, BuildHasherDefault<rustc_hash::FxHasher>>;

/// One immutable generation of the runner's plugins: the instances in load order and the
/// handlers of every event in dispatch order. A dispatch holds one set from start to end; a
/// reload replaces the whole set in one atomic step ([`Runner::replace_plugins`]).
pub struct PluginSet {
    plugins: Vec<Arc<LoadedPlugin>>,
    index: EventIndex,
    /// `index["tool_call"]`, kept beside it: the hot path finds its handlers without hashing.
    tool_call: Option<Arc<[Slot]>>,
    generation: u64,
}

impl PluginSet {
    /// A set over `plugins` (in load order), numbered `generation`.
    fn new(plugins: Vec<Arc<LoadedPlugin>>, generation: u64) -> Self {
        let mut index: HashMap<String, Vec<Slot>> = HashMap::new();
        for plugin in &plugins {
            for handler in plugin.registrations().events {
                index.entry(handler.event.clone()).or_default().push(Slot {
                    state: plugin.state().clone(),
                    handler,
                });
            }
        }
        let index: EventIndex = index.into_iter().map(|(k, v)| (k, Arc::from(v))).collect();
        PluginSet {
            tool_call: index.get(TOOL_CALL).cloned(),
            plugins,
            index,
            generation,
        }
    }

    /// The handlers of `event`, in dispatch order, if any plugin subscribed to it.
    #[inline]
    fn slots(&self, event: &str) -> Option<&Arc<[Slot]>> {
        if event == TOOL_CALL {
            self.tool_call.as_ref()
        } else {
            self.index.get(event)
        }
    }

    /// The plugins, in load order.
    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// The set's number: 0 for the set the runner was built with, one more per replacement.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether any plugin of the set handles `event`.
    pub fn has_handlers(&self, event: &str) -> bool {
        self.slots(event).is_some_and(|slots| !slots.is_empty())
    }
}

/// What a dispatch reads, in one atomic load: the plugin set and the shared event scope.
struct Current {
    set: Arc<PluginSet>,
    /// The scope shared by dispatches that do not change it (everything but
    /// before_agent_start), so the hot path allocates nothing for it. Replaced (not changed)
    /// when the session file changes: a dispatch under way keeps the scope it started with.
    scope: Arc<CallScope>,
}

/// The event runner for one set of loaded plugins.
pub struct Runner {
    /// The current plugin set and event scope; swapped whole by a reload or a new session.
    current: ArcSwap<Current>,
    /// Held by whoever replaces the set (one replacement at a time).
    replacing: Mutex<()>,
    /// Held for a whole reload operation (see [`Runner::reload_lock`]).
    reloading: Mutex<()>,
    /// The services bound with [`Runner::bind_services`]; plugins loaded later get them too.
    services: RwLock<Option<Arc<dyn HostServices>>>,
    listeners: Mutex<Vec<(u64, ErrorListener)>>,
    next_listener: AtomicU64,
    /// The configuration as built; the current session file is `session_file`.
    config: RunnerConfig,
    /// The session file plugins see (changes with a new session).
    session_file: RwLock<Option<String>>,
    /// The mode plugins see (a `PI_MODE_*`; a serve client may change it).
    mode: AtomicU32,
    /// `hookTimeout` in milliseconds (settings.json; a `/reload` reads it again).
    hook_timeout_ms: AtomicU64,
    /// `toolCallTimeout` in milliseconds, 0 for none (as `hook_timeout_ms`).
    tool_call_timeout_ms: AtomicU64,
    workers: timed::Workers,
    /// Plugin files that failed to load and do not run: `(path, why)` (see
    /// [`Runner::not_loaded`]).
    not_loaded: Mutex<Vec<(String, String)>>,
}

/// The UI status key under which the host shows the plugins that failed to load.
pub const NOT_LOADED_STATUS: &str = "pi-hooks:not-loaded";

/// How long [`Runner::replace_plugins`] waits for dispatches still running on the old set
/// before it retires the instances that left it anyway. A handler still running then
/// finishes on its old code (its instance is retired under it, see
/// [`LoadedPlugin::retire`]); later handlers of that same dispatch in retired instances are
/// not called.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// What [`Runner::replace_plugins`] did.
pub struct Replaced {
    /// The generation of the new set.
    pub generation: u64,
    /// The instances that were in the old set and not in the new one, in old load order,
    /// already retired.
    pub retired: Vec<Arc<LoadedPlugin>>,
    /// Whether every dispatch that was running on the old set finished within
    /// [`DRAIN_LIMIT`].
    pub drained: bool,
}

impl Runner {
    /// A runner over `plugins` (in load order).
    pub fn new(plugins: Vec<Arc<LoadedPlugin>>, config: RunnerConfig) -> Self {
        let event_scope = Arc::new(
            CallScope::new(CallKind::Event, &config.cwd, config.mode)
                .with_session_file(config.session_file.as_deref()),
        );
        Runner {
            current: ArcSwap::from_pointee(Current {
                set: Arc::new(PluginSet::new(plugins, 0)),
                scope: event_scope,
            }),
            replacing: Mutex::new(()),
            reloading: Mutex::new(()),
            services: RwLock::new(None),
            listeners: Mutex::new(Vec::new()),
            next_listener: AtomicU64::new(1),
            session_file: RwLock::new(config.session_file.clone()),
            mode: AtomicU32::new(config.mode),
            hook_timeout_ms: AtomicU64::new(millis(config.hook_timeout)),
            tool_call_timeout_ms: AtomicU64::new(config.tool_call_timeout.map_or(0, millis)),
            config,
            workers: timed::Workers::default(),
            not_loaded: Mutex::new(Vec::new()),
        }
    }

    /// The plugin files that failed to load and do not run, `(path, why)`: a gate plugin
    /// missing from the session is shown, not silent. `--watch` retries each when its file
    /// changes (`crate::lifecycle::watch`).
    pub fn not_loaded(&self) -> Vec<(String, String)> {
        self.not_loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the list of plugins that failed to load (at the start, after a `/reload`):
    /// each is traced, and the list is shown as the UI status [`NOT_LOADED_STATUS`].
    pub fn set_not_loaded(&self, list: Vec<(String, String)>) {
        if crate::observe::trace::on() {
            for (path, error) in &list {
                crate::observe::trace::not_loaded(path, Some(error));
            }
        }
        *self.not_loaded.lock().unwrap_or_else(|e| e.into_inner()) = list;
        self.show_not_loaded_on_bound_ui();
    }

    /// Records a new attempt to load `path` (`--watch`): `Err(why)` when it failed and the
    /// file does not run, `Ok` when it runs now (or was removed); traced and shown when the
    /// list changes.
    pub fn note_load(&self, path: &str, outcome: Result<(), &str>) {
        let mut list = self.not_loaded.lock().unwrap_or_else(|e| e.into_inner());
        let before = list.clone();
        list.retain(|(p, _)| p != path);
        if let Err(error) = outcome {
            list.push((path.to_owned(), error.to_owned()));
        }
        let changed = *list != before;
        drop(list);
        if changed {
            if crate::observe::trace::on() {
                crate::observe::trace::not_loaded(path, outcome.err());
            }
            self.show_not_loaded_on_bound_ui();
        }
    }

    fn show_not_loaded_on_bound_ui(&self) {
        if let Some(ui) = self.bound_services().and_then(|s| s.ui()) {
            self.show_not_loaded(&*ui);
        }
    }

    /// Shows the plugins that failed to load on `ui` as the status [`NOT_LOADED_STATUS`]
    /// (`not loaded: gate.so`, or `2 plugins not loaded: a.so, b.so`), or clears it.
    pub fn show_not_loaded(&self, ui: &dyn crate::services::UiService) {
        let list = self.not_loaded();
        let names: Vec<String> = list
            .iter()
            .map(|(path, _)| {
                std::path::Path::new(path)
                    .file_name()
                    .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        let mut request =
            serde_json::json!({"method": "setStatus", "statusKey": NOT_LOADED_STATUS});
        match names.len() {
            0 => {}
            1 => request["statusText"] = format!("not loaded: {}", names[0]).into(),
            n => {
                request["statusText"] =
                    format!("{n} plugins not loaded: {}", names.join(", ")).into()
            }
        }
        ui.fire(request);
    }

    /// The plugins, in load order (a copy of the current set's list: a reload may replace
    /// the set at any time).
    pub fn plugins(&self) -> Vec<Arc<LoadedPlugin>> {
        self.current.load().set.plugins.clone()
    }

    /// The current plugin set. Hold it only briefly: a reload waits (up to [`DRAIN_LIMIT`])
    /// for every holder of the old set before it retires the old instances.
    pub fn plugin_set(&self) -> Arc<PluginSet> {
        self.current.load().set.clone()
    }

    /// The generation of the current plugin set (0 at start, one more per reload): what the
    /// agent compares to know its tool list is stale.
    pub fn generation(&self) -> u64 {
        self.current.load().set.generation
    }

    /// Serialises reload operations (`crate::lifecycle::reload`): each holds this from reading the set
    /// it will change to the events it sends after the swap, so a `--watch` reload and a
    /// `/reload` never interleave.
    pub fn reload_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.reloading.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the plugin set in one atomic step: `build` gets the current set and returns
    /// the new list of instances (in load order; keep the `Arc`s of the instances that stay).
    /// New instances get the bound services. Then it waits (up to [`DRAIN_LIMIT`]) for the
    /// dispatches still running on the old set, and retires, in old load order, every
    /// instance of the old set that the new one does not hold.
    ///
    /// Replacements are serialised; `build` runs under that lock, so it sees the set it
    /// replaces. Do not call this from inside a plugin call (a handler, a command, a tool):
    /// the drain would wait for that call, and retiring its own plugin would wait for its
    /// call lock. Defer it until the call returned, as pi treats `ctx.reload()` as terminal.
    pub fn replace_plugins(
        &self,
        build: impl FnOnce(&PluginSet) -> Vec<Arc<LoadedPlugin>>,
    ) -> Replaced {
        let _one_at_a_time = self.replacing.lock().unwrap_or_else(|e| e.into_inner());
        let current = self.current.load().set.clone();
        let plugins = build(&current);
        let services = self.bound_services();
        for plugin in &plugins {
            let known = current.plugins.iter().any(|p| Arc::ptr_eq(p, plugin));
            if !known && let Some(services) = &services {
                plugin.state().bind_services(Some(services.clone()));
            }
        }
        let generation = current.generation + 1;
        let next = Arc::new(PluginSet::new(plugins, generation));
        drop(current);
        let previous = self.current.rcu(|now| Current {
            set: Arc::clone(&next),
            scope: Arc::clone(&now.scope),
        });
        let old = Arc::clone(&previous.set);
        drop(previous);
        // arc-swap pays the readers' debts on swap: from here on every dispatch still on
        // the old set holds a counted reference to what it loaded, which holds the old set.
        let drained = wait_until_sole_owner(&old, DRAIN_LIMIT);
        let mut retired = Vec::new();
        for plugin in &old.plugins {
            if !next.plugins.iter().any(|p| Arc::ptr_eq(p, plugin)) {
                plugin.retire_after_calls();
                retired.push(Arc::clone(plugin));
            }
        }
        Replaced {
            generation,
            retired,
            drained,
        }
    }

    /// The configuration (a copy: the session file changes with a new session).
    pub fn config(&self) -> RunnerConfig {
        let mut config = self.config.clone();
        config.session_file = self.session_file();
        config.mode = self.mode();
        config.hook_timeout = self.hook_timeout();
        config.tool_call_timeout = self.tool_call_timeout();
        config
    }

    /// `hookTimeout`: the limit of every call but `tool_call`'s.
    pub fn hook_timeout(&self) -> Duration {
        Duration::from_millis(self.hook_timeout_ms.load(Ordering::Relaxed))
    }

    /// `toolCallTimeout`: the limit of a `tool_call` handler, if any.
    #[inline]
    pub fn tool_call_timeout(&self) -> Option<Duration> {
        match self.tool_call_timeout_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Sets both timeouts (a `/reload` applies settings.json's again, as pi re-reads its
    /// settings); calls already running keep the limit they started with.
    pub fn set_timeouts(&self, hook: Duration, tool_call: Option<Duration>) {
        self.hook_timeout_ms.store(millis(hook), Ordering::Relaxed);
        self.tool_call_timeout_ms
            .store(tool_call.map_or(0, millis), Ordering::Relaxed);
    }

    /// The mode plugins see (a `PI_MODE_*`).
    pub fn mode(&self) -> u32 {
        self.mode.load(Ordering::Relaxed)
    }

    /// Sets the mode plugins see from the next dispatch on (whether they have a UI follows
    /// from it); a serve client whose own mode differs sets it.
    pub fn set_mode(&self, mode: u32) {
        if self.mode.swap(mode, Ordering::Relaxed) != mode {
            self.rescope();
        }
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
        *self.session_file.write().unwrap_or_else(|e| e.into_inner()) = path;
        self.rescope();
    }

    /// Rebuilds the shared event scope from the current mode and session file.
    fn rescope(&self) {
        let path = self.session_file();
        let scope = CallScope::new(CallKind::Event, &self.config.cwd, self.mode())
            .with_session_file(path.as_deref());
        let scope = Arc::new(scope);
        self.current.rcu(|now| {
            scope.replace_system_prompt(now.scope.system_prompt().as_str());
            Current {
                set: Arc::clone(&now.set),
                scope: Arc::clone(&scope),
            }
        });
    }

    /// Binds the session services every plugin's actions use (a mode does this once);
    /// plugins a reload brings in get them too.
    pub fn bind_services(&self, services: Arc<dyn HostServices>) {
        *self.services.write().unwrap_or_else(|e| e.into_inner()) = Some(services.clone());
        for plugin in self.current.load().set.plugins.iter() {
            plugin.state().bind_services(Some(services.clone()));
        }
    }

    /// The services bound with [`Runner::bind_services`], if any.
    pub fn bound_services(&self) -> Option<Arc<dyn HostServices>> {
        self.services
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether any plugin handles `event`.
    pub fn has_handlers(&self, event: &str) -> bool {
        self.current.load().set.has_handlers(event)
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
            CallScope::new(kind, &self.config.cwd, self.mode())
                .with_session_file(self.session_file().as_deref()),
        )
    }

    /// The shared scope for ordinary event dispatches.
    pub(crate) fn event_scope(&self) -> Arc<CallScope> {
        self.current.load().scope.clone()
    }

    /// Runs `chain` over the handlers of `event`, timed or inline, in `scope` (`None`: the
    /// shared event scope), and reports errors.
    pub(crate) fn run<C: Chain>(
        &self,
        event: &str,
        scope: Option<&Arc<CallScope>>,
        chain: C,
        timeout: Option<Duration>,
    ) -> C {
        // The set is taken once: the whole chain runs on it, even if a reload swaps it now.
        let current = self.current.load();
        let Some(slots) = current.set.slots(event) else {
            return chain;
        };
        let scope = scope.unwrap_or(&current.scope);
        let chain = self.run_slots(event, slots, scope, chain, timeout);
        drop(current);
        chain
    }

    /// Runs `chain` over `slots` (handlers of `event`, a whole list or a part of it) in
    /// `scope`, timed by `timeout`, and reports the errors.
    pub(crate) fn run_slots<C: Chain>(
        &self,
        event: &str,
        slots: &Arc<[Slot]>,
        scope: &Arc<CallScope>,
        chain: C,
        timeout: Option<Duration>,
    ) -> C {
        let (chain, errors) = if crate::observe::trace::on() {
            self.run_traced(event, slots, scope, chain, timeout)
        } else {
            match timeout {
                None => run_inline(event, slots, scope, chain),
                Some(limit) => {
                    let (chain, errors, _) =
                        self.workers
                            .run(event, slots.clone(), scope.clone(), chain, limit);
                    (chain, errors)
                }
            }
        };
        for error in &errors {
            self.emit_error(error);
        }
        chain
    }

    /// Runs `chain` over the handlers of `event` that `plugin` registered, timed, and
    /// reports errors (the events a single-plugin reload sends to one instance).
    pub(crate) fn run_on_plugin<C: Chain>(
        &self,
        plugin: &LoadedPlugin,
        event: &str,
        chain: C,
    ) -> C {
        let slots: Vec<Slot> = plugin.state().with_registrations(|r| {
            r.events
                .iter()
                .filter(|h| h.event == event)
                .map(|handler| Slot {
                    state: plugin.state().clone(),
                    handler: handler.clone(),
                })
                .collect()
        });
        if slots.is_empty() {
            return chain;
        }
        let slots: Arc<[Slot]> = Arc::from(slots);
        let started = crate::observe::trace::on().then(Instant::now);
        let (chain, errors, called) = self.workers.run(
            event,
            slots.clone(),
            self.event_scope(),
            chain,
            self.hook_timeout(),
        );
        if let Some(started) = started {
            crate::observe::trace::event(event, slots.len(), called, started.elapsed());
        }
        for error in &errors {
            self.emit_error(error);
        }
        chain
    }
}

impl Runner {
    /// [`Runner::run`]'s dispatch with the hook trace on: each handler's time and decision,
    /// then the dispatch's summary (see [`crate::observe::trace`]).
    #[cold]
    #[inline(never)]
    fn run_traced<C: Chain>(
        &self,
        event: &str,
        slots: &Arc<[Slot]>,
        scope: &Arc<CallScope>,
        chain: C,
        timeout: Option<Duration>,
    ) -> (C, Vec<ExtensionError>) {
        let started = Instant::now();
        let (chain, errors, called) = match timeout {
            None => run_inline_traced(event, slots, scope, chain),
            Some(limit) => self
                .workers
                .run(event, slots.clone(), scope.clone(), chain, limit),
        };
        crate::observe::trace::event(event, slots.len(), called, started.elapsed());
        (chain, errors)
    }
}

/// Waits until `set` is held by nobody but the caller, at most `limit`; whether it was.
fn wait_until_sole_owner<T>(set: &Arc<T>, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_micros(10);
    while Arc::strong_count(set) > 1 {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
    true
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
        if C::EMPTY_CONTINUES && outcome.left_nothing() {
            continue;
        }
        if step(&mut chain, slot, outcome, scope, &mut errors, event) == Flow::Stop {
            break;
        }
    }
    (chain, errors)
}

/// [`run_inline`] with the hook trace: each handler timed from the moment its call begins
/// (not while it waits for its plugin to be free), its decision read before the chain takes
/// the outcome. Also returns how many handlers were called.
fn run_inline_traced<C: Chain>(
    event: &str,
    slots: &[Slot],
    scope: &CallScope,
    mut chain: C,
) -> (C, Vec<ExtensionError>, usize) {
    let mut errors = Vec::new();
    let mut called = 0;
    for slot in slots {
        let mut began = None;
        let outcome = slot.call(chain.payload(), scope, || began = Some(Instant::now()));
        let elapsed = began.map_or(Duration::ZERO, |began| began.elapsed());
        called += usize::from(began.is_some());
        let decision = crate::observe::trace::Decision::of(event, &outcome);
        crate::observe::trace::handler(event, &slot.state, elapsed, &decision);
        if step(&mut chain, slot, outcome, scope, &mut errors, event) == Flow::Stop {
            break;
        }
    }
    (chain, errors, called)
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
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `duration` in whole milliseconds (at least 1 for a non-zero one, saturating).
fn millis(duration: Duration) -> u64 {
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 && !duration.is_zero() {
        1
    } else {
        ms
    }
}
