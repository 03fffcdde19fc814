//! Compaction, as pi 0.73.1 runs it: manual (`/compact`, RPC `compact`, a plugin's
//! `compact`) and automatic after a run: when the provider refused the request because the
//! context is too long (pi's "overflow" case: the failed answer leaves the context, the
//! session is compacted and the run retried, once per prompt), or when the context nears the
//! model's context window (the "threshold" case).
//!
//! The branch is prepared (`session/compaction.rs`), `session_before_compact {preparation,
//! branchEntries, customInstructions?, signal}` may cancel it or give the compaction, the
//! model summarizes otherwise, a `compaction` entry is appended, the agent's messages are
//! rebuilt from the branch, and plugins get `session_compact {compactionEntry,
//! fromExtension}`. The mode sees `compaction_start {reason}` and `compaction_end {reason,
//! result, aborted, willRetry, errorMessage?}`; for an automatic one plugins also get
//! oh-my-pi's `auto_compaction_start {reason}` and `auto_compaction_end` (the same fields).

use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};

use super::{Agent, Shared};
use pi_hooks_host::runner::truthy;
use pi_hooks_session::compaction::{
    CompactionResult, estimate_context_tokens, prepare_compaction, should_compact,
};

/// Why a compaction did not happen.
enum Stop {
    /// A plugin cancelled it.
    Cancelled,
    /// It failed, with pi's message.
    Failed(String),
}

impl Agent {
    /// Compacts the context now (pi's `compact`): the result `{summary, firstKeptEntryId,
    /// tokensBefore, details}`, or pi's error ("Nothing to compact (session too small)",
    /// "Already compacted", "Compaction cancelled"). Refused while a run is in progress.
    pub fn compact(&mut self, custom_instructions: Option<&str>) -> Result<Value, String> {
        let outcome = self.compact_now(custom_instructions, "manual");
        self.drain_runs();
        outcome
    }

    /// One compaction with its mode events; `reason` is "manual" or "threshold".
    pub(super) fn compact_now(
        &mut self,
        custom_instructions: Option<&str>,
        reason: &str,
    ) -> Result<Value, String> {
        self.compact_then(custom_instructions, reason, false)
    }

    /// [`Agent::compact_now`]; `will_retry`: a run follows a successful compaction (the
    /// "overflow" case), which `compaction_end` says with `willRetry: true`.
    fn compact_then(
        &mut self,
        custom_instructions: Option<&str>,
        reason: &str,
        will_retry: bool,
    ) -> Result<Value, String> {
        if self.core.shared.is_streaming() {
            return Err("cannot compact while the agent is running; abort the run first".into());
        }
        let shared = self.core.shared.clone();
        shared.sink(&json!({"type": "compaction_start", "reason": reason}));
        // oh-my-pi's events for a compaction the host starts by itself.
        let automatic = reason != "manual";
        if automatic && self.core.runner.has_handlers("auto_compaction_start") {
            self.core
                .runner
                .emit(json!({"type": "auto_compaction_start", "reason": reason}));
        }
        shared.compacting.store(true, Ordering::Release);
        let outcome = self.run_compaction(custom_instructions, reason, will_retry);
        shared.compacting.store(false, Ordering::Release);
        let mut end = Map::new();
        end.insert("type".into(), "compaction_end".into());
        end.insert("reason".into(), reason.into());
        let answer = match outcome {
            Ok(result) => {
                end.insert("result".into(), result.clone());
                end.insert("aborted".into(), false.into());
                Ok(result)
            }
            Err(Stop::Cancelled) => {
                end.insert("aborted".into(), true.into());
                Err("Compaction cancelled".to_owned())
            }
            Err(Stop::Failed(message)) => {
                end.insert("aborted".into(), false.into());
                let shown = match reason {
                    "manual" => message.clone(),
                    _ => format!("Auto-compaction failed: {message}"),
                };
                end.insert("errorMessage".into(), shown.into());
                Err(message)
            }
        };
        end.insert("willRetry".into(), (will_retry && answer.is_ok()).into());
        // pi 1.6 (0.84.3): a failed or cancelled compaction is `session_compact_failed`.
        if answer.is_err() && self.core.runner.has_handlers("session_compact_failed") {
            let mut event = json!({
                "type": "session_compact_failed",
                "reason": reason,
                "aborted": end["aborted"],
                "willRetry": will_retry,
                "fromExtension": false,
            });
            if let Some(message) = end.get("errorMessage") {
                event["errorMessage"] = message.clone();
            }
            self.core.runner.emit(event);
        }
        if automatic && self.core.runner.has_handlers("auto_compaction_end") {
            let mut event = end.clone();
            event.insert("type".into(), "auto_compaction_end".into());
            self.core.runner.emit(Value::Object(event));
        }
        shared.sink(&Value::Object(end));
        answer
    }

    /// The compaction itself; `reason` and `will_retry` go into `session_before_compact`
    /// and `session_compact` (pi 0.79.10's fields).
    fn run_compaction(
        &mut self,
        custom_instructions: Option<&str>,
        reason: &str,
        will_retry: bool,
    ) -> Result<Value, Stop> {
        let core = &self.core;
        let branch = Shared::lock(&core.shared.session).branch();
        let preparation = prepare_compaction(&branch, &core.config.compaction)
            .map_err(|why| Stop::Failed(why.to_string()))?;
        let mut from_plugin: Option<Value> = None;
        if core.runner.has_handlers("session_before_compact") {
            let mut event = json!({
                "type": "session_before_compact",
                "preparation": preparation.to_event_json(),
                "branchEntries": branch,
                "signal": {"aborted": false},
                "reason": reason,
                "willRetry": will_retry,
            });
            if let Some(instructions) = custom_instructions {
                event["customInstructions"] = instructions.into();
            }
            let result = core.runner.emit_session_before(event);
            if result
                .as_ref()
                .and_then(|r| r.get("cancel"))
                .is_some_and(truthy)
            {
                return Err(Stop::Cancelled);
            }
            from_plugin = result
                .and_then(|mut r| r.get_mut("compaction").map(Value::take))
                .filter(truthy);
        }
        let (summary, first_kept, tokens_before, details, from_extension) = match from_plugin {
            Some(compaction) => (
                // A plugin's compaction; what it leaves out comes from the preparation (the
                // plain-string form of pi's older hook API gives only a summary).
                compaction["summary"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                compaction["firstKeptEntryId"]
                    .as_str()
                    .map_or_else(|| preparation.first_kept_entry_id.clone(), str::to_owned),
                compaction["tokensBefore"]
                    .as_u64()
                    .unwrap_or(preparation.tokens_before),
                compaction.get("details").cloned().filter(|d| !d.is_null()),
                true,
            ),
            None => {
                let mut requests = preparation.requests(custom_instructions);
                let preserved = compacting_hook(core, &preparation, &mut requests);
                let mut ask = |request: Option<&pi_hooks_session::summarize::SummaryRequest>| {
                    request
                        .map(|r| {
                            self.model
                                .summarize(&r.system_prompt, &r.prompt, r.max_tokens)
                        })
                        .transpose()
                };
                let history = ask(requests.history.as_ref()).map_err(Stop::Failed)?;
                let prefix = ask(requests.turn_prefix.as_ref()).map_err(Stop::Failed)?;
                let CompactionResult {
                    summary,
                    first_kept_entry_id,
                    tokens_before,
                    details,
                } = preparation.finish(history.as_deref(), prefix.as_deref());
                let mut details = details.to_details();
                if let Some(data) = preserved {
                    details["preserveData"] = data;
                }
                (
                    summary,
                    first_kept_entry_id,
                    tokens_before,
                    Some(details),
                    false,
                )
            }
        };
        let core = &self.core;
        let entry = {
            let mut session = Shared::lock(&core.shared.session);
            let id = session
                .append_compaction(
                    &summary,
                    &first_kept,
                    tokens_before,
                    details.clone(),
                    Some(from_extension),
                )
                .map_err(|e| Stop::Failed(e.to_string()))?;
            let entry = session.entry(&id).cloned().unwrap_or(Value::Null);
            *Shared::lock(&core.shared.messages) = session.context_messages();
            entry
        };
        core.runner.emit(json!({
            "type": "session_compact",
            "compactionEntry": entry,
            "fromExtension": from_extension,
            "reason": reason,
            "willRetry": will_retry,
        }));
        let mut result = json!({
            "summary": summary,
            "firstKeptEntryId": first_kept,
            "tokensBefore": tokens_before,
        });
        if let Some(details) = details {
            result["details"] = details;
        }
        Ok(result)
    }

    /// After a run: compacts when the context passed the threshold (pi's `_checkCompaction`,
    /// "threshold" case): automatic compaction on, the last assistant message neither
    /// aborted nor older than the branch's last compaction, and its context tokens past
    /// `contextWindow - reserveTokens`.
    pub(super) fn check_compaction(&mut self) {
        let core = &self.core;
        if !core.shared.auto_compaction.load(Ordering::Acquire) || !core.config.compaction.enabled {
            return;
        }
        let messages = Shared::lock(&core.shared.messages).clone();
        let Some(last) = messages.iter().rev().find(|m| m["role"] == "assistant") else {
            return;
        };
        if last["stopReason"] == "aborted" {
            return;
        }
        let compacted_after = {
            let session = Shared::lock(&core.shared.session);
            let branch = session.branch();
            branch
                .iter()
                .rev()
                .find(|e| e["type"] == "compaction")
                .and_then(|e| e["timestamp"].as_str())
                .and_then(pi_hooks_session::timestamp::parse_iso_millis)
        };
        let sent = last["timestamp"].as_i64().unwrap_or(0);
        if compacted_after.is_some_and(|at| sent <= at) {
            return;
        }
        let model = core.shared.model_info();
        let same_model = last["provider"] == model["provider"] && last["model"] == model["id"];
        if same_model && is_context_overflow(last) {
            self.recover_from_overflow();
            return;
        }
        let tokens = if last["stopReason"] == "error" {
            estimate_context_tokens(&messages).tokens
        } else {
            pi_hooks_session::compaction::calculate_context_tokens(&last["usage"])
        };
        let window = core.shared.model_info()["contextWindow"]
            .as_u64()
            .unwrap_or(0);
        if should_compact(tokens, window, &core.config.compaction) {
            // The outcome is in `compaction_end`; nothing else to report.
            let _ = self.compact_now(None, "threshold");
        }
    }
}

impl Agent {
    /// pi's overflow case: the provider said the context is too long. Once per user prompt,
    /// the failed answer leaves the agent's context (the session keeps it), the session is
    /// compacted (`compaction_start/end {reason: "overflow", willRetry: true}`) and the run
    /// goes on from the compacted context; a second overflow gets pi's
    /// `compaction_end` with the error and no retry.
    fn recover_from_overflow(&mut self) {
        if self.overflow_recovery_attempted {
            self.core.shared.sink(&json!({
                "type": "compaction_end",
                "reason": "overflow",
                "aborted": false,
                "willRetry": false,
                "errorMessage": OVERFLOW_RECOVERY_FAILED,
            }));
            return;
        }
        self.overflow_recovery_attempted = true;
        {
            let mut messages = Shared::lock(&self.core.shared.messages);
            if messages.last().is_some_and(|m| m["role"] == "assistant") {
                messages.pop();
            }
        }
        if self.compact_then(None, "overflow", true).is_ok() {
            // pi retries from a 100 ms timer. The pause also keeps the retry's answer out of
            // the millisecond of the compaction entry: an answer stamped no later than the
            // latest compaction counts as from before it, and a second overflow would then
            // go unseen.
            std::thread::sleep(OVERFLOW_RETRY_DELAY);
            let system_prompt = self.core.config.system_prompt.clone();
            self.run(Vec::new(), system_prompt, "");
        }
    }
}

/// How long after an overflow compaction the run is retried (pi's `setTimeout(..., 100)`).
const OVERFLOW_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// pi's `compaction_end` error after a second overflow in one prompt.
const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// pi-ai's `isContextOverflow` for a failed answer: its error message matches one of the
/// providers' context-overflow wordings and none of the rate-limit ones.
pub(crate) fn is_context_overflow(message: &Value) -> bool {
    use std::sync::LazyLock;
    static OVERFLOW: LazyLock<regex::RegexSet> = LazyLock::new(|| {
        regex::RegexSet::new([
            r"(?i)prompt is too long",
            r"(?i)request_too_large",
            r"(?i)input is too long for requested model",
            r"(?i)exceeds the context window",
            r"(?i)input token count.*exceeds the maximum",
            r"(?i)maximum prompt length is \d+",
            r"(?i)reduce the length of the messages",
            r"(?i)maximum context length is \d+ tokens",
            r"(?i)exceeds the limit of \d+",
            r"(?i)exceeds the available context size",
            r"(?i)greater than the context length",
            r"(?i)context window exceeds limit",
            r"(?i)exceeded model token limit",
            r"(?i)too large for model with \d+ maximum context length",
            r"(?i)model_context_window_exceeded",
            r"(?i)prompt too long; exceeded (?:max )?context length",
            r"(?i)context[_ ]length[_ ]exceeded",
            r"(?i)too many tokens",
            r"(?i)token limit exceeded",
            r"(?i)^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
        ])
        .expect("the overflow patterns compile")
    });
    static NOT_OVERFLOW: LazyLock<regex::RegexSet> = LazyLock::new(|| {
        regex::RegexSet::new([
            r"(?i)^(Throttling error|Service unavailable):",
            r"(?i)rate limit",
            r"(?i)too many requests",
        ])
        .expect("the non-overflow patterns compile")
    });
    if message["stopReason"] != "error" {
        return false;
    }
    let error = message["errorMessage"].as_str().unwrap_or_default();
    !error.is_empty() && !NOT_OVERFLOW.is_match(error) && OVERFLOW.is_match(error)
}

/// The legacy `session.compacting` hook (pi's older hook API) before the model summarizes: the
/// last truthy result's `context` lines are added to the history request, its `prompt`
/// replaces that request's instructions, and its `preserveData` is returned for the entry's
/// `details`.
fn compacting_hook(
    core: &super::Core,
    preparation: &pi_hooks_session::compaction::CompactionPreparation,
    requests: &mut pi_hooks_session::compaction::CompactionRequests,
) -> Option<Value> {
    if !core.runner.has_handlers("session.compacting") {
        return None;
    }
    let session_id = Shared::lock(&core.shared.session).id().to_owned();
    let result = core.runner.emit_session_compacting(json!({
        "sessionId": session_id,
        "messages": preparation.messages_to_summarize,
    }))?;
    if let Some(history) = requests.history.as_mut() {
        if let Some(prompt) = result["prompt"].as_str() {
            history.prompt = format!(
                "{}{prompt}",
                pi_hooks_session::summarize::conversation_block(&preparation.messages_to_summarize)
            );
        }
        let lines: Vec<&str> = result["context"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !lines.is_empty() {
            history.prompt.push_str("\n\nAdditional context:\n- ");
            history.prompt.push_str(&lines.join("\n- "));
        }
    }
    result.get("preserveData").cloned().filter(|d| !d.is_null())
}

/// pi's `getContextUsage`: `{tokens, contextWindow, percent}` of the current context (the
/// last assistant usage and estimates after it), `None` without a context window.
pub(super) fn context_usage(messages: &[Value], model: &Value) -> Option<Value> {
    let window = model["contextWindow"].as_u64().filter(|w| *w > 0)?;
    let tokens = estimate_context_tokens(messages).tokens;
    Some(json!({
        "tokens": tokens,
        "contextWindow": window,
        "percent": tokens as f64 / window as f64 * 100.0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(error: &str) -> Value {
        json!({"role": "assistant", "stopReason": "error", "errorMessage": error})
    }

    #[test]
    fn overflow_is_read_from_the_providers_wordings() {
        assert!(is_context_overflow(&failed(
            "400 This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
        )));
        assert!(is_context_overflow(&failed(
            "prompt is too long: 210000 tokens > 200000 maximum"
        )));
        assert!(is_context_overflow(&failed("413 (no body)")));
        assert!(!is_context_overflow(&failed(
            "429 Rate limit reached: too many tokens per minute"
        )));
        assert!(!is_context_overflow(&failed("500 overloaded")));
        let stopped = json!({"role": "assistant", "stopReason": "stop", "errorMessage": "prompt is too long"});
        assert!(!is_context_overflow(&stopped));
    }
}
