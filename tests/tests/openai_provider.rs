//! The OpenAI-compatible provider (loader/agent/src/model/openai/) end to end: the real
//! `pi-hooks` binary in print, JSON and RPC mode against the fake chat-completions server
//! (tests/src/fake_openai.rs) on 127.0.0.1: streamed text, reasoning, tool calls whose
//! arguments arrive in pieces and run through the real tool path (a real C plugin sees the
//! `tool_call`), usage, `before_provider_request` replacing the body, and every way a server
//! can fail (HTTP 401 and 500, a chunk that is not JSON, a stream cut off, no server at all),
//! each ending the turn with pi's `stopReason: "error"` while the session goes on.

use std::process::{Command, Output};

use pi_hooks_tests::fake_openai::{
    FakeOpenAi, Reply, after_tool, chunk, last_user_text, tool_call, usage_chunk,
};
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::session_rpc::{close_ok, prompt_to_end, request};
use pi_hooks_tests::{Sandbox, behave_command, json_lines, read_behave_log};
use serde_json::{Value, json};

/// `pi-hooks run --mode json --no-session` against `server` as the provider `local`.
fn json_run(sandbox: &Sandbox, server: &FakeOpenAi, prompt: &str) -> (Output, Vec<Value>) {
    let output = provider_command(sandbox, server, &["run", "--mode", "json", prompt])
        .output()
        .expect("run pi-hooks");
    let lines = json_lines(&output);
    (output, lines)
}

fn provider_command(sandbox: &Sandbox, server: &FakeOpenAi, args: &[&str]) -> Command {
    let mut command = sandbox.command(args);
    command
        .args(["--no-session", "--provider", "local", "--model", "m"])
        .args(["--base-url", &server.base_url])
        .env("OPENAI_API_KEY", "sk-test-key");
    command
}

/// The one `message_end` of an assistant message in `lines`.
fn assistant_end(lines: &[Value]) -> &Value {
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .collect();
    assert_eq!(ends.len(), 1, "{lines:#?}");
    &ends[0]["message"]
}

fn update_kinds(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .map(|l| {
            l["assistantMessageEvent"]["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn streamed_text_arrives_in_deltas_with_usage_and_the_key() {
    let server = FakeOpenAi::start(|_| {
        Reply::Chunks(vec![
            chunk(json!({"role": "assistant", "content": ""}), None),
            chunk(json!({"content": "Hello"}), None),
            chunk(json!({"content": ", "}), None),
            chunk(json!({"content": "world."}), None),
            chunk(json!({}), Some("stop")),
            usage_chunk(1200, 7),
        ])
    });
    let sandbox = Sandbox::new();
    let (output, lines) = json_run(&sandbox, &server, "Say hello");
    assert!(output.status.success(), "{}", stderr(&output));
    let deltas: Vec<&str> = lines
        .iter()
        .filter(|l| l["assistantMessageEvent"]["type"] == "text_delta")
        .map(|l| l["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["Hello", ", ", "world."]);
    // As pi's agent loop: the stream's `start` and `done` are message_start / message_end,
    // never updates.
    let kinds = update_kinds(&lines);
    assert_eq!(kinds.first().map(String::as_str), Some("text_start"));
    assert_eq!(kinds.last().map(String::as_str), Some("text_end"));
    let message = assistant_end(&lines);
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "Hello, world."}])
    );
    assert_eq!(message["stopReason"], "stop");
    assert_eq!(
        (
            message["api"].as_str(),
            message["provider"].as_str(),
            message["model"].as_str()
        ),
        (Some("openai-completions"), Some("local"), Some("m"))
    );
    assert_eq!(message["usage"]["input"], 1200);
    assert_eq!(message["usage"]["output"], 7);
    assert_eq!(message["usage"]["totalTokens"], 1207);
    assert_eq!(message["responseId"], "chatcmpl-fake");

    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].header("authorization"),
        Some("Bearer sk-test-key")
    );
    let body = &recorded[0].body;
    assert_eq!(body["model"], "m");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(last_user_text(body), "Say hello");
    assert!(
        body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "bash"))
    );

    // Print mode prints the text.
    let output = provider_command(&sandbox, &server, &["run", "Say hello"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "Hello, world."
    );
}

#[test]
fn a_tool_call_streamed_in_pieces_runs_through_the_real_tool_path() {
    let server = FakeOpenAi::start(|body| {
        if after_tool(body) {
            return Reply::Text("The file is written.".into());
        }
        let piece = |arguments: &str, head: bool| {
            let mut call = json!({"index": 0, "function": {"arguments": arguments}});
            if head {
                call["id"] = "call_abc".into();
                call["type"] = "function".into();
                call["function"]["name"] = "bash".into();
            }
            chunk(json!({"tool_calls": [call]}), None)
        };
        Reply::Chunks(vec![
            chunk(json!({"role": "assistant", "content": "Writing it."}), None),
            piece("", true),
            piece("{\"command\": \"echo stre", false),
            piece("amed > out.txt && cat out", false),
            piece(".txt\"}", false),
            chunk(json!({}), Some("tool_calls")),
            usage_chunk(10, 5),
        ])
    });
    let sandbox = Sandbox::new();
    let plugins = [(
        "watcher",
        json!({"handlers": [{"event": "tool_call"}, {"event": "message_update"}]}),
    )];
    let mut command = behave_command(&sandbox, &plugins, &["run", "--mode", "json", "write it"]);
    command.args([
        "--no-session",
        "--provider",
        "local",
        "--model",
        "m",
        "--base-url",
        &server.base_url,
    ]);
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("out.txt")).unwrap(),
        "streamed\n"
    );
    // The plugin's tool_call handler saw the call with the joined arguments.
    let seen: Vec<Value> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "tool_call")
        .map(|l| l.value)
        .collect();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["toolName"], "bash");
    assert_eq!(seen[0]["toolCallId"], "call_abc");
    assert_eq!(
        seen[0]["input"]["command"],
        "echo streamed > out.txt && cat out.txt"
    );
    // pi's events: one toolcall_delta per piece, the whole call at toolcall_end.
    let first_turn: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_update")
        .filter(|l| {
            l["assistantMessageEvent"]["type"]
                .as_str()
                .unwrap()
                .starts_with("toolcall")
        })
        .collect();
    let kinds: Vec<&str> = first_turn
        .iter()
        .map(|l| l["assistantMessageEvent"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    // pi 1.6's stream: the start names the call; the deltas are the pieces.
    assert_eq!(first_turn[0]["assistantMessageEvent"]["id"], "call_abc");
    assert_eq!(first_turn[0]["assistantMessageEvent"]["toolName"], "bash");
    // While streaming, the partial arguments are parsed as far as they go (in the message
    // plugins get with each update; the stream carries deltas only).
    let partials: Vec<Value> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "message_update")
        .map(|l| l.value)
        .filter(|v| {
            v["assistantMessageEvent"]["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("toolcall"))
        })
        .collect();
    assert_eq!(
        partials[2]["message"]["content"][1]["arguments"]["command"],
        "echo stre"
    );
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0]["message"]["stopReason"], "toolUse");
    assert_eq!(
        ends[0]["message"]["content"][1],
        json!({"type": "toolCall", "id": "call_abc", "name": "bash",
               "arguments": {"command": "echo streamed > out.txt && cat out.txt"}})
    );
    assert_eq!(
        ends[1]["message"]["content"][0]["text"],
        "The file is written."
    );
    // The second request carries the call and its result as OpenAI wants them.
    let second = &server.requests()[1];
    let messages = second["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["content"], "Writing it.");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_abc");
    let arguments: Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        arguments["command"],
        "echo streamed > out.txt && cat out.txt"
    );
    let tool = messages.last().unwrap();
    assert_eq!(
        (tool["role"].as_str(), tool["tool_call_id"].as_str()),
        (Some("tool"), Some("call_abc"))
    );
    assert!(
        tool["content"].as_str().unwrap().contains("streamed"),
        "{tool}"
    );
}

#[test]
fn reasoning_content_becomes_a_thinking_block() {
    let server = FakeOpenAi::start(|_| {
        Reply::Chunks(vec![
            chunk(
                json!({"role": "assistant", "reasoning_content": "Let me "}),
                None,
            ),
            chunk(json!({"reasoning_content": "think."}), None),
            chunk(json!({"content": "Four."}), None),
            chunk(json!({}), Some("stop")),
        ])
    });
    let sandbox = Sandbox::new();
    let (output, lines) = json_run(&sandbox, &server, "2+2?");
    assert!(output.status.success(), "{}", stderr(&output));
    let message = assistant_end(&lines);
    assert_eq!(
        message["content"],
        json!([{"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "reasoning_content"},
               {"type": "text", "text": "Four."}])
    );
    let kinds = update_kinds(&lines);
    assert_eq!(
        kinds,
        [
            "thinking_start",
            "thinking_delta",
            "thinking_delta",
            "text_start",
            "text_delta",
            "thinking_end",
            "text_end"
        ]
    );
}

#[test]
fn before_provider_request_sees_the_body_and_its_replacement_is_sent() {
    let server = FakeOpenAi::start(|body| Reply::Text(format!("got {}", last_user_text(body))));
    let sandbox = Sandbox::new();
    let replacement = json!({"model": "m", "stream": true,
        "messages": [{"role": "user", "content": "REPLACED BY THE PLUGIN"}]});
    let plugins = [(
        "rewriter",
        json!({"handlers": [{"event": "before_provider_request", "result": replacement}]}),
    )];
    let mut command = behave_command(
        &sandbox,
        &plugins,
        &["run", "--mode", "json", "original prompt"],
    );
    command.args([
        "--no-session",
        "--provider",
        "local",
        "--model",
        "m",
        "--base-url",
        &server.base_url,
    ]);
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let seen: Vec<Value> = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .filter(|l| l.tag == "before_provider_request")
        .map(|l| l.value)
        .collect();
    assert_eq!(seen.len(), 1);
    // The plugin saw the real chat-completions body ...
    assert_eq!(seen[0]["payload"]["stream"], true);
    assert_eq!(last_user_text(&seen[0]["payload"]), "original prompt");
    // ... and the server got the replacement, byte for byte as JSON.
    assert_eq!(server.requests(), vec![replacement]);
    let message = assistant_end(&json_lines(&output)).clone();
    assert_eq!(message["content"][0]["text"], "got REPLACED BY THE PLUGIN");
}

/// Runs one prompt against a server answering `reply`; expects pi's error ending in JSON
/// mode (returned: the errorMessage) and in print mode (stderr, exit code 1).
fn failing_run(reply: Reply) -> String {
    let server = FakeOpenAi::start(move |_| reply.clone());
    failing_run_at(&server)
}

fn failing_run_at(server: &FakeOpenAi) -> String {
    let sandbox = Sandbox::new();
    // How a failed answer reads, without pi's automatic retry of transient errors (its own
    // test is below).
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        r#"{"retry": {"enabled": false}}"#,
    )
    .unwrap();
    let (output, lines) = json_run(&sandbox, server, "hello");
    assert!(output.status.success(), "{}", stderr(&output));
    let message = assistant_end(&lines);
    assert_eq!(message["stopReason"], "error", "{message}");
    let error = message["errorMessage"]
        .as_str()
        .expect("an errorMessage")
        .to_owned();
    // The stream's `error` ends the message (message_end), it is no update.
    assert!(
        !update_kinds(&lines).iter().any(|k| k == "error"),
        "{lines:#?}"
    );
    let turn_end = lines.iter().find(|l| l["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["toolResults"], json!([]));
    assert!(lines.iter().any(|l| l["type"] == "agent_end"), "{lines:#?}");

    let output = provider_command(&sandbox, server, &["run", "hello"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
    assert_eq!(stderr(&output).trim(), error);
    error
}

#[test]
fn http_401_reads_as_status_and_the_servers_message() {
    let body = json!({"error": {"message": "Incorrect API key provided: sk-test", "type": "invalid_request_error", "code": "invalid_api_key"}});
    assert_eq!(
        failing_run(Reply::Status(401, body.to_string())),
        "401 Incorrect API key provided: sk-test"
    );
}

#[test]
fn http_500_reads_as_status_and_the_servers_message() {
    let body = json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}});
    assert_eq!(
        failing_run(Reply::Status(500, body.to_string())),
        "500 The server had an error while processing your request."
    );
}

#[test]
fn a_chunk_that_is_not_json_ends_the_turn_with_what_arrived() {
    let sandbox = Sandbox::new();
    let server = FakeOpenAi::start(|_| {
        Reply::Raw(vec![
            format!(
                "data: {}\n\n",
                chunk(json!({"content": "Half an ans"}), None)
            ),
            "data: {\"choices\": [{\"delta\": {\"content\": oops}}]}\n\n".into(),
        ])
    });
    let (_, lines) = json_run(&sandbox, &server, "hello");
    let message = assistant_end(&lines);
    assert_eq!(message["content"][0]["text"], "Half an ans");
    let error = failing_run_at(&server);
    assert!(
        error.starts_with("Could not parse stream chunk as JSON"),
        "{error}"
    );
    assert!(error.contains("oops"), "{error}");
}

#[test]
fn a_stream_cut_in_the_middle_is_an_error() {
    let error = failing_run(Reply::Cut(vec![format!(
        "data: {}\n\n",
        chunk(json!({"role": "assistant", "content": "I was say"}), None)
    )]));
    assert!(error.starts_with("terminated"), "{error}");
}

#[test]
fn no_server_is_a_connection_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        r#"{"retry": {"enabled": false}}"#,
    )
    .unwrap();
    let output = sandbox
        .command(&[
            "run",
            "--mode",
            "json",
            "--no-session",
            "--provider",
            "local",
            "--model",
            "m",
        ])
        .args(["--base-url", &format!("http://127.0.0.1:{port}/v1")])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let lines = json_lines(&output);
    let message = assistant_end(&lines);
    assert_eq!(message["stopReason"], "error");
    let error = message["errorMessage"].as_str().unwrap();
    assert!(error.starts_with("Connection error."), "{error}");
    assert!(error.to_lowercase().contains("refused"), "{error}");
}

#[test]
fn models_json_in_the_agent_dir_selects_a_provider_over_rpc() {
    let server = FakeOpenAi::start(|body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("summar") || last_user_text(body).contains("<conversation>") {
            return Reply::Text("SUMMARY FROM THE MODEL".into());
        }
        match last_user_text(body).as_str() {
            "fail please" => {
                Reply::Status(500, json!({"error": {"message": "overloaded"}}).to_string())
            }
            "use a tool" if !after_tool(body) => {
                tool_call("bash", json!({"command": "echo rpc-tool"}))
            }
            text => Reply::Text(format!("echo: {text}")),
        }
    });
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .unwrap();
    let file = sandbox.root().join("s.jsonl");
    let mut command = sandbox.command(&["rpc", "--provider", "fake", "--model", "fake-model"]);
    command
        .arg("--session")
        .arg(&file)
        .env_remove("OPENAI_API_KEY");
    let mut client = RpcClient::start(command);

    let models = request(&mut client, "m", json!({"type": "get_available_models"}));
    let ids: Vec<String> = models["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(ids, ["fake/fake-model"]);
    let state = request(&mut client, "s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["model"]["baseUrl"], server.base_url.as_str());
    assert_eq!(state["data"]["model"]["contextWindow"], 100_000);

    // A failing turn ends with pi's error, and the session goes on.
    let lines = prompt_to_end(&mut client, "p1", "fail please");
    let failed = assistant_end(&lines);
    assert_eq!(failed["stopReason"], "error");
    assert_eq!(failed["errorMessage"], "500 overloaded");
    let lines = prompt_to_end(&mut client, "p2", "use a tool");
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .collect();
    assert_eq!(ends.len(), 2, "{lines:#?}");
    assert_eq!(ends[1]["message"]["content"][0]["text"], "echo: use a tool");
    let tool_end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap();
    assert!(
        tool_end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("rpc-tool")
    );
    // The errored turn is not replayed to the model; its prompt is.
    let last = server.requests().last().unwrap().clone();
    assert!(!last["messages"].to_string().contains("overloaded"));
    assert!(last["messages"].to_string().contains("fail please"));
    // models.json's apiKey is sent.
    assert!(
        server
            .recorded()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer fake-key"))
    );
    // pi's compat from models.json: no developer role, max_completion_tokens from maxTokens.
    assert_eq!(last["messages"][0]["role"], "system");
    assert_eq!(last["max_completion_tokens"], 4096);

    // Compaction asks the same provider.
    let compacted = request(&mut client, "c", json!({"type": "compact"}));
    assert_eq!(compacted["success"], true, "{compacted}");
    assert!(
        compacted["data"]["summary"]
            .as_str()
            .unwrap()
            .contains("SUMMARY FROM THE MODEL"),
        "{compacted}"
    );
    let lines = prompt_to_end(&mut client, "p3", "after compaction");
    assert_eq!(
        assistant_end(&lines)["content"][0]["text"],
        "echo: after compaction"
    );
    close_ok(client);
}

#[test]
fn without_flags_the_demo_runs_and_models_json_is_offered_beside_it() {
    let server = FakeOpenAi::start(|_| Reply::Text("from the real model".into()));
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .unwrap();
    let mut client = RpcClient::start(sandbox.command(&["rpc", "--no-session"]));
    let state = request(&mut client, "s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["model"]["provider"], "scripted");
    let models = request(&mut client, "m", json!({"type": "get_available_models"}));
    let providers: Vec<&str> = models["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["provider"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["scripted", "fake"]);
    let set = request(
        &mut client,
        "set",
        json!({"type": "set_model", "provider": "fake", "modelId": "fake-model"}),
    );
    assert_eq!(set["success"], true, "{set}");
    let lines = prompt_to_end(&mut client, "p", "hi");
    assert_eq!(
        assistant_end(&lines)["content"][0]["text"],
        "from the real model"
    );
    assert_eq!(server.requests().len(), 1);
    close_ok(client);
}

#[test]
fn a_wrong_selection_names_what_to_do() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&[
        "run",
        "--no-session",
        "--provider",
        "nowhere",
        "--model",
        "m",
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("\"nowhere\"") && error.contains("--base-url"),
        "{error}"
    );

    std::fs::write(sandbox.agent_dir().join("models.json"), "{ not json").unwrap();
    let output = sandbox.run(&["run", "--no-session", "--provider", "fake", "--model", "x"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("models.json") && error.contains("not valid JSON"),
        "{error}"
    );
    // Without a provider asked for, a broken models.json only warns: the demo runs.
    let output = sandbox.run(&["run", "--no-session"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("warning"), "{}", stderr(&output));
}

#[test]
fn abort_ends_a_turn_while_the_server_is_silent() {
    // The server sends the start of an answer, then nothing more for a minute with the
    // connection open: `abort` must end the turn now, with the text that arrived, not when
    // the server speaks again.
    let server = FakeOpenAi::start(|_| {
        Reply::Stall(vec![format!(
            "data: {}\n\n",
            chunk(
                json!({"role": "assistant", "content": "Thinking about it"}),
                None
            )
        )])
    });
    let sandbox = Sandbox::new();
    let mut client = RpcClient::start(provider_command(&sandbox, &server, &["rpc"]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "take your time"}));
    client.until(|l| {
        l["type"] == "message_update"
            && l["assistantMessageEvent"]["type"] == "text_delta"
            && l["assistantMessageEvent"]["delta"] == "Thinking about it"
    });
    client.send(&json!({"id": "a", "type": "abort"}));
    let (lines, _) = client.until(|l| l["type"] == "agent_end");
    let end = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .expect("the assistant message ended");
    assert_eq!(end["message"]["stopReason"], "aborted", "{end}");
    assert_eq!(end["message"]["content"][0]["text"], "Thinking about it");
    assert_eq!(client.response("a")["success"], true);
    close_ok(client);
}

#[test]
fn settings_default_provider_and_model_select_a_models_json_model() {
    // A pi user's setup: models.json names the provider, settings.json picks it as the
    // default. `pi-hooks run` with no model option talks to it; a default this host cannot
    // use (pi's built-in anthropic) leaves the demo and says why.
    let server = FakeOpenAi::start(|_| Reply::Text("from the default model".into()));
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .unwrap();
    let settings = sandbox.agent_dir().join("settings.json");
    std::fs::write(
        &settings,
        json!({"defaultProvider": "fake", "defaultModel": "fake-model"}).to_string(),
    )
    .unwrap();
    let output = sandbox
        .command(&["run", "--no-session", "hi"])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "from the default model"
    );
    assert_eq!(server.requests().len(), 1);

    std::fs::write(
        &settings,
        json!({"defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4"}).to_string(),
    )
    .unwrap();
    let output = sandbox
        .command(&["run", "--no-session", "Run the demo."])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("settings.json names the default model anthropic/claude-sonnet-4")
            && err.contains("the scripted demo plays"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
}

/// pi's overflow recovery: the provider refuses the request as too long for its context
/// window; the failed answer leaves the context, the session is compacted
/// (`compaction_start/end {reason: "overflow", willRetry: true}`) and the run goes on from the
/// compacted context, whose retry the model answers.
#[test]
fn a_context_overflow_is_compacted_and_retried_once() {
    let server = FakeOpenAi::start(|body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("summar") || last_user_text(body).contains("<conversation>") {
            return Reply::Text("THE SUMMARY".into());
        }
        if body.to_string().contains("THE SUMMARY") {
            return Reply::Text("answered after compaction".into());
        }
        match last_user_text(body).as_str() {
            "one" => Reply::Text("first answer".into()),
            _ => Reply::Status(
                400,
                json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}).to_string(),
            ),
        }
    });
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    let output = provider_command(&sandbox, &server, &["run", "--mode", "json", "one", "two"])
        .output()
        .expect("run pi-hooks");
    assert!(output.status.success(), "{}", stderr(&output));
    let lines = json_lines(&output);
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["type"].as_str())
        .filter(|t| t.starts_with("compaction") || *t == "agent_start" || *t == "agent_end")
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_start",
            "agent_end",
            "agent_start",
            "agent_end",
            "compaction_start",
            "compaction_end",
            "agent_start",
            "agent_end"
        ],
        "{lines:#?}"
    );
    let start = lines
        .iter()
        .find(|l| l["type"] == "compaction_start")
        .unwrap();
    assert_eq!(start["reason"], "overflow");
    let end = lines
        .iter()
        .find(|l| l["type"] == "compaction_end")
        .unwrap();
    assert_eq!(end["reason"], "overflow");
    assert_eq!(end["willRetry"], true, "{end}");
    assert_eq!(end["aborted"], false);
    assert_eq!(end["result"]["summary"], "THE SUMMARY", "{end}");
    let answers: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .map(|l| &l["message"])
        .collect();
    assert_eq!(answers.len(), 3, "{answers:#?}");
    assert_eq!(answers[1]["stopReason"], "error");
    assert_eq!(
        answers[2]["content"][0]["text"],
        "answered after compaction"
    );
    // Print mode ends with the retried answer.
    let output = provider_command(&sandbox, &server, &["run", "one", "two"])
        .output()
        .expect("run pi-hooks");
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "answered after compaction"
    );
}

/// A second overflow in the same prompt is not retried again: pi's `compaction_end` says
/// recovery failed.
#[test]
fn a_second_overflow_after_the_retry_is_reported_and_not_retried() {
    let server = FakeOpenAi::start(|body| {
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        if system.contains("summar") || last_user_text(body).contains("<conversation>") {
            return Reply::Text("THE SUMMARY".into());
        }
        match last_user_text(body).as_str() {
            "one" => Reply::Text("first answer".into()),
            _ => Reply::Status(
                400,
                json!({"error": {"message": "prompt is too long"}}).to_string(),
            ),
        }
    });
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    let output = provider_command(&sandbox, &server, &["run", "--mode", "json", "one", "two"])
        .output()
        .expect("run pi-hooks");
    let lines = json_lines(&output);
    let ends: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "compaction_end")
        .collect();
    assert_eq!(ends.len(), 2, "{lines:#?}");
    assert_eq!(ends[0]["willRetry"], true);
    assert_eq!(
        ends[1],
        &json!({
            "type": "compaction_end",
            "reason": "overflow",
            "aborted": false,
            "willRetry": false,
            "errorMessage": "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."
        })
    );
}

/// A JSON run against `server` with `settings` as the user's settings.json; the error that
/// ended the turn and how long the run took.
fn failing_run_with_settings(
    server: &FakeOpenAi,
    settings: Value,
) -> (String, Value, std::time::Duration) {
    let sandbox = Sandbox::new();
    // The failure itself, without pi's automatic retry of transient errors.
    let mut settings = settings;
    settings["retry"] = json!({"enabled": false});
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    // Built before the clock starts (the first test of the process builds it).
    pi_hooks_tests::pi_hooks_bin();
    let started = std::time::Instant::now();
    let (output, lines) = json_run(&sandbox, server, "hello");
    let took = started.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    let message = assistant_end(&lines).clone();
    assert_eq!(message["stopReason"], "error", "{message}");
    assert!(lines.iter().any(|l| l["type"] == "agent_end"), "{lines:#?}");
    let error = message["errorMessage"]
        .as_str()
        .expect("an errorMessage")
        .to_owned();
    (error, message, took)
}

#[test]
fn one_50_mb_stream_event_ends_the_turn_at_once_with_a_message() {
    // One `data:` line of 50 MB (valid JSON, no event boundary until its end), sent in
    // 64 KiB pieces after a first small event.
    let server = FakeOpenAi::start(|_| {
        let mut line = String::from("data: {\"choices\":[{\"delta\":{\"content\":\"");
        line.push_str(&"x".repeat(50 << 20));
        line.push_str("\"}}]}\n\n");
        let mut pieces = vec![format!(
            "data: {}\n\n",
            chunk(
                json!({"role": "assistant", "content": "Before the flood"}),
                None
            )
        )];
        let bytes = line.into_bytes();
        pieces.extend(
            bytes
                .chunks(64 << 10)
                .map(|piece| String::from_utf8(piece.to_vec()).unwrap()),
        );
        Reply::Raw(pieces)
    });
    let (error, message, took) = failing_run_with_settings(&server, json!({}));
    assert_eq!(
        error,
        "terminated: the server sent a stream event larger than 16 MiB, the most one event may hold"
    );
    assert_eq!(message["content"][0]["text"], "Before the flood");
    assert!(took < std::time::Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_silent_or_trickling_stream_ends_after_stream_idle_timeout() {
    let first = format!(
        "data: {}\n\n",
        chunk(
            json!({"role": "assistant", "content": "Thinking about it"}),
            None
        )
    );
    for reply in [
        Reply::Stall(vec![first.clone()]),
        // Bytes keep coming, a space every 100 ms, but never an event.
        Reply::Trickle(vec![first.clone(), "data: {\"choices\":".into()]),
    ] {
        let server = FakeOpenAi::start(move |_| reply.clone());
        let (error, message, took) =
            failing_run_with_settings(&server, json!({"streamIdleTimeout": 1500}));
        assert_eq!(
            error,
            "Request timed out. (no stream event for 1500 ms; the limit is streamIdleTimeout in settings.json)"
        );
        assert_eq!(message["content"][0]["text"], "Thinking about it");
        assert!(
            took >= std::time::Duration::from_millis(1500)
                && took < std::time::Duration::from_secs(15),
            "took {took:?}"
        );
    }
}
