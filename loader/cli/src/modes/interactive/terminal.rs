//! The terminal while the interactive mode owns it: raw mode, the alternate screen and
//! bracketed paste on entry, all undone on every way out (a normal quit, a signal, and a
//! panic on the terminal's thread, through a panic hook). The terminal's title is saved on
//! its title stack on entry and taken back on exit (xterm's window operations 22 and 23;
//! terminals without a stack ignore them), so a title a plugin set does not outlive the
//! session. Stderr is redirected into a pipe the mode shows as conversation lines, so
//! nothing a plugin or the host writes there tears the screen; it is put back before
//! anything else is printed on exit.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

use ratatui::crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};

use super::Msg;

/// Whether the terminal is in the mode's state (restoring twice does nothing).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The real stderr while it is redirected.
static SAVED_STDERR: Mutex<Option<OwnedFd>> = Mutex::new(None);
/// Saves the window title on the terminal's title stack (xterm: CSI 22 ; 0 t).
const PUSH_TITLE: &[u8] = b"\x1b[22;0t";
/// Takes the saved window title back (xterm: CSI 23 ; 0 t).
const POP_TITLE: &[u8] = b"\x1b[23;0t";

/// The thread that draws: a panic there restores the terminal before it is reported.
static UI_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// The terminal in the mode's state; dropping it restores everything.
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Enters raw mode and the alternate screen, turns bracketed paste on, installs the
    /// panic hook, and sends stderr's lines to `to_terminal` as [`Msg::Stderr`].
    pub fn enter(to_terminal: Sender<Msg>) -> std::io::Result<Self> {
        let _ = UI_THREAD.set(std::thread::current().id());
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(true, Ordering::Release);
        let guard = TerminalGuard(());
        let mut out = std::io::stdout();
        out.write_all(PUSH_TITLE)?;
        execute!(
            out,
            EnterAlternateScreen,
            EnableBracketedPaste,
            cursor::Show
        )?;
        capture_stderr(to_terminal)?;
        Ok(guard)
    }

    /// Sets the terminal's title (OSC 0), without control characters and without the
    /// bidirectional and invisible format characters (U+202E ...) that the rest of the
    /// screen drops too.
    pub fn set_title(title: &str) {
        let title = pi_hooks_host::guards::display::strip(title).into_owned();
        let _ = execute!(
            std::io::stdout(),
            ratatui::crossterm::terminal::SetTitle(title)
        );
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Puts the terminal and stderr back as they were (once).
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::AcqRel) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = out.write_all(POP_TITLE);
    let _ = out.flush();
    let _ = disable_raw_mode();
    release_stderr();
}

/// Points stderr at the real one again.
fn release_stderr() {
    let saved = SAVED_STDERR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(saved) = saved {
        let _ = rustix::stdio::dup2_stderr(&saved);
    }
}

/// Redirects stderr (fd 2) into a pipe read by a thread that forwards each line.
fn capture_stderr(to_terminal: Sender<Msg>) -> std::io::Result<()> {
    let saved = rustix::io::fcntl_dupfd_cloexec(std::io::stderr().as_fd(), 3)?;
    let (reader, writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    rustix::stdio::dup2_stderr(&writer)?;
    drop(writer);
    *SAVED_STDERR.lock().unwrap_or_else(|e| e.into_inner()) = Some(saved);
    std::thread::Builder::new()
        .name("pi-hooks-stderr".into())
        .spawn(move || {
            let reader = BufReader::new(std::fs::File::from(reader));
            for line in reader.split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line).trim_end().to_owned();
                if to_terminal.send(Msg::Stderr(line)).is_err() {
                    break;
                }
            }
        })?;
    Ok(())
}

/// A panic on the terminal's thread restores the terminal first, so its message is
/// readable and the shell is usable. Panics elsewhere (caught by the host, or ending a
/// helper thread) are reported on stderr, which the mode shows.
fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if UI_THREAD.get() == Some(&std::thread::current().id()) {
            restore();
        }
        previous(info);
    }));
}
