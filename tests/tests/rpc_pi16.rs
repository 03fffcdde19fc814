//! `pi-hooks rpc` and `pi-hooks run --mode json` speak pi 1.6.0's protocol (issue 33 item 5):
//! pi 1.6.0's own `RpcClient` (installed by `pi_hooks_tests::tools::pi16`) drives a whole
//! session through scripts/pi-e2e/rpc16-client-session.mjs (prompt dispositions,
//! `waitForIdle` on `agent_settled`, `getEntries`, `getTree`, `clearQueue`, an unknown
//! command answered with its id, `bash` with `bash_execution_update`, `user_bash` and
//! `input` handlers of a real C plugin), and the raw lines are checked against pi 1.6's
//! shapes (`message_update` deltas with `usage`, `toolcall_start` naming its call,
//! `agent_end.willRetry`, `agent_settled`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{
    Sandbox, behave_env_var, behave_plugin, compile_c_text, json_lines, output_within,
    pi_hooks_bin, workspace_root,
};
use serde_json::{Value, json};

/// The model runs each prompt as a bash command, then says it finished.
fn script(sandbox: &Sandbox) -> PathBuf {
    let path = sandbox.root().join("script.json");
    let script = json!({
        "turns": [
            {"text": "Running ${PROMPT}", "toolCalls": [{"name": "bash", "arguments": {"command": "${PROMPT}"}}]},
            {"text": "Finished ${PROMPT}"}
        ]
    });
    std::fs::write(&path, script.to_string()).expect("write the script");
    path
}

/// A C plugin registering the command `/hello16`, which does nothing.
fn hello_plugin(dir: &Path) -> PathBuf {
    let code = r#"#include <string.h>
#include "pi_hooks.h"
static PiStatus run(void *user_data, PiStr args, PiContext *ctx) {
    (void)user_data; (void)args; (void)ctx;
    return PI_OK;
}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    PiCommandDef def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("hello16");
    def.description = pi_str("does nothing");
    def.handler = run;
    return host->registry->register_command(plugin, &def);
}
PI_HOOKS_PLUGIN("hello16", "1.0.0", "registers /hello16", init, NULL);
"#;
    compile_c_text(dir, "hello16", code, &[])
}

/// The `behave` configuration of the plugin "gate16": its `input` handler handles text
/// containing "swallow-me", its `user_bash` handler answers commands containing
/// "answered-by-plugin" itself, and it appends a `note16` entry at each `agent_start`.
fn gate_config() -> Value {
    json!({"handlers": [
        {"event": "input", "if_contains": "swallow-me", "result": {"action": "handled"}},
        {"event": "user_bash", "if_contains": "answered-by-plugin",
         "result": {"result": {"output": "from the plugin\n", "exitCode": 0, "cancelled": false, "truncated": false}}},
        {"event": "agent_start", "append_entry": {"customType": "note16", "data": {"n": 1}}}
    ]})
}

/// Runs scripts/pi-e2e/rpc16-client-session.mjs with pi 1.6.0's node against `pi-hooks rpc`.
fn observe(sandbox: &Sandbox) -> Value {
    let pi = pi_hooks_tests::tools::pi16();
    let gate = behave_plugin(&sandbox.lib(), "gate16");
    let hello = hello_plugin(&sandbox.lib());
    let script = script(sandbox);
    let args = json!(["--no-hooks", "--script", script, "-e", gate, "-e", hello]);
    // The client starts `node <cliPath>`: pi 1.6's node, first on PATH, runs the shim too.
    let mut command = Command::new(&pi.node);
    let folder = pi.node.parent().expect("node's folder").to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let folders = std::iter::once(folder).chain(std::env::split_paths(&path));
    command.env("PATH", std::env::join_paths(folders).expect("PATH entries"));
    command
        .arg(workspace_root().join("scripts/pi-e2e/rpc16-client-session.mjs"))
        .current_dir(sandbox.project())
        .env("HOME", sandbox.home())
        .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
        .env("PI_HOOKS_BIN", pi_hooks_bin())
        .env("PI_HOOKS_ARGS", args.to_string())
        .env("PI_E2E_CWD", sandbox.project())
        .env(behave_env_var("gate16"), gate_config().to_string())
        .env_remove("BEHAVE_LOG")
        .env_remove("PI_HOOKS_CACHE_DIR")
        .env_remove("PI_HOOKS_LOG")
        .env_remove("PI_HOOKS_TRACE")
        .env_remove("PI_HOOKS_TRACE_FILE");
    let output = output_within(command, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "rpc16-client-session.mjs failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!("rpc16-client-session.mjs printed no JSON object ({error}):\n{stdout}\n{stderr}")
    })
}

#[test]
fn pi_16_s_rpc_client_drives_pi_hooks_rpc() {
    let sandbox = Sandbox::new();
    let seen = observe(&sandbox);
    assert_eq!(seen["piVersion"], "1.6.0");
    assert_eq!(seen["stderr"], "", "nothing went wrong on the host's side");

    // prompt() read data.disposition; waitForIdle() saw agent_settled after agent_end.
    assert_eq!(seen["promptDisposition"], "started");
    let run = &seen["firstRun"];
    let types: Vec<&str> = run["types"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        &types[types.len() - 2..],
        ["agent_end", "agent_settled"],
        "{run}"
    );
    assert_eq!(
        run["settled"],
        json!({"type": "agent_settled", "aborted": false})
    );
    assert_eq!(run["agentEnd"]["willRetry"], false, "{run}");
    // The plugin's append_entry at agent_start reached the client as entry_appended.
    let appended = &run["entryAppended"];
    assert_eq!(appended.as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(appended[0]["entry"]["type"], "custom");
    assert_eq!(appended[0]["entry"]["customType"], "note16");
    assert_eq!(appended[0]["entry"]["data"], json!({"n": 1}));

    // message_update: deltas with the partial message's usage, never start/done.
    let updates = run["messageUpdates"].as_array().unwrap();
    assert!(!updates.is_empty());
    for update in updates {
        assert!(update.get("message").is_none(), "{update}");
        assert!(update["usage"].is_object(), "{update}");
        let kind = update["assistantMessageEvent"]["type"].as_str().unwrap();
        assert!(!matches!(kind, "start" | "done" | "error"), "{update}");
        assert!(update["assistantMessageEvent"].get("partial").is_none());
    }
    let call = updates
        .iter()
        .map(|u| &u["assistantMessageEvent"])
        .find(|e| e["type"] == "toolcall_start")
        .expect("a toolcall_start update");
    assert_eq!(call["toolName"], "bash", "{call}");
    assert!(
        call["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{call}"
    );

    // get_entries, with and without a cursor; an unknown cursor fails.
    let entries = seen["entries"]["entries"].as_array().unwrap();
    let last = entries.last().unwrap();
    assert_eq!(seen["entries"]["leafId"], last["id"]);
    assert_eq!(entries[0]["customType"], "note16", "{}", entries[0]);
    assert_eq!(entries[1]["message"]["role"], "user");
    let since = seen["entriesSince"]["entries"].as_array().unwrap();
    assert_eq!(since.len(), entries.len() - 1);
    assert_eq!(since[0], entries[1]);
    assert_eq!(seen["entriesUnknown"], "Entry not found: no-such-entry");

    // get_tree: one root (the note), a chain down to the leaf.
    let tree = &seen["tree"];
    assert_eq!(tree["leafId"], last["id"]);
    let roots = tree["tree"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{tree}");
    let mut node = &roots[0];
    let mut chain = vec![node["entry"]["id"].clone()];
    while let Some(child) = node["children"].get(0) {
        assert_eq!(node["children"].as_array().unwrap().len(), 1);
        node = child;
        chain.push(node["entry"]["id"].clone());
    }
    let ids: Vec<Value> = entries.iter().map(|e| e["id"].clone()).collect();
    assert_eq!(chain, ids);
    assert_eq!(seen["levels"], json!(["off"]));

    // Queueing while a run is in progress, then clear_queue and abort.
    assert_eq!(seen["slowDisposition"], "started");
    assert_eq!(seen["queuedPromptDisposition"], "queued");
    assert_eq!(seen["steerDisposition"], "queued");
    assert_eq!(seen["followUpDisposition"], "queued");
    assert_eq!(
        seen["handledSteerDisposition"], "handled",
        "the plugin's input handler handled the steer"
    );
    assert_eq!(seen["stateBeforeClear"]["pendingMessageCount"], 3);
    assert_eq!(
        seen["cleared"],
        json!({"steering": ["change course"], "followUp": ["queued-as-follow-up", "and then this"]})
    );
    assert_eq!(seen["stateAfterClear"]["pendingMessageCount"], 0);
    assert_eq!(
        seen["abortSettled"],
        json!({"type": "agent_settled", "aborted": true})
    );
    assert_eq!(seen["stateAfterAbort"]["isStreaming"], false);
    let all = seen["allEventTypes"].to_string();
    for text in ["change course", "and then this", "swallow-me"] {
        let said = seen["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.to_string().contains(text));
        assert!(!said, "{text:?} reached the conversation: {all}");
    }

    // A plugin command is handled; an unknown command's error carries the request's id.
    assert_eq!(seen["commandDisposition"], "handled");
    let unknown = &seen["unknown"];
    assert_eq!(unknown["success"], false, "{unknown}");
    assert_eq!(unknown["error"], "Unknown command: frobnicate");
    assert!(
        unknown["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("req_"))
    );
    assert!(seen["unknownMs"].as_u64().is_some_and(|ms| ms < 10_000));

    // bash: streamed, then answered; the plugin answers its own; excludeFromContext kept.
    assert_eq!(
        seen["bash"],
        json!({"output": "from-bash-16\nsecond-line\n", "exitCode": 0, "cancelled": false, "truncated": false})
    );
    let updates = seen["bashUpdates"].as_array().unwrap();
    assert!(!updates.is_empty());
    let streamed: String = updates
        .iter()
        .map(|u| u["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "from-bash-16\nsecond-line\n");
    assert!(updates.iter().all(|u| u["id"].as_str().is_some()));
    assert_eq!(seen["pluginBash"]["output"], "from the plugin\n");
    let records: Vec<&Value> = seen["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "bashExecution")
        .collect();
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[1]["output"], "from the plugin\n");
    assert_eq!(records[2]["command"], "echo hidden-16");
    assert_eq!(records[2]["excludeFromContext"], true);
    assert!(records[0].get("excludeFromContext").is_none());

    // promptAndWait collects up to agent_settled.
    let third: Vec<&str> = seen["thirdRun"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(third.last(), Some(&"agent_settled"), "{third:?}");
    assert!(third.contains(&"agent_end"));
}

/// `pi-hooks rpc --no-session --no-hooks --script <script>` plus `args`.
fn rpc(sandbox: &Sandbox, script: &Path) -> Command {
    sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
    ])
}

#[test]
fn every_failure_names_its_request_even_an_unknown_command() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let mut client = Client::start(rpc(&sandbox, &script));
    client.send(&json!({"id": "t", "type": "get_tree"}));
    let tree = client.response("t");
    assert_eq!(tree["success"], true, "{tree}");
    assert_eq!(tree["data"], json!({"tree": [], "leafId": null}));
    client.send(&json!({"id": "x", "type": "frobnicate"}));
    assert_eq!(
        client.response("x"),
        json!({"id": "x", "type": "response", "command": "frobnicate", "success": false, "error": "Unknown command: frobnicate"})
    );
    client.send(&json!({"id": 7, "type": 5}));
    let (_, line) = client.until(|l| l["type"] == "response");
    assert_eq!(
        line,
        json!({"id": 7, "type": "response", "command": 5, "success": false, "error": "Unknown command: 5"})
    );
    client.send(&json!({"id": "e", "type": "get_entries", "since": "nope"}));
    assert_eq!(client.response("e")["error"], "Entry not found: nope");
    client.send(&json!({"id": "q", "type": "clear_queue"}));
    let (before, cleared) = client.until(|l| l["id"] == "q");
    assert_eq!(
        cleared["data"],
        json!({"steering": [], "followUp": []}),
        "{cleared}"
    );
    assert_eq!(
        before.last(),
        Some(&json!({"type": "queue_update", "steering": [], "followUp": []}))
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn json_mode_prints_pi_16_s_lines() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let output = sandbox.run(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "echo json-16",
    ]);
    assert!(output.status.success(), "{output:?}");
    let lines = json_lines(&output);
    let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
    assert_eq!(&types[types.len() - 2..], ["agent_end", "agent_settled"]);
    let end = &lines[lines.len() - 2];
    assert_eq!(end["willRetry"], false);
    assert_eq!(
        lines.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
    let updates: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .collect();
    assert!(!updates.is_empty());
    for update in &updates {
        let mut keys: Vec<&String> = update.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["assistantMessageEvent", "type", "usage"], "{update}");
    }
    let start = updates
        .iter()
        .find(|u| u["assistantMessageEvent"]["type"] == "toolcall_start")
        .expect("a toolcall_start");
    let call = lines
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .map(|l| l["message"]["content"][1].clone())
        .unwrap();
    assert_eq!(
        start["assistantMessageEvent"],
        json!({"type": "toolcall_start", "contentIndex": 1, "id": call["id"], "toolName": "bash"})
    );
    // The deltas rebuild the text the message ends with.
    let text: String = updates
        .iter()
        .take_while(|u| u["assistantMessageEvent"]["type"] != "toolcall_start")
        .filter(|u| u["assistantMessageEvent"]["type"] == "text_delta")
        .map(|u| u["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Running echo json-16");
}

#[test]
fn a_retried_run_says_will_retry_and_settles_once() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let server = FakeOpenAi::start(move |_| {
        if calls.fetch_add(1, Ordering::SeqCst) < 2 {
            Reply::Status(
                503,
                json!({"error": {"message": "The server is overloaded"}}).to_string(),
            )
        } else {
            Reply::Text("recovered".into())
        }
    });
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"retry": {"baseDelayMs": 20}}).to_string(),
    )
    .unwrap();
    let output = sandbox
        .command(&[
            "run",
            "--mode",
            "json",
            "--no-session",
            "--no-hooks",
            "--provider",
            "local",
            "--model",
            "m",
            "--base-url",
            &server.base_url,
            "hello",
        ])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let outline: Vec<String> = json_lines(&output)
        .iter()
        .filter_map(|l| match l["type"].as_str()? {
            "agent_end" => Some(format!("agent_end willRetry={}", l["willRetry"])),
            "agent_settled" => Some(format!("agent_settled aborted={}", l["aborted"])),
            "agent_start" => Some("agent_start".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        outline,
        [
            "agent_start",
            "agent_end willRetry=true",
            "agent_start",
            "agent_end willRetry=true",
            "agent_start",
            "agent_end willRetry=false",
            "agent_settled aborted=false",
        ]
    );
}

#[test]
fn an_entry_a_plugin_appends_at_session_start_reaches_the_json_stream() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let config = json!({"handlers": [
        {"event": "session_start", "append_entry": {"customType": "boot16", "data": {"at": "start"}}}
    ]});
    let output = pi_hooks_tests::behave_command(
        &sandbox,
        &[("booter", config)],
        &[
            "run",
            "--mode",
            "json",
            "--no-session",
            "--no-hooks",
            "--script",
            script.to_str().unwrap(),
        ],
    )
    .arg("echo boot")
    .output()
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    let lines = json_lines(&output);
    assert_eq!(lines[0]["type"], "session", "the header first: {lines:#?}");
    assert_eq!(lines[1]["type"], "entry_appended", "{lines:#?}");
    let entry = &lines[1]["entry"];
    assert_eq!(entry["type"], "custom");
    assert_eq!(entry["customType"], "boot16");
    assert_eq!(entry["data"], json!({"at": "start"}));
    assert!(entry["id"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(lines[2]["type"], "agent_start");
}

#[test]
fn naming_the_session_tells_the_client_with_session_info_changed() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let mut client = Client::start(rpc(&sandbox, &script));
    client.send(&json!({"id": "n", "type": "set_session_name", "name": "  my work "}));
    let (before, response) = client.until(|l| l["id"] == "n");
    assert_eq!(response["success"], true, "{response}");
    assert_eq!(
        before,
        [json!({"type": "session_info_changed", "name": "my work"})]
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}
