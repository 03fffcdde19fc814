//! Isolation loses nothing (`loader/host/src/isolate`): the plugin of
//! tests/fixtures/parity.c, which uses every host service and registration a plugin has and
//! logs what it saw, runs through the real binary in process, isolated, and confined (a
//! grant in the user's settings.json, so it runs isolated in a sandbox), next to a second
//! build of it (`partner`) that stays in process or is isolated too; the logs are the same
//! in every arrangement, and hold the values expected (the command line's flag, the system
//! prompt the plugins chained, the `session_directory` the plugin chose, the event bus's
//! messages both ways between an isolated plugin and an in-process one, and between two
//! isolated ones). The interactive mode runs the plugin's keyboard shortcut in process,
//! isolated and confined alike.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::Duration;

use pi_hooks_tests::pty::{Pty, WAIT, keys};
use pi_hooks_tests::{Sandbox, c_fixture_as, output_within};
use serde_json::{Value, json};

/// Where the parity plugin runs, and its partner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// Both in process.
    InProcess,
    /// `parity` isolated (settings.json's `isolate` list), `partner` in process.
    Isolated,
    /// Both isolated (`isolate: true`).
    BothIsolated,
    /// `parity` confined (a grant keyed by its library's path), `partner` in process.
    Confined,
}

struct World {
    sandbox: Sandbox,
    parity: PathBuf,
    partner: PathBuf,
    script: PathBuf,
}

fn world() -> World {
    let sandbox = Sandbox::new();
    let parity = c_fixture_as(&sandbox.lib(), "parity", "libparity", &[]);
    let partner = c_fixture_as(
        &sandbox.lib(),
        "parity",
        "libpartner",
        &["-DPARITY_NAME=\"partner\"", "-DPARITY_KEY=\"ctrl+g\""],
    );
    // One turn calls each plugin's tool, the next ends the run.
    let script = sandbox.script(&json!({"turns": [
        {"toolCalls": [
            {"name": "tool_parity", "arguments": {"x": 1}},
            {"name": "tool_partner", "arguments": {"x": 2}}]},
        {"text": "done"}]}));
    World {
        sandbox,
        parity,
        partner,
        script,
    }
}

/// The user's settings.json for `how`.
fn settings(world: &World, how: How) -> Value {
    match how {
        How::InProcess => json!({}),
        How::Isolated => json!({"isolate": ["libparity"]}),
        How::BothIsolated => json!({"isolate": true}),
        How::Confined => json!({"sandbox": {(world.parity.display().to_string()): {
            "read": ["${cwd}"],
            "write": ["${cwd}"],
            "exec": ["echo"],
        }}}),
    }
}

/// The log file both plugins write, and the folder the parity plugin's `session_directory`
/// names.
fn log_file(world: &World) -> PathBuf {
    world.sandbox.project().join("parity.log")
}

fn session_folder(world: &World) -> PathBuf {
    world.sandbox.project().join("parity-sessions")
}

/// What one run showed: the log's lines, sorted (the plugins of two processes write to it at
/// once), and the session files the run made.
struct Seen {
    lines: Vec<String>,
    /// The log's lines as written.
    written: Vec<String>,
    sessions: Vec<PathBuf>,
    stdout: String,
}

/// `pi-hooks run --mode json` with both plugins, arranged as `how`, with a session (so the
/// `session_directory` choice shows) and the prompts `go` and `/parity-parity now`.
fn run(world: &World, how: How) -> Seen {
    let _ = std::fs::remove_file(log_file(world));
    let _ = std::fs::remove_dir_all(session_folder(world));
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings(world, how).to_string(),
    )
    .unwrap();
    let command = world.sandbox.command(&[
        "run",
        "--mode",
        "json",
        "--script",
        world.script.to_str().unwrap(),
        "--hook",
        world.parity.to_str().unwrap(),
        "--hook",
        world.partner.to_str().unwrap(),
        "--parity-flag",
        "from-the-command-line",
        "go",
        "/parity-parity now",
    ]);
    let output = output_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{how:?}: {stderr}");
    assert!(
        !stderr.contains("Extension error"),
        "{how:?}: a plugin failed: {stderr}"
    );
    let log = std::fs::read_to_string(log_file(world))
        .unwrap_or_else(|e| panic!("{how:?}: no log ({e}): {stderr}"));
    let written: Vec<String> = log.lines().map(str::to_owned).collect();
    let mut lines = written.clone();
    lines.sort();
    let sessions = std::fs::read_dir(session_folder(world))
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    Seen {
        lines,
        written,
        sessions,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
    }
}

/// The lines of `seen` that start with `prefix`.
fn with<'a>(seen: &'a Seen, prefix: &str) -> Vec<&'a str> {
    seen.lines
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with(prefix))
        .collect()
}

/// The one line of `seen` that starts with `prefix`.
fn one<'a>(seen: &'a Seen, prefix: &str) -> &'a str {
    match with(seen, prefix).as_slice() {
        [line] => line,
        other => panic!("{} lines start with {prefix:?}: {other:?}", other.len()),
    }
}

/// What the plugins must have seen in any arrangement: the values themselves, so equal logs
/// cannot be equally empty.
fn assert_expected(world: &World, seen: &Seen, how: How) {
    let project = world.sandbox.project().display().to_string();
    for (name, x) in [("parity", 1), ("partner", 2)] {
        let line = |rest: &str| format!("{name} {rest}");
        for expected in [
            line("exec status=0 stdout=parity-exec"),
            line("editor_text status=0 \"\""),
            line("theme status=0 {\"name\":\"plain\",\"colors\":{}}"),
            line("is_idle=1 has_pending=0 is_aborted=0"),
            line("session_start reason=startup"),
            line(&format!(
                "session_start mode=2 has_ui=0 cwd={project} session_file=set prompt=0:14650fb0739d0383:--"
            )),
            line(&format!(
                "timer mode=2 has_ui=0 cwd={project} session_file=set prompt=0:14650fb0739d0383:--"
            )),
            line(&format!("tool params={{\"x\":{x}}}")),
            line("events_emit hello=0"),
            line("events_on late=0"),
            line("session_shutdown"),
        ] {
            assert!(
                seen.lines.contains(&expected),
                "{how:?}: no line {expected:?} in {:#?}",
                seen.lines
            );
        }
        assert!(
            one(seen, &line("model status=0 ")).contains("\"provider\":\"scripted\""),
            "{how:?}"
        );
        assert!(
            one(seen, &line("active_tools status=0 ")).contains("\"tool_parity\",\"tool_partner\""),
            "{how:?}"
        );
        assert_eq!(
            one(seen, &line("identity status=0 ")),
            line(&format!(
                "identity status=0 library:{}",
                world.sandbox.lib().join(format!("lib{name}.so")).display()
            )),
            "{how:?}"
        );
        // The system prompt: the event's and the context's agree; what the plugins set and
        // returned is what later handlers' contexts read (both plugins' additions: `RC`).
        let before = with(seen, &line("before_agent_start event.prompt="));
        assert!(
            before.len() == 1 && before[0].contains("same_as_ctx=1"),
            "{how:?}: {before:?}"
        );
        for event in ["tool_call", "turn_end"] {
            let lines = with(
                seen,
                &line(&format!("{event} mode=2 has_ui=0 cwd={project} ")),
            );
            assert!(
                !lines.is_empty() && lines.iter().all(|l| l.ends_with(":RC")),
                "{how:?}: {event} did not see the chained system prompt: {lines:?}"
            );
        }
        // The bus: each plugin hears both hellos and both replies (sent from a bus
        // handler), in any arrangement; of the late messages (a subscription made in
        // session_start, after init) those emitted after it subscribed: `parity`'s
        // session_start runs first, so `partner` misses `parity`'s.
        let mut heard = vec![
            ("parity.hello", r#"{"from":"parity"}"#, 1),
            ("parity.hello", r#"{"from":"partner"}"#, 1),
            ("parity.late", r#"{"from":"partner"}"#, 1),
            ("parity.reply", r#"{"from":"parity","to":"partner"}"#, 1),
            ("parity.reply", r#"{"from":"partner","to":"parity"}"#, 1),
        ];
        heard.push((
            "parity.late",
            r#"{"from":"parity"}"#,
            usize::from(name == "parity"),
        ));
        // Emitted during init: `parity`, loaded first, hears `partner`'s; `partner` was not
        // subscribed yet when `parity` emitted.
        heard.push((
            "parity.init",
            r#"{"from":"partner"}"#,
            usize::from(name == "parity"),
        ));
        heard.push(("parity.init", r#"{"from":"parity"}"#, 0));
        for (channel, data, times) in heard {
            let expected = line(&format!("bus {channel} data={data}"));
            assert_eq!(
                seen.lines.iter().filter(|l| **l == expected).count(),
                times,
                "{how:?}: {expected:?} not heard {times} times: {:#?}",
                seen.lines
            );
        }
        assert_eq!(
            with(seen, &line("bus emit parity.reply status=0")).len(),
            1,
            "{how:?}"
        );
    }
    // Subscribers get an emission in subscription order, which is load order for the
    // subscriptions made in init, whichever plugin's child started first.
    for channel in ["parity.hello", "parity.reply"] {
        let heard = |name: &str| {
            let prefix = format!("{name} bus {channel} data={{\"from\":\"partner\"");
            seen.written
                .iter()
                .position(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("{how:?}: no {prefix:?}"))
        };
        assert!(
            heard("parity") < heard("partner"),
            "{how:?}: partner heard {channel} before parity: {:#?}",
            seen.written
        );
    }
    // Only the parity plugin has the flag it reads, the command and the session folder.
    assert!(
        seen.lines
            .contains(&"parity flag status=0 \"from-the-command-line\"".to_owned()),
        "{how:?}: {:#?}",
        seen.lines
    );
    assert!(
        seen.lines
            .contains(&"partner flag status=0 \"unset\"".to_owned()),
        "{how:?}"
    );
    assert_eq!(one(seen, "parity command args="), "parity command args=now");
    assert_eq!(
        one(seen, "parity command mode="),
        format!(
            "parity command mode=2 has_ui=0 cwd={project} session_file=set prompt=0:14650fb0739d0383:--"
        )
    );
    assert_eq!(
        one(seen, "parity session_directory "),
        format!("parity session_directory cwd={project} ctx.cwd={project} mode=2")
    );
    // The session went where the plugin's session_directory said.
    assert_eq!(seen.sessions.len(), 1, "{how:?}: {:?}", seen.sessions);
    assert!(
        seen.sessions[0].extension().is_some_and(|e| e == "jsonl"),
        "{how:?}: {:?}",
        seen.sessions
    );
    // The tools ran as the model called them.
    assert!(seen.stdout.contains("parity tool ran"), "{how:?}");
}

#[test]
fn an_isolated_or_confined_plugin_sees_what_it_sees_in_process() {
    let world = world();
    let in_process = run(&world, How::InProcess);
    assert_expected(&world, &in_process, How::InProcess);
    for how in [How::Isolated, How::BothIsolated, How::Confined] {
        let seen = run(&world, how);
        assert_expected(&world, &seen, how);
        assert_eq!(
            seen.lines, in_process.lines,
            "{how:?} saw something else than in process"
        );
    }
}

/// The interactive mode with the parity plugin arranged as `how`: its shortcut (Ctrl+Q),
/// pressed with text in the editor, runs with the context of a key press, reads the
/// editor's text, and its notification shows.
fn press_the_shortcut(world: &World, how: How) -> Vec<String> {
    let _ = std::fs::remove_file(log_file(world));
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings(world, how).to_string(),
    )
    .unwrap();
    let script = world.script.to_str().unwrap();
    let mut pty = Pty::start(
        &world.sandbox,
        &[
            "--no-session",
            "--no-hooks",
            "--script",
            script,
            "-e",
            world.parity.to_str().unwrap(),
        ],
        30,
        100,
    );
    pty.wait_for("the footer", WAIT, |screen| {
        screen
            .lines()
            .rev()
            .take(2)
            .any(|row| row.ends_with("  script"))
    });
    pty.type_text("draft words");
    pty.wait_for_text("draft words");
    pty.send(b"\x11"); // Ctrl+Q
    pty.wait_for_text("parity: shortcut pressed by parity");
    for _ in "draft words".chars() {
        pty.send(keys::BACKSPACE.as_bytes());
    }
    pty.type_text("/quit\r");
    let status = pty.wait_exit(Duration::from_secs(20));
    assert_eq!(status.exit_code(), 0, "{how:?}: {}", pty.screen_text());
    let log = std::fs::read_to_string(log_file(world)).unwrap();
    log.lines()
        .filter(|l| l.starts_with("parity shortcut "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn an_isolated_or_confined_plugin_s_shortcut_runs_as_in_process() {
    let world = world();
    let project = world.sandbox.project().display().to_string();
    let expected = vec![
        format!(
            "parity shortcut mode=4 has_ui=1 cwd={project} session_file=none prompt=0:14650fb0739d0383:--"
        ),
        "parity shortcut editor_text status=0 \"draft words\"".to_owned(),
    ];
    for how in [How::InProcess, How::Isolated, How::Confined] {
        assert_eq!(press_the_shortcut(&world, how), expected, "{how:?}");
    }
}

/// The events whose results the agent combines by rules of their own (pi's legacy
/// `session` event, which can cancel, and `session.compacting`) carry an isolated plugin's
/// result back, as `session_directory` does: here through the host library, with isolation
/// on in this process and `behave` plugins (`tests/fixtures/behave.c`) in children.
#[test]
fn an_isolated_plugin_s_legacy_session_and_session_compacting_results_count() {
    use pi_hooks_host::plugin::Runs;
    pi_hooks_host::isolate::set_serve_program(pi_hooks_tests::pi_hooks_bin());
    pi_hooks_host::isolate::enable(true);
    let world = pi_hooks_tests::BehaveWorld::new(&[
        (
            "legacy",
            json!({"handlers": [
                {"event": "session", "result": {"cancel": true}},
                {"event": "session.compacting", "result": {"context": ["a"]}},
            ]}),
        ),
        (
            "later",
            json!({"handlers": [
                {"event": "session.compacting", "result": {"prompt": "b"}},
            ]}),
        ),
    ]);
    assert!(
        world
            .runner
            .plugins()
            .iter()
            .all(|p| p.runs() == Runs::Isolated),
        "the plugins were not isolated"
    );
    let mut fields = serde_json::Map::new();
    fields.insert("targetSessionFile".into(), "/tmp/x.jsonl".into());
    assert_eq!(
        world.runner.emit_legacy_session("before_switch", fields),
        Some(json!({"cancel": true}))
    );
    assert_eq!(
        world
            .runner
            .emit_session_compacting(json!({"sessionID": "s"})),
        Some(json!({"prompt": "b"}))
    );
    assert_eq!(
        world.payload("legacy session"),
        json!({"targetSessionFile": "/tmp/x.jsonl", "type": "session", "reason": "before_switch"})
    );
}

/// `PI_EXEC_CANCEL_ON_ABORT` in an isolated plugin: the plugin `bash` tool of
/// tests/fixtures/exec_bash.c, isolated, runs `sleep 30`; an RPC `abort` stops the program
/// at once and the tool ends with "Command aborted", as in process (tests/tests/rpc_examples.rs).
#[test]
fn an_abort_stops_an_isolated_plugin_s_exec_that_asked_to_be_cancelled() {
    let sandbox = Sandbox::new();
    let plugin = pi_hooks_tests::c_fixture(&sandbox.lib(), "exec_bash", &[]);
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"isolate": true}).to_string(),
    )
    .unwrap();
    let script = sandbox.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
        {"text": "done"}]}));
    let mut client = pi_hooks_tests::rpc_client::RpcClient::start(sandbox.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().unwrap(),
        "-e",
        plugin.to_str().unwrap(),
    ]));
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    client.until(|l| l["type"] == "tool_execution_start");
    std::thread::sleep(Duration::from_millis(300));
    let asked = std::time::Instant::now();
    client.send(&json!({"id": "a", "type": "abort"}));
    let (_, end) = client.until(|l| l["type"] == "tool_execution_end");
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "the program was stopped, not waited for"
    );
    let text = end["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.ends_with("Command aborted"), "{end}");
    client.until(|l| l["type"] == "agent_end");
    let (status, _) = client.close();
    assert_eq!(status.code(), Some(0));
}
