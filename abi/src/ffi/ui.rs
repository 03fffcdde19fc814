//! The user interface of the current mode: dialogs, notifications, status, widgets, editor.

use super::context::PiContext;
use super::status::PiStatus;
use super::strings::PiStr;
use super::value::PiValue;

/// `notify` level: information.
pub const PI_NOTIFY_INFO: u32 = 0;
/// `notify` level: warning.
pub const PI_NOTIFY_WARNING: u32 = 1;
/// `notify` level: error.
pub const PI_NOTIFY_ERROR: u32 = 2;

/// `set_widget` placement: above the editor, said so (RPC's `widgetPlacement:
/// "aboveEditor"`).
pub const PI_WIDGET_ABOVE_EDITOR: u32 = 0;
/// `set_widget` placement: below the editor.
pub const PI_WIDGET_BELOW_EDITOR: u32 = 1;
/// (ABI 1.7) `set_widget` placement: none given, as pi's `setWidget(key, lines)` without
/// options. The widget is drawn above the editor, and RPC's `setWidget` request carries no
/// `widgetPlacement` (pi leaves it out then). A host older than 1.7 refuses it
/// (`PI_ERR_INVALID_ARG`); the C++ and Rust helpers pass it when no placement is given.
pub const PI_WIDGET_DEFAULT: u32 = 2;

/// Options for a dialog. Pass NULL for none.
#[repr(C)]
pub struct PiDialogOptions {
    /// `sizeof(PiDialogOptions)`.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Milliseconds after which the dialog closes with its default answer; 0 for none.
    pub timeout_ms: u64,
}

/// UI functions, all on a `PiContext`. The interactive mode (`pi-hooks`, `pi-hooks chat`)
/// draws every one of them in the terminal (dialogs in place of the editor, with a `(Ns)`
/// countdown when they have a timeout; statuses on the footer's last line, sorted by key;
/// widgets above or below the editor, at most 10 lines each); RPC mode sends them to the
/// client as pi's `extension_ui_request` lines; through the pi bridge, pi draws them.
/// Without a UI (print and JSON modes, `has_ui` false) the
/// dialogs return their default answer at once with `PI_OK`, and the setters do nothing. The
/// arguments are checked in every mode, as a UI checks them: NULL `options`, a dialog struct
/// smaller than this header's, an unknown notify level or widget placement, a blank or
/// NUL-containing key answer `PI_ERR_INVALID_ARG`; text that is not UTF-8 `PI_ERR_UTF8`. A
/// dialog blocks only the calling plugin; time spent in it does not count against the handler's
/// timeout.
#[repr(C)]
pub struct PiUiApi {
    /// `sizeof(PiUiApi)` in the host.
    pub struct_size: u32,
    /// Reserved, 0.
    pub reserved: u32,
    /// Lets the user pick one of `count` options; `*index` receives its index, or -1 when
    /// cancelled, timed out or without UI.
    pub select: unsafe extern "C" fn(
        ctx: *mut PiContext,
        title: PiStr,
        options: *const PiStr,
        count: usize,
        dialog: *const PiDialogOptions,
        index: *mut i64,
    ) -> PiStatus,
    /// Asks a yes/no question; `*answer` is false when declined, cancelled or without UI.
    pub confirm: unsafe extern "C" fn(
        ctx: *mut PiContext,
        title: PiStr,
        message: PiStr,
        dialog: *const PiDialogOptions,
        answer: *mut bool,
    ) -> PiStatus,
    /// Asks for one line of text; `*out` receives an owned string, or NULL when cancelled.
    pub input: unsafe extern "C" fn(
        ctx: *mut PiContext,
        title: PiStr,
        placeholder: PiStr,
        dialog: *const PiDialogOptions,
        out: *mut *mut PiValue,
    ) -> PiStatus,
    /// Opens a multi-line editor prefilled with `prefill`; `*out` as for `input`.
    pub editor: unsafe extern "C" fn(
        ctx: *mut PiContext,
        title: PiStr,
        prefill: PiStr,
        out: *mut *mut PiValue,
    ) -> PiStatus,
    /// Shows a notification; `level` is a `PI_NOTIFY_*` (in the terminal, as pi shows them:
    /// info as a dim line in the conversation, `Warning: …` and `Error: …` lines).
    pub notify: unsafe extern "C" fn(ctx: *mut PiContext, message: PiStr, level: u32) -> PiStatus,
    /// Sets the footer status under `key`; a NULL `text.ptr` removes it. The footer shows
    /// every status on one line, sorted by key, each with line breaks and tabs turned into
    /// spaces, cut to the terminal's width.
    pub set_status: unsafe extern "C" fn(ctx: *mut PiContext, key: PiStr, text: PiStr) -> PiStatus,
    /// Sets a widget of `count` lines under `key`; NULL `lines` removes it. `placement` is a
    /// `PI_WIDGET_*`.
    pub set_widget: unsafe extern "C" fn(
        ctx: *mut PiContext,
        key: PiStr,
        lines: *const PiStr,
        count: usize,
        placement: u32,
    ) -> PiStatus,
    /// Sets the terminal title.
    pub set_title: unsafe extern "C" fn(ctx: *mut PiContext, title: PiStr) -> PiStatus,
    /// Replaces the editor's text.
    pub set_editor_text: unsafe extern "C" fn(ctx: *mut PiContext, text: PiStr) -> PiStatus,
    /// The editor's text as an owned string in `*out`: what is typed in the interactive
    /// mode's editor; "" in the other modes (as in pi's RPC mode) and without UI.
    pub get_editor_text:
        unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// The current theme as an owned object `{"name", "colors": {name: ANSI escape}}`.
    pub theme: unsafe extern "C" fn(ctx: *mut PiContext, out: *mut *mut PiValue) -> PiStatus,
    /// Sets (NULL `message.ptr`: resets) the message shown while the agent works. Shown by
    /// the interactive mode; RPC, print and JSON modes ignore it, as pi's RPC mode does.
    pub set_working_message: unsafe extern "C" fn(ctx: *mut PiContext, message: PiStr) -> PiStatus,
}
