//! The hook trace: what each plugin did, for the plugin's author. Off by default; when on,
//! the host reports, as `tracing` events of target [`TARGET`] (level INFO):
//!
//! - every event handler call, in dispatch order: the event, the plugin, how long it took
//!   and what it decided (`blocked` with the reason, `patched`, `transformed`, `handled`,
//!   `cancelled`, `returned`, `nothing`, `error`, `timeout`), then a summary of the dispatch
//!   (how many of the event's handlers were called, and the time of the whole chain);
//! - every command, tool, timer, shortcut and event-bus call into a plugin;
//! - every UI call a plugin made (`notify`, `setStatus`, `select`/`confirm`/`input`/`editor`
//!   with the answer, ...), and whether a UI showed it;
//! - every host action a plugin asked for (`sendMessage`, `appendEntry`, `exec`, ...);
//! - the load of every plugin, with its load and init time.
//!
//! This module only emits. The `pi-hooks` binary turns the events into lines (text or JSON,
//! see `crate::cli::trace_output`); a program that embeds the host calls [`enable`] and
//! installs a `tracing` subscriber of its own.
//!
//! Free when off: every emission point is behind [`on`], one relaxed atomic load, taken once
//! per dispatch on the hot path (not once per handler), so the untraced dispatch is the same
//! code as before.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pi_hooks_abi::ffi::PI_OK;
use serde_json::Value;

use crate::plugin::call::CallOutcome;
use crate::plugin::state::PluginState;
use crate::runner::truthy;

/// The `tracing` target of every trace record.
pub const TARGET: &str = "pi_hooks::trace";

/// The fields of a record whose value is JSON text (a subscriber may parse them back).
pub const JSON_FIELDS: &[&str] = &["args", "answer", "result"];

static ON: AtomicBool = AtomicBool::new(false);

/// Whether the trace is on.
#[inline(always)]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns the trace on or off for the whole process.
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// `duration` in whole microseconds (saturating).
pub fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// What a call into a plugin is doing right now on this thread (`tool_call`,
/// `command /count`, `tool greet`, `timer`, ...), for the records of the UI calls and
/// actions it makes.
fn during() -> Option<String> {
    crate::guards::crash_guard::running_label()
}

/// At most `limit` characters of `text`, with `…` when cut.
fn cut(text: &str, limit: usize) -> Cow<'_, str> {
    match text.char_indices().nth(limit) {
        None => Cow::Borrowed(text),
        Some((at, _)) => Cow::Owned(format!("{}…", &text[..at])),
    }
}

/// What one handler decided, as the trace reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// `nothing`, `blocked`, `patched`, `transformed`, `handled`, `cancelled`, `returned`,
    /// `error`, `timeout` or `late`.
    pub kind: &'static str,
    /// Why (a block's or a cancel's reason), when the plugin gave one.
    pub reason: Option<String>,
    /// What changed, in a few words (`content, isError=true`, the new text, ...).
    pub detail: Option<String>,
    /// The error of a failed call.
    pub error: Option<String>,
}

impl Decision {
    fn new(kind: &'static str) -> Self {
        Decision {
            kind,
            reason: None,
            detail: None,
            error: None,
        }
    }

    fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// A call the runner abandoned because it overran its time.
    pub(crate) fn timeout(message: &str, event: &str) -> Self {
        let mut decision = Decision::new("timeout");
        decision.error = Some(message.to_owned());
        if event == "tool_call" {
            decision.detail = Some("the tool is blocked: fail closed".to_owned());
        }
        decision
    }

    /// A call that returned after the runner had abandoned it: its result was dropped.
    pub(crate) fn late() -> Self {
        Decision::new("late").with_detail("returned after its time-out; the result was ignored")
    }

    /// What `outcome` of a handler of `event` decides under that event's rule.
    pub(crate) fn of(event: &str, outcome: &CallOutcome) -> Self {
        if outcome.status != PI_OK {
            let mut decision = Decision::new("error");
            decision.error = Some(outcome.error_text());
            if event == "tool_call" {
                decision.detail = Some("the tool is blocked: fail closed".to_owned());
            }
            return decision;
        }
        let system_prompt = outcome
            .detail
            .as_ref()
            .is_some_and(|d| d.system_prompt.is_some());
        let result = outcome.result.as_deref();
        if event == "before_provider_request" {
            // pi: any result, even null, replaces the request body.
            return match result {
                Some(_) => Decision::new("transformed").with_detail("the request body"),
                None => Decision::new("nothing"),
            };
        }
        let Some(result) = result.filter(|r| truthy(r)) else {
            if system_prompt {
                return Decision::new("transformed").with_detail("systemPrompt");
            }
            return Decision::new("nothing");
        };
        match event {
            "tool_call" => {
                if result.get("block").is_some_and(truthy) {
                    let mut decision = Decision::new("blocked");
                    decision.reason = Some(
                        result
                            .get("reason")
                            .and_then(Value::as_str)
                            .filter(|r| !r.is_empty())
                            .unwrap_or("Tool execution was blocked")
                            .to_owned(),
                    );
                    decision
                } else if let Some(input) = result.get("input").filter(|i| !i.is_null()) {
                    // The tool runs with this input, unless a later handler blocks it.
                    Decision::new("rewrote").with_detail(format!("input {}", compact(input)))
                } else {
                    Decision::new("returned").with_detail(compact(result))
                }
            }
            "tool_result" => {
                let mut fields = Vec::new();
                for key in ["content", "details"] {
                    if result.get(key).is_some_and(|v| !v.is_null()) {
                        fields.push(key.to_owned());
                    }
                }
                if let Some(is_error) = result.get("isError").and_then(Value::as_bool) {
                    fields.push(format!("isError={is_error}"));
                }
                if fields.is_empty() {
                    Decision::new("nothing")
                } else {
                    Decision::new("patched").with_detail(fields.join(", "))
                }
            }
            "input" => match result {
                Value::String(text) => Decision::new("transformed").with_detail(text.clone()),
                Value::Object(map) => match map.get("action").and_then(Value::as_str) {
                    Some("handled") => Decision::new("handled"),
                    Some("transform") => {
                        let text = map.get("text").and_then(Value::as_str).unwrap_or_default();
                        Decision::new("transformed").with_detail(text.to_owned())
                    }
                    _ => Decision::new("nothing"),
                },
                _ => Decision::new("nothing"),
            },
            "context" => match result.get("messages").and_then(Value::as_array) {
                Some(messages) => {
                    Decision::new("transformed").with_detail(format!("{} messages", messages.len()))
                }
                None => Decision::new("nothing"),
            },
            "before_agent_start" => {
                let mut changed = Vec::new();
                if result.get("message").is_some_and(truthy) {
                    changed.push("message");
                }
                if system_prompt || result.get("systemPrompt").is_some_and(Value::is_string) {
                    changed.push("systemPrompt");
                }
                if changed.is_empty() {
                    Decision::new("nothing")
                } else {
                    Decision::new("transformed").with_detail(changed.join(", "))
                }
            }
            "user_bash" => Decision::new("handled").with_detail(compact(result)),
            _ if result.get("cancel").is_some_and(truthy) => {
                let mut decision = Decision::new("cancelled");
                decision.reason = result
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                decision
            }
            _ => Decision::new("returned").with_detail(compact(result)),
        }
    }
}

/// `value` as one line of JSON, at most 200 characters.
fn compact(value: &Value) -> String {
    let text = value.to_string();
    cut(&text, 200).into_owned()
}

/// One event handler's call: the plugin behind `state` handled `event` in `elapsed` and
/// decided `decision`.
#[cold]
#[inline(never)]
pub(crate) fn handler(event: &str, state: &PluginState, elapsed: Duration, decision: &Decision) {
    tracing::info!(
        target: TARGET,
        trace = "handler",
        event,
        plugin = state.name.as_str(),
        path = state.path.as_str(),
        decision = decision.kind,
        reason = decision.reason.as_deref(),
        detail = decision.detail.as_deref(),
        error = decision.error.as_deref(),
        micros = micros(elapsed),
    );
}

/// The end of one dispatch: `called` of the event's `handlers` handlers ran, the whole chain
/// in `elapsed` (a chain stops early on a block, a `handled`, a cancel or a first-wins
/// result).
#[cold]
#[inline(never)]
pub(crate) fn event(event: &str, handlers: usize, called: usize, elapsed: Duration) {
    tracing::info!(
        target: TARGET,
        trace = "event",
        event,
        handlers = handlers as u64,
        called = called as u64,
        micros = micros(elapsed),
    );
}

/// A call into a plugin other than an event handler: `kind` is `command`, `tool`, `timer`,
/// `shortcut` or `bus`, `name` what it ran (the command, the tool, the timer's id, the key,
/// the channel).
#[cold]
#[inline(never)]
pub(crate) fn call(
    kind: &'static str,
    name: &str,
    state: &PluginState,
    elapsed: Duration,
    status: pi_hooks_abi::ffi::PiStatus,
    error: Option<&str>,
) {
    let decision = if status == PI_OK { "ok" } else { "error" };
    let error = (status != PI_OK).then(|| {
        error.map_or_else(
            || format!("returned {}", pi_hooks_abi::sdk::status_name(status)),
            str::to_owned,
        )
    });
    tracing::info!(
        target: TARGET,
        trace = kind,
        name,
        plugin = state.name.as_str(),
        path = state.path.as_str(),
        decision,
        error = error.as_deref(),
        micros = micros(elapsed),
    );
}

/// What a plugin load gave, for [`load`].
pub(crate) enum LoadResult<'a> {
    /// It loaded as `name`, its init took `init`.
    Loaded {
        /// The plugin's name.
        name: &'a str,
        /// The time of its init.
        init: Duration,
    },
    /// It is a project plugin that is not trusted: none of its code ran.
    Untrusted,
    /// It did not load.
    Failed(&'a str),
}

/// The load of the plugin file `path`, which took `elapsed` in all (reading, checking,
/// opening, init).
#[cold]
#[inline(never)]
pub(crate) fn load(path: &str, elapsed: Duration, result: LoadResult<'_>) {
    let (decision, plugin, init, error) = match result {
        LoadResult::Loaded { name, init } => ("loaded", Some(name), Some(micros(init)), None),
        LoadResult::Untrusted => ("untrusted", None, None, None),
        LoadResult::Failed(error) => ("failed", None, None, Some(error)),
    };
    tracing::info!(
        target: TARGET,
        trace = "load",
        plugin,
        path,
        decision,
        error,
        micros = micros(elapsed),
        initMicros = init,
    );
}

/// A plugin file that failed to load and does not run (`error`), or that runs again (`None`).
#[cold]
#[inline(never)]
pub(crate) fn not_loaded(path: &str, error: Option<&str>) {
    tracing::info!(
        target: TARGET,
        trace = "not_loaded",
        path,
        decision = if error.is_some() { "missing" } else { "back" },
        error,
    );
}

/// A UI call of the plugin behind `state`: `method` (pi's name: `notify`, `setStatus`,
/// `confirm`, ...) with `args` (the request's fields), `shown` whether a UI took it (false
/// in print and JSON mode, where it does nothing), and for a dialog the `answer` the plugin
/// got and how long it waited.
#[cold]
#[inline(never)]
pub(crate) fn ui(
    state: &PluginState,
    method: &str,
    args: &Value,
    shown: bool,
    answer: Option<&Value>,
    waited: Option<Duration>,
) {
    let args = without_method(args);
    tracing::info!(
        target: TARGET,
        trace = "ui",
        method,
        plugin = state.name.as_str(),
        path = state.path.as_str(),
        during = during().as_deref(),
        args = %args,
        shown,
        answer = answer.map(|a| a.to_string()).as_deref(),
        micros = waited.map(micros),
    );
}

/// `args` without its `method` field (the record names the method).
fn without_method(args: &Value) -> Cow<'_, Value> {
    match args {
        Value::Object(map) if map.contains_key("method") => {
            let mut map = map.clone();
            map.shift_remove("method");
            Cow::Owned(Value::Object(map))
        }
        _ => Cow::Borrowed(args),
    }
}

/// A host action of the plugin behind `state` (`sendMessage`, `appendEntry`, `exec`, ...)
/// with `args`: `Ok` with what it gave (if anything worth showing), or why it was refused.
#[cold]
#[inline(never)]
pub(crate) fn action(
    state: &PluginState,
    action: &str,
    args: &Value,
    outcome: Result<Option<&Value>, &str>,
    elapsed: Option<Duration>,
) {
    let (decision, result, error) = match outcome {
        Ok(result) => ("ok", result.map(Value::to_string), None),
        Err(error) => ("refused", None, Some(error)),
    };
    tracing::info!(
        target: TARGET,
        trace = "action",
        action,
        plugin = state.name.as_str(),
        path = state.path.as_str(),
        during = during().as_deref(),
        args = %args,
        decision,
        result = result.as_deref(),
        error,
        micros = elapsed.map(micros),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host_api::context::CallDetail;
    use serde_json::json;

    fn returned(result: Value) -> CallOutcome {
        CallOutcome {
            status: PI_OK,
            result: Some(Box::new(result)),
            detail: None,
        }
    }

    #[test]
    fn decisions_follow_each_events_rule() {
        let blocked = Decision::of(
            "tool_call",
            &returned(json!({"block": true, "reason": "no"})),
        );
        assert_eq!(
            (blocked.kind, blocked.reason.as_deref()),
            ("blocked", Some("no"))
        );
        let default = Decision::of("tool_call", &returned(json!({"block": true})));
        assert_eq!(
            default.reason.as_deref(),
            Some("Tool execution was blocked")
        );
        let patched = Decision::of(
            "tool_result",
            &returned(json!({"content": [], "isError": true})),
        );
        assert_eq!(
            (patched.kind, patched.detail.as_deref()),
            ("patched", Some("content, isError=true"))
        );
        assert_eq!(
            Decision::of("input", &returned(json!("x"))).kind,
            "transformed"
        );
        assert_eq!(
            Decision::of("input", &returned(json!({"action": "handled"}))).kind,
            "handled"
        );
        assert_eq!(
            Decision::of("input", &returned(json!({"action": "continue"}))).kind,
            "nothing"
        );
        assert_eq!(
            Decision::of("session_before_switch", &returned(json!({"cancel": true}))).kind,
            "cancelled"
        );
        assert_eq!(
            Decision::of("agent_end", &returned(json!(0))).kind,
            "nothing"
        );
        assert_eq!(
            Decision::of("before_provider_request", &returned(Value::Null)).kind,
            "transformed"
        );
        let prompt = CallOutcome {
            status: PI_OK,
            result: None,
            detail: Some(Box::new(CallDetail {
                error: None,
                system_prompt: Some("p".into()),
            })),
        };
        assert_eq!(
            Decision::of("before_agent_start", &prompt)
                .detail
                .as_deref(),
            Some("systemPrompt")
        );
        let failed = CallOutcome {
            status: pi_hooks_abi::ffi::PI_ERR,
            result: None,
            detail: Some(Box::new(CallDetail {
                error: Some("boom".into()),
                system_prompt: None,
            })),
        };
        let error = Decision::of("tool_call", &failed);
        assert_eq!(
            (error.kind, error.error.as_deref()),
            ("error", Some("boom"))
        );
        assert!(error.detail.unwrap().contains("blocked"));
    }

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("ééé", 2), "éé…");
    }
}
