//! The `pi-hooks serve` child of one isolated plugin: starting it and reading its `hello`,
//! the line client (one request at a time; the child's interleaved `request`,
//! `notification`, `tool_update` and `extension_error` lines are handed to the caller, who
//! answers the requests), telling a crash (the exit status, the signal) or a hang (no answer
//! within the limit) from an answer, and ending the child.
//!
//! Threads: one reads the child's protocol pipe (fd 3) into an `Inbox` (lines parsed as
//! JSON), one forwards its stderr to ours. With the pipe transport the caller of
//! [`ServeChild::call`] takes the lines from the inbox on its own thread; with the ring
//! transport (`super::transport`, the default on Linux) it reads the frames from the ring
//! itself, and the pipe brings only the `hello`, the child's doorbells and its end. Either
//! way a request the child makes while it handles a call is answered with the context of
//! that call. Messages that arrive while nobody is reading (a timer of the plugin asking for
//! something) wake the inbox's waker, which the proxy turns into a 0 ms timer of its own
//! ([`ServeChild::drain`] then answers them with the timer's context).
//!
//! The child is not trusted (it runs the plugin, which can write anything to its
//! descriptors and its shared memory). Its stdout and stderr (fd 1 points at fd 2) reach
//! the host's stderr only escaped (`crate::guards::display::escape`), each line marked with
//! the plugin, at most `STDERR_BYTES_PER_SECOND`. A child that breaks the protocol is
//! killed, and its end is [`Ended::Broke`] with what it did, which the proxy reports like a
//! crash (the child restarted after its backoff): a message that is not a JSON object or is
//! of no kind the protocol has ([`check_kind`]), a line longer than `MAX_LINE_BYTES` on the
//! protocol pipe, more than `MAX_PENDING_BYTES` of lines waiting while nobody reads (pipe
//! transport), anything but doorbells there after the `hello` with the ring transport, a
//! garbled ring (`super::transport::ring`), or a `denied` notification the host cannot
//! vouch for (`crate::sandbox::report::vouch`: one naming another plugin or grant, too long,
//! from a child that is not confined). The refusals it reports are shown with the host's
//! words for plugin and grant, at most `crate::sandbox::report::REPORT_BYTES_PER_SECOND`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::transport::host::{HostRing, RingError};
use super::transport::{self, Transport};
use crate::guards::display::escape;

/// The longest line read from a child (as the serve protocol's own limit): a longer one is
/// discarded, so output a plugin writes to stdout without a line feed cannot exhaust memory.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The most of a child's stderr (where its plugin's stdout goes too) passed on to the host's
/// stderr per second: a chatty plugin cannot flood the terminal or a log. The rest of that
/// second is dropped, said once when it starts and counted when it ends.
const STDERR_BYTES_PER_SECOND: usize = 64 * 1024;

/// The descriptor a child writes its protocol lines to (`serve --protocol-fd`): not fd 1,
/// which a plugin may write to.
const PROTOCOL_FD: i32 = 3;

/// The descriptor a child maps its rings from (`serve --ring-fd`), with the ring transport.
const RING_FD: i32 = 4;

/// How long a child gets to exit after its stdin closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How long the host waits to hand the child an answer to its request while the ring is full
/// outside a timed call (the child reads its answers as they come; one that does not is
/// stuck, and its next call finds out).
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// The most bytes of the child's lines (pipe transport) kept while nobody takes them: a
/// child sending more breaks the protocol (the host's memory is not the child's to fill).
const MAX_PENDING_BYTES: usize = 64 << 20;

/// The longest one [`ServeChild::drain`] goes on answering what the child sent unprompted.
const DRAIN_BUDGET: Duration = Duration::from_millis(50);

/// What starts a child: `<program> serve --no-hooks -e <plugin> --cwd <cwd>`.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `pi-hooks` binary.
    pub program: PathBuf,
    /// The plugin file, as discovered.
    pub plugin: PathBuf,
    /// The SHA-256 of the bytes the host checked: the child loads the file only if it still
    /// has them.
    pub sha256: String,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The grant the child confines itself to before it loads the plugin
    /// (`crate::sandbox`), if the plugin has one.
    pub sandbox: Option<crate::sandbox::Grant>,
    /// Who the plugin is (`crate::plugin::own::tagged`), so that it answers `identity` as it
    /// would in process (`serve --identity`); `None`: the library it is loaded from.
    pub identity: Option<String>,
    /// Its own folder (`serve --data-dir`): `${data}` of its grant, or the one it would
    /// have in process.
    pub data_dir: Option<PathBuf>,
}

impl Launch {
    fn args(&self, transport: Transport) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "serve".into(),
            "--no-hooks".into(),
            "--pin-sha256".into(),
            self.sha256.clone().into(),
            "-e".into(),
            self.plugin.clone().into_os_string(),
            "--cwd".into(),
            self.cwd.clone().into_os_string(),
            "--protocol-fd".into(),
            PROTOCOL_FD.to_string().into(),
        ];
        if transport == Transport::Ring {
            args.extend(["--ring-fd".into(), RING_FD.to_string().into()]);
        }
        if let Some(identity) = &self.identity {
            args.extend(["--identity".into(), identity.into()]);
        }
        if let Some(dir) = &self.data_dir {
            args.extend(["--data-dir".into(), dir.clone().into_os_string()]);
        }
        if let Some(grant) = &self.sandbox {
            let json = serde_json::to_string(grant).unwrap_or_default();
            args.extend(["--sandbox".into(), json.into()]);
        }
        args
    }
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// The host killed it because it broke the serve protocol (the words say how, the
    /// child's own text escaped and cut).
    Broke(String),
}

impl Ended {
    fn from_status(status: std::process::ExitStatus) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                return Ended::Signaled(signal);
            }
        }
        Ended::Exited(status.code().unwrap_or(-1))
    }

    /// `crashed (SIGSEGV)` or `exited (status 1)`.
    pub fn describe(&self) -> String {
        match self {
            #[cfg(unix)]
            Ended::Signaled(signal) if *signal == libc::SIGSYS => {
                "was stopped by its sandbox (SIGSYS: a system call its grant forbids, made where the sandbox could not refuse it)".to_owned()
            }
            Ended::Signaled(signal) => format!("crashed ({})", signal_name(*signal)),
            Ended::Exited(code) => format!("exited (status {code})"),
            Ended::Broke(why) => format!("broke the serve protocol ({why}) and was killed"),
        }
    }
}

/// A signal's name (`SIGSEGV`), or `signal N`.
pub fn signal_name(signal: i32) -> String {
    #[cfg(unix)]
    {
        let known = [
            (libc::SIGSEGV, "SIGSEGV"),
            (libc::SIGABRT, "SIGABRT"),
            (libc::SIGBUS, "SIGBUS"),
            (libc::SIGILL, "SIGILL"),
            (libc::SIGFPE, "SIGFPE"),
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGTERM, "SIGTERM"),
            (libc::SIGTRAP, "SIGTRAP"),
            (libc::SIGSYS, "SIGSYS"),
            (libc::SIGPIPE, "SIGPIPE"),
        ];
        if let Some((_, name)) = known.iter().find(|(number, _)| *number == signal) {
            return (*name).to_owned();
        }
    }
    format!("signal {signal}")
}

/// Why a call got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The child answered with an `error` line: the request failed (the plugin's error, or a
    /// refusal such as an unknown command).
    Refused(String),
    /// The child ended before it answered.
    Died(Ended),
    /// The child did not answer within the limit (time spent answering its requests not
    /// counted). It is still running; the caller kills it.
    Hung(Duration),
}

/// Why a message did not reach the child.
enum SendFailed {
    /// The ring stayed full until the deadline.
    Full,
    /// The child has gone.
    Gone,
    /// The child garbled the ring.
    Broken(String),
}

/// A line the child sent while a call was under way (or unprompted), for the caller.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request: the caller's answer (`Ok` result or `Err` message) goes back as its
    /// `response`.
    Request {
        /// The method (`ui`, `send_message`, `session_entries`, ...).
        method: &'a str,
        /// Its parameters.
        params: &'a Value,
    },
    /// A notification (`ui`, `ui_reset`, `abort`, `shutdown`): nothing goes back.
    Notification {
        /// The method.
        method: &'a str,
        /// Its parameters.
        params: &'a Value,
    },
    /// A plugin error the child reported (a failed handler or timer callback).
    ExtensionError {
        /// The event it was handling.
        event: &'a str,
        /// What went wrong.
        error: &'a str,
    },
    /// A partial result of the `tool` call under way.
    ToolUpdate(&'a Value),
}

/// What the caller does with [`Incoming`] lines; returns the answer for a request.
pub type OnLine<'f> = dyn FnMut(Incoming<'_>) -> Option<Result<Value, String>> + 'f;

/// What the stdout reader thread and the caller share.
struct Inbox {
    state: Mutex<InboxState>,
    arrived: Condvar,
}

#[derive(Default)]
struct InboxState {
    lines: VecDeque<(Value, usize)>,
    /// The bytes of the lines in `lines` (at most [`MAX_PENDING_BYTES`]).
    pending_bytes: usize,
    ended: Option<Ended>,
    /// Why the host killed the child for breaking the protocol, if it did: its end is then
    /// [`Ended::Broke`].
    broke: Option<String>,
    /// A caller is reading the inbox (a call, a drain, or the wait for `hello`).
    reading: bool,
    /// The waker was called and its drain has not started yet.
    wake_pending: bool,
    waker: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl InboxState {
    /// The oldest line not taken yet.
    fn pop_line(&mut self) -> Option<Value> {
        let (line, size) = self.lines.pop_front()?;
        self.pending_bytes -= size;
        Some(line)
    }
}

impl Inbox {
    fn lock(&self) -> MutexGuard<'_, InboxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by the reader thread for a line or the child's end.
    fn deliver(&self, update: impl FnOnce(&mut InboxState)) {
        let wake = {
            let mut state = self.lock();
            update(&mut state);
            if !state.reading && !state.wake_pending {
                state.wake_pending = state.waker.is_some();
                state.waker.clone()
            } else {
                None
            }
        };
        self.arrived.notify_all();
        if let Some(wake) = wake {
            wake();
        }
    }
}

/// A running `pi-hooks serve` child with one plugin.
pub struct ServeChild {
    process: Arc<Mutex<Child>>,
    /// The child's stdin: the requests with the pipe transport; with the ring, only its end
    /// tells the child that the host has gone.
    stdin: Option<ChildStdin>,
    /// The rings, with the ring transport (see `super::transport`).
    ring: Option<HostRing>,
    /// Names the plugin in messages.
    label: String,
    inbox: Arc<Inbox>,
    hello: Value,
    next_id: u64,
    started: Instant,
    /// The grant the child was given, if it is confined: its `denied` notifications are
    /// checked against it and shown with its words (`crate::sandbox::report::vouch`).
    grant: Option<crate::sandbox::Grant>,
    /// The refusals shown this second, against `crate::sandbox::report::REPORT_BYTES_PER_SECOND`.
    reports: Throttle,
}

impl ServeChild {
    /// Starts a child and waits (at most `limit`) for its `hello`. `label` names the plugin
    /// in the lines its stdout carries that are not protocol. The child's stderr goes to
    /// ours, except the lines the host reports itself (see `forward_stderr`).
    pub fn spawn(launch: &Launch, label: &str, limit: Duration) -> Result<ServeChild, String> {
        // The protocol's own pipe: the child writes its lines to fd 3 and points its fd 1 at
        // its stderr, so a plugin's `printf` never lands inside a frame.
        let (protocol_read, protocol_write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
                .map_err(|e| format!("cannot make a pipe for its isolation process: {e}"))?;
        let transport = transport::chosen();
        let (ring, ring_fd) = match transport {
            Transport::Ring => {
                let (ring, fd) = HostRing::create()
                    .map_err(|e| format!("cannot set up its isolation process: {e}"))?;
                (Some(ring), Some(fd))
            }
            Transport::Pipe => (None, None),
        };
        let mut command = Command::new(&launch.program);
        command
            .args(launch.args(transport))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // The host traces its proxy's calls and the child's requests itself (the hook
            // trace, `crate::observe::trace`); a tracing child would report every call twice.
            .env_remove("PI_HOOKS_TRACE")
            .env_remove("PI_HOOKS_TRACE_FILE");
        #[cfg(unix)]
        {
            // Its own process group: a Ctrl-C meant for the host's terminal does not reach it
            // (it ends when the host closes its stdin, or is killed).
            use std::os::fd::AsRawFd;
            use std::os::unix::process::CommandExt;
            command.process_group(0);
            let write = protocol_write.as_raw_fd();
            let ring = ring_fd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
            // SAFETY: runs in the forked child before exec and calls only fcntl and dup2,
            // which are async-signal-safe; nothing is allocated or locked.
            unsafe {
                command.pre_exec(move || place_descriptors(write, ring));
            }
        }
        // A confined plugin (crate::sandbox): a clean environment and no descriptors but the
        // protocol's (and the rings' with that transport); the child confines itself from
        // `--sandbox` before it loads the plugin.
        #[cfg(target_os = "linux")]
        if let Some(grant) = &launch.sandbox {
            let last = if ring_fd.is_some() {
                RING_FD
            } else {
                PROTOCOL_FD
            };
            crate::sandbox::limits::prepare_command(&mut command, last, grant);
        }
        let spawned = command.spawn();
        // The child has its copies; the host keeps only the reading end (and its mapping).
        drop(protocol_write);
        drop(ring_fd);
        let mut process = spawned.map_err(|e| {
            format!(
                "cannot start its isolation process {} serve: {e}",
                launch.program.display()
            )
        })?;
        let stdout = std::fs::File::from(protocol_read);
        let (Some(stdin), Some(stderr)) = (process.stdin.take(), process.stderr.take()) else {
            let _ = process.kill();
            let _ = process.wait();
            return Err("its isolation process has no stdin or stderr pipe".into());
        };
        let process = Arc::new(Mutex::new(process));
        let inbox = Arc::new(Inbox {
            state: Mutex::new(InboxState {
                reading: true,
                ..InboxState::default()
            }),
            arrived: Condvar::new(),
        });
        let started = Instant::now();
        {
            let (inbox, process, label) = (inbox.clone(), process.clone(), label.to_owned());
            let watcher = StdoutWatcher::new(ring.as_ref());
            std::thread::Builder::new()
                .name("pi-hooks-isolate-out".into())
                .spawn(move || read_stdout(stdout, &inbox, &process, &label, &watcher))
                .map_err(|e| format!("cannot start a thread for its isolation process: {e}"))?;
        }
        let err_label = label.to_owned();
        std::thread::Builder::new()
            .name("pi-hooks-isolate-err".into())
            .spawn(move || forward_stderr(stderr, &err_label))
            .map_err(|e| format!("cannot start a thread for its isolation process: {e}"))?;
        let mut child = ServeChild {
            process,
            stdin: Some(stdin),
            ring,
            label: label.to_owned(),
            inbox,
            hello: Value::Null,
            next_id: 1,
            started,
            grant: launch.sandbox.clone(),
            reports: Throttle::new(crate::sandbox::report::REPORT_BYTES_PER_SECOND),
        };
        match child.wait_for_hello(limit) {
            Ok(hello) => {
                child.hello = hello;
                child.lock_inbox().reading = false;
                Ok(child)
            }
            Err(error) => {
                child.kill();
                Err(error)
            }
        }
    }

    fn lock_inbox(&self) -> MutexGuard<'_, InboxState> {
        self.inbox.lock()
    }

    fn wait_for_hello(&self, limit: Duration) -> Result<Value, String> {
        let deadline = Instant::now() + limit;
        let mut state = self.lock_inbox();
        loop {
            if let Some(line) = state.pop_line() {
                if line.get("type").and_then(Value::as_str) != Some("hello") {
                    return Err(format!(
                        "its isolation process began with {} instead of a hello line",
                        first_chars(&line.to_string())
                    ));
                }
                let protocol = line.get("protocol").and_then(Value::as_u64);
                if protocol != Some(u64::from(crate::serve::protocol::PROTOCOL_VERSION)) {
                    return Err(format!(
                        "its isolation process speaks serve protocol {}, this host {}; use one pi-hooks build for both",
                        protocol.map_or("(none)".to_owned(), |p| p.to_string()),
                        crate::serve::protocol::PROTOCOL_VERSION
                    ));
                }
                return Ok(line);
            }
            if let Some(ended) = &state.ended {
                return Err(format!(
                    "its isolation process {} before it loaded the plugin (see its output above)",
                    ended.describe()
                ));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "its isolation process did not load it within {} ms (hookTimeout); it was killed",
                    limit.as_millis()
                ));
            }
            state = self
                .inbox
                .arrived
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The child's `hello` line.
    pub fn hello(&self) -> &Value {
        &self.hello
    }

    /// When the child was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.process.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// Tells the child a request is likely soon (the ring transport only: its reader wakes
    /// and spins for it a while, see `super::transport::ring::Region::get_ready`).
    pub fn get_ready(&self) {
        if let Some(ring) = &self.ring {
            ring.get_ready();
        }
    }

    /// Sets what is called (on the reader thread) when a line arrives, or the child ends,
    /// while nobody reads: it should arrange a [`ServeChild::drain`] soon.
    pub fn set_waker(&self, waker: Arc<dyn Fn() + Send + Sync>) {
        let ring_has_data = self.ring.as_ref().is_some_and(HostRing::has_data);
        let pending = {
            let mut state = self.lock_inbox();
            state.waker = Some(waker.clone());
            let pending = !state.reading
                && !state.wake_pending
                && (!state.lines.is_empty() || state.ended.is_some() || ring_has_data);
            state.wake_pending |= pending;
            pending
        };
        if pending {
            waker();
        }
    }

    /// Sends one request, `{"type":kind,"id":…,<fields>}` (`fields` are JSON object members,
    /// written as they are), and waits for its answer, handing every other line to
    /// `on_line`. `limit` bounds the time spent waiting for the child (`None`: no bound).
    pub fn call(
        &mut self,
        kind: &str,
        fields: &str,
        limit: Option<Duration>,
        on_line: &mut OnLine<'_>,
    ) -> Result<Value, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = format!("{{\"type\":\"{kind}\",\"id\":{id}");
        if !fields.is_empty() {
            line.push(',');
            line.push_str(fields);
        }
        line.push('}');
        self.start_reading();
        let answer = match self.send(&line, limit.map(|limit| Instant::now() + limit)) {
            Ok(()) => self.read_answer(id, limit, on_line),
            Err(SendFailed::Full) => Err(CallError::Hung(limit.unwrap_or_default())),
            Err(SendFailed::Gone) => Err(CallError::Died(self.wait_for_end(EXIT_GRACE))),
            Err(SendFailed::Broken(why)) => Err(CallError::Died(self.broken(&why))),
        };
        self.stop_reading();
        answer
    }

    /// Answers what arrived while nobody was reading (requests from the plugin's timers,
    /// notifications, errors). Returns how the child ended if it did.
    pub fn drain(&mut self, on_line: &mut OnLine<'_>) -> Option<Ended> {
        self.start_reading();
        self.lock_inbox().wake_pending = false;
        let deadline = Some(Instant::now() + ANSWER_LIMIT);
        let budget = Instant::now() + DRAIN_BUDGET;
        let ended = loop {
            if Instant::now() >= budget {
                // A child that keeps sending does not keep the proxy (its lock) from the
                // session's calls: the rest waits for the next drain, which the waker
                // arranges when reading stops.
                break self.lock_inbox().ended.clone();
            }
            let next = {
                let mut state = self.lock_inbox();
                match state.pop_line() {
                    Some(line) => Some(line),
                    None if self.ring.is_none() => break state.ended.clone(),
                    None => None,
                }
            };
            let next = match next {
                Some(line) => line,
                // With the ring: what it holds now, without waiting for more.
                None => match self
                    .ring
                    .as_mut()
                    .map(|ring| ring.receive(Some(Instant::now())))
                {
                    Some(Ok(Some(frame))) => match self.parse_frame(&frame) {
                        Ok(line) => line,
                        Err(why) => break Some(self.broken(&why)),
                    },
                    Some(Ok(None)) | None => break self.lock_inbox().ended.clone(),
                    Some(Err(RingError::Closed)) => break Some(self.wait_for_end(EXIT_GRACE)),
                    Some(Err(RingError::Broken(why))) => break Some(self.broken(&why)),
                },
            };
            match self.take_line(&next, None, deadline, on_line) {
                Some(Err(CallError::Died(ended))) => break Some(ended),
                // The child does not take its answers: it is ended, as a hang.
                Some(Err(CallError::Hung(_))) => break Some(self.kill()),
                _ => {}
            }
        };
        self.stop_reading();
        ended
    }

    /// A caller reads from now on (a call, a drain): the child need not ring its doorbell.
    fn start_reading(&self) {
        self.lock_inbox().reading = true;
        if let Some(ring) = &self.ring {
            ring.set_reading(true);
        }
    }

    /// Ends reading; lines that arrived meanwhile and nobody took wake the waker.
    fn stop_reading(&self) {
        if let Some(ring) = &self.ring {
            ring.set_reading(false);
        }
        // After the flag: a message the child sent before it saw the flag is seen here.
        let ring_has_data = self.ring.as_ref().is_some_and(HostRing::has_data);
        let wake = {
            let mut state = self.lock_inbox();
            state.reading = false;
            if (!state.lines.is_empty() || ring_has_data) && !state.wake_pending {
                state.wake_pending = state.waker.is_some();
                state.waker.clone()
            } else {
                None
            }
        };
        if let Some(wake) = wake {
            wake();
        }
    }

    /// Sends one message (a JSON object without its line feed): a frame on the ring, or a
    /// line on the child's stdin.
    fn send(&mut self, message: &str, deadline: Option<Instant>) -> Result<(), SendFailed> {
        if let Some(ring) = self.ring.as_mut() {
            return match ring.send(message.as_bytes(), deadline) {
                Ok(true) => Ok(()),
                Ok(false) => Err(SendFailed::Full),
                Err(RingError::Closed) => Err(SendFailed::Gone),
                Err(RingError::Broken(why)) => Err(SendFailed::Broken(why)),
            };
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(SendFailed::Gone);
        };
        stdin
            .write_all(message.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|_| SendFailed::Gone)
    }

    /// The child broke the protocol (garbled the ring's words or frames, see
    /// `transport::ring`, or sent a message no honest child sends): it is killed, and its
    /// end is [`Ended::Broke`] with `why` (text of the host's, the child's words in it
    /// escaped), which the caller reports.
    fn broken(&mut self, why: &str) -> Ended {
        break_protocol(&self.inbox, &self.process, why);
        self.kill()
    }

    /// A frame of the ring as a message; one that is not a JSON object breaks the protocol.
    fn parse_frame(&self, frame: &[u8]) -> Result<Value, String> {
        parse_message(frame)
    }

    fn read_answer(
        &mut self,
        id: u64,
        limit: Option<Duration>,
        on_line: &mut OnLine<'_>,
    ) -> Result<Value, CallError> {
        let mut waited = Duration::ZERO;
        loop {
            let left = match limit {
                Some(limit) if waited >= limit => return Err(CallError::Hung(limit)),
                Some(limit) => Some(limit - waited),
                None => None,
            };
            let since = Instant::now();
            let line = match self.ring.as_mut() {
                Some(ring) => {
                    let frame = ring.receive(left.map(|left| since + left));
                    waited += since.elapsed();
                    match frame {
                        Ok(Some(frame)) => match self.parse_frame(&frame) {
                            Ok(line) => line,
                            Err(why) => return Err(CallError::Died(self.broken(&why))),
                        },
                        Ok(None) => continue,
                        Err(RingError::Closed) => {
                            return Err(CallError::Died(self.wait_for_end(EXIT_GRACE)));
                        }
                        Err(RingError::Broken(why)) => {
                            return Err(CallError::Died(self.broken(&why)));
                        }
                    }
                }
                None => {
                    let mut state = self.lock_inbox();
                    loop {
                        if let Some(line) = state.pop_line() {
                            break line;
                        }
                        if let Some(ended) = &state.ended {
                            return Err(CallError::Died(ended.clone()));
                        }
                        let left = match limit {
                            Some(limit) if waited >= limit => {
                                return Err(CallError::Hung(limit));
                            }
                            Some(limit) => limit - waited,
                            None => Duration::from_secs(3600),
                        };
                        let since = Instant::now();
                        state = self
                            .inbox
                            .arrived
                            .wait_timeout(state, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                        waited += since.elapsed();
                    }
                }
            };
            let deadline = left.map(|left| Instant::now() + left);
            if let Some(answer) = self.take_line(&line, Some(id), deadline, on_line) {
                return answer;
            }
        }
    }

    /// Handles one line: the answer to call `id` is returned; a request is answered through
    /// `on_line` (the answer sent by `deadline`, or [`ANSWER_LIMIT`] from now; a child that
    /// does not take it by then is [`CallError::Hung`]); anything else goes to `on_line` or
    /// is dropped.
    fn take_line(
        &mut self,
        line: &Value,
        id: Option<u64>,
        deadline: Option<Instant>,
        on_line: &mut OnLine<'_>,
    ) -> Option<Result<Value, CallError>> {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("");
        let answers_call = id.is_some() && line.get("id").and_then(Value::as_u64) == id;
        if let Err(why) = check_kind(line) {
            return Some(Err(CallError::Died(self.broken(&why))));
        }
        match kind {
            "result" if answers_call => {
                return Some(Ok(line.get("result").cloned().unwrap_or(Value::Null)));
            }
            "error" if answers_call => {
                let error = line.get("error").cloned().unwrap_or(Value::Null);
                let text = error
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned);
                return Some(Err(CallError::Refused(text)));
            }
            "request" => {
                let method = line.get("method").and_then(Value::as_str).unwrap_or("");
                let params = line.get("params").unwrap_or(&Value::Null);
                let answer = on_line(Incoming::Request { method, params })
                    .unwrap_or_else(|| Err(format!("{method} is not answered here")));
                let request_id = line.get("id").cloned().unwrap_or(Value::Null);
                let response = match answer {
                    Ok(result) => json!({"type": "response", "id": request_id, "result": result}),
                    Err(error) => json!({"type": "response", "id": request_id, "error": error}),
                };
                let sending = Instant::now();
                let deadline = deadline.unwrap_or(sending + ANSWER_LIMIT);
                match self.send(&response.to_string(), Some(deadline)) {
                    // Gone: its end is reported where it is read.
                    Ok(()) | Err(SendFailed::Gone) => {}
                    // The answer could not be handed over in time (the ring stayed full): the
                    // child does not read, and the ring now holds part of a message.
                    Err(SendFailed::Full) => {
                        return Some(Err(CallError::Hung(sending.elapsed())));
                    }
                    Err(SendFailed::Broken(why)) => {
                        return Some(Err(CallError::Died(self.broken(&why))));
                    }
                }
            }
            "notification" => {
                let method = line.get("method").and_then(Value::as_str).unwrap_or("");
                let params = line.get("params").unwrap_or(&Value::Null);
                if method == "denied" {
                    // Shown with the host's words for plugin and grant, or the child is
                    // killed for claiming others.
                    let shown = match crate::sandbox::report::vouch(params, self.grant.as_ref()) {
                        Ok(shown) => shown,
                        Err(why) => return Some(Err(CallError::Died(self.broken(&why)))),
                    };
                    let size = shown["action"].as_str().map_or(0, str::len)
                        + shown["reason"].as_str().map_or(0, str::len);
                    match self.reports.take(size) {
                        Taken::Pass(dropped) => {
                            if dropped.0 > 0 {
                                self.say_reports_dropped(dropped);
                            }
                            on_line(Incoming::Notification {
                                method,
                                params: &shown,
                            });
                        }
                        Taken::FirstDropped => {
                            let _ = writeln!(
                                std::io::stderr().lock(),
                                "pi-hooks: isolated plugin {} reports more than {} KiB of sandbox refusals a second; the rest of this second is dropped",
                                self.label,
                                crate::sandbox::report::REPORT_BYTES_PER_SECOND / 1024
                            );
                        }
                        Taken::Dropped => {}
                    }
                    return None;
                }
                on_line(Incoming::Notification { method, params });
            }
            "extension_error" => {
                let event = line.get("event").and_then(Value::as_str).unwrap_or("");
                let error = line.get("error").and_then(Value::as_str).unwrap_or("");
                on_line(Incoming::ExtensionError { event, error });
            }
            "tool_update" if answers_call => {
                on_line(Incoming::ToolUpdate(
                    line.get("partial").unwrap_or(&Value::Null),
                ));
            }
            // An error line about a response the child no longer waited for (a dialog it
            // gave up on), an answer to an abandoned call: nothing is waiting for them.
            _ => {}
        }
        None
    }

    /// Says how many refusals the rate limit dropped in the last second.
    fn say_reports_dropped(&self, (reports, bytes): (u64, u64)) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "pi-hooks: isolated plugin {}: {reports} sandbox refusals ({bytes} bytes) not shown (more than {} KiB a second)",
            self.label,
            crate::sandbox::report::REPORT_BYTES_PER_SECOND / 1024
        );
    }

    /// Waits (at most `limit`) for the reader to see the child end; kills it past that.
    fn wait_for_end(&self, limit: Duration) -> Ended {
        let deadline = Instant::now() + limit;
        let mut state = self.lock_inbox();
        loop {
            if let Some(ended) = &state.ended {
                return ended.clone();
            }
            let now = Instant::now();
            if now >= deadline {
                drop(state);
                let _ = self
                    .process
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .kill();
                state = self.lock_inbox();
                while state.ended.is_none() {
                    state = self
                        .inbox
                        .arrived
                        .wait_timeout(state, Duration::from_millis(50))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                continue;
            }
            state = self
                .inbox
                .arrived
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Kills the child (SIGKILL) and waits until it is reaped.
    pub fn kill(&mut self) -> Ended {
        self.stdin = None;
        let _ = self
            .process
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .kill();
        self.wait_for_end(EXIT_GRACE)
    }

    /// Ends the child the orderly way: its stdin closes, so `serve` sends its plugin
    /// `session_shutdown`, retires it and exits; killed if it has not within two seconds.
    pub fn close(&mut self) -> Ended {
        self.stdin = None;
        self.wait_for_end(EXIT_GRACE)
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.close();
        }
    }
}

/// The message kinds a child sends (after its `hello`), as `docs/serve-protocol.md` lists
/// them; a message of another kind, or without a string `type`, breaks the protocol.
pub fn check_kind(message: &Value) -> Result<(), String> {
    match message.get("type") {
        Some(Value::String(kind))
            if matches!(
                kind.as_str(),
                "result" | "error" | "request" | "notification" | "extension_error" | "tool_update"
            ) =>
        {
            Ok(())
        }
        Some(Value::String(kind)) => Err(format!(
            "a message of the unknown type {:?}",
            first_chars(kind)
        )),
        _ => Err("a message without a string type".into()),
    }
}

/// A rate limit over one-second windows: what passes, and what was dropped.
struct Throttle {
    limit: usize,
    window: Instant,
    passed: usize,
    /// Items and bytes dropped in this window.
    dropped: (u64, u64),
}

/// What [`Throttle::take`] decided.
enum Taken {
    /// Passes; what was dropped in the window that just ended (said by the caller).
    Pass((u64, u64)),
    /// Dropped, the first of its window (the caller says the rest of it is dropped).
    FirstDropped,
    /// Dropped.
    Dropped,
}

impl Throttle {
    fn new(limit: usize) -> Self {
        Throttle {
            limit,
            window: Instant::now(),
            passed: 0,
            dropped: (0, 0),
        }
    }

    fn take(&mut self, size: usize) -> Taken {
        let mut ended = (0, 0);
        if self.window.elapsed() >= Duration::from_secs(1) {
            ended = std::mem::take(&mut self.dropped);
            self.window = Instant::now();
            self.passed = 0;
        }
        if self.passed + size > self.limit {
            self.dropped.0 += 1;
            self.dropped.1 += size as u64;
            return if self.dropped.0 == 1 {
                Taken::FirstDropped
            } else {
                Taken::Dropped
            };
        }
        self.passed += size;
        Taken::Pass(ended)
    }
}

/// The first characters of `text`, for a message.
fn first_chars(text: &str) -> String {
    let cut: String = text.chars().take(80).collect();
    escape(&cut).into_owned()
}

/// In the forked child, before exec: puts the protocol pipe at [`PROTOCOL_FD`] and, with
/// the ring transport (`ring` not -1), the ring's memory at [`RING_FD`], both kept across
/// exec. Both are copied above the targets first, so placing one cannot close the other.
#[cfg(unix)]
fn place_descriptors(protocol: i32, ring: i32) -> std::io::Result<()> {
    let copy = |fd: i32| {
        // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor of this process; async-signal-safe.
        let copied = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        if copied < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(copied)
        }
    };
    let place = |fd: i32, target: i32| {
        // SAFETY: dup2 on descriptors of this process (the copy is closed at exec, the
        // target kept: dup2 clears its close-on-exec flag); async-signal-safe.
        if unsafe { libc::dup2(fd, target) } < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    let protocol = copy(protocol)?;
    let ring = if ring >= 0 { Some(copy(ring)?) } else { None };
    place(protocol, PROTOCOL_FD)?;
    if let Some(ring) = ring {
        place(ring, RING_FD)?;
    }
    Ok(())
}

/// What the stdout reader does beyond lines, with the ring transport: a blank line is the
/// child's doorbell (it sent something while the host was not reading), and at the end the
/// ring is closed, so a caller waiting on it wakes and finds the child's end.
struct StdoutWatcher {
    ring_closer: Option<Box<dyn Fn() + Send>>,
}

impl StdoutWatcher {
    fn new(ring: Option<&HostRing>) -> Self {
        StdoutWatcher {
            ring_closer: ring.map(HostRing::closer),
        }
    }
}

/// The protocol pipe's reader: parses lines into the inbox; at the end, reaps the child and
/// records how it ended. Only the child's serve code writes this pipe honestly (its fd 1
/// points at its stderr, see `crate::serve::protocol_on_fd`), so anything else on it breaks
/// the protocol and the child is killed ([`break_protocol`]): a line that is not a JSON
/// object, one longer than [`MAX_LINE_BYTES`], and with the ring transport anything but
/// the `hello` and blank doorbell lines (every message goes through the ring).
fn read_stdout(
    stdout: impl Read,
    inbox: &Inbox,
    process: &Mutex<Child>,
    _label: &str,
    watcher: &StdoutWatcher,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buffer = Vec::new();
    let mut hello_seen = false;
    let mut broke = false;
    loop {
        buffer.clear();
        let read = match read_line(&mut reader, &mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if broke {
            // Killed: what it wrote before it died is read through and dropped.
            continue;
        }
        if buffer.is_empty() {
            broke = true;
            break_protocol(
                inbox,
                process,
                &format!(
                    "a line of {read} bytes on its protocol pipe, over the limit of {MAX_LINE_BYTES}"
                ),
            );
            continue;
        }
        let text = buffer.strip_suffix(b"\n").unwrap_or(&buffer);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            if watcher.ring_closer.is_some() {
                // The doorbell: whoever reads next finds the messages in the ring.
                inbox.deliver(|_| {});
            }
            continue;
        }
        if hello_seen && watcher.ring_closer.is_some() {
            broke = true;
            break_protocol(
                inbox,
                process,
                &format!(
                    "a line of {} bytes on its protocol pipe, where only doorbells go after its hello: {}",
                    text.len(),
                    first_chars(&String::from_utf8_lossy(text))
                ),
            );
            continue;
        }
        hello_seen = true;
        match parse_message(text) {
            Ok(line) => {
                let size = text.len();
                let mut over = false;
                inbox.deliver(|state| {
                    if state.pending_bytes + size > MAX_PENDING_BYTES {
                        over = true;
                    } else {
                        state.pending_bytes += size;
                        state.lines.push_back((line, size));
                    }
                });
                if over {
                    broke = true;
                    break_protocol(
                        inbox,
                        process,
                        &format!(
                            "more than {} MiB of messages sent while the host was not reading",
                            MAX_PENDING_BYTES >> 20
                        ),
                    );
                }
            }
            Err(why) => {
                broke = true;
                break_protocol(inbox, process, &why);
            }
        }
    }
    // Stdout closed: the child is ending. Reap it (polling, so a kill can take the lock).
    // Only its exit closes that pipe: one still running after [`EXIT_GRACE`] closed it
    // itself, and is killed (until then a caller waits on the ring for nothing).
    let closed = Instant::now();
    let mut pause = Duration::from_millis(1);
    let ended = loop {
        let status = process.lock().unwrap_or_else(|e| e.into_inner()).try_wait();
        match status {
            Ok(Some(status)) => break Ended::from_status(status),
            Ok(None) => {}
            Err(_) => break Ended::Exited(-1),
        }
        if !broke && closed.elapsed() >= EXIT_GRACE {
            broke = true;
            break_protocol(
                inbox,
                process,
                "it closed its protocol pipe and went on running",
            );
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    inbox.deliver(|state| {
        state.ended = Some(match state.broke.clone() {
            Some(why) => Ended::Broke(why),
            None => ended,
        });
    });
    if let Some(close) = &watcher.ring_closer {
        close();
    }
}

/// A message of the child (a frame, or a line of the pipe transport) as JSON: it must be an
/// object, else it breaks the protocol (`Err` says how, the child's text escaped and cut).
pub fn parse_message(bytes: &[u8]) -> Result<Value, String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(message) if message.is_object() => Ok(message),
        Ok(_) => Err(format!(
            "a message that is not a JSON object: {}",
            first_chars(&String::from_utf8_lossy(bytes))
        )),
        Err(error) => Err(format!(
            "a message of {} bytes that is not JSON ({error}): {}",
            bytes.len(),
            first_chars(&String::from_utf8_lossy(bytes))
        )),
    }
}

/// The child broke the protocol: `why` is kept as the reason of its end ([`Ended::Broke`];
/// the first reason wins) and it is killed. Its end is then seen as any other.
fn break_protocol(inbox: &Inbox, process: &Mutex<Child>, why: &str) {
    {
        let mut state = inbox.lock();
        if state.broke.is_none() && state.ended.is_none() {
            state.broke = Some(why.to_owned());
        }
    }
    let _ = process.lock().unwrap_or_else(|e| e.into_inner()).kill();
}

/// Reads one line of at most [`MAX_LINE_BYTES`]; a longer one is read through and dropped
/// (the buffer is left empty while the count read is not 0). `Ok(0)` at the end.
fn read_line(reader: &mut impl BufRead, buffer: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut total = 0;
    let mut too_long = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (&available[..=at], true),
            None => (available, false),
        };
        let used = chunk.len();
        total += used;
        if !too_long {
            if buffer.len() + used > MAX_LINE_BYTES {
                too_long = true;
                buffer.clear();
            } else {
                buffer.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if done {
            if too_long {
                buffer.clear();
            }
            return Ok(total);
        }
    }
}

/// Lines of the child's stderr the host does not pass on, because it reports the same thing
/// itself: plugin errors (reported as the host's own `Extension error`s), load failures and
/// plugin warnings (reported by the host's load), and the child's crash line (the host
/// reports the crash with the event and the restart).
fn reported_by_host(line: &str) -> bool {
    line.starts_with("Extension error (")
        || line.starts_with("Failed to load plugin ")
        || line.starts_with("Warning: plugin ")
        || (line.starts_with("pi-hooks: plugin ") && line.ends_with("; the host stops"))
}

/// Forwards the child's stderr (where its stdout goes too) to ours, line by line, except
/// [`reported_by_host`] lines: each escaped (`crate::guards::display::escape`) and marked
/// with the plugin, at most [`STDERR_BYTES_PER_SECOND`].
fn forward_stderr(stderr: impl Read, label: &str) {
    let mut reader = BufReader::new(stderr);
    let mut buffer = Vec::new();
    let mut window = Instant::now();
    let mut passed = 0usize;
    let (mut dropped_lines, mut dropped_bytes) = (0u64, 0u64);
    let say_dropped = |lines: u64, bytes: u64| {
        let _ = writeln!(
            std::io::stderr().lock(),
            "pi-hooks: isolated plugin {}: {lines} lines ({bytes} bytes) of its output dropped (more than {} KiB a second)",
            escape(label),
            STDERR_BYTES_PER_SECOND / 1024
        );
    };
    loop {
        buffer.clear();
        let read = match read_line(&mut reader, &mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if window.elapsed() >= Duration::from_secs(1) {
            if dropped_lines > 0 {
                say_dropped(dropped_lines, dropped_bytes);
            }
            (window, passed, dropped_lines, dropped_bytes) = (Instant::now(), 0, 0, 0);
        }
        if passed + read > STDERR_BYTES_PER_SECOND {
            if dropped_lines == 0 {
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "pi-hooks: isolated plugin {} writes more than {} KiB a second to its stdout and stderr; the rest of this second is dropped",
                    escape(label),
                    STDERR_BYTES_PER_SECOND / 1024
                );
            }
            dropped_lines += 1;
            dropped_bytes += read as u64;
            continue;
        }
        passed += read;
        if buffer.is_empty() {
            let _ = writeln!(
                std::io::stderr().lock(),
                "plugin {label}: (a line of {read} bytes dropped, over the limit of {MAX_LINE_BYTES})"
            );
            continue;
        }
        let text = String::from_utf8_lossy(&buffer);
        let line = text.trim_end_matches(['\n', '\r']);
        if !reported_by_host(line) {
            // Never raw: a terminal would obey the plugin's escape sequences (its title,
            // the clipboard through OSC 52, colours), and its lines would pass for the host's.
            let _ = writeln!(std::io::stderr().lock(), "plugin {label}: {}", escape(line));
        }
    }
    if dropped_lines > 0 {
        say_dropped(dropped_lines, dropped_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_and_drops_one_past_the_limit() {
        let mut input = b"one\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 1));
        input.extend(b"\ntwo".iter());
        let mut reader = BufReader::new(&input[..]);
        let mut buffer = Vec::new();
        assert_eq!(read_line(&mut reader, &mut buffer).unwrap(), 4);
        assert_eq!(buffer, b"one\n");
        buffer.clear();
        assert!(read_line(&mut reader, &mut buffer).unwrap() > MAX_LINE_BYTES);
        assert!(buffer.is_empty());
        buffer.clear();
        assert_eq!(read_line(&mut reader, &mut buffer).unwrap(), 3);
        assert_eq!(buffer, b"two");
        buffer.clear();
        assert_eq!(read_line(&mut reader, &mut buffer).unwrap(), 0);
    }

    #[test]
    fn only_json_objects_of_the_protocol_s_kinds_are_messages() {
        assert!(parse_message(br#"{"type":"result","id":1}"#).is_ok());
        for bad in [&b"[1]"[..], b"\"text\"", b"not json", b"", b"{\"a\":"] {
            assert!(parse_message(bad).is_err(), "{bad:?}");
        }
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        let why = parse_message(deep.as_bytes()).unwrap_err();
        assert!(why.len() < 400, "{why}");
        let escaped = parse_message(b"\x1b]0;title\x07").unwrap_err();
        assert!(!escaped.contains('\u{1b}'), "{escaped}");
        for kind in [
            "result",
            "error",
            "request",
            "notification",
            "extension_error",
            "tool_update",
        ] {
            assert!(check_kind(&json!({"type": kind})).is_ok());
        }
        for bad in [
            json!({"type": "hello"}),
            json!({"type": 1}),
            json!({}),
            json!({"type": "\u{1b}x"}),
        ] {
            let why = check_kind(&bad).unwrap_err();
            assert!(!why.contains('\u{1b}'), "{why}");
        }
    }

    #[test]
    fn the_throttle_passes_a_second_s_worth_and_counts_the_rest() {
        let mut throttle = Throttle::new(10);
        assert!(matches!(throttle.take(6), Taken::Pass((0, 0))));
        assert!(matches!(throttle.take(6), Taken::FirstDropped));
        assert!(matches!(throttle.take(5), Taken::Dropped));
        // What still fits passes.
        assert!(matches!(throttle.take(4), Taken::Pass((0, 0))));
        throttle.window -= Duration::from_secs(2);
        assert!(matches!(throttle.take(10), Taken::Pass((2, 11))));
    }

    #[test]
    fn names_signals_and_statuses() {
        assert_eq!(
            Ended::Signaled(libc::SIGSEGV).describe(),
            "crashed (SIGSEGV)"
        );
        assert_eq!(
            Ended::Signaled(libc::SIGABRT).describe(),
            "crashed (SIGABRT)"
        );
        assert_eq!(Ended::Exited(3).describe(), "exited (status 3)");
        assert_eq!(
            Ended::Broke("a message of the unknown type \"x\"".into()).describe(),
            "broke the serve protocol (a message of the unknown type \"x\") and was killed"
        );
        assert_eq!(signal_name(77), "signal 77");
    }

    #[test]
    fn keeps_the_childs_own_output_and_drops_what_the_host_reports() {
        assert!(reported_by_host("Extension error (/p/x.so): boom"));
        assert!(reported_by_host(
            "pi-hooks: plugin \"x\" (/p/x.so) crashed with SIGSEGV while handling event tool_call; the host stops"
        ));
        assert!(!reported_by_host("plugin says hi"));
        assert!(!reported_by_host(
            "pi-hooks: plugin x is still running a call"
        ));
    }
}
