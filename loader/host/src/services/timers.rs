//! Timers (`PiActionsApi.timer_start` / `timer_cancel`): `setTimeout` and `setInterval` for
//! native plugins, run by the host so it can stop them all before a plugin is retired.
//!
//! * Each timer is a task on the host's runtime (`loader/host/src/services/runtime.rs`). When it is due,
//!   its callback runs on the runtime's blocking pool through [`crate::plugin::call::call_timer`]:
//!   like a handler, it never overlaps another call into the same plugin (it waits for the
//!   plugin to be free), gets a context of its own (`CallKind::Timer`, the session's cwd and
//!   mode), and may call any action, `exec` included.
//! * A callback runs under `hookTimeout` (the runner's, default 30 s; time in UI dialogs does
//!   not count). One that overruns is reported and its plugin marked busy, exactly as the
//!   timed runner does with a handler (`loader/host/src/runner/timed.rs`): it gets no new call
//!   until the stuck one returns, and the timer's firings are skipped meanwhile. An error
//!   status, a panic (Rust SDK) or a C++ exception is reported like a handler error. Reports
//!   go to the mode's error listeners (`HostServices::report_error`) with the event name
//!   `timer`: in print and JSON mode an `Extension error (<path>): timer N: ...` line on
//!   stderr, and an `extension_error` line in JSON mode.
//! * An interval keeps its cadence but never queues firings: a tick that comes while the
//!   callback still runs is skipped, as `setInterval` in a busy event loop.
//! * Ids count up from 1 per plugin instance and are never reused. A one-shot timer is no
//!   longer running once it has fired (cancelling it then, also from its own callback, gives
//!   `PI_ERR_NOT_FOUND`). A plugin may have at most [`MAX_TIMERS`] running at once.
//! * Callbacks run only while the session's services are bound to the plugin (a mode runs
//!   it); a timer due before that, or after, skips that firing.
//! * When a plugin is retired (unload, reload, the end of the run) all its timers stop, and
//!   no callback starts after that. A callback already running is waited for by the
//!   retirement, as any other call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use pi_hooks_abi::ffi::*;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::guards::display::escape;
use crate::host_api::context::{CallKind, CallScope};
use crate::plugin::call::ExtensionError;
use crate::plugin::registrations::UserData;
use crate::plugin::state::{Phase, PluginState};

/// The most timers one plugin may have running at once. A plugin needs a few; the cap keeps a
/// runaway loop from filling the host's memory with tasks.
pub const MAX_TIMERS: usize = 10_000;

/// How often a watcher looks again at a callback paused in a UI dialog.
const DIALOG_POLL: Duration = Duration::from_millis(10);

/// How a running timer is stopped.
#[derive(Default)]
struct Stop {
    stopped: AtomicBool,
    wake: Notify,
}

impl Stop {
    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        // Stores a permit when the task is not waiting right now: it sees it on its next wait.
        self.wake.notify_one();
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

/// The timers of one plugin instance.
#[derive(Default)]
struct PluginTimers {
    last_id: u64,
    running: rustc_hash::FxHashMap<u64, Arc<Stop>>,
    /// The plugin was retired: no new timer starts.
    retired: bool,
}

/// Timers per plugin instance (by handle slot; slots are never reused).
static TIMERS: LazyLock<Mutex<rustc_hash::FxHashMap<u32, PluginTimers>>> =
    LazyLock::new(Mutex::default);

fn timers() -> MutexGuard<'static, rustc_hash::FxHashMap<u32, PluginTimers>> {
    TIMERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why `timer_start` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The plugin has [`MAX_TIMERS`] running (`PI_ERR`; the message is for the log).
    TooMany(String),
    /// The plugin was retired (`PI_ERR_CANCELLED`).
    Retired,
}

/// Starts a timer for the plugin behind `state` (see the module doc); its id.
pub fn start(
    state: &'static PluginState,
    delay_ms: u64,
    interval_ms: u64,
    callback: PiTimerFn,
    user_data: UserData,
) -> Result<u64, StartError> {
    let slot = state.slot();
    let (id, stop, first) = {
        let mut all = timers();
        let first = !all.contains_key(&slot);
        let timers = all.entry(slot).or_default();
        if timers.retired {
            return Err(StartError::Retired);
        }
        if timers.running.len() >= MAX_TIMERS {
            return Err(StartError::TooMany(format!(
                "plugin {} ({}): timer_start refused: it has {MAX_TIMERS} timers running, the most one plugin may have; cancel timers it no longer needs (timer_cancel)",
                escape(&state.name),
                escape(&state.path)
            )));
        }
        timers.last_id += 1;
        let stop = Arc::new(Stop::default());
        timers.running.insert(timers.last_id, stop.clone());
        (timers.last_id, stop, first)
    };
    let timer = Timer {
        state,
        id,
        delay: Duration::from_millis(delay_ms),
        interval: (interval_ms > 0).then(|| Duration::from_millis(interval_ms)),
        callback,
        user_data,
        stop,
    };
    crate::services::runtime::handle().spawn(timer.run());
    if first {
        // Runs at once (and stops this timer) if the plugin was retired meanwhile.
        state.on_retire(Box::new(move || retire(slot)));
    }
    Ok(id)
}

/// Stops timer `id` of the plugin behind `state`; `false` when it is not running (unknown,
/// cancelled, or a one-shot timer that already fired).
pub fn cancel(state: &PluginState, id: u64) -> bool {
    let stop = timers()
        .get_mut(&state.slot())
        .and_then(|timers| timers.running.remove(&id));
    match stop {
        Some(stop) => {
            stop.stop();
            true
        }
        None => false,
    }
}

/// Stops every timer of the plugin in `slot`; no new one starts.
fn retire(slot: u32) {
    let stops: Vec<Arc<Stop>> = {
        let mut all = timers();
        let timers = all.entry(slot).or_default();
        timers.retired = true;
        timers.running.drain().map(|(_, stop)| stop).collect()
    };
    for stop in stops {
        stop.stop();
    }
}

/// Forgets a one-shot timer that is firing (it is no longer running).
fn forget(slot: u32, id: u64) {
    if let Some(timers) = timers().get_mut(&slot) {
        timers.running.remove(&id);
    }
}

/// One timer's task.
struct Timer {
    state: &'static PluginState,
    id: u64,
    delay: Duration,
    interval: Option<Duration>,
    callback: PiTimerFn,
    user_data: UserData,
    stop: Arc<Stop>,
}

impl Timer {
    async fn run(self) {
        let mut due = later(Instant::now(), self.delay);
        loop {
            tokio::select! {
                () = sleep_until(due) => {}
                () = self.stop.wake.notified() => {}
            }
            if self.stop.is_stopped() {
                return;
            }
            let Some(interval) = self.interval else {
                forget(self.state.slot(), self.id);
                self.fire().await;
                return;
            };
            self.fire().await;
            // The next tick on the cadence that is still ahead: ticks missed while the
            // callback ran are skipped, not queued.
            let now = Instant::now();
            due = later(due, interval);
            if due <= now {
                let behind = now.duration_since(due).as_nanos() / interval.as_nanos().max(1);
                let skip = u32::try_from(behind + 1).unwrap_or(u32::MAX);
                due = due
                    .checked_add(interval.saturating_mul(skip))
                    .unwrap_or_else(|| later(now, interval));
            }
        }
    }

    /// Runs the callback once, watching its time; reports what went wrong.
    async fn fire(&self) {
        let state = self.state;
        if state.phase() != Phase::Active || state.is_stuck() {
            return;
        }
        let Some(services) = state.services() else {
            return;
        };
        let Some(config) = services.runner_config() else {
            return;
        };
        let scope = Arc::new(
            CallScope::new(CallKind::Timer, &config.cwd, config.mode)
                .with_session_file(config.session_file.as_deref()),
        );
        let started = Arc::new(Started::default());
        let mut call = {
            let (scope, started) = (scope.clone(), started.clone());
            let (callback, user_data, id) = (self.callback, self.user_data, self.id);
            tokio::task::spawn_blocking(move || {
                crate::plugin::call::call_timer(state, callback, user_data, id, &scope, || {
                    started.mark()
                })
            })
        };
        let limit = config.hook_timeout;
        // The clock starts when the plugin is free and the callback begins.
        let outcome = tokio::select! {
            outcome = &mut call => Some(outcome),
            () = started.wake.notified() => None,
        };
        let outcome = match outcome {
            Some(outcome) => outcome,
            None => loop {
                let begun = started.at().unwrap_or_else(Instant::now);
                let paused = scope.pause_clock().paused();
                let until =
                    later(begun, limit.saturating_add(paused)).max(Instant::now() + DIALOG_POLL);
                tokio::select! {
                    outcome = &mut call => break outcome,
                    () = tokio::time::sleep_until(until) => {}
                }
                let over = later(begun, limit.saturating_add(scope.pause_clock().paused()));
                if scope.pause_clock().in_dialog() || Instant::now() < over || call.is_finished() {
                    continue;
                }
                // Abandoned: the plugin gets no new call until this one returns (the call
                // clears the mark then), and the timer's firings are skipped meanwhile.
                state.mark_stuck_if_busy();
                self.report(
                    services.as_ref(),
                    format!("timed out after {}ms", limit.as_millis()),
                );
                return;
            },
        };
        match outcome {
            Ok(outcome) if outcome.status == PI_OK || outcome.status == PI_ERR_CANCELLED => {}
            Ok(outcome) => self.report(services.as_ref(), outcome.error_text()),
            Err(error) => self.report(
                services.as_ref(),
                format!("the host task running the callback failed: {error}"),
            ),
        }
    }

    fn report(&self, services: &dyn crate::services::HostServices, error: String) {
        services.report_error(&ExtensionError {
            extension_path: self.state.path.clone(),
            event: "timer".to_owned(),
            error: format!("timer {}: {error}", self.id),
        });
    }
}

/// When a callback began (set by the blocking thread once the plugin is free).
#[derive(Default)]
struct Started {
    at: Mutex<Option<Instant>>,
    wake: Notify,
}

impl Started {
    fn mark(&self) {
        *self.at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.wake.notify_one();
    }

    fn at(&self) -> Option<Instant> {
        *self.at.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `from + by`, or a point about thirty years ahead when that is not representable (a delay
/// of `u64::MAX` ms never fires in practice).
fn later(from: Instant, by: Duration) -> Instant {
    from.checked_add(by)
        .unwrap_or_else(|| from + Duration::from_secs(30 * 365 * 24 * 3600))
}

async fn sleep_until(due: Instant) {
    tokio::time::sleep_until(due).await
}
