//! A pi RPC client over the real `pi-hooks rpc` binary's pipes, for the tests that drive RPC
//! mode: it writes command lines, reads the JSON lines the host writes, and fails the test
//! (naming what it saw) instead of hanging when an expected line does not come.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long any one expected line may take before the test fails instead of hanging.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A running `pi-hooks rpc` and the lines it wrote so far.
pub struct RpcClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far, for failure messages.
    pub seen: Vec<String>,
}

impl RpcClient {
    /// Starts `command` (a `pi-hooks rpc ...` command) with piped stdin and stdout.
    pub fn start(command: Command) -> RpcClient {
        RpcClient::start_with_stderr(command, Stdio::inherit())
    }

    /// As [`RpcClient::start`], with the host's stderr going to `stderr` (a file, say).
    pub fn start_with_stderr(mut command: Command, stderr: Stdio) -> RpcClient {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start pi-hooks rpc");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        RpcClient {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The exit status if the host has exited (stdin stays open).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("poll pi-hooks rpc")
    }

    /// The process id of the running host.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes raw bytes (a line's framing is the caller's).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to pi-hooks");
        stdin.flush().expect("flush");
    }

    /// Writes one command line.
    pub fn send(&mut self, command: &Value) {
        self.send_raw(format!("{command}\n").as_bytes());
    }

    /// The next stdout line as JSON, or a panic naming what was seen so far.
    pub fn next_line(&mut self) -> Value {
        match self.lines.recv_timeout(DEADLINE) {
            Ok(line) => {
                self.seen.push(line.clone());
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "no line within {DEADLINE:?}; seen:\n{}",
                    self.seen.join("\n")
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("stdout closed; seen:\n{}", self.seen.join("\n"))
            }
        }
    }

    /// Reads lines until one matches `wanted`; returns the lines before it and the match.
    pub fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let line = self.next_line();
            if wanted(&line) {
                return (before, line);
            }
            before.push(line);
        }
    }

    /// The response to the command with `id` (other lines skipped).
    pub fn response(&mut self, id: &str) -> Value {
        self.until(|l| l["type"] == "response" && l["id"] == id).1
    }

    /// The next `extension_ui_request` line.
    pub fn ui_request(&mut self) -> Value {
        self.until(|l| l["type"] == "extension_ui_request").1
    }

    /// Closes stdin and waits for the exit (within the deadline); returns the exit status and
    /// the lines not read yet.
    pub fn close(mut self) -> (ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("pi-hooks rpc did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let rest = self
            .lines
            .try_iter()
            .map(|l| serde_json::from_str(&l).expect("JSON line"))
            .collect();
        (status, rest)
    }
}

/// The `sourceInfo` of the command `name` in a `get_commands` response (pi's
/// `RpcSlashCommand`); fails the test, showing the response, when the command is not listed.
pub fn command_source_info(response: &Value, name: &str) -> Value {
    response["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no /{name}: {response}"))["sourceInfo"]
        .clone()
}
