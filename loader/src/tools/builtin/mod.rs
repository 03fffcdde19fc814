//! The built-in tools: bash, read, write, edit, ls, find, grep.

use super::Tool;

/// Every built-in tool, in pi's order.
pub fn builtin_tools() -> Vec<Box<dyn Tool>> {
    Vec::new()
}
