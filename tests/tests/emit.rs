//! `pi-hooks emit` and `pi_hooks_host::testing`: one event (or command) fired at one plugin without
//! a session, its decision and every host call it made, with real plugins.

use pi_hooks_host::testing::PluginTest;
use pi_hooks_tests::{
    Sandbox, behave_plugin, c_example_plugin, protected_paths_plugin, rust_plugin,
};
use serde_json::{Value, json};

fn emit(sandbox: &Sandbox, args: &[&str]) -> (Value, String, bool) {
    let mut all = vec!["emit"];
    all.extend_from_slice(args);
    let output = sandbox.run(&all);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (json, stderr, output.status.success())
}

#[test]
fn a_block_with_the_dialog_that_decided_it() {
    let sandbox = Sandbox::new();
    let gate = rust_plugin("permission-gate");
    let payload =
        json!({"toolCallId": "t1", "toolName": "bash", "input": {"command": "rm -rf build"}});
    let (out, stderr, ok) = emit(
        &sandbox,
        &[
            gate.to_str().unwrap(),
            "tool_call",
            "--payload",
            &payload.to_string(),
            "--ui-answers",
            r#"[{"value": "No"}]"#,
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        out["decision"],
        json!({"block": true, "reason": "Blocked by user"})
    );
    let calls = out["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{out}");
    assert_eq!(calls[0]["call"], "ui");
    assert_eq!(calls[0]["method"], "select");
    assert_eq!(calls[0]["options"], json!(["Yes", "No"]));
    assert_eq!(calls[0]["answer"], json!({"value": "No"}));

    // "Yes" lets it through; without a UI it is blocked without asking.
    let (out, _, _) = emit(
        &sandbox,
        &[
            gate.to_str().unwrap(),
            "tool_call",
            "--payload",
            &payload.to_string(),
            "--ui-answers",
            r#"[{"value": "Yes"}]"#,
        ],
    );
    assert_eq!(out["decision"], json!({"block": false}));
    let (out, _, _) = emit(
        &sandbox,
        &[
            gate.to_str().unwrap(),
            "tool_call",
            "--payload",
            &payload.to_string(),
            "--no-ui",
        ],
    );
    assert_eq!(out["decision"]["block"], true);
    assert_eq!(out["calls"], json!([]));
}

#[test]
fn a_tool_result_patch_and_a_command_with_a_confirm() {
    let sandbox = Sandbox::new();
    // A behave plugin that replaces the content of every tool result.
    let patcher = behave_plugin(&sandbox.lib(), "patcher");
    let config = json!({"handlers": [{"event": "tool_result",
        "result": {"content": [{"type": "text", "text": "[redacted]"}]}}]});
    let payload = json!({"toolCallId": "t1", "toolName": "read", "input": {"path": "a"},
        "content": [{"type": "text", "text": "AKIAABCDEFGHIJKLMNOP"}], "isError": false});
    let output = sandbox
        .command(&[
            "emit",
            patcher.to_str().unwrap(),
            "tool_result",
            "--payload",
            &payload.to_string(),
        ])
        .env(
            pi_hooks_tests::behave_env_var("patcher"),
            config.to_string(),
        )
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        out["decision"],
        json!({"content": [{"type": "text", "text": "[redacted]"}], "details": null, "isError": false})
    );

    let deploy = c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command");
    let (out, stderr, ok) = emit(
        &sandbox,
        &[
            deploy.to_str().unwrap(),
            "/deploy",
            "--args",
            "staging",
            "--ui-answers",
            r#"[{"confirmed": false}]"#,
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(out["decision"], json!({}));
    assert_eq!(out["calls"][0]["method"], "confirm");
    assert_eq!(out["calls"][0]["message"], "Deploy to staging?");
    assert_eq!(
        out["calls"][1],
        json!({"call": "ui", "method": "notify", "message": "Deploy to staging cancelled", "notifyType": "warning"})
    );
    // A bare `true` answers a confirm (as `{"confirmed": true}`).
    let (out, stderr, ok) = emit(
        &sandbox,
        &[
            deploy.to_str().unwrap(),
            "/deploy",
            "--args",
            "staging",
            "--ui-answers",
            "[true]",
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(out["calls"][0]["answer"], json!({"confirmed": true}));
    assert_eq!(out["calls"][1]["message"], "Deploying to staging");
}

#[test]
fn bad_input_is_named_and_an_unknown_event_warned_about() {
    let sandbox = Sandbox::new();
    let plugin = protected_paths_plugin(&sandbox.lib());
    let path = plugin.to_str().unwrap();
    let (_, stderr, ok) = emit(&sandbox, &[path, "tool_call", "--payload", "[1]"]);
    assert!(!ok);
    assert_eq!(
        stderr,
        "pi-hooks: --payload must be a JSON object (the event's fields without `type`), got [1]\n"
    );
    let (_, stderr, ok) = emit(&sandbox, &[path, "tool_call", "--payload", "{"]);
    assert!(!ok);
    assert!(
        stderr.starts_with("pi-hooks: --payload is not valid JSON: "),
        "{stderr}"
    );
    let (out, stderr, ok) = emit(&sandbox, &[path, "toolCall"]);
    assert!(ok);
    assert_eq!(
        stderr,
        "pi-hooks: warning: \"toolCall\" is not an event the host emits; did you mean \"tool_call\"? (docs/events.md lists them)\n"
    );
    assert_eq!(out["decision"], Value::Null);
    let (_, stderr, ok) = emit(&sandbox, &["/nowhere/libx.so", "tool_call"]);
    assert!(!ok);
    assert_eq!(
        stderr,
        "pi-hooks: /nowhere/libx.so: file not found; check the path\n"
    );
}

#[test]
fn the_testing_module_gives_the_same_from_cargo_test() {
    let sandbox = Sandbox::new();
    let plugin = PluginTest::load(protected_paths_plugin(&sandbox.lib())).unwrap();
    let out = plugin
        .emit(
            "tool_call",
            json!({"toolCallId": "t", "toolName": "edit", "input": {"path": "./.env", "edits": []}}),
        )
        .unwrap();
    assert_eq!(
        out.decision,
        json!({"block": true, "reason": "Path \"./.env\" is protected"})
    );
    let out = plugin
        .emit(
            "tool_call",
            json!({"toolCallId": "t", "toolName": "write", "input": {"path": "notes.md", "content": ""}}),
        )
        .unwrap();
    assert_eq!(out.decision, json!({"block": false}));
    assert!(PluginTest::load("/nowhere/libx.so").is_err());
}

/// `--steps`: one loaded instance through a sequence, its appended entries kept in the session
/// later steps read. counter-c counts with `/count` (an `append_entry` each), and on
/// `session_start` restores the count from the session: only one instance that saw the two
/// counts can say 2.
#[test]
fn a_sequence_of_steps_runs_against_one_instance() {
    let sandbox = Sandbox::new();
    let counter = c_example_plugin(&sandbox.lib(), "counter-c", "counter");
    let steps = json!([
        {"event": "session_start", "payload": {"reason": "startup"}},
        {"command": "count"},
        {"event": "/count"},
        {"event": "session_start", "payload": {"reason": "reload"}},
        {"command": "confirm-nothing", "args": "x"}
    ]);
    let file = sandbox.root().join("steps.json");
    std::fs::write(&file, steps.to_string()).unwrap();
    let (out, stderr, ok) = emit(
        &sandbox,
        &[
            counter.to_str().unwrap(),
            "--steps",
            &format!("@{}", file.display()),
        ],
    );
    // The last step names a command the plugin does not have: the run stops there with an
    // error, after printing nothing.
    assert!(!ok, "an unknown command fails the sequence: {out}");
    assert!(
        stderr.contains("step 5") && stderr.contains("confirm-nothing"),
        "{stderr}"
    );

    let steps = json!([
        {"event": "session_start", "payload": {"reason": "startup"}},
        {"command": "count"},
        {"event": "/count"},
        {"event": "session_start", "payload": {"reason": "reload"}}
    ]);
    let (out, stderr, ok) = emit(
        &sandbox,
        &[counter.to_str().unwrap(), "--steps", &steps.to_string()],
    );
    assert!(ok, "{stderr}");
    let results = out.as_array().expect("one result per step");
    assert_eq!(results.len(), 4, "{out}");
    let notes: Vec<&str> = results
        .iter()
        .map(|r| {
            r["calls"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["method"] == "notify")
                .and_then(|c| c["message"].as_str())
                .unwrap_or("")
        })
        .collect();
    assert!(
        notes[0].ends_with("restored count 0 on startup"),
        "{notes:?}"
    );
    assert_eq!(notes[1], "count: 1");
    assert_eq!(notes[2], "count: 2");
    assert!(
        notes[3].ends_with("restored count 2 on reload"),
        "{notes:?}"
    );
    assert_eq!(results[1]["command"], "count");
    assert_eq!(results[3]["event"], "session_start");

    // A step that is not an object, and one with both event and command, are named.
    let (_, stderr, ok) = emit(
        &sandbox,
        &[
            counter.to_str().unwrap(),
            "--steps",
            r#"[{"event": "input"}, 3]"#,
        ],
    );
    assert!(!ok && stderr.contains("step 2"), "{stderr}");
    let (_, stderr, ok) = emit(
        &sandbox,
        &[
            counter.to_str().unwrap(),
            "--steps",
            r#"[{"event": "input", "command": "count"}]"#,
        ],
    );
    assert!(
        !ok && stderr.contains("step 1") && stderr.contains("exactly one"),
        "{stderr}"
    );
}

/// A Rust SDK handler's `ToolCallDecision::rewrite`: `emit` shows the input the tool would run
/// with in the decision, and a call it leaves alone has none.
#[test]
fn a_rewritten_tool_input_is_in_the_decision() {
    let sandbox = Sandbox::new();
    let plugin = rust_plugin("fixture-rust-init");
    let call = |command: &str| {
        let payload =
            json!({"toolCallId": "t1", "toolName": "bash", "input": {"command": command}});
        let (out, stderr, ok) = emit(
            &sandbox,
            &[
                plugin.to_str().unwrap(),
                "tool_call",
                "--payload",
                &payload.to_string(),
            ],
        );
        assert!(ok, "{stderr}");
        out["decision"].clone()
    };
    assert_eq!(
        call("npm test"),
        json!({"block": false, "input": {"command": "pnpm test"}})
    );
    assert_eq!(call("ls"), json!({"block": false}));
}
