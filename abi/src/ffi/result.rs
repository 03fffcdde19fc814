//! Building the result of a handler, a command, a tool or a renderer.

use std::marker::{PhantomData, PhantomPinned};

use super::status::PiStatus;
use super::strings::PiStr;
use super::value::PiValue;

/// An opaque result under construction, owned by the host and valid until the call returns.
/// Unlike the other host functions, the setters are not thread-safe: use a result only from
/// the thread that runs the handler it was given to. A result used from another thread, after
/// its call returned, or one the host never handed out answers `PI_ERR_INVALID_ARG`.
///
/// It starts out as "no result" (the handler returned nothing). Either give it a whole JSON
/// document with `set_json`, or set fields one by one, which makes it an object. For example a
/// `tool_call` handler blocks a tool with
/// `set_bool(r, pi_str("block"), true); set_string(r, pi_str("reason"), pi_str("why"));`.
pub struct PiResult {
    _opaque: [u8; 0],
    _not_send_sync_or_movable: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Setters for `PiResult`. Each copies what it is given. Each returns `PI_ERR_INVALID_ARG` for a
/// NULL result and `PI_ERR_UTF8` for text that is not UTF-8; a field setter on a result that
/// was set to a non-object JSON document answers `PI_ERR_WRONG_TYPE`.
#[repr(C)]
pub struct PiResultApi {
    /// `sizeof(PiResultApi)` in the host.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Replaces the whole result with a JSON document, which may be any JSON value (a plain
    /// string is the alternative result form some events accept). `PI_ERR_INVALID_ARG` when
    /// the text is not valid JSON; the result is then unchanged.
    pub set_json: unsafe extern "C" fn(result: *mut PiResult, json: PiStr) -> PiStatus,
    /// Sets field `key` to a string.
    pub set_string:
        unsafe extern "C" fn(result: *mut PiResult, key: PiStr, value: PiStr) -> PiStatus,
    /// Sets field `key` to a boolean.
    pub set_bool: unsafe extern "C" fn(result: *mut PiResult, key: PiStr, value: bool) -> PiStatus,
    /// Sets field `key` to an integer.
    pub set_int: unsafe extern "C" fn(result: *mut PiResult, key: PiStr, value: i64) -> PiStatus,
    /// Sets field `key` to a double (NaN and infinities become null, as in JSON).
    pub set_float: unsafe extern "C" fn(result: *mut PiResult, key: PiStr, value: f64) -> PiStatus,
    /// Sets field `key` to a deep copy of `value` (a borrowed or owned value; NULL sets null).
    pub set_value:
        unsafe extern "C" fn(result: *mut PiResult, key: PiStr, value: *const PiValue) -> PiStatus,
    /// Sets field `key` to the value parsed from JSON text. `PI_ERR_INVALID_ARG` when the
    /// text is not valid JSON.
    pub set_field_json:
        unsafe extern "C" fn(result: *mut PiResult, key: PiStr, json: PiStr) -> PiStatus,
    /// Appends `{"type":"text","text":text}` to the array field `content`, creating it when
    /// missing: the usual way to give a tool result or a message its text.
    pub add_text: unsafe extern "C" fn(result: *mut PiResult, text: PiStr) -> PiStatus,

    // ---- ABI 1.2
    /// Replaces the whole result with a deep copy of `value` (borrowed or owned; the caller
    /// keeps it and frees an owned one as usual): the value form of `set_json`, for example
    /// a string built with `values->new_string` as an `input` handler's plain-string result.
    /// A NULL `value` makes the result JSON `null`. `set_value` sets one field the same way.
    pub set_from_value:
        unsafe extern "C" fn(result: *mut PiResult, value: *const PiValue) -> PiStatus,
}
