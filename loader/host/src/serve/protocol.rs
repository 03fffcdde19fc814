//! The serve protocol's messages: the `hello` line and the answers to the client's `event`,
//! `render` and `completions` requests, each with exactly the runner's semantics (see
//! `docs/serve-protocol.md`).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::guards::display::escape;
use crate::lifecycle::load::LoadReport;
use crate::plugin::LoadedPlugin;
use crate::runner::Runner;
use crate::runner::events::{InputOutcome, ToolCallOutcome};

/// The protocol version `hello` states.
pub const PROTOCOL_VERSION: u32 = 1;

/// The `hello` line: the protocol version, the host, every loaded plugin's subscriptions,
/// commands, tools, flags and renderers, the load errors, and `load_lines` (every load
/// problem, warning and untrusted project plugin as the other modes print them).
pub fn hello(report: &LoadReport, load_lines: &[String]) -> Value {
    let plugins: Vec<Value> = report.plugins.iter().map(describe).collect();
    let errors: Vec<Value> = report
        .errors
        .iter()
        .map(|e| json!({"path": e.path, "error": e.error}))
        .collect();
    json!({
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "pluginsHost": format!("pi-hooks {}", env!("CARGO_PKG_VERSION")),
        "plugins": plugins,
        "errors": errors,
        "loadMessages": load_lines,
    })
}

/// One plugin as `hello` (and `reload`) describe it: name, version, path, subscriptions,
/// commands, tools, flags and renderers.
pub fn describe(plugin: &LoadedPlugin) -> Value {
    let registrations = plugin.registrations();
    json!({
        "name": plugin.name(),
        "version": plugin.version(),
        "path": plugin.path,
        "events": registrations.event_names(),
        "commands": registrations.commands.iter().map(|c| json!({
            "name": c.name,
            "description": c.description,
            "completions": c.complete.is_some(),
        })).collect::<Vec<_>>(),
        "tools": registrations.tools.iter().map(|t| json!({
            "name": t.name,
            "label": t.label,
            "description": t.description,
            "parameters": t.parameters,
        })).collect::<Vec<_>>(),
        "flags": registrations.flags.iter().map(|f| json!({
            "name": f.name,
            "type": f.kind,
            "description": f.description,
            "default": f.default,
        })).collect::<Vec<_>>(),
        "renderers": registrations.renderers.iter()
            .map(|r| r.custom_type.clone()).collect::<Vec<_>>(),
        "shortcuts": registrations.shortcuts.iter().map(|s| json!({
            "key": s.key,
            "description": s.description,
        })).collect::<Vec<_>>(),
        "busChannels": crate::services::event_bus::channels_of(plugin.state()),
        "busEmitted": crate::services::event_bus::held_emissions_of(plugin.state())
            .into_iter()
            .map(|(channel, data)| json!({"channel": channel, "data": data}))
            .collect::<Vec<_>>(),
    })
}

/// A required string field of `payload`, or an error naming it.
fn text<'a>(payload: &'a Value, event: &str, field: &str) -> Result<&'a str, String> {
    payload.get(field).and_then(Value::as_str).ok_or_else(|| {
        format!(
            "event {event}: payload.{field} must be a string, got {}",
            payload.get(field).unwrap_or(&Value::Null)
        )
    })
}

/// The payload's fields as pi sent them (`payload` is an object: checked by [`event`]); the
/// runner's whole-payload entry points pass them on to the plugins unchanged.
fn fields(payload: &Value) -> Map<String, Value> {
    payload.as_object().cloned().unwrap_or_default()
}

/// Dispatches the event `name` with `payload` (its fields, without `type`) and gives the
/// combined result; `Err` names what is wrong with the request.
pub fn event(runner: &Runner, name: &str, payload: &Value) -> Result<Value, String> {
    if !payload.is_object() && !payload.is_null() {
        return Err(format!(
            "event {name}: payload must be an object, got {payload}"
        ));
    }
    let empty = json!({});
    let payload = if payload.is_null() { &empty } else { payload };
    Ok(match name {
        "tool_call" => {
            text(payload, name, "toolCallId")?;
            text(payload, name, "toolName")?;
            let mut event = fields(payload);
            event.entry("input").or_insert_with(|| json!({}));
            match runner.emit_tool_call_terminating(Runner::tool_call_event_payload(event)) {
                (ToolCallOutcome::Block { reason }, false) => {
                    json!({"block": true, "reason": reason})
                }
                // pi 1.6: stop after the tool batch when every result of it says so.
                (ToolCallOutcome::Block { reason }, true) => {
                    json!({"block": true, "reason": reason, "terminate": true})
                }
                (ToolCallOutcome::Allow { input: None, .. }, _) => json!({"block": false}),
                (
                    ToolCallOutcome::Allow {
                        input: Some(input), ..
                    },
                    _,
                ) => json!({"block": false, "input": input}),
            }
        }
        "tool_result" => {
            text(payload, name, "toolCallId")?;
            text(payload, name, "toolName")?;
            let mut event = fields(payload);
            event.entry("input").or_insert_with(|| json!({}));
            event.entry("content").or_insert_with(|| json!([]));
            if !event.get("isError").is_some_and(Value::is_boolean) {
                event.insert("isError".into(), false.into());
            }
            match runner.emit_tool_result_event(event) {
                // `details` is always there (`null`: none); `structuredContent` and `usage`
                // when the final result has them.
                Some(mut patch) => {
                    patch.entry("details").or_insert(Value::Null);
                    Value::Object(patch)
                }
                None => Value::Null,
            }
        }
        "input" => {
            text(payload, name, "text")?;
            let mut event = fields(payload);
            if !event.get("source").is_some_and(Value::is_string) {
                event.insert("source".into(), "extension".into());
            }
            match runner.emit_input_event(event) {
                InputOutcome::Continue => json!({"action": "continue"}),
                InputOutcome::Transform { text, images } => {
                    json!({"action": "transform", "text": text, "images": images})
                }
                InputOutcome::Handled(result) => {
                    let mut answer = match result {
                        Value::Object(map) => map,
                        _ => Map::new(),
                    };
                    answer.insert("action".into(), "handled".into());
                    Value::Object(answer)
                }
            }
        }
        "context" => {
            let messages = match payload.get("messages") {
                Some(Value::Array(messages)) => messages.clone(),
                other => {
                    return Err(format!(
                        "event context: payload.messages must be an array, got {}",
                        other.unwrap_or(&Value::Null)
                    ));
                }
            };
            json!({"messages": runner.emit_context(messages)})
        }
        "before_agent_start" => {
            // pi 1.6 (1.2.0): `messageType` "user" carries `prompt` (and `images`), "custom"
            // the custom `message` that starts the run and no prompt; pi 0.73.1 sends no
            // `messageType` and always a prompt.
            match payload.get("messageType").and_then(Value::as_str) {
                Some("custom") => {
                    if !payload.get("message").is_some_and(Value::is_object) {
                        return Err(format!(
                            "event before_agent_start: a \"custom\" run's payload.message must be an object, got {}",
                            payload.get("message").unwrap_or(&Value::Null)
                        ));
                    }
                }
                None | Some("user") => {
                    text(payload, name, "prompt")?;
                }
                Some(other) => {
                    return Err(format!(
                        "event before_agent_start: payload.messageType must be \"user\" or \"custom\", got {:?}",
                        escape(other)
                    ));
                }
            }
            match runner.emit_before_agent_start_event(fields(payload)) {
                Some(outcome) => json!({
                    "messages": outcome.messages,
                    "systemPrompt": outcome.system_prompt,
                }),
                None => Value::Null,
            }
        }
        "before_provider_request" => {
            let body = payload.get("payload").cloned().unwrap_or(Value::Null);
            json!({"payload": runner.emit_before_provider_request(body)})
        }
        "resources_discover" => {
            let cwd = runner.config().cwd;
            let cwd = payload.get("cwd").and_then(Value::as_str).unwrap_or(&cwd);
            let reason = payload
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("startup");
            let found = runner.emit_resources_discover(cwd, reason);
            let list = |paths: &[(String, String)]| {
                paths
                    .iter()
                    .map(|(path, plugin)| json!({"path": path, "extensionPath": plugin}))
                    .collect::<Vec<_>>()
            };
            json!({
                "skillPaths": list(&found.skill_paths),
                "promptPaths": list(&found.prompt_paths),
                "themePaths": list(&found.theme_paths),
            })
        }
        "session_directory" | "session" | "session.compacting" => {
            super::actions::event_with_result(runner, name, payload)
        }
        "user_bash" => {
            text(payload, name, "command")?;
            let mut event = fields(payload);
            if !event
                .get("excludeFromContext")
                .is_some_and(Value::is_boolean)
            {
                event.insert("excludeFromContext".into(), false.into());
            }
            if !event.get("cwd").is_some_and(Value::is_string) {
                event.insert("cwd".into(), runner.config().cwd.into());
            }
            // A failing handler fails the request (pi 1.6: the command does not run).
            runner.emit_user_bash_event(event)?.unwrap_or(Value::Null)
        }
        // ---- pi 1.6's results (issue 33, item 4): the boundaries, the chained message_end
        // and context_with_system, header mutation, project trust.
        "turn_end" | "agent_before_settle" => {
            let mut event = payload.as_object().cloned().unwrap_or_default();
            event.insert("type".into(), name.into());
            match runner.emit_boundary(Value::Object(event)) {
                Some(outcome) => {
                    json!({"entries": outcome.entries, "continue": outcome.continue_run})
                }
                None => Value::Null,
            }
        }
        "message_end" => match payload.get("message") {
            Some(message) if message.is_object() => match runner.emit_message_end(message) {
                Some(message) => json!({"message": message}),
                None => Value::Null,
            },
            other => {
                return Err(format!(
                    "event message_end: payload.message must be an object, got {}",
                    other.unwrap_or(&Value::Null)
                ));
            }
        },
        "context_with_system" => match payload.get("messages") {
            Some(Value::Array(messages)) => {
                json!({"messages": runner.emit_context_with_system(messages.clone())})
            }
            other => {
                return Err(format!(
                    "event context_with_system: payload.messages must be an array, got {}",
                    other.unwrap_or(&Value::Null)
                ));
            }
        },
        "before_provider_headers" => match payload.get("headers") {
            Some(Value::Object(headers)) => {
                json!({"headers": runner.emit_before_provider_headers(headers.clone())})
            }
            None | Some(Value::Null) => {
                json!({"headers": runner.emit_before_provider_headers(Map::new())})
            }
            Some(other) => {
                return Err(format!(
                    "event before_provider_headers: payload.headers must be an object, got {other}"
                ));
            }
        },
        "project_trust" => {
            let cwd = runner.config().cwd;
            let cwd = payload.get("cwd").and_then(Value::as_str).unwrap_or(&cwd);
            runner.emit_project_trust(cwd).unwrap_or(Value::Null)
        }
        _ => {
            let mut event = payload.as_object().cloned().unwrap_or_default();
            event.insert("type".into(), name.into());
            let event = Value::Object(event);
            if name.starts_with("session_before_") {
                runner.emit_session_before(event).unwrap_or(Value::Null)
            } else {
                runner.emit(event);
                Value::Null
            }
        }
    })
}

/// `render`: `{message, expanded?}` → `{lines}` (`null`: the default rendering applies).
pub fn render(runner: &Runner, params: &Value) -> Result<Value, String> {
    let message = params
        .get("message")
        .ok_or("render needs a \"message\" object (with its customType)")?;
    let expanded = params
        .get("expanded")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match runner.render_message(message, expanded) {
        Ok(lines) => Ok(json!({"lines": lines})),
        Err(error) => Err(error.error),
    }
}

/// `completions`: `{name, prefix}` → `{items}` (`null`: no completions for that command).
pub fn completions(runner: &Arc<Runner>, params: &Value) -> Result<Value, String> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or("completions needs the command's \"name\" (a string)")?;
    let prefix = params.get("prefix").and_then(Value::as_str).unwrap_or("");
    match runner.command_completions(name, prefix) {
        Ok(items) => Ok(json!({"items": items})),
        Err(error) => Err(error.error),
    }
}
