//! Conformance: error paths and timeouts. A failing handler of any event but `tool_call` is reported as
//! `{extensionPath, event, error}` and the chain goes on from the state before it; in
//! `tool_call` an error, a panic or a timeout blocks the tool, reported nowhere.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_hooks_host::runner::events::{
    BeforeAgentStartOutcome, InputOutcome, ToolCallOutcome, ToolResultPatch,
};
use pi_hooks_host::runner::{DEFAULT_HOOK_TIMEOUT, ExtensionError, Runner};
use pi_hooks_tests::{BehaveWorld, Sandbox, load_behave, rust_plugin};
use serde_json::{Value, json};

fn handlers(entries: Value) -> Value {
    json!({ "handlers": entries })
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn bash_call(world: &BehaveWorld, command: &str) -> ToolCallOutcome {
    world.runner.emit_tool_call(Runner::tool_call_payload(
        "call-1",
        "bash",
        &json!({"command": command}),
    ))
}

fn error(path: String, event: &str, message: &str) -> ExtensionError {
    ExtensionError {
        extension_path: path,
        event: event.to_owned(),
        error: message.to_owned(),
    }
}

/// Waits until the log holds `who` (a call that outlived its dispatch).
fn wait_for_line(world: &BehaveWorld, who: &str, limit: Duration) {
    let start = Instant::now();
    while !world.calls().iter().any(|c| c == who) {
        assert!(
            start.elapsed() < limit,
            "no {who:?} after {limit:?}: {:?}",
            world.calls()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------------------
// errors outside tool_call

#[test]
fn an_input_error_is_reported_and_the_chain_goes_on_from_the_state_before_it() {
    let world = BehaveWorld::new(&[
        (
            "good",
            handlers(json!([{"event": "input", "result": {"action": "transform", "text": "one"}}])),
        ),
        (
            // Sets a result and then fails: the result must be thrown away.
            "bad",
            handlers(
                json!([{"event": "input", "result": {"action": "transform", "text": "BAD"}, "error": "bad broke"}]),
            ),
        ),
        ("after", handlers(json!([{"event": "input"}]))),
    ]);
    assert_eq!(
        world.runner.emit_input("orig", None, "interactive"),
        InputOutcome::Transform {
            text: "one".into(),
            images: None
        }
    );
    assert_eq!(world.payload("after input")["text"], "one");
    assert_eq!(
        world.errors(),
        [error(world.path("bad"), "input", "bad broke")]
    );
}

#[test]
fn a_notify_error_is_reported_with_the_event_name_and_later_handlers_still_run() {
    let world = BehaveWorld::new(&[
        (
            "bad",
            handlers(json!([
                {"event": "session_start", "id": "a", "error": "first failure"},
                {"event": "session_start", "id": "b"},
            ])),
        ),
        (
            "worse",
            handlers(json!([{"event": "session_start", "error": "second failure"}])),
        ),
        ("after", handlers(json!([{"event": "session_start"}]))),
    ]);
    world.runner.emit(json!({"type": "session_start"}));
    assert_eq!(
        world.calls(),
        [
            "bad session_start#a",
            "bad session_start#b",
            "worse session_start",
            "after session_start"
        ]
    );
    assert_eq!(
        world.errors(),
        [
            error(world.path("bad"), "session_start", "first failure"),
            error(world.path("worse"), "session_start", "second failure"),
        ]
    );
}

#[test]
fn a_tool_result_error_does_not_patch_and_the_chain_goes_on() {
    let world = BehaveWorld::new(&[
        (
            "good",
            handlers(json!([{"event": "tool_result", "result": {"content": text("good")}}])),
        ),
        (
            "bad",
            handlers(
                json!([{"event": "tool_result", "result": {"content": text("BAD"), "isError": true}, "error": "patch failed"}]),
            ),
        ),
        ("after", handlers(json!([{"event": "tool_result"}]))),
    ]);
    let patch =
        world
            .runner
            .emit_tool_result("call-1", "bash", &json!({}), text("orig"), json!({}), false);
    assert_eq!(
        patch,
        Some(ToolResultPatch {
            content: text("good"),
            details: json!({}),
            is_error: false
        })
    );
    assert_eq!(world.payload("after tool_result")["content"], text("good"));
    assert_eq!(world.payload("after tool_result")["isError"], false);
    assert_eq!(
        world.errors(),
        [error(world.path("bad"), "tool_result", "patch failed")]
    );
}

#[test]
fn a_before_agent_start_error_undoes_its_set_system_prompt() {
    let world = BehaveWorld::new(&[
        (
            "good",
            handlers(json!([{"event": "before_agent_start", "result": {"systemPrompt": "GOOD"}}])),
        ),
        (
            "bad",
            handlers(
                json!([{"event": "before_agent_start", "set_system_prompt": "BAD", "result": {"message": {"customType": "x", "content": "BAD", "display": true}}, "error": "no prompt for you"}]),
            ),
        ),
        (
            "after",
            handlers(json!([{"event": "before_agent_start", "log_ctx_prompt": true}])),
        ),
    ]);
    assert_eq!(
        world.runner.emit_before_agent_start("go", None, "BASE"),
        Some(BeforeAgentStartOutcome {
            messages: vec![],
            system_prompt: Some("GOOD".into())
        })
    );
    assert_eq!(
        world.payload("after before_agent_start")["systemPrompt"],
        "GOOD"
    );
    assert_eq!(world.payload("after before_agent_start:ctx_prompt"), "GOOD");
    assert_eq!(
        world.errors(),
        [error(
            world.path("bad"),
            "before_agent_start",
            "no prompt for you"
        )]
    );
}

#[test]
fn a_context_error_keeps_the_messages_from_before_it() {
    let before = vec![json!({"role": "user", "content": "kept", "timestamp": 1})];
    let world = BehaveWorld::new(&[
        (
            "good",
            handlers(json!([{"event": "context", "result": {"messages": before}}])),
        ),
        (
            "bad",
            handlers(
                json!([{"event": "context", "result": {"messages": []}, "error": "ctx failed"}]),
            ),
        ),
    ]);
    assert_eq!(world.runner.emit_context(vec![]), before);
    assert_eq!(
        world.errors(),
        [error(world.path("bad"), "context", "ctx failed")]
    );
}

#[test]
fn error_listeners_are_called_in_order_and_unsubscribe_stops_reports() {
    let world = BehaveWorld::new(&[(
        "bad",
        handlers(json!([{"event": "turn_end", "error": "boom"}])),
    )]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (seen.clone(), seen.clone());
    let first = world.runner.on_error(Arc::new(move |e: &ExtensionError| {
        a.lock().unwrap().push(format!("first {}", e.error));
    }));
    world.runner.on_error(Arc::new(move |e: &ExtensionError| {
        b.lock().unwrap().push(format!("second {}", e.error));
    }));
    world
        .runner
        .emit(json!({"type": "turn_end", "turnIndex": 0}));
    assert_eq!(*seen.lock().unwrap(), ["first boom", "second boom"]);

    world.runner.unsubscribe(first);
    world.runner.unsubscribe(world.listener);
    world
        .runner
        .emit(json!({"type": "turn_end", "turnIndex": 1}));
    assert_eq!(
        *seen.lock().unwrap(),
        ["first boom", "second boom", "second boom"]
    );
    // The recording listener saw only the first report.
    assert_eq!(world.errors().len(), 1);
}

// ---------------------------------------------------------------------------------------
// tool_call fails closed

#[test]
fn a_tool_call_error_blocks_with_a_reason_naming_the_plugin_and_is_not_reported() {
    let world = BehaveWorld::new(&[
        (
            "strict",
            handlers(json!([{"event": "tool_call", "error": "policy engine down"}])),
        ),
        ("after", handlers(json!([{"event": "tool_call"}]))),
    ]);
    let ToolCallOutcome::Block { reason } = bash_call(&world, "ls") else {
        panic!("a tool_call error must block");
    };
    assert!(reason.contains("policy engine down"), "{reason}");
    assert!(
        reason.contains("strict") || reason.contains(&world.path("strict")),
        "the reason must name the plugin: {reason}"
    );
    assert_eq!(world.calls(), ["strict tool_call"]);
    assert_eq!(world.errors(), []);
}

#[test]
fn a_tool_call_panic_or_failure_in_a_rust_plugin_blocks() {
    let sandbox = Sandbox::new();
    let log = sandbox.root().join("behave.log");
    let rust = rust_plugin("fixture-rust-init");
    let mut plugins = vec![Arc::new(
        pi_hooks_host::lifecycle::load::load_file(&rust, &sandbox.root().join("cache"))
            .expect("load fixture"),
    )];
    plugins.extend(load_behave(
        &sandbox,
        &[("after", handlers(json!([{"event": "tool_call"}])))],
        &log,
    ));
    let world = BehaveWorld::over(sandbox, log, plugins, DEFAULT_HOOK_TIMEOUT, None);

    let ToolCallOutcome::Block { reason } = bash_call(&world, "panic") else {
        panic!("a tool_call panic must block");
    };
    assert!(reason.contains("handler panic for call-1"), "{reason}");
    assert!(reason.contains("fixture-rust-init"), "{reason}");

    let ToolCallOutcome::Block { reason } = bash_call(&world, "fail") else {
        panic!("a tool_call failure must block");
    };
    assert!(reason.contains("handler failure"), "{reason}");
    assert!(reason.contains("fixture-rust-init"), "{reason}");

    // Short-circuit: the handler after the failing one never ran; no reports.
    assert_eq!(world.calls(), Vec::<String>::new());
    assert_eq!(world.errors(), []);

    // The plugin keeps working after its panic.
    assert_eq!(
        bash_call(&world, "ls"),
        ToolCallOutcome::Allow {
            last: None,
            input: None
        }
    );
    assert_eq!(world.calls(), ["after tool_call"]);
}

#[test]
fn a_tool_call_timeout_blocks_and_names_the_timeout() {
    let world = BehaveWorld::with_timeouts(
        &[
            (
                "slow",
                handlers(json!([{"event": "tool_call", "sleep_ms": 1500}])),
            ),
            ("after", handlers(json!([{"event": "tool_call"}]))),
        ],
        DEFAULT_HOOK_TIMEOUT,
        Some(Duration::from_millis(150)),
    );
    let start = Instant::now();
    let outcome = bash_call(&world, "ls");
    let took = start.elapsed();
    let ToolCallOutcome::Block { reason } = outcome else {
        panic!("a tool_call timeout must block, got {outcome:?}");
    };
    assert!(reason.contains("timed out"), "{reason}");
    assert!(
        reason.contains("slow") || reason.contains(&world.path("slow")),
        "the reason must name the plugin: {reason}"
    );
    assert!(
        took < Duration::from_millis(1000),
        "the dispatch waited for the slow handler: {took:?}"
    );
    assert_eq!(world.calls(), ["slow tool_call"]);
    assert_eq!(world.errors(), []);
}

#[test]
fn while_a_timed_out_tool_call_handler_still_runs_its_plugin_fails_closed() {
    let world = BehaveWorld::with_timeouts(
        &[(
            "slow",
            handlers(json!([{"event": "tool_call", "if_contains": "slowcmd", "sleep_ms": 1200}])),
        )],
        DEFAULT_HOOK_TIMEOUT,
        Some(Duration::from_millis(150)),
    );
    assert!(matches!(
        bash_call(&world, "slowcmd"),
        ToolCallOutcome::Block { .. }
    ));
    // The plugin cannot check this call: the tool must not run unchecked.
    let outcome = bash_call(&world, "ls");
    let ToolCallOutcome::Block { reason } = outcome else {
        panic!("a plugin still busy with a timed-out call must not let tools through: {outcome:?}");
    };
    assert!(
        reason.contains("slow") || reason.contains(&world.path("slow")),
        "the reason must name the plugin: {reason}"
    );
    assert_eq!(world.calls(), ["slow tool_call"]);
    // Once the stuck call returns, the plugin checks calls again.
    wait_for_line(&world, "slow tool_call:done", Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        bash_call(&world, "ls"),
        ToolCallOutcome::Allow {
            last: None,
            input: None
        }
    );
    assert_eq!(
        world.calls(),
        ["slow tool_call", "slow tool_call:done", "slow tool_call"]
    );
    assert_eq!(world.errors(), []);
}

#[test]
fn tool_call_is_untimed_without_tool_call_timeout_even_with_a_short_hook_timeout() {
    let world = BehaveWorld::with_timeouts(
        &[(
            "slow",
            handlers(
                json!([{"event": "tool_call", "sleep_ms": 400, "result": {"block": true, "reason": "slow but sure"}}]),
            ),
        )],
        Duration::from_millis(100),
        None,
    );
    assert_eq!(
        bash_call(&world, "ls"),
        ToolCallOutcome::Block {
            reason: "slow but sure".into()
        }
    );
    assert_eq!(world.errors(), []);
}

// ---------------------------------------------------------------------------------------
// hookTimeout

#[test]
fn a_hook_timeout_is_reported_the_chain_goes_on_and_the_plugin_gets_no_call_until_it_returns() {
    let world = BehaveWorld::with_timeouts(
        &[
            (
                "slow",
                handlers(json!([
                    {"event": "turn_start", "id": "sleepy", "sleep_ms": 2000},
                    {"event": "turn_start", "id": "second"},
                    {"event": "turn_end"},
                ])),
            ),
            (
                "next",
                handlers(json!([
                    {"event": "turn_start"},
                    {"event": "turn_end"},
                ])),
            ),
        ],
        Duration::from_millis(200),
        None,
    );
    let start = Instant::now();
    world
        .runner
        .emit(json!({"type": "turn_start", "turnIndex": 0}));
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(1000),
        "the dispatch waited for the slow handler: {took:?}"
    );
    let reports = world.errors();
    assert_eq!(
        reports.first(),
        Some(&error(
            world.path("slow"),
            "turn_start",
            "timed out after 200ms"
        )),
        "{reports:?}"
    );
    assert!(
        reports
            .iter()
            .all(|r| r.extension_path == world.path("slow")),
        "{reports:?}"
    );
    // The next plugin ran while the slow call was still running; the slow plugin's own
    // second handler was not called (calls into one plugin never overlap).
    assert_eq!(world.calls(), ["slow turn_start#sleepy", "next turn_start"]);

    // Still running: the slow plugin gets no call, the others do.
    world
        .runner
        .emit(json!({"type": "turn_end", "turnIndex": 0}));
    assert_eq!(
        world.calls(),
        ["slow turn_start#sleepy", "next turn_start", "next turn_end"]
    );

    // Once the call returns, the plugin is called again.
    wait_for_line(
        &world,
        "slow turn_start#sleepy:done",
        Duration::from_secs(5),
    );
    std::thread::sleep(Duration::from_millis(50));
    world
        .runner
        .emit(json!({"type": "turn_end", "turnIndex": 1}));
    assert_eq!(
        world.calls(),
        [
            "slow turn_start#sleepy",
            "next turn_start",
            "next turn_end",
            "slow turn_start#sleepy:done",
            "slow turn_end",
            "next turn_end"
        ]
    );
}

#[test]
fn a_hook_timeout_applies_per_handler_to_chains_too() {
    // A timed-out input handler: reported, its result never counts, the chain goes on.
    let world = BehaveWorld::with_timeouts(
        &[
            (
                "slow",
                handlers(
                    json!([{"event": "input", "sleep_ms": 800, "result": {"action": "handled"}}]),
                ),
            ),
            (
                "next",
                handlers(
                    json!([{"event": "input", "result": {"action": "transform", "text": "next"}}]),
                ),
            ),
        ],
        Duration::from_millis(150),
        None,
    );
    assert_eq!(
        world.runner.emit_input("orig", None, "interactive"),
        InputOutcome::Transform {
            text: "next".into(),
            images: None
        }
    );
    assert_eq!(
        world.errors(),
        [error(world.path("slow"), "input", "timed out after 150ms")]
    );
    // Let the abandoned call finish before the plugin is unloaded.
    wait_for_line(&world, "slow input:done", Duration::from_secs(5));
}

#[test]
fn a_timed_out_before_agent_start_handler_cannot_change_the_prompt_afterwards() {
    // "slow" overruns (500 ms limit) and calls set_system_prompt only at 700 ms, while "next"
    // (400 ms, within its own limit) is running: the abandoned call must change nothing.
    let world = BehaveWorld::with_timeouts(
        &[
            (
                "slow",
                handlers(
                    json!([{"event": "before_agent_start", "sleep_ms": 700, "set_system_prompt": "LATE"}]),
                ),
            ),
            (
                "next",
                handlers(
                    json!([{"event": "before_agent_start", "sleep_ms": 400, "log_ctx_prompt": true}]),
                ),
            ),
        ],
        Duration::from_millis(500),
        None,
    );
    let outcome = world.runner.emit_before_agent_start("go", None, "BASE");
    assert_eq!(
        world.errors(),
        [error(
            world.path("slow"),
            "before_agent_start",
            "timed out after 500ms"
        )]
    );
    assert_eq!(outcome, None, "{:?}", world.calls());
    assert_eq!(world.payload("next before_agent_start:ctx_prompt"), "BASE");
}
