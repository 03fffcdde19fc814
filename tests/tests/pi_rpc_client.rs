//! pi's own RPC client drives `pi-hooks rpc` unchanged: scripts/pi-e2e/rpc-client-session.mjs
//! runs a whole session through pi 0.73.1's `RpcClient` (installed from the committed lockfile
//! by scripts/pi-peer/install.sh), with the example plugins permission-gate (Rust) and
//! confirm-command (C) loaded, and prints what it observed; the assertions here hold it to
//! pi's shapes. Needs node and npm: the test installs pi on first use and fails, saying what to
//! do, when it cannot.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pi_hooks_tests::rpc_client::{RpcClient as Client, command_source_info};
use pi_hooks_tests::{
    Sandbox, c_example_plugin, compile_c_text, output_within, pi_hooks_bin, rust_plugin,
    workspace_root,
};
use serde_json::{Value, json};

/// pi's `rpc-client.js`, installing pi first if needed (`pi_hooks_tests::tools::pi_peer`).
fn require_node_and_pi() -> PathBuf {
    pi_hooks_tests::tools::pi_peer()
        .join("@mariozechner/pi-coding-agent/dist/modes/rpc/rpc-client.js")
}

/// The model runs each prompt as a bash command, then says it finished.
fn script(sandbox: &Sandbox) -> PathBuf {
    let path = sandbox.root().join("script.json");
    let script = json!({
        "turns": [
            {"text": "Running ${PROMPT}", "toolCalls": [{"name": "bash", "arguments": {"command": "${PROMPT}"}}]},
            {"text": "Finished ${PROMPT}"}
        ],
        "models": [
            {"id": "scripted-a", "provider": "scripted"},
            {"id": "scripted-b", "provider": "scripted", "contextWindow": 100000}
        ],
        "summary": "Summary: the user ran echo commands."
    });
    std::fs::write(&path, script.to_string()).expect("write the script");
    path
}

/// Runs scripts/pi-e2e/rpc-client-session.mjs against `pi-hooks rpc` with both examples.
fn observe(sandbox: &Sandbox) -> Value {
    require_node_and_pi();
    let gate = rust_plugin("permission-gate");
    let confirm = c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command");
    let script = script(sandbox);
    std::fs::create_dir_all(sandbox.project().join("victim/inner")).expect("victim folder");
    let args = json!(["--no-hooks", "--script", script, "-e", gate, "-e", confirm]);
    let mut command = Command::new("node");
    command
        .arg(workspace_root().join("scripts/pi-e2e/rpc-client-session.mjs"))
        .current_dir(sandbox.project())
        .env("HOME", sandbox.home())
        .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
        .env("PI_HOOKS_BIN", pi_hooks_bin())
        .env("PI_HOOKS_ARGS", args.to_string())
        .env("PI_E2E_CWD", sandbox.project())
        .env_remove("PI_HOOKS_CACHE_DIR")
        .env_remove("PI_HOOKS_LOG")
        .env_remove("PI_HOOKS_TRACE")
        .env_remove("PI_HOOKS_TRACE_FILE");
    let output = output_within(command, Duration::from_secs(90));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "rpc-client-session.mjs failed ({}):\nstdout: {stdout}\nstderr: {stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
        panic!("rpc-client-session.mjs printed no JSON object ({error}):\n{stdout}\n{stderr}")
    })
}

/// `types` without the progress events whose count depends on timing, and without pi 1.6's
/// `agent_settled` (0.73.1's client ends a run at `agent_end`, so the `agent_settled` right
/// after it may fall into the next collection; the client hands it on like any event).
fn steps(types: &Value) -> Vec<&str> {
    types
        .as_array()
        .expect("a list of event types")
        .iter()
        .filter_map(Value::as_str)
        .filter(|t| !matches!(*t, "tool_execution_update" | "agent_settled"))
        .collect()
}

/// The header line of a session file.
fn header(file: &Value) -> Value {
    let path = file.as_str().expect("a session file path");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(text.lines().next().expect("a header line")).expect("header JSON")
}

#[test]
fn pi_s_rpc_client_drives_a_whole_session() {
    let sandbox = Sandbox::new();
    let seen = observe(&sandbox);
    assert_eq!(seen["piVersion"], "0.73.1");
    assert_eq!(seen["stderr"], "", "nothing went wrong on the host's side");

    // get_state, get_commands (pi's RpcSlashCommand with its sourceInfo).
    let initial = &seen["initialState"];
    assert_eq!(initial["model"]["id"], "scripted-a", "{initial}");
    assert_eq!(initial["isStreaming"], false);
    assert_eq!(initial["messageCount"], 0);
    assert_eq!(initial["thinkingLevel"], "off");
    assert!(
        initial["sessionFile"]
            .as_str()
            .is_some_and(|f| f.ends_with(".jsonl")),
        "{initial}"
    );
    let lib = sandbox.lib().join("libconfirm_command.so");
    let lib = lib.to_str().unwrap();
    assert_eq!(
        seen["commands"],
        json!([{
            "name": "deploy",
            "description": "Deploy (asks first): /deploy [target]",
            "source": "extension",
            "sourceInfo": {
                "path": lib,
                "source": "cli",
                "scope": "temporary",
                "origin": "top-level"
            }
        }])
    );

    // get_available_models, set_model.
    let ids: Vec<&Value> = seen["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["id"])
        .collect();
    assert_eq!(ids, [&json!("scripted-a"), &json!("scripted-b")]);
    assert_eq!(seen["models"][1]["contextWindow"], 100000);
    assert_eq!(seen["setModel"]["id"], "scripted-b");
    assert_eq!(seen["setModel"]["provider"], "scripted");
    assert_eq!(seen["stateAfterSetModel"]["model"]["id"], "scripted-b");

    // promptAndWait: the events from agent_start to agent_end, in pi's order.
    let first = &seen["firstRun"];
    assert_eq!(
        steps(&first["types"]),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_update",
            "message_end",
            "turn_end",
            "agent_end"
        ],
        "{first}"
    );
    assert_eq!(first["toolEnd"]["toolName"], "bash");
    assert_eq!(first["toolEnd"]["isError"], false);
    assert_eq!(
        first["toolEnd"]["result"]["content"][0]["text"],
        "hello-from-pi\n"
    );
    assert_eq!(first["assistant"]["stopReason"], "stop");
    assert_eq!(first["assistant"]["model"], "scripted-b");
    assert_eq!(seen["lastAssistantText"], "Finished echo hello-from-pi");

    // abort during `sleep 30`: the run stops at once, aborted.
    let aborted = &seen["abortRun"];
    let types = steps(&aborted["types"]);
    assert_eq!(types.first(), Some(&"agent_start"), "{aborted}");
    assert_eq!(types.last(), Some(&"agent_end"), "{aborted}");
    assert_eq!(aborted["toolEnd"]["isError"], true, "{aborted}");
    assert_eq!(
        aborted["toolEnd"]["result"]["content"][0]["text"],
        "Command aborted"
    );
    assert_eq!(aborted["assistant"]["stopReason"], "aborted", "{aborted}");
    assert!(
        aborted["ms"].as_u64().is_some_and(|ms| ms < 10_000),
        "the abort did not stop `sleep 30` quickly: {aborted}"
    );
    assert_eq!(seen["stateAfterAbort"]["isStreaming"], false);

    // get_messages after three prompts (waitForIdle), then compact.
    let roles: Vec<&str> = seen["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(
        roles.iter().filter(|r| **r == "user").count(),
        3,
        "{roles:?}"
    );
    assert_eq!(roles.last(), Some(&"assistant"));
    let compaction = &seen["compaction"];
    assert_eq!(
        compaction["summary"], "Summary: the user ran echo commands.",
        "{compaction}"
    );
    assert!(
        compaction["firstKeptEntryId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{compaction}"
    );
    assert!(compaction["tokensBefore"].as_u64().is_some_and(|t| t > 0));
    let after = &seen["messagesAfterCompaction"][0];
    assert_eq!(after["role"], "compactionSummary", "{after}");
    assert_eq!(after["summary"], "Summary: the user ran echo commands.");
    let all = seen["allEventTypes"].as_array().unwrap();
    let start = all.iter().position(|t| t == "compaction_start");
    let end = all.iter().position(|t| t == "compaction_end");
    assert!(start.is_some() && start < end, "{all:?}");

    // bash, get_session_stats.
    assert_eq!(
        seen["bash"],
        json!({"output": "from-bash\nto-stderr\n", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    let stats = &seen["sessionStats"];
    assert_eq!(stats["sessionFile"], seen["stateBeforeFork"]["sessionFile"]);
    assert_eq!(stats["userMessages"], 3, "{stats}");
    assert_eq!(stats["toolCalls"], 3, "{stats}");
    assert_eq!(stats["toolResults"], 3, "{stats}");
    assert!(stats["tokens"]["total"].as_u64().is_some_and(|t| t > 0));

    // get_fork_messages + fork: a new file holding the branch before the forked message.
    let texts: Vec<&Value> = seen["forkMessages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["text"])
        .collect();
    assert_eq!(
        texts,
        [
            &json!("echo hello-from-pi"),
            &json!("sleep 30"),
            &json!("echo second")
        ]
    );
    assert_eq!(
        seen["fork"],
        json!({"text": "echo second", "cancelled": false})
    );
    let before = &seen["stateBeforeFork"]["sessionFile"];
    let forked = &seen["stateAfterFork"]["sessionFile"];
    assert_ne!(forked, before);
    assert_eq!(header(forked)["parentSession"], *before);
    assert_eq!(seen["stateAfterFork"]["messageCount"], 8);
    let last = seen["messagesAfterFork"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    assert_eq!(last["stopReason"], "aborted", "{last}");

    // clone, new_session, set_session_name, switch_session, cycle_model, set_auto_compaction.
    assert_eq!(seen["clone"], json!({"cancelled": false}));
    let cloned = &seen["stateAfterClone"];
    assert_ne!(cloned["sessionFile"], *forked);
    assert_eq!(cloned["messageCount"], 8);
    assert_eq!(seen["newSession"], json!({"cancelled": false}));
    let fresh = &seen["stateAfterNewSession"];
    for other in [before, forked, &cloned["sessionFile"]] {
        assert_ne!(fresh["sessionFile"], *other, "{fresh}");
    }
    assert_eq!(fresh["messageCount"], 0);
    assert_eq!(seen["messagesAfterNewSession"], json!([]));
    assert_eq!(seen["stateAfterName"]["sessionName"], "e2e session");
    assert_eq!(seen["switchSession"], json!({"cancelled": false}));
    assert_eq!(seen["stateAfterSwitch"]["sessionFile"], *forked);
    assert_eq!(seen["stateAfterSwitch"]["messageCount"], 8);
    assert_eq!(seen["cycleModel"]["model"]["id"], "scripted-a");
    assert_eq!(seen["cycleModel"]["thinkingLevel"], "off");
    assert_eq!(seen["cycleModel"]["isScoped"], false);
    assert_eq!(seen["stateAfterSettings"]["autoCompactionEnabled"], false);
    assert_eq!(seen["stateAfterSettings"]["model"]["id"], "scripted-a");

    // The dialogs reach the client as events; RpcClient cannot answer them, so the gate
    // keeps `rm -rf` waiting and the host keeps answering commands meanwhile.
    let gate = &seen["gateRequest"];
    assert_eq!(gate["method"], "select", "{gate}");
    assert_eq!(
        gate["title"],
        "⚠️ Dangerous command:\n\n  rm -rf victim\n\nAllow?"
    );
    assert_eq!(gate["options"], json!(["Yes", "No"]));
    let deploy = &seen["deployRequest"];
    assert_eq!(deploy["method"], "confirm", "{deploy}");
    assert_eq!(deploy["title"], "Deploy?");
    assert_eq!(deploy["message"], "Deploy to staging?");
    assert_ne!(deploy["id"], gate["id"]);
    assert_eq!(seen["stateWhileDialogsWait"]["isStreaming"], true);
    assert_eq!(seen["victimKept"], true);
    assert!(sandbox.project().join("victim/inner").is_dir());
}

/// A C plugin named `name` that registers the command `/name`.
fn command_plugin(dir: &Path, name: &str) -> PathBuf {
    let code = format!(
        r#"#include <string.h>
#include "pi_hooks.h"
static PiStatus run(void *user_data, PiStr args, PiContext *ctx) {{
    (void)user_data; (void)args; (void)ctx;
    return PI_OK;
}}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    PiCommandDef def;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("{name}");
    def.description = pi_str("the {name} command");
    def.handler = run;
    return host->registry->register_command(plugin, &def);
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "registers /{name}", init, NULL);
"#
    );
    compile_c_text(dir, name, &code, &[])
}

#[test]
fn get_commands_gives_pi_s_source_info_for_each_kind_of_place() {
    let sandbox = Sandbox::new();
    let lib = sandbox.lib();
    let project_dir = sandbox.project().join(".pi");
    let project = sandbox.install(
        &command_plugin(&lib, "proj"),
        &project_dir.join("hooks"),
        "libproj.so",
    );
    let trusted = sandbox.run(&["trust", project.to_str().unwrap()]);
    assert!(trusted.status.success(), "{trusted:?}");
    let global = sandbox.install(
        &command_plugin(&lib, "glob"),
        &sandbox.agent_dir().join("extensions"),
        "libglob.so",
    );
    let listed = command_plugin(&lib, "listed");
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"hooks": [listed]}).to_string(),
    )
    .unwrap();
    let cli = command_plugin(&lib, "cli");

    let mut client =
        Client::start(sandbox.command(&["rpc", "--no-session", "-e", cli.to_str().unwrap()]));
    client.send(&json!({"id": "c", "type": "get_commands"}));
    let response = client.response("c");
    let info = |name: &str| command_source_info(&response, name);
    let text = |path: &Path| path.to_str().unwrap().to_owned();
    assert_eq!(
        info("proj"),
        json!({"path": text(&project), "source": "auto", "scope": "project", "origin": "top-level", "baseDir": text(&project_dir)})
    );
    assert_eq!(
        info("glob"),
        json!({"path": text(&global), "source": "auto", "scope": "user", "origin": "top-level", "baseDir": text(&sandbox.agent_dir())})
    );
    assert_eq!(
        info("listed"),
        json!({"path": text(&listed), "source": "local", "scope": "user", "origin": "top-level"})
    );
    assert_eq!(
        info("cli"),
        json!({"path": text(&cli), "source": "cli", "scope": "temporary", "origin": "top-level"})
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}
