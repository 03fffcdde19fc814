//! pi 1.6's hook surface for native plugins (issue 33, item 4; ABI 1.7), exercised with a real
//! C plugin compiled against the committed header (tests/fixtures/pi16_surface.c) in the real
//! binary's own modes, and with the `behave` fixture through `pi-hooks serve` (what the pi
//! bridge relays to pi 1.6):
//!
//! - the run end as in pi 1.6: `agent_end`, then `agent_before_settle` (its `{entries,
//!   continue}` honoured: entries written, one more run), then `agent_settled {aborted}`;
//! - `turn_end`'s `{entries}`, `tool_call`'s `terminate`, `message_end`'s `{message}`,
//!   `context_with_system`'s `{messages}`;
//! - the context additions (`is_project_trusted`, `system_prompt_options`, `thinking_level`)
//!   and a widget set with no placement (`PI_WIDGET_DEFAULT`);
//! - serve's answers for the new results (boundaries, `message_end`, `context_with_system`,
//!   `before_provider_headers`, `terminate`, `project_trust`).

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::serve_client::{event, start as serve};
use pi_hooks_tests::{Sandbox, behave_command, c_fixture, json_lines, output_within};
use serde_json::{Value, json};

/// The fixture, compiled into the sandbox.
fn plugin(sandbox: &Sandbox) -> PathBuf {
    c_fixture(&sandbox.lib(), "pi16_surface", &[])
}

/// `pi-hooks run --mode json --no-session --script <script> --hook <fixture> go` with
/// `PI16_FEATURES=features`; returns the output and the fixture's log lines `(tag, JSON)`.
fn run_json(script: Value, features: &str) -> (Output, Vec<(String, Value)>) {
    let sandbox = Sandbox::new();
    let library = plugin(&sandbox);
    let script = sandbox.script(&script);
    let log = sandbox.root().join("pi16.log");
    let mut command = pi_hooks_tests::json_run_command(&sandbox, &script, &[library.as_path()]);
    command.env("PI16_LOG", &log).env("PI16_FEATURES", features);
    let output = output_within(command, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, read_log(&log))
}

fn read_log(path: &std::path::Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let (tag, json) = line.split_once(' ').expect("tag and JSON");
            let value = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line}"));
            (tag.to_owned(), value)
        })
        .collect()
}

fn tags<'a>(log: &'a [(String, Value)], wanted: &[&str]) -> Vec<&'a str> {
    log.iter()
        .map(|(tag, _)| tag.as_str())
        .filter(|tag| wanted.contains(tag))
        .collect()
}

fn logged<'a>(log: &'a [(String, Value)], tag: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|(t, _)| t == tag)
        .map(|(_, v)| v)
        .collect()
}

/// The text of the assistant `message_end` lines the mode printed.
fn assistant_texts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .map(|l| {
            l["message"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>()
        })
        .collect()
}

#[test]
fn the_run_ends_with_agent_end_then_agent_before_settle_then_agent_settled() {
    let (output, log) = run_json(json!({"turns": [{"text": "first answer"}]}), "");
    assert_eq!(
        tags(&log, &["agent_end", "agent_before_settle", "agent_settled"]),
        ["agent_end", "agent_before_settle", "agent_settled"]
    );
    let settle = logged(&log, "agent_before_settle")[0];
    assert_eq!(settle["entries"], json!([]), "{settle}");
    assert_eq!(settle["continue"], false);
    assert_eq!(settle["outcome"], "completed");
    assert_eq!(settle["context"]["canContinue"], false);
    assert_eq!(
        settle["context"]["contextMessages"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{settle}"
    );
    assert_eq!(
        logged(&log, "agent_settled")[0],
        &json!({"type": "agent_settled", "aborted": false})
    );
    // The turn_end boundary names the entries it ended.
    let turn_end = logged(&log, "turn_end")[0];
    let entries = logged(&log, "entries")[0].as_array().unwrap();
    let assistant_entry = entries
        .iter()
        .find(|e| e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(turn_end["messageEntryId"], assistant_entry["id"]);
    assert_eq!(turn_end["toolResultEntryIds"], json!([]));
    assert_eq!(turn_end["entries"], json!([]));
    assert_eq!(turn_end["continue"], false);
    // Outside a command, system_prompt_options is PI_ERR_UNAVAILABLE (as pi offers it on a
    // command's context only).
    assert_eq!(
        logged(&log, "options_in_event")[0],
        &json!(pi_hooks_abi::ffi::PI_ERR_UNAVAILABLE)
    );
    assert_eq!(assistant_texts(&json_lines(&output)), ["first answer"]);
}

#[test]
fn boundary_entries_are_written_and_continue_runs_once_more() {
    let (output, log) = run_json(
        json!({"turns": [{"text": "first answer"}, {"text": "second answer"}], "rewind": false}),
        "settle turn",
    );
    // agent_before_settle asked to continue once: a second run, then it settles.
    assert_eq!(
        tags(&log, &["agent_end", "agent_before_settle", "agent_settled"]),
        [
            "agent_end",
            "agent_before_settle",
            "agent_end",
            "agent_before_settle",
            "agent_settled"
        ]
    );
    let lines = json_lines(&output);
    assert_eq!(assistant_texts(&lines), ["first answer", "second answer"]);
    // The second run's request held the custom message the boundary wrote.
    let contexts = logged(&log, "context_with_system");
    assert_eq!(contexts.len(), 2);
    let last = contexts[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "custom", "{}", contexts[1]);
    assert_eq!(last["customType"], "settle-note");
    assert_eq!(last["content"], "Settle note");
    // Every entry the boundaries gave is in the session, in order.
    let entries = logged(&log, "entries")[0].as_array().unwrap();
    let customs: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| e["type"] != "message")
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["customType"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        customs,
        [
            ("custom", "turn-note"),
            ("custom_message", "settle-note"),
            ("custom", "settle-state")
        ]
    );
    // The second agent_before_settle's context shows the entries written.
    let second = logged(&log, "agent_before_settle")[1];
    assert!(
        second["context"]["contextEntries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["customType"] == "settle-note"),
        "{second}"
    );
}

#[test]
fn a_block_with_terminate_ends_the_run_after_the_batch() {
    let script = json!({"turns": [
        {"text": "Running.", "toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "after the tools"}
    ]});
    let (output, log) = run_json(script.clone(), "terminate");
    let lines = json_lines(&output);
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .expect("tool_execution_end");
    assert_eq!(end["isError"], true, "{end}");
    assert!(end["result"].to_string().contains("stopped here"), "{end}");
    assert_eq!(
        assistant_texts(&lines),
        ["Running."],
        "no request after the batch"
    );
    assert_eq!(logged(&log, "tool_call").len(), 1);
    // A call that did not run has no durationMs (pi 1.1.0).
    assert!(end.get("durationMs").is_none(), "{end}");
    // The same script without terminate asks the model again after the tools.
    let (output, _) = run_json(script, "");
    let lines = json_lines(&output);
    assert_eq!(assistant_texts(&lines), ["Running.", "after the tools"]);
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .expect("tool_execution_end");
    assert!(end["durationMs"].is_u64(), "{end}");
}

#[test]
fn a_message_end_replacement_reaches_the_session_the_clients_and_agent_end() {
    let (output, log) = run_json(json!({"turns": [{"text": "original"}]}), "replace");
    let lines = json_lines(&output);
    assert_eq!(assistant_texts(&lines), ["REPLACED"]);
    let agent_end = lines.iter().find(|l| l["type"] == "agent_end").unwrap();
    assert!(agent_end.to_string().contains("REPLACED"), "{agent_end}");
    assert!(!agent_end.to_string().contains("original"), "{agent_end}");
    let entries = logged(&log, "entries")[0].to_string();
    assert!(
        entries.contains("REPLACED") && !entries.contains("\"original\""),
        "{entries}"
    );
    // turn_end and agent_end handlers see the replacement too.
    assert!(logged(&log, "turn_end")[0].to_string().contains("REPLACED"));
}

#[test]
fn a_message_end_replacement_with_another_role_is_reported_and_ignored() {
    let (output, _) = run_json(json!({"turns": [{"text": "original"}]}), "badrole");
    let lines = json_lines(&output);
    assert_eq!(assistant_texts(&lines), ["original"]);
    let error = lines
        .iter()
        .find(|l| l["type"] == "extension_error")
        .expect("an extension_error line");
    assert_eq!(error["event"], "message_end");
    assert_eq!(
        error["error"],
        "message_end handlers must return a message with the same role"
    );
}

#[test]
fn context_with_system_results_are_what_the_model_is_sent() {
    // The scripted model answers with the last message of the request it got.
    let (output, log) = run_json(json!({"turns": [{"text": "${LAST_MESSAGE}"}]}), "cws");
    assert_eq!(assistant_texts(&json_lines(&output)), ["injected by cws"]);
    // Handlers see the conversation after `context` (this host keeps the prompt apart).
    let seen = logged(&log, "context_with_system")[0];
    assert_eq!(seen["messages"][0]["role"], "user", "{seen}");
}

#[test]
fn context_additions_and_a_widget_without_placement_in_rpc_mode() {
    let sandbox = Sandbox::new();
    let library = plugin(&sandbox);
    let log = sandbox.root().join("pi16.log");
    let mut command =
        sandbox.command(&["rpc", "--no-session", "--hook", library.to_str().unwrap()]);
    command.env("PI16_LOG", &log);
    let mut client = RpcClient::start(command);
    client.send(&json!({"id": "p", "type": "prompt", "message": "/pi16"}));
    let plain = client.ui_request();
    let above = client.ui_request();
    assert_eq!(plain["method"], "setWidget", "{plain}");
    assert_eq!(plain["widgetKey"], "plain");
    assert!(
        plain.get("widgetPlacement").is_none(),
        "a widget set with PI_WIDGET_DEFAULT names no placement: {plain}"
    );
    assert_eq!(above["widgetKey"], "above");
    assert_eq!(above["widgetPlacement"], "aboveEditor", "{above}");
    client.response("p");
    client.send(&json!({"id": "n", "type": "set_session_name", "name": "  Named  "}));
    client.response("n");
    let _ = client.close();
    let log = read_log(&log);
    let ctx = logged(&log, "ctx")[0];
    assert_eq!(ctx["trusted"], false, "{ctx}");
    assert_eq!(ctx["thinking"], "off");
    assert_eq!(ctx["status"], 0);
    assert_eq!(
        ctx["options"]["cwd"],
        sandbox.project().display().to_string(),
        "{ctx}"
    );
    assert!(
        ctx["options"]["selectedTools"]
            .as_array()
            .unwrap()
            .contains(&json!("bash")),
        "{ctx}"
    );
    assert_eq!(
        logged(&log, "session_info_changed"),
        [&json!({"type": "session_info_changed", "name": "Named"})]
    );
}

// ---------------------------------------------------------------------------------------
// through serve (what the pi bridge relays between pi 1.6 and the native plugins)

#[test]
fn serve_returns_the_boundary_results_chained_across_plugins() {
    let sandbox = Sandbox::new();
    let note = json!({"type": "custom", "customType": "a-note", "data": {"from": "alpha"}});
    let mut client = serve(
        &sandbox,
        &[
            (
                "alpha",
                json!({"handlers": [
                    {"event": "turn_end", "result": {"entries": [note]}},
                    {"event": "agent_before_settle", "result": {"continue": true}},
                ]}),
            ),
            (
                "beta",
                json!({"handlers": [
                    {"event": "turn_end", "result": {"continue": true}},
                    {"event": "agent_before_settle", "result": {"entries": [{"type": "bogus"}]}},
                ]}),
            ),
        ],
    );
    let turn_end = event(
        &mut client,
        "t",
        "turn_end",
        json!({"turnIndex": 0, "message": {"role": "assistant", "content": []}, "toolResults": [],
               "messageEntryId": "e1", "toolResultEntryIds": [], "entries": [], "continue": false,
               "context": {"canContinue": true}, "outcome": "completed"}),
    );
    assert_eq!(
        turn_end["result"],
        json!({"entries": [note], "continue": true}),
        "{turn_end}"
    );
    // beta saw alpha's entries in its payload.
    let lines = pi_hooks_tests::read_behave_log(&sandbox.behave_log());
    let beta = lines
        .iter()
        .find(|l| l.who() == "beta turn_end")
        .expect("beta's turn_end");
    assert_eq!(beta.value["entries"], json!([note]), "{}", beta.value);
    // A malformed draft: reported, and then no entries and no continuation (pi's rule).
    let settle = event(
        &mut client,
        "s",
        "agent_before_settle",
        json!({"entries": [], "continue": false, "context": {}, "outcome": "completed"}),
    );
    assert_eq!(
        settle["result"],
        json!({"entries": [], "continue": false}),
        "{settle}"
    );
    let _ = client.close();
}

#[test]
fn serve_chains_message_end_context_with_system_headers_terminate_and_trust() {
    let sandbox = Sandbox::new();
    let replaced = json!({"role": "assistant", "content": [{"type": "text", "text": "new"}]});
    let mut client = serve(
        &sandbox,
        &[
            (
                "alpha",
                json!({"handlers": [
                    {"event": "message_end", "result": {"message": replaced}},
                    {"event": "context_with_system", "result": {"messages": [{"role": "user", "content": "only"}]}},
                    {"event": "before_provider_headers", "result": {"headers": {"x-trace": "1", "authorization": null}}},
                    {"event": "tool_call", "result": {"block": true, "reason": "no", "terminate": true}},
                    {"event": "project_trust", "result": {"trusted": "undecided"}},
                ]}),
            ),
            (
                "beta",
                json!({"handlers": [
                    {"event": "before_provider_headers", "result": {"headers": {"x-beta": "2"}}},
                    {"event": "project_trust", "result": {"trusted": "no", "remember": true}},
                ]}),
            ),
        ],
    );
    let message = event(
        &mut client,
        "m",
        "message_end",
        json!({"message": {"role": "assistant", "content": [{"type": "text", "text": "old"}]}}),
    );
    assert_eq!(message["result"], json!({"message": replaced}), "{message}");
    let messages = event(
        &mut client,
        "c",
        "context_with_system",
        json!({"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "hi"}]}),
    );
    assert_eq!(
        messages["result"],
        json!({"messages": [{"role": "user", "content": "only"}]})
    );
    let headers = event(
        &mut client,
        "h",
        "before_provider_headers",
        json!({"headers": {"authorization": "Bearer k", "accept": "text/event-stream"}}),
    );
    assert_eq!(
        headers["result"],
        json!({"headers": {"authorization": null, "accept": "text/event-stream", "x-trace": "1", "x-beta": "2"}}),
        "{headers}"
    );
    let blocked = event(
        &mut client,
        "b",
        "tool_call",
        json!({"toolCallId": "c1", "toolName": "bash", "input": {"command": "ls"}}),
    );
    assert_eq!(
        blocked["result"],
        json!({"block": true, "reason": "no", "terminate": true})
    );
    let trust = event(&mut client, "p", "project_trust", json!({"cwd": "/x"}));
    assert_eq!(trust["result"], json!({"trusted": "no", "remember": true}));
    // beta saw alpha's header changes (deleted ones as null).
    let lines = pi_hooks_tests::read_behave_log(&sandbox.behave_log());
    let beta = lines
        .iter()
        .find(|l| l.who() == "beta before_provider_headers")
        .expect("beta's headers");
    assert_eq!(beta.value["headers"]["authorization"], Value::Null);
    assert_eq!(beta.value["headers"]["x-trace"], "1");
    let _ = client.close();
}

// ---------------------------------------------------------------------------------------
// C++

const CPP_PLUGIN: &str = r#"
#include <string>
#include "pi_hooks.hpp"

static void setup(pi_hooks::Plugin &pi) {
    pi.on("tool_call", [](pi_hooks::Value, pi_hooks::Context &, pi_hooks::Result &result) {
        result.block_and_terminate("stopped by C++");
    });
    pi.on("turn_end", [](pi_hooks::Value, pi_hooks::Context &, pi_hooks::Result &result) {
        result.boundary(R"([{"type":"custom","customType":"cpp-note"}])", false);
    });
    pi.command("cpp16", "pi 1.6's context from C++", [](std::string_view, pi_hooks::Context &ctx) {
        std::string options = ctx.system_prompt_options().json();
        std::string line = std::string("trusted=") + (ctx.is_project_trusted() ? "yes" : "no") +
                           " thinking=" + std::string(ctx.thinking_level()) + " options=" + options;
        ctx.set_widget("cpp-plain", {line});
        ctx.set_widget("cpp-below", {"below"}, PI_WIDGET_BELOW_EDITOR);
    });
}

PI_HOOKS_CPP_PLUGIN("cpp-pi16", "1.0.0", "pi 1.6's context from C++", setup);
"#;

#[test]
fn the_cpp_helpers_reach_the_context_additions_and_the_default_placement() {
    let sandbox = Sandbox::new();
    let library = pi_hooks_tests::compile_cpp_text(&sandbox.lib(), "libcpp_pi16", CPP_PLUGIN);
    let mut client = RpcClient::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--hook",
        library.to_str().unwrap(),
    ]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "/cpp16"}));
    let plain = client.ui_request();
    let below = client.ui_request();
    client.response("p");
    let _ = client.close();
    assert!(plain.get("widgetPlacement").is_none(), "{plain}");
    let line = plain["widgetLines"][0].as_str().unwrap();
    assert!(
        line.starts_with("trusted=no thinking=off options={"),
        "{line}"
    );
    assert!(line.contains("\"selectedTools\""), "{line}");
    assert_eq!(below["widgetPlacement"], "belowEditor", "{below}");
}

// ---------------------------------------------------------------------------------------
// inside pi 1.6.0, through the pi bridge

/// `pi --mode json --provider fake --model fake-model go` with the bridge and the fixture
/// (features `features`) installed; returns pi's output lines and the fixture's log.
fn pi16_json(
    server: &pi_hooks_tests::fake_openai::FakeOpenAi,
    features: &str,
) -> (Vec<Value>, Vec<(String, Value)>, Sandbox) {
    let sandbox = Sandbox::new();
    pi_hooks_tests::pi_e2e::prepare(&sandbox, server);
    let extensions = sandbox.agent_dir().join("extensions");
    std::fs::create_dir_all(&extensions).unwrap();
    std::fs::copy(plugin(&sandbox), extensions.join("libpi16_surface.so")).unwrap();
    let log = sandbox.root().join("pi16.log");
    let mut command =
        pi_hooks_tests::pi_e2e::pi_command_of(&pi_hooks_tests::tools::pi16(), &sandbox);
    command
        .args([
            "--mode",
            "json",
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "go",
        ])
        .env("PI16_LOG", &log)
        .env("PI16_FEATURES", features)
        .env_remove("PI_HOOKS_BIN");
    // pi reads a piped stdin into the prompt: give it none.
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("start pi");
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match finished.recv_timeout(Duration::from_secs(120)) {
        Ok(output) => output.expect("pi's output"),
        Err(_) => {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
            panic!("pi did not finish within 120 s");
        }
    };
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (json_lines(&output), read_log(&log), sandbox)
}

#[test]
fn inside_pi_1_6_terminate_and_header_changes_of_a_native_plugin_hold() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, after_tool, tool_call};
    let server = FakeOpenAi::start(|body| {
        if after_tool(body) {
            Reply::Text("after the tools".into())
        } else {
            tool_call("bash", json!({"command": "echo hi"}))
        }
    });
    let (lines, _, _sandbox) = pi16_json(&server, "terminate headers");
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1, "no request after a terminating block");
    assert_eq!(recorded[0].header("x-pi16"), Some("from-native"));
    assert_eq!(recorded[0].header("authorization"), None);
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .expect("tool_execution_end");
    assert!(end["result"].to_string().contains("stopped here"), "{end}");
    // Without the native results, pi sends the key and asks again after the tool.
    let (_, _, _sandbox) = pi16_json(&server, "");
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 3, "one more run of two requests");
    assert_eq!(recorded[1].header("authorization"), Some("Bearer fake-key"));
}

#[test]
fn inside_pi_1_6_boundary_results_and_message_end_replacements_hold() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
    let server = FakeOpenAi::start(|body| {
        if body.to_string().contains("Settle note") {
            Reply::Text("second".into())
        } else {
            Reply::Text("first".into())
        }
    });
    let (lines, log, _sandbox) = pi16_json(&server, "replace turn settle");
    assert_eq!(server.recorded().len(), 2, "agent_before_settle's continue");
    assert_eq!(assistant_texts(&lines), ["REPLACED", "REPLACED"]);
    let appended: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "entry_appended")
        .filter_map(|l| l["entry"]["customType"].as_str())
        .collect();
    assert_eq!(appended, ["turn-note", "settle-note", "settle-state"]);
    assert_eq!(
        tags(&log, &["agent_end", "agent_before_settle", "agent_settled"]),
        [
            "agent_end",
            "agent_before_settle",
            "agent_end",
            "agent_before_settle",
            "agent_settled"
        ]
    );
}

#[test]
fn a_failed_compaction_is_session_compact_failed_with_its_reason() {
    let sandbox = Sandbox::new();
    let mut client = RpcClient::start(behave_command(
        &sandbox,
        &[(
            "watch",
            json!({"handlers": [{"event": "session_compact_failed"}, {"event": "session_compact"}]}),
        )],
        &["rpc", "--no-session"],
    ));
    // Nothing to compact in an empty session.
    client.send(&json!({"id": "c", "type": "compact"}));
    let answer = client.response("c");
    assert_eq!(answer["success"], false, "{answer}");
    let _ = client.close();
    let lines = pi_hooks_tests::read_behave_log(&sandbox.behave_log());
    let failed = lines
        .iter()
        .find(|l| l.who() == "watch session_compact_failed")
        .expect("session_compact_failed");
    assert_eq!(failed.value["reason"], "manual", "{}", failed.value);
    assert_eq!(failed.value["aborted"], false);
    assert_eq!(failed.value["willRetry"], false);
    assert_eq!(failed.value["fromExtension"], false);
    assert_eq!(
        failed.value["errorMessage"].as_str(),
        answer["error"].as_str(),
        "{}",
        failed.value
    );
    assert!(lines.iter().all(|l| l.who() != "watch session_compact"));
}

const SENDER: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;
static int sent;

static PiStatus on_turn_start(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)ctx; (void)result;
    if (sent++ > 0) return PI_OK;
    host->actions->send_user_message(self, pi_str("steer this"), PI_DELIVER_STEER);
    return host->actions->send_user_message(self, pi_str("then this"), PI_DELIVER_FOLLOW_UP);
}

static PiStatus on_input(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)ctx; (void)result;
    PiStr json;
    FILE *log = fopen(getenv("SENDER_LOG"), "a");
    if (log == NULL) return PI_ERR;
    if (host->values->to_json(event, &json) == PI_OK) fprintf(log, "%.*s\n", (int)json.len, json.ptr);
    fclose(log);
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    self = plugin;
    PiStatus status = host->registry->on(plugin, pi_str("turn_start"), on_turn_start, NULL);
    return status != PI_OK ? status : host->registry->on(plugin, pi_str("input"), on_input, NULL);
}

PI_HOOKS_PLUGIN("sender", "1.0.0", "sends user messages while the agent streams", init, NULL);
"#;

#[test]
fn input_says_how_a_message_sent_while_streaming_is_delivered() {
    let sandbox = Sandbox::new();
    let library = pi_hooks_tests::compile_c_text(&sandbox.lib(), "libsender", SENDER, &[]);
    let script =
        sandbox.script(&json!({"turns": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}));
    let log = sandbox.root().join("inputs.log");
    let mut command = pi_hooks_tests::json_run_command(&sandbox, &script, &[library.as_path()]);
    command.env("SENDER_LOG", &log);
    let output = output_within(command, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let inputs: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let behaviors: Vec<(&str, Option<&str>)> = inputs
        .iter()
        .map(|i| (i["text"].as_str().unwrap(), i["streamingBehavior"].as_str()))
        .collect();
    assert_eq!(
        behaviors,
        [
            ("go", None),
            ("steer this", Some("steer")),
            ("then this", Some("followUp"))
        ],
        "{inputs:?}"
    );
}

/// pi-hooks' own OpenAI-compatible provider passes its request headers through
/// `before_provider_headers` (pi 0.80.4): the plugin adds one and deletes `authorization`,
/// and the server sees exactly that; without the plugin it sees the key.
#[test]
fn our_own_provider_sends_the_headers_a_native_plugin_changed() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
    let server = FakeOpenAi::start(|_| Reply::Text("ok".into()));
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .unwrap();
    let library = plugin(&sandbox);
    let log = sandbox.root().join("pi16.log");
    let run = |hooks: &[&str]| {
        let mut args = vec![
            "run",
            "--mode",
            "json",
            "--no-session",
            "--provider",
            "fake",
            "--model",
            "fake-model",
        ];
        args.extend_from_slice(hooks);
        args.push("go");
        let mut command = sandbox.command(&args);
        command
            .env("PI16_LOG", &log)
            .env("PI16_FEATURES", "headers");
        let output = output_within(command, Duration::from_secs(60));
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    run(&["--hook", library.to_str().unwrap()]);
    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].header("x-pi16"), Some("from-native"));
    assert_eq!(recorded[0].header("authorization"), None);
    run(&[]);
    let recorded = server.recorded();
    assert_eq!(recorded[1].header("x-pi16"), None);
    assert_eq!(recorded[1].header("authorization"), Some("Bearer fake-key"));
}
