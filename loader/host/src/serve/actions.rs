//! The client's `command`, `tool` and `reload` requests: a plugin command or tool run as the
//! agent runs them (first registration of a name wins), and `/reload` through
//! [`Runner::reload_all`]; and what an isolated plugin's host asks of its child so that the
//! plugin sees what it would in process: `shortcut`, `bus` (a delivery of the host's event
//! bus), `session_directory`'s result, and the `systemPrompt` and `mode` of a request's
//! `context`.

use pi_hooks_abi::ffi::{PI_MODE_INTERACTIVE, PI_MODE_JSON, PI_MODE_PRINT, PI_MODE_RPC, PI_OK};
use serde_json::{Value, json};

use crate::guards::display::escape;
use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::call::{call_command, call_tool};
use crate::plugin_files::discover::DiscoveryOptions;
use crate::runner::Runner;

use super::protocol::describe;

fn scope(runner: &Runner, kind: CallKind) -> CallScope {
    let config = runner.config();
    let scope = CallScope::new(kind, &config.cwd, config.mode)
        .with_session_file(runner.session_file().as_deref());
    // The system prompt the client's call sees (the request's `context`; "" without one).
    scope.replace_system_prompt(runner.event_scope().system_prompt().as_str());
    scope
}

/// The `systemPrompt` and `mode` of a request's `context` (an isolated plugin's host sends
/// them with every call, so `get_system_prompt` and `mode` answer what they would in process):
/// the system prompt the plugins see from now on, and their mode (a `PI_MODE_*` of a session:
/// print, JSON, RPC or interactive).
pub fn apply_context(runner: &Runner, context: &Value) -> Result<(), String> {
    match context.get("systemPrompt") {
        None | Some(Value::Null) => {}
        Some(Value::String(prompt)) => {
            if runner.event_scope().system_prompt().as_str() != prompt {
                runner.set_system_prompt(prompt);
            }
        }
        Some(other) => {
            return Err(format!(
                "context.systemPrompt must be a string, got {other}"
            ));
        }
    }
    match context.get("mode") {
        None | Some(Value::Null) => {}
        Some(mode) => match mode.as_u64().and_then(|m| u32::try_from(m).ok()) {
            Some(m @ (PI_MODE_PRINT | PI_MODE_JSON | PI_MODE_RPC | PI_MODE_INTERACTIVE)) => {
                runner.set_mode(m)
            }
            _ => {
                return Err(format!(
                    "context.mode must be a session's PI_MODE_* (1 print, 2 json, 3 rpc, 4 interactive), got {mode}"
                ));
            }
        },
    }
    Ok(())
}

/// `shortcut` `{key}`: runs the handler of the keyboard shortcut `key` (as `hello`'s
/// `shortcuts` list it; of two, the later in load order); `{}` when it returned. A failing
/// handler is reported as an `extension_error` line (event `shortcut`), as the interactive
/// mode reports it, and its message is the error.
pub fn shortcut(runner: &Runner, params: &Value) -> Result<Value, String> {
    let key = params
        .get("key")
        .and_then(Value::as_str)
        .ok_or("shortcut needs the shortcut's \"key\" (a string, as hello's shortcuts list it)")?;
    let Some((plugin, shortcut)) = runner.find_shortcut(|k| k == key) else {
        return Err(format!(
            "no plugin registered the shortcut {key:?} (see hello's shortcuts)"
        ));
    };
    let cwd = runner.config().cwd;
    match runner.run_shortcut(&plugin, &shortcut, &cwd) {
        Ok(()) => Ok(json!({})),
        // Reported already (an `extension_error` line).
        Err(_) => Ok(json!({"failed": true})),
    }
}

/// `bus` `{channel, data, nth}`: hands an emission of the host's event bus to the `nth`
/// (from 0) subscriber of `channel` in this process, now (see
/// `crate::services::event_bus`'s module doc); `{}`. Its error is reported as an
/// `extension_error` line (event `bus`).
pub fn bus(params: &Value) -> Result<Value, String> {
    let channel = params
        .get("channel")
        .and_then(Value::as_str)
        .ok_or("bus needs the \"channel\" (a string)")?;
    let nth = params
        .get("nth")
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or("bus needs \"nth\": which subscriber of the channel (a number from 0)")?;
    let data = params.get("data").cloned().unwrap_or(Value::Null);
    crate::services::event_bus::deliver_nth(channel, nth, data);
    Ok(json!({}))
}

/// The events whose results the agent combines by rules of their own, which the protocol's
/// other events do not carry back: `session_directory` (see [`session_directory`]), pi's
/// legacy `session` event (a `before_*` reason can cancel, as `session_before_*` events do)
/// and `session.compacting` (the last truthy result wins). `payload` without `type`.
pub fn event_with_result(runner: &Runner, name: &str, payload: &Value) -> Value {
    let mut event = payload.as_object().cloned().unwrap_or_default();
    match name {
        "session" => {
            let reason = event
                .remove("reason")
                .and_then(|r| r.as_str().map(str::to_owned))
                .unwrap_or_default();
            event.remove("type");
            runner
                .emit_legacy_session(&reason, event)
                .unwrap_or(Value::Null)
        }
        "session.compacting" => runner
            .emit_session_compacting(Value::Object(event))
            .unwrap_or(Value::Null),
        _ => session_directory(runner, payload),
    }
}

/// The event `session_directory` (`{cwd}`): each handler in load order, and the last
/// non-empty `sessionDir` one returned is the result (`{"sessionDir": …}`, `null` for none),
/// as the session commands choose it in process. A failing handler is reported on stderr as
/// they report it (`Extension "<path>" session_directory handler failed: <message>`) and
/// skipped.
pub fn session_directory(runner: &Runner, payload: &Value) -> Value {
    let mut event = payload.as_object().cloned().unwrap_or_default();
    event.insert("type".into(), "session_directory".into());
    let config = runner.config();
    let cwd = event
        .get("cwd")
        .and_then(Value::as_str)
        .map_or(config.cwd.clone(), str::to_owned);
    let payload = HostValue::from_json(Value::Object(event));
    let scope = CallScope::new(CallKind::Event, &cwd, config.mode)
        .with_session_file(runner.session_file().as_deref());
    scope.replace_system_prompt(runner.event_scope().system_prompt().as_str());
    let mut chosen = None;
    for plugin in runner.plugins() {
        for outcome in plugin.call_event("session_directory", &payload, &scope) {
            if outcome.status != PI_OK {
                let message = outcome
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("status {}", outcome.status));
                eprintln!(
                    "Extension \"{}\" session_directory handler failed: {}",
                    escape(&plugin.path),
                    escape(&message)
                );
                continue;
            }
            if let Some(dir) = outcome
                .result
                .as_ref()
                .and_then(|r| r.get("sessionDir"))
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
            {
                chosen = Some(dir.to_owned());
            }
        }
    }
    chosen.map_or(Value::Null, |dir| json!({"sessionDir": dir}))
}

/// `command` `{name, args}`: runs the plugin command `name`; `{}` when it returned.
pub fn command(runner: &Runner, params: &Value) -> Result<Value, String> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or("command needs the command's \"name\" (a string, without the slash)")?;
    let args = params.get("args").and_then(Value::as_str).unwrap_or("");
    let Some((plugin, command)) = runner.find_command(name) else {
        return Err(format!(
            "no plugin registered the command {name:?} (see hello's commands)"
        ));
    };
    let outcome = call_command(
        plugin.state(),
        &command,
        args,
        &scope(runner, CallKind::Command),
    );
    if outcome.status != PI_OK {
        return Err(outcome.error_text());
    }
    Ok(json!({}))
}

/// `tool` `{name, toolCallId, params}`: runs the plugin tool `name`; each partial result goes
/// to `on_update`; the result is the tool's `{content, details?, isError?}`.
pub fn tool(
    runner: &Runner,
    params: &Value,
    on_update: &(dyn Fn(Value) + Sync),
) -> Result<Value, String> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or("tool needs the tool's \"name\" (a string)")?;
    let id = params
        .get("toolCallId")
        .and_then(Value::as_str)
        .unwrap_or("");
    let args = HostValue::from_json(params.get("params").cloned().unwrap_or_else(|| json!({})));
    let found = runner.plugins().iter().find_map(|plugin| {
        let tool = plugin
            .registrations()
            .tools
            .into_iter()
            .find(|t| t.name == name)?;
        Some((plugin.state().clone(), tool))
    });
    let Some((state, tool)) = found else {
        return Err(format!(
            "no plugin registered the tool {name:?} (see hello's tools)"
        ));
    };
    let outcome = call_tool(
        &state,
        &tool,
        id,
        &args,
        &scope(runner, CallKind::Tool),
        on_update,
    );
    if outcome.status != PI_OK {
        return Err(outcome.error_text());
    }
    Ok(outcome.result.unwrap_or(Value::Null))
}

/// `reload` (`plugin`: one plugin's path or name; without it, every plugin) with the
/// hot-reload semantics. The result describes the plugins loaded now as `hello` does, and
/// lists the load errors and the unloaded paths; a failed one-plugin reload is an error
/// naming what still runs.
pub fn reload(
    runner: &Runner,
    options: &DiscoveryOptions,
    params: &Value,
) -> Result<Value, String> {
    let (errors, unloaded) = match params.get("plugin") {
        None | Some(Value::Null) => {
            let report = runner.reload_all(options);
            let errors: Vec<Value> = report
                .errors
                .iter()
                .map(|e| json!({"path": e.path, "error": e.error}))
                .collect();
            (errors, report.unloaded)
        }
        Some(Value::String(wanted)) => {
            let Some(plugin) = runner
                .plugins()
                .into_iter()
                .find(|p| p.path == *wanted || p.name() == wanted)
            else {
                return Err(format!(
                    "no loaded plugin has the path or name {wanted:?} (see hello's plugins)"
                ));
            };
            runner
                .reload_plugin(std::path::Path::new(&plugin.path), options)
                .map_err(|error| error.to_string())?;
            (Vec::new(), Vec::new())
        }
        Some(other) => {
            return Err(format!(
                "reload's \"plugin\" must be a plugin's path or name (a string), got {other}"
            ));
        }
    };
    Ok(json!({
        "plugins": runner.plugins().iter().map(|p| describe(p)).collect::<Vec<_>>(),
        "errors": errors,
        "unloaded": unloaded,
    }))
}

/// `flags` `{values: {name: value}}`: the values the client's command line gave the
/// plugins' flags (what `get_flag` answers from now on); `{}`.
pub fn flags(params: &Value) -> Result<Value, String> {
    let Some(values) = params.get("values").and_then(Value::as_object) else {
        return Err("flags needs \"values\": an object of flag name to value".into());
    };
    for (name, value) in values {
        if !matches!(value, Value::Bool(_) | Value::String(_)) {
            return Err(format!(
                "flag {name:?}: a value must be a boolean or a string, got {value}"
            ));
        }
    }
    crate::plugin::state::set_flag_values(
        values.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    );
    Ok(json!({}))
}
