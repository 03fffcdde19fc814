//! Registration: event handlers, commands, tools, message renderers, flags, shortcuts.

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::c_void;

use super::context::PiContext;
use super::result::PiResult;
use super::status::PiStatus;
use super::strings::PiStr;
use super::value::PiValue;

/// An opaque handle for one loaded instance of a plugin, handed to `init`. Valid until the
/// plugin's shutdown returns; pass it to registrations and actions (also from timers and
/// threads the plugin started). After the plugin is retired, calls through it answer
/// `PI_ERR_CANCELLED`; a pointer the host never handed out answers `PI_ERR_INVALID_ARG`.
pub struct PiPlugin {
    _opaque: [u8; 0],
    _not_send_sync_or_movable: PhantomData<(*mut u8, PhantomPinned)>,
}

/// An event handler.
///
/// - `user_data`: what was passed to `on`.
/// - `event`: the payload, borrowed until the handler returns; `values->get(event,
///   pi_str("type"))` is the event name. Field names are pi's (`toolName`, `toolCallId`,
///   `input` ...).
/// - `ctx`: the call's context (cwd, UI, session), valid until the handler returns.
/// - `result`: empty; set fields or a JSON document to return a result (for example
///   `{"block":true,"reason":"..."}` from `tool_call`). Leave it empty to return nothing.
///
/// Return `PI_OK`, or an error status (after `context->set_error(ctx, ...)`): the host reports
/// it and goes on with the next handler, except in `tool_call`, where any error blocks the
/// tool (fail closed). The host never calls one plugin from two threads at once.
pub type PiEventHandler = unsafe extern "C" fn(
    user_data: *mut c_void,
    event: *const PiValue,
    ctx: *mut PiContext,
    result: *mut PiResult,
) -> PiStatus;

/// A slash command's handler: `args` is the text after the command name (borrowed).
/// Command contexts also allow the session-control functions of `PiContextApi`.
pub type PiCommandHandler =
    unsafe extern "C" fn(user_data: *mut c_void, args: PiStr, ctx: *mut PiContext) -> PiStatus;

/// Argument completions for a command: set `result` to a JSON array of
/// `{"value","label","description"?}` objects, or leave it empty for none. `prefix` is the
/// text typed after the command's name. Called when a front end asks: the interactive
/// mode's editor on each key typed after `/name `, pi's editor through the bridge, and RPC
/// clients with the `get_command_completions` command (a pi-hooks addition; pi's RPC has no
/// completion request). Gets the command's `user_data`; never called at the same time as
/// the handler.
pub type PiCompletionHandler =
    unsafe extern "C" fn(user_data: *mut c_void, prefix: PiStr, result: *mut PiResult) -> PiStatus;

/// A tool's execute function. `params` are the arguments the model gave (borrowed), already
/// checked against the tool's schema by nobody: check what you need. Fill `result` with
/// `content` (`add_text`), optional `details` and optional `isError`; stream progress with
/// `context->tool_update`. Returning an error status makes an error tool result with the
/// message set through `set_error`.
pub type PiToolExecute = unsafe extern "C" fn(
    user_data: *mut c_void,
    tool_call_id: PiStr,
    params: *const PiValue,
    ctx: *mut PiContext,
    result: *mut PiResult,
) -> PiStatus;

/// A message renderer: `message` is the custom message (`customType`, `content`, `details`),
/// `options` is `{"expanded": bool}`. Set `result` to a JSON array of lines (strings), or leave
/// it empty to fall back to the default rendering.
pub type PiRenderHandler = unsafe extern "C" fn(
    user_data: *mut c_void,
    message: *const PiValue,
    options: *const PiValue,
    result: *mut PiResult,
) -> PiStatus;

/// A keyboard shortcut's handler.
pub type PiShortcutHandler =
    unsafe extern "C" fn(user_data: *mut c_void, ctx: *mut PiContext) -> PiStatus;

/// A cleanup registered with `add_cleanup`, run once when the plugin is retired.
pub type PiCleanupFn = unsafe extern "C" fn(data: *mut c_void);

/// A slash command. Strings are copied during `register_command`.
#[repr(C)]
pub struct PiCommandDef {
    /// `sizeof(PiCommandDef)`.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The name without the slash, for example "todos".
    pub name: PiStr,
    /// Shown in command lists (may be empty).
    pub description: PiStr,
    /// Required.
    pub handler: Option<PiCommandHandler>,
    /// Optional (NULL for none).
    pub complete: Option<PiCompletionHandler>,
    /// Passed to `handler` and `complete`.
    pub user_data: *mut c_void,
}

/// A tool the model may call. Strings are copied during `register_tool`. A tool with the name
/// of a built-in tool replaces it.
#[repr(C)]
pub struct PiToolDef {
    /// `sizeof(PiToolDef)`.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The name the model calls it by, for example "todo".
    pub name: PiStr,
    /// A human label (may be empty: the name is used).
    pub label: PiStr,
    /// The description the model reads.
    pub description: PiStr,
    /// The parameters as a JSON Schema object, as JSON text. Empty means `{"type":"object"}`.
    pub parameters_json: PiStr,
    /// Required.
    pub execute: Option<PiToolExecute>,
    /// Passed to `execute`.
    pub user_data: *mut c_void,
}

/// A renderer for custom messages of one `customType`.
#[repr(C)]
pub struct PiRendererDef {
    /// `sizeof(PiRendererDef)`.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The `customType` it renders.
    pub custom_type: PiStr,
    /// Required.
    pub render: Option<PiRenderHandler>,
    /// Passed to `render`.
    pub user_data: *mut c_void,
}

/// A boolean flag: `--name` sets it to true.
pub const PI_FLAG_BOOLEAN: u32 = 1;
/// A string flag: `--name value`.
pub const PI_FLAG_STRING: u32 = 2;

/// A command-line flag. The first plugin to register a name wins; read it with
/// `actions->get_flag`.
#[repr(C)]
pub struct PiFlagDef {
    /// `sizeof(PiFlagDef)`.
    pub struct_size: u32,
    /// `PI_FLAG_BOOLEAN` or `PI_FLAG_STRING`.
    pub kind: u32,
    /// The name without dashes.
    pub name: PiStr,
    /// Shown in help (may be empty).
    pub description: PiStr,
    /// The default as JSON text (`true`, `"text"`); empty for none.
    pub default_json: PiStr,
}

/// A keyboard shortcut of the interactive mode.
#[repr(C)]
pub struct PiShortcutDef {
    /// `sizeof(PiShortcutDef)`.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The key, for example "ctrl+shift+t".
    pub key: PiStr,
    /// Shown in help (may be empty).
    pub description: PiStr,
    /// Required.
    pub handler: Option<PiShortcutHandler>,
    /// Passed to `handler`.
    pub user_data: *mut c_void,
}

/// Registration. Call these from `init` only; later they answer `PI_ERR_UNAVAILABLE`. Each
/// copies the strings and definitions it is given; `user_data` pointers are kept as they are
/// and handed back on every call. A duplicate name from the same plugin answers
/// `PI_ERR_DUPLICATE`; conflicts between plugins are resolved by the host (first wins) and
/// reported. A name (event, command, tool, custom type, flag, key) must not be blank nor
/// contain NUL (`PI_ERR_INVALID_ARG`). An event name the host never emits is accepted (a newer
/// plugin on an older host still loads) but reported at load with the nearest known name. A
/// plugin may make at most 10 000 registrations of all kinds together; past that each
/// registration answers `PI_ERR` and the load reports it.
#[repr(C)]
pub struct PiRegistryApi {
    /// `sizeof(PiRegistryApi)` in the host.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Subscribes `handler` to the event named `event` (for example "tool_call",
    /// "session_start"). A plugin's handlers for one event run in the order registered.
    pub on: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        event: PiStr,
        handler: Option<PiEventHandler>,
        user_data: *mut c_void,
    ) -> PiStatus,
    /// Registers a slash command.
    pub register_command:
        unsafe extern "C" fn(plugin: *mut PiPlugin, def: *const PiCommandDef) -> PiStatus,
    /// Registers a tool.
    pub register_tool:
        unsafe extern "C" fn(plugin: *mut PiPlugin, def: *const PiToolDef) -> PiStatus,
    /// Registers a message renderer. The first plugin to register a `customType` renders it.
    /// It is called when a front end shows a custom message: the interactive mode draws the
    /// lines in the conversation, RPC clients ask for them with the `render_message` command
    /// (a pi-hooks addition to pi's protocol), pi asks through the bridge; print and JSON
    /// modes print no messages, so they never call it.
    pub register_message_renderer:
        unsafe extern "C" fn(plugin: *mut PiPlugin, def: *const PiRendererDef) -> PiStatus,
    /// Registers a command-line flag.
    pub register_flag:
        unsafe extern "C" fn(plugin: *mut PiPlugin, def: *const PiFlagDef) -> PiStatus,
    /// Registers a keyboard shortcut, in pi's key format (`ctrl+shift+p`, `alt+x`, `f5`,
    /// `pageDown`). The interactive mode calls the handler (with an event's context and the
    /// UI) when the key is pressed at the editor. As in pi, Ctrl+C, Ctrl+D, Esc and Enter stay
    /// the terminal's (such a shortcut is skipped with a warning), and of two plugins with the
    /// same key the later one in load order wins. Other modes have no keys and never call it;
    /// pi does not bind the shortcuts of bridged plugins either.
    pub register_shortcut:
        unsafe extern "C" fn(plugin: *mut PiPlugin, def: *const PiShortcutDef) -> PiStatus,
    /// Registers `cleanup(data)` to run once when the plugin is retired, after its shutdown:
    /// the place to free `user_data`. Cleanups run in reverse order of registration. Unlike
    /// the other entries, this one may also be called after init.
    pub add_cleanup: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        cleanup: Option<PiCleanupFn>,
        data: *mut c_void,
    ) -> PiStatus,
    /// Describes why `init` is about to fail; the host shows the text in its error report.
    pub set_init_error: unsafe extern "C" fn(plugin: *mut PiPlugin, message: PiStr),
}
