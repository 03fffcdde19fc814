//! `PiUiApi`. This host version has no UI binding yet: every mode answers as pi does without
//! a UI (dialogs return their defaults at once, setters do nothing). Arguments are checked
//! first, as a UI would check them, so a plugin's bad call fails the same way in every mode.

use pi_hooks_abi::ffi::*;

use super::context::{give, with_ctx};
use super::{read_name, read_opt_str, read_sized, read_str, read_str_array};

/// Writes `value` to a plugin out-pointer.
fn answer<T>(out: *mut T, value: T) -> PiStatus {
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

/// Runs `answer` once the arguments read as they would with a UI: bad arguments get
/// `PI_ERR_INVALID_ARG` (or `PI_ERR_UTF8`) in every mode, not only where a UI shows them.
fn checked(
    ctx: *mut PiContext,
    read: impl FnOnce() -> Result<(), PiStatus>,
    answer: impl FnOnce() -> PiStatus,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| match read() {
        Ok(()) => answer(),
        Err(status) => status,
    })
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
                read_str(title)?;
                read_str_array(options, count)?;
                read_dialog(dialog)?;
            }
            Ok(())
        },
        || answer(index, -1),
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
        || unsafe {
            read_str(title)?;
            read_str(message)?;
            read_dialog(dialog).map(drop)
        },
        || answer(out, false),
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
            read_str(title)?;
            read_str(placeholder)?;
            read_dialog(dialog).map(drop)
        },
        || give(out, None),
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
        || unsafe {
            read_str(title)?;
            read_str(prefill).map(drop)
        },
        || give(out, None),
    )
}

unsafe extern "C" fn notify(ctx: *mut PiContext, message: PiStr, level: u32) -> PiStatus {
    checked(
        ctx,
        || {
            if !matches!(level, PI_NOTIFY_INFO | PI_NOTIFY_WARNING | PI_NOTIFY_ERROR) {
                return Err(PI_ERR_INVALID_ARG);
            }
            // SAFETY: a plugin string valid for the call (ABI contract).
            unsafe { read_str(message) }.map(drop)
        },
        || PI_OK,
    )
}

unsafe extern "C" fn set_status(ctx: *mut PiContext, key: PiStr, text: PiStr) -> PiStatus {
    checked(
        ctx,
        // SAFETY: plugin strings valid for the call (ABI contract).
        || unsafe {
            read_name(key)?;
            read_opt_str(text).map(drop)
        },
        || PI_OK,
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
            if !matches!(placement, PI_WIDGET_ABOVE_EDITOR | PI_WIDGET_BELOW_EDITOR) {
                return Err(PI_ERR_INVALID_ARG);
            }
            // SAFETY: plugin strings valid for the call (ABI contract).
            unsafe {
                read_name(key)?;
                if !lines.is_null() {
                    read_str_array(lines, count)?;
                }
            }
            Ok(())
        },
        || PI_OK,
    )
}

unsafe extern "C" fn set_title(ctx: *mut PiContext, title: PiStr) -> PiStatus {
    // SAFETY: a plugin string valid for the call (ABI contract).
    checked(ctx, || unsafe { read_str(title) }.map(drop), || PI_OK)
}

unsafe extern "C" fn set_editor_text(ctx: *mut PiContext, text: PiStr) -> PiStatus {
    // SAFETY: a plugin string valid for the call (ABI contract).
    checked(ctx, || unsafe { read_str(text) }.map(drop), || PI_OK)
}

unsafe extern "C" fn get_editor_text(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| {
        give(out, Some(serde_json::Value::String(String::new())))
    })
}

unsafe extern "C" fn theme(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| {
        give(
            out,
            Some(serde_json::json!({"name": "plain", "colors": {}})),
        )
    })
}

unsafe extern "C" fn set_working_message(ctx: *mut PiContext, message: PiStr) -> PiStatus {
    // SAFETY: a plugin string valid for the call (ABI contract).
    checked(ctx, || unsafe { read_opt_str(message) }.map(drop), || PI_OK)
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
