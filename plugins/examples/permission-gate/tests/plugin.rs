//! The built plugin, loaded by the real host through `pi_hooks::testing`: what an author's
//! own `cargo test` of a plugin crate looks like.

use pi_hooks::testing::PluginTest;
use serde_json::json;

/// `libpermission_gate.so` beside this test's `deps/` folder (cargo builds the cdylib before
/// the crate's integration tests).
fn plugin() -> PluginTest {
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let file = format!(
        "{}permission_gate{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    PluginTest::load(dir.join(file)).expect("load the plugin")
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
