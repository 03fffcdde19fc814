//! The client's `command`, `tool` and `reload` requests: a plugin command or tool run as the
//! agent runs them (first registration of a name wins), and `/reload` through
//! [`Runner::reload_all`].

use pi_hooks_abi::ffi::PI_OK;
use serde_json::{Value, json};

use crate::discover::DiscoveryOptions;
use crate::host_api::context::{CallKind, CallScope};
use crate::host_api::value::HostValue;
use crate::plugin::{call_command, call_tool};
use crate::runner::Runner;

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

/// `reload`: every plugin again (the hot-reload semantics); the result lists the plugins
/// now loaded, the load errors and the unloaded paths.
pub fn reload(runner: &Runner, options: &DiscoveryOptions) -> Value {
    let report = runner.reload_all(options);
    json!({
        "plugins": report.plugins.iter().map(|(plugin, _)| json!({
            "name": plugin.name(),
            "path": plugin.path,
        })).collect::<Vec<_>>(),
        "errors": report.errors.iter().map(|e| json!({"path": e.path, "error": e.error})).collect::<Vec<_>>(),
        "unloaded": report.unloaded,
    })
}
