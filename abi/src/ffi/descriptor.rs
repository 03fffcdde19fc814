//! The plugin descriptor: what the one exported entry symbol returns.

use super::host::PiHostApi;
use super::registry::PiPlugin;
use super::status::PiStatus;
use super::strings::PiStr;

/// The plugin's init function, called once after the host accepted the descriptor.
///
/// `host` is the host's table of services; it and every table it points to stay valid until
/// the plugin is unloaded, so the plugin may keep the pointer. `plugin` is the handle that
/// identifies this plugin instance to the host: pass it to every registration and action. Init
/// registers handlers, commands, tools, renderers and flags (`host->registry`); actions that
/// need a running session (`send_message`, `exec` ...) answer `PI_ERR_UNAVAILABLE` during
/// init, except `log` and `get_flag`.
///
/// Return `PI_OK`, or an error status after describing the problem with
/// `host->registry->set_init_error`; the host then reports the plugin as failed to load and
/// drops every registration it made.
pub type PiInitFn = unsafe extern "C" fn(host: *const PiHostApi, plugin: *mut PiPlugin) -> PiStatus;

/// Optional: called once before the plugin is retired (host exit, reload, unload), after its
/// timers and subprocesses were stopped and before the cleanups registered with
/// `add_cleanup` run. No host service may be called from it but `log`.
pub type PiShutdownFn = unsafe extern "C" fn(plugin: *mut PiPlugin);

/// The plugin's descriptor, returned by the entry symbol `pi_hooks_plugin_v1`.
///
/// The host reads it before any other code of the plugin runs and refuses the plugin, with a
/// message naming the file and both versions, when:
/// - `abi_major` is not the host's major;
/// - `abi_minor` is newer than the host's minor;
/// - `struct_size` or one of the `*_size` fields does not match what `abi_minor` defines
///   (the plugin was built against a different header of the same version);
/// - `layout_fingerprint` is non-zero and differs from the host's for the same minor;
/// - `name` is empty or `init` is NULL.
///
/// In C, `PI_HOOKS_PLUGIN(name, version, description, init, shutdown)` defines the entry symbol
/// and this descriptor; `PI_HOOKS_DESCRIPTOR(...)` with the same arguments fills just the
/// descriptor. The descriptor and the strings it points to must stay valid while the library
/// is loaded (use statics).
/// Fields are only ever appended.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PiPluginDescriptor {
    /// `sizeof(PiPluginDescriptor)` as the plugin was compiled.
    pub struct_size: u32,
    /// `PI_HOOKS_ABI_MAJOR` of the header the plugin was built against.
    pub abi_major: u32,
    /// `PI_HOOKS_ABI_MINOR` of the header the plugin was built against.
    pub abi_minor: u32,
    /// Reserved, set to 0.
    pub flags: u32,
    /// `PI_HOOKS_LAYOUT_FINGERPRINT` of the header (0 = not checked).
    pub layout_fingerprint: u64,
    /// The plugin's name, shown in listings and error reports. Not empty.
    pub name: PiStr,
    /// The plugin's own version, free form (for example "1.2.0").
    pub version: PiStr,
    /// One line saying what the plugin does (may be empty).
    pub description: PiStr,
    /// `sizeof(PiHostApi)` as the plugin was compiled.
    pub host_api_size: u32,
    /// `sizeof(PiValueApi)` as the plugin was compiled.
    pub value_api_size: u32,
    /// `sizeof(PiResultApi)` as the plugin was compiled.
    pub result_api_size: u32,
    /// `sizeof(PiRegistryApi)` as the plugin was compiled.
    pub registry_api_size: u32,
    /// `sizeof(PiActionsApi)` as the plugin was compiled.
    pub actions_api_size: u32,
    /// `sizeof(PiContextApi)` as the plugin was compiled.
    pub context_api_size: u32,
    /// `sizeof(PiUiApi)` as the plugin was compiled.
    pub ui_api_size: u32,
    /// Reserved, set to 0.
    pub reserved: u32,
    /// Required: see `PiInitFn`.
    pub init: Option<PiInitFn>,
    /// Optional (NULL for none): see `PiShutdownFn`.
    pub shutdown: Option<PiShutdownFn>,
}

/// The signature of the entry symbol `pi_hooks_plugin_v1`: returns the plugin's descriptor,
/// never NULL, without side effects. Export it with `PI_HOOKS_EXPORT`.
pub type PiEntryFn = unsafe extern "C" fn() -> *const PiPluginDescriptor;
