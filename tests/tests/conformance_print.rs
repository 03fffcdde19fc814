//! Conformance: print mode (`pi-hooks run -p`) and the prompt pipeline end to end: the final assistant text on
//! stdout, plugin errors on stderr as `Extension error (<path>): <message>`, `input` and
//! `before_agent_start` results applied to the run, and the embedded demo with the examples.

use std::process::Output;

use pi_hooks_tests::{
    Sandbox, behave_command, behave_library_path, json_lines, protected_paths_plugin,
    read_behave_log, rust_plugin,
};
use serde_json::{Value, json};

fn handlers(entries: Value) -> Value {
    json!({ "handlers": entries })
}

fn run(sandbox: &Sandbox, plugins: &[(&str, Value)], script: Value, args: &[&str]) -> Output {
    let script = sandbox.script(&script);
    let mut all = vec!["run", "--script", script.to_str().unwrap(), "--no-session"];
    all.extend_from_slice(args);
    let output = behave_command(sandbox, plugins, &all)
        .output()
        .expect("run pi-hooks");
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn error_lines(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| l.starts_with("Extension error"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn print_mode_prints_the_final_assistant_text() {
    let sandbox = Sandbox::new();
    let output = run(
        &sandbox,
        &[],
        json!({"turns": [
            {"text": "Let me look.", "toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
            {"text": "All done: ${PROMPT}"}
        ]}),
        &["-p", "hello"],
    );
    assert_eq!(stdout(&output), "All done: hello\n");
}

#[test]
fn plugin_errors_go_to_stderr_as_extension_error_lines() {
    let sandbox = Sandbox::new();
    let output = run(
        &sandbox,
        &[(
            "faulty",
            handlers(json!([
                {"event": "turn_start", "error": "turn kaput"},
                {"event": "tool_result", "error": "patch kaput"},
            ])),
        )],
        json!({"turns": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
            {"text": "finished"}
        ]}),
        &["-p", "go"],
    );
    let path = behave_library_path(&sandbox.lib(), "faulty");
    let path = path.display();
    assert_eq!(
        error_lines(&output),
        [
            format!("Extension error ({path}): turn kaput"),
            format!("Extension error ({path}): patch kaput"),
            format!("Extension error ({path}): turn kaput"),
        ]
    );
    // Errors do not stop the run, and stdout stays clean.
    assert_eq!(stdout(&output), "finished\n");
}

#[test]
fn json_mode_also_prints_extension_error_lines() {
    let sandbox = Sandbox::new();
    let output = run(
        &sandbox,
        &[(
            "faulty",
            handlers(json!([{"event": "agent_start", "error": "agent kaput"}])),
        )],
        json!({"turns": [{"text": "ok"}]}),
        &["--mode", "json", "go"],
    );
    let path = behave_library_path(&sandbox.lib(), "faulty")
        .display()
        .to_string();
    let events = json_lines(&output);
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "extension_error")
        .collect();
    assert_eq!(
        errors,
        [
            &json!({"type": "extension_error", "extensionPath": path, "event": "agent_start", "error": "agent kaput"})
        ]
    );
    assert_eq!(
        error_lines(&output),
        [format!("Extension error ({path}): agent kaput")]
    );
}

#[test]
fn an_input_transform_becomes_the_user_message() {
    let sandbox = Sandbox::new();
    let output = run(
        &sandbox,
        &[(
            "rewriter",
            handlers(
                json!([{"event": "input", "result": {"action": "transform", "text": "rewritten"}}]),
            ),
        )],
        json!({"turns": [{"text": "you said ${PROMPT}"}]}),
        &["--mode", "json", "original"],
    );
    let events = json_lines(&output);
    let user = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .expect("a user message");
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "rewritten"}])
    );
}

#[test]
fn an_input_handled_by_a_plugin_starts_no_run() {
    let sandbox = Sandbox::new();
    let output = run(
        &sandbox,
        &[(
            "handler",
            handlers(json!([
                {"event": "input", "result": {"action": "handled"}},
                {"event": "before_agent_start"},
                {"event": "agent_start"},
            ])),
        )],
        json!({"turns": [{"text": "should not be said"}]}),
        &["--mode", "json", "do nothing"],
    );
    let events = json_lines(&output);
    assert!(
        events.iter().all(|e| e["type"] == "session"),
        "a handled input must not start the agent: {events:?}"
    );
    let tags: Vec<String> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .map(|l| l.tag)
        .collect();
    assert_eq!(tags, ["input"]);
}

#[test]
fn before_agent_start_messages_follow_the_user_message() {
    let sandbox = Sandbox::new();
    let output = run(
        &sandbox,
        &[(
            "injector",
            handlers(json!([
                {"event": "before_agent_start", "result": {"message": {"customType": "note", "content": "remember this", "display": true, "details": {"k": 1}}}},
                {"event": "context"},
            ])),
        )],
        json!({"turns": [{"text": "ok"}]}),
        &["--mode", "json", "hello"],
    );
    let log = read_behave_log(&sandbox.behave_log());
    let context = log.iter().find(|l| l.tag == "context").expect("context");
    let messages = context.value["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["role"], "user");
    let custom = &messages[1];
    assert_eq!(
        (
            &custom["role"],
            &custom["customType"],
            &custom["content"],
            &custom["display"],
            &custom["details"]
        ),
        (
            &json!("custom"),
            &json!("note"),
            &json!("remember this"),
            &json!(true),
            &json!({"k": 1})
        )
    );
    assert!(custom["timestamp"].is_number(), "{custom}");
    let roles: Vec<String> = json_lines(&output)
        .iter()
        .filter(|e| e["type"] == "message_end")
        .map(|e| e["message"]["role"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(roles, ["user", "custom", "assistant"]);
    let agent_end = json_lines(&output)
        .into_iter()
        .find(|e| e["type"] == "agent_end")
        .expect("agent_end");
    let roles: Vec<&str> = agent_end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["user", "custom", "assistant"]);
}

#[test]
fn the_embedded_demo_runs_one_tool_and_the_examples_block_two() {
    let sandbox = Sandbox::new();
    let gate = rust_plugin("permission-gate");
    let protected = protected_paths_plugin(&sandbox.lib());
    let output = sandbox.run(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--hook",
        gate.to_str().unwrap(),
        "--hook",
        protected.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<(String, bool)> = json_lines(&output)
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .map(|e| {
            (
                e["message"]["toolName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["message"]["isError"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("bash".to_owned(), false),
            ("bash".to_owned(), true),
            ("write".to_owned(), true)
        ]
    );
}

/// The `:ctx` objects `plugin` logged, by event tag.
fn contexts(sandbox: &Sandbox) -> Vec<(String, Value)> {
    read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter_map(|l| {
            l.tag
                .strip_suffix(":ctx")
                .map(|event| (event.to_owned(), l.value))
        })
        .collect()
}

fn log_ctx_on(events: &[&str]) -> Value {
    handlers(
        events
            .iter()
            .map(|e| json!({"event": e, "log_ctx": true}))
            .collect(),
    )
}

#[test]
fn the_context_has_no_ui_and_reports_mode_cwd_session_and_idle_state() {
    let sandbox = Sandbox::new();
    let events = [
        "session_start",
        "input",
        "before_agent_start",
        "turn_start",
        "tool_call",
    ];
    run(
        &sandbox,
        &[("ctx", log_ctx_on(&events))],
        json!({"turns": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "true"}}]},
            {"text": "ok"}
        ]}),
        &["-p", "go"],
    );
    let seen = contexts(&sandbox);
    let cwd = sandbox.project().display().to_string();
    let summary: Vec<(String, Value)> = seen
        .iter()
        .map(|(event, ctx)| {
            (
                event.clone(),
                json!([
                    ctx["hasUI"],
                    ctx["mode"],
                    ctx["cwd"],
                    ctx["sessionFile"],
                    ctx["isIdle"]
                ]),
            )
        })
        .collect();
    let print = pi_hooks_abi::ffi::PI_MODE_PRINT;
    let row = |event: &str, idle: bool| (event.to_owned(), json!([false, print, cwd, null, idle]));
    assert_eq!(
        summary,
        [
            row("session_start", true),
            row("input", true),
            row("before_agent_start", true),
            row("turn_start", false),
            row("tool_call", false),
            row("turn_start", false),
        ]
    );

    // JSON mode, with a session file.
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    let script = sandbox.script(&json!({"turns": [{"text": "ok"}]}));
    let output = behave_command(
        &sandbox,
        &[("ctx", log_ctx_on(&["turn_start"]))],
        &[
            "run",
            "--mode",
            "json",
            "--script",
            script.to_str().unwrap(),
            "--session",
            session.to_str().unwrap(),
            "go",
        ],
    )
    .output()
    .unwrap();
    assert!(output.status.success());
    let seen = contexts(&sandbox);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1["mode"], pi_hooks_abi::ffi::PI_MODE_JSON);
    assert_eq!(seen[0].1["hasUI"], false);
    assert_eq!(seen[0].1["sessionFile"], session.display().to_string());
}

#[test]
fn get_system_prompt_outside_before_agent_start_is_the_run_s_system_prompt() {
    // pi's ctx.getSystemPrompt() works in every handler: the agent's current prompt.
    let events = ["context", "turn_start", "tool_call"];
    let script = json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "true"}}]},
        {"text": "ok"}
    ]});

    let sandbox = Sandbox::new();
    run(
        &sandbox,
        &[("ctx", log_ctx_on(&events))],
        script.clone(),
        &["-p", "go"],
    );
    let prompts: Vec<(String, Value)> = contexts(&sandbox)
        .into_iter()
        .map(|(event, ctx)| (event, ctx["systemPrompt"].clone()))
        .collect();
    let base = json!(pi_hooks_agent::DEFAULT_SYSTEM_PROMPT);
    assert!(!prompts.is_empty());
    for (event, prompt) in &prompts {
        assert_eq!(prompt, &base, "in {event}: {prompts:?}");
    }

    let sandbox = Sandbox::new();
    let mut entries =
        vec![json!({"event": "before_agent_start", "result": {"systemPrompt": "CUSTOM PROMPT"}})];
    entries.extend(events.iter().map(|e| json!({"event": e, "log_ctx": true})));
    run(
        &sandbox,
        &[("ctx", handlers(Value::Array(entries)))],
        script,
        &["-p", "go"],
    );
    let prompts: Vec<(String, Value)> = contexts(&sandbox)
        .into_iter()
        .map(|(event, ctx)| (event, ctx["systemPrompt"].clone()))
        .collect();
    assert!(!prompts.is_empty());
    for (event, prompt) in &prompts {
        assert_eq!(prompt, "CUSTOM PROMPT", "in {event}: {prompts:?}");
    }
}

#[test]
fn a_scratch_folder_is_made_only_for_a_script_that_names_it_and_removed_after() {
    let sandbox = Sandbox::new();
    let tmp = sandbox.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let count = || std::fs::read_dir(&tmp).unwrap().count();
    let plain = sandbox.script(&json!({"turns": [{"text": "no scratch here"}]}));
    let output = sandbox
        .command(&["run", "--no-session", "--script", plain.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        count(),
        0,
        "a run whose script never names ${{SCRATCH}} made a folder"
    );
    let uses = sandbox.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "ls ${SCRATCH}/build > ${CWD}/seen.txt"}}]},
        {"text": "done"}
    ]}));
    let output = sandbox
        .command(&["run", "--no-session", "--script", uses.to_str().unwrap()])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen = std::fs::read_to_string(sandbox.project().join("seen.txt")).unwrap();
    assert_eq!(
        seen.trim(),
        "output.txt",
        "the script saw its scratch folder"
    );
    assert_eq!(
        count(),
        0,
        "the scratch folder is removed when the run ends"
    );
}

#[test]
fn a_follow_up_sent_from_agent_end_runs_at_once_before_the_prompt_settles() {
    // pi 1.6 (DESIGN §3): a followUp sent inside agent_end is queued (the agent is not idle
    // there) and runs at once as a run of its own, before the first prompt settles and
    // before the second prompt. (pi 0.73.1 kept it for the next prompt's run.)
    let sandbox = Sandbox::new();
    let plugins = [(
        "late",
        handlers(json!([{
            "event": "agent_end",
            "if_contains": "first prompt",
            "send_message": {"customType": "late-note", "content": "sent from agent_end", "display": true},
            "send_message_options": {"deliverAs": "followUp"}
        }])),
    )];
    let script = json!({"turns": [{"text": "answer to ${PROMPT}"}]});
    let output = run(
        &sandbox,
        &plugins,
        script,
        &["--mode", "json", "first prompt", "second prompt"],
    );
    let lines = json_lines(&output);
    let status: Vec<String> = read_behave_log(&sandbox.behave_log())
        .iter()
        .filter(|l| l.tag == "send_message:status")
        .map(|l| l.value.to_string())
        .collect();
    assert_eq!(status, ["0"], "the follow-up was accepted once");
    let at = |kind: &str| -> Vec<usize> {
        (0..lines.len())
            .filter(|&i| lines[i]["type"] == kind)
            .collect()
    };
    let (starts, settled) = (at("agent_start"), at("agent_settled"));
    assert_eq!(starts.len(), 3, "a run of its own: {lines:?}");
    assert_eq!(settled.len(), 2, "one per prompt: {lines:?}");
    let note = lines
        .iter()
        .position(|l| l["type"] == "message_start" && l["message"]["customType"] == "late-note")
        .expect("the follow-up is delivered");
    assert!(
        starts[1] < note && note < settled[0],
        "delivered in its own run, before the first prompt settled: {lines:?}"
    );
    let second_user = lines
        .iter()
        .position(|l| {
            l["type"] == "message_start"
                && l["message"]["role"] == "user"
                && l["message"]["content"]
                    .to_string()
                    .contains("second prompt")
        })
        .unwrap();
    assert!(settled[0] < second_user, "the second prompt comes after");
}
