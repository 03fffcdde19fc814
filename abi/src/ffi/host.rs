//! The host's root table of services, handed to the plugin's init.

use super::actions::PiActionsApi;
use super::context::PiContextApi;
use super::registry::PiRegistryApi;
use super::result::PiResultApi;
use super::strings::PiStr;
use super::ui::PiUiApi;
use super::value::PiValueApi;

/// The host's services, grouped in one table per topic.
///
/// Owned by the host; valid, with every table it points to, until the plugin is unloaded.
/// Each table starts with its `struct_size`: a plugin built for an older minor simply never
/// reads past its own size; a plugin that wants an entry added in a later minor checks
/// `struct_size` (or `abi_minor`) first. Every function of every table may be called from any
/// thread, also from threads the plugin started, unless its documentation says otherwise.
#[repr(C)]
pub struct PiHostApi {
    /// `sizeof(PiHostApi)` in the host.
    pub struct_size: u32,
    /// The host's ABI major (always `PI_HOOKS_ABI_MAJOR` for a plugin that was loaded).
    pub abi_major: u32,
    /// The host's ABI minor; at least the plugin's.
    pub abi_minor: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The host program's version, for example "pi-hooks 0.1.0".
    pub host_version: PiStr,
    /// Reading event payloads and other host values.
    pub values: *const PiValueApi,
    /// Building handler results.
    pub results: *const PiResultApi,
    /// Registering handlers, commands, tools, renderers, flags (during init).
    pub registry: *const PiRegistryApi,
    /// Acting on the session: messages, entries, exec, timers, tools, flags, logging.
    pub actions: *const PiActionsApi,
    /// Reading and acting on the context of a handler call.
    pub context: *const PiContextApi,
    /// The user interface of the current mode.
    pub ui: *const PiUiApi,
}
