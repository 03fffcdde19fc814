//! redact-aws-keys (Rust) as the host runs it, against the behaviour in
//! plugins/examples/redact-aws-keys-c/README.md.

use pi_hooks_host::testing::PluginTest;
use serde_json::{Value, json};

fn result(plugin: &PluginTest, content: Value) -> Value {
    let payload = json!({"toolCallId": "t", "toolName": "read", "input": {}, "content": content, "isError": false});
    plugin.emit("tool_result", payload).unwrap().decision
}

#[test]
fn keys_in_text_are_redacted_and_images_kept() {
    let plugin = PluginTest::built("redact-aws-keys-rs").unwrap();
    let image = json!({"type": "image", "data": "AKIAABCDEFGHIJKLMNOP", "mimeType": "image/png"});
    let patched = result(
        &plugin,
        json!([
            {"type": "text", "text": "id=AKIAIOSFODNN7EXAMPLEX and AKIAIOSFODNN7EXAMPL"},
            image
        ]),
    );
    assert_eq!(
        patched["content"],
        json!([{"type": "text", "text": "id=[REDACTED]X and AKIAIOSFODNN7EXAMPL"}, image])
    );
    // Nothing to redact: no result.
    assert_eq!(
        result(&plugin, json!([{"type": "text", "text": "clean"}])),
        Value::Null
    );
}

#[test]
fn a_plain_string_is_redacted_too() {
    let plugin = PluginTest::built("redact-aws-keys-rs").unwrap();
    // A content that is a string (not an array of blocks) is rewritten the same way.
    let patched = result(&plugin, json!("key AKIAIOSFODNN7EXAMPLE here"));
    assert_eq!(patched["content"], json!("key [REDACTED] here"));
}
