//! `exec`: runs a program for a plugin (the action `PiActionsApi.exec`), after pi's
//! `pi.exec(command, args, {signal, timeout, cwd})`.
//!
//! * No shell: the program (found through `PATH` when it has no slash) gets the arguments as
//!   they are, so `;`, `$x` or `*` in an argument are plain characters.
//! * stdin is closed (`/dev/null`); stdout and stderr are read at the same time, each kept up
//!   to [`OUTPUT_CAP`] bytes: the rest is read and discarded (the program never blocks on a
//!   full pipe) and a marker line `[output truncated at 10 MiB; N more bytes discarded]` ends
//!   that stream. Both are decoded lossily as UTF-8.
//! * The program runs in a process group of its own. A timeout, or the plugin's retirement,
//!   sends SIGTERM to the group, then SIGKILL [`KILL_GRACE`] (5 s) later if the program is
//!   still alive; the result then has `"killed": true`.
//! * The result is `{"stdout", "stderr", "code", "killed"}`, plus `"signal"` (its number)
//!   when a signal ended the program. As in pi, a program without an exit code (ended by a
//!   signal) has `code` 0. A program that cannot be started (not found, not executable, a
//!   cwd that is not a directory) is a result, never a failed call: `code` 1 and the reason
//!   in `stderr`.
//! * Once the program has exited, output still held open by processes it left behind is
//!   read for at most [`EXIT_DRAIN_GRACE`], not waited for.
//!
//! Threads: `exec` blocks the calling plugin's call until the program ends. The program is
//! watched on the host's runtime (`loader/host/src/services/runtime.rs`) and the caller waits on a channel,
//! so it may be called from any thread that is not one of the runtime's two async workers:
//! handler threads, timer callbacks (they run on the runtime's blocking pool), a plugin's own
//! threads. The host never calls plugins on an async worker.
//!
//! Retirement: a plugin's running programs are terminated (SIGTERM, then SIGKILL after 5 s)
//! when the plugin is retired (unload, reload, or the end of the run), and the retirement
//! waits for them to end, so none outlives the host.
//!
//! A host that cannot retire anything (killed with SIGKILL, or crashed) takes its programs
//! with it on Linux: each is started with `PR_SET_PDEATHSIG` = SIGKILL. The kernel sends that
//! signal when the *thread* that forked the program ends, not the process, so every program
//! is forked by one thread that lives as long as the host (`spawn_on_spawner_thread`);
//! and a host that died between the fork and the `prctl` is noticed (the parent is no longer
//! the host) and the program never runs. What a program started in turn (its own children)
//! is not covered.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::plugin::state::PluginState;

/// The most bytes of stdout, and of stderr, a result keeps.
pub const OUTPUT_CAP: usize = 10 * 1024 * 1024;
/// Between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(5);
/// How long output is still read once the program has exited (children it left behind may
/// hold the pipes open).
pub const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(250);

/// What to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The program (looked up through `PATH` when it has no slash).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The working directory (already resolved against the session's cwd).
    pub cwd: PathBuf,
    /// The time limit, if any.
    pub timeout: Option<Duration>,
    /// Stops the program when cancelled (the agent run's abort, `PI_EXEC_CANCEL_ON_ABORT`).
    pub cancel: Option<crate::services::CancelToken>,
    /// Stops the program when cancelled (the plugin's own `exec_cancel`).
    pub plugin_cancel: Option<crate::services::CancelToken>,
}

impl ExecRequest {
    /// The request as JSON: `{program, args, cwd, timeoutMs}` (`timeoutMs` null when untimed).
    pub fn to_json(&self) -> Value {
        json!({
            "program": self.program,
            "args": self.args,
            "cwd": self.cwd.to_string_lossy(),
            "timeoutMs": self.timeout.map(|t| t.as_millis() as u64),
        })
    }
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Standard output (capped, lossily decoded).
    pub stdout: String,
    /// Standard error (capped, lossily decoded), or why the program could not start.
    pub stderr: String,
    /// The exit code; 0 when a signal ended the program (as pi), 1 when it could not start.
    pub code: i32,
    /// Whether the host terminated it (timeout or retirement).
    pub killed: bool,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
}

impl ExecOutput {
    /// A program that could not be started: `code` 1, the reason in `stderr`.
    fn not_started(reason: String) -> Self {
        ExecOutput {
            stdout: String::new(),
            stderr: reason,
            code: 1,
            killed: false,
            signal: None,
        }
    }

    /// The value handed to the plugin.
    pub fn to_json(&self) -> Value {
        let mut value = json!({
            "stdout": self.stdout,
            "stderr": self.stderr,
            "code": self.code,
            "killed": self.killed,
        });
        if let Some(signal) = self.signal {
            value["signal"] = signal.into();
        }
        value
    }
}

/// The running programs of one plugin instance.
struct Children {
    /// Becomes true when the plugin is retired: its programs are terminated.
    retired: watch::Sender<bool>,
    /// How many of its programs are running (not yet reaped).
    running: usize,
}

/// Running programs per plugin instance (by handle slot; slots are never reused).
static CHILDREN: LazyLock<Mutex<rustc_hash::FxHashMap<u32, Children>>> =
    LazyLock::new(Mutex::default);
/// Signalled whenever a program of any plugin has been reaped.
static REAPED: Condvar = Condvar::new();

fn children() -> MutexGuard<'static, rustc_hash::FxHashMap<u32, Children>> {
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts one running program of a plugin until dropped (also when the watching task ends
/// early), so retirement knows when they are all gone.
struct RunningGuard(u32);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Some(entry) = children().get_mut(&self.0) {
            entry.running = entry.running.saturating_sub(1);
        }
        REAPED.notify_all();
    }
}

/// Terminates the running programs of the plugin in `slot` and waits until they have ended
/// (at most [`KILL_GRACE`] and a second).
fn retire(slot: u32) {
    let mut all = children();
    if let Some(entry) = all.get(&slot) {
        entry.retired.send_replace(true);
    }
    let limit = std::time::Instant::now() + KILL_GRACE + Duration::from_secs(1);
    while all.get(&slot).is_some_and(|entry| entry.running > 0) {
        let now = std::time::Instant::now();
        if now >= limit {
            break;
        }
        all = REAPED
            .wait_timeout(all, limit - now)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    all.remove(&slot);
}

/// Runs `request` for the plugin behind `state` and waits for it (see the module doc).
pub fn run(state: &PluginState, request: ExecRequest) -> ExecOutput {
    let slot = state.slot();
    let (retired, first) = {
        let mut all = children();
        let first = !all.contains_key(&slot);
        let entry = all.entry(slot).or_insert_with(|| Children {
            retired: watch::Sender::new(false),
            running: 0,
        });
        entry.running += 1;
        (entry.retired.subscribe(), first)
    };
    let guard = RunningGuard(slot);
    let (send, receive) = std::sync::mpsc::sync_channel(1);
    crate::services::runtime::handle().spawn(async move {
        let output = watch_program(request, retired).await;
        drop(guard);
        let _ = send.send(output);
    });
    if first {
        // Runs at once (and terminates this program) if the plugin was retired meanwhile.
        state.on_retire(Box::new(move || retire(slot)));
    }
    receive.recv().unwrap_or_else(|_| {
        ExecOutput::not_started(
            "pi-hooks: the host task watching the program failed; its result is lost".to_owned(),
        )
    })
}

/// Returns once `cancel` or `other` is cancelled (looked at every 10 ms); never without one.
async fn cancelled(
    cancel: Option<&crate::services::CancelToken>,
    other: Option<&crate::services::CancelToken>,
) {
    if cancel.is_none() && other.is_none() {
        return std::future::pending().await;
    }
    while !cancel.is_some_and(|c| c.is_cancelled()) && !other.is_some_and(|c| c.is_cancelled()) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts the program and watches it to its end.
async fn watch_program(request: ExecRequest, mut retired: watch::Receiver<bool>) -> ExecOutput {
    if *retired.borrow_and_update() {
        return ExecOutput::not_started(
            "not started: the plugin was retired (unloaded or reloaded)".to_owned(),
        );
    }
    if !request.cwd.is_dir() {
        return ExecOutput::not_started(format!(
            "cannot start {}: working directory {} does not exist or is not a directory",
            request.program,
            request.cwd.display()
        ));
    }
    let mut command = Command::new(&request.program);
    command
        .args(&request.args)
        .current_dir(&request.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(target_os = "linux")]
    die_with_the_host(&mut command);
    let mut child = match spawn_on_spawner_thread(command).await {
        Ok(child) => child,
        Err(error) => return ExecOutput::not_started(spawn_error(&request, &error)),
    };
    let stdout = Arc::new(Mutex::new(Captured::default()));
    let stderr = Arc::new(Mutex::new(Captured::default()));
    let readers = [
        tokio::spawn(capture(child.stdout.take(), stdout.clone())),
        tokio::spawn(capture(child.stderr.take(), stderr.clone())),
    ];
    let deadline = request
        .timeout
        .map(|limit| Instant::now().checked_add(limit));
    let ended = tokio::select! {
        status = child.wait() => Some(status),
        () = sleep_until(deadline) => None,
        () = retirement(&mut retired) => None,
        () = cancelled(request.cancel.as_ref(), request.plugin_cancel.as_ref()) => None,
    };
    let (status, killed) = match ended {
        Some(status) => (status, false),
        None => (terminate(&mut child).await, true),
    };
    for reader in readers {
        let _ = tokio::time::timeout(EXIT_DRAIN_GRACE, reader).await;
    }
    let (code, signal) = match &status {
        Ok(status) => exit_code(status),
        Err(_) => (0, None),
    };
    let mut stderr = take_text(&stderr);
    if let Err(error) = status {
        stderr.push_str(&format!(
            "\npi-hooks: waiting for the program failed: {error}"
        ));
    }
    ExecOutput {
        stdout: take_text(&stdout),
        stderr,
        code,
        killed,
        signal,
    }
}

/// Waits until `deadline`; forever for no limit (or one too far away to represent).
/// Makes the program die with the host (Linux): SIGKILL when the thread that forked it ends
/// (see [`spawn_on_spawner_thread`]), and no start at all if the host is already gone.
#[cfg(target_os = "linux")]
fn die_with_the_host(command: &mut Command) {
    let host = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only prctl, getppid
    // and _exit, which are async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The host died before the prctl: the signal will never come.
            if libc::getppid() as u32 != host {
                libc::_exit(137);
            }
            Ok(())
        });
    }
}

/// Starts `command` on the one thread that forks every program and never ends, so a
/// program's parent-death signal means the host's death, not the end of whichever runtime
/// or pool thread happened to fork it.
async fn spawn_on_spawner_thread(mut command: Command) -> std::io::Result<Child> {
    type Job = Box<dyn FnOnce() + Send>;
    static SPAWNER: LazyLock<Mutex<Option<std::sync::mpsc::Sender<Job>>>> = LazyLock::new(|| {
        let (sender, jobs) = std::sync::mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("pi-hooks-exec-spawn".into())
            .spawn(move || {
                for job in jobs {
                    job();
                }
            });
        Mutex::new(started.ok().map(|_| sender))
    });
    let (answer, spawned) = tokio::sync::oneshot::channel();
    let runtime = tokio::runtime::Handle::current();
    let job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let _ = answer.send(command.spawn());
    });
    let sent = SPAWNER
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .map(|sender| sender.send(job).is_ok());
    if sent != Some(true) {
        return Err(std::io::Error::other(
            "the thread that starts programs could not be started",
        ));
    }
    spawned.await.unwrap_or_else(|_| {
        Err(std::io::Error::other(
            "the thread that starts programs ended",
        ))
    })
}

async fn sleep_until(deadline: Option<Option<Instant>>) {
    match deadline {
        Some(Some(deadline)) => tokio::time::sleep_until(deadline).await,
        _ => std::future::pending().await,
    }
}

/// Waits until the plugin is retired.
async fn retirement(retired: &mut watch::Receiver<bool>) {
    if retired.wait_for(|retired| *retired).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// SIGTERM to the program's group, SIGKILL [`KILL_GRACE`] later if it is still alive, then
/// reaps it. After the program is gone the rest of its group gets SIGKILL too.
async fn terminate(child: &mut Child) -> std::io::Result<ExitStatus> {
    signal_group(child, Signal::Term);
    let status = match tokio::time::timeout(KILL_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            signal_group(child, Signal::Kill);
            let _ = child.start_kill();
            child.wait().await
        }
    };
    signal_group(child, Signal::Kill);
    status
}

#[derive(Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Signals the process group the program leads (it was started with `process_group(0)`).
fn signal_group(child: &Child, signal: Signal) {
    #[cfg(unix)]
    {
        let Some(pid) = child.id() else {
            // Reaped: its pid is free again, so its group id must not be signalled.
            return;
        };
        let signal = match signal {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: kill(2) with a negative pid signals the process group this host created
        // for the program (whose leader is not reaped yet, so the id is still ours); it has
        // no memory-safety preconditions.
        unsafe {
            libc::kill(-(pid as libc::pid_t), signal);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (child, signal);
    }
}

/// `code` and `signal` of an exit status (code 0 when a signal ended it, as in pi).
fn exit_code(status: &ExitStatus) -> (i32, Option<i32>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return (status.code().unwrap_or(0), Some(signal));
        }
    }
    (status.code().unwrap_or(0), None)
}

/// Why the program could not be started, for the plugin (and its user).
fn spawn_error(request: &ExecRequest, error: &std::io::Error) -> String {
    let program = &request.program;
    match error.kind() {
        std::io::ErrorKind::NotFound if !program.contains('/') => {
            format!("cannot start {program}: no such program on PATH")
        }
        std::io::ErrorKind::NotFound => format!("cannot start {program}: no such file"),
        std::io::ErrorKind::PermissionDenied => {
            format!("cannot start {program}: permission denied (is it executable?)")
        }
        _ => format!("cannot start {program}: {error}"),
    }
}

/// One output stream as far as it was read.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    discarded: u64,
}

/// Reads `pipe` to its end, keeping the first [`OUTPUT_CAP`] bytes.
async fn capture(pipe: Option<impl AsyncRead + Unpin>, into: Arc<Mutex<Captured>>) {
    let Some(mut pipe) = pipe else {
        return;
    };
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match pipe.read(&mut buffer).await {
            Ok(0) => return,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        let mut captured = into.lock().unwrap_or_else(|e| e.into_inner());
        let room = OUTPUT_CAP.saturating_sub(captured.kept.len()).min(read);
        captured.kept.extend_from_slice(&buffer[..room]);
        captured.discarded += (read - room) as u64;
    }
}

/// The text of a captured stream, with the truncation marker when bytes were discarded.
fn take_text(captured: &Mutex<Captured>) -> String {
    let captured = std::mem::take(&mut *captured.lock().unwrap_or_else(|e| e.into_inner()));
    let mut text = String::from_utf8_lossy(&captured.kept).into_owned();
    if captured.discarded > 0 {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[output truncated at {} MiB; {} more bytes discarded]\n",
            OUTPUT_CAP / (1024 * 1024),
            captured.discarded
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_the_cap_and_what_was_dropped() {
        let captured = Mutex::new(Captured {
            kept: b"abc".to_vec(),
            discarded: 7,
        });
        assert_eq!(
            take_text(&captured),
            "abc\n[output truncated at 10 MiB; 7 more bytes discarded]\n"
        );
    }

    #[test]
    fn a_program_name_without_a_slash_is_looked_up_on_path() {
        let request = ExecRequest {
            program: "no-such-program".into(),
            args: Vec::new(),
            cwd: PathBuf::from("/"),
            timeout: None,
            cancel: None,
            plugin_cancel: None,
        };
        let error = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(spawn_error(&request, &error).contains("no such program on PATH"));
        let request = ExecRequest {
            program: "./no-such-program".into(),
            ..request
        };
        assert!(spawn_error(&request, &error).contains("no such file"));
    }
}
