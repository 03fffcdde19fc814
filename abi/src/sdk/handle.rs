//! The plugin handle: actions on the session, usable from handlers, timers and threads.

use std::os::raw::c_void;

use serde::Serialize;

use super::barrier::guard;
use super::context::Context;
use super::error::{Error, Result, check};
use super::strings::{from_pi_str, pi_str};
use super::value::{OwnedValue, Value};
use crate::ffi::*;

/// Log levels for [`PluginHandle::log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Debugging detail.
    Debug,
    /// Information.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

/// What [`PluginHandle::exec`] returns.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct ExecOutput {
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// Exit code (1 when the program could not be started).
    pub code: i32,
    /// Whether the process was killed for running out of time.
    pub killed: bool,
}

/// Who a plugin is ([`PluginHandle::identity`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identity {
    /// The plugin of an installed package, by its package name (`@acme/gate`).
    Package(String),
    /// A plain library file, by its canonical path.
    Library(std::path::PathBuf),
}

impl Identity {
    /// Reads the host's text: `package:<name>` or `library:<path>`.
    pub fn parse(text: &str) -> Option<Identity> {
        if let Some(name) = text.strip_prefix("package:") {
            return (!name.is_empty()).then(|| Identity::Package(name.to_owned()));
        }
        text.strip_prefix("library:")
            .filter(|path| path.starts_with('/') || std::path::Path::new(path).is_absolute())
            .map(|path| Identity::Library(path.into()))
    }
}

impl std::fmt::Display for Identity {
    /// The host's text: `package:@acme/gate` or `library:/abs/libgate.so`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Package(name) => write!(f, "package:{name}"),
            Identity::Library(path) => write!(f, "library:{}", path.display()),
        }
    }
}

/// The handle of this plugin instance. Cheap to copy, and usable from any thread until the
/// plugin is retired: keep it in closures that run later (timers, spawned threads).
#[derive(Clone, Copy)]
pub struct PluginHandle {
    pub(crate) host: &'static PiHostApi,
    pub(crate) raw: *mut PiPlugin,
}

// SAFETY: the ABI lets every host function be called from any thread with the plugin handle,
// which stays valid until the plugin is retired.
unsafe impl Send for PluginHandle {}
// SAFETY: as above; the handle itself is never mutated.
unsafe impl Sync for PluginHandle {}

impl PluginHandle {
    pub(crate) fn actions(&self) -> &'static PiActionsApi {
        // SAFETY: run_init checked the table pointers; the host keeps them valid until unload.
        unsafe { &*self.host.actions }
    }

    pub(crate) fn values(&self) -> &'static PiValueApi {
        // SAFETY: as in `actions`.
        unsafe { &*self.host.values }
    }

    pub(crate) fn registry(&self) -> &'static PiRegistryApi {
        // SAFETY: as in `actions`.
        unsafe { &*self.host.registry }
    }

    /// The raw handle, for calling the C ABI directly.
    pub fn as_ptr(&self) -> *mut PiPlugin {
        self.raw
    }

    /// The host's root table.
    pub fn host(&self) -> &'static PiHostApi {
        self.host
    }

    /// Writes a line to the host's log.
    pub fn log(&self, level: LogLevel, message: &str) {
        let level = match level {
            LogLevel::Debug => PI_LOG_DEBUG,
            LogLevel::Info => PI_LOG_INFO,
            LogLevel::Warn => PI_LOG_WARN,
            LogLevel::Error => PI_LOG_ERROR,
        };
        // SAFETY: valid handle (see the type's docs); the message is borrowed for the call.
        unsafe { (self.actions().log)(self.raw, level, pi_str(message)) }
    }

    /// Sends a custom message: `message` is `{customType, content, display, details?}`,
    /// `options` is `{triggerTurn?, deliverAs?}` (or null).
    pub fn send_message(
        &self,
        message: &serde_json::Value,
        options: &serde_json::Value,
    ) -> Result<()> {
        let message = message.to_string();
        let options = if options.is_null() {
            String::new()
        } else {
            options.to_string()
        };
        // SAFETY: valid handle; both strings are borrowed for the call.
        let status =
            unsafe { (self.actions().send_message)(self.raw, pi_str(&message), pi_str(&options)) };
        check(status, "send_message")
    }

    /// Sends text as if the user typed it; `deliver_as` is a `PI_DELIVER_*`.
    pub fn send_user_message(&self, text: &str, deliver_as: u32) -> Result<()> {
        // SAFETY: valid handle; the text is borrowed for the call.
        let status =
            unsafe { (self.actions().send_user_message)(self.raw, pi_str(text), deliver_as) };
        check(status, "send_user_message")
    }

    /// [`Self::send_user_message`] with content blocks (pi's `sendUserMessage` with an array):
    /// `content` is a JSON array of `{"type":"text","text":…}` and `{"type":"image","data":…,
    /// "mimeType":…}` blocks; the images reach `input` and the user message. Needs a host of
    /// ABI 1.4 or later (an older host answers `PI_ERR_UNAVAILABLE`).
    pub fn send_user_message_content(
        &self,
        content: &serde_json::Value,
        deliver_as: u32,
    ) -> Result<()> {
        let actions = self.actions();
        let needed = std::mem::offset_of!(PiActionsApi, send_user_message_content)
            + std::mem::size_of::<unsafe extern "C" fn()>();
        if (actions.struct_size as usize) < needed {
            return check(PI_ERR_UNAVAILABLE, "send_user_message_content");
        }
        let content = OwnedValue::parse(self.values(), &content.to_string())?;
        check(
            // SAFETY: valid handle; the host's table has the entry (its size was checked); the
            // value is alive for the call and copied by the host.
            unsafe {
                (actions.send_user_message_content)(self.raw, content.value().as_ptr(), deliver_as)
            },
            "send_user_message_content",
        )
    }

    /// Stops every program this plugin's `exec` calls are running now (`"killed": true` in
    /// their results): called from another thread while a handler waits in `exec`. Needs a
    /// host of ABI 1.4 or later (an older host answers `PI_ERR_UNAVAILABLE`).
    pub fn exec_cancel(&self) -> Result<()> {
        let actions = self.actions();
        let needed = std::mem::offset_of!(PiActionsApi, exec_cancel)
            + std::mem::size_of::<unsafe extern "C" fn()>();
        if (actions.struct_size as usize) < needed {
            return check(PI_ERR_UNAVAILABLE, "exec_cancel");
        }
        // SAFETY: valid handle; the host's table has the entry (its size was checked).
        check(unsafe { (actions.exec_cancel)(self.raw) }, "exec_cancel")
    }

    /// Who this plugin is, as the host keys its grant, `${data}` and records: its package
    /// (by name) or the library file it was loaded from (by canonical path). Works in `init`
    /// too ([`Registrar::handle`](super::Registrar::handle)). Needs a host of ABI 1.6 or later
    /// (an older host gives `PI_ERR_UNAVAILABLE`).
    pub fn identity(&self) -> Result<Identity> {
        let text = self.own_text(
            std::mem::offset_of!(PiActionsApi, identity),
            |a| a.identity,
            "identity",
        )?;
        Identity::parse(&text).ok_or_else(|| {
            Error::msg(format!(
                "identity: the host answered {text:?}, which is no identity"
            ))
        })
    }

    /// This plugin's own folder (`${data}` in its grant), which the host creates on the
    /// first ask (mode 0700): the same in process, isolated and confined. A confined plugin
    /// whose grant names no `${data}` gets `PI_ERR_DENIED`. Needs a host of ABI 1.6 or later
    /// (an older host gives `PI_ERR_UNAVAILABLE`).
    pub fn data_dir(&self) -> Result<std::path::PathBuf> {
        self.own_text(
            std::mem::offset_of!(PiActionsApi, data_dir),
            |a| a.data_dir,
            "data_dir",
        )
        .map(std::path::PathBuf::from)
    }

    /// Calls `identity` or `data_dir` (at `offset` in the table) and copies its answer.
    fn own_text(
        &self,
        offset: usize,
        entry: impl FnOnce(&PiActionsApi) -> unsafe extern "C" fn(*mut PiPlugin, *mut PiStr) -> PiStatus,
        what: &str,
    ) -> Result<String> {
        let actions = self.actions();
        if (actions.struct_size as usize) < offset + std::mem::size_of::<unsafe extern "C" fn()>() {
            return Err(Error::status(PI_ERR_UNAVAILABLE, what));
        }
        let mut out = PiStr {
            ptr: std::ptr::null(),
            len: 0,
        };
        // SAFETY: valid handle; the host's table has the entry (its size was checked); `out`
        // is a live out-pointer.
        check(unsafe { entry(actions)(self.raw, &mut out) }, what)?;
        // SAFETY: on PI_OK the host wrote a string it keeps until the plugin is unloaded.
        Ok(unsafe { from_pi_str(out) }.to_owned())
    }

    /// Appends a `custom` session entry with `data` serialised as JSON.
    pub fn append_entry(&self, custom_type: &str, data: &impl Serialize) -> Result<()> {
        let data = serde_json::to_string(data)?;
        // SAFETY: valid handle; both strings are borrowed for the call.
        let status =
            unsafe { (self.actions().append_entry)(self.raw, pi_str(custom_type), pi_str(&data)) };
        check(status, "append_entry")
    }

    /// Runs `program` with `args` (no shell) in `cwd` (None: the session's), waiting at most
    /// `timeout_ms` (0: no limit).
    pub fn exec(
        &self,
        program: &str,
        args: &[&str],
        cwd: Option<&str>,
        timeout_ms: u64,
    ) -> Result<ExecOutput> {
        self.exec_with_flags(program, args, cwd, timeout_ms, 0)
    }

    /// As [`PluginHandle::exec`], and the program is also stopped (`killed: true`) when the agent's
    /// current run is aborted, as pi's `exec` with `signal: ctx.signal`
    /// (`PI_EXEC_CANCEL_ON_ABORT`).
    pub fn exec_cancel_on_abort(
        &self,
        program: &str,
        args: &[&str],
        cwd: Option<&str>,
        timeout_ms: u64,
    ) -> Result<ExecOutput> {
        self.exec_with_flags(program, args, cwd, timeout_ms, PI_EXEC_CANCEL_ON_ABORT)
    }

    fn exec_with_flags(
        &self,
        program: &str,
        args: &[&str],
        cwd: Option<&str>,
        timeout_ms: u64,
        flags: u32,
    ) -> Result<ExecOutput> {
        let args: Vec<PiStr> = args.iter().map(|a| pi_str(a)).collect();
        let request = PiExecRequest {
            struct_size: size_of::<PiExecRequest>() as u32,
            flags,
            program: pi_str(program),
            args: args.as_ptr(),
            arg_count: args.len(),
            cwd: pi_str(cwd.unwrap_or("")),
            timeout_ms,
        };
        let mut out = std::ptr::null_mut();
        check(
            // SAFETY: valid handle; `request` and the strings it points to outlive the call.
            unsafe { (self.actions().exec)(self.raw, &request, &mut out) },
            "exec",
        )?;
        // SAFETY: on PI_OK the host handed over an owned value.
        let owned = unsafe { OwnedValue::from_raw(self.values(), out) }
            .ok_or_else(|| Error::msg("exec returned no result"))?;
        owned.value().deserialize()
    }

    /// Starts a timer calling `callback` after `delay_ms`, then every `interval_ms` unless 0.
    /// Returns its id. The closure is dropped when the plugin is retired.
    pub fn start_timer<F>(&self, delay_ms: u64, interval_ms: u64, callback: F) -> Result<u64>
    where
        F: FnMut(&Context<'_>) -> Result<()> + Send + 'static,
    {
        let data = super::registrar::bind(*self, callback)?;
        let mut id = 0u64;
        // SAFETY: valid handle; `data` is a live boxed closure matching the trampoline's type.
        let status = unsafe {
            (self.actions().timer_start)(
                self.raw,
                delay_ms,
                interval_ms,
                Some(timer_trampoline::<F>),
                data,
                &mut id,
            )
        };
        check(status, "timer_start")?;
        Ok(id)
    }

    /// Stops a timer.
    pub fn cancel_timer(&self, id: u64) -> Result<()> {
        // SAFETY: valid handle.
        check(
            unsafe { (self.actions().timer_cancel)(self.raw, id) },
            "timer_cancel",
        )
    }

    /// The value of a flag this plugin registered (None when unset).
    pub fn flag(&self, name: &str) -> Result<Option<serde_json::Value>> {
        let mut out = std::ptr::null_mut();
        check(
            // SAFETY: valid handle; `name` is borrowed; `out` is a valid out-pointer.
            unsafe { (self.actions().get_flag)(self.raw, pi_str(name), &mut out) },
            "get_flag",
        )?;
        // SAFETY: on PI_OK `out` is NULL or an owned value.
        Ok(unsafe { OwnedValue::from_raw(self.values(), out) }.map(|v| v.value().to_serde()))
    }

    /// Selects the model `provider`/`model_id` (pi's `pi.setModel`); `Ok(false)` when the
    /// host's provider does not offer it. Used from the next model call on; `model_select`
    /// follows once the current call has returned. Needs a host of ABI 1.1 or later (an older
    /// host answers `PI_ERR_UNAVAILABLE`).
    pub fn set_model(&self, provider: &str, model_id: &str) -> Result<bool> {
        let actions = self.actions();
        let needed = std::mem::offset_of!(PiActionsApi, set_model)
            + std::mem::size_of::<unsafe extern "C" fn()>();
        if (actions.struct_size as usize) < needed {
            return check(PI_ERR_UNAVAILABLE, "set_model").map(|()| false);
        }
        let mut found = false;
        check(
            // SAFETY: valid handle; the host's table has the entry (its size was checked); the
            // strings are borrowed for the call; `found` is a valid out-pointer.
            unsafe {
                (actions.set_model)(self.raw, pi_str(provider), pi_str(model_id), &mut found)
            },
            "set_model",
        )?;
        Ok(found)
    }

    /// Sets the active tools by name.
    pub fn set_active_tools(&self, names: &[&str]) -> Result<()> {
        let names: Vec<PiStr> = names.iter().map(|n| pi_str(n)).collect();
        // SAFETY: valid handle; the array and its strings outlive the call.
        let status =
            unsafe { (self.actions().set_active_tools)(self.raw, names.as_ptr(), names.len()) };
        check(status, "set_active_tools")
    }

    /// The names of the active tools.
    pub fn active_tools(&self) -> Result<Vec<String>> {
        let mut out = std::ptr::null_mut();
        check(
            // SAFETY: valid handle; `out` is a valid out-pointer.
            unsafe { (self.actions().get_active_tools)(self.raw, &mut out) },
            "get_active_tools",
        )?;
        // SAFETY: on PI_OK `out` is NULL or an owned value.
        match unsafe { OwnedValue::from_raw(self.values(), out) } {
            Some(v) => v.value().deserialize(),
            None => Ok(Vec::new()),
        }
    }
}

impl PluginHandle {
    /// Emits `data` on the shared event bus channel `channel` (pi's `pi.events.emit`). Every
    /// subscriber of the channel, in every plugin (this one included), is called after the
    /// current call returns. Fails with `PI_ERR` while too many emissions wait for delivery.
    pub fn emit(&self, channel: &str, data: &serde_json::Value) -> Result<()> {
        let data = data.to_string();
        // SAFETY: valid handle; both strings are borrowed for the call.
        let status =
            unsafe { (self.actions().events_emit)(self.raw, pi_str(channel), pi_str(&data)) };
        check(status, "events_emit")
    }

    /// Subscribes `handler` to the shared event bus channel `channel` (pi's `pi.events.on`);
    /// it gets the channel and the emitted data. Works during init and later; the subscription
    /// and the closure end when the plugin is retired. An error or panic of the handler is
    /// written to the host's log and reported by the host; the other subscribers still run.
    pub fn on_bus<F>(&self, channel: &str, handler: F) -> Result<()>
    where
        F: FnMut(&str, Value<'_>) -> Result<()> + Send + 'static,
    {
        let data = super::registrar::bind(*self, handler)?;
        // SAFETY: valid handle; `data` is a live Bound<F> matching the trampoline's type.
        let status = unsafe {
            (self.actions().events_on)(self.raw, pi_str(channel), Some(bus_trampoline::<F>), data)
        };
        check(status, "events_on")
    }
}

unsafe extern "C" fn bus_trampoline<F>(
    data: *mut c_void,
    channel: PiStr,
    value: *const PiValue,
) -> PiStatus
where
    F: FnMut(&str, Value<'_>) -> Result<()> + Send + 'static,
{
    // SAFETY: `data` is the Bound<F> registered with this trampoline and alive until cleanup;
    // the host never runs two calls into this plugin at once, so the &mut is unique.
    let bound = unsafe { &mut *data.cast::<super::registrar::Bound<F>>() };
    let handle = bound.handle;
    // SAFETY: the host hands a NUL-terminated UTF-8 channel valid until the handler returns.
    let channel = unsafe { from_pi_str(channel) };
    // SAFETY: the data is a host value valid until the handler returns.
    let value = unsafe { Value::from_raw(handle.values(), value) };
    guard(
        |m| {
            handle.log(
                LogLevel::Error,
                &format!("event bus handler ({channel}): {m}"),
            )
        },
        || (bound.f)(channel, value),
    )
}

unsafe extern "C" fn timer_trampoline<F>(
    data: *mut c_void,
    _id: u64,
    ctx: *mut PiContext,
) -> PiStatus
where
    F: FnMut(&Context<'_>) -> Result<()> + Send + 'static,
{
    // SAFETY: `data` is the Bound<F> registered with this trampoline and alive until cleanup;
    // the host never runs two calls into this plugin at once, so the &mut is unique.
    let bound = unsafe { &mut *data.cast::<super::registrar::Bound<F>>() };
    // SAFETY: the host passes a context valid for this call.
    let ctx = unsafe { Context::from_raw(bound.handle.host, ctx) };
    guard(|m| ctx.set_error(m), || (bound.f)(&ctx))
}

#[cfg(test)]
mod identity_tests {
    use super::Identity;

    #[test]
    fn the_hosts_text_reads_back() {
        assert_eq!(
            Identity::parse("package:@acme/gate"),
            Some(Identity::Package("@acme/gate".into()))
        );
        assert_eq!(
            Identity::parse("library:/p/libgate.so"),
            Some(Identity::Library("/p/libgate.so".into()))
        );
        for bad in ["package:", "library:rel.so", "gate", "lib:/x"] {
            assert_eq!(Identity::parse(bad), None, "{bad}");
        }
        for text in ["package:@acme/gate", "library:/p/libgate.so"] {
            assert_eq!(Identity::parse(text).unwrap().to_string(), text);
        }
    }
}
