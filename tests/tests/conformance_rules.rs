//! Conformance: dispatch order and the combination rule of every event kind, as pi
//! 0.73.1 combines them (docs/sessions.md "Events and how results combine"), with real C plugins (`tests/fixtures/behave.c`)
//! loaded in-process by the real loader into a real `Runner`.

use pi_hooks_host::runner::Runner;
use pi_hooks_host::runner::events::{
    BeforeAgentStartOutcome, DiscoveredResources, InputOutcome, ToolCallOutcome, ToolResultPatch,
};
use pi_hooks_tests::BehaveWorld;
use serde_json::{Map, Value, json};

/// A `behave` configuration from handler entries.
fn handlers(entries: Value) -> Value {
    json!({ "handlers": entries })
}

fn tool_call(world: &BehaveWorld) -> ToolCallOutcome {
    world.runner.emit_tool_call(Runner::tool_call_payload(
        "call-1",
        "bash",
        &json!({"command": "ls"}),
    ))
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

// ---------------------------------------------------------------------------------------
// order

#[test]
fn handlers_run_in_load_order_then_registration_order() {
    // "zeta" loads first: the order is load order, not name order; inside a plugin its
    // handlers run in the order registered, other events in between notwithstanding.
    let world = BehaveWorld::new(&[
        (
            "zeta",
            handlers(json!([
                {"event": "turn_start", "id": "1"},
                {"event": "input", "id": "x"},
                {"event": "turn_start", "id": "2"},
            ])),
        ),
        (
            "alpha",
            handlers(json!([
                {"event": "turn_start", "id": "1"},
                {"event": "turn_start", "id": "2"},
            ])),
        ),
    ]);
    world
        .runner
        .emit(json!({"type": "turn_start", "turnIndex": 0, "timestamp": 5}));
    assert_eq!(
        world.calls(),
        [
            "zeta turn_start#1",
            "zeta turn_start#2",
            "alpha turn_start#1",
            "alpha turn_start#2"
        ]
    );
    for line in world.lines() {
        assert_eq!(
            line.value,
            json!({"type": "turn_start", "turnIndex": 0, "timestamp": 5})
        );
    }
    assert_eq!(world.errors(), []);
}

#[test]
fn has_handlers_is_true_only_for_registered_events_and_unknown_names_never_fire() {
    let world = BehaveWorld::new(&[(
        "solo",
        handlers(json!([
            {"event": "tool_call"},
            {"event": "no_such_event"},
        ])),
    )]);
    assert!(world.runner.has_handlers("tool_call"));
    assert!(world.runner.has_handlers("no_such_event"));
    assert!(!world.runner.has_handlers("tool_result"));
    assert!(!world.runner.has_handlers("input"));
    // Nothing registered for input: Continue, no call.
    assert_eq!(
        world.runner.emit_input("hi", None, "interactive"),
        InputOutcome::Continue
    );
    assert_eq!(world.calls(), Vec::<String>::new());
}

// ---------------------------------------------------------------------------------------
// notify

#[test]
fn notify_ignores_results_and_calls_every_handler() {
    let world = BehaveWorld::new(&[
        (
            "first",
            handlers(json!([
                {"event": "agent_end", "result": {"cancel": true, "block": true}},
                {"event": "agent_end", "result": {"action": "handled"}},
            ])),
        ),
        ("second", handlers(json!([{"event": "agent_end"}]))),
    ]);
    let event = json!({"type": "agent_end", "messages": [{"role": "user", "content": "x"}]});
    world.runner.emit(event.clone());
    assert_eq!(
        world.calls(),
        ["first agent_end", "first agent_end", "second agent_end"]
    );
    assert!(world.lines().iter().all(|l| l.value == event));
    assert_eq!(world.errors(), []);
}

// ---------------------------------------------------------------------------------------
// input

#[test]
fn input_transforms_chain_and_a_plain_string_is_a_transform() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "input", "id": "a", "result": {"action": "transform", "text": "first"}},
                {"event": "input", "id": "b", "result": "second"},
            ])),
        ),
        (
            "two",
            handlers(json!([{"event": "input", "result": {"action": "continue"}}])),
        ),
    ]);
    let outcome = world.runner.emit_input("original", None, "interactive");
    assert_eq!(
        outcome,
        InputOutcome::Transform {
            text: "second".into(),
            images: None
        }
    );
    assert_eq!(
        world.payload("one input#a"),
        json!({"type": "input", "text": "original", "source": "interactive"})
    );
    assert_eq!(world.payload("one input#b")["text"], "first");
    assert_eq!(
        world.payload("two input"),
        json!({"type": "input", "text": "second", "source": "interactive"})
    );
}

#[test]
fn input_handled_short_circuits_and_is_returned_as_given() {
    let handled = json!({"action": "handled", "note": "mine"});
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "input", "id": "a", "result": {"action": "transform", "text": "changed"}},
                {"event": "input", "id": "b", "result": handled},
                {"event": "input", "id": "c", "result": {"action": "transform", "text": "later"}},
            ])),
        ),
        ("two", handlers(json!([{"event": "input"}]))),
    ]);
    let outcome = world.runner.emit_input("original", None, "rpc");
    assert_eq!(outcome, InputOutcome::Handled(handled));
    assert_eq!(world.calls(), ["one input#a", "one input#b"]);
    assert_eq!(world.payload("one input#b")["text"], "changed");
    assert_eq!(world.payload("one input#b")["source"], "rpc");
}

#[test]
fn input_transform_back_to_the_same_text_is_continue() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(
                json!([{"event": "input", "result": {"action": "transform", "text": "other"}}]),
            ),
        ),
        (
            "two",
            handlers(
                json!([{"event": "input", "result": {"action": "transform", "text": "same"}}]),
            ),
        ),
    ]);
    assert_eq!(
        world.runner.emit_input("same", None, "interactive"),
        InputOutcome::Continue
    );
    assert_eq!(world.payload("two input")["text"], "other");
}

#[test]
fn input_images_are_kept_when_a_transform_omits_them_and_replaced_when_given() {
    let image = json!([{"type": "image", "data": "AAAA", "mimeType": "image/png"}]);
    let other = json!([{"type": "image", "data": "BBBB", "mimeType": "image/jpeg"}]);
    let world = BehaveWorld::new(&[
        (
            "keeps",
            handlers(json!([{"event": "input", "result": {"action": "transform", "text": "new"}}])),
        ),
        ("sees", handlers(json!([{"event": "input"}]))),
    ]);
    let outcome = world
        .runner
        .emit_input("old", Some(image.clone()), "interactive");
    assert_eq!(
        outcome,
        InputOutcome::Transform {
            text: "new".into(),
            images: Some(image.clone())
        }
    );
    assert_eq!(
        world.payload("sees input"),
        json!({"type": "input", "text": "new", "images": image, "source": "interactive"})
    );

    // A transform that gives images replaces them, even with the text unchanged.
    let world = BehaveWorld::new(&[(
        "swaps",
        handlers(
            json!([{"event": "input", "result": {"action": "transform", "text": "old", "images": other}}]),
        ),
    )]);
    assert_eq!(
        world.runner.emit_input("old", Some(image), "interactive"),
        InputOutcome::Transform {
            text: "old".into(),
            images: Some(other)
        }
    );
}

// ---------------------------------------------------------------------------------------
// before_agent_start

#[test]
fn before_agent_start_messages_accumulate_in_order() {
    let m1 = json!({"customType": "one", "content": "first", "display": true});
    let m2 = json!({"customType": "one", "content": "second", "display": false});
    let m3 = json!({"customType": "two", "content": [{"type": "text", "text": "third"}], "display": true, "details": {"k": 1}});
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "before_agent_start", "id": "a", "result": {"message": m1}},
                {"event": "before_agent_start", "id": "b", "result": {"message": m2}},
            ])),
        ),
        (
            "two",
            handlers(json!([{"event": "before_agent_start", "result": {"message": m3}}])),
        ),
    ]);
    let outcome = world.runner.emit_before_agent_start("do it", None, "BASE");
    assert_eq!(
        outcome,
        Some(BeforeAgentStartOutcome {
            messages: vec![m1, m2, m3],
            system_prompt: None
        })
    );
    assert_eq!(
        world.payload("one before_agent_start#a"),
        json!({"type": "before_agent_start", "prompt": "do it", "systemPrompt": "BASE"})
    );
    assert_eq!(world.errors(), []);
}

#[test]
fn before_agent_start_system_prompt_chains_through_payload_and_context() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(
                json!([{"event": "before_agent_start", "log_ctx_prompt": true, "result": {"systemPrompt": "P1"}}]),
            ),
        ),
        (
            "two",
            handlers(
                json!([{"event": "before_agent_start", "log_ctx_prompt": true, "result": {"systemPrompt": "P2"}}]),
            ),
        ),
        (
            "three",
            handlers(json!([{"event": "before_agent_start", "log_ctx_prompt": true}])),
        ),
    ]);
    let outcome = world.runner.emit_before_agent_start("go", None, "BASE");
    assert_eq!(
        outcome,
        Some(BeforeAgentStartOutcome {
            messages: vec![],
            system_prompt: Some("P2".into())
        })
    );
    assert_eq!(
        world.payload("one before_agent_start")["systemPrompt"],
        "BASE"
    );
    assert_eq!(world.payload("one before_agent_start:ctx_prompt"), "BASE");
    assert_eq!(
        world.payload("two before_agent_start")["systemPrompt"],
        "P1"
    );
    assert_eq!(world.payload("two before_agent_start:ctx_prompt"), "P1");
    assert_eq!(
        world.payload("three before_agent_start")["systemPrompt"],
        "P2"
    );
    assert_eq!(world.payload("three before_agent_start:ctx_prompt"), "P2");
}

#[test]
fn before_agent_start_set_system_prompt_from_the_context_chains() {
    let world = BehaveWorld::new(&[
        (
            "setter",
            handlers(json!([{"event": "before_agent_start", "set_system_prompt": "FROM CTX"}])),
        ),
        (
            "reader",
            handlers(json!([{"event": "before_agent_start", "log_ctx_prompt": true}])),
        ),
    ]);
    let outcome = world.runner.emit_before_agent_start("go", None, "BASE");
    assert_eq!(
        outcome,
        Some(BeforeAgentStartOutcome {
            messages: vec![],
            system_prompt: Some("FROM CTX".into())
        })
    );
    assert_eq!(world.payload("setter set_system_prompt:status"), 0);
    assert_eq!(
        world.payload("reader before_agent_start")["systemPrompt"],
        "FROM CTX"
    );
    assert_eq!(
        world.payload("reader before_agent_start:ctx_prompt"),
        "FROM CTX"
    );
}

#[test]
fn set_system_prompt_outside_before_agent_start_is_unavailable() {
    let world = BehaveWorld::new(&[(
        "setter",
        handlers(json!([{"event": "input", "set_system_prompt": "nope"}])),
    )]);
    assert_eq!(
        world.runner.emit_input("hi", None, "interactive"),
        InputOutcome::Continue
    );
    assert_eq!(
        world.payload("setter set_system_prompt:status"),
        pi_hooks_abi::ffi::PI_ERR_UNAVAILABLE
    );
}

#[test]
fn before_agent_start_is_none_when_nothing_changed() {
    let world = BehaveWorld::new(&[
        (
            "quiet",
            handlers(json!([
                {"event": "before_agent_start", "id": "none"},
                {"event": "before_agent_start", "id": "empty", "result": {}},
                {"event": "before_agent_start", "id": "null", "result": null},
                {"event": "before_agent_start", "id": "false", "result": false},
            ])),
        ),
        ("loud", handlers(json!([{"event": "before_agent_start"}]))),
    ]);
    assert_eq!(
        world.runner.emit_before_agent_start("go", None, "BASE"),
        None
    );
    assert_eq!(world.calls().len(), 5, "{:?}", world.calls());
}

// ---------------------------------------------------------------------------------------
// context

#[test]
fn context_chains_on_a_copy() {
    let original =
        vec![json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})];
    let from_one = vec![json!({"role": "user", "content": "one", "timestamp": 2})];
    let from_two = vec![
        json!({"role": "user", "content": "one", "timestamp": 2}),
        json!({"role": "user", "content": "two", "timestamp": 3}),
    ];
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([{"event": "context", "result": {"messages": from_one}}])),
        ),
        (
            "two",
            handlers(json!([
                {"event": "context", "id": "a", "result": {"messages": from_two}},
                {"event": "context", "id": "b", "result": {}},
            ])),
        ),
    ]);
    let kept = original.clone();
    let out = world.runner.emit_context(original);
    assert_eq!(out, from_two);
    assert_eq!(
        kept,
        [json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1})]
    );
    assert_eq!(
        world.payload("one context"),
        json!({"type": "context", "messages": kept})
    );
    assert_eq!(world.payload("two context#a")["messages"], json!(from_one));
    assert_eq!(world.payload("two context#b")["messages"], json!(from_two));
}

#[test]
fn context_an_empty_messages_array_is_a_replacement() {
    let world = BehaveWorld::new(&[
        (
            "emptier",
            handlers(json!([{"event": "context", "result": {"messages": []}}])),
        ),
        ("sees", handlers(json!([{"event": "context"}]))),
    ]);
    let messages = vec![json!({"role": "user", "content": "x", "timestamp": 1})];
    assert_eq!(world.runner.emit_context(messages), Vec::<Value>::new());
    assert_eq!(world.payload("sees context")["messages"], json!([]));
}

#[test]
fn context_without_changes_returns_the_same_messages() {
    let world = BehaveWorld::new(&[(
        "quiet",
        handlers(json!([{"event": "context", "result": {"other": 1}}])),
    )]);
    let messages = vec![json!({"role": "user", "content": "x", "timestamp": 1})];
    assert_eq!(world.runner.emit_context(messages.clone()), messages);
}

// ---------------------------------------------------------------------------------------
// tool_call

#[test]
fn tool_call_block_short_circuits() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "tool_call", "id": "a", "result": {"note": "allowed"}},
                {"event": "tool_call", "id": "b", "result": {"block": true, "reason": "nope"}},
                {"event": "tool_call", "id": "c"},
            ])),
        ),
        ("two", handlers(json!([{"event": "tool_call"}]))),
    ]);
    assert_eq!(
        tool_call(&world),
        ToolCallOutcome::Block {
            reason: "nope".into()
        }
    );
    assert_eq!(world.calls(), ["one tool_call#a", "one tool_call#b"]);
    assert_eq!(
        world.payload("one tool_call#a"),
        json!({"type": "tool_call", "toolCallId": "call-1", "toolName": "bash", "input": {"command": "ls"}})
    );
}

#[test]
fn tool_call_block_without_a_reason_gets_the_default_reason() {
    for result in [json!({"block": true}), json!({"block": true, "reason": ""})] {
        let world = BehaveWorld::new(&[(
            "blocker",
            handlers(json!([{"event": "tool_call", "result": result}])),
        )]);
        assert_eq!(
            tool_call(&world),
            ToolCallOutcome::Block {
                reason: "Tool execution was blocked".into()
            },
            "{result}"
        );
    }
}

#[test]
fn tool_call_returns_the_last_truthy_result_otherwise() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "tool_call", "id": "a", "result": {"x": 1}},
                {"event": "tool_call", "id": "b", "result": {"block": false, "reason": "not a block"}},
            ])),
        ),
        (
            "two",
            handlers(json!([
                {"event": "tool_call", "id": "a", "result": null},
                {"event": "tool_call", "id": "b"},
            ])),
        ),
    ]);
    assert_eq!(
        tool_call(&world),
        ToolCallOutcome::Allow {
            last: Some(json!({"block": false, "reason": "not a block"})),
            input: None,
        }
    );
    assert_eq!(world.calls().len(), 4);
}

#[test]
fn tool_call_falsy_results_count_as_no_result() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "tool_call", "id": "obj", "result": {}},
                {"event": "tool_call", "id": "false", "result": false},
                {"event": "tool_call", "id": "zero", "result": 0},
            ])),
        ),
        (
            "two",
            handlers(json!([
                {"event": "tool_call", "id": "empty", "result": ""},
                {"event": "tool_call", "id": "null", "result": null},
            ])),
        ),
    ]);
    // `{}` is truthy (an object), the later falsy ones are no result: the last truthy is {}.
    assert_eq!(
        tool_call(&world),
        ToolCallOutcome::Allow {
            last: Some(json!({})),
            input: None,
        }
    );
    assert_eq!(world.calls().len(), 5);

    let world = BehaveWorld::new(&[(
        "falsy",
        handlers(json!([
            {"event": "tool_call", "id": "false", "result": false},
            {"event": "tool_call", "id": "zero", "result": 0},
            {"event": "tool_call", "id": "empty", "result": ""},
            {"event": "tool_call", "id": "null", "result": null},
        ])),
    )]);
    assert_eq!(
        tool_call(&world),
        ToolCallOutcome::Allow {
            last: None,
            input: None
        }
    );
    assert_eq!(world.calls().len(), 4);
}

// ---------------------------------------------------------------------------------------
// tool_result

#[test]
fn tool_result_patches_chain() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([{"event": "tool_result", "result": {"content": text("A")}}])),
        ),
        (
            "two",
            handlers(json!([
                {"event": "tool_result", "id": "a", "result": {"details": {"k": 1}}},
                {"event": "tool_result", "id": "b"},
            ])),
        ),
    ]);
    let patch = world.runner.emit_tool_result(
        "call-1",
        "bash",
        &json!({"command": "ls"}),
        text("orig"),
        json!({"d": 0}),
        false,
    );
    assert_eq!(
        patch,
        Some(ToolResultPatch {
            content: text("A"),
            details: json!({"k": 1}),
            is_error: false
        })
    );
    assert_eq!(
        world.payload("one tool_result"),
        json!({"type": "tool_result", "toolCallId": "call-1", "toolName": "bash",
               "input": {"command": "ls"}, "content": text("orig"), "details": {"d": 0}, "isError": false})
    );
    assert_eq!(world.payload("two tool_result#a")["content"], text("A"));
    assert_eq!(
        world.payload("two tool_result#a")["details"],
        json!({"d": 0})
    );
    assert_eq!(world.payload("two tool_result#b")["content"], text("A"));
    assert_eq!(
        world.payload("two tool_result#b")["details"],
        json!({"k": 1})
    );
}

#[test]
fn tool_result_is_error_flip_is_applied() {
    let world = BehaveWorld::new(&[
        (
            "flips",
            handlers(json!([{"event": "tool_result", "result": {"isError": true}}])),
        ),
        ("sees", handlers(json!([{"event": "tool_result"}]))),
    ]);
    let patch =
        world
            .runner
            .emit_tool_result("call-1", "bash", &json!({}), text("fine"), json!({}), false);
    assert_eq!(
        patch,
        Some(ToolResultPatch {
            content: text("fine"),
            details: json!({}),
            is_error: true
        })
    );
    assert_eq!(world.payload("sees tool_result")["isError"], true);
}

#[test]
fn tool_result_runs_on_error_results_and_can_clear_the_error() {
    let world = BehaveWorld::new(&[(
        "fixer",
        handlers(
            json!([{"event": "tool_result", "result": {"isError": false, "content": text("recovered")}}]),
        ),
    )]);
    let patch = world.runner.emit_tool_result(
        "call-9",
        "bash",
        &json!({"command": "false"}),
        text("Command exited with code 1"),
        json!({}),
        true,
    );
    assert_eq!(
        patch,
        Some(ToolResultPatch {
            content: text("recovered"),
            details: json!({}),
            is_error: false
        })
    );
    let seen = world.payload("fixer tool_result");
    assert_eq!(seen["isError"], true);
    assert_eq!(seen["content"], text("Command exited with code 1"));
}

#[test]
fn tool_result_is_none_when_nothing_was_patched() {
    let world = BehaveWorld::new(&[(
        "quiet",
        handlers(json!([
            {"event": "tool_result", "id": "none"},
            {"event": "tool_result", "id": "empty", "result": {}},
            {"event": "tool_result", "id": "false", "result": false},
        ])),
    )]);
    let patch = world.runner.emit_tool_result(
        "call-1",
        "read",
        &json!({"path": "x"}),
        text("data"),
        json!({}),
        false,
    );
    assert_eq!(patch, None);
    assert_eq!(world.calls().len(), 3);
}

// ---------------------------------------------------------------------------------------
// session_before_*, legacy session, session.compacting

#[test]
fn session_before_cancel_short_circuits() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "session_before_switch", "id": "a", "result": {"note": 1}},
                {"event": "session_before_switch", "id": "b", "result": {"cancel": true}},
            ])),
        ),
        ("two", handlers(json!([{"event": "session_before_switch"}]))),
    ]);
    let event = json!({"type": "session_before_switch", "reason": "new"});
    assert_eq!(
        world.runner.emit_session_before(event.clone()),
        Some(json!({"cancel": true}))
    );
    assert_eq!(
        world.calls(),
        ["one session_before_switch#a", "one session_before_switch#b"]
    );
    assert_eq!(world.payload("one session_before_switch#a"), event);
}

#[test]
fn session_before_returns_the_last_truthy_non_cancel_result() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(
                json!([{"event": "session_before_fork", "result": {"skipConversationRestore": true}}]),
            ),
        ),
        (
            "two",
            handlers(json!([
                {"event": "session_before_fork", "id": "a", "result": {"cancel": false, "x": 2}},
                {"event": "session_before_fork", "id": "b", "result": null},
            ])),
        ),
    ]);
    assert_eq!(
        world
            .runner
            .emit_session_before(json!({"type": "session_before_fork", "entryId": "abcd1234"})),
        Some(json!({"cancel": false, "x": 2}))
    );
    assert_eq!(world.calls().len(), 3);

    let world = BehaveWorld::new(&[("quiet", handlers(json!([{"event": "session_before_tree"}])))]);
    assert_eq!(
        world
            .runner
            .emit_session_before(json!({"type": "session_before_tree", "preparation": {}})),
        None
    );
}

#[test]
fn session_before_compact_accepts_a_plain_string_summary() {
    let world = BehaveWorld::new(&[(
        "summariser",
        handlers(json!([{"event": "session_before_compact", "result": "my summary"}])),
    )]);
    assert_eq!(
        world.runner.emit_session_before(
            json!({"type": "session_before_compact", "preparation": {}, "branchEntries": []})
        ),
        Some(json!({"compaction": {"summary": "my summary"}}))
    );
}

#[test]
fn legacy_session_event_carries_the_reason_and_can_cancel() {
    let world = BehaveWorld::new(&[
        (
            "legacy",
            handlers(json!([{"event": "session", "result": {"cancel": true}}])),
        ),
        ("later", handlers(json!([{"event": "session"}]))),
    ]);
    let mut fields = Map::new();
    fields.insert("targetSessionFile".into(), "/tmp/x.jsonl".into());
    assert_eq!(
        world.runner.emit_legacy_session("before_switch", fields),
        Some(json!({"cancel": true}))
    );
    assert_eq!(world.calls(), ["legacy session"]);
    assert_eq!(
        world.payload("legacy session"),
        json!({"targetSessionFile": "/tmp/x.jsonl", "type": "session", "reason": "before_switch"})
    );
}

#[test]
fn session_compacting_last_wins() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([{"event": "session.compacting", "result": {"context": ["a"]}}])),
        ),
        (
            "two",
            handlers(json!([
                {"event": "session.compacting", "id": "a", "result": {"prompt": "b"}},
                {"event": "session.compacting", "id": "b", "result": false},
            ])),
        ),
    ]);
    assert_eq!(
        world
            .runner
            .emit_session_compacting(json!({"sessionID": "s"})),
        Some(json!({"prompt": "b"}))
    );
    assert_eq!(world.calls().len(), 3);
    assert_eq!(
        world.payload("one session.compacting"),
        json!({"sessionID": "s", "type": "session.compacting"})
    );
}

// ---------------------------------------------------------------------------------------
// user_bash, resources_discover

#[test]
fn user_bash_first_wins_and_the_rewrite_form_is_returned_as_is() {
    let rewrite = json!({"command": "ls -la", "cwd": "/tmp", "env": {"A": "1"}});
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "user_bash", "id": "a", "result": null},
                {"event": "user_bash", "id": "b", "result": rewrite},
            ])),
        ),
        (
            "two",
            handlers(
                json!([{"event": "user_bash", "result": {"result": {"output": "x", "exitCode": 0, "cancelled": false, "truncated": false}}}]),
            ),
        ),
    ]);
    assert_eq!(
        world.runner.emit_user_bash("ls", true, "/work"),
        Some(rewrite)
    );
    assert_eq!(world.calls(), ["one user_bash#a", "one user_bash#b"]);
    assert_eq!(
        world.payload("one user_bash#a"),
        json!({"type": "user_bash", "command": "ls", "excludeFromContext": true, "cwd": "/work"})
    );
}

#[test]
fn resources_discover_accumulates_paths_tagged_with_the_plugin() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(
                json!([{"event": "resources_discover", "result": {"skillPaths": ["s1", "s2"], "promptPaths": ["p1"]}}]),
            ),
        ),
        (
            "two",
            handlers(json!([
                {"event": "resources_discover", "id": "a", "result": {"skillPaths": ["s3"], "themePaths": ["t1"]}},
                {"event": "resources_discover", "id": "b", "result": {"promptPaths": ["p2"]}},
            ])),
        ),
    ]);
    let found = world.runner.emit_resources_discover("/work", "startup");
    let (one, two) = (world.path("one"), world.path("two"));
    let tag = |p: &str, by: &str| (p.to_owned(), by.to_owned());
    assert_eq!(
        found,
        DiscoveredResources {
            skill_paths: vec![tag("s1", &one), tag("s2", &one), tag("s3", &two)],
            prompt_paths: vec![tag("p1", &one), tag("p2", &two)],
            theme_paths: vec![tag("t1", &two)],
        }
    );
    assert_eq!(
        world.payload("one resources_discover"),
        json!({"type": "resources_discover", "cwd": "/work", "reason": "startup"})
    );
}

#[test]
fn a_payload_value_of_every_json_kind_reaches_the_plugin_intact() {
    // The notify payload is handed over as a host value: check a deep one round-trips.
    let event = json!({"type": "message_end", "message": {"role": "assistant", "n": -1.5,
        "big": 9007199254740993u64, "ok": true, "none": null, "list": [1, "two", [3], {"four": 4}],
        "text": "quote \" backslash \\ newline \n tab \t unicode é ✓"}});
    let world = BehaveWorld::new(&[("echo", handlers(json!([{"event": "message_end"}])))]);
    world.runner.emit(event.clone());
    let seen: Value = world.payload("echo message_end");
    assert_eq!(seen, event);
}

#[test]
fn an_empty_system_prompt_restores_the_base_prompt() {
    // pi: the combined systemPrompt replaces the base prompt only when it is truthy.
    let world = BehaveWorld::new(&[(
        "blank",
        handlers(json!([{"event": "before_agent_start", "result": {"systemPrompt": ""}}])),
    )]);
    let outcome = world.runner.emit_before_agent_start("go", None, "BASE");
    assert_eq!(
        outcome,
        Some(BeforeAgentStartOutcome {
            messages: vec![],
            system_prompt: None
        })
    );
}

// ---------------------------------------------------------------------------------------
// tool_call: rewriting the input (pi: "`event.input` is mutable ... later `tool_call` handlers
// see mutations made by earlier handlers ... no re-validation")

#[test]
fn tool_call_input_rewrites_chain_and_later_handlers_see_them() {
    let world = BehaveWorld::new(&[
        (
            "one",
            handlers(json!([
                {"event": "tool_call", "id": "a", "result": {"input": {"command": "pnpm ls"}}},
                {"event": "tool_call", "id": "b"},
            ])),
        ),
        (
            "two",
            handlers(json!([
                {"event": "tool_call", "id": "c", "result": {"input": {"command": "pnpm ls -a", "timeout": 5}}},
                {"event": "tool_call", "id": "d", "result": {"note": "seen"}},
            ])),
        ),
    ]);
    assert_eq!(
        tool_call(&world),
        ToolCallOutcome::Allow {
            last: Some(json!({"note": "seen"})),
            input: Some(json!({"command": "pnpm ls -a", "timeout": 5})),
        }
    );
    assert_eq!(
        world.payload("one tool_call#a")["input"],
        json!({"command": "ls"})
    );
    assert_eq!(
        world.payload("one tool_call#b"),
        json!({"type": "tool_call", "toolCallId": "call-1", "toolName": "bash", "input": {"command": "pnpm ls"}})
    );
    assert_eq!(
        world.payload("two tool_call#d")["input"],
        json!({"command": "pnpm ls -a", "timeout": 5})
    );
}

#[test]
fn tool_call_a_block_after_a_rewrite_still_wins_and_sees_the_rewrite() {
    let world = BehaveWorld::new(&[
        (
            "rewriter",
            handlers(json!([{"event": "tool_call", "result": {"input": {"command": "rm -rf /"}}}])),
        ),
        (
            "gate",
            handlers(json!([{"event": "tool_call", "if_contains": "rm -rf",
                "result": {"block": true, "reason": "dangerous"}}])),
        ),
    ]);
    assert_eq!(
        tool_call(&world),
        ToolCallOutcome::Block {
            reason: "dangerous".into()
        }
    );
}

#[test]
fn tool_call_a_rewrite_that_is_not_an_object_or_comes_with_an_error_fails_closed() {
    let world = BehaveWorld::new(&[(
        "bad",
        handlers(json!([{"event": "tool_call", "result": {"input": "pnpm ls"}}])),
    )]);
    let ToolCallOutcome::Block { reason } = tool_call(&world) else {
        panic!("a string input must not run the tool");
    };
    assert!(
        reason.starts_with("Extension bad (")
            && reason.ends_with(
                "failed, blocking execution: a tool_call result's input must be an object, got a string"
            ),
        "{reason}"
    );
    let world = BehaveWorld::new(&[(
        "erring",
        handlers(
            json!([{"event": "tool_call", "result": {"input": {"command": "pnpm ls"}},
            "error": "boom"}]),
        ),
    )]);
    assert!(
        matches!(tool_call(&world), ToolCallOutcome::Block { reason } if reason.contains("boom")),
        "a handler error after setting an input blocks"
    );
}
