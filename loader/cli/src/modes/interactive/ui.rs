//! The interactive mode's [`UiService`]: what plugins ask of the UI goes to the terminal's
//! thread as a [`Msg`]. A dialog blocks only the calling plugin's thread until the person
//! answers, its timeout passes (the terminal shows the seconds left) or the terminal goes
//! away; everything else is fire-and-forget.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Msg;
use super::editor::Editor;
use pi_hooks_host::services::UiService;

/// How much longer than its timeout a plugin waits for the terminal's answer to a dialog
/// (the terminal itself answers the default at the deadline).
const DIALOG_GRACE: Duration = Duration::from_secs(1);

/// Plugins' handle on the terminal.
pub struct TuiUi {
    to_terminal: Mutex<Sender<Msg>>,
    /// The editor's text as last drawn (`get_editor_text`).
    editor_text: Mutex<String>,
    closed: AtomicBool,
}

impl TuiUi {
    /// A UI that sends its requests to the terminal's thread.
    pub fn new(to_terminal: Sender<Msg>) -> Arc<Self> {
        Arc::new(TuiUi {
            to_terminal: Mutex::new(to_terminal),
            editor_text: Mutex::new(String::new()),
            closed: AtomicBool::new(false),
        })
    }

    fn send(&self, msg: Msg) -> bool {
        let sender = self
            .to_terminal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        sender.send(msg).is_ok()
    }

    /// The terminal is gone: waiting dialogs answer their defaults, new ones at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Records the editor's text for `get_editor_text`.
    pub fn set_editor_text(&self, text: &str) {
        let mut current = self.editor_text.lock().unwrap_or_else(|e| e.into_inner());
        if *current != text {
            text.clone_into(&mut current);
        }
    }
}

impl UiService for TuiUi {
    fn dialog(&self, request: Value, timeout: Option<Duration>) -> Option<Value> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let (reply, answer) = channel();
        let dialog = Dialog::new(&request, timeout, reply)?;
        if !self.send(Msg::Dialog(Box::new(dialog))) {
            return None;
        }
        match timeout {
            Some(timeout) => answer.recv_timeout(timeout + DIALOG_GRACE).ok().flatten(),
            None => answer.recv().ok().flatten(),
        }
    }

    fn fire(&self, request: Value) {
        if !self.closed.load(Ordering::Acquire) {
            self.send(Msg::Fire(request));
        }
    }

    fn reset(&self) {
        self.send(Msg::ResetUi);
    }

    fn editor_text(&self) -> Option<String> {
        Some(
            self.editor_text
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }

    fn set_working_message(&self, message: Option<String>) {
        self.send(Msg::Working(message));
    }
}

/// What a dialog asks.
#[derive(Debug)]
pub enum Kind {
    /// Pick one option (a confirm is a select over Yes and No, as in pi's terminal).
    Select {
        /// The options.
        options: Vec<String>,
        /// The highlighted one.
        selected: usize,
        /// Whether it answers a confirm (`{confirmed}` instead of `{value}`).
        confirm: bool,
    },
    /// One line of text (`input`) or several (`editor`).
    Text {
        /// The text being written.
        editor: Editor,
        /// Shown while the text is empty.
        placeholder: String,
        /// Enter inserts a newline; Ctrl+S (or Alt+Enter) submits.
        multi_line: bool,
    },
}

/// A dialog on screen (or waiting for the one before it).
#[derive(Debug)]
pub struct Dialog {
    /// The title (a confirm's is `title`, a line break, then `message`).
    pub title: String,
    /// The question.
    pub kind: Kind,
    /// When it answers its default by itself.
    pub deadline: Option<Instant>,
    reply: Sender<Option<Value>>,
}

impl Dialog {
    /// The dialog of a `PiUiApi` request (`None` for a method that is not a dialog).
    pub(super) fn new(
        request: &Value,
        timeout: Option<Duration>,
        reply: Sender<Option<Value>>,
    ) -> Option<Self> {
        let text = |field: &str| request[field].as_str().unwrap_or_default().to_owned();
        let (title, kind) = match request["method"].as_str()? {
            "select" => (
                text("title"),
                Kind::Select {
                    options: request["options"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|o| o.as_str().unwrap_or_default().to_owned())
                        .collect(),
                    selected: 0,
                    confirm: false,
                },
            ),
            "confirm" => (
                format!("{}\n{}", text("title"), text("message")),
                Kind::Select {
                    options: vec!["Yes".into(), "No".into()],
                    selected: 0,
                    confirm: true,
                },
            ),
            "input" => (
                text("title"),
                Kind::Text {
                    editor: Editor::default(),
                    placeholder: text("placeholder"),
                    multi_line: false,
                },
            ),
            "editor" => {
                let mut editor = Editor::default();
                editor.set_text(&text("prefill"));
                (
                    text("title"),
                    Kind::Text {
                        editor,
                        placeholder: String::new(),
                        multi_line: true,
                    },
                )
            }
            _ => return None,
        };
        Some(Dialog {
            title,
            kind,
            deadline: timeout.map(|t| Instant::now() + t),
            reply,
        })
    }

    /// Answers with the highlighted option or the text written.
    pub fn submit(self) {
        let answer = match &self.kind {
            Kind::Select {
                options,
                selected,
                confirm: true,
            } => json!({"confirmed": options.get(*selected).is_some_and(|o| o == "Yes")}),
            Kind::Select {
                options, selected, ..
            } => match options.get(*selected) {
                Some(option) => json!({"value": option}),
                None => json!({"cancelled": true}),
            },
            Kind::Text { editor, .. } => json!({"value": editor.text()}),
        };
        let _ = self.reply.send(Some(answer));
    }

    /// Answers "cancelled" (Esc).
    pub fn cancel(self) {
        let _ = self.reply.send(Some(json!({"cancelled": true})));
    }

    /// Answers nothing: the plugin gets the dialog's default (its timeout passed).
    pub fn expire(self) {
        let _ = self.reply.send(None);
    }

    /// Whole seconds left before it expires.
    pub fn seconds_left(&self, now: Instant) -> Option<u64> {
        self.deadline
            .map(|d| d.saturating_duration_since(now).as_millis().div_ceil(1000) as u64)
    }
}
