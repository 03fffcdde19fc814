//! `edit {path, edits: [{oldText, newText}, ...]}`: exact text replacements in one file, after
//! pi 1.6's `core/tools/edit.js` and `core/tools/edit-diff.js`.
//!
//! What matches pi:
//! * The schema the model sees, the description, and pi's `prepareArguments`: the legacy shape
//!   `{path, oldText, newText}` is converted to `{path, edits: [{oldText, newText}]}` (appended
//!   after any `edits` already given), `edits` sent as a JSON string is parsed, and a single edit
//!   object sent as `edits` becomes a one-element array. `tool_call` and `tool_result` handlers
//!   see the converted input, as pi's extensions do; `tool_execution_start` keeps the model's
//!   arguments (see [`EditTool::prepare_arguments`]).
//! * Validation as pi-schema does it (with coercion: a scalar becomes a string, a single value an
//!   array), in its words (`edits.0.oldText: missing`, `edits.0: expected object, got string`).
//! * Every edit is matched against the original file, not incrementally; matches may not overlap
//!   (`edits[0] and edits[1] overlap in <path>. …`), each must be found once, an empty `oldText`
//!   is refused, and no edit at all is `Edit tool input is invalid. edits must contain at least
//!   one replacement.`; the messages are pi's, one wording for a single edit and one naming
//!   `edits[i]` when there are several.
//! * A UTF-8 BOM is set aside and put back; matching runs on LF-normalised text and the
//!   replacements are spliced into the original, so untouched lines keep their line endings and
//!   new line breaks take the ending of the line they start on.
//! * Matching tries the exact text first, then pi's fuzzy normalisation (NFKC, trailing
//!   whitespace per line, smart quotes, Unicode dashes and spaces); when any edit needs the fuzzy
//!   form, the touched lines are rewritten from the normalised text and all others kept.
//! * A missing or unwritable file is `Could not edit file: <path>. Error code: ENOENT.`.
//! * Success: `Successfully replaced N block(s) in <path>.` with `details: {diff, patch,
//!   firstChangedLine}`: `diff` pi's numbered display diff (4 context lines, ` … ...` for skipped
//!   ones), `patch` a unified patch with file headers only, both computed in windows around the
//!   replacements as pi does. The line diff comes from the `similar` crate (Myers, as jsdiff), so
//!   on ambiguous inputs (runs of repeated lines) the hunks may be aligned differently.
//! * Edits and writes of one file are serialised in source order (pi's `withFileMutationQueue`,
//!   see [`crate::tools::mutation_queue`]) when a message changes it more than once.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};
use unicode_normalization::UnicodeNormalization;

use super::{OPERATION_ABORTED, access, node_io_error, resolve_to_cwd};
use crate::tools::mutation_queue::turn_for;
use crate::tools::{Tool, ToolInvocation, ToolOutput, validation};

/// The `edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

/// pi's message for a call whose `edits` is empty.
pub const NO_EDITS: &str =
    "Edit tool input is invalid. edits must contain at least one replacement.";

impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn label(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, \
         non-overlapping region of the original file. If two changes affect the same block or nearby \
         lines, merge them into one edit instead of emitting overlapping edits. Do not include large \
         unchanged regions just to connect distant changes."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["path", "edits"],
            "properties": {
                "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                "edits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["oldText", "newText"],
                        "properties": {
                            "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
                            "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
                        },
                    },
                    "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.",
                },
            },
        })
    }

    /// pi's `prepareEditArguments` (the legacy `{oldText, newText}` shape, `edits` as a JSON
    /// string or a single object); [`Tool::validate`] then coerces the result as pi-schema does.
    fn prepare_arguments(&self, args: &Value) -> Option<Value> {
        Some(prepare_edit_arguments(args.clone()))
    }

    fn mutated_file(&self, args: &Value, cwd: &Path) -> Option<PathBuf> {
        let path = args["path"].as_str()?;
        Some(resolve_to_cwd(path, cwd))
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        // A `tool_call` handler may have rewritten the input: read it as pi's tool does.
        let args = prepare_edit_arguments(call.args.clone());
        let args = validation::validate_tool_arguments("edit", &self.parameters(), &args)?;
        let path = args["path"].as_str().unwrap_or_default().to_owned();
        let edits: Vec<(String, String)> = args["edits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                let text = |key: &str| e[key].as_str().unwrap_or_default().to_owned();
                (text("oldText"), text("newText"))
            })
            .collect();
        if edits.is_empty() {
            return Err(NO_EDITS.to_owned());
        }
        let absolute = resolve_to_cwd(&path, call.cwd);
        // pi's `withFileMutationQueue`: one change of a file at a time, in source order.
        let _turn = turn_for(call.file_ticket, &absolute);
        let aborted = || call.cancel.is_cancelled();
        if aborted() {
            return Err(OPERATION_ABORTED.to_owned());
        }
        if let Err(err) = access(&absolute, libc::R_OK | libc::W_OK) {
            if aborted() {
                return Err(OPERATION_ABORTED.to_owned());
            }
            return Err(format!(
                "Could not edit file: {path}. {}.",
                error_code(&err)
            ));
        }
        let bytes = std::fs::read(&absolute).map_err(|e| node_io_error(&e, "read", &absolute))?;
        if aborted() {
            return Err(OPERATION_ABORTED.to_owned());
        }
        let raw = String::from_utf8_lossy(&bytes);
        let edit = apply_edits(&raw, &edits, &path)?;
        if aborted() {
            return Err(OPERATION_ABORTED.to_owned());
        }
        std::fs::write(&absolute, edit.final_content.as_bytes())
            .map_err(|e| node_io_error(&e, "open", &absolute))?;
        if aborted() {
            return Err(OPERATION_ABORTED.to_owned());
        }
        let mut details = json!({"diff": edit.diff, "patch": edit.patch});
        if let Some(line) = edit.first_changed_line {
            details["firstChangedLine"] = json!(line);
        }
        Ok(ToolOutput::text(format!(
            "Successfully replaced {} block(s) in {path}.",
            edits.len()
        ))
        .with_details(details))
    }
}

/// `Error code: ENOENT` as Node words an `fs.access` failure.
fn error_code(err: &std::io::Error) -> String {
    let code = match err.raw_os_error() {
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EPERM) => "EPERM",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::EROFS) => "EROFS",
        Some(libc::ELOOP) => "ELOOP",
        Some(libc::ENAMETOOLONG) => "ENAMETOOLONG",
        Some(libc::ETXTBSY) => "ETXTBSY",
        _ => return err.to_string(),
    };
    format!("Error code: {code}")
}

fn is_single_edit(value: &Value) -> bool {
    value.is_object() && value["oldText"].is_string() && value["newText"].is_string()
}

/// pi's `prepareEditArguments`.
pub fn prepare_edit_arguments(input: Value) -> Value {
    let Value::Object(mut args) = input else {
        return input;
    };
    match args.get("edits") {
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed) if parsed.is_array() => {
                args.insert("edits".into(), parsed);
            }
            Ok(parsed) if is_single_edit(&parsed) => {
                args.insert("edits".into(), json!([parsed]));
            }
            _ => {}
        },
        Some(edit) if is_single_edit(edit) => {
            let edit = edit.clone();
            args.insert("edits".into(), json!([edit]));
        }
        _ => {}
    }
    let (Some(Value::String(old)), Some(Value::String(new))) =
        (args.get("oldText"), args.get("newText"))
    else {
        return Value::Object(args);
    };
    let legacy = json!({"oldText": old, "newText": new});
    let mut edits = match args.get("edits") {
        Some(Value::Array(edits)) => edits.clone(),
        _ => Vec::new(),
    };
    edits.push(legacy);
    args.shift_remove("oldText");
    args.shift_remove("newText");
    args.insert("edits".into(), Value::Array(edits));
    Value::Object(args)
}

/// The arguments validated against the edit schema with pi-schema's coercion (the shared
/// [`validation`] module), or its problems (`path: missing`, `edits.0.oldText: expected string,
/// got object`).
#[cfg(test)]
fn coerce_arguments(args: &Value) -> Result<Value, Vec<String>> {
    validation::parse(&EditTool.parameters(), args).map_err(|problems| {
        problems
            .iter()
            .map(|p| format!("{}: {}", validation::dotted_path(&p.path), p.message))
            .collect()
    })
}

/// A computed edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditResult {
    /// What to write: BOM and the original line endings kept.
    pub final_content: String,
    /// pi's numbered display diff of the (LF-normalised) change.
    pub diff: String,
    /// pi's unified patch (`--- path`, `+++ path`, hunks).
    pub patch: String,
    /// First changed line in the new content (1-based).
    pub first_changed_line: Option<usize>,
}

/// One replacement in LF-normalised content.
#[derive(Debug, Clone)]
struct Replacement {
    edit_index: usize,
    match_index: usize,
    match_length: usize,
    new_text: String,
}

/// Applies `edits` (`(oldText, newText)` pairs) to `raw`, the file's text, or returns pi's error
/// message; `path` is only used in messages and in the patch's headers.
pub fn apply_edits(
    raw: &str,
    edits: &[(String, String)],
    path: &str,
) -> Result<EditResult, String> {
    let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", raw),
    };
    let normalized = normalize_to_lf(content);
    let (new_content, replacements) = apply_edits_to_normalized(&normalized, edits, path)?;
    let (diff, patch, first_changed_line) =
        generate_edit_diff(path, &normalized, &new_content, &replacements);
    let body = if content == normalized {
        new_content
    } else {
        apply_replacements_to_original(content, &replacements)
    };
    Ok(EditResult {
        final_content: format!("{bom}{body}"),
        diff,
        patch,
        first_changed_line,
    })
}

fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// JavaScript's `trimEnd` set: Unicode white space and line terminators, U+FEFF, not U+0085.
fn is_js_space(c: char) -> bool {
    c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

/// pi's `normalizeForFuzzyMatch`.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc
        .split('\n')
        .map(|line| line.trim_end_matches(is_js_space))
        .collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// `fuzzy.split(fuzzyOld).length - 1` in JavaScript, both sides fuzzy-normalised.
fn count_occurrences(content: &str, old_text: &str) -> usize {
    let haystack = normalize_for_fuzzy_match(content);
    let needle = normalize_for_fuzzy_match(old_text);
    if needle.is_empty() {
        return haystack.encode_utf16().count().saturating_sub(1);
    }
    haystack.matches(needle.as_str()).count()
}

/// Exact match first, then a match in the fuzzy-normalised content: `(index, length, fuzzy)`.
fn fuzzy_find_text(content: &str, old_text: &str) -> Option<(usize, usize, bool)> {
    if let Some(index) = content.find(old_text) {
        return Some((index, old_text.len(), false));
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old_text);
    fuzzy_content
        .find(&fuzzy_old)
        .map(|index| (index, fuzzy_old.len(), true))
}

fn not_found(path: &str, i: usize, total: usize) -> String {
    if total == 1 {
        format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )
    } else {
        format!(
            "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
        )
    }
}

fn duplicate(path: &str, i: usize, total: usize, occurrences: usize) -> String {
    if total == 1 {
        format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )
    } else {
        format!(
            "Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        )
    }
}

/// pi's `applyEditsToNormalizedContent`: the new content and the replacements made (sorted,
/// disjoint, in `normalized`'s offsets).
fn apply_edits_to_normalized(
    normalized: &str,
    edits: &[(String, String)],
    path: &str,
) -> Result<(String, Vec<Replacement>), String> {
    let total = edits.len();
    let edits: Vec<(String, String)> = edits
        .iter()
        .map(|(old, new)| (normalize_to_lf(old), normalize_to_lf(new)))
        .collect();
    for (i, (old, _)) in edits.iter().enumerate() {
        if old.is_empty() {
            return Err(if total == 1 {
                format!("oldText must not be empty in {path}.")
            } else {
                format!("edits[{i}].oldText must not be empty in {path}.")
            });
        }
    }
    let used_fuzzy = edits
        .iter()
        .any(|(old, _)| matches!(fuzzy_find_text(normalized, old), Some((_, _, true))));
    let base = if used_fuzzy {
        normalize_for_fuzzy_match(normalized)
    } else {
        normalized.to_owned()
    };
    let mut matched = Vec::with_capacity(total);
    for (i, (old, new)) in edits.iter().enumerate() {
        let Some((match_index, match_length, _)) = fuzzy_find_text(&base, old) else {
            return Err(not_found(path, i, total));
        };
        let occurrences = count_occurrences(&base, old);
        if occurrences > 1 {
            return Err(duplicate(path, i, total, occurrences));
        }
        matched.push(Replacement {
            edit_index: i,
            match_index,
            match_length,
            new_text: new.clone(),
        });
    }
    matched.sort_by_key(|r| r.match_index);
    for pair in matched.windows(2) {
        let (previous, current) = (&pair[0], &pair[1]);
        if previous.match_index + previous.match_length > current.match_index {
            return Err(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                previous.edit_index, current.edit_index
            ));
        }
    }
    let replacements = if used_fuzzy {
        widen_replacements_to_lines(normalized, &base, &matched)?
    } else {
        matched
    };
    let new_content = apply_replacements(normalized, &replacements, 0);
    if new_content == normalized {
        return Err(if total == 1 {
            format!(
                "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
            )
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok((new_content, replacements))
}

/// Replacements (sorted, in `content` offsets shifted by `offset`) applied back to front.
fn apply_replacements(content: &str, replacements: &[Replacement], offset: usize) -> String {
    let mut result = content.to_owned();
    for r in replacements.iter().rev() {
        let start = r.match_index - offset;
        result.replace_range(start..start + r.match_length, &r.new_text);
    }
    result
}

/// `(start, end)` of each line, its `\n` included (`/[^\n]*\n|[^\n]+/g`).
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut offset = 0;
    content
        .split_inclusive('\n')
        .map(|line| {
            let span = (offset, offset + line.len());
            offset = span.1;
            span
        })
        .collect()
}

/// pi's `widenReplacementsToLines`: replacements matched in the fuzzy-normalised `base` turned
/// into whole-line replacements of `original`, the touched lines rewritten from `base`.
fn widen_replacements_to_lines(
    original: &str,
    base: &str,
    replacements: &[Replacement],
) -> Result<Vec<Replacement>, String> {
    let original_lines = line_spans(original);
    let base_lines = line_spans(base);
    if original_lines.len() != base_lines.len() {
        return Err(
            "Cannot preserve unchanged lines because the base content has a different line count."
                .to_owned(),
        );
    }
    const OUTSIDE: &str = "Replacement range is outside the base content.";
    // (first line, end line, replacements)
    let mut groups: Vec<(usize, usize, Vec<Replacement>)> = Vec::new();
    for r in replacements {
        let start = r.match_index;
        let end = r.match_index + r.match_length;
        let start_line = base_lines
            .iter()
            .position(|&(s, e)| start >= s && start < e)
            .ok_or(OUTSIDE)?;
        let mut end_line = start_line;
        while end_line < base_lines.len() && base_lines[end_line].1 < end {
            end_line += 1;
        }
        if end_line >= base_lines.len() {
            return Err(OUTSIDE.to_owned());
        }
        let end_line = end_line + 1;
        match groups.last_mut() {
            Some(group) if start_line < group.1 => {
                group.1 = group.1.max(end_line);
                group.2.push(r.clone());
            }
            _ => groups.push((start_line, end_line, vec![r.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(first, end, group)| {
            let group_start = base_lines[first].0;
            let group_end = base_lines[end - 1].1;
            let original_start = original_lines[first].0;
            Replacement {
                edit_index: group[0].edit_index,
                match_index: original_start,
                match_length: original_lines[end - 1].1 - original_start,
                new_text: apply_replacements(&base[group_start..group_end], &group, group_start),
            }
        })
        .collect())
}

/// pi's `applyReplacementsToOriginal`: replacements found in the LF-normalised text spliced into
/// the original, whose other bytes (and line endings) are kept.
fn apply_replacements_to_original(original: &str, replacements: &[Replacement]) -> String {
    let bytes = original.as_bytes();
    let find_crlf = |from: usize| {
        original
            .get(from..)
            .and_then(|rest| rest.find("\r\n"))
            .map(|i| i + from)
    };
    let mut crlf_before = 0usize;
    let mut next_crlf = find_crlf(0);
    let mut to_original = |offset: usize| {
        while let Some(at) = next_crlf {
            if at - crlf_before >= offset {
                break;
            }
            crlf_before += 1;
            next_crlf = find_crlf(at + 2);
        }
        offset + crlf_before
    };
    let mut parts: Vec<String> = Vec::new();
    let mut ends_with_cr = false;
    let mut push = |part: &str| {
        if part.is_empty() {
            return;
        }
        if ends_with_cr && part.starts_with('\n') {
            parts.push("\n".to_owned());
        }
        parts.push(part.to_owned());
        ends_with_cr = part.ends_with('\r');
    };
    let mut position = 0;
    for r in replacements {
        let start = to_original(r.match_index);
        push(&original[position..start]);
        let ending = line_ending_at(bytes, start);
        if ending == "\n" {
            push(&r.new_text);
        } else {
            push(&r.new_text.replace('\n', ending));
        }
        position = to_original(r.match_index + r.match_length);
    }
    push(&original[position..]);
    parts.concat()
}

/// pi's `getLineEndingAt`: the ending of the line holding `offset` (that of the line before for
/// an unterminated last line); a lone CR counts only in a file with no LF.
fn line_ending_at(content: &[u8], offset: usize) -> &'static str {
    let after = content
        .get(offset..)
        .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
        .map(|i| i + offset);
    let line_feed = after.or_else(|| {
        content[..(offset + 1).min(content.len())]
            .iter()
            .rposition(|&b| b == b'\n')
    });
    match line_feed {
        None if content.contains(&b'\r') => "\r",
        None => "\n",
        Some(lf) if lf > 0 && content[lf - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

// ---------------------------------------------------------------------------------------------
// Diffs (pi's `generateEditDiff`, `formatDisplayDiff`; jsdiff's `structuredPatch`, `formatPatch`)
// ---------------------------------------------------------------------------------------------

/// Unchanged lines diffed on each side of a replacement (pi's `DIFF_WINDOW_MARGIN_LINES`).
const DIFF_WINDOW_MARGIN_LINES: usize = 32;
/// Context lines shown around a change.
const CONTEXT_LINES: usize = 4;

fn count_line_feeds(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

/// A line-diff part: equal, removed or added lines, each with its `\n` when it has one.
type Part<'a> = (ChangeTag, Vec<&'a str>);

/// jsdiff's `diffLines` parts (removed before added).
fn diff_parts<'a>(old: &'a str, new: &'a str) -> Vec<Part<'a>> {
    let diff = TextDiff::from_lines(old, new);
    let mut parts: Vec<Part<'a>> = Vec::new();
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            let tag = change.tag();
            let line: &'a str = change.value();
            match parts.last_mut() {
                Some((t, lines)) if *t == tag => lines.push(line),
                _ => parts.push((tag, vec![line])),
            }
        }
    }
    parts
}

/// pi's `formatDisplayDiff`, numbering from the given 1-based old and new lines.
fn format_display_diff(
    parts: &[Part<'_>],
    old_start: usize,
    new_start: usize,
    width: usize,
    context: usize,
) -> (Vec<String>, Option<usize>) {
    let mut out = Vec::new();
    let mut old_num = old_start;
    let mut new_num = new_start;
    let mut last_was_change = false;
    let mut first_changed = None;
    let pad = " ".repeat(width);
    for (i, (tag, lines)) in parts.iter().enumerate() {
        let raw: Vec<&str> = lines
            .iter()
            .map(|l| l.strip_suffix('\n').unwrap_or(l))
            .collect();
        if *tag != ChangeTag::Equal {
            first_changed.get_or_insert(new_num);
            for line in raw {
                if *tag == ChangeTag::Insert {
                    out.push(format!("+{new_num:>width$} {line}"));
                    new_num += 1;
                } else {
                    out.push(format!("-{old_num:>width$} {line}"));
                    old_num += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts
            .get(i + 1)
            .is_some_and(|(t, _)| *t != ChangeTag::Equal);
        let mut show = |out: &mut Vec<String>, lines: &[&str]| {
            for line in lines {
                out.push(format!(" {old_num:>width$} {line}"));
                old_num += 1;
                new_num += 1;
            }
        };
        let mut skip = 0;
        if last_was_change && next_is_change {
            if raw.len() <= context * 2 {
                show(&mut out, &raw);
            } else {
                show(&mut out, &raw[..context]);
                out.push(format!(" {pad} ..."));
                skip = raw.len() - 2 * context;
            }
        } else if last_was_change {
            let shown = raw.len().min(context);
            show(&mut out, &raw[..shown]);
            if raw.len() > shown {
                out.push(format!(" {pad} ..."));
                skip = raw.len() - shown;
            }
        } else if next_is_change {
            let skipped = raw.len().saturating_sub(context);
            if skipped > 0 {
                out.push(format!(" {pad} ..."));
            }
            skip = skipped;
        } else {
            skip = raw.len();
        }
        old_num += skip;
        new_num += skip;
        if next_is_change {
            // The trailing context: the last `context` lines (all of them after a skip above).
            let tail = if last_was_change {
                if raw.len() <= context * 2 {
                    &raw[..0]
                } else {
                    &raw[raw.len() - context..]
                }
            } else {
                &raw[raw.len().saturating_sub(context)..]
            };
            for line in tail {
                out.push(format!(" {old_num:>width$} {line}"));
                old_num += 1;
                new_num += 1;
            }
        }
        last_was_change = false;
    }
    (out, first_changed)
}

/// One hunk of a unified patch.
#[derive(Debug)]
struct Hunk {
    old_start: usize,
    old_lines: usize,
    new_start: usize,
    new_lines: usize,
    lines: Vec<String>,
}

/// jsdiff's `structuredPatch` hunks of `parts`.
fn structured_patch(parts: &[Part<'_>], context: usize) -> Vec<Hunk> {
    let mut parts: Vec<Part<'_>> = parts.to_vec();
    parts.push((ChangeTag::Equal, Vec::new()));
    let mut hunks = Vec::new();
    let (mut old_range_start, mut new_range_start) = (0usize, 0usize);
    let mut cur_range: Vec<String> = Vec::new();
    let (mut old_line, mut new_line) = (1usize, 1usize);
    for i in 0..parts.len() {
        let (tag, lines) = &parts[i];
        if *tag != ChangeTag::Equal {
            if old_range_start == 0 {
                old_range_start = old_line;
                new_range_start = new_line;
                if i > 0 {
                    let prev = &parts[i - 1].1;
                    cur_range = prev[prev.len().saturating_sub(context)..]
                        .iter()
                        .take(context)
                        .map(|l| format!(" {l}"))
                        .collect();
                    old_range_start -= cur_range.len();
                    new_range_start -= cur_range.len();
                }
            }
            let sign = if *tag == ChangeTag::Insert { '+' } else { '-' };
            cur_range.extend(lines.iter().map(|l| format!("{sign}{l}")));
            if *tag == ChangeTag::Insert {
                new_line += lines.len();
            } else {
                old_line += lines.len();
            }
        } else {
            if old_range_start != 0 {
                if lines.len() <= context * 2 && i + 2 < parts.len() {
                    cur_range.extend(lines.iter().map(|l| format!(" {l}")));
                } else {
                    let context_size = lines.len().min(context);
                    cur_range.extend(lines[..context_size].iter().map(|l| format!(" {l}")));
                    hunks.push(Hunk {
                        old_start: old_range_start,
                        old_lines: old_line - old_range_start + context_size,
                        new_start: new_range_start,
                        new_lines: new_line - new_range_start + context_size,
                        lines: std::mem::take(&mut cur_range),
                    });
                    old_range_start = 0;
                    new_range_start = 0;
                }
            }
            old_line += lines.len();
            new_line += lines.len();
        }
    }
    for hunk in &mut hunks {
        let mut lines = Vec::with_capacity(hunk.lines.len());
        for line in hunk.lines.drain(..) {
            match line.strip_suffix('\n') {
                Some(stripped) => lines.push(stripped.to_owned()),
                None => {
                    lines.push(line);
                    lines.push("\\ No newline at end of file".to_owned());
                }
            }
        }
        hunk.lines = lines;
    }
    hunks
}

/// jsdiff's `formatPatch` with `FILE_HEADERS_ONLY`.
fn format_patch(path: &str, hunks: &[Hunk]) -> String {
    let mut out = vec![format!("--- {path}"), format!("+++ {path}")];
    for hunk in hunks {
        let old_start = if hunk.old_lines == 0 {
            hunk.old_start - 1
        } else {
            hunk.old_start
        };
        let new_start = if hunk.new_lines == 0 {
            hunk.new_start - 1
        } else {
            hunk.new_start
        };
        out.push(format!(
            "@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        out.extend(hunk.lines.iter().cloned());
    }
    out.join("\n") + "\n"
}

/// A window of whole lines around one or more replacements.
#[derive(Debug)]
struct Window {
    old_start: usize,
    old_end: usize,
    old_line: usize,
    new_start: usize,
    new_end: usize,
    new_line: usize,
}

/// Start of the line that holds `offset`.
fn line_start_before(text: &[u8], offset: usize) -> usize {
    if offset == 0 {
        return 0;
    }
    text[..offset]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}

/// pi's `getDiffWindows`: whole-line windows with margin around the (sorted, disjoint)
/// replacements; overlapping windows merge.
fn diff_windows(base: &str, replacements: &[Replacement]) -> Vec<Window> {
    let bytes = base.as_bytes();
    let mut windows: Vec<Window> = Vec::new();
    let (mut offset_delta, mut line_delta) = (0isize, 0isize);
    let (mut cursor_offset, mut cursor_line) = (0usize, 0usize);
    for r in replacements {
        let match_end = r.match_index + r.match_length;
        let mut start = line_start_before(bytes, r.match_index);
        for _ in 0..DIFF_WINDOW_MARGIN_LINES {
            if start == 0 {
                break;
            }
            start = line_start_before(bytes, start - 1);
        }
        let mut end = match_end;
        for i in 0..=DIFF_WINDOW_MARGIN_LINES {
            if end >= bytes.len() {
                break;
            }
            let from = if i == 0 {
                match_end.saturating_sub(1).max(r.match_index)
            } else {
                end
            };
            end = bytes[from..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |p| from + p + 1);
        }
        let offset_change = signed(r.new_text.len()) - signed(r.match_length);
        let line_change = signed(count_line_feeds(&r.new_text))
            - signed(count_line_feeds(&base[r.match_index..match_end]));
        match windows.last_mut() {
            Some(previous) if start <= previous.old_end => {
                previous.old_end = previous.old_end.max(end);
                previous.new_end = shift(previous.old_end, offset_delta + offset_change);
            }
            _ => {
                cursor_line += count_line_feeds(&base[cursor_offset..start]);
                cursor_offset = start;
                windows.push(Window {
                    old_start: start,
                    old_end: end,
                    old_line: cursor_line,
                    new_start: shift(start, offset_delta),
                    new_end: shift(end, offset_delta + offset_change),
                    new_line: shift(cursor_line, line_delta),
                });
            }
        }
        offset_delta += offset_change;
        line_delta += line_change;
    }
    windows
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

fn shift(n: usize, delta: isize) -> usize {
    n.saturating_add_signed(delta)
}

/// pi's `generateEditDiff`: the display diff, the unified patch and the first changed line,
/// computed in windows around the replacements.
fn generate_edit_diff(
    path: &str,
    base: &str,
    new: &str,
    replacements: &[Replacement],
) -> (String, String, Option<usize>) {
    let max_lines = (count_line_feeds(base) + 1).max(count_line_feeds(new) + 1);
    let width = max_lines.to_string().len();
    let skip_marker = format!(" {} ...", " ".repeat(width));
    let mut output: Vec<String> = Vec::new();
    let mut hunks = Vec::new();
    let mut first_changed = None;
    for window in diff_windows(base, replacements) {
        let old_text = &base[window.old_start..window.old_end];
        let new_text = &new[window.new_start..window.new_end];
        let parts = diff_parts(old_text, new_text);
        let (mut shown, first) = format_display_diff(
            &parts,
            window.old_line + 1,
            window.new_line + 1,
            width,
            CONTEXT_LINES,
        );
        first_changed = first_changed.or(first);
        if output.last() == Some(&skip_marker) && shown.first() == Some(&skip_marker) {
            shown.remove(0);
        }
        output.extend(shown);
        for mut hunk in structured_patch(&parts, CONTEXT_LINES) {
            hunk.old_start += window.old_line;
            hunk.new_start += window.new_line;
            hunks.push(hunk);
        }
    }
    (output.join("\n"), format_patch(path, &hunks), first_changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(old: &str, new: &str) -> Vec<(String, String)> {
        vec![(old.to_owned(), new.to_owned())]
    }

    fn many(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(o, n)| ((*o).to_owned(), (*n).to_owned()))
            .collect()
    }

    // The expected strings below are what pi 1.6.0's edit tool returns for the same input.

    #[test]
    fn one_edit_diff_and_patch() {
        let r = apply_edits("a\nb\nc\n", &one("b", "B"), "f.txt").unwrap();
        assert_eq!(r.final_content, "a\nB\nc\n");
        assert_eq!(r.diff, " 1 a\n-2 b\n+2 B\n 3 c");
        assert_eq!(
            r.patch,
            "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        assert_eq!(r.first_changed_line, Some(2));
    }

    #[test]
    fn edits_match_the_original_in_any_order() {
        let r = apply_edits("a\nb\nc\n", &many(&[("c", "C"), ("a", "A")]), "f.txt").unwrap();
        assert_eq!(r.final_content, "A\nb\nC\n");
        assert_eq!(r.diff, "-1 a\n+1 A\n 2 b\n-3 c\n+3 C");
        assert_eq!(
            r.patch,
            "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n-c\n+C\n"
        );
        assert_eq!(r.first_changed_line, Some(1));
    }

    #[test]
    fn errors_word_for_word() {
        let text = "a\nb\nc\n";
        let err = |edits: Vec<(String, String)>, content: &str| {
            apply_edits(content, &edits, "f.txt").unwrap_err()
        };
        assert_eq!(
            err(many(&[("a\nb", "X"), ("b\nc", "Y")]), text),
            "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or target disjoint regions."
        );
        assert_eq!(
            err(many(&[("a", "A"), ("zz", "Y")]), text),
            "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."
        );
        assert_eq!(
            err(many(&[("c", "C"), ("a", "Y")]), "a\na\nc\n"),
            "Found 2 occurrences of edits[1] in f.txt. Each oldText must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            err(many(&[("", "x"), ("a", "x")]), text),
            "edits[0].oldText must not be empty in f.txt."
        );
        assert_eq!(
            err(many(&[("a", "a"), ("b", "b")]), text),
            "No changes made to f.txt. The replacements produced identical content."
        );
        assert_eq!(
            err(one("xyz", "q"), "abc"),
            "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
        );
        assert_eq!(
            err(one("x = 1", "x = 2"), "x = 1\nx = 1\n"),
            "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to make it unique."
        );
        assert_eq!(
            err(one("", "x"), text),
            "oldText must not be empty in f.txt."
        );
        assert!(
            err(one("same", "same"), "same").starts_with(
                "No changes made to f.txt. The replacement produced identical content."
            )
        );
    }

    #[test]
    fn crlf_lines_keep_their_endings_and_bom_stays() {
        let r = apply_edits("x1\r\nx2\r\nx3\r\n", &one("x2\nx3", "y2\ny3\ny4"), "f.txt").unwrap();
        assert_eq!(r.final_content, "x1\r\ny2\r\ny3\r\ny4\r\n");
        assert_eq!(r.diff, " 1 x1\n-2 x2\n-3 x3\n+2 y2\n+3 y3\n+4 y4");
        assert_eq!(
            r.patch,
            "--- f.txt\n+++ f.txt\n@@ -1,3 +1,4 @@\n x1\n-x2\n-x3\n+y2\n+y3\n+y4\n"
        );
        let r = apply_edits("\u{FEFF}one\r\ntwo\nthree\r\n", &one("two", "2"), "w.txt").unwrap();
        assert_eq!(r.final_content, "\u{FEFF}one\r\n2\nthree\r\n");
    }

    #[test]
    fn fuzzy_match_rewrites_only_the_touched_lines() {
        let raw = "say \u{201C}hi\u{201D}   \nnext\nkeep  \n";
        let r = apply_edits(raw, &one("say \"hi\"\nnext", "say bye\nnext"), "f.txt").unwrap();
        assert_eq!(r.final_content, "say bye\nnext\nkeep  \n");
        assert_eq!(
            r.diff,
            "-1 say \u{201C}hi\u{201D}   \n+1 say bye\n 2 next\n 3 keep  "
        );
        assert_eq!(
            r.patch,
            "--- f.txt\n+++ f.txt\n@@ -1,3 +1,3 @@\n-say \u{201C}hi\u{201D}   \n+say bye\n next\n keep  \n"
        );
    }

    #[test]
    fn far_apart_edits_get_windows_and_hunks() {
        let text: String = (1..=40).map(|i| format!("l{i}\n")).collect();
        let edits = many(&[
            ("l3\n", "three\n"),
            ("l20\n", "twenty\n"),
            ("l30", "thirty"),
        ]);
        let r = apply_edits(&text, &edits, "f.txt").unwrap();
        assert_eq!(
            r.diff,
            "  1 l1\n  2 l2\n- 3 l3\n+ 3 three\n  4 l4\n  5 l5\n  6 l6\n  7 l7\n    ...\n 16 l16\n 17 l17\n 18 l18\n 19 l19\n-20 l20\n+20 twenty\n 21 l21\n 22 l22\n 23 l23\n 24 l24\n    ...\n 26 l26\n 27 l27\n 28 l28\n 29 l29\n-30 l30\n+30 thirty\n 31 l31\n 32 l32\n 33 l33\n 34 l34\n    ..."
        );
        assert_eq!(
            r.patch,
            "--- f.txt\n+++ f.txt\n@@ -1,7 +1,7 @@\n l1\n l2\n-l3\n+three\n l4\n l5\n l6\n l7\n@@ -16,9 +16,9 @@\n l16\n l17\n l18\n l19\n-l20\n+twenty\n l21\n l22\n l23\n l24\n@@ -26,9 +26,9 @@\n l26\n l27\n l28\n l29\n-l30\n+thirty\n l31\n l32\n l33\n l34\n"
        );
        assert_eq!(r.first_changed_line, Some(3));
    }

    #[test]
    fn no_newline_at_end_of_file() {
        let r = apply_edits("no newline", &one("newline", "nl"), "f.txt").unwrap();
        assert_eq!(r.final_content, "no nl");
        assert_eq!(r.diff, "-1 no newline\n+1 no nl");
        assert_eq!(
            r.patch,
            "--- f.txt\n+++ f.txt\n@@ -1,1 +1,1 @@\n-no newline\n\\ No newline at end of file\n+no nl\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn arguments_are_prepared_as_pi_prepares_them() {
        let legacy = prepare_edit_arguments(json!({"path": "f", "oldText": "a", "newText": "b"}));
        assert_eq!(
            legacy,
            json!({"path": "f", "edits": [{"oldText": "a", "newText": "b"}]})
        );
        let both = prepare_edit_arguments(
            json!({"path": "f", "edits": [{"oldText": "c", "newText": "C"}], "oldText": "a", "newText": "A"}),
        );
        assert_eq!(
            both,
            json!({"path": "f", "edits": [{"oldText": "c", "newText": "C"}, {"oldText": "a", "newText": "A"}]})
        );
        let string = prepare_edit_arguments(
            json!({"path": "f", "edits": "[{\"oldText\":\"a\",\"newText\":\"Q\"}]"}),
        );
        assert_eq!(
            string,
            json!({"path": "f", "edits": [{"oldText": "a", "newText": "Q"}]})
        );
        let single =
            prepare_edit_arguments(json!({"path": "f", "edits": {"oldText": "a", "newText": "Q"}}));
        assert_eq!(
            single,
            json!({"path": "f", "edits": [{"oldText": "a", "newText": "Q"}]})
        );
    }

    #[test]
    fn validation_words_as_pi_schema() {
        let problems = |args: Value| coerce_arguments(&args).unwrap_err();
        assert_eq!(problems(json!({"edits": []})), ["path: missing"]);
        assert_eq!(problems(json!({"path": "x"})), ["edits: missing"]);
        assert_eq!(
            problems(json!({"path": "x", "edits": 5})),
            ["edits.0: expected object, got integer"]
        );
        assert_eq!(
            problems(json!({"path": "x", "edits": {"foo": 1}})),
            ["edits.0.oldText: missing", "edits.0.newText: missing"]
        );
        assert_eq!(
            problems(json!({"path": "x", "edits": [{"oldText": {}, "newText": []}]})),
            [
                "edits.0.oldText: expected string, got object",
                "edits.0.newText: expected string, got array"
            ]
        );
        assert_eq!(
            problems(json!("str")),
            ["root: expected object, got string"]
        );
        assert_eq!(
            coerce_arguments(&json!({"path": 5, "edits": [{"oldText": 5, "newText": true}]}))
                .unwrap(),
            json!({"path": "5", "edits": [{"oldText": "5", "newText": "true"}]})
        );
        let message = EditTool.validate(&json!({"path": "f.txt"})).unwrap_err();
        assert_eq!(
            message,
            "Validation failed for tool \"edit\":\n  - edits: missing\n\nReceived arguments:\n{\n  \"path\": \"f.txt\"\n}"
        );
    }
}
