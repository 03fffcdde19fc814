//! The chat-completions side of `pi-hooks demo-model`: a request body in, the scripted
//! model's next turn out, shaped as OpenAI shapes it: for `stream: true` the chunks of a
//! streamed answer (a role chunk, `reasoning_content` and `content` deltas, `tool_calls`
//! deltas, a chunk with the `finish_reason`, a usage chunk when `stream_options.include_usage`
//! asks for one), otherwise one `chat.completion` object.
//!
//! The turn itself is the scripted model's: [`ScriptedModel::resume_at`] places the script
//! where the request's conversation stands (each request is answered on its own, so a second
//! pi session, or a restarted pi, is answered as the first), and [`Model::complete`] plays
//! the turn; its streaming events become the chunks.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use pi_hooks_agent::model::{CancelToken, Model, ScriptedModel};

/// What to answer a request with.
pub(super) enum Reply {
    /// A streamed answer: each chunk as one `data:` event, `[DONE]` after them.
    Stream(Vec<Value>),
    /// One JSON object (status 200).
    Json(Value),
    /// An error: the status and OpenAI's error object.
    Error(u16, Value),
}

/// What a turn was, for the server's log line.
pub(super) struct Played {
    /// The turn's number in its prompt, from 0.
    pub turn: usize,
    /// `text`, or the tool calls' names.
    pub summary: String,
}

/// The scripted model behind the endpoint.
pub(super) struct DemoEndpoint {
    model: Mutex<ScriptedModel>,
    /// The scratch folder whose `build/output.txt` is put back at each prompt's first turn.
    scratch: Option<PathBuf>,
    /// Numbers the answers (`chatcmpl-demo-<n>`).
    answered: AtomicU64,
}

/// OpenAI's error object.
pub(super) fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

impl DemoEndpoint {
    /// The endpoint of `model` (its `${SCRATCH}` and `${CWD}` already set).
    pub(super) fn new(model: ScriptedModel, scratch: Option<PathBuf>) -> Self {
        DemoEndpoint {
            model: Mutex::new(model),
            scratch,
            answered: AtomicU64::new(0),
        }
    }

    /// `GET /v1/models`: the script's models.
    pub(super) fn models(&self) -> Value {
        let model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        let data: Vec<Value> = model
            .available()
            .iter()
            .map(
                |m| json!({"id": m["id"], "object": "model", "created": 0, "owned_by": "pi-hooks"}),
            )
            .collect();
        json!({"object": "list", "data": data})
    }

    /// `POST /v1/chat/completions` with `body`; what was played, when a turn was.
    pub(super) fn complete(&self, body: &[u8]) -> (Reply, Option<Played>) {
        let request: Value = match serde_json::from_slice(body) {
            Ok(request @ Value::Object(_)) => request,
            _ => {
                let message = "the request body is not a JSON object";
                return (
                    Reply::Error(400, error_body(message, "invalid_request_error", None)),
                    None,
                );
            }
        };
        let Some(messages) = request["messages"].as_array() else {
            let message = "'messages' is a required property";
            return (
                Reply::Error(400, error_body(message, "invalid_request_error", None)),
                None,
            );
        };
        let mut model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        let offered: Vec<Value> = model.available().iter().map(|m| m["id"].clone()).collect();
        let id = request["model"].clone();
        if !offered.contains(&id) {
            let message = format!(
                "The model `{}` does not exist; this server offers {}",
                id.as_str().unwrap_or_default(),
                offered
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return (
                Reply::Error(
                    404,
                    error_body(&message, "invalid_request_error", Some("model_not_found")),
                ),
                None,
            );
        }
        let turn = model.resume_at(messages);
        if turn == 0
            && let Some(scratch) = &self.scratch
        {
            // A new prompt finds the scratch folder as the demo left it last time it began.
            let _ = crate::cli::run::fill_scratch(scratch);
        }
        let stream = request["stream"] == true;
        let n = self.answered.fetch_add(1, Ordering::Relaxed) + 1;
        let created = jiff::Timestamp::now().as_second();
        let chunk = |delta: Value, finish: Value| {
            json!({"id": format!("chatcmpl-demo-{n}"), "object": "chat.completion.chunk",
                "created": created, "model": id,
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        };
        let mut chunks = vec![chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        )];
        // The tool call index of each content block that is a tool call.
        let mut calls: Vec<(usize, usize)> = Vec::new();
        let message = model.complete(&request, &CancelToken::new(), &mut |event, partial| {
            let at = event["contentIndex"].as_u64().unwrap_or(0) as usize;
            let delta = match event["type"].as_str().unwrap_or_default() {
                "thinking_delta" => json!({"reasoning_content": event["delta"]}),
                "text_delta" => json!({"content": event["delta"]}),
                "toolcall_start" => {
                    let index = calls.len();
                    calls.push((at, index));
                    let block = &partial["content"][at];
                    json!({"tool_calls": [{"index": index, "id": block["id"], "type": "function",
                        "function": {"name": block["name"], "arguments": ""}}]})
                }
                "toolcall_delta" => {
                    let index = calls.iter().find(|(block, _)| *block == at).map(|c| c.1);
                    json!({"tool_calls": [{"index": index, "function": {"arguments": event["delta"]}}]})
                }
                _ => return,
            };
            chunks.push(chunk(delta, Value::Null));
        });
        drop(model);
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "toolCall")
            .filter_map(|b| b["name"].as_str())
            .collect();
        let played = Played {
            turn,
            summary: if names.is_empty() {
                "text".into()
            } else {
                format!("tool calls: {}", names.join(", "))
            },
        };
        let finish = match message["stopReason"].as_str().unwrap_or_default() {
            "toolUse" => "tool_calls",
            "length" => "length",
            "error" => {
                let text = message["errorMessage"]
                    .as_str()
                    .unwrap_or("the script's turn is an error");
                return (
                    Reply::Error(500, error_body(text, "server_error", None)),
                    Some(played),
                );
            }
            _ => "stop",
        };
        let input = message["usage"]["input"].as_u64().unwrap_or(0);
        let output = message["usage"]["output"].as_u64().unwrap_or(0);
        let usage = json!({"prompt_tokens": input, "completion_tokens": output,
            "total_tokens": input + output});
        if !stream {
            return (
                Reply::Json(completion(&blocks, finish, usage, n, created, &id)),
                Some(played),
            );
        }
        chunks.push(chunk(json!({}), json!(finish)));
        if request["stream_options"]["include_usage"] == true {
            let mut last = chunk(json!({}), Value::Null);
            last["choices"] = json!([]);
            last["usage"] = usage;
            chunks.push(last);
        }
        (Reply::Stream(chunks), Some(played))
    }
}

/// A whole `chat.completion` object for the assistant message's content `blocks`.
fn completion(
    blocks: &[Value],
    finish: &str,
    usage: Value,
    n: u64,
    created: i64,
    model: &Value,
) -> Value {
    let text_of = |kind: &str| {
        let parts: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[kind].as_str())
            .collect();
        (!parts.is_empty()).then(|| parts.concat())
    };
    let mut message = json!({"role": "assistant", "content": text_of("text"), "refusal": null});
    if let Some(thinking) = text_of("thinking") {
        message["reasoning_content"] = Value::String(thinking);
    }
    let calls: Vec<Value> = blocks
        .iter()
        .filter(|b| b["type"] == "toolCall")
        .map(|b| {
            json!({"id": b["id"], "type": "function",
                "function": {"name": b["name"], "arguments": b["arguments"].to_string()}})
        })
        .collect();
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({"id": format!("chatcmpl-demo-{n}"), "object": "chat.completion", "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": usage})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> DemoEndpoint {
        let mut model = ScriptedModel::demo();
        model.set_variable("SCRATCH", "/s");
        DemoEndpoint::new(model, None)
    }

    fn request(messages: Value, stream: bool) -> Vec<u8> {
        json!({"model": "demo", "messages": messages, "stream": stream,
            "stream_options": {"include_usage": true}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn streams_the_turn_the_conversation_is_at() {
        let endpoint = endpoint();
        let first = json!([{"role": "user", "content": "Run the demo."}]);
        let (Reply::Stream(chunks), Some(played)) = endpoint.complete(&request(first, true)) else {
            panic!("not a stream")
        };
        assert_eq!(
            (played.turn, played.summary.as_str()),
            (0, "tool calls: bash")
        );
        assert_eq!(
            chunks[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "Let me look at the scratch folder first.");
        let call = chunks
            .iter()
            .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"].is_string())
            .unwrap();
        assert_eq!(
            call["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "bash"
        );
        let arguments: String = chunks
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            })
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&arguments).unwrap()["command"],
            "echo \"hello from pi-hooks\" && ls /s"
        );
        let n = chunks.len();
        assert_eq!(chunks[n - 2]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chunks[n - 1]["choices"], json!([]));
        assert!(chunks[n - 1]["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

        // After the first call and its result, the second turn: the rm -rf.
        let second = json!([
            {"role": "user", "content": "Run the demo."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1_0_0", "type": "function",
                "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1_0_0", "content": "hello"}
        ]);
        let (Reply::Json(answer), _) = endpoint.complete(&request(second, false)) else {
            panic!("not JSON")
        };
        let message = &answer["choices"][0]["message"];
        assert_eq!(message["content"], "I'll clean up the build folder.");
        assert_eq!(
            message["tool_calls"][0]["function"]["arguments"],
            json!({"command": "rm -rf /s/build"}).to_string()
        );
        assert_eq!(message["tool_calls"][0]["id"], "call_1_1_0");
        assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn refuses_what_is_not_a_request_for_its_model() {
        let endpoint = endpoint();
        let (Reply::Error(404, body), None) = endpoint.complete(
            json!({"model": "gpt-4o", "messages": []})
                .to_string()
                .as_bytes(),
        ) else {
            panic!("not refused")
        };
        assert_eq!(body["error"]["code"], "model_not_found");
        assert!(matches!(
            endpoint.complete(b"{\"model\": \"demo\"}"),
            (Reply::Error(400, _), None)
        ));
        assert!(matches!(
            endpoint.complete(b"nope"),
            (Reply::Error(400, _), None)
        ));
    }
}
