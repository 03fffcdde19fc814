//! The abort flag of a run: a running tool, a model request and an `exec` started with
//! `PI_EXEC_CANCEL_ON_ABORT` check it to stop early when the user aborts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A flag the work of a run checks to stop early (the user aborted the run). Clones share
/// the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Whether another clone of it is alive (what watches a token for others stops once
    /// they have all let go of it).
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.0) > 1
    }
}
