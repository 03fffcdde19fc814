//! Conversions between Rust strings and `PiStr`.

use crate::ffi::PiStr;

/// Borrows a Rust string as a `PiStr` (valid as long as `s`).
pub(crate) fn pi_str(s: &str) -> PiStr {
    PiStr {
        ptr: s.as_ptr().cast(),
        len: s.len(),
    }
}

/// A `PiStr` meaning "absent" (NULL pointer).
pub(crate) const ABSENT: PiStr = PiStr {
    ptr: std::ptr::null(),
    len: 0,
};

/// Reads a host string. Invalid UTF-8 (which the host never produces) reads as "".
///
/// # Safety
/// `s` must point to `len` readable bytes that outlive `'a`, or be NULL.
pub(crate) unsafe fn from_pi_str<'a>(s: PiStr) -> &'a str {
    if s.ptr.is_null() || s.len == 0 {
        return "";
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr` for `'a`.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) };
    std::str::from_utf8(bytes).unwrap_or("")
}

/// Reads a string the host's value accessors handed out (`as_str`, `entry` keys, `to_json`),
/// without checking UTF-8 again in release builds: the ABI promises that every string the
/// host hands out is UTF-8 (`PiStr` in `abi/src/ffi/strings.rs`), and the host builds every
/// value's strings from Rust `str`s (keys and strings of a `PiValue` are never raw bytes), so
/// the check could only repeat the host's. Debug builds still check, and panic when the host
/// broke that promise.
///
/// # Safety
/// `s` must be NULL or point to `len` readable bytes of UTF-8 that outlive `'a`, as the host
/// guarantees for the strings of a value (they live as long as the value).
pub(crate) unsafe fn from_host_str<'a>(s: PiStr) -> &'a str {
    if s.ptr.is_null() || s.len == 0 {
        return "";
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr` for `'a`.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) };
    debug_assert!(
        std::str::from_utf8(bytes).is_ok(),
        "the host handed out a string that is not UTF-8"
    );
    // SAFETY: the bytes are UTF-8 by the caller's contract (the ABI's promise for host
    // strings, kept by the host, which builds them from Rust strings).
    unsafe { std::str::from_utf8_unchecked(bytes) }
}
