//! Running hook commands through the host's `exec` (a program and its arguments, a time
//! limit, cancellation; the host kills the whole process group on timeout and when the
//! plugin is retired). Each command runs as Claude Code runs it: through `sh -c`, in the
//! session's working directory, with `CLAUDE_PROJECT_DIR` set and the event's JSON on stdin.
//!
//! The host's `exec` has no stdin and no environment of its own to give, so a small fixed
//! `sh` script does it: it exports `CLAUDE_PROJECT_DIR` and pipes the JSON (passed as
//! arguments, in pieces of at most 64 KiB) into `sh -c COMMAND`. The hook sees a pipe with
//! exactly the JSON on stdin, as in Claude Code. The limit this leaves: the JSON and the
//! command together must fit the system's argument space (`ARG_MAX`, 2 MiB on a default
//! Linux), or the hook fails to start with a non-blocking error saying so.
//!
//! Every matching hook of an event runs at the same time (one thread each), as in Claude
//! Code; the results come back in configuration order.
//!
//! Each hook runs for its own `timeout` at most, and never past what is left of the host's
//! time for the handler ([`crate::limit`]): a hook cut there is told apart from one that hit
//! its own `timeout` and from one stopped by an abort or the end of the session.

use std::time::{Duration, Instant};

use pi_hooks_abi::sdk::PluginHandle;
use serde_json::Value;

use crate::config::HookCommand;
use crate::limit::HandlerLimit;

/// The fixed wrapper: `$1` the project folder, `$2` the hook's command, the rest the JSON.
const WRAPPER: &str = "CLAUDE_PROJECT_DIR=$1; export CLAUDE_PROJECT_DIR; c=$2; shift 2; printf '%s' \"$@\" | sh -c \"$c\"";
/// The largest piece of the JSON in one argument (Linux refuses single arguments over
/// 128 KiB).
const PIECE: usize = 64 * 1024;

/// How one hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with `code`.
    Exited {
        /// The exit code.
        code: i32,
        /// Its standard output.
        stdout: String,
        /// Its standard error.
        stderr: String,
    },
    /// It ran out of time and was killed.
    Killed {
        /// Why, for the user.
        why: String,
    },
    /// The host stopped it before any time limit: the run was aborted, or the session ended
    /// or the plugin was unloaded (the caller, which can ask which, says so).
    Stopped,
    /// It could not be run at all.
    NotRun(String),
}

/// One hook's run.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// Its command, as configured.
    pub command: String,
    /// How it ended.
    pub ended: Ended,
}

/// Runs `hooks` with `input` on stdin, all at once, each within its own `timeout` and
/// `handler`'s limit (`None`: untimed handler); `async` ones are started and not waited for
/// (nor returned; they keep their own `timeout`, the handler does not wait for them).
pub fn run_hooks(
    handle: PluginHandle,
    hooks: &[HookCommand],
    input: &Value,
    project_dir: &str,
    handler: Option<&HandlerLimit>,
) -> Vec<HookRun> {
    let json = input.to_string();
    for hook in hooks.iter().filter(|h| h.run_async) {
        let (hook, json, dir) = (hook.clone(), json.clone(), project_dir.to_owned());
        std::thread::spawn(move || run_one(handle, &hook, &json, &dir, None));
    }
    let waited: Vec<&HookCommand> = hooks.iter().filter(|h| !h.run_async).collect();
    if let [only] = waited.as_slice() {
        return vec![run_one(handle, only, &json, project_dir, handler)];
    }
    std::thread::scope(|scope| {
        let running: Vec<_> = waited
            .iter()
            .map(|hook| scope.spawn(|| run_one(handle, hook, &json, project_dir, handler)))
            .collect();
        running
            .into_iter()
            .zip(&waited)
            .map(|(thread, hook)| {
                thread.join().unwrap_or_else(|_| HookRun {
                    command: hook.command.clone(),
                    ended: Ended::NotRun("the thread running it panicked".into()),
                })
            })
            .collect()
    })
}

fn run_one(
    handle: PluginHandle,
    hook: &HookCommand,
    json: &str,
    project_dir: &str,
    handler: Option<&HandlerLimit>,
) -> HookRun {
    let mut args = vec![
        "-c",
        WRAPPER,
        "claude-hook",
        project_dir,
        hook.command.as_str(),
    ];
    args.extend(pieces(json, PIECE));
    let own = Duration::from_secs_f64(hook.timeout_secs);
    let started = Instant::now();
    // The handler's limit cuts the hook when less is left of it than the hook's own.
    let cut = handler.filter(|h| h.deadline.saturating_duration_since(started) < own);
    let limit = cut.map_or(own, |h| h.deadline.saturating_duration_since(started));
    let ended =
        match handle.exec_cancel_on_abort("sh", &args, None, limit.as_millis().max(1) as u64) {
            Err(error) => Ended::NotRun(error.to_string()),
            Ok(out) if out.killed => {
                let ran = started.elapsed();
                if ran + Duration::from_millis(50) < limit {
                    Ended::Stopped
                } else if let Some(handler) = cut {
                    Ended::Killed {
                        why: handler.cut_message(ran, hook.timeout_secs),
                    }
                } else {
                    let secs = fmt_secs(hook.timeout_secs);
                    Ended::Killed {
                        why: format!("timed out after {secs}s (its \"timeout\": {secs})"),
                    }
                }
            }
            Ok(out) => Ended::Exited {
                code: out.code,
                stdout: out.stdout,
                stderr: out.stderr,
            },
        };
    HookRun {
        command: hook.command.clone(),
        ended,
    }
}

/// `text` in pieces of at most `max` bytes, cut at character boundaries.
fn pieces(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut cut = max;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

/// Seconds without a needless fraction.
pub fn fmt_secs(secs: f64) -> String {
    if secs.fract() == 0.0 {
        format!("{}", secs as u64)
    } else {
        format!("{secs}")
    }
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_cut_at_character_boundaries() {
        let text = "aé".repeat(10);
        let parts = pieces(&text, 4);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= 4));
        assert_eq!(pieces("", 4), [""]);
    }
}
