//! What the model sees of a branch: pi's `buildSessionContext`.
//!
//! Walking the branch root -> leaf: `message` entries give their `message`; `custom_message`
//! entries give `{role:"custom", customType, content, display, details?, timestamp}`;
//! `branch_summary` entries with a summary give `{role:"branchSummary", summary, fromId,
//! timestamp}`. When the branch holds a compaction (the last one counts), the context is its
//! summary `{role:"compactionSummary", summary, tokensBefore, timestamp}`, then the entries from
//! its `firstKeptEntryId` up to the compaction, then everything after it. pi 0.87's
//! `context_edit` entries (`{targetId, replacement: {content} | null}`) among those replace
//! or leave out their target's message, the latest edit of a target winning. Timestamps in these
//! made-up messages are milliseconds since the epoch (`new Date(entry.timestamp).getTime()`),
//! `null` where pi would get `NaN`. Turning `custom` / summary roles into user messages for the
//! model (pi's `convertToLlm`) is the agent loop's business.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::timestamp::parse_iso_millis;

/// The model-facing state of a branch (pi's `SessionContext`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext {
    /// The messages, oldest first.
    pub messages: Vec<Value>,
    /// The last `thinking_level_change` on the branch, else `"off"`.
    pub thinking_level: String,
    /// The last model on the branch: a `model_change`, or the provider and model of an assistant
    /// message.
    pub model: Option<ModelRef>,
}

/// A provider and model id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

/// The context of `branch` (entries root -> leaf, as [`super::SessionStore::branch`] gives them).
pub fn build(branch: &[&Value]) -> SessionContext {
    let mut thinking_level = "off".to_owned();
    let mut model = None;
    let mut compaction = None;
    for (index, entry) in branch.iter().enumerate() {
        match kind(entry) {
            "thinking_level_change" => {
                if let Some(level) = entry.get("thinkingLevel").and_then(Value::as_str) {
                    thinking_level = level.to_owned();
                }
            }
            "model_change" => model = model_ref(entry, "provider", "modelId").or(model),
            "message" if entry["message"]["role"] == "assistant" => {
                model = model_ref(&entry["message"], "provider", "model").or(model);
            }
            "compaction" => compaction = Some(index),
            _ => {}
        }
    }

    // The entries the context is made of (pi's `buildContextEntries`): with a compaction,
    // the compaction first, then the kept entries before it and everything after it.
    let selected: Vec<&Value> = match compaction {
        None => branch.to_vec(),
        Some(at) => {
            let first_kept = branch[at].get("firstKeptEntryId");
            let kept = branch[..at]
                .iter()
                .skip_while(|entry| entry.get("id") != first_kept || first_kept.is_none());
            std::iter::once(&branch[at])
                .chain(kept)
                .chain(&branch[at + 1..])
                .copied()
                .collect()
        }
    };
    // pi 0.87's `context_edit` entries: the latest one on the branch for a target replaces
    // its content or (`replacement: null`) leaves it out (pi's `buildSessionProjection`).
    let edits = context_edits(selected.iter().copied());
    let mut messages = Vec::new();
    for (index, entry) in selected.iter().enumerate() {
        let start = messages.len();
        if index == 0 && compaction.is_some() {
            messages.push(json!({
                "role": "compactionSummary",
                "summary": entry.get("summary").cloned().unwrap_or(Value::Null),
                "tokensBefore": entry.get("tokensBefore").cloned().unwrap_or(Value::Null),
                "timestamp": millis(entry),
            }));
        } else {
            push_message(&mut messages, entry);
        }
        if let Some(edit) = entry
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| edits.get(id))
        {
            apply_edit(&mut messages, start, edit);
        }
    }
    SessionContext {
        messages,
        thinking_level,
        model,
    }
}

/// The latest `context_edit` entry of each target among `entries` (in branch order), by the
/// target's id.
pub(crate) fn context_edits<'a>(
    entries: impl IntoIterator<Item = &'a Value>,
) -> HashMap<&'a str, &'a Value> {
    let mut edits = HashMap::new();
    for entry in entries {
        if kind(entry) == "context_edit"
            && let Some(target) = entry.get("targetId").and_then(Value::as_str)
        {
            edits.insert(target, entry);
        }
    }
    edits
}

/// `message` (what `entry` gives the context) as its `context_edit` in `edits` leaves it:
/// unchanged, replaced, or `None` when the edit removes it.
pub(crate) fn edited(
    entry: &Value,
    message: Value,
    edits: &HashMap<&str, &Value>,
) -> Option<Value> {
    let Some(edit) = entry
        .get("id")
        .and_then(Value::as_str)
        .and_then(|id| edits.get(id))
    else {
        return Some(message);
    };
    let mut messages = vec![message];
    apply_edit(&mut messages, 0, edit);
    messages.pop()
}

/// Applies a `context_edit` to the messages its target gave (`messages[start..]`), as pi's
/// `projectContextEntry`: `replacement: null` removes them; `{content}` replaces the content
/// of user, assistant, tool-result and custom messages (a string given to an assistant or
/// tool result becomes one text block). An edit of another shape changes nothing.
fn apply_edit(messages: &mut Vec<Value>, start: usize, edit: &Value) {
    match edit.get("replacement") {
        Some(Value::Null) => messages.truncate(start),
        Some(Value::Object(replacement)) => {
            for message in &mut messages[start..] {
                let role = message.get("role").and_then(Value::as_str).unwrap_or("");
                if !matches!(role, "user" | "assistant" | "toolResult" | "custom") {
                    continue;
                }
                let content = match replacement.get("content") {
                    Some(Value::String(text)) if matches!(role, "assistant" | "toolResult") => {
                        Some(json!([{"type": "text", "text": text}]))
                    }
                    other => other.cloned(),
                };
                if let Some(object) = message.as_object_mut() {
                    match content {
                        Some(content) => {
                            object.insert("content".into(), content);
                        }
                        None => {
                            object.remove("content");
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

fn push_message(messages: &mut Vec<Value>, entry: &Value) {
    match kind(entry) {
        "message" => messages.push(entry.get("message").cloned().unwrap_or(Value::Null)),
        "custom_message" => {
            let mut message = Map::new();
            message.insert("role".into(), "custom".into());
            for key in ["customType", "content", "display", "details"] {
                if let Some(value) = entry.get(key) {
                    message.insert(key.into(), value.clone());
                }
            }
            message.insert("timestamp".into(), millis(entry));
            messages.push(Value::Object(message));
        }
        "branch_summary" => {
            let summary = entry.get("summary").and_then(Value::as_str).unwrap_or("");
            if !summary.is_empty() {
                messages.push(json!({
                    "role": "branchSummary",
                    "summary": summary,
                    "fromId": entry.get("fromId").cloned().unwrap_or(Value::Null),
                    "timestamp": millis(entry),
                }));
            }
        }
        _ => {}
    }
}

fn kind(entry: &Value) -> &str {
    entry.get("type").and_then(Value::as_str).unwrap_or("")
}

fn millis(entry: &Value) -> Value {
    entry
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_iso_millis)
        .map_or(Value::Null, Value::from)
}

fn model_ref(object: &Value, provider: &str, model_id: &str) -> Option<ModelRef> {
    Some(ModelRef {
        provider: object.get(provider)?.as_str()?.to_owned(),
        model_id: object.get(model_id)?.as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, kind: &str, fields: Value) -> Value {
        let mut entry = json!({"type": kind, "id": id, "timestamp": "1970-01-01T00:00:01.000Z"});
        entry
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        entry
    }

    #[test]
    fn compaction_replaces_what_came_before_the_first_kept_entry() {
        let entries = [
            entry(
                "a",
                "message",
                json!({"message": {"role": "user", "content": "one"}}),
            ),
            entry(
                "b",
                "message",
                json!({"message": {"role": "assistant", "provider": "p", "model": "m"}}),
            ),
            entry(
                "c",
                "message",
                json!({"message": {"role": "user", "content": "two"}}),
            ),
            entry(
                "d",
                "compaction",
                json!({"summary": "S", "firstKeptEntryId": "c", "tokensBefore": 9}),
            ),
            entry(
                "e",
                "thinking_level_change",
                json!({"thinkingLevel": "high"}),
            ),
            entry(
                "f",
                "branch_summary",
                json!({"fromId": "b", "summary": "B"}),
            ),
            entry("g", "branch_summary", json!({"fromId": "b", "summary": ""})),
        ];
        let branch: Vec<&Value> = entries.iter().collect();
        let context = build(&branch);
        assert_eq!(
            context.messages,
            [
                json!({"role": "compactionSummary", "summary": "S", "tokensBefore": 9, "timestamp": 1000}),
                json!({"role": "user", "content": "two"}),
                json!({"role": "branchSummary", "summary": "B", "fromId": "b", "timestamp": 1000}),
            ]
        );
        assert_eq!(context.thinking_level, "high");
        assert_eq!(
            context.model,
            Some(ModelRef {
                provider: "p".into(),
                model_id: "m".into()
            })
        );
    }

    #[test]
    fn unknown_first_kept_entry_keeps_nothing_before_the_compaction() {
        let entries = [
            entry("a", "message", json!({"message": {"role": "user"}})),
            entry(
                "d",
                "compaction",
                json!({"summary": "S", "firstKeptEntryId": "zz", "tokensBefore": 1}),
            ),
            entry(
                "e",
                "message",
                json!({"message": {"role": "user", "content": "after"}}),
            ),
        ];
        let context = build(&entries.iter().collect::<Vec<_>>());
        assert_eq!(context.messages.len(), 2);
        assert_eq!(context.messages[1]["content"], "after");
        assert_eq!(context.thinking_level, "off");
        assert_eq!(context.model, None);
    }
}
