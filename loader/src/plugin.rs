//! One loaded plugin instance: its library, its host-side state, its init and its retirement.

use std::sync::Mutex;

use pi_hooks_abi::ffi::*;

use crate::discover::Origin;
use crate::host_api;
use crate::host_api::context::{CallContext, CallKind};
use crate::host_api::result::ResultBuilder;
use crate::host_api::value::HostValue;
use crate::library::OpenedLibrary;
use crate::registry::{Phase, PluginState, Registrations};
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
    /// SHA-256 of the file.
    pub sha256: String,
    state: Box<PluginState>,
    /// Serialises calls into the plugin (the ABI promises one call at a time).
    call_lock: Mutex<()>,
    library: OpenedLibrary,
}

impl LoadedPlugin {
    /// Runs the plugin's init with a fresh state. On failure every registration is dropped,
    /// the plugin's cleanups run, and the error says why.
    pub fn init(
        library: OpenedLibrary,
        path: String,
        origin: Origin,
        trust: TrustState,
        sha256: String,
    ) -> Result<Self, String> {
        let state = Box::new(PluginState::new(library.name.clone(), path.clone()));
        let init = library
            .descriptor
            .init
            .ok_or("its descriptor has no init function")?;
        // SAFETY: the descriptor was checked; init gets the host table, valid for the life of
        // the process, and the handle of `state`, which lives until the plugin is retired.
        let status = unsafe { init(host_api::host_api(), state.as_handle()) };
        let plugin = LoadedPlugin {
            path,
            origin,
            trust,
            sha256,
            state,
            call_lock: Mutex::new(()),
            library,
        };
        if status == PI_OK {
            plugin.state.set_phase(Phase::Active);
            return Ok(plugin);
        }
        let detail = plugin
            .state
            .init_error()
            .unwrap_or_else(|| "no message".to_owned());
        let what = if status == PI_ERR_PANIC {
            "panicked"
        } else {
            "failed"
        };
        Err(format!(
            "its init {what} ({}: {detail}); the plugin was not loaded",
            pi_hooks_abi::sdk::status_name(status)
        ))
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

    /// The host-side state (registrations, phase).
    pub fn state(&self) -> &PluginState {
        &self.state
    }

    /// A copy of what the plugin registered.
    pub fn registrations(&self) -> Registrations {
        self.state.registrations()
    }

    /// Runs `f` while holding the plugin's call lock: calls into one plugin never overlap.
    pub fn serialised<T>(&self, f: impl FnOnce() -> T) -> T {
        let _guard = self.call_lock.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }

    /// Calls every handler this plugin registered for `event`, in registration order, with
    /// the same payload and a fresh context each.
    pub fn call_event(
        &self,
        event: &str,
        payload: &HostValue,
        call: &CallSite<'_>,
    ) -> Vec<HandlerOutcome> {
        let handlers: Vec<_> = self.state.with_registrations(|r| {
            r.events
                .iter()
                .filter(|h| h.event == event)
                .cloned()
                .collect()
        });
        handlers
            .into_iter()
            .map(|handler| {
                let ctx = CallContext::new(&self.state, call.kind, call.cwd, call.mode);
                let mut result = ResultBuilder::new();
                let status = self.serialised(|| {
                    if self.state.phase() != Phase::Active {
                        return PI_ERR_CANCELLED;
                    }
                    // SAFETY: the handler and user data were registered by this plugin, which
                    // is active; payload, context and result outlive the call; the call lock
                    // keeps calls into the plugin from overlapping. (An `extern "C"` call
                    // cannot unwind: the plugin side stops panics, as the SDK does.)
                    unsafe {
                        (handler.handler)(
                            handler.user_data.0,
                            payload.as_ptr(),
                            ctx.as_ptr(),
                            result.as_ptr(),
                        )
                    }
                });
                HandlerOutcome {
                    status,
                    result: result.into_value(),
                    error: ctx.take_error(),
                }
            })
            .collect()
    }
}

/// Where a call comes from: what its context tells the plugin.
#[derive(Debug, Clone, Copy)]
pub struct CallSite<'a> {
    /// The kind of call.
    pub kind: CallKind,
    /// The session's working directory.
    pub cwd: &'a str,
    /// One of `PI_MODE_*`.
    pub mode: u32,
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
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        let _guard = self.call_lock.lock().unwrap_or_else(|e| e.into_inner());
        let was_active = self.state.phase() == Phase::Active;
        self.state.set_phase(Phase::Retired);
        if was_active && let Some(shutdown) = self.library.descriptor.shutdown {
            // SAFETY: the plugin is loaded and its handle alive; shutdown runs once, with no
            // other call in flight (call lock held).
            unsafe { shutdown(self.state.as_handle()) };
        }
        for (cleanup, data) in self.state.take_cleanups() {
            // SAFETY: each cleanup was registered by the plugin for exactly this data and
            // runs once.
            unsafe { cleanup(data.0) };
        }
    }
}
