//! block-sudo (Rust) as the host runs it, against the behaviour in
//! plugins/examples/block-sudo-c/README.md.

use pi_hooks_host::testing::PluginTest;
use serde_json::json;

#[test]
fn blocks_sudo_as_a_word_only() {
    let plugin = PluginTest::built("block-sudo-rs").unwrap();
    let decide = |tool: &str, command: &str| {
        let call = json!({"toolCallId": "t", "toolName": tool, "input": {"command": command}});
        plugin.emit("tool_call", call).unwrap().decision
    };
    let blocked = json!({"block": true, "reason": "sudo is not allowed"});
    for command in ["sudo ls", "cd /tmp && sudo rm x", "(sudo)"] {
        assert_eq!(decide("bash", command), blocked, "{command}");
    }
    for command in ["pseudo", "sudoers", "visudo", "ls"] {
        assert_eq!(
            decide("bash", command),
            json!({"block": false}),
            "{command}"
        );
    }
    assert_eq!(decide("read", "sudo"), json!({"block": false}));
}
