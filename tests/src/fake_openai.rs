//! A fake OpenAI-compatible chat-completions server on 127.0.0.1, for end-to-end tests that
//! run the real pi or `pi-hooks --provider` against scripted turns: every
//! `POST /v1/chat/completions` is answered by the test's script (given the request body) with
//! a streamed reply (server-sent events in HTTP chunks: a role chunk, the text or the tool
//! calls, a finish chunk with usage, `[DONE]`), as OpenAI and llama.cpp's server stream it, or
//! with what a broken server sends (an HTTP error, a chunk that is not JSON, a stream cut
//! off before its end). Every request (body and headers) is kept for assertions.
//!
//! HTTP/1.1 by hand on a `TcpListener`, one connection at a time, each closed after its
//! response: a test needs to cut a response in the middle, which an HTTP server library does
//! not let it do.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// What the model says next.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Plain text; the turn ends (`finish_reason: "stop"`).
    Text(String),
    /// Tool calls `(name, arguments)`; the agent runs them and asks again.
    ToolCalls(Vec<(String, Value)>),
    /// These chunks (`chat.completion.chunk` objects, see [`chunk`]), each as one `data:`
    /// event, then `[DONE]`.
    Chunks(Vec<Value>),
    /// An HTTP error: this status and body (`application/json`).
    Status(u16, String),
    /// These pieces of event-stream text as they are (each in one HTTP chunk), the response
    /// ended properly after them.
    Raw(Vec<String>),
    /// These pieces of event-stream text, then the connection is closed before the response
    /// ends (no final HTTP chunk): a stream cut off in the middle.
    Cut(Vec<String>),
    /// These pieces of event-stream text, then nothing more for a minute with the
    /// connection open: a server that went silent in the middle of its answer.
    Stall(Vec<String>),
    /// These pieces of event-stream text, then one space every 100 ms for a minute, never
    /// a line end: a server that trickles bytes that never make an event.
    Trickle(Vec<String>),
    /// The first chunks, then a pause until the test opens the [`Gate`], then the other
    /// chunks and `[DONE]`: a stream caught in the middle, for a test that looks at what
    /// a client shows meanwhile.
    Held(Vec<Value>, Gate, Vec<Value>),
}

/// Where a [`Reply::Held`] stream waits; clones share one gate.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    /// How long a stream waits at most for a gate nobody opens (a failed test), so the
    /// server thread, and the test's drop of the server, never hang.
    pub const LIMIT: Duration = Duration::from_secs(60);

    /// A closed gate.
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Opens the gate: held streams go on.
    pub fn open(&self) {
        let (open, opened) = &*self.0;
        *open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        opened.notify_all();
    }

    /// Waits until the gate is open (or [`Gate::LIMIT`] passed).
    fn pass(&self) {
        let (open, opened) = &*self.0;
        let guard = open.lock().unwrap_or_else(|e| e.into_inner());
        let _ = opened.wait_timeout_while(guard, Gate::LIMIT, |open| !*open);
    }
}

/// A tool call reply with one call.
pub fn tool_call(name: &str, arguments: Value) -> Reply {
    Reply::ToolCalls(vec![(name.to_owned(), arguments)])
}

/// A `chat.completion.chunk` with one choice: `delta` and `finish_reason`.
pub fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
        "model": "fake-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// The usage-only chunk OpenAI sends last with `stream_options.include_usage`.
pub fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
        "model": "fake-model", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}})
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The body, parsed (`null` when it was not JSON).
    pub body: Value,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
}

impl Recorded {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The running server; dropping it stops it.
pub struct FakeOpenAi {
    /// `http://127.0.0.1:<port>/v1`, the `baseUrl` for pi's `models.json`.
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    port: u16,
    thread: Option<JoinHandle<()>>,
}

type Script = Box<dyn Fn(&Value) -> Reply + Send>;

impl FakeOpenAi {
    /// Starts serving on a free port; `script` answers each request body.
    pub fn start(script: impl Fn(&Value) -> Reply + Send + 'static) -> FakeOpenAi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("a local address").port();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            let script: Script = Box::new(script);
            std::thread::spawn(move || {
                let calls = AtomicU64::new(0);
                for stream in listener.incoming() {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = serve(stream, &script, &requests, &calls);
                }
            })
        };
        FakeOpenAi {
            base_url: format!("http://127.0.0.1:{port}/v1"),
            requests,
            stop,
            port,
            thread: Some(thread),
        }
    }

    /// The request bodies so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.recorded().into_iter().map(|r| r.body).collect()
    }

    /// The requests so far (bodies and headers), in order.
    pub fn recorded(&self) -> Vec<Recorded> {
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
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request from `stream`, records it, answers it, and closes the connection.
fn serve(
    stream: TcpStream,
    script: &Script,
    requests: &Mutex<Vec<Recorded>>,
    calls: &AtomicU64,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut out = stream;
    let path = request_line.split_whitespace().nth(1).unwrap_or_default();
    if !path.ends_with("/chat/completions") {
        out.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
        )?;
        return out.shutdown(Shutdown::Both);
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let reply = script(&body);
    requests.lock().unwrap().push(Recorded { body, headers });
    let n = calls.fetch_add(1, Ordering::Relaxed);
    let (pieces, complete, held) = match reply {
        Reply::Status(status, body) => {
            write!(
                out,
                "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )?;
            return out.shutdown(Shutdown::Both);
        }
        Reply::Raw(pieces) => (pieces, true, None),
        Reply::Cut(pieces) => (pieces, false, None),
        Reply::Trickle(pieces) => {
            out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            )?;
            for piece in pieces {
                write!(out, "{:x}\r\n{piece}\r\n", piece.len())?;
                out.flush()?;
            }
            std::thread::spawn(move || {
                for _ in 0..600 {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    if out
                        .write_all(b"1\r\n \r\n")
                        .and_then(|()| out.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            });
            return Ok(());
        }
        Reply::Stall(pieces) => {
            out.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            )?;
            for piece in pieces {
                write!(out, "{:x}\r\n{piece}\r\n", piece.len())?;
                out.flush()?;
            }
            // Held open on a thread of its own: the server goes on answering, and its
            // drop does not wait for the silence to end.
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_secs(60));
                drop(out);
            });
            return Ok(());
        }
        Reply::Chunks(chunks) => (events(&chunks), true, None),
        Reply::Held(first, gate, rest) => {
            let mut first = events(&first);
            first.pop();
            (first, true, Some((gate, events(&rest))))
        }
        reply => (events(&reply_chunks(&reply, n)), true, None),
    };
    out.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    )?;
    for piece in pieces {
        write!(out, "{:x}\r\n{piece}\r\n", piece.len())?;
        out.flush()?;
    }
    if let Some((gate, rest)) = held {
        gate.pass();
        for piece in rest {
            write!(out, "{:x}\r\n{piece}\r\n", piece.len())?;
            out.flush()?;
        }
    }
    if complete {
        out.write_all(b"0\r\n\r\n")?;
    }
    out.flush()?;
    out.shutdown(Shutdown::Both)
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
fn events(chunks: &[Value]) -> Vec<String> {
    let mut events: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// The chunks of a text or tool-call reply: a role chunk, the content, a finish chunk with
/// usage.
fn reply_chunks(reply: &Reply, n: u64) -> Vec<Value> {
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
        _ => unreachable!("only text and tool calls are built here"),
    };
    let mut last = chunk(json!({}), json!(finish));
    last["usage"] = json!({"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60});
    chunks.push(last);
    chunks
}
