//! The auto-continue countdown of `agent_end` case B, on host timers. With a UI: a
//! `workflow-countdown` widget ticking 3-2-1 on a 1 s interval, then the reminder as a user
//! message. Without: a `workflow:countdown` message and one 3 s timeout. A new countdown
//! replaces a pending one; `stop` cancels it (and removes the widget).

use std::sync::{Arc, Mutex};

use pi_hooks_abi::ffi::{PI_DELIVER_DEFAULT, PI_WIDGET_ABOVE_EDITOR};
use pi_hooks_abi::sdk::LogLevel;
use pi_hooks_abi::sdk::prelude::*;

/// The widget key.
pub const WIDGET_KEY: &str = "workflow-countdown";
/// The grace period, in seconds.
pub const SECONDS: u32 = 3;

/// The widget line with `n` seconds left.
pub fn widget_line(n: u32) -> String {
    format!("⏳ Auto-continuing in {n}s... (type anything to interrupt)")
}

/// The content of the no-UI `workflow:countdown` message.
pub const MESSAGE: &str = "Auto-continuing workflow in 3s... (type anything to interrupt)";

/// The pending countdown's timer, if any.
#[derive(Debug, Default)]
pub struct Countdown {
    timer: Option<u64>,
    widget: bool,
}

/// Shared with the timer callbacks.
pub type Shared = Arc<Mutex<Countdown>>;

/// Locks, recovering from a poisoned lock (a panicking callback was already reported).
fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Countdown> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Cancels the pending countdown and removes its widget (with a context that has a UI).
pub fn stop(shared: &Shared, handle: PluginHandle, ctx: Option<&Context<'_>>) {
    let mut c = lock(shared);
    if let Some(id) = c.timer.take() {
        let _ = handle.cancel_timer(id);
    }
    if std::mem::take(&mut c.widget)
        && let Some(ctx) = ctx.filter(|ctx| ctx.has_ui())
    {
        let _ = ctx.ui().set_widget(WIDGET_KEY, None);
    }
}

/// Sends the reminder unless the user started something meanwhile (then, as in the
/// original, it is dropped). Either outcome is logged at info level (`PI_HOOKS_LOG=info`),
/// which is how the countdown shows without a UI.
fn deliver(handle: PluginHandle, ctx: &Context<'_>, reminder: &str) {
    if ctx.is_idle()
        && handle
            .send_user_message(reminder, PI_DELIVER_DEFAULT)
            .is_ok()
    {
        handle.log(LogLevel::Info, "countdown: reminder sent");
    } else {
        handle.log(
            LogLevel::Info,
            "countdown: the agent is busy; the reminder is dropped",
        );
    }
}

/// Starts (or restarts) the countdown that sends `reminder`.
pub fn start(shared: &Shared, ctx: &Context<'_>, reminder: String) -> Result<()> {
    let handle = ctx.plugin();
    stop(shared, handle, None);
    if ctx.has_ui() {
        let mut remaining = SECONDS;
        let me = shared.clone();
        let id = handle.start_timer(1000, 1000, move |ctx| {
            remaining = remaining.saturating_sub(1);
            if remaining > 0 {
                // The original passes `{placement: "aboveEditor"}`.
                return ctx.ui().set_widget_at(
                    WIDGET_KEY,
                    Some(&[&widget_line(remaining)]),
                    PI_WIDGET_ABOVE_EDITOR,
                );
            }
            stop(&me, ctx.plugin(), Some(ctx));
            deliver(ctx.plugin(), ctx, &reminder);
            Ok(())
        })?;
        let mut c = lock(shared);
        c.timer = Some(id);
        c.widget = true;
        drop(c);
        ctx.ui().set_widget_at(
            WIDGET_KEY,
            Some(&[&widget_line(SECONDS)]),
            PI_WIDGET_ABOVE_EDITOR,
        )?;
    } else {
        handle.send_message(
            &json!({"customType": "workflow:countdown", "content": MESSAGE, "display": true}),
            &json!({"triggerTurn": false}),
        )?;
        let me = shared.clone();
        let id = handle.start_timer(u64::from(SECONDS) * 1000, 0, move |ctx| {
            lock(&me).timer = None;
            deliver(ctx.plugin(), ctx, &reminder);
            Ok(())
        })?;
        lock(shared).timer = Some(id);
    }
    Ok(())
}
