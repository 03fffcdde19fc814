//! `edit {path, oldText, newText}`: replaces one exact occurrence of a text, after pi's
//! `edit.ts` and `edit-diff.ts`.
//!
//! What matches pi:
//! * A file that is not readable and writable fails with `File not found: <path>`.
//! * A UTF-8 BOM is set aside before matching and put back; line endings are normalised to `\n`
//!   for matching (file, `oldText` and `newText`) and the file's own ending (CRLF when its first
//!   line break is CRLF) is restored on write.
//! * Matching tries the exact text first, then pi's fuzzy normalisation (trailing whitespace per
//!   line, smart quotes, Unicode dashes and spaces); when only the fuzzy form matches, the
//!   replacement is made in the normalised content, as pi does. Occurrences are counted in the
//!   normalised content.
//! * Errors word for word: `Could not find the exact text in <path>. The old text must match
//!   exactly including all whitespace and newlines.`, `Found N occurrences of the text in <path>.
//!   The text must be unique. Please provide more context to make it unique.`, `No changes made to
//!   <path>. …`.
//! * Success: `Successfully replaced text in <path>.` with `details: {diff, firstChangedLine}`,
//!   where `diff` is pi's numbered diff (`+NN line`, `-NN line`, ` NN line`, 4 context lines,
//!   ` … ...` for skipped ones). The line diff itself comes from the `similar` crate (Myers, as
//!   jsdiff), so on ambiguous inputs the hunks may be aligned differently.

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

use super::{Args, OPERATION_ABORTED, access, node_io_error, object_schema, resolve_to_cwd};
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// The `edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

impl Tool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn label(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). Use this for \
         precise, surgical edits."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                "oldText": {"type": "string", "description": "Exact text to find and replace (must match exactly)"},
                "newText": {"type": "string", "description": "New text to replace the old text with"},
            }),
            &["path", "oldText", "newText"],
        )
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("edit", call.args);
        let path = args.string("path")?;
        let old_text = args.string("oldText")?;
        let new_text = args.string("newText")?;
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }

        let absolute = resolve_to_cwd(&path, call.cwd);
        if access(&absolute, libc::R_OK | libc::W_OK).is_err() {
            return Err(format!("File not found: {path}"));
        }
        let bytes = std::fs::read(&absolute).map_err(|e| node_io_error(&e, "read", &absolute))?;
        let raw = String::from_utf8_lossy(&bytes);
        let edit = apply_edit(&raw, &old_text, &new_text, &path)?;
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }
        std::fs::write(&absolute, edit.final_content.as_bytes())
            .map_err(|e| node_io_error(&e, "open", &absolute))?;

        let mut details = json!({"diff": edit.diff});
        if let Some(line) = edit.first_changed_line {
            details["firstChangedLine"] = json!(line);
        }
        Ok(
            ToolOutput::text(format!("Successfully replaced text in {path}."))
                .with_details(details),
        )
    }
}

/// A computed edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditResult {
    /// What to write: BOM and original line endings restored.
    pub final_content: String,
    /// pi's numbered diff of the (LF-normalised) change.
    pub diff: String,
    /// First changed line in the new content (1-based).
    pub first_changed_line: Option<usize>,
}

/// Computes the edit of `raw` (the file's text) or pi's error message; `path` is only used in
/// messages.
pub fn apply_edit(
    raw: &str,
    old_text: &str,
    new_text: &str,
    path: &str,
) -> Result<EditResult, String> {
    let (bom, content) = match raw.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", raw),
    };
    let ending = detect_line_ending(content);
    let content = normalize_to_lf(content);
    let old_text = normalize_to_lf(old_text);
    let new_text = normalize_to_lf(new_text);

    let Some(found) = fuzzy_find_text(&content, &old_text) else {
        return Err(format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        ));
    };

    let fuzzy_content = normalize_for_fuzzy_match(&content);
    let fuzzy_old = normalize_for_fuzzy_match(&old_text);
    let occurrences = count_occurrences(&fuzzy_content, &fuzzy_old);
    if occurrences > 1 {
        return Err(format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        ));
    }

    let base = &found.content_for_replacement;
    let new_content = format!(
        "{}{}{}",
        &base[..found.index],
        new_text,
        &base[found.index + found.match_length..]
    );
    if *base == new_content {
        return Err(format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        ));
    }

    let (diff, first_changed_line) = generate_diff_string(base, &new_content, 4);
    let final_content = format!("{bom}{}", restore_line_endings(&new_content, ending));
    Ok(EditResult {
        final_content,
        diff,
        first_changed_line,
    })
}

/// `\r\n` when the first line break is CRLF, else `\n`.
fn detect_line_ending(content: &str) -> &'static str {
    match (content.find("\r\n"), content.find('\n')) {
        (Some(crlf), Some(lf)) if crlf < lf => "\r\n",
        _ => "\n",
    }
}

fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

fn restore_line_endings(text: &str, ending: &str) -> String {
    if ending == "\r\n" {
        text.replace('\n', "\r\n")
    } else {
        text.to_string()
    }
}

/// pi's `normalizeForFuzzyMatch`.
fn normalize_for_fuzzy_match(text: &str) -> String {
    let trimmed: Vec<&str> = text.split('\n').map(str::trim_end).collect();
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

/// `haystack.split(needle).length - 1` in JavaScript.
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return haystack.encode_utf16().count().saturating_sub(1);
    }
    haystack.matches(needle).count()
}

struct FuzzyMatch {
    index: usize,
    match_length: usize,
    content_for_replacement: String,
}

/// Exact match first, then a match in the fuzzy-normalised content.
fn fuzzy_find_text(content: &str, old_text: &str) -> Option<FuzzyMatch> {
    if let Some(index) = content.find(old_text) {
        return Some(FuzzyMatch {
            index,
            match_length: old_text.len(),
            content_for_replacement: content.to_string(),
        });
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old_text);
    let index = fuzzy_content.find(&fuzzy_old)?;
    Some(FuzzyMatch {
        index,
        match_length: fuzzy_old.len(),
        content_for_replacement: fuzzy_content,
    })
}

/// pi's `generateDiffString`: every changed line with its number, `context_lines` unchanged lines
/// around each change, ` <pad> ...` where lines are skipped. Returns the diff and the first
/// changed line (in the new content).
pub fn generate_diff_string(old: &str, new: &str, context_lines: usize) -> (String, Option<usize>) {
    let parts = diff_parts(old, new);
    let max_line = old.split('\n').count().max(new.split('\n').count());
    let width = max_line.to_string().len();
    let pad = " ".repeat(width);

    let mut out: Vec<String> = Vec::new();
    let mut old_num = 1usize;
    let mut new_num = 1usize;
    let mut last_was_change = false;
    let mut first_changed = None;

    for (i, (tag, lines)) in parts.iter().enumerate() {
        match tag {
            ChangeTag::Insert | ChangeTag::Delete => {
                first_changed.get_or_insert(new_num);
                for line in lines {
                    if *tag == ChangeTag::Insert {
                        out.push(format!("+{new_num:>width$} {line}"));
                        new_num += 1;
                    } else {
                        out.push(format!("-{old_num:>width$} {line}"));
                        old_num += 1;
                    }
                }
                last_was_change = true;
            }
            ChangeTag::Equal => {
                let next_is_change = parts
                    .get(i + 1)
                    .is_some_and(|(t, _)| *t != ChangeTag::Equal);
                if last_was_change || next_is_change {
                    let mut show: &[&str] = lines;
                    let mut skip_start = 0;
                    let mut skip_end = 0;
                    if !last_was_change {
                        skip_start = lines.len().saturating_sub(context_lines);
                        show = &lines[skip_start..];
                    }
                    if !next_is_change && show.len() > context_lines {
                        skip_end = show.len() - context_lines;
                        show = &show[..context_lines];
                    }
                    if skip_start > 0 {
                        out.push(format!(" {pad} ..."));
                        old_num += skip_start;
                        new_num += skip_start;
                    }
                    for line in show {
                        out.push(format!(" {old_num:>width$} {line}"));
                        old_num += 1;
                        new_num += 1;
                    }
                    if skip_end > 0 {
                        out.push(format!(" {pad} ..."));
                        old_num += skip_end;
                        new_num += skip_end;
                    }
                } else {
                    old_num += lines.len();
                    new_num += lines.len();
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first_changed)
}

/// The line diff as jsdiff's `diffLines` parts: runs of equal, removed and added lines (removed
/// before added), each line without its newline.
fn diff_parts<'a>(old: &'a str, new: &'a str) -> Vec<(ChangeTag, Vec<&'a str>)> {
    let diff = TextDiff::from_lines(old, new);
    let mut parts: Vec<(ChangeTag, Vec<&'a str>)> = Vec::new();
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            let tag = change.tag();
            let value: &'a str = change.value();
            let line = value.strip_suffix('\n').unwrap_or(value);
            match parts.last_mut() {
                Some((t, lines)) if *t == tag => lines.push(line),
                _ => parts.push((tag, vec![line])),
            }
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_unique_occurrence_and_diffs() {
        let raw = "fn main() {\n    println!(\"hi\");\n}\n";
        let r = apply_edit(raw, "\"hi\"", "\"hello\"", "src/main.rs").unwrap();
        assert_eq!(
            r.final_content,
            "fn main() {\n    println!(\"hello\");\n}\n"
        );
        assert_eq!(r.first_changed_line, Some(2));
        assert_eq!(
            r.diff,
            " 1 fn main() {\n-2     println!(\"hi\");\n+2     println!(\"hello\");\n 3 }"
        );
    }

    #[test]
    fn errors_word_for_word() {
        let err = apply_edit("abc", "xyz", "q", "a.txt").unwrap_err();
        assert_eq!(
            err,
            "Could not find the exact text in a.txt. The old text must match exactly including all whitespace and newlines."
        );
        let err = apply_edit("x = 1\nx = 1\n", "x = 1", "x = 2", "b.txt").unwrap_err();
        assert_eq!(
            err,
            "Found 2 occurrences of the text in b.txt. The text must be unique. Please provide more context to make it unique."
        );
        let err = apply_edit("same", "same", "same", "c.txt").unwrap_err();
        assert!(
            err.starts_with(
                "No changes made to c.txt. The replacement produced identical content."
            ),
            "{err}"
        );
    }

    #[test]
    fn crlf_and_bom_are_kept() {
        let raw = "\u{FEFF}one\r\ntwo\r\nthree\r\n";
        let r = apply_edit(raw, "two\nthree", "2\n3", "w.txt").unwrap();
        assert_eq!(r.final_content, "\u{FEFF}one\r\n2\r\n3\r\n");
    }

    #[test]
    fn fuzzy_match_normalises_quotes_and_trailing_spaces() {
        let raw = "say \u{201C}hi\u{201D}   \nnext\n";
        let r = apply_edit(raw, "say \"hi\"\nnext", "say bye\nnext", "q.txt").unwrap();
        assert_eq!(r.final_content, "say bye\nnext\n");
    }

    #[test]
    fn long_context_is_elided() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l10\n", "ten\n");
        let (diff, first) = generate_diff_string(&old, &new, 4);
        assert_eq!(first, Some(10));
        let expected = [
            "    ...", "  6 l6", "  7 l7", "  8 l8", "  9 l9", "-10 l10", "+10 ten", " 11 l11",
            " 12 l12", " 13 l13", " 14 l14", "    ...",
        ]
        .join("\n");
        assert_eq!(diff, expected);
    }
}
