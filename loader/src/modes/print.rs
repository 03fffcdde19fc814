//! Print mode (`-p`: the final assistant text on stdout) and JSON mode (`--mode json`: the
//! session header, then every event as one JSON line, as pi writes them). Neither has a UI:
//! `hasUI` is false and dialogs answer their defaults. Plugin errors go to stderr as
//! `Extension error (<path>): <message>` (and, in JSON mode, also as `extension_error` lines).

use std::io::Write;
use std::sync::{Arc, Mutex};

use pi_hooks_abi::ffi::{PI_MODE_JSON, PI_MODE_PRINT};
use serde_json::Value;

use crate::agent::model::Model;
use crate::agent::{Agent, AgentConfig, DEFAULT_SYSTEM_PROMPT, EventSink};
use crate::display::escape;
use crate::load::LoadReport;
use crate::runner::{Runner, RunnerConfig};
use crate::session::SessionStore;
use crate::tools::builtin::builtin_tools;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The final assistant text.
    Text,
    /// JSON lines.
    Json,
}

/// What a print/JSON run needs.
pub struct PrintRun {
    /// Loaded plugins and settings.
    pub report: LoadReport,
    /// The model.
    pub model: Box<dyn Model>,
    /// The session.
    pub session: SessionStore,
    /// The working directory.
    pub cwd: std::path::PathBuf,
    /// The prompts, run one after another.
    pub prompts: Vec<String>,
    /// Text or JSON.
    pub output: Output,
}

/// One JSON line on stdout (stdout is shared by the loop and the tool threads). A failed
/// write (a closed pipe: `| head`) is ignored, never a panic; the run goes on to its end.
fn print_line(out: &Mutex<std::io::Stdout>, value: &Value) {
    let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// Runs the prompts; returns the process exit code.
pub fn run(run: PrintRun) -> i32 {
    let PrintRun {
        report,
        model,
        session,
        cwd,
        prompts,
        output,
    } = run;
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let (hook_timeout, tool_call_timeout) = crate::settings::timeouts(&report.settings);
    let config = RunnerConfig {
        cwd: cwd.to_string_lossy().into_owned(),
        mode: if output == Output::Json {
            PI_MODE_JSON
        } else {
            PI_MODE_PRINT
        },
        hook_timeout,
        tool_call_timeout,
        session_file: session.path().map(|p| p.to_string_lossy().into_owned()),
    };
    let runner = Arc::new(Runner::new(
        report.plugins.into_iter().map(Arc::new).collect(),
        config,
    ));
    {
        let stdout = stdout.clone();
        runner.on_error(Arc::new(move |error| {
            // Escaped: the path and the message are the plugin's; a closed stderr is ignored.
            let _ = writeln!(
                std::io::stderr().lock(),
                "Extension error ({}): {}",
                escape(&error.extension_path),
                escape(&error.error)
            );
            if output == Output::Json {
                let mut line = serde_json::to_value(error).unwrap_or_default();
                line["type"] = "extension_error".into();
                print_line(&stdout, &line);
            }
        }));
    }
    if output == Output::Json {
        print_line(&stdout, session.header());
    }
    let sink: EventSink = match output {
        Output::Json => {
            let stdout = stdout.clone();
            Box::new(move |event: &Value| print_line(&stdout, event))
        }
        Output::Text => Box::new(|_: &Value| {}),
    };
    let config = AgentConfig {
        cwd,
        system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
        input_source: "interactive",
    };
    let mut agent = Agent::new(runner, model, builtin_tools(), session, config, sink);
    agent.start();
    for prompt in &prompts {
        agent.prompt(prompt);
    }
    agent.shutdown();
    // Deliver what plugins emitted on the event bus before they are retired (bounded wait).
    crate::event_bus::drain(crate::event_bus::SHUTDOWN_DRAIN);
    if output == Output::Text
        && let Some(text) = agent.last_assistant_text()
    {
        let mut out = stdout.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{text}");
    }
    0
}
