//! # pi-hooks
//!
//! The host for native pi hook plugins: the `pi-hooks` binary, and this library for a Rust
//! program that wants native plugins in an agent, an editor or a tool of its own.
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
//!    [`Runner::reload_plugin`]); `reload::watch` watches the files.
//!
//! `loader/examples/embed.rs` is a whole agent loop in about 40 lines that gates its tool
//! calls through native plugins (`cargo run -p pi-hooks --example embed -- PLUGIN COMMAND...`).
//! [`testing::PluginTest`] fires single events at one plugin for unit tests.
//!
//! Call [`crash_guard::install`] first thing in `main` to have a plugin's crash reported
//! with its name and event before the process ends (or use `--isolate`'s child processes,
//! [`isolate`]).
//!
//! ## Inside
//!
//! The flow runs one way, one module per stage: [`discover`] (which files, in which order)
//! -> [`trust`] (project plugins need approval) -> [`library`] (shadow copy, open, ABI
//! negotiation) -> [`plugin`] (init, calls, retirement) with [`registry`] (what a plugin
//! registered) -> [`runner`] -> the agent loop and the modes (`pi-hooks` itself). Host
//! services reach plugins only through the tables in [`host_api`]. [`reload`] replaces
//! plugins in a running runner without a gap or a mix. The rest is private to the crate
//! (modes, exec, timers, shadow copies, checked handles, settings, paths), except four
//! modules hidden from these docs: `cli` (the binary's entry), `agent`, `event_bus` and
//! `tools`, which the project's own tests and benches reach; they are not a stable API.

pub use discover::DiscoveryOptions;
pub use load::{LoadReport, default_options, load_all};
pub use pi_hooks_abi::ffi::{PI_MODE_INTERACTIVE, PI_MODE_JSON, PI_MODE_PRINT, PI_MODE_RPC};
pub use plugin::LoadedPlugin;
pub use runner::events::ToolCallOutcome;
pub use runner::{ExtensionError, Runner, RunnerConfig};
pub use services::{HostServices, SessionOp, UiService};
pub use standalone::Standalone;

#[doc(hidden)]
pub mod agent;
#[doc(hidden)]
pub mod cli;
pub mod crash_guard;
pub mod diagnostics;
pub mod discover;
mod display;
#[doc(hidden)]
pub mod event_bus;
mod event_names;
mod exception_barrier;
mod exec;
mod files;
mod handles;
pub mod host_api;
pub mod isolate;
pub mod library;
pub mod load;
mod modes;
mod paths;
pub mod plugin;
mod plugin_memory;
pub mod registry;
pub mod reload;
pub mod runner;
mod runtime;
pub mod services;
pub mod session;
mod settings;
mod shadow;
pub mod standalone;
pub mod testing;
mod timers;
#[doc(hidden)]
pub mod tools;
pub mod trace;
pub mod trust;
