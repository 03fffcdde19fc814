//! The host-side state of one plugin instance: its lifecycle phase, its call lock (calls never
//! overlap), what it registered, what the host tears down when it is retired, and the session
//! services bound to it. The `PiPlugin *` handle a plugin holds is a checked token for its
//! [`PluginState`] (see `crate::guards::handles`).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use pi_hooks_abi::ffi::*;

use crate::guards::handles::{self, CallLock, CallSlot};
use crate::plugin::registrations::{Registrations, UserData};
use crate::services::HostServices;

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
    /// Cancels the programs this plugin's `exec` calls run now (`exec_cancel`); replaced by
    /// a fresh token at each cancel, so later calls are not affected.
    exec_cancel: Mutex<crate::services::CancelToken>,
    /// Who the plugin is and where its folder is (`identity`, `data_dir`).
    own: RwLock<crate::plugin::own::Own>,
    /// The texts `identity` and `data_dir` handed out, alive as long as this state.
    handed_out: crate::plugin::own::HandedOut,
}

impl PluginState {
    /// The token that `exec_cancel` cancels, for an `exec` that starts now.
    pub fn exec_cancel_token(&self) -> crate::services::CancelToken {
        self.exec_cancel
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops every program this plugin's `exec` calls run now (`exec_cancel`).
    pub fn cancel_execs(&self) {
        let mut token = self.exec_cancel.lock().unwrap_or_else(|e| e.into_inner());
        token.cancel();
        *token = crate::services::CancelToken::new();
    }

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
            phase: AtomicU8::new(Phase::Init as u8),
            registrations: Mutex::new(Registrations::default()),
            cleanups: Mutex::new(Vec::new()),
            on_retire: Mutex::new(Vec::new()),
            init_error: Mutex::new(None),
            services: RwLock::new(None),
            exec_cancel: Mutex::new(crate::services::CancelToken::new()),
            own: RwLock::new(crate::plugin::own::Own::of(std::path::Path::new(&path))),
            handed_out: crate::plugin::own::HandedOut::default(),
            name,
            path,
        }
    }

    /// Who the plugin is and where its folder is.
    pub fn own(&self) -> crate::plugin::own::Own {
        self.own.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Changes who the plugin is (and its folder) from now on.
    pub fn set_own(&self, own: crate::plugin::own::Own) {
        *self.own.write().unwrap_or_else(|e| e.into_inner()) = own;
    }

    /// A NUL-terminated copy of `text` that lives as long as this state (see
    /// `crate::plugin::own::HandedOut`).
    pub fn hand_out(&self, text: &str) -> Option<(*const std::os::raw::c_char, usize)> {
        self.handed_out.keep(text)
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

    /// The handle given to the plugin (a checked token, see `crate::guards::handles`).
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
