//! When plugin code kills the process or leaves it: say which plugin did it, and end the
//! host the honest way.
//!
//! Every call into plugin code runs inside [`enter`], which records on the calling thread
//! which plugin runs and for what (a [`CallSite`]): a thread-local store before the call, a
//! store and one relaxed atomic load after it, nothing allocated. [`install`] (called once,
//! first thing in `main`, loader/cli/src/main.rs) sets up what reads that record:
//!
//! - **Crashes.** SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT on a thread that is inside
//!   plugin code prints one line to stderr naming the plugin, its path and the event,
//!   command, tool or timer it was running; then the process dies of the same signal. The
//!   line is written with `write(2)` alone (no allocation, no lock), as a signal handler
//!   must. A crash outside plugin code goes to the handler that was installed before (Rust's
//!   stack-overflow report) or to the default action, unchanged.
//! - **`exit()` from plugin code** would end the session with status 0 and a JSON stream cut
//!   mid-turn. An `atexit` handler sees that the exiting thread is inside plugin code, says
//!   so and ends the process with status 70 (`EX_SOFTWARE`). The host's own exit is not
//!   touched.
//! - **`fork()` from plugin code**: a child that returns into the host would run the rest of
//!   the session a second time (the tool twice, two results in the session file). A
//!   `pthread_atfork` child handler marks the child; when the plugin call returns in it, the
//!   child says so and ends with `_exit(70)`. A child that `exec`s never returns here, and the
//!   host's own subprocesses (`std::process::Command`) exec or use `posix_spawn`.
//!
//! An embedder that wants the same calls [`install`] itself; without it [`enter`] only
//! records, at the same cost.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// What plugin code is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// The library's initialisers and its entry function (the plugin's name is not known).
    Load,
    /// The plugin's init.
    Init,
    /// An event handler; the site's name is the event.
    Event,
    /// A slash command; the site's name is the command.
    Command,
    /// A tool's execute; the site's name is the tool.
    Tool,
    /// A timer callback.
    Timer,
    /// A message renderer; the site's name is the `customType`.
    Render,
    /// A keyboard shortcut's handler; the site's name is the key.
    Shortcut,
    /// The plugin's shutdown.
    Shutdown,
    /// A cleanup the plugin registered.
    Cleanup,
}

/// Which plugin runs, and for what. Borrowed text only: building one costs a few stores.
#[derive(Debug, Clone, Copy)]
pub struct CallSite<'a> {
    plugin: &'a str,
    path: &'a str,
    activity: Activity,
    name: &'a str,
}

impl<'a> CallSite<'a> {
    /// Plugin `plugin` (its descriptor name; empty while loading) from `path`, running
    /// `activity` for `name` (the event, command or tool; empty for the others).
    #[inline]
    pub fn new(plugin: &'a str, path: &'a str, activity: Activity, name: &'a str) -> Self {
        CallSite {
            plugin,
            path,
            activity,
            name,
        }
    }
}

thread_local! {
    /// The plugin call running on this thread, or NULL. Const-initialised and without a
    /// destructor, so reading it is a plain thread-local load, also in a signal handler.
    static RUNNING: Cell<*const CallSite<'static>> = const { Cell::new(std::ptr::null()) };
}

/// Set in a child process made by `fork()` (by the `pthread_atfork` child handler).
static FORK_CHILD: AtomicBool = AtomicBool::new(false);

/// The exit status of a process stopped because plugin code escaped into the host.
pub const ESCAPE_STATUS: i32 = 70;

/// Marks plugin code running on this thread until dropped; see [`enter`].
#[must_use = "plugin code is marked only while the guard lives"]
pub struct Running<'a> {
    previous: *const CallSite<'static>,
    site: &'a CallSite<'a>,
}

/// Records that `site`'s plugin code runs on this thread until the returned guard drops.
/// Calls nest (the previous record is restored). When the guard drops in a child process the
/// plugin `fork()`ed, the child stops there.
#[inline]
pub fn enter<'a>(site: &'a CallSite<'a>) -> Running<'a> {
    let previous = RUNNING.replace(std::ptr::from_ref(site).cast());
    Running { previous, site }
}

/// What the plugin call running on this thread is doing, in a few words (`tool_call`,
/// `command /count`, `tool greet`, `timer`, `init`, ...), or `None` outside plugin code. For
/// the hook trace (`crate::observe::trace`): a UI call or an action says what it was made during.
pub(crate) fn running_label() -> Option<String> {
    let site = RUNNING.get();
    if site.is_null() {
        return None;
    }
    // SAFETY: `enter` stored a pointer to a `CallSite` that its guard, alive in a frame of
    // this thread's stack below this call, keeps valid until it drops and clears it; the
    // cell is this thread's own.
    let site = unsafe { &*site };
    let name = site.name;
    Some(match site.activity {
        Activity::Load => "load".to_owned(),
        Activity::Init => "init".to_owned(),
        Activity::Event => name.to_owned(),
        Activity::Command => format!("command /{name}"),
        Activity::Tool => format!("tool {name}"),
        Activity::Timer => "timer".to_owned(),
        Activity::Render => format!("render {name}"),
        Activity::Shortcut => format!("shortcut {name}"),
        Activity::Shutdown => "shutdown".to_owned(),
        Activity::Cleanup => "cleanup".to_owned(),
    })
}

impl Drop for Running<'_> {
    #[inline]
    fn drop(&mut self) {
        RUNNING.set(self.previous);
        if FORK_CHILD.load(Ordering::Relaxed) {
            fork_child_returned(self.site);
        }
    }
}

/// A forked child came back from plugin code into the host: say so and stop it.
#[cold]
#[inline(never)]
fn fork_child_returned(site: &CallSite<'_>) -> ! {
    let mut line = ReportLine::new();
    line.plugin(site);
    line.push(" called fork() ");
    line.activity(site);
    line.push(" and its child process returned into the host; the child was stopped\n");
    line.flush();
    #[cfg(unix)]
    // SAFETY: _exit ends the process at once; nothing of the host may run in this child.
    unsafe {
        libc::_exit(ESCAPE_STATUS)
    }
    #[cfg(not(unix))]
    std::process::exit(ESCAPE_STATUS)
}

/// Installs the crash report, the `exit()` report and the fork-child stop for this process.
/// Idempotent; call it from the thread that will call plugins (its alternate signal stack is
/// set up when Rust did not already). Does nothing on non-Unix systems.
pub fn install() {
    #[cfg(unix)]
    {
        static INSTALLED: std::sync::Once = std::sync::Once::new();
        INSTALLED.call_once(unix::install);
    }
}

/// One line of a report, assembled in a stack buffer and written with `write(2)`: usable
/// in a signal handler (no allocation, no lock).
struct ReportLine {
    buffer: [u8; 512],
    len: usize,
}

impl ReportLine {
    fn new() -> Self {
        ReportLine {
            buffer: [0; 512],
            len: 0,
        }
    }

    fn push(&mut self, text: &str) {
        // ReportLine's write_str never fails.
        let _ = std::fmt::Write::write_str(self, text);
    }

    /// Text a plugin or repository controls, escaped as `crate::guards::display::escape` does.
    fn push_escaped(&mut self, text: &str) {
        let _ = crate::guards::display::write_escaped(text, self);
    }

    /// `pi-hooks: plugin "NAME" (PATH)`, or `pi-hooks: plugin PATH` while loading.
    fn plugin(&mut self, site: &CallSite<'_>) {
        self.push("pi-hooks: plugin ");
        if site.plugin.is_empty() {
            self.push_escaped(site.path);
        } else {
            self.push("\"");
            self.push_escaped(site.plugin);
            self.push("\" (");
            self.push_escaped(site.path);
            self.push(")");
        }
    }

    /// `while handling event tool_call`, `in its init`, ...
    fn activity(&mut self, site: &CallSite<'_>) {
        let (before, after) = match site.activity {
            Activity::Load => (
                "while being loaded (its initialisers or entry function)",
                "",
            ),
            Activity::Init => ("in its init", ""),
            Activity::Event => ("while handling event ", site.name),
            Activity::Command => ("while running command /", site.name),
            Activity::Tool => ("while running tool ", site.name),
            Activity::Timer => ("in a timer callback", ""),
            Activity::Render => ("while rendering a message of type ", site.name),
            Activity::Shortcut => ("while handling shortcut ", site.name),
            Activity::Shutdown => ("in its shutdown", ""),
            Activity::Cleanup => ("in a cleanup it registered", ""),
        };
        self.push(before);
        self.push_escaped(after);
    }

    /// Writes what is buffered to stderr.
    #[cfg(unix)]
    fn flush(&mut self) {
        let mut start = 0;
        while start < self.len {
            let rest = &self.buffer[start..self.len];
            // SAFETY: `rest` is valid for reads of its length; write(2) is async-signal-safe.
            let written = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
            match written {
                n if n > 0 => start += n.unsigned_abs(),
                -1 if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
                }
                // stderr is gone or full: nothing else to tell anyone.
                _ => break,
            }
        }
        self.len = 0;
    }

    /// Writes what is buffered to stderr (no signal handlers here).
    #[cfg(not(unix))]
    fn flush(&mut self) {
        use std::io::Write;
        let _ = std::io::stderr().write_all(&self.buffer[..self.len]);
        self.len = 0;
    }
}

impl std::fmt::Write for ReportLine {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for chunk in text.as_bytes().chunks(self.buffer.len()) {
            if self.len + chunk.len() > self.buffer.len() {
                self.flush();
            }
            self.buffer[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        Ok(())
    }
}

#[cfg(unix)]
mod unix {
    use std::os::raw::{c_int, c_void};
    use std::sync::OnceLock;
    use std::sync::atomic::Ordering;

    use super::{ESCAPE_STATUS, FORK_CHILD, RUNNING, ReportLine};

    /// The signals a crash in plugin code raises, with their names.
    const FATAL: [(c_int, &str); 5] = [
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGABRT, "SIGABRT"),
    ];

    /// The handlers that were installed before ours, in the order of [`FATAL`].
    struct Previous([libc::sigaction; FATAL.len()]);
    // SAFETY: plain data (handler addresses, flags, masks), written once before it is shared.
    unsafe impl Sync for Previous {}
    // SAFETY: as above.
    unsafe impl Send for Previous {}

    static PREVIOUS: OnceLock<Previous> = OnceLock::new();

    pub(super) fn install() {
        ensure_alternate_stack();
        // SAFETY: sigaction with a NULL new action only reads the current one into `old`.
        let previous = FATAL.map(|(signal, _)| unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            old
        });
        if PREVIOUS.set(Previous(previous)).is_err() {
            return;
        }
        for (signal, _) in FATAL {
            // SAFETY: a zeroed sigaction is a valid value to fill in; the handler has the
            // SA_SIGINFO signature and only does async-signal-safe work; SA_ONSTACK lets it
            // run on the alternate stack after a stack overflow.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fatal_signal as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
        // SAFETY: registers a plain function that reads a thread-local and may _exit.
        unsafe { libc::atexit(on_exit) };
        // SAFETY: the child handler only stores to an atomic, which is async-signal-safe as
        // a handler run in the child of a multi-threaded fork must be.
        unsafe { libc::pthread_atfork(None, None, Some(on_fork_child)) };
    }

    /// Gives the calling thread an alternate signal stack unless it has one (Rust's runtime
    /// sets one up for the main thread and its own threads when it installs its
    /// stack-overflow handler). Without one, a stack overflow in plugin code could not be
    /// reported.
    fn ensure_alternate_stack() {
        // SAFETY: a zeroed stack_t is valid to be filled in; sigaltstack with a NULL new
        // stack only reads the current one.
        let current = unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            libc::sigaltstack(std::ptr::null(), &mut current);
            current
        };
        if current.ss_flags & libc::SS_DISABLE == 0 {
            return;
        }
        let size = 64 * 1024;
        // The stack is used for the life of the thread that installs, which is the process.
        let stack: &'static mut [u8] = Vec::leak(vec![0u8; size]);
        let alternate = libc::stack_t {
            ss_sp: stack.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: size,
        };
        // SAFETY: `stack` is valid, writable and never freed.
        unsafe { libc::sigaltstack(&alternate, std::ptr::null_mut()) };
    }

    extern "C" fn on_fork_child() {
        FORK_CHILD.store(true, Ordering::Relaxed);
    }

    /// Runs for every `exit()`: stops the process with [`ESCAPE_STATUS`] when the exiting
    /// thread is inside plugin code. A child the plugin forked may end with `exit()` as it
    /// likes: it is not the host.
    extern "C" fn on_exit() {
        let site = RUNNING.get();
        if site.is_null() || FORK_CHILD.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: a non-NULL record was set by `enter` on this thread, and its guard (with the
        // site it borrows) lives in a frame below this one: exit() was called inside the call.
        let site = unsafe { &*site };
        let mut line = ReportLine::new();
        line.plugin(site);
        line.push(" called exit() ");
        line.activity(site);
        line.push("; the session was cut short\n");
        line.flush();
        // SAFETY: ends the process now; the host's state is not to be trusted mid-call.
        unsafe { libc::_exit(ESCAPE_STATUS) }
    }

    /// The handler of every signal in [`FATAL`]. Only async-signal-safe calls: a
    /// thread-local load, write(2), sigaction and raise.
    extern "C" fn on_fatal_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        let site = RUNNING.get();
        if site.is_null() {
            chain(signal, info, context);
            return;
        }
        // SAFETY: as in `on_exit`: the crash happened inside the call the record names.
        let site = unsafe { &*site };
        let name = FATAL
            .iter()
            .find(|(s, _)| *s == signal)
            .map_or("a fatal signal", |(_, name)| name);
        let mut line = ReportLine::new();
        line.plugin(site);
        line.push(" crashed with ");
        line.push(name);
        line.push(" ");
        line.activity(site);
        line.push(if FORK_CHILD.load(Ordering::Relaxed) {
            " in a child process it forked; that child stops\n"
        } else {
            "; the host stops\n"
        });
        line.flush();
        die_of(signal);
    }

    /// Hands a crash outside plugin code to the handler installed before ours, or dies of it
    /// the default way when there was none.
    fn chain(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
        let previous = PREVIOUS
            .get()
            .and_then(|p| FATAL.iter().position(|(s, _)| *s == signal).map(|i| p.0[i]));
        let Some(previous) = previous else {
            die_of(signal);
            return;
        };
        let handler = previous.sa_sigaction;
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            die_of(signal);
            return;
        }
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous owner installed this address with SA_SIGINFO, so it has
            // this signature; it gets the arguments the kernel gave us.
            let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(signal, info, context);
        } else {
            // SAFETY: installed without SA_SIGINFO: the one-argument signature.
            let handler: extern "C" fn(c_int) = unsafe { std::mem::transmute(handler) };
            handler(signal);
        }
    }

    /// Restores the default action and raises `signal` again: it is delivered when the
    /// handler returns (it is blocked until then), and the process dies of it, as it would
    /// have without us (a core dump where the system keeps them).
    fn die_of(signal: c_int) {
        // SAFETY: a zeroed sigaction with SIG_DFL is the default action; sigaction and raise
        // are async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
            libc::raise(signal);
        }
    }
}
