//! The tools the model gets, kept in step with the plugin set: after a reload (a new runner
//! generation) or a session switch (plugin tools carry the session file in their context)
//! the list is merged again. Active tools are kept by name; a tool that is new in the list
//! starts active, as pi activates tools registered after startup.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{Core, Shared, plugin_tool};
use crate::tools::Tool;

/// The merged tools and what they were merged for.
pub(super) struct ToolSet {
    /// `(runner generation, session file)` the list was merged for.
    key: (u64, Option<String>),
    tools: Arc<Vec<Arc<dyn Tool>>>,
}

impl ToolSet {
    pub(super) fn new(key: (u64, Option<String>), tools: Vec<Arc<dyn Tool>>) -> Mutex<Self> {
        Mutex::new(ToolSet {
            key,
            tools: Arc::new(tools),
        })
    }
}

/// `[{name, description, parameters}]` of `tools` (pi's `getAllTools`).
pub(super) fn describe(tools: &[Arc<dyn Tool>]) -> Value {
    tools
        .iter()
        .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()}))
        .collect()
}

impl Core {
    /// The current tools, merged again first when the plugin set or the session changed.
    pub(super) fn tools(&self) -> Arc<Vec<Arc<dyn Tool>>> {
        let key = (self.runner.generation(), self.runner.session_file());
        let mut set = Shared::lock(&self.toolset);
        if set.key == key {
            return set.tools.clone();
        }
        let tools = plugin_tool::merge_tools(&self.runner, &self.builtin, &self.config.cwd);
        let before: Vec<String> = set.tools.iter().map(|t| t.name().to_owned()).collect();
        {
            let mut active = Shared::lock(&self.shared.active_tools);
            active.retain(|name| tools.iter().any(|t| t.name() == name));
            for tool in tools.iter() {
                let name = tool.name();
                if !before.iter().any(|b| b == name) && !active.iter().any(|a| a == name) {
                    active.push(name.to_owned());
                }
            }
        }
        *Shared::lock(&self.shared.all_tools) = describe(&tools);
        set.key = key;
        set.tools = Arc::new(tools);
        set.tools.clone()
    }
}
