//! A safe Rust SDK for writing pi-hooks plugins.
//!
//! [`plugin!`](crate::plugin) exports the entry symbol and descriptor; the init function gets a
//! [`Registrar`] to subscribe closures to events and register commands, tools and flags.
//! Every callback runs behind a panic barrier: a panic becomes an error report to the host
//! (which fails a `tool_call` closed), never an abort.

mod barrier;
mod context;
mod descriptor;
mod error;
mod events;
mod handle;
mod registrar;
mod reply;
mod shared;
mod strings;
mod value;

pub use context::{Context, Ui};
pub use descriptor::{StaticDescriptor, run_init};
pub use error::{Error, Result, status_name};
pub use events::ToolCall;
pub use handle::{ExecOutput, Identity, LogLevel, PluginHandle};
pub use registrar::{Completion, Registrar, ToolSpec};
pub use reply::{IntoReply, Reply, ToolCallDecision};
pub use shared::Shared;
pub use value::{OwnedValue, Value};

/// The JSON crate the SDK speaks (results, `deserialize`), re-exported so a plugin needs no
/// dependency of its own to name `serde_json::Value`.
pub use serde_json;

pub use crate::ffi::{
    PI_MODE_INSPECT, PI_MODE_INTERACTIVE, PI_MODE_JSON, PI_MODE_PRINT, PI_MODE_RPC,
};

/// Notification levels for [`Ui::notify`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notify {
    /// Information.
    Info,
    /// A warning.
    Warning,
    /// An error.
    Error,
}

/// Everything a plugin usually needs: `use pi_hooks_abi::sdk::prelude::*;`.
pub mod prelude {
    pub use super::{
        Context, Error, Identity, IntoReply, Notify, PluginHandle, Registrar, Reply, Result,
        Shared, ToolCall, ToolCallDecision, ToolSpec, Ui, Value,
    };
    /// `serde_json::Value`, owned JSON (the payload [`Value`] is a borrowed view).
    pub use serde_json::Value as Json;
    pub use serde_json::json;
}

/// Exports a plugin: the entry symbol `pi_hooks_plugin_v1` and its descriptor.
///
/// ```no_run
/// use pi_hooks_abi::sdk::prelude::*;
///
/// pi_hooks_abi::plugin!(name: "my-plugin", version: env!("CARGO_PKG_VERSION"), init: init);
///
/// fn init(pi: &mut Registrar) -> Result<()> {
///     pi.command("hello", "Says hello", |_args, ctx| ctx.ui().notify("hello", Notify::Info))
/// }
/// ```
///
/// An optional `description: "..."` may follow. `init` runs behind the panic barrier; an
/// `Err` or a panic refuses the plugin with that message.
#[macro_export]
macro_rules! plugin {
    (name: $name:expr, version: $version:expr, init: $init:path $(, description: $description:expr)? $(,)?) => {
        const _: () = {
            static DESCRIPTOR: $crate::sdk::StaticDescriptor = $crate::sdk::StaticDescriptor::new(
                $name,
                $version,
                $crate::plugin!(@description $($description)?),
                __pi_hooks_init,
            );

            unsafe extern "C" fn __pi_hooks_init(
                host: *const $crate::ffi::PiHostApi,
                plugin: *mut $crate::ffi::PiPlugin,
            ) -> $crate::ffi::PiStatus {
                // SAFETY: the host calls init with its valid host table and plugin handle, as
                // the ABI requires; run_init checks both for NULL.
                unsafe { $crate::sdk::run_init(host, plugin, $init) }
            }

            const __PI_HOOKS_INFO_LEN: usize = $crate::info_block::info_block_len(
                $name,
                $version,
                $crate::plugin!(@description $($description)?),
            );
            /// The plugin's information block, read from the file without loading it.
            #[unsafe(no_mangle)]
            #[allow(non_upper_case_globals)]
            pub static pi_hooks_plugin_info_v1: [u8; __PI_HOOKS_INFO_LEN] =
                $crate::info_block::info_block::<__PI_HOOKS_INFO_LEN>(
                    $name,
                    $version,
                    $crate::plugin!(@description $($description)?),
                );

            /// The entry symbol of a pi-hooks ABI v1 plugin.
            #[unsafe(no_mangle)]
            pub extern "C" fn pi_hooks_plugin_v1() -> *const $crate::ffi::PiPluginDescriptor {
                DESCRIPTOR.as_ptr()
            }
        };
    };
    (@description $description:expr) => { $description };
    (@description) => { "" };
}
