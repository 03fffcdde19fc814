//! The OpenAI-compatible provider's overhead per streamed chunk: `OpenAiModel::complete`
//! against a local server on 127.0.0.1 that answers every request with the same prebuilt
//! response of N text chunks (server-sent events in HTTP chunks, then a finish chunk with
//! usage and `[DONE]`). Each sample is one whole request: connect, send the body, read and
//! decode the stream, build pi's message and its events. Reported per chunk (criterion's
//! throughput in elements), for N = 1 (the fixed cost of a request) and N = 1000.
//! Run: `cargo bench -p pi-hooks-agent --bench openai_stream`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi_hooks_agent::model::openai::models_json::command_line_model;
use pi_hooks_agent::model::{CancelToken, Model, ModelRequest, OpenAiModel};
use serde_json::{Value, json};

/// The response: `n` chunks of a few words each, as llama.cpp's server streams them.
fn response(n: usize) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    let mut piece = |text: String| {
        out.extend(format!("{:x}\r\n{text}\r\n", text.len()).bytes());
    };
    for i in 0..n {
        let chunk = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
            "model": "m", "choices": [{"index": 0, "delta": {"content": format!("word {i} ")}, "finish_reason": null}]});
        piece(format!("data: {chunk}\n\n"));
    }
    let last = json!({"id": "chatcmpl-bench", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": n}});
    piece(format!("data: {last}\n\ndata: [DONE]\n\n"));
    out.extend(b"0\r\n\r\n");
    out
}

/// Serves `body` to every request on a free port; returns the base URL.
fn serve(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let mut stream = stream;
            let _ = stream.write_all(&body);
            let _ = stream.shutdown(Shutdown::Both);
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("openai_stream");
    for n in [1usize, 1000] {
        let base_url = serve(response(n));
        let mut model = OpenAiModel::new(vec![command_line_model("bench", &base_url, "m")]);
        let messages = [json!({"role": "user", "content": [{"type": "text", "text": "go"}]})];
        let body = model.request_body(&ModelRequest {
            system_prompt: "You are a benchmark.",
            messages: &messages,
            tools: &[],
        });
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("{n}_chunks"), |b| {
            b.iter(|| {
                let mut events = 0usize;
                let message: Value =
                    model.complete(&body, &CancelToken::new(), &mut |_, _| events += 1);
                assert_eq!(message["stopReason"], "stop", "{message}");
                events
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
