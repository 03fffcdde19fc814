//! Host-owned JSON-like values, read through accessor functions (no JSON library needed).

use std::marker::{PhantomData, PhantomPinned};

use super::status::PiStatus;
use super::strings::PiStr;

/// An opaque, read-only value owned by the host: null, bool, number, string, array or object.
///
/// Two kinds of pointer reach a plugin:
/// - **borrowed**: event payloads, tool parameters, and every value reached from another value
///   through `get`, `at`, `entry` or `pointer`. Valid until the handler returns (or until the
///   owning value is freed); never free them.
/// - **owned**: values a host function hands back through a `PiValue **out` parameter (exec
///   results, dialog answers, session reads, `parse`). Free each exactly once with
///   `values->free`.
///
/// Every accessor accepts NULL and then answers as for an absent value, so lookups can be
/// chained without checks: `v->get(v->get(event, pi_str("input")), pi_str("command"))`.
pub struct PiValue {
    _opaque: [u8; 0],
    _not_send_sync_or_movable: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Kind of a NULL pointer (an absent field).
pub const PI_VALUE_ABSENT: u32 = 0;
/// JSON `null`.
pub const PI_VALUE_NULL: u32 = 1;
/// `true` or `false`.
pub const PI_VALUE_BOOL: u32 = 2;
/// A number (read it with `as_int` or `as_float`).
pub const PI_VALUE_NUMBER: u32 = 3;
/// A string.
pub const PI_VALUE_STRING: u32 = 4;
/// An array.
pub const PI_VALUE_ARRAY: u32 = 5;
/// An object (keys keep their order).
pub const PI_VALUE_OBJECT: u32 = 6;

/// Accessors for `PiValue`. All functions accept NULL values; none of them calls the plugin.
#[repr(C)]
pub struct PiValueApi {
    /// `sizeof(PiValueApi)` in the host.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The kind of `value`: one of `PI_VALUE_*` (`PI_VALUE_ABSENT` for NULL).
    pub kind: unsafe extern "C" fn(value: *const PiValue) -> u32,
    /// The field `key` of an object, borrowed from `value`; NULL when `value` is not an object
    /// or has no such field.
    pub get: unsafe extern "C" fn(value: *const PiValue, key: PiStr) -> *const PiValue,
    /// The value at a JSON Pointer (RFC 6901) such as `"/input/command"` or `"/content/0"`;
    /// `""` is `value` itself. NULL when nothing is there.
    pub pointer: unsafe extern "C" fn(value: *const PiValue, path: PiStr) -> *const PiValue,
    /// The number of elements of an array or of fields of an object; 0 for anything else.
    pub len: unsafe extern "C" fn(value: *const PiValue) -> usize,
    /// Element `index` of an array, borrowed; NULL when out of range or not an array.
    pub at: unsafe extern "C" fn(value: *const PiValue, index: usize) -> *const PiValue,
    /// Field number `index` of an object, borrowed, with its key in `*key_out` (borrowed as
    /// long as the value); NULL when out of range or not an object.
    pub entry: unsafe extern "C" fn(
        value: *const PiValue,
        index: usize,
        key_out: *mut PiStr,
    ) -> *const PiValue,
    /// The string in `value` into `*out` (borrowed as long as the value, NUL-terminated).
    /// `PI_ERR_WRONG_TYPE` when it is not a string.
    pub as_str: unsafe extern "C" fn(value: *const PiValue, out: *mut PiStr) -> PiStatus,
    /// The number in `value` as a 64-bit integer. `PI_ERR_WRONG_TYPE` when it is not a number
    /// or not a whole number in range.
    pub as_int: unsafe extern "C" fn(value: *const PiValue, out: *mut i64) -> PiStatus,
    /// The number in `value` as a double. `PI_ERR_WRONG_TYPE` when it is not a number.
    pub as_float: unsafe extern "C" fn(value: *const PiValue, out: *mut f64) -> PiStatus,
    /// The boolean in `value`. `PI_ERR_WRONG_TYPE` when it is not a boolean.
    pub as_bool: unsafe extern "C" fn(value: *const PiValue, out: *mut bool) -> PiStatus,
    /// The whole value as compact JSON text into `*out` (borrowed as long as the value,
    /// NUL-terminated). A NULL value gives `PI_ERR_INVALID_ARG`.
    pub to_json: unsafe extern "C" fn(value: *const PiValue, out: *mut PiStr) -> PiStatus,
    /// Parses JSON text into a new owned value in `*out` (free it with `free`).
    /// `PI_ERR_INVALID_ARG` when the text is not valid JSON.
    pub parse: unsafe extern "C" fn(json: PiStr, out: *mut *mut PiValue) -> PiStatus,
    /// Frees an owned value (one handed out through a `PiValue **out` parameter). NULL is
    /// ignored. Never pass a borrowed value: the host ignores one (and a second free of the
    /// same value), but a plugin that does so has a bug.
    pub free: unsafe extern "C" fn(value: *mut PiValue),
}
