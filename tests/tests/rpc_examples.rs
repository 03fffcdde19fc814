//! The example plugins' dialogs in `pi-hooks rpc`, answered by a client over the real pipes:
//! permission-gate (Rust) asks `select` before a dangerous bash command and blocks only when
//! the user declines; confirm-command (C) asks `confirm` in `/deploy` and notifies the answer.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, compile_c, compile_c_text, rust_plugin, workspace_root};
use serde_json::{Value, json};

/// `pi-hooks rpc --no-session --no-hooks --script <turns> -e <plugin>`.
fn rpc(sandbox: &Sandbox, turns: Value, plugin: &Path) -> Command {
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("write script");
    sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
    ])
}

/// The model runs `rm -rf victim`; the client answers the gate's `select` with `choice`.
/// Returns the `tool_execution_end` and whether `victim` still exists afterwards.
fn gate_answering(choice: Value) -> (Value, bool) {
    let sandbox = Sandbox::new();
    let victim = sandbox.project().join("victim");
    std::fs::create_dir_all(victim.join("inner")).unwrap();
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "rm -rf victim"}}]},
        {"text": "done"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &rust_plugin("permission-gate")));
    client.send(&json!({"id": "p", "type": "prompt", "message": "clean up"}));
    let select = client.ui_request();
    assert_eq!(select["method"], "select", "{select}");
    assert_eq!(
        select["title"],
        "⚠️ Dangerous command:\n\n  rm -rf victim\n\nAllow?"
    );
    assert_eq!(select["options"], json!(["Yes", "No"]));
    assert!(victim.exists(), "nothing runs before the answer: {select}");
    let mut answer = choice;
    answer["type"] = "extension_ui_response".into();
    answer["id"] = select["id"].clone();
    client.send(&answer);
    let (before, _) = client.until(|l| l["type"] == "agent_end");
    let end = before
        .into_iter()
        .find(|l| l["type"] == "tool_execution_end")
        .expect("a tool_execution_end");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
    (end, victim.exists())
}

#[test]
fn permission_gate_runs_rm_rf_when_the_user_picks_yes() {
    let (end, exists) = gate_answering(json!({"value": "Yes"}));
    assert_eq!(end["isError"], false, "{end}");
    assert!(!exists, "rm -rf ran: {end}");
}

#[test]
fn permission_gate_blocks_rm_rf_when_the_user_picks_no_or_cancels() {
    for answer in [json!({"value": "No"}), json!({"cancelled": true})] {
        let (end, exists) = gate_answering(answer.clone());
        assert_eq!(end["isError"], true, "{answer}: {end}");
        assert_eq!(end["result"]["content"][0]["text"], "Blocked by user");
        assert!(exists, "{answer}: the folder is still there");
    }
}

#[test]
fn permission_gate_does_not_ask_about_harmless_commands() {
    let sandbox = Sandbox::new();
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo safe"}}]},
        {"text": "done"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &rust_plugin("permission-gate")));
    client.send(&json!({"id": "p", "type": "prompt", "message": "go"}));
    let (before, _) = client.until(|l| l["type"] == "agent_end");
    assert!(
        !before.iter().any(|l| l["type"] == "extension_ui_request"),
        "{before:?}"
    );
    let end = before
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "safe\n");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// plugins/examples/confirm-command compiled into the sandbox.
fn confirm_command(sandbox: &Sandbox) -> PathBuf {
    let source = workspace_root().join("plugins/examples/confirm-command/confirm_command.c");
    let out = sandbox.lib().join(format!(
        "libconfirm_command{}",
        std::env::consts::DLL_SUFFIX
    ));
    compile_c(&source, &out, &["-pedantic"])
}

#[test]
fn deploy_command_asks_confirm_and_notifies_the_answer() {
    let sandbox = Sandbox::new();
    let plugin = confirm_command(&sandbox);
    // The model is never called: the command handles the prompt.
    let mut client = Client::start(rpc(&sandbox, json!([]), &plugin));
    client.send(&json!({"id": "c", "type": "get_commands"}));
    let (_, commands) = client.until(|l| l["id"] == "c");
    let listed = commands["data"]["commands"].as_array().unwrap();
    assert!(listed.iter().any(|c| c["name"] == "deploy"), "{commands}");
    for (confirmed, target, notify, level) in [
        (true, " staging ", "Deploying to staging", "info"),
        (false, "", "Deploy to production cancelled", "warning"),
    ] {
        let id = format!("deploy-{confirmed}");
        client.send(&json!({"id": id, "type": "prompt", "message": format!("/deploy{target}")}));
        let confirm = client.ui_request();
        assert_eq!(confirm["method"], "confirm", "{confirm}");
        assert_eq!(confirm["title"], "Deploy?");
        let place = if confirmed { "staging" } else { "production" };
        assert_eq!(confirm["message"], format!("Deploy to {place}?"));
        client.send(
            &json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": confirmed}),
        );
        let (before, answer) = client.until(|l| l["type"] == "extension_ui_request");
        assert!(
            !before.iter().any(|l| l["id"] == id.as_str()),
            "the prompt answers after the handler: {before:?}"
        );
        assert_eq!(answer["method"], "notify");
        assert_eq!(answer["message"], notify);
        assert_eq!(answer["notifyType"], level);
        let (before, response) = client.until(|l| l["id"] == id.as_str());
        assert_eq!(response["success"], true, "{response}");
        assert!(
            !before.iter().any(|l| l["type"] == "agent_start"),
            "a command does not start a run: {before:?}"
        );
    }
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// As in pi, a plugin command sent while the agent streams runs at once (no
/// `streamingBehavior` needed): its dialog is asked during the run, and the prompt is
/// answered once the handler returns, before the run ends.
#[test]
fn a_plugin_command_runs_at_once_while_the_agent_streams() {
    let sandbox = Sandbox::new();
    let plugin = confirm_command(&sandbox);
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 2; echo slept"}}]},
        {"text": "done"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &plugin));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    client.send(&json!({"id": "d", "type": "prompt", "message": "/deploy staging"}));
    let confirm = client.ui_request();
    assert_eq!(confirm["message"], "Deploy to staging?");
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    let (before, response) = client.until(|l| l["id"] == "d");
    assert_eq!(response["success"], true, "{response}");
    assert!(
        !before.iter().any(|l| l["type"] == "agent_end"),
        "the command ran during the run: {before:?}"
    );
    let (_, end) = client.until(|l| l["type"] == "agent_end");
    let users: Vec<&Value> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(
        users.len(),
        1,
        "the command was not queued as a message: {users:?}"
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// A command sent during a run that calls `wait_for_idle`, from a plugin that also handles
/// the run's `turn_end`: the run does not wait for the plugin (whose command waits for the
/// run); the plugin's `turn_end` is refused with the reason, the run ends, then the command
/// goes on.
#[test]
fn wait_for_idle_in_a_command_during_a_run_does_not_deadlock() {
    let sandbox = Sandbox::new();
    let code = r#"
#include <string.h>
#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus on_turn_end(void *u, const PiValue *e, PiContext *ctx, PiResult *r) {
    (void)u; (void)e; (void)r;
    return host->ui->notify(ctx, pi_str("turn_end seen"), PI_NOTIFY_INFO);
}
static PiStatus waitcmd(void *u, PiStr args, PiContext *ctx) {
    (void)u; (void)args;
    PiStatus s = host->context->wait_for_idle(ctx);
    return host->ui->notify(ctx, s == PI_OK ? pi_str("idle now") : pi_str("wait failed"), PI_NOTIFY_INFO);
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    host->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("waitidle"), .handler = waitcmd));
    return host->registry->on(plugin, pi_str("turn_end"), on_turn_end, NULL);
}
PI_HOOKS_PLUGIN("waiter", "1.0.0", "waits for idle", init, NULL);
"#;
    let plugin = compile_c_text(&sandbox.lib(), "waiter", code, &[]);
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1; echo slept"}}]},
        {"text": "done"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &plugin));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    client.send(&json!({"id": "w", "type": "prompt", "message": "/waitidle"}));
    let (before, _) = client.until(|l| l["type"] == "agent_end");
    let refused: Vec<&Value> = before
        .iter()
        .filter(|l| l["type"] == "extension_error" && l["event"] == "turn_end")
        .collect();
    assert!(
        refused.iter().any(|l| l["error"]
            .as_str()
            .unwrap_or("")
            .contains("waiting for the agent to be idle (wait_for_idle)")),
        "the run's turn_end was refused with the reason: {before:#?}"
    );
    let (_, idle) = client.until(|l| l["method"] == "notify" && l["message"] == "idle now");
    assert_eq!(idle["message"], "idle now");
    assert_eq!(client.response("w")["success"], true);
    // Afterwards the plugin is called again: the next run's turn_end reaches it.
    client.send(&json!({"id": "p2", "type": "prompt", "message": "again"}));
    client.until(|l| l["method"] == "notify" && l["message"] == "turn_end seen");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// A plugin `bash` tool (tests/fixtures/exec_bash.c) runs its command with
/// `PI_EXEC_CANCEL_ON_ABORT`: an RPC `abort` while `sleep 30` runs stops the program at once
/// and the tool ends with "Command aborted".
#[test]
fn an_abort_stops_a_plugin_exec_that_asked_to_be_cancelled() {
    let sandbox = Sandbox::new();
    let plugin = pi_hooks_tests::c_fixture(&sandbox.lib(), "exec_bash", &["-pedantic"]);
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"text": "done"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &plugin));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let asked = std::time::Instant::now();
    client.send(&json!({"id": "a", "type": "abort"}));
    let (_, end) = client.until(|l| l["type"] == "tool_execution_end");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(10),
        "the program was stopped, not waited for"
    );
    let text = end["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.ends_with("Command aborted"), "{end}");
    client.until(|l| l["type"] == "agent_end");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// As pi: a plugin command's text sent as `steer` or `follow_up` is refused with pi's words
/// (a command runs, it is never queued as a message); other text is queued.
#[test]
fn a_plugin_command_cannot_be_queued_as_steer_or_follow_up() {
    let sandbox = Sandbox::new();
    let plugin = confirm_command(&sandbox);
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]},
        {"text": "done"},
        {"text": "after the follow-up"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &plugin));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    for (id, kind) in [("s", "steer"), ("f", "follow_up")] {
        client.send(&json!({"id": id, "type": kind, "message": "/deploy staging"}));
        let response = client.response(id);
        assert_eq!(response["success"], false, "{response}");
        assert_eq!(
            response["error"],
            "Extension command \"/deploy\" cannot be queued. Use prompt() or execute the command when not streaming."
        );
    }
    client.send(&json!({"id": "ok", "type": "follow_up", "message": "/not-a-command here"}));
    assert_eq!(client.response("ok")["success"], true);
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// `set_active_tools` from a plugin command: the next run offers only those tools, a call of
/// another is refused as pi refuses an unknown tool; `get_active_tools` reads the new set and
/// `get_all_tools` still lists every tool.
#[test]
fn a_plugin_command_narrows_the_active_tools() {
    let sandbox = Sandbox::new();
    let code = r#"
#include <stdio.h>
#include <string.h>
#include "pi_hooks.h"
static const PiHostApi *host;
static PiPlugin *self;
static PiStatus readonly(void *u, PiStr args, PiContext *ctx) {
    PiStr names[1] = {pi_str("read")};
    PiValue *active = NULL, *all = NULL;
    PiStr json = {0};
    char text[512];
    (void)u; (void)args;
    PiStatus status = host->actions->set_active_tools(self, names, 1);
    if (status != PI_OK) return status;
    host->actions->get_active_tools(self, &active);
    host->actions->get_all_tools(self, &all);
    host->values->to_json(active, &json);
    snprintf(text, sizeof text, "active %.*s of %zu", (int)json.len, json.ptr, host->values->len(all));
    host->values->free(active);
    host->values->free(all);
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    self = plugin;
    return host->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("readonly"), .handler = readonly));
}
PI_HOOKS_PLUGIN("tools-narrower", "1.0.0", "narrows the active tools", init, NULL);
"#;
    let plugin = compile_c_text(&sandbox.lib(), "narrower", code, &[]);
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "done"}
    ]);
    let mut client = Client::start(rpc(&sandbox, turns, &plugin));
    client.send(&json!({"id": "r", "type": "prompt", "message": "/readonly"}));
    let (_, notify) = client.until(|l| l["method"] == "notify");
    let message = notify["message"].as_str().unwrap();
    assert!(message.starts_with("active [\"read\"] of "), "{message}");
    let all: usize = message.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(all >= 7, "every built-in tool is still listed: {message}");
    client.response("r");
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    let (_, end) = client.until(|l| l["type"] == "tool_execution_end");
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(
        end["result"]["content"][0]["text"], "Tool bash not found",
        "{end}"
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

fn git(repo: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(repo)
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?}");
}

/// git-checkpoint (C): the code state stashed at a turn's start is restored when the user
/// forks back to before that turn and picks "Yes, restore code to that point".
#[test]
fn git_checkpoint_restores_the_code_when_the_session_is_forked() {
    let sandbox = Sandbox::new();
    let source = workspace_root().join("plugins/examples/git-checkpoint/git_checkpoint.c");
    let plugin = compile_c(
        &source,
        &sandbox
            .lib()
            .join(format!("libgit_checkpoint{}", std::env::consts::DLL_SUFFIX)),
        &["-pedantic"],
    );
    let repo = sandbox.project();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    git(&repo, &["config", "user.name", "Test"]);
    std::fs::write(repo.join("file.txt"), "v1\n").unwrap();
    git(&repo, &["add", "file.txt"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    std::fs::write(repo.join("file.txt"), "v1 and my work\n").unwrap();
    let script = sandbox.root().join("script.json");
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "git checkout -- file.txt"}}]},
        {"text": "reverted"}
    ]);
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let session = sandbox.root().join("s.jsonl");
    let mut client = Client::start(sandbox.command(&[
        "rpc",
        "--session",
        session.to_str().unwrap(),
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
    ]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "throw my work away"}));
    client.until(|l| l["type"] == "agent_end");
    assert_eq!(
        std::fs::read_to_string(repo.join("file.txt")).unwrap(),
        "v1\n"
    );

    client.send(&json!({"id": "fm", "type": "get_fork_messages"}));
    let forks = client.response("fm");
    let entry = forks["data"]["messages"][0]["entryId"].clone();
    client.send(&json!({"id": "f", "type": "fork", "entryId": entry}));
    let select = client.ui_request();
    assert_eq!(select["method"], "select", "{select}");
    assert_eq!(select["title"], "Restore code state?");
    assert_eq!(
        select["options"],
        json!(["Yes, restore code to that point", "No, keep current code"])
    );
    client.send(&json!({"type": "extension_ui_response", "id": select["id"], "value": "Yes, restore code to that point"}));
    let notify = client.ui_request();
    assert_eq!(notify["message"], "Code restored to checkpoint", "{notify}");
    let response = client.response("f");
    assert_eq!(
        response["data"],
        json!({"text": "throw my work away", "cancelled": false})
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("file.txt")).unwrap(),
        "v1 and my work\n",
        "the stashed work is back"
    );
    let (status, _) = client.close();
    assert!(status.success());
}

/// Commands sent at once, before the host has even started, run in order and after the
/// plugins' startup `session_start` (pi reads stdin only once its extensions are bound).
#[test]
fn commands_sent_before_startup_run_in_order_after_session_start() {
    let sandbox = Sandbox::new();
    let source = workspace_root().join("plugins/examples/counter-c/counter.c");
    let plugin = compile_c(
        &source,
        &sandbox
            .lib()
            .join(format!("libcounter_c{}", std::env::consts::DLL_SUFFIX)),
        &["-pedantic"],
    );
    for round in 0..3 {
        let mut client = Client::start(rpc(&sandbox, json!([]), &plugin));
        for n in 1..=3 {
            client.send(&json!({"id": format!("c{n}"), "type": "prompt", "message": "/count"}));
        }
        let (lines, _) = client.until(|l| l["id"] == "c3");
        let notices: Vec<&str> = lines
            .iter()
            .filter(|l| l["method"] == "notify")
            .filter_map(|l| l["message"].as_str())
            .collect();
        assert!(
            notices[0].contains("restored count 0 on startup"),
            "round {round}: {notices:?}"
        );
        assert_eq!(
            notices[1..],
            ["count: 1", "count: 2", "count: 3"],
            "round {round}"
        );
        let (status, _) = client.close();
        assert!(status.success());
    }
}
