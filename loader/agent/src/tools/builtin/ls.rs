//! `ls {path?, limit?}`: lists a directory, after pi's `ls.ts`.
//!
//! What matches pi: the directory defaults to the cwd; errors `Path not found: <abs>`,
//! `Not a directory: <abs>`, `Cannot read directory: <reason>`; every entry including dotfiles,
//! sorted case-insensitively, directories (symlinks followed) with a trailing `/`, entries that
//! cannot be stat'ed (broken symlinks) left out; at most `limit` (default 500) entries, then
//! `[N entries limit reached. Use limit=2N for more]` and `details.entryLimitReached`; the
//! listing is cut at 50 KB (`50.0KB limit reached`, `details.truncation`); an empty directory
//! reads `(empty directory)`.
//!
//! Difference: pi sorts with `localeCompare` (ICU collation) on lower-cased names; we compare
//! the lower-cased names code point by code point, which orders punctuation differently.

use serde_json::{Value, json};

use super::{
    Args, Listing, OPERATION_ABORTED, node_io_error, object_schema, resolve_to_cwd, to_count,
};
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// Entries listed when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 500;

/// The `ls` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct LsTool;

impl Tool for LsTool {
    fn name(&self) -> &str {
        "ls"
    }

    fn label(&self) -> &str {
        "ls"
    }

    fn description(&self) -> &str {
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes \
         dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first)."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "Directory to list (default: current directory)"},
                "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"},
            }),
            &[],
        )
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("ls", call.args);
        let path = args
            .opt_string("path")?
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".to_string());
        let limit = args
            .opt_number("limit")?
            .map(to_count)
            .unwrap_or(DEFAULT_LIMIT);
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }

        let dir = resolve_to_cwd(&path, call.cwd);
        let meta =
            std::fs::metadata(&dir).map_err(|_| format!("Path not found: {}", dir.display()))?;
        if !meta.is_dir() {
            return Err(format!("Not a directory: {}", dir.display()));
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .and_then(|entries| {
                entries
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .map_err(|e| {
                format!(
                    "Cannot read directory: {}",
                    node_io_error(&e, "scandir", &dir)
                )
            })?;
        names.sort_by_cached_key(|name| (name.to_lowercase(), name.clone()));

        let mut results: Vec<String> = Vec::new();
        let mut entry_limit_reached = false;
        for name in names {
            if results.len() >= limit {
                entry_limit_reached = true;
                break;
            }
            let Ok(meta) = std::fs::metadata(dir.join(&name)) else {
                continue;
            };
            results.push(if meta.is_dir() {
                format!("{name}/")
            } else {
                name
            });
        }
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }
        if results.is_empty() {
            return Ok(ToolOutput::text("(empty directory)"));
        }

        let mut listing = Listing::new(&results);
        if entry_limit_reached {
            let text = format!(
                "{limit} entries limit reached. Use limit={} for more",
                limit.saturating_mul(2)
            );
            listing.notice(text, "entryLimitReached", json!(limit));
        }
        listing.truncation_notice();
        Ok(listing.finish())
    }
}
