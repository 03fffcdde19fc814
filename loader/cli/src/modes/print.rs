//! Print mode (`-p`: the final assistant text on stdout) and JSON mode (`--mode json`: the
//! session header, then every event as one JSON line, as pi 1.6 writes them: see
//! [`core::json_event`] for `message_update`; each run ends with `agent_end {messages,
//! willRetry}`, then `agent_settled {aborted}` once nothing continues it). Neither has a UI:
//! `hasUI` is false and dialogs answer their defaults. Plugin errors go to stderr as
//! `Extension error (<path>): <message>` (and, in JSON mode, also as `extension_error` lines).
//! In print mode a run whose last assistant message failed prints its `errorMessage` on
//! stderr and exits with 1, as pi does.

use pi_hooks_abi::ffi::{PI_MODE_JSON, PI_MODE_PRINT};
use serde_json::Value;
use std::io::Write as _;

use super::core::{self, CoreSetup, LineWriter};
use pi_hooks_agent::EventSink;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The final assistant text.
    Text,
    /// JSON lines.
    Json,
}

/// Runs the prompts; returns the process exit code.
/// Runs `prompts` one after another over `setup` (its `mode` and `input_source` are set
/// here); returns the process exit code.
pub fn run(setup: CoreSetup, prompts: Vec<String>, output: Output) -> i32 {
    let stdout = LineWriter::stdout();
    let json = output == Output::Json;
    if json {
        stdout.line(setup.session.header());
        core::load_error_lines(&setup.report, &stdout);
    }
    let sink: EventSink = if json {
        let stdout = stdout.clone();
        Box::new(move |event: &Value| stdout.line(&core::json_event(event)))
    } else {
        Box::new(|_: &Value| {})
    };
    let setup = CoreSetup {
        mode: if json { PI_MODE_JSON } else { PI_MODE_PRINT },
        input_source: "interactive",
        ..setup
    };
    let mut agent = core::build(setup, json.then(|| stdout.clone()), sink);
    agent.start();
    for prompt in &prompts {
        agent.prompt(prompt);
    }
    core::shutdown(&mut agent);
    if output == Output::Text {
        // As pi's print mode: a last assistant message that failed or was aborted is reported
        // on stderr (its errorMessage) with exit code 1 instead of printed.
        let last = agent.handle().messages().pop();
        if let Some(last) = last.filter(|m| m["role"] == "assistant") {
            let stop = last["stopReason"].as_str().unwrap_or_default();
            if stop == "error" || stop == "aborted" {
                let message = last["errorMessage"]
                    .as_str()
                    .map_or_else(|| format!("Request {stop}"), str::to_owned);
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{}", pi_hooks_host::guards::display::escape(&message));
                return 1;
            }
        }
        if let Some(text) = agent.last_assistant_text() {
            stdout.text(&text);
        }
    }
    0
}
