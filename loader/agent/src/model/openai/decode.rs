//! Streamed chat-completion chunks into pi's assistant message and its events, as pi's
//! `streamOpenAICompletions` maps them: `delta.content` into one text block, the first
//! non-empty of `reasoning_content` / `reasoning` / `reasoning_text` into one thinking block
//! (the field name kept as its `thinkingSignature`), `delta.tool_calls` into tool call blocks
//! by their stream `index` (arguments arrive in pieces and are parsed as they come), `usage`
//! into pi's usage with cost, and `finish_reason` into `stopReason`.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::model::AssistantEvent;

/// The stream callback: each event with the message so far.
pub type OnEvent<'a> = &'a mut dyn FnMut(AssistantEvent, &Value);

/// One assistant message being decoded.
pub struct StreamDecoder {
    message: Value,
    model: Value,
    text: Option<usize>,
    thinking: Option<usize>,
    tools_by_index: HashMap<u64, usize>,
    tools_by_id: HashMap<String, usize>,
}

impl StreamDecoder {
    /// An empty message from `model` (pi's `Model` object).
    pub fn new(model: &Value) -> StreamDecoder {
        StreamDecoder {
            message: json!({
                "role": "assistant",
                "content": [],
                "api": model["api"],
                "provider": model["provider"],
                "model": model["id"],
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop",
                "timestamp": crate::now_ms(),
            }),
            model: model.clone(),
            text: None,
            thinking: None,
            tools_by_index: HashMap::new(),
            tools_by_id: HashMap::new(),
        }
    }

    /// The response arrived: pi's `start` event.
    pub fn start(&mut self, on_event: OnEvent<'_>) {
        on_event(json!({"type": "start"}), &self.message);
    }

    fn content(&mut self) -> &mut Vec<Value> {
        self.message["content"]
            .as_array_mut()
            .expect("the message's content is an array")
    }

    /// Adds a block; returns its index after the `*_start` event.
    fn open(&mut self, block: Value, kind: &str, on_event: OnEvent<'_>) -> usize {
        let index = self.content().len();
        self.content().push(block);
        on_event(
            json!({"type": format!("{kind}_start"), "contentIndex": index}),
            &self.message,
        );
        index
    }

    /// Takes one parsed chunk.
    pub fn chunk(&mut self, chunk: &Value, on_event: OnEvent<'_>) {
        if !chunk.is_object() {
            return;
        }
        if self.message.get("responseId").is_none()
            && let Some(id) = chunk["id"].as_str()
        {
            self.message["responseId"] = id.into();
        }
        if let Some(name) = chunk["model"].as_str().filter(|m| !m.is_empty())
            && self.model["id"] != name
            && self.message.get("responseModel").is_none()
        {
            self.message["responseModel"] = name.into();
        }
        if chunk["usage"].is_object() {
            self.message["usage"] = usage(&chunk["usage"], &self.model);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return;
        };
        if !chunk["usage"].is_object() && choice["usage"].is_object() {
            self.message["usage"] = usage(&choice["usage"], &self.model);
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            let (stop, error) = stop_reason(reason);
            self.message["stopReason"] = stop.into();
            if let Some(error) = error {
                self.message["errorMessage"] = error.into();
            }
        }
        let delta = &choice["delta"];
        if !delta.is_object() {
            return;
        }
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            let index = match self.text {
                Some(index) => index,
                None => {
                    let index = self.open(json!({"type": "text", "text": ""}), "text", on_event);
                    self.text = Some(index);
                    index
                }
            };
            append(&mut self.content()[index]["text"], text);
            on_event(
                json!({"type": "text_delta", "contentIndex": index, "delta": text}),
                &self.message,
            );
        }
        let reasoning = ["reasoning_content", "reasoning", "reasoning_text"]
            .into_iter()
            .find_map(|field| Some((field, delta[field].as_str().filter(|t| !t.is_empty())?)));
        if let Some((field, text)) = reasoning {
            let index = match self.thinking {
                Some(index) => index,
                None => {
                    let block =
                        json!({"type": "thinking", "thinking": "", "thinkingSignature": field});
                    let index = self.open(block, "thinking", on_event);
                    self.thinking = Some(index);
                    index
                }
            };
            append(&mut self.content()[index]["thinking"], text);
            on_event(
                json!({"type": "thinking_delta", "contentIndex": index, "delta": text}),
                &self.message,
            );
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = self.tool_block(call, on_event);
            let block = &mut self.content()[index];
            if block["id"] == "" && call["id"].is_string() {
                block["id"] = call["id"].clone();
            }
            if block["name"] == "" && call["function"]["name"].is_string() {
                block["name"] = call["function"]["name"].clone();
            }
            let piece = call["function"]["arguments"].as_str().unwrap_or_default();
            if !piece.is_empty() {
                append(&mut block["partialArgs"], piece);
                let partial = block["partialArgs"].as_str().unwrap_or_default();
                block["arguments"] = parse_streaming_json(partial);
            }
            if let Some(id) = call["id"].as_str() {
                self.tools_by_id.insert(id.to_owned(), index);
            }
            on_event(
                json!({"type": "toolcall_delta", "contentIndex": index, "delta": piece}),
                &self.message,
            );
        }
    }

    /// The block of a streamed tool call (found by stream index, then id), opened when new.
    fn tool_block(&mut self, call: &Value, on_event: OnEvent<'_>) -> usize {
        let stream_index = call["index"].as_u64();
        let id = call["id"].as_str().filter(|id| !id.is_empty());
        let found = stream_index
            .and_then(|i| self.tools_by_index.get(&i))
            .or_else(|| id.and_then(|id| self.tools_by_id.get(id)))
            .copied();
        let index = found.unwrap_or_else(|| {
            let mut block = json!({"type": "toolCall", "id": id.unwrap_or_default(),
                "name": call["function"]["name"].as_str().unwrap_or_default(),
                "arguments": {}, "partialArgs": ""});
            if let Some(i) = stream_index {
                block["streamIndex"] = i.into();
            }
            self.open(block, "toolcall", on_event)
        });
        if let Some(i) = stream_index {
            self.tools_by_index.entry(i).or_insert(index);
        }
        index
    }

    /// The stream ended: every block gets its `*_end` event, then `done` (or `error` for an
    /// error stop reason); returns the message.
    pub fn finish(mut self, on_event: OnEvent<'_>) -> Value {
        for index in 0..self.content().len() {
            let block = &mut self.content()[index];
            let event = match block["type"].as_str() {
                Some("text") => {
                    json!({"type": "text_end", "contentIndex": index, "content": block["text"]})
                }
                Some("thinking") => {
                    json!({"type": "thinking_end", "contentIndex": index, "content": block["thinking"]})
                }
                Some("toolCall") => {
                    let partial = block["partialArgs"].as_str().unwrap_or_default();
                    block["arguments"] = parse_streaming_json(partial);
                    strip_scratch(block);
                    json!({"type": "toolcall_end", "contentIndex": index, "toolCall": block})
                }
                _ => continue,
            };
            on_event(event, &self.message);
        }
        if self.message["stopReason"] == "error" {
            let error = self.message["errorMessage"]
                .as_str()
                .unwrap_or("Provider returned an error stop reason")
                .to_owned();
            return self.fail(&error, on_event);
        }
        let reason = self.message["stopReason"].clone();
        on_event(json!({"type": "done", "reason": reason}), &self.message);
        self.message
    }

    /// The request or the stream failed: pi's `error` event with `stopReason: "error"` and
    /// `errorMessage`; what arrived so far stays in the message.
    pub fn fail(mut self, error: &str, on_event: OnEvent<'_>) -> Value {
        for block in self.content() {
            strip_scratch(block);
        }
        self.message["stopReason"] = "error".into();
        self.message["errorMessage"] = error.into();
        on_event(json!({"type": "error", "reason": "error"}), &self.message);
        self.message
    }
}

/// Appends `text` to a string field in place (a missing field becomes the text).
fn append(field: &mut Value, text: &str) {
    match field {
        Value::String(joined) => joined.push_str(text),
        other => *other = Value::String(text.to_owned()),
    }
}

/// Streaming scratch fields pi keeps on a tool call block until it ends.
fn strip_scratch(block: &mut Value) {
    if let Some(map) = block.as_object_mut() {
        map.remove("partialArgs");
        map.remove("streamIndex");
    }
}

/// pi's `mapStopReason`.
fn stop_reason(reason: &str) -> (&'static str, Option<String>) {
    match reason {
        "stop" | "end" => ("stop", None),
        "length" => ("length", None),
        "function_call" | "tool_calls" => ("toolUse", None),
        other => ("error", Some(format!("Provider finish_reason: {other}"))),
    }
}

/// pi's `parseChunkUsage` and `calculateCost` (costs are per million tokens).
fn usage(raw: &Value, model: &Value) -> Value {
    let number = |v: &Value| v.as_u64().unwrap_or(0);
    let prompt = number(&raw["prompt_tokens"]);
    let reported_cached = raw["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .or_else(|| raw["prompt_cache_hit_tokens"].as_u64())
        .unwrap_or(0);
    let cache_write = number(&raw["prompt_tokens_details"]["cache_write_tokens"]);
    let cache_read = if cache_write > 0 {
        reported_cached.saturating_sub(cache_write)
    } else {
        reported_cached
    };
    let input = prompt.saturating_sub(cache_read + cache_write);
    let output = number(&raw["completion_tokens"]);
    let price = |field: &str, tokens: u64| {
        model["cost"][field].as_f64().unwrap_or(0.0) / 1_000_000.0 * tokens as f64
    };
    let cost = [
        price("input", input),
        price("output", output),
        price("cacheRead", cache_read),
        price("cacheWrite", cache_write),
    ];
    json!({
        "input": input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": {"input": cost[0], "output": cost[1], "cacheRead": cost[2], "cacheWrite": cost[3],
                 "total": cost.iter().sum::<f64>()},
    })
}

/// pi's `parseStreamingJson`: the arguments so far, however incomplete: the JSON when it
/// parses, else the JSON with its open strings, arrays and objects closed (a trailing
/// half-written key or value dropped), else `{}`.
pub fn parse_streaming_json(text: &str) -> Value {
    if text.trim().is_empty() {
        return json!({});
    }
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return value;
    }
    let mut closers = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => closers.push('}'),
            '[' => closers.push(']'),
            '}' | ']' => {
                closers.pop();
            }
            _ => {}
        }
    }
    let mut candidate = text.to_owned();
    if escaped {
        candidate.pop();
    }
    if in_string {
        candidate.push('"');
    }
    // Close as written; failing that, drop the last unfinished member and close again.
    for _ in 0..3 {
        let closed: String = candidate
            .chars()
            .chain(closers.iter().rev().copied())
            .collect();
        if let Ok(value) = serde_json::from_str::<Value>(&closed) {
            return value;
        }
        let trimmed = candidate.trim_end().trim_end_matches([',', ':']);
        let cut = trimmed.rfind([',', '{', '[']).map_or(0, |at| {
            if trimmed[at..].starts_with(',') {
                at
            } else {
                at + 1
            }
        });
        if cut == 0 || cut >= candidate.len() {
            break;
        }
        candidate.truncate(cut);
    }
    json!({})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[Value]) -> (Value, Vec<Value>) {
        let model = json!({"id": "m", "api": "openai-completions", "provider": "p",
            "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 0}});
        let mut events = Vec::new();
        let mut record = |e: Value, _: &Value| events.push(e);
        let mut decoder = StreamDecoder::new(&model);
        decoder.start(&mut record);
        for chunk in chunks {
            decoder.chunk(chunk, &mut record);
        }
        let message = decoder.finish(&mut record);
        (message, events)
    }

    #[test]
    fn tool_arguments_in_pieces_become_one_call() {
        let call = |piece: &str, first: bool| {
            let mut call = json!({"index": 0, "function": {"arguments": piece}});
            if first {
                call["id"] = "call_1".into();
                call["function"]["name"] = "bash".into();
            }
            json!({"choices": [{"delta": {"tool_calls": [call]}}]})
        };
        let (message, events) = decode(&[
            call("", true),
            call("{\"comm", false),
            call("and\": \"ls", false),
            call("\"}", false),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}],
                   "usage": {"prompt_tokens": 1000, "completion_tokens": 500,
                             "prompt_tokens_details": {"cached_tokens": 200}}}),
        ]);
        assert_eq!(
            message["content"],
            json!([{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}}])
        );
        assert_eq!(message["stopReason"], "toolUse");
        assert_eq!(message["usage"]["input"], 800);
        assert_eq!(message["usage"]["cacheRead"], 200);
        assert_eq!(message["usage"]["totalTokens"], 1500);
        assert_eq!(message["usage"]["cost"]["output"], 0.001);
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "start",
                "toolcall_start",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_delta",
                "toolcall_end",
                "done"
            ]
        );
    }

    #[test]
    fn reasoning_then_text_and_an_odd_finish_reason_is_an_error() {
        let (message, events) = decode(&[
            json!({"choices": [{"delta": {"reasoning_content": "think"}}]}),
            json!({"choices": [{"delta": {"content": "Hi"}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "content_filter"}]}),
        ]);
        assert_eq!(
            message["content"][0]["thinkingSignature"],
            "reasoning_content"
        );
        assert_eq!(message["content"][1]["text"], "Hi");
        assert_eq!(message["stopReason"], "error");
        assert_eq!(
            message["errorMessage"],
            "Provider finish_reason: content_filter"
        );
        assert_eq!(events.last().unwrap()["type"], "error");
    }

    #[test]
    fn partial_json_closes_what_is_open() {
        assert_eq!(parse_streaming_json(r#"{"a": "b"#), json!({"a": "b"}));
        assert_eq!(parse_streaming_json(r#"{"a": [1, 2"#), json!({"a": [1, 2]}));
        assert_eq!(parse_streaming_json(r#"{"a": 1, "b"#), json!({"a": 1}));
        assert_eq!(parse_streaming_json(r#"{"a": 1, "b": "#), json!({"a": 1}));
        assert_eq!(parse_streaming_json("{"), json!({}));
        assert_eq!(parse_streaming_json("nonsense"), json!({}));
    }
}
