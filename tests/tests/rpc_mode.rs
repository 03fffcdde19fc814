//! `pi-hooks rpc` driven over pipes as a pi RPC client drives pi 0.73.1: the failure lines, the read commands, a prompt's events,
//! queueing while a run is in progress, the `extension_ui_request` / `extension_ui_response`
//! sub-protocol with a real C plugin, and the graceful end on stdin close.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, behave_env_var, behave_plugin, compile_c_text, read_behave_log};
use serde_json::{Value, json};

/// A scripted model file in the sandbox.
fn script(sandbox: &Sandbox, turns: Value) -> PathBuf {
    let path = sandbox.root().join("script.json");
    std::fs::write(&path, json!({ "turns": turns }).to_string()).expect("write script");
    path
}

/// `pi-hooks rpc --no-session --no-hooks --script <script>` plus `args`.
fn rpc(sandbox: &Sandbox, script: &Path, args: &[&str]) -> Command {
    let mut all = vec![
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8 path"),
    ];
    all.extend_from_slice(args);
    sandbox.command(&all)
}

const ONE_TOOL: &str =
    r#"[{"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"text": "done"}]"#;

/// A plugin that asks `confirm` in `tool_call` (timeout from `ASKER_TIMEOUT_MS`, 0 = none)
/// and blocks the call unless confirmed; it also notifies and sets a status first (both
/// fire-and-forget). `/ask-ping` sets the title; `/ask-all` asks select, input and editor,
/// sets a widget and the editor text, then sets the title to `<index>|<input>|<editor>`.
const ASKER: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus on_tool_call(void *u, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiDialogOptions dialog;
    bool yes = false;
    const char *timeout = getenv("ASKER_TIMEOUT_MS");
    (void)u; (void)event;
    memset(&dialog, 0, sizeof dialog);
    dialog.struct_size = sizeof dialog;
    dialog.timeout_ms = timeout != NULL ? strtoull(timeout, NULL, 10) : 0;
    host->ui->notify(ctx, pi_str("asking"), PI_NOTIFY_INFO);
    host->ui->set_status(ctx, pi_str("asker"), pi_str("waiting"));
    if (host->ui->confirm(ctx, pi_str("Allow?"), pi_str("run the tool"), &dialog, &yes) != PI_OK || !yes) {
        host->results->set_bool(result, pi_str("block"), true);
        host->results->set_string(result, pi_str("reason"), pi_str("denied by the user"));
    }
    return PI_OK;
}

static PiStatus ping(void *u, PiStr args, PiContext *ctx) {
    (void)u; (void)args;
    return host->ui->set_title(ctx, pi_str("pinged"));
}

static PiStr text_of(PiValue *value) {
    PiStr out = {"", 0};
    if (value == NULL || host->values->as_str(value, &out) != PI_OK) out = pi_str("(none)");
    return out;
}

static PiStatus ask_all(void *u, PiStr args, PiContext *ctx) {
    PiStr options[2], lines[2], typed, edited;
    PiDialogOptions dialog;
    int64_t index = -2;
    PiValue *input = NULL, *editor = NULL;
    char title[512];
    (void)u; (void)args;
    options[0] = pi_str("alpha");
    options[1] = pi_str("beta");
    lines[0] = pi_str("widget line 1");
    lines[1] = pi_str("widget line 2");
    memset(&dialog, 0, sizeof dialog);
    dialog.struct_size = sizeof dialog;
    dialog.timeout_ms = 5000;
    host->ui->select(ctx, pi_str("pick"), options, 2, &dialog, &index);
    host->ui->input(ctx, pi_str("name?"), pi_str("placeholder"), &dialog, &input);
    host->ui->editor(ctx, pi_str("edit"), pi_str("line1\nline2"), &editor);
    host->ui->set_widget(ctx, pi_str("asker"), lines, 2, PI_WIDGET_ABOVE_EDITOR);
    host->ui->set_editor_text(ctx, pi_str("prefilled"));
    typed = text_of(input);
    edited = text_of(editor);
    snprintf(title, sizeof title, "%lld|%.*s|%.*s", (long long)index, (int)typed.len, typed.ptr,
             (int)edited.len, edited.ptr);
    host->values->free(input);
    host->values->free(editor);
    return host->ui->set_title(ctx, pi_str(title));
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    host = h;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("ask-ping");
    def.description = pi_str("sets the title");
    def.handler = ping;
    host->registry->register_command(plugin, &def);
    def.name = pi_str("ask-all");
    def.description = pi_str("asks everything");
    def.handler = ask_all;
    host->registry->register_command(plugin, &def);
    return host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
}

PI_HOOKS_PLUGIN("asker", "1.0.0", "asks before every tool", init, NULL);
"#;

fn asker(sandbox: &Sandbox) -> PathBuf {
    compile_c_text(&sandbox.lib(), "asker", ASKER, &[])
}

#[test]
fn failure_lines_are_pi_s_and_framing_is_lf_only() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let mut client = Client::start(rpc(&sandbox, &script, &[]));
    client.send_raw(b"{bad\n");
    assert_eq!(
        client.next_line(),
        json!({"type":"response","command":"parse","success":false,"error":"Failed to parse command: Expected property name or '}' in JSON at position 1"})
    );
    client.send(&json!({"id": "req-1", "type": "bogus_command"}));
    assert_eq!(
        client.next_line(),
        json!({"id":"req-1","type":"response","command":"bogus_command","success":false,"error":"Unknown command: bogus_command"}),
        "the id is echoed for an unknown command, as in pi 1.6"
    );
    client.send(&json!({"id": "req-badjson"}));
    assert_eq!(
        client.next_line(),
        json!({"id":"req-badjson","type":"response","success":false,"error":"Unknown command: undefined"})
    );
    // CRLF is accepted; U+2028/U+2029 inside a line do not split it.
    client.send_raw("{\"id\":\"a\u{2028}b\u{2029}c\",\"type\":\"get_state\"}\r\n".as_bytes());
    let state = client.next_line();
    assert_eq!(state["id"], "a\u{2028}b\u{2029}c");
    assert_eq!(state["success"], true);
    // Blank lines are skipped; the next command still answers.
    client.send_raw(b"\n\r\n");
    client.send(&json!({"id": "t", "type": "get_last_assistant_text"}));
    assert_eq!(
        client.next_line(),
        json!({"id":"t","type":"response","command":"get_last_assistant_text","success":true,"data":{"text":null}})
    );
    let (status, rest) = client.close();
    assert!(status.success(), "{status:?}");
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn read_commands_answer_with_the_id_echoed() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let plugin = asker(&sandbox);
    let mut client = Client::start(rpc(&sandbox, &script, &["-e", plugin.to_str().unwrap()]));
    client.send(&json!({"id": "s", "type": "get_state"}));
    let state = client.response("s");
    assert_eq!(state["command"], "get_state");
    let data = &state["data"];
    for field in [
        "model",
        "thinkingLevel",
        "isStreaming",
        "isCompacting",
        "steeringMode",
        "followUpMode",
        "sessionFile",
        "sessionId",
        "autoCompactionEnabled",
        "messageCount",
        "pendingMessageCount",
    ] {
        assert!(data.get(field).is_some(), "get_state lacks {field}: {data}");
    }
    assert_eq!(data["isStreaming"], false);
    assert_eq!(data["sessionFile"], Value::Null, "--no-session");
    assert_eq!(data["messageCount"], 0);

    client.send(&json!({"id": "n0", "type": "set_session_name", "name": "  "}));
    let blank = client.response("n0");
    assert_eq!(blank["success"], false);
    assert_eq!(blank["error"], "Session name cannot be empty");
    client.send(&json!({"id": "n1", "type": "set_session_name", "name": "my work"}));
    assert_eq!(
        client.response("n1"),
        json!({"id":"n1","type":"response","command":"set_session_name","success":true})
    );
    client.send(&json!({"id": "s2", "type": "get_state"}));
    assert_eq!(client.response("s2")["data"]["sessionName"], "my work");

    client.send(&json!({"id": "c", "type": "get_commands"}));
    let commands = client.response("c")["data"]["commands"].clone();
    assert_eq!(commands[0]["name"], "ask-ping", "{commands}");
    assert_eq!(commands[0]["description"], "sets the title");
    assert_eq!(commands[0]["source"], "extension");

    client.send(&json!({"id": "st", "type": "get_session_stats"}));
    let stats = client.response("st")["data"].clone();
    assert_eq!(stats["totalMessages"], 0, "{stats}");
    assert_eq!(stats["tokens"]["total"], 0, "{stats}");

    client.send(&json!({"id": "m", "type": "get_messages"}));
    assert_eq!(client.response("m")["data"], json!({"messages": []}));

    client.send(&json!({"id": "f", "type": "fork", "entryId": "x"}));
    let fork = client.response("f");
    assert_eq!(fork["success"], false, "{fork}");
    assert_eq!(fork["command"], "fork");

    // A plugin command: its fire-and-forget UI line comes before the prompt's response.
    client.send(&json!({"id": "p", "type": "prompt", "message": "/ask-ping"}));
    let (before, response) = client.until(|l| l["id"] == "p");
    assert_eq!(response["success"], true);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0]["type"], "extension_ui_request");
    assert_eq!(before[0]["method"], "setTitle");
    assert_eq!(before[0]["title"], "pinged");
    let (status, _) = client.close();
    assert!(status.success(), "{status:?}");
}

/// The event types of `lines`, without responses and UI requests.
fn event_types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] != "response" && l["type"] != "extension_ui_request")
        .map(|l| l["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_prompt_streams_json_mode_s_events_and_stdin_close_shuts_down() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, serde_json::from_str(ONE_TOOL).unwrap());
    let log = sandbox.root().join("behave.log");
    let watcher = behave_plugin(&sandbox.lib(), "watcher");
    let mut command = rpc(&sandbox, &script, &["-e", watcher.to_str().unwrap()]);
    command
        .env(
            behave_env_var("watcher"),
            json!({"handlers": [{"event": "session_shutdown"}]}).to_string(),
        )
        .env("BEHAVE_LOG", &log);
    let mut client = Client::start(command);
    client.send(&json!({"id": "p1", "type": "prompt", "message": "go"}));
    let response = client.next_line();
    assert_eq!(
        response,
        json!({"id":"p1","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}),
        "the response comes after preflight, before the run's events"
    );
    let (mut events, settled) = client.until(|l| l["type"] == "agent_settled");
    events.push(settled.clone());
    assert_eq!(settled, json!({"type": "agent_settled", "aborted": false}));
    let end = events[events.len() - 2].clone();
    assert_eq!(end["type"], "agent_end", "agent_settled follows agent_end");
    assert_eq!(end["willRetry"], false, "{end}");
    assert_eq!(events[0]["type"], "agent_start");
    assert_eq!(end["messages"].as_array().map(Vec::len), Some(4), "{end}");
    // As pi prints them: `turn_start` bare, `turn_end` without the extension-only turnIndex.
    assert_eq!(events[1], json!({"type": "turn_start"}));
    let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    let mut keys: Vec<&String> = turn_end.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["message", "toolResults", "type"], "{turn_end}");

    // The same run in JSON mode prints the same events in the same order.
    let json_run = sandbox.run(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "go",
    ]);
    assert!(json_run.status.success());
    let json_lines: Vec<Value> = String::from_utf8_lossy(&json_run.stdout)
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(event_types(&events), event_types(&json_lines));

    client.send(&json!({"id": "t", "type": "get_last_assistant_text"}));
    assert_eq!(client.response("t")["data"]["text"], "done");
    client.send(&json!({"id": "st", "type": "get_session_stats"}));
    let stats = client.response("st")["data"].clone();
    assert_eq!(
        (
            stats["userMessages"].clone(),
            stats["toolCalls"].clone(),
            stats["toolResults"].clone()
        ),
        (json!(1), json!(1), json!(1)),
        "{stats}"
    );
    assert!(
        read_behave_log(&log).is_empty(),
        "no session_shutdown before stdin closes"
    );
    let (status, rest) = client.close();
    assert_eq!(status.code(), Some(0));
    assert!(rest.is_empty(), "{rest:?}");
    let shutdown: Vec<_> = read_behave_log(&log);
    assert_eq!(shutdown.len(), 1, "{shutdown:?}");
    assert_eq!(shutdown[0].tag, "session_shutdown");
    assert_eq!(shutdown[0].value["reason"], "quit");
}

/// Starts a prompt whose tool call makes the asker plugin open a `confirm`; returns the
/// client and the dialog's request line (after checking the fire-and-forget lines).
fn open_dialog(sandbox: &Sandbox, timeout_ms: &str) -> (Client, Value) {
    let script = script(sandbox, serde_json::from_str(ONE_TOOL).unwrap());
    let plugin = asker(sandbox);
    let mut command = rpc(sandbox, &script, &["-e", plugin.to_str().unwrap()]);
    command.env("ASKER_TIMEOUT_MS", timeout_ms);
    let mut client = Client::start(command);
    client.send(&json!({"id": "p", "type": "prompt", "message": "go"}));
    let (_, notify) = client.until(|l| l["type"] == "extension_ui_request");
    assert_eq!(notify["method"], "notify");
    assert_eq!(notify["message"], "asking");
    assert_eq!(notify["notifyType"], "info");
    let status = client.next_line();
    assert_eq!(
        (
            status["method"].clone(),
            status["statusKey"].clone(),
            status["statusText"].clone()
        ),
        (json!("setStatus"), json!("asker"), json!("waiting"))
    );
    let confirm = client.next_line();
    assert_eq!(confirm["type"], "extension_ui_request");
    assert_eq!(confirm["method"], "confirm");
    assert_eq!(confirm["title"], "Allow?");
    assert_eq!(confirm["message"], "run the tool");
    let id = confirm["id"].as_str().expect("request id");
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert_ne!(id, notify["id"].as_str().unwrap());
    (client, confirm)
}

/// The `tool_execution_end` of the run (reading through `agent_settled`).
fn tool_end(client: &mut Client) -> Value {
    let (before, _) = client.until(|l| l["type"] == "agent_settled");
    before
        .into_iter()
        .find(|l| l["type"] == "tool_execution_end")
        .expect("a tool_execution_end")
}

#[test]
fn confirm_answered_yes_runs_the_tool_and_input_is_read_while_it_waits() {
    let sandbox = Sandbox::new();
    let (mut client, confirm) = open_dialog(&sandbox, "0");
    assert!(
        confirm.get("timeout").is_none(),
        "no timeout given: {confirm}"
    );
    // The dialog blocks only the plugin: commands are answered meanwhile.
    client.send(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(client.response("s")["data"]["isStreaming"], true);
    // A prompt during the run needs a streamingBehavior...
    client.send(&json!({"id": "busy", "type": "prompt", "message": "more"}));
    let busy = client.response("busy");
    assert_eq!(busy["success"], false);
    assert_eq!(
        busy["error"],
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    );
    // ...and with one it is queued.
    client.send(&json!({"id": "steer", "type": "prompt", "message": "steered in", "streamingBehavior": "steer"}));
    assert_eq!(client.response("steer")["success"], true);
    client.send(&json!({"id": "fu", "type": "follow_up", "message": "and then"}));
    assert_eq!(
        client.response("fu"),
        json!({"id":"fu","type":"response","command":"follow_up","success":true,"data":{"disposition":"queued"}})
    );
    client.send(&json!({"id": "s3", "type": "get_state"}));
    assert_eq!(client.response("s3")["data"]["pendingMessageCount"], 2);
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    let end = tool_end(&mut client);
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(end["result"]["content"][0]["text"], "hi\n");
    client.send(&json!({"id": "m", "type": "get_messages"}));
    let messages = client.response("m")["data"]["messages"].clone();
    let steered = messages
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "user" && m["content"][0]["text"] == "steered in");
    assert!(steered, "the steering message reached the run: {messages}");
    let user_texts: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| &m["content"][0]["text"])
        .collect();
    assert_eq!(
        user_texts,
        [&json!("go"), &json!("steered in"), &json!("and then")]
    );
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn confirm_answered_no_or_cancelled_blocks_the_tool() {
    for answer in [json!({"confirmed": false}), json!({"cancelled": true})] {
        let sandbox = Sandbox::new();
        let (mut client, confirm) = open_dialog(&sandbox, "0");
        let mut response = answer.clone();
        response["type"] = "extension_ui_response".into();
        response["id"] = confirm["id"].clone();
        // An answer for another id is ignored; the dialog keeps waiting for its own.
        client.send(
            &json!({"type": "extension_ui_response", "id": "not-a-dialog", "confirmed": true}),
        );
        client.send(&response);
        let end = tool_end(&mut client);
        assert_eq!(end["isError"], true, "{answer}: {end}");
        assert_eq!(end["result"]["content"][0]["text"], "denied by the user");
        let (status, _) = client.close();
        assert!(status.success());
    }
}

#[test]
fn an_unanswered_confirm_times_out_to_its_default() {
    let sandbox = Sandbox::new();
    let started = Instant::now();
    let (mut client, confirm) = open_dialog(&sandbox, "300");
    assert_eq!(confirm["timeout"], 300);
    let end = tool_end(&mut client);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(end["result"]["content"][0]["text"], "denied by the user");
    // A late answer for the closed dialog is ignored.
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    client.send(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(client.response("s")["success"], true);
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn abort_answers_once_the_run_has_stopped() {
    let sandbox = Sandbox::new();
    let (mut client, confirm) = open_dialog(&sandbox, "0");
    client.send(&json!({"id": "a", "type": "abort"}));
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    let (before, response) = client.until(|l| l["id"] == "a");
    assert_eq!(response["success"], true);
    let end = before
        .iter()
        .find(|l| l["type"] == "agent_end")
        .expect("agent_end before the abort response");
    let last = end["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["stopReason"], "aborted", "{end}");
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn stdin_closing_during_a_dialog_ends_it_and_exits_zero() {
    let sandbox = Sandbox::new();
    let (client, _) = open_dialog(&sandbox, "0");
    let (status, rest) = client.close();
    assert_eq!(status.code(), Some(0));
    assert!(
        rest.iter().any(|l| l["type"] == "agent_end"),
        "the run ended: {rest:?}"
    );
}

/// A `broken.so` that is not a library.
fn broken_plugin(sandbox: &Sandbox) -> PathBuf {
    let broken = sandbox.lib().join("broken.so");
    std::fs::write(&broken, "not a library").unwrap();
    broken
}

/// Checks `line` is the load failure of [`broken_plugin`] as a client reads it.
fn assert_load_failure_line(line: &Value) {
    assert_eq!(line["type"], "extension_error", "{line}");
    assert_eq!(line["event"], "load");
    let path = line["extensionPath"].as_str().unwrap_or_default();
    assert!(path.ends_with("broken.so"), "{line}");
    assert!(
        !line["error"].as_str().unwrap_or_default().is_empty(),
        "{line}"
    );
}

#[test]
fn plugin_load_failures_are_lines_a_client_reads() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let broken = broken_plugin(&sandbox);
    let mut client = Client::start(rpc(&sandbox, &script, &["-e", broken.to_str().unwrap()]));
    assert_load_failure_line(&client.next_line());
    let (status, _) = client.close();
    assert!(status.success());
}

/// `run --mode json` reports them the same way, right after the session header.
#[test]
fn json_mode_reports_plugin_load_failures_as_lines_after_the_header() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let broken = broken_plugin(&sandbox);
    let output = sandbox
        .command(&[
            "run",
            "--mode",
            "json",
            "--no-session",
            "--no-hooks",
            "--script",
        ])
        .arg(&script)
        .args(["-e", broken.to_str().unwrap(), "hi"])
        .output()
        .expect("run pi-hooks");
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines[0]["type"], "session", "{:?}", lines[0]);
    assert_load_failure_line(&lines[1]);
    assert!(
        lines.iter().any(|l| l["type"] == "agent_end"),
        "the run went on"
    );
}

#[test]
fn select_input_and_editor_round_trip_and_setters_are_fire_and_forget() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let plugin = asker(&sandbox);
    let mut client = Client::start(rpc(&sandbox, &script, &["-e", plugin.to_str().unwrap()]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "/ask-all"}));
    let select = client.next_line();
    assert_eq!(select["type"], "extension_ui_request");
    assert_eq!(
        (
            select["method"].clone(),
            select["title"].clone(),
            select["options"].clone(),
            select["timeout"].clone()
        ),
        (
            json!("select"),
            json!("pick"),
            json!(["alpha", "beta"]),
            json!(5000)
        )
    );
    client.send(&json!({"type": "extension_ui_response", "id": select["id"], "value": "beta"}));
    let input = client.next_line();
    assert_eq!(
        (
            input["method"].clone(),
            input["title"].clone(),
            input["placeholder"].clone()
        ),
        (json!("input"), json!("name?"), json!("placeholder"))
    );
    client.send(&json!({"type": "extension_ui_response", "id": input["id"], "cancelled": true}));
    let editor = client.next_line();
    assert_eq!(
        (
            editor["method"].clone(),
            editor["title"].clone(),
            editor["prefill"].clone()
        ),
        (json!("editor"), json!("edit"), json!("line1\nline2"))
    );
    assert!(
        editor.get("timeout").is_none(),
        "pi's editor has no timeout: {editor}"
    );
    client.send(
        &json!({"type": "extension_ui_response", "id": editor["id"], "value": "typed-by-driver"}),
    );
    let widget = client.next_line();
    assert_eq!(
        (
            widget["method"].clone(),
            widget["widgetKey"].clone(),
            widget["widgetLines"].clone()
        ),
        (
            json!("setWidget"),
            json!("asker"),
            json!(["widget line 1", "widget line 2"])
        )
    );
    let editor_text = client.next_line();
    assert_eq!(
        (editor_text["method"].clone(), editor_text["text"].clone()),
        (json!("set_editor_text"), json!("prefilled"))
    );
    let title = client.next_line();
    assert_eq!(title["method"], "setTitle");
    assert_eq!(title["title"], "1|(none)|typed-by-driver");
    // The response of a plugin command comes after its handler (and its dialogs) finished.
    assert_eq!(
        client.next_line(),
        json!({"id":"p","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}})
    );
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn plugin_errors_are_extension_error_lines() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, serde_json::from_str(ONE_TOOL).unwrap());
    let thrower = behave_plugin(&sandbox.lib(), "thrower");
    let mut command = rpc(&sandbox, &script, &["-e", thrower.to_str().unwrap()]);
    command.env(
        behave_env_var("thrower"),
        json!({"handlers": [{"event": "tool_result", "error": "thrower: tool_result failed"}]})
            .to_string(),
    );
    let mut client = Client::start(command);
    client.send(&json!({"id": "p", "type": "prompt", "message": "go"}));
    let (_, error) = client.until(|l| l["type"] == "extension_error");
    assert_eq!(error["event"], "tool_result", "{error}");
    assert_eq!(error["error"], "thrower: tool_result failed");
    assert!(
        error["extensionPath"].as_str().unwrap().ends_with(".so"),
        "{error}"
    );
    let end = tool_end(&mut client);
    assert_eq!(end["isError"], false, "the result is unchanged: {end}");
    let (status, _) = client.close();
    assert!(status.success());
}

#[test]
fn bash_runs_in_the_session_cwd_and_abort_bash_cancels_it() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let mut client = Client::start(rpc(&sandbox, &script, &[]));
    client.send(&json!({"id": "b", "type": "bash", "command": "pwd; echo err >&2; exit 3"}));
    let done = client.response("b");
    let project = sandbox.project().canonicalize().unwrap();
    assert_eq!(
        done["data"],
        json!({"output": format!("{}\nerr\n", project.display()), "exitCode": 3, "cancelled": false, "truncated": false}),
        "{done}"
    );
    // Input is read while a command runs; abort_bash kills it.
    let started = Instant::now();
    client.send(&json!({"id": "slow", "type": "bash", "command": "echo started; sleep 30"}));
    client.send(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(client.response("s")["success"], true);
    client.send(&json!({"id": "ab", "type": "abort_bash"}));
    let slow = client.response("slow");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(slow["data"]["cancelled"], true, "{slow}");
    assert!(slow["data"].get("exitCode").is_none(), "{slow}");
    // A long output is tail-truncated, with the whole of it in a file.
    client.send(&json!({"id": "long", "type": "bash", "command": "seq 3000"}));
    let long = client.response("long")["data"].clone();
    assert_eq!(long["truncated"], true, "{long}");
    assert!(long["output"].as_str().unwrap().ends_with("3000\n"));
    assert!(!long["output"].as_str().unwrap().starts_with("1\n"));
    let full = PathBuf::from(long["fullOutputPath"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(&full).unwrap().lines().count(),
        3000
    );
    std::fs::remove_file(full).unwrap();
    // Each run is recorded as a bashExecution message.
    client.send(&json!({"id": "m", "type": "get_messages"}));
    let messages = client.response("m")["data"]["messages"].clone();
    let runs: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "bashExecution")
        .collect();
    assert_eq!(runs.len(), 3, "{messages}");
    assert_eq!(runs[0]["command"], "pwd; echo err >&2; exit 3");
    assert_eq!(runs[0]["exitCode"], 3);
    let (status, _) = client.close();
    assert!(status.success());
}

/// `pi-hooks rpc --session <root>/s.jsonl --no-hooks --script <script>`; returns the command
/// and the session file.
fn rpc_with_session(sandbox: &Sandbox, script: &Path) -> (Command, PathBuf) {
    let file = sandbox.root().join("s.jsonl");
    let command = sandbox.command(&[
        "rpc",
        "--session",
        file.to_str().unwrap(),
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
    ]);
    (command, file)
}

/// Runs one prompt until it settles (`agent_settled`, after `agent_end`), so the session file
/// has a user and an assistant entry.
fn first_run(client: &mut Client) {
    client.send(&json!({"id": "first", "type": "prompt", "message": "hello"}));
    assert_eq!(client.response("first")["success"], true);
    client.until(|l| l["type"] == "agent_settled");
}

/// `get_state` still answers (as the very next line) with `messages` messages and nothing
/// queued or running.
fn still_serving(client: &mut Client, messages: usize) {
    client.send(&json!({"id": "alive", "type": "get_state"}));
    let state = client.next_line();
    assert_eq!(state["id"], "alive", "{state}");
    assert_eq!(state["success"], true, "{state}");
    assert_eq!(state["data"]["messageCount"], messages, "{state}");
    assert_eq!(state["data"]["pendingMessageCount"], 0, "{state}");
    assert_eq!(state["data"]["isStreaming"], false, "{state}");
}

/// Closes the client (exit 0) and opens the session file: it parses without warnings and
/// holds exactly the messages in `user_texts` as its user messages.
fn session_intact(client: Client, file: &Path, user_texts: &[&str]) {
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
    let (store, warnings) = pi_hooks_session::SessionStore::open(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(warnings.is_empty(), "{warnings:?}");
    let users: Vec<String> = store
        .entries()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(users, user_texts);
}

#[test]
fn missing_fields_and_wrong_types_get_error_responses_and_the_host_keeps_serving() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "one"}, {"text": "two"}]));
    let (command, file) = rpc_with_session(&sandbox, &script);
    let mut client = Client::start(command);
    first_run(&mut client);
    let failures = [
        (
            json!({"id": "a", "type": "prompt"}),
            "prompt: \"message\" must be a string, missing",
        ),
        (
            json!({"id": "b", "type": "set_session_name"}),
            "set_session_name: \"name\" must be a string, missing",
        ),
        (
            json!({"id": "c", "type": "set_session_name", "name": ["x"]}),
            "set_session_name: \"name\" must be a string, not an array",
        ),
        (
            json!({"id": "d", "type": "prompt", "message": 42}),
            "prompt: \"message\" must be a string, not a number",
        ),
        (
            json!({"id": "e", "type": "prompt", "message": null}),
            "prompt: \"message\" must be a string, null",
        ),
        (
            json!({"id": "f", "type": "steer", "message": {"text": "x"}}),
            "steer: \"message\" must be a string, not an object",
        ),
        (
            json!({"id": "g", "type": "follow_up"}),
            "follow_up: \"message\" must be a string, missing",
        ),
        (
            json!({"id": "h", "type": "prompt", "message": "x", "images": "cat.png"}),
            "prompt: \"images\" must be an array, not a string",
        ),
        (
            json!({"id": "i", "type": "bash", "command": true}),
            "bash: \"command\" must be a string, not a boolean",
        ),
    ];
    for (command, error) in failures {
        client.send(&command);
        let response = client.next_line();
        let mut expected = json!({"id": command["id"], "type": "response", "command": command["type"], "success": false});
        expected["error"] = error.into();
        assert_eq!(response, expected);
    }
    // An id of any JSON type is echoed as it came, as pi echoes it.
    for id in [json!({}), json!(42), json!([1, "x"]), json!(null)] {
        client.send(&json!({"id": id, "type": "get_last_assistant_text"}));
        let response = client.next_line();
        assert_eq!(response["id"], id, "{response}");
        assert_eq!(response["data"]["text"], "one");
    }
    client.send(&json!({"id": {}, "type": "prompt", "message": false}));
    assert_eq!(client.next_line()["id"], json!({}));
    // A `type` that is not a string, and lines that are JSON but not objects: pi's
    // `Unknown command: ${command.type}`, with the id when there is one (pi 1.6).
    client.send(&json!({"id": "j", "type": 42}));
    assert_eq!(
        client.next_line(),
        json!({"id": "j", "type": "response", "command": 42, "success": false, "error": "Unknown command: 42"})
    );
    for line in ["42", "[]", "\"prompt\"", "true"] {
        client.send_raw(format!("{line}\n").as_bytes());
        assert_eq!(
            client.next_line(),
            json!({"type": "response", "success": false, "error": "Unknown command: undefined"}),
            "{line}"
        );
    }
    client.send_raw(b"null\n");
    assert_eq!(
        client.next_line()["error"],
        "Failed to parse command: Cannot read properties of null (reading 'type')"
    );
    still_serving(&mut client, 2);
    session_intact(client, &file, &["hello"]);
}

#[test]
fn ui_responses_for_unknown_or_answered_dialogs_are_ignored() {
    let sandbox = Sandbox::new();
    let (mut client, confirm) = open_dialog(&sandbox, "0");
    // Responses for no waiting dialog: unknown ids, ids of other types, no id at all.
    for stray in [
        json!({"type": "extension_ui_response", "id": "00000000-0000-0000-0000-000000000000", "confirmed": false}),
        json!({"type": "extension_ui_response", "id": 7, "confirmed": false}),
        json!({"type": "extension_ui_response", "id": {"id": confirm["id"]}, "confirmed": false}),
        json!({"type": "extension_ui_response", "confirmed": false}),
        json!({"type": "extension_ui_response", "id": confirm["id"].as_str().unwrap().to_uppercase(), "cancelled": true}),
    ] {
        client.send(&stray);
    }
    // Still waiting: the dialog took none of them (the run is still streaming).
    client.send(&json!({"id": "s", "type": "get_state"}));
    let state = client.next_line();
    assert_eq!(
        state["id"], "s",
        "nothing answered the stray responses: {state}"
    );
    assert_eq!(state["data"]["isStreaming"], true);
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    let end = tool_end(&mut client);
    assert_eq!(end["isError"], false, "the first answer counts: {end}");
    // Answering again, now the other way, changes nothing and gets no line.
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": false}));
    client.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "cancelled": true}));
    still_serving(&mut client, 4);
    let (status, rest) = client.close();
    assert!(status.success());
    assert!(
        !rest.iter().any(|l| l["type"] == "response"),
        "no response to an extension_ui_response: {rest:?}"
    );
}

/// The process's peak resident memory (`VmHWM` of /proc/<pid>/status), in bytes.
fn peak_memory(client: &Client) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", client.pid()))
        .expect("read /proc/<pid>/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM");
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("a number of kB");
    kb * 1024
}

#[test]
fn a_10_mb_prompt_is_handled_and_a_line_over_16_mib_is_refused_in_bounded_memory() {
    const MIB: usize = 1024 * 1024;
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "read it"}]));
    let (command, file) = rpc_with_session(&sandbox, &script);
    let mut client = Client::start(command);
    // 10 MB is 2.5 M tokens: past any context window, so it would be compacted at once.
    client.send(&json!({"id": "off", "type": "set_auto_compaction", "enabled": false}));
    assert_eq!(client.response("off")["success"], true);
    still_serving(&mut client, 0);
    // 64 MiB in one line: dropped as it is read, never held whole.
    let mut huge = br#"{"id":"huge","type":"prompt","message":""#.to_vec();
    huge.resize(huge.len() + 64 * MIB, b'x');
    huge.extend_from_slice(b"\"}\n");
    let size = huge.len() - 1;
    client.send_raw(&huge);
    drop(huge);
    let refused = client.next_line();
    assert_eq!(
        refused,
        json!({"type": "response", "command": "parse", "success": false, "error": format!(
            "Failed to parse command: line of {size} bytes is longer than pi-hooks' limit of \
             16777216 bytes per line; send the command in less text"
        )})
    );
    let peak = peak_memory(&client);
    assert!(
        peak < 48 * MIB as u64,
        "reading a 64 MiB line peaked at {} MiB",
        peak / MIB as u64
    );
    still_serving(&mut client, 0);
    // 10 MB fits: the prompt runs and is saved.
    let message = "y".repeat(10_000_000);
    client.send(&json!({"id": "big", "type": "prompt", "message": message}));
    assert_eq!(client.response("big")["success"], true);
    let (_, end) = client.until(|l| l["type"] == "agent_end");
    assert_eq!(end["messages"][0]["content"][0]["text"], message.as_str());
    client.until(|l| l["type"] == "agent_settled");
    still_serving(&mut client, 2);
    session_intact(client, &file, &[&message]);
}

#[test]
fn binary_garbage_gets_parse_failures_and_the_host_keeps_serving() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "one"}]));
    let (command, file) = rpc_with_session(&sandbox, &script);
    let mut client = Client::start(command);
    first_run(&mut client);
    // Pseudo-random bytes (a fixed xorshift, no '\n'), then lines of NULs, invalid UTF-8,
    // a lone CR, and nesting deeper than the parser goes.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut noise: Vec<u8> = (0..65_536)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .filter(|&b| b != b'\n')
        .collect();
    noise.insert(0, b'\x01');
    let garbage: Vec<Vec<u8>> = vec![
        noise,
        b"\x00\x00\x00".to_vec(),
        b"\xff\xfe{\"type\":\"get_state\"}".to_vec(),
        b"{\"type\":\"get_state\"}\x00".to_vec(),
        b"{\"type\":\"get\xc3\"}".to_vec(),
        "[".repeat(100_000).into_bytes(),
    ];
    for line in &garbage {
        let mut bytes = line.clone();
        bytes.push(b'\n');
        client.send_raw(&bytes);
        let response = client.next_line();
        assert_eq!(response["type"], "response", "{response}");
        assert_eq!(response["success"], false, "{response}");
        let error = response["error"].as_str().unwrap();
        if response["command"] == "parse" {
            assert!(error.starts_with("Failed to parse command: "), "{error}");
        } else {
            // Valid JSON once the bad bytes are U+FFFD (as Node decodes them): an unknown type.
            assert_eq!(error, "Unknown command: get\u{fffd}", "{response}");
        }
    }
    client.send_raw(b"\r\n");
    // Bad bytes inside a string of a valid command: decoded to U+FFFD, and it answers.
    client.send_raw(b"{\"id\":\"bad\xffid\",\"type\":\"get_state\"}\n");
    assert_eq!(client.next_line()["id"], "bad\u{fffd}id");
    still_serving(&mut client, 2);
    session_intact(client, &file, &["hello"]);
}

#[test]
fn a_prompt_sent_on_reading_agent_end_is_accepted() {
    // A client prompts again as soon as it reads `agent_end`: the agent is idle by then, so
    // the prompt starts a run instead of being refused as busy. Repeated, to catch a race.
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "answer"}]));
    let mut client = Client::start(rpc(&sandbox, &script, &[]));
    for round in 0..20 {
        let id = format!("p{round}");
        client.send(&json!({"id": id, "type": "prompt", "message": "again"}));
        let (before, end) = client.until(|l| l["type"] == "agent_end");
        assert!(
            before
                .iter()
                .any(|l| l["id"] == id.as_str() && l["success"] == true),
            "round {round}: {before:?} {end}"
        );
    }
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

/// Whether a process whose command line contains `needle` is running.
fn process_running(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| {
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(needle)
        })
}

/// SIGTERM ends RPC mode as pi 0.73.1 ends it: the run is aborted (its tool process killed),
/// plugins get `session_shutdown {reason:"quit"}`, and the exit code is 143.
#[test]
fn sigterm_shuts_down_like_stdin_closing_with_exit_143() {
    let sandbox = Sandbox::new();
    let script = script(
        &sandbox,
        json!([{"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 417.25"}}]}, {"text": "done"}]),
    );
    let log = sandbox.root().join("behave.log");
    let plugin = behave_plugin(&sandbox.lib(), "watcher");
    let mut command = rpc(&sandbox, &script, &["-e", plugin.to_str().unwrap()]);
    command.env(
        behave_env_var("watcher"),
        json!({"handlers": [{"event": "session_shutdown"}]}).to_string(),
    );
    command.env("BEHAVE_LOG", &log);
    let mut client = Client::start(command);
    client.send(&json!({"id": "p", "type": "prompt", "message": "wait"}));
    client.until(|l| l["type"] == "tool_execution_start");
    let started = Instant::now();
    while !process_running("sleep 417.25") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the tool never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-TERM", &client.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let status = loop {
        if let Some(status) = client.try_wait() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(143));
    let shutdown = read_behave_log(&log);
    assert_eq!(shutdown.len(), 1, "{shutdown:?}");
    assert_eq!(shutdown[0].value["reason"], "quit");
    assert!(
        !process_running("sleep 417.25"),
        "the tool process was killed"
    );
}

/// pi's `queue_update {steering, followUp}`: sent when a client queues a `steer` or a
/// `follow_up`, and again, just before that message's `message_start`, when the run takes it.
#[test]
fn queued_messages_are_announced_with_queue_update() {
    let sandbox = Sandbox::new();
    let script = script(
        &sandbox,
        json!([
            {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]},
            {"text": "steered"},
            {"text": "followed"}
        ]),
    );
    let mut client = Client::start(rpc(&sandbox, &script, &[]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    client.send(&json!({"id": "s", "type": "steer", "message": "go left"}));
    let (_, first) = client.until(|l| l["type"] == "queue_update");
    assert_eq!(
        first,
        json!({"type": "queue_update", "steering": ["go left"], "followUp": []})
    );
    client.send(&json!({"id": "f", "type": "follow_up", "message": "then stop"}));
    let (_, second) = client.until(|l| l["type"] == "queue_update");
    assert_eq!(
        second,
        json!({"type": "queue_update", "steering": ["go left"], "followUp": ["then stop"]})
    );
    let (_, taken) = client.until(|l| l["type"] == "queue_update");
    assert_eq!(
        taken,
        json!({"type": "queue_update", "steering": [], "followUp": ["then stop"]})
    );
    let next = client.next_line();
    assert_eq!(next["type"], "message_start", "{next}");
    assert_eq!(next["message"]["content"][0]["text"], "go left");
    let (_, emptied) = client.until(|l| l["type"] == "queue_update");
    assert_eq!(
        emptied,
        json!({"type": "queue_update", "steering": [], "followUp": []})
    );
    let next = client.next_line();
    assert_eq!(next["message"]["content"][0]["text"], "then stop", "{next}");
    let (status, _) = client.close();
    assert!(status.success());
}

/// `/reload` reads settings.json again, as pi does: a `toolCallTimeout` written meanwhile
/// applies to the next tool call (a slow gate then fails closed).
#[test]
fn a_reload_applies_the_timeouts_of_the_settings_written_meanwhile() {
    let sandbox = Sandbox::new();
    let tool_then_done = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "done"},
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo again"}}]},
        {"text": "done"}
    ]);
    let script = script(&sandbox, tool_then_done);
    let gate = behave_plugin(&sandbox.lib(), "slowgate");
    let mut command = rpc(&sandbox, &script, &["-e", gate.to_str().unwrap()]);
    command.env(
        behave_env_var("slowgate"),
        json!({"handlers": [{"event": "tool_call", "sleep_ms": 400}]}).to_string(),
    );
    let mut client = Client::start(command);
    client.send(&json!({"id": "p1", "type": "prompt", "message": "first"}));
    let (_, end) = client.until(|l| l["type"] == "tool_execution_end");
    assert_eq!(end["isError"], false, "no timeout yet: {end}");
    client.until(|l| l["type"] == "agent_end");

    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"toolCallTimeout": 100}).to_string(),
    )
    .unwrap();
    client.send(&json!({"id": "r", "type": "reload"}));
    assert_eq!(client.response("r")["success"], true);
    client.send(&json!({"id": "p2", "type": "prompt", "message": "second"}));
    let (_, end) = client.until(|l| l["type"] == "tool_execution_end");
    assert_eq!(end["isError"], true, "{end}");
    let text = end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("timed out after 100ms"), "{text}");
    let (status, _) = client.close();
    assert!(status.success());
}

/// The other answers of the same dialogs: a select cancelled (index -1), an input answered
/// with a value, an editor cancelled (no text).
#[test]
fn select_cancelled_input_answered_and_editor_cancelled() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "x"}]));
    let plugin = asker(&sandbox);
    let mut client = Client::start(rpc(&sandbox, &script, &["-e", plugin.to_str().unwrap()]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "/ask-all"}));
    let select = client.ui_request();
    assert_eq!(select["method"], "select");
    client.send(&json!({"type": "extension_ui_response", "id": select["id"], "cancelled": true}));
    let input = client.ui_request();
    assert_eq!(input["method"], "input");
    client.send(&json!({"type": "extension_ui_response", "id": input["id"], "value": "Ann"}));
    let editor = client.ui_request();
    assert_eq!(editor["method"], "editor");
    client.send(&json!({"type": "extension_ui_response", "id": editor["id"], "cancelled": true}));
    let (_, title) = client.until(|l| l["method"] == "setTitle");
    assert_eq!(
        title["title"], "-1|Ann|(none)",
        "a cancelled select gives index -1"
    );
    assert_eq!(client.response("p")["success"], true);
    let (status, _) = client.close();
    assert!(status.success());
}

/// As pi 0.73.1: a `prompt`'s `images` reach the `input` event, `before_agent_start` and the
/// user message (after its text), not only `steer` and `follow_up`.
#[test]
fn a_prompt_s_images_reach_input_before_agent_start_and_the_user_message() {
    let sandbox = Sandbox::new();
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    let mut client = pi_hooks_tests::rpc_client::RpcClient::start(
        pi_hooks_tests::session_rpc::rpc_with_watcher(
            &sandbox,
            &json!({"turns": [{"text": "seen"}]}),
            &json!([{"event": "input"}, {"event": "before_agent_start"}]),
            &sandbox.root().join("s.jsonl"),
            &[],
        ),
    );
    client
        .send(&json!({"id": "p", "type": "prompt", "message": "what is this?", "images": [image]}));
    let (_, user) = client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "what is this?"}, image]),
        "{user}"
    );
    client.until(|l| l["type"] == "agent_end");
    client.close();
    let log = pi_hooks_tests::read_behave_log(&sandbox.root().join("behave.log"));
    let payload = |tag: &str| {
        log.iter()
            .find(|l| l.tag == tag)
            .unwrap_or_else(|| panic!("no {tag}"))
            .value
            .clone()
    };
    assert_eq!(
        payload("input"),
        json!({"type": "input", "text": "what is this?", "source": "rpc", "images": [image]})
    );
    assert_eq!(payload("before_agent_start")["images"], json!([image]));
}
