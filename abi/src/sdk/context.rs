//! The context of a call: cwd, mode, session reads, and the UI.

use std::marker::PhantomData;

use super::Notify;
use super::error::{Result, check};
use super::handle::PluginHandle;
use super::strings::{ABSENT, from_pi_str, pi_str};
use super::value::OwnedValue;
use crate::ffi::*;

/// The context of one handler, command, tool or timer call; valid for that call only.
pub struct Context<'a> {
    host: &'static PiHostApi,
    raw: *mut PiContext,
    _call: PhantomData<&'a mut PiContext>,
}

impl<'a> Context<'a> {
    /// # Safety
    /// `raw` must be the context of the current call under `host`.
    pub(crate) unsafe fn from_raw(host: &'static PiHostApi, raw: *mut PiContext) -> Self {
        Context {
            host,
            raw,
            _call: PhantomData,
        }
    }

    fn api(&self) -> &'static PiContextApi {
        // SAFETY: the table pointers were checked at init and live until unload.
        unsafe { &*self.host.context }
    }

    fn owned(&self, out: *mut PiValue) -> Option<OwnedValue> {
        // SAFETY: `out` came from a host call of this context that hands over ownership.
        unsafe { OwnedValue::from_raw(&*self.host.values, out) }
    }

    /// The raw context, for calling the C ABI directly.
    pub fn as_ptr(&self) -> *mut PiContext {
        self.raw
    }

    /// The plugin this call belongs to.
    pub fn plugin(&self) -> PluginHandle {
        PluginHandle {
            host: self.host,
            // SAFETY: `raw` is valid for this call (from_raw's contract).
            raw: unsafe { (self.api().plugin)(self.raw) },
        }
    }

    /// Who this plugin is ([`PluginHandle::identity`]).
    pub fn identity(&self) -> Result<super::Identity> {
        self.plugin().identity()
    }

    /// This plugin's own folder, `${data}` ([`PluginHandle::data_dir`]).
    pub fn data_dir(&self) -> Result<std::path::PathBuf> {
        self.plugin().data_dir()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &'a str {
        // SAFETY: valid context; the string lives as long as the context.
        unsafe { from_pi_str((self.api().cwd)(self.raw)) }
    }

    /// Whether dialogs reach a user.
    pub fn has_ui(&self) -> bool {
        // SAFETY: valid context.
        unsafe { (self.api().has_ui)(self.raw) }
    }

    /// The mode, one of `PI_MODE_*`.
    pub fn mode(&self) -> u32 {
        // SAFETY: valid context.
        unsafe { (self.api().mode)(self.raw) }
    }

    /// The session file, if the session is saved.
    pub fn session_file(&self) -> Option<&'a str> {
        // SAFETY: valid context; the string lives as long as the context.
        let s = unsafe { (self.api().session_file)(self.raw) };
        // SAFETY: as above.
        (!s.ptr.is_null()).then(|| unsafe { from_pi_str(s) })
    }

    /// Describes the error this call returns (the SDK does this for returned errors).
    pub fn set_error(&self, message: &str) {
        // SAFETY: valid context; the message is borrowed for the call.
        unsafe { (self.api().set_error)(self.raw, pi_str(message)) }
    }

    /// The current system prompt.
    pub fn system_prompt(&self) -> &'a str {
        // SAFETY: valid context; the string lives as long as the context.
        unsafe { from_pi_str((self.api().get_system_prompt)(self.raw)) }
    }

    /// Replaces the system prompt (in `before_agent_start`).
    pub fn set_system_prompt(&self, prompt: &str) -> Result<()> {
        // SAFETY: valid context; the prompt is borrowed for the call.
        check(
            unsafe { (self.api().set_system_prompt)(self.raw, pi_str(prompt)) },
            "set_system_prompt",
        )
    }

    /// Whether the agent is idle.
    pub fn is_idle(&self) -> bool {
        // SAFETY: valid context.
        unsafe { (self.api().is_idle)(self.raw) }
    }

    /// Whether the agent's current run was aborted (pi's `ctx.signal.aborted`): a long
    /// handler checks it to stop early. False on a host older than ABI 1.4.
    pub fn is_aborted(&self) -> bool {
        let api = self.api();
        let needed = std::mem::offset_of!(PiContextApi, is_aborted)
            + std::mem::size_of::<unsafe extern "C" fn()>();
        if (api.struct_size as usize) < needed {
            return false;
        }
        // SAFETY: valid context; the host's table has the entry (its size was checked).
        unsafe { (api.is_aborted)(self.raw) }
    }

    /// Whether the host's context table reaches the entry at `offset` (a host older than
    /// the SDK's minor has a shorter table).
    fn has_entry(&self, offset: usize) -> bool {
        (self.api().struct_size as usize) >= offset + std::mem::size_of::<unsafe extern "C" fn()>()
    }

    /// (ABI 1.7) Whether project-local trust is active (pi's `ctx.isProjectTrusted()`):
    /// inside pi, pi's answer; in pi-hooks' own modes, whether the host trusts the project.
    /// False on an older host.
    pub fn is_project_trusted(&self) -> bool {
        if !self.has_entry(std::mem::offset_of!(PiContextApi, is_project_trusted)) {
            return false;
        }
        // SAFETY: valid context; the host's table has the entry (its size was checked).
        unsafe { (self.api().is_project_trusted)(self.raw) }
    }

    /// (ABI 1.7; command handlers) The options the base system prompt is built from (pi's
    /// `ctx.getSystemPromptOptions()`): `{cwd, selectedTools?, ...}`.
    pub fn system_prompt_options(&self) -> Result<serde_json::Value> {
        if !self.has_entry(std::mem::offset_of!(PiContextApi, system_prompt_options)) {
            return Err(super::error::Error::status(
                PI_ERR_UNAVAILABLE,
                "system_prompt_options",
            ));
        }
        self.read(self.api().system_prompt_options, "system_prompt_options")
    }

    /// (ABI 1.7) The current thinking level (pi's `ctx.thinkingLevel`): `"off"` in pi-hooks'
    /// own modes and on an older host.
    pub fn thinking_level(&self) -> &'a str {
        if !self.has_entry(std::mem::offset_of!(PiContextApi, thinking_level)) {
            return "off";
        }
        // SAFETY: valid context; the table has the entry; the string lives as long as the
        // context.
        unsafe { from_pi_str((self.api().thinking_level)(self.raw)) }
    }

    /// Aborts the current agent run.
    pub fn abort(&self) -> Result<()> {
        // SAFETY: valid context.
        check(unsafe { (self.api().abort)(self.raw) }, "abort")
    }

    /// (Command handlers) Waits until the agent is idle.
    pub fn wait_for_idle(&self) -> Result<()> {
        // SAFETY: valid context.
        check(
            unsafe { (self.api().wait_for_idle)(self.raw) },
            "wait_for_idle",
        )
    }

    /// Asks for a compaction (`{"customInstructions"?}`), run once the current prompt or
    /// command is over.
    pub fn compact(&self, options: &serde_json::Value) -> Result<()> {
        let text = options.to_string();
        // SAFETY: valid context; the text is borrowed for the call.
        check(
            unsafe { (self.api().compact)(self.raw, pi_str(&text)) },
            "compact",
        )
    }

    /// (Command handlers) Asks for a new session (`{"parentSession"?}`), started once the
    /// command returns.
    pub fn new_session(&self, options: &serde_json::Value) -> Result<()> {
        let text = options.to_string();
        // SAFETY: valid context; the text is borrowed for the call; NULL `cancelled`.
        check(
            unsafe { (self.api().new_session)(self.raw, pi_str(&text), std::ptr::null_mut()) },
            "new_session",
        )
    }

    /// (Command handlers) Asks for a fork before the user message `entry_id`, made once the
    /// command returns.
    pub fn fork(&self, entry_id: &str) -> Result<()> {
        // SAFETY: valid context; the id is borrowed for the call; NULL `cancelled`.
        check(
            unsafe { (self.api().fork)(self.raw, pi_str(entry_id), std::ptr::null_mut()) },
            "fork",
        )
    }

    /// (Command handlers) Asks to move to entry `target_id` of the session tree
    /// (`{"summarize"?, "customInstructions"?, "replaceInstructions"?, "label"?}`), once the
    /// command returns.
    pub fn navigate_tree(&self, target_id: &str, options: &serde_json::Value) -> Result<()> {
        let text = options.to_string();
        check(
            // SAFETY: valid context; the strings are borrowed for the call; NULL `cancelled`.
            unsafe {
                (self.api().navigate_tree)(
                    self.raw,
                    pi_str(target_id),
                    pi_str(&text),
                    std::ptr::null_mut(),
                )
            },
            "navigate_tree",
        )
    }

    /// (Command handlers) Asks to resume the session file `path`, once the command returns.
    pub fn switch_session(&self, path: &str) -> Result<()> {
        // SAFETY: valid context; the path is borrowed for the call; NULL `cancelled`.
        check(
            unsafe { (self.api().switch_session)(self.raw, pi_str(path), std::ptr::null_mut()) },
            "switch_session",
        )
    }

    /// All session entries.
    pub fn session_entries(&self) -> Result<serde_json::Value> {
        self.read(self.api().session_entries, "session_entries")
    }

    /// The entries of the current branch, root first.
    pub fn session_branch(&self) -> Result<serde_json::Value> {
        self.read(self.api().session_branch, "session_branch")
    }

    fn read(
        &self,
        f: unsafe extern "C" fn(*mut PiContext, *mut *mut PiValue) -> PiStatus,
        what: &str,
    ) -> Result<serde_json::Value> {
        let mut out = std::ptr::null_mut();
        // SAFETY: valid context; `out` is a valid out-pointer.
        check(unsafe { f(self.raw, &mut out) }, what)?;
        Ok(self
            .owned(out)
            .map(|v| v.value().to_serde())
            .unwrap_or_default())
    }

    /// Streams a partial tool result (in a tool's execute).
    pub fn tool_update(&self, partial: &serde_json::Value) -> Result<()> {
        let text = partial.to_string();
        // SAFETY: valid context; the text is borrowed for the call.
        check(
            unsafe { (self.api().tool_update)(self.raw, pi_str(&text)) },
            "tool_update",
        )
    }

    /// The user interface.
    pub fn ui(&self) -> Ui<'_> {
        Ui { ctx: self }
    }
}

/// The UI of the current mode. Without UI, dialogs answer their defaults at once.
pub struct Ui<'c> {
    ctx: &'c Context<'c>,
}

impl Ui<'_> {
    fn api(&self) -> &'static PiUiApi {
        // SAFETY: the table pointers were checked at init and live until unload.
        unsafe { &*self.ctx.host.ui }
    }

    fn raw(&self) -> *mut PiContext {
        self.ctx.raw
    }

    /// Lets the user pick one option; `None` when cancelled or without UI.
    pub fn select(&self, title: &str, options: &[&str]) -> Result<Option<usize>> {
        let options: Vec<PiStr> = options.iter().map(|o| pi_str(o)).collect();
        let mut index = -1i64;
        // SAFETY: valid context; the strings and the array outlive the call.
        let status = unsafe {
            (self.api().select)(
                self.raw(),
                pi_str(title),
                options.as_ptr(),
                options.len(),
                std::ptr::null(),
                &mut index,
            )
        };
        check(status, "select")?;
        Ok(usize::try_from(index).ok())
    }

    /// Asks yes or no; false when declined, cancelled or without UI.
    pub fn confirm(&self, title: &str, message: &str) -> Result<bool> {
        let mut answer = false;
        // SAFETY: valid context; strings borrowed for the call; `answer` is a valid out-pointer.
        let status = unsafe {
            (self.api().confirm)(
                self.raw(),
                pi_str(title),
                pi_str(message),
                std::ptr::null(),
                &mut answer,
            )
        };
        check(status, "confirm")?;
        Ok(answer)
    }

    /// Asks for a line of text; `None` when cancelled or without UI.
    pub fn input(&self, title: &str, placeholder: &str) -> Result<Option<String>> {
        let mut out = std::ptr::null_mut();
        // SAFETY: valid context; strings borrowed for the call; `out` is a valid out-pointer.
        let status = unsafe {
            (self.api().input)(
                self.raw(),
                pi_str(title),
                pi_str(placeholder),
                std::ptr::null(),
                &mut out,
            )
        };
        check(status, "input")?;
        Ok(self
            .ctx
            .owned(out)
            .and_then(|v| v.value().as_str().map(str::to_owned)))
    }

    /// Shows a notification.
    pub fn notify(&self, message: &str, level: Notify) -> Result<()> {
        let level = match level {
            Notify::Info => PI_NOTIFY_INFO,
            Notify::Warning => PI_NOTIFY_WARNING,
            Notify::Error => PI_NOTIFY_ERROR,
        };
        // SAFETY: valid context; the message is borrowed for the call.
        check(
            unsafe { (self.api().notify)(self.raw(), pi_str(message), level) },
            "notify",
        )
    }

    /// Sets (`Some`) or removes (`None`) the footer status under `key`.
    pub fn set_status(&self, key: &str, text: Option<&str>) -> Result<()> {
        let text = text.map_or(ABSENT, pi_str);
        // SAFETY: valid context; strings borrowed for the call.
        check(
            unsafe { (self.api().set_status)(self.raw(), pi_str(key), text) },
            "set_status",
        )
    }

    /// Sets (`Some`) or removes (`None`) a widget, with no placement given (pi's plain
    /// `setWidget(key, lines)`: drawn above the editor, and RPC's request names no
    /// placement). [`Ui::set_widget_at`] names one.
    pub fn set_widget(&self, key: &str, lines: Option<&[&str]>) -> Result<()> {
        self.set_widget_at(key, lines, PI_WIDGET_DEFAULT)
    }

    /// Sets (`Some`) or removes (`None`) a widget at `placement`, a `PI_WIDGET_*`.
    pub fn set_widget_at(&self, key: &str, lines: Option<&[&str]>, placement: u32) -> Result<()> {
        let lines: Option<Vec<PiStr>> = lines.map(|l| l.iter().map(|s| pi_str(s)).collect());
        let (ptr, count) = lines
            .as_ref()
            .map_or((std::ptr::null(), 0), |l| (l.as_ptr(), l.len()));
        // SAFETY: valid context; the lines outlive the call.
        let status =
            unsafe { (self.api().set_widget)(self.raw(), pi_str(key), ptr, count, placement) };
        check(status, "set_widget")
    }

    /// Sets the terminal title.
    pub fn set_title(&self, title: &str) -> Result<()> {
        // SAFETY: valid context; the title is borrowed for the call.
        check(
            unsafe { (self.api().set_title)(self.raw(), pi_str(title)) },
            "set_title",
        )
    }

    /// Replaces the editor's text.
    pub fn set_editor_text(&self, text: &str) -> Result<()> {
        // SAFETY: valid context; the text is borrowed for the call.
        check(
            unsafe { (self.api().set_editor_text)(self.raw(), pi_str(text)) },
            "set_editor_text",
        )
    }

    /// The editor's text ("" without UI).
    pub fn editor_text(&self) -> Result<String> {
        let mut out = std::ptr::null_mut();
        check(
            // SAFETY: valid context; `out` is a valid out-pointer.
            unsafe { (self.api().get_editor_text)(self.raw(), &mut out) },
            "get_editor_text",
        )?;
        Ok(self
            .ctx
            .owned(out)
            .and_then(|v| v.value().as_str().map(str::to_owned))
            .unwrap_or_default())
    }
}
