//! Compaction preparation: pi's `core/compaction/compaction.js` without the model call.
//!
//! When a branch's context grows too big ([`should_compact`]), pi replaces its older part with a
//! summary: [`prepare_compaction`] walks the branch back from the leaf, estimating tokens per
//! message (characters / 4, [`estimate_tokens`]) until [`CompactionSettings::keep_recent_tokens`]
//! are kept, and cuts there ([`find_cut_point`]), at a user, assistant, custom or bash message,
//! never at a tool result. What lies before the cut (since the previous compaction's first kept
//! entry) is to be summarized; a cut inside a turn also asks for a summary of that turn's start
//! ([`CompactionPreparation::is_split_turn`]). The preparation serializes exactly as the
//! `preparation` of pi's `session_before_compact` event; [`CompactionPreparation::requests`]
//! gives the summarization requests, and [`CompactionPreparation::finish`] the compaction to
//! append (`{summary, firstKeptEntryId, tokensBefore, details:{readFiles, modifiedFiles}}`).
//!
//! Faithful to pi in what is cut, kept, counted and listed (the golden test
//! `tests/tests/compaction_golden.rs` compares with pi 0.73.1 on the sessions in
//! `tests/fixtures/compaction/`), including pi's ways that may surprise: a session too small to
//! cut still gets a preparation (with nothing to summarize, the first entry kept); only an
//! empty branch, or one ending in a compaction, gets none ([`NoCompaction`]). We differ in the
//! prompt wording (ours), and where pi would compute `NaN` or throw on a malformed entry (a
//! missing `usage` field, a message without content): that counts as 0 or is skipped here.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::context;
use super::summarize::{
    FileLists, FileOps, SUMMARIZATION_SYSTEM_PROMPT, SummaryRequest, conversation_block,
    js_date_millis, js_len, js_stringify, js_truthy,
};

/// The `compaction` settings (settings.json's `compaction` object, camelCase keys; pi's
/// `CompactionSettings`). [`Default`] is pi's `DEFAULT_COMPACTION_SETTINGS`, and a key left out
/// of settings.json takes its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    /// Whether compaction runs by itself when the context is nearly full (`true`).
    pub enabled: bool,
    /// Tokens kept free in the context window for the answer (16384); also sizes the summary.
    pub reserve_tokens: u64,
    /// Tokens of the most recent messages kept as they are (20000).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
        }
    }
}

impl CompactionSettings {
    /// Reads settings.json's `compaction` value; an error names the key, the value found and
    /// what is expected.
    pub fn from_settings_value(compaction: &Value) -> Result<CompactionSettings, String> {
        let Value::Object(map) = compaction else {
            return Err(format!(
                "settings key `compaction` must be an object like {{\"enabled\": true, \"reserveTokens\": 16384, \
                 \"keepRecentTokens\": 20000}}, found {compaction}"
            ));
        };
        let mut settings = CompactionSettings::default();
        if let Some(value) = map.get("enabled") {
            settings.enabled = value.as_bool().ok_or_else(|| {
                format!("settings key `compaction.enabled` must be true or false, found {value}")
            })?;
        }
        let count = |key: &str, default: u64| -> Result<u64, String> {
            match map.get(key) {
                None => Ok(default),
                Some(value) => value.as_u64().ok_or_else(|| {
                    format!(
                        "settings key `compaction.{key}` must be a whole number of tokens, found {value}"
                    )
                }),
            }
        };
        settings.reserve_tokens = count("reserveTokens", settings.reserve_tokens)?;
        settings.keep_recent_tokens = count("keepRecentTokens", settings.keep_recent_tokens)?;
        Ok(settings)
    }
}

// ---------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------

/// The tokens of a context as an assistant message's `usage` reports them (pi's
/// `calculateContextTokens`): `totalTokens` when it is not 0, else `input + output + cacheRead
/// + cacheWrite`. Missing counts are 0.
pub fn calculate_context_tokens(usage: &Value) -> u64 {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    match count("totalTokens") {
        0 => count("input") + count("output") + count("cacheRead") + count("cacheWrite"),
        total => total,
    }
}

/// The `usage` of an assistant message that has one and did not end `aborted` or `error`.
fn assistant_usage(message: &Value) -> Option<&Value> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let stop = message.get("stopReason").and_then(Value::as_str);
    if matches!(stop, Some("aborted" | "error")) {
        return None;
    }
    message.get("usage").filter(|usage| js_truthy(Some(usage)))
}

/// The `usage` of the last assistant message among `entries` that has a valid one (pi's
/// `getLastAssistantUsage`).
pub fn last_assistant_usage(entries: &[Value]) -> Option<&Value> {
    entries
        .iter()
        .rev()
        .filter(|entry| entry_type(entry) == "message")
        .find_map(|entry| entry.get("message").and_then(assistant_usage))
}

/// A rough token count of one message (pi's `estimateTokens`): its characters (UTF-16 units)
/// divided by 4, rounded up. Counted: the text of user messages; text, thinking and tool calls
/// (name + JSON of the arguments) of assistant messages; text of custom messages and tool
/// results, 4800 characters per image; command + output of bash runs; summaries. Other roles
/// count 0.
pub fn estimate_tokens(message: &Value) -> u64 {
    let text_len = |value: Option<&Value>| value.and_then(Value::as_str).map_or(0, js_len);
    let blocks: &[Value] = message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let kind = |block: &Value| block.get("type").and_then(Value::as_str).map(str::to_owned);
    let content = message.get("content");
    let chars: usize = match message.get("role").and_then(Value::as_str) {
        Some("user") => match content {
            Some(Value::String(text)) => js_len(text),
            _ => blocks
                .iter()
                .filter(|block| kind(block).as_deref() == Some("text"))
                .map(|block| text_len(block.get("text")))
                .sum(),
        },
        Some("assistant") => blocks
            .iter()
            .map(|block| match kind(block).as_deref() {
                Some("text") => text_len(block.get("text")),
                Some("thinking") => text_len(block.get("thinking")),
                Some("toolCall") => {
                    text_len(block.get("name"))
                        + block
                            .get("arguments")
                            .map_or(0, |args| js_len(&js_stringify(args)))
                }
                _ => 0,
            })
            .sum(),
        Some("custom" | "toolResult") => match content {
            Some(Value::String(text)) => js_len(text),
            _ => blocks
                .iter()
                .map(|block| match kind(block).as_deref() {
                    Some("text") => text_len(block.get("text")),
                    Some("image") => 4800,
                    _ => 0,
                })
                .sum(),
        },
        Some("bashExecution") => text_len(message.get("command")) + text_len(message.get("output")),
        Some("branchSummary" | "compactionSummary") => text_len(message.get("summary")),
        _ => 0,
    };
    chars.div_ceil(4) as u64
}

/// A context's size in tokens (pi's `ContextUsageEstimate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextTokens {
    /// `usage_tokens + trailing_tokens`.
    pub tokens: u64,
    /// What the last valid assistant `usage` reports (0 without one).
    pub usage_tokens: u64,
    /// Estimated tokens of the messages after that assistant message (all of them without one).
    pub trailing_tokens: u64,
    /// The index of that assistant message in the list.
    pub last_usage_index: Option<usize>,
}

/// The tokens of `messages` (a context, as [`super::SessionContext::messages`]): the last
/// assistant message's reported usage plus an estimate of what came after it (pi's
/// `estimateContextTokens`).
pub fn estimate_context_tokens(messages: &[Value]) -> ContextTokens {
    let last_usage = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| assistant_usage(message).map(|usage| (index, usage)));
    let estimate = |from: usize| messages[from..].iter().map(estimate_tokens).sum::<u64>();
    match last_usage {
        None => {
            let trailing = estimate(0);
            ContextTokens {
                tokens: trailing,
                usage_tokens: 0,
                trailing_tokens: trailing,
                last_usage_index: None,
            }
        }
        Some((index, usage)) => {
            let usage_tokens = calculate_context_tokens(usage);
            let trailing_tokens = estimate(index + 1);
            ContextTokens {
                tokens: usage_tokens + trailing_tokens,
                usage_tokens,
                trailing_tokens,
                last_usage_index: Some(index),
            }
        }
    }
}

/// Whether a context of `context_tokens` should be compacted in a window of `context_window`
/// tokens: when compaction is enabled and less than `reserve_tokens` are left (pi's
/// `shouldCompact`).
pub fn should_compact(
    context_tokens: u64,
    context_window: u64,
    settings: &CompactionSettings,
) -> bool {
    settings.enabled
        && context_window
            .checked_sub(settings.reserve_tokens)
            .is_none_or(|limit| context_tokens > limit)
}

// ---------------------------------------------------------------------------------------------
// Cut point
// ---------------------------------------------------------------------------------------------

/// Where to cut a branch (pi's `CutPointResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// The index of the first entry kept.
    pub first_kept_entry_index: usize,
    /// When the cut is inside a turn, the index of the entry that started the turn.
    pub turn_start_index: Option<usize>,
    /// Whether the cut is inside a turn (the first kept entry is not a user message, and a
    /// turn start lies before it).
    pub is_split_turn: bool,
}

fn entry_type(entry: &Value) -> &str {
    entry.get("type").and_then(Value::as_str).unwrap_or("")
}

fn message_role(entry: &Value) -> Option<&str> {
    entry.get("message")?.get("role")?.as_str()
}

/// Entries a cut may fall on: user, assistant, custom, bash and summary messages, and
/// `branch_summary` / `custom_message` entries; never a tool result.
fn is_valid_cut_point(entry: &Value) -> bool {
    match entry_type(entry) {
        "message" => matches!(
            message_role(entry),
            Some(
                "bashExecution"
                    | "custom"
                    | "branchSummary"
                    | "compactionSummary"
                    | "user"
                    | "assistant"
            )
        ),
        "branch_summary" | "custom_message" => true,
        _ => false,
    }
}

/// The entry that starts the turn holding entry `entry_index`, looking back no further than
/// `start_index`: a user or bash message, a `branch_summary` or a `custom_message` (pi's
/// `findTurnStartIndex`).
pub fn find_turn_start_index(
    entries: &[Value],
    entry_index: usize,
    start_index: usize,
) -> Option<usize> {
    if entries.is_empty() || start_index > entry_index {
        return None;
    }
    (start_index..=entry_index.min(entries.len() - 1))
        .rev()
        .find(|&index| {
            let entry = &entries[index];
            matches!(entry_type(entry), "branch_summary" | "custom_message")
                || (entry_type(entry) == "message"
                    && matches!(message_role(entry), Some("user" | "bashExecution")))
        })
}

/// Where to cut `entries[start_index..end_index]` so that about `keep_recent_tokens` of the
/// newest messages are kept (pi's `findCutPoint`).
///
/// Walking back from the newest `message` entry and adding up [`estimate_tokens`], the cut goes
/// to the first valid cut point at or after the entry where the sum reaches the budget (and
/// to the first cut point in the range when it never does, or when no cut point follows); then
/// it moves back over entries that are not messages (settings changes, labels, custom entries,
/// ...), stopping at a message or a compaction. With no valid cut point the range is kept whole.
pub fn find_cut_point(
    entries: &[Value],
    start_index: usize,
    end_index: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let end_index = end_index.min(entries.len());
    let cut_points: Vec<usize> = (start_index..end_index)
        .filter(|&index| is_valid_cut_point(&entries[index]))
        .collect();
    let Some(&first_cut_point) = cut_points.first() else {
        return CutPoint {
            first_kept_entry_index: start_index,
            turn_start_index: None,
            is_split_turn: false,
        };
    };
    let mut cut_index = first_cut_point;
    let mut accumulated = 0;
    for index in (start_index..end_index).rev() {
        let entry = &entries[index];
        if entry_type(entry) != "message" {
            continue;
        }
        accumulated += entry.get("message").map_or(0, estimate_tokens);
        if accumulated >= keep_recent_tokens {
            if let Some(&at) = cut_points.iter().find(|&&at| at >= index) {
                cut_index = at;
            }
            break;
        }
    }
    while cut_index > start_index {
        let previous = entry_type(&entries[cut_index - 1]);
        if previous == "compaction" || previous == "message" {
            break;
        }
        cut_index -= 1;
    }
    let cut_entry = &entries[cut_index];
    let is_user_message =
        entry_type(cut_entry) == "message" && message_role(cut_entry) == Some("user");
    let turn_start_index = if is_user_message {
        None
    } else {
        find_turn_start_index(entries, cut_index, start_index)
    };
    CutPoint {
        first_kept_entry_index: cut_index,
        turn_start_index,
        is_split_turn: !is_user_message && turn_start_index.is_some(),
    }
}

// ---------------------------------------------------------------------------------------------
// Preparation
// ---------------------------------------------------------------------------------------------

/// Why a branch cannot be compacted. [`std::fmt::Display`] gives pi's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoCompaction {
    /// The branch ends in a compaction: "Already compacted".
    AlreadyCompacted,
    /// The branch is empty (or its first kept entry has no id, a file pi would migrate):
    /// "Nothing to compact (session too small)".
    NothingToCompact,
}

impl std::fmt::Display for NoCompaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoCompaction::AlreadyCompacted => "Already compacted",
            NoCompaction::NothingToCompact => "Nothing to compact (session too small)",
        })
    }
}

impl std::error::Error for NoCompaction {}

/// What a compaction works from (pi's `CompactionPreparation`). Serializes as the `preparation`
/// of pi's `session_before_compact` event: `{firstKeptEntryId, messagesToSummarize,
/// turnPrefixMessages, isSplitTurn, tokensBefore, previousSummary?, fileOps, settings}`, where
/// `fileOps` is `{"read":{},"written":{},"edited":{}}` as pi's Sets stringify (the paths are in
/// [`CompactionPreparation::file_lists`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionPreparation {
    /// The id of the first entry kept after the summary.
    pub first_kept_entry_id: String,
    /// The messages the summary replaces (oldest first), as the entries give them: a `message`
    /// entry's message, `custom_message` and `branch_summary` entries made into `custom` and
    /// `branchSummary` messages; compactions left out.
    pub messages_to_summarize: Vec<Value>,
    /// When the cut splits a turn, that turn's messages before the cut.
    pub turn_prefix_messages: Vec<Value>,
    /// Whether the cut splits a turn.
    pub is_split_turn: bool,
    /// The context's tokens before compacting ([`estimate_context_tokens`] of the branch's
    /// context).
    pub tokens_before: u64,
    /// The summary of the branch's previous compaction, to be updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_summary: Option<String>,
    /// The files read and changed by what is summarized, and by the previous compaction (its
    /// `details`, unless a plugin wrote it).
    pub file_ops: FileOps,
    /// The settings it was prepared with.
    pub settings: CompactionSettings,
}

/// The model requests a compaction needs (see [`CompactionPreparation::requests`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionRequests {
    /// The summary of [`CompactionPreparation::messages_to_summarize`] (updating the previous
    /// summary, if any). `None` only for a split turn with nothing before it: the summary is
    /// then [`NO_PRIOR_HISTORY`].
    pub history: Option<SummaryRequest>,
    /// The summary of the split turn's start, for a split turn.
    pub turn_prefix: Option<SummaryRequest>,
}

/// The history summary pi uses when a split turn has nothing before it.
pub const NO_PRIOR_HISTORY: &str = "No prior history.";

/// A compaction ready to append (pi's `CompactionResult`), serializing as the `result` of pi's
/// `compaction_end` event: `{summary, firstKeptEntryId, tokensBefore, details}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionResult {
    /// The summary, with the file lists appended.
    pub summary: String,
    /// The first entry kept.
    pub first_kept_entry_id: String,
    /// The context's tokens before compacting.
    pub tokens_before: u64,
    /// `{readFiles, modifiedFiles}`.
    pub details: FileLists,
}

impl CompactionPreparation {
    /// The files read only, and the files modified (the compaction's `details`).
    pub fn file_lists(&self) -> FileLists {
        self.file_ops.file_lists()
    }

    /// The preparation as a plugin sees it in `session_before_compact`.
    pub fn to_event_json(&self) -> Value {
        serde_json::to_value(self).expect("a preparation serializes")
    }

    /// The requests to send to a summarizing model, as pi's `compact` sends them: the history
    /// summary (output limit 80% of `reserve_tokens`) unless a split turn has no history, and
    /// for a split turn with messages before the cut the turn-prefix summary (50%).
    /// `custom_instructions` (`/compact <instructions>`) are added to the history request.
    pub fn requests(&self, custom_instructions: Option<&str>) -> CompactionRequests {
        let split = self.is_split_turn && !self.turn_prefix_messages.is_empty();
        let history = (!split || !self.messages_to_summarize.is_empty())
            .then(|| self.history_request(custom_instructions));
        let turn_prefix = split.then(|| SummaryRequest {
            system_prompt: SUMMARIZATION_SYSTEM_PROMPT.to_owned(),
            prompt: format!(
                "{}{TURN_PREFIX_PROMPT}",
                conversation_block(&self.turn_prefix_messages)
            ),
            max_tokens: fraction(self.settings.reserve_tokens, 0.5),
        });
        CompactionRequests {
            history,
            turn_prefix,
        }
    }

    /// The history request: the transcript in `<conversation>` tags, the previous summary in
    /// `<previous-summary>` tags when there is one, then the instructions (to write a summary,
    /// or to update the previous one), and `custom_instructions` as an additional focus.
    pub fn history_request(&self, custom_instructions: Option<&str>) -> SummaryRequest {
        let mut prompt = conversation_block(&self.messages_to_summarize);
        let previous = self.previous_summary.as_deref().filter(|s| !s.is_empty());
        if let Some(previous) = previous {
            prompt.push_str(&format!(
                "<previous-summary>\n{previous}\n</previous-summary>\n\n"
            ));
        }
        prompt.push_str(if previous.is_some() {
            UPDATE_PROMPT
        } else {
            SUMMARY_PROMPT
        });
        if let Some(focus) = custom_instructions.filter(|s| !s.is_empty()) {
            prompt.push_str(&format!("\n\nAdditional focus: {focus}"));
        }
        SummaryRequest {
            system_prompt: SUMMARIZATION_SYSTEM_PROMPT.to_owned(),
            prompt,
            max_tokens: fraction(self.settings.reserve_tokens, 0.8),
        }
    }

    /// The compaction to append, from the model's answers to [`CompactionPreparation::requests`]
    /// (`history`: `None` when there was no history request): for a split turn, the history
    /// summary, a rule and the turn-prefix summary under a heading; then the file lists
    /// (`<read-files>`, `<modified-files>`), as pi's `compact` assembles it.
    pub fn finish(&self, history: Option<&str>, turn_prefix: Option<&str>) -> CompactionResult {
        let history = history.unwrap_or(NO_PRIOR_HISTORY);
        let mut summary = match turn_prefix {
            Some(prefix) if self.is_split_turn && !self.turn_prefix_messages.is_empty() => {
                format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}")
            }
            _ => history.to_owned(),
        };
        let details = self.file_lists();
        summary.push_str(&details.summary_suffix());
        CompactionResult {
            summary,
            first_kept_entry_id: self.first_kept_entry_id.clone(),
            tokens_before: self.tokens_before,
            details,
        }
    }
}

/// `Math.floor(share * tokens)`, in floating point as pi computes it.
fn fraction(tokens: u64, share: f64) -> u64 {
    (share * tokens as f64).floor() as u64
}

/// The message an entry contributes to a compaction's summary, if any (pi's
/// `getMessageFromEntryForCompaction`).
fn message_for_compaction(entry: &Value) -> Option<Value> {
    match entry_type(entry) {
        "message" => entry.get("message").filter(|m| js_truthy(Some(m))).cloned(),
        "custom_message" => Some(made_message(
            entry,
            "custom",
            &["customType", "content", "display", "details"],
        )),
        "branch_summary" => Some(made_message(entry, "branchSummary", &["summary", "fromId"])),
        _ => None,
    }
}

/// `{role, <keys the entry has>, timestamp}` with the entry's time in milliseconds, as pi's
/// `createCustomMessage` / `createBranchSummaryMessage` / `createCompactionSummaryMessage`
/// build them (absent fields are left out, as `JSON.stringify` drops `undefined`).
pub(crate) fn made_message(entry: &Value, role: &str, keys: &[&str]) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), role.into());
    for key in keys {
        if let Some(value) = entry.get(*key) {
            message.insert((*key).into(), value.clone());
        }
    }
    message.insert("timestamp".into(), js_date_millis(entry.get("timestamp")));
    Value::Object(message)
}

/// Prepares the compaction of `branch` (entries root -> leaf, as
/// [`super::SessionStore::branch`] gives them) under `settings` (pi's `prepareCompaction`).
///
/// The range considered starts at the previous compaction's first kept entry (or right after
/// that compaction when the entry is not on the branch) and runs to the leaf; see
/// [`find_cut_point`] for where it is cut. `Err` says why there is nothing to prepare; a branch
/// too short to cut is *not* such a case in pi: it gets a preparation that summarizes nothing.
pub fn prepare_compaction(
    branch: &[Value],
    settings: &CompactionSettings,
) -> Result<CompactionPreparation, NoCompaction> {
    if branch
        .last()
        .is_some_and(|entry| entry_type(entry) == "compaction")
    {
        return Err(NoCompaction::AlreadyCompacted);
    }
    let previous = branch
        .iter()
        .rposition(|entry| entry_type(entry) == "compaction");
    let mut previous_summary = None;
    let mut boundary_start = 0;
    if let Some(at) = previous {
        let compaction = &branch[at];
        previous_summary = compaction
            .get("summary")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let first_kept = compaction.get("firstKeptEntryId");
        boundary_start = branch
            .iter()
            .position(|entry| first_kept.is_some() && entry.get("id") == first_kept)
            .unwrap_or(at + 1);
    }
    let refs: Vec<&Value> = branch.iter().collect();
    let tokens_before = estimate_context_tokens(&context::build(&refs).messages).tokens;
    let cut = find_cut_point(
        branch,
        boundary_start,
        branch.len(),
        settings.keep_recent_tokens,
    );
    let first_kept_entry_id = branch
        .get(cut.first_kept_entry_index)
        .and_then(|entry| entry.get("id"))
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or(NoCompaction::NothingToCompact)?
        .to_owned();
    let history_end = match cut.turn_start_index {
        Some(turn_start) if cut.is_split_turn => turn_start,
        _ => cut.first_kept_entry_index,
    };
    // What is summarized is what the context holds: pi 1.6's `context_edit`s applied (a
    // secret an extension edited out of the context is not sent to the summarizer either).
    let edits = context::context_edits(branch.get(boundary_start..).unwrap_or_default());
    let messages = |range: std::ops::Range<usize>| -> Vec<Value> {
        branch
            .get(range)
            .unwrap_or_default()
            .iter()
            .filter_map(|entry| context::edited(entry, message_for_compaction(entry)?, &edits))
            .collect()
    };
    let messages_to_summarize = messages(boundary_start..history_end.max(boundary_start));
    let turn_prefix_messages = match cut.turn_start_index {
        Some(turn_start) if cut.is_split_turn => messages(turn_start..cut.first_kept_entry_index),
        _ => Vec::new(),
    };

    let mut file_ops = FileOps::default();
    if let Some(at) = previous {
        let compaction = &branch[at];
        if !js_truthy(compaction.get("fromHook")) && js_truthy(compaction.get("details")) {
            file_ops.add_from_details(&compaction["details"]);
        }
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix_messages) {
        file_ops.add_from_message(message);
    }
    Ok(CompactionPreparation {
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn,
        tokens_before,
        previous_summary,
        file_ops,
        settings: *settings,
    })
}

/// The `details` pi stores in a compaction it wrote: `{"readFiles":[..],"modifiedFiles":[..]}`.
pub fn compaction_details(lists: &FileLists) -> Value {
    lists.to_details()
}

const SUMMARY_PROMPT: &str = "Write a checkpoint of the conversation above that another model can \
pick the work up from. Use these sections, in this order:

## Goal
What the user wants done (several goals if the session moved between tasks).

## Constraints & Preferences
- Requirements, restrictions and preferences the user stated, or \"(none)\".

## Progress
### Done
- [x] Finished work and changes
### In Progress
- [ ] Work under way
### Blocked
- What stands in the way, if anything

## Key Decisions
- **Decision**: why it was taken

## Next Steps
1. What to do next, in order

## Critical Context
- Data, examples and references the work needs, or \"(none)\".

Be brief in every section. Keep file paths, function names and error messages exactly as \
written.";

const UPDATE_PROMPT: &str = "The conversation above is new; <previous-summary> holds the \
checkpoint written before it. Write the checkpoint again so that it covers both:
- keep everything the previous checkpoint says that still holds;
- add the new progress, decisions and context;
- move items from In Progress to Done when they were finished, and update Next Steps;
- drop what no longer matters;
- keep file paths, function names and error messages exactly as written.

Use these sections, in this order:

## Goal
The goals so far, with any new ones.

## Constraints & Preferences
- Earlier ones and new ones.

## Progress
### Done
- [x] Earlier and newly finished work
### In Progress
- [ ] Work under way now
### Blocked
- What stands in the way now, if anything

## Key Decisions
- **Decision**: why it was taken (earlier ones kept)

## Next Steps
1. What to do next, in order

## Critical Context
- Data, examples and references the work needs.

Be brief in every section.";

const TURN_PREFIX_PROMPT: &str = "The conversation above is the beginning of one turn that was \
too long to keep whole; the rest of the turn is kept as it is. Summarize this beginning so that \
the kept part can be understood:

## Original Request
What the user asked for in this turn.

## Early Progress
- Decisions taken and work done in this beginning.

## Context for Suffix
- What the kept part needs to be understood.

Be brief; write only what the kept part needs.";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(id: &str, kind: &str, fields: Value) -> Value {
        let mut entry = json!({"type": kind, "id": id, "parentId": null,
            "timestamp": "2026-01-24T10:00:00.000Z"});
        entry
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        entry
    }

    fn user(id: &str, text: &str) -> Value {
        entry(
            id,
            "message",
            json!({"message": {"role": "user", "content": text}}),
        )
    }

    fn assistant(id: &str, text: &str) -> Value {
        entry(
            id,
            "message",
            json!({"message": {"role": "assistant", "content": [{"type": "text", "text": text}]}}),
        )
    }

    fn tool_result(id: &str, text: &str) -> Value {
        entry(
            id,
            "message",
            json!({"message": {"role": "toolResult", "content": [{"type": "text", "text": text}]}}),
        )
    }

    fn settings(keep: u64) -> CompactionSettings {
        CompactionSettings {
            keep_recent_tokens: keep,
            ..CompactionSettings::default()
        }
    }

    #[test]
    fn what_is_summarized_has_the_context_edits_applied() {
        let mut entries = vec![
            user("u1", &format!("my secret is hunter2 {}", "a".repeat(400))),
            assistant("a1", &"b".repeat(400)),
            user("u2", &"c".repeat(400)),
            assistant("a2", &"d".repeat(400)),
        ];
        entries.push(entry(
            "e1",
            "context_edit",
            json!({"targetId": "u1", "replacement": {"content": "[EDITED OUT]"}}),
        ));
        entries.push(entry(
            "e2",
            "context_edit",
            json!({"targetId": "a1", "replacement": null}),
        ));
        entries.push(user("u3", &"e".repeat(400)));
        let prepared = prepare_compaction(&entries, &settings(150)).unwrap();
        let summarized = serde_json::to_string(&prepared.messages_to_summarize).unwrap();
        assert!(summarized.contains("[EDITED OUT]"), "{summarized}");
        assert!(!summarized.contains("hunter2"), "{summarized}");
        assert!(!summarized.contains(&"b".repeat(400)), "{summarized}");
    }

    #[test]
    fn settings_default_to_pi_and_read_camel_case() {
        let defaults = CompactionSettings::default();
        assert_eq!(
            serde_json::to_value(defaults).unwrap(),
            json!({"enabled": true, "reserveTokens": 16384, "keepRecentTokens": 20000})
        );
        let read =
            CompactionSettings::from_settings_value(&json!({"keepRecentTokens": 5})).unwrap();
        assert_eq!(read, settings(5));
        let parsed: CompactionSettings = serde_json::from_value(json!({"enabled": false})).unwrap();
        assert!(!parsed.enabled && parsed.reserve_tokens == 16384);
        let error =
            CompactionSettings::from_settings_value(&json!({"reserveTokens": "many"})).unwrap_err();
        assert!(
            error.contains("compaction.reserveTokens") && error.contains("\"many\""),
            "{error}"
        );
        let error = CompactionSettings::from_settings_value(&json!(true)).unwrap_err();
        assert!(error.contains("must be an object"), "{error}");
    }

    #[test]
    fn tokens_are_utf16_characters_over_four_rounded_up() {
        assert_eq!(
            estimate_tokens(&json!({"role": "user", "content": "abcde"})),
            2
        );
        assert_eq!(
            estimate_tokens(&json!({"role": "user", "content": "😀😀"})),
            1
        );
        let call = json!({"role": "assistant", "content": [
            {"type": "toolCall", "name": "read", "arguments": {"path": "a", "limit": 1.0}}]});
        // "read" + {"path":"a","limit":1} = 4 + 22 characters: 6.5 tokens, rounded up.
        assert_eq!(estimate_tokens(&call), 7);
        let image = json!({"role": "toolResult", "content": [{"type": "image"}, {"type": "text", "text": "ab"}]});
        assert_eq!(estimate_tokens(&image), 1201);
        assert_eq!(
            estimate_tokens(&json!({"role": "bashExecution", "command": "ls", "output": "ab"})),
            1
        );
        assert_eq!(
            estimate_tokens(&json!({"role": "other", "content": "long text"})),
            0
        );
    }

    #[test]
    fn context_tokens_use_the_last_valid_usage() {
        let messages = [
            json!({"role": "assistant", "content": [], "usage": {"totalTokens": 100}}),
            json!({"role": "user", "content": "abcdefgh"}),
            json!({"role": "assistant", "content": [], "stopReason": "aborted", "usage": {"totalTokens": 9999}}),
            json!({"role": "user", "content": "abcd"}),
        ];
        assert_eq!(
            estimate_context_tokens(&messages),
            ContextTokens {
                tokens: 103,
                usage_tokens: 100,
                trailing_tokens: 3,
                last_usage_index: Some(0)
            }
        );
        assert_eq!(
            calculate_context_tokens(
                &json!({"totalTokens": 0, "input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4})
            ),
            10
        );
        assert_eq!(
            estimate_context_tokens(&messages[1..2]).last_usage_index,
            None
        );
    }

    #[test]
    fn compaction_is_due_when_less_than_the_reserve_is_left() {
        let settings = CompactionSettings::default();
        assert!(!should_compact(100_000 - 16384, 100_000, &settings));
        assert!(should_compact(100_000 - 16383, 100_000, &settings));
        assert!(
            should_compact(0, 1000, &settings),
            "a window smaller than the reserve"
        );
        let off = CompactionSettings {
            enabled: false,
            ..settings
        };
        assert!(!should_compact(1_000_000, 1000, &off));
    }

    #[test]
    fn cut_never_falls_on_a_tool_result_and_takes_settings_changes_along() {
        let entries = [
            user("u1", &"a".repeat(400)),
            assistant("a1", "ok"),
            entry(
                "t",
                "thinking_level_change",
                json!({"thinkingLevel": "high"}),
            ),
            user("u2", &"b".repeat(40)),
            assistant("a2", "calling"),
            tool_result("r2", &"c".repeat(400)),
        ];
        // The tool result alone reaches 50 tokens, and no cut point follows it: the first cut
        // point in the range is used.
        let cut = find_cut_point(&entries, 0, entries.len(), 50);
        assert_eq!(cut.first_kept_entry_index, 0);
        // 100 + 1 + 10 reach 110 at u2; the thinking level change before it is kept too, and
        // then (as in pi) the cut entry is no user message, so the previous turn counts as split.
        let cut = find_cut_point(&entries, 0, entries.len(), 110);
        assert_eq!(
            cut,
            CutPoint {
                first_kept_entry_index: 2,
                turn_start_index: Some(0),
                is_split_turn: true
            }
        );
        // 100 + 1 reach 101 at a2: a split turn that started at u2.
        let cut = find_cut_point(&entries, 0, entries.len(), 101);
        assert_eq!(
            cut,
            CutPoint {
                first_kept_entry_index: 4,
                turn_start_index: Some(3),
                is_split_turn: true
            }
        );
        assert_eq!(
            find_cut_point(&entries[5..], 0, 1, 1).first_kept_entry_index,
            0
        );
    }

    #[test]
    fn preparation_says_why_not_and_serializes_as_pi() {
        assert_eq!(
            prepare_compaction(&[], &settings(1)),
            Err(NoCompaction::NothingToCompact)
        );
        let compacted = [
            user("u1", "x"),
            entry(
                "c",
                "compaction",
                json!({"summary": "S", "firstKeptEntryId": "u1", "tokensBefore": 1}),
            ),
        ];
        let why = prepare_compaction(&compacted, &settings(1)).unwrap_err();
        assert_eq!(why.to_string(), "Already compacted");
        assert_eq!(
            NoCompaction::NothingToCompact.to_string(),
            "Nothing to compact (session too small)"
        );

        let branch = [
            user("u1", &"a".repeat(400)),
            entry(
                "m",
                "custom_message",
                json!({"customType": "note", "content": "n", "display": true}),
            ),
            entry(
                "a1",
                "message",
                json!({"message": {"role": "assistant", "content": [
                {"type": "toolCall", "name": "edit", "arguments": {"path": "x.rs"}}]}}),
            ),
            user("u2", &"b".repeat(400)),
            assistant("a2", "done"),
        ];
        let prepared = prepare_compaction(&branch, &settings(100)).unwrap();
        assert_eq!(prepared.first_kept_entry_id, "u2");
        assert!(!prepared.is_split_turn);
        assert_eq!(prepared.file_lists().modified_files, ["x.rs"]);
        let json = prepared.to_event_json();
        assert_eq!(
            json["fileOps"],
            json!({"read": {}, "written": {}, "edited": {}})
        );
        assert_eq!(
            json["messagesToSummarize"][1],
            json!({"role": "custom", "customType": "note", "content": "n", "display": true,
                "timestamp": 1_769_248_800_000_i64})
        );
        assert!(json.get("previousSummary").is_none());
        assert_eq!(json["settings"]["keepRecentTokens"], 100);
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "firstKeptEntryId",
                "messagesToSummarize",
                "turnPrefixMessages",
                "isSplitTurn",
                "tokensBefore",
                "fileOps",
                "settings"
            ]
        );
    }

    #[test]
    fn previous_compaction_bounds_the_range_and_feeds_the_summary() {
        let branch = [
            user("u1", &"a".repeat(400)),
            user("u2", &"b".repeat(400)),
            entry(
                "c",
                "compaction",
                json!({"summary": "OLD", "firstKeptEntryId": "u2",
                "tokensBefore": 1, "details": {"readFiles": ["r.md"], "modifiedFiles": []}}),
            ),
            user("u3", &"c".repeat(400)),
            assistant("a3", "ok"),
        ];
        let prepared = prepare_compaction(&branch, &settings(50)).unwrap();
        assert_eq!(prepared.first_kept_entry_id, "u3");
        assert_eq!(
            prepared.messages_to_summarize.len(),
            1,
            "u1 was summarized before"
        );
        assert_eq!(prepared.previous_summary.as_deref(), Some("OLD"));
        assert_eq!(prepared.file_lists().read_files, ["r.md"]);

        let requests = prepared.requests(Some("the tests"));
        let history = requests.history.unwrap();
        assert!(requests.turn_prefix.is_none());
        assert!(history.prompt.starts_with(&format!("<conversation>\n[User]: {}\n</conversation>\n\n<previous-summary>\nOLD\n</previous-summary>\n\n", "b".repeat(400))));
        assert!(history.prompt.ends_with("\n\nAdditional focus: the tests"));
        assert_eq!(history.max_tokens, 13107);
        assert_eq!(history.system_prompt, SUMMARIZATION_SYSTEM_PROMPT);

        let result = prepared.finish(Some("NEW"), None);
        assert_eq!(result.summary, "NEW\n\n<read-files>\nr.md\n</read-files>");
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"summary": result.summary, "firstKeptEntryId": "u3", "tokensBefore": prepared.tokens_before,
                "details": {"readFiles": ["r.md"], "modifiedFiles": []}})
        );
        assert_eq!(
            compaction_details(&result.details),
            result.details.to_details()
        );
    }

    #[test]
    fn split_turn_asks_for_two_summaries_and_joins_them() {
        let branch = [
            user("u1", "start"),
            assistant("a1", &"a".repeat(400)),
            tool_result("r1", &"b".repeat(400)),
            assistant("a2", &"c".repeat(400)),
        ];
        let prepared = prepare_compaction(&branch, &settings(100)).unwrap();
        assert!(prepared.is_split_turn);
        assert_eq!(prepared.first_kept_entry_id, "a2");
        assert!(prepared.messages_to_summarize.is_empty());
        assert_eq!(prepared.turn_prefix_messages.len(), 3);
        let requests = prepared.requests(None);
        assert!(requests.history.is_none());
        let prefix = requests.turn_prefix.unwrap();
        assert_eq!(prefix.max_tokens, 8192);
        assert!(
            prefix
                .prompt
                .starts_with("<conversation>\n[User]: start\n\n[Assistant]: ")
        );
        assert_eq!(
            prepared.finish(None, Some("PREFIX")).summary,
            "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX"
        );
    }
}
