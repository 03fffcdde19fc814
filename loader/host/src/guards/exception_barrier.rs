//! Calls into plugin code through the C++ exception barrier (`loader/host/cxx/exception_barrier.cpp`,
//! built by `loader/host/build.rs`). An exception a C++ plugin lets escape is caught at the
//! boundary and comes back as `Err(description)`, which the caller reports as that call's
//! error with the plugin's name; without the barrier it would unwind into the host, which
//! cannot unwind through C frames, and the process would abort. A call that returns normally
//! costs one extra direct call.

use std::ffi::{CStr, c_char, c_void};
use std::mem::MaybeUninit;

use pi_hooks_abi::ffi::*;

/// What the barrier returns when the plugin threw.
const THREW: PiStatus = i32::MIN;
/// Room for the exception's `what()` text.
const WHAT_CAP: usize = 256;

// The ABI's opaque types (PiValue, PiContext, PiResult, PiPlugin) only ever cross as pointers,
// which is what the C side declares too.
#[allow(improper_ctypes)]
unsafe extern "C" {
    fn pi_hooks_barrier_event(
        f: PiEventHandler,
        user_data: *mut c_void,
        event: *const PiValue,
        ctx: *mut PiContext,
        result: *mut PiResult,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_command(
        f: PiCommandHandler,
        user_data: *mut c_void,
        args: PiStr,
        ctx: *mut PiContext,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_shortcut(
        f: PiShortcutHandler,
        user_data: *mut c_void,
        ctx: *mut PiContext,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_tool(
        f: PiToolExecute,
        user_data: *mut c_void,
        tool_call_id: PiStr,
        params: *const PiValue,
        ctx: *mut PiContext,
        result: *mut PiResult,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_render(
        f: PiRenderHandler,
        user_data: *mut c_void,
        message: *const PiValue,
        options: *const PiValue,
        result: *mut PiResult,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_complete(
        f: PiCompletionHandler,
        user_data: *mut c_void,
        prefix: PiStr,
        result: *mut PiResult,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_bus(
        f: PiBusHandler,
        user_data: *mut c_void,
        channel: PiStr,
        data: *const PiValue,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_timer(
        f: PiTimerFn,
        user_data: *mut c_void,
        timer_id: u64,
        ctx: *mut PiContext,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_init(
        f: PiInitFn,
        host: *const PiHostApi,
        plugin: *mut PiPlugin,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_shutdown(
        f: PiShutdownFn,
        plugin: *mut PiPlugin,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_cleanup(
        f: PiCleanupFn,
        data: *mut c_void,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
    fn pi_hooks_barrier_entry(
        f: PiEntryFn,
        out: *mut *const PiPluginDescriptor,
        what: *mut c_char,
        cap: usize,
    ) -> PiStatus;
}

/// Where the barrier writes the `what()` text of an exception, and how to read it back.
pub struct Thrown(MaybeUninit<[c_char; WHAT_CAP]>);

impl Thrown {
    /// An empty buffer (nothing written until an exception is caught).
    #[inline(always)]
    pub fn new() -> Self {
        Thrown(MaybeUninit::uninit())
    }

    #[inline(always)]
    fn as_ptr(&mut self) -> *mut c_char {
        self.0.as_mut_ptr().cast()
    }

    /// `Err(text)` when `status` says the plugin threw, else `Ok(status)`.
    #[inline(always)]
    pub fn check(&self, status: PiStatus) -> Result<PiStatus, String> {
        if status == THREW {
            return Err(self.text());
        }
        Ok(status)
    }

    #[cold]
    fn text(&self) -> String {
        // SAFETY: the barrier wrote a NUL-terminated text of at most WHAT_CAP bytes before
        // returning THREW, which is the only case this is called in.
        let text = unsafe { CStr::from_ptr(self.0.as_ptr().cast()) };
        text.to_string_lossy().into_owned()
    }
}

impl Default for Thrown {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs `call` with a buffer for the exception text; `Err(text)` when the plugin threw.
#[inline(always)]
fn caught(call: impl FnOnce(*mut c_char, usize) -> PiStatus) -> Result<PiStatus, String> {
    let mut thrown = Thrown::new();
    let status = call(thrown.as_ptr(), WHAT_CAP);
    thrown.check(status)
}

/// Calls an event handler; a status that `thrown.check` turns into `Err` when it threw, with the
/// text in `thrown`. This is the hot path: no `Result` is built here.
///
/// # Safety
/// The plugin's contract for `f`: registered by a loaded plugin with `user_data`; the other
/// arguments are valid for the call.
#[inline(always)]
pub unsafe fn event(
    f: PiEventHandler,
    user_data: *mut c_void,
    event: *const PiValue,
    ctx: *mut PiContext,
    result: *mut PiResult,
    thrown: &mut Thrown,
) -> PiStatus {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    unsafe { pi_hooks_barrier_event(f, user_data, event, ctx, result, thrown.as_ptr(), WHAT_CAP) }
}

/// Calls a command handler.
///
/// # Safety
/// As for [`event`].
#[inline]
pub unsafe fn command(
    f: PiCommandHandler,
    user_data: *mut c_void,
    args: PiStr,
    ctx: *mut PiContext,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_command(f, user_data, args, ctx, what, cap) })
}

/// Calls a keyboard shortcut's handler.
///
/// # Safety
/// As for [`event`].
#[inline]
pub unsafe fn shortcut(
    f: PiShortcutHandler,
    user_data: *mut c_void,
    ctx: *mut PiContext,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_shortcut(f, user_data, ctx, what, cap) })
}

/// Calls a tool's execute.
///
/// # Safety
/// As for [`event`].
#[inline]
pub unsafe fn tool(
    f: PiToolExecute,
    user_data: *mut c_void,
    tool_call_id: PiStr,
    params: *const PiValue,
    ctx: *mut PiContext,
    result: *mut PiResult,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe {
        pi_hooks_barrier_tool(f, user_data, tool_call_id, params, ctx, result, what, cap)
    })
}

/// Calls a message renderer.
///
/// # Safety
/// As for [`event`]: `f` and `user_data` were registered together by a loaded plugin.
#[inline]
pub unsafe fn render(
    f: PiRenderHandler,
    user_data: *mut c_void,
    message: *const PiValue,
    options: *const PiValue,
    result: *mut PiResult,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe {
        pi_hooks_barrier_render(f, user_data, message, options, result, what, cap)
    })
}

/// Calls a command's argument completions.
///
/// # Safety
/// As for [`event`]: `f` and `user_data` were registered together by a loaded plugin.
#[inline]
pub unsafe fn complete(
    f: PiCompletionHandler,
    user_data: *mut c_void,
    prefix: PiStr,
    result: *mut PiResult,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe {
        pi_hooks_barrier_complete(f, user_data, prefix, result, what, cap)
    })
}

/// Calls a handler the plugin subscribed to the event bus (`events_on`).
///
/// # Safety
/// As for [`event`].
#[inline]
pub unsafe fn bus(
    f: PiBusHandler,
    user_data: *mut c_void,
    channel: PiStr,
    data: *const PiValue,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_bus(f, user_data, channel, data, what, cap) })
}

/// Calls a timer callback.
///
/// # Safety
/// As for [`event`]: `f` and `user_data` were given together to `timer_start` by a loaded
/// plugin; `ctx` is valid for the call.
#[inline]
pub unsafe fn timer(
    f: PiTimerFn,
    user_data: *mut c_void,
    timer_id: u64,
    ctx: *mut PiContext,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_timer(f, user_data, timer_id, ctx, what, cap) })
}

/// Calls a plugin's init.
///
/// # Safety
/// `f` is the init of an accepted descriptor; `host` and `plugin` are the host's.
pub unsafe fn init(
    f: PiInitFn,
    host: *const PiHostApi,
    plugin: *mut PiPlugin,
) -> Result<PiStatus, String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_init(f, host, plugin, what, cap) })
}

/// Calls a plugin's shutdown.
///
/// # Safety
/// `f` is the shutdown of a loaded plugin, called once, with its handle.
pub unsafe fn shutdown(f: PiShutdownFn, plugin: *mut PiPlugin) -> Result<(), String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_shutdown(f, plugin, what, cap) }).map(drop)
}

/// Calls a cleanup the plugin registered.
///
/// # Safety
/// `f` and `data` were registered together by the plugin; called once.
pub unsafe fn cleanup(f: PiCleanupFn, data: *mut c_void) -> Result<(), String> {
    // SAFETY: forwarded contract; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_cleanup(f, data, what, cap) }).map(drop)
}

/// Calls a library's entry function; the descriptor pointer it returned.
///
/// # Safety
/// `f` is the library's entry symbol, of type `PiEntryFn` by the contract of its name.
pub unsafe fn entry(f: PiEntryFn) -> Result<*const PiPluginDescriptor, String> {
    let mut out = std::ptr::null();
    // SAFETY: forwarded contract; `out` is writable; the buffer is WHAT_CAP bytes.
    caught(|what, cap| unsafe { pi_hooks_barrier_entry(f, &mut out, what, cap) })?;
    Ok(out)
}
