//! `PiUiApi`. A mode with a UI binds a [`UiService`] through its session services (RPC does:
//! `extension_ui_request` lines); without one (print, JSON) every call answers as pi does
//! without a UI (dialogs return their defaults at once, setters do nothing). Arguments are
//! checked first, as a UI would check them, so a plugin's bad call fails the same way in
//! every mode. A dialog blocks only the calling plugin's thread, and its time is paused on the
//! dispatch's clock so it does not count against the handler's timeout.

use std::sync::Arc;
use std::time::Duration;

use pi_hooks_abi::ffi::*;
use serde_json::{Value, json};

use super::context::{CallContext, with_ctx, write_owned_value};
use super::{read_name, read_opt_str, read_sized, read_str, read_str_array};
use crate::services::UiService;
/// Writes `value` to a plugin out-pointer.
fn write_out_param<T>(out: *mut T, value: T) -> PiStatus {
    if out.is_null() {
        return PI_ERR_INVALID_ARG;
    }
    // SAFETY: `out` is a non-NULL out-pointer from the plugin (ABI contract).
    unsafe { out.write(value) };
    PI_OK
}

/// Reads a dialog's options: NULL for none; a struct smaller than minor 0's is refused.
///
/// # Safety
/// `dialog` must be NULL or point to the plugin's `PiDialogOptions` (at least its declared
/// `struct_size` bytes).
unsafe fn read_dialog(dialog: *const PiDialogOptions) -> Result<Option<PiDialogOptions>, PiStatus> {
    if dialog.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { read_sized(dialog, size_of::<PiDialogOptions>()) }.map(Some)
}

/// Runs `answer` with what `read` read, once the arguments read as they would with a UI:
/// bad arguments get `PI_ERR_INVALID_ARG` (or `PI_ERR_UTF8`) in every mode, not only where a
/// UI shows them.
fn checked<T>(
    ctx: *mut PiContext,
    read: impl FnOnce() -> Result<T, PiStatus>,
    answer: impl FnOnce(&CallContext<'_>, T) -> PiStatus,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| match read() {
        Ok(args) => answer(c, args),
        Err(status) => status,
    })
}

/// The UI bound to the call's session, if the mode has one.
fn ui_of(c: &CallContext<'_>) -> Option<Arc<dyn UiService>> {
    c.services()?.ui()
}

/// Asks a dialog and waits (paused on the dispatch's clock): the answer object, or `None`
/// without a UI, on timeout, or when the answer is `{"cancelled":true}`.
fn ask(c: &CallContext<'_>, mut request: Value, timeout_ms: u64) -> Option<Value> {
    let ui = ui_of(c)?;
    let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
    if timeout_ms > 0 {
        request["timeout"] = timeout_ms.into();
    }
    let answer = c.pause_clock().pause(|| ui.dialog(request, timeout))?;
    if answer.get("cancelled").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    Some(answer)
}

/// Asks a dialog (see [`ask`]) and reads the plugin's answer from the reply with `read`; with
/// the hook trace on, reports the dialog, the answer the plugin got (`shown` turns it into
/// JSON) and how long it waited.
fn dialog<T>(
    c: &CallContext<'_>,
    request: Value,
    timeout_ms: u64,
    read: impl FnOnce(Option<Value>) -> T,
    shown: impl FnOnce(&T) -> Value,
) -> T {
    if !crate::observe::trace::on() {
        return read(ask(c, request, timeout_ms));
    }
    let method = request["method"].as_str().unwrap_or_default().to_owned();
    let traced = request.clone();
    let started = std::time::Instant::now();
    let answer = read(ask(c, request, timeout_ms));
    crate::observe::trace::ui(
        c.plugin(),
        &method,
        &traced,
        ui_of(c).is_some(),
        Some(&shown(&answer)),
        Some(started.elapsed()),
    );
    answer
}

/// Sends a fire-and-forget request when the mode has a UI (with the hook trace on, reports
/// it, and whether a UI took it).
fn fire(c: &CallContext<'_>, request: Value) -> PiStatus {
    let ui = ui_of(c);
    if crate::observe::trace::on() {
        let method = request["method"].as_str().unwrap_or_default();
        crate::observe::trace::ui(c.plugin(), method, &request, ui.is_some(), None, None);
    }
    if let Some(ui) = ui {
        ui.fire(request);
    }
    PI_OK
}

/// The dialog's timeout in milliseconds (0: none).
fn timeout_of(dialog: Option<PiDialogOptions>) -> u64 {
    dialog.map_or(0, |d| d.timeout_ms)
}

/// The `value` string of a dialog answer.
fn answer_text(answer: Option<Value>) -> Option<Value> {
    answer?
        .get("value")
        .and_then(Value::as_str)
        .map(|v| Value::String(v.to_owned()))
}

unsafe extern "C" fn select(
    ctx: *mut PiContext,
    title: PiStr,
    options: *const PiStr,
    count: usize,
    dialog: *const PiDialogOptions,
    index: *mut i64,
) -> PiStatus {
    checked(
        ctx,
        || {
            if options.is_null() {
                return Err(PI_ERR_INVALID_ARG);
            }
            // SAFETY: plugin strings and structs valid for the call (ABI contract).
            unsafe {
                Ok((
                    read_str(title)?,
                    read_str_array(options, count)?,
                    read_dialog(dialog)?,
                ))
            }
        },
        |c, (title, options, dialog)| {
            let request = json!({"method": "select", "title": title, "options": options});
            let chosen = self::dialog(
                c,
                request,
                timeout_of(dialog),
                |reply| {
                    reply
                        .and_then(|a| a.get("value").and_then(Value::as_str).map(str::to_owned))
                        .and_then(|value| options.iter().position(|o| *o == value))
                        .map_or(-1, |i| i as i64)
                },
                |&chosen| {
                    usize::try_from(chosen)
                        .ok()
                        .and_then(|i| options.get(i))
                        .map_or(Value::Null, |o| Value::String((*o).to_owned()))
                },
            );
            write_out_param(index, chosen)
        },
    )
}

unsafe extern "C" fn confirm(
    ctx: *mut PiContext,
    title: PiStr,
    message: PiStr,
    dialog: *const PiDialogOptions,
    out: *mut bool,
) -> PiStatus {
    checked(
        ctx,
        // SAFETY: plugin strings and structs valid for the call (ABI contract).
        || unsafe { Ok((read_str(title)?, read_str(message)?, read_dialog(dialog)?)) },
        |c, (title, message, dialog)| {
            let request = json!({"method": "confirm", "title": title, "message": message});
            let confirmed = self::dialog(
                c,
                request,
                timeout_of(dialog),
                |reply| {
                    reply
                        .and_then(|a| a.get("confirmed").and_then(Value::as_bool))
                        .unwrap_or(false)
                },
                |&confirmed| Value::Bool(confirmed),
            );
            write_out_param(out, confirmed)
        },
    )
}

unsafe extern "C" fn input(
    ctx: *mut PiContext,
    title: PiStr,
    placeholder: PiStr,
    dialog: *const PiDialogOptions,
    out: *mut *mut PiValue,
) -> PiStatus {
    checked(
        ctx,
        // SAFETY: plugin strings and structs valid for the call (ABI contract).
        || unsafe {
            Ok((
                read_str(title)?,
                read_str(placeholder)?,
                read_dialog(dialog)?,
            ))
        },
        |c, (title, placeholder, dialog)| {
            let request = json!({"method": "input", "title": title, "placeholder": placeholder});
            let text = self::dialog(c, request, timeout_of(dialog), answer_text, |text| {
                text.clone().unwrap_or(Value::Null)
            });
            write_owned_value(out, text)
        },
    )
}

unsafe extern "C" fn editor(
    ctx: *mut PiContext,
    title: PiStr,
    prefill: PiStr,
    out: *mut *mut PiValue,
) -> PiStatus {
    checked(
        ctx,
        // SAFETY: plugin strings valid for the call (ABI contract).
        || unsafe { Ok((read_str(title)?, read_str(prefill)?)) },
        |c, (title, prefill)| {
            // pi's editor dialog has no timeout.
            let request = json!({"method": "editor", "title": title, "prefill": prefill});
            let text = self::dialog(c, request, 0, answer_text, |text| {
                text.clone().unwrap_or(Value::Null)
            });
            write_owned_value(out, text)
        },
    )
}

unsafe extern "C" fn notify(ctx: *mut PiContext, message: PiStr, level: u32) -> PiStatus {
    checked(
        ctx,
        || {
            let kind = match level {
                PI_NOTIFY_INFO => "info",
                PI_NOTIFY_WARNING => "warning",
                PI_NOTIFY_ERROR => "error",
                _ => return Err(PI_ERR_INVALID_ARG),
            };
            // SAFETY: a plugin string valid for the call (ABI contract).
            Ok((unsafe { read_str(message) }?, kind))
        },
        |c, (message, kind)| {
            fire(
                c,
                json!({"method": "notify", "message": message, "notifyType": kind}),
            )
        },
    )
}

unsafe extern "C" fn set_status(ctx: *mut PiContext, key: PiStr, text: PiStr) -> PiStatus {
    checked(
        ctx,
        // SAFETY: plugin strings valid for the call (ABI contract).
        || unsafe { Ok((read_name(key)?, read_opt_str(text)?)) },
        |c, (key, text)| {
            let mut request = json!({"method": "setStatus", "statusKey": key});
            if let Some(text) = text {
                request["statusText"] = text.into();
            }
            fire(c, request)
        },
    )
}

unsafe extern "C" fn set_widget(
    ctx: *mut PiContext,
    key: PiStr,
    lines: *const PiStr,
    count: usize,
    placement: u32,
) -> PiStatus {
    checked(
        ctx,
        || {
            if !matches!(
                placement,
                PI_WIDGET_ABOVE_EDITOR | PI_WIDGET_BELOW_EDITOR | PI_WIDGET_DEFAULT
            ) {
                return Err(PI_ERR_INVALID_ARG);
            }
            // SAFETY: plugin strings valid for the call (ABI contract).
            unsafe {
                let key = read_name(key)?;
                let lines = if lines.is_null() {
                    None
                } else {
                    Some(read_str_array(lines, count)?)
                };
                Ok((key, lines))
            }
        },
        |c, (key, lines)| {
            let mut request = json!({"method": "setWidget", "widgetKey": key});
            // pi prints the placement that was passed: none for `PI_WIDGET_DEFAULT` (a plain
            // `setWidget(key, lines)`) and for a removal, which passes no options.
            if let Some(lines) = lines {
                request["widgetLines"] = json!(lines);
                match placement {
                    PI_WIDGET_BELOW_EDITOR => request["widgetPlacement"] = "belowEditor".into(),
                    PI_WIDGET_ABOVE_EDITOR => request["widgetPlacement"] = "aboveEditor".into(),
                    _ => {}
                }
            }
            fire(c, request)
        },
    )
}

unsafe extern "C" fn set_title(ctx: *mut PiContext, title: PiStr) -> PiStatus {
    checked(
        ctx,
        // SAFETY: a plugin string valid for the call (ABI contract).
        || unsafe { read_str(title) },
        |c, title| fire(c, json!({"method": "setTitle", "title": title})),
    )
}

unsafe extern "C" fn set_editor_text(ctx: *mut PiContext, text: PiStr) -> PiStatus {
    checked(
        ctx,
        // SAFETY: a plugin string valid for the call (ABI contract).
        || unsafe { read_str(text) },
        |c, text| fire(c, json!({"method": "set_editor_text", "text": text})),
    )
}

unsafe extern "C" fn get_editor_text(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |c| {
        let text = ui_of(c).and_then(|ui| ui.editor_text()).unwrap_or_default();
        write_owned_value(out, Some(serde_json::Value::String(text)))
    })
}

unsafe extern "C" fn theme(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| {
        write_owned_value(
            out,
            Some(serde_json::json!({"name": "plain", "colors": {}})),
        )
    })
}

unsafe extern "C" fn set_working_message(ctx: *mut PiContext, message: PiStr) -> PiStatus {
    // SAFETY: a plugin string valid for the call (ABI contract).
    checked(
        ctx,
        || unsafe { read_opt_str(message) }.map(|m| m.map(str::to_owned)),
        |c, message| {
            let ui = ui_of(c);
            if crate::observe::trace::on() {
                let args = json!({"message": message});
                let shown = ui.is_some();
                crate::observe::trace::ui(
                    c.plugin(),
                    "setWorkingMessage",
                    &args,
                    shown,
                    None,
                    None,
                );
            }
            if let Some(ui) = ui {
                ui.set_working_message(message);
            }
            PI_OK
        },
    )
}

/// The host's `PiUiApi`.
pub static UI_API: PiUiApi = PiUiApi {
    struct_size: size_of::<PiUiApi>() as u32,
    reserved: 0,
    select,
    confirm,
    input,
    editor,
    notify,
    set_status,
    set_widget,
    set_title,
    set_editor_text,
    get_editor_text,
    theme,
    set_working_message,
};
