//! The handles the host gives plugins (`PiPlugin *`, `PiContext *`, `PiResult *`) are checked
//! tokens, not addresses of host memory. A wild pointer, a handle kept past its call (a
//! context used in a later event, a result written from a thread after the handler returned)
//! or a handle of another plugin's finished call is recognised and answered with
//! `PI_ERR_INVALID_ARG`; it is never dereferenced.
//!
//! A token is `tag | plugin slot | call generation` in one pointer-sized word. Its top byte is
//! a tag no user-space address has (the pointer is non-canonical on x86-64 and AArch64), so a
//! token can never alias real memory. The slot indexes a table of plugin states; states are
//! never freed, so the table only grows. A call's generation is live from the moment the host
//! opens the call until the plugin returns; see [`CallSlot`].

use std::os::raw::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use pi_hooks_abi::ffi::{PiContext, PiPlugin, PiResult};

use crate::registry::PluginState;

/// How many plugin instances one host process can load in its life (each load and each reload
/// takes a slot; states are never freed).
pub const MAX_PLUGIN_INSTANCES: usize = 1 << 16;

const TAG_BITS: u32 = 8;
const INDEX_BITS: u32 = 16;
const GEN_BITS: u32 = {
    let left = usize::BITS - TAG_BITS - INDEX_BITS;
    if left > 32 { 32 } else { left }
};
const GEN_MASK: u32 = if GEN_BITS == 32 {
    u32::MAX
} else {
    (1 << GEN_BITS) - 1
};
const TAG_SHIFT: u32 = usize::BITS - TAG_BITS;

const PLUGIN_TAG: usize = 0x9e;
const CONTEXT_TAG: usize = 0xc7;
const RESULT_TAG: usize = 0xd3;

static PLUGINS: [AtomicPtr<PluginState>; MAX_PLUGIN_INSTANCES] =
    [const { AtomicPtr::new(null_mut()) }; MAX_PLUGIN_INSTANCES];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

fn encode(tag: usize, slot: u32, generation: u32) -> usize {
    (tag << TAG_SHIFT) | ((slot as usize) << GEN_BITS) | (generation & GEN_MASK) as usize
}

/// `(slot, generation)` of a token with `tag`, or `None` for anything else.
fn decode(tag: usize, token: usize) -> Option<(u32, u32)> {
    if token >> TAG_SHIFT != tag {
        return None;
    }
    let slot = (token >> GEN_BITS) & ((1 << INDEX_BITS) - 1);
    Some((slot as u32, token as u32 & GEN_MASK))
}

/// Takes a slot for a new plugin instance, or says why there is none.
pub fn reserve_slot() -> Result<u32, String> {
    let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    if slot >= MAX_PLUGIN_INSTANCES {
        return Err(format!(
            "this host process has loaded {MAX_PLUGIN_INSTANCES} plugin instances (loads and reloads together), the most it can tell apart; restart it"
        ));
    }
    Ok(slot as u32)
}

/// Makes `state` reachable through its handle. The state must live for the rest of the
/// process (plugin states are never freed).
pub fn publish(slot: u32, state: &'static PluginState) {
    PLUGINS[slot as usize].store((state as *const PluginState).cast_mut(), Ordering::Release);
}

/// The handle of the plugin in `slot`.
pub fn plugin_handle(slot: u32) -> *mut PiPlugin {
    encode(PLUGIN_TAG, slot, 0) as *mut PiPlugin
}

/// The plugin state behind a handle, or `None` for NULL, a wild pointer or a slot that
/// holds no plugin.
pub fn plugin_from_handle(handle: *mut PiPlugin) -> Option<&'static PluginState> {
    let (slot, _) = decode(PLUGIN_TAG, handle as usize)?;
    state_in(slot)
}

fn state_in(slot: u32) -> Option<&'static PluginState> {
    let state = PLUGINS.get(slot as usize)?.load(Ordering::Acquire);
    // SAFETY: only `publish` stores here, with a state that lives for the rest of the process.
    unsafe { state.as_ref() }
}

/// A plugin's current call, as plugins reach it through their context and result handles.
///
/// `state` packs the live generation (high 32 bits, 0 while no call is open) and the number
/// of host functions using the call's context right now (low 32 bits). A context function
/// pins the call (adds one user, only if the generation still matches); closing the call
/// waits until it is no longer pinned and clears the generation in one step. So a context
/// used from a plugin's own thread after its handler returned is refused, and one used while
/// the call closes keeps the context alive until it is done.
#[derive(Debug, Default)]
pub struct CallSlot {
    state: AtomicU64,
    last_generation: AtomicU32,
    context: AtomicPtr<c_void>,
    result: AtomicPtr<c_void>,
    thread: AtomicUsize,
}

/// A call opened on a [`CallSlot`]: the handles the plugin gets for it.
#[derive(Debug, Clone, Copy)]
pub struct OpenCall {
    generation: u32,
    /// The `PiContext *` of the call.
    pub context: *mut PiContext,
    /// The `PiResult *` of the call.
    pub result: *mut PiResult,
}

thread_local! {
    static THREAD_TOKEN: u8 = const { 0 };
}

/// An identifier of the current thread that costs one TLS address computation.
fn thread_token() -> usize {
    THREAD_TOKEN.with(|t| t as *const u8 as usize)
}

impl CallSlot {
    /// Opens a call of the plugin in `slot` whose context and result live at `context` and
    /// `result` until [`CallSlot::close`]. The caller holds the plugin's call lock, so calls
    /// never overlap on one slot.
    #[inline]
    pub fn open(&self, slot: u32, context: *const c_void, result: *mut c_void) -> OpenCall {
        let mut generation =
            self.last_generation.load(Ordering::Relaxed).wrapping_add(1) & GEN_MASK;
        if generation == 0 {
            generation = 1;
        }
        self.last_generation.store(generation, Ordering::Relaxed);
        self.context.store(context.cast_mut(), Ordering::Relaxed);
        self.result.store(result, Ordering::Relaxed);
        self.thread.store(thread_token(), Ordering::Relaxed);
        self.state
            .store(u64::from(generation) << 32, Ordering::Release);
        OpenCall {
            generation,
            context: encode(CONTEXT_TAG, slot, generation) as *mut PiContext,
            result: encode(RESULT_TAG, slot, generation) as *mut PiResult,
        }
    }

    /// Closes `call`: from here on its handles are refused. Waits for host functions that
    /// are still using its context on other threads (they hold it for microseconds).
    #[inline]
    pub fn close(&self, call: OpenCall) {
        let open = u64::from(call.generation) << 32;
        if self
            .state
            .compare_exchange(open, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            self.close_when_unpinned(open);
        }
    }

    #[cold]
    fn close_when_unpinned(&self, open: u64) {
        while self
            .state
            .compare_exchange_weak(open, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
    }

    /// Pins the call with `generation` if it is still open; the context pointer stays valid
    /// while the pin lives.
    fn pin(&self, generation: u32) -> Option<Pin<'_>> {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            if generation == 0 || (current >> 32) as u32 != generation {
                return None;
            }
            match self.state.compare_exchange_weak(
                current,
                current + 1,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(Pin(self)),
                Err(now) => current = now,
            }
        }
    }
}

struct Pin<'a>(&'a CallSlot);

impl Drop for Pin<'_> {
    fn drop(&mut self) {
        self.0.state.fetch_sub(1, Ordering::Release);
    }
}

/// Runs `f` with the context pointer behind a `PiContext *` token and its plugin, if the call
/// it belongs to is still running; `None` for NULL, a wild pointer or a finished call.
pub fn with_context<T>(
    token: *mut PiContext,
    f: impl FnOnce(*const c_void, &'static PluginState) -> T,
) -> Option<T> {
    let (slot, generation) = decode(CONTEXT_TAG, token as usize)?;
    let state = state_in(slot)?;
    let calls = state.call_slot();
    let _pin = calls.pin(generation)?;
    Some(f(calls.context.load(Ordering::Relaxed), state))
}

/// The result pointer behind a `PiResult *` token, if its call is running on this thread (the
/// result setters are single-threaded by the ABI); `None` otherwise.
pub fn result_on_this_thread(token: *mut PiResult) -> Option<*mut c_void> {
    let (slot, generation) = decode(RESULT_TAG, token as usize)?;
    let calls = state_in(slot)?.call_slot();
    let live = (calls.state.load(Ordering::Acquire) >> 32) as u32;
    if generation == 0
        || live != generation
        || calls.thread.load(Ordering::Relaxed) != thread_token()
    {
        return None;
    }
    // The call runs on this thread and has not returned (it closes on this thread after the
    // plugin returns), so the result it points to is alive for as long as this host function
    // runs.
    Some(calls.result.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_refuse_other_tags_and_addresses() {
        let token = encode(CONTEXT_TAG, 7, 42);
        assert_eq!(decode(CONTEXT_TAG, token), Some((7, 42)));
        assert_eq!(decode(RESULT_TAG, token), None);
        let local = 5u8;
        assert_eq!(decode(CONTEXT_TAG, &local as *const u8 as usize), None);
        assert_eq!(decode(PLUGIN_TAG, 0), None);
        assert!(plugin_from_handle(std::ptr::null_mut()).is_none());
        assert!(plugin_from_handle(0x1234 as *mut PiPlugin).is_none());
    }

    #[test]
    fn a_closed_call_refuses_its_pins() {
        let slot = CallSlot::default();
        let call = slot.open(0, std::ptr::null(), null_mut());
        assert!(slot.pin(call.generation).is_some());
        {
            let _held = slot.pin(call.generation).unwrap();
            assert_eq!(slot.state.load(Ordering::Relaxed) & 0xffff_ffff, 1);
        }
        slot.close(call);
        assert!(slot.pin(call.generation).is_none());
        let next = slot.open(0, std::ptr::null(), null_mut());
        assert_ne!(next.generation, call.generation);
        assert!(slot.pin(call.generation).is_none());
        assert!(slot.pin(next.generation).is_some());
    }
}
