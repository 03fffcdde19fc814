//! redact-aws-keys (Rust): replaces AWS access key ids in the text of tool results with
//! `[REDACTED]`, keeping image blocks (behaviour: plugins/examples/redact-aws-keys-c/README.md).

use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(name: "redact-aws-keys", version: env!("CARGO_PKG_VERSION"), init: init);

fn init(pi: &mut Registrar) -> Result<()> {
    pi.on("tool_result", |event, _ctx| {
        let (content, replaced) = event
            .get("content")
            .replace_text("AKIA[0-9A-Z]{16}", "[REDACTED]")?;
        Ok((replaced > 0).then(|| json!({"content": content})))
    })
}
