//! [`ScriptedModel`]: a model that plays a JSON script of assistant turns, deterministic and
//! offline. An embedded demo script is the default.
//!
//! Script format (`--script FILE`):
//!
//! ```json
//! {
//!   "turns": [
//!     {"text": "Let me look.", "toolCalls": [{"name": "bash", "arguments": {"command": "ls"}}]},
//!     {"text": "All done.", "stopReason": "stop"}
//!   ],
//!   "models": [{"id": "small", "contextWindow": 2000}, {"id": "large"}],
//!   "summary": "What happened so far: ..."
//! }
//! ```
//!
//! Each prompt plays the script from its first turn; with `"rewind": false` a prompt goes on
//! where the last one stopped. A turn has optional `text`, optional
//! `thinking`, optional `toolCalls` (`name`, `arguments`, optional `id`), and an optional
//! `stopReason` (`"stop"`, or `"toolUse"` when there are tool calls; `"length"` and `"error"`
//! with `errorMessage` are accepted too). `${SCRATCH}`, `${CWD}` and `${PROMPT}` in strings are
//! replaced by the run's scratch folder, working directory and the prompt text, and
//! `${LAST_MESSAGE}` by the text of the last message of the request body (after
//! `before_provider_request`). Past the last turn the model answers with a short final text.
//!
//! `models` (optional) lists the models the script offers (`provider` defaults to
//! `"scripted"`, `contextWindow` to 200000, `maxTokens` to 32000); the first is selected, and
//! every model plays the same turns. Without it the script offers one model named after the
//! script file (its name without the extension). `summary` (optional) is the answer to summarization requests (compaction, branch
//! summaries); without it the model answers with a short summary naming the request's size.
//! Usage figures are estimated as pi estimates tokens (4 characters a token), so a small
//! `contextWindow` makes automatic compaction testable.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{AssistantEvent, CancelToken, Model, ModelRequest};
use crate::now_ms;

/// The embedded demo script.
pub const DEMO_SCRIPT: &str = include_str!("demo_script.json");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<Turn>,
    #[serde(default)]
    models: Vec<ScriptedModelEntry>,
    #[serde(default)]
    summary: Option<String>,
    /// `false`: a new prompt goes on with the next turn instead of the first (a session of
    /// several prompts, such as a workflow's auto-continue, plays one script through).
    #[serde(default = "yes")]
    rewind: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScriptedModelEntry {
    id: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    context_window: Option<u64>,
    #[serde(default)]
    max_tokens: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    error_message: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default)]
    arguments: Value,
    #[serde(default)]
    id: Option<String>,
}

/// A model that plays a script.
pub struct ScriptedModel {
    script: Script,
    /// The script as written, for [`ScriptedModel::uses_variable`].
    raw: Value,
    next: usize,
    prompt_count: usize,
    variables: HashMap<String, String>,
    /// The models offered, as pi's `Model` objects.
    models: Vec<Value>,
    selected: usize,
}

impl ScriptedModel {
    /// Parses a script; the error names what is wrong.
    pub fn from_json(text: &str, name: &str) -> Result<Self, String> {
        let invalid = |e: serde_json::Error| format!("invalid model script {name}: {e}");
        let raw: Value = serde_json::from_str(text).map_err(invalid)?;
        let script = Script::deserialize(&raw).map_err(invalid)?;
        let mut models: Vec<Value> = script.models.iter().map(model_object).collect();
        if models.is_empty() {
            // One model named after the script file ("demo" for the embedded one).
            let id = std::path::Path::new(name)
                .file_stem()
                .map_or_else(|| name.to_owned(), |s| s.to_string_lossy().into_owned());
            models.push(model_object(&ScriptedModelEntry {
                id,
                provider: None,
                name: None,
                context_window: None,
                max_tokens: None,
            }));
        }
        for (n, model) in models.iter().enumerate() {
            if models[..n].iter().any(|m| super::same_model(m, model)) {
                return Err(format!(
                    "invalid model script {name}: models lists {}/{} twice",
                    model["provider"].as_str().unwrap_or_default(),
                    model["id"].as_str().unwrap_or_default()
                ));
            }
        }
        Ok(ScriptedModel {
            script,
            raw,
            next: 0,
            prompt_count: 0,
            variables: HashMap::new(),
            models,
            selected: 0,
        })
    }

    /// The embedded demo.
    pub fn demo() -> Self {
        Self::from_json(DEMO_SCRIPT, "demo").expect("the embedded demo script is valid")
    }

    /// Whether any string of the script names `${name}` (a run creates the scratch folder
    /// only for a script that uses it).
    pub fn uses_variable(&self, name: &str) -> bool {
        fn names(value: &Value, pattern: &str) -> bool {
            match value {
                Value::String(s) => s.contains(pattern),
                Value::Array(items) => items.iter().any(|v| names(v, pattern)),
                Value::Object(map) => map.values().any(|v| names(v, pattern)),
                _ => false,
            }
        }
        names(&self.raw, &format!("${{{name}}}"))
    }

    /// Places the script where a conversation with these `messages` stands (pi's messages or
    /// OpenAI chat messages: only `role` and the text of the last user message are read), so
    /// that the next [`Model::complete`] plays the turn that comes next in it. For a server
    /// that answers each request on its own (`pi-hooks demo-model`). The next turn is the
    /// number of assistant messages after the last user message (with `"rewind": false`,
    /// in the whole conversation), `${PROMPT}` is that user message's text, and the number of
    /// user messages is the prompt's number, which names the tool calls
    /// (`call_<prompt>_<turn>_<n>`). Returns the turn (0 for a prompt's first).
    pub fn resume_at(&mut self, messages: &[Value]) -> usize {
        let last_user = messages.iter().rposition(|m| m["role"] == "user");
        let since = match last_user {
            Some(at) if self.script.rewind => &messages[at + 1..],
            _ => messages,
        };
        self.next = since.iter().filter(|m| m["role"] == "assistant").count();
        self.prompt_count = messages.iter().filter(|m| m["role"] == "user").count();
        let prompt = last_user.map(|at| message_text(&messages[at]));
        self.set_variable("PROMPT", prompt.as_deref().unwrap_or_default());
        self.next
    }

    /// Sets a `${NAME}` variable.
    pub fn set_variable(&mut self, name: &str, value: &str) {
        self.variables.insert(name.to_owned(), value.to_owned());
    }

    fn substitute(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.substitute_str(s)),
            Value::Array(items) => items.iter().map(|v| self.substitute(v)).collect(),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (k.clone(), self.substitute(v)))
                .collect(),
            other => other.clone(),
        }
    }

    fn substitute_str(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (name, value) in &self.variables {
            out = out.replace(&format!("${{{name}}}"), value);
        }
        out
    }
}

/// pi's `Model` object for a scripted model entry.
fn model_object(entry: &ScriptedModelEntry) -> Value {
    json!({
        "id": entry.id,
        "name": entry.name.clone().unwrap_or_else(|| entry.id.clone()),
        "api": "scripted",
        "provider": entry.provider.clone().unwrap_or_else(|| "scripted".into()),
        "baseUrl": "",
        "reasoning": false,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": entry.context_window.unwrap_or(200_000),
        "maxTokens": entry.max_tokens.unwrap_or(32_000),
    })
}

/// pi's estimate of a text's tokens: 4 characters a token, rounded up.
fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The text of a message (its text blocks, or a string content).
fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Splits `text` into up to three streaming deltas (on char boundaries).
fn deltas(text: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    if chars.len() < 3 {
        return vec![text];
    }
    let cut = |n: usize| chars[chars.len() * n / 3].0;
    vec![&text[..cut(1)], &text[cut(1)..cut(2)], &text[cut(2)..]]
}

impl Model for ScriptedModel {
    fn info(&self) -> Value {
        self.models[self.selected].clone()
    }

    fn available(&self) -> Vec<Value> {
        self.models.clone()
    }

    fn select(&mut self, provider: &str, id: &str) -> Result<Value, String> {
        let Some(at) = self
            .models
            .iter()
            .position(|m| m["provider"] == provider && m["id"] == id)
        else {
            return Err(format!("Model not found: {provider}/{id}"));
        };
        self.selected = at;
        Ok(self.info())
    }

    /// `{model, systemPrompt, messages, tools}`: the scripted provider's request body.
    fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        json!({
            "model": self.info()["id"],
            "systemPrompt": request.system_prompt,
            "messages": request.messages,
            "tools": request.tools,
        })
    }

    fn summarize(
        &mut self,
        _system: &str,
        prompt: &str,
        _max_tokens: u64,
    ) -> Result<String, String> {
        Ok(match &self.script.summary {
            Some(summary) => self.substitute_str(summary),
            None => format!(
                "Summary (scripted model): the conversation so far, about {} tokens.",
                estimate_tokens(prompt)
            ),
        })
    }

    fn new_prompt(&mut self, prompt: &str) {
        if self.script.rewind {
            self.next = 0;
        }
        self.prompt_count += 1;
        self.set_variable("PROMPT", prompt);
    }

    fn complete(
        &mut self,
        body: &Value,
        _cancel: &CancelToken,
        on_event: &mut dyn FnMut(AssistantEvent, &Value),
    ) -> Value {
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(message_text)
            .unwrap_or_default();
        self.set_variable("LAST_MESSAGE", &last);
        let input_tokens = estimate_tokens(&body.to_string());
        let turn = self.script.turns.get(self.next).cloned().unwrap_or(Turn {
            text: Some("(The script has no more turns.)".into()),
            thinking: None,
            tool_calls: Vec::new(),
            stop_reason: None,
            error_message: None,
        });
        let turn_index = self.next;
        self.next += 1;
        let info = self.info();
        let mut message = json!({
            "role": "assistant",
            "content": [],
            "api": info["api"],
            "provider": info["provider"],
            "model": info["id"],
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop",
            "timestamp": now_ms(),
        });
        on_event(json!({"type": "start"}), &message);
        let blocks = [
            ("thinking", turn.thinking.as_deref()),
            ("text", turn.text.as_deref()),
        ];
        for (kind, text) in blocks {
            let Some(text) = text.map(|t| self.substitute_str(t)) else {
                continue;
            };
            let index = message["content"].as_array().map_or(0, Vec::len);
            message["content"]
                .as_array_mut()
                .expect("content")
                .push(json!({"type": kind, kind: ""}));
            on_event(
                json!({"type": format!("{kind}_start"), "contentIndex": index}),
                &message,
            );
            for delta in deltas(&text) {
                let block = &mut message["content"][index][kind];
                *block = Value::String(format!("{}{delta}", block.as_str().unwrap_or("")));
                on_event(
                    json!({"type": format!("{kind}_delta"), "contentIndex": index, "delta": delta}),
                    &message,
                );
            }
            on_event(
                json!({"type": format!("{kind}_end"), "contentIndex": index, "content": text}),
                &message,
            );
        }
        for (n, call) in turn.tool_calls.iter().enumerate() {
            let index = message["content"].as_array().map_or(0, Vec::len);
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{}_{turn_index}_{n}", self.prompt_count));
            let arguments = self.substitute(&call.arguments);
            let block =
                json!({"type": "toolCall", "id": id, "name": call.name, "arguments": arguments});
            message["content"]
                .as_array_mut()
                .expect("content")
                .push(block.clone());
            on_event(
                json!({"type": "toolcall_start", "contentIndex": index}),
                &message,
            );
            on_event(
                json!({"type": "toolcall_delta", "contentIndex": index, "delta": arguments.to_string()}),
                &message,
            );
            on_event(
                json!({"type": "toolcall_end", "contentIndex": index, "toolCall": block}),
                &message,
            );
        }
        let stop = turn.stop_reason.unwrap_or_else(|| {
            if turn.tool_calls.is_empty() {
                "stop".into()
            } else {
                "toolUse".into()
            }
        });
        message["stopReason"] = Value::String(stop.clone());
        if let Some(error) = turn.error_message {
            message["errorMessage"] = Value::String(error);
        }
        let output_tokens = estimate_tokens(&message["content"].to_string());
        message["usage"]["input"] = input_tokens.into();
        message["usage"]["output"] = output_tokens.into();
        message["usage"]["totalTokens"] = (input_tokens + output_tokens).into();
        let end = if stop == "error" { "error" } else { "done" };
        on_event(json!({"type": end, "reason": stop}), &message);
        message
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_rewind_a_new_prompt_goes_on_with_the_next_turn() {
        let mut model = ScriptedModel::from_json(
            r#"{"rewind": false, "turns": [{"text": "one"}, {"text": "two"}]}"#,
            "t",
        )
        .unwrap();
        let request = json!({"messages": []});
        let mut text = || {
            model.new_prompt("p");
            model.complete(&request, &CancelToken::new(), &mut |_, _| {})["content"][0]["text"]
                .clone()
        };
        assert_eq!(text(), "one");
        assert_eq!(text(), "two");
    }

    #[test]
    fn plays_turns_in_order_and_rewinds_per_prompt() {
        let mut model = ScriptedModel::from_json(
            r#"{"turns": [{"text": "run ${X}", "toolCalls": [{"name": "bash", "arguments": {"command": "echo ${X}"}}]}, {"text": "done"}]}"#,
            "t",
        )
        .unwrap();
        model.set_variable("X", "hi");
        model.new_prompt("p");
        let request = model.request_body(&ModelRequest {
            system_prompt: "",
            messages: &[],
            tools: &[],
        });
        let mut events = Vec::new();
        let first = model.complete(&request, &CancelToken::new(), &mut |e, _| {
            events.push(e["type"].as_str().unwrap().to_owned())
        });
        assert_eq!(first["stopReason"], "toolUse");
        assert_eq!(first["content"][0]["text"], "run hi");
        assert_eq!(first["content"][1]["arguments"]["command"], "echo hi");
        assert_eq!(events.first().map(String::as_str), Some("start"));
        assert!(events.contains(&"toolcall_end".to_owned()) && events.last().unwrap() == "done");
        let second = model.complete(&request, &CancelToken::new(), &mut |_, _| {});
        assert_eq!(
            (
                second["stopReason"].as_str(),
                second["content"][0]["text"].as_str()
            ),
            (Some("stop"), Some("done"))
        );
        model.new_prompt("again");
        assert_eq!(
            model.complete(&request, &CancelToken::new(), &mut |_, _| {})["content"][0]["text"],
            "run hi"
        );
    }

    #[test]
    fn resume_at_plays_the_turn_a_conversation_is_at() {
        let mut model = ScriptedModel::from_json(
            r#"{"turns": [{"text": "one ${PROMPT}", "toolCalls": [{"name": "bash", "arguments": {}}]}, {"text": "two"}]}"#,
            "t",
        )
        .unwrap();
        let user = |text: &str| json!({"role": "user", "content": text});
        let assistant = json!({"role": "assistant", "content": "x"});
        let tool = json!({"role": "tool", "content": "out", "tool_call_id": "c"});
        let mut play = |messages: &[Value]| {
            let turn = model.resume_at(messages);
            let body = json!({"messages": messages});
            let message = model.complete(&body, &CancelToken::new(), &mut |_, _| {});
            (turn, message)
        };
        let (turn, first) = play(&[json!({"role": "system", "content": "s"}), user("hi")]);
        assert_eq!(
            (turn, first["content"][0]["text"].as_str()),
            (0, Some("one hi"))
        );
        assert_eq!(first["content"][1]["id"], "call_1_0_0");
        let (turn, second) = play(&[user("hi"), assistant.clone(), tool.clone()]);
        assert_eq!(
            (turn, second["content"][0]["text"].as_str()),
            (1, Some("two"))
        );
        // A second prompt in the same conversation starts the script again.
        let (turn, again) = play(&[user("hi"), assistant.clone(), tool, assistant, user("more")]);
        assert_eq!(
            (turn, again["content"][1]["id"].as_str()),
            (0, Some("call_2_0_0"))
        );
    }

    #[test]
    fn a_bad_script_names_the_problem() {
        let error = ScriptedModel::from_json(r#"{"turns": [{"txt": "x"}]}"#, "s.json")
            .err()
            .unwrap();
        assert!(error.contains("s.json") && error.contains("txt"), "{error}");
    }
}
