//! The transports between the host and an isolated plugin's `serve` child
//! (`loader/host/src/isolate/transport/`): the shared-memory ring (`--isolate`'s default on
//! Linux) and the pipes, each under the real binary with a real C plugin
//! (tests/fixtures/isolate_transport.c) in print mode: messages several times larger than the
//! ring, a burst of requests from eight threads of the plugin during a call, a request made
//! after the call returned (the doorbell), the child killed from outside in the middle of a
//! call, and a call that never returns.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use pi_hooks_tests::{Sandbox, c_fixture, json_lines};
use serde_json::{Value, json};

/// Both transports, by their `PI_HOOKS_ISOLATE_TRANSPORT` names.
const TRANSPORTS: [&str; 2] = ["ring", "pipe"];

struct World {
    sandbox: Sandbox,
    plugin: PathBuf,
}

/// A sandbox with the fixture built and `hookTimeout` 1500 ms (a hang is noticed after
/// 1350 ms).
fn world() -> World {
    // Built first, so a build never counts in a time measured here.
    pi_hooks_tests::build_workspace_artifacts();
    let sandbox = Sandbox::new();
    let plugin = c_fixture(&sandbox.lib(), "isolate_transport", &["-pthread"]);
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"hookTimeout": 1500}).to_string(),
    )
    .unwrap();
    World { sandbox, plugin }
}

/// A script whose first turn calls `bash` with each of `commands` (all gated before any
/// runs), then says "done".
fn script(world: &World, commands: &[&str]) -> PathBuf {
    let calls: Vec<Value> = commands
        .iter()
        .map(|c| json!({"name": "bash", "arguments": {"command": c}}))
        .collect();
    let path = world.sandbox.root().join("script.json");
    let text = json!({"turns": [{"toolCalls": calls}, {"text": "done"}]}).to_string();
    std::fs::write(&path, text).unwrap();
    path
}

fn session(world: &World) -> PathBuf {
    world.sandbox.root().join("session.jsonl")
}

/// `pi-hooks run --mode json --isolate` of one prompt over `transport`.
fn command(world: &World, transport: &str, commands: &[&str]) -> std::process::Command {
    let script = script(world, commands);
    let (script, plugin, session) = (
        script.display().to_string(),
        world.plugin.display().to_string(),
        session(world).display().to_string(),
    );
    let mut command = world.sandbox.command(&[
        "run",
        "--mode",
        "json",
        "--isolate",
        "--session",
        &session,
        "--script",
        &script,
        "-e",
        &plugin,
        "go",
    ]);
    command.env("PI_HOOKS_ISOLATE_TRANSPORT", transport);
    command
}

fn run(world: &World, transport: &str, commands: &[&str]) -> Output {
    command(world, transport, commands).output().unwrap()
}

/// Each tool call's outcome in order: (is it an error, its result text).
fn results(output: &Output) -> Vec<(bool, String)> {
    json_lines(output)
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| {
            (
                l["isError"].as_bool().unwrap(),
                l["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect()
}

/// How many custom entries of `custom_type` the session file holds.
fn entries(world: &World, custom_type: &str) -> usize {
    std::fs::read_to_string(session(world))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "custom" && e["customType"] == custom_type)
        .count()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn messages_several_times_larger_than_the_ring_pass_both_ways() {
    // 1.5 MiB each way: six times the ring's 256 KiB.
    let filler: String = (0..(3 << 19))
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let big = format!("mirror {filler} end");
    for transport in TRANSPORTS {
        let world = world();
        let output = run(&world, transport, &[&big, "echo small"]);
        assert!(output.status.success(), "{transport}: {}", stderr(&output));
        let results = results(&output);
        assert_eq!(results.len(), 2, "{transport}: {}", stderr(&output));
        let (is_error, text) = &results[0];
        assert!(is_error, "{transport}: the big call was blocked");
        let expected = format!("mirror:{big}");
        assert!(
            text.contains(&expected),
            "{transport}: the reason came back whole ({} bytes of {})",
            text.len(),
            expected.len()
        );
        assert_eq!(results[1], (false, "small\n".to_owned()), "{transport}");
    }
}

#[test]
fn a_burst_of_requests_during_a_call_and_one_after_it_are_all_answered() {
    for transport in TRANSPORTS {
        let world = world();
        let marker = world.sandbox.root().join("later-answered");
        let later = format!("later {}", marker.display());
        // Runs while no call is in flight: only the doorbell gets the late request answered.
        let poll = format!(
            "for i in $(seq 100); do [ -e '{}' ] && echo found && exit 0; sleep 0.05; done; echo missing",
            marker.display()
        );
        let output = run(&world, transport, &["burst", &later, &poll]);
        assert!(output.status.success(), "{transport}: {}", stderr(&output));
        let results = results(&output);
        assert_eq!(results.len(), 3, "{transport}: {}", stderr(&output));
        assert_eq!(
            results[0],
            (true, "burst: 320 ok, 0 failed".to_owned()),
            "{transport}: {}",
            stderr(&output)
        );
        assert_eq!(results[2], (false, "found\n".to_owned()), "{transport}");
        assert_eq!(entries(&world, "transport:burst"), 320, "{transport}");
        assert_eq!(entries(&world, "transport:later"), 1, "{transport}");
    }
}

/// Waits for the plugin to write its process id to `file`.
fn pid_in(file: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "the plugin never wrote its pid");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_child_killed_in_the_middle_of_a_call_is_a_crash_and_the_session_goes_on() {
    for transport in TRANSPORTS {
        let world = world();
        let pid_file = world.sandbox.root().join("child.pid");
        let pid_command = format!("pid {}", pid_file.display());
        let child = command(&world, transport, &[&pid_command, "echo after"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = pid_in(&pid_file);
        // The child runs over the transport asked for.
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(cmdline.contains(" serve "), "{cmdline}");
        assert_eq!(
            cmdline.contains("--ring-fd 4"),
            transport == "ring",
            "{transport}: {cmdline}"
        );
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{transport}: {}", stderr(&output));
        let errors: Vec<Value> = json_lines(&output)
            .into_iter()
            .filter(|l| l["type"] == "extension_error")
            .collect();
        assert_eq!(errors.len(), 1, "{transport}: {errors:?}");
        assert!(
            errors[0]["error"].as_str().unwrap().starts_with(
                "plugin \"transport\" crashed (SIGKILL) while handling tool_call; restarting it in"
            ),
            "{transport}: {errors:?}"
        );
        let results = results(&output);
        assert_eq!(results.len(), 2, "{transport}: {}", stderr(&output));
        assert!(results.iter().all(|(is_error, text)| *is_error
            && text.contains("crashed (SIGKILL) while handling tool_call")));
    }
}

#[test]
fn a_call_that_never_returns_times_out_and_the_plugin_is_restarted() {
    for transport in TRANSPORTS {
        let world = world();
        let started = Instant::now();
        let output = run(&world, transport, &["hang"]);
        assert!(output.status.success(), "{transport}: {}", stderr(&output));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{transport}: took {:?}",
            started.elapsed()
        );
        let stderr = stderr(&output);
        assert!(
            stderr.contains(
                "plugin \"transport\" did not answer tool_call within 1350 ms (hung) and was killed"
            ),
            "{transport}: {stderr}"
        );
        let results = results(&output);
        assert_eq!(results.len(), 1, "{transport}: {stderr}");
        assert!(
            results[0].0 && results[0].1.contains("(hung)"),
            "{results:?}"
        );
    }
}
