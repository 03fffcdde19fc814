//! The bridge speaks pi 1.6 (issue 33, items 3 and 7): the real pi 1.6.0 on node 22
//! (`tools::pi16`) with the bridge installed by `pi-hooks bridge install`, a fake
//! OpenAI-compatible model, and the `behave` C fixture (tests/fixtures/behave.c) as the native
//! plugin, logging every payload it gets:
//!
//! - `before_agent_start` reaches native plugins for both of pi 1.6's message types (a run a
//!   custom message started, `messageType: "custom"`, no `prompt`) with `systemPromptOptions`;
//! - `user_bash` answers in pi 1.6's shapes: the rewrite form runs through `{operations}`, a
//!   `{result}` is shown, and a failing native handler aborts the command (fail closed);
//! - `context->mode` is pi's real mode (RPC 3, JSON 2, print 1);
//! - a plugin that failed to load is reported on stderr in pi's JSON mode;
//! - `turn_end`'s context preview crosses to serve as `{canContinue}` unless
//!   `PI_HOOKS_BOUNDARY_CONTEXT=1`;
//! - serve passes pi's whole payloads (new fields) to plugins and their new result fields back.

use std::path::Path;
use std::time::Duration;

use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
use pi_hooks_tests::pi_e2e::{pi_command_of, pi_rpc_of, prepare};
use pi_hooks_tests::pty;
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::serve_client::{event, start as serve};
use pi_hooks_tests::tools::{Pi, pi16, pi073};
use pi_hooks_tests::{BehaveLine, Sandbox, behave_env_var, behave_plugin, read_behave_log};
use serde_json::{Value, json};

/// A model that always answers "ok".
fn model() -> FakeOpenAi {
    FakeOpenAi::start(|_| Reply::Text("ok".into()))
}

/// Compiles `behave` as `name`, drops it into pi's global extensions folder and gives the
/// environment pi needs for it (its configuration and the log).
fn native(sandbox: &Sandbox, name: &str, config: Value) -> Vec<(String, String)> {
    let library = behave_plugin(&sandbox.lib(), name);
    let file = library.file_name().unwrap().to_str().unwrap().to_owned();
    sandbox.install(&library, &sandbox.agent_dir().join("extensions"), &file);
    vec![
        (behave_env_var(name), config.to_string()),
        (
            "BEHAVE_LOG".into(),
            sandbox.behave_log().display().to_string(),
        ),
    ]
}

/// The logged calls of `tag`.
fn calls(log: &Path, tag: &str) -> Vec<BehaveLine> {
    read_behave_log(log)
        .into_iter()
        .filter(|l| l.tag == tag)
        .collect()
}

/// Sends a prompt; returns every line up to `agent_end`.
fn run(pi: &mut RpcClient, id: &str, message: &str) -> Vec<Value> {
    pi.send(&json!({"id": id, "type": "prompt", "message": message}));
    pi.until(|l| l["type"] == "agent_end").0
}

/// No `extension_error` among `lines` (a bridge handler that failed).
fn no_extension_error(lines: &[Value]) {
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "extension_error")
        .collect();
    assert!(errors.is_empty(), "extension errors: {errors:#?}");
}

#[test]
fn before_agent_start_reaches_native_plugins_for_user_and_custom_runs() {
    let pi = pi16();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let env = native(
        &sandbox,
        "starter",
        json!({"handlers": [
            {"event": "input", "if_contains": "kick",
             "send_message": {"customType": "kick", "content": "kicked off", "display": true},
             "send_message_options": {"triggerTurn": true},
             "result": {"action": "handled"}},
            {"event": "before_agent_start",
             "result": {"message": {"customType": "native-note", "content": "from the native plugin", "display": false}}}
        ]}),
    );
    let mut rpc = pi_rpc_of(&pi, &sandbox, &["--no-session"], &env);

    // A run started by a user prompt: messageType "user", the prompt, the prompt's options.
    let lines = run(&mut rpc, "1", "hello there");
    no_extension_error(&lines);
    // A run started by a custom message (pi.sendMessage with triggerTurn while idle).
    rpc.send(&json!({"id": "2", "type": "prompt", "message": "kick it"}));
    let (lines, _) = rpc.until(|l| l["type"] == "agent_end");
    no_extension_error(&lines);
    let (status, rest) = rpc.close();
    assert!(status.success(), "{status}");
    no_extension_error(&rest);

    let starts = calls(&sandbox.behave_log(), "before_agent_start");
    assert_eq!(starts.len(), 2, "{starts:#?}");
    let user = &starts[0].value;
    assert_eq!(user["messageType"], "user", "{user}");
    assert_eq!(user["prompt"], "hello there", "{user}");
    assert!(user["systemPromptOptions"].is_object(), "{user}");
    assert!(
        user["systemPrompt"].as_str().is_some_and(|p| !p.is_empty()),
        "{user}"
    );
    let custom = &starts[1].value;
    assert_eq!(custom["messageType"], "custom", "{custom}");
    assert!(custom.get("prompt").is_none(), "{custom}");
    assert_eq!(custom["message"]["customType"], "kick", "{custom}");
    assert_eq!(custom["message"]["content"], "kicked off", "{custom}");
    assert!(custom["systemPromptOptions"].is_object(), "{custom}");

    // The native plugin's message reached the model in both runs.
    let bodies = server.requests();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    for body in &bodies {
        assert!(
            body.to_string().contains("from the native plugin"),
            "{body}"
        );
    }
    assert!(
        bodies[1].to_string().contains("kicked off"),
        "{}",
        bodies[1]
    );
}

/// `{"type":"bash"}` through pi's RPC (pi 1.6 runs `user_bash` handlers for it); the response.
fn bash(rpc: &mut RpcClient, id: &str, command: &str) -> Value {
    rpc.send(&json!({"id": id, "type": "bash", "command": command}));
    rpc.response(id)
}

#[test]
fn user_bash_results_take_pi_16_s_shapes_and_a_native_error_fails_closed() {
    let pi = pi16();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let env = native(
        &sandbox,
        "shell",
        json!({"handlers": [
            {"event": "user_bash", "if_contains": "rewrite-me",
             "result": {"command": "echo rewritten var=$BRIDGE_VAR; pwd", "cwd": "/", "env": {"BRIDGE_VAR": "42"}}},
            {"event": "user_bash", "if_contains": "fail-me", "error": "no shell for you"},
            {"event": "user_bash", "if_contains": "handle-me",
             "result": {"result": {"output": "handled-by-native\n", "exitCode": 0, "cancelled": false, "truncated": false}}}
        ]}),
    );
    let mut rpc = pi_rpc_of(&pi, &sandbox, &["--no-session"], &env);

    // pi-hooks' rewrite form runs the rewritten command, in its folder, with its variables.
    let rewritten = bash(&mut rpc, "1", "echo rewrite-me");
    assert_eq!(rewritten["success"], true, "{rewritten}");
    let output = rewritten["data"]["output"].as_str().unwrap_or_default();
    assert!(output.contains("rewritten var=42"), "{rewritten}");
    assert!(output.lines().any(|l| l == "/"), "ran in /: {rewritten}");
    assert!(
        !output.contains("rewrite-me"),
        "the original ran: {rewritten}"
    );

    // A failing native handler aborts the command: the marker file is never made.
    let marker = sandbox.project().join("marker");
    let failed = bash(
        &mut rpc,
        "2",
        &format!("touch {}; echo fail-me", marker.display()),
    );
    assert_eq!(failed["success"], false, "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("no shell for you")),
        "{failed}"
    );
    assert!(!marker.exists(), "the command ran after a native error");

    // A native result is shown instead of running the command.
    let handled = bash(&mut rpc, "3", "echo handle-me");
    assert_eq!(handled["success"], true, "{handled}");
    assert_eq!(
        handled["data"]["output"], "handled-by-native\n",
        "{handled}"
    );

    // No handler result: the command runs as typed.
    let plain = bash(&mut rpc, "4", "echo plain");
    assert_eq!(plain["data"]["output"], "plain\n", "{plain}");
    let (status, _) = rpc.close();
    assert!(status.success(), "{status}");
}

/// The `session_start` handler that logs the plugin's context, and `turn_end`.
fn context_logger() -> Value {
    json!({"handlers": [
        {"event": "session_start", "log_ctx": true},
        {"event": "turn_end"}
    ]})
}

/// The `mode` the plugin read at `session_start`.
fn logged_mode(log: &Path) -> Value {
    let ctx = calls(log, "session_start:ctx");
    assert_eq!(ctx.len(), 1, "{ctx:#?}");
    ctx[0].value["mode"].clone()
}

#[test]
fn native_plugins_read_pi_s_mode_and_turn_end_s_context_is_cut_down() {
    let pi = pi16();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let env = native(&sandbox, "moder", context_logger());
    let mut rpc = pi_rpc_of(&pi, &sandbox, &["--no-session"], &env);
    let lines = run(&mut rpc, "1", "hi");
    no_extension_error(&lines);
    let (status, _) = rpc.close();
    assert!(status.success(), "{status}");
    assert_eq!(logged_mode(&sandbox.behave_log()), 3, "pi's RPC mode");

    // turn_end: every field of pi's but the context preview's arrays.
    let ends = calls(&sandbox.behave_log(), "turn_end");
    assert_eq!(ends.len(), 1, "{ends:#?}");
    let end = &ends[0].value;
    assert_eq!(end["turnIndex"], 0, "{end}");
    assert_eq!(end["message"]["role"], "assistant", "{end}");
    assert!(end["messageEntryId"].is_string(), "{end}");
    assert!(end["outcome"].is_string(), "{end}");
    let context = end["context"].as_object().expect("context object");
    assert_eq!(context.keys().collect::<Vec<_>>(), ["canContinue"], "{end}");
    assert!(context["canContinue"].is_boolean(), "{end}");
}

/// pi 1.6's TUI: native plugins read `PI_MODE_INTERACTIVE` (pi's `ctx.mode` "tui").
#[test]
fn pi_s_tui_is_the_interactive_mode() {
    let pi = pi16();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let env = native(&sandbox, "moder", context_logger());
    let mut command = pty::command_for(
        &pi.node,
        &sandbox,
        &[
            pi.cli.to_str().unwrap(),
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
        ],
    );
    let node_folder = pi.node.parent().unwrap().display().to_string();
    command.env(
        "PATH",
        format!(
            "{node_folder}:{}",
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    for (key, value) in [
        ("PI_OFFLINE", "1"),
        ("PI_SKIP_VERSION_CHECK", "1"),
        ("PI_TELEMETRY", "0"),
    ] {
        command.env(key, value);
    }
    command.env_remove("PI_HOOKS_BIN");
    for (key, value) in &env {
        command.env(key, value);
    }
    let tui = pty::Pty::spawn(command, 40, 120);
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while calls(&sandbox.behave_log(), "session_start:ctx").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no session_start in pi's TUI; screen:\n{}",
            tui.screen_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(logged_mode(&sandbox.behave_log()), 4, "pi's TUI");
    let ctx = &calls(&sandbox.behave_log(), "session_start:ctx")[0].value;
    assert_eq!(ctx["hasUI"], true, "{ctx}");
    drop(tui);
}

/// pi 0.73.1 keeps working: no `ctx.mode` there, so the mode follows `hasUI` (RPC), its
/// `before_agent_start` (no `messageType`) and `turn_end` (no context preview) pass as they are.
#[test]
fn pi_0_73_1_keeps_its_mode_rule_and_payloads() {
    let pi = pi073();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let env = native(
        &sandbox,
        "old",
        json!({"handlers": [
            {"event": "session_start", "log_ctx": true},
            {"event": "before_agent_start",
             "result": {"message": {"customType": "native-note", "content": "from the native plugin", "display": false}}},
            {"event": "turn_end"}
        ]}),
    );
    let mut rpc = pi_rpc_of(&pi, &sandbox, &["--no-session"], &env);
    let lines = run(&mut rpc, "1", "hello there");
    no_extension_error(&lines);
    let (status, _) = rpc.close();
    assert!(status.success(), "{status}");
    assert_eq!(logged_mode(&sandbox.behave_log()), 3, "hasUI: RPC");
    let start = &calls(&sandbox.behave_log(), "before_agent_start")[0].value;
    assert_eq!(start["prompt"], "hello there", "{start}");
    assert!(start.get("messageType").is_none(), "{start}");
    let end = &calls(&sandbox.behave_log(), "turn_end")[0].value;
    assert_eq!(end["turnIndex"], 0, "{end}");
    assert!(end.get("context").is_none(), "{end}");
    assert!(
        server.requests()[0]
            .to_string()
            .contains("from the native plugin")
    );
}

/// `pi --mode <mode> ... "hi"` (one prompt, then exit), with `env`; its output.
fn one_shot(
    pi: &Pi,
    sandbox: &Sandbox,
    mode: &[&str],
    env: &[(String, String)],
) -> std::process::Output {
    let mut command = pi_command_of(pi, sandbox);
    command
        .args(mode)
        .args([
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--no-session",
            "hi",
        ])
        .envs(env.iter().map(|(k, v)| (k, v)));
    // pi reads a prompt from a stdin that is not a terminal: give it an empty one.
    command.stdin(std::process::Stdio::null());
    let output = output_of(command, Duration::from_secs(120));
    assert!(
        output.status.success(),
        "pi {mode:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs `command` (stdin already set) to its end, with stdout and stderr captured; killed,
/// failing the test, after `limit`.
fn output_of(mut command: std::process::Command, limit: Duration) -> std::process::Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pi");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for pi") {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
            panic!("{command:?} did not finish within {limit:?}; stderr: {err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

#[test]
fn json_and_print_modes_read_their_mode_and_show_load_problems_on_stderr() {
    let pi = pi16();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let mut env = native(&sandbox, "moder", context_logger());
    // A plugin that cannot load: pi's print and JSON modes have no UI to notify.
    std::fs::write(
        sandbox.agent_dir().join("extensions/libbroken.so"),
        "not a library",
    )
    .unwrap();

    let json_mode = one_shot(&pi, &sandbox, &["--mode", "json"], &env);
    let stderr = String::from_utf8_lossy(&json_mode.stderr);
    assert!(
        stderr.contains("pi-hooks: Failed to load plugin") && stderr.contains("libbroken.so"),
        "{stderr}"
    );
    assert_eq!(logged_mode(&sandbox.behave_log()), 2, "pi's JSON mode");
    // Without PI_HOOKS_BOUNDARY_CONTEXT the context preview is cut down to {canContinue} ...
    let whole = calls(&sandbox.behave_log(), "turn_end");
    assert_eq!(whole.len(), 1, "{whole:#?}");
    assert_eq!(
        whole[0].value["context"].as_object().map(|c| c.len()),
        Some(1),
        "{}",
        whole[0].value
    );

    // ... with it, the whole preview reaches the plugin.
    std::fs::remove_file(sandbox.behave_log()).unwrap();
    env.push(("PI_HOOKS_BOUNDARY_CONTEXT".into(), "1".into()));
    let print_mode = one_shot(&pi, &sandbox, &["-p"], &env);
    let stderr = String::from_utf8_lossy(&print_mode.stderr);
    assert!(
        stderr.contains("pi-hooks: Failed to load plugin"),
        "{stderr}"
    );
    assert_eq!(logged_mode(&sandbox.behave_log()), 1, "pi's print mode");
    let whole = calls(&sandbox.behave_log(), "turn_end");
    let context = &whole[0].value["context"];
    assert!(context["contextMessages"].is_array(), "{context}");
    assert!(context["llmMessages"].is_array(), "{context}");
    assert!(context["canContinue"].is_boolean(), "{context}");
}

/// pi 1.6's project trust reaches the project's native plugins through the bridge: a project
/// plugin pinned with `pi-hooks trust` runs only when pi trusts the project too
/// (`--no-approve`, and pi's own "no" when nothing is saved in its JSON mode, keep it out;
/// `--approve` lets the pin decide).
#[test]
fn a_project_pi_does_not_trust_runs_no_project_native_plugin() {
    let pi = pi16();
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let library = behave_plugin(&sandbox.lib(), "projected");
    let file = library.file_name().unwrap().to_str().unwrap().to_owned();
    let plugin = sandbox.install(&library, &sandbox.project().join(".pi/extensions"), &file);
    let trust = sandbox.run(&["trust", plugin.to_str().unwrap()]);
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    let env = vec![
        (behave_env_var("projected"), context_logger().to_string()),
        (
            "BEHAVE_LOG".into(),
            sandbox.behave_log().display().to_string(),
        ),
    ];
    let ran = |args: &[&str]| {
        let _ = std::fs::remove_file(sandbox.behave_log());
        let output = one_shot(&pi, &sandbox, args, &env);
        let turns = if sandbox.behave_log().exists() {
            calls(&sandbox.behave_log(), "turn_end").len()
        } else {
            0
        };
        (turns, String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let (turns, stderr) = ran(&["--mode", "json", "--approve"]);
    assert_eq!(
        turns, 1,
        "pi trusts the project and the pin matches: {stderr}"
    );
    let (turns, stderr) = ran(&["--mode", "json", "--no-approve"]);
    assert_eq!(turns, 0, "pi was told not to trust the project: {stderr}");
    assert!(
        stderr.contains("pi does not trust this project"),
        "{stderr}"
    );
    // Nothing saved and no flag: pi decides at start-up, after the bridge started serve, and
    // its JSON mode declines an unknown project.
    let (turns, stderr) = ran(&["--mode", "json"]);
    assert_eq!(turns, 0, "pi declined the project itself: {stderr}");
    assert!(
        stderr.contains("pi does not trust this project"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------
// serve itself: pi 1.6's fields in, new result fields out

#[test]
fn serve_passes_pi_16_s_payloads_whole_and_its_new_result_fields_back() {
    let sandbox = Sandbox::new();
    let mut client = serve(
        &sandbox,
        &[(
            "whole",
            json!({"handlers": [
                {"event": "tool_call"},
                {"event": "input"},
                {"event": "tool_result", "if_contains": "redact-all",
                 "result": {"content": [{"type": "text", "text": "[redacted]"}]}},
                {"event": "tool_result", "if_contains": "restructure",
                 "result": {"structuredContent": {"n": 2}, "usage": {"input": 1, "output": 2}}},
                {"event": "before_agent_start", "result": {"systemPrompt": "native prompt"}},
                {"event": "user_bash", "if_contains": "boom", "error": "refused"}
            ]}),
        )],
    );
    let log = sandbox.behave_log();

    let call = event(
        &mut client,
        "1",
        "tool_call",
        json!({"toolCallId": "p/1", "parentToolCallId": "p", "toolName": "bash", "input": {"command": "ls"}}),
    );
    assert_eq!(call["result"]["block"], false, "{call}");
    assert_eq!(calls(&log, "tool_call")[0].value["parentToolCallId"], "p");

    event(
        &mut client,
        "2",
        "input",
        json!({"text": "later", "source": "rpc", "streamingBehavior": "followUp"}),
    );
    assert_eq!(
        calls(&log, "input")[0].value["streamingBehavior"],
        "followUp"
    );

    // New content without structuredContent drops pi's (pi 1.6's rule) ...
    let redacted = event(
        &mut client,
        "3",
        "tool_result",
        json!({"toolCallId": "t", "parentToolCallId": "p", "toolName": "read", "input": {},
            "content": [{"type": "text", "text": "redact-all"}], "structuredContent": {"secret": 1},
            "usage": {"input": 5, "output": 5}, "isError": false}),
    );
    let seen = &calls(&log, "tool_result")[0].value;
    assert_eq!(seen["structuredContent"], json!({"secret": 1}), "{seen}");
    assert_eq!(seen["parentToolCallId"], "p", "{seen}");
    assert_eq!(
        redacted["result"]["content"],
        json!([{"type": "text", "text": "[redacted]"}]),
        "{redacted}"
    );
    assert!(
        redacted["result"].get("structuredContent").is_none(),
        "{redacted}"
    );
    assert_eq!(
        redacted["result"]["usage"],
        json!({"input": 5, "output": 5})
    );
    // ... and a plugin's structuredContent and usage are returned.
    let restructured = event(
        &mut client,
        "4",
        "tool_result",
        json!({"toolCallId": "t2", "toolName": "read", "input": {},
            "content": [{"type": "text", "text": "restructure"}], "structuredContent": {"n": 1}, "isError": false}),
    );
    assert_eq!(restructured["result"]["structuredContent"], json!({"n": 2}));
    assert_eq!(
        restructured["result"]["usage"],
        json!({"input": 1, "output": 2})
    );
    assert_eq!(restructured["result"]["content"][0]["text"], "restructure");

    // before_agent_start of a custom run: no prompt, the message and the options as given.
    let custom = event(
        &mut client,
        "5",
        "before_agent_start",
        json!({"messageType": "custom", "message": {"role": "custom", "customType": "k", "content": "c", "display": true, "timestamp": 1},
            "systemPrompt": "base", "systemPromptOptions": {"cwd": "/p", "selectedTools": ["read"]}}),
    );
    assert_eq!(
        custom["result"]["systemPrompt"], "native prompt",
        "{custom}"
    );
    let seen = &calls(&log, "before_agent_start")[0].value;
    assert_eq!(seen["message"]["customType"], "k", "{seen}");
    assert_eq!(
        seen["systemPromptOptions"]["selectedTools"],
        json!(["read"])
    );
    let bad = event(
        &mut client,
        "6",
        "before_agent_start",
        json!({"messageType": "robot", "systemPrompt": "base"}),
    );
    assert_eq!(bad["type"], "error", "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("messageType"),
        "{bad}"
    );
    let no_prompt = event(
        &mut client,
        "7",
        "before_agent_start",
        json!({"systemPrompt": "b"}),
    );
    assert_eq!(
        no_prompt["error"],
        "event before_agent_start: payload.prompt must be a string, got null"
    );

    // A failing user_bash handler fails the request (the client does not run the command).
    let failed = event(
        &mut client,
        "8",
        "user_bash",
        json!({"command": "boom", "excludeFromContext": false, "cwd": "/"}),
    );
    assert_eq!(failed["type"], "error", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("refused") && error.contains("whole"),
        "{failed}"
    );
    let fine = event(
        &mut client,
        "9",
        "user_bash",
        json!({"command": "ls", "cwd": "/"}),
    );
    assert_eq!(fine["result"], Value::Null, "{fine}");
    client.close();
}
