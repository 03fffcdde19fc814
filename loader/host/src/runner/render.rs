//! Message renderers (`register_message_renderer`): the lines a plugin gives for its custom
//! messages, for front ends that show messages (RPC clients through `render_message`, the
//! terminal UI).

use serde_json::{Value, json};

use super::{ExtensionError, Runner};
use crate::host_api::value::HostValue;
use crate::plugin::call::call_renderer;

impl Runner {
    /// Reports a failed front-end call into a plugin to the error listeners and returns it.
    fn report(&self, plugin_path: &str, event: &str, error: String) -> ExtensionError {
        let error = ExtensionError {
            extension_path: plugin_path.to_owned(),
            event: event.to_owned(),
            error,
        };
        self.emit_error(&error);
        error
    }

    /// The lines the plugin that registered a renderer for `message`'s `customType` first
    /// gives for it (`options` `{"expanded": expanded}`). `Ok(None)` when no plugin renders
    /// that type, or the renderer left its result empty (the default rendering applies);
    /// `Err` (also reported to the error listeners, event `render`) when it failed or gave
    /// something other than an array of strings.
    pub fn render_message(
        &self,
        message: &Value,
        expanded: bool,
    ) -> Result<Option<Vec<String>>, ExtensionError> {
        let Some(custom_type) = message.get("customType").and_then(Value::as_str) else {
            return Ok(None);
        };
        let Some((plugin, renderer)) = self.find_renderer(custom_type) else {
            return Ok(None);
        };
        let outcome = call_renderer(
            plugin.state(),
            &renderer,
            &HostValue::from_json(message.clone()),
            &HostValue::from_json(json!({ "expanded": expanded })),
        );
        let fail = |error: String| Err(self.report(&plugin.path, "render", error));
        if outcome.status != pi_hooks_abi::ffi::PI_OK {
            return fail(outcome.error_text());
        }
        match outcome.result {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(lines)) if lines.iter().all(Value::is_string) => Ok(Some(
                lines
                    .into_iter()
                    .filter_map(|l| l.as_str().map(str::to_owned))
                    .collect(),
            )),
            Some(other) => fail(format!(
                "a renderer must give an array of strings (lines), not {other}"
            )),
        }
    }
}

impl Runner {
    /// The argument completions of the plugin command `name` for the text typed after it
    /// (`prefix`), from the plugin whose command runs (the first registration; a built-in's
    /// name never). `Ok(None)` when there is no such command or it registered no
    /// completions; `Err` (also reported, event `completions`) when the call failed or gave
    /// something other than an array.
    pub fn command_completions(
        &self,
        name: &str,
        prefix: &str,
    ) -> Result<Option<Vec<Value>>, ExtensionError> {
        if crate::plugin::registrations::is_builtin_command(name) {
            return Ok(None);
        }
        let Some((plugin, command)) = self.find_command(name) else {
            return Ok(None);
        };
        let Some(outcome) = crate::plugin::call::call_completions(plugin.state(), &command, prefix)
        else {
            return Ok(None);
        };
        let fail = |error: String| Err(self.report(&plugin.path, "completions", error));
        if outcome.status != pi_hooks_abi::ffi::PI_OK {
            return fail(outcome.error_text());
        }
        match outcome.result {
            None | Some(Value::Null) => Ok(Some(Vec::new())),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(other) => fail(format!(
                "completions must be an array of {{value, label, description?}}, not {other}"
            )),
        }
    }
}
