//! The built plugin, loaded by the real host through `pi_hooks_host::testing`: what an author's
//! own `cargo test` of a plugin crate looks like.

use pi_hooks_host::testing::PluginTest;
use serde_json::json;

fn plugin() -> PluginTest {
    PluginTest::built("permission-gate").expect("load the plugin")
}

fn bash(command: &str) -> serde_json::Value {
    json!({"toolCallId": "t1", "toolName": "bash", "input": {"command": command}})
}

#[test]
fn asks_before_rm_rf_and_blocks_on_no() {
    let plugin = plugin();
    plugin.answer_dialogs([json!({"value": "No"})]);
    let out = plugin.emit("tool_call", bash("rm -rf build")).unwrap();
    assert_eq!(
        out.decision,
        json!({"block": true, "reason": "Blocked by user"})
    );
    assert_eq!(out.calls.len(), 1);
    assert_eq!(out.calls[0]["method"], "select");
}

#[test]
fn yes_allows_and_harmless_commands_are_not_asked_about() {
    let plugin = plugin();
    plugin.answer_dialogs([json!({"value": "Yes"})]);
    let out = plugin.emit("tool_call", bash("sudo ls")).unwrap();
    assert_eq!(out.decision, json!({"block": false}));
    assert_eq!(out.calls[0]["answer"], json!({"value": "Yes"}));
    let out = plugin.emit("tool_call", bash("ls -la")).unwrap();
    assert_eq!(out.decision, json!({"block": false}));
    assert!(out.calls.is_empty());
}
