//! The command line as a newcomer meets it: `run --watch` says which modes watch, a plugin
//! named on the command line that fails to load makes `list` exit non-zero and `--strict`
//! stop a session (without it the session goes on, as in pi), `--help` shows how the
//! interactive mode starts, and the interactive mode's first screen points at `/help`.

use std::time::Duration;

use pi_hooks_tests::pty::Pty;
use pi_hooks_tests::{Sandbox, c_example_plugin};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn run_watch_is_refused_naming_the_modes_that_watch() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["run", "--watch", "--no-session", "--no-hooks", "hi"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("pi-hooks chat --watch -e FILE")
            && message.contains("pi-hooks rpc --watch -e FILE"),
        "{message}"
    );
    assert!(
        stdout(&output).is_empty(),
        "no prompt ran: {}",
        stdout(&output)
    );
}

/// A file named like a plugin that is not one.
fn broken_plugin(sandbox: &Sandbox) -> String {
    let path = sandbox.lib().join("libbroken.so");
    std::fs::write(&path, b"not a shared library").unwrap();
    path.display().to_string()
}

#[test]
fn list_exits_1_when_a_plugin_named_with_hook_fails_and_0_for_a_broken_folder_plugin() {
    let sandbox = Sandbox::new();
    let broken = broken_plugin(&sandbox);
    let named = sandbox.run(&["list", "--hook", &broken]);
    assert_eq!(named.status.code(), Some(1), "{}", stdout(&named));
    assert!(
        stdout(&named).contains("libbroken.so"),
        "{}",
        stdout(&named)
    );
    let missing = sandbox.run(&["list", "-e", "./no-such-plugin.so"]);
    assert_eq!(missing.status.code(), Some(1), "{}", stdout(&missing));

    // The same broken file found in the global folder is reported, and list succeeds: the
    // user did not ask about it.
    let hooks = sandbox.agent_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::copy(&broken, hooks.join("libbroken.so")).unwrap();
    let found = sandbox.run(&["list"]);
    assert_eq!(found.status.code(), Some(0), "{}", stdout(&found));
    assert!(
        stdout(&found).contains("libbroken.so"),
        "{}",
        stdout(&found)
    );

    // A good plugin named on the command line: success.
    let good = c_example_plugin(&sandbox.lib(), "block-sudo-c", "block_sudo");
    let ok = sandbox.run(&["list", "--no-hooks", "-e", good.to_str().unwrap()]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
}

#[test]
fn a_failed_plugin_is_reported_and_the_run_goes_on_unless_strict() {
    let sandbox = Sandbox::new();
    let broken = broken_plugin(&sandbox);
    let sessions = sandbox.root().join("sessions");
    let sessions = sessions.to_str().unwrap();
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "answered"}]}"#).unwrap();
    let script = script.to_str().unwrap();

    let lenient = sandbox.run(&[
        "run",
        "--session-dir",
        sessions,
        "--script",
        script,
        "-e",
        &broken,
        "hi",
    ]);
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));
    assert!(
        stdout(&lenient).contains("answered"),
        "{}",
        stdout(&lenient)
    );
    assert!(
        stderr(&lenient).contains("libbroken.so"),
        "{}",
        stderr(&lenient)
    );
    let kept = std::fs::read_dir(sessions).unwrap().count();
    assert_eq!(kept, 1, "the lenient run wrote its session");

    for command in ["run", "rpc"] {
        let strict = sandbox.run(&[
            command,
            "--strict",
            "--session-dir",
            sessions,
            "--script",
            script,
            "-e",
            &broken,
        ]);
        assert_eq!(
            strict.status.code(),
            Some(1),
            "{command}: {}",
            stderr(&strict)
        );
        let message = stderr(&strict);
        assert!(
            message.contains("libbroken.so") && message.contains("--strict"),
            "{command}: {message}"
        );
        assert!(
            !stdout(&strict).contains("answered"),
            "{command}: no prompt ran"
        );
        assert_eq!(
            std::fs::read_dir(sessions).unwrap().count(),
            kept,
            "{command} --strict left no session file behind"
        );
    }

    // --strict with every plugin loading runs as usual.
    let good = c_example_plugin(&sandbox.lib(), "block-sudo-c", "block_sudo");
    let fine = sandbox.run(&[
        "run",
        "--strict",
        "--no-session",
        "--script",
        script,
        "-e",
        good.to_str().unwrap(),
        "hi",
    ]);
    assert_eq!(fine.status.code(), Some(0), "{}", stderr(&fine));
    assert!(stdout(&fine).contains("answered"));
}

#[test]
fn help_shows_how_the_interactive_mode_starts() {
    let sandbox = Sandbox::new();
    let help = stdout(&sandbox.run(&["--help"]));
    let usage: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Usage:"))
        .take(2)
        .collect();
    assert!(
        usage[0].starts_with("Usage: pi-hooks [OPTIONS]") && usage[0].contains("interactive"),
        "{help}"
    );
    assert!(usage[1].trim() == "pi-hooks <COMMAND>", "{help}");
    let run_help = stdout(&sandbox.run(&["run", "--help"]));
    assert!(
        !run_help.contains("until the interactive mode exists"),
        "{run_help}"
    );
    assert!(run_help.contains("--strict"), "{run_help}");
}

#[test]
fn the_interactive_mode_s_first_screen_points_at_help() {
    let sandbox = Sandbox::new();
    let pty = Pty::start(&sandbox, &["--no-session", "--no-hooks"], 24, 100);
    pty.wait_for("the hint naming /help", Duration::from_secs(30), |screen| {
        screen.contains("/help lists the commands and keys")
    });
}

#[test]
fn trace_before_the_command_name_still_names_the_command() {
    let sandbox = Sandbox::new();
    for args in [
        ["--trace", "list", "--no-hooks"],
        ["--trace=json", "list", "--no-hooks"],
    ] {
        let output = sandbox.run(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stdout(&output).contains("No plugins loaded"),
            "{args:?} ran list: {}",
            stdout(&output)
        );
    }
}
