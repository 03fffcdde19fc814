//! The three plugins of the author's kit, run with the real host in a session, one
//! build per language, each checked for the exact results its README specifies:
//!
//! - `block-sudo-*`: a bash command with the word `sudo` is blocked with the reason
//!   `sudo is not allowed`; `pseudo`, `sudoers` and `visudo` are not the word.
//! - `redact-aws-keys-*`: every `AKIA[0-9A-Z]{16}` in a tool result's text blocks becomes
//!   `[REDACTED]`; the image block between them and the details stay as they were.
//! - `bang-stats-*`: `!!  text` reaches the model as `text\n\n(Answer briefly.)`; other input
//!   is unchanged; `/stats` notifies `inputs: N, tool calls: M` (over RPC, where a notify
//!   reaches the client).
//!
//! `tests/fixtures/image_tool.c` supplies a tool whose result mixes text and an image.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::{
    Sandbox, c_example_plugin, c_fixture, compile_cpp, json_lines, output_within, workspace_root,
};
use serde_json::{Value, json};

/// Longer than any run here takes.
const LIMIT: Duration = Duration::from_secs(60);

/// The builds of one example, `(language, library)`: `plugins/examples/<name>-c/<file>.c` and
/// `plugins/examples/<name>-cpp/<file>.cpp`.
fn builds(dir: &Path, name: &str, file: &str) -> Vec<(&'static str, PathBuf)> {
    let cpp_source = workspace_root()
        .join("plugins/examples")
        .join(format!("{name}-cpp"))
        .join(format!("{file}.cpp"));
    let cpp = compile_cpp(
        &cpp_source,
        &dir.join(format!("lib{file}_cpp{}", std::env::consts::DLL_SUFFIX)),
    );
    vec![
        ("C", c_example_plugin(dir, &format!("{name}-c"), file)),
        ("C++", cpp),
    ]
}

/// The `tool_execution_end` events in the order the calls started.
fn tool_ends(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_execution_start")
        .filter_map(|start| {
            events.iter().find(|e| {
                e["type"] == "tool_execution_end" && e["toolCallId"] == start["toolCallId"]
            })
        })
        .collect()
}

#[test]
fn block_sudo_and_redact_aws_keys_in_a_session() {
    let s = Sandbox::new();
    let image_tool = c_fixture(&s.lib(), "image_tool", &[]);
    let sudo = builds(&s.lib(), "block-sudo", "block_sudo");
    let redact = builds(&s.lib(), "redact-aws-keys", "redact_aws_keys");
    let script = s.script(&json!({"turns": [
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "cd /tmp && sudo rm -rf cache"}},
            {"name": "bash", "arguments": {"command": "echo pseudo sudoers visudo"}},
            {"name": "screenshot", "arguments": {}},
            {"name": "bash", "arguments": {"command": "echo AKIAIOSFODNN7EXAMPLE; echo AKIAlower0123456789"}}
        ]},
        {"text": "done"}
    ]}));
    for ((lang, sudo), (_, redact)) in sudo.iter().zip(&redact) {
        let mut command = s.command(&["run", "--mode", "json", "--no-session", "--script"]);
        command.arg(&script);
        for hook in [sudo, redact, &image_tool] {
            command.arg("--hook").arg(hook);
        }
        command.arg("go");
        let output = output_within(command, LIMIT);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{lang}: {stderr}");
        let events = json_lines(&output);
        let ends = tool_ends(&events);
        assert_eq!(ends.len(), 4, "{lang}: {stderr}\n{events:?}");
        assert_eq!(ends[0]["isError"], true, "{lang}: {}", ends[0]);
        assert_eq!(
            ends[0]["result"]["content"],
            json!([{"type": "text", "text": "sudo is not allowed"}]),
            "{lang}"
        );
        assert_eq!(ends[1]["isError"], false, "{lang}: {}", ends[1]);
        assert_eq!(
            ends[1]["result"]["content"],
            json!([{"type": "text", "text": "pseudo sudoers visudo\n"}]),
            "{lang}"
        );
        assert_eq!(
            ends[2]["result"]["content"],
            json!([
                {"type": "text", "text": "id=[REDACTED] secret"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "text", "text": "AKIAIOSFODNN7EXAMPL (19) [REDACTED]X"}
            ]),
            "{lang}"
        );
        assert_eq!(
            ends[2]["result"]["details"],
            json!({"keep": "AKIAIOSFODNN7EXAMPLE"}),
            "{lang}: details are not redacted"
        );
        assert_eq!(
            ends[3]["result"]["content"],
            json!([{"type": "text", "text": "[REDACTED]\nAKIAlower0123456789\n"}]),
            "{lang}"
        );
        assert!(!stderr.contains("error"), "{lang}: {stderr}");
    }
}

/// The text of the user message of each `message_end` among `lines`.
fn user_texts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .map(|l| {
            l["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn bang_prefix_and_stats_command_over_rpc() {
    let s = Sandbox::new();
    let script = s.script(&json!({"turns": [
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "echo one"}},
            {"name": "bash", "arguments": {"command": "echo two"}}
        ]},
        {"text": "done"}
    ]}));
    for (lang, plugin) in builds(&s.lib(), "bang-stats", "bang_stats") {
        let mut command = s.command(&["rpc", "--no-session", "--no-hooks", "--script"]);
        command.arg(&script).arg("-e").arg(&plugin);
        let mut client = RpcClient::start(command);
        let mut seen = Vec::new();
        for (id, message) in [("a", "!!  keep it short"), ("b", "say !!x"), ("c", "!!")] {
            client.send(&json!({"id": id, "type": "prompt", "message": message}));
            let (before, _) = client.until(|l| l["type"] == "agent_end");
            seen.extend(before);
        }
        assert_eq!(
            user_texts(&seen),
            [
                "keep it short\n\n(Answer briefly.)",
                "say !!x",
                "\n\n(Answer briefly.)"
            ],
            "{lang}"
        );
        client.send(&json!({"id": "s", "type": "prompt", "message": "/stats"}));
        let notify = client.ui_request();
        assert_eq!(notify["method"], "notify", "{lang}: {notify}");
        assert_eq!(
            notify["message"], "inputs: 3, tool calls: 6",
            "{lang}: /stats is a command, not an input"
        );
        assert_eq!(notify["notifyType"], "info", "{lang}");
        let (status, _) = client.close();
        assert_eq!(status.code(), Some(0), "{lang}");
    }
}
