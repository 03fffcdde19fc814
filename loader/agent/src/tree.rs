//! Tree navigation, as pi 0.73.1's `navigateTree`: the leaf moves to another entry of the
//! same session file, optionally leaving a summary of the branch it leaves behind.
//!
//! `session_before_tree {preparation, signal}` may cancel, give the summary (used when one
//! was asked for) or override the instructions and the label. A user (or custom) message as
//! the target puts the leaf on its parent and returns its text for the editor; any other
//! entry becomes the leaf. With a summary, a `branch_summary` entry is appended there (and the
//! label goes on it); without one, the label goes on the target. The agent's messages are
//! rebuilt from the new branch, and plugins get `session_tree {newLeafId, oldLeafId,
//! summaryEntry?, fromExtension?}`.

use serde_json::{Map, Value, json};

use super::session_ops::user_text;
use super::{Agent, Shared};
use pi_hooks_host::runner::truthy;
use pi_hooks_host::services::TreeOptions;
use pi_hooks_session::branch_summary::{
    NO_CONTENT_SUMMARY, TreePreparation, branch_summary_request,
    collect_entries_for_branch_summary, finish_branch_summary,
};

/// pi's `branchSummary.reserveTokens` default.
const BRANCH_SUMMARY_RESERVE_TOKENS: u64 = 16384;

/// What a tree navigation did.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeOutcome {
    /// A `session_before_tree` handler cancelled it.
    pub cancelled: bool,
    /// The text of the user message navigated to, for the editor.
    pub editor_text: Option<String>,
    /// The `branch_summary` entry written, if any.
    pub summary_entry: Option<Value>,
}

impl Agent {
    /// Moves to entry `target_id` of the session tree (pi's `navigateTree`). Refused while a
    /// run is in progress; an unknown entry is pi's `Entry <id> not found`.
    pub fn navigate_tree(
        &mut self,
        target_id: &str,
        options: &TreeOptions,
    ) -> Result<TreeOutcome, String> {
        let outcome = self.navigate(target_id, options);
        self.drain_runs();
        outcome
    }

    pub(super) fn navigate(
        &mut self,
        target_id: &str,
        options: &TreeOptions,
    ) -> Result<TreeOutcome, String> {
        if self.core.shared.is_streaming() {
            return Err(
                "cannot navigate the session tree while the agent is running; abort the run first"
                    .into(),
            );
        }
        let core = &self.core;
        let unchanged = TreeOutcome {
            cancelled: false,
            editor_text: None,
            summary_entry: None,
        };
        let (old_leaf, target, collected) = {
            let session = Shared::lock(&core.shared.session);
            let old_leaf = session.leaf_id().map(str::to_owned);
            if old_leaf.as_deref() == Some(target_id) {
                return Ok(unchanged);
            }
            let target = session
                .entry(target_id)
                .cloned()
                .ok_or_else(|| format!("Entry {target_id} not found"))?;
            let collected =
                collect_entries_for_branch_summary(&session, old_leaf.as_deref(), target_id);
            (old_leaf, target, collected)
        };
        let mut custom_instructions = options.custom_instructions.clone();
        let mut replace_instructions = options.replace_instructions;
        let mut label = options.label.clone();
        let mut plugin_summary: Option<Value> = None;
        if core.runner.has_handlers("session_before_tree") {
            let preparation = TreePreparation {
                target_id: target_id.to_owned(),
                old_leaf_id: old_leaf.clone(),
                common_ancestor_id: collected.common_ancestor_id.clone(),
                entries_to_summarize: collected.entries.clone(),
                user_wants_summary: options.summarize,
                custom_instructions: custom_instructions.clone(),
                replace_instructions,
                label: label.clone(),
            };
            let result = core.runner.emit_session_before(json!({
                "type": "session_before_tree",
                "preparation": preparation,
                "signal": {"aborted": false},
            }));
            let result = result.unwrap_or(Value::Null);
            if result.get("cancel").is_some_and(truthy) {
                return Ok(TreeOutcome {
                    cancelled: true,
                    ..unchanged
                });
            }
            if options.summarize {
                plugin_summary = result.get("summary").cloned().filter(truthy);
            }
            if let Some(value) = result.get("customInstructions") {
                custom_instructions = value.as_str().map(str::to_owned);
            }
            if let Some(value) = result.get("replaceInstructions") {
                replace_instructions = value.as_bool();
            }
            if let Some(value) = result.get("label") {
                label = value.as_str().map(str::to_owned);
            }
        }
        let from_extension = plugin_summary.is_some();
        let summary: Option<(String, Option<Value>)> = match plugin_summary {
            // `{summary, details?}`, or a plain string.
            Some(Value::String(text)) => Some((text, None)),
            Some(given) => Some((
                given["summary"].as_str().unwrap_or_default().to_owned(),
                given.get("details").cloned().filter(|d| !d.is_null()),
            )),
            None if options.summarize && !collected.entries.is_empty() => {
                let window = core.shared.model_info()["contextWindow"].as_u64();
                match branch_summary_request(
                    &collected.entries,
                    window,
                    BRANCH_SUMMARY_RESERVE_TOKENS,
                    custom_instructions.as_deref(),
                    replace_instructions.unwrap_or(false),
                ) {
                    Some(request) => {
                        let answer = self.model.summarize(
                            &request.request.system_prompt,
                            &request.request.prompt,
                            request.request.max_tokens,
                        )?;
                        Some((
                            finish_branch_summary(&answer, &request.details),
                            Some(request.details.to_details()),
                        ))
                    }
                    None => Some((
                        NO_CONTENT_SUMMARY.to_owned(),
                        Some(json!({"readFiles": [], "modifiedFiles": []})),
                    )),
                }
            }
            None => None,
        };
        let core = &self.core;
        let (new_leaf, editor_text) = match target["type"].as_str() {
            Some("message") if target["message"]["role"] == "user" => (
                target["parentId"].as_str().map(str::to_owned),
                Some(user_text(&target["message"]["content"])),
            ),
            Some("custom_message") => (
                target["parentId"].as_str().map(str::to_owned),
                Some(user_text(&target["content"])),
            ),
            _ => (Some(target_id.to_owned()), None),
        };
        let summary_entry = {
            let mut session = Shared::lock(&core.shared.session);
            let failed = |e: pi_hooks_session::SessionError| e.to_string();
            let entry = match &summary {
                Some((text, details)) => {
                    let id = session
                        .append_branch_summary(
                            new_leaf.as_deref(),
                            text,
                            details.clone(),
                            Some(from_extension),
                        )
                        .map_err(failed)?;
                    if let Some(label) = label.as_deref().filter(|l| !l.is_empty()) {
                        session.append_label(&id, Some(label)).map_err(failed)?;
                    }
                    session.entry(&id).cloned()
                }
                None => {
                    session.set_leaf(new_leaf.as_deref()).map_err(failed)?;
                    None
                }
            };
            if summary.is_none()
                && let Some(label) = label.as_deref().filter(|l| !l.is_empty())
            {
                session
                    .append_label(target_id, Some(label))
                    .map_err(failed)?;
            }
            *Shared::lock(&core.shared.messages) = session.context_messages();
            entry
        };
        let new_leaf_id = Shared::lock(&core.shared.session)
            .leaf_id()
            .map(str::to_owned);
        let mut event = Map::new();
        event.insert("type".into(), "session_tree".into());
        event.insert("newLeafId".into(), new_leaf_id.into());
        event.insert("oldLeafId".into(), old_leaf.into());
        if let Some(entry) = &summary_entry {
            event.insert("summaryEntry".into(), entry.clone());
            event.insert("fromExtension".into(), from_extension.into());
        }
        core.runner.emit(Value::Object(event));
        Ok(TreeOutcome {
            cancelled: false,
            editor_text,
            summary_entry,
        })
    }
}
