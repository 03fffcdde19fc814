//! redact-aws-keys (Rust): replaces AWS access key ids in the text of tool results with
//! `[REDACTED]`, keeping image blocks (behaviour: plugins/examples/redact-aws-keys-c/README.md).

use std::sync::LazyLock;

use pi_hooks_abi::sdk::prelude::*;
use regex::Regex;

pi_hooks_abi::plugin!(name: "redact-aws-keys", version: env!("CARGO_PKG_VERSION"), init: init);

static KEY: LazyLock<Regex> = LazyLock::new(|| Regex::new("AKIA[0-9A-Z]{16}").unwrap());

fn init(pi: &mut Registrar) -> Result<()> {
    pi.on("tool_result", |event, _ctx| {
        let mut content: Vec<Json> = event.get("content").deserialize()?;
        let mut changed = false;
        for block in &mut content {
            if let Some(text) = block.get("text").and_then(|t| t.as_str()) {
                let redacted = KEY.replace_all(text, "[REDACTED]").into_owned();
                changed |= redacted != text;
                block["text"] = redacted.into();
            }
        }
        Ok(changed.then(|| json!({"content": content})))
    })
}
