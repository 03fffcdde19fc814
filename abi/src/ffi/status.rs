//! Status codes returned by every fallible function on both sides of the boundary.
//!
//! A status is a plain `int32_t`: `PI_OK` (0) means success, anything else is an error. A
//! plugin returning an error from a handler may first describe it with
//! `PiContextApi::set_error`; the host then reports that message.

/// A status code: `PI_OK` or one of the `PI_ERR_*` values.
pub type PiStatus = i32;

/// Success.
pub const PI_OK: PiStatus = 0;
/// A generic failure; the message set with `set_error` says what went wrong.
pub const PI_ERR: PiStatus = 1;
/// An argument was invalid: a NULL pointer where one is required, malformed JSON, an unknown
/// constant, a struct whose `struct_size` is too small.
pub const PI_ERR_INVALID_ARG: PiStatus = 2;
/// The service exists in the ABI but is not available here (for example: in this mode, in this
/// version of the host, or during `init` where only registration is allowed).
pub const PI_ERR_UNAVAILABLE: PiStatus = 3;
/// The value has another type than the accessor asked for (a string read as a number).
pub const PI_ERR_WRONG_TYPE: PiStatus = 4;
/// The named thing does not exist (an unknown timer id, an unregistered flag).
pub const PI_ERR_NOT_FOUND: PiStatus = 5;
/// A string was not valid UTF-8.
pub const PI_ERR_UTF8: PiStatus = 6;
/// Code panicked (Rust) or threw (C++) and the barrier caught it.
pub const PI_ERR_PANIC: PiStatus = 7;
/// A time limit ran out.
pub const PI_ERR_TIMEOUT: PiStatus = 8;
/// The operation was cancelled (the plugin is being unloaded, the user aborted).
pub const PI_ERR_CANCELLED: PiStatus = 9;
/// Already registered: a second command, tool, flag or renderer of the same name from this
/// plugin.
pub const PI_ERR_DUPLICATE: PiStatus = 10;
/// (ABI 1.5) Refused by the plugin's grant: the plugin runs confined (a package's accepted
/// capabilities, or a `sandbox` entry of the user's settings) and the action needs a
/// capability the grant does not hold. Where the action has an out value (`exec`), it
/// receives an owned object `{"error": "<which capability is missing>"}`; the host also
/// reports the refusal, naming the plugin, the action and the grant.
pub const PI_ERR_DENIED: PiStatus = 11;
