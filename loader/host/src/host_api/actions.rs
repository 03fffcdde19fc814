//! `PiActionsApi`: actions on the session. `log`, `get_flag`, `identity` and `data_dir` work
//! from `init` on; `exec`
//! and the timers (`loader/host/src/services/exec.rs`, `loader/host/src/services/timers.rs`) once the plugin is active;
//! the session services answer `PI_ERR_UNAVAILABLE` until a mode provides them.

use std::os::raw::c_void;

use pi_hooks_abi::ffi::*;

use serde_json::{Value, json};

use super::context::write_owned_value;
use super::value::HostValue;
use super::{barrier, read_opt_str, read_str, read_str_array};
use crate::plugin::registrations::UserData;
use crate::plugin::state::{Phase, PluginState};
use crate::services::HostServices;

/// Runs `f` with the plugin's state; a NULL handle gives `PI_ERR_INVALID_ARG`, a retired
/// plugin `PI_ERR_CANCELLED`.
fn with_plugin(plugin: *mut PiPlugin, f: impl FnOnce(&PluginState) -> PiStatus) -> PiStatus {
    barrier(PI_ERR_PANIC, || match PluginState::from_handle(plugin) {
        None => PI_ERR_INVALID_ARG,
        Some(state) if state.phase() == crate::plugin::state::Phase::Retired => PI_ERR_CANCELLED,
        Some(state) => f(state),
    })
}

/// Runs `f` with the session services bound to an active plugin. During init, and before a
/// mode binds services, the answer is `PI_ERR_UNAVAILABLE` (which the hook trace reports as
/// a refused `action`).
fn with_services(
    plugin: *mut PiPlugin,
    action: &'static str,
    f: impl FnOnce(&PluginState, &dyn HostServices) -> PiStatus,
) -> PiStatus {
    with_plugin(plugin, |state| {
        let services = state.services().filter(|_| state.serves_host_calls());
        match services {
            Some(services) => f(state, services.as_ref()),
            None => {
                if crate::observe::trace::on() {
                    let why = if state.serves_host_calls() {
                        "unavailable: no session (this command binds no session services)"
                    } else {
                        "unavailable: the plugin is not active yet (during init)"
                    };
                    crate::observe::trace::action(state, action, &Value::Null, Err(why), None);
                }
                PI_ERR_UNAVAILABLE
            }
        }
    })
}

/// `PI_OK`, or `PI_ERR` for a refused service call (a warning says why).
fn service_status(result: Result<(), String>) -> PiStatus {
    match result {
        Ok(()) => PI_OK,
        Err(message) => {
            crate::observe::diagnostics::warn(&message);
            PI_ERR
        }
    }
}

/// The JSON of an action's arguments for the hook trace, built only when it is on.
fn trace_args(args: impl FnOnce() -> Value) -> Option<Value> {
    crate::observe::trace::on().then(args)
}

/// Reports an action with the arguments [`trace_args`] built (nothing when the trace is off),
/// and passes its result on.
fn traced(
    state: &PluginState,
    action: &str,
    args: Option<Value>,
    result: Result<(), String>,
) -> Result<(), String> {
    if let Some(args) = args {
        let outcome = match &result {
            Ok(()) => Ok(None),
            Err(message) => Err(message.as_str()),
        };
        crate::observe::trace::action(state, action, &args, outcome, None);
    }
    result
}

/// Reads optional JSON text: empty means `None`.
///
/// # Safety
/// As for `read_str`.
unsafe fn read_json(s: PiStr) -> Result<Option<Value>, PiStatus> {
    // SAFETY: forwarded contract.
    let text = unsafe { read_str(s) }?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|_| PI_ERR_INVALID_ARG)
}

unsafe extern "C" fn log(plugin: *mut PiPlugin, level: u32, message: PiStr) {
    barrier((), || {
        // SAFETY: `message` is a plugin string valid for the call.
        let (state, text) = (PluginState::from_handle(plugin), unsafe {
            read_str(message)
        });
        let (Some(state), Ok(text)) = (state, text) else {
            return;
        };
        crate::observe::diagnostics::plugin_log(&state.name, level, text);
    })
}

unsafe extern "C" fn send_message(
    plugin: *mut PiPlugin,
    message: PiStr,
    options: PiStr,
) -> PiStatus {
    with_services(plugin, "sendMessage", |state, services| {
        // SAFETY: both are plugin strings valid for the call.
        let (message, options) = match unsafe { (read_json(message), read_json(options)) } {
            (Ok(Some(m)), Ok(o)) => (m, o.unwrap_or(Value::Null)),
            (Err(status), _) | (_, Err(status)) => return status,
            (Ok(None), _) => return PI_ERR_INVALID_ARG,
        };
        let args = trace_args(|| json!({"message": message, "options": options}));
        let result = services.send_message(&state.path, message, options);
        service_status(traced(state, "sendMessage", args, result))
    })
}

unsafe extern "C" fn send_user_message(
    plugin: *mut PiPlugin,
    text: PiStr,
    deliver_as: u32,
) -> PiStatus {
    with_services(plugin, "sendUserMessage", |state, services| {
        if deliver_as > PI_DELIVER_FOLLOW_UP {
            return PI_ERR_INVALID_ARG;
        }
        // SAFETY: `text` is a plugin string valid for the call.
        match unsafe { read_str(text) } {
            Ok(text) => {
                let args = trace_args(
                    || json!({"text": text, "deliverAs": crate::services::deliver_as_name(deliver_as)}),
                );
                let result = services.send_user_message(&state.path, text.to_owned(), deliver_as);
                service_status(traced(state, "sendUserMessage", args, result))
            }
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn send_user_message_content(
    plugin: *mut PiPlugin,
    content: *const PiValue,
    deliver_as: u32,
) -> PiStatus {
    with_services(plugin, "sendUserMessage", |state, services| {
        if deliver_as > PI_DELIVER_FOLLOW_UP {
            return PI_ERR_INVALID_ARG;
        }
        // SAFETY: plugins pass values the host handed out and that are still alive.
        let content = unsafe { super::value::host_value(content) }
            .map_or(Value::Null, HostValue::to_json_value);
        if !crate::services::is_user_content(&content) {
            return PI_ERR_INVALID_ARG;
        }
        let args = trace_args(
            || json!({"content": content, "deliverAs": crate::services::deliver_as_name(deliver_as)}),
        );
        let result = services.send_user_content(&state.path, content, deliver_as);
        service_status(traced(state, "sendUserMessage", args, result))
    })
}

unsafe extern "C" fn exec_cancel(plugin: *mut PiPlugin) -> PiStatus {
    with_active(plugin, |state| {
        state.cancel_execs();
        PI_OK
    })
}

unsafe extern "C" fn append_entry(
    plugin: *mut PiPlugin,
    custom_type: PiStr,
    data: PiStr,
) -> PiStatus {
    with_services(plugin, "appendEntry", |state, services| {
        // SAFETY: both are plugin strings valid for the call.
        match unsafe { (read_str(custom_type), read_json(data)) } {
            (Ok(kind), Ok(data)) if !kind.is_empty() => {
                let args = trace_args(|| json!({"customType": kind, "data": data}));
                let result = services.append_entry(kind, data);
                service_status(traced(state, "appendEntry", args, result))
            }
            (Err(status), _) | (_, Err(status)) => status,
            _ => PI_ERR_INVALID_ARG,
        }
    })
}

/// Runs `f` with the state of an active plugin (`PI_ERR_UNAVAILABLE` during init), as the
/// `'static` reference the handle leads to (plugin states are never freed).
fn with_active(
    plugin: *mut PiPlugin,
    f: impl FnOnce(&'static PluginState) -> PiStatus,
) -> PiStatus {
    with_plugin(plugin, |_| match PluginState::from_handle(plugin) {
        Some(state) if state.serves_host_calls() => f(state),
        Some(_) => PI_ERR_UNAVAILABLE,
        None => PI_ERR_INVALID_ARG,
    })
}

/// The session's cwd for a plugin: the runner's when a mode bound services, else the
/// process's (the host runs in the session's cwd).
fn session_cwd(state: &PluginState) -> std::path::PathBuf {
    state
        .services()
        .and_then(|services| services.runner_config())
        .map(|config| std::path::PathBuf::from(config.cwd))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| std::path::PathBuf::from("."))
}

/// Copies a plugin's `PiExecRequest`; the working directory resolved against the session's.
///
/// # Safety
/// `request` is NULL or points to a `PiExecRequest` whose strings are valid for the call.
unsafe fn read_exec_request(
    state: &PluginState,
    request: *const PiExecRequest,
) -> Result<crate::services::exec::ExecRequest, PiStatus> {
    if request.is_null() {
        return Err(PI_ERR_INVALID_ARG);
    }
    // SAFETY: non-NULL; the plugin's request is valid for the call (ABI contract). Only the
    // size is read before it is checked.
    let size = unsafe { (*request).struct_size } as usize;
    if size < size_of::<PiExecRequest>() {
        return Err(PI_ERR_INVALID_ARG);
    }
    // SAFETY: as above; the struct is at least as large as this host's.
    let request = unsafe { &*request };
    // SAFETY: the plugin's strings and argument array are valid for the call.
    let (program, args, cwd) = unsafe {
        (
            read_str(request.program)?,
            read_str_array(request.args, request.arg_count)?,
            read_str(request.cwd)?,
        )
    };
    if program.is_empty() || request.flags & !PI_EXEC_CANCEL_ON_ABORT != 0 {
        return Err(PI_ERR_INVALID_ARG);
    }
    // The current run's abort, when asked for (nothing outside a run).
    let cancel = if request.flags & PI_EXEC_CANCEL_ON_ABORT != 0 {
        state.services().and_then(|s| s.run_abort_token())
    } else {
        None
    };
    let session = session_cwd(state);
    Ok(crate::services::exec::ExecRequest {
        program: program.to_owned(),
        args: args.into_iter().map(str::to_owned).collect(),
        cwd: if cwd.is_empty() {
            session
        } else {
            session.join(cwd)
        },
        timeout: (request.timeout_ms > 0)
            .then(|| std::time::Duration::from_millis(request.timeout_ms)),
        cancel,
        plugin_cancel: Some(state.exec_cancel_token()),
    })
}

unsafe extern "C" fn exec(
    plugin: *mut PiPlugin,
    request: *const PiExecRequest,
    out: *mut *mut PiValue,
) -> PiStatus {
    with_active(plugin, |state| {
        if out.is_null() {
            return PI_ERR_INVALID_ARG;
        }
        // SAFETY: the plugin's request is valid for the call (ABI contract).
        let request = match unsafe { read_exec_request(state, request) } {
            Ok(request) => request,
            Err(status) => return status,
        };
        // A confined plugin (crate::sandbox) runs only the programs its grant names.
        if let Err(reason) = crate::sandbox::check_exec(&request.program) {
            if crate::observe::trace::on() {
                crate::observe::trace::action(
                    state,
                    "exec",
                    &request.to_json(),
                    Err(&reason),
                    None,
                );
            }
            let written = write_owned_value(out, Some(serde_json::json!({"error": reason})));
            return if written == PI_OK {
                PI_ERR_DENIED
            } else {
                written
            };
        }
        let services = state.services();
        let traced =
            crate::observe::trace::on().then(|| (request.to_json(), std::time::Instant::now()));
        let seen = services.as_ref().map(|_| request.to_json());
        let output = crate::services::exec::run(state, request).to_json();
        if let Some((args, started)) = traced {
            let result = exec_summary(&output);
            crate::observe::trace::action(
                state,
                "exec",
                &args,
                Ok(Some(&result)),
                Some(started.elapsed()),
            );
        }
        if let (Some(services), Some(seen)) = (services, seen) {
            services.observe_exec(&seen, &output);
        }
        write_owned_value(out, Some(output))
    })
}

/// What the hook trace shows of an `exec` result: the code, whether it was killed, the signal,
/// and the start of its output.
fn exec_summary(output: &Value) -> Value {
    let mut summary = output.clone();
    for stream in ["stdout", "stderr"] {
        if let Some(text) = output[stream].as_str()
            && let Some((at, _)) = text.char_indices().nth(200)
        {
            summary[stream] = format!("{}…", &text[..at]).into();
        }
    }
    summary
}

unsafe extern "C" fn timer_start(
    plugin: *mut PiPlugin,
    delay_ms: u64,
    interval_ms: u64,
    callback: Option<PiTimerFn>,
    user_data: *mut c_void,
    timer_id: *mut u64,
) -> PiStatus {
    with_active(plugin, |state| {
        let Some(callback) = callback else {
            return PI_ERR_INVALID_ARG;
        };
        let user_data = crate::plugin::registrations::UserData(user_data);
        let started =
            crate::services::timers::start(state, delay_ms, interval_ms, callback, user_data);
        if crate::observe::trace::on() {
            let args = json!({"delayMs": delay_ms, "intervalMs": interval_ms});
            let result = started.as_ref().ok().map(|id| json!({"id": id}));
            let outcome = match &started {
                Ok(_) => Ok(result.as_ref()),
                Err(crate::services::timers::StartError::Retired) => Err("the plugin was retired"),
                Err(crate::services::timers::StartError::TooMany(message)) => Err(message.as_str()),
            };
            crate::observe::trace::action(state, "timerStart", &args, outcome, None);
        }
        match started {
            Ok(id) => {
                if !timer_id.is_null() {
                    // SAFETY: a non-NULL out-pointer from the plugin (ABI contract).
                    unsafe { timer_id.write(id) };
                }
                PI_OK
            }
            Err(crate::services::timers::StartError::Retired) => PI_ERR_CANCELLED,
            Err(crate::services::timers::StartError::TooMany(message)) => {
                service_status(Err(message))
            }
        }
    })
}

unsafe extern "C" fn timer_cancel(plugin: *mut PiPlugin, timer_id: u64) -> PiStatus {
    with_active(plugin, |state| {
        let cancelled = crate::services::timers::cancel(state, timer_id);
        if crate::observe::trace::on() {
            let outcome = if cancelled {
                Ok(None)
            } else {
                Err("no such timer")
            };
            crate::observe::trace::action(
                state,
                "timerCancel",
                &json!({"id": timer_id}),
                outcome,
                None,
            );
        }
        if cancelled { PI_OK } else { PI_ERR_NOT_FOUND }
    })
}

unsafe extern "C" fn get_active_tools(plugin: *mut PiPlugin, out: *mut *mut PiValue) -> PiStatus {
    with_services(plugin, "getActiveTools", |_, services| {
        write_owned_value(out, Some(services.active_tools().into()))
    })
}

unsafe extern "C" fn get_all_tools(plugin: *mut PiPlugin, out: *mut *mut PiValue) -> PiStatus {
    with_services(plugin, "getAllTools", |_, services| {
        write_owned_value(out, Some(services.all_tools()))
    })
}

unsafe extern "C" fn set_active_tools(
    plugin: *mut PiPlugin,
    names: *const PiStr,
    count: usize,
) -> PiStatus {
    with_services(plugin, "setActiveTools", |state, services| {
        // SAFETY: `names` points to `count` plugin strings valid for the call.
        match unsafe { read_str_array(names, count) } {
            Ok(names) => {
                let args = trace_args(|| json!({"names": names}));
                services.set_active_tools(names.into_iter().map(str::to_owned).collect());
                let _ = traced(state, "setActiveTools", args, Ok(()));
                PI_OK
            }
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn get_flag(
    plugin: *mut PiPlugin,
    name: PiStr,
    out: *mut *mut PiValue,
) -> PiStatus {
    with_plugin(plugin, |state| {
        // SAFETY: `name` is a plugin string valid for the call.
        let name = match unsafe { read_str(name) } {
            Ok(n) => n,
            Err(status) => return status,
        };
        if out.is_null() {
            return PI_ERR_INVALID_ARG;
        }
        match state.flag_value(name) {
            None => PI_ERR_NOT_FOUND,
            Some(value) => {
                let ptr = value.map_or(std::ptr::null_mut(), |v| {
                    HostValue::from_json(v).into_owned_ptr()
                });
                // SAFETY: `out` is a non-NULL out-pointer from the plugin (ABI contract).
                unsafe { out.write(ptr) };
                PI_OK
            }
        }
    })
}

unsafe extern "C" fn set_session_name(plugin: *mut PiPlugin, name: PiStr) -> PiStatus {
    with_services(plugin, "setSessionName", |state, services| {
        // SAFETY: `name` is a plugin string valid for the call.
        match unsafe { read_str(name) } {
            Ok(name) => {
                let args = trace_args(|| json!({"name": name}));
                let result = services.set_session_name(name);
                service_status(traced(state, "setSessionName", args, result))
            }
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn get_session_name(plugin: *mut PiPlugin, out: *mut *mut PiValue) -> PiStatus {
    with_services(plugin, "getSessionName", |_, services| {
        write_owned_value(out, services.session_name().map(Value::String))
    })
}

unsafe extern "C" fn set_label(plugin: *mut PiPlugin, entry_id: PiStr, label: PiStr) -> PiStatus {
    with_services(plugin, "setLabel", |state, services| {
        // SAFETY: both are plugin strings valid for the call.
        match unsafe { (read_str(entry_id), read_opt_str(label)) } {
            (Ok(id), Ok(label)) => {
                let args = trace_args(|| json!({"entryId": id, "label": label}));
                let result = services.set_label(id, label);
                service_status(traced(state, "setLabel", args, result))
            }
            (Err(status), _) | (_, Err(status)) => status,
        }
    })
}

/// Reads a bus channel name: UTF-8 without NUL (it is handed to C handlers NUL-terminated).
///
/// # Safety
/// As for `read_str`.
unsafe fn read_channel<'a>(channel: PiStr) -> Result<&'a str, PiStatus> {
    // SAFETY: forwarded contract.
    let channel = unsafe { read_str(channel) }?;
    if channel.contains('\0') {
        return Err(PI_ERR_INVALID_ARG);
    }
    Ok(channel)
}

/// Works during init and later (pi's `pi.events` is usable while an extension loads); see
/// `crate::services::event_bus` for delivery.
unsafe extern "C" fn events_emit(plugin: *mut PiPlugin, channel: PiStr, data: PiStr) -> PiStatus {
    with_plugin(plugin, |state| {
        // SAFETY: both are plugin strings valid for the call.
        match unsafe { (read_channel(channel), read_json(data)) } {
            (Ok(channel), Ok(data)) => {
                let data = data.unwrap_or(Value::Null);
                let args = trace_args(|| json!({"channel": channel, "data": data}));
                let emitted = crate::services::event_bus::emit(state, channel, data);
                if let Some(args) = args {
                    let outcome = match emitted {
                        Ok(()) => Ok(None),
                        Err(status) => Err(pi_hooks_abi::sdk::status_name(status)),
                    };
                    crate::observe::trace::action(state, "events.emit", &args, outcome, None);
                }
                match emitted {
                    Ok(()) => PI_OK,
                    Err(status) => status,
                }
            }
            (Err(status), _) | (_, Err(status)) => status,
        }
    })
}

/// Works during init and later; the subscription ends when the plugin is retired.
unsafe extern "C" fn events_on(
    plugin: *mut PiPlugin,
    channel: PiStr,
    handler: Option<PiBusHandler>,
    user_data: *mut c_void,
) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let Some(state) = PluginState::from_handle(plugin) else {
            return PI_ERR_INVALID_ARG;
        };
        if state.phase() == Phase::Retired {
            return PI_ERR_CANCELLED;
        }
        let Some(handler) = handler else {
            return PI_ERR_INVALID_ARG;
        };
        // SAFETY: `channel` is a plugin string valid for the call.
        let channel = match unsafe { read_channel(channel) } {
            Ok(channel) => channel,
            Err(status) => return status,
        };
        match crate::services::event_bus::subscribe(state, channel, handler, UserData(user_data)) {
            Ok(()) => PI_OK,
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn set_model(
    plugin: *mut PiPlugin,
    provider: PiStr,
    model_id: PiStr,
    found: *mut bool,
) -> PiStatus {
    with_services(plugin, "setModel", |state, services| {
        // SAFETY: `provider` and `model_id` are plugin strings valid for the call.
        let (provider, model_id) = match unsafe { (read_str(provider), read_str(model_id)) } {
            (Ok(provider), Ok(model_id)) => (provider, model_id),
            (Err(status), _) | (_, Err(status)) => return status,
        };
        let requested = services.request_model(provider, model_id);
        if crate::observe::trace::on() {
            let args = json!({"provider": provider, "id": model_id});
            let found = requested.as_ref().ok().map(|found| json!({"found": found}));
            let outcome = match &requested {
                Ok(_) => Ok(found.as_ref()),
                Err(message) => Err(message.as_str()),
            };
            crate::observe::trace::action(state, "setModel", &args, outcome, None);
        }
        match requested {
            Ok(offered) => {
                if !found.is_null() {
                    // SAFETY: a non-NULL out-pointer from the plugin (ABI contract).
                    unsafe { found.write(offered) };
                }
                PI_OK
            }
            Err(_) => PI_ERR_UNAVAILABLE,
        }
    })
}

/// Hands `text` to the plugin in `*out`, borrowed from its state (alive until the process
/// ends, see `crate::plugin::own::HandedOut`).
fn hand_out(state: &PluginState, text: &str, out: *mut PiStr) -> PiStatus {
    let Some((ptr, len)) = state.hand_out(text) else {
        return PI_ERR;
    };
    // SAFETY: `out` is a non-NULL out-pointer from the plugin (ABI contract, checked by the
    // callers).
    unsafe { out.write(PiStr { ptr, len }) };
    PI_OK
}

unsafe extern "C" fn identity(plugin: *mut PiPlugin, out: *mut PiStr) -> PiStatus {
    with_plugin(plugin, |state| {
        if out.is_null() {
            return PI_ERR_INVALID_ARG;
        }
        match crate::plugin::own::tagged(&state.own().identity) {
            Some(text) => hand_out(state, &text, out),
            None => PI_ERR_UTF8,
        }
    })
}

unsafe extern "C" fn data_dir(plugin: *mut PiPlugin, out: *mut PiStr) -> PiStatus {
    with_plugin(plugin, |state| {
        if out.is_null() {
            return PI_ERR_INVALID_ARG;
        }
        let dir = match state.own().data_dir() {
            Ok(dir) => dir,
            Err(why) => {
                crate::observe::diagnostics::warn(&format!(
                    "plugin {}: data_dir: {why}",
                    crate::guards::display::escape(&state.name)
                ));
                return PI_ERR;
            }
        };
        // A confined plugin (this process is its `serve` child) has the folder its grant
        // names, which the host made when it resolved the grant; one its grant keeps out
        // of the folder gets nothing.
        if let Some(grant) = crate::sandbox::applied()
            && !grant.allows_path(&dir, false)
        {
            let reason = format!(
                "data_dir of {} denied: the grant of plugin {} ({}) names no ${{data}} ({})",
                dir.display(),
                grant.plugin,
                grant.source,
                grant.summary()
            );
            crate::sandbox::report::denied("data_dir", &reason, grant);
            return PI_ERR_DENIED;
        }
        let Some(text) = dir.to_str() else {
            return PI_ERR_UTF8;
        };
        if let Err(why) = crate::plugin::own::ensure_data_dir(&dir) {
            crate::observe::diagnostics::warn(&format!(
                "plugin {}: data_dir: {why}",
                crate::guards::display::escape(&state.name)
            ));
            return PI_ERR;
        }
        hand_out(state, text, out)
    })
}

/// The host's `PiActionsApi`.
pub static ACTIONS_API: PiActionsApi = PiActionsApi {
    struct_size: size_of::<PiActionsApi>() as u32,
    reserved: 0,
    log,
    send_message,
    send_user_message,
    append_entry,
    exec,
    timer_start,
    timer_cancel,
    get_active_tools,
    get_all_tools,
    set_active_tools,
    get_flag,
    set_session_name,
    get_session_name,
    set_label,
    events_emit,
    events_on,
    set_model,
    send_user_message_content,
    exec_cancel,
    identity,
    data_dir,
};
