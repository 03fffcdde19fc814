//! The host side of the C ABI: the tables in `PiHostApi`, one module per table, mirroring
//! `abi/src/ffi`. Every exported function runs behind [`barrier`], so a panic in the host
//! never unwinds into a plugin.

pub mod actions;
pub mod context;
pub mod registry;
pub mod result;
pub mod ui;
pub mod value;

use std::panic::{AssertUnwindSafe, catch_unwind};

use pi_hooks_abi::ffi::*;

/// Runs a host function body; a panic yields `on_panic` instead of unwinding into the plugin.
pub fn barrier<T>(on_panic: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}

/// Reads a string a plugin passed. `{NULL, 0}` reads as "".
///
/// # Safety
/// `s.ptr` must point to `s.len` readable bytes for the duration of the call, or be NULL.
pub unsafe fn read_str<'a>(s: PiStr) -> Result<&'a str, PiStatus> {
    // SAFETY: forwarded contract.
    let bytes = unsafe { read_bytes(s) }?;
    std::str::from_utf8(bytes).map_err(|_| PI_ERR_UTF8)
}

/// Reads the bytes of a string a plugin passed, without checking that they are UTF-8: for
/// uses where any bytes are harmless, such as a key compared byte-wise against the host's own
/// (always UTF-8) keys, which invalid UTF-8 simply never matches. `{NULL, 0}` reads as empty.
///
/// # Safety
/// As for [`read_str`].
#[inline]
pub unsafe fn read_bytes<'a>(s: PiStr) -> Result<&'a [u8], PiStatus> {
    if s.ptr.is_null() {
        return if s.len == 0 {
            Ok(&[])
        } else {
            Err(PI_ERR_INVALID_ARG)
        };
    }
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    Ok(unsafe { std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len) })
}

/// Reads a required name (an event, command, tool, flag, key, ...): not blank and without NUL
/// (a C author's `"tool_call\0x"` would otherwise register a name no event has).
///
/// # Safety
/// As for [`read_str`].
pub unsafe fn read_name(s: PiStr) -> Result<String, PiStatus> {
    // SAFETY: forwarded contract.
    let name = unsafe { read_str(s) }?;
    if name.trim().is_empty() || name.contains('\0') {
        Err(PI_ERR_INVALID_ARG)
    } else {
        Ok(name.to_owned())
    }
}

/// Reads an optional string: `None` for a NULL pointer (the ABI's "absent").
///
/// # Safety
/// As for [`read_str`].
pub unsafe fn read_opt_str<'a>(s: PiStr) -> Result<Option<&'a str>, PiStatus> {
    if s.ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { read_str(s) }.map(Some)
}

/// Reads an array of `count` plugin strings.
///
/// # Safety
/// `items` must point to `count` valid `PiStr`, each satisfying [`read_str`]'s contract.
pub unsafe fn read_str_array<'a>(
    items: *const PiStr,
    count: usize,
) -> Result<Vec<&'a str>, PiStatus> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if items.is_null() {
        return Err(PI_ERR_INVALID_ARG);
    }
    // SAFETY: the caller guarantees `count` PiStr at `items`.
    let items = unsafe { std::slice::from_raw_parts(items, count) };
    // SAFETY: each element satisfies read_str's contract.
    items.iter().map(|s| unsafe { read_str(*s) }).collect()
}

/// A plugin→host struct for which all-zero bytes are a valid value (integers, raw pointers,
/// `Option`s of function pointers), so a struct from an older minor can be widened with zeros.
///
/// # Safety
/// Implement only for `#[repr(C)]` structs whose every field is valid when zeroed.
pub unsafe trait ZeroValid {}

// SAFETY: integers, PiStr (raw pointer + length), Option<fn>, raw pointers: all zero-valid.
unsafe impl ZeroValid for PiCommandDef {}
// SAFETY: as above.
unsafe impl ZeroValid for PiToolDef {}
// SAFETY: as above.
unsafe impl ZeroValid for PiRendererDef {}
// SAFETY: as above.
unsafe impl ZeroValid for PiFlagDef {}
// SAFETY: as above.
unsafe impl ZeroValid for PiShortcutDef {}
// SAFETY: as above.
unsafe impl ZeroValid for PiExecRequest {}
// SAFETY: as above.
unsafe impl ZeroValid for PiDialogOptions {}

/// Reads a plugin struct that starts with `struct_size`: refuses one smaller than
/// `min_size` (the struct's size at ABI minor 0), copies the bytes the plugin declared (no
/// more than this host knows), and leaves fields the plugin's minor lacks zeroed.
///
/// # Safety
/// `ptr` must be NULL or point to at least `struct_size` readable bytes, as the ABI requires.
pub unsafe fn read_sized<T: ZeroValid>(ptr: *const T, min_size: usize) -> Result<T, PiStatus> {
    if ptr.is_null() {
        return Err(PI_ERR_INVALID_ARG);
    }
    // SAFETY: every ABI struct begins with its u32 size; reading 4 bytes is within any size.
    let declared = unsafe { ptr.cast::<u32>().read_unaligned() } as usize;
    if declared < min_size {
        return Err(PI_ERR_INVALID_ARG);
    }
    let mut out = std::mem::MaybeUninit::<T>::zeroed();
    let len = declared.min(size_of::<T>());
    // SAFETY: the plugin guarantees `declared` readable bytes at `ptr`; `len` is no more than
    // that nor than `T`; the destination is a distinct local.
    unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), out.as_mut_ptr().cast::<u8>(), len) };
    // SAFETY: zeroed bytes are a valid T (ZeroValid), and the copied prefix holds the
    // plugin's values of the same fields.
    Ok(unsafe { out.assume_init() })
}

/// A table pointer in a `static`.
struct Table<T>(T);
// SAFETY: the tables hold only function pointers and pointers to other immutable statics.
unsafe impl<T> Sync for Table<T> {}

static HOST_VERSION: &str = concat!("pi-hooks ", env!("CARGO_PKG_VERSION"), "\0");

static HOST_API: Table<PiHostApi> = Table(PiHostApi {
    struct_size: size_of::<PiHostApi>() as u32,
    abi_major: PI_HOOKS_ABI_MAJOR,
    abi_minor: PI_HOOKS_ABI_MINOR,
    reserved: 0,
    host_version: PiStr {
        ptr: HOST_VERSION.as_ptr().cast(),
        len: HOST_VERSION.len() - 1,
    },
    values: &value::VALUE_API,
    results: &result::RESULT_API,
    registry: &registry::REGISTRY_API,
    actions: &actions::ACTIONS_API,
    context: &context::CONTEXT_API,
    ui: &ui::UI_API,
});

/// The host's root table, handed to every plugin's init.
pub fn host_api() -> *const PiHostApi {
    &HOST_API.0
}
