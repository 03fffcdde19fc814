//! What crosses from a confined plugin's child to the host (`loader/host/src/isolate/child.rs`,
//! `isolate/transport/ring.rs`, `sandbox/report.rs`, `serve/mod.rs`): a hostile C plugin
//! (tests/fixtures/sandbox_channel.c) under the real binary writes terminal escapes to its
//! fd 1 and 2, sets the ring's `closed` word, forges a `denied` notification naming another
//! plugin and grant on the protocol pipe, writes a 400 KB line of nested JSON there, closes
//! that pipe and goes on, makes 3,000 refused opens in a row, and has a tool that never
//! returns. Its output reaches the host's stderr escaped and marked with the plugin; each
//! break of the protocol gets the child killed and reported (never echoed, never shown as a
//! refusal), over both transports; refusals are shown at most 64 KiB a second; the tool call
//! is bounded by `hookTimeout`; a child whose host is killed with SIGKILL ends. After each, the session goes on, and the same
//! plugin's honest calls succeed (so no test passes because everything is broken).

#![cfg(target_os = "linux")]

use std::process::Stdio;
use std::time::{Duration, Instant};

use pi_hooks_tests::confined::{Run, World, read_run, world_of};
use serde_json::{Value, json};

const TRANSPORTS: [&str; 2] = ["ring", "pipe"];

/// Each prompt plays on from the last: a `bash` call of the prompt itself, then a text.
fn script(world: &World, turns: &[Value]) {
    std::fs::write(
        &world.script,
        json!({"rewind": false, "turns": turns}).to_string(),
    )
    .unwrap();
}

fn bash_turns(count: usize) -> Vec<Value> {
    let mut turns = Vec::new();
    for _ in 0..count {
        turns.push(json!({"toolCalls": [{"name": "bash", "arguments": {"command": "${PROMPT}"}}]}));
        turns.push(json!({"text": "done"}));
    }
    turns
}

fn settings(world: &World, extra: Value) -> Value {
    let mut settings = json!({"sandbox": {(world.key()): {}}});
    for (key, value) in extra.as_object().unwrap() {
        settings[key] = value.clone();
    }
    settings
}

/// `pi-hooks run --mode json` with the channel plugin confined, one prompt each.
fn session(world: &World, settings: &Value, transport: &str, prompts: &[&str]) -> Run {
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut args = world.run_args();
    args.extend_from_slice(prompts);
    let mut command = world.sandbox.command_of(&world.binary, &args);
    command.env("PI_HOOKS_ISOLATE_TRANSPORT", transport);
    let run = read_run(pi_hooks_tests::output_within(
        command,
        Duration::from_secs(60),
    ));
    assert!(
        run.output.status.success(),
        "{transport}: the session did not go on: {}",
        run.stderr()
    );
    run
}

/// The texts of the `extension_error` lines.
fn errors(run: &Run) -> Vec<String> {
    run.errors
        .iter()
        .map(|e| e["error"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The honest calls after an attack: answered, or (the child being restarted) blocked
/// saying so; never anything else.
fn went_on(run: &Run, transport: &str) {
    let ping = run.outcome("ping");
    assert!(
        ping == "ping: ok" || ping.starts_with("blocked because the isolated plugin"),
        "{transport}: {ping}"
    );
}

#[test]
fn an_honest_run_answers_and_reports_nothing() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(2));
    for transport in TRANSPORTS {
        let run = session(
            &world,
            &settings(&world, json!({})),
            transport,
            &["echo ping", "echo ping"],
        );
        assert_eq!(run.outcome("ping"), "ping: ok", "{transport}");
        assert!(run.errors.is_empty(), "{transport}: {:?}", run.errors);
    }
}

#[test]
fn raw_output_to_fd_1_and_2_reaches_the_terminal_escaped_and_marked_with_the_plugin() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(2));
    let run = session(
        &world,
        &settings(&world, json!({})),
        "ring",
        &["echo escapes", "echo ping"],
    );
    assert_eq!(run.outcome("escapes"), "escapes: ok written to fd 1 and 2");
    assert_eq!(run.outcome("ping"), "ping: ok");
    let stderr = run.stderr();
    for raw in ['\u{1b}', '\u{7}'] {
        assert!(!stderr.contains(raw), "raw {raw:?} on stderr: {stderr:?}");
        assert!(
            !run.output.stdout.contains(&(raw as u8)),
            "raw {raw:?} on stdout"
        );
    }
    // Both descriptors' lines, each escaped and marked.
    let marked = format!("plugin \"{}\": ", world.hostile.display());
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CHANNEL-RAW"))
        .collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    for line in lines {
        assert_eq!(
            line,
            format!(
                "{marked}\\e]0;CHANNEL-RAW title\\u{{7}}\\e]52;c;Q0hBTk5FTC1SQVc=\\u{{7}}\\e[31mCHANNEL-RAW red\\e[0m"
            ),
            "{stderr}"
        );
    }
}

#[test]
fn a_forged_refusal_naming_another_plugin_and_grant_is_refused_and_the_child_killed() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(2));
    for transport in TRANSPORTS {
        let run = session(
            &world,
            &settings(&world, json!({})),
            transport,
            &["echo forge", "echo ping"],
        );
        let errors = errors(&run);
        assert_eq!(run.sandbox_reports(), 0, "{transport}: {errors:?}");
        assert!(
            !run.stderr().contains("FORGED-REFUSAL") && !run.stderr().contains("sandbox denied"),
            "{transport}: {}",
            run.stderr()
        );
        let broke: Vec<&String> = errors
            .iter()
            .filter(|e| e.contains("broke the serve protocol ("))
            .collect();
        assert_eq!(broke.len(), 1, "{transport}: {errors:?}");
        let expected = match transport {
            "ring" => {
                "a line of 170 bytes on its protocol pipe, where only doorbells go after its hello"
            }
            _ => "a sandbox refusal naming plugin \"someone-else\" where the host gave it",
        };
        assert!(broke[0].contains(expected), "{transport}: {broke:?}");
        assert!(
            broke[0].starts_with("plugin \"channel\" broke"),
            "{transport}: {broke:?}"
        );
        went_on(&run, transport);
    }
}

#[test]
fn a_400_kb_line_of_nested_json_is_a_protocol_break_not_echoed() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(2));
    for transport in TRANSPORTS {
        let run = session(
            &world,
            &settings(&world, json!({})),
            transport,
            &["echo bigline", "echo ping"],
        );
        let errors = errors(&run);
        let broke: Vec<&String> = errors
            .iter()
            .filter(|e| e.contains("broke the serve protocol ("))
            .collect();
        assert_eq!(broke.len(), 1, "{transport}: {errors:?}");
        assert!(broke[0].len() < 1024, "{transport}: {}", broke[0].len());
        // Neither the terminal nor the stream carries it.
        assert!(
            run.stderr().len() < 16 * 1024,
            "{transport}: {}",
            run.stderr().len()
        );
        assert!(!run.stderr().contains("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["));
        assert!(run.output.stdout.len() < 64 * 1024, "{transport}");
        went_on(&run, transport);
    }
}

#[test]
fn a_child_that_closes_its_protocol_pipe_and_goes_on_is_killed_not_waited_for() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(2));
    // With the pipe transport its answer can no longer come: the host used to wait for it
    // until the hang limit (27 s here).
    let started = Instant::now();
    let run = session(
        &world,
        &settings(&world, json!({})),
        "pipe",
        &["echo closefd", "echo ping"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    let closefd = run.outcome("closefd");
    assert!(
        closefd.contains(
            "broke the serve protocol (it closed its protocol pipe and went on running) and was killed"
        ),
        "{closefd}"
    );
    went_on(&run, "pipe");
}

#[test]
fn refusals_are_shown_at_most_64_kib_a_second_like_the_child_s_stderr() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(2));
    let run = session(
        &world,
        &settings(&world, json!({})),
        "ring",
        &["echo refusals", "echo ping"],
    );
    assert_eq!(run.outcome("refusals"), "refusals: ok 3000 refused");
    assert_eq!(run.outcome("ping"), "ping: ok");
    // Honest refusals, with the host's words: the first ones shown, the rest of the second
    // dropped and said so (not a protocol break).
    let shown = run.reports_with("id_rsa");
    assert!(shown > 0 && shown < 3000, "{shown} shown");
    let stderr = run.stderr();
    assert!(
        stderr.contains(&format!(
            "pi-hooks: isolated plugin \"{}\" reports more than 64 KiB of sandbox refusals a second; the rest of this second is dropped",
            world.hostile.display()
        )),
        "{}",
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert!(
        !errors(&run).iter().any(|e| e.contains("broke")),
        "{:?}",
        run.errors
    );
}

#[test]
fn the_child_setting_the_ring_s_closed_word_is_killed_and_reported() {
    let world = world_of("sandbox_channel");
    script(&world, &bash_turns(3));
    // It finds the ring's mapping in /proc/self/maps.
    let grant = json!({"sandbox": {(world.key()): {"read": ["/proc"]}}});
    let run = session(
        &world,
        &grant,
        "ring",
        &["echo closed", "echo ping", "echo ping"],
    );
    // The host finds the word while it waits for that call's answer (or, if the answer came
    // first, at its next call) and kills the child as a protocol break (not a crash, not a
    // two-second wait for an end that was not coming).
    const BROKE: &str =
        "broke the serve protocol (the child set the ring's closed word, which only the host sets)";
    let closed = run.outcome("closed");
    assert!(
        closed == "closed: ok set" || closed.contains(BROKE),
        "{closed}\n{}",
        run.stderr()
    );
    let errors = errors(&run);
    let broke: Vec<&String> = errors.iter().filter(|e| e.contains(BROKE)).collect();
    assert_eq!(broke.len(), 1, "{errors:?}\n{}", run.stderr());
    went_on(&run, "ring");
}

#[test]
fn a_confined_plugin_s_own_tool_that_never_returns_is_killed_at_the_hook_timeout() {
    let world = world_of("sandbox_channel");
    let mut turns = vec![
        json!({"toolCalls": [{"name": "hang_tool", "arguments": {}}]}),
        json!({"text": "done"}),
    ];
    turns.extend(bash_turns(1));
    script(&world, &turns);
    for transport in TRANSPORTS {
        let started = Instant::now();
        let run = session(
            &world,
            &settings(&world, json!({"hookTimeout": 2000})),
            transport,
            &["hang", "echo ping"],
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{transport}: {:?}",
            started.elapsed()
        );
        let hung =
            "plugin \"channel\" did not answer tool hang_tool within 1800 ms (hung) and was killed";
        let end = run
            .lines
            .iter()
            .find(|l| l["type"] == "tool_execution_end" && l["toolName"] == "hang_tool")
            .unwrap_or_else(|| panic!("{transport}: no end of hang_tool: {:?}", run.lines));
        assert_eq!(end["isError"], true, "{transport}: {end}");
        let text = end["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(hung), "{transport}: {text}");
        assert!(
            errors(&run).iter().any(|e| e.starts_with(hung)),
            "{transport}: {:?}",
            run.errors
        );
        went_on(&run, transport);
    }
}

/// The `serve` child of `host`, once it runs.
fn child_of(host: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
            let after = &stat[stat.rfind(')').unwrap() + 2..];
            let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if ppid == host && String::from_utf8_lossy(&cmdline).contains("serve") {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no serve child of {host}");
}

/// Whether `pid` still runs (a zombie waiting for a parent's wait has ended).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    !after.starts_with('Z') && !after.starts_with('X')
}

#[test]
fn a_confined_child_ends_when_its_host_is_killed_with_sigkill() {
    let world = world_of("sandbox_channel");
    let turns = vec![
        json!({"toolCalls": [{"name": "hang_tool", "arguments": {}}]}),
        json!({"text": "done"}),
    ];
    script(&world, &turns);
    for transport in TRANSPORTS {
        std::fs::write(
            world.sandbox.agent_dir().join("settings.json"),
            settings(&world, json!({"hookTimeout": 600000})).to_string(),
        )
        .unwrap();
        let args = [
            "run",
            "--mode",
            "json",
            "--no-session",
            "--script",
            world.script.to_str().unwrap(),
            "--hook",
            world.hostile.to_str().unwrap(),
            "hang",
        ];
        let mut host = world
            .sandbox
            .command_of(&world.binary, &args)
            .env("PI_HOOKS_ISOLATE_TRANSPORT", transport)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let child = child_of(host.id());
        // The tool call under way: the host's stream says it started.
        wait_for_tool_start(host.stdout.take().unwrap());
        std::thread::sleep(Duration::from_millis(300));
        assert!(alive(child), "{transport}");
        host.kill().unwrap();
        host.wait().unwrap();
        let killed = Instant::now();
        while alive(child) && killed.elapsed() < Duration::from_secs(15) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !alive(child),
            "{transport}: the child {child} outlived its host by {:?}",
            killed.elapsed()
        );
    }
}

/// Reads the host's JSON stream until `hang_tool` starts (its stdout is then drained on a
/// thread, so the host never blocks on it).
fn wait_for_tool_start(stdout: std::process::ChildStdout) {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && line.contains("tool_execution_start") && line.contains("hang_tool") {
                let _ = tx.send(());
                sent = true;
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("hang_tool never started");
}

/// A confined plugin's `log` follows `PI_HOOKS_LOG` as in process (the one variable of the
/// host's environment besides the locale and the user's that reaches the child), and its
/// line reaches the terminal through the host, marked with the plugin.
#[test]
fn a_confined_plugin_s_log_follows_pi_hooks_log() {
    let world = world_of("sandbox_channel");
    let logger = pi_hooks_tests::compile_c_text(
        &world.sandbox.lib(),
        "liblogger",
        r#"#include "pi_hooks.h"
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    host->actions->log(plugin, PI_LOG_DEBUG, pi_str("debug-line-from-the-child"));
    host->actions->log(plugin, PI_LOG_WARN, pi_str("warn-line-from-the-child"));
    return PI_OK;
}
PI_HOOKS_PLUGIN("logger", "1.0.0", "logs in its init", init, NULL);
"#,
        &[],
    );
    let settings = json!({"sandbox": {(logger.display().to_string()): {"read": ["${cwd}"]}}});
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    for (level, debug_shown) in [("debug", true), ("warn", false)] {
        let mut command = world.sandbox.command_of(
            &world.binary,
            &[
                "run",
                "--mode",
                "json",
                "--no-session",
                "--script",
                world.script.to_str().unwrap(),
                "--hook",
                logger.to_str().unwrap(),
                "after",
            ],
        );
        command.env("PI_HOOKS_LOG", level);
        let output = pi_hooks_tests::output_within(command, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(
            stderr.contains("warn-line-from-the-child"),
            "PI_HOOKS_LOG={level}: {stderr}"
        );
        assert_eq!(
            stderr.contains("debug-line-from-the-child"),
            debug_shown,
            "PI_HOOKS_LOG={level}: {stderr}"
        );
        let json: Vec<Value> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert!(
            !json.iter().any(|l| l["type"] == "extension_error"),
            "the plugin did not load confined: {json:?}"
        );
    }
}
