//! Actions a plugin takes on the session: messages, entries, exec, timers, tools, flags, logs.

use std::os::raw::c_void;

use super::context::PiContext;
use super::registry::PiPlugin;
use super::status::PiStatus;
use super::strings::PiStr;
use super::value::PiValue;

/// Log level: debugging detail.
pub const PI_LOG_DEBUG: u32 = 0;
/// Log level: information.
pub const PI_LOG_INFO: u32 = 1;
/// Log level: something looks wrong.
pub const PI_LOG_WARN: u32 = 2;
/// Log level: something failed.
pub const PI_LOG_ERROR: u32 = 3;

/// `send_user_message` / `send_message` delivery: the default of the call (see there).
pub const PI_DELIVER_DEFAULT: u32 = 0;
/// Deliver while the agent is streaming, interrupting it after the current tool.
pub const PI_DELIVER_STEER: u32 = 1;
/// Deliver after the agent finishes its current run.
pub const PI_DELIVER_FOLLOW_UP: u32 = 2;
/// (`send_message` only) attach to the next user prompt; never triggers a turn.
pub const PI_DELIVER_NEXT_TURN: u32 = 3;

/// (`PiExecRequest::flags`, ABI 1.3) Also stop the program when the agent's current run is
/// aborted (Esc in the terminal, RPC `abort`), as pi's `exec` with `signal: ctx.signal`:
/// SIGTERM, then SIGKILL 5 s later, and the result has `"killed": true`. Outside a run the
/// flag changes nothing.
pub const PI_EXEC_CANCEL_ON_ABORT: u32 = 1;

/// A program to run with `exec`: no shell is involved. Strings are copied during the call.
#[repr(C)]
pub struct PiExecRequest {
    /// `sizeof(PiExecRequest)`.
    pub struct_size: u32,
    /// `PI_EXEC_*` flags (ABI 1.3; before, this field was reserved and 0, which is still
    /// "no flags"). An unknown flag is refused with `PI_ERR_INVALID_ARG`.
    pub flags: u32,
    /// The program, found through `PATH` when it has no slash.
    pub program: PiStr,
    /// `arg_count` arguments (NULL when 0).
    pub args: *const PiStr,
    /// Number of `args`.
    pub arg_count: usize,
    /// Working directory; empty for the session's cwd.
    pub cwd: PiStr,
    /// Time limit in milliseconds, 0 for none. When it runs out the process gets SIGTERM, then
    /// SIGKILL 5 s later, and the result has `"killed": true`.
    pub timeout_ms: u64,
}

/// A timer callback. `ctx` is a context for this call, valid until the callback returns.
/// An error status is reported like a handler error.
pub type PiTimerFn =
    unsafe extern "C" fn(user_data: *mut c_void, timer_id: u64, ctx: *mut PiContext) -> PiStatus;

/// A callback for the shared event bus (`events_on`). `channel` (NUL-terminated) and `data`
/// (the emitted JSON as a value; `null` for empty data) are borrowed until it returns. There is
/// no context: the callback runs outside any event. An error status is reported by the host as
/// `Extension error (<path>): Event handler error (<channel>): ...` and the other subscribers
/// still run.
pub type PiBusHandler =
    unsafe extern "C" fn(user_data: *mut c_void, channel: PiStr, data: *const PiValue) -> PiStatus;

/// Actions. Each takes the plugin handle from `init`. During `init` only `log`, `get_flag`,
/// `events_emit`, `events_on`, `identity` and `data_dir` work; the others answer `PI_ERR_UNAVAILABLE`, as they do in a
/// mode that lacks the service.
/// Actions that lead to events (`send_user_message`, a triggered turn) are queued and run after
/// the current handler returns: a plugin never re-enters itself.
#[repr(C)]
pub struct PiActionsApi {
    /// `sizeof(PiActionsApi)` in the host.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Writes a line to the host's log, tagged with the plugin. `level` is a `PI_LOG_*`.
    pub log: unsafe extern "C" fn(plugin: *mut PiPlugin, level: u32, message: PiStr),
    /// Sends a custom message. `message_json` is
    /// `{"customType", "content" (string or content array), "display" (bool), "details"?}`;
    /// `options_json` is empty or `{"triggerTurn"?: bool, "deliverAs"?: "steer" | "followUp" |
    /// "nextTurn"}`. Delivered as pi 1.6 delivers it: `nextTurn` goes with the next prompt;
    /// while the agent runs (handlers of its events, `agent_end` included), a message steers
    /// the run (or follows up) and continues it, unless `triggerTurn` is false: then it waits
    /// for the end of the turn (after `turn_end`'s handlers) or of the run, before it settles,
    /// and starts nothing; while idle, `triggerTurn: true` starts a run, else it is appended
    /// at once.
    pub send_message: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        message_json: PiStr,
        options_json: PiStr,
    ) -> PiStatus,
    /// Sends text as if the user typed it (the `input` event fires with source "extension").
    /// `deliver_as` is a `PI_DELIVER_*`; while the agent is busy, `PI_DELIVER_DEFAULT` fails.
    pub send_user_message:
        unsafe extern "C" fn(plugin: *mut PiPlugin, text: PiStr, deliver_as: u32) -> PiStatus,
    /// Appends a `custom` entry (`customType`, `data` from JSON text, empty for none) to the
    /// session file. The entry is on disk when the call returns. The model never sees it;
    /// plugins read it back from the session to rebuild their state.
    pub append_entry: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        custom_type: PiStr,
        data_json: PiStr,
    ) -> PiStatus,
    /// Runs a program and waits for it (the calling thread blocks; call it from a handler, a
    /// timer callback or a thread of the plugin's own). `*out` receives an owned object
    /// `{"stdout", "stderr", "code", "killed"}`, plus `"signal"` when a signal ended the
    /// program (free it with `values->free`). stdin is closed; stdout and stderr keep at most
    /// 10 MiB each, the rest is discarded and a line `[output truncated at 10 MiB; N more
    /// bytes discarded]` ends the stream. `code` is 0 when a signal ended the program (as in
    /// pi). A program that cannot be started (not found, not executable, a cwd that does not
    /// exist) gives `code` 1 and the reason in `stderr`, with `PI_OK`. The program runs in a
    /// process group of its own; on timeout, or when the plugin is retired, the group gets
    /// SIGTERM, then SIGKILL 5 s later. A reload retires the old version only once the call
    /// that runs the program has returned, or after 2 s; the end of the session does not
    /// wait. `PI_ERR_INVALID_ARG` for a NULL or too small request, an empty program or a
    /// NULL `out`. `PI_ERR_DENIED` when the plugin runs confined and its grant's `exec` does
    /// not name the program: nothing runs, and `*out` receives an owned object
    /// `{"error": "<why>"}` (free it as a result).
    pub exec: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        request: *const PiExecRequest,
        out: *mut *mut PiValue,
    ) -> PiStatus,
    /// Starts a timer that calls `callback` after `delay_ms`, then every `interval_ms` if that
    /// is not 0. Its id goes to `*timer_id` (may be NULL); ids count up from 1 per plugin
    /// instance. Timers stop when the plugin is retired; a callback never runs concurrently
    /// with another call into the plugin, runs under `hookTimeout` like a handler (an overrun
    /// or an error status is reported, with the event name `timer`), and may call any action.
    /// An interval skips ticks that come while its callback still runs. At most 10 000 timers
    /// per plugin run at once (`PI_ERR` past that); a NULL `callback` is `PI_ERR_INVALID_ARG`.
    pub timer_start: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        delay_ms: u64,
        interval_ms: u64,
        callback: Option<PiTimerFn>,
        user_data: *mut c_void,
        timer_id: *mut u64,
    ) -> PiStatus,
    /// Stops a timer. `PI_ERR_NOT_FOUND` when it is not running (any more): an unknown id, a
    /// cancelled timer, or a one-shot timer that has fired (also from its own callback).
    pub timer_cancel: unsafe extern "C" fn(plugin: *mut PiPlugin, timer_id: u64) -> PiStatus,
    /// The names of the active tools as an owned array of strings in `*out`.
    pub get_active_tools:
        unsafe extern "C" fn(plugin: *mut PiPlugin, out: *mut *mut PiValue) -> PiStatus,
    /// All tools as an owned array of `{"name", "description", "parameters"}` in `*out`.
    pub get_all_tools:
        unsafe extern "C" fn(plugin: *mut PiPlugin, out: *mut *mut PiValue) -> PiStatus,
    /// Sets the active tools by name (unknown names are ignored); takes effect on the next turn.
    pub set_active_tools:
        unsafe extern "C" fn(plugin: *mut PiPlugin, names: *const PiStr, count: usize) -> PiStatus,
    /// The value of a flag this plugin registered, as an owned value in `*out` (NULL when
    /// unset). `PI_ERR_NOT_FOUND` when this plugin did not register `name`.
    pub get_flag: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        name: PiStr,
        out: *mut *mut PiValue,
    ) -> PiStatus,
    /// Sets the session's display name.
    pub set_session_name: unsafe extern "C" fn(plugin: *mut PiPlugin, name: PiStr) -> PiStatus,
    /// The session's display name as an owned string value in `*out` (NULL when none).
    pub get_session_name:
        unsafe extern "C" fn(plugin: *mut PiPlugin, out: *mut *mut PiValue) -> PiStatus,
    /// Sets (or, with a NULL `label.ptr`, clears) the label of a session entry.
    pub set_label:
        unsafe extern "C" fn(plugin: *mut PiPlugin, entry_id: PiStr, label: PiStr) -> PiStatus,
    /// Emits `data_json` (JSON text, copied; empty for `null`) on the shared event bus channel
    /// `channel` (pi's `pi.events.emit`). Every handler subscribed to `channel` at this moment,
    /// of every plugin (the emitting one included), is called in subscription order after the
    /// current call returns: emissions are queued and delivered one at a time in emission
    /// order, so an emit from inside a bus handler is delivered after that handler returns.
    /// A channel nobody subscribed to: `PI_OK`, nothing happens. `PI_ERR_INVALID_ARG` for a
    /// channel with a NUL or data that is not JSON; `PI_ERR` while 10 000 emissions wait for
    /// delivery. Works during `init` too (a subscriber still in its init is skipped).
    pub events_emit:
        unsafe extern "C" fn(plugin: *mut PiPlugin, channel: PiStr, data_json: PiStr) -> PiStatus,
    /// Subscribes `handler` (called with `user_data`) to the shared event bus channel `channel`
    /// (pi's `pi.events.on`). Works during `init` and later; subscribing twice gives two calls
    /// per emission. The subscription ends when the plugin is retired (reload, end of the run);
    /// there is no other unsubscribe. `PI_ERR_INVALID_ARG` for a NULL handler or a channel with
    /// a NUL; `PI_ERR` past 10 000 subscriptions of one plugin.
    pub events_on: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        channel: PiStr,
        handler: Option<PiBusHandler>,
        user_data: *mut c_void,
    ) -> PiStatus,
    /// (ABI 1.1) Selects the model `provider`/`model_id` among those the host's provider
    /// offers (pi's `pi.setModel`). `*found` (may be NULL) is set to whether it is offered;
    /// an unknown model is not an error (`PI_OK`, `*found` false), as pi's `setModel`
    /// resolves to false. The model is used from the next model call on; the session gets a
    /// `model_change` entry and plugins `model_select {model, previousModel, source:"set"}`
    /// once the current call has returned. `PI_ERR_UNAVAILABLE` before a session runs
    /// (during `init`, in `pi-hooks inspect`).
    pub set_model: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        provider: PiStr,
        model_id: PiStr,
        found: *mut bool,
    ) -> PiStatus,

    // ---- ABI 1.4
    /// (ABI 1.4) `send_user_message` with content blocks, as pi's `sendUserMessage` takes
    /// `(TextContent | ImageContent)[]`: `content` (borrowed or owned, copied during the call)
    /// is an array of `{"type":"text","text":…}` and `{"type":"image","data":<base64>,
    /// "mimeType":…}` blocks. The texts, joined with newlines, are the `input` event's `text`,
    /// the images its `images`, and the user message has them all. Delivery and errors as
    /// `send_user_message`; `PI_ERR_INVALID_ARG` for content that is not such an array.
    pub send_user_message_content: unsafe extern "C" fn(
        plugin: *mut PiPlugin,
        content: *const PiValue,
        deliver_as: u32,
    ) -> PiStatus,
    /// (ABI 1.4) Stops every program this plugin's `exec` calls are running now, as an abort
    /// stops one started with `PI_EXEC_CANCEL_ON_ABORT`: SIGTERM, SIGKILL 5 s later, and each
    /// result has `"killed": true`. `exec` blocks its caller, so this is called from another
    /// thread of the plugin (one it started, say, to stop a long handler's program when the
    /// handler sees `context->is_aborted`). Programs started after it are not affected.
    pub exec_cancel: unsafe extern "C" fn(plugin: *mut PiPlugin) -> PiStatus,

    // ---- ABI 1.6
    /// (ABI 1.6) Who this plugin is, as everything the host keys by plugin knows it (its
    /// grant, its `${data}` folder, its records): `*out` receives `package:<name>` for the
    /// plugin of an installed package (its package name, `package:@acme/gate`, however it was
    /// installed) or `library:<path>` for a plain library file (its canonical path,
    /// `library:/home/u/plugins/libgate.so`). The text before the first `:` tells which;
    /// nothing else starts either way. The string is borrowed from the host,
    /// NUL-terminated, and stays valid and unchanged until the plugin is unloaded (do not free
    /// it). Works during `init` too, and from any thread. `PI_ERR_INVALID_ARG` for a NULL
    /// `out`, `PI_ERR_UTF8` for a library path that is not UTF-8 (`*out` untouched).
    /// A plugin built for an older minor checks `struct_size` (or `host->abi_minor >= 6`)
    /// first.
    pub identity: unsafe extern "C" fn(plugin: *mut PiPlugin, out: *mut PiStr) -> PiStatus,
    /// (ABI 1.6) This plugin's own folder, the absolute path `${data}` stands for in its
    /// grant: `<agentDir>/pi-hooks/data/<one component for its identity>`, the same folder
    /// in process, isolated (`--isolate`) and confined, and for a package the same however
    /// it was installed. The host creates it on the first ask (mode 0700; a symlink, or
    /// anything but a folder, in its place is refused with `PI_ERR`, not followed).
    /// `*out` is borrowed as `identity`'s (NUL-terminated, valid until the plugin is
    /// unloaded, not to be freed). Works during `init` too. `PI_ERR_INVALID_ARG` for a NULL
    /// `out`; `PI_ERR_DENIED` for a confined plugin whose grant lets it neither read nor
    /// write `${data}` (nothing is created); `PI_ERR` when the folder cannot be created
    /// (the host logs why); `PI_ERR_UTF8` for a path that is not UTF-8.
    pub data_dir: unsafe extern "C" fn(plugin: *mut PiPlugin, out: *mut PiStr) -> PiStatus,
}
