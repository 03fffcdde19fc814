//! The interactive mode's state and what each key and message does to it: the editor and
//! its slash-command completion, the conversation, what plugins put on screen (statuses,
//! widgets, dialogs, the title, the working message), and the work handed to the agent's
//! thread (prompts, commands, `/reload`, `/new`) or run beside it (`!` commands).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use serde_json::Value;

use super::Msg;
use super::chat::{Chat, Follow, Item, Level};
use super::complete::Completion;
use super::editor::Editor;
use super::ui::{Dialog, Kind, TuiUi};
use crate::modes::rpc::bash::{BashControl, BashRun, record};
use pi_hooks_agent::{Agent, AgentHandle};

/// Work for the agent's thread.
pub type Job = Box<dyn FnOnce(&mut Agent) + Send>;

/// A second Ctrl+C within this long quits (pi's window).
const DOUBLE_CTRL_C: Duration = Duration::from_millis(500);

/// pi's `MAX_WIDGET_LINES`.
pub const MAX_WIDGET_LINES: usize = 10;

/// The built-in commands: `(name, description)`.
pub const BUILTINS: &[(&str, &str)] = &[
    ("compact", "Compact the context (optional instructions)"),
    ("help", "Show the commands and keys"),
    ("model", "Select a model (provider/id, or pick from a list)"),
    ("new", "Start a new session"),
    ("quit", "Quit pi-hooks"),
    ("reload", "Reload every plugin (after a rebuild)"),
];

/// pi's warning for `/reload` during a run.
const RELOAD_BUSY: &str = "Wait for the current response to finish before reloading.";

/// A plugin's widget.
#[derive(Debug, Clone)]
pub struct Widget {
    /// Its key.
    pub key: String,
    /// Its lines (at most [`MAX_WIDGET_LINES`] are shown).
    pub lines: Vec<String>,
    /// Below the editor instead of above it.
    pub below: bool,
}

/// What the session's footer shows besides the statuses.
#[derive(Debug, Clone, Default)]
pub struct Footer {
    /// The working directory, `~` for the home folder.
    pub cwd: String,
    /// The session's name.
    pub session_name: Option<String>,
    /// The model's id (and provider).
    pub model: String,
    /// Token sums of the assistant messages: input, output, cache read, cache write.
    pub tokens: [u64; 4],
    /// Their cost.
    pub cost: f64,
}

/// How the session runs: what the terminal hands work to.
pub struct Ctl {
    /// The agent's state.
    pub agent: AgentHandle,
    /// The agent thread's queue.
    pub jobs: Sender<Job>,
    /// Back to the terminal's own loop.
    pub to_terminal: Sender<Msg>,
    /// Plugins' UI.
    pub ui: Arc<TuiUi>,
    /// The session's directory.
    pub cwd: PathBuf,
    /// The running `!` command.
    pub bash: Arc<BashControl>,
}

/// The whole screen's state.
pub struct App {
    /// The conversation.
    pub chat: Chat,
    /// The prompt editor.
    pub editor: Editor,
    /// Slash-command completion, while it shows.
    pub completion: Option<Completion>,
    /// Plugin statuses by key (shown sorted by key).
    pub statuses: BTreeMap<String, String>,
    /// Plugin widgets in the order they were first set.
    pub widgets: Vec<Widget>,
    /// Dialogs: the first shows, the others wait.
    pub dialogs: VecDeque<Dialog>,
    /// The terminal title a plugin set.
    pub title: Option<String>,
    /// The title was changed and not written yet.
    pub title_dirty: bool,
    /// The message shown while the agent works (a plugin's, or "Working...").
    pub working_message: Option<String>,
    /// Between `agent_start` and `agent_end`.
    pub working: bool,
    /// A prompt or command is on the agent's thread.
    pub busy: bool,
    /// How many lines the conversation is scrolled up from its end.
    pub scroll: usize,
    /// The footer's facts.
    pub footer: Footer,
    /// When Ctrl+C was last pressed.
    last_ctrl_c: Option<Instant>,
    /// Set when the mode should end.
    pub quit: bool,
    /// Bumped by `/new`: renders asked before it are dropped.
    pub epoch: u64,
    /// The keys of the plugins' shortcuts (read again after every job and reload line, so
    /// a key press looks at no plugin unless one registered it).
    shortcut_keys: Vec<String>,
    /// pi's built-in keys (its defaults and the user's `keybindings.json`): which plugin
    /// shortcuts are skipped or warned about.
    builtin_keys: super::builtin_keys::BuiltinKeys,
    /// Session control.
    pub ctl: Ctl,
}

impl App {
    /// A fresh screen over `ctl`.
    pub fn new(ctl: Ctl, footer: Footer) -> Self {
        App {
            chat: Chat::default(),
            editor: Editor::default(),
            completion: None,
            statuses: BTreeMap::new(),
            widgets: Vec::new(),
            dialogs: VecDeque::new(),
            title: None,
            title_dirty: false,
            working_message: None,
            working: false,
            busy: false,
            scroll: 0,
            footer,
            last_ctrl_c: None,
            quit: false,
            epoch: 0,
            shortcut_keys: Vec::new(),
            builtin_keys: pi_hooks_host::plugin_files::paths::agent_dir()
                .map(|dir| super::builtin_keys::BuiltinKeys::load(&dir))
                .unwrap_or_default(),
            ctl,
        }
    }

    /// Shows the session's messages (a resumed session, or after `/new`).
    pub fn load_messages(&mut self, messages: &[Value]) {
        self.epoch += 1;
        self.footer.tokens = [0; 4];
        self.footer.cost = 0.0;
        for message in messages.iter().filter(|m| m["role"] == "assistant") {
            self.count_usage(message);
        }
        for follow in self.chat.load(messages) {
            self.follow(follow);
        }
        self.scroll = 0;
    }

    fn count_usage(&mut self, message: &Value) {
        let usage = &message["usage"];
        for (n, field) in ["input", "output", "cacheRead", "cacheWrite"]
            .iter()
            .enumerate()
        {
            self.footer.tokens[n] += usage[field].as_u64().unwrap_or(0);
        }
        self.footer.cost += usage["cost"]["total"].as_f64().unwrap_or(0.0);
    }

    /// Takes one message from the terminal, the agent or a plugin.
    pub fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Term(Event::Key(key)) if key.kind != KeyEventKind::Release => self.key(key),
            Msg::Term(Event::Paste(text)) => {
                // Terminals send a pasted line break as CR (some as CR LF).
                let text = text.replace("\r\n", "\n").replace('\r', "\n");
                match self.dialogs.front_mut() {
                    Some(Dialog {
                        kind:
                            Kind::Text {
                                editor, multi_line, ..
                            },
                        ..
                    }) => {
                        // One line of input: its lines joined.
                        let text = if *multi_line {
                            text
                        } else {
                            text.replace('\n', " ")
                        };
                        editor.insert(&text);
                    }
                    // A select shows: the editor behind it is hidden; nothing to paste into.
                    Some(_) => {}
                    None => {
                        self.editor.insert(&text);
                        self.edited();
                    }
                }
            }
            Msg::Term(_) => {}
            Msg::Agent(event) => self.agent_event(&event),
            Msg::Fire(request) => self.fire(&request),
            Msg::Dialog(dialog) => self.dialogs.push_back(*dialog),
            Msg::ResetUi => {
                self.statuses.clear();
                self.widgets.clear();
                self.working_message = None;
                if self.title.take().is_some() {
                    self.title_dirty = true;
                }
            }
            Msg::Working(message) => self.working_message = message,
            Msg::Stderr(line) => {
                if line.starts_with("pi-hooks: ") {
                    // A `--watch` reload may have changed the plugins' shortcuts.
                    self.refresh_shortcuts(false);
                }
                let level = if line.starts_with("Extension error") {
                    Level::Error
                } else if line.contains("warning:") {
                    Level::Warning
                } else {
                    Level::Info
                };
                self.chat.push(Item::Log(level, line));
            }
            Msg::JobDone => {
                self.busy = false;
                self.refresh_footer();
                self.refresh_shortcuts(false);
            }
            Msg::Queued(behavior) => self.queued(behavior),
            Msg::Notice(level, text) => self.chat.notice(level, text),
            Msg::Messages(messages) => self.load_messages(&messages),
            Msg::Forked(messages, text) => {
                self.load_messages(&messages);
                self.editor.set_text(&text);
                self.chat
                    .notice(Level::Info, "Forked to new session".to_owned());
            }
            Msg::Rendered(epoch, at, lines) => {
                if epoch == self.epoch
                    && let Some(Item::Custom { rendered, .. }) = self.chat.items.get_mut(at)
                {
                    *rendered = lines;
                    self.chat.version += 1;
                }
            }
            Msg::Completions(seq, items) => {
                if let Some(completion) = &mut self.completion {
                    completion.arrived(seq, items);
                }
            }
            Msg::BashDone(at, result) => {
                if let Some(Item::Bash {
                    output,
                    exit,
                    done,
                    cancelled,
                    ..
                }) = self.chat.items.get_mut(at)
                {
                    match result {
                        Ok(result) => {
                            *output = result["output"].as_str().unwrap_or_default().to_owned();
                            *exit = result["exitCode"].as_i64();
                            *cancelled = result["cancelled"] == true;
                        }
                        Err(error) => *output = error,
                    }
                    *done = true;
                    self.chat.version += 1;
                }
            }
            Msg::Quit | Msg::Signal(_) => self.quit = true,
        }
    }

    /// Ticks: expired dialogs answer their defaults.
    pub fn tick(&mut self, now: Instant) {
        while self
            .dialogs
            .front()
            .and_then(|d| d.deadline)
            .is_some_and(|d| d <= now)
        {
            if let Some(dialog) = self.dialogs.pop_front() {
                dialog.expire();
            }
        }
    }

    /// The next moment something changes by itself (a dialog's countdown, the spinner).
    pub fn next_tick(&self) -> Option<Duration> {
        if self.working || self.busy || self.dialogs.front().is_some_and(|d| d.deadline.is_some()) {
            Some(Duration::from_millis(100))
        } else {
            None
        }
    }

    fn agent_event(&mut self, event: &Value) {
        match event["type"].as_str() {
            Some("agent_start") => self.working = true,
            Some("agent_end") => {
                self.working = false;
                self.refresh_footer();
            }
            Some("message_end") if event["message"]["role"] == "assistant" => {
                self.count_usage(&event["message"]);
            }
            _ => {}
        }
        let follow = self.chat.apply(event);
        self.follow(follow);
    }

    fn follow(&mut self, follow: Follow) {
        let Follow::Render(at) = follow else { return };
        let Some(Item::Custom { message, .. }) = self.chat.items.get(at) else {
            return;
        };
        let message = message.clone();
        let (agent, to_terminal, epoch) = (
            self.ctl.agent.clone(),
            self.ctl.to_terminal.clone(),
            self.epoch,
        );
        // Plugin code: on a thread that may block, never on the terminal's.
        pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
            if let Ok(Some(lines)) = agent.render_message(&message, false) {
                let _ = to_terminal.send(Msg::Rendered(epoch, at, Some(lines)));
            }
        });
    }

    /// The plugins' shortcuts, read again (after a reload); pi's warnings about keys the
    /// terminal keeps, keys it does not know and keys two plugins took, when `warn`.
    pub fn refresh_shortcuts(&mut self, warn: bool) {
        let shortcuts = self.ctl.agent.shortcuts();
        self.shortcut_keys = shortcuts.iter().map(|(_, key)| key.clone()).collect();
        if warn {
            for line in super::keys::diagnostics(&shortcuts, &self.builtin_keys) {
                self.chat.push(Item::Log(Level::Warning, line));
            }
        }
    }

    /// Runs the shortcut of `key`, if a plugin registered one; `true` when one did.
    fn shortcut(&mut self, key: &KeyEvent) -> bool {
        let builtin = &self.builtin_keys;
        if !self
            .shortcut_keys
            .iter()
            .any(|k| super::keys::runs(k, key, builtin))
        {
            return false;
        }
        let (agent, key, builtin) = (self.ctl.agent.clone(), *key, builtin.clone());
        // Plugin code: on a thread that may block (the handler may open a dialog).
        pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
            agent.run_shortcut(|k| super::keys::runs(k, &key, &builtin));
        });
        true
    }

    /// The footer's facts that change outside events (model, session name).
    pub fn refresh_footer(&mut self) {
        let model = self.ctl.agent.model();
        self.footer.model = model["id"].as_str().unwrap_or("no-model").to_owned();
        self.footer.session_name = self.ctl.agent.session_info().2;
    }

    fn fire(&mut self, request: &Value) {
        let text = |field: &str| request[field].as_str().unwrap_or_default().to_owned();
        match request["method"].as_str().unwrap_or_default() {
            "notify" => {
                let level = match request["notifyType"].as_str() {
                    Some("error") => Level::Error,
                    Some("warning") => Level::Warning,
                    _ => Level::Info,
                };
                self.chat.notice(level, text("message"));
            }
            "setStatus" => {
                let key = text("statusKey");
                match request["statusText"].as_str() {
                    Some(status) => {
                        self.statuses.insert(key, status.to_owned());
                    }
                    None => {
                        self.statuses.remove(&key);
                    }
                }
            }
            "setWidget" => {
                let key = text("widgetKey");
                let below = request["widgetPlacement"] == "belowEditor";
                match request["widgetLines"].as_array() {
                    Some(lines) => {
                        let lines = lines
                            .iter()
                            .map(|l| l.as_str().unwrap_or_default().to_owned())
                            .collect();
                        match self.widgets.iter_mut().find(|w| w.key == key) {
                            Some(widget) => {
                                widget.lines = lines;
                                widget.below = below;
                            }
                            None => self.widgets.push(Widget { key, lines, below }),
                        }
                    }
                    None => self.widgets.retain(|w| w.key != key),
                }
            }
            "setTitle" => {
                self.title = Some(text("title"));
                self.title_dirty = true;
            }
            "set_editor_text" => {
                self.editor.set_text(&text("text"));
                self.edited();
            }
            _ => {}
        }
    }

    fn key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if !self.dialogs.is_empty() {
            return self.dialog_key(key);
        }
        if self.completion_key(key) || self.shortcut(&key) {
            return;
        }
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift => self.editor.newline(),
            // pi's `app.message.followUp`: during a run the text waits for the run's end
            // (Enter steers it); otherwise it is sent as Enter sends it.
            KeyCode::Enter if alt => return self.submit_as("followUp"),
            KeyCode::Enter => {
                // A line ending in a backslash continues on the next line (pi's editor too).
                if self.editor.text().ends_with('\\') {
                    self.editor.backspace();
                    self.editor.newline();
                } else {
                    return self.submit();
                }
            }
            KeyCode::Char('j') if ctrl => self.editor.newline(),
            KeyCode::Char('d') if ctrl => {
                if self.editor.is_empty() {
                    self.quit = true;
                } else {
                    self.editor.delete();
                }
            }
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('u') if ctrl => self.editor.delete_to_start(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word(),
            KeyCode::Char(c) if !ctrl => self.editor.insert(c.encode_utf8(&mut [0; 4])),
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up => self.editor.up(),
            KeyCode::Down => self.editor.down(),
            KeyCode::PageUp => self.scroll += 10,
            KeyCode::PageDown => self.scroll = self.scroll.saturating_sub(10),
            KeyCode::Esc => {
                if self.working {
                    self.ctl.agent.abort();
                } else if self.ctl.bash.is_running() {
                    self.ctl.bash.abort();
                }
                return;
            }
            _ => return,
        }
        self.edited();
    }

    /// Ctrl+C: aborts a run (and a `!` command) and clears the editor; twice in a row quits.
    fn ctrl_c(&mut self) {
        let now = Instant::now();
        if self
            .last_ctrl_c
            .is_some_and(|last| now.duration_since(last) < DOUBLE_CTRL_C)
        {
            self.quit = true;
            return;
        }
        self.last_ctrl_c = Some(now);
        if let Some(dialog) = self.dialogs.pop_front() {
            dialog.cancel();
            return;
        }
        if self.working || self.busy {
            self.ctl.agent.abort();
        }
        self.ctl.bash.abort();
        self.editor.clear();
        self.edited();
    }

    fn dialog_key(&mut self, key: KeyEvent) {
        let Some(dialog) = self.dialogs.front_mut() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let mut answer = None;
        match &mut dialog.kind {
            Kind::Select {
                options, selected, ..
            } => match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    *selected = selected
                        .checked_sub(1)
                        .unwrap_or(options.len().saturating_sub(1));
                }
                KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => {
                    *selected = if *selected + 1 >= options.len() {
                        0
                    } else {
                        *selected + 1
                    };
                }
                KeyCode::Enter => answer = Some(true),
                KeyCode::Esc => answer = Some(false),
                _ => {}
            },
            Kind::Text {
                editor, multi_line, ..
            } => match key.code {
                KeyCode::Enter if *multi_line && !alt => editor.newline(),
                KeyCode::Char('s') if ctrl => answer = Some(true),
                KeyCode::Enter => answer = Some(true),
                KeyCode::Esc => answer = Some(false),
                KeyCode::Char('j') if ctrl => editor.newline(),
                KeyCode::Char('u') if ctrl => editor.delete_to_start(),
                KeyCode::Char('w') if ctrl => editor.delete_word(),
                KeyCode::Char(c) if !ctrl => editor.insert(c.encode_utf8(&mut [0; 4])),
                KeyCode::Backspace => editor.backspace(),
                KeyCode::Delete => editor.delete(),
                KeyCode::Left => editor.left(),
                KeyCode::Right => editor.right(),
                KeyCode::Home => editor.home(),
                KeyCode::End => editor.end(),
                KeyCode::Up => editor.up(),
                KeyCode::Down => editor.down(),
                _ => {}
            },
        }
        if let Some(submit) = answer
            && let Some(dialog) = self.dialogs.pop_front()
        {
            if submit {
                dialog.submit();
            } else {
                dialog.cancel();
            }
        }
    }

    /// Keys the completion list takes while it shows; `true` when taken.
    fn completion_key(&mut self, key: KeyEvent) -> bool {
        let Some(completion) = &mut self.completion else {
            return false;
        };
        match key.code {
            KeyCode::Up => completion.previous(),
            KeyCode::Down => completion.next(),
            KeyCode::Esc => self.completion = None,
            KeyCode::Tab => {
                if let Some(text) = completion.accept() {
                    self.editor.set_text(&text);
                    self.edited();
                }
            }
            KeyCode::Enter => {
                // Enter on a command name not typed out picks it (and waits for arguments);
                // otherwise the line is sent.
                match completion.accept() {
                    Some(text) if text.trim_end() != self.editor.text().trim_end() => {
                        self.editor.set_text(&text);
                        self.edited();
                    }
                    _ => return false,
                }
            }
            _ => return false,
        }
        true
    }

    /// After every edit: the plugins' view of the editor, and the completion list.
    fn edited(&mut self) {
        let text = self.editor.text();
        self.ctl.ui.set_editor_text(&text);
        self.completion = Completion::update(self.completion.take(), &text, &self.ctl);
    }

    fn submit(&mut self) {
        self.submit_as("steer");
    }

    /// Sends the editor's text; during a run it is queued by `behavior` (`steer`: at the
    /// run's next turn; `followUp`: once the run would end), as pi's `streamingBehavior`.
    fn submit_as(&mut self, behavior: &'static str) {
        let text = self.editor.take();
        self.completion = None;
        self.edited();
        self.scroll = 0;
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        let busy = self.busy || self.working || self.ctl.agent.is_streaming();
        // `/compact` and `/model` are this terminal's, unless a plugin has such a command.
        let own = |name: &str| {
            (trimmed == name || trimmed.starts_with(&format!("{name} ")))
                && !self.ctl.agent.is_plugin_command(trimmed)
        };
        match trimmed {
            _ if own("/model") => self.model(trimmed.strip_prefix("/model").unwrap_or("").trim()),
            "/quit" | "/exit" => self.quit = true,
            "/help" => self.help(),
            "/reload" if busy => self.chat.notice(Level::Warning, RELOAD_BUSY),
            "/reload" => {
                self.chat.notice(Level::Info, "Reloading plugins…");
                self.job(|agent| {
                    // The summary and each plugin's line come on stderr, which this mode
                    // shows; a refusal is an `Extension error` line there too.
                    let _ = agent.reload();
                });
            }
            "/new" if busy => self.chat.notice(
                Level::Warning,
                "Wait for the current response to finish first.",
            ),
            "/new" => {
                let to_terminal = self.ctl.to_terminal.clone();
                self.job(move |agent| {
                    match agent.new_session(None) {
                        Ok(true) => {
                            let _ = to_terminal.send(Msg::Notice(
                                Level::Info,
                                "New session cancelled by a plugin".into(),
                            ));
                        }
                        Ok(false) => {
                            let _ = to_terminal.send(Msg::Messages(agent.handle().messages()));
                            let _ = to_terminal
                                .send(Msg::Notice(Level::Info, "New session started".into()));
                        }
                        Err(error) => {
                            let _ = to_terminal.send(Msg::Notice(Level::Error, error));
                        }
                    };
                });
            }
            _ if own("/compact") => {
                let instructions = trimmed
                    .strip_prefix("/compact")
                    .map(str::trim)
                    .filter(|i| !i.is_empty())
                    .map(str::to_owned);
                self.ctl.agent.abort();
                let to_terminal = self.ctl.to_terminal.clone();
                self.job(move |agent| {
                    let notice = match agent.compact(instructions.as_deref()) {
                        Ok(_) => (Level::Info, "Context compacted".to_owned()),
                        Err(error) => (Level::Error, error),
                    };
                    let _ = to_terminal.send(Msg::Notice(notice.0, notice.1));
                    let _ = to_terminal.send(Msg::Messages(agent.handle().messages()));
                });
            }
            _ if trimmed.starts_with('!') => self.bash(trimmed),
            _ if busy => {
                // As pi: a plugin command runs at once, other text steers the run (Enter) or
                // follows it (Alt+Enter).
                let (agent, to_terminal) = (self.ctl.agent.clone(), self.ctl.to_terminal.clone());
                pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
                    match agent.prompt_while_running(&text, None, Some(behavior)) {
                        Err(error) => {
                            let _ = to_terminal.send(Msg::Notice(Level::Error, error));
                        }
                        Ok("queued") => {
                            let _ = to_terminal.send(Msg::Queued(behavior));
                        }
                        Ok(_) => {}
                    }
                });
            }
            _ => self.job(move |agent| agent.prompt(&text)),
        }
    }

    /// A message typed during a run was queued. The run may have ended after its last look at
    /// the queue (the message arrives while `agent_end` or `agent_settled` handlers run, or
    /// after input handlers took their time): a job after the run's own runs what is left at
    /// once as a run of its own (nothing when the run took it), so a message is never left
    /// waiting for the next prompt; the notice says which happens.
    fn queued(&mut self, behavior: &str) {
        let running = self.busy && self.ctl.agent.is_streaming();
        if running && self.ctl.agent.pending_message_count() > 0 {
            let when = if behavior == "followUp" {
                "Queued as a follow-up: it reaches the model when the run would end"
            } else {
                "Queued: it reaches the model at its next turn"
            };
            self.chat.notice(Level::Info, when.to_owned());
        }
        let to_terminal = self.ctl.to_terminal.clone();
        self.job(move |agent| {
            if agent.handle().pending_message_count() > 0 {
                let _ = to_terminal.send(Msg::Notice(
                    Level::Info,
                    "The run ended before your message reached it: it starts a new run now".into(),
                ));
            }
            agent.run_left_queued();
        });
    }

    /// Queues `text` as a prompt of its own (the command line's prompts), after whatever
    /// the agent's thread has to do first.
    pub fn queue_prompt(&mut self, text: String) {
        self.editor.take_into_history(&text);
        self.job(move |agent| agent.prompt(&text));
    }

    /// Runs `work` on the agent's thread; [`Msg::JobDone`] when it is over.
    fn job(&mut self, work: impl FnOnce(&mut Agent) + Send + 'static) {
        let to_terminal = self.ctl.to_terminal.clone();
        self.busy = true;
        let job: Job = Box::new(move |agent| {
            work(agent);
            // A plugin command forked the session: as pi, the conversation is drawn again
            // from the forked file and the message forked off goes back into the editor.
            if let Some(text) = agent.handle().take_forked_text() {
                let _ = to_terminal.send(Msg::Forked(agent.handle().messages(), text));
            }
            let _ = to_terminal.send(Msg::JobDone);
        });
        if self.ctl.jobs.send(job).is_err() {
            self.busy = false;
            self.chat.notice(
                Level::Error,
                "the agent has stopped; quit with Ctrl+C twice",
            );
        }
    }

    /// `!command` and `!!command`: pi's `user_bash` first (a plugin may answer it or run
    /// something else), then the shell; recorded once the agent is idle.
    fn bash(&mut self, text: &str) {
        let excluded = text.starts_with("!!");
        let command = text.trim_start_matches('!').trim().to_owned();
        if command.is_empty() {
            return;
        }
        if self.ctl.bash.is_running() {
            return self.chat.notice(
                Level::Warning,
                "A bash command is already running. Press Esc to cancel it first.",
            );
        }
        let at = self.chat.push(Item::Bash {
            command: command.clone(),
            excluded,
            output: String::new(),
            exit: None,
            done: false,
            cancelled: false,
        });
        let (agent, to_terminal, bash, cwd) = (
            self.ctl.agent.clone(),
            self.ctl.to_terminal.clone(),
            self.ctl.bash.clone(),
            self.ctl.cwd.clone(),
        );
        pi_hooks_host::services::runtime::handle().spawn(async move {
            let answer = {
                let (agent, command) = (agent.clone(), command.clone());
                tokio::task::spawn_blocking(move || agent.user_bash(&command, excluded))
                    .await
                    .ok()
                    .flatten()
            };
            let result = match answer {
                Some(answer) if answer.get("result").is_some_and(Value::is_object) => {
                    record(&agent, &command, answer["result"].clone(), excluded).await
                }
                answer => {
                    let answer = answer.unwrap_or_default();
                    let run = BashRun {
                        command: answer["command"].as_str().unwrap_or(&command).to_owned(),
                        cwd: answer["cwd"].as_str().map_or(cwd, PathBuf::from),
                        env: answer["env"]
                            .as_object()
                            .into_iter()
                            .flatten()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect(),
                        exclude_from_context: excluded,
                    };
                    bash.execute(run, agent).await
                }
            };
            let _ = to_terminal.send(Msg::BashDone(at, result));
        });
    }

    /// `/model provider/id` (or an id alone) selects a model of the session; `/model` alone
    /// asks with a select dialog over every model offered.
    fn model(&mut self, wanted: &str) {
        let models = self.ctl.agent.available_models();
        let name = |m: &Value| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap_or_default(),
                m["id"].as_str().unwrap_or_default()
            )
        };
        let (agent, jobs, to_terminal) = (
            self.ctl.agent.clone(),
            self.ctl.jobs.clone(),
            self.ctl.to_terminal.clone(),
        );
        if wanted.is_empty() {
            let options: Vec<String> = models.iter().map(name).collect();
            let (reply, answer) = std::sync::mpsc::channel();
            let request = serde_json::json!({"method": "select", "title": "Select a model", "options": options});
            if let Some(dialog) = Dialog::new(&request, None, reply) {
                self.dialogs.push_back(dialog);
            }
            // The answer comes from this thread's own key handling: wait for it elsewhere.
            pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
                if let Ok(Some(answer)) = answer.recv()
                    && let Some(choice) = answer["value"].as_str()
                {
                    select_model(&agent, &jobs, &to_terminal, choice);
                }
            });
            return;
        }
        let chosen = wanted.to_owned();
        let choice = models
            .iter()
            .map(name)
            .find(|n| *n == chosen || n.rsplit_once('/').is_some_and(|(_, id)| id == chosen))
            .unwrap_or(chosen);
        pi_hooks_host::services::runtime::handle()
            .spawn_blocking(move || select_model(&agent, &jobs, &to_terminal, &choice));
    }

    fn help(&mut self) {
        let mut lines = vec!["Commands:".to_owned()];
        for (name, description) in BUILTINS {
            lines.push(format!("  /{name:<12} {description}"));
        }
        for (name, description, _) in self.ctl.agent.commands() {
            lines.push(format!("  /{name:<12} {description}"));
        }
        lines.push("  !cmd / !!cmd  run a shell command (!!: kept out of the context)".into());
        lines.push(
            "Keys: Enter send (steer a run) · Alt+Enter follow up a run · Shift+Enter or Ctrl+J new line · Tab complete · Up/Down history · \
             PgUp/PgDn scroll · Esc abort · Ctrl+C clear/abort, twice to quit · Ctrl+D quit"
                .into(),
        );
        self.chat.push(Item::Notice(Level::Info, lines.join("\n")));
    }
}

/// Selects `provider/id`: at once when the agent is idle (on its thread, `model_select`
/// follows), else from the run's next model call; and says so.
fn select_model(agent: &AgentHandle, jobs: &Sender<Job>, to_terminal: &Sender<Msg>, choice: &str) {
    let (provider, id) = choice.split_once('/').unwrap_or(("", choice));
    let say = |to_terminal: &Sender<Msg>, outcome: Result<Value, String>, id: &str| {
        let notice = match outcome {
            Ok(model) => (
                Level::Info,
                format!("Model: {}", model["id"].as_str().unwrap_or(id)),
            ),
            Err(error) => (Level::Error, error),
        };
        let _ = to_terminal.send(Msg::Notice(notice.0, notice.1));
        let _ = to_terminal.send(Msg::JobDone);
    };
    if agent.is_streaming() {
        return say(to_terminal, agent.request_model(provider, id), id);
    }
    let (provider, id, to) = (provider.to_owned(), id.to_owned(), to_terminal.clone());
    let job: Job = Box::new(move |agent| say(&to, agent.set_model(&provider, &id), &id));
    if jobs.send(job).is_err() {
        say(to_terminal, Err("the agent has stopped".into()), "");
    }
}
