//! # pi-hooks
//!
//! The host for native pi hook plugins. The flow runs one way, one module per stage:
//!
//! [`discover`] (which files, in which order) -> [`trust`] (project plugins need approval) ->
//! [`library`] (shadow copy, open, ABI negotiation) -> [`plugin`] (init, calls, retirement)
//! with [`registry`] (what a plugin registered) -> [`cli`].
//!
//! Host services reach plugins only through the tables in [`host_api`]. [`reload`] replaces
//! plugins in a running [`runner`] (`/reload`, `--watch`) without a gap or a mix.

pub mod agent;
pub mod cli;
pub mod crash_guard;
pub mod discover;
pub mod display;
pub mod event_bus;
pub mod event_names;
pub mod exception_barrier;
pub mod exec;
pub mod files;
pub mod handles;
pub mod host_api;
pub mod isolate;
pub mod library;
pub mod load;
pub mod modes;
pub mod paths;
pub mod plugin;
pub mod plugin_memory;
pub mod registry;
pub mod reload;
pub mod runner;
pub mod runtime;
pub mod services;
pub mod session;
pub mod settings;
pub mod shadow;
pub mod testing;
pub mod timers;
pub mod tools;
pub mod trust;
