//! RPC `bash` and `abort_bash`, after pi's `session.executeBash`: the command runs in the
//! session's cwd under the shell the bash tool uses, stdout and stderr merged, `\r` removed,
//! tail-truncated like the tool (the whole output then goes to a `pi-bash-*.log` temp file),
//! and the result is pi's `BashResult` `{output, exitCode?, cancelled, truncated,
//! fullOutputPath?}`. The run is recorded as a `bashExecution` message (after the current
//! agent run, as pi defers it). It runs on the host's runtime, so input keeps being read.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use pi_hooks_agent::tools::builtin::bash::shell_program;
use pi_hooks_agent::tools::builtin::truncate::{TruncationOptions, truncate_tail};
use pi_hooks_agent::{AgentHandle, now_ms};

/// How long to wait for the output pipes once the shell has exited (background children
/// that keep them open are not waited for).
const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(250);

/// The running command's abort switch, if one runs.
#[derive(Default)]
pub struct BashControl {
    current: Mutex<Option<Arc<Abort>>>,
}

/// One command's abort switch.
#[derive(Default)]
struct Abort {
    requested: AtomicBool,
    notify: Notify,
}

impl BashControl {
    /// `abort_bash`: kills the running command's process group (nothing runs: no effect).
    pub fn abort(&self) {
        let current = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(abort) = current {
            abort.requested.store(true, Ordering::Release);
            abort.notify.notify_one();
        }
    }

    /// Whether a command runs.
    pub fn is_running(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Starts `run.command` in `run.cwd`: the abort switch is set at once (an `abort_bash`
    /// read after this call reaches it), the returned future runs the command and gives
    /// pi's `BashResult` or the error text. The recorded `bashExecution` message carries
    /// `excludeFromContext` when `run` says so (`!!` in the terminal).
    pub fn execute(
        self: Arc<Self>,
        run: BashRun,
        agent: AgentHandle,
    ) -> impl std::future::Future<Output = Result<Value, String>> + Send + 'static {
        self.execute_streaming(run, agent, Box::new(|_| {}))
    }

    /// [`BashControl::execute`], handing each piece of output to `on_output` as it comes
    /// (text, `\r` removed, never a split UTF-8 character): RPC's `bash_execution_update`.
    pub fn execute_streaming(
        self: Arc<Self>,
        run: BashRun,
        agent: AgentHandle,
        mut on_output: Box<dyn FnMut(&str) + Send>,
    ) -> impl std::future::Future<Output = Result<Value, String>> + Send + 'static {
        let abort = Arc::new(Abort::default());
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(abort.clone());
        async move {
            let BashRun {
                command,
                cwd,
                env,
                exclude_from_context,
            } = run;
            let result = self::run(&command, &cwd, &env, &abort, &mut *on_output).await;
            {
                // A later command took the switch over (pi keeps one): leave it to that one.
                let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
                if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, &abort)) {
                    *current = None;
                }
            }
            record(&agent, &command, result?, exclude_from_context).await
        }
    }
}

/// Records a command's `BashResult` as a `bashExecution` message (with `excludeFromContext`
/// when asked) once the agent is idle, as pi does, so a run's tool messages stay in order;
/// gives the result back.
pub async fn record(
    agent: &AgentHandle,
    command: &str,
    result: Value,
    exclude_from_context: bool,
) -> Result<Value, String> {
    while agent.is_streaming() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut message = json!({"role": "bashExecution", "command": command});
    if let (Value::Object(fields), Value::Object(result)) = (&mut message, &result) {
        fields.extend(result.clone());
    }
    if exclude_from_context {
        message["excludeFromContext"] = true.into();
    }
    message["timestamp"] = now_ms().into();
    agent.append_message(message)?;
    Ok(result)
}

/// A command to run for `bash` (RPC) or `!` (the terminal).
#[derive(Debug, Clone, Default)]
pub struct BashRun {
    /// The shell command.
    pub command: String,
    /// Where it runs.
    pub cwd: PathBuf,
    /// Variables set for it on top of the host's environment.
    pub env: Vec<(String, String)>,
    /// `!!`: the record stays out of the model's context.
    pub exclude_from_context: bool,
}

async fn run(
    command: &str,
    cwd: &std::path::Path,
    env: &[(String, String)],
    abort: &Abort,
    on_output: &mut (dyn FnMut(&str) + Send),
) -> Result<Value, String> {
    let mut shell = tokio::process::Command::new(shell_program());
    shell.envs(env.iter().map(|(k, v)| (k, v)));
    shell
        .arg("-c")
        .arg(pi_hooks_agent::tools::builtin::merged_stderr_script(
            command,
        ))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = shell
        .spawn()
        .map_err(|e| format!("Failed to start shell: {e}"))?;
    let pgid = child.id().map(|id| id as libc::pid_t);
    let (sender, mut chunks) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    if let Some(out) = child.stdout.take() {
        tokio::spawn(pump(out, sender.clone()));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(pump(err, sender.clone()));
    }
    drop(sender);
    let mut output = Vec::new();
    // Where the output not yet handed to `on_output` starts (an incomplete UTF-8 character
    // waits for the rest of its bytes).
    let mut streamed = 0;
    let mut status = None;
    let mut cancelled = false;
    let drain = tokio::time::sleep(Duration::from_secs(u64::MAX / 4));
    tokio::pin!(drain);
    loop {
        tokio::select! {
            chunk = chunks.recv() => match chunk {
                Some(chunk) => {
                    output.extend_from_slice(&chunk);
                    streamed += stream_text(&output[streamed..], on_output);
                }
                None => break,
            },
            exited = child.wait(), if status.is_none() => {
                status = Some(exited.ok());
                drain.as_mut().reset(tokio::time::Instant::now() + EXIT_DRAIN_GRACE);
            }
            () = &mut drain => break,
            () = abort.notify.notified(), if !cancelled => {
                if abort.requested.load(Ordering::Acquire) {
                    cancelled = true;
                    if let Some(pgid) = pgid {
                        // SAFETY: kill(2) with a negative pid signals the process group this
                        // function created; it has no memory-safety preconditions.
                        unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    }
                }
            }
        }
    }
    let status = match status {
        Some(status) => status,
        None => child.wait().await.ok(),
    };
    if streamed < output.len() {
        on_output(&String::from_utf8_lossy(&output[streamed..]).replace('\r', ""));
    }
    let text = String::from_utf8_lossy(&output).replace('\r', "");
    let truncation = truncate_tail(&text, TruncationOptions::default());
    let mut result = Map::new();
    result.insert(
        "output".into(),
        if truncation.truncated {
            truncation.content.clone()
        } else {
            text.clone()
        }
        .into(),
    );
    if !cancelled && let Some(code) = status.and_then(|s| s.code()) {
        result.insert("exitCode".into(), code.into());
    }
    result.insert("cancelled".into(), cancelled.into());
    result.insert("truncated".into(), truncation.truncated.into());
    if truncation.truncated
        && let Some(path) = full_output_file(&text)
    {
        result.insert("fullOutputPath".into(), path.into());
    }
    Ok(Value::Object(result))
}

/// Hands the complete UTF-8 text at the start of `bytes` to `on_output` (`\r` removed;
/// invalid bytes as U+FFFD), keeping back an incomplete character at the end; the number of
/// bytes handed over.
fn stream_text(bytes: &[u8], on_output: &mut (dyn FnMut(&str) + Send)) -> usize {
    let complete = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        // An incomplete character at the end waits; an invalid one goes out as U+FFFD.
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        Err(_) => bytes.len(),
    };
    if complete > 0 {
        let text = String::from_utf8_lossy(&bytes[..complete]).replace('\r', "");
        if !text.is_empty() {
            on_output(&text);
        }
    }
    complete
}

/// Copies a pipe into `sender` until EOF.
async fn pump(mut pipe: impl AsyncReadExt + Unpin, sender: tokio::sync::mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 || sender.send(buf[..n].to_vec()).await.is_err() {
            break;
        }
    }
}

/// Writes the whole output to a kept `pi-bash-*.log` temp file (mode 0600); its path.
fn full_output_file(text: &str) -> Option<String> {
    let (mut file, path) = tempfile::Builder::new()
        .prefix("pi-bash-")
        .suffix(".log")
        .rand_bytes(16)
        .tempfile_in(std::env::temp_dir())
        .ok()?
        .keep()
        .ok()?;
    file.write_all(text.as_bytes()).ok()?;
    Some(path.to_string_lossy().into_owned())
}
