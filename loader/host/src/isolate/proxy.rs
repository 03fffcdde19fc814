//! The proxy plugin: the in-process stand-in for one isolated plugin. It is an ordinary
//! [`LoadedPlugin`] whose descriptor's `init` is `proxy_init`, a function of the host
//! binary, built with the Rust SDK like any Rust plugin; the runner dispatches to it at the
//! isolated plugin's place in the load order.
//!
//! It registers what the child's `hello` lists and forwards every call as a serve request:
//! events (the child's combined result is turned back into one handler result), commands
//! (with completions where the child's command has them), tools (with their partial
//! results), renderers, keyboard shortcuts (a `shortcut` request). Flags are registered so
//! the command line takes them; their values go to the child (`flags`) before its first
//! call. Every call carries its context (session file, mode, system prompt), so the plugin's
//! `ctx` reads what it would in process.
//!
//! The event bus (`crate::services::event_bus`): the proxy holds one subscription on the
//! host's bus for each subscription the child's plugin made (`hello`'s `busChannels`, then
//! `bus_on` notifications), and hands each emission to the child as a `bus` request; the
//! child's emissions (`bus_emit` notifications) go onto the host's bus in the proxy's name.
//! So isolated and in-process plugins hear each other as plugins of one process do.
//!
//! What still differs from the same plugin in process (tests/tests/isolation_parity.rs runs
//! one plugin in process, isolated and confined and compares what it saw):
//! - its bus handlers and shortcuts are bounded like its events (a child that does not
//!   answer is killed and restarted), where in process a bus handler is not timed;
//! - after a crash the restarted child's subscriptions keep the first child's places on the
//!   host's bus, and what it emits during its init is not emitted again;
//! - the hook trace (`--trace`) does not see what happens inside the child: its `exec`
//!   calls, timer starts and cancels and timer callbacks (its events, commands, tools,
//!   dialogs, session actions and bus emissions are traced);
//! - `before_agent_start` hands on at most eight messages (`EXTRA_MESSAGE_SLOTS`).
//!
//! Crashes: when the child dies (a signal, an exit) or does not answer an event or a tool
//! call within its limit (a hang; 90% of `hookTimeout`, or of `toolCallTimeout` for
//! `tool_call`, at most one
//! second less, so the proxy notices before the runner gives up on it), the proxy reports it
//! once as an `Extension error` naming the plugin, the event and the signal, kills what is
//! left, and restarts the child after a backoff (100 ms, doubling up to 5 s; back to 100 ms
//! once a child ran 30 s). The new child gets `session_start {reason:"reload"}`, so its
//! plugin rebuilds its state from the session's entries. Meanwhile every `tool_call` is
//! blocked with a reason naming the crash, other events are skipped, commands and tools fail
//! with that reason. Restarts and unprompted lines (the plugin's timers asking for
//! something) run in 0 ms timers of the proxy, whose callbacks get a context like any call.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::os::raw::c_void;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use pi_hooks_abi::ffi::{
    PI_ERR, PI_ERR_PANIC, PI_OK, PiContext, PiHostApi, PiPlugin, PiPluginDescriptor, PiShortcutDef,
    PiStatus, PiStr, PiValue,
};
use pi_hooks_abi::layout::{AbiSizes, LAYOUT_FINGERPRINT};
use pi_hooks_abi::sdk::{Completion, Context, Error, Registrar, Reply, ToolSpec};
use serde_json::{Value, json};

use super::child::{CallError, Launch, ServeChild};
use super::child_requests::{Answerer, context_field};
use crate::guards::display::escape;
use crate::host_api::context::CONTEXT_API;
use crate::host_api::registry::REGISTRY_API;
use crate::library::OpenedLibrary;
use crate::plugin::LoadedPlugin;
use crate::plugin::registrations::UserData;
use crate::plugin::state::PluginState;
use crate::plugin_files::discover::Origin;
use crate::plugin_files::trust::TrustState;
use crate::runner::ExtensionError;

/// The first wait before a crashed child is restarted.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait before a restart.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A child that ran this long before it failed restarts after [`FIRST_BACKOFF`] again.
pub const STABLE_AFTER: Duration = Duration::from_secs(30);
/// `before_agent_start` handlers the proxy registers beyond the first: one handler result
/// holds one message, and the messages an isolated plugin's handlers add together are handed
/// on by these, in order (a plugin adding more than eight in one event loses the rest).
const EXTRA_MESSAGE_SLOTS: usize = 7;

/// What the child's `hello` says about its plugin.
#[derive(Debug, Clone, Default)]
struct PluginInfo {
    name: String,
    version: String,
    events: Vec<String>,
    commands: Vec<(String, String)>,
    /// Per command, whether it has completions (`None`: the hello did not say).
    command_completions: Vec<Option<bool>>,
    tools: Vec<ToolSpec>,
    flags: Vec<(String, String, String, Value)>,
    renderers: Vec<String>,
    /// Keyboard shortcuts: key and description.
    shortcuts: Vec<(String, String)>,
    /// The bus channels the plugin subscribed to during its init, one per subscription.
    bus_channels: Vec<String>,
    /// What the plugin emitted on the bus during its init: channel and data.
    bus_emitted: Vec<(String, Value)>,
}

impl PluginInfo {
    /// The one plugin of a `hello` line, or the load error the child reported.
    fn from_hello(hello: &Value) -> Result<Self, String> {
        if let Some(error) = hello
            .get("errors")
            .and_then(Value::as_array)
            .and_then(|errors| errors.first())
        {
            return Err(error
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("its isolation process could not load it")
                .to_owned());
        }
        let plugin = match hello.get("plugins").and_then(Value::as_array) {
            Some(plugins) if plugins.len() == 1 => &plugins[0],
            _ => return Err("its isolation process did not load exactly this plugin".into()),
        };
        let text =
            |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        let list = |key: &str| {
            plugin
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Ok(PluginInfo {
            name: text(plugin, "name"),
            version: text(plugin, "version"),
            events: list("events")
                .iter()
                .filter_map(|e| e.as_str().map(str::to_owned))
                .collect(),
            commands: list("commands")
                .iter()
                .map(|c| (text(c, "name"), text(c, "description")))
                .collect(),
            command_completions: list("commands")
                .iter()
                .map(|c| c.get("completions").and_then(Value::as_bool))
                .collect(),
            tools: list("tools")
                .iter()
                .map(|t| ToolSpec {
                    name: text(t, "name"),
                    label: text(t, "label"),
                    description: text(t, "description"),
                    parameters: t.get("parameters").cloned().unwrap_or(Value::Null),
                })
                .collect(),
            flags: list("flags")
                .iter()
                .map(|f| {
                    (
                        text(f, "name"),
                        text(f, "type"),
                        text(f, "description"),
                        f.get("default").cloned().unwrap_or(Value::Null),
                    )
                })
                .collect(),
            renderers: list("renderers")
                .iter()
                .filter_map(|r| r.as_str().map(str::to_owned))
                .collect(),
            shortcuts: list("shortcuts")
                .iter()
                .map(|s| (text(s, "key"), text(s, "description")))
                .filter(|(key, _)| !key.is_empty())
                .collect(),
            bus_channels: list("busChannels")
                .iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect(),
            bus_emitted: list("busEmitted")
                .iter()
                .filter_map(|e| {
                    let channel = e.get("channel")?.as_str()?.to_owned();
                    Some((channel, e.get("data").cloned().unwrap_or(Value::Null)))
                })
                .collect(),
        })
    }
}

/// Why the child is not running, and when it is restarted.
struct Outage {
    /// `plugin "crashy" crashed (SIGSEGV) while handling tool_call`.
    reason: String,
    restart_at: Instant,
}

/// The child and its restart state.
struct Life {
    child: Option<ServeChild>,
    /// The flag values this child got (sent before a forwarded call whenever they differ
    /// from what it has: the command line's plugin flags are matched only after the plugins
    /// loaded, and a call can come before that, such as a bus event another plugin emits
    /// from its `init`). `None`: none sent yet.
    flags_sent: Option<Value>,
    /// The system prompt this child has (the last one a call's context carried).
    prompt_sent: Option<Arc<crate::host_api::value::CText>>,
    outage: Option<Outage>,
    backoff: Duration,
}

/// How a forwarded call ended.
enum Forwarded {
    /// The child's result.
    Answer(Value),
    /// The child's `error` line.
    Refused(String),
    /// The child is down (it crashed now or earlier): the outage's reason.
    Down(String),
}

/// One isolated plugin's proxy.
pub struct Proxy {
    name: String,
    path: String,
    launch: Launch,
    info: PluginInfo,
    /// Which commands have completions, by name.
    completions: Vec<bool>,
    state: OnceLock<&'static PluginState>,
    life: Mutex<Life>,
    /// Messages of the current `before_agent_start` for the extra handlers.
    extra_messages: Mutex<VecDeque<Value>>,
    /// How many subscriptions the proxy holds on the host's bus, per channel (the child's
    /// subscriptions it stands for).
    bus_subscriptions: Mutex<rustc_hash::FxHashMap<String, usize>>,
}

/// What a shortcut or bus callback of a proxy stands for; their user data is the number of
/// one of these in [`ROUTES`] (never dereferenced).
#[derive(Clone)]
enum Route {
    /// The child's shortcut with this key.
    Shortcut(String),
    /// The `nth` subscription of the child to `channel`.
    Bus { channel: String, nth: usize },
}

/// The last route number given, and the routes by number: (plugin slot, route).
type Routes = (usize, rustc_hash::FxHashMap<usize, (u32, Route)>);

/// The routes of the live proxies.
static ROUTES: Mutex<Option<Routes>> = Mutex::new(None);

fn add_route(slot: u32, route: Route) -> UserData {
    let mut routes = ROUTES.lock().unwrap_or_else(|e| e.into_inner());
    let (next, all) = routes.get_or_insert_with(Default::default);
    *next += 1;
    all.insert(*next, (slot, route));
    UserData(std::ptr::without_provenance_mut(*next))
}

/// The proxy and route behind a callback's user data.
fn route_of(user_data: *mut c_void) -> Option<(Arc<Proxy>, Route)> {
    let (slot, route) = ROUTES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .1
        .get(&user_data.addr())?
        .clone();
    let proxy = proxies().as_ref()?.get(&slot)?.upgrade()?;
    Some((proxy, route))
}

thread_local! {
    /// The proxy whose [`LoadedPlugin::init`] runs on this thread (`proxy_init` takes it).
    static STARTING: RefCell<Option<Arc<Proxy>>> = const { RefCell::new(None) };
}

/// The live proxies by plugin slot, for timer callbacks (their user data is the slot).
static PROXIES: Mutex<Option<rustc_hash::FxHashMap<u32, Weak<Proxy>>>> = Mutex::new(None);

fn proxies() -> MutexGuard<'static, Option<rustc_hash::FxHashMap<u32, Weak<Proxy>>>> {
    PROXIES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The descriptor of every proxy: the host's ABI, no name (the name comes from the child),
/// `proxy_init` as init.
pub(crate) fn descriptor() -> PiPluginDescriptor {
    let sizes = AbiSizes::CURRENT;
    let empty = PiStr {
        ptr: std::ptr::null(),
        len: 0,
    };
    PiPluginDescriptor {
        struct_size: sizes.descriptor,
        abi_major: pi_hooks_abi::ffi::PI_HOOKS_ABI_MAJOR,
        abi_minor: pi_hooks_abi::ffi::PI_HOOKS_ABI_MINOR,
        flags: 0,
        layout_fingerprint: LAYOUT_FINGERPRINT,
        name: empty,
        version: empty,
        description: empty,
        host_api_size: sizes.host_api,
        value_api_size: sizes.value_api,
        result_api_size: sizes.result_api,
        registry_api_size: sizes.registry_api,
        actions_api_size: sizes.actions_api,
        context_api_size: sizes.context_api,
        ui_api_size: sizes.ui_api,
        reserved: 0,
        init: Some(proxy_init),
        shutdown: None,
    }
}

/// Starts the child of the plugin `launch` names and returns its proxy, initialised.
pub fn start(
    launch: Launch,
    hello_limit: Duration,
    origin: Origin,
    trust: TrustState,
    sha256: String,
) -> Result<LoadedPlugin, String> {
    let path = launch.plugin.display().to_string();
    let label = format!("\"{}\"", escape(&path));
    let mut child = ServeChild::spawn(&launch, &label, hello_limit)?;
    let info = PluginInfo::from_hello(child.hello())?;
    // Which commands have completions: the hello says so; a hello that does not is asked
    // about each command once.
    let completions = info
        .commands
        .iter()
        .zip(&info.command_completions)
        .map(|((name, _), known)| {
            if let Some(known) = known {
                return *known;
            }
            let fields = format!("\"name\":{},\"prefix\":\"\"", Value::String(name.clone()));
            let mut refuse = |_: super::child::Incoming<'_>| {
                Some(Err(
                    "not available while the plugin is being loaded".to_owned()
                ))
            };
            matches!(
                child.call("completions", &fields, Some(hello_limit), &mut refuse),
                Ok(answer) if answer.get("items").is_some_and(Value::is_array)
            )
        })
        .collect();
    let proxy = Arc::new(Proxy {
        name: info.name.clone(),
        path: path.clone(),
        launch,
        completions,
        state: OnceLock::new(),
        life: Mutex::new(Life {
            child: Some(child),
            flags_sent: None,
            prompt_sent: None,
            outage: None,
            backoff: FIRST_BACKOFF,
        }),
        extra_messages: Mutex::new(VecDeque::new()),
        bus_subscriptions: Mutex::new(Default::default()),
        info,
    });
    let library = OpenedLibrary::in_process(
        descriptor(),
        proxy.info.name.clone(),
        proxy.info.version.clone(),
        String::new(),
        PathBuf::from(&path),
    );
    STARTING.with(|s| *s.borrow_mut() = Some(proxy.clone()));
    let plugin = LoadedPlugin::init(library, path, origin, trust, Some(sha256));
    STARTING.with(|s| s.borrow_mut().take());
    let plugin = plugin?;
    if let Some(child) = proxy.lock_life().child.as_ref() {
        child.set_waker(proxy.waker());
    }
    Ok(plugin)
}

/// The proxy's init: registers what the child's plugin registered.
///
/// # Safety
/// Called by the host as a plugin's init (see `PiInitFn`), from [`LoadedPlugin::init`] on
/// the thread that set [`STARTING`].
unsafe extern "C" fn proxy_init(host: *const PiHostApi, plugin: *mut PiPlugin) -> PiStatus {
    let Some(proxy) = STARTING.with(|s| s.borrow().clone()) else {
        return PI_ERR;
    };
    let Some(state) = PluginState::from_handle(plugin) else {
        return PI_ERR;
    };
    let _ = proxy.state.set(state);
    proxies()
        .get_or_insert_with(Default::default)
        .insert(state.slot(), Arc::downgrade(&proxy));
    let register = |pi: &mut Registrar| proxy.register(pi);
    // SAFETY: the host calls init with its own host table and this instance's handle, as
    // `run_init` requires (it checks both for NULL).
    let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        pi_hooks_abi::sdk::run_init(host, plugin, register)
    }));
    let status = status.unwrap_or(PI_ERR_PANIC);
    if status != PI_OK {
        return status;
    }
    // What the SDK's registrar has no function for: shortcuts, and the bus subscriptions
    // the child's plugin made in its init (at this place in the load order, as in process).
    let registered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for (key, description) in &proxy.info.shortcuts {
            let user_data = add_route(state.slot(), Route::Shortcut(key.clone()));
            let def = PiShortcutDef {
                struct_size: size_of::<PiShortcutDef>() as u32,
                reserved: 0,
                key: pi_str(key),
                description: pi_str(description),
                handler: Some(on_shortcut),
                user_data: user_data.0,
            };
            // SAFETY: this is the plugin's init (registration is open), `plugin` is its
            // handle and `def` with its strings outlives the call (the host copies them).
            let status = unsafe { (REGISTRY_API.register_shortcut)(plugin, &def) };
            if status != PI_OK {
                return status;
            }
        }
        for channel in &proxy.info.bus_channels {
            proxy.subscribe_bus(state, channel);
        }
        for (channel, data) in &proxy.info.bus_emitted {
            // Past the bus's bound it is dropped, as `events_emit` refuses it in process.
            let _ = crate::services::event_bus::emit(state, channel, data.clone());
        }
        PI_OK
    }));
    registered.unwrap_or(PI_ERR_PANIC)
}

/// A shortcut of an isolated plugin was pressed: the child runs its handler.
///
/// # Safety
/// Called by the host as a shortcut handler (see `PiShortcutHandler`) with a live context.
unsafe extern "C" fn on_shortcut(user_data: *mut c_void, ctx: *mut PiContext) -> PiStatus {
    let Some((proxy, Route::Shortcut(key))) = route_of(user_data) else {
        return PI_ERR;
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| proxy.shortcut(&key, ctx)))
        .unwrap_or(PI_ERR_PANIC)
}

/// An emission of the host's bus for a subscription of an isolated plugin: the child's
/// subscriber gets it.
///
/// # Safety
/// Called by the host as a bus handler (see `PiBusHandler`): `data` is a host value alive
/// for the call.
unsafe extern "C" fn on_bus(
    user_data: *mut c_void,
    _channel: PiStr,
    data: *const PiValue,
) -> PiStatus {
    let Some((proxy, Route::Bus { channel, nth })) = route_of(user_data) else {
        return PI_OK;
    };
    // SAFETY: the host's bus hands its own value, alive until this returns.
    let data = unsafe { crate::host_api::value::host_value(data) }.map_or(
        Value::Null,
        crate::host_api::value::HostValue::to_json_value,
    );
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        proxy.bus(&channel, nth, data)
    }))
    .unwrap_or(PI_ERR_PANIC)
}

/// Tells every live isolated child whose plugin handles `event` that one is likely soon (the
/// model streams a tool call: `tool_call` follows once the message ends), so it is awake when
/// the event comes: with the ring transport its reader, if it sleeps, wakes and spins a few
/// milliseconds for the request (`transport::ring::Region::get_ready`), and the event then
/// costs what it costs between calls in a burst rather than a sleeping process's wake-up.
/// Best effort and cheap: a child in a call, restarting or on the pipe transport is left as
/// it is; nothing waits. A program that knows an event is coming may call it any number of
/// times (each call starts the child's spin anew; with no event after it the child sleeps
/// again).
pub fn get_ready(event: &str) {
    let proxies = proxies();
    let Some(proxies) = proxies.as_ref() else {
        return;
    };
    for proxy in proxies.values().filter_map(Weak::upgrade) {
        if !proxy.info.events.iter().any(|handled| handled == event) {
            continue;
        }
        // A call or a drain holds the lock: the child is awake then, or about to be.
        if let Ok(life) = proxy.life.try_lock()
            && let Some(child) = life.child.as_ref()
        {
            child.get_ready();
        }
    }
}

/// What a child sends that belongs to its proxy rather than to the session's services (the
/// event bus, see the module doc). Whether `method` was one of those.
pub(crate) fn child_notification(state: &PluginState, method: &str, params: &Value) -> bool {
    if !matches!(method, "bus_emit" | "bus_on") {
        return false;
    }
    let Some(channel) = params.get("channel").and_then(Value::as_str) else {
        return true;
    };
    let proxy = proxies()
        .as_ref()
        .and_then(|all| all.get(&state.slot()))
        .and_then(Weak::upgrade);
    let Some(proxy) = proxy else {
        return true;
    };
    let Some(state) = proxy.state() else {
        return true;
    };
    if method == "bus_on" {
        proxy.subscribe_bus(state, channel);
    } else {
        let data = params.get("data").cloned().unwrap_or(Value::Null);
        let args = crate::observe::trace::on().then(|| json!({"channel": channel, "data": data}));
        // Past the bus's bound the emission is dropped, as `events_emit` would refuse it
        // (the host logged it).
        let emitted = crate::services::event_bus::emit(state, channel, data);
        if let Some(args) = args {
            let outcome = match emitted {
                Ok(()) => Ok(None),
                Err(status) => Err(pi_hooks_abi::sdk::status_name(status)),
            };
            crate::observe::trace::action(state, "events.emit", &args, outcome, None);
        }
    }
    true
}

/// A 0 ms timer's callback: restarts a child that is due, answers what a child sent
/// unprompted. Its user data is the proxy's plugin slot (a number, never dereferenced).
///
/// # Safety
/// Called by the host as a timer callback (see `PiTimerFn`) with a live call context.
unsafe extern "C" fn on_timer(
    user_data: *mut c_void,
    _timer: u64,
    ctx: *mut PiContext,
) -> PiStatus {
    let slot = u32::try_from(user_data.addr()).unwrap_or(u32::MAX);
    let proxy = proxies()
        .as_ref()
        .and_then(|all| all.get(&slot))
        .and_then(Weak::upgrade);
    if let Some(proxy) = proxy {
        let woke = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| proxy.wake(ctx)));
        if woke.is_err() {
            return PI_ERR_PANIC;
        }
    }
    PI_OK
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(state) = self.state.get() {
            if let Some(all) = proxies().as_mut() {
                all.remove(&state.slot());
            }
            let slot = state.slot();
            if let Some((_, routes)) = ROUTES.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
                routes.retain(|_, (of, _)| *of != slot);
            }
        }
    }
}

/// The hang limit for calls of `event`: 90% of the runner's limit, at most a second less.
fn hang_limit(state: Option<&PluginState>, event: &str) -> Duration {
    let config = state
        .and_then(PluginState::services)
        .and_then(|s| s.runner_config());
    let (hook, tool_call) = config.map_or(
        (crate::plugin_files::settings::DEFAULT_HOOK_TIMEOUT, None),
        |c| (c.hook_timeout, c.tool_call_timeout),
    );
    let limit = if event == "tool_call" {
        tool_call.unwrap_or(hook)
    } else {
        hook
    };
    limit - (limit / 10).min(Duration::from_secs(1))
}

/// `"name":…,"payload":…` of an event request; the payload as the runner built it (its
/// `type` field is ignored by `serve`).
fn event_fields(event: &str, payload: &pi_hooks_abi::sdk::Value<'_>) -> String {
    format!(
        "\"name\":{},\"payload\":{}",
        Value::String(event.to_owned()),
        payload.to_json().unwrap_or("{}")
    )
}

impl Proxy {
    fn lock_life(&self) -> MutexGuard<'_, Life> {
        self.life.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn state(&self) -> Option<&'static PluginState> {
        self.state.get().copied()
    }

    /// What a child calls when lines arrive while no call reads them: a 0 ms timer.
    fn waker(&self) -> Arc<dyn Fn() + Send + Sync> {
        let state = self.state();
        Arc::new(move || {
            if let Some(state) = state {
                arm(state, Duration::ZERO);
            }
        })
    }

    /// Registers the child plugin's events, commands, tools, flags and renderers.
    fn register(self: &Arc<Self>, pi: &mut Registrar) -> pi_hooks_abi::sdk::Result<()> {
        for event in &self.info.events {
            let me = self.clone();
            match event.as_str() {
                "tool_call" => pi.on("tool_call", move |payload, ctx| {
                    Ok(me.tool_call(&payload, ctx))
                })?,
                "before_agent_start" => {
                    pi.on("before_agent_start", move |payload, ctx| {
                        me.before_agent_start(&payload, ctx)
                    })?;
                    for _ in 0..EXTRA_MESSAGE_SLOTS {
                        let me = self.clone();
                        pi.on(
                            "before_agent_start",
                            move |_, _| Ok(me.next_extra_message()),
                        )?;
                    }
                }
                _ => {
                    let name = event.clone();
                    pi.on(event, move |payload, ctx| me.event(&name, &payload, ctx))?
                }
            }
        }
        for ((name, description), completes) in self.info.commands.iter().zip(&self.completions) {
            let (me, command) = (self.clone(), name.clone());
            let run = move |args: &str, ctx: &Context<'_>| me.command(&command, args, ctx);
            if *completes {
                let (me, command) = (self.clone(), name.clone());
                pi.command_with_completions(name, description, run, move |prefix: &str| {
                    me.completions(&command, prefix)
                })?;
            } else {
                pi.command(name, description, run)?;
            }
        }
        for spec in &self.info.tools {
            let (me, tool) = (self.clone(), spec.name.clone());
            pi.tool(spec.clone(), move |id, params, ctx| {
                me.tool(&tool, id, &params, ctx)
            })?;
        }
        for (name, kind, description, default) in &self.info.flags {
            if kind == "boolean" {
                pi.flag_bool(name, description, default.as_bool().unwrap_or(false))?;
            } else {
                pi.flag_string(name, description, default.as_str())?;
            }
        }
        for custom_type in &self.info.renderers {
            let me = self.clone();
            pi.message_renderer(custom_type, move |message, expanded| {
                me.render(&message, expanded)
            })?;
        }
        Ok(())
    }

    /// Sends one request to the child and waits for its answer, answering the child's own
    /// requests with `ctx`; a dead or hung child is reported and scheduled for a restart.
    /// `event` names what is handled (`tool_call`, `command`, ...) in reports, `what` says it
    /// in a sentence (`tool_call`, `command /deploy`).
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &self,
        ctx: Option<*mut PiContext>,
        event: &str,
        what: &str,
        kind: &str,
        fields: &str,
        limit: Option<Duration>,
        on_tool_update: Option<&dyn Fn(&Value)>,
    ) -> Forwarded {
        let Some(state) = self.state() else {
            return Forwarded::Down(format!("plugin \"{}\" is not loaded", self.name));
        };
        let mut guard = self.lock_life();
        let life = &mut *guard;
        if life.child.is_none() {
            self.restart_if_due(life, ctx);
        }
        let Some(child) = life.child.as_mut() else {
            let reason = life.outage.as_ref().map_or_else(
                || format!("plugin \"{}\" is not running", self.name),
                |o| o.reason.clone(),
            );
            return Forwarded::Down(reason);
        };
        let answerer = Answerer::new(state, ctx, on_tool_update);
        if !self.info.flags.is_empty()
            && let Some(values) = self.flag_values(state)
            && life.flags_sent.as_ref() != Some(&values)
        {
            let fields = format!("\"values\":{values}");
            // A child too old for `flags` refuses it; its plugin reads the defaults.
            let _ = child.call("flags", &fields, limit, &mut |line| answerer.take(line));
            life.flags_sent = Some(values);
        }
        // What the call in flight sees (its session file, whether it has a UI).
        let fields = match ctx.and_then(|ctx| context_field(ctx, &mut life.prompt_sent)) {
            Some(context) if fields.is_empty() => format!("\"context\":{context}"),
            Some(context) => format!("{fields},\"context\":{context}"),
            None => fields.to_owned(),
        };
        if event == "before_agent_start" {
            // The child chains the prompt of its own handlers into what it keeps: the next
            // call says again which one it sees.
            life.prompt_sent = None;
        }
        match child.call(kind, &fields, limit, &mut |line| answerer.take(line)) {
            Ok(answer) => Forwarded::Answer(answer),
            Err(CallError::Refused(error)) => Forwarded::Refused(error),
            Err(CallError::Died(ended)) => {
                // The child died right after its sandbox refused it something: the rule
                // that stopped it is likely that one, so the report names it.
                let what = match answerer.last_refusal.take() {
                    Some(refusal) => format!("{what}, just after its sandbox refused {refusal}"),
                    None => what.to_owned(),
                };
                Forwarded::Down(self.fail(life, event, &what, &CallError::Died(ended)))
            }
            Err(failure) => Forwarded::Down(self.fail(life, event, what, &failure)),
        }
    }

    /// The values the command line gave the plugin's flags (as the proxy, which registered
    /// the same flags, reads them), as a JSON object; `None` when it has no flags.
    fn flag_values(&self, state: &PluginState) -> Option<Value> {
        let values: serde_json::Map<String, Value> = self
            .info
            .flags
            .iter()
            .filter_map(|(name, ..)| Some((name.clone(), state.flag_value(name)??)))
            .collect();
        (!values.is_empty()).then_some(Value::Object(values))
    }

    /// The child failed `what`: reports it once, kills what is left, schedules the restart.
    /// Returns the outage's reason.
    fn fail(&self, life: &mut Life, event: &str, what: &str, failure: &CallError) -> String {
        let ran = life
            .child
            .as_ref()
            .map_or(Duration::ZERO, |c| c.started().elapsed());
        let mut child = life.child.take();
        let cause = match failure {
            CallError::Died(ended) => format!("{} while handling {what}", ended.describe()),
            CallError::Hung(limit) => {
                if let Some(child) = child.as_mut() {
                    child.kill();
                }
                format!(
                    "did not answer {what} within {} ms (hung) and was killed",
                    limit.as_millis()
                )
            }
            CallError::Refused(error) => format!("failed {what}: {error}"),
        };
        drop(child);
        if ran >= STABLE_AFTER {
            life.backoff = FIRST_BACKOFF;
        }
        let delay = life.backoff;
        life.backoff = (delay * 2).min(MAX_BACKOFF);
        let reason = format!("plugin \"{}\" {cause}", self.name);
        self.report(
            event,
            format!("{reason}; restarting it in {} ms", delay.as_millis()),
        );
        life.outage = Some(Outage {
            reason: reason.clone(),
            restart_at: Instant::now() + delay,
        });
        if let Some(state) = self.state() {
            arm(state, delay);
        }
        reason
    }

    /// Reports an error in the isolated plugin's name (the session's `Extension error`).
    fn report(&self, event: &str, error: String) {
        let error = ExtensionError {
            extension_path: self.path.clone(),
            event: event.to_owned(),
            error,
        };
        match self.state().and_then(PluginState::services) {
            Some(services) => services.report_error(&error),
            None => eprintln!(
                "Extension error ({}): {}",
                escape(&error.extension_path),
                escape(&error.error)
            ),
        }
    }

    /// Restarts the child if it is down and its backoff has passed.
    fn restart_if_due(&self, life: &mut Life, ctx: Option<*mut PiContext>) {
        let due = life
            .outage
            .as_ref()
            .is_some_and(|o| Instant::now() >= o.restart_at);
        if life.child.is_none() && due {
            self.restart(life, ctx);
        }
    }

    /// Starts a new child; its plugin gets `session_start {reason:"reload"}` (answered with
    /// `ctx`) to rebuild its state from the session. A failed start is reported and tried
    /// again after the next backoff.
    fn restart(&self, life: &mut Life, ctx: Option<*mut PiContext>) {
        let state = self.state();
        let limit = hang_limit(state, "session_start");
        let label = format!("\"{}\"", escape(&self.path));
        let started = ServeChild::spawn(&self.launch, &label, limit).and_then(|child| {
            PluginInfo::from_hello(child.hello())?;
            Ok(child)
        });
        let mut child = match started {
            Ok(child) => child,
            Err(error) => {
                let delay = life.backoff;
                life.backoff = (delay * 2).min(MAX_BACKOFF);
                self.report(
                    "restart",
                    format!(
                        "plugin \"{}\" could not be restarted: {error}; trying again in {} ms",
                        self.name,
                        delay.as_millis()
                    ),
                );
                if let Some(outage) = life.outage.as_mut() {
                    outage.restart_at = Instant::now() + delay;
                }
                if let Some(state) = state {
                    arm(state, delay);
                }
                return;
            }
        };
        child.set_waker(self.waker());
        let _ = writeln_stderr(&format!(
            "pi-hooks: restarted isolated plugin \"{}\" ({})",
            escape(&self.name),
            escape(&self.path)
        ));
        let Some(state) = state else {
            return;
        };
        let answerer = Answerer::new(state, ctx, None);
        let fields = r#""name":"session_start","payload":{"reason":"reload"}"#;
        let outcome = child.call("event", fields, Some(limit), &mut |line| {
            answerer.take(line)
        });
        life.child = Some(child);
        life.flags_sent = None;
        life.prompt_sent = None;
        life.outage = None;
        match outcome {
            Ok(_) | Err(CallError::Refused(_)) => {}
            Err(failure) => {
                self.fail(life, "session_start", "session_start", &failure);
            }
        }
    }

    /// A 0 ms timer fired: a restart that is due, and lines the child sent unprompted.
    fn wake(&self, ctx: *mut PiContext) {
        let Some(state) = self.state() else {
            return;
        };
        let mut life = self.lock_life();
        self.restart_if_due(&mut life, Some(ctx));
        let Some(child) = life.child.as_mut() else {
            return;
        };
        if state.services().is_none() {
            // Not bound to a session yet (the lines came right after the child's hello, a
            // refusal of its load say): they wait for the session, or for the first call.
            drop(life);
            arm(state, UNBOUND_RETRY);
            return;
        }
        let answerer = Answerer::new(state, Some(ctx), None);
        if let Some(ended) = child.drain(&mut |line| answerer.take(line)) {
            self.fail(
                &mut life,
                "isolation",
                "nothing (no call was in flight)",
                &CallError::Died(ended),
            );
        }
    }

    /// Holds one more subscription to `channel` on the host's bus, for the child's next
    /// subscriber of it.
    fn subscribe_bus(&self, state: &'static PluginState, channel: &str) {
        let nth = {
            let mut counts = self
                .bus_subscriptions
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let count = counts.entry(channel.to_owned()).or_default();
            *count += 1;
            *count - 1
        };
        let route = Route::Bus {
            channel: channel.to_owned(),
            nth,
        };
        let user_data = add_route(state.slot(), route);
        if crate::services::event_bus::subscribe(state, channel, on_bus, user_data).is_err() {
            self.report(
                "bus",
                format!(
                    "plugin \"{}\" subscribed to more bus channels than a plugin may ({}); {} is not delivered to it",
                    escape(&self.name),
                    crate::services::event_bus::MAX_SUBSCRIPTIONS,
                    escape(channel)
                ),
            );
        }
    }

    /// Runs the child's shortcut `key` with the context of the key press.
    fn shortcut(&self, key: &str, ctx: *mut PiContext) -> PiStatus {
        let fields = format!("\"key\":{}", Value::String(key.to_owned()));
        let limit = hang_limit(self.state(), "shortcut");
        let what = format!("shortcut {key}");
        match self.forward(
            Some(ctx),
            "shortcut",
            &what,
            "shortcut",
            &fields,
            Some(limit),
            None,
        ) {
            // A failing handler was reported by the child, as the interactive mode reports it.
            Forwarded::Answer(_) => PI_OK,
            Forwarded::Refused(error) | Forwarded::Down(error) => {
                let message = error.replace('\0', " ");
                // SAFETY: `ctx` is the live context of this call; the message outlives it.
                unsafe {
                    (CONTEXT_API.set_error)(ctx, pi_str(&message));
                }
                PI_ERR
            }
        }
    }

    /// Hands one emission of the host's bus to the child's `nth` subscriber of `channel`.
    /// Its failure is reported by the child (a handler error) or by [`Proxy::fail`] (a crash
    /// or hang), so the host's bus reports nothing more.
    fn bus(&self, channel: &str, nth: usize, data: Value) -> PiStatus {
        let fields = json!({"channel": channel, "nth": nth, "data": data}).to_string();
        let fields = &fields[1..fields.len() - 1];
        let limit = hang_limit(self.state(), "bus");
        let what = format!("an event bus emission on {channel}");
        let _ = self.forward(None, "bus", &what, "bus", fields, Some(limit), None);
        PI_OK
    }

    fn tool_call(&self, payload: &pi_hooks_abi::sdk::Value<'_>, ctx: &Context<'_>) -> Reply {
        let limit = hang_limit(self.state(), "tool_call");
        let fields = event_fields("tool_call", payload);
        match self.forward(
            Some(ctx.as_ptr()),
            "tool_call",
            "tool_call",
            "event",
            &fields,
            Some(limit),
            None,
        ) {
            Forwarded::Answer(answer) => {
                if answer.get("block").and_then(Value::as_bool) == Some(true) {
                    let reason = answer
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("Tool execution was blocked");
                    Reply::Block(reason.to_owned())
                } else if let Some(input) = answer.get("input").filter(|i| !i.is_null()) {
                    // The isolated plugin rewrote the tool's input.
                    Reply::Json(serde_json::json!({"input": input}))
                } else {
                    Reply::None
                }
            }
            Forwarded::Refused(error) => Reply::Block(format!(
                "plugin \"{}\" could not decide on this tool call ({error}); blocked",
                self.name
            )),
            Forwarded::Down(reason) => Reply::Block(format!(
                "blocked because the isolated {reason} (it is being restarted)"
            )),
        }
    }

    fn event(
        &self,
        event: &str,
        payload: &pi_hooks_abi::sdk::Value<'_>,
        ctx: &Context<'_>,
    ) -> pi_hooks_abi::sdk::Result<Reply> {
        let limit = hang_limit(self.state(), event);
        let fields = event_fields(event, payload);
        let answer = match self.forward(
            Some(ctx.as_ptr()),
            event,
            event,
            "event",
            &fields,
            Some(limit),
            None,
        ) {
            Forwarded::Answer(answer) => answer,
            Forwarded::Refused(error) => return Err(Error::msg(error)),
            // Reported when it happened; the event goes on without this plugin.
            Forwarded::Down(_) => return Ok(Reply::None),
        };
        Ok(event_reply(event, answer))
    }

    fn before_agent_start(
        &self,
        payload: &pi_hooks_abi::sdk::Value<'_>,
        ctx: &Context<'_>,
    ) -> pi_hooks_abi::sdk::Result<Reply> {
        let mut extra = self
            .extra_messages
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        extra.clear();
        drop(extra);
        let answer = match self.event("before_agent_start", payload, ctx)? {
            Reply::Json(answer) => answer,
            other => return Ok(other),
        };
        let mut messages: VecDeque<Value> = answer
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
            .into();
        let mut reply = serde_json::Map::new();
        if let Some(first) = messages.pop_front() {
            reply.insert("message".into(), first);
        }
        if let Some(prompt) = answer.get("systemPrompt").filter(|p| p.is_string()) {
            reply.insert("systemPrompt".into(), prompt.clone());
        }
        *self
            .extra_messages
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = messages;
        Ok(if reply.is_empty() {
            Reply::None
        } else {
            Reply::Json(Value::Object(reply))
        })
    }

    fn next_extra_message(&self) -> Reply {
        self.extra_messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .map_or(Reply::None, |message| {
                Reply::Json(json!({"message": message}))
            })
    }

    fn command(&self, name: &str, args: &str, ctx: &Context<'_>) -> pi_hooks_abi::sdk::Result<()> {
        let fields = format!(
            "\"name\":{},\"args\":{}",
            Value::String(name.to_owned()),
            Value::String(args.to_owned())
        );
        let what = format!("command /{name}");
        match self.forward(
            Some(ctx.as_ptr()),
            "command",
            &what,
            "command",
            &fields,
            None,
            None,
        ) {
            Forwarded::Answer(_) => Ok(()),
            Forwarded::Refused(error) => Err(Error::msg(error)),
            Forwarded::Down(reason) => Err(Error::msg(format!(
                "the isolated {reason}; it is being restarted, try again"
            ))),
        }
    }

    fn completions(&self, name: &str, prefix: &str) -> Vec<Completion> {
        let fields = format!(
            "\"name\":{},\"prefix\":{}",
            Value::String(name.to_owned()),
            Value::String(prefix.to_owned())
        );
        let limit = hang_limit(self.state(), "completions");
        let what = format!("completions of /{name}");
        let Forwarded::Answer(answer) = self.forward(
            None,
            "completions",
            &what,
            "completions",
            &fields,
            Some(limit),
            None,
        ) else {
            return Vec::new();
        };
        let text =
            |item: &Value, key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
        answer
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|item| {
                Some(Completion {
                    value: text(item, "value")?,
                    label: text(item, "label").or_else(|| text(item, "value"))?,
                    description: text(item, "description"),
                })
            })
            .collect()
    }

    fn tool(
        &self,
        name: &str,
        id: &str,
        params: &pi_hooks_abi::sdk::Value<'_>,
        ctx: &Context<'_>,
    ) -> pi_hooks_abi::sdk::Result<Value> {
        let fields = format!(
            "\"name\":{},\"toolCallId\":{},\"params\":{}",
            Value::String(name.to_owned()),
            Value::String(id.to_owned()),
            params.to_json().unwrap_or("{}")
        );
        let on_update = |partial: &Value| {
            let _ = ctx.tool_update(partial);
        };
        let what = format!("tool {name}");
        // Bounded as its handlers are (`hookTimeout`): a tool that never returns would hold
        // the session, and the child, unlike a thread, can be killed.
        let limit = hang_limit(self.state(), "tool");
        match self.forward(
            Some(ctx.as_ptr()),
            "tool",
            &what,
            "tool",
            &fields,
            Some(limit),
            Some(&on_update),
        ) {
            Forwarded::Answer(result) => Ok(result),
            Forwarded::Refused(error) => Err(Error::msg(error)),
            Forwarded::Down(reason) => Err(Error::msg(format!(
                "the isolated {reason}; it is being restarted, try again"
            ))),
        }
    }

    fn render(
        &self,
        message: &pi_hooks_abi::sdk::Value<'_>,
        expanded: bool,
    ) -> pi_hooks_abi::sdk::Result<Option<Vec<String>>> {
        let fields = format!(
            "\"message\":{},\"expanded\":{expanded}",
            message.to_json().unwrap_or("null")
        );
        let limit = hang_limit(self.state(), "render");
        match self.forward(
            None,
            "render",
            "render",
            "render",
            &fields,
            Some(limit),
            None,
        ) {
            Forwarded::Answer(answer) => {
                Ok(answer.get("lines").and_then(Value::as_array).map(|lines| {
                    lines
                        .iter()
                        .filter_map(|l| l.as_str().map(str::to_owned))
                        .collect()
                }))
            }
            Forwarded::Refused(error) => Err(Error::msg(error)),
            // The default rendering, while the plugin is down.
            Forwarded::Down(_) => Ok(None),
        }
    }
}

/// How soon a proxy looks again at the lines its child sent while it was not yet bound to a
/// session.
const UNBOUND_RETRY: Duration = Duration::from_millis(20);

/// Starts a one-shot timer of the proxy behind `state` after `delay` (its callback is
/// [`on_timer`]). A retired proxy gets none.
fn arm(state: &'static PluginState, delay: Duration) {
    let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    let slot = UserData(std::ptr::without_provenance_mut(state.slot() as usize));
    let _ = crate::services::timers::start(state, ms, 0, on_timer, slot);
}

/// `s` as the ABI's borrowed string.
fn pi_str(s: &str) -> PiStr {
    PiStr {
        ptr: s.as_ptr().cast(),
        len: s.len(),
    }
}

fn writeln_stderr(line: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr().lock(), "{line}")
}

/// The child's combined result of `event` as one handler's result for the host's runner
/// (which combines it with the other plugins' by the same rules).
fn event_reply(event: &str, answer: Value) -> Reply {
    match event {
        "input" => match answer.get("action").and_then(Value::as_str) {
            Some("transform") | Some("handled") => Reply::Json(answer),
            _ => Reply::None,
        },
        "resources_discover" => {
            let paths = |key: &str| -> Vec<Value> {
                answer
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.get("path").cloned())
                    .collect()
            };
            Reply::Json(json!({
                "skillPaths": paths("skillPaths"),
                "promptPaths": paths("promptPaths"),
                "themePaths": paths("themePaths"),
            }))
        }
        "before_provider_request" => match answer.get("payload") {
            Some(body) => Reply::Json(body.clone()),
            None => Reply::None,
        },
        _ if answer.is_null() => Reply::None,
        _ => Reply::Json(answer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_hello_and_refuses_one_with_a_load_error() {
        let hello = json!({"type": "hello", "protocol": 1, "plugins": [{
            "name": "gate", "version": "1.0.0", "path": "/p/libgate.so",
            "events": ["tool_call", "input"],
            "commands": [{"name": "deploy", "description": "Deploy"}],
            "tools": [{"name": "greet", "label": "Greet", "description": "Greets", "parameters": {"type": "object"}}],
            "flags": [{"name": "plan", "type": "boolean", "description": "Plan", "default": true}],
            "renderers": ["note"]}], "errors": []});
        let info = PluginInfo::from_hello(&hello).unwrap();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("gate", "1.0.0")
        );
        assert_eq!(info.events, ["tool_call", "input"]);
        assert_eq!(info.commands, [("deploy".to_owned(), "Deploy".to_owned())]);
        assert_eq!(info.tools[0].label, "Greet");
        assert_eq!(info.flags[0].3, json!(true));
        assert_eq!(info.renderers, ["note"]);
        let broken = json!({"type": "hello", "protocol": 1, "plugins": [],
            "errors": [{"path": "/p/x.so", "error": "it was built for plugin ABI 0"}]});
        assert_eq!(
            PluginInfo::from_hello(&broken).unwrap_err(),
            "it was built for plugin ABI 0"
        );
    }

    #[test]
    fn turns_combined_results_into_one_handler_result() {
        assert_eq!(
            event_reply("input", json!({"action": "continue"})),
            Reply::None
        );
        assert_eq!(
            event_reply(
                "input",
                json!({"action": "transform", "text": "x", "images": null})
            ),
            Reply::Json(json!({"action": "transform", "text": "x", "images": null}))
        );
        assert_eq!(
            event_reply(
                "resources_discover",
                json!({"skillPaths": [{"path": "/s", "extensionPath": "/p"}], "promptPaths": [], "themePaths": []})
            ),
            Reply::Json(json!({"skillPaths": ["/s"], "promptPaths": [], "themePaths": []}))
        );
        assert_eq!(
            event_reply("before_provider_request", json!({"payload": {"a": 1}})),
            Reply::Json(json!({"a": 1}))
        );
        assert_eq!(event_reply("agent_end", Value::Null), Reply::None);
        assert_eq!(
            event_reply("session_before_fork", json!({"cancel": true})),
            Reply::Json(json!({"cancel": true}))
        );
    }

    #[test]
    fn the_hang_limit_leaves_the_runner_a_margin() {
        assert_eq!(hang_limit(None, "agent_end"), Duration::from_secs(29));
    }
}
