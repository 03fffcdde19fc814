//! bang-stats (Rust) as the host runs it, against the behaviour in
//! plugins/examples/bang-stats-c/README.md.

use pi_hooks_host::testing::PluginTest;
use serde_json::json;

#[test]
fn the_prefix_transforms_and_stats_counts() {
    let plugin = PluginTest::built("bang-stats-rs").unwrap();
    let input = |text: &str| {
        plugin
            .emit("input", json!({"text": text}))
            .unwrap()
            .decision
    };
    assert_eq!(
        input("!!  keep it short"),
        json!({"action": "transform", "text": "keep it short\n\n(Answer briefly.)", "images": null})
    );
    assert_eq!(input("say !!x"), json!({"action": "continue"}));
    let call = json!({"toolCallId": "t", "toolName": "bash", "input": {"command": "ls"}});
    assert_eq!(
        plugin.emit("tool_call", call).unwrap().decision,
        json!({"block": false})
    );
    let stats = plugin.command("stats", "").unwrap();
    assert_eq!(
        stats.calls,
        [
            json!({"call": "ui", "method": "notify", "message": "inputs: 2, tool calls: 1", "notifyType": "info"})
        ]
    );
}
