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
//! opens the call until the plugin returns, on the thread that runs it; see [`CallSlot`].

use std::os::raw::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use pi_hooks_abi::ffi::{PiContext, PiPlugin, PiResult};

use crate::plugin::state::PluginState;

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
const CONTEXT_BASE: usize = CONTEXT_TAG << TAG_SHIFT;
const RESULT_BASE: usize = RESULT_TAG << TAG_SHIFT;

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

/// A plugin's call lock and its current call, as plugins reach it through their context and
/// result handles.
///
/// `state` holds, in one word: bit 0, the lock (a call is being made, or the plugin is being
/// retired: calls never overlap); bit 1, the stuck mark (the call holding the lock overran
/// its time and was abandoned); bits 32 and up, the generation of the call whose handles are
/// live (0: none). Taking the lock is one compare-and-swap; releasing it, which also retires
/// the call's handles and clears the stuck mark, is one store. A context or result is honoured
/// only on the thread running its call, while that call has not returned: that thread cannot
/// be inside the host function and past the call's end at once, so the call's context and
/// result are alive for as long as the host function runs.
#[derive(Debug, Default)]
pub struct CallSlot {
    state: AtomicU64,
    /// The last generation handed out; written only by the lock holder.
    last_generation: AtomicU32,
    context: AtomicPtr<c_void>,
    result: AtomicPtr<c_void>,
    thread: AtomicUsize,
}

const LOCKED: u64 = 1;
const STUCK: u64 = 2;

/// The call lock of one plugin, held; dropping it releases the lock, retires the handles of
/// the call made under it and clears the stuck mark.
#[must_use = "the plugin's call lock is held only while this lives"]
pub struct CallLock<'a> {
    slot: &'a CallSlot,
}

/// A call opened under a [`CallLock`]: the handles the plugin gets for it.
#[derive(Debug, Clone, Copy)]
pub struct OpenCall {
    /// The `PiContext *` of the call.
    pub context: *mut PiContext,
    /// The `PiResult *` of the call.
    pub result: *mut PiResult,
}

thread_local! {
    static THREAD_TOKEN: u8 = const { 0 };
}

/// An identifier of the current thread that costs one TLS address computation.
#[inline]
fn thread_token() -> usize {
    THREAD_TOKEN.with(|t| t as *const u8 as usize)
}

impl CallSlot {
    /// Takes the lock if it is free.
    #[inline]
    pub fn try_lock(&self) -> Option<CallLock<'_>> {
        self.state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| CallLock { slot: self })
    }

    /// Whether the call holding the lock overran its time and was abandoned.
    pub fn is_stuck(&self) -> bool {
        self.state.load(Ordering::Acquire) & STUCK != 0
    }

    /// Marks the call holding the lock as stuck; nothing when the lock is free (the call
    /// already returned). The holder's release clears the mark.
    pub fn mark_stuck_if_locked(&self) {
        let mut current = self.state.load(Ordering::Acquire);
        while current & LOCKED != 0 {
            match self.state.compare_exchange_weak(
                current,
                current | STUCK,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => current = now,
            }
        }
    }

    /// Whether the call with `generation` is live and runs on this thread.
    #[inline]
    fn live_here(&self, generation: u32) -> bool {
        generation != 0
            && (self.state.load(Ordering::Acquire) >> 32) as u32 == generation
            && self.thread.load(Ordering::Relaxed) == thread_token()
    }
}

impl CallLock<'_> {
    /// Opens a call of the plugin in `slot` whose context and result live at `context` and
    /// `result` until this lock is released; the handles are valid on this thread only.
    #[inline]
    pub fn open(&self, slot: u32, context: *const c_void, result: *mut c_void) -> OpenCall {
        let calls = self.slot;
        let mut generation = calls
            .last_generation
            .load(Ordering::Relaxed)
            .wrapping_add(1)
            & GEN_MASK;
        if generation == 0 {
            generation = 1;
        }
        calls.last_generation.store(generation, Ordering::Relaxed);
        calls.context.store(context.cast_mut(), Ordering::Relaxed);
        calls.result.store(result, Ordering::Relaxed);
        calls.thread.store(thread_token(), Ordering::Relaxed);
        // Published last (Release): whoever sees the generation sees the fields above.
        calls
            .state
            .store((u64::from(generation) << 32) | LOCKED, Ordering::Release);
        let slot_bits = (slot as usize) << GEN_BITS;
        let generation = generation as usize;
        OpenCall {
            context: (CONTEXT_BASE | slot_bits | generation) as *mut PiContext,
            result: (RESULT_BASE | slot_bits | generation) as *mut PiResult,
        }
    }
}

impl Drop for CallLock<'_> {
    #[inline]
    fn drop(&mut self) {
        self.slot.state.store(0, Ordering::Release);
    }
}

/// Runs `f` with the context pointer behind a `PiContext *` token and its plugin, if the call
/// it belongs to is running on this thread; `None` for NULL, a wild pointer, a finished call
/// or another thread.
#[inline]
pub fn with_context<T>(
    token: *mut PiContext,
    f: impl FnOnce(*const c_void, &'static PluginState) -> T,
) -> Option<T> {
    let (slot, generation) = decode(CONTEXT_TAG, token as usize)?;
    let state = state_in(slot)?;
    let calls = state.call_slot();
    if !calls.live_here(generation) {
        return None;
    }
    Some(f(calls.context.load(Ordering::Relaxed), state))
}

/// The result pointer behind a `PiResult *` token, if its call is running on this thread;
/// `None` otherwise.
#[inline]
pub fn result_on_this_thread(token: *mut PiResult) -> Option<*mut c_void> {
    let (slot, generation) = decode(RESULT_TAG, token as usize)?;
    let calls = state_in(slot)?.call_slot();
    calls
        .live_here(generation)
        .then(|| calls.result.load(Ordering::Relaxed))
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
    fn a_released_call_and_another_thread_are_refused() {
        let slot = CallSlot::default();
        let lock = slot.try_lock().unwrap();
        assert!(slot.try_lock().is_none(), "calls never overlap");
        let call = lock.open(0, std::ptr::null(), null_mut());
        let (_, generation) = decode(CONTEXT_TAG, call.context as usize).unwrap();
        assert!(slot.live_here(generation));
        std::thread::scope(|s| {
            s.spawn(|| assert!(!slot.live_here(generation), "another thread"));
        });
        slot.mark_stuck_if_locked();
        assert!(slot.is_stuck());
        drop(lock);
        assert!(!slot.live_here(generation), "released");
        assert!(!slot.is_stuck(), "the release clears the stuck mark");
        slot.mark_stuck_if_locked();
        assert!(!slot.is_stuck(), "nothing to mark when free");
        let next = slot.try_lock().unwrap();
        let again = next.open(0, std::ptr::null(), null_mut());
        assert_ne!(again.context, call.context);
        assert!(!slot.live_here(generation));
    }
}
