//! A tiny agent loop of its own that gates its tool calls through native plugins.
//! `cargo run -p pi-hooks-host --example embed -- PLUGIN COMMAND...` runs each COMMAND as a `bash`
//! tool call once the plugins (the user's plugin folders and PLUGIN) allowed it; their
//! dialogs are answered on stdin, their notifications go to stderr.

use std::io::BufRead;
use std::sync::Arc;

use pi_hooks_host::{PI_MODE_RPC, Runner, RunnerConfig, Standalone, ToolCallOutcome, UiService};
use serde_json::{Value, json};

/// The plugins' UI: one line of stdin answers a dialog.
struct Terminal;

impl UiService for Terminal {
    fn dialog(&self, request: Value, _timeout: Option<std::time::Duration>) -> Option<Value> {
        eprintln!("{} {}", request["title"].as_str()?, request["options"]);
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer).ok()?;
        let answer = answer.trim();
        Some(match request["method"].as_str()? {
            "confirm" => json!({"confirmed": answer == "y"}),
            _ => json!({"value": answer}),
        })
    }

    fn fire(&self, request: Value) {
        eprintln!("[{}] {}", request["method"], request["message"]);
    }
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let plugin = args.next().ok_or("usage: embed PLUGIN COMMAND...")?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let options = pi_hooks_host::default_options(cwd.clone(), vec![plugin], false)?;
    let report = pi_hooks_host::load_all(&options);
    for error in &report.errors {
        eprintln!("not loaded: {}: {}", error.path, error.error);
    }
    let config = RunnerConfig::new(&cwd, PI_MODE_RPC);
    let runner = Runner::new(
        report.plugins.into_iter().map(Arc::new).collect(),
        config.clone(),
    );
    runner.bind_services(Arc::new(
        Standalone::new(config).with_ui(Arc::new(Terminal)),
    ));
    for (n, command) in args.enumerate() {
        let call =
            Runner::tool_call_payload(&format!("call-{n}"), "bash", &json!({"command": command}));
        match runner.emit_tool_call(call) {
            ToolCallOutcome::Block { reason } => println!("blocked: {command}: {reason}"),
            ToolCallOutcome::Allow { input, .. } => {
                // A handler may have rewritten the call's input.
                let command = input
                    .as_ref()
                    .and_then(|i| i["command"].as_str())
                    .map_or(command, str::to_owned);
                let out = std::process::Command::new("bash")
                    .args(["-c", &command])
                    .output();
                let out = out.map_err(|e| format!("cannot run bash: {e}"))?;
                println!(
                    "ran: {command}: {}",
                    String::from_utf8_lossy(&out.stdout).trim()
                );
            }
        }
    }
    Ok(())
}
