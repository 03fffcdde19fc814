//! pi's queueing rules for a plugin's `send_user_message`: while
//! the agent streams, a message with `deliverAs` goes through the `input` event (source
//! "extension") before it is queued; without one it is refused and reported as a
//! `<runtime>` error of `send_user_message`; when idle it becomes a prompt that is never taken
//! for a plugin command.

use pi_hooks_tests::{Sandbox, compile_c_text, json_lines, json_run_command};
use serde_json::{Value, json};

const SENDER: &str = r#"
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

/* tool_call: steer one message in, and try one without deliverAs (refused). */
static PiStatus on_tool_call(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)ctx; (void)result;
    host->actions->send_user_message(self, pi_str("steer me"), PI_DELIVER_STEER);
    host->actions->send_user_message(self, pi_str("no delivery"), PI_DELIVER_DEFAULT);
    return PI_OK;
}

/* input: rewrites "steer me"; logs nothing else. */
static PiStatus on_input(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr text = {0}, source = {0};
    (void)ud; (void)ctx;
    host->values->as_str(host->values->get(event, pi_str("text")), &text);
    host->values->as_str(host->values->get(event, pi_str("source")), &source);
    if (text.len == 8 && memcmp(text.ptr, "steer me", 8) == 0 && source.len == 9 &&
        memcmp(source.ptr, "extension", 9) == 0) {
        return host->results->set_json(result,
            pi_str("{\"action\":\"transform\",\"text\":\"steered by extension input\"}"));
    }
    return PI_OK;
}

/* /again: sends "/again" as a user message, which must not run this command again. */
static int runs = 0;
static PiStatus again(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args; (void)ctx;
    runs++;
    if (runs > 1) return PI_ERR;
    return host->actions->send_user_message(self, pi_str("/again"), PI_DELIVER_DEFAULT);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    host = h;
    self = plugin;
    host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
    host->registry->on(plugin, pi_str("input"), on_input, NULL);
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("again");
    def.handler = again;
    return host->registry->register_command(plugin, &def);
}

PI_HOOKS_PLUGIN("sender", "1.0.0", "sends user messages", init, NULL);
"#;

fn user_texts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .map(|l| {
            l["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_message_sent_while_streaming_passes_input_and_one_without_delivery_is_refused() {
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(&sandbox.lib(), "sender", SENDER, &[]);
    let script = sandbox.root().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .unwrap();
    let output = json_run_command(&sandbox, &script, &[&plugin])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = json_lines(&output);
    assert_eq!(user_texts(&lines), ["go", "steered by extension input"]);
    let error = lines
        .iter()
        .find(|l| l["type"] == "extension_error")
        .expect("the refused message is reported");
    assert_eq!(
        error,
        &json!({"type": "extension_error", "extensionPath": "<runtime>", "event": "send_user_message",
                "error": "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."})
    );
}

#[test]
fn a_user_message_from_a_plugin_is_never_taken_for_a_command() {
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(&sandbox.lib(), "sender", SENDER, &[]);
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, json!({"turns": [{"text": "ok"}]}).to_string()).unwrap();
    let mut command = sandbox.command(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        script.to_str().unwrap(),
        "--hook",
        plugin.to_str().unwrap(),
        "/again",
    ]);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = json_lines(&output);
    assert_eq!(user_texts(&lines), ["/again"], "sent to the model as text");
    assert!(
        !lines.iter().any(|l| l["type"] == "extension_error"),
        "the command did not run twice: {lines:?}"
    );
}

const AGENT_END_SENDER: &str = r#"
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;
static int sent = 0;

/* agent_end: queue one follow-up (the first time only). */
static PiStatus on_agent_end(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)ctx; (void)result;
    if (sent++ == 0)
        host->actions->send_user_message(self, pi_str("from agent_end"), PI_DELIVER_FOLLOW_UP);
    return PI_OK;
}

/* input: says what it saw, as "input <source>: <text>". */
static PiStatus on_input(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr text = {0}, source = {0};
    char line[256];
    size_t n;
    (void)ud; (void)result;
    host->values->as_str(host->values->get(event, pi_str("text")), &text);
    host->values->as_str(host->values->get(event, pi_str("source")), &source);
    n = (size_t)0;
    memcpy(line + n, "input ", 6); n += 6;
    if (source.len > 64 || text.len > 128) return PI_OK;
    memcpy(line + n, source.ptr, source.len); n += source.len;
    memcpy(line + n, ": ", 2); n += 2;
    memcpy(line + n, text.ptr, text.len); n += text.len;
    return host->ui->notify(ctx, pi_str_n(line, n), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    self = plugin;
    host->registry->on(plugin, pi_str("agent_end"), on_agent_end, NULL);
    return host->registry->on(plugin, pi_str("input"), on_input, NULL);
}

PI_HOOKS_PLUGIN("agent-end-sender", "1.0.0", "sends a follow-up from agent_end", init, NULL);
"#;

/// pi 1.6: a `sendUserMessage` with `deliverAs: "followUp"` from an `agent_end` handler runs
/// its `input` event (source "extension") right after the handler and prints `queue_update`,
/// both before `agent_end`; the message then runs at once, as a run of its own
/// (`agent_start` ... `agent_end`), before the prompt settles (one `agent_settled`).
#[test]
fn a_follow_up_sent_in_agent_end_runs_at_once_before_the_prompt_settles() {
    use pi_hooks_tests::rpc_client::RpcClient;
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(&sandbox.lib(), "agent_end_sender", AGENT_END_SENDER, &[]);
    let script = sandbox.root().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"text": "first"}, {"text": "second"}, {"text": "third"}]}).to_string(),
    )
    .unwrap();
    let mut client = RpcClient::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
    ]));
    client.send(&json!({"id": "1", "type": "prompt", "message": "hello"}));
    let (mut lines, settled) = client.until(|l| l["type"] == "agent_settled");
    lines.push(settled);
    let tail: Vec<Value> = lines
        .iter()
        .filter(|l| {
            l["method"] == "notify"
                || ["queue_update", "agent_start", "agent_end", "agent_settled"]
                    .contains(&l["type"].as_str().unwrap_or_default())
        })
        .map(|l| match l["type"].as_str() {
            Some("extension_ui_request") => json!(l["message"]),
            _ => {
                let mut l = l.clone();
                l.as_object_mut().unwrap().remove("messages");
                l
            }
        })
        .collect();
    assert_eq!(
        tail,
        [
            json!("input rpc: hello"),
            json!({"type": "agent_start"}),
            json!("input extension: from agent_end"),
            json!({"type": "queue_update", "steering": [], "followUp": ["from agent_end"]}),
            json!({"type": "agent_end", "willRetry": false}),
            json!({"type": "agent_start"}),
            json!({"type": "queue_update", "steering": [], "followUp": []}),
            json!({"type": "agent_end", "willRetry": false}),
            json!({"type": "agent_settled", "aborted": false}),
        ],
        "{lines:#?}"
    );
    assert!(
        user_texts(&lines).contains(&"from agent_end".to_owned()),
        "the follow-up ran in this prompt's activity: {lines:#?}"
    );
    client.close();
}

const AGENT_END_LISTENER: &str = r#"
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus on_agent_end(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)result;
    return host->ui->notify(ctx, pi_str("listener: agent_end"), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("agent_end"), on_agent_end, NULL);
}

PI_HOOKS_PLUGIN("agent-end-listener", "1.0.0", "says when it sees agent_end", init, NULL);
"#;

/// pi runs the `input` event of a message an `agent_end` handler sends inside the send, so
/// it comes before the `agent_end` handlers of plugins loaded later, not after all of them.
#[test]
fn a_follow_up_s_input_runs_before_later_plugins_agent_end_handlers() {
    use pi_hooks_tests::rpc_client::RpcClient;
    let sandbox = Sandbox::new();
    let sender = compile_c_text(&sandbox.lib(), "agent_end_sender", AGENT_END_SENDER, &[]);
    let listener = compile_c_text(
        &sandbox.lib(),
        "agent_end_listener",
        AGENT_END_LISTENER,
        &[],
    );
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, json!({"turns": [{"text": "first"}]}).to_string()).unwrap();
    let mut client = RpcClient::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        sender.to_str().unwrap(),
        "-e",
        listener.to_str().unwrap(),
    ]));
    client.send(&json!({"id": "1", "type": "prompt", "message": "hello"}));
    let (lines, _) = client.until(|l| l["type"] == "agent_end");
    let notes: Vec<&str> = lines
        .iter()
        .filter(|l| l["method"] == "notify")
        .filter_map(|l| l["message"].as_str())
        .collect();
    assert_eq!(
        notes,
        [
            "input rpc: hello",
            "input extension: from agent_end",
            "listener: agent_end"
        ],
        "{lines:#?}"
    );
    client.close();
}

/// pi 1.6: a message a client queues while `agent_before_settle` handlers run (the run had
/// made its last look at the queue) continues the activity (`result.continue ||
/// hasQueuedMessages()`): a run of its own, then `agent_before_settle` again, then one
/// `agent_settled`. It used to stay queued, unseen, until the next prompt.
#[test]
fn a_follow_up_sent_while_agent_before_settle_runs_continues_before_the_prompt_settles() {
    use pi_hooks_tests::rpc_client::RpcClient;
    use pi_hooks_tests::{behave_command, read_behave_log};
    let sandbox = Sandbox::new();
    let script = sandbox.script(&json!({"turns": [{"text": "first"}, {"text": "second"}]}));
    let config = json!({"handlers": [{"event": "agent_before_settle", "sleep_ms": 800}]});
    let mut client = RpcClient::start(behave_command(
        &sandbox,
        &[("settle", config)],
        &[
            "rpc",
            "--no-session",
            "--no-hooks",
            "--script",
            script.to_str().unwrap(),
        ],
    ));
    client.send(&json!({"id": "1", "type": "prompt", "message": "hello"}));
    client.until(|l| l["type"] == "agent_end");
    // The handler has started (it logs, then sleeps): the follow-up comes while it runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !read_behave_log(&sandbox.behave_log())
        .iter()
        .any(|l| l.tag == "agent_before_settle")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "agent_before_settle never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    client.send(&json!({"id": "f", "type": "follow_up", "message": "late"}));
    let (mut lines, settled) = client.until(|l| l["type"] == "agent_settled");
    lines.push(settled);
    let response = lines
        .iter()
        .find(|l| l["id"] == "f")
        .expect("follow_up answered");
    assert_eq!(response["data"]["disposition"], "queued", "{response}");
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["type"].as_str())
        .filter(|t| ["agent_start", "agent_end", "agent_settled"].contains(t))
        .collect();
    assert_eq!(
        kinds,
        ["agent_start", "agent_end", "agent_settled"],
        "{lines:#?}"
    );
    assert_eq!(user_texts(&lines), ["late"], "{lines:#?}");
    let settles = read_behave_log(&sandbox.behave_log())
        .iter()
        .filter(|l| l.tag == "agent_before_settle")
        .count();
    assert_eq!(settles, 2, "agent_before_settle again after the late run");
    client.close();
}
