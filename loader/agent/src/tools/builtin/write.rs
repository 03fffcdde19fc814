//! `write {path, content}`: writes a file, after pi's `write.ts`.
//!
//! What matches pi: parent directories are created, an existing file is overwritten, the result
//! is `Successfully wrote N bytes to <path>` with the path as the model gave it and `details`
//! undefined. N is `content.length` in JavaScript, i.e. UTF-16 code units: the same as the byte
//! count for ASCII, smaller for other text (pi's wording, kept as is). Writes and edits of one
//! file are serialised in source order (pi's `withFileMutationQueue`, see
//! [`crate::tools::mutation_queue`]).

use serde_json::{Value, json};

use std::path::{Path, PathBuf};

use super::{Args, OPERATION_ABORTED, node_io_error, object_schema, resolve_to_cwd};
use crate::tools::mutation_queue::turn_for;
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// The `write` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn label(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically \
         creates parent directories."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                "content": {"type": "string", "description": "Content to write to the file"},
            }),
            &["path", "content"],
        )
    }

    fn mutated_file(&self, args: &Value, cwd: &Path) -> Option<PathBuf> {
        let path = Args::new("write", args).string("path").ok()?;
        Some(resolve_to_cwd(&path, cwd))
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("write", call.args);
        let path = args.string("path")?;
        let content = args.string("content")?;
        let absolute = resolve_to_cwd(&path, call.cwd);
        // pi's `withFileMutationQueue`: one change of a file at a time, in source order.
        let _turn = turn_for(call.file_ticket, &absolute);
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }
        if let Some(dir) = absolute.parent() {
            std::fs::create_dir_all(dir).map_err(|e| node_io_error(&e, "mkdir", dir))?;
        }
        std::fs::write(&absolute, content.as_bytes())
            .map_err(|e| node_io_error(&e, "open", &absolute))?;
        let length = content.encode_utf16().count();
        Ok(ToolOutput::text(format!(
            "Successfully wrote {length} bytes to {path}"
        )))
    }
}
