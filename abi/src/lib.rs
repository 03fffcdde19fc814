//! # pi-hooks-abi
//!
//! The C ABI between the pi-hooks host and its native plugins, and a safe Rust SDK on top.
//!
//! - [`ffi`]: the raw `#[repr(C)]` types, one module per topic; `include/pi_hooks.h` is
//!   generated from exactly these files.
//! - [`layout`]: the ABI version check data: layout fingerprint and struct sizes per minor.
//! - [`event_reference`]: every event the host emits, its payload and how results combine
//!   (rendered into the header and `docs/events.md`).
//! - [`sdk`]: write a plugin in safe Rust: [`plugin!`] exports the entry symbol, closures
//!   handle events, panics become error reports.
//!
//! ```no_run
//! use pi_hooks_abi::sdk::prelude::*;
//!
//! pi_hooks_abi::plugin!(name: "hello", version: "0.1.0", init: init);
//!
//! fn init(pi: &mut Registrar) -> Result<()> {
//!     pi.on("session_start", |_event, ctx| {
//!         ctx.ui().notify("hello from a native plugin", Notify::Info)?;
//!         Ok(())
//!     })
//! }
//! ```

pub mod event_reference;
pub mod ffi;
pub mod info_block;
pub mod layout;
pub mod sdk;

/// Name of the entry symbol every v1 plugin exports.
pub const ENTRY_SYMBOL: &str = "pi_hooks_plugin_v1";

pub use info_block::INFO_SYMBOL;
