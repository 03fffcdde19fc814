//! Strings cross the boundary as pointer + length.

use std::os::raw::c_char;

/// A borrowed UTF-8 string: `len` bytes at `ptr`.
///
/// - `ptr` may be NULL only when `len` is 0. Where a function documents that a NULL `ptr`
///   means "absent" (for example "clear this status"), `{NULL, 0}` and `{"", 0}` differ.
/// - Strings the **host** hands out are also NUL-terminated (`ptr[len] == 0`), so C code may
///   pass `ptr` to `printf("%s")`; they may still contain interior NULs if the data does.
/// - Strings a **plugin** hands the host need no terminator; the host copies them before the
///   call returns, so the plugin may free or reuse the memory right after.
/// - The host checks UTF-8 and answers `PI_ERR_UTF8` when it is not.
///
/// In C, `pi_str("text")` builds one from a NUL-terminated string and `PI_STR_LIT("text")`
/// initialises one from a literal in a static initialiser.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PiStr {
    /// First byte, or NULL when `len` is 0.
    pub ptr: *const c_char,
    /// Length in bytes, without any terminating NUL.
    pub len: usize,
}
