//! A fake OpenAI-compatible chat-completions server on 127.0.0.1, for end-to-end tests that
//! run the real pi against scripted turns: every `POST /v1/chat/completions` is answered by
//! the test's script (given the request body) with a streamed reply (server-sent events:
//! a role chunk, the text or the tool calls, a finish chunk with usage, `[DONE]`), as
//! OpenAI and llama.cpp's server stream it. Every request body is kept for assertions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};

/// What the model says next.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Plain text; the turn ends (`finish_reason: "stop"`).
    Text(String),
    /// Tool calls `(name, arguments)`; the agent runs them and asks again.
    ToolCalls(Vec<(String, Value)>),
}

/// A tool call reply with one call.
pub fn tool_call(name: &str, arguments: Value) -> Reply {
    Reply::ToolCalls(vec![(name.to_owned(), arguments)])
}

/// The running server; dropping it stops it.
pub struct FakeOpenAi {
    /// `http://127.0.0.1:<port>/v1`, the `baseUrl` for pi's `models.json`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl FakeOpenAi {
    /// Starts serving on a free port; `script` answers each request body.
    pub fn start(script: impl Fn(&Value) -> Reply + Send + 'static) -> FakeOpenAi {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let thread = {
            let server = Arc::clone(&server);
            let requests = Arc::clone(&requests);
            let calls = AtomicU64::new(0);
            std::thread::spawn(move || {
                for mut request in server.incoming_requests() {
                    let mut body = String::new();
                    let _ = request.as_reader().read_to_string(&mut body);
                    if !request.url().ends_with("/chat/completions") {
                        let _ = request.respond(
                            tiny_http::Response::from_string("not found").with_status_code(404),
                        );
                        continue;
                    }
                    let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    let reply = script(&body);
                    requests.lock().unwrap().push(body);
                    let n = calls.fetch_add(1, Ordering::Relaxed);
                    let header = tiny_http::Header::from_bytes("Content-Type", "text/event-stream")
                        .expect("header");
                    let _ = request.respond(
                        tiny_http::Response::from_string(event_stream(&reply, n))
                            .with_header(header),
                    );
                }
            })
        };
        FakeOpenAi {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            requests,
            server,
            thread: Some(thread),
        }
    }

    /// The request bodies so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// pi's `models.json` with this server as the provider `fake` offering `fake-model`.
    pub fn models_json(&self) -> Value {
        json!({"providers": {"fake": {
            "baseUrl": self.base_url,
            "api": "openai-completions",
            "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": "fake-model", "name": "Fake model", "contextWindow": 100000, "maxTokens": 4096}]
        }}})
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The text of the last `user` message of a request body (string or text parts).
pub fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
        .map(text_of)
        .unwrap_or_default()
}

/// The texts of every `user` message of a request body, in order (custom messages an
/// extension adds reach the model as user messages too).
pub fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == "user")
                .map(text_of)
                .collect()
        })
        .unwrap_or_default()
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Whether the request's last message is a tool result (the model is asked to go on).
pub fn after_tool(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool")
}

/// One `data:` event per chunk, then `data: [DONE]`.
fn event_stream(reply: &Reply, n: u64) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": format!("chatcmpl-fake-{n}"), "object": "chat.completion.chunk", "created": 0,
            "model": "fake-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let finish = match reply {
        Reply::Text(text) => {
            chunks.push(chunk(json!({"content": text}), Value::Null));
            "stop"
        }
        Reply::ToolCalls(calls) => {
            for (i, (name, arguments)) in calls.iter().enumerate() {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": i, "id": format!("call_{n}_{i}"), "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}}]}),
                    Value::Null,
                ));
            }
            "tool_calls"
        }
    };
    let mut last = chunk(json!({}), json!(finish));
    last["usage"] = json!({"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60});
    chunks.push(last);
    let mut stream: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    stream.push_str("data: [DONE]\n\n");
    stream
}
