//! `PiActionsApi`: actions on the session. This host version implements `log` and
//! `get_flag`; the session services answer `PI_ERR_UNAVAILABLE` until a mode provides them.

use std::os::raw::c_void;

use pi_hooks_abi::ffi::*;

use super::value::HostValue;
use super::{barrier, read_str};
use crate::registry::PluginState;

/// The lowest level written to stderr: `PI_HOOKS_LOG` = debug | info | warn | error
/// (default warn).
fn log_threshold() -> u32 {
    match std::env::var("PI_HOOKS_LOG").as_deref() {
        Ok("debug") => PI_LOG_DEBUG,
        Ok("info") => PI_LOG_INFO,
        Ok("error") => PI_LOG_ERROR,
        _ => PI_LOG_WARN,
    }
}

/// Runs `f` with the plugin's state; a NULL handle gives `PI_ERR_INVALID_ARG`, a retired
/// plugin `PI_ERR_CANCELLED`.
fn with_plugin(plugin: *mut PiPlugin, f: impl FnOnce(&PluginState) -> PiStatus) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: plugins pass the handle the host gave their init; it is alive while loaded.
        match unsafe { PluginState::from_handle(plugin) } {
            None => PI_ERR_INVALID_ARG,
            Some(state) if state.phase() == crate::registry::Phase::Retired => PI_ERR_CANCELLED,
            Some(state) => f(state),
        }
    })
}

/// A session service no mode provides yet.
fn unavailable(plugin: *mut PiPlugin) -> PiStatus {
    with_plugin(plugin, |_| PI_ERR_UNAVAILABLE)
}

unsafe extern "C" fn log(plugin: *mut PiPlugin, level: u32, message: PiStr) {
    barrier((), || {
        // SAFETY: as in `with_plugin`; `message` is a plugin string valid for the call.
        let (state, text) = unsafe { (PluginState::from_handle(plugin), read_str(message)) };
        let (Some(state), Ok(text)) = (state, text) else {
            return;
        };
        if level >= log_threshold() {
            let label = ["debug", "info", "warn", "error"]
                .get(level as usize)
                .unwrap_or(&"error");
            eprintln!("[{}] {label}: {text}", state.name);
        }
    })
}

unsafe extern "C" fn send_message(
    plugin: *mut PiPlugin,
    _message: PiStr,
    _options: PiStr,
) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn send_user_message(
    plugin: *mut PiPlugin,
    _text: PiStr,
    _deliver_as: u32,
) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn append_entry(
    plugin: *mut PiPlugin,
    _custom_type: PiStr,
    _data: PiStr,
) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn exec(
    plugin: *mut PiPlugin,
    _request: *const PiExecRequest,
    _out: *mut *mut PiValue,
) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn timer_start(
    plugin: *mut PiPlugin,
    _delay_ms: u64,
    _interval_ms: u64,
    _callback: Option<PiTimerFn>,
    _user_data: *mut c_void,
    _timer_id: *mut u64,
) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn timer_cancel(plugin: *mut PiPlugin, _timer_id: u64) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn get_active_tools(plugin: *mut PiPlugin, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn get_all_tools(plugin: *mut PiPlugin, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn set_active_tools(
    plugin: *mut PiPlugin,
    _names: *const PiStr,
    _count: usize,
) -> PiStatus {
    unavailable(plugin)
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
        match state.flag_default(name) {
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

unsafe extern "C" fn set_session_name(plugin: *mut PiPlugin, _name: PiStr) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn get_session_name(plugin: *mut PiPlugin, _out: *mut *mut PiValue) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn set_label(plugin: *mut PiPlugin, _entry_id: PiStr, _label: PiStr) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn events_emit(plugin: *mut PiPlugin, _channel: PiStr, _data: PiStr) -> PiStatus {
    unavailable(plugin)
}

unsafe extern "C" fn events_on(
    plugin: *mut PiPlugin,
    _channel: PiStr,
    _handler: Option<PiBusHandler>,
    _user_data: *mut c_void,
) -> PiStatus {
    unavailable(plugin)
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
};
