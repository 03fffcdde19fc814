//! Branch summaries for tree navigation: pi's `core/compaction/branch-summarization.js` without
//! the model call.
//!
//! When the user moves the leaf to another entry of the tree (`/tree`), pi can summarize the
//! branch being left: [`collect_entries_for_branch_summary`] takes the entries from the old leaf
//! back to the deepest entry shared with the target's branch (compactions and earlier branch
//! summaries included), [`prepare_branch_entries`] turns the newest of them that fit a token
//! budget into messages and gathers the files they touched, and [`branch_summary_request`]
//! builds the request for a summarizing model; [`finish_branch_summary`] gives the summary text
//! to store, whose `details` are the [`FileLists`]. [`TreePreparation`] is the `preparation` of
//! pi's `session_before_tree` event.
//!
//! Faithful to pi in what is collected, kept and listed (compared with pi 0.73.1 by
//! `tests/tests/compaction_golden.rs`). We differ in the prompt and preamble wording (ours), and
//! a `parentId` cycle in a hand-edited file ends the walk instead of looping for ever.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;

use super::SessionStore;
use super::compaction::{estimate_tokens, made_message};
use super::summarize::{
    FileLists, FileOps, SUMMARIZATION_SYSTEM_PROMPT, SummaryRequest, conversation_block, js_truthy,
};

/// The entries of the branch being left (pi's `collectEntriesForBranchSummary` result),
/// serializing as `{entries, commonAncestorId}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchEntries {
    /// From just below the common ancestor to the old leaf, oldest first.
    pub entries: Vec<Value>,
    /// The deepest entry on both the old leaf's and the target's branch; `None` when they share
    /// nothing (or there is no old leaf).
    pub common_ancestor_id: Option<String>,
}

/// The entries to summarize when the leaf moves from `old_leaf_id` to `target_id` in `store`
/// (pi's `collectEntriesForBranchSummary`): empty without an old leaf; an unknown target shares
/// nothing, so the whole old branch is collected.
pub fn collect_entries_for_branch_summary(
    store: &SessionStore,
    old_leaf_id: Option<&str>,
    target_id: &str,
) -> BranchEntries {
    collect_entries_with(|id| store.entry(id), old_leaf_id, target_id)
}

/// [`collect_entries_for_branch_summary`] over any entry lookup (`entry(id)` gives the entry
/// with that id, as [`SessionStore::entry`]).
pub fn collect_entries_with<'a>(
    entry: impl Fn(&str) -> Option<&'a Value>,
    old_leaf_id: Option<&str>,
    target_id: &str,
) -> BranchEntries {
    let Some(old_leaf_id) = old_leaf_id else {
        return BranchEntries {
            entries: Vec::new(),
            common_ancestor_id: None,
        };
    };
    let old_path: HashSet<&str> = path_to_root(&entry, old_leaf_id)
        .into_iter()
        .filter_map(entry_id)
        .collect();
    // The target's path from its end: the first entry also on the old path is the deepest.
    let common_ancestor_id = path_to_root(&entry, target_id)
        .into_iter()
        .filter_map(entry_id)
        .find(|id| old_path.contains(id))
        .map(str::to_owned);
    let mut entries = Vec::new();
    let mut seen = HashSet::new();
    let mut current = Some(old_leaf_id.to_owned());
    while let Some(id) = current.filter(|id| Some(id) != common_ancestor_id.as_ref()) {
        let Some(found) = entry(&id) else { break };
        if !seen.insert(id) {
            break;
        }
        entries.push(found.clone());
        current = found
            .get("parentId")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    entries.reverse();
    BranchEntries {
        entries,
        common_ancestor_id,
    }
}

/// The entries from `id` up to the root, leaf first (a cycle ends the walk).
fn path_to_root<'a>(entry: &impl Fn(&str) -> Option<&'a Value>, id: &str) -> Vec<&'a Value> {
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut current = entry(id);
    while let Some(found) = current {
        if !seen.insert(entry_id(found).unwrap_or_default()) {
            break;
        }
        path.push(found);
        current = found
            .get("parentId")
            .and_then(Value::as_str)
            .and_then(&entry);
    }
    path
}

fn entry_id(entry: &Value) -> Option<&str> {
    entry.get("id").and_then(Value::as_str)
}

/// The messages of a branch to summarize, within a token budget (pi's `prepareBranchEntries`
/// result).
#[derive(Debug, Clone, PartialEq)]
pub struct BranchPreparation {
    /// The newest messages that fit, oldest first.
    pub messages: Vec<Value>,
    /// Files touched by those messages and by earlier summaries' `details` on the branch.
    pub file_ops: FileOps,
    /// Their estimated tokens.
    pub total_tokens: u64,
}

/// The message an entry contributes to a branch summary: messages but tool results,
/// `custom_message` / `branch_summary` / `compaction` entries as `custom` / `branchSummary` /
/// `compactionSummary` messages.
fn message_for_branch(entry: &Value) -> Option<Value> {
    match entry.get("type").and_then(Value::as_str)? {
        "message" => {
            let message = entry.get("message")?;
            (message.get("role").and_then(Value::as_str) != Some("toolResult"))
                .then(|| message.clone())
        }
        "custom_message" => Some(made_message(
            entry,
            "custom",
            &["customType", "content", "display", "details"],
        )),
        "branch_summary" => Some(made_message(entry, "branchSummary", &["summary", "fromId"])),
        "compaction" => Some(made_message(
            entry,
            "compactionSummary",
            &["summary", "tokensBefore"],
        )),
        _ => None,
    }
}

/// Turns `entries` (oldest first) into messages, newest first until `token_budget` tokens are
/// used (0: no limit), and gathers file operations (pi's `prepareBranchEntries`). The files of
/// every `branch_summary` pi wrote (not `fromHook`) count, even beyond the budget; the files of
/// tool calls count for the messages looked at. A summary entry that does not fit is still
/// taken while less than 90% of the budget is used; the walk stops at the first message that
/// does not fit.
pub fn prepare_branch_entries(entries: &[Value], token_budget: u64) -> BranchPreparation {
    let mut file_ops = FileOps::default();
    for entry in entries {
        if entry.get("type").and_then(Value::as_str) == Some("branch_summary")
            && !js_truthy(entry.get("fromHook"))
            && js_truthy(entry.get("details"))
        {
            file_ops.add_from_details(&entry["details"]);
        }
    }
    // pi 1.6's `context_edit`s of messages and custom messages apply here too (the latest
    // edit per target): what an extension edited out of the context is not summarized.
    let edits = super::context::context_edits(entries);
    let mut messages = Vec::new();
    let mut total_tokens = 0;
    for entry in entries.iter().rev() {
        let Some(message) = message_for_branch(entry) else {
            continue;
        };
        let message = match entry.get("type").and_then(Value::as_str) {
            Some("message" | "custom_message") => {
                match super::context::edited(entry, message, &edits) {
                    Some(message) => message,
                    None => continue,
                }
            }
            _ => message,
        };
        file_ops.add_from_message(&message);
        let tokens = estimate_tokens(&message);
        if token_budget > 0 && total_tokens + tokens > token_budget {
            let is_summary = matches!(
                entry.get("type").and_then(Value::as_str),
                Some("compaction" | "branch_summary")
            );
            if is_summary && (total_tokens as f64) < token_budget as f64 * 0.9 {
                messages.push(message);
                total_tokens += tokens;
            }
            break;
        }
        messages.push(message);
        total_tokens += tokens;
    }
    messages.reverse();
    BranchPreparation {
        messages,
        file_ops,
        total_tokens,
    }
}

/// The context window assumed for a model that does not say (pi's 128000).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// The summary pi stores when the branch has no message to summarize.
pub const NO_CONTENT_SUMMARY: &str = "No content to summarize";

/// What summarizing a branch takes: the request, and the files for the entry's `details`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSummaryRequest {
    /// The request to the summarizing model (output limit 2048 tokens, as pi).
    pub request: SummaryRequest,
    /// `{readFiles, modifiedFiles}` for the summary entry's `details`.
    pub details: FileLists,
}

/// The summarization request for `entries` (from [`collect_entries_for_branch_summary`]), as
/// pi's `generateBranchSummary` builds it: the budget is the model's context window (`None` or
/// 0: [`DEFAULT_CONTEXT_WINDOW`]) minus `reserve_tokens` (settings.json's
/// `branchSummary.reserveTokens`, 16384 by default; no limit when the reserve is the whole
/// window); `custom_instructions` are added as a focus, or replace our instructions when
/// `replace_instructions` is set. `None` when no message is left: pi then stores
/// [`NO_CONTENT_SUMMARY`] with empty file lists.
pub fn branch_summary_request(
    entries: &[Value],
    context_window: Option<u64>,
    reserve_tokens: u64,
    custom_instructions: Option<&str>,
    replace_instructions: bool,
) -> Option<BranchSummaryRequest> {
    let window = context_window
        .filter(|w| *w > 0)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let budget = window.saturating_sub(reserve_tokens);
    let prepared = prepare_branch_entries(entries, budget);
    if prepared.messages.is_empty() {
        return None;
    }
    let custom = custom_instructions.filter(|s| !s.is_empty());
    let instructions = match custom {
        Some(custom) if replace_instructions => custom.to_owned(),
        Some(custom) => format!("{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom}"),
        None => BRANCH_SUMMARY_PROMPT.to_owned(),
    };
    Some(BranchSummaryRequest {
        request: SummaryRequest {
            system_prompt: SUMMARIZATION_SYSTEM_PROMPT.to_owned(),
            prompt: format!("{}{instructions}", conversation_block(&prepared.messages)),
            max_tokens: 2048,
        },
        details: prepared.file_ops.file_lists(),
    })
}

/// The summary text to store from the model's answer: our preamble, the answer, then the file
/// lists (`<read-files>`, `<modified-files>`), as pi assembles it.
pub fn finish_branch_summary(answer: &str, details: &FileLists) -> String {
    format!(
        "{BRANCH_SUMMARY_PREAMBLE}{answer}{}",
        details.summary_suffix()
    )
}

/// The `preparation` of pi's `session_before_tree` event: `{targetId, oldLeafId,
/// commonAncestorId, entriesToSummarize, userWantsSummary, customInstructions?,
/// replaceInstructions?, label?}` (the optional ones are left out when not given, as pi's
/// `undefined`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TreePreparation {
    /// Where the leaf moves to.
    pub target_id: String,
    /// Where the leaf was (`null` before the first entry).
    pub old_leaf_id: Option<String>,
    /// See [`BranchEntries::common_ancestor_id`].
    pub common_ancestor_id: Option<String>,
    /// See [`BranchEntries::entries`].
    pub entries_to_summarize: Vec<Value>,
    /// Whether the user asked for a summary.
    pub user_wants_summary: bool,
    /// Instructions for the summarizer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
    /// Whether they replace the default instructions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace_instructions: Option<bool>,
    /// A label for the summary entry (or the target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

const BRANCH_SUMMARY_PREAMBLE: &str = "Before coming back here, the user worked on another branch of this conversation. What \
     happened there:\n\n";

const BRANCH_SUMMARY_PROMPT: &str = "Summarize the conversation branch above, so that its work \
can be picked up when someone comes back to it. Use these sections, in this order:

## Goal
What the user wanted to do in this branch.

## Constraints & Preferences
- Requirements, restrictions and preferences stated, or \"(none)\".

## Progress
### Done
- [x] Finished work and changes
### In Progress
- [ ] Work started and not finished
### Blocked
- What stands in the way, if anything

## Key Decisions
- **Decision**: why it was taken

## Next Steps
1. What to do next to carry on

Be brief in every section. Keep file paths, function names and error messages exactly as \
written.";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    fn tree(entries: &[Value]) -> HashMap<String, Value> {
        entries
            .iter()
            .map(|e| (e["id"].as_str().unwrap().to_owned(), e.clone()))
            .collect()
    }

    fn node(id: &str, parent: Option<&str>, message: Value) -> Value {
        json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-01-24T10:00:00.000Z", "message": message})
    }

    fn ids(collected: &BranchEntries) -> Vec<&str> {
        collected
            .entries
            .iter()
            .map(|e| e["id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn collects_from_the_old_leaf_up_to_the_common_ancestor() {
        let user = |text: &str| json!({"role": "user", "content": text});
        let entries = tree(&[
            node("r", None, user("root")),
            node("a1", Some("r"), user("a1")),
            node("a2", Some("a1"), user("a2")),
            node("b1", Some("r"), user("b1")),
        ]);
        let lookup = |id: &str| entries.get(id);
        let collected = collect_entries_with(lookup, Some("a2"), "b1");
        assert_eq!(ids(&collected), ["a1", "a2"]);
        assert_eq!(collected.common_ancestor_id.as_deref(), Some("r"));
        // Moving up the same branch: only what lies below the target.
        let collected = collect_entries_with(lookup, Some("a2"), "a1");
        assert_eq!(ids(&collected), ["a2"]);
        // An unknown target shares nothing.
        let collected = collect_entries_with(lookup, Some("a2"), "zz");
        assert_eq!(ids(&collected), ["r", "a1", "a2"]);
        assert_eq!(collected.common_ancestor_id, None);
        let collected = collect_entries_with(lookup, None, "b1");
        assert!(collected.entries.is_empty());
        assert_eq!(
            serde_json::to_value(&collected).unwrap(),
            json!({"entries": [], "commonAncestorId": null})
        );
    }

    #[test]
    fn a_parent_cycle_ends_the_walk() {
        let entries = tree(&[
            node("x", Some("y"), json!({"role": "user", "content": "x"})),
            node("y", Some("x"), json!({"role": "user", "content": "y"})),
        ]);
        let collected = collect_entries_with(|id| entries.get(id), Some("x"), "zz");
        assert_eq!(ids(&collected), ["y", "x"]);
    }

    #[test]
    fn budget_keeps_the_newest_messages_and_summaries_that_fit_nearly() {
        let text = |n: usize| json!({"role": "user", "content": "x".repeat(n * 4)});
        let entries = [
            node("old", None, text(50)),
            json!({"type": "branch_summary", "id": "s", "fromId": "old", "summary": "s".repeat(80),
                "timestamp": "2026-01-24T10:00:00.000Z",
                "details": {"readFiles": ["r.md"], "modifiedFiles": ["m.rs"]}}),
            json!({"type": "branch_summary", "id": "h", "fromId": "old", "summary": "plugin",
                "fromHook": true, "details": {"readFiles": ["hook.md"]}}),
            node(
                "tool",
                None,
                json!({"role": "toolResult", "content": [{"type": "text", "text": "big"}]}),
            ),
            node("new", None, text(80)),
        ];
        // 80 + 2 (the plugin's summary) fit in 100; the 20-token summary does not, but is taken
        // as 82 < 90; the walk stops there.
        let prepared = prepare_branch_entries(&entries, 100);
        assert_eq!(prepared.total_tokens, 102);
        assert_eq!(prepared.messages.len(), 3);
        assert_eq!(prepared.messages[0]["role"], "branchSummary");
        let lists = prepared.file_ops.file_lists();
        assert_eq!(lists.read_files, ["r.md"]);
        assert_eq!(lists.modified_files, ["m.rs"]);
        assert_eq!(prepare_branch_entries(&entries, 0).messages.len(), 4);

        let request = branch_summary_request(&entries, Some(16484), 16384, Some("tests"), false)
            .expect("messages to summarize");
        assert_eq!(request.request.max_tokens, 2048);
        assert!(
            request
                .request
                .prompt
                .starts_with("<conversation>\n[User]: ")
        );
        assert!(
            request
                .request
                .prompt
                .ends_with("\n\nAdditional focus: tests")
        );
        let replaced = branch_summary_request(&entries, None, 16384, Some("ONLY"), true).unwrap();
        assert!(replaced.request.prompt.ends_with("</conversation>\n\nONLY"));
        assert_eq!(
            branch_summary_request(&entries[3..4], None, 16384, None, false),
            None
        );
        assert_eq!(
            finish_branch_summary("S", &request.details),
            format!(
                "{BRANCH_SUMMARY_PREAMBLE}S\n\n<read-files>\nr.md\n</read-files>\n\n<modified-files>\nm.rs\n</modified-files>"
            )
        );
    }

    #[test]
    fn context_edits_apply_to_what_a_branch_summary_sees() {
        let entries = [
            node(
                "u1",
                None,
                json!({"role": "user", "content": "secret hunter2"}),
            ),
            node(
                "a1",
                Some("u1"),
                json!({"role": "assistant", "content": [{"type": "text", "text": "gone"}]}),
            ),
            json!({"type": "context_edit", "id": "e1", "parentId": "a1", "targetId": "u1",
                   "replacement": {"content": "[EDITED OUT]"}}),
            json!({"type": "context_edit", "id": "e2", "parentId": "e1", "targetId": "a1",
                   "replacement": null}),
        ];
        let prepared = prepare_branch_entries(&entries, 0);
        let text = serde_json::to_string(&prepared.messages).unwrap();
        assert!(
            text.contains("[EDITED OUT]") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(!text.contains("gone"), "{text}");
    }

    #[test]
    fn tree_preparation_leaves_out_what_was_not_given() {
        let preparation = TreePreparation {
            target_id: "t".into(),
            old_leaf_id: None,
            common_ancestor_id: None,
            entries_to_summarize: vec![],
            user_wants_summary: false,
            custom_instructions: None,
            replace_instructions: None,
            label: Some("L".into()),
        };
        assert_eq!(
            serde_json::to_value(&preparation).unwrap(),
            json!({"targetId": "t", "oldLeafId": null, "commonAncestorId": null,
                "entriesToSummarize": [], "userWantsSummary": false, "label": "L"})
        );
    }
}
