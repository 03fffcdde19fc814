//! `write {path, content}`: writes a file, after pi's `write.ts`.
//!
//! What matches pi: parent directories are created, an existing file is overwritten, the result
//! is `Successfully wrote N bytes to <path>` with the path as the model gave it and `details`
//! undefined. N is `content.length` in JavaScript, i.e. UTF-16 code units: the same as the byte
//! count for ASCII, smaller for other text (pi's wording, kept as is).

use serde_json::{Value, json};

use super::{Args, OPERATION_ABORTED, node_io_error, object_schema, resolve_to_cwd};
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

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("write", call.args);
        let path = args.string("path")?;
        let content = args.string("content")?;
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }
        let absolute = resolve_to_cwd(&path, call.cwd);
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
