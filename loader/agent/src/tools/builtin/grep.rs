//! `grep {pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}`: searches file
//! contents, after pi's `grep.ts` (which runs ripgrep with `--json --hidden`).
//!
//! What matches pi: ripgrep's regex dialect and line-oriented matching (the `grep-regex` and
//! `grep-searcher` crates ripgrep is built on; binary files are skipped), `ignoreCase`,
//! `literal` (fixed strings), `glob` with ripgrep's `--glob` semantics; hidden files searched,
//! `.gitignore`/`.ignore` honoured; the search path defaults to the cwd (`Path not found: <abs>`
//! when missing); output lines `path:N: text` for matches and `path-N- text` for `context` lines
//! (each match gets its own block, as pi formats them), paths relative to the searched directory
//! (the file name when a single file is searched); lines longer than 500 characters cut with
//! `... [truncated]`; at most `limit` (default 100) matching lines; notices `[N matches limit
//! reached. Use limit=2N for more, or refine pattern]`, `50.0KB limit reached`, `Some lines
//! truncated to 500 chars. Use read tool to see full lines`, with `details.matchLimitReached`,
//! `details.truncation`, `details.linesTruncated`; no match reads `No matches found`.
//!
//! Differences: files are searched in sorted order (ripgrep's are unordered), `.git/` is skipped,
//! `.gitignore` applies outside git repositories too (ripgrep needs a repository), and an
//! unreadable file is skipped instead of failing the whole search.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};

use super::find::walker;
use super::truncate::{GREP_MAX_LINE_LENGTH, truncate_line};
use super::{
    Args, Listing, OPERATION_ABORTED, object_schema, relative_slash_path, resolve_to_cwd, to_count,
};
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// Matches returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 100;

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

impl Tool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn label(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects \
         .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated \
         to 500 chars."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
                "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
                "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
                "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
                "literal": {
                    "type": "boolean",
                    "description": "Treat pattern as literal string instead of regex (default: false)",
                },
                "context": {
                    "type": "number",
                    "description": "Number of lines to show before and after each match (default: 0)",
                },
                "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"},
            }),
            &["pattern"],
        )
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("grep", call.args);
        let pattern = args.string("pattern")?;
        let path = args
            .opt_string("path")?
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".to_string());
        let glob = args.opt_string("glob")?.filter(|g| !g.is_empty());
        let ignore_case = args.opt_bool("ignoreCase")?.unwrap_or(false);
        let literal = args.opt_bool("literal")?.unwrap_or(false);
        let context = args.opt_number("context")?.map(to_count).unwrap_or(0);
        let limit = args
            .opt_number("limit")?
            .map(to_count)
            .unwrap_or(DEFAULT_LIMIT)
            .max(1);
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }

        let search_path = resolve_to_cwd(&path, call.cwd);
        let meta = std::fs::metadata(&search_path)
            .map_err(|_| format!("Path not found: {}", search_path.display()))?;
        let is_directory = meta.is_dir();

        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(ignore_case)
            .fixed_strings(literal)
            .line_terminator(Some(b'\n'))
            .build(&pattern)
            .map_err(|e| e.to_string())?;
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .build();

        let mut builder = walker(&search_path);
        if let Some(glob) = &glob {
            let mut overrides = OverrideBuilder::new(&search_path);
            overrides.add(glob).map_err(|e| e.to_string())?;
            builder.overrides(overrides.build().map_err(|e| e.to_string())?);
        }

        // Matching lines, in walk order.
        let mut matches: Vec<(PathBuf, u64)> = Vec::new();
        for entry in builder.build() {
            if call.cancel.is_cancelled() {
                return Err(OPERATION_ABORTED.to_string());
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let file = entry.path().to_path_buf();
            let _ = searcher.search_path(
                &matcher,
                &file,
                Lossy(|line_number, _line| {
                    matches.push((file.clone(), line_number));
                    Ok(matches.len() < limit)
                }),
            );
            if matches.len() >= limit {
                break;
            }
        }

        if matches.is_empty() {
            return Ok(ToolOutput::text("No matches found"));
        }
        let match_limit_reached = matches.len() >= limit;

        let mut formatter = Formatter {
            root: &search_path,
            is_directory,
            context,
            cache: HashMap::new(),
            lines_truncated: false,
        };
        let mut output_lines: Vec<String> = Vec::new();
        for (file, line_number) in &matches {
            output_lines.extend(formatter.block(file, *line_number as usize));
        }

        let mut listing = Listing::new(&output_lines);
        if match_limit_reached {
            let text = format!(
                "{limit} matches limit reached. Use limit={} for more, or refine pattern",
                limit.saturating_mul(2)
            );
            listing.notice(text, "matchLimitReached", json!(limit));
        }
        listing.truncation_notice();
        if formatter.lines_truncated {
            let text = format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            );
            listing.notice(text, "linesTruncated", Value::Bool(true));
        }
        Ok(listing.finish())
    }
}

/// Formats match blocks the way pi does: re-reads the file, prints the match line and `context`
/// lines around it.
struct Formatter<'a> {
    root: &'a Path,
    is_directory: bool,
    context: usize,
    cache: HashMap<PathBuf, Vec<String>>,
    lines_truncated: bool,
}

impl Formatter<'_> {
    fn display_path(&self, file: &Path) -> String {
        if self.is_directory
            && let Some(rel) = relative_slash_path(file, self.root).filter(|r| !r.is_empty())
        {
            return rel;
        }
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn lines(&mut self, file: &Path) -> &Vec<String> {
        self.cache
            .entry(file.to_path_buf())
            .or_insert_with(|| match std::fs::read(file) {
                Ok(bytes) => String::from_utf8_lossy(&bytes)
                    .replace("\r\n", "\n")
                    .replace('\r', "\n")
                    .split('\n')
                    .map(str::to_string)
                    .collect(),
                Err(_) => Vec::new(),
            })
    }

    fn block(&mut self, file: &Path, line_number: usize) -> Vec<String> {
        let shown = self.display_path(file);
        let context = self.context;
        let mut any_cut = false;
        let lines = self.lines(file);
        if lines.is_empty() {
            return vec![format!("{shown}:{line_number}: (unable to read file)")];
        }
        let start = if context > 0 {
            line_number.saturating_sub(context).max(1)
        } else {
            line_number
        };
        let end = if context > 0 {
            (line_number + context).min(lines.len())
        } else {
            line_number
        };
        let mut block = Vec::new();
        for current in start..=end {
            let text = lines.get(current - 1).map(String::as_str).unwrap_or("");
            let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
            any_cut |= cut;
            if current == line_number {
                block.push(format!("{shown}:{current}: {text}"));
            } else {
                block.push(format!("{shown}-{current}- {text}"));
            }
        }
        self.lines_truncated |= any_cut;
        block
    }
}
