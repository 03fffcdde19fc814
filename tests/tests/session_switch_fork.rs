//! Resuming another session, forking, cloning, model selection and the provider request hook,
//! end to end over RPC with real plugins (pi 0.73.1's runtime replacement: the cancellable
//! `session_before_*`, `session_shutdown {reason, targetSessionFile}`, `session_start {reason,
//! previousSessionFile}`, then the older hook API's `session_switch` / `session_fork`).

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::session_rpc::{close_ok, jsonl, prompt_to_end, request, rpc_with_watcher};
use pi_hooks_tests::{Sandbox, c_fixture, read_behave_log};
use serde_json::{Value, json};

/// The RPC command with the `watcher` plugin and `extra` plugins, and its session file.
fn rpc(sandbox: &Sandbox, script: Value, handlers: Value, extra: &[&Path]) -> (Command, PathBuf) {
    let file = sandbox.root().join("sessions").join("s.jsonl");
    (
        rpc_with_watcher(sandbox, &script, &handlers, &file, extra),
        file,
    )
}

fn reply_script() -> Value {
    json!({"turns": [{"text": "reply to ${PROMPT}"}]})
}

fn prompt(client: &mut Client, id: &str, message: &str) {
    prompt_to_end(client, id, message);
}

fn state(client: &mut Client) -> Value {
    request(client, "state", json!({"type": "get_state"}))["data"].clone()
}

fn session_file(client: &mut Client) -> PathBuf {
    PathBuf::from(
        state(client)["sessionFile"]
            .as_str()
            .expect("a session file"),
    )
}

fn lines(path: &Path) -> Vec<Value> {
    jsonl(path)
}

/// The texts of the user and assistant messages the agent holds.
fn message_texts(client: &mut Client) -> Vec<String> {
    let messages =
        request(client, "m", json!({"type": "get_messages"}))["data"]["messages"].clone();
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["content"]
                .as_array()
                .and_then(|c| c.iter().find_map(|b| b["text"].as_str()))
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The watcher's logged events (payloads), `:ctx` lines left out.
fn events(sandbox: &Sandbox) -> Vec<Value> {
    read_behave_log(&sandbox.root().join("behave.log"))
        .into_iter()
        .filter(|l| !l.tag.contains(':'))
        .map(|l| l.value)
        .collect()
}

fn close(client: Client) {
    close_ok(client);
}

const SESSION_EVENTS: [&str; 8] = [
    "session_before_switch",
    "session_before_fork",
    "session_shutdown",
    "session_start",
    "session_switch",
    "session_fork",
    "model_select",
    "resources_discover",
];

fn session_handlers() -> Value {
    SESSION_EVENTS.iter().map(|e| json!({"event": e})).collect()
}

#[test]
fn switch_session_resumes_another_file_with_pi_events() {
    let sandbox = Sandbox::new();
    let (command, first) = rpc(&sandbox, reply_script(), session_handlers(), &[]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "first");
    assert_eq!(
        request(&mut client, "n", json!({"type": "new_session"}))["data"],
        json!({"cancelled": false})
    );
    let second = session_file(&mut client);
    prompt(&mut client, "p2", "second");
    let response = request(
        &mut client,
        "sw",
        json!({"type": "switch_session", "sessionPath": first}),
    );
    assert_eq!(
        response,
        json!({"id": "sw", "type": "response", "command": "switch_session", "success": true, "data": {"cancelled": false}})
    );
    assert_eq!(session_file(&mut client), first);
    assert_eq!(message_texts(&mut client), ["first", "reply to first"]);
    // Later prompts land in the resumed file; the other one is closed and complete.
    prompt(&mut client, "p3", "third");
    let missing = sandbox.root().join("nope.jsonl");
    let failed = request(
        &mut client,
        "bad",
        json!({"type": "switch_session", "sessionPath": missing}),
    );
    assert_eq!(failed["success"], false);
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("nope.jsonl"), "{error}");
    assert_eq!(
        session_file(&mut client),
        first,
        "a failed switch keeps the session"
    );
    close(client);

    let texts = |path: &Path| -> Vec<String> {
        lines(path)
            .iter()
            .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
            .map(|e| {
                e["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(texts(&first), ["first", "third"]);
    assert_eq!(texts(&second), ["second"]);

    let events = events(&sandbox);
    let (first, second) = (first.display().to_string(), second.display().to_string());
    let resume: Vec<&Value> = events
        .iter()
        .skip_while(|e| e.get("reason") != Some(&json!("resume")))
        .collect();
    assert_eq!(
        resume[..5],
        [
            &json!({"type": "session_before_switch", "reason": "resume", "targetSessionFile": first}),
            &json!({"type": "session_shutdown", "reason": "resume", "targetSessionFile": first}),
            &json!({"type": "session_start", "reason": "resume", "previousSessionFile": second}),
            &json!({"type": "resources_discover", "cwd": sandbox.project().display().to_string(), "reason": "startup"}),
            &json!({"type": "session_switch", "reason": "resume", "previousSessionFile": second}),
        ]
    );
}

#[test]
fn a_plugin_can_cancel_a_resume() {
    let sandbox = Sandbox::new();
    let handlers = json!([{"event": "session_before_switch", "if_contains": "resume", "result": {"cancel": true}}, {"event": "session_shutdown"}]);
    let (command, first) = rpc(&sandbox, reply_script(), handlers, &[]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "first");
    request(&mut client, "n", json!({"type": "new_session"}));
    let second = session_file(&mut client);
    let response = request(
        &mut client,
        "sw",
        json!({"type": "switch_session", "sessionPath": first}),
    );
    assert_eq!(response["data"], json!({"cancelled": true}));
    assert_eq!(session_file(&mut client), second);
    close(client);
    let shutdowns: Vec<Value> = events(&sandbox)
        .into_iter()
        .filter(|e| e["type"] == "session_shutdown")
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(
        shutdowns,
        ["new", "quit"],
        "no shutdown for the cancelled resume"
    );
}

#[test]
fn fork_makes_a_new_file_with_the_branch_before_the_message() {
    let sandbox = Sandbox::new();
    let (command, original) = rpc(&sandbox, reply_script(), session_handlers(), &[]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "one");
    prompt(&mut client, "p2", "two");
    let forks = request(&mut client, "fm", json!({"type": "get_fork_messages"}));
    let messages = forks["data"]["messages"].as_array().unwrap().clone();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two"]);
    let two = messages[1]["entryId"].as_str().unwrap().to_owned();

    let bad = request(
        &mut client,
        "bad",
        json!({"type": "fork", "entryId": "nothere"}),
    );
    assert_eq!(
        (bad["success"].clone(), bad["error"].clone()),
        (json!(false), json!("Invalid entry ID for forking"))
    );
    let response = request(&mut client, "f", json!({"type": "fork", "entryId": two}));
    assert_eq!(response["data"], json!({"text": "two", "cancelled": false}));
    let forked = session_file(&mut client);
    assert_ne!(forked, original);
    assert_eq!(forked.parent(), original.parent());
    assert_eq!(message_texts(&mut client), ["one", "reply to one"]);
    prompt(&mut client, "p3", "three");

    let response = request(&mut client, "c", json!({"type": "clone"}));
    assert_eq!(response["data"], json!({"cancelled": false}));
    let cloned = session_file(&mut client);
    assert_ne!(cloned, forked);
    assert_eq!(
        message_texts(&mut client),
        ["one", "reply to one", "three", "reply to three"]
    );
    close(client);

    let forked_lines = lines(&forked);
    assert_eq!(
        forked_lines[0]["parentSession"],
        original.display().to_string()
    );
    let original_lines = lines(&original);
    // The branch was copied as it was: the same ids, parents and timestamps.
    assert_eq!(forked_lines[1..3], original_lines[1..3]);
    assert_eq!(
        lines(&cloned)[0]["parentSession"],
        forked.display().to_string()
    );

    let events = events(&sandbox);
    // As in pi, the unknown entry was offered to session_before_fork before it failed.
    assert_eq!(
        events
            .iter()
            .find(|e| e["type"] == "session_before_fork")
            .unwrap()["entryId"],
        "nothere"
    );
    let at = events
        .iter()
        .position(|e| e["type"] == "session_before_fork" && e["entryId"] == two.as_str())
        .unwrap();
    let (original, forked) = (original.display().to_string(), forked.display().to_string());
    assert_eq!(
        events[at..at + 5],
        [
            json!({"type": "session_before_fork", "entryId": two, "position": "before"}),
            json!({"type": "session_shutdown", "reason": "fork", "targetSessionFile": forked}),
            json!({"type": "session_start", "reason": "fork", "previousSessionFile": original}),
            json!({"type": "resources_discover", "cwd": sandbox.project().display().to_string(), "reason": "startup"}),
            json!({"type": "session_fork", "previousSessionFile": original}),
        ]
    );
    let clone_fork = events
        .iter()
        .filter(|e| e["type"] == "session_before_fork")
        .nth(2)
        .expect("a clone is a fork at the leaf");
    assert_eq!(clone_fork["position"], "at");
}

#[test]
fn models_can_be_listed_set_cycled_and_restored() {
    let sandbox = Sandbox::new();
    let script = json!({
        "turns": [{"text": "reply"}],
        "models": [{"id": "small", "contextWindow": 1000}, {"id": "large", "name": "Large"}],
    });
    let (command, first) = rpc(&sandbox, script, session_handlers(), &[]);
    let mut client = Client::start(command);
    let available = request(&mut client, "a", json!({"type": "get_available_models"}));
    let ids: Vec<&str> = available["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["small", "large"]);
    assert_eq!(state(&mut client)["model"]["id"], "small");

    let unknown = request(
        &mut client,
        "u",
        json!({"type": "set_model", "provider": "scripted", "modelId": "huge"}),
    );
    assert_eq!(unknown["error"], "Model not found: scripted/huge");
    let set = request(
        &mut client,
        "s",
        json!({"type": "set_model", "provider": "scripted", "modelId": "large"}),
    );
    assert_eq!(
        (set["success"].clone(), set["data"]["name"].clone()),
        (json!(true), json!("Large"))
    );
    assert_eq!(state(&mut client)["model"]["id"], "large");
    prompt(&mut client, "p1", "hi");
    let messages =
        request(&mut client, "m", json!({"type": "get_messages"}))["data"]["messages"].clone();
    assert_eq!(messages[1]["model"], "large", "the selected model answers");

    let cycled = request(&mut client, "c", json!({"type": "cycle_model"}));
    assert_eq!(cycled["data"]["model"]["id"], "small");
    assert_eq!(cycled["data"]["isScoped"], false);
    // Back to large, then a new session and a resume of the first: its model is restored.
    request(
        &mut client,
        "s2",
        json!({"type": "set_model", "provider": "scripted", "modelId": "large"}),
    );
    request(&mut client, "n", json!({"type": "new_session"}));
    request(
        &mut client,
        "s3",
        json!({"type": "set_model", "provider": "scripted", "modelId": "small"}),
    );
    request(
        &mut client,
        "sw",
        json!({"type": "switch_session", "sessionPath": first}),
    );
    assert_eq!(
        state(&mut client)["model"]["id"],
        "large",
        "restored from the session"
    );
    close(client);

    let changes: Vec<Value> = lines(&first)
        .into_iter()
        .filter(|e| e["type"] == "model_change")
        .map(|e| e["modelId"].clone())
        .collect();
    assert_eq!(changes, ["large", "small", "large"]);
    let selects: Vec<(Value, Value, Value)> = events(&sandbox)
        .into_iter()
        .filter(|e| e["type"] == "model_select")
        .map(|e| {
            (
                e["model"]["id"].clone(),
                e["previousModel"]["id"].clone(),
                e["source"].clone(),
            )
        })
        .collect();
    let expected = [
        ("large", "small", "set"),
        ("small", "large", "cycle"),
        ("large", "small", "set"),
        ("small", "large", "set"),
        ("large", "small", "restore"),
    ];
    let expected: Vec<(Value, Value, Value)> = expected
        .iter()
        .map(|(a, b, c)| (json!(a), json!(b), json!(c)))
        .collect();
    assert_eq!(selects, expected);
}

#[test]
fn before_provider_request_can_replace_the_request_body() {
    let sandbox = Sandbox::new();
    let replaced =
        json!({"model": "small", "messages": [{"role": "user", "content": "REWRITTEN BY PLUGIN"}]});
    let handlers = json!([
        {"event": "before_provider_request", "result": replaced},
        {"event": "after_provider_response"},
    ]);
    let script = json!({"turns": [{"text": "model saw: ${LAST_MESSAGE}"}]});
    let (command, _) = rpc(&sandbox, script, handlers, &[]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "original prompt");
    assert_eq!(
        request(&mut client, "t", json!({"type": "get_last_assistant_text"}))["data"]["text"],
        "model saw: REWRITTEN BY PLUGIN"
    );
    close(client);
    let events = events(&sandbox);
    let before = &events[0];
    assert_eq!(before["type"], "before_provider_request");
    assert_eq!(before["payload"]["model"], "script");
    let sent = &before["payload"]["messages"][0];
    assert_eq!(sent["role"], "user");
    assert_eq!(sent["content"][0]["text"], "original prompt");
    assert_eq!(
        events[1],
        json!({"type": "after_provider_response", "status": 200, "headers": {}})
    );
}

#[test]
fn plugin_commands_fork_switch_and_set_the_model() {
    let sandbox = Sandbox::new();
    let go = c_fixture(&sandbox.lib(), "session_go", &[]);
    let script =
        json!({"turns": [{"text": "reply"}], "models": [{"id": "small"}, {"id": "large"}]});
    let (command, original) = rpc(&sandbox, script, session_handlers(), &[&go]);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "one");
    prompt(&mut client, "p2", "two");
    let forks = request(&mut client, "fm", json!({"type": "get_fork_messages"}));
    let two = forks["data"]["messages"][1]["entryId"]
        .as_str()
        .unwrap()
        .to_owned();

    client.send(&json!({"id": "g1", "type": "prompt", "message": format!("/go fork {two}")}));
    assert_eq!(client.response("g1")["success"], true);
    let forked = session_file(&mut client);
    assert_ne!(forked, original);
    assert_eq!(message_texts(&mut client), ["one", "reply"]);

    client.send(&json!({"id": "g2", "type": "prompt", "message": format!("/go switch {}", original.display())}));
    assert_eq!(client.response("g2")["success"], true);
    assert_eq!(session_file(&mut client), original);

    client.send(&json!({"id": "g3", "type": "prompt", "message": "/go model large"}));
    assert_eq!(client.response("g3")["success"], true);
    assert_eq!(state(&mut client)["model"]["id"], "large");

    // An unknown entry: the fork fails after the command returned, reported as the
    // plugin's error for "fork".
    client.send(&json!({"id": "g4", "type": "prompt", "message": "/go fork nothere"}));
    let (_, error) = client.until(|l| l["type"] == "extension_error");
    assert_eq!(error["event"], "fork");
    assert_eq!(error["error"], "Invalid entry ID for forking");
    assert!(
        error["extensionPath"]
            .as_str()
            .unwrap()
            .ends_with("session_go.so"),
        "{error}"
    );
    close(client);

    let events = events(&sandbox);
    let reasons: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "session_start")
        .map(|e| e["reason"].clone())
        .collect();
    assert_eq!(reasons, ["startup", "fork", "resume"]);
    let select = events.iter().find(|e| e["type"] == "model_select").unwrap();
    assert_eq!(
        (select["model"]["id"].clone(), select["source"].clone()),
        (json!("large"), json!("set"))
    );
}

#[test]
fn a_plugin_command_can_shut_the_rpc_host_down() {
    let sandbox = Sandbox::new();
    let go = c_fixture(&sandbox.lib(), "session_go", &[]);
    let (command, _) = rpc(&sandbox, reply_script(), session_handlers(), &[&go]);
    let mut client = Client::start(command);
    client.send(&json!({"id": "bye", "type": "prompt", "message": "/go shutdown now"}));
    assert_eq!(client.response("bye")["success"], true);
    // The host exits by itself, stdin still open.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = client.try_wait() {
            break status;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    let shutdowns: Vec<Value> = events(&sandbox)
        .into_iter()
        .filter(|e| e["type"] == "session_shutdown")
        .collect();
    assert_eq!(
        shutdowns,
        [json!({"type": "session_shutdown", "reason": "quit"})]
    );
}
