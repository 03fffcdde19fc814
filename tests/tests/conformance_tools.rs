//! Conformance, end to end: tool interception in the real agent loop (`pi-hooks run --mode json
//! --script ...`), in pi 0.73.1's order and with its rules. Each test runs the real binary in its own sandbox with `behave` plugins
//! and reads both the JSON event stream and the plugins' own log.

use std::process::Output;
use std::time::{Duration, Instant};

use pi_hooks_tests::{
    BehaveLine, Sandbox, behave_command, json_lines, read_behave_log, rust_plugin,
};
use serde_json::{Value, json};

fn handlers(entries: Value) -> Value {
    json!({ "handlers": entries })
}

/// One run and what it produced.
struct Run {
    sandbox: Sandbox,
    output: Output,
    events: Vec<Value>,
    log: Vec<BehaveLine>,
    took: Duration,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// The JSON events of `type`.
    fn events_of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    /// The JSON event of `type` for the tool call `id`.
    fn tool_event(&self, kind: &str, id: &str) -> &Value {
        self.events
            .iter()
            .find(|e| e["type"] == kind && e["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no {kind} for {id}:\n{}", self.dump()))
    }

    /// The toolResult messages, from their `message_end` events, in order.
    fn tool_results(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
            .map(|e| &e["message"])
            .collect()
    }

    /// The log tags of `plugin`, with the tool call id when the payload has one.
    fn trace(&self, plugin: &str, keep: &[&str]) -> Vec<String> {
        self.log
            .iter()
            .filter(|l| l.plugin == plugin && keep.contains(&l.tag.as_str()))
            .map(|l| match l.value["toolCallId"].as_str() {
                Some(id) => format!("{} {id}", l.tag),
                None if l.tag.starts_with("message_") => {
                    format!(
                        "{} {}",
                        l.tag,
                        l.value["message"]["role"].as_str().unwrap_or("?")
                    )
                }
                None => l.tag.clone(),
            })
            .collect()
    }

    fn dump(&self) -> String {
        format!(
            "exit: {:?}\nstdout:\n{}\nstderr:\n{}\nlog:\n{}",
            self.output.status,
            String::from_utf8_lossy(&self.output.stdout),
            self.stderr(),
            self.log
                .iter()
                .map(|l| format!("{} {}", l.who(), l.value))
                .collect::<Vec<_>>()
                .join("\n")
        )
    }
}

/// Runs `pi-hooks run --mode json --script <script> --no-session <extra> "go"` with `plugins`.
/// Writes the user's `<agentDir>/settings.json`.
fn user_settings(sandbox: &Sandbox, text: &str) {
    std::fs::write(sandbox.agent_dir().join("settings.json"), text).unwrap();
}

fn run(
    sandbox: Sandbox,
    plugins: &[(&str, Value)],
    script: Value,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let script = sandbox.script(&script);
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--script",
        script.to_str().unwrap(),
        "--no-session",
    ];
    args.extend_from_slice(extra);
    args.push("go");
    let mut command = behave_command(&sandbox, plugins, &args);
    for (key, value) in env {
        command.env(key, value);
    }
    let start = Instant::now();
    let output = command.output().expect("run pi-hooks");
    let took = start.elapsed();
    let run = Run {
        events: json_lines(&output),
        log: read_behave_log(&sandbox.behave_log()),
        sandbox,
        output,
        took,
    };
    assert!(run.output.status.success(), "{}", run.dump());
    run
}

fn bash(id: &str, command: &str) -> Value {
    json!({"id": id, "name": "bash", "arguments": {"command": command}})
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

/// Every event a plugin can watch in a print-mode run, as logging handlers.
/// The four events around one tool call.
const TOOL_EVENTS: [&str; 4] = [
    "tool_execution_start",
    "tool_call",
    "tool_result",
    "tool_execution_end",
];

/// A behave config with one handler for each of [`TOOL_EVENTS`].
fn watch_tool_events() -> Value {
    handlers(
        TOOL_EVENTS
            .iter()
            .map(|event| json!({"event": event}))
            .collect(),
    )
}

fn watch_everything() -> Value {
    let events = [
        "session_start",
        "session",
        "resources_discover",
        "input",
        "before_agent_start",
        "agent_start",
        "turn_start",
        "context",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_call",
        "tool_execution_update",
        "tool_result",
        "tool_execution_end",
        "turn_end",
        "agent_end",
        "session_shutdown",
    ];
    handlers(events.iter().map(|e| json!({"event": e})).collect())
}

#[test]
fn one_tool_call_follows_pi_s_event_order() {
    let run = run(
        Sandbox::new(),
        &[("watch", watch_everything())],
        json!({"turns": [
            {"text": "running", "toolCalls": [bash("c1", "echo hi")]},
            {"text": "done"}
        ]}),
        &[],
        &[],
    );
    // The whole run, without the message and update events.
    let outline = run.trace(
        "watch",
        &[
            "session_start",
            "session",
            "resources_discover",
            "input",
            "before_agent_start",
            "agent_start",
            "turn_start",
            "context",
            "tool_execution_start",
            "tool_call",
            "tool_result",
            "tool_execution_end",
            "turn_end",
            "agent_end",
            "session_shutdown",
        ],
    );
    assert_eq!(
        outline,
        [
            "session_start",
            "session",
            "resources_discover",
            "input",
            "before_agent_start",
            "agent_start",
            "turn_start",
            "context",
            "tool_execution_start c1",
            "tool_call c1",
            "tool_result c1",
            "tool_execution_end c1",
            "turn_end",
            "turn_start",
            "context",
            "turn_end",
            "agent_end",
            "session_shutdown",
            "session",
        ],
        "{}",
        run.dump()
    );
    let reasons: Vec<&Value> = run
        .log
        .iter()
        .filter(|l| l.tag == "session")
        .map(|l| &l.value["reason"])
        .collect();
    assert_eq!(reasons, [&json!("start"), &json!("shutdown")]);

    // Around the tool, with messages and updates.
    let detail = run.trace(
        "watch",
        &[
            "message_end",
            "tool_execution_start",
            "tool_call",
            "tool_execution_update",
            "tool_result",
            "tool_execution_end",
            "message_start",
            "turn_end",
        ],
    );
    let from = detail
        .iter()
        .position(|t| t == "tool_execution_start c1")
        .unwrap();
    let to = detail.iter().position(|t| t == "turn_end").unwrap();
    assert_eq!(detail[from - 1], "message_end assistant", "{detail:?}");
    let window = &detail[from..=to];
    let updates = window
        .iter()
        .filter(|t| *t == "tool_execution_update c1")
        .count();
    assert!(updates >= 1, "no tool_execution_update: {window:?}");
    let mut expected = vec!["tool_execution_start c1", "tool_call c1"];
    expected.extend(std::iter::repeat_n("tool_execution_update c1", updates));
    expected.extend([
        "tool_result c1",
        "tool_execution_end c1",
        "message_start toolResult",
        "message_end toolResult",
        "turn_end",
    ]);
    assert_eq!(window, expected, "{}", run.dump());

    // Payloads, as pi names their fields.
    let payload = |tag: &str| {
        run.log
            .iter()
            .find(|l| l.tag == tag)
            .unwrap_or_else(|| panic!("no {tag}"))
            .value
            .clone()
    };
    assert_eq!(
        payload("input"),
        json!({"type": "input", "text": "go", "source": "interactive"})
    );
    assert_eq!(
        payload("tool_execution_start"),
        json!({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": {"command": "echo hi"}})
    );
    assert_eq!(
        payload("tool_call"),
        json!({"type": "tool_call", "toolCallId": "c1", "toolName": "bash", "input": {"command": "echo hi"}})
    );
    let result = payload("tool_result");
    assert_eq!(
        (
            &result["toolCallId"],
            &result["toolName"],
            &result["input"],
            &result["content"],
            &result["isError"]
        ),
        (
            &json!("c1"),
            &json!("bash"),
            &json!({"command": "echo hi"}),
            &text("hi\n"),
            &json!(false)
        )
    );
    let end = run.tool_event("tool_execution_end", "c1");
    assert_eq!(end["result"]["content"], text("hi\n"));
    assert_eq!(end["isError"], false);

    // The JSON stream has the same order (without the plugin-only events).
    let stream: Vec<String> = run
        .events
        .iter()
        .filter(|e| e["type"] != "message_update" && e["type"] != "tool_execution_update")
        .map(|e| {
            let kind = e["type"].as_str().unwrap();
            match e["message"]["role"].as_str() {
                Some(role) if kind.starts_with("message_") => format!("{kind} {role}"),
                _ => kind.to_owned(),
            }
        })
        .collect();
    assert_eq!(
        stream,
        [
            "session",
            "agent_start",
            "turn_start",
            "message_start user",
            "message_end user",
            "message_start assistant",
            "message_end assistant",
            "tool_execution_start",
            "tool_execution_end",
            "message_start toolResult",
            "message_end toolResult",
            "turn_end",
            "turn_start",
            "message_start assistant",
            "message_end assistant",
            "turn_end",
            "agent_end",
            "agent_settled",
        ],
        "{}",
        run.dump()
    );
    assert_eq!(run.events[0]["version"], 3);
}

#[test]
fn a_blocked_call_becomes_an_error_result_and_the_tool_does_not_run() {
    let run = run(
        Sandbox::new(),
        &[(
            "guard",
            handlers(json!([
                {"event": "tool_call", "if_contains": "touch", "result": {"block": true, "reason": "no touching"}},
                {"event": "tool_result"},
                {"event": "tool_execution_update"},
                {"event": "context"},
            ])),
        )],
        json!({"turns": [
            {"toolCalls": [bash("b1", "touch blocked.txt")]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    assert!(
        !run.sandbox.project().join("blocked.txt").exists(),
        "the blocked tool ran"
    );
    assert_eq!(
        *run.tool_event("tool_execution_end", "b1"),
        json!({"type": "tool_execution_end", "toolCallId": "b1", "toolName": "bash",
               "result": {"content": text("no touching"), "details": {}}, "isError": true}),
    );
    let results = run.tool_results();
    assert_eq!(results.len(), 1);
    let message = results[0];
    assert_eq!(
        (
            &message["toolCallId"],
            &message["toolName"],
            &message["content"],
            &message["details"],
            &message["isError"]
        ),
        (
            &json!("b1"),
            &json!("bash"),
            &text("no touching"),
            &json!({}),
            &json!(true)
        )
    );
    assert_eq!(
        run.trace(
            "guard",
            &["tool_call", "tool_result", "tool_execution_update"]
        ),
        ["tool_call b1"],
        "a blocked call gets no tool_result and no update"
    );
    // The model sees the reason on the next turn.
    let last_context = run.log.iter().rfind(|l| l.tag == "context").unwrap();
    let messages = last_context.value["messages"].as_array().unwrap();
    let seen = messages.iter().find(|m| m["role"] == "toolResult").unwrap();
    assert_eq!(seen["content"], text("no touching"));
    assert_eq!(seen["isError"], true);
    // A block is not an error report.
    assert!(
        !run.stderr().contains("Extension error"),
        "{}",
        run.stderr()
    );
}

#[test]
fn tool_result_sees_error_results_and_its_is_error_flip_is_applied() {
    let run = run(
        Sandbox::new(),
        &[(
            "fixer",
            handlers(json!([
                {"event": "tool_result", "if_contains": "oops", "result": {"isError": false, "content": text("fixed")}},
                {"event": "tool_result", "if_contains": "fine", "result": {"isError": true}},
            ])),
        )],
        json!({"turns": [
            {"toolCalls": [bash("e1", "echo oops; exit 1")]},
            {"toolCalls": [bash("e2", "echo fine")]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    let seen: Vec<(&Value, &Value)> = run
        .log
        .iter()
        .filter(|l| l.tag == "tool_result" && l.value["toolCallId"] == "e1")
        .map(|l| (&l.value["isError"], &l.value["content"][0]["text"]))
        .collect();
    assert_eq!(seen.len(), 2, "{}", run.dump());
    assert_eq!(
        seen[0].0,
        &json!(true),
        "an error result reaches tool_result as isError"
    );
    assert!(seen[0].1.as_str().unwrap().contains("oops"), "{seen:?}");
    // The second handler sees the first one's patch.
    assert_eq!(seen[1], (&json!(false), &json!("fixed")));

    let end = run.tool_event("tool_execution_end", "e1");
    assert_eq!(
        (&end["isError"], &end["result"]["content"]),
        (&json!(false), &text("fixed"))
    );
    let end = run.tool_event("tool_execution_end", "e2");
    assert_eq!(
        (&end["isError"], &end["result"]["content"]),
        (&json!(true), &text("fine\n"))
    );
    let results = run.tool_results();
    assert_eq!(
        results
            .iter()
            .map(|m| (
                m["toolCallId"].clone(),
                m["isError"].clone(),
                m["content"].clone()
            ))
            .collect::<Vec<_>>(),
        [
            (json!("e1"), json!(false), text("fixed")),
            (json!("e2"), json!(true), text("fine\n")),
        ]
    );
}

#[test]
fn parallel_calls_are_checked_in_order_run_concurrently_and_reported_in_source_order() {
    let run = run(
        Sandbox::new(),
        &[(
            "par",
            handlers(json!([
                {"event": "tool_execution_start"},
                {"event": "tool_call", "if_contains": "touch", "result": {"block": true, "reason": "blocked in parallel"}},
                {"event": "tool_result"},
                {"event": "tool_execution_end"},
                {"event": "message_end"},
            ])),
        )],
        json!({"turns": [
            {"toolCalls": [
                bash("slow", "sleep 0.6; echo slow"),
                bash("fast", "echo fast"),
                bash("blocked", "touch par-blocked.txt"),
            ]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    let tools = run.trace(
        "par",
        &[
            "tool_execution_start",
            "tool_call",
            "tool_result",
            "tool_execution_end",
        ],
    );
    assert_eq!(
        tools,
        [
            "tool_execution_start slow",
            "tool_call slow",
            "tool_execution_start fast",
            "tool_call fast",
            "tool_execution_start blocked",
            "tool_call blocked",
            "tool_execution_end blocked",
            "tool_result fast",
            "tool_execution_end fast",
            "tool_result slow",
            "tool_execution_end slow",
        ],
        "{}",
        run.dump()
    );
    // The JSON stream: fast ends before slow (they ran concurrently).
    let ends: Vec<&str> = run
        .events_of("tool_execution_end")
        .iter()
        .map(|e| e["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["blocked", "fast", "slow"]);
    // toolResult messages in source order.
    let ids: Vec<&str> = run
        .tool_results()
        .iter()
        .map(|m| m["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["slow", "fast", "blocked"]);
    let contents: Vec<Value> = run
        .tool_results()
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(
        contents,
        [text("slow\n"), text("fast\n"), text("blocked in parallel")]
    );
    assert!(!run.sandbox.project().join("par-blocked.txt").exists());
}

#[test]
fn parallel_calls_overlap_in_time() {
    // Two calls of 0.8 s each: run one after another they take 1.6 s.
    let run = run(
        Sandbox::new(),
        &[],
        json!({"turns": [
            {"toolCalls": [bash("p1", "sleep 0.8; echo one"), bash("p2", "sleep 0.8; echo two")]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    assert!(
        run.took < Duration::from_millis(1500),
        "the calls did not run concurrently: {:?}",
        run.took
    );
    let contents: Vec<Value> = run
        .tool_results()
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(contents, [text("one\n"), text("two\n")]);
}

#[test]
fn an_unknown_tool_is_an_error_result_without_tool_call() {
    let run = run(
        Sandbox::new(),
        &[("watch", watch_tool_events())],
        json!({"turns": [
            {"toolCalls": [{"id": "u1", "name": "no_such_tool", "arguments": {"x": 1}}]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    let results = run.tool_results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["content"], text("Tool no_such_tool not found"));
    assert_eq!(results[0]["isError"], true);
    assert_eq!(
        run.trace("watch", &TOOL_EVENTS),
        ["tool_execution_start u1", "tool_execution_end u1"]
    );
}

#[test]
fn plugin_registered_tools_go_through_tool_call_and_tool_result() {
    let fixture = rust_plugin("fixture-rust-init");
    let run = run(
        Sandbox::new(),
        &[(
            "wrap",
            handlers(json!([
                {"event": "tool_call", "if_contains": "block me", "result": {"block": true, "reason": "not this one"}},
                {"event": "tool_result", "result": {"content": text("patched")}},
            ])),
        )],
        json!({"turns": [
            {"toolCalls": [{"id": "t1", "name": "fixture_tool", "arguments": {"text": "echo me"}}]},
            {"toolCalls": [{"id": "t2", "name": "fixture_tool", "arguments": {"text": "block me"}}]},
            {"text": "ok"}
        ]}),
        &["--hook", fixture.to_str().unwrap()],
        &[],
    );
    let call = run
        .log
        .iter()
        .find(|l| l.tag == "tool_call" && l.value["toolCallId"] == "t1")
        .expect("tool_call for the plugin tool");
    assert_eq!(call.value["toolName"], "fixture_tool");
    assert_eq!(call.value["input"], json!({"text": "echo me"}));
    let result = run
        .log
        .iter()
        .find(|l| l.tag == "tool_result")
        .expect("tool_result for the plugin tool");
    assert_eq!(result.value["content"], text("echo me"));
    assert_eq!(
        run.trace("wrap", &["tool_call", "tool_result"]),
        ["tool_call t1", "tool_result t1", "tool_call t2"]
    );
    let results: Vec<(Value, Value)> = run
        .tool_results()
        .iter()
        .map(|m| (m["content"].clone(), m["isError"].clone()))
        .collect();
    assert_eq!(
        results,
        [
            (text("patched"), json!(false)),
            (text("not this one"), json!(true))
        ]
    );
}

#[test]
fn hooks_load_in_command_line_order_and_handlers_in_registration_order() {
    let run = run(
        Sandbox::new(),
        &[
            (
                "zz-first",
                handlers(json!([
                    {"event": "tool_call", "id": "1"},
                    {"event": "tool_call", "id": "2"},
                ])),
            ),
            (
                "aa-second",
                handlers(json!([
                    {"event": "tool_call", "id": "1"},
                    {"event": "tool_call", "id": "2"},
                ])),
            ),
        ],
        json!({"turns": [{"toolCalls": [bash("o1", "true")]}, {"text": "ok"}]}),
        &[],
        &[],
    );
    let order: Vec<String> = run.log.iter().map(BehaveLine::who).collect();
    assert_eq!(
        order,
        [
            "zz-first tool_call#1",
            "zz-first tool_call#2",
            "aa-second tool_call#1",
            "aa-second tool_call#2"
        ]
    );
}

#[test]
fn a_tool_call_error_or_panic_blocks_end_to_end_without_a_report() {
    let fixture = rust_plugin("fixture-rust-init");
    let run = run(
        Sandbox::new(),
        &[(
            "strict",
            handlers(
                json!([{"event": "tool_call", "if_contains": "touch", "error": "policy engine down"}]),
            ),
        )],
        json!({"turns": [
            {"toolCalls": [bash("x1", "panic")]},
            {"toolCalls": [bash("x2", "touch failed-closed.txt")]},
            {"text": "ok"}
        ]}),
        &["--hook", fixture.to_str().unwrap()],
        &[],
    );
    let results = run.tool_results();
    assert_eq!(results.len(), 2, "{}", run.dump());
    let first = results[0]["content"][0]["text"].as_str().unwrap();
    assert!(first.contains("handler panic for x1"), "{first}");
    assert_eq!(results[0]["isError"], true);
    let second = results[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        second.contains("policy engine down") && second.contains("strict"),
        "{second}"
    );
    assert_eq!(results[1]["isError"], true);
    assert!(!run.sandbox.project().join("failed-closed.txt").exists());
    assert!(
        !run.stderr().contains("Extension error"),
        "{}",
        run.stderr()
    );
    assert!(
        run.events_of("extension_error").is_empty(),
        "{}",
        run.dump()
    );
}

#[test]
fn tool_call_timeout_from_settings_blocks_the_tool() {
    let sandbox = Sandbox::new();
    user_settings(&sandbox, r#"{"toolCallTimeout": 200}"#);
    let run = run(
        sandbox,
        &[(
            "slow",
            handlers(json!([{"event": "tool_call", "sleep_ms": 1500}])),
        )],
        json!({"turns": [{"toolCalls": [bash("s1", "touch too-late.txt")]}, {"text": "ok"}]}),
        &[],
        &[],
    );
    let results = run.tool_results();
    assert_eq!(results.len(), 1, "{}", run.dump());
    let reason = results[0]["content"][0]["text"].as_str().unwrap();
    assert!(reason.contains("timed out"), "{reason}");
    assert!(
        reason.contains("slow"),
        "the reason must name the plugin: {reason}"
    );
    assert_eq!(results[0]["isError"], true);
    assert!(!run.sandbox.project().join("too-late.txt").exists());
}

#[test]
fn hook_timeout_from_user_settings_reports_the_slow_handler() {
    let sandbox = Sandbox::new();
    user_settings(&sandbox, r#"{"hookTimeout": 150}"#);
    let library = pi_hooks_tests::behave_library_path(&sandbox.lib(), "sleepy");
    let run = run(
        sandbox,
        &[
            (
                "sleepy",
                handlers(json!([{"event": "agent_start", "sleep_ms": 700}])),
            ),
            ("next", handlers(json!([{"event": "agent_start"}]))),
        ],
        json!({"turns": [{"text": "ok"}]}),
        &[],
        &[],
    );
    let expected = format!(
        "Extension error ({}): timed out after 150ms",
        library.display()
    );
    assert!(run.stderr().contains(&expected), "{}", run.dump());
    let errors = run.events_of("extension_error");
    assert_eq!(
        errors.first().map(|e| (*e).clone()),
        Some(
            json!({"type": "extension_error", "extensionPath": library.display().to_string(),
                    "event": "agent_start", "error": "timed out after 150ms"})
        ),
        "{}",
        run.dump()
    );
    // The next handler ran while the slow one was still sleeping.
    let order: Vec<String> = run.log.iter().map(BehaveLine::who).collect();
    assert_eq!(
        order[..2],
        ["sleepy agent_start", "next agent_start"],
        "{order:?}"
    );
}

#[test]
fn calls_into_one_plugin_never_overlap_even_for_parallel_tools() {
    // Two tools run concurrently; their tool_result handlers live in one plugin and each
    // takes 300 ms: the second call must start only after the first returned.
    let run = run(
        Sandbox::new(),
        &[(
            "serial",
            handlers(json!([{"event": "tool_result", "sleep_ms": 300}])),
        )],
        json!({"turns": [
            {"toolCalls": [bash("a", "echo a"), bash("b", "echo b")]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    let tags: Vec<&str> = run.log.iter().map(|l| l.tag.as_str()).collect();
    assert_eq!(
        tags,
        [
            "tool_result",
            "tool_result:done",
            "tool_result",
            "tool_result:done"
        ],
        "{}",
        run.dump()
    );
    assert!(
        run.events_of("extension_error").is_empty(),
        "{}",
        run.dump()
    );
}

#[test]
fn invalid_arguments_are_an_error_result_without_tool_call() {
    // pi: arguments are validated before `tool_call`; a
    // validation error is the tool's error result, with no tool_call and no tool_result.
    let run = run(
        Sandbox::new(),
        &[("watch", watch_tool_events())],
        json!({"turns": [
            {"toolCalls": [{"id": "v1", "name": "bash", "arguments": {}}]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    let results = run.tool_results();
    assert_eq!(results.len(), 1);
    let message = results[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.starts_with("Validation failed for tool \"bash\""),
        "{message}"
    );
    assert_eq!(results[0]["isError"], true);
    assert_eq!(
        run.trace("watch", &TOOL_EVENTS),
        ["tool_execution_start v1", "tool_execution_end v1"]
    );
}

#[test]
fn waiting_for_a_busy_plugin_does_not_count_against_hook_timeout() {
    // hookTimeout limits a handler's own run time. Two parallel tools: each tool_result
    // handler of the one plugin takes 350 ms (< 500 ms), but the second must first wait
    // for the first to return (calls into a plugin never overlap). Neither overran.
    let sandbox = Sandbox::new();
    user_settings(&sandbox, r#"{"hookTimeout": 500}"#);
    let run = run(
        sandbox,
        &[(
            "serial",
            handlers(
                json!([{"event": "tool_result", "sleep_ms": 350, "result": {"details": {"patched": true}}}]),
            ),
        )],
        json!({"turns": [
            {"toolCalls": [bash("a", "echo a"), bash("b", "echo b")]},
            {"text": "ok"}
        ]}),
        &[],
        &[],
    );
    assert!(
        run.events_of("extension_error").is_empty(),
        "{}",
        run.dump()
    );
    let details: Vec<Value> = run
        .tool_results()
        .iter()
        .map(|m| m["details"].clone())
        .collect();
    assert_eq!(
        details,
        [json!({"patched": true}), json!({"patched": true})],
        "{}",
        run.dump()
    );
}

#[test]
fn a_plugin_stuck_in_a_timed_out_call_does_not_hang_the_host_at_exit() {
    // session_shutdown sleeps 20 s; hookTimeout is 150 ms. The dispatch moves on, and
    // retiring the plugin waits a bounded time for the stuck call instead of 20 s.
    let sandbox = Sandbox::new();
    user_settings(&sandbox, r#"{"hookTimeout": 150}"#);
    let plugins = [(
        "stuck",
        handlers(json!([{"event": "session_shutdown", "sleep_ms": 20000}])),
    )];
    let run = run(
        sandbox,
        &plugins,
        json!({"turns": [{"text": "ok"}]}),
        &[],
        &[],
    );
    assert!(run.output.status.success(), "{}", run.dump());
    assert_eq!(run.events_of("agent_end").len(), 1, "{}", run.dump());
    let stderr = run.stderr();
    assert!(stderr.contains("timed out after 150ms"), "{stderr}");
    assert!(
        stderr.contains("is still running a call")
            && stderr.contains("retired without its shutdown"),
        "{stderr}"
    );
    assert!(
        run.took < Duration::from_secs(15),
        "the host waited {:?} for a stuck plugin",
        run.took
    );
}

#[test]
fn project_settings_cannot_lower_the_users_hook_timeout() {
    // A cloned repository's settings must not time out the user's plugins: a project
    // `hookTimeout: 1` is ignored, so a 100 ms tool_result handler still patches the result.
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.project().join(".pi")).unwrap();
    std::fs::write(
        sandbox.project().join(".pi/settings.json"),
        r#"{"hookTimeout": 1}"#,
    )
    .unwrap();
    let script = json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo secret"}}]},
        {"text": "done"}
    ]});
    let redact = json!([{"event": "tool_result", "sleep_ms": 100,
                         "result": {"content": [{"type": "text", "text": "[REDACTED]"}]}}]);
    let run = run(sandbox, &[("redact", handlers(redact))], script, &[], &[]);
    assert!(!run.stderr().contains("timed out"), "{}", run.dump());
    let end = run.events_of("tool_execution_end")[0];
    assert_eq!(end["result"]["content"][0]["text"], "[REDACTED]", "{end}");
}

#[test]
fn a_plugin_tool_s_progress_reaches_the_same_plugin_after_the_tool_without_deadlock() {
    let sandbox = Sandbox::new();
    let library = pi_hooks_tests::c_fixture(&sandbox.lib(), "reenter", &[]);
    let log = sandbox.root().join("reenter.log");
    let script = sandbox.script(&json!({"turns": [
        {"toolCalls": [{"name": "slow", "arguments": {}}]},
        {"text": "done"}
    ]}));
    let mut child = sandbox
        .command(&[
            "run",
            "--mode",
            "json",
            "--no-session",
            "--script",
            script.to_str().unwrap(),
            "--hook",
        ])
        .arg(&library)
        .env("REENTER_LOG", &log)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A deadlock would never end: give it a generous bound, then fail instead of hanging.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("pi-hooks hung: a plugin tool's tool_update deadlocked on its own plugin");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        lines.lines().collect::<Vec<_>>(),
        ["tool start", "tool_update ok", "tool end", "update handler"],
    );
    let events = pi_hooks_tests::json_lines(&output);
    let update = events
        .iter()
        .find(|e| e["type"] == "tool_execution_update")
        .expect("an update event");
    assert_eq!(update["partialResult"]["content"][0]["text"], "50%");
}

#[test]
fn a_call_waiting_for_a_plugin_that_gets_stuck_gives_up_instead_of_hanging() {
    // Two parallel tools; the plugin's tool_result handler never returns in time (20 s).
    // The first dispatch abandons it after hookTimeout; the second, waiting for the plugin,
    // must then give up too, and the host must finish.
    let sandbox = Sandbox::new();
    user_settings(&sandbox, r#"{"hookTimeout": 300}"#);
    let script = json!({"turns": [
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "echo one"}},
            {"name": "bash", "arguments": {"command": "echo two"}}
        ]},
        {"text": "done"}
    ]});
    let plugins = [(
        "hang",
        handlers(json!([{"event": "tool_result", "sleep_ms": 20000}])),
    )];
    let run = run(sandbox, &plugins, script, &[], &[]);
    assert!(run.output.status.success(), "{}", run.dump());
    let stderr = run.stderr();
    assert!(stderr.contains("timed out after 300ms"), "{stderr}");
    assert!(
        stderr.contains("still running an earlier call that timed out"),
        "{stderr}"
    );
    assert!(run.took < Duration::from_secs(15), "took {:?}", run.took);
}
