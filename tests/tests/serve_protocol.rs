//! `pi-hooks serve` driven over its real pipes: the `hello` line, events answered with the
//! runner's combination rules, plugin calls that need the client going out as `request`
//! lines and waiting for the test's `response`, bad input answered with error lines, and
//! the shutdown when stdin closes. Plugins are the configurable `behave` fixture
//! (tests/fixtures/behave.c) and the confirm-command example, compiled with `cc`.

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::{Sandbox, behave_command, c_example_plugin, read_behave_log};
use serde_json::{Value, json};

/// `pi-hooks serve --no-hooks --hook <behave instances>`; reads and returns the `hello`.
fn serve(sandbox: &Sandbox, plugins: &[(&str, Value)]) -> (Client, Value) {
    let mut client = Client::start(behave_command(sandbox, plugins, &["serve", "--no-hooks"]));
    let hello = client.next_line();
    (client, hello)
}

/// `pi-hooks serve --no-hooks -e <the C plugin `code`, compiled as `name`>`; reads and
/// returns the `hello`.
fn serve_c(sandbox: &Sandbox, name: &str, code: &str) -> (Client, Value) {
    let plugin = pi_hooks_tests::compile_c_text(&sandbox.lib(), name, code, &[]);
    let mut client =
        Client::start(sandbox.command(&["serve", "--no-hooks", "-e", plugin.to_str().unwrap()]));
    let hello = client.next_line();
    (client, hello)
}

/// The answer (`result` or `error`) to the request `id`.
fn answer(client: &mut Client, id: &str) -> Value {
    client
        .until(|l| (l["type"] == "result" || l["type"] == "error") && l["id"] == id)
        .1
}

fn event(client: &mut Client, id: &str, name: &str, payload: Value) -> Value {
    client.send(&json!({"type": "event", "id": id, "name": name, "payload": payload}));
    answer(client, id)
}

#[test]
fn hello_states_the_protocol_and_each_plugins_subscriptions() {
    let sandbox = Sandbox::new();
    let (client, hello) = serve(
        &sandbox,
        &[(
            "alpha",
            json!({"handlers": [{"event": "tool_call"}, {"event": "input"}]}),
        )],
    );
    assert_eq!(hello["type"], "hello", "{hello}");
    assert_eq!(hello["protocol"], 1);
    assert!(
        hello["pluginsHost"]
            .as_str()
            .unwrap()
            .starts_with("pi-hooks "),
        "{hello}"
    );
    let plugins = hello["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1, "{hello}");
    assert_eq!(plugins[0]["name"], "alpha");
    assert!(
        plugins[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("libbehave_alpha.so")
    );
    let events = plugins[0]["events"].as_array().unwrap();
    assert!(events.contains(&json!("tool_call")), "{hello}");
    assert!(events.contains(&json!("input")), "{hello}");
    assert_eq!(hello["errors"], json!([]));
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn hello_lists_load_errors_and_the_example_plugins_command() {
    let sandbox = Sandbox::new();
    let plugin = c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command");
    let missing = sandbox.lib().join("libmissing.so");
    let mut client = Client::start(sandbox.command(&[
        "serve",
        "--no-hooks",
        "-e",
        plugin.to_str().unwrap(),
        "-e",
        missing.to_str().unwrap(),
    ]));
    let hello = client.next_line();
    let commands = &hello["plugins"][0]["commands"];
    assert!(
        commands
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "deploy"),
        "{hello}"
    );
    let errors = hello["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{hello}");
    assert!(
        errors[0]["path"]
            .as_str()
            .unwrap()
            .contains("libmissing.so"),
        "{hello}"
    );
    client.close();
}

#[test]
fn tool_call_is_blocked_with_the_plugins_reason_and_allowed_otherwise() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "gate",
            json!({"handlers": [{"event": "tool_call", "if_contains": "rm -rf",
                "result": {"block": true, "reason": "no rm -rf here"}}]}),
        )],
    );
    let blocked = event(
        &mut client,
        "1",
        "tool_call",
        json!({"toolCallId": "t1", "toolName": "bash", "input": {"command": "rm -rf /"}}),
    );
    assert_eq!(
        blocked["result"],
        json!({"block": true, "reason": "no rm -rf here"}),
        "{blocked}"
    );
    let allowed = event(
        &mut client,
        "2",
        "tool_call",
        json!({"toolCallId": "t2", "toolName": "bash", "input": {"command": "ls"}}),
    );
    assert_eq!(allowed["result"], json!({"block": false}), "{allowed}");
    client.close();
}

/// spawn-hook's rewrite reaches serve's client (the pi bridge, `--isolate`) as the decision's
/// `input`.
#[test]
fn tool_call_gives_the_rewritten_input() {
    let sandbox = Sandbox::new();
    let plugin = c_example_plugin(&sandbox.lib(), "spawn-hook", "spawn_hook");
    let mut client =
        Client::start(sandbox.command(&["serve", "--no-hooks", "-e", plugin.to_str().unwrap()]));
    client.next_line();
    let rewritten = event(
        &mut client,
        "1",
        "tool_call",
        json!({"toolCallId": "t1", "toolName": "bash", "input": {"command": "npm test", "timeout": 9}}),
    );
    assert_eq!(
        rewritten["result"],
        json!({"block": false, "input": {"command": "export CUSTOM_VAR=1; pnpm test", "timeout": 9}}),
        "{rewritten}"
    );
    let other = event(
        &mut client,
        "2",
        "tool_call",
        json!({"toolCallId": "t2", "toolName": "read", "input": {"path": "x"}}),
    );
    assert_eq!(other["result"], json!({"block": false}), "{other}");
    client.close();
}

#[test]
fn tool_result_gives_the_patch_or_null() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "patcher",
            json!({"handlers": [{"event": "tool_result", "if_contains": "secret",
                "result": {"content": [{"type": "text", "text": "[redacted]"}]}}]}),
        )],
    );
    let patched = event(
        &mut client,
        "1",
        "tool_result",
        json!({"toolCallId": "t1", "toolName": "read", "input": {},
            "content": [{"type": "text", "text": "secret"}], "isError": false}),
    );
    assert_eq!(
        patched["result"]["content"],
        json!([{"type": "text", "text": "[redacted]"}]),
        "{patched}"
    );
    assert_eq!(patched["result"]["isError"], false, "{patched}");
    let untouched = event(
        &mut client,
        "2",
        "tool_result",
        json!({"toolCallId": "t2", "toolName": "read", "input": {},
            "content": [{"type": "text", "text": "plain"}]}),
    );
    assert_eq!(untouched["result"], Value::Null, "{untouched}");
    client.close();
}

#[test]
fn input_transform_chains_through_plugins() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "rewriter",
            json!({"handlers": [{"event": "input", "if_contains": "hello",
                "result": {"action": "transform", "text": "rewritten"}}]}),
        )],
    );
    let changed = event(
        &mut client,
        "1",
        "input",
        json!({"text": "hello", "source": "interactive"}),
    );
    assert_eq!(changed["result"]["action"], "transform", "{changed}");
    assert_eq!(changed["result"]["text"], "rewritten", "{changed}");
    let same = event(&mut client, "2", "input", json!({"text": "other"}));
    assert_eq!(same["result"], json!({"action": "continue"}), "{same}");
    client.close();
}

#[test]
fn send_message_reaches_the_client_as_a_request_and_waits_for_the_response() {
    let sandbox = Sandbox::new();
    let message = json!({"customType": "note", "content": "from the plugin", "display": true});
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "talker",
            json!({"handlers": [{"event": "agent_end", "send_message": message}]}),
        )],
    );
    client.send(
        &json!({"type": "event", "id": "e", "name": "agent_end", "payload": {"messages": []}}),
    );
    let (before, request) = client.until(|l| l["type"] == "request");
    assert!(!before.iter().any(|l| l["id"] == "e"), "{before:?}");
    assert_eq!(request["method"], "send_message", "{request}");
    assert_eq!(request["params"]["message"], message, "{request}");
    assert!(
        request["params"]["extensionPath"]
            .as_str()
            .unwrap()
            .ends_with("libbehave_talker.so"),
        "{request}"
    );
    client.send(&json!({"type": "response", "id": request["id"], "result": null}));
    let done = answer(&mut client, "e");
    assert_eq!(done["type"], "result", "{done}");
    let log = read_behave_log(&sandbox.behave_log());
    let status = log
        .iter()
        .find(|l| l.tag == "send_message:status")
        .expect("the plugin logged the send_message status");
    assert_eq!(
        status.value,
        json!(0),
        "PI_OK after the client answered: {log:?}"
    );
    client.close();
}

#[test]
fn a_plugin_dialog_is_a_ui_request_answered_by_the_client() {
    let sandbox = Sandbox::new();
    let plugin = c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command");
    let mut client =
        Client::start(sandbox.command(&["serve", "--no-hooks", "-e", plugin.to_str().unwrap()]));
    client.next_line();
    client.send(&json!({"type": "command", "id": "d", "name": "deploy", "args": "staging"}));
    let (_, dialog) = client.until(|l| l["type"] == "request");
    assert_eq!(dialog["method"], "ui", "{dialog}");
    assert_eq!(dialog["params"]["method"], "confirm", "{dialog}");
    assert_eq!(dialog["params"]["title"], "Deploy?", "{dialog}");
    assert_eq!(
        dialog["params"]["message"], "Deploy to staging?",
        "{dialog}"
    );
    client.send(&json!({"type": "response", "id": dialog["id"], "result": {"confirmed": true}}));
    let (before, done) = client.until(|l| l["id"] == "d");
    assert_eq!(done["type"], "result", "{done}");
    let notify = before
        .iter()
        .find(|l| l["type"] == "notification" && l["params"]["method"] == "notify")
        .unwrap_or_else(|| panic!("a notify notification before the result: {before:?}"));
    assert_eq!(
        notify["params"]["message"], "Deploying to staging",
        "{notify}"
    );
    client.close();
}

#[test]
fn bad_lines_get_error_lines_and_the_server_goes_on() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(&sandbox, &[("quiet", json!({"handlers": []}))]);
    client.send_raw(b"this is not json\n");
    let malformed = client.next_line();
    assert_eq!(malformed["type"], "error", "{malformed}");
    assert!(
        malformed["error"]
            .as_str()
            .unwrap()
            .contains("malformed JSON line"),
        "{malformed}"
    );
    client.send(&json!({"type": "teleport", "id": "x"}));
    let unknown = client.next_line();
    assert_eq!(unknown["type"], "error");
    assert_eq!(unknown["id"], "x");
    assert!(
        unknown["error"].as_str().unwrap().contains("teleport"),
        "{unknown}"
    );
    client.send(&json!({"type": "response", "id": "s999", "result": true}));
    let stray = client.next_line();
    assert_eq!(stray["type"], "error");
    assert!(stray["error"].as_str().unwrap().contains("s999"), "{stray}");
    client.send(
        &json!({"type": "event", "id": "bad", "name": "tool_call", "payload": {"toolName": 3}}),
    );
    let invalid = answer(&mut client, "bad");
    assert_eq!(invalid["type"], "error", "{invalid}");
    assert!(
        invalid["error"].as_str().unwrap().contains("toolCallId"),
        "{invalid}"
    );
    client.send(&json!({"type": "command", "id": "c", "name": "nothing-here"}));
    let missing = answer(&mut client, "c");
    assert_eq!(missing["type"], "error", "{missing}");
    // Still serving.
    let fine = event(&mut client, "ok", "input", json!({"text": "hi"}));
    assert_eq!(fine["result"]["action"], "continue", "{fine}");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn stdin_closed_sends_session_shutdown_and_exits_zero() {
    let sandbox = Sandbox::new();
    let (client, _) = serve(
        &sandbox,
        &[(
            "watcher",
            json!({"handlers": [{"event": "session_shutdown"}]}),
        )],
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
    let log = read_behave_log(&sandbox.behave_log());
    let shutdown = log
        .iter()
        .find(|l| l.tag == "session_shutdown")
        .unwrap_or_else(|| panic!("no session_shutdown: {log:?}"));
    assert_eq!(shutdown.value["reason"], "quit", "{log:?}");
}

#[test]
fn session_before_events_short_circuit_on_cancel() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[
            (
                "keeper",
                json!({"handlers": [{"event": "session_before_switch", "result": {"cancel": true}}]}),
            ),
            (
                "later",
                json!({"handlers": [{"event": "session_before_switch"}]}),
            ),
        ],
    );
    let cancelled = event(
        &mut client,
        "1",
        "session_before_switch",
        json!({"reason": "resume", "targetSessionFile": "/tmp/other.jsonl"}),
    );
    assert_eq!(cancelled["result"]["cancel"], true, "{cancelled}");
    client.close();
    let log = read_behave_log(&sandbox.behave_log());
    assert!(
        !log.iter()
            .any(|l| l.plugin == "later" && l.tag == "session_before_switch"),
        "the chain stopped at the cancel: {log:?}"
    );
}

#[test]
fn before_agent_start_and_context_answer_the_chains_results() {
    let sandbox = Sandbox::new();
    let replaced = json!([{"role": "user", "content": "only this", "timestamp": 1}]);
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "shaper",
            json!({"handlers": [
                {"event": "before_agent_start", "result": {"systemPrompt": "be brief"}},
                {"event": "context", "result": {"messages": replaced}}
            ]}),
        )],
    );
    let start = event(
        &mut client,
        "1",
        "before_agent_start",
        json!({"prompt": "hi", "systemPrompt": "base"}),
    );
    assert_eq!(start["result"]["systemPrompt"], "be brief", "{start}");
    let context = event(
        &mut client,
        "2",
        "context",
        json!({"messages": [{"role": "user", "content": "a", "timestamp": 0}]}),
    );
    assert_eq!(context["result"]["messages"], replaced, "{context}");
    client.close();
}

#[test]
fn a_plugin_tool_runs_with_exec_served_by_serve_itself() {
    let sandbox = Sandbox::new();
    let plugin = pi_hooks_tests::c_fixture(&sandbox.lib(), "exec_bash", &[]);
    let mut client =
        Client::start(sandbox.command(&["serve", "--no-hooks", "-e", plugin.to_str().unwrap()]));
    let hello = client.next_line();
    assert_eq!(hello["plugins"][0]["tools"][0]["name"], "bash", "{hello}");
    client.send(
        &json!({"type": "tool", "id": "t", "name": "bash", "toolCallId": "call-1",
        "params": {"command": "echo hi; echo var=$CUSTOM_VAR; pwd"}}),
    );
    let done = answer(&mut client, "t");
    assert_eq!(done["type"], "result", "{done}");
    let project = std::fs::canonicalize(sandbox.project()).unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("hi\nvar=1\n{}\n", project.display()),
        "{done}"
    );
    client.send(&json!({"type": "tool", "id": "u", "name": "no-such-tool"}));
    let missing = answer(&mut client, "u");
    assert_eq!(missing["type"], "error", "{missing}");
    assert!(
        missing["error"].as_str().unwrap().contains("no-such-tool"),
        "{missing}"
    );
    client.close();
}

#[test]
fn stdin_closed_while_a_dialog_waits_does_not_hang_and_exits_zero() {
    let sandbox = Sandbox::new();
    let plugin = c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command");
    let mut client =
        Client::start(sandbox.command(&["serve", "--no-hooks", "-e", plugin.to_str().unwrap()]));
    client.next_line();
    client.send(&json!({"type": "command", "id": "d", "name": "deploy", "args": ""}));
    let (_, dialog) = client.until(|l| l["type"] == "request");
    assert_eq!(dialog["params"]["method"], "confirm", "{dialog}");
    // The waiting dialog answers its default, the command returns, the shutdown follows: no
    // hang (`close` fails the test when the process does not exit within its deadline).
    let (status, rest) = client.close();
    assert_eq!(status.code(), Some(0), "{rest:?}");
}

#[test]
fn reload_reloads_the_plugins_with_the_hot_reload_events() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "reloaded",
            json!({"handlers": [{"event": "session_shutdown"}]}),
        )],
    );
    client.send(&json!({"type": "reload", "id": "r"}));
    let done = answer(&mut client, "r");
    assert_eq!(done["type"], "result", "{done}");
    let plugins = done["result"]["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1, "{done}");
    assert_eq!(plugins[0]["name"], "reloaded", "{done}");
    assert_eq!(done["result"]["errors"], json!([]), "{done}");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
    let reasons: Vec<Value> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "session_shutdown")
        .map(|l| l.value["reason"].clone())
        .collect();
    assert_eq!(reasons, vec![json!("reload"), json!("quit")]);
}

/// A plugin rendering `note` messages as `["NOTE: <content>"]` (and `"(expanded)"`).
const RENDERER: &str = r#"
#include <stdio.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus note(void *user_data, const PiValue *message, const PiValue *options,
                     PiResult *result) {
    char json[512];
    PiStr content = {NULL, 0};
    bool expanded = false;
    (void)user_data;
    host->values->as_str(host->values->get(message, pi_str("content")), &content);
    host->values->as_bool(host->values->get(options, pi_str("expanded")), &expanded);
    if (content.len > 200) content.len = 200;
    snprintf(json, sizeof json, expanded ? "[\"NOTE: %.*s\", \"(expanded)\"]" : "[\"NOTE: %.*s\"]",
             (int)content.len, content.ptr);
    return host->results->set_json(result, pi_str(json));
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiRendererDef def;
    host = h;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.custom_type = pi_str("note");
    def.render = note;
    return host->registry->register_message_renderer(plugin, &def);
}

PI_HOOKS_PLUGIN("renderer", "1.0.0", "renders note messages", init, NULL);
"#;

#[test]
fn render_gives_the_renderers_lines_and_null_for_other_types() {
    let sandbox = Sandbox::new();
    let (mut client, hello) = serve_c(&sandbox, "renderer", RENDERER);
    assert_eq!(hello["plugins"][0]["renderers"], json!(["note"]), "{hello}");
    client.send(&json!({"type": "render", "id": "a", "expanded": true,
        "message": {"role": "custom", "customType": "note", "content": "hi"}}));
    let lines = answer(&mut client, "a");
    assert_eq!(
        lines["result"],
        json!({"lines": ["NOTE: hi", "(expanded)"]}),
        "{lines}"
    );
    client.send(&json!({"type": "render", "id": "b",
        "message": {"role": "custom", "customType": "other", "content": "hi"}}));
    let other = answer(&mut client, "b");
    assert_eq!(other["result"], json!({"lines": null}), "{other}");
    client.send(&json!({"type": "render", "id": "c"}));
    let missing = answer(&mut client, "c");
    assert_eq!(missing["type"], "error", "{missing}");
    client.close();
}

/// Sends `request` and answers the plugin's `is_idle` requests (true) until its answer.
fn answering_is_idle(client: &mut Client, request: Value) -> Value {
    let id = request["id"].clone();
    client.send(&request);
    loop {
        let line = client.next_line();
        if line["type"] == "request" && line["method"] == "is_idle" {
            client.send(&json!({"type": "response", "id": line["id"], "result": true}));
        } else if (line["type"] == "result" || line["type"] == "error") && line["id"] == id {
            return line;
        }
    }
}

#[test]
fn an_event_s_context_sets_the_session_file_and_whether_plugins_have_a_ui() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "ctx",
            json!({"handlers": [{"event": "agent_start", "log_ctx": true}]}),
        )],
    );
    let start = |id: &str, context: Value| json!({"type": "event", "id": id, "name": "agent_start", "payload": {}, "context": context});
    answering_is_idle(&mut client, start("1", Value::Null));
    let set = answering_is_idle(
        &mut client,
        start("2", json!({"sessionFile": "/s/one.jsonl", "hasUI": false})),
    );
    assert_eq!(set["type"], "result", "{set}");
    // What a context set stays until another context changes it.
    answering_is_idle(&mut client, start("3", Value::Null));
    answering_is_idle(
        &mut client,
        start("4", json!({"sessionFile": null, "hasUI": true})),
    );
    let bad = answering_is_idle(&mut client, start("5", json!({"hasUI": "yes"})));
    assert_eq!(bad["type"], "error", "{bad}");
    assert_eq!(bad["error"], "context.hasUI must be a boolean, got \"yes\"");
    client.close();
    let seen: Vec<(Value, Value)> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "agent_start:ctx")
        .map(|l| (l.value["sessionFile"].clone(), l.value["hasUI"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (Value::Null, json!(true)),
            (json!("/s/one.jsonl"), json!(false)),
            (json!("/s/one.jsonl"), json!(false)),
            (Value::Null, json!(true)),
        ]
    );
}

/// A plugin with the boolean flag `plan` that notifies `plan=<value>` in `session_start`.
const FLAGGED: &str = r#"
#include <stdio.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

static PiStatus on_start(void *u, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiValue *value = NULL;
    PiStr json = pi_str("null");
    char text[64];
    (void)u; (void)event; (void)result;
    host->actions->get_flag(self, pi_str("plan"), &value);
    if (value != NULL) host->values->to_json(value, &json);
    snprintf(text, sizeof text, "plan=%.*s", (int)json.len, json.ptr);
    if (value != NULL) host->values->free(value);
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiFlagDef flag;
    host = h;
    self = plugin;
    memset(&flag, 0, sizeof flag);
    flag.struct_size = sizeof flag;
    flag.kind = PI_FLAG_BOOLEAN;
    flag.name = pi_str("plan");
    flag.description = pi_str("Start in plan mode");
    flag.default_json = pi_str("false");
    host->registry->register_flag(plugin, &flag);
    return host->registry->on(plugin, pi_str("session_start"), on_start, NULL);
}

PI_HOOKS_PLUGIN("flagged", "1.0.0", "has a flag", init, NULL);
"#;

#[test]
fn flags_give_the_plugins_flag_values_from_the_client_s_command_line() {
    let sandbox = Sandbox::new();
    let (mut client, hello) = serve_c(&sandbox, "flagged", FLAGGED);
    assert_eq!(
        hello["plugins"][0]["flags"],
        json!([{"name": "plan", "type": "boolean", "description": "Start in plan mode", "default": false}])
    );
    let plan = |client: &mut Client, id: &str| {
        client.send(&json!({"type": "event", "id": id, "name": "session_start",
            "payload": {"reason": "startup"}}));
        let (lines, _) = client.until(|l| l["type"] == "result" && l["id"] == id);
        lines
            .iter()
            .find(|l| l["method"] == "ui")
            .map(|l| l["params"]["message"].clone())
            .unwrap_or_default()
    };
    assert_eq!(plan(&mut client, "1"), "plan=false");
    client.send(&json!({"type": "flags", "id": "f", "values": {"plan": true}}));
    assert_eq!(answer(&mut client, "f")["result"], json!({}));
    assert_eq!(plan(&mut client, "2"), "plan=true");
    client.send(&json!({"type": "flags", "id": "g", "values": {"plan": 3}}));
    let bad = answer(&mut client, "g");
    assert_eq!(
        bad["error"],
        "flag \"plan\": a value must be a boolean or a string, got 3"
    );
    client.close();
}

#[test]
fn reload_of_one_plugin_leaves_the_others_and_describes_the_set() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[
            (
                "first",
                json!({"handlers": [{"event": "session_shutdown"}]}),
            ),
            (
                "second",
                json!({"handlers": [{"event": "session_shutdown"}, {"event": "tool_call"}]}),
            ),
        ],
    );
    client.send(&json!({"type": "reload", "id": "r", "plugin": "second"}));
    let done = answer(&mut client, "r");
    assert_eq!(done["type"], "result", "{done}");
    let plugins = done["result"]["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 2, "{done}");
    assert_eq!(plugins[1]["name"], "second");
    assert_eq!(
        plugins[1]["events"],
        json!(["session_shutdown", "tool_call"])
    );
    client.send(&json!({"type": "reload", "id": "x", "plugin": "nobody"}));
    let missing = answer(&mut client, "x");
    assert_eq!(
        missing["error"],
        "no loaded plugin has the path or name \"nobody\" (see hello's plugins)"
    );
    client.close();
    let shutdowns: Vec<(String, Value)> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "session_shutdown")
        .map(|l| (l.plugin, l.value["reason"].clone()))
        .collect();
    assert_eq!(
        shutdowns,
        [
            ("second".to_owned(), json!("reload")),
            ("first".to_owned(), json!("quit")),
            ("second".to_owned(), json!("quit")),
        ]
    );
}

#[test]
fn a_session_shutdown_from_the_client_is_the_only_one_the_plugins_get() {
    let sandbox = Sandbox::new();
    let (mut client, _) = serve(
        &sandbox,
        &[("once", json!({"handlers": [{"event": "session_shutdown"}]}))],
    );
    event(
        &mut client,
        "1",
        "session_shutdown",
        json!({"reason": "reload"}),
    );
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
    let reasons: Vec<Value> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "session_shutdown")
        .map(|l| l.value["reason"].clone())
        .collect();
    assert_eq!(reasons, [json!("reload")]);
}

#[test]
fn a_slow_handler_times_out_with_an_error_line_and_the_answer_still_comes() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        r#"{"hookTimeout": 200}"#,
    )
    .unwrap();
    let (mut client, _) = serve(
        &sandbox,
        &[(
            "slow",
            json!({"handlers": [{"event": "agent_end", "sleep_ms": 3000}]}),
        )],
    );
    let started = std::time::Instant::now();
    client.send(
        &json!({"type": "event", "id": "1", "name": "agent_end", "payload": {"messages": []}}),
    );
    let (lines, done) = client.until(|l| l["type"] == "result" && l["id"] == "1");
    assert!(
        started.elapsed() < std::time::Duration::from_millis(2500),
        "waited for the whole handler"
    );
    assert_eq!(done["result"], Value::Null);
    let error = lines
        .iter()
        .find(|l| l["type"] == "extension_error")
        .unwrap_or_else(|| panic!("no extension_error in {lines:?}"));
    assert_eq!(error["event"], "agent_end");
    assert!(
        error["extensionPath"]
            .as_str()
            .unwrap()
            .ends_with("libbehave_slow.so"),
        "{error}"
    );
    client.close();
}

#[test]
fn a_plugin_segfault_ends_serve_naming_the_plugin_and_the_event() {
    let sandbox = Sandbox::new();
    let plugin = pi_hooks_tests::c_fixture(&sandbox.lib(), "segv_on_crash", &[]);
    let mut child = sandbox
        .command(&["serve", "--no-hooks", "-e", plugin.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let line = json!({"type": "event", "id": 1, "name": "tool_call",
            "payload": {"toolCallId": "t", "toolName": "bash", "input": {"command": "crash"}}});
        writeln!(stdin, "{line}").unwrap();
        // Closed: a serve that did not crash would end its queue and exit 0, never hang.
    }
    let output = child.wait_with_output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(output.status.signal(), Some(11), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("plugin \"segv-on-crash\"")
            && stderr.contains("crashed with SIGSEGV while handling event tool_call"),
        "{stderr}"
    );
    // The hello went out; no result for the request that crashed.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
}

#[test]
fn a_pinned_file_loads_only_with_the_checked_bytes() {
    let sandbox = Sandbox::new();
    let plugin = c_example_plugin(&sandbox.lib(), "confirm-command", "confirm_command");
    let sha = pi_hooks_host::plugin_files::trust::sha256_hex(&std::fs::read(&plugin).unwrap());
    let hello = |pin: &str| {
        let mut client = Client::start(sandbox.command(&[
            "serve",
            "--no-hooks",
            "--pin-sha256",
            pin,
            "-e",
            plugin.to_str().unwrap(),
        ]));
        let hello = client.next_line();
        client.close();
        hello
    };
    let good = hello(&sha);
    assert_eq!(good["plugins"][0]["name"], "confirm-command", "{good}");
    let other = "0".repeat(64);
    let bad = hello(&other);
    assert_eq!(bad["plugins"], json!([]), "{bad}");
    let error = bad["errors"][0]["error"].as_str().unwrap();
    assert_eq!(
        error,
        format!(
            "its bytes changed since the host checked them (SHA-256 {sha} now, {other} checked); it was not loaded"
        )
    );
}
