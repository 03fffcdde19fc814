//! pi's automatic retry of a transient model error (settings.json `retry`, RPC
//! `set_auto_retry` / `abort_retry`), against the fake OpenAI server: the events pi prints,
//! the context the retry is sent with, the session that keeps the failed answers, and the
//! plugins that subscribe to `auto_retry_start` / `auto_retry_end` (oh-my-pi's events).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::session_rpc::{close_ok, request};
use pi_hooks_tests::{Sandbox, behave_command, json_lines, read_behave_log};
use serde_json::{Value, json};

/// A server that answers 503 `failures` times, then "recovered".
fn flaky(failures: usize) -> FakeOpenAi {
    let calls = Arc::new(AtomicUsize::new(0));
    FakeOpenAi::start(move |_| {
        if calls.fetch_add(1, Ordering::SeqCst) < failures {
            Reply::Status(
                503,
                json!({"error": {"message": "The server is overloaded"}}).to_string(),
            )
        } else {
            Reply::Text("recovered".into())
        }
    })
}

fn write_settings(sandbox: &Sandbox, settings: Value) {
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
}

fn provider_args(server: &FakeOpenAi) -> Vec<String> {
    [
        "--provider",
        "local",
        "--model",
        "m",
        "--base-url",
        &server.base_url,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The retry events and the runs around them, in order.
fn outline(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| match l["type"].as_str()? {
            "agent_start" | "agent_end" => Some(l["type"].as_str()?.to_owned()),
            "message_end" if l["message"]["role"] == "assistant" => Some(format!(
                "assistant {}",
                l["message"]["stopReason"].as_str().unwrap_or_default()
            )),
            "auto_retry_start" => Some(format!(
                "auto_retry_start {} {} {} {}",
                l["attempt"], l["maxAttempts"], l["delayMs"], l["errorMessage"]
            )),
            "auto_retry_end" => Some(format!(
                "auto_retry_end {} {} {}",
                l["success"], l["attempt"], l["finalError"]
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn a_transient_error_is_retried_with_backoff_and_the_run_recovers() {
    let server = flaky(2);
    let sandbox = Sandbox::new();
    write_settings(&sandbox, json!({"retry": {"baseDelayMs": 50}}));
    let session = sandbox.root().join("s.jsonl");
    let handlers =
        json!({"handlers": [{"event": "auto_retry_start"}, {"event": "auto_retry_end"}]});
    let mut command = behave_command(
        &sandbox,
        &[("watcher", handlers)],
        &[
            "run",
            "--mode",
            "json",
            "--session",
            session.to_str().unwrap(),
        ],
    );
    command
        .args(provider_args(&server))
        .arg("hello")
        .env("OPENAI_API_KEY", "sk-test");
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let error = "\"503 The server is overloaded\"";
    assert_eq!(
        outline(&json_lines(&output)),
        [
            "agent_start".to_owned(),
            "assistant error".into(),
            "agent_end".into(),
            format!("auto_retry_start 1 3 50 {error}"),
            "agent_start".into(),
            "assistant error".into(),
            "agent_end".into(),
            format!("auto_retry_start 2 3 100 {error}"),
            "agent_start".into(),
            "assistant stop".into(),
            "auto_retry_end true 2 null".into(),
            "agent_end".into(),
        ]
    );
    // Each retry is sent without the failed answers: the user's message only.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for body in &requests {
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["role"].as_str())
            .filter(|r| *r != "system")
            .collect();
        assert_eq!(roles, ["user"], "{body}");
    }
    // The session keeps them.
    let stops: Vec<String> = pi_hooks_tests::session_rpc::jsonl(&session)
        .iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .map(|e| e["message"]["stopReason"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(stops, ["error", "error", "stop"]);
    // Plugins that subscribe get them too (oh-my-pi's events; pi keeps them to its clients).
    let seen: Vec<(String, Value)> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .map(|l| (l.tag, l.value))
        .collect();
    assert_eq!(seen.len(), 3, "{seen:#?}");
    assert_eq!(seen[0].0, "auto_retry_start");
    assert_eq!(seen[0].1["attempt"], 1);
    assert_eq!(seen[1].1["delayMs"], 100);
    assert_eq!(
        seen[2],
        (
            "auto_retry_end".to_owned(),
            json!({"type": "auto_retry_end", "success": true, "attempt": 2})
        )
    );
}

#[test]
fn retries_give_up_after_max_retries_and_errors_that_are_not_transient_are_not_retried() {
    let server = flaky(usize::MAX);
    let sandbox = Sandbox::new();
    write_settings(
        &sandbox,
        json!({"retry": {"baseDelayMs": 10, "maxRetries": 2}}),
    );
    let output = json_run(&sandbox, &server);
    let outline = outline(&json_lines(&output));
    assert_eq!(
        outline.last().map(String::as_str),
        Some("auto_retry_end false 2 \"503 The server is overloaded\""),
        "{outline:#?}"
    );
    assert_eq!(server.requests().len(), 3, "the first try and two retries");

    // A 401 is not transient: one request, no retry event.
    let server = FakeOpenAi::start(|_| {
        Reply::Status(401, json!({"error": {"message": "bad key"}}).to_string())
    });
    let output = json_run(&sandbox, &server);
    assert_eq!(
        outline_of(&output),
        ["agent_start", "assistant error", "agent_end"]
    );
    assert_eq!(server.requests().len(), 1);

    // `retry.enabled: false`: no retry either. A wrong value is named.
    write_settings(&sandbox, json!({"retry": {"enabled": false}}));
    let server = flaky(1);
    let output = json_run(&sandbox, &server);
    assert_eq!(
        outline_of(&output),
        ["agent_start", "assistant error", "agent_end"]
    );
    write_settings(&sandbox, json!({"retry": {"maxRetries": "three"}}));
    let output = sandbox.command(&["list"]).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("settings key `retry.maxRetries` must be a whole number, found \"three\""),
        "{text}"
    );
}

/// `pi-hooks run --mode json --no-session hello` against `server`.
fn json_run(sandbox: &Sandbox, server: &FakeOpenAi) -> std::process::Output {
    sandbox
        .command(&["run", "--mode", "json", "--no-session"])
        .args(provider_args(server))
        .arg("hello")
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap()
}

fn outline_of(output: &std::process::Output) -> Vec<String> {
    outline(&json_lines(output))
}

#[test]
fn rpc_abort_retry_cancels_the_wait_and_set_auto_retry_turns_it_off() {
    let server = flaky(1);
    let sandbox = Sandbox::new();
    write_settings(&sandbox, json!({"retry": {"baseDelayMs": 60000}}));
    let mut command = sandbox.command(&["rpc", "--no-session"]);
    command
        .args(provider_args(&server))
        .env("OPENAI_API_KEY", "sk-test");
    let mut client = RpcClient::start(command);
    client.send(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    let (_, start) = client.until(|l| l["type"] == "auto_retry_start");
    assert_eq!(start["delayMs"], 60000);
    client.send(&json!({"id": "a", "type": "abort_retry"}));
    // The response (the command's thread) and `auto_retry_end` (the run's) may come in
    // either order; both must come.
    let (mut response, mut end) = (None, None);
    while response.is_none() || end.is_none() {
        let line = client.next_line();
        if line["type"] == "response" && line["id"] == "a" {
            response = Some(line);
        } else if line["type"] == "auto_retry_end" {
            end = Some(line);
        }
    }
    assert_eq!(
        response.unwrap(),
        json!({"id": "a", "type": "response", "command": "abort_retry", "success": true})
    );
    let end = end.unwrap();
    assert_eq!(
        end,
        json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "Retry cancelled"})
    );
    assert_eq!(server.requests().len(), 1, "no retry after abort_retry");

    let response = request(
        &mut client,
        "s",
        json!({"type": "set_auto_retry", "enabled": false}),
    );
    assert_eq!(response["success"], true, "{response}");
    let response = request(&mut client, "bad", json!({"type": "set_auto_retry"}));
    assert_eq!(response["success"], false, "{response}");
    close_ok(client);
}
