//! Host-owned JSON-like values, read through accessor functions (no JSON library needed).

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::c_char;

use super::status::PiStatus;
use super::strings::PiStr;

/// An opaque, read-only value owned by the host: null, bool, number, string, array or object.
///
/// Two kinds of pointer reach a plugin:
/// - **borrowed**: event payloads, tool parameters, and every value reached from another value
///   through `get`, `at`, `entry` or `pointer`. Valid until the handler returns (or until the
///   owning value is freed); never free them.
/// - **owned**: values a host function hands back through a `PiValue **out` parameter (exec
///   results, dialog answers, session reads, `parse`), and (ABI 1.2) those `new_*` and `copy`
///   return. Free each exactly once with `values->free`, unless you gave it to `push` or
///   `set`.
///
/// Every accessor accepts NULL and then answers as for an absent value, so lookups can be
/// chained without checks: `v->get(v->get(event, pi_str("input")), pi_str("command"))`.
///
/// Since ABI 1.2 a plugin can also **build** owned values (`new_object`, `new_array`,
/// `new_string`, ..., `copy`) and change them (`push`, `set`); see `PiValueApi`. Only an owned
/// value can be changed: borrowed ones stay read-only.
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
    /// Frees an owned value (one handed out through a `PiValue **out` parameter, or made by
    /// `new_*` or `copy`), with everything in it. NULL is ignored. Never pass a borrowed
    /// value: the host ignores one (and a second free of the same value), but a plugin that
    /// does so has a bug.
    pub free: unsafe extern "C" fn(value: *mut PiValue),

    /// **Added in ABI 1.2**, as every entry below up to `json_quote`. A plugin built against
    /// this header declares its ABI minor and a host older than that refuses to load it, so
    /// they are there whenever its code runs.
    ///
    /// A new, empty owned object (`{}`). Like every `new_*` and `copy`, it returns a new owned
    /// value (free it with `free`, or hand it to `push` or `set`, which take it over), or NULL
    /// when it cannot be made. They nest:
    ///
    /// ```c
    /// PiValue *block = v->new_object();
    /// v->set(block, pi_str("type"), v->new_string(pi_str("text")));
    /// v->set(block, pi_str("text"), v->new_string(pi_str("hello")));
    /// v->push(content, block);   // content, an owned array, now owns block
    /// ```
    ///
    /// A change (`push`, `set`) invalidates what was read from the changed value before: the
    /// pointers `get`, `at`, `entry` and `pointer` gave, and the strings `as_str`, `entry` and
    /// `to_json` gave. Read again after a change. An owned value is not thread-safe: use it
    /// from one thread at a time.
    pub new_object: unsafe extern "C" fn() -> *mut PiValue,
    /// A new, empty owned array (`[]`).
    pub new_array: unsafe extern "C" fn() -> *mut PiValue,
    /// A new owned string holding a copy of `text`; NULL when `text` is not UTF-8 (or its
    /// pointer is NULL with a length). Interior NULs are kept.
    pub new_string: unsafe extern "C" fn(text: PiStr) -> *mut PiValue,
    /// A new owned number holding `value`.
    pub new_int: unsafe extern "C" fn(value: i64) -> *mut PiValue,
    /// A new owned number holding `value`; NaN and the infinities give JSON `null` (as in
    /// JSON, which has no such numbers).
    pub new_float: unsafe extern "C" fn(value: f64) -> *mut PiValue,
    /// A new owned `true` or `false`.
    pub new_bool: unsafe extern "C" fn(value: bool) -> *mut PiValue,
    /// A new owned JSON `null`.
    pub new_null: unsafe extern "C" fn() -> *mut PiValue,
    /// A deep copy of `value` (borrowed or owned; a payload, a field of one, an exec result)
    /// as a new owned value that can then be changed; NULL for NULL. This is how a plugin
    /// edits part of a payload: copy it, change the copy, give the copy to the result.
    pub copy: unsafe extern "C" fn(value: *const PiValue) -> *mut PiValue,
    /// Appends `item` to the owned array `array`, taking `item` over: afterwards `item`
    /// belongs to the array (do not use or free it; read it back with `at`).
    /// - `PI_ERR_INVALID_ARG`: `array` is NULL or not an owned value (a borrowed value, a
    ///   value already given to another `push` or `set`, a freed one, a wild pointer), or
    ///   `item` is NULL, not owned, or `array` itself.
    /// - `PI_ERR_WRONG_TYPE`: `array` is not an array.
    ///
    /// On an error, `array` is unchanged and an owned `item` is freed (unless it is `array`),
    /// so `push(a, new_string(s))` never leaks.
    pub push: unsafe extern "C" fn(array: *mut PiValue, item: *mut PiValue) -> PiStatus,
    /// Sets field `key` of the owned object `object` to `item`, taking `item` over as `push`
    /// does. An existing field keeps its place and gets the new value (the old one is
    /// freed); a new field is added at the end.
    /// - `PI_ERR_INVALID_ARG`: as for `push` (`object` not owned, `item` NULL or not owned or
    ///   `object` itself).
    /// - `PI_ERR_WRONG_TYPE`: `object` is not an object.
    /// - `PI_ERR_UTF8`: `key` is not UTF-8.
    ///
    /// On an error, `object` is unchanged and an owned `item` is freed (unless it is
    /// `object`).
    pub set: unsafe extern "C" fn(object: *mut PiValue, key: PiStr, item: *mut PiValue) -> PiStatus,
    /// Writes `text` as a JSON string literal, quotes included (`he said "hi"` becomes
    /// `"he said \"hi\""`), into `buf` (`cap` bytes), NUL-terminated, when it fits. Returns
    /// the length of the literal without the NUL, whether or not it fitted (as `snprintf`
    /// does: call with `cap` 0 to learn the size, then with `len + 1`); nothing is written
    /// unless the literal and its NUL fit. Returns 0 (a literal is at least 2 bytes) when
    /// `text` is not UTF-8, or `buf` is NULL with a `cap`. Control characters become `\n`,
    /// `\t`, `\u001b`, ...; other characters are kept as UTF-8.
    pub json_quote: unsafe extern "C" fn(text: PiStr, buf: *mut c_char, cap: usize) -> usize,

    /// **Added in ABI 1.3.** Replaces every match of the regular expression `pattern` in the
    /// text of `value` with `replacement`, and returns the result as a new owned value:
    /// - `value` a string: the replaced string;
    /// - `value` an array of content blocks (a `tool_result`'s or a message's `content`): a
    ///   copy in which the string `text` field of every block (the text blocks) is replaced,
    ///   and everything else (image blocks, other fields) is copied unchanged;
    /// - any other value: an unchanged copy.
    ///
    /// `pattern` uses the syntax of Rust's `regex` crate (Perl-like: `\d`, `[A-Z]{16}`,
    /// `(?i)` for case-insensitive, no look-around or back-references); it is compiled once
    /// and cached by the host. In `replacement`, `$1` or `${name}` insert a capture group and
    /// `$$` a literal `$`. `*replaced` (when `replaced` is not NULL) receives the number of
    /// matches replaced, so a handler can leave the result alone when it is 0:
    ///
    /// ```c
    /// size_t n = 0;
    /// PiValue *content = v->replace_text(v->get(event, pi_str("content")),
    ///                                    pi_str("AKIA[0-9A-Z]{16}"), pi_str("[REDACTED]"), &n);
    /// PiStatus status = n ? host->results->set_value(result, pi_str("content"), content) : PI_OK;
    /// v->free(content);
    /// ```
    ///
    /// Returns NULL (and 0 replacements) when `value` is NULL or absent, or when `pattern` or
    /// `replacement` is not UTF-8, or `pattern` is not a valid expression (the host then
    /// prints a warning with the reason on stderr). `free` ignores NULL, so the example
    /// above needs no check: with 0 replacements it sets nothing.
    pub replace_text: unsafe extern "C" fn(
        value: *const PiValue,
        pattern: PiStr,
        replacement: PiStr,
        replaced: *mut usize,
    ) -> *mut PiValue,
}
