//! RPC mode (`pi-hooks rpc`): pi 1.6's JSONL protocol on stdin/stdout (a superset of pi
//! 0.73.1's: its clients ignore the lines they do not know), so a pi RPC client drives the
//! host unchanged. Commands come in as lines ([`framing`]) and are answered by
//! [`commands`]; events go out as the same JSON lines JSON mode prints; plugins' UI calls
//! become `extension_ui_request` lines ([`ui`]).
//!
//! Threads: the agent runs prompts on a host thread of its own; stdin is read on the host's
//! tokio runtime and never waits for a run or a dialog, so `abort`, `steer`, `get_state` and
//! dialog answers arrive while a prompt runs. When stdin closes the run is aborted, waiting
//! dialogs answer their defaults, `session_shutdown {reason:"quit"}` goes to the plugins and
//! the process exits 0.

pub mod bash;
pub mod commands;
pub mod tree;
pub mod ui;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::core::{self, CoreSetup, LineWriter};
use commands::{Commands, Job};
use pi_hooks_agent::EventSink;
use pi_hooks_host::plugin::LoadedPlugin;
use pi_hooks_host::plugin_files::discover::Origin;
use pi_hooks_host::serve::framing;
use ui::RpcUi;

/// pi 0.73.1's `SourceInfo` of a plugin (`{path, source, scope, origin, baseDir?}`), as pi's
/// package manager fills it for an extension found the same way: auto-discovered in a folder
/// (`source:"auto"`, `baseDir` the `.pi` folder or the agent directory: the folder's parent),
/// listed in a settings file (`source:"local"`, no `baseDir`), or named on the command line
/// (`-e`/`--hook`: pi's resource loader gives its command-line extensions
/// `{source:"cli", scope:"temporary", origin:"top-level"}`, no `baseDir`).
fn source_info(plugin: &LoadedPlugin) -> Value {
    let path = std::path::Path::new(&plugin.path);
    let folder = path.parent();
    let (source, scope, origin, base_dir) = match plugin.origin {
        Origin::Project => (
            "auto",
            "project",
            "top-level",
            folder.and_then(|f| f.parent()),
        ),
        Origin::Global => ("auto", "user", "top-level", folder.and_then(|f| f.parent())),
        Origin::ProjectSettings => ("local", "project", "top-level", None),
        Origin::GlobalSettings => ("local", "user", "top-level", None),
        Origin::Cli => ("cli", "temporary", "top-level", None),
        // An installed package's library: pi's package origin, in the package's scope.
        Origin::Package => (plugin.path.as_str(), "user", "package", folder),
        Origin::ProjectPackage => (plugin.path.as_str(), "project", "package", folder),
    };
    let mut info = json!({
        "path": plugin.path,
        "source": source,
        "scope": scope,
        "origin": origin,
    });
    if let Some(base_dir) = base_dir {
        info["baseDir"] = base_dir.to_string_lossy().into_owned().into();
    }
    info
}

/// The `get_commands` entries of the plugins loaded now (first registration of a name wins;
/// a plugin command named like a built-in is skipped, its plugin was warned at load), shaped
/// as pi's `RpcSlashCommand`: `{name, description, source:"extension", sourceInfo}`. Read
/// at each request, so a reload's or `--watch`'s changes show at once.
pub(crate) fn plugin_commands(plugins: &[Arc<LoadedPlugin>]) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    let mut list = Vec::new();
    for plugin in plugins {
        for command in plugin.registrations().commands {
            if !pi_hooks_host::plugin::registrations::is_builtin_command(&command.name)
                && seen.insert(command.name.clone())
            {
                list.push(json!({
                    "name": command.name,
                    "description": command.description,
                    "source": "extension",
                    "sourceInfo": source_info(plugin),
                }));
            }
        }
    }
    list
}

/// Runs the RPC session until stdin closes; returns the exit code (0).
pub fn run(setup: CoreSetup) -> i32 {
    let out = LineWriter::stdout();
    core::load_error_lines(&setup.report, &out);
    let cwd = setup.cwd.clone();
    let pending: Arc<Mutex<Option<Value>>> = Arc::default();
    let prompts = Arc::new(commands::PromptGate::default());
    let sink: EventSink = {
        let out = out.clone();
        let prompts = prompts.clone();
        Box::new(move |event: &Value| {
            if event["type"] == "agent_end" {
                // The run is over before a client can read that it is: a prompt sent on
                // reading `agent_end` is accepted, not refused as busy.
                prompts.finish();
            }
            out.line(&core::json_event(event));
        })
    };
    let mut agent = core::build(setup, Some(out.clone()), sink);
    let handle = agent.handle();
    let ui = RpcUi::new(out.clone());
    handle.bind_ui(ui.clone());
    let (jobs, queue) = std::sync::mpsc::channel::<Job>();
    // What a plugin queues while the agent is idle (a timer's `send_user_message`) runs at
    // once, as in pi: the agent's thread is woken with a job that runs it.
    let waker = std::sync::Mutex::new(jobs.clone());
    handle.set_waker(Arc::new(move || {
        let sender = waker.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = sender.send(Box::new(|agent: &mut pi_hooks_agent::Agent| {
            agent.run_queued()
        }));
    }));
    // As pi binds its extensions (`session_start`) before it reads stdin: no command is read
    // before the plugins have started.
    let (started, wait_started) = std::sync::mpsc::channel::<()>();
    let agent_thread = std::thread::Builder::new()
        .name("pi-hooks-agent".into())
        .spawn(move || {
            agent.start();
            let _ = started.send(());
            let handle = agent.handle();
            for job in queue {
                job(&mut agent);
                if handle.shutdown_requested() {
                    // A plugin's `shutdown`: as pi, once the command is over.
                    core::shutdown(&mut agent);
                    std::process::exit(0);
                }
            }
            core::shutdown(&mut agent);
        });
    let agent_thread = match agent_thread {
        Ok(thread) => thread,
        Err(error) => {
            eprintln!("pi-hooks: cannot start the agent thread: {error}");
            return 1;
        }
    };
    // The agent thread says when it started (or hangs up when it died: the join says why).
    let _ = wait_started.recv();
    let commands = Commands {
        out,
        agent: handle.clone(),
        ui: ui.clone(),
        jobs,
        prompts,
        pending,
        cwd,
        bash: Arc::default(),
    };
    let stopped_by = pi_hooks_host::services::runtime::handle().block_on(async {
        let input = framing::read_lines(tokio::io::stdin(), |line| match line {
            framing::Line::Text(text) => commands.line(text),
            framing::Line::TooLong(bytes) => commands.too_long(bytes),
        });
        tokio::select! {
            () = input => None,
            signal = termination() => signal,
        }
    });
    // Stdin closed, or SIGTERM / SIGHUP (as pi: the same shutdown, exit 128 + the signal): end
    // the run (its tool processes are killed) and the dialogs, then let the agent thread shut
    // down, which sends `session_shutdown` to the plugins.
    handle.abort();
    commands.bash.abort();
    ui.close();
    // The waker holds a sender of the agent thread's queue: dropped with `commands`' one, the
    // queue ends and the agent thread shuts down.
    handle.clear_waker();
    drop(commands);
    if agent_thread.join().is_err() {
        eprintln!("pi-hooks: the agent thread panicked");
        return 1;
    }
    stopped_by.map_or(0, |signal| 128 + signal)
}

/// Waits for SIGTERM or SIGHUP; returns its number. Never returns where signals cannot be
/// watched.
#[cfg(unix)]
async fn termination() -> Option<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => Some(libc::SIGTERM),
        _ = hangup.recv() => Some(libc::SIGHUP),
    }
}

#[cfg(not(unix))]
async fn termination() -> Option<i32> {
    std::future::pending().await
}
