//! Serve mode (`pi-hooks serve`): the loaded plugins behind one JSON-lines protocol on
//! stdin/stdout, for a client (the pi bridge, an editor) that runs its own agent loop. The
//! protocol is described in `docs/serve-protocol.md`: a `hello` line first, then the
//! client's requests (`event`, `command`, `tool`, `reload`, `render`, `completions`) answered
//! by `result` / `error` lines, and plugin calls that need the client going out as `request`
//! lines ([`client_services`]).
//!
//! Threads: the client's requests run one after another on a worker thread, so a plugin
//! waiting for a `response` blocks only that worker. On Unix the worker reads its requests
//! from stdin itself and a waiting plugin call reads its `response` itself ([`stdin_link`]:
//! no hand-off between threads per request); elsewhere stdin is read on serve's main thread
//! (under the tokio runtime, see `InlineStdin`), which never waits for a request to finish,
//! and hands the requests to the worker. With the ring transport of `--isolate`'s children ([`ring_link`]) the
//! worker reads its requests from the ring itself, a waiting plugin call reads its
//! `response` itself, and the main thread only waits for stdin's end. When stdin closes, waiting plugin requests fail, the worker finishes,
//! `session_shutdown {reason:"quit"}` goes to the plugins, they are retired (their timers
//! and child processes stop) and the process exits 0. An isolated plugin's child
//! (`--protocol-fd`) gives that three seconds, then exits anyway: a plugin call that never
//! returns does not keep it alive once its host has gone (killed, say).

pub mod actions;
pub mod client_services;
pub mod framing;
mod line_writer;
pub mod protocol;
#[cfg(target_os = "linux")]
pub mod ring_link;
#[cfg(unix)]
pub mod stdin_link;

pub use line_writer::LineWriter;
#[cfg(target_os = "linux")]
pub use ring_link::{ChildRing, ring_on_fd};
#[cfg(unix)]
pub use stdin_link::StdinLink;

/// Elsewhere than Linux there is no ring transport (see `crate::isolate::transport`).
#[cfg(not(target_os = "linux"))]
pub enum ChildRing {}

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;

use pi_hooks_abi::ffi::{PI_MODE_PRINT, PI_MODE_RPC};

use serde_json::{Value, json};

use crate::guards::display::escape;
use crate::lifecycle::load::LoadReport;
use crate::plugin_files::discover::DiscoveryOptions;
use crate::runner::{Runner, RunnerConfig};
use client_services::{ClientLink, ClientServices};

/// A client request the worker runs: its id, type and the whole line.
struct Job {
    id: Value,
    kind: String,
    line: Value,
}

/// What serve mode starts from.
pub struct ServeSetup {
    /// Loaded plugins and settings.
    pub report: LoadReport,
    /// The working directory.
    pub cwd: PathBuf,
    /// The mode plugins see, a `PI_MODE_*`.
    pub mode: u32,
    /// Where the plugins were discovered (for `reload`).
    pub discovery: DiscoveryOptions,
    /// The load problems as the other modes print them (hello's `loadMessages`).
    pub load_lines: Vec<String>,
    /// Where the protocol's lines go; `None`: stdout. An isolated plugin's child writes
    /// them to a descriptor of its own (see [`protocol_on_fd`]).
    pub protocol: Option<LineWriter>,
    /// The ring transport (`--ring-fd`, Linux): after the `hello`, which still goes to
    /// `protocol`, every message comes and goes through these rings, and stdin only says by
    /// its end that the host has gone.
    pub ring: Option<Arc<ChildRing>>,
}

/// Moves this process's protocol output off fd 1 (`pi-hooks serve --protocol-fd N`, as
/// `--isolate` starts its children): the lines go to `fd`, and fd 1 is pointed at stderr,
/// so whatever a plugin writes to its stdout (`printf` without a line feed, say) reaches
/// the host's stderr and can never corrupt a frame. Call it before any plugin is loaded.
#[cfg(unix)]
pub fn protocol_on_fd(fd: i32) -> Result<LineWriter, String> {
    use std::os::fd::FromRawFd;
    if fd <= 2 {
        return Err(format!(
            "--protocol-fd {fd}: must be above 2 (0, 1 and 2 are stdio)"
        ));
    }
    // SAFETY: fcntl(F_GETFD) only asks whether `fd` is open.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return Err(format!("--protocol-fd {fd}: not an open file descriptor"));
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: dup2 on two descriptors of this process; fd 1 is replaced by a copy of fd 2.
    if unsafe { libc::dup2(2, 1) } < 0 {
        return Err(format!(
            "--protocol-fd: cannot point stdout at stderr: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `fd` is open (checked above) and handed to us by the parent for this use
    // alone; the File owns it from now on.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    // What the plugin starts (exec) does not get it: the host sees this process's end as
    // the end of that pipe.
    let _ = rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC);
    Ok(LineWriter::to(Box::new(file)))
}

/// Writes `{"type":"error","id":…,"error":…}`.
fn error_line(out: &LineWriter, id: &Value, error: &str) {
    out.line(&json!({"type": "error", "id": id, "error": error}));
}

/// Runs serve mode until stdin closes; returns the exit code (0).
pub fn run(setup: ServeSetup) -> i32 {
    let ServeSetup {
        report,
        cwd,
        mode,
        discovery,
        load_lines,
        protocol,
        ring,
    } = setup;
    // A protocol descriptor of its own: this is an isolated plugin's child, its client the host.
    let isolated_child = protocol.is_some();
    let out = protocol.unwrap_or_else(LineWriter::stdout);
    out.line(&protocol::hello(&report, &load_lines));
    #[cfg(unix)]
    let stdin = ring
        .is_none()
        .then(|| Arc::new(StdinLink::new(out.clone())));
    let (out, link) = match &ring {
        #[cfg(target_os = "linux")]
        Some(ring) => {
            let out = ring.writer();
            (out.clone(), ClientLink::over_ring(out, Arc::clone(ring)))
        }
        #[cfg(not(target_os = "linux"))]
        Some(ring) => match **ring {},
        #[cfg(unix)]
        None => match &stdin {
            Some(stdin) => (out.clone(), ClientLink::over_stdin(out, Arc::clone(stdin))),
            None => (out.clone(), ClientLink::new(out)),
        },
        #[cfg(not(unix))]
        None => (out.clone(), ClientLink::new(out)),
    };
    // A confined child's refusals (crate::sandbox) go to the client after the hello.
    crate::sandbox::report::send_to(out.clone());
    let config = RunnerConfig::new(&cwd, mode).with_settings(&report.settings);
    let runner = Arc::new(Runner::new(
        report.plugins.into_iter().map(Arc::new).collect(),
        config.clone(),
    ));
    let services = Arc::new(ClientServices::new(link.clone(), config));
    services.follow(&runner);
    if isolated_child {
        services.serve_isolated_plugin();
    }
    runner.bind_services(services);
    {
        let out = out.clone();
        runner.on_error(Arc::new(move |error| {
            let _ = writeln!(
                std::io::stderr().lock(),
                "Extension error ({}): {}",
                escape(&error.extension_path),
                escape(&error.error)
            );
            let mut line = serde_json::to_value(error).unwrap_or_default();
            line["type"] = "extension_error".into();
            out.line(&line);
        }));
    }
    let (jobs, queue) = channel::<Job>();
    let shut_down = Arc::new(AtomicBool::new(false));
    let worker = {
        let runner = runner.clone();
        let shut_down = Arc::clone(&shut_down);
        let out = out.clone();
        let ring = ring.clone();
        #[cfg(unix)]
        let stdin = stdin.clone();
        std::thread::Builder::new()
            .name("pi-hooks-serve".into())
            .spawn(move || match ring {
                Some(ring) => {
                    let jobs = ring_jobs(&ring, &out);
                    work(&runner, &out, &discovery, jobs, &shut_down)
                }
                #[cfg(unix)]
                None if let Some(stdin) = stdin => {
                    let jobs = stdin_jobs(&stdin, &out);
                    work(&runner, &out, &discovery, jobs, &shut_down)
                }
                None => work(&runner, &out, &discovery, queue.into_iter(), &shut_down),
            })
    };
    let worker = match worker {
        Ok(worker) => worker,
        Err(error) => {
            eprintln!("pi-hooks: cannot start the serve worker thread: {error}");
            return 1;
        }
    };
    #[cfg(unix)]
    let read_by_worker = stdin.is_some();
    #[cfg(not(unix))]
    let read_by_worker = false;
    let mut worker = Some(worker);
    let mut joined = None;
    if ring.is_some() {
        // Nothing comes on stdin: its end is the host's end.
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    } else if read_by_worker {
        // The worker (and any plugin call waiting for a response) reads stdin and ends at
        // its end; an isolated plugin's child also notices the end while a call hangs.
        #[cfg(unix)]
        if isolated_child {
            let _ = std::thread::Builder::new()
                .name("pi-hooks-serve-hangup".into())
                .spawn(|| {
                    stdin_link::wait_for_hangup();
                    exit_unless_done_within(EXIT_GRACE);
                });
        }
        joined = worker.take().map(std::thread::JoinHandle::join);
    } else {
        read_stdin(&out, &link, &jobs);
    }
    // Stdin closed: plugins waiting on the client get errors, the worker ends its queue.
    // An isolated plugin's child (its protocol on a descriptor of its own) ends with its
    // host, which kills it after two seconds anyway; the pi bridge's serve keeps the time
    // its plugins' session_shutdown takes.
    if isolated_child && !read_by_worker {
        exit_unless_done_within(EXIT_GRACE);
    }
    link.close();
    drop(jobs);
    let joined = joined.or_else(|| worker.take().map(std::thread::JoinHandle::join));
    if matches!(joined, Some(Err(_))) {
        eprintln!("pi-hooks: the serve worker thread panicked");
    }
    if !shut_down.load(Ordering::Relaxed) {
        runner.emit(json!({"type": "session_shutdown", "reason": "quit"}));
    }
    crate::services::event_bus::drain(crate::services::event_bus::SHUTDOWN_DRAIN);
    // What the plugins started (timers, child processes) stops with their instances.
    for plugin in runner.plugins() {
        plugin.retire();
    }
    0
}

/// How long the orderly end (the worker's last request, `session_shutdown`, retiring the
/// plugins) may take once stdin has closed before the process ends anyway.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Ends the process (status 0) `grace` from now, whatever its threads are doing: once stdin
/// has closed (the client, an isolated plugin's host, has gone, perhaps killed) a plugin
/// call that never returns must not keep the process, and what its plugin started, alive.
fn exit_unless_done_within(grace: std::time::Duration) {
    let _ = std::thread::Builder::new()
        .name("pi-hooks-serve-exit".into())
        .spawn(move || {
            std::thread::sleep(grace);
            let _ = writeln!(
                std::io::stderr().lock(),
                "pi-hooks serve: its client has gone and a plugin call is still running after {} s; exiting",
                grace.as_secs()
            );
            // Not `exit`: its handlers (and the plugin's) could wait on what hangs.
            #[cfg(unix)]
            // SAFETY: _exit ends the process at once and takes no lock; nothing in this
            // process is left to run.
            unsafe {
                libc::_exit(0)
            }
            #[cfg(not(unix))]
            std::process::exit(0)
        });
}

/// Reads the client's lines from stdin until it closes: responses go to their waiting
/// requests, requests to the worker.
fn read_stdin(out: &LineWriter, link: &ClientLink, jobs: &std::sync::mpsc::Sender<Job>) {
    crate::services::runtime::handle().block_on(framing::read_lines(InlineStdin(std::io::stdin()), |line| {
        match line {
            framing::Line::Text(text) => take_line(text, out, link, jobs),
            framing::Line::TooLong(bytes) => error_line(
                out,
                &Value::Null,
                &format!(
                    "line of {bytes} bytes is longer than pi-hooks' limit of {} bytes per line; send less text per line",
                    framing::MAX_LINE_BYTES
                ),
            ),
        }
    }));
}

/// One input line: a `response` is handed to its waiting plugin call at once; requests go
/// to the worker; anything else is answered with an error line.
fn take_line(text: &str, out: &LineWriter, link: &ClientLink, jobs: &std::sync::mpsc::Sender<Job>) {
    let line: Value = match serde_json::from_str(text) {
        Ok(line) => line,
        Err(error) => {
            let message = framing::parse_error_message(text, &error);
            error_line(
                out,
                &Value::Null,
                &format!("malformed JSON line: {message}"),
            );
            return;
        }
    };
    if line.get("type").and_then(Value::as_str) == Some("response") {
        if let Err(error) = link.resolve(&line) {
            let id = line.get("id").cloned().unwrap_or(Value::Null);
            error_line(out, &id, &error);
        }
        return;
    }
    if let Some(job) = job_from(line, out) {
        let _ = jobs.send(job);
    }
}

/// A request line as the worker's job; a line that is none is answered with an error line.
fn job_from(line: Value, out: &LineWriter) -> Option<Job> {
    let id = line.get("id").cloned().unwrap_or(Value::Null);
    let Some(kind) = line.get("type").and_then(Value::as_str) else {
        error_line(
            out,
            &id,
            "a line needs a string \"type\" (event, command, tool, reload, render, completions, flags, shortcut, bus or response)",
        );
        return None;
    };
    match kind {
        "event" | "command" | "tool" | "reload" | "render" | "completions" | "flags"
        | "shortcut" | "bus" => {
            if id.is_null() {
                error_line(
                    out,
                    &id,
                    &format!("this {kind} request needs an \"id\" its result can name"),
                );
                return None;
            }
            Some(Job {
                kind: kind.to_owned(),
                id,
                line,
            })
        }
        other => {
            error_line(
                out,
                &id,
                &format!(
                    "unknown type {:?}: expected event, command, tool, reload, render, completions, flags, shortcut, bus or response",
                    escape(other)
                ),
            );
            None
        }
    }
}

/// The client's requests read from stdin by the worker itself, until stdin closes.
#[cfg(unix)]
fn stdin_jobs<'a>(stdin: &'a StdinLink, out: &'a LineWriter) -> impl Iterator<Item = Job> + 'a {
    std::iter::from_fn(move || {
        loop {
            if let Some(job) = job_from(stdin.next_job()?, out) {
                return Some(job);
            }
        }
    })
}

/// The host's requests read from the ring by the worker itself, until the host has gone.
#[cfg(target_os = "linux")]
fn ring_jobs<'a>(ring: &'a ChildRing, out: &'a LineWriter) -> impl Iterator<Item = Job> + 'a {
    std::iter::from_fn(move || {
        loop {
            if let Some(job) = job_from(ring.next_job()?, out) {
                return Some(job);
            }
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn ring_jobs<'a>(ring: &'a ChildRing, _: &'a LineWriter) -> std::iter::Empty<Job> {
    match *ring {}
}

/// Applies a request's `context` (`sessionFile`, `hasUI`) to what plugins see from now on.
fn apply_context(runner: &Runner, context: Option<&Value>) -> Result<(), String> {
    let Some(context) = context.filter(|c| !c.is_null()) else {
        return Ok(());
    };
    if !context.is_object() {
        return Err(format!("context must be an object, got {context}"));
    }
    if let Some(file) = context.get("sessionFile") {
        let file = match file {
            Value::Null => None,
            Value::String(file) => Some(file.clone()),
            other => {
                return Err(format!(
                    "context.sessionFile must be a string or null, got {other}"
                ));
            }
        };
        if runner.session_file() != file {
            runner.set_session_file(file);
        }
    }
    match context.get("hasUI") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(has_ui)) => {
            runner.set_mode(if *has_ui { PI_MODE_RPC } else { PI_MODE_PRINT })
        }
        Some(other) => return Err(format!("context.hasUI must be a boolean, got {other}")),
    }
    actions::apply_context(runner, context)
}

/// The worker: runs the client's requests in order and writes their answers.
fn work(
    runner: &Arc<Runner>,
    out: &LineWriter,
    discovery: &DiscoveryOptions,
    jobs: impl Iterator<Item = Job>,
    shut_down: &AtomicBool,
) {
    for Job { id, kind, line } in jobs {
        if let Err(error) = apply_context(runner, line.get("context")) {
            error_line(out, &id, &error);
            continue;
        }
        let answer = match kind.as_str() {
            "event" => match line.get("name").and_then(Value::as_str) {
                Some(name) => {
                    // The client's own session_shutdown stands for the one stdin's end
                    // would send (a plugin gets one per session).
                    match name {
                        "session_shutdown" => shut_down.store(true, Ordering::Relaxed),
                        "session_start" => shut_down.store(false, Ordering::Relaxed),
                        _ => {}
                    }
                    protocol::event(runner, name, line.get("payload").unwrap_or(&Value::Null))
                }
                None => Err("an event request needs the event's \"name\" (a string)".into()),
            },
            "flags" => actions::flags(&line),
            "command" => actions::command(runner, &line),
            "tool" => {
                let updates = out.clone();
                let update_id = id.clone();
                let on_update = move |partial: Value| {
                    updates
                        .line(&json!({"type": "tool_update", "id": update_id, "partial": partial}));
                };
                actions::tool(runner, &line, &on_update)
            }
            "reload" => actions::reload(runner, discovery, &line),
            "shortcut" => actions::shortcut(runner, &line),
            "bus" => actions::bus(&line),
            "render" => protocol::render(runner, &line),
            _ => protocol::completions(runner, &line),
        };
        match answer {
            Ok(result) => out.line(&json!({"type": "result", "id": id, "result": result})),
            Err(error) => error_line(out, &id, &error),
        }
    }
}

/// Stdin read in place by the thread that polls it. `tokio::io::stdin` hands every read to a
/// blocking-pool thread that then wakes the reader: one thread wake-up more per request line,
/// a measurable share of a serve round trip. Here the read blocks the polling thread itself,
/// which is right because the read loop runs alone under `block_on` on serve's main thread
/// (nothing else is polled there; the runtime's own threads keep running timers and `exec`).
struct InlineStdin(std::io::Stdin);

impl tokio::io::AsyncRead for InlineStdin {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::io::Read;
        let read = self.get_mut().0.lock().read(buf.initialize_unfilled());
        std::task::Poll::Ready(read.map(|n| buf.advance(n)))
    }
}
