//! `bash {command, timeout?}`: runs a shell command, after pi's `bash.ts`.
//!
//! What matches pi:
//! * The shell: `/bin/bash` if it exists, else `bash` on `PATH`, else `sh`; run as
//!   `<shell> -c <command>` in the call's cwd, stdin closed, in a new process group (pi spawns
//!   detached). A missing cwd fails with `Working directory does not exist: <cwd>\nCannot execute
//!   bash commands.`
//! * stdout and stderr are merged in the order the program wrote them (the script starts with
//!   `exec 2>&1`, so one pipe carries both) and streamed through `on_update` (throttled to
//!   one update per 100 ms, plus a last one) as `{content:[text], details:{truncation?,
//!   fullOutputPath?}}`.
//! * Tail truncation (last 2000 lines / 50 KB); once the output is over either limit the whole
//!   output goes to a temp file `pi-bash-*.log` (mode 0600) whose path is `details.fullOutputPath`,
//!   with `details.truncation` and the notice `[Showing lines X-Y of Z. Full output: <path>]`
//!   (or the `(50.0KB limit)` / `Showing last … of line N` variants).
//! * Empty output reads `(no output)`. A non-zero exit is an error whose text is the output plus
//!   `\n\nCommand exited with code N`; a process killed by a signal (no exit code) is not an
//!   error, as in pi.
//! * `timeout` (seconds, no default, `<= 0` means none) and cancellation kill the whole process
//!   group and fail with the output so far plus `Command timed out after N seconds` /
//!   `Command aborted`.
//!
//! Differences: the group is sent SIGTERM, then SIGKILL after up to a second (pi sends SIGKILL
//! at once). Line counts treat a final newline as ending the last line rather than starting an
//! empty one (pi's rolling count), so `seq 3000` reports `Showing lines 1001-3000 of 3000`.
//! After the shell exits we wait at most 250 ms for background children that still hold the
//! output pipes, rather than for them to exit.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncatedBy, TruncationOptions, TruncationResult,
    format_size, truncate_tail,
};
use super::{Args, js_number, object_schema};
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// How often partial output is streamed at most.
const UPDATE_THROTTLE: Duration = Duration::from_millis(100);
/// The shell script that runs `command` with its stderr on its stdout (`exec 2>&1` first):
/// one pipe carries both, so output arrives in the order the program wrote it (pi reads two
/// pipes, whose interleaving depends on scheduling).
pub fn merged_stderr_script(command: &str) -> String {
    format!("exec 2>&1\n{command}")
}

/// How long to wait for the output pipes to close once the shell has exited.
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(250);
/// How long a killed group gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(1);
/// How often the cancel flag, the timeout and the child are polled.
const POLL: Duration = Duration::from_millis(20);

/// The `bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashTool;

impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn label(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to \
         last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. \
         Optionally provide a timeout in seconds."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "command": {"type": "string", "description": "Bash command to execute"},
                "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
            }),
            &["command"],
        )
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("bash", call.args);
        let command = args.string("command")?;
        let timeout = args
            .opt_number("timeout")?
            .filter(|t| *t > 0.0 && t.is_finite());
        run(&command, call.cwd, timeout, call)
    }
}

/// The shell pi picks on Unix: `/bin/bash`, else `bash` on `PATH`, else `sh`.
pub fn shell_program() -> PathBuf {
    let bin_bash = Path::new("/bin/bash");
    if bin_bash.exists() {
        return bin_bash.to_path_buf();
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("bash");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from("sh")
}

/// How the command ended.
enum Outcome {
    Exited(ExitStatus),
    TimedOut,
    Aborted,
}

fn run(
    command: &str,
    cwd: &Path,
    timeout: Option<f64>,
    call: &ToolInvocation<'_>,
) -> Result<ToolOutput, String> {
    if call.cancel.is_cancelled() {
        return Err("Command aborted".to_string());
    }
    if !cwd.exists() {
        return Err(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            cwd.display()
        ));
    }

    let mut cmd = Command::new(shell_program());
    cmd.arg("-c")
        .arg(merged_stderr_script(command))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("Failed to start shell: {e}"))?;

    // Bounded, so a command that floods its output is slowed down instead of filling memory.
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(16);
    if let Some(out) = child.stdout.take() {
        spawn_reader(out, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        spawn_reader(err, tx.clone());
    }
    drop(tx);

    let started = Instant::now();
    let deadline = timeout
        .and_then(|t| Duration::try_from_secs_f64(t).ok())
        .and_then(|d| started.checked_add(d));
    let mut output = OutputAccumulator::new();
    let mut last_update: Option<Instant> = None;
    let mut dirty = false;
    let mut streams_open = true;
    let mut exited: Option<(ExitStatus, Instant)> = None;

    let mut idle_poll = Duration::from_millis(1);
    let outcome = loop {
        if streams_open {
            match rx.recv_timeout(POLL) {
                Ok(chunk) => {
                    output.append(&chunk);
                    dirty = true;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => streams_open = false,
            }
        } else {
            // The pipes closed: the shell is exiting. Its exit becomes visible to waitpid a
            // moment later, so poll soon, backing off to POLL for a process that closed its
            // output but keeps running.
            thread::sleep(idle_poll);
            idle_poll = (idle_poll * 2).min(POLL);
        }
        if dirty && last_update.is_none_or(|t| t.elapsed() >= UPDATE_THROTTLE) {
            emit_update(&mut output, call);
            last_update = Some(Instant::now());
            dirty = false;
        }
        if call.cancel.is_cancelled() {
            kill_group(&mut child);
            break Outcome::Aborted;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            kill_group(&mut child);
            break Outcome::TimedOut;
        }
        if exited.is_none() {
            match child.try_wait() {
                Ok(Some(status)) => exited = Some((status, Instant::now())),
                Ok(None) => {}
                Err(e) => return Err(format!("Failed to wait for the shell: {e}")),
            }
        }
        if let Some((status, at)) = exited
            && (!streams_open || at.elapsed() >= EXIT_DRAIN_GRACE)
        {
            break Outcome::Exited(status);
        }
    };

    // Whatever the killed processes wrote before dying is still in the pipes.
    if !matches!(outcome, Outcome::Exited(_)) {
        let until = Instant::now() + Duration::from_millis(200);
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(chunk) => {
                    output.append(&chunk);
                    dirty = true;
                }
                Err(_) => break,
            }
        }
    }
    if dirty {
        emit_update(&mut output, call);
    }

    let snapshot = output.finish();
    match outcome {
        Outcome::Aborted => Err(append_status(
            &format_output(&snapshot, &output, ""),
            "Command aborted",
        )),
        Outcome::TimedOut => {
            let secs = js_number(timeout.unwrap_or_default());
            Err(append_status(
                &format_output(&snapshot, &output, ""),
                &format!("Command timed out after {secs} seconds"),
            ))
        }
        Outcome::Exited(status) => {
            let text = format_output(&snapshot, &output, "(no output)");
            match status.code() {
                Some(code) if code != 0 => Err(append_status(
                    &text,
                    &format!("Command exited with code {code}"),
                )),
                _ => {
                    let details = if snapshot.truncation.truncated {
                        snapshot.details()
                    } else {
                        Value::Null
                    };
                    Ok(ToolOutput::text(text).with_details(details))
                }
            }
        }
    }
}

fn spawn_reader(mut pipe: impl Read + Send + 'static, tx: mpsc::SyncSender<Vec<u8>>) {
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
}

/// SIGTERM to the whole group, SIGKILL after [`KILL_GRACE`] (or at once once the shell is gone,
/// for anything left in the group), then reaps the shell.
fn kill_group(child: &mut Child) {
    #[cfg(unix)]
    {
        let pgid = child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals the process group we created; it has no
        // memory-safety preconditions.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let until = Instant::now() + KILL_GRACE;
        while Instant::now() < until {
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    {
        let _ = child.kill();
    }
    let _ = child.wait();
}

fn emit_update(output: &mut OutputAccumulator, call: &ToolInvocation<'_>) {
    let snapshot = output.snapshot();
    let mut details = Map::new();
    if snapshot.truncation.truncated {
        details.insert("truncation".into(), snapshot.truncation.to_json());
    }
    if let Some(path) = &snapshot.full_output_path {
        details.insert(
            "fullOutputPath".into(),
            Value::String(path.to_string_lossy().into_owned()),
        );
    }
    (call.on_update)(
        ToolOutput::text(snapshot.truncation.content.clone()).with_details(Value::Object(details)),
    );
}

/// pi's `appendStatus`: the text, a blank line, the status (just the status when no text).
fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// pi's `formatOutput`: the kept output (or `empty_text`) plus the truncation notice.
fn format_output(snapshot: &Snapshot, output: &OutputAccumulator, empty_text: &str) -> String {
    let t = &snapshot.truncation;
    let mut text = if t.content.is_empty() {
        empty_text.to_string()
    } else {
        t.content.clone()
    };
    if t.truncated {
        let path = snapshot
            .full_output_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let start = t.total_lines.saturating_sub(t.output_lines) + 1;
        let end = t.total_lines;
        if t.last_line_partial {
            text.push_str(&format!(
                "\n\n[Showing last {} of line {end} (line is {}). Full output: {path}]",
                format_size(t.output_bytes),
                format_size(output.last_line_bytes()),
            ));
        } else if t.truncated_by == Some(TruncatedBy::Lines) {
            text.push_str(&format!(
                "\n\n[Showing lines {start}-{end} of {}. Full output: {path}]",
                t.total_lines
            ));
        } else {
            text.push_str(&format!(
                "\n\n[Showing lines {start}-{end} of {} ({} limit). Full output: {path}]",
                t.total_lines,
                format_size(DEFAULT_MAX_BYTES)
            ));
        }
    }
    text
}

/// The output as it stands: the tail-truncated text and where the full output is.
struct Snapshot {
    truncation: TruncationResult,
    full_output_path: Option<PathBuf>,
}

impl Snapshot {
    fn details(&self) -> Value {
        let mut details = Map::new();
        details.insert("truncation".into(), self.truncation.to_json());
        if let Some(path) = &self.full_output_path {
            details.insert(
                "fullOutputPath".into(),
                Value::String(path.to_string_lossy().into_owned()),
            );
        }
        Value::Object(details)
    }
}

/// Streaming output with bounded memory (pi's `OutputAccumulator`): keeps a rolling tail for
/// display, counts lines and bytes of everything, and spools everything to a temp file once the
/// output is over a limit.
struct OutputAccumulator {
    /// The last bytes of the output (at least `2 * DEFAULT_MAX_BYTES` once that much arrived).
    tail: Vec<u8>,
    /// Whether `tail` begins at the start of a line.
    tail_at_line_start: bool,
    total_bytes: usize,
    newlines: usize,
    /// Bytes since the last newline.
    open_line_bytes: usize,
    /// Length of the last complete line.
    last_complete_line_bytes: usize,
    /// Output not yet written to the temp file (everything, until there is one).
    pending: Vec<u8>,
    temp: Option<(PathBuf, BufWriter<File>)>,
}

impl OutputAccumulator {
    fn new() -> Self {
        OutputAccumulator {
            tail: Vec::new(),
            tail_at_line_start: true,
            total_bytes: 0,
            newlines: 0,
            open_line_bytes: 0,
            last_complete_line_bytes: 0,
            pending: Vec::new(),
            temp: None,
        }
    }

    fn append(&mut self, data: &[u8]) {
        self.total_bytes += data.len();
        let mut line_start = 0usize;
        for (i, &b) in data.iter().enumerate() {
            if b == b'\n' {
                self.newlines += 1;
                self.last_complete_line_bytes = self.open_line_bytes + (i - line_start);
                self.open_line_bytes = 0;
                line_start = i + 1;
            }
        }
        self.open_line_bytes += data.len() - line_start;

        self.tail.extend_from_slice(data);
        if self.tail.len() > 4 * DEFAULT_MAX_BYTES {
            let cut = self.tail.len() - 2 * DEFAULT_MAX_BYTES;
            self.tail_at_line_start = self.tail[cut - 1] == b'\n';
            self.tail.drain(..cut);
        }

        match &mut self.temp {
            Some((_, file)) => {
                let _ = file.write_all(data);
            }
            None => {
                self.pending.extend_from_slice(data);
                if self.over_limits() {
                    self.ensure_temp_file();
                }
            }
        }
    }

    /// Lines so far; a final newline ends the last line.
    fn total_lines(&self) -> usize {
        self.newlines + usize::from(self.open_line_bytes > 0)
    }

    fn over_limits(&self) -> bool {
        self.total_bytes > DEFAULT_MAX_BYTES || self.total_lines() > DEFAULT_MAX_LINES
    }

    fn last_line_bytes(&self) -> usize {
        if self.open_line_bytes > 0 {
            self.open_line_bytes
        } else {
            self.last_complete_line_bytes
        }
    }

    fn ensure_temp_file(&mut self) {
        if self.temp.is_some() {
            return;
        }
        let created = tempfile::Builder::new()
            .prefix("pi-bash-")
            .suffix(".log")
            .rand_bytes(16)
            .tempfile_in(std::env::temp_dir())
            .and_then(|f| f.keep().map_err(|e| e.error));
        if let Ok((file, path)) = created {
            let mut writer = BufWriter::new(file);
            let _ = writer.write_all(&self.pending);
            self.pending = Vec::new();
            self.temp = Some((path, writer));
        }
    }

    fn snapshot(&mut self) -> Snapshot {
        let raw = String::from_utf8_lossy(&self.tail);
        let mut text: &str = &raw;
        if !self.tail_at_line_start
            && let Some(pos) = text.find('\n')
        {
            text = &text[pos + 1..];
        }
        let truncated = self.over_limits();
        let mut truncation = if truncated {
            let body = text.strip_suffix('\n').unwrap_or(text);
            truncate_tail(body, TruncationOptions::default())
        } else {
            truncate_tail(text, TruncationOptions::default())
        };
        if truncated {
            if truncation.truncated_by.is_none() {
                truncation.truncated_by = Some(if self.total_bytes > DEFAULT_MAX_BYTES {
                    TruncatedBy::Bytes
                } else {
                    TruncatedBy::Lines
                });
            }
            truncation.truncated = true;
            truncation.total_lines = self.total_lines();
            truncation.total_bytes = self.total_bytes;
            self.ensure_temp_file();
        }
        if let Some((_, file)) = &mut self.temp {
            let _ = file.flush();
        }
        Snapshot {
            truncation,
            full_output_path: self.temp.as_ref().map(|(p, _)| p.clone()),
        }
    }

    /// The final snapshot; the temp file is flushed and closed.
    fn finish(&mut self) -> Snapshot {
        let snapshot = self.snapshot();
        if let Some((_, mut file)) = self.temp.take() {
            let _ = file.flush();
        }
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulator_counts_lines_and_spools_when_over_limits() {
        let mut acc = OutputAccumulator::new();
        acc.append(b"one\ntwo\n");
        assert_eq!(acc.total_lines(), 2);
        let snap = acc.snapshot();
        assert!(!snap.truncation.truncated);
        assert_eq!(snap.truncation.content, "one\ntwo\n");
        assert!(snap.full_output_path.is_none());

        let mut acc = OutputAccumulator::new();
        let all: String = (1..=3000).map(|i| format!("{i}\n")).collect();
        for chunk in all.as_bytes().chunks(777) {
            acc.append(chunk);
        }
        let snap = acc.finish();
        let t = &snap.truncation;
        assert!(t.truncated);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.total_lines, t.output_lines), (3000, 2000));
        assert!(t.content.starts_with("1001\n") && t.content.ends_with("\n3000"));
        let path = snap.full_output_path.expect("temp file");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn accumulator_bounds_memory_and_keeps_line_boundaries() {
        let mut acc = OutputAccumulator::new();
        let line = format!("{}\n", "q".repeat(99));
        for _ in 0..5000 {
            acc.append(line.as_bytes()); // 500 KB in all
        }
        assert!(acc.tail.len() <= 4 * DEFAULT_MAX_BYTES);
        let snap = acc.finish();
        let t = &snap.truncation;
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(t.total_bytes, 500_000);
        assert_eq!(t.total_lines, 5000);
        assert!(
            t.content.split('\n').all(|l| l.len() == 99),
            "only whole lines are shown"
        );
        let path = snap.full_output_path.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 500_000);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn status_is_appended_after_a_blank_line() {
        assert_eq!(append_status("", "Command aborted"), "Command aborted");
        assert_eq!(
            append_status("out", "Command aborted"),
            "out\n\nCommand aborted"
        );
    }
}
