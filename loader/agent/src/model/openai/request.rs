//! The chat-completions request body, built as pi's `openai-completions` provider builds it
//! (`buildParams`, `convertMessages`, `transformMessages`, `convertTools` in pi-ai): the
//! session's messages as the model sees them (pi's `convertToLlm`), the system prompt first,
//! the tools as functions, `stream: true` with usage in the stream.

use serde_json::{Map, Value, json};

use super::models_json::ProviderModel;
use crate::model::ModelRequest;
use pi_hooks_session::summarize::convert_to_llm;

const USER_IMAGE_PLACEHOLDER: &str = "(image omitted: model does not support images)";
const TOOL_IMAGE_PLACEHOLDER: &str = "(tool image omitted: model does not support images)";

/// The request body for `request`; `max_tokens` overrides the model's limit (summaries).
pub fn chat_body(
    model: &ProviderModel,
    request: &ModelRequest<'_>,
    max_tokens: Option<u64>,
) -> Value {
    let info = &model.info;
    let compat = &model.compat;
    let llm = transform_messages(&convert_to_llm(request.messages), info);
    let mut body = Map::new();
    body.insert("model".into(), info["id"].clone());
    body.insert(
        "messages".into(),
        Value::Array(convert_messages(model, request.system_prompt, &llm)),
    );
    body.insert("stream".into(), Value::Bool(true));
    if compat.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if compat.supports_store {
        body.insert("store".into(), Value::Bool(false));
    }
    // pi's default: the model's maxTokens, at most 32000.
    let limit = max_tokens.or_else(|| {
        info["maxTokens"]
            .as_u64()
            .filter(|&n| n > 0)
            .map(|n| n.min(32_000))
    });
    if let Some(limit) = limit {
        body.insert(compat.max_tokens_field.clone(), limit.into());
    }
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                let mut function = json!({
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["parameters"],
                });
                if compat.supports_strict_mode {
                    function["strict"] = Value::Bool(false);
                }
                json!({"type": "function", "function": function})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    } else if has_tool_history(&llm) {
        // Proxies in front of Anthropic want `tools` when the history has tool calls.
        body.insert("tools".into(), json!([]));
    }
    Value::Object(body)
}

fn has_tool_history(messages: &[Value]) -> bool {
    messages.iter().any(|m| {
        m["role"] == "toolResult"
            || (m["role"] == "assistant" && blocks(m).any(|b| b["type"] == "toolCall"))
    })
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message["content"].as_array().into_iter().flatten()
}

/// pi's `transformMessages`: images a text-only model cannot see become a placeholder,
/// thinking from another model becomes text, errored and aborted assistant turns are left
/// out, and a tool call without a result gets an error result "No result provided".
fn transform_messages(messages: &[Value], info: &Value) -> Vec<Value> {
    let sees_images = info["input"]
        .as_array()
        .is_some_and(|i| i.iter().any(|t| t == "image"));
    let mut out: Vec<Value> = Vec::new();
    let mut pending: Vec<Value> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let flush = |out: &mut Vec<Value>, pending: &mut Vec<Value>, answered: &mut Vec<String>| {
        for call in pending.drain(..) {
            if !answered.iter().any(|id| call["id"] == id.as_str()) {
                out.push(
                    json!({"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
                    "content": [{"type": "text", "text": "No result provided"}], "isError": true,
                    "timestamp": crate::now_ms()}),
                );
            }
        }
        answered.clear();
    };
    for message in messages {
        let mut message = message.clone();
        match message["role"].as_str() {
            Some("user") => {
                if !sees_images && message["content"].is_array() {
                    message["content"] =
                        without_images(&message["content"], USER_IMAGE_PLACEHOLDER);
                }
                flush(&mut out, &mut pending, &mut answered);
                out.push(message);
            }
            Some("toolResult") => {
                if !sees_images {
                    message["content"] =
                        without_images(&message["content"], TOOL_IMAGE_PLACEHOLDER);
                }
                if let Some(id) = message["toolCallId"].as_str() {
                    answered.push(id.to_owned());
                }
                out.push(message);
            }
            Some("assistant") => {
                flush(&mut out, &mut pending, &mut answered);
                if message["stopReason"] == "error" || message["stopReason"] == "aborted" {
                    continue;
                }
                let same_model = message["provider"] == info["provider"]
                    && message["api"] == info["api"]
                    && message["model"] == info["id"];
                let content: Vec<Value> = blocks(&message)
                    .filter_map(|block| {
                        if block["type"] != "thinking" {
                            return Some(block.clone());
                        }
                        if block["redacted"].as_bool() == Some(true) {
                            return same_model.then(|| block.clone());
                        }
                        let signed = block["thinkingSignature"]
                            .as_str()
                            .is_some_and(|s| !s.is_empty());
                        if same_model && signed {
                            return Some(block.clone());
                        }
                        let thinking = block["thinking"].as_str().unwrap_or_default();
                        if thinking.trim().is_empty() {
                            None
                        } else if same_model {
                            Some(block.clone())
                        } else {
                            Some(json!({"type": "text", "text": thinking}))
                        }
                    })
                    .collect();
                pending = content
                    .iter()
                    .filter(|b| b["type"] == "toolCall")
                    .cloned()
                    .collect();
                message["content"] = Value::Array(content);
                out.push(message);
            }
            _ => out.push(message),
        }
    }
    flush(&mut out, &mut pending, &mut answered);
    out
}

fn without_images(content: &Value, placeholder: &str) -> Value {
    let Some(items) = content.as_array() else {
        return content.clone();
    };
    let mut out: Vec<Value> = Vec::new();
    for item in items {
        if item["type"] == "image" {
            if out.last().is_none_or(|l| l["text"] != placeholder) {
                out.push(json!({"type": "text", "text": placeholder}));
            }
        } else {
            out.push(item.clone());
        }
    }
    Value::Array(out)
}

fn text_of(block: &Value) -> &str {
    block["text"].as_str().unwrap_or_default()
}

fn image_url(block: &Value) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}",
        block["mimeType"].as_str().unwrap_or_default(), block["data"].as_str().unwrap_or_default())}})
}

/// pi's `convertMessages`: the system prompt (`developer` for reasoning models where the
/// server knows that role), user messages as text and image parts, assistant turns as one
/// text with `tool_calls`, tool results as `tool` messages.
fn convert_messages(model: &ProviderModel, system_prompt: &str, messages: &[Value]) -> Vec<Value> {
    let info = &model.info;
    let compat = &model.compat;
    let mut params = Vec::new();
    if !system_prompt.is_empty() {
        let developer = info["reasoning"].as_bool() == Some(true) && compat.supports_developer_role;
        let role = if developer { "developer" } else { "system" };
        params.push(json!({"role": role, "content": system_prompt}));
    }
    let sees_images = info["input"]
        .as_array()
        .is_some_and(|i| i.iter().any(|t| t == "image"));
    let mut last_role = "";
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        let role = message["role"].as_str().unwrap_or_default();
        if compat.requires_assistant_after_tool_result
            && last_role == "toolResult"
            && role == "user"
        {
            params.push(
                json!({"role": "assistant", "content": "I have processed the tool results."}),
            );
        }
        match role {
            "user" => match &message["content"] {
                Value::String(text) => params.push(json!({"role": "user", "content": text})),
                Value::Array(items) if !items.is_empty() => {
                    let content: Vec<Value> = items
                        .iter()
                        .map(|item| {
                            if item["type"] == "text" {
                                json!({"type": "text", "text": text_of(item)})
                            } else {
                                image_url(item)
                            }
                        })
                        .collect();
                    params.push(json!({"role": "user", "content": content}));
                }
                _ => {}
            },
            "assistant" => {
                let mut out = json!({"role": "assistant", "content": if compat.requires_assistant_after_tool_result { json!("") } else { Value::Null }});
                let texts: Vec<&str> = blocks(message)
                    .filter(|b| b["type"] == "text")
                    .map(text_of)
                    .filter(|t| !t.trim().is_empty())
                    .collect();
                let text = texts.concat();
                let thinking: Vec<&Value> = blocks(message)
                    .filter(|b| b["type"] == "thinking")
                    .filter(|b| !b["thinking"].as_str().unwrap_or_default().trim().is_empty())
                    .collect();
                if !thinking.is_empty() && compat.requires_thinking_as_text {
                    let joined = thinking
                        .iter()
                        .map(|b| b["thinking"].as_str().unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join("\n\n");
                    let mut parts = vec![json!({"type": "text", "text": joined})];
                    parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
                    out["content"] = Value::Array(parts);
                } else {
                    if !text.is_empty() {
                        out["content"] = Value::String(text);
                    }
                    // The field the reasoning came in (reasoning_content for llama.cpp),
                    // given back to the server that sent it.
                    if let Some(field) = thinking
                        .first()
                        .and_then(|b| b["thinkingSignature"].as_str())
                        .filter(|s| !s.is_empty())
                    {
                        let joined = thinking
                            .iter()
                            .map(|b| b["thinking"].as_str().unwrap_or_default())
                            .collect::<Vec<_>>()
                            .join("\n");
                        out[field] = Value::String(joined);
                    }
                }
                let calls: Vec<Value> = blocks(message)
                    .filter(|b| b["type"] == "toolCall")
                    .map(|call| {
                        json!({"id": call["id"], "type": "function", "function": {
                            "name": call["name"], "arguments": call["arguments"].to_string()}})
                    })
                    .collect();
                let has_calls = !calls.is_empty();
                if has_calls {
                    out["tool_calls"] = Value::Array(calls);
                }
                let has_content = match &out["content"] {
                    Value::String(s) => !s.is_empty(),
                    Value::Array(a) => !a.is_empty(),
                    _ => false,
                };
                if has_content || has_calls {
                    params.push(out);
                }
            }
            "toolResult" => {
                let mut images = Vec::new();
                let mut j = i;
                while j < messages.len() && messages[j]["role"] == "toolResult" {
                    let result = &messages[j];
                    let text = blocks(result)
                        .filter(|b| b["type"] == "text")
                        .map(text_of)
                        .collect::<Vec<_>>()
                        .join("\n");
                    let content = if text.is_empty() {
                        "(see attached image)".to_owned()
                    } else {
                        text
                    };
                    let mut tool = json!({"role": "tool", "content": content, "tool_call_id": result["toolCallId"]});
                    if compat.requires_tool_result_name && result["toolName"].is_string() {
                        tool["name"] = result["toolName"].clone();
                    }
                    params.push(tool);
                    if sees_images {
                        images.extend(
                            blocks(result)
                                .filter(|b| b["type"] == "image")
                                .map(image_url),
                        );
                    }
                    j += 1;
                }
                i = j;
                if images.is_empty() {
                    last_role = "toolResult";
                } else {
                    if compat.requires_assistant_after_tool_result {
                        params.push(json!({"role": "assistant", "content": "I have processed the tool results."}));
                    }
                    let mut content = vec![
                        json!({"type": "text", "text": "Attached image(s) from tool result:"}),
                    ];
                    content.extend(images);
                    params.push(json!({"role": "user", "content": content}));
                    last_role = "user";
                }
                continue;
            }
            _ => {}
        }
        last_role = role;
        i += 1;
    }
    params
}

#[cfg(test)]
mod tests {
    use super::super::models_json::command_line_model;
    use super::*;

    #[test]
    fn builds_pi_s_body_for_a_tool_round_trip() {
        let model = command_line_model("local", "http://127.0.0.1:1/v1", "m");
        let messages = [
            json!({"role": "user", "content": [{"type": "text", "text": "list"}], "timestamp": 1}),
            json!({"role": "assistant", "api": "openai-completions", "provider": "local", "model": "m",
                   "content": [{"type": "text", "text": "Looking."},
                               {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}},
                               {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {}}],
                   "stopReason": "toolUse"}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                   "content": [{"type": "text", "text": "a\nb"}], "isError": false}),
            json!({"role": "custom", "customType": "note", "content": "from a plugin", "display": true}),
        ];
        let tools =
            [json!({"name": "bash", "description": "run", "parameters": {"type": "object"}})];
        let body = chat_body(
            &model,
            &ModelRequest {
                system_prompt: "Be brief.",
                messages: &messages,
                tools: &tools,
            },
            None,
        );
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(body["store"], false);
        assert_eq!(body["max_completion_tokens"], 16_384);
        assert_eq!(body["tools"][0]["function"]["strict"], false);
        let sent = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
        // c2 had no result: pi adds "No result provided" before the next user message.
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "tool", "user"]
        );
        assert_eq!(sent[2]["content"], "Looking.");
        assert_eq!(
            sent[2]["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls"}"#
        );
        assert_eq!(sent[4]["content"], "No result provided");
        assert_eq!(sent[5]["content"][0]["text"], "from a plugin");
    }

    #[test]
    fn errored_turns_are_not_replayed_and_thinking_goes_back_in_its_field() {
        let model = command_line_model("local", "http://x/v1", "m");
        let messages = [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "partial"}], "stopReason": "error"}),
            json!({"role": "assistant", "api": "openai-completions", "provider": "local", "model": "m",
                   "content": [{"type": "thinking", "thinking": "hmm", "thinkingSignature": "reasoning_content"},
                               {"type": "text", "text": "ok"}], "stopReason": "stop"}),
        ];
        let body = chat_body(
            &model,
            &ModelRequest {
                system_prompt: "",
                messages: &messages,
                tools: &[],
            },
            Some(100),
        );
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1]["reasoning_content"], "hmm");
        assert_eq!(body["max_completion_tokens"], 100);
        assert!(body.get("tools").is_none());
    }
}
