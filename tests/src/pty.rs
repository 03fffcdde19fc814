//! The real `pi-hooks` binary in a pseudo-terminal, for the interactive mode's tests and
//! benchmarks: what it writes is fed to a [`vt100::Parser`] on a thread of its own, so a test
//! sends keys, waits until the screen shows something (with the screen in the panic message
//! when it never does), resizes the terminal, and after the exit checks that the terminal
//! was given back as it was found (cooked mode, the main screen, a visible cursor,
//! bracketed paste off).

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, ExitStatus, MasterPty, PtySize, native_pty_system};

use crate::{Sandbox, pi_hooks_bin};

/// The default wait of [`Pty::wait_for`] callers: generous, for a loaded 2-core machine.
pub const WAIT: Duration = Duration::from_secs(20);

/// Keys as a terminal sends them.
pub mod keys {
    /// Enter.
    pub const ENTER: &str = "\r";
    /// Alt+Enter (Escape, then Enter).
    pub const ALT_ENTER: &str = "\u{1b}\r";
    /// Tab.
    pub const TAB: &str = "\t";
    /// Escape.
    pub const ESC: &str = "\u{1b}";
    /// Backspace.
    pub const BACKSPACE: &str = "\u{7f}";
    /// Arrow up.
    pub const UP: &str = "\u{1b}[A";
    /// Arrow down.
    pub const DOWN: &str = "\u{1b}[B";
    /// Ctrl+C.
    pub const CTRL_C: &str = "\u{3}";
    /// Ctrl+D.
    pub const CTRL_D: &str = "\u{4}";
    /// Ctrl+S.
    pub const CTRL_S: &str = "\u{13}";
    /// Ctrl+U.
    pub const CTRL_U: &str = "\u{15}";
}

/// What the reader thread keeps.
struct State {
    parser: vt100::Parser<Recorder>,
    /// Every byte read so far, in order.
    bytes: Vec<u8>,
    /// The reader ended (every slave descriptor closed, or an error).
    ended: bool,
}

/// Keeps what the screen parser does not: the window title, and xterm's title stack
/// (CSI 22 t saves the title, CSI 23 t takes it back).
#[derive(Default)]
struct Recorder {
    title: Option<String>,
    saved: Vec<Option<String>>,
}

impl vt100::Callbacks for Recorder {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.title = Some(String::from_utf8_lossy(title).into_owned());
    }

    fn unhandled_csi(
        &mut self,
        _: &mut vt100::Screen,
        _: Option<u8>,
        _: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        match (c, params.first().and_then(|p| p.first())) {
            ('t', Some(22)) => self.saved.push(self.title.clone()),
            ('t', Some(23)) => {
                if let Some(title) = self.saved.pop() {
                    self.title = title;
                }
            }
            _ => {}
        }
    }
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// A `pi-hooks` process in a pseudo-terminal.
pub struct Pty {
    child: Box<dyn Child + Send + Sync>,
    /// `None` once hung up.
    master: Option<Box<dyn MasterPty + Send>>,
    writer: Option<Box<dyn Write + Send>>,
    shared: Shared,
    reader: Option<JoinHandle<()>>,
    /// Tells the reader to stop (it checks between polls).
    stop: Arc<AtomicBool>,
    status: Option<ExitStatus>,
}

/// A descriptor of its own for the terminal's master side (the reader's).
fn master_copy(master: &dyn MasterPty) -> OwnedFd {
    let fd = master.as_raw_fd().expect("the pty master's descriptor");
    // SAFETY: `fd` is the master's open descriptor, borrowed only to duplicate it here.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    rustix::io::fcntl_dupfd_cloexec(fd, 0).expect("duplicate the pty master")
}

/// Reads the terminal into `shared` until its end, an error, or `stop` (checked every
/// 50 ms while nothing arrives).
fn spawn_reader(fd: OwnedFd, shared: Shared, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 50_000_000,
    };
    std::thread::Builder::new()
        .name("pty-reader".into())
        .spawn(move || {
            let mut file = std::fs::File::from(fd);
            let mut buffer = [0u8; 8192];
            while !stop.load(Ordering::Acquire) {
                let mut fds = [PollFd::new(&file, PollFlags::IN)];
                match poll(&mut fds, Some(&tick)) {
                    Ok(0) => continue,
                    Err(e) if e == rustix::io::Errno::INTR => continue,
                    _ => {}
                }
                let read = file.read(&mut buffer);
                let (state, changed) = &*shared;
                let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        state.parser.process(&buffer[..n]);
                        state.bytes.extend_from_slice(&buffer[..n]);
                        changed.notify_all();
                    }
                }
            }
            let (state, changed) = &*shared;
            state.lock().unwrap_or_else(|e| e.into_inner()).ended = true;
            changed.notify_all();
        })
        .expect("start the pty reader")
}

/// A `pi-hooks` command line in `sandbox`: its home, agent directory and project as cwd,
/// `TERM=xterm-256color`, the cache and log variables of the outer environment removed.
pub fn sandbox_command(sandbox: &Sandbox, args: &[&str]) -> CommandBuilder {
    command_for(&pi_hooks_bin(), sandbox, args)
}

/// As [`sandbox_command`] for another build of the binary (a benchmark's release build).
pub fn command_for(binary: &Path, sandbox: &Sandbox, args: &[&str]) -> CommandBuilder {
    let mut command = CommandBuilder::new(binary);
    command.args(args);
    command.cwd(sandbox.project());
    command.env("HOME", sandbox.home());
    command.env("PI_CODING_AGENT_DIR", sandbox.agent_dir());
    command.env("TERM", "xterm-256color");
    command.env_remove("PI_HOOKS_CACHE_DIR");
    command.env_remove("PI_HOOKS_LOG");
    command.env_remove("PI_HOOKS_TRACE");
    command.env_remove("PI_HOOKS_TRACE_FILE");
    command
}

/// The pseudo-terminal's size.
fn size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

impl Pty {
    /// `pi-hooks args…` in `sandbox`, in a terminal of `rows` × `cols`.
    pub fn start(sandbox: &Sandbox, args: &[&str], rows: u16, cols: u16) -> Pty {
        Pty::spawn(sandbox_command(sandbox, args), rows, cols)
    }

    /// Runs `command` in a fresh pseudo-terminal of `rows` × `cols`.
    pub fn spawn(command: CommandBuilder, rows: u16, cols: u16) -> Pty {
        let pair = native_pty_system()
            .openpty(size(rows, cols))
            .expect("open a pseudo-terminal");
        let child = pair
            .slave
            .spawn_command(command)
            .expect("start pi-hooks in the pseudo-terminal");
        // Only the child holds the terminal's other end: the reader sees its end when the
        // child (and whatever it started there) is gone.
        drop(pair.slave);
        let writer = pair.master.take_writer().expect("the pty's writer");
        let shared: Shared = Arc::new((
            Mutex::new(State {
                parser: vt100::Parser::new_with_callbacks(rows, cols, 0, Recorder::default()),
                bytes: Vec::new(),
                ended: false,
            }),
            Condvar::new(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = spawn_reader(
            master_copy(&*pair.master),
            Arc::clone(&shared),
            Arc::clone(&stop),
        );
        Pty {
            child,
            master: Some(pair.master),
            writer: Some(writer),
            shared,
            reader: Some(reader),
            stop,
            status: None,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("the child's pid")
    }

    /// Writes `bytes` to the terminal (what the person types).
    pub fn send(&mut self, bytes: &[u8]) {
        let writer = self.writer.as_mut().expect("the terminal was hung up");
        writer.write_all(bytes).expect("write to the pty");
        writer.flush().expect("flush the pty");
    }

    /// Types `text` (as one write: a paste-speed typist).
    pub fn type_text(&mut self, text: &str) {
        self.send(text.as_bytes());
    }

    /// Types `text` one key at a time, each after the screen showed the one before (a
    /// person typing); `shown(screen, typed_so_far)` tells when a key is shown.
    pub fn type_slowly(&mut self, text: &str, shown: impl Fn(&str, &str) -> bool) {
        let mut typed = String::new();
        for c in text.chars() {
            typed.push(c);
            self.type_text(c.encode_utf8(&mut [0; 4]));
            self.wait_for(&format!("{typed:?} typed"), WAIT, |screen| {
                shown(screen, &typed)
            });
        }
    }

    /// The screen, one line per row (trailing spaces trimmed).
    pub fn screen_text(&self) -> String {
        screen_rows(self.state().parser.screen()).join("\n")
    }

    /// The screen's rows (trailing spaces trimmed).
    pub fn rows(&self) -> Vec<String> {
        screen_rows(self.state().parser.screen())
    }

    /// The screen's text with wrapped rows joined (a long line reads as one).
    pub fn contents(&self) -> String {
        self.state().parser.screen().contents()
    }

    /// The window title: the one the program last set (OSC 0 or 2), or the one it took back
    /// from the title stack (`None`: never set).
    pub fn title(&self) -> Option<String> {
        self.state().parser.callbacks().title.clone()
    }

    /// Everything the program wrote so far, as it wrote it.
    pub fn output(&self) -> Vec<u8> {
        self.state().bytes.clone()
    }

    /// Runs `check` on the screen (under the reader's lock: keep it short).
    pub fn with_screen<T>(&self, check: impl FnOnce(&vt100::Screen) -> T) -> T {
        check(self.state().parser.screen())
    }

    /// Waits until `ready` holds for the screen (its rows joined with `\n`), checking after
    /// every write of the program; panics with `what` and the screen after `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, ready: impl Fn(&str) -> bool) {
        self.wait_for_screen(what, timeout, |screen| {
            ready(&screen_rows(screen).join("\n"))
        });
    }

    /// As [`Pty::wait_for`], with the parsed screen (cursor, modes, cells).
    pub fn wait_for_screen(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&vt100::Screen) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        let (_, changed) = &*self.shared;
        let mut state = self.state();
        loop {
            if ready(state.parser.screen()) {
                return;
            }
            let now = Instant::now();
            if now >= deadline || state.ended {
                let screen = screen_rows(state.parser.screen()).join("\n");
                drop(state);
                panic!(
                    "waited {timeout:?} for {what}{}; the screen:\n{}\n{}",
                    if now < deadline {
                        " (the program closed the terminal)"
                    } else {
                        ""
                    },
                    "-".repeat(40),
                    screen
                );
            }
            state = changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits until the screen shows `text` anywhere.
    pub fn wait_for_text(&self, text: &str) {
        self.wait_for(&format!("{text:?} on the screen"), WAIT, |screen| {
            screen.contains(text)
        });
    }

    /// The row the first line showing `text` is on.
    pub fn row_of(&self, text: &str) -> Option<usize> {
        self.rows().iter().position(|row| row.contains(text))
    }

    /// Resizes the terminal (the program gets SIGWINCH) and the screen parser with it.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let mut state = self.state();
        state.parser.screen_mut().set_size(rows, cols);
        drop(state);
        self.master()
            .resize(size(rows, cols))
            .expect("resize the pty");
    }

    fn master(&self) -> &dyn MasterPty {
        self.master.as_deref().expect("the terminal was hung up")
    }

    /// Closes the terminal's master side, as a terminal window closed: the program's
    /// terminal hangs up. The screen keeps what was shown until then.
    pub fn hang_up(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.writer = None;
        self.master = None;
    }

    /// The terminal's local modes as the program left them: `(ICANON, ECHO)`.
    pub fn cooked_flags(&self) -> (bool, bool) {
        use rustix::termios::LocalModes;
        let fd = self
            .master()
            .as_raw_fd()
            .expect("the pty master's descriptor");
        // SAFETY: `fd` is the master's descriptor, open for as long as `self.master` holds
        // it, which outlives this borrow (`&self`).
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let termios = rustix::termios::tcgetattr(fd).expect("read the pty's termios");
        (
            termios.local_modes.contains(LocalModes::ICANON),
            termios.local_modes.contains(LocalModes::ECHO),
        )
    }

    /// Whether the process still runs.
    pub fn running(&mut self) -> bool {
        self.status.is_none()
            && self
                .child
                .try_wait()
                .expect("poll the child")
                .map(|status| self.status = Some(status))
                .is_none()
    }

    /// Waits for the process to end (panics with the screen after `timeout`, the process
    /// killed), then for the reader to take in everything it wrote; returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        while self.running() {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "pi-hooks did not exit within {timeout:?}; the screen:\n{}",
                    self.screen_text()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // The reader ends once every holder of the terminal's other end is gone; a process
        // the program started and left behind would keep it open: then give up after a while.
        let (_, changed) = &*self.shared;
        let state = self.state();
        let (state, _) = changed
            .wait_timeout_while(state, Duration::from_secs(5), |s| !s.ended)
            .unwrap_or_else(|e| e.into_inner());
        let ended = state.ended;
        drop(state);
        if ended && let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        self.status.clone().expect("the exit status")
    }

    /// Asserts that the terminal is as the program found it: cooked mode (ICANON and
    /// ECHO), the main screen, the cursor shown, bracketed paste off.
    pub fn assert_terminal_restored(&self) {
        let (canonical, echo) = self.cooked_flags();
        let (alternate, hidden, paste) =
            self.with_screen(|s| (s.alternate_screen(), s.hide_cursor(), s.bracketed_paste()));
        let screen = self.screen_text();
        assert!(
            canonical && echo,
            "raw mode left on (ICANON {canonical}, ECHO {echo}); the screen:\n{screen}"
        );
        assert!(
            !alternate,
            "the alternate screen is still on; the screen:\n{screen}"
        );
        assert!(!hidden, "the cursor is still hidden; the screen:\n{screen}");
        assert!(!paste, "bracketed paste is still on; the screen:\n{screen}");
    }

    /// Asserts that the program has the terminal in its own state: raw mode, the alternate
    /// screen, bracketed paste on (so [`Pty::assert_terminal_restored`] can tell a difference).
    pub fn assert_terminal_taken(&self) {
        let (canonical, echo) = self.cooked_flags();
        let (alternate, paste) = self.with_screen(|s| (s.alternate_screen(), s.bracketed_paste()));
        assert!(!canonical && !echo, "the terminal is not in raw mode");
        assert!(alternate, "the alternate screen is off");
        assert!(paste, "bracketed paste is off");
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if self.status.is_none() && self.running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        self.stop.store(true, Ordering::Release);
    }
}

/// The screen's rows, trailing spaces trimmed.
pub fn screen_rows(screen: &vt100::Screen) -> Vec<String> {
    let (_, cols) = screen.size();
    screen
        .rows(0, cols)
        .map(|row| row.trim_end().to_owned())
        .collect()
}
