//! pi's `session_directory` event and `--session-dir`: where new session files go.

use std::path::{Path, PathBuf};

use pi_hooks_tests::{Sandbox, behave_env_var, behave_plugin, read_behave_log};
use serde_json::{Value, json};

/// `run -p` with the `picker` behave plugin (`handlers`) and `extra` arguments; returns the
/// output and the session files found under `root`.
fn run(sandbox: &Sandbox, handlers: Value, extra: &[&str]) -> (std::process::Output, Vec<PathBuf>) {
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, json!({"turns": [{"text": "ok"}]}).to_string()).unwrap();
    let plugin = behave_plugin(&sandbox.lib(), "picker");
    let mut args = vec![
        "run",
        "-p",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("hello");
    let mut command = sandbox.command(&args);
    command.env(
        behave_env_var("picker"),
        json!({ "handlers": handlers }).to_string(),
    );
    command.env("BEHAVE_LOG", sandbox.root().join("behave.log"));
    let output = command.output().expect("run pi-hooks");
    (output, jsonl_files(sandbox.root()))
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(jsonl_files(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
    found
}

#[test]
fn the_last_session_dir_a_plugin_names_holds_the_new_session() {
    let sandbox = Sandbox::new();
    let chosen = sandbox.root().join("chosen");
    let handlers = json!([
        {"event": "session_directory", "id": "first", "result": {"sessionDir": sandbox.root().join("ignored")}},
        {"event": "session_directory", "id": "second", "result": {"sessionDir": chosen}},
    ]);
    let (output, files) = run(&sandbox, handlers, &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].parent(), Some(chosen.as_path()));
    let log = read_behave_log(&sandbox.root().join("behave.log"));
    let payload = &log
        .iter()
        .find(|l| l.tag == "session_directory#first")
        .unwrap()
        .value;
    assert_eq!(
        payload,
        &json!({"type": "session_directory", "cwd": sandbox.project().display().to_string()})
    );
}

#[test]
fn session_dir_on_the_command_line_wins_and_skips_the_event() {
    let sandbox = Sandbox::new();
    let flag = sandbox.root().join("flagged");
    let handlers = json!([{"event": "session_directory", "result": {"sessionDir": sandbox.root().join("plugin")}}]);
    let (output, files) = run(
        &sandbox,
        handlers,
        &["--session-dir", flag.to_str().unwrap()],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].parent(), Some(flag.as_path()));
    let log = read_behave_log(&sandbox.root().join("behave.log"));
    assert!(
        !log.iter().any(|l| l.tag == "session_directory"),
        "not emitted"
    );
}

#[test]
fn a_failing_session_directory_handler_is_reported_as_pi_reports_it() {
    let sandbox = Sandbox::new();
    let handlers = json!([{"event": "session_directory", "error": "no folder for you"}]);
    let (output, files) = run(&sandbox, handlers, &[]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let plugin = behave_plugin(&sandbox.lib(), "picker");
    assert!(
        stderr.contains(&format!(
            "Extension \"{}\" session_directory handler failed: no folder for you",
            plugin.display()
        )),
        "{stderr}"
    );
    assert_eq!(files.len(), 1);
    assert!(
        files[0].starts_with(sandbox.agent_dir().join("sessions")),
        "{files:?}"
    );
}
