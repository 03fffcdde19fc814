//! What hooks answered, read as Claude Code reads it, and combined as it combines the
//! answers of several hooks of one event.
//!
//! * exit 0: success. stdout that is a JSON object is the structured output; other stdout is
//!   plain text (added as context by `UserPromptSubmit` and `SessionStart`, and only shown
//!   in Claude Code's verbose mode otherwise). stdout that starts with `{` but is not valid
//!   JSON is taken as plain text, with a warning.
//! * exit 2: a blocking error; stderr is the reason, stdout and any JSON are ignored.
//! * any other exit, a timeout, a hook that cannot start: a non-blocking error shown to the
//!   user; the action goes on.

use serde_json::{Map, Value};

use crate::run::{Ended, HookRun};

/// One hook's answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Exit 0.
    Success {
        /// Plain stdout (trimmed; empty when it was JSON).
        text: String,
        /// The JSON object it printed.
        json: Option<Map<String, Value>>,
    },
    /// Exit 2, with stderr (trimmed).
    Block(String),
    /// A non-blocking error, described for the user.
    Error(String),
}

/// The answers of every hook that ran for one event.
#[derive(Debug, Clone)]
pub struct Answers {
    event: &'static str,
    answers: Vec<Answer>,
    /// Warnings for the user (malformed JSON, a mismatched `hookEventName`).
    pub warnings: Vec<String>,
}

/// A `PreToolUse` permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Run the tool.
    Allow,
    /// Ask the user.
    Ask,
    /// Block the tool.
    Deny,
}

impl Answers {
    /// Reads the runs of `event`'s hooks.
    pub fn read(event: &'static str, runs: Vec<HookRun>) -> Answers {
        let mut warnings = Vec::new();
        let answers = runs
            .into_iter()
            .map(|run| answer(event, run, &mut warnings))
            .collect();
        Answers {
            event,
            answers,
            warnings,
        }
    }

    /// Whether no hook ran.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// The stderr of each hook that exited with 2.
    pub fn blocking(&self) -> Vec<String> {
        self.answers
            .iter()
            .filter_map(|a| match a {
                Answer::Block(stderr) => Some(if stderr.is_empty() {
                    format!("{} hook exited with 2 (no stderr output)", self.event)
                } else {
                    stderr.clone()
                }),
                _ => None,
            })
            .collect()
    }

    /// The non-blocking errors, for the user.
    pub fn errors(&self) -> Vec<String> {
        self.answers
            .iter()
            .filter_map(|a| match a {
                Answer::Error(message) => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    /// Plain (non-JSON) stdout of successful hooks.
    pub fn plain_texts(&self) -> Vec<String> {
        self.answers
            .iter()
            .filter_map(|a| match a {
                Answer::Success { text, .. } if !text.is_empty() => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    fn outputs(&self) -> impl Iterator<Item = &Map<String, Value>> {
        self.answers.iter().filter_map(|a| match a {
            Answer::Success {
                json: Some(json), ..
            } => Some(json),
            _ => None,
        })
    }

    fn specific(&self) -> impl Iterator<Item = &Map<String, Value>> {
        self.outputs()
            .filter_map(|o| o.get("hookSpecificOutput").and_then(Value::as_object))
            .filter(|s| {
                s.get("hookEventName")
                    .and_then(Value::as_str)
                    .is_none_or(|name| name == self.event)
            })
    }

    /// `continue: false` from any hook: the stop reason (its `stopReason`, or a default).
    pub fn stop(&self) -> Option<String> {
        self.outputs()
            .find(|o| o.get("continue").and_then(Value::as_bool) == Some(false))
            .map(|o| {
                o.get("stopReason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                    .map_or_else(
                        || format!("{} hook stopped the agent", self.event),
                        str::to_owned,
                    )
            })
    }

    /// Every `systemMessage`.
    pub fn system_messages(&self) -> Vec<String> {
        self.outputs()
            .filter_map(|o| o.get("systemMessage").and_then(Value::as_str))
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The reason of each `decision: "block"` (a default where it has none).
    pub fn decision_blocks(&self) -> Vec<String> {
        self.outputs()
            .filter(|o| o.get("decision").and_then(Value::as_str) == Some("block"))
            .map(|o| {
                o.get("reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.is_empty())
                    .map_or_else(|| format!("Blocked by {} hook", self.event), str::to_owned)
            })
            .collect()
    }

    /// Every `hookSpecificOutput.additionalContext`.
    pub fn additional_context(&self) -> Vec<String> {
        self.specific()
            .filter_map(|s| s.get("additionalContext").and_then(Value::as_str))
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The combined `PreToolUse` decision, `deny` over `ask` over `allow`, with the reasons
    /// of the hooks that gave the winning one. The older top-level `decision`
    /// (`approve` / `block`) counts as `allow` / `deny`.
    pub fn permission(&self) -> Option<(Permission, Vec<String>)> {
        let mut decisions = Vec::new();
        for output in self.outputs() {
            let specific = output
                .get("hookSpecificOutput")
                .and_then(Value::as_object)
                .filter(|s| {
                    s.get("hookEventName")
                        .and_then(Value::as_str)
                        .is_none_or(|name| name == self.event)
                });
            let modern = specific.and_then(|s| {
                let decision = match s.get("permissionDecision").and_then(Value::as_str)? {
                    "allow" => Permission::Allow,
                    "ask" => Permission::Ask,
                    "deny" => Permission::Deny,
                    _ => return None,
                };
                let reason = s.get("permissionDecisionReason").and_then(Value::as_str);
                Some((decision, reason))
            });
            let legacy = || {
                let decision = match output.get("decision").and_then(Value::as_str)? {
                    "approve" => Permission::Allow,
                    "block" => Permission::Deny,
                    _ => return None,
                };
                Some((decision, output.get("reason").and_then(Value::as_str)))
            };
            if let Some(found) = modern.or_else(legacy) {
                decisions.push(found);
            }
        }
        let winner = decisions.iter().map(|(d, _)| *d).max()?;
        let reasons = decisions
            .iter()
            .filter(|(d, _)| *d == winner)
            .filter_map(|(_, r)| *r)
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .collect();
        Some((winner, reasons))
    }

    /// The last `hookSpecificOutput.updatedInput` (configuration order), if any.
    pub fn updated_input(&self) -> Option<Value> {
        self.specific()
            .filter_map(|s| s.get("updatedInput"))
            .filter(|v| v.is_object())
            .last()
            .cloned()
    }
}

fn answer(event: &str, run: HookRun, warnings: &mut Vec<String>) -> Answer {
    let command = &run.command;
    match run.ended {
        Ended::Exited {
            code: 0, stdout, ..
        } => {
            let trimmed = stdout.trim();
            if trimmed.starts_with('{') {
                match serde_json::from_str::<Value>(trimmed) {
                    Ok(Value::Object(json)) => {
                        if let Some(name) = json
                            .get("hookSpecificOutput")
                            .and_then(|s| s.get("hookEventName"))
                            .and_then(Value::as_str)
                            .filter(|name| *name != event)
                        {
                            warnings.push(format!(
                                "{event} hook `{command}`: hookSpecificOutput.hookEventName is {name:?}, not {event:?}; its hookSpecificOutput is ignored"
                            ));
                        }
                        return Answer::Success {
                            text: String::new(),
                            json: Some(json),
                        };
                    }
                    Ok(_) => {}
                    Err(error) => warnings.push(format!(
                        "{event} hook `{command}` printed invalid JSON ({error}); taken as plain text"
                    )),
                }
            }
            Answer::Success {
                text: trimmed.to_owned(),
                json: None,
            }
        }
        Ended::Exited {
            code: 2, stderr, ..
        } => Answer::Block(stderr.trim().to_owned()),
        Ended::Exited { code, stderr, .. } => {
            let stderr = stderr.trim();
            Answer::Error(format!(
                "{event} hook `{command}` failed with non-blocking status code {code}: {}",
                if stderr.is_empty() {
                    "No stderr output"
                } else {
                    stderr
                }
            ))
        }
        Ended::Killed { why } => Answer::Error(format!("{event} hook `{command}` {why}")),
        Ended::Stopped => Answer::Error(format!(
            "{event} hook `{command}` was stopped before its time limit (the run was aborted, or the session ended)"
        )),
        Ended::NotRun(why) => {
            Answer::Error(format!("{event} hook `{command}` could not run: {why}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(code: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            command: "hook".into(),
            ended: Ended::Exited {
                code,
                stdout: stdout.into(),
                stderr: stderr.into(),
            },
        }
    }

    #[test]
    fn exit_codes_and_json_combine_as_claude_code_documents() {
        let answers = Answers::read(
            "PreToolUse",
            vec![
                run(
                    0,
                    r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}"#,
                    "",
                ),
                run(
                    0,
                    r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#,
                    "",
                ),
                run(1, "", "oops"),
                run(0, "{not json", ""),
                run(2, "ignored", " stop it \n"),
            ],
        );
        assert_eq!(
            answers.permission(),
            Some((Permission::Ask, vec!["sure?".to_owned()]))
        );
        assert_eq!(answers.blocking(), ["stop it"]);
        assert_eq!(
            answers.errors(),
            ["PreToolUse hook `hook` failed with non-blocking status code 1: oops"]
        );
        assert_eq!(answers.plain_texts(), ["{not json"]);
        assert!(
            answers.warnings[0].contains("printed invalid JSON"),
            "{:?}",
            answers.warnings
        );
        let legacy = Answers::read(
            "PreToolUse",
            vec![run(0, r#"{"decision":"block","reason":"no"}"#, "")],
        );
        assert_eq!(
            legacy.permission(),
            Some((Permission::Deny, vec!["no".to_owned()]))
        );
        let stop = Answers::read("Stop", vec![run(0, r#"{"continue":false}"#, "")]);
        assert_eq!(stop.stop().as_deref(), Some("Stop hook stopped the agent"));
    }
}
