//! The plugin-to-plugin event bus: `events_emit` / `events_on` of `PiActionsApi`, the native
//! form of pi's `pi.events`. One bus per host process, shared by every loaded plugin.
//!
//! What pi does, and what the host keeps of it:
//!
//! - A channel is any string; the data is any JSON value (here: JSON text, copied into a
//!   host value when emitted; empty text is `null`).
//! - Every handler subscribed to the channel gets the emission, in subscription order across
//!   all plugins, the emitting plugin's own handlers included (pi's bus is a Node
//!   `EventEmitter`). The subscribers are those of the moment of the emit.
//! - A handler's error is caught and reported; the other handlers still run. pi writes
//!   `Event handler error (<channel>): <error>` with `console.error`; the host reports
//!   `Event handler error (<channel>): <message>` for event `bus` through the mode's error
//!   listeners (`HostServices::report_error`: `Extension error (<path>): ...` on stderr, and an
//!   `extension_error` line in JSON mode), or on stderr when no mode is bound.
//!
//! What differs, because a host service never calls back into a plugin synchronously:
//! pi's `emit` calls the handlers before it returns; here `events_emit`
//! queues the emission and returns. One delivery task on the host's runtime
//! (`crate::services::runtime`) takes emissions first in, first out and calls their subscribers one at
//! a time through [`crate::plugin::call::call_bus_handler`], so deliveries keep emission order, an
//! emit from inside a bus handler is delivered after that handler returns, and no plugin is
//! re-entered. At most [`MAX_PENDING`] emissions wait; past that `events_emit` answers `PI_ERR`
//! (and the host logs it once per burst). A subscriber whose plugin is not active when its
//! emission is delivered (still in its init, or retired) is skipped. Subscriptions end when
//! their plugin is retired (a reload, the end of the run). Bus handlers are not timed.
//!
//! At the end of a print or JSON run the host waits up to [`SHUTDOWN_DRAIN`] for pending
//! deliveries (after `session_shutdown`, before the plugins are retired), so an emission made
//! during the run reaches its subscribers.
//!
//! Isolated plugins (`crate::isolate`) share the host's bus. In an isolated plugin's child
//! the bus is routed to the host ([`route_to`], once the child said `hello`): an emission
//! goes to the host's bus (a `bus_emit` notification) instead of this process's, and each
//! subscription is announced (`bus_on`; those made during init are listed in `hello`'s
//! `busChannels`). The host's proxy holds one subscription on its bus per subscription in
//! the child, at the same place in the subscription order, and delivers an emission to the
//! child as a `bus` request naming the channel and which of the child's subscribers of it
//! to call ([`deliver_nth`]). So every subscriber, isolated or not, gets every emission in
//! subscription order, as in one process. What an isolated plugin emits during its own init
//! is held by its child ([`hold_emissions`]) and listed in `hello`'s `busEmitted`; the proxy
//! emits it on the host's bus in its own init.
//!
//! Load order: a discovery's isolated plugins start in parallel with the others, so their
//! inits (where the proxies subscribe and emit) do not happen at their place in the load
//! order. While a discovery loads ([`LoadOrder`]) the bus therefore holds what plugins still
//! in their init emit, and at its end puts each channel's subscribers in load order (each
//! plugin's own in the order it made them) and then delivers the held emissions in load
//! order, each to the subscribers of the plugins loaded before its emitter: what one process
//! loading them one after another does (where a plugin still in its init skips its own
//! emission).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use pi_hooks_abi::ffi::*;
use rustc_hash::FxHashMap;

use crate::guards::display::escape;
use crate::host_api::value::{CText, HostValue};
use crate::plugin::registrations::UserData;
use crate::plugin::state::{Phase, PluginState};

/// The most emissions waiting for delivery; `events_emit` answers `PI_ERR` past it, so a
/// plugin emitting in a loop cannot make the host's memory grow without bound.
pub const MAX_PENDING: usize = 10_000;

/// The most subscriptions one plugin instance may hold (as for registrations,
/// [`crate::plugin::registrations::MAX_REGISTRATIONS`]); `events_on` answers `PI_ERR` past it.
pub const MAX_SUBSCRIPTIONS: usize = crate::plugin::registrations::MAX_REGISTRATIONS;

/// How long the end of a run waits for pending deliveries.
pub const SHUTDOWN_DRAIN: Duration = Duration::from_secs(5);

/// One handler subscribed to a channel.
#[derive(Clone)]
struct Subscriber {
    plugin: &'static PluginState,
    handler: PiBusHandler,
    user_data: UserData,
}

/// One emission waiting for delivery, with the subscribers of the moment it was made.
struct Emission {
    channel: CText,
    data: HostValue,
    subscribers: Arc<Vec<Subscriber>>,
}

#[derive(Default)]
struct Subscriptions {
    /// Per channel, in subscription order. `Arc` so an emission takes a snapshot for the cost
    /// of a reference count; a subscription clones the list only while a snapshot is queued.
    channels: FxHashMap<Box<str>, Arc<Vec<Subscriber>>>,
    /// Subscriptions per plugin slot; an entry means its retirement hook is registered.
    per_plugin: FxHashMap<u32, usize>,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Emission>,
    /// Whether the delivery task is running.
    delivering: bool,
    /// Whether the cap was hit and logged; cleared when an emission is accepted again.
    refusing: bool,
}

/// The bus: subscriptions and the delivery queue.
#[derive(Default)]
struct Bus {
    subscriptions: Mutex<Subscriptions>,
    queue: Mutex<Queue>,
    /// Signalled when the queue is empty and the delivery task has stopped.
    idle: Condvar,
}

fn bus() -> &'static Bus {
    static BUS: OnceLock<Bus> = OnceLock::new();
    BUS.get_or_init(Bus::default)
}

/// Locks `mutex`; a panic elsewhere while it was held does not poison the bus.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where an isolated plugin's child sends its bus traffic: the host (see the module doc).
pub trait Remote: Send + Sync {
    /// An emission of a plugin of this process, for the host's bus.
    fn emit(&self, channel: &str, data: &serde_json::Value) -> Result<(), PiStatus>;
    /// A plugin of this process subscribed to `channel` (after the route was set).
    fn subscribed(&self, channel: &str);
}

static REMOTE: OnceLock<Box<dyn Remote>> = OnceLock::new();

/// Emissions held until [`route_to`]: (plugin slot, channel, data).
static HELD: Mutex<Option<Vec<Held>>> = Mutex::new(None);

/// Holds the emissions of this process's plugins, from now until [`route_to`], instead of
/// delivering them (an isolated plugin's child, before it loads its plugin: the host gets
/// them with the `hello`, see [`held_emissions_of`]).
pub fn hold_emissions() {
    lock(&HELD).get_or_insert_with(Vec::new);
}

/// What `plugin` emitted while emissions were held, in order: channel and data.
pub fn held_emissions_of(plugin: &PluginState) -> Vec<(String, serde_json::Value)> {
    let slot = plugin.slot();
    lock(&HELD)
        .iter()
        .flatten()
        .filter(|(of, ..)| *of == slot)
        .map(|(_, channel, data)| (channel.clone(), data.clone()))
        .collect()
}

/// Routes this process's bus to `remote` from now on (an isolated plugin's child, after its
/// `hello`); held emissions are dropped (the `hello` carried them). Set once; a second call
/// is ignored.
pub fn route_to(remote: Box<dyn Remote>) {
    let _ = REMOTE.set(remote);
    lock(&HELD).take();
}

/// The channels `plugin` subscribed to, one entry per subscription (a channel subscribed
/// twice is listed twice), for an isolated plugin's `hello`.
pub fn channels_of(plugin: &PluginState) -> Vec<String> {
    let slot = plugin.slot();
    let subs = lock(&bus().subscriptions);
    let mut channels: Vec<String> = Vec::new();
    for (channel, list) in &subs.channels {
        let count = list.iter().filter(|s| s.plugin.slot() == slot).count();
        channels.extend(std::iter::repeat_n(channel.to_string(), count));
    }
    channels.sort();
    channels
}

/// Calls the `nth` (from 0) subscriber `channel` has in this process with `data`, now, on
/// this thread (an isolated plugin's child, for the host's `bus` request; see the module
/// doc). Its error is reported as any bus handler's is. Nothing happens when there is no
/// such subscriber (it was retired) or its plugin is not active.
pub fn deliver_nth(channel: &str, nth: usize, data: serde_json::Value) {
    let subscriber = lock(&bus().subscriptions)
        .channels
        .get(channel)
        .and_then(|list| list.get(nth).cloned());
    let Some(subscriber) = subscriber else {
        return;
    };
    let emission = Emission {
        channel: CText::new(channel),
        data: HostValue::from_json(data),
        subscribers: Arc::new(vec![subscriber]),
    };
    deliver(&emission);
}

/// An emission held back: its emitter's slot, the channel and the data.
type Held = (u32, String, serde_json::Value);

/// How many loads are under way, and the emissions held while they are.
static LOADING: Mutex<(usize, Vec<Held>)> = Mutex::new((0, Vec::new()));

/// One discovery's load (see the module doc): [`LoadOrder::begin`] before its plugins load,
/// [`LoadOrder::end`] with their slots in load order once they have.
pub struct LoadOrder {
    ended: bool,
}

impl LoadOrder {
    /// From now on, emissions of plugins still in their init are held.
    pub fn begin() -> Self {
        lock(&LOADING).0 += 1;
        LoadOrder { ended: false }
    }

    /// The plugins of this load, by slot, in load order: each channel's subscribers are put
    /// in that order (the others' first, as they were loaded before), and the held
    /// emissions are delivered in it.
    pub fn end(mut self, order: Vec<u32>) {
        self.ended = true;
        let held = {
            let mut loading = lock(&LOADING);
            loading.0 -= 1;
            if loading.0 == 0 {
                std::mem::take(&mut loading.1)
            } else {
                Vec::new()
            }
        };
        let rank = |slot: u32| order.iter().position(|s| *s == slot).map_or(0, |at| at + 1);
        {
            let mut subs = lock(&bus().subscriptions);
            for list in subs.channels.values_mut() {
                let sorted = list
                    .windows(2)
                    .all(|w| rank(w[0].plugin.slot()) <= rank(w[1].plugin.slot()));
                if !sorted {
                    Arc::make_mut(list).sort_by_key(|s| rank(s.plugin.slot()));
                }
            }
        }
        let mut held = held;
        // In load order; an emitter of another load last, in the order it emitted.
        held.sort_by_key(|(slot, ..)| match rank(*slot) {
            0 => usize::MAX,
            at => at,
        });
        for (slot, channel, data) in held {
            let emitter = rank(slot);
            let before = |s: &Subscriber| emitter == 0 || rank(s.plugin.slot()) < emitter;
            let subscribers: Vec<Subscriber> = lock(&bus().subscriptions)
                .channels
                .get(channel.as_str())
                .map(|list| list.iter().filter(|s| before(s)).cloned().collect())
                .unwrap_or_default();
            if !subscribers.is_empty() {
                queue(None, channel.as_str(), data, Arc::new(subscribers)).ok();
            }
        }
    }
}

impl Drop for LoadOrder {
    fn drop(&mut self) {
        if !self.ended {
            // A load that did not finish (a panic): nothing is held for it any more.
            let mut loading = lock(&LOADING);
            loading.0 -= 1;
            if loading.0 == 0 {
                loading.1.clear();
            }
        }
    }
}

/// Subscribes `handler` (with `user_data`) of `plugin` to `channel`. The subscription ends
/// when the plugin is retired. `Err(PI_ERR)` past [`MAX_SUBSCRIPTIONS`] for the plugin.
pub fn subscribe(
    plugin: &'static PluginState,
    channel: &str,
    handler: PiBusHandler,
    user_data: UserData,
) -> Result<(), PiStatus> {
    let slot = plugin.slot();
    let first = {
        let mut subs = lock(&bus().subscriptions);
        let count = subs.per_plugin.get(&slot).copied();
        if count.unwrap_or(0) >= MAX_SUBSCRIPTIONS {
            return Err(PI_ERR);
        }
        subs.per_plugin.insert(slot, count.unwrap_or(0) + 1);
        let list = subs.channels.entry(channel.into()).or_default();
        Arc::make_mut(list).push(Subscriber {
            plugin,
            handler,
            user_data,
        });
        count.is_none()
    };
    // Outside the lock: a plugin retired meanwhile runs the hook at once, which locks again.
    if first {
        plugin.on_retire(Box::new(move || unsubscribe_all(slot)));
    }
    if let Some(remote) = REMOTE.get() {
        remote.subscribed(channel);
    }
    Ok(())
}

/// Drops every subscription of the plugin in `slot` (at its retirement).
fn unsubscribe_all(slot: u32) {
    let mut subs = lock(&bus().subscriptions);
    if subs.per_plugin.remove(&slot).is_none() {
        return;
    }
    subs.channels.retain(|_, list| {
        if list.iter().any(|s| s.plugin.slot() == slot) {
            Arc::make_mut(list).retain(|s| s.plugin.slot() != slot);
        }
        !list.is_empty()
    });
}

/// How many subscriptions `channel` has now (for tests and diagnostics).
pub fn subscriber_count(channel: &str) -> usize {
    lock(&bus().subscriptions)
        .channels
        .get(channel)
        .map_or(0, |list| list.len())
}

/// Queues `data` for the subscribers `channel` has now; nothing to do (and `Ok`) when it has
/// none. `Err(PI_ERR)` when [`MAX_PENDING`] emissions already wait.
pub fn emit(emitter: &PluginState, channel: &str, data: serde_json::Value) -> Result<(), PiStatus> {
    if let Some(remote) = REMOTE.get() {
        return remote.emit(channel, &data);
    }
    if let Some(held) = lock(&HELD).as_mut() {
        if held.len() >= MAX_PENDING {
            return Err(PI_ERR);
        }
        held.push((emitter.slot(), channel.to_owned(), data));
        return Ok(());
    }
    if emitter.phase() == Phase::Init {
        let mut loading = lock(&LOADING);
        if loading.0 > 0 {
            if loading.1.len() >= MAX_PENDING {
                return Err(PI_ERR);
            }
            loading.1.push((emitter.slot(), channel.to_owned(), data));
            return Ok(());
        }
    }
    let Some(subscribers) = lock(&bus().subscriptions).channels.get(channel).cloned() else {
        return Ok(());
    };
    queue(Some(emitter), channel, data, subscribers)
}

/// Queues an emission for `subscribers`; `emitter` names who made it in the log line of a
/// full queue (`None`: the bus itself, replaying a load's emissions).
fn queue(
    emitter: Option<&PluginState>,
    channel: &str,
    data: serde_json::Value,
    subscribers: Arc<Vec<Subscriber>>,
) -> Result<(), PiStatus> {
    let emission = Emission {
        channel: CText::new(channel),
        data: HostValue::from_json(data),
        subscribers,
    };
    let start_task = {
        let mut queue = lock(&bus().queue);
        if queue.pending.len() >= MAX_PENDING {
            if !queue.refusing {
                queue.refusing = true;
                let who = emitter.map_or_else(
                    || "the plugins' loads".to_owned(),
                    |e| format!("plugin {} ({})", escape(&e.name), escape(&e.path)),
                );
                eprintln!(
                    "pi-hooks: {who}: {MAX_PENDING} event bus emissions are waiting for delivery; events_emit answers PI_ERR until they are delivered"
                );
            }
            return Err(PI_ERR);
        }
        queue.refusing = false;
        queue.pending.push_back(emission);
        !std::mem::replace(&mut queue.delivering, true)
    };
    if start_task {
        crate::services::runtime::handle().spawn_blocking(deliver_pending);
    }
    Ok(())
}

/// Waits until every queued emission is delivered, at most `limit`; whether the queue is
/// empty. Not to be called from a bus handler (its own delivery would never finish).
pub fn drain(limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut queue = lock(&bus().queue);
    while queue.delivering || !queue.pending.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        queue = bus()
            .idle
            .wait_timeout(queue, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// The delivery task: emissions first in, first out, until the queue is empty.
fn deliver_pending() {
    loop {
        let next = {
            let mut queue = lock(&bus().queue);
            match queue.pending.pop_front() {
                Some(emission) => emission,
                None => {
                    queue.delivering = false;
                    bus().idle.notify_all();
                    return;
                }
            }
        };
        // A panic here would leave `delivering` set and stop the bus for good.
        let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deliver(&next)));
        if delivered.is_err() {
            eprintln!(
                "pi-hooks: delivering an event bus emission on {} failed inside the host; the next ones are still delivered",
                escape(next.channel.as_str())
            );
        }
    }
}

/// Calls each subscriber of one emission, in subscription order; reports the errors.
fn deliver(emission: &Emission) {
    for subscriber in emission.subscribers.iter() {
        let plugin = subscriber.plugin;
        if plugin.phase() != Phase::Active {
            continue;
        }
        let outcome = crate::plugin::call::call_bus_handler(
            plugin,
            subscriber.handler,
            subscriber.user_data,
            &emission.channel,
            &emission.data,
        );
        if outcome.status == PI_OK
            || (outcome.status == PI_ERR_CANCELLED && plugin.phase() == Phase::Retired)
        {
            continue;
        }
        let message = format!(
            "Event handler error ({}): {}",
            emission.channel.as_str(),
            outcome.error_text()
        );
        match plugin.services() {
            // A mode is running: its error listeners report it (stderr, and an
            // `extension_error` line in JSON mode).
            Some(services) => services.report_error(&crate::plugin::call::ExtensionError {
                extension_path: plugin.path.clone(),
                event: "bus".to_owned(),
                error: message,
            }),
            // Escaped: the path, the channel and the message are the plugin's.
            None => eprintln!(
                "Extension error ({}): {}",
                escape(&plugin.path),
                escape(&message)
            ),
        }
    }
}
