//! pi's automatic retry of a run that failed with a transient model error
//! (`AgentSession._handleRetryableError` in pi 0.73.1): a rate limit, an overloaded or
//! unreachable server, a dropped connection. After such a run ends, the failed answer leaves
//! the agent's context (the session keeps it), `auto_retry_start {attempt, maxAttempts,
//! delayMs, errorMessage}` is emitted, the host waits `baseDelayMs * 2^(attempt - 1)` (an
//! abort or RPC `abort_retry` cancels the wait: `auto_retry_end {success: false, attempt,
//! finalError: "Retry cancelled"}`) and runs again from the same context. The next answer
//! that is not an error emits `auto_retry_end {success: true, attempt}`; a run still failing
//! after `maxRetries` emits `auto_retry_end {success: false, attempt, finalError}`.
//!
//! pi sends these events to its session listeners (the RPC and JSON streams, the terminal)
//! but not to extensions; this host also hands them to plugins that subscribe to them, as
//! oh-my-pi does. A context overflow is not retried here: compaction answers it.

use std::sync::LazyLock;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Agent, Core, Shared};
use pi_hooks_host::services::CancelToken;

impl Agent {
    /// After a run: retries it when its last answer failed with a transient error and retry
    /// is on. Returns whether it was retried (the retry's own run has then ended too).
    pub(super) fn check_retry(&mut self) -> bool {
        let core = &self.core;
        let last = Shared::lock(&core.shared.messages)
            .iter()
            .rev()
            .find(|m| m["role"] == "assistant")
            .cloned();
        let Some(last) = last else { return false };
        if !is_retryable(&last) {
            return false;
        }
        let shared = &core.shared;
        if !shared.auto_retry.load(Ordering::Acquire) {
            return false;
        }
        let settings = core.config.retry;
        let attempt = shared.retry_attempt.fetch_add(1, Ordering::AcqRel) + 1;
        let error = last["errorMessage"]
            .as_str()
            .unwrap_or("Unknown error")
            .to_owned();
        if attempt > settings.max_retries {
            shared.retry_attempt.store(0, Ordering::Release);
            core.emit(
                json!({"type": "auto_retry_end", "success": false, "attempt": attempt - 1, "finalError": error}),
            );
            return false;
        }
        let delay_ms = settings
            .base_delay_ms
            .saturating_mul(1u64 << (attempt - 1).min(32));
        // A new wait: an abort from before it does not cancel it.
        let cancel = CancelToken::new();
        *Shared::lock(&shared.retry_cancel) = cancel.clone();
        core.emit(json!({
            "type": "auto_retry_start",
            "attempt": attempt,
            "maxAttempts": settings.max_retries,
            "delayMs": delay_ms,
            "errorMessage": error,
        }));
        // The failed answer leaves the context the retry is sent with; the session keeps it.
        {
            let mut messages = Shared::lock(&shared.messages);
            if messages.last().is_some_and(|m| m["role"] == "assistant") {
                messages.pop();
            }
        }
        if !wait(&cancel, Duration::from_millis(delay_ms)) {
            shared.retry_attempt.store(0, Ordering::Release);
            core.emit(
                json!({"type": "auto_retry_end", "success": false, "attempt": attempt, "finalError": "Retry cancelled"}),
            );
            return false;
        }
        let system_prompt = core.config.system_prompt.clone();
        self.run(Vec::new(), system_prompt, "");
        true
    }
}

/// pi 1.6's `agent_end.willRetry` (`_willRetryAfterAgentEnd`): the run was not aborted,
/// retry is on with attempts left, and the run's last assistant answer is a transient error
/// that [`Agent::check_retry`] will retry.
pub(super) fn will_retry(core: &Core, run_messages: &[Value], abort: &CancelToken) -> bool {
    if abort.is_cancelled() || !core.shared.auto_retry.load(Ordering::Acquire) {
        return false;
    }
    if core.shared.retry_attempt.load(Ordering::Acquire) >= core.config.retry.max_retries {
        return false;
    }
    run_messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .is_some_and(is_retryable)
}

/// An answer that is not an error ended a retry in progress: `auto_retry_end {success: true}`.
pub(super) fn note_success(core: &Core) {
    let attempt = core.shared.retry_attempt.swap(0, Ordering::AcqRel);
    if attempt > 0 {
        core.emit(json!({"type": "auto_retry_end", "success": true, "attempt": attempt}));
    }
}

/// Waits `delay` unless `cancel` is cancelled first; returns whether the wait ran out.
fn wait(cancel: &CancelToken, delay: Duration) -> bool {
    let end = Instant::now() + delay;
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// pi's `_isRetryableError`: an answer that ended in an error whose message names a
/// transient failure, and is not a context overflow (compaction answers that).
fn is_retryable(message: &Value) -> bool {
    static TRANSIENT: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay",
        )
        .expect("the retry pattern compiles")
    });
    if message["stopReason"] != "error" {
        return false;
    }
    let Some(error) = message["errorMessage"].as_str().filter(|e| !e.is_empty()) else {
        return false;
    };
    !crate::compaction::is_context_overflow(message) && TRANSIENT.is_match(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors_are_retried_and_others_not() {
        let error =
            |text: &str| json!({"role": "assistant", "stopReason": "error", "errorMessage": text});
        assert!(is_retryable(&error("503 Service Unavailable")));
        assert!(is_retryable(&error("Rate limit reached, try again")));
        assert!(is_retryable(&error("connection refused")));
        assert!(!is_retryable(&error("401 invalid api key")));
        assert!(!is_retryable(&error("prompt is too long: 250000 tokens")));
        assert!(!is_retryable(
            &json!({"role": "assistant", "stopReason": "stop", "errorMessage": "503"})
        ));
        let cancel = CancelToken::new();
        cancel.cancel();
        assert!(!wait(&cancel, Duration::from_secs(10)));
        assert!(wait(&CancelToken::new(), Duration::from_millis(1)));
    }
}
