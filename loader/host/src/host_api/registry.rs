//! `PiRegistryApi`: registration during init.

use std::os::raw::c_void;

use pi_hooks_abi::ffi::*;

use super::{barrier, read_name, read_sized, read_str};
use crate::plugin::registrations::{
    Command, EventHandler, Flag, RegistrationKind, Renderer, Shortcut, Tool, UserData,
};
use crate::plugin::state::{Phase, PluginState};

/// Runs `f` for a plugin that is still in its init; other phases get `PI_ERR_UNAVAILABLE`.
fn registering(
    plugin: *mut PiPlugin,
    f: impl FnOnce(&PluginState) -> Result<(), PiStatus>,
) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let Some(state) = PluginState::from_handle(plugin) else {
            return PI_ERR_INVALID_ARG;
        };
        if state.phase() != Phase::Init {
            return PI_ERR_UNAVAILABLE;
        }
        f(state).err().unwrap_or(PI_OK)
    })
}

unsafe extern "C" fn on(
    plugin: *mut PiPlugin,
    event: PiStr,
    handler: Option<PiEventHandler>,
    user_data: *mut c_void,
) -> PiStatus {
    registering(plugin, |state| {
        // SAFETY: `event` is a plugin string valid for the call.
        let event = unsafe { read_name(event) }?;
        let handler = handler.ok_or(PI_ERR_INVALID_ARG)?;
        state.with_registrations(|r| {
            r.reserve_one()?;
            r.events.push(EventHandler {
                event,
                handler,
                user_data: UserData(user_data),
            });
            Ok(())
        })
    })
}

unsafe extern "C" fn register_command(plugin: *mut PiPlugin, def: *const PiCommandDef) -> PiStatus {
    registering(plugin, |state| {
        // SAFETY: `def` is the plugin's struct, valid for the call.
        let def = unsafe { read_sized(def, size_of::<PiCommandDef>()) }?;
        // SAFETY: the def's strings are valid for the call.
        let (name, description) =
            unsafe { (read_name(def.name)?, read_str(def.description)?.to_owned()) };
        let name = name.trim_start_matches('/').to_owned();
        let handler = def.handler.ok_or(PI_ERR_INVALID_ARG)?;
        state.with_registrations(|r| {
            r.claim(RegistrationKind::Command, &name)?;
            r.commands.push(Command {
                name,
                description,
                handler,
                complete: def.complete,
                user_data: UserData(def.user_data),
            });
            Ok(())
        })
    })
}

unsafe extern "C" fn register_tool(plugin: *mut PiPlugin, def: *const PiToolDef) -> PiStatus {
    registering(plugin, |state| {
        // SAFETY: `def` is the plugin's struct, valid for the call.
        let def = unsafe { read_sized(def, size_of::<PiToolDef>()) }?;
        // SAFETY: the def's strings are valid for the call.
        let (name, label, description, schema) = unsafe {
            (
                read_name(def.name)?,
                read_str(def.label)?,
                read_str(def.description)?,
                read_str(def.parameters_json)?,
            )
        };
        let parameters = if schema.trim().is_empty() {
            serde_json::json!({"type": "object", "properties": {}})
        } else {
            serde_json::from_str(schema).map_err(|_| PI_ERR_INVALID_ARG)?
        };
        let execute = def.execute.ok_or(PI_ERR_INVALID_ARG)?;
        let label = if label.is_empty() {
            name.clone()
        } else {
            label.to_owned()
        };
        state.with_registrations(|r| {
            r.claim(RegistrationKind::Tool, &name)?;
            r.tools.push(Tool {
                name,
                label,
                description: description.to_owned(),
                parameters,
                execute,
                user_data: UserData(def.user_data),
            });
            Ok(())
        })
    })
}

unsafe extern "C" fn register_message_renderer(
    plugin: *mut PiPlugin,
    def: *const PiRendererDef,
) -> PiStatus {
    registering(plugin, |state| {
        // SAFETY: `def` is the plugin's struct, valid for the call.
        let def = unsafe { read_sized(def, size_of::<PiRendererDef>()) }?;
        // SAFETY: the def's string is valid for the call.
        let custom_type = unsafe { read_name(def.custom_type) }?;
        let render = def.render.ok_or(PI_ERR_INVALID_ARG)?;
        state.with_registrations(|r| {
            r.claim(RegistrationKind::Renderer, &custom_type)?;
            r.renderers.push(Renderer {
                custom_type,
                render,
                user_data: UserData(def.user_data),
            });
            Ok(())
        })
    })
}

unsafe extern "C" fn register_flag(plugin: *mut PiPlugin, def: *const PiFlagDef) -> PiStatus {
    registering(plugin, |state| {
        // SAFETY: `def` is the plugin's struct, valid for the call.
        let def = unsafe { read_sized(def, size_of::<PiFlagDef>()) }?;
        let kind = match def.kind {
            PI_FLAG_BOOLEAN => "boolean",
            PI_FLAG_STRING => "string",
            _ => return Err(PI_ERR_INVALID_ARG),
        };
        // SAFETY: the def's strings are valid for the call.
        let (name, description, default) = unsafe {
            (
                read_name(def.name)?,
                read_str(def.description)?.to_owned(),
                read_str(def.default_json)?,
            )
        };
        let name = name.trim_start_matches('-').to_owned();
        let default = if default.trim().is_empty() {
            None
        } else {
            Some(serde_json::from_str(default).map_err(|_| PI_ERR_INVALID_ARG)?)
        };
        state.with_registrations(|r| {
            r.claim(RegistrationKind::Flag, &name)?;
            r.flags.push(Flag {
                name,
                kind,
                description,
                default,
            });
            Ok(())
        })
    })
}

unsafe extern "C" fn register_shortcut(
    plugin: *mut PiPlugin,
    def: *const PiShortcutDef,
) -> PiStatus {
    registering(plugin, |state| {
        // SAFETY: `def` is the plugin's struct, valid for the call.
        let def = unsafe { read_sized(def, size_of::<PiShortcutDef>()) }?;
        // SAFETY: the def's strings are valid for the call.
        let (key, description) = unsafe {
            (
                read_name(def.key)?.to_lowercase(),
                read_str(def.description)?.to_owned(),
            )
        };
        let handler = def.handler.ok_or(PI_ERR_INVALID_ARG)?;
        state.with_registrations(|r| {
            r.claim(RegistrationKind::Shortcut, &key)?;
            r.shortcuts.push(Shortcut {
                key,
                description,
                handler,
                user_data: UserData(def.user_data),
            });
            Ok(())
        })
    })
}

unsafe extern "C" fn add_cleanup(
    plugin: *mut PiPlugin,
    cleanup: Option<PiCleanupFn>,
    data: *mut c_void,
) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let Some(state) = PluginState::from_handle(plugin) else {
            return PI_ERR_INVALID_ARG;
        };
        let Some(cleanup) = cleanup else {
            return PI_ERR_INVALID_ARG;
        };
        if state.phase() == Phase::Retired {
            return PI_ERR_CANCELLED;
        }
        state.add_cleanup(cleanup, UserData(data));
        PI_OK
    })
}

unsafe extern "C" fn set_init_error(plugin: *mut PiPlugin, message: PiStr) {
    barrier((), || {
        // SAFETY: `message` is a plugin string valid for the call.
        if let (Some(state), Ok(text)) = (PluginState::from_handle(plugin), unsafe {
            read_str(message)
        }) {
            state.set_init_error(text.to_owned());
        }
    })
}

/// The host's `PiRegistryApi`.
pub static REGISTRY_API: PiRegistryApi = PiRegistryApi {
    struct_size: size_of::<PiRegistryApi>() as u32,
    reserved: 0,
    on,
    register_command,
    register_tool,
    register_message_renderer,
    register_flag,
    register_shortcut,
    add_cleanup,
    set_init_error,
};
