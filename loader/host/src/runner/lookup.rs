//! Finding a plugin's registration by name in the current plugin set: the first plugin in
//! load order that registered it wins (pi's rule for commands and renderers).

use std::sync::Arc;

use super::Runner;
use crate::plugin::LoadedPlugin;
use crate::plugin::registrations::{Command, Renderer};

impl Runner {
    /// The plugin command `name` (without the slash) and the plugin that registered it first.
    pub fn find_command(&self, name: &str) -> Option<(Arc<LoadedPlugin>, Command)> {
        self.plugins().into_iter().find_map(|plugin| {
            let command = plugin
                .registrations()
                .commands
                .into_iter()
                .find(|c| c.name == name)?;
            Some((plugin, command))
        })
    }

    /// The renderer of `custom_type` and the plugin that registered it first.
    pub fn find_renderer(&self, custom_type: &str) -> Option<(Arc<LoadedPlugin>, Renderer)> {
        self.plugins().into_iter().find_map(|plugin| {
            let renderer = plugin
                .registrations()
                .renderers
                .into_iter()
                .find(|r| r.custom_type == custom_type)?;
            Some((plugin, renderer))
        })
    }
}
