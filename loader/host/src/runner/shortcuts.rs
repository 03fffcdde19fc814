//! Keyboard shortcuts (`register_shortcut`): which plugin's handler a key runs, and the call.
//! pi's rules: keys are compared lower-cased; of two plugins with the same key the later one
//! in load order wins; keys the terminal keeps for itself are never given to a plugin.

use std::sync::Arc;

use super::{ExtensionError, Runner};
use crate::host_api::context::{CallKind, CallScope};
use crate::plugin::LoadedPlugin;
use crate::plugin::call::call_shortcut;
use crate::plugin::registrations::Shortcut;

impl Runner {
    /// Every shortcut a plugin registered, with its plugin, in load order.
    pub fn shortcuts(&self) -> Vec<(Arc<LoadedPlugin>, Shortcut)> {
        let mut all = Vec::new();
        for plugin in self.plugins() {
            for shortcut in plugin.registrations().shortcuts {
                all.push((plugin.clone(), shortcut));
            }
        }
        all
    }

    /// The shortcut a key runs: of those `matches` accepts, the last in load order (pi's
    /// rule: a later registration of a key replaces an earlier one).
    pub fn find_shortcut(
        &self,
        matches: impl Fn(&str) -> bool,
    ) -> Option<(Arc<LoadedPlugin>, Shortcut)> {
        self.shortcuts()
            .into_iter()
            .rev()
            .find(|(_, shortcut)| matches(&shortcut.key))
    }

    /// Runs a shortcut's handler in `cwd` with the mode's UI, under the hook timeout's
    /// rules for a call outside a run; a failure is reported (event `shortcut`) and returned.
    pub fn run_shortcut(
        &self,
        plugin: &LoadedPlugin,
        shortcut: &Shortcut,
        cwd: &str,
    ) -> Result<(), ExtensionError> {
        let config = self.config();
        let scope = CallScope::new(CallKind::Event, cwd, config.mode)
            .with_session_file(config.session_file.as_deref());
        let outcome = call_shortcut(plugin.state(), shortcut, &scope);
        if outcome.status == pi_hooks_abi::ffi::PI_OK {
            return Ok(());
        }
        let error = ExtensionError {
            extension_path: plugin.path.clone(),
            event: "shortcut".into(),
            error: outcome.error_text(),
        };
        self.emit_error(&error);
        Err(error)
    }
}
