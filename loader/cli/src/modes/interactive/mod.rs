//! Interactive mode (`pi-hooks`, `pi-hooks chat`): the session in a terminal UI of its own,
//! drawing everything a plugin can put on screen as pi's terminal does: streamed text,
//! thinking and tool runs, custom messages through their plugin's renderer, statuses in the
//! footer, widgets above and below the editor, dialogs (with their countdowns),
//! notifications, the title and the working message; slash commands with completion,
//! `!` commands (the `user_bash` event), `/reload` and `--watch` reload lines.
//!
//! Threads: this one owns the terminal and the state ([`app::App`]) and draws after each
//! batch of messages ([`Msg`]); one reads the terminal's keys; the agent runs prompts on a
//! thread of its own (as in RPC mode), so a run never blocks typing; plugin calls the
//! terminal needs (completions, renderers, `user_bash`) run on blocking threads.

pub mod app;
pub mod builtin_keys;
pub mod chat;
pub mod complete;
pub mod editor;
pub mod keys;
pub mod terminal;
pub mod ui;
pub mod view;

use std::sync::Arc;
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use serde_json::Value;

use super::core::{self, CoreSetup};
use app::{App, Ctl, Footer, Job};
use chat::{Item, Level};
use pi_hooks_agent::EventSink;
use terminal::TerminalGuard;
use ui::{Dialog, TuiUi};

/// What reaches the terminal's thread.
pub enum Msg {
    /// A key, a paste or a resize.
    Term(ratatui::crossterm::event::Event),
    /// A session event (`message_update`, `tool_execution_end`, …).
    Agent(Value),
    /// A plugin's fire-and-forget UI request (`notify`, `setStatus`, `setWidget`, …).
    Fire(Value),
    /// A plugin's dialog.
    Dialog(Box<Dialog>),
    /// `/reload`: statuses, widgets, the working message and the title are cleared.
    ResetUi,
    /// A plugin's working message (`None`: the default).
    Working(Option<String>),
    /// A line written to stderr.
    Stderr(String),
    /// The agent's thread finished a prompt or command.
    JobDone,
    /// A message typed during a run was queued (`steer` or `followUp`): a run still going
    /// takes it; one that ended first did not, and it then starts a run of its own.
    Queued(&'static str),
    /// A line of the host's own.
    Notice(Level, String),
    /// The session's messages, to show from scratch (after `/new`, `/compact`).
    Messages(Vec<Value>),
    /// A plugin command forked the session: its messages, and the text of the user message
    /// forked off (for the editor).
    Forked(Vec<Value>, String),
    /// A plugin renderer's lines for the custom message at an index (of a chat epoch).
    Rendered(u64, usize, Option<Vec<String>>),
    /// A command's argument completions (for a request number).
    Completions(u64, Vec<Value>),
    /// A `!` command ended: its `BashResult` or why it could not run.
    BashDone(usize, Result<Value, String>),
    /// The mode ends (a plugin's `shutdown`, or the agent stopped).
    Quit,
    /// SIGTERM, SIGHUP or SIGINT arrived.
    Signal(i32),
}

/// The working directory as pi's footer shows it (`~` for the home folder).
fn footer_cwd(cwd: &std::path::Path) -> String {
    let text = cwd.to_string_lossy().into_owned();
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && text.starts_with(&home) => {
            format!("~{}", &text[home.len()..])
        }
        _ => text,
    }
}

/// Runs the interactive session until the person quits; `prompts` are sent first, one
/// after another. Returns the exit code (0, or 128 + the signal that ended it).
pub fn run(setup: CoreSetup, load_lines: Vec<String>, prompts: Vec<String>) -> i32 {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "pi-hooks: the interactive mode needs a terminal on stdin and stdout; \
             use `pi-hooks run` (print or JSON mode) or `pi-hooks rpc` from a program"
        );
        return 2;
    }
    let (to_terminal, from_all) = channel::<Msg>();
    let cwd = setup.cwd.clone();
    let sink: EventSink = {
        let to_terminal = Mutex::new(to_terminal.clone());
        Box::new(move |event: &Value| {
            let sender = to_terminal
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let _ = sender.send(Msg::Agent(event.clone()));
        })
    };
    let guard = match TerminalGuard::enter(to_terminal.clone()) {
        Ok(guard) => guard,
        Err(error) => {
            terminal::restore();
            eprintln!("pi-hooks: cannot set the terminal up: {error}");
            return 1;
        }
    };
    let mut agent = core::build(setup, None, sink);
    let handle = agent.handle();
    let ui = TuiUi::new(to_terminal.clone());
    handle.bind_ui(ui.clone());
    let (jobs, queue) = channel::<Job>();
    let waker = Mutex::new(jobs.clone());
    handle.set_waker(Arc::new(move || {
        let sender = waker.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = sender.send(Box::new(|agent: &mut pi_hooks_agent::Agent| {
            agent.run_queued()
        }));
    }));
    let agent_thread = {
        let to_terminal = to_terminal.clone();
        std::thread::Builder::new()
            .name("pi-hooks-agent".into())
            .spawn(move || {
                agent.start();
                let handle = agent.handle();
                for job in queue {
                    job(&mut agent);
                    if handle.shutdown_requested() {
                        break;
                    }
                }
                // A plugin's `shutdown`, or the terminal is gone: the terminal ends too.
                let _ = to_terminal.send(Msg::Quit);
                core::shutdown(&mut agent);
            })
    };
    let agent_thread = match agent_thread {
        Ok(thread) => thread,
        Err(error) => {
            drop(guard);
            eprintln!("pi-hooks: cannot start the agent thread: {error}");
            return 1;
        }
    };
    spawn_key_reader(to_terminal.clone());
    spawn_signal_watch(to_terminal.clone());
    spawn_hangup_watch(to_terminal.clone());

    let footer = Footer {
        cwd: footer_cwd(&cwd),
        ..Footer::default()
    };
    let ctl = Ctl {
        agent: handle.clone(),
        jobs,
        to_terminal,
        ui: ui.clone(),
        cwd,
        bash: Arc::default(),
    };
    let mut app = App::new(ctl, footer);
    app.load_messages(&handle.messages());
    app.chat.push(Item::Log(
        Level::Info,
        "Type a prompt and press Enter. /help lists the commands and keys; Ctrl+D on an empty editor quits.".to_owned(),
    ));
    for line in load_lines {
        let level = if line.starts_with("Warning") {
            Level::Warning
        } else {
            Level::Error
        };
        app.chat.push(Item::Log(level, line));
    }
    app.refresh_footer();
    app.refresh_shortcuts(true);
    for prompt in prompts {
        app.queue_prompt(prompt);
    }
    let signal = event_loop(&mut app, &from_all);

    // Leave the screen first: what the shutdown prints goes to the real stderr.
    drop(guard);
    let bash = app.ctl.bash.clone();
    handle.abort();
    bash.abort();
    ui.close();
    // Messages not taken yet go, among them dialogs a plugin asked for after the quit:
    // their senders go with them, so the plugins waiting on them get no answer at once
    // instead of waiting for an answer nobody will give. Later requests fail to send.
    drop(from_all);
    handle.clear_waker();
    // Dropping the app answers its waiting dialogs (their senders go) and ends the agent
    // thread's queue, which then sends `session_shutdown` to the plugins.
    drop(app);
    if agent_thread.join().is_err() {
        say("pi-hooks: the agent thread panicked");
        return 1;
    }
    if let (Some(file), _, _) = handle.session_info() {
        say(&format!(
            "pi-hooks: session saved in {} (continue it with `pi-hooks chat --continue`)",
            pi_hooks_host::guards::display::escape(&file)
        ));
    }
    signal.map_or(0, |s| 128 + s)
}

/// Writes a line to stderr, ignoring a failure: after a hang-up the terminal is gone and
/// `eprintln!` would panic.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

use std::sync::Mutex;

/// Draws, waits for messages, handles every message waiting, draws again; until the app
/// quits. Returns the signal that ended it, if one did.
fn event_loop(app: &mut App, messages: &std::sync::mpsc::Receiver<Msg>) -> Option<i32> {
    let mut terminal = match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
        Ok(terminal) => terminal,
        Err(error) => {
            app.quit = true;
            eprintln!("pi-hooks: cannot draw on the terminal: {error}");
            return None;
        }
    };
    let mut signal = None;
    loop {
        if app.title_dirty {
            app.title_dirty = false;
            TerminalGuard::set_title(app.title.as_deref().unwrap_or("pi-hooks"));
        }
        let now = Instant::now();
        if terminal.draw(|frame| view::draw(frame, app, now)).is_err() {
            // The terminal cannot be written any more: it hung up (the hang-up watch may
            // not have said so yet). The mode ends as on SIGHUP.
            return signal.or(Some(libc::SIGHUP));
        }
        if app.quit {
            break;
        }
        let first = match app.next_tick() {
            Some(wait) => messages.recv_timeout(wait),
            None => messages.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match first {
            Ok(msg) => {
                if let Msg::Signal(number) = msg {
                    signal = Some(number);
                }
                app.handle(msg);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        while !app.quit
            && let Ok(msg) = messages.try_recv()
        {
            if let Msg::Signal(number) = msg {
                signal = Some(number);
            }
            app.handle(msg);
        }
        app.tick(Instant::now());
    }
    signal
}

/// Reads the terminal's events on a thread of their own. A terminal that cannot be read
/// any more is gone: the mode ends as on a hang-up.
fn spawn_key_reader(to_terminal: Sender<Msg>) {
    let _ = std::thread::Builder::new()
        .name("pi-hooks-keys".into())
        .spawn(move || {
            loop {
                match ratatui::crossterm::event::read() {
                    Ok(event) => {
                        if to_terminal.send(Msg::Term(event)).is_err() {
                            break;
                        }
                    }
                    Err(_) => {
                        let _ = to_terminal.send(Msg::Signal(libc::SIGHUP));
                        break;
                    }
                }
            }
        });
}

/// Ends the mode when the terminal hangs up (its window closed, the connection gone) even
/// when no SIGHUP comes (a parent that ignores it and does not pass it on, as `nohup` or a
/// shell's `trap "" HUP`): crossterm's reader never returns on a hung-up terminal (it reads
/// end-of-file again and again), so the terminal is watched for the hang-up itself.
fn spawn_hangup_watch(to_terminal: Sender<Msg>) {
    #[cfg(unix)]
    {
        let _ = std::thread::Builder::new()
            .name("pi-hooks-hangup".into())
            .spawn(move || {
                use rustix::event::{PollFd, PollFlags, poll};
                let stdin = std::io::stdin();
                loop {
                    // No events asked for: only a hang-up or an error is reported.
                    let mut fds = [PollFd::new(&stdin, PollFlags::empty())];
                    match poll(&mut fds, None) {
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(_) => break,
                        Ok(_) => {
                            let gone = PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL;
                            if fds[0].revents().intersects(gone) {
                                let _ = to_terminal.send(Msg::Signal(libc::SIGHUP));
                                break;
                            }
                        }
                    }
                }
            });
    }
    #[cfg(not(unix))]
    drop(to_terminal);
}

/// Turns SIGTERM, SIGHUP and SIGINT into [`Msg::Signal`]: the mode then ends as on a quit
/// (terminal restored, `session_shutdown`), exiting with 128 + the signal.
fn spawn_signal_watch(to_terminal: Sender<Msg>) {
    #[cfg(unix)]
    pi_hooks_host::services::runtime::handle().spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hangup), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        let number = tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = hangup.recv() => libc::SIGHUP,
            _ = interrupt.recv() => libc::SIGINT,
        };
        let _ = to_terminal.send(Msg::Signal(number));
    });
    #[cfg(not(unix))]
    drop(to_terminal);
}
