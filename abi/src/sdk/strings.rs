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
