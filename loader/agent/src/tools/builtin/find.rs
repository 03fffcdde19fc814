//! `find {pattern, path?, limit?}`: finds files by glob, after pi's `find.ts` (which runs `fd
//! --glob --hidden --max-results N` with every `.gitignore` under the search path).
//!
//! What matches pi: the search directory defaults to the cwd (`Path not found: <abs>` when
//! missing); hidden files are included; `.gitignore` files are honoured (also outside git
//! repositories, as pi passes them to fd explicitly), as are `.ignore` and git's exclude files;
//! a pattern without `/` is matched against the file name (`*.rs`, `**/*.json`), as fd does;
//! results are relative to the search directory with `/` separators, directories with a
//! trailing `/`; at most `limit` (default 1000) results, then `[N results limit reached. Use
//! limit=2N for more, or refine pattern]` and `details.resultLimitReached`; the output is cut at
//! 50 KB (`50.0KB limit reached`, `details.truncation`); no match reads
//! `No files found matching pattern`.
//!
//! Differences: the walk is the `ignore` crate's, not fd: results come in sorted order (fd's are
//! unordered), `.git/` is never listed, and a pattern containing `/` (`src/**/*.ts`) is matched
//! against the path relative to the search directory (fd would match nothing), which is what
//! pi's description promises.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use serde_json::{Value, json};

use super::{
    Args, Listing, OPERATION_ABORTED, object_schema, relative_slash_path, resolve_to_cwd, to_count,
};
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// Results returned when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 1000;

/// The `find` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindTool;

impl Tool for FindTool {
    fn name(&self) -> &str {
        "find"
    }

    fn label(&self) -> &str {
        "find"
    }

    fn description(&self) -> &str {
        "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects \
         .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first)."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "pattern": {
                    "type": "string",
                    "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
                },
                "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
                "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
            }),
            &["pattern"],
        )
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("find", call.args);
        let pattern = args.string("pattern")?;
        let path = args
            .opt_string("path")?
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".to_string());
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
        if !meta.is_dir() {
            return Err(format!(
                "[fd error]: Search path '{}' is not a directory.",
                search_path.display()
            ));
        }
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("Invalid glob pattern '{pattern}': {e}"))?
            .compile_matcher();
        let full_path = pattern.contains('/');

        let results = walk(&search_path, &glob, full_path, limit, call)?;
        if results.is_empty() {
            return Ok(ToolOutput::text("No files found matching pattern"));
        }

        let limit_reached = results.len() >= limit;
        let mut listing = Listing::new(&results);
        if limit_reached {
            let text = format!(
                "{limit} results limit reached. Use limit={} for more, or refine pattern",
                limit.saturating_mul(2)
            );
            listing.notice(text, "resultLimitReached", json!(limit));
        }
        listing.truncation_notice();
        Ok(listing.finish())
    }
}

/// A gitignore-aware walker over `root` that includes hidden files and skips `.git/`, in sorted
/// order (shared with `grep`).
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

fn walk(
    root: &Path,
    glob: &GlobMatcher,
    full_path: bool,
    limit: usize,
    call: &ToolInvocation<'_>,
) -> Result<Vec<String>, String> {
    let mut results = Vec::new();
    for (seen, entry) in walker(root).build().enumerate() {
        if seen % 256 == 0 && call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let Some(rel) = relative_slash_path(entry.path(), root) else {
            continue;
        };
        let matched = if full_path {
            glob.is_match(&rel)
        } else {
            glob.is_match(entry.file_name())
        };
        if !matched {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        results.push(if is_dir { format!("{rel}/") } else { rel });
        if results.len() >= limit {
            break;
        }
    }
    Ok(results)
}
