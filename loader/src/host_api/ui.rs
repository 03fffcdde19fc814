//! `PiUiApi`. This host version has no UI binding yet: every mode answers as pi does without
//! a UI (dialogs return their defaults at once, setters do nothing).

use pi_hooks_abi::ffi::*;

use super::context::{give, with_ctx};

/// Writes `value` to a plugin out-pointer.
fn answer<T>(out: *mut T, value: T) -> PiStatus {
    if out.is_null() {
        return PI_ERR_INVALID_ARG;
    }
    // SAFETY: `out` is a non-NULL out-pointer from the plugin (ABI contract).
    unsafe { out.write(value) };
    PI_OK
}

unsafe extern "C" fn select(
    ctx: *mut PiContext,
    _title: PiStr,
    _options: *const PiStr,
    _count: usize,
    _dialog: *const PiDialogOptions,
    index: *mut i64,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| answer(index, -1))
}

unsafe extern "C" fn confirm(
    ctx: *mut PiContext,
    _title: PiStr,
    _message: PiStr,
    _dialog: *const PiDialogOptions,
    out: *mut bool,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| answer(out, false))
}

unsafe extern "C" fn input(
    ctx: *mut PiContext,
    _title: PiStr,
    _placeholder: PiStr,
    _dialog: *const PiDialogOptions,
    out: *mut *mut PiValue,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| give(out, None))
}

unsafe extern "C" fn editor(
    ctx: *mut PiContext,
    _title: PiStr,
    _prefill: PiStr,
    out: *mut *mut PiValue,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| give(out, None))
}

unsafe extern "C" fn notify(ctx: *mut PiContext, _message: PiStr, _level: u32) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_OK)
}

unsafe extern "C" fn set_status(ctx: *mut PiContext, _key: PiStr, _text: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_OK)
}

unsafe extern "C" fn set_widget(
    ctx: *mut PiContext,
    _key: PiStr,
    _lines: *const PiStr,
    _count: usize,
    _placement: u32,
) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_OK)
}

unsafe extern "C" fn set_title(ctx: *mut PiContext, _title: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_OK)
}

unsafe extern "C" fn set_editor_text(ctx: *mut PiContext, _text: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_OK)
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

unsafe extern "C" fn set_working_message(ctx: *mut PiContext, _message: PiStr) -> PiStatus {
    with_ctx(ctx, PI_ERR_INVALID_ARG, |_| PI_OK)
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
