//! Plugin-registered tools and commands, seen from the agent loop.

use std::path::Path;
use std::sync::Arc;

use pi_hooks_abi::ffi::PI_OK;
use serde_json::Value;

use crate::tools::{Tool, ToolInvocation, ToolOutput};
use pi_hooks_host::host_api::context::{CallKind, CallScope};
use pi_hooks_host::host_api::value::HostValue;
use pi_hooks_host::plugin::call::{call_command, call_tool};
use pi_hooks_host::plugin::registrations;
use pi_hooks_host::plugin::state::PluginState;
use pi_hooks_host::runner::{ExtensionError, Runner};

/// A tool a plugin registered; its execute runs inside the plugin.
struct PluginTool {
    state: Arc<PluginState>,
    tool: registrations::Tool,
    scope: CallScope,
}

impl Tool for PluginTool {
    fn name(&self) -> &str {
        &self.tool.name
    }

    fn label(&self) -> &str {
        &self.tool.label
    }

    fn description(&self) -> &str {
        &self.tool.description
    }

    fn parameters(&self) -> Value {
        self.tool.parameters.clone()
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let params = HostValue::from_json(call.args.clone());
        // Partial results become `tool_execution_update` events, which may go to this same
        // plugin: never dispatch them from inside its call (it holds its call lock). A
        // forwarder thread delivers them; a plugin that listens to its own updates gets them
        // once the tool returns.
        let (updates, queued) = std::sync::mpsc::channel::<Value>();
        let outcome = std::thread::scope(|scope| {
            scope.spawn(|| {
                for partial in queued {
                    (call.on_update)(output_of(partial));
                }
            });
            let on_update = move |partial: Value| {
                let _ = updates.send(partial);
            };
            call_tool(
                &self.state,
                &self.tool,
                call.tool_call_id,
                &params,
                &self.scope,
                &on_update,
            )
        });
        if outcome.status != PI_OK {
            return Err(outcome.error_text());
        }
        Ok(output_of(outcome.result.unwrap_or(Value::Null)))
    }
}

/// A tool result a plugin built: `{content, details?, isError?}`.
fn output_of(result: Value) -> ToolOutput {
    let content = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
        _ => Vec::new(),
    };
    ToolOutput {
        content,
        details: result.get("details").cloned().unwrap_or(Value::Null),
        is_error: result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// The tools the model gets: built-ins, where a plugin tool of the same name replaces the
/// built-in, then the other plugin tools. Between plugins the first registration of a name
/// wins (pi's rule).
pub(super) fn merge_tools(
    runner: &Runner,
    builtin: &[Arc<dyn Tool>],
    cwd: &Path,
) -> Vec<Arc<dyn Tool>> {
    let mut plugin_tools: Vec<Arc<dyn Tool>> = Vec::new();
    for plugin in runner.plugins() {
        for tool in plugin.registrations().tools {
            if plugin_tools.iter().any(|t| t.name() == tool.name) {
                continue;
            }
            let scope =
                CallScope::new(CallKind::Tool, &cwd.to_string_lossy(), runner.config().mode)
                    .with_session_file(runner.config().session_file.as_deref());
            plugin_tools.push(Arc::new(PluginTool {
                state: plugin.state().clone(),
                tool,
                scope,
            }));
        }
    }
    let mut tools: Vec<Arc<dyn Tool>> = builtin
        .iter()
        .map(
            |b| match plugin_tools.iter().position(|t| t.name() == b.name()) {
                Some(at) => plugin_tools.remove(at),
                None => b.clone(),
            },
        )
        .collect();
    tools.extend(plugin_tools);
    tools
}

/// Whether `text` is `/name args` for a plugin command `name` that would run (not a built-in).
pub(super) fn is_command(runner: &Runner, text: &str) -> bool {
    let Some(rest) = text.strip_prefix('/') else {
        return false;
    };
    let name = rest.split(char::is_whitespace).next().unwrap_or(rest);
    !pi_hooks_host::plugin::registrations::is_builtin_command(name)
        && runner.find_command(name).is_some()
}

/// Runs `/name args` when a plugin registered the command `name` (first registration wins;
/// a plugin command named like a built-in never runs, see
/// [`pi_hooks_host::plugin::registrations::BUILTIN_COMMANDS`]). Returns whether it was a plugin command. A failing command is reported with
/// `extensionPath` `command:<name>` and still counts as handled, as in pi.
pub(super) fn run_command(runner: &Runner, text: &str, cwd: &Path) -> bool {
    let Some(rest) = text.strip_prefix('/') else {
        return false;
    };
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if pi_hooks_host::plugin::registrations::is_builtin_command(name) {
        return false;
    }
    let scope = CallScope::new(
        CallKind::Command,
        &cwd.to_string_lossy(),
        runner.config().mode,
    )
    .with_session_file(runner.config().session_file.as_deref());
    let Some((plugin, command)) = runner.find_command(name) else {
        return false;
    };
    let mut outcome = call_command(plugin.state(), &command, args.trim_start(), &scope);
    if outcome.met_a_retired_instance() {
        // A reload replaced the plugin between the lookup and the call (`--watch` reloads
        // while commands arrive): the command goes to the instance that replaced it, once.
        if let Some((plugin, command)) = runner.find_command(name) {
            outcome = call_command(plugin.state(), &command, args.trim_start(), &scope);
        }
    }
    if outcome.status != PI_OK {
        runner.emit_error(&ExtensionError {
            extension_path: format!("command:{name}"),
            event: "command".into(),
            error: outcome.error_text(),
        });
    }
    true
}
