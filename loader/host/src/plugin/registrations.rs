//! What one plugin instance registered: its event handlers, commands, tools, renderers, flags
//! and shortcuts ([`Registrations`]), within the host's limit, and the names of the host's own
//! commands, which no plugin command may take ([`BUILTIN_COMMANDS`]).

use std::os::raw::c_void;

use pi_hooks_abi::ffi::*;
use serde::Serialize;

/// A plugin's `user_data` pointer, kept as it was given and handed back on every call.
#[derive(Debug, Clone, Copy)]
pub struct UserData(pub *mut c_void);
// SAFETY: the host never dereferences user data; it only hands it back to the plugin, whose
// calls it serialises, as the ABI's threading contract says.
unsafe impl Send for UserData {}
// SAFETY: as above.
unsafe impl Sync for UserData {}

/// An event subscription.
#[derive(Debug, Clone)]
pub struct EventHandler {
    /// The event name.
    pub event: String,
    /// The plugin's function.
    pub handler: PiEventHandler,
    /// Its user data.
    pub user_data: UserData,
}

/// A registered slash command.
#[derive(Debug, Clone, Serialize)]
pub struct Command {
    /// Name without the slash.
    pub name: String,
    /// Description (may be empty).
    pub description: String,
    /// The handler.
    #[serde(skip)]
    pub handler: PiCommandHandler,
    /// Completions, if any.
    #[serde(skip)]
    pub complete: Option<PiCompletionHandler>,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// A registered tool.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// The name the model calls.
    pub name: String,
    /// Human label.
    pub label: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the parameters.
    pub parameters: serde_json::Value,
    /// The execute function.
    #[serde(skip)]
    pub execute: PiToolExecute,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// A registered message renderer.
#[derive(Debug, Clone, Serialize)]
pub struct Renderer {
    /// The `customType` it renders.
    #[serde(rename = "customType")]
    pub custom_type: String,
    /// The render function.
    #[serde(skip)]
    pub render: PiRenderHandler,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// A registered command-line flag.
#[derive(Debug, Clone, Serialize)]
pub struct Flag {
    /// Name without dashes.
    pub name: String,
    /// "boolean" or "string".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Description (may be empty).
    pub description: String,
    /// Default value, if any.
    pub default: Option<serde_json::Value>,
}

/// A registered keyboard shortcut.
#[derive(Debug, Clone, Serialize)]
pub struct Shortcut {
    /// The key.
    pub key: String,
    /// Description (may be empty).
    pub description: String,
    /// The handler.
    #[serde(skip)]
    pub handler: PiShortcutHandler,
    /// Its user data.
    #[serde(skip)]
    pub user_data: UserData,
}

/// The most registrations (handlers, commands, tools, renderers, flags and shortcuts
/// together) one plugin may make. A plugin needs tens; the cap keeps a runaway init from
/// making the host's memory and every listing grow without bound.
pub const MAX_REGISTRATIONS: usize = 10_000;

/// What a registration registers, for duplicate checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegistrationKind {
    /// A slash command.
    Command,
    /// A tool.
    Tool,
    /// A message renderer.
    Renderer,
    /// A flag.
    Flag,
    /// A shortcut.
    Shortcut,
}

/// Everything a plugin registered, in registration order.
#[derive(Debug, Default, Clone)]
pub struct Registrations {
    /// Event handlers.
    pub events: Vec<EventHandler>,
    /// Commands.
    pub commands: Vec<Command>,
    /// Tools.
    pub tools: Vec<Tool>,
    /// Message renderers.
    pub renderers: Vec<Renderer>,
    /// Flags.
    pub flags: Vec<Flag>,
    /// Shortcuts.
    pub shortcuts: Vec<Shortcut>,
    /// Names taken per kind (duplicate checks in constant time).
    taken: rustc_hash::FxHashSet<(RegistrationKind, String)>,
    /// Whether a registration was refused for passing [`MAX_REGISTRATIONS`].
    pub over_limit: bool,
}

impl Registrations {
    /// The distinct event names subscribed to, in first-registration order.
    pub fn event_names(&self) -> Vec<String> {
        let mut seen = rustc_hash::FxHashSet::default();
        self.events
            .iter()
            .filter(|h| seen.insert(h.event.as_str()))
            .map(|h| h.event.clone())
            .collect()
    }

    /// How many registrations there are of every kind together.
    pub fn count(&self) -> usize {
        self.events.len()
            + self.commands.len()
            + self.tools.len()
            + self.renderers.len()
            + self.flags.len()
            + self.shortcuts.len()
    }

    /// Checks that one more registration fits under [`MAX_REGISTRATIONS`] (`PI_ERR` past it,
    /// remembered in `over_limit` for the load report).
    pub fn reserve_one(&mut self) -> Result<(), PiStatus> {
        if self.count() >= MAX_REGISTRATIONS {
            self.over_limit = true;
            return Err(PI_ERR);
        }
        Ok(())
    }

    /// Reserves one registration named `name` of `kind`: `PI_ERR_DUPLICATE` when the plugin
    /// already registered that name, `PI_ERR` past the limit.
    pub fn claim(&mut self, kind: RegistrationKind, name: &str) -> Result<(), PiStatus> {
        self.reserve_one()?;
        if !self.taken.insert((kind, name.to_owned())) {
            return Err(PI_ERR_DUPLICATE);
        }
        Ok(())
    }
}

/// The host's built-in slash commands (the terminal UI's `/help`, `/new`, `/quit` and
/// `/reload`). A plugin command of one of these names never runs and is not listed: built-ins
/// win, as in pi.
pub const BUILTIN_COMMANDS: &[&str] = &["help", "new", "quit", "reload"];

/// Whether `name` (without the slash) is one of the [`BUILTIN_COMMANDS`].
pub fn is_builtin_command(name: &str) -> bool {
    BUILTIN_COMMANDS.contains(&name)
}
