//! What one plugin instance registered, and its lifecycle phase. The `PiPlugin *` handle a
//! plugin holds is a pointer to its [`PluginState`].

use std::os::raw::c_void;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use pi_hooks_abi::ffi::*;
use serde::Serialize;

use crate::handles::{self, CallLock, CallSlot};
use crate::services::HostServices;

/// A plugin's `user_data` pointer, kept as it was given and handed back on every call.
#[derive(Debug, Clone, Copy)]
pub struct UserData(pub *mut c_void);
// SAFETY: the host never dereferences user data; it only hands it back to the plugin, whose
// calls it serialises, as the ABI's threading contract says.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

/// An event subscription.
#[derive(Debug, Clone)]
pub struct EventHandler {
    /// The event name.
    pub event: String,
    /// The plugin's function.
    pub handler: PiEventHandler,
    /// Its user data.
    pub user_data: UserData,
}

/// A registered slash command.
#[derive(Debug, Clone, Serialize)]
pub struct Command {
    /// Name without the slash.
    pub name: String,
    /// Description (may be empty).
    pub description: String,
    /// The handler.
    #[serde(skip)]
    pub handler: PiCommandHandler,
    /// Completions, if any.
    #[serde(skip)]
    pub complete: Option<PiCompletionHandler>,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// A registered tool.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// The name the model calls.
    pub name: String,
    /// Human label.
    pub label: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the parameters.
    pub parameters: serde_json::Value,
    /// The execute function.
    #[serde(skip)]
    pub execute: PiToolExecute,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// A registered message renderer.
#[derive(Debug, Clone, Serialize)]
pub struct Renderer {
    /// The `customType` it renders.
    #[serde(rename = "customType")]
    pub custom_type: String,
    /// The render function.
    #[serde(skip)]
    pub render: PiRenderHandler,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// A registered command-line flag.
#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    /// Name without dashes.
    pub name: String,
    /// "boolean" or "string".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Description (may be empty).
    pub description: String,
    /// Default value, if any.
    pub default: Option<serde_json::Value>,
}

/// A registered keyboard shortcut.
#[derive(Debug, Clone, Serialize)]
pub struct Shortcut {
    /// The key.
    pub key: String,
    /// Description (may be empty).
    pub description: String,
    /// The handler.
    #[serde(skip)]
    pub handler: PiShortcutHandler,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// The most registrations (handlers, commands, tools, renderers, flags and shortcuts
/// together) one plugin may make. A plugin needs tens; the cap keeps a runaway init from
/// making the host's memory and every listing grow without bound.
pub const MAX_REGISTRATIONS: usize = 10_000;

/// What a registration registers, for duplicate checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegistrationKind {
    /// A slash command.
    Command,
    /// A tool.
    Tool,
    /// A message renderer.
    Renderer,
    /// A flag.
    Flag,
    /// A shortcut.
    Shortcut,
}

/// Everything a plugin registered, in registration order.
#[derive(Debug, Default, Clone)]
pub struct Registrations {
    /// Event handlers.
    pub events: Vec<EventHandler>,
    /// Commands.
    pub commands: Vec<Command>,
    /// Tools.
    pub tools: Vec<Tool>,
    /// Message renderers.
    pub renderers: Vec<Renderer>,
    /// Flags.
    pub flags: Vec<Flag>,
    /// Shortcuts.
    pub shortcuts: Vec<Shortcut>,
    /// Names taken per kind (duplicate checks in constant time).
    taken: rustc_hash::FxHashSet<(RegistrationKind, String)>,
    /// Whether a registration was refused for passing [`MAX_REGISTRATIONS`].
    pub over_limit: bool,
}

impl Registrations {
    /// The distinct event names subscribed to, in first-registration order.
    pub fn event_names(&self) -> Vec<String> {
        let mut seen = rustc_hash::FxHashSet::default();
        self.events
            .iter()
            .filter(|h| seen.insert(h.event.as_str()))
            .map(|h| h.event.clone())
            .collect()
    }

    /// How many registrations there are of every kind together.
    pub fn count(&self) -> usize {
        self.events.len()
            + self.commands.len()
            + self.tools.len()
            + self.renderers.len()
            + self.flags.len()
            + self.shortcuts.len()
    }

    /// Checks that one more registration fits under [`MAX_REGISTRATIONS`] (`PI_ERR` past it,
    /// remembered in `over_limit` for the load report).
    pub fn reserve_one(&mut self) -> Result<(), PiStatus> {
        if self.count() >= MAX_REGISTRATIONS {
            self.over_limit = true;
            return Err(PI_ERR);
        }
        Ok(())
    }

    /// Reserves one registration named `name` of `kind`: `PI_ERR_DUPLICATE` when the plugin
    /// already registered that name, `PI_ERR` past the limit.
    pub fn claim(&mut self, kind: RegistrationKind, name: &str) -> Result<(), PiStatus> {
        self.reserve_one()?;
        if !self.taken.insert((kind, name.to_owned())) {
            return Err(PI_ERR_DUPLICATE);
        }
        Ok(())
    }
}

/// Where a plugin is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Inside `init`: registration allowed, actions unavailable.
    Init = 0,
    /// Loaded: receives calls; registration closed.
    Active = 1,
    /// Retired: no new calls; host services answer `PI_ERR_CANCELLED`.
    Retired = 2,
    /// Being replaced by a reload: no new calls, but a call still running inside it (a tool
    /// waiting on its `exec` child, a command) keeps its host services until it returns.
    Draining = 3,
}

/// The host-side state of one plugin instance; `*mut PiPlugin` points here.
pub struct PluginState {
    /// The plugin's name from its descriptor.
    pub name: String,
    /// The path it was loaded from (as discovered).
    pub path: String,
    slot: u32,
    /// The call lock (calls never overlap), the stuck mark and the call in progress.
    calls: CallSlot,
    /// Set while a command of this plugin waits in `wait_for_idle`: other calls are refused
    /// meanwhile instead of waiting for it (they would wait for a run that waits for them).
    waiting_idle: std::sync::atomic::AtomicBool,
    phase: AtomicU8,
    registrations: Mutex<Registrations>,
    cleanups: Mutex<Vec<(PiCleanupFn, UserData)>>,
    /// Host-side teardown of what the plugin started (timers, `exec` children), run when it
    /// is retired, before its shutdown.
    on_retire: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
    init_error: Mutex<Option<String>>,
    services: RwLock<Option<Arc<dyn HostServices>>>,
}

impl PluginState {
    /// A fresh state in the `Init` phase, reachable through its handle. It is never freed: a
    /// plugin thread may still hold the handle after the plugin is retired, and must then get
    /// `PI_ERR_CANCELLED`, not read freed memory. It costs a few hundred bytes per load; the
    /// library itself stays mapped anyway.
    pub fn create(name: String, path: String) -> Result<Arc<PluginState>, String> {
        let slot = handles::reserve_slot()?;
        let state = Arc::new(PluginState::new(name, path, slot));
        // SAFETY: the Arc leaked here is never released, so the state it points to lives for
        // the rest of the process.
        let forever: &'static PluginState = unsafe { &*Arc::into_raw(Arc::clone(&state)) };
        handles::publish(slot, forever);
        Ok(state)
    }

    fn new(name: String, path: String, slot: u32) -> Self {
        PluginState {
            slot,
            calls: CallSlot::default(),
            waiting_idle: std::sync::atomic::AtomicBool::new(false),
            name,
            path,
            phase: AtomicU8::new(Phase::Init as u8),
            registrations: Mutex::new(Registrations::default()),
            cleanups: Mutex::new(Vec::new()),
            on_retire: Mutex::new(Vec::new()),
            init_error: Mutex::new(None),
            services: RwLock::new(None),
        }
    }

    /// Takes the call lock, waiting at most `limit` for a call in progress to return.
    pub fn lock_calls_within(&self, limit: std::time::Duration) -> Option<CallLock<'_>> {
        let deadline = std::time::Instant::now() + limit;
        loop {
            if let Some(lock) = self.calls.try_lock() {
                return Some(lock);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Takes the call lock, waiting while another call runs, unless that call is marked stuck
    /// (it overran its time and was abandoned): then `None`, so no caller waits on a plugin
    /// that may never return.
    #[inline]
    pub fn lock_calls_unless_stuck(&self) -> Option<CallLock<'_>> {
        match self.calls.try_lock() {
            Some(lock) => Some(lock),
            None => self.wait_for_calls_unless_stuck(),
        }
    }

    /// The slow path of [`PluginState::lock_calls_unless_stuck`]: another call is running.
    #[cold]
    #[inline(never)]
    fn wait_for_calls_unless_stuck(&self) -> Option<CallLock<'_>> {
        let mut backoff = std::time::Duration::from_micros(20);
        loop {
            if let Some(lock) = self.calls.try_lock() {
                return Some(lock);
            }
            if self.calls.is_stuck() || self.is_waiting_idle() {
                return None;
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(std::time::Duration::from_millis(2));
        }
    }

    /// Marks the call in progress as stuck (it overran its time and was abandoned); nothing
    /// when no call is in progress (it already returned). The call clears the mark when it
    /// returns.
    pub fn mark_stuck_if_busy(&self) {
        self.calls.mark_stuck_if_locked();
    }

    /// Whether a call that timed out is still running inside the plugin.
    pub fn is_stuck(&self) -> bool {
        self.calls.is_stuck()
    }

    /// Whether a command of the plugin is waiting in `wait_for_idle` (see
    /// [`PluginState::waiting_for_idle`]).
    pub fn is_waiting_idle(&self) -> bool {
        self.waiting_idle.load(Ordering::Acquire)
    }

    /// Runs `wait` (a command's wait for the agent to be idle, made inside the plugin's call)
    /// with the plugin marked as waiting: meanwhile every other call into the plugin (an
    /// event of the run being waited for, a timer) is refused at once instead of waiting for
    /// the command, which waits for that run.
    pub fn waiting_for_idle(&self, wait: impl FnOnce()) {
        struct Unmark<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Unmark<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        self.waiting_idle.store(true, Ordering::Release);
        let _unmark = Unmark(&self.waiting_idle);
        wait();
    }

    /// Binds the session services the plugin's actions use.
    pub fn bind_services(&self, services: Option<Arc<dyn HostServices>>) {
        *self.services.write().unwrap_or_else(|e| e.into_inner()) = services;
    }

    /// The bound session services, if any.
    pub fn services(&self) -> Option<Arc<dyn HostServices>> {
        self.services
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The handle given to the plugin (a checked token, see `crate::handles`).
    pub fn as_handle(&self) -> *mut PiPlugin {
        handles::plugin_handle(self.slot)
    }

    /// The state behind a handle; `None` for NULL, a wild pointer or anything the host did
    /// not hand out.
    pub fn from_handle(plugin: *mut PiPlugin) -> Option<&'static PluginState> {
        handles::plugin_from_handle(plugin)
    }

    /// The slot of this instance in the handle table.
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The plugin's current call, as its context and result handles reach it.
    pub fn call_slot(&self) -> &CallSlot {
        &self.calls
    }

    /// The current phase.
    #[inline]
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Init,
            1 => Phase::Active,
            3 => Phase::Draining,
            _ => Phase::Retired,
        }
    }

    /// Whether the plugin's own calls to host services are served: while it is active, and
    /// while a reload lets its last call finish ([`Phase::Draining`]).
    #[inline]
    pub fn serves_host_calls(&self) -> bool {
        matches!(self.phase(), Phase::Active | Phase::Draining)
    }

    /// Moves to `phase`.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Runs `f` on the registrations.
    pub fn with_registrations<T>(&self, f: impl FnOnce(&mut Registrations) -> T) -> T {
        f(&mut self.registrations.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A copy of the registrations.
    pub fn registrations(&self) -> Registrations {
        self.with_registrations(|r| r.clone())
    }

    /// Records a cleanup.
    pub fn add_cleanup(&self, cleanup: PiCleanupFn, data: UserData) {
        self.cleanups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((cleanup, data));
    }

    /// Registers host-side teardown to run when the plugin is retired (before its shutdown):
    /// cancelling its timers, killing its `exec` children. Registered after retirement, it
    /// runs at once.
    pub fn on_retire(&self, teardown: Box<dyn FnOnce() + Send>) {
        let mut hooks = self.on_retire.lock().unwrap_or_else(|e| e.into_inner());
        if self.phase() == Phase::Retired {
            drop(hooks);
            teardown();
        } else {
            hooks.push(teardown);
        }
    }

    /// Runs the teardown registered with [`PluginState::on_retire`], last registered first.
    pub fn run_retire_hooks(&self) {
        let hooks = std::mem::take(&mut *self.on_retire.lock().unwrap_or_else(|e| e.into_inner()));
        for hook in hooks.into_iter().rev() {
            hook();
        }
    }

    /// Takes the cleanups, last registered first.
    pub fn take_cleanups(&self) -> Vec<(PiCleanupFn, UserData)> {
        let mut cleanups =
            std::mem::take(&mut *self.cleanups.lock().unwrap_or_else(|e| e.into_inner()));
        cleanups.reverse();
        cleanups
    }

    /// Records the message of a failing init.
    pub fn set_init_error(&self, message: String) {
        *self.init_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
    }

    /// The message a failing init left.
    pub fn init_error(&self) -> Option<String> {
        self.init_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The default of a flag this plugin registered.
    pub fn flag_default(&self, name: &str) -> Option<Option<serde_json::Value>> {
        self.with_registrations(|r| {
            r.flags
                .iter()
                .find(|f| f.name == name)
                .map(|f| f.default.clone())
        })
    }
}

/// The values the command line gave plugin flags (`--plan`, `--model-x=foo`), shared by
/// every plugin of the process as pi's `runtime.flagValues` is: the bare name (no dashes)
/// to `true` or the string, plus the first registering plugin's default for flags the
/// command line left out. Empty until the command line has been matched against the loaded
/// plugins' flags; it outlives a reload, as pi carries flag values over.
static FLAG_VALUES: RwLock<Option<rustc_hash::FxHashMap<String, serde_json::Value>>> =
    RwLock::new(None);

/// Sets the process's flag values (see [`PluginState::flag_value`]), replacing any earlier.
pub fn set_flag_values(values: rustc_hash::FxHashMap<String, serde_json::Value>) {
    *FLAG_VALUES.write().unwrap_or_else(|e| e.into_inner()) = Some(values);
}

impl PluginState {
    /// What `get_flag(name)` answers this plugin: `None` unless it registered `name` (pi's
    /// `getFlag` is `undefined` then); otherwise the value from the process's flag values,
    /// or, while there is none, its own default (`Some(None)`: no default).
    /// Leading dashes are ignored (pi's docs call `getFlag("--plan")`, its code stores `plan`).
    pub fn flag_value(&self, name: &str) -> Option<Option<serde_json::Value>> {
        let name = name.trim_start_matches('-');
        let default = self.flag_default(name)?;
        let values = FLAG_VALUES.read().unwrap_or_else(|e| e.into_inner());
        match values.as_ref().and_then(|v| v.get(name)) {
            Some(value) => Some(Some(value.clone())),
            None => Some(default),
        }
    }
}
