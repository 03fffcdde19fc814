//! block-sudo (Rust): blocks `bash` tool calls whose command contains the word `sudo`
//! (behaviour: plugins/examples/block-sudo-c/README.md).

use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(name: "block-sudo", version: env!("CARGO_PKG_VERSION"), init: init);

fn init(pi: &mut Registrar) -> Result<()> {
    pi.on_tool_call(|call, _ctx| match call.input_str("command") {
        Some(command) if call.tool_name() == "bash" && has_word(command, "sudo") => {
            Ok(ToolCallDecision::block("sudo is not allowed"))
        }
        _ => Ok(ToolCallDecision::Allow),
    })
}

/// Whether `word` occurs in `text` with no letter, digit or `_` right before or after it.
fn has_word(text: &str, word: &str) -> bool {
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !is_word(text[..at].chars().next_back()) && !is_word(text[at + word.len()..].chars().next())
    })
}
