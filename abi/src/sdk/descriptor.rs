//! The descriptor a Rust plugin exports, and its init barrier.

use std::os::raw::c_char;

use super::barrier::guard;
use super::error::Result;
use super::handle::PluginHandle;
use super::registrar::Registrar;
use super::strings::pi_str;
use crate::ffi::*;
use crate::layout::{AbiSizes, LAYOUT_FINGERPRINT};

/// A descriptor in a `static` (what [`plugin!`](crate::plugin) builds).
pub struct StaticDescriptor(PiPluginDescriptor);

// SAFETY: the descriptor only points at 'static string literals and functions; it is never
// written after construction.
unsafe impl Sync for StaticDescriptor {}

const fn static_str(s: &'static str) -> PiStr {
    PiStr {
        ptr: s.as_ptr() as *const c_char,
        len: s.len(),
    }
}

impl StaticDescriptor {
    /// A descriptor for this SDK's ABI version, with the layout fingerprint and struct sizes.
    pub const fn new(
        name: &'static str,
        version: &'static str,
        description: &'static str,
        init: PiInitFn,
    ) -> Self {
        let sizes = AbiSizes::CURRENT;
        StaticDescriptor(PiPluginDescriptor {
            struct_size: sizes.descriptor,
            abi_major: PI_HOOKS_ABI_MAJOR,
            abi_minor: PI_HOOKS_ABI_MINOR,
            flags: 0,
            layout_fingerprint: LAYOUT_FINGERPRINT,
            name: static_str(name),
            version: static_str(version),
            description: static_str(description),
            host_api_size: sizes.host_api,
            value_api_size: sizes.value_api,
            result_api_size: sizes.result_api,
            registry_api_size: sizes.registry_api,
            actions_api_size: sizes.actions_api,
            context_api_size: sizes.context_api,
            ui_api_size: sizes.ui_api,
            reserved: 0,
            init: Some(init),
            shutdown: None,
        })
    }

    /// The pointer the entry symbol returns.
    pub const fn as_ptr(&'static self) -> *const PiPluginDescriptor {
        &self.0
    }
}

/// Runs a plugin's init function behind the panic barrier.
///
/// # Safety
/// `host` and `plugin` must be what the host passed to the descriptor's init.
pub unsafe fn run_init<F>(host: *const PiHostApi, plugin: *mut PiPlugin, init: F) -> PiStatus
where
    F: FnOnce(&mut Registrar) -> Result<()>,
{
    if host.is_null() || plugin.is_null() {
        return PI_ERR_INVALID_ARG;
    }
    // SAFETY: non-null, and the host keeps its table valid until the plugin is unloaded.
    let host: &'static PiHostApi = unsafe { &*host };
    let tables_present = (host.struct_size as usize) >= size_of::<PiHostApi>()
        && !host.values.is_null()
        && !host.results.is_null()
        && !host.registry.is_null()
        && !host.actions.is_null()
        && !host.context.is_null()
        && !host.ui.is_null();
    if !tables_present {
        return PI_ERR_INVALID_ARG;
    }
    let handle = PluginHandle { host, raw: plugin };
    let mut registrar = Registrar { handle };
    guard(
        // SAFETY: the registry table is valid (checked above); the message is borrowed.
        |m| unsafe { (handle.registry().set_init_error)(plugin, pi_str(m)) },
        || init(&mut registrar),
    )
}
