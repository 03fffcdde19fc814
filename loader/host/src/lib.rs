//! # pi-hooks-host
//!
//! The embeddable host for native pi hook plugins: what the `pi-hooks` binary runs, as a
//! library for a Rust program that wants the user's native plugins in an agent, an editor or
//! a tool of its own, and for a plugin's own tests. No terminal UI, no HTTP client, no agent
//! loop: those are the `pi-hooks` binary's (`loader/cli`) and `pi-hooks-agent`'s.
//!
//! ## Embedding
//!
//! 1. Find and load the plugins as `pi-hooks` does (the user's plugin folders and settings,
//!    project plugins only once trusted, ABI checks): [`default_options`] and [`load_all`],
//!    which gives a [`LoadReport`] (the plugins, and why others did not load).
//! 2. Put them behind a [`Runner`] ([`RunnerConfig::new`]) and bind the services they call
//!    back into: [`Standalone`] (your [`UiService`] for dialogs and notifications, your sink
//!    for their messages), or your own [`HostServices`] when you have sessions.
//! 3. Dispatch events and read the decisions, with pi's combination rules:
//!    [`Runner::emit_tool_call`] ([`ToolCallOutcome`]), [`Runner::emit_tool_result`],
//!    [`Runner::emit_input`], [`Runner::emit_context`], [`Runner::emit`] for notifications,
//!    and the others on [`Runner`]; the events and their payloads are in `docs/events.md`.
//! 4. Reload after a rebuild: [`Runner::reload_all`] (or one file:
//!    [`Runner::reload_plugin`]); [`lifecycle::watch`] watches the files.
//!
//! `loader/host/examples/embed.rs` is a whole agent loop in about 40 lines that gates its
//! tool calls through native plugins
//! (`cargo run -p pi-hooks-host --example embed -- PLUGIN COMMAND...`).
//! [`testing::PluginTest`] fires events at one plugin for unit tests.
//!
//! Call [`guards::crash_guard::install`] first thing in `main` to have a plugin's crash
//! reported with its name and event before the process ends (or run plugins in child
//! processes, [`isolate`]).
//!
//! ## Inside
//!
//! The flow runs one way, one folder per stage:
//!
//! - [`plugin_files`]: which files, in which order ([`plugin_files::discover`]), and whether
//!   they may run ([`plugin_files::trust`]);
//! - [`library`]: the private copy of the bytes, the open, the ABI negotiation;
//! - [`plugin`]: one instance: its state, what it registered, the calls into it, its
//!   retirement;
//! - [`host_api`]: the tables the plugin calls back into, over the session's [`services`]
//!   (the interfaces a host implements, and exec, timers and the event bus);
//! - [`runner`]: the dispatch of every event with pi's combination rules;
//! - [`lifecycle`]: loading and reloading;
//! - [`isolate`] and [`serve`]: plugins in child processes, and the protocol they (and the
//!   pi bridge) speak;
//! - [`guards`] (checked handles, the exception barrier, crash reports, escaping) and
//!   [`observe`] (the hook trace, diagnostics) serve every stage.

#![warn(missing_docs)]

pub use lifecycle::load::{LoadReport, default_options, load_all};
pub use pi_hooks_abi::ffi::{PI_MODE_INTERACTIVE, PI_MODE_JSON, PI_MODE_PRINT, PI_MODE_RPC};
pub use plugin::LoadedPlugin;
pub use plugin_files::discover::DiscoveryOptions;
pub use runner::events::ToolCallOutcome;
pub use runner::{ExtensionError, Runner, RunnerConfig};
pub use services::standalone::Standalone;
pub use services::{HostServices, SessionOp, UiService};

pub mod guards;
pub mod host_api;
pub mod identity;
pub mod isolate;
pub mod library;
pub mod lifecycle;
pub mod observe;
pub mod packages;
pub mod plugin;
pub mod plugin_files;
pub mod runner;
pub mod sandbox;
pub mod serve;
pub mod services;
pub mod testing;
