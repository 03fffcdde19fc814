//! The hook trace (`--trace`, `PI_HOOKS_TRACE`): real `pi-hooks` runs with real example
//! plugins (permission-gate in Rust; block-sudo, redact-aws-keys and counter in C) and a C
//! probe written here, read back from stderr: which plugins each event called in order, what
//! each decided (a block with its reason, a tool_result patch, an input transform, an error, a
//! time-out), the UI calls and actions of a command in print mode, the load and init times;
//! the text form; nothing when the trace is off; stdout left to the protocol in RPC mode.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::{Sandbox, c_example_plugin, compile_c_text, output_within, rust_plugin};
use serde_json::{Value, json};

/// A C plugin that shows the decisions the examples do not: its `input` handler transforms
/// the prompt, its `session_start` handler fails, its `agent_end` handler overruns the
/// `hookTimeout` of 300 ms the tests set, its `tool_call` handler returns nothing, and its
/// `/ask` command asks a confirmation.
const PROBE: &str = r#"
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus on_input(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)ctx;
    return host->results->set_json(result,
        pi_str("{\"action\":\"transform\",\"text\":\"rewritten by probe\"}"));
}

static PiStatus on_session_start(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)result;
    host->context->set_error(ctx, pi_str("probe failed on purpose"));
    return PI_ERR;
}

static PiStatus on_agent_end(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    struct timespec pause = {1, 200000000};
    (void)ud; (void)event; (void)ctx; (void)result;
    nanosleep(&pause, NULL);
    return PI_OK;
}

static PiStatus on_tool_call(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)ctx; (void)result;
    return PI_OK;
}

static PiStatus ask(void *ud, PiStr args, PiContext *ctx) {
    bool yes = true;
    (void)ud; (void)args;
    return host->ui->confirm(ctx, pi_str("Proceed?"), pi_str("the probe asks"), NULL, &yes);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef def;
    host = h;
    if (host->registry->on(plugin, pi_str("input"), on_input, NULL) != PI_OK) return PI_ERR;
    if (host->registry->on(plugin, pi_str("session_start"), on_session_start, NULL) != PI_OK) return PI_ERR;
    if (host->registry->on(plugin, pi_str("agent_end"), on_agent_end, NULL) != PI_OK) return PI_ERR;
    if (host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL) != PI_OK) return PI_ERR;
    memset(&def, 0, sizeof def);
    def.struct_size = sizeof def;
    def.name = pi_str("ask");
    def.description = pi_str("asks a confirmation");
    def.handler = ask;
    return host->registry->register_command(plugin, &def);
}

PI_HOOKS_PLUGIN("probe", "1.0.0", "trace test probe", init, NULL);
"#;

/// The plugins, in load order: probe, permission-gate, block-sudo, redact-aws-keys, counter.
struct Plugins {
    probe: PathBuf,
    gate: PathBuf,
    sudo: PathBuf,
    redact: PathBuf,
    counter: PathBuf,
}

impl Plugins {
    fn build(sandbox: &Sandbox) -> Self {
        let lib = sandbox.lib();
        std::fs::create_dir_all(&lib).expect("lib folder");
        Plugins {
            probe: compile_c_text(&lib, "libprobe", PROBE, &[]),
            gate: rust_plugin("permission-gate"),
            sudo: c_example_plugin(&lib, "block-sudo-c", "block_sudo"),
            redact: c_example_plugin(&lib, "redact-aws-keys-c", "redact_aws_keys"),
            counter: c_example_plugin(&lib, "counter-c", "counter"),
        }
    }

    fn all(&self) -> [&Path; 5] {
        [
            &self.probe,
            &self.gate,
            &self.sudo,
            &self.redact,
            &self.counter,
        ]
    }
}

/// The script: an `rm -rf` (the gate blocks it), then an `echo` of an AWS key id (redacted
/// in the result), then a last text.
fn script(sandbox: &Sandbox) -> PathBuf {
    sandbox.script(&json!({"turns": [
        {"text": "Cleaning.", "toolCalls": [{"name": "bash", "arguments": {"command": "rm -rf ${CWD}/nothing-here"}}]},
        {"text": "Printing.", "toolCalls": [{"name": "bash", "arguments": {"command": "echo AKIAIOSFODNN7EXAMPLE"}}]},
        {"text": "Done."}
    ]}))
}

/// `pi-hooks run --mode json` with the plugins and `hookTimeout` 300 ms, prompts `/ask`,
/// "please go" and `/count` (`/ask` first: after its `agent_end` overran, the probe gets no
/// call until that one returns), plus `extra` arguments, run with `env`.
fn run(sandbox: &Sandbox, plugins: &[&Path], extra: &[&str], env: &[(&str, &str)]) -> Output {
    run_with_timeout(sandbox, plugins, extra, env, 300)
}

/// [`run`] with `hookTimeout` `timeout_ms` (a plugin's load runs under it too: an isolated
/// plugin's child process needs more than 300 ms on a loaded machine).
fn run_with_timeout(
    sandbox: &Sandbox,
    plugins: &[&Path],
    extra: &[&str],
    env: &[(&str, &str)],
    timeout_ms: u64,
) -> Output {
    std::fs::create_dir_all(sandbox.agent_dir()).expect("agent dir");
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        format!(r#"{{"hookTimeout": {timeout_ms}}}"#),
    )
    .expect("settings");
    let script = script(sandbox);
    let mut args: Vec<String> = ["run", "--mode", "json", "--no-session", "--script"]
        .map(str::to_owned)
        .into();
    args.push(script.display().to_string());
    for plugin in plugins {
        args.push("--hook".into());
        args.push(plugin.display().to_string());
    }
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args.extend(["/ask", "please go", "/count"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = sandbox.command(&args);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = output_within(command, Duration::from_secs(60));
    assert!(
        output.status.success(),
        "the run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The JSON trace records on stderr, in order.
fn records(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("{\"trace\":"))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The handler records of each dispatch of `event`, in order, each with its summary record.
fn dispatches<'a>(records: &'a [Value], event: &str) -> Vec<(Vec<&'a Value>, &'a Value)> {
    let mut found = Vec::new();
    let mut handlers = Vec::new();
    for record in records.iter().filter(|r| r["event"] == event) {
        match record["trace"].as_str() {
            Some("handler") => handlers.push(record),
            Some("event") => found.push((std::mem::take(&mut handlers), record)),
            _ => {}
        }
    }
    found
}

fn plugin_names(handlers: &[&Value]) -> Vec<String> {
    handlers
        .iter()
        .map(|h| h["plugin"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn the_json_trace_names_each_plugin_call_its_decision_time_ui_calls_and_load_times() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let output = run(&sandbox, &plugins.all(), &[], &[("PI_HOOKS_TRACE", "json")]);
    let records = records(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);

    // Every plugin's load, with its load and init time, in load order.
    let loads: Vec<&Value> = records.iter().filter(|r| r["trace"] == "load").collect();
    let names: Vec<&str> = loads.iter().filter_map(|r| r["plugin"].as_str()).collect();
    assert_eq!(
        names,
        [
            "probe",
            "permission-gate",
            "block-sudo",
            "redact-aws-keys",
            "counter"
        ],
        "{stderr}"
    );
    for load in &loads {
        assert_eq!(load["decision"], "loaded", "{load}");
        assert!(
            load["micros"].is_u64() && load["initMicros"].is_u64(),
            "{load}"
        );
        assert!(
            load["micros"].as_u64() >= load["initMicros"].as_u64(),
            "{load}"
        );
        assert!(load["time"].is_string(), "{load}");
    }

    // An error: session_start's handler failed, and the trace says with what.
    let (handlers, _) = &dispatches(&records, "session_start")[0];
    assert_eq!(handlers[0]["plugin"], "probe");
    assert_eq!(handlers[0]["decision"], "error");
    assert_eq!(handlers[0]["error"], "probe failed on purpose");

    // A transform: the input handler rewrote the prompt.
    let (handlers, _) = &dispatches(&records, "input")[0];
    assert_eq!(handlers[0]["decision"], "transformed");
    assert_eq!(handlers[0]["detail"], "rewritten by probe");

    // tool_call, in load order: the rm -rf stops at the gate (block-sudo is not called), the
    // echo passes all three.
    let calls = dispatches(&records, "tool_call");
    assert_eq!(calls.len(), 2, "{stderr}");
    let (rm, rm_summary) = &calls[0];
    assert_eq!(plugin_names(rm), ["probe", "permission-gate"]);
    assert_eq!(rm[0]["decision"], "nothing");
    assert_eq!(rm[1]["decision"], "blocked");
    assert!(
        rm[1]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("Blocked dangerous command") && r.contains("rm -rf")),
        "{}",
        rm[1]
    );
    assert!(
        rm[1]["path"]
            .as_str()
            .unwrap()
            .ends_with("libpermission_gate.so")
    );
    assert!(rm.iter().all(|h| h["micros"].is_u64()));
    assert_eq!(
        (
            rm_summary["handlers"].as_u64(),
            rm_summary["called"].as_u64()
        ),
        (Some(3), Some(2))
    );
    let (echo, echo_summary) = &calls[1];
    assert_eq!(
        plugin_names(echo),
        ["probe", "permission-gate", "block-sudo"]
    );
    assert!(echo.iter().all(|h| h["decision"] == "nothing"), "{echo:?}");
    assert_eq!(echo_summary["called"], 3);

    // A patch: redact-aws-keys replaced the echo's content (a blocked call has no
    // tool_result).
    let results = dispatches(&records, "tool_result");
    assert_eq!(results.len(), 1, "{stderr}");
    assert_eq!(results[0].0[0]["plugin"], "redact-aws-keys");
    assert_eq!(results[0].0[0]["decision"], "patched");
    assert_eq!(results[0].0[0]["detail"], "content");

    // A time-out: agent_end's handler overran hookTimeout.
    let (handlers, _) = &dispatches(&records, "agent_end")[0];
    assert_eq!(handlers[0]["decision"], "timeout");
    assert_eq!(handlers[0]["error"], "timed out after 300ms");

    // A command in print mode: the call, its appendEntry and its notify, which no UI shows.
    let command = records
        .iter()
        .find(|r| r["trace"] == "command" && r["name"] == "count")
        .expect("the /count call");
    assert_eq!(
        (&command["plugin"], &command["decision"]),
        (&json!("counter"), &json!("ok"))
    );
    let entry = records
        .iter()
        .find(|r| r["trace"] == "action" && r["action"] == "appendEntry")
        .expect("appendEntry");
    assert_eq!(entry["during"], "command /count");
    assert_eq!(entry["args"]["data"], json!({"count": 1}));
    assert_eq!(entry["decision"], "ok");
    let notify = records
        .iter()
        .find(|r| r["trace"] == "ui" && r["method"] == "notify" && r["during"] == "command /count")
        .expect("the command's notify");
    assert_eq!(notify["plugin"], "counter");
    assert_eq!(
        notify["args"],
        json!({"message": "count: 1", "notifyType": "info"})
    );
    assert_eq!(notify["shown"], false);

    // A dialog without a UI: the answer the plugin got is the default.
    let confirm = records
        .iter()
        .find(|r| r["trace"] == "ui" && r["method"] == "confirm")
        .expect("the /ask confirmation");
    assert_eq!(
        (&confirm["plugin"], &confirm["answer"], &confirm["shown"]),
        (&json!("probe"), &json!(false), &json!(false))
    );
    assert_eq!(confirm["args"]["title"], "Proceed?");

    // stdout is the JSON mode's event stream, untouched.
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let value: Value = serde_json::from_str(line).expect("stdout lines are JSON");
        assert!(
            value.get("trace").is_none(),
            "a trace record on stdout: {line}"
        );
    }
}

#[test]
fn the_text_trace_reads_as_sentences() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let output = run(
        &sandbox,
        &[&plugins.gate, &plugins.counter],
        &["--trace"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("trace: "))
        .collect();
    let has = |start: &str, rest: &str| {
        lines
            .iter()
            .any(|line| line.starts_with(start) && line.contains(rest))
    };
    assert!(
        has(
            "trace: load permission-gate (libpermission_gate.so) ",
            ": loaded (init "
        ),
        "{stderr}"
    );
    assert!(
        has(
            "trace: tool_call -> permission-gate (libpermission_gate.so) ",
            ": blocked \"Blocked dangerous command (no UI to ask): rm -rf "
        ),
        "{stderr}"
    );
    assert!(
        lines.contains(&"trace: ui notify <- counter (libcounter.so) during command /count: message=\"count: 1\", notifyType=\"info\" [no UI in this mode: not shown]"),
        "{stderr}"
    );
    assert!(
        has(
            "trace: action appendEntry <- counter (libcounter.so) during command /count: customType=\"counter\", data={\"count\":1} -> ok",
            ""
        ),
        "{stderr}"
    );
    assert!(
        has("trace: command /count -> counter (libcounter.so) ", ": ok"),
        "{stderr}"
    );
    assert!(
        has("trace: tool_call done in ", ": 1 of 1 handlers called"),
        "{stderr}"
    );
    assert!(!stderr.contains("{\"trace\""), "text, not JSON: {stderr}");
}

#[test]
fn with_the_trace_off_stderr_has_none_of_it() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    for env in [&[][..], &[("PI_HOOKS_TRACE", "0")][..]] {
        let output = run(&sandbox, &plugins.all(), &[], env);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("trace: ") && !stderr.contains("{\"trace\""),
            "{env:?}: {stderr}"
        );
        // The run itself reported what it always did.
        assert!(
            stderr.contains("Extension error (") && stderr.contains("probe failed on purpose"),
            "{stderr}"
        );
    }
}

#[test]
fn the_trace_file_takes_the_trace_instead_of_stderr() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let file = sandbox.root().join("trace.jsonl");
    let file_text = file.display().to_string();
    let output = run(
        &sandbox,
        &[&plugins.gate],
        &["--trace=json"],
        &[("PI_HOOKS_TRACE_FILE", &file_text)],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("{\"trace\""), "{stderr}");
    let written = std::fs::read_to_string(&file).expect("the trace file");
    let blocked = written
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line"))
        .find(|r| r["trace"] == "handler" && r["decision"] == "blocked");
    assert!(blocked.is_some(), "{written}");
}

#[test]
fn in_rpc_mode_stdout_stays_the_protocol_and_dialog_answers_are_traced() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let script = script(&sandbox);
    let stderr_path = sandbox.root().join("stderr.txt");
    let stderr = std::fs::File::create(&stderr_path).expect("stderr file");
    let command = sandbox.command(&[
        "rpc",
        "--no-session",
        "--trace=json",
        "--script",
        script.to_str().unwrap(),
        "--hook",
        plugins.gate.to_str().unwrap(),
        "--hook",
        plugins.counter.to_str().unwrap(),
    ]);
    let mut client = RpcClient::start_with_stderr(command, Stdio::from(stderr));
    client.send(&json!({"type": "prompt", "id": "1", "message": "go"}));
    // The gate asks about the rm -rf; the answer is No.
    let select = client
        .until(|l| l["type"] == "extension_ui_request" && l["method"] == "select")
        .1;
    client.send(&json!({"type": "extension_ui_response", "id": select["id"], "value": "No"}));
    client.until(|l| l["type"] == "agent_end");
    client.send(&json!({"type": "prompt", "id": "2", "message": "/count"}));
    client.until(|l| l["type"] == "extension_ui_request" && l["method"] == "notify");
    // Every stdout line is the protocol's (JSON with a `type`), none a trace record; no
    // protocol line went to stderr.
    let mut stdout: Vec<Value> = client
        .seen
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let (status, rest) = client.close();
    assert!(status.success());
    stdout.extend(rest);
    for line in &stdout {
        assert!(
            line["type"].is_string() && line.get("trace").is_none(),
            "{line}"
        );
    }
    for line in &client_lines(&stderr_path) {
        assert!(
            line.starts_with("{\"trace\":") || !line.starts_with('{'),
            "{line}"
        );
    }
    let records: Vec<Value> = client_lines(&stderr_path)
        .iter()
        .filter(|l| l.starts_with("{\"trace\":"))
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let select = records
        .iter()
        .find(|r| r["trace"] == "ui" && r["method"] == "select")
        .expect("the gate's select");
    assert_eq!(
        (&select["plugin"], &select["answer"], &select["shown"]),
        (&json!("permission-gate"), &json!("No"), &json!(true))
    );
    assert!(select["micros"].is_u64());
    let blocked = records
        .iter()
        .find(|r| r["trace"] == "handler" && r["event"] == "tool_call")
        .expect("the tool_call");
    assert_eq!(
        (&blocked["decision"], &blocked["reason"]),
        (&json!("blocked"), &json!("Blocked by user"))
    );
    let notify = records
        .iter()
        .find(|r| r["trace"] == "ui" && r["method"] == "notify" && r["during"] == "command /count")
        .expect("the command's notify");
    assert_eq!(notify["shown"], true);
}

/// The lines of a file the host's stderr went to.
fn client_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("stderr file")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn list_shows_load_and_init_times() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let gate = plugins.gate.to_str().unwrap();
    let report = sandbox.list_json(&["--hook", gate]);
    let plugin = &report["plugins"][0];
    assert!(
        plugin["loadMicros"].as_u64() >= plugin["initMicros"].as_u64()
            && plugin["loadMicros"].as_u64() > Some(0),
        "{plugin}"
    );
    let plain = sandbox.run(&["list", "--hook", gate]);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("loaded in"));
    let timed = sandbox.run(&["list", "--trace", "--hook", gate]);
    let stdout = String::from_utf8_lossy(&timed.stdout);
    assert!(
        stdout.contains("     loaded in ") && stdout.contains(" ms (init "),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&timed.stderr).contains("trace: load permission-gate"),
        "{}",
        String::from_utf8_lossy(&timed.stderr)
    );
}

#[test]
fn in_the_interactive_mode_trace_lines_are_conversation_lines() {
    use pi_hooks_tests::pty::{Pty, WAIT, keys};
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let script = script(&sandbox);
    let mut pty = Pty::start(
        &sandbox,
        &[
            "--trace",
            "--no-session",
            "--no-hooks",
            "--script",
            script.to_str().unwrap(),
            "-e",
            plugins.counter.to_str().unwrap(),
        ],
        30,
        120,
    );
    // (The load's lines come before the screen is taken: they are on the terminal the mode
    // returns to.)
    pty.wait_for_text("trace: session_start -> counter (libcounter.so) ");
    pty.type_text("/count");
    pty.wait_for("/count typed", WAIT, |s| s.contains("/count"));
    pty.send(keys::ENTER.as_bytes());
    // The notification itself, and the trace's lines about it, each a line of its own.
    pty.wait_for("the command's trace", WAIT, |s| {
        s.contains("count: 1")
            && s.lines().any(|r| {
                r.starts_with("trace: ui notify <- counter (libcounter.so) during command /count")
            })
            && s.lines()
                .any(|r| r.starts_with("trace: command /count -> counter (libcounter.so) "))
    });
    pty.type_text("/quit");
    pty.send(keys::ENTER.as_bytes());
    let status = pty.wait_exit(Duration::from_secs(20));
    assert_eq!(status.exit_code(), 0, "{}", pty.screen_text());
    pty.assert_terminal_restored();
}

#[test]
fn an_isolated_plugins_calls_are_traced_once_by_the_host() {
    let sandbox = Sandbox::new();
    let plugins = Plugins::build(&sandbox);
    let output = run_with_timeout(
        &sandbox,
        &[&plugins.gate, &plugins.counter],
        &["--isolate"],
        &[("PI_HOOKS_TRACE", "json")],
        10_000,
    );
    let records = records(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The notify of /count came from the child as a request; the host traced it, once (the
    // child does not trace).
    let notifies: Vec<&Value> = records
        .iter()
        .filter(|r| r["trace"] == "ui" && r["during"] == "command /count")
        .collect();
    assert_eq!(notifies.len(), 1, "{stderr}");
    assert_eq!(notifies[0]["args"]["message"], "count: 1");
    // Each tool_call dispatch has one handler record, the proxy's, with the child's decision
    // ("/ask" is no command here: a prompt, whose run blocks the rm -rf again).
    let calls = dispatches(&records, "tool_call");
    assert_eq!(calls.len(), 4, "{stderr}");
    for (handlers, _) in &calls {
        assert_eq!(plugin_names(handlers), ["permission-gate"], "{stderr}");
    }
    let decisions: Vec<&Value> = calls.iter().map(|(h, _)| &h[0]["decision"]).collect();
    assert_eq!(decisions, ["blocked", "nothing", "blocked", "nothing"]);
}
