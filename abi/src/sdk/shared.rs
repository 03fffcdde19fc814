//! State shared by several handlers of one plugin.

use std::sync::{Arc, Mutex, MutexGuard};

/// State that several handlers (closures) of one plugin share: clone it into each closure.
/// The host never calls one plugin concurrently with itself, so the lock is never contended
/// by the host's calls; it is there because closures must be `Send + Sync` and a plugin may
/// start threads of its own.
///
/// ```no_run
/// use pi_hooks_abi::sdk::prelude::*;
///
/// pi_hooks_abi::plugin!(name: "stats", version: "0.1.0", init: init);
///
/// fn init(pi: &mut Registrar) -> Result<()> {
///     let calls = Shared::new(0u64);
///     let seen = calls.clone();
///     pi.on("tool_call", move |_event, _ctx| {
///         seen.with(|n| *n += 1);
///         Ok(())
///     })?;
///     pi.command("stats", "How many tool calls so far", move |_args, ctx| {
///         let n = calls.get();
///         ctx.ui().notify(&format!("{n} tool calls"), Notify::Info)
///     })
/// }
/// ```
#[derive(Debug, Default)]
pub struct Shared<T>(Arc<Mutex<T>>);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Shared<T> {
    /// Shares `value`.
    pub fn new(value: T) -> Self {
        Shared(Arc::new(Mutex::new(value)))
    }

    /// Runs `f` on the state (a handler that panicked while holding it does not poison it for
    /// the others).
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.lock())
    }

    /// The state, locked, for longer work.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Clone> Shared<T> {
    /// A copy of the state.
    pub fn get(&self) -> T {
        self.lock().clone()
    }

    /// Replaces the state.
    pub fn set(&self, value: T) {
        *self.lock() = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_value() {
        let a = Shared::new(1);
        let b = a.clone();
        b.with(|n| *n += 1);
        assert_eq!(a.get(), 2);
        a.set(5);
        assert_eq!(b.get(), 5);
    }
}
