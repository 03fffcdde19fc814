//! Registration during init: closures for events, commands, tools, renderers; flags.

use std::os::raw::c_void;

use super::barrier::guard;
use super::context::Context;
use super::error::{Result, check};
use super::events::ToolCall;
use super::handle::PluginHandle;
use super::reply::{IntoReply, ToolCallDecision, write_reply};
use super::strings::pi_str;
use super::value::Value;
use crate::ffi::*;

/// A closure bound to the plugin it belongs to; what `user_data` points at.
pub(crate) struct Bound<F> {
    pub(crate) handle: PluginHandle,
    pub(crate) f: F,
}

/// Boxes `f` with its plugin handle and registers its drop as a cleanup of the plugin.
pub(crate) fn bind<F: Send + 'static>(handle: PluginHandle, f: F) -> Result<*mut c_void> {
    let data = Box::into_raw(Box::new(Bound { handle, f })).cast::<c_void>();
    // SAFETY: valid handle; `drop_bound::<F>` frees exactly the box just made, once, when the
    // host runs cleanups.
    let status =
        unsafe { (handle.registry().add_cleanup)(handle.raw, Some(drop_bound::<F>), data) };
    if status != PI_OK {
        // SAFETY: the host did not take the cleanup, so the box is still ours alone.
        drop(unsafe { Box::from_raw(data.cast::<Bound<F>>()) });
    }
    check(status, "add_cleanup")?;
    Ok(data)
}

unsafe extern "C" fn drop_bound<F>(data: *mut c_void) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `data` came from Box::into_raw in `bind` for this F; the host runs it once.
        drop(unsafe { Box::from_raw(data.cast::<Bound<F>>()) })
    }));
}

/// Describes a tool for [`Registrar::tool`].
#[derive(Debug, Clone, Default)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: String,
    /// A human label (empty: the name).
    pub label: String,
    /// What the model reads about the tool.
    pub description: String,
    /// The JSON Schema of the parameters.
    pub parameters: serde_json::Value,
}

/// What `init` gets: registers this plugin's handlers, commands, tools, renderers and flags.
pub struct Registrar {
    pub(crate) handle: PluginHandle,
}

impl Registrar {
    /// The plugin's handle, to keep for actions outside handlers.
    pub fn handle(&self) -> PluginHandle {
        self.handle
    }

    /// Subscribes `handler` to the event named `event`. Its return value becomes the
    /// handler's result: `()` for none, a `serde_json::Value` for a JSON result, or a
    /// [`ToolCallDecision`].
    pub fn on<F, R>(&mut self, event: &str, handler: F) -> Result<()>
    where
        F: FnMut(Value<'_>, &Context<'_>) -> Result<R> + Send + 'static,
        R: IntoReply,
    {
        let data = bind(self.handle, handler)?;
        // SAFETY: valid handle; `data` is a live Bound<F> matching the trampoline's type.
        let status = unsafe {
            (self.handle.registry().on)(
                self.handle.raw,
                pi_str(event),
                Some(event_trampoline::<F, R>),
                data,
            )
        };
        check(status, "on")
    }

    /// Subscribes `handler` to the shared event bus channel `channel`: the same as
    /// [`PluginHandle::on_bus`] (which also works after init).
    pub fn on_bus<F>(&mut self, channel: &str, handler: F) -> Result<()>
    where
        F: FnMut(&str, Value<'_>) -> Result<()> + Send + 'static,
    {
        self.handle.on_bus(channel, handler)
    }

    /// Subscribes to `tool_call` with a typed view of the call.
    pub fn on_tool_call<F>(&mut self, mut handler: F) -> Result<()>
    where
        F: FnMut(ToolCall<'_>, &Context<'_>) -> Result<ToolCallDecision> + Send + 'static,
    {
        self.on("tool_call", move |event, ctx| {
            handler(ToolCall::new(event), ctx)
        })
    }

    /// Registers the slash command `/name`; the handler gets the text after the name.
    pub fn command<F>(&mut self, name: &str, description: &str, handler: F) -> Result<()>
    where
        F: FnMut(&str, &Context<'_>) -> Result<()> + Send + 'static,
    {
        let data = bind(self.handle, handler)?;
        let def = PiCommandDef {
            struct_size: size_of::<PiCommandDef>() as u32,
            reserved: 0,
            name: pi_str(name),
            description: pi_str(description),
            handler: Some(command_trampoline::<F>),
            complete: None,
            user_data: data,
        };
        // SAFETY: valid handle; `def` and its strings outlive the call (the host copies them).
        check(
            unsafe { (self.handle.registry().register_command)(self.handle.raw, &def) },
            "register_command",
        )
    }

    /// Registers a slash command with argument completions: `completions` gets the text typed
    /// after the command's name and returns the suggestions. The host asks for them when a
    /// front end wants them (RPC clients: `get_command_completions`).
    pub fn command_with_completions<F, C>(
        &mut self,
        name: &str,
        description: &str,
        handler: F,
        completions: C,
    ) -> Result<()>
    where
        F: FnMut(&str, &Context<'_>) -> Result<()> + Send + 'static,
        C: FnMut(&str) -> Vec<Completion> + Send + 'static,
    {
        let data = bind(
            self.handle,
            WithCompletions {
                run: handler,
                complete: completions,
            },
        )?;
        let def = PiCommandDef {
            struct_size: size_of::<PiCommandDef>() as u32,
            reserved: 0,
            name: pi_str(name),
            description: pi_str(description),
            handler: Some(completed_command_trampoline::<F, C>),
            complete: Some(completion_trampoline::<F, C>),
            user_data: data,
        };
        // SAFETY: valid handle; `def` and its strings outlive the call (the host copies them).
        check(
            unsafe { (self.handle.registry().register_command)(self.handle.raw, &def) },
            "register_command",
        )
    }

    /// Registers a tool. The handler gets the call id and the parameters and returns the
    /// result: `{"content": [...], "details"?: ..., "isError"?: bool}`.
    pub fn tool<F>(&mut self, spec: ToolSpec, handler: F) -> Result<()>
    where
        F: FnMut(&str, Value<'_>, &Context<'_>) -> Result<serde_json::Value> + Send + 'static,
    {
        let data = bind(self.handle, handler)?;
        let parameters = if spec.parameters.is_null() {
            String::new()
        } else {
            spec.parameters.to_string()
        };
        let def = PiToolDef {
            struct_size: size_of::<PiToolDef>() as u32,
            reserved: 0,
            name: pi_str(&spec.name),
            label: pi_str(&spec.label),
            description: pi_str(&spec.description),
            parameters_json: pi_str(&parameters),
            execute: Some(tool_trampoline::<F>),
            user_data: data,
        };
        // SAFETY: valid handle; `def` and its strings outlive the call (the host copies them).
        check(
            unsafe { (self.handle.registry().register_tool)(self.handle.raw, &def) },
            "register_tool",
        )
    }

    /// Registers a renderer for custom messages of `custom_type`; it returns the lines to
    /// show, or `None` for the default rendering.
    pub fn message_renderer<F>(&mut self, custom_type: &str, render: F) -> Result<()>
    where
        F: FnMut(Value<'_>, bool) -> Result<Option<Vec<String>>> + Send + 'static,
    {
        let data = bind(self.handle, render)?;
        let def = PiRendererDef {
            struct_size: size_of::<PiRendererDef>() as u32,
            reserved: 0,
            custom_type: pi_str(custom_type),
            render: Some(render_trampoline::<F>),
            user_data: data,
        };
        // SAFETY: valid handle; `def` outlives the call (the host copies it).
        check(
            unsafe { (self.handle.registry().register_message_renderer)(self.handle.raw, &def) },
            "register_message_renderer",
        )
    }

    /// Registers a boolean flag `--name`.
    pub fn flag_bool(&mut self, name: &str, description: &str, default: bool) -> Result<()> {
        self.flag(
            PI_FLAG_BOOLEAN,
            name,
            description,
            &serde_json::Value::Bool(default),
        )
    }

    /// Registers a string flag `--name VALUE` (`default` None: no default).
    pub fn flag_string(
        &mut self,
        name: &str,
        description: &str,
        default: Option<&str>,
    ) -> Result<()> {
        let default = default.map_or(serde_json::Value::Null, |d| d.into());
        self.flag(PI_FLAG_STRING, name, description, &default)
    }

    fn flag(
        &mut self,
        kind: u32,
        name: &str,
        description: &str,
        default: &serde_json::Value,
    ) -> Result<()> {
        let default = if default.is_null() {
            String::new()
        } else {
            default.to_string()
        };
        let def = PiFlagDef {
            struct_size: size_of::<PiFlagDef>() as u32,
            kind,
            name: pi_str(name),
            description: pi_str(description),
            default_json: pi_str(&default),
        };
        // SAFETY: valid handle; `def` and its strings outlive the call (the host copies them).
        check(
            unsafe { (self.handle.registry().register_flag)(self.handle.raw, &def) },
            "register_flag",
        )
    }
}

unsafe extern "C" fn event_trampoline<F, R>(
    data: *mut c_void,
    event: *const PiValue,
    ctx: *mut PiContext,
    result: *mut PiResult,
) -> PiStatus
where
    F: FnMut(Value<'_>, &Context<'_>) -> Result<R> + Send + 'static,
    R: IntoReply,
{
    // SAFETY: `data` is the Bound<F> registered with this trampoline, alive until cleanup;
    // calls into one plugin never overlap, so the &mut is unique.
    let bound = unsafe { &mut *data.cast::<Bound<F>>() };
    let host = bound.handle.host;
    // SAFETY: the host passes a context valid for this call.
    let ctx = unsafe { Context::from_raw(host, ctx) };
    // SAFETY: the payload is valid until the handler returns.
    let event = unsafe { Value::from_raw(&*host.values, event) };
    guard(
        |m| ctx.set_error(m),
        || {
            let reply = (bound.f)(event, &ctx)?.into_reply();
            // SAFETY: `result` is the host's result for this call.
            unsafe { write_reply(host, result, reply) }
        },
    )
}

unsafe extern "C" fn command_trampoline<F>(
    data: *mut c_void,
    args: PiStr,
    ctx: *mut PiContext,
) -> PiStatus
where
    F: FnMut(&str, &Context<'_>) -> Result<()> + Send + 'static,
{
    // SAFETY: as in event_trampoline.
    let bound = unsafe { &mut *data.cast::<Bound<F>>() };
    // SAFETY: the host passes a context valid for this call.
    let ctx = unsafe { Context::from_raw(bound.handle.host, ctx) };
    // SAFETY: `args` is borrowed for the call.
    let args = unsafe { super::strings::from_pi_str(args) };
    guard(|m| ctx.set_error(m), || (bound.f)(args, &ctx))
}

/// One suggestion for a command's arguments.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Completion {
    /// The text that replaces what was typed.
    pub value: String,
    /// What a list shows.
    pub label: String,
    /// A longer explanation, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A command handler and its completions, bound together: the host passes one user data to
/// both (and never calls them at the same time).
struct WithCompletions<F, C> {
    run: F,
    complete: C,
}

unsafe extern "C" fn completed_command_trampoline<F, C>(
    data: *mut c_void,
    args: PiStr,
    ctx: *mut PiContext,
) -> PiStatus
where
    F: FnMut(&str, &Context<'_>) -> Result<()> + Send + 'static,
    C: FnMut(&str) -> Vec<Completion> + Send + 'static,
{
    // SAFETY: `data` is the `Bound<WithCompletions<F, C>>` made in `command_with_completions`;
    // the host never calls into the plugin concurrently, so this is the only reference.
    let bound = unsafe { &mut *data.cast::<Bound<WithCompletions<F, C>>>() };
    // SAFETY: the host passes a context valid for this call.
    let ctx = unsafe { Context::from_raw(bound.handle.host, ctx) };
    // SAFETY: `args` is borrowed for the call.
    let args = unsafe { super::strings::from_pi_str(args) };
    guard(|m| ctx.set_error(m), || (bound.f.run)(args, &ctx))
}

unsafe extern "C" fn completion_trampoline<F, C>(
    data: *mut c_void,
    prefix: PiStr,
    result: *mut PiResult,
) -> PiStatus
where
    F: FnMut(&str, &Context<'_>) -> Result<()> + Send + 'static,
    C: FnMut(&str) -> Vec<Completion> + Send + 'static,
{
    // SAFETY: as in `completed_command_trampoline`.
    let bound = unsafe { &mut *data.cast::<Bound<WithCompletions<F, C>>>() };
    let host = bound.handle.host;
    // SAFETY: `prefix` is borrowed for the call.
    let prefix = unsafe { super::strings::from_pi_str(prefix) };
    guard(
        |_| {},
        || {
            let items =
                serde_json::to_value((bound.f.complete)(prefix)).unwrap_or(serde_json::Value::Null);
            // SAFETY: `result` is the host's result for this call.
            unsafe { write_reply(host, result, super::reply::Reply::Json(items)) }
        },
    )
}

unsafe extern "C" fn tool_trampoline<F>(
    data: *mut c_void,
    id: PiStr,
    params: *const PiValue,
    ctx: *mut PiContext,
    result: *mut PiResult,
) -> PiStatus
where
    F: FnMut(&str, Value<'_>, &Context<'_>) -> Result<serde_json::Value> + Send + 'static,
{
    // SAFETY: as in event_trampoline.
    let bound = unsafe { &mut *data.cast::<Bound<F>>() };
    let host = bound.handle.host;
    // SAFETY: the host passes a context valid for this call.
    let ctx = unsafe { Context::from_raw(host, ctx) };
    // SAFETY: `id` and `params` are borrowed for the call.
    let (id, params) = unsafe {
        (
            super::strings::from_pi_str(id),
            Value::from_raw(&*host.values, params),
        )
    };
    guard(
        |m| ctx.set_error(m),
        || {
            let output = (bound.f)(id, params, &ctx)?;
            // SAFETY: `result` is the host's result for this call.
            unsafe { write_reply(host, result, super::reply::Reply::Json(output)) }
        },
    )
}

unsafe extern "C" fn render_trampoline<F>(
    data: *mut c_void,
    message: *const PiValue,
    options: *const PiValue,
    result: *mut PiResult,
) -> PiStatus
where
    F: FnMut(Value<'_>, bool) -> Result<Option<Vec<String>>> + Send + 'static,
{
    // SAFETY: as in event_trampoline.
    let bound = unsafe { &mut *data.cast::<Bound<F>>() };
    let host = bound.handle.host;
    // SAFETY: both values are borrowed for the call.
    let (message, options) = unsafe {
        (
            Value::from_raw(&*host.values, message),
            Value::from_raw(&*host.values, options),
        )
    };
    let expanded = options.get("expanded").as_bool().unwrap_or(false);
    guard(
        |_| {},
        || {
            let lines = (bound.f)(message, expanded)?;
            // SAFETY: `result` is the host's result for this call.
            unsafe {
                write_reply(
                    host,
                    result,
                    lines.map(|l| serde_json::json!(l)).into_reply(),
                )
            }
        },
    )
}
