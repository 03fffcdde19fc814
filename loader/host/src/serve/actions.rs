//! The client's `command`, `tool` and `reload` requests: a plugin command or tool run as the
//! agent runs them (first registration of a name wins), and `/reload` through
//! [`Runner::reload_all`].

use pi_hooks_abi::ffi::PI_OK;
use serde_json::{Value, json};

use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::call::{call_command, call_tool};
use crate::plugin_files::discover::DiscoveryOptions;
use crate::runner::Runner;

use super::protocol::describe;

fn scope(runner: &Runner, kind: CallKind) -> CallScope {
    let config = runner.config();
    CallScope::new(kind, &config.cwd, config.mode)
        .with_session_file(runner.session_file().as_deref())
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
