//! The context of one call into a plugin: cwd, mode, session reads, errors, system prompt.

use std::marker::{PhantomData, PhantomPinned};

use super::registry::PiPlugin;
use super::status::PiStatus;
use super::strings::PiStr;
use super::value::PiValue;

/// An opaque context, valid until the handler, command, tool, timer or callback it was given
/// to returns, on the thread running that call. Do not keep it, nor hand it to another
/// thread; keep the `PiPlugin` handle instead. The host checks every context it is given: one
/// kept past its call (used in a later event), used from another thread, or never handed out
/// answers `PI_ERR_INVALID_ARG` (or an empty string / false / NULL where a function returns no
/// status), never a crash.
pub struct PiContext {
    _opaque: [u8; 0],
    _not_send_sync_or_movable: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Mode: print mode (`-p`), plain text out, no UI.
pub const PI_MODE_PRINT: u32 = 1;
/// Mode: JSON event stream out, no UI.
pub const PI_MODE_JSON: u32 = 2;
/// Mode: RPC over stdin/stdout; dialogs go to the client.
pub const PI_MODE_RPC: u32 = 3;
/// Mode: interactive terminal.
pub const PI_MODE_INTERACTIVE: u32 = 4;
/// Mode: a tool such as `pi-hooks inspect` loaded the plugin without a session.
pub const PI_MODE_INSPECT: u32 = 5;

/// Functions on a `PiContext`. Strings returned by value are borrowed from the context and
/// NUL-terminated. Session-control functions (marked "command only") work only in a command
/// handler's context and answer `PI_ERR_UNAVAILABLE` elsewhere.
#[repr(C)]
pub struct PiContextApi {
    /// `sizeof(PiContextApi)` in the host.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// The plugin this call belongs to.
    pub plugin: unsafe extern "C" fn(ctx: *mut PiContext) -> *mut PiPlugin,
    /// The session's working directory.
    pub cwd: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStr,
    /// Whether dialogs reach a user (interactive and RPC modes). Without UI, dialogs return
    /// their defaults at once: select -1, confirm false, input and editor NULL.
    pub has_ui: unsafe extern "C" fn(ctx: *mut PiContext) -> bool,
    /// The mode, one of `PI_MODE_*`.
    pub mode: unsafe extern "C" fn(ctx: *mut PiContext) -> u32,
    /// The session file's path; `{NULL, 0}` when the session is not saved.
    pub session_file: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStr,
    /// Describes the error the current call is about to return; the host reports the text.
    pub set_error: unsafe extern "C" fn(ctx: *mut PiContext, message: PiStr),
    /// The current system prompt (in `before_agent_start`, as chained so far).
    pub get_system_prompt: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStr,
    /// Replaces the system prompt for this agent run (`before_agent_start` only; elsewhere
    /// `PI_ERR_UNAVAILABLE`). Same effect as returning `{"systemPrompt": ...}`.
    pub set_system_prompt: unsafe extern "C" fn(ctx: *mut PiContext, prompt: PiStr) -> PiStatus,
    /// Whether the agent is idle (not streaming).
    pub is_idle: unsafe extern "C" fn(ctx: *mut PiContext) -> bool,
    /// Aborts the current agent run (queued; takes effect after this call returns).
    pub abort: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStatus,
    /// Whether steering or follow-up messages are waiting.
    pub has_pending_messages: unsafe extern "C" fn(ctx: *mut PiContext) -> bool,
    /// All session entries, in file order, as an owned array in `*out`.
    pub session_entries:
        unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// The entries of the current branch, root first, as an owned array in `*out`.
    pub session_branch:
        unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// The id of the current leaf entry as an owned string in `*out` (NULL when empty).
    pub session_leaf_id:
        unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// The current model as an owned object `{"provider", "id", ...}` in `*out` (NULL if none).
    pub model: unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// Context window usage as an owned object `{"tokens", "contextWindow", "percent"}`
    /// (pi's `getContextUsage`: tokens of the current context, estimated from the last
    /// assistant usage and 4 characters a token after it). NULL before the first model call.
    pub context_usage:
        unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// (tool execute only) Streams a partial result, JSON text shaped like a tool result;
    /// emitted as `tool_execution_update`.
    pub tool_update: unsafe extern "C" fn(ctx: *mut PiContext, partial_json: PiStr) -> PiStatus,
    /// Asks the host to shut down (pi's `ctx.shutdown()`): in RPC mode, once the current
    /// command is over, `session_shutdown {reason:"quit"}` goes to the plugins and the process
    /// exits 0; print and JSON modes end after their prompts anyway (no change there).
    pub shutdown: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStatus,
    /// Asks for a compaction; `options_json` is empty or `{"customInstructions"?}`
    /// (`PI_ERR_INVALID_ARG` otherwise). Works from any call; the compaction runs once the
    /// current prompt or command is over: `session_before_compact` (cancel, or a custom
    /// `compaction`), the summary, a `compaction` entry, `session_compact`. A failure ("Nothing
    /// to compact", "Already compacted", cancelled) is reported as this plugin's error with
    /// event "compact".
    pub compact: unsafe extern "C" fn(ctx: *mut PiContext, options_json: PiStr) -> PiStatus,
    /// (command only) Waits until the agent is idle: at once when it is, else until the
    /// current run has ended (RPC mode runs a command sent during a run at once, as pi
    /// does). While it waits, the plugin's other calls (its handlers for the run's events,
    /// its timers) are not made: each is refused with "a command of the plugin is waiting
    /// for the agent to be idle" (a `tool_call` it would gate is blocked, as for any refused
    /// call), because native code cannot be entered twice and the run cannot wait for the
    /// command that waits for it. Session operations asked for after the wait run once the
    /// command returns.
    pub wait_for_idle: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStatus,
    /// (command only; `PI_ERR_UNAVAILABLE` elsewhere) Asks for a new session;
    /// `options_json` is empty or `{"parentSession"?}` (`PI_ERR_INVALID_ARG` otherwise).
    ///
    /// Session operations (`new_session`, `fork`, `navigate_tree`, `switch_session`) are
    /// performed once the command handler has returned, never during this call (their
    /// `session_before_*` handlers may be this plugin's own), in the order asked.
    /// `*cancelled` (may be NULL) is therefore always set to false: a cancellation is seen by
    /// the `session_before_*` handler that makes it. A failure (an unknown entry, a file that
    /// cannot be opened) is reported as this plugin's error, with the operation's name as
    /// the event.
    ///
    /// New session, resume and fork run as pi 0.73.1 replaces its session:
    /// `session_before_switch {reason:"new"|"resume", targetSessionFile?}` or
    /// `session_before_fork {entryId, position}` can cancel; then `session_shutdown {reason,
    /// targetSessionFile}`, the switch, `session_start {reason, previousSessionFile}` and
    /// `resources_discover {reason:"startup"}`; then, for plugins written against pi's older hook API,
    /// `session_switch {reason, previousSessionFile}` or `session_fork
    /// {previousSessionFile}`. The plugins stay loaded (pi re-creates its extensions).
    pub new_session: unsafe extern "C" fn(
        ctx: *mut PiContext,
        options_json: PiStr,
        cancelled: *mut bool,
    ) -> PiStatus,
    /// (command only) Forks the session before the user message `entry_id`: a new session
    /// file holding the branch up to that message's parent (its text is what pi puts in the
    /// editor). See `new_session` for when it happens and the events.
    pub fork: unsafe extern "C" fn(
        ctx: *mut PiContext,
        entry_id: PiStr,
        cancelled: *mut bool,
    ) -> PiStatus,
    /// (command only) Moves the session's leaf to entry `target_id` of the same file (pi's
    /// `navigateTree`); `options_json` is empty or `{"summarize"?, "customInstructions"?,
    /// "replaceInstructions"?, "label"?}`. `session_before_tree {preparation, signal}` can
    /// cancel or give the summary; with `summarize`, the branch left behind is summarized
    /// into a `branch_summary` entry; then `session_tree {newLeafId, oldLeafId,
    /// summaryEntry?, fromExtension?}`. See `new_session` for when it happens.
    pub navigate_tree: unsafe extern "C" fn(
        ctx: *mut PiContext,
        target_id: PiStr,
        options_json: PiStr,
        cancelled: *mut bool,
    ) -> PiStatus,
    /// (command only) Resumes the session saved at `path`; its last model is selected again
    /// when offered (`model_select {source:"restore"}`). See `new_session`.
    pub switch_session:
        unsafe extern "C" fn(ctx: *mut PiContext, path: PiStr, cancelled: *mut bool) -> PiStatus,
    /// (command only) Reloads every plugin once the command handler has returned (pi's
    /// `ctx.reload()`, which pi's commands await as their last step): `session_shutdown
    /// {reason:"reload"}` on the old instances, a fresh load of every plugin (this one
    /// included), `session_start` and `resources_discover {reason:"reload"}` on the new
    /// ones. A plugin whose new version fails keeps running as it was.
    pub reload: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStatus,

    // ---- ABI 1.4
    /// (ABI 1.4) Whether the agent's current run was aborted (Esc in the terminal, RPC
    /// `abort`, a plugin's `abort`): pi's `ctx.signal.aborted`, so a long handler can stop
    /// early. False outside a run and for a NULL or stale context. A plugin run by
    /// `pi-hooks serve` gets the answer from the serve client: the host under `--isolate`,
    /// pi's own `ctx.signal` through the pi bridge (pi hands extensions its events from a
    /// queue, so a handler of an event pi delivers after the run ended reads false there, as a
    /// pi extension would). The `signal` of `session_before_compact` and
    /// `session_before_tree` payloads is `{aborted: false}`: this host cannot abort a
    /// compaction or a tree move once it started.
    pub is_aborted: unsafe extern "C" fn(ctx: *mut PiContext) -> bool,

    // ---- ABI 1.7
    /// (ABI 1.7) Whether project-local trust is active for this session (pi 0.79.1's
    /// `ctx.isProjectTrusted()`): inside pi, through the pi bridge, pi's own answer (its
    /// `trust.json`, `defaultProjectTrust`, `--approve` / `--no-approve`); in pi-hooks' own
    /// modes, whether the host trusts the working directory's project (false unless it says
    /// so). False for a NULL or stale context.
    pub is_project_trusted: unsafe extern "C" fn(ctx: *mut PiContext) -> bool,
    /// (ABI 1.7; command only, as in pi: `PI_ERR_UNAVAILABLE` elsewhere) The options the
    /// base system prompt is built from (pi 0.78.1's `ctx.getSystemPromptOptions()`), as an
    /// owned object in `*out`: `{cwd, selectedTools?, customPrompt?, appendSystemPrompt?,
    /// promptGuidelines?, toolSnippets?, contextFiles?, skills?, ...}`. pi-hooks' own modes give
    /// `{cwd, selectedTools}` (the active tools); through the bridge it is pi's object.
    pub system_prompt_options:
        unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// (ABI 1.7) The current thinking level (pi's `ctx.thinkingLevel`): `"off"`,
    /// `"minimal"`, `"low"`, `"medium"`, `"high"`, `"xhigh"` or `"max"`, borrowed from the
    /// context. pi-hooks' own modes have no thinking levels and answer `"off"`; through the
    /// bridge it is pi's level. An empty string for a NULL or stale context.
    pub thinking_level: unsafe extern "C" fn(ctx: *mut PiContext) -> PiStr,
}
