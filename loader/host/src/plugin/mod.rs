//! One loaded plugin instance ([`LoadedPlugin`]): its library, its host-side state
//! ([`state`]), what it registered ([`registrations`]), its init, its calls ([`call`]) and its
//! retirement.

pub mod call;
pub mod event_names;
pub mod own;
pub mod registrations;
pub mod state;

use std::sync::{Arc, OnceLock};

use pi_hooks_abi::ffi::*;

use crate::guards::crash_guard::{self, Activity, CallSite};
use crate::guards::display::escape;
use crate::guards::exception_barrier;
use crate::host_api;
use crate::host_api::context::CallScope;
use crate::host_api::value::HostValue;
use crate::identity::PluginIdentity;
use crate::library::OpenedLibrary;
use crate::plugin::call::{HandlerOutcome, call_handler};
use crate::plugin::registrations::{EventHandler, Registrations};
use crate::plugin::state::{Phase, PluginState};
use crate::plugin_files::discover::Origin;
use crate::plugin_files::trust::TrustState;

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

/// Where a loaded plugin's code runs ([`LoadedPlugin::runs`]).
#[derive(Debug, Clone, PartialEq)]
// Asked once in a while, never stored in bulk: the size of a grant is no cost worth a box.
pub enum Runs {
    /// In the host's own process.
    InProcess,
    /// In a `pi-hooks serve` child of its own (`--isolate`, the `isolate` setting).
    Isolated,
    /// In a child confined to this grant.
    Confined(Box<crate::sandbox::Grant>),
}

impl Runs {
    /// `in-process`, `isolated` or `confined` (`list --json`'s `runs`).
    pub fn key(&self) -> &'static str {
        match self {
            Runs::InProcess => "in-process",
            Runs::Isolated => "isolated",
            Runs::Confined(_) => "confined",
        }
    }
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
        crate::plugin::registrations::MAX_REGISTRATIONS
    )
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
                .filter_map(|name| crate::plugin::event_names::unknown_event_warning(name))
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
                .map(|bytes| crate::plugin_files::trust::sha256_hex(&bytes))
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

    /// Who the plugin is (its package, or the library file it was loaded from): what
    /// `identity` answers it and what its grant, `${data}` and records are keyed by. From
    /// [`own::assign`] for its file when the loader assigned one before the load, else
    /// [`PluginIdentity::library`] of its path.
    pub fn identity(&self) -> PluginIdentity {
        self.state.own().identity
    }

    /// Makes the plugin `identity` from now on (`identity` and `data_dir` answer for it;
    /// its folder becomes `identity`'s under the agent directory). For the identity to
    /// hold during the plugin's `init` too, and in the child of an isolated or confined
    /// plugin, assign it before the load instead ([`own::assign`]).
    pub fn set_identity(&self, identity: PluginIdentity) {
        self.state.set_own(own::Own {
            identity,
            data_dir: None,
        });
    }

    /// The plugin's own folder (`${data}`), as `data_dir` answers it (not created here).
    pub fn data_dir(&self) -> Result<std::path::PathBuf, String> {
        self.state.own().data_dir()
    }

    /// Where its code runs: in the host's process, in a child of its own (isolated), or in
    /// a child confined to a grant (see `crate::sandbox`).
    pub fn runs(&self) -> Runs {
        if !self.library.is_in_process_proxy() {
            return Runs::InProcess;
        }
        match crate::sandbox::held(&self.path) {
            Some(grant) => Runs::Confined(Box::new(grant)),
            None => Runs::Isolated,
        }
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
                if !crate::observe::trace::on() {
                    return self.call_handler(h, payload, scope);
                }
                let mut began = None;
                let outcome = call_handler(&self.state, h, payload, scope, || {
                    began = Some(std::time::Instant::now());
                });
                let elapsed = began.map_or(std::time::Duration::ZERO, |b| b.elapsed());
                let decision = crate::observe::trace::Decision::of(event, &outcome);
                crate::observe::trace::handler(event, &self.state, elapsed, &decision);
                outcome.into()
            })
            .collect()
    }
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
    /// explicitly, once no dispatch can still reach it (see `crate::lifecycle::reload`).
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
