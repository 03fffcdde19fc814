//! pi-workflows as a native pi-hooks plugin: phased workflows defined in `workflow.yaml` and
//! Markdown phase files, with tool gating per phase, nested subworkflows, a hidden context
//! message before every agent run, and an auto-continue countdown when the agent stops early.
//! See `plugins/workflow/README.md`.

pub mod commands;
pub mod context_prompt;
pub mod countdown;
pub mod definitions;
pub mod hooks;
pub mod persistence;
pub mod renderers;
pub mod state;
pub mod status;
pub mod templates;
pub mod tool;

use std::sync::{Arc, Mutex, MutexGuard};

use pi_hooks_abi::sdk::LogLevel;
use pi_hooks_abi::sdk::prelude::*;

use definitions::Definitions;
use state::WorkflowState;

pi_hooks_abi::plugin!(
    name: "workflow",
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    description: "Phased workflows (pi-workflows): tool gating, subworkflows, auto-continue",
);

/// The plugin's memory: the one tracked workflow and the loaded definitions.
#[derive(Debug, Default)]
pub struct Runtime {
    /// The tracked workflow (active, or finished and not yet notified).
    pub state: Option<WorkflowState>,
    /// The definitions loaded last.
    pub defs: Definitions,
}

/// The runtime and the countdown, shared by every handler.
#[derive(Clone, Default)]
pub struct Plugin {
    runtime: Arc<Mutex<Runtime>>,
    /// The pending countdown.
    pub countdown: countdown::Shared,
    /// The status shown last (logged on change in modes without a UI).
    shown: Arc<Mutex<Option<String>>>,
}

impl Plugin {
    /// The runtime, locked (calls into one plugin never overlap, so this never waits long).
    pub fn lock(&self) -> MutexGuard<'_, Runtime> {
        self.runtime.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets (or, with `None`, clears) the `workflow` status. Without a UI (print and JSON
    /// modes) each change is logged at info level instead (`PI_HOOKS_LOG=info` shows it).
    pub fn set_status(&self, ctx: &Context<'_>, text: Option<&str>) -> Result<()> {
        let mut shown = self.shown.lock().unwrap_or_else(|e| e.into_inner());
        if !ctx.has_ui() && shown.as_deref() != text {
            let line =
                text.map_or_else(|| "status cleared".to_string(), |t| format!("status: {t}"));
            ctx.plugin().log(LogLevel::Info, &line);
        }
        *shown = text.map(str::to_owned);
        ctx.ui().set_status(status::STATUS_KEY, text)
    }
}

/// Loads the definitions for `cwd` (global only without one), logging every warning.
pub fn load_definitions(handle: PluginHandle, cwd: Option<&str>) -> Definitions {
    let (defs, warnings) =
        definitions::load(&definitions::agent_dir(), cwd.map(std::path::Path::new));
    for warning in warnings {
        handle.log(LogLevel::Warn, &warning);
    }
    defs
}

/// Appends the state as a `workflow:state` entry.
pub fn persist(handle: PluginHandle, state: &WorkflowState) -> Result<()> {
    handle.append_entry(persistence::ENTRY_TYPE, state)
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn init(pi: &mut Registrar) -> Result<()> {
    let plugin = Plugin::default();
    hooks::register(pi, &plugin)?;
    tool::register(pi, &plugin)?;
    commands::register(pi, &plugin)?;
    renderers::register(pi)
}
