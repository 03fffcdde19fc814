//! The host services `exec` and timers, end to end: the C plugin
//! `tests/fixtures/exec_timers.c` runs programs and starts timers from a real
//! `pi-hooks run --mode json` over a scripted model, and logs what it got back.
//!
//! exec: arguments pass without a shell, output and exit code come back, a timeout kills
//! `sleep 60` promptly with `killed`, a program that ignores SIGTERM is killed 5 s later,
//! 100 MB of output is capped with a marker in bounded memory, a missing program or cwd is a
//! result (code 1 and the reason), not a failure.
//! Timers: one fires once (and may call exec and append_entry), an interval cancelled from its
//! callback stops, timers die with the plugin at the end of the run, a failing and an
//! overrunning callback are reported and the host carries on, 10 000 timers start and cancel,
//! an unknown id is `PI_ERR_NOT_FOUND`.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use pi_hooks_abi::ffi::{
    PI_ERR, PI_ERR_INVALID_ARG, PI_ERR_NOT_FOUND, PI_ERR_UNAVAILABLE, PI_OK, PiStatus,
};
use pi_hooks_tests::{Sandbox, c_fixture, json_lines, output_within};
use serde_json::{Value, json};

/// Longer than any run here takes (the SIGKILL case takes 5 s).
const LIMIT: Duration = Duration::from_secs(60);

/// What one run did.
struct Run {
    output: Output,
    /// The plugin's log, `(label, text)` per line.
    log: Vec<(String, String)>,
    log_path: PathBuf,
    events: Vec<Value>,
    took: Duration,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Every text logged under `label`.
    fn all(&self, label: &str) -> Vec<&str> {
        self.log
            .iter()
            .filter(|(l, _)| l == label)
            .map(|(_, t)| t.as_str())
            .collect()
    }

    /// The one text logged under `label`.
    fn one(&self, label: &str) -> &str {
        let all = self.all(label);
        assert_eq!(
            all.len(),
            1,
            "expected one {label:?} line, log: {:?}\nstderr: {}",
            self.log,
            self.stderr()
        );
        all[0]
    }

    fn status(&self, label: &str) -> PiStatus {
        self.one(label).parse().expect("a status number")
    }

    /// The exec result logged under `result`.
    fn result(&self) -> Value {
        assert_eq!(self.status("result_status"), PI_OK, "{}", self.stderr());
        serde_json::from_str(self.one("result")).expect("the result is JSON")
    }

    fn extension_errors(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == "extension_error")
            .collect()
    }
}

fn read_log(path: &std::path::Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let (label, text) = line.split_once(' ').unwrap_or((line, ""));
            (label.to_owned(), text.to_owned())
        })
        .collect()
}

/// `pi-hooks run --mode json` with the fixture in `case`, `env` set, over a model that runs
/// `sleep <busy_seconds>` through the bash tool (so the run lasts that long while the plugin
/// is idle) and then finishes.
fn run_case(s: &Sandbox, case: &str, env: &[(&str, &str)], busy_seconds: f64) -> Run {
    let plugin = c_fixture(&s.lib(), "exec_timers", &[]);
    let log_path = s.root().join("exec_timers.log");
    let _ = std::fs::remove_file(&log_path);
    let script = s.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": format!("sleep {busy_seconds}")}}]},
        {"text": "done"}
    ]}));
    let args = [
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        script.to_str().unwrap(),
        "--hook",
        plugin.to_str().unwrap(),
        "go",
    ];
    let mut command = s.command(&args);
    command
        .env("EXEC_TIMERS_CASE", case)
        .env("EXEC_TIMERS_LOG", &log_path)
        .envs(env.iter().copied());
    let started = Instant::now();
    let output = output_within(command, LIMIT);
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "the run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Run {
        events: json_lines(&output),
        log: read_log(&log_path),
        log_path,
        output,
        took,
    }
}

fn exec(s: &Sandbox, program: &str, args: &[&str], cwd: &str, timeout_ms: u64) -> Run {
    let names: Vec<String> = (0..args.len()).map(|i| format!("EXEC_ARG{i}")).collect();
    let timeout = timeout_ms.to_string();
    let mut env = vec![
        ("EXEC_PROGRAM", program),
        ("EXEC_CWD", cwd),
        ("EXEC_TIMEOUT_MS", timeout.as_str()),
    ];
    env.extend(names.iter().map(String::as_str).zip(args.iter().copied()));
    run_case(s, "exec", &env, 0.0)
}

fn elapsed_ms(run: &Run) -> u64 {
    run.one("elapsed_ms").parse().expect("milliseconds")
}

// ---- exec -----------------------------------------------------------------------------

#[test]
fn exec_passes_arguments_without_a_shell_and_captures_the_output() {
    let s = Sandbox::new();
    let run = exec(&s, "echo", &["a; touch pwned", "$HOME", "*"], "", 0);
    let result = run.result();
    assert_eq!(result["stdout"], "a; touch pwned $HOME *\n", "{result}");
    assert_eq!(result["stderr"], "");
    assert_eq!(result["code"], 0);
    assert_eq!(result["killed"], false);
    assert!(
        !s.project().join("pwned").exists(),
        "a shell ran the argument"
    );

    // stderr and the exit code, in the session's cwd (empty cwd).
    let run = exec(
        &s,
        "sh",
        &["-c", "pwd; echo oops >&2; exit 3", "ignored"],
        "",
        0,
    );
    let result = run.result();
    let project = s.project().canonicalize().unwrap();
    assert_eq!(
        result["stdout"],
        format!("{}\n", project.display()),
        "{result}"
    );
    assert_eq!(result["stderr"], "oops\n");
    assert_eq!(result["code"], 3);
    assert_eq!(result["killed"], false);

    // A relative cwd is taken from the session's cwd.
    std::fs::create_dir(s.project().join("sub")).unwrap();
    let result = exec(&s, "pwd", &[], "sub", 0).result();
    assert_eq!(
        result["stdout"],
        format!("{}\n", project.join("sub").display())
    );
}

#[test]
fn exec_timeout_kills_sleep_60_promptly_and_says_so() {
    let s = Sandbox::new();
    let run = exec(&s, "sleep", &["60"], "", 200);
    let result = run.result();
    assert_eq!(result["killed"], true, "{result}");
    assert_eq!(result["signal"], 15, "SIGTERM ended it: {result}");
    let took = elapsed_ms(&run);
    assert!((200..3000).contains(&took), "exec returned after {took} ms");
}

#[test]
fn exec_kills_a_program_that_ignores_sigterm_5_seconds_later() {
    let s = Sandbox::new();
    // A duration no other test uses, so the survivor check below sees only this run's sleep.
    let run = exec(&s, "sh", &["-c", "trap '' TERM; sleep 61.75"], "", 200);
    let result = run.result();
    assert_eq!(result["killed"], true, "{result}");
    assert_eq!(result["signal"], 9, "SIGKILL ended it: {result}");
    let took = elapsed_ms(&run);
    assert!(
        (5000..9000).contains(&took),
        "exec returned after {took} ms, not 5 s after the SIGTERM"
    );
    // The whole group was killed: no `sleep 61.75` holds the output pipe (exec returned) or
    // survives the run.
    let survivors = std::process::Command::new("pgrep")
        .args(["-f", "^sleep 61.75$"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(survivors.trim().is_empty(), "left running: {survivors}");
}

#[test]
fn exec_caps_100_mb_of_output_with_a_marker_in_bounded_memory() {
    let s = Sandbox::new();
    let run = exec(
        &s,
        "sh",
        &["-c", "head -c 100000000 /dev/zero | tr '\\0' x"],
        "",
        0,
    );
    let result = run.result();
    let stdout = result["stdout"].as_str().unwrap();
    let cap = 10 * 1024 * 1024;
    assert!(stdout.starts_with("xxxx"), "{}", &stdout[..40]);
    assert_eq!(
        stdout.len(),
        cap + "\n[output truncated at 10 MiB; 89514240 more bytes discarded]\n".len()
    );
    assert!(
        stdout.ends_with("x\n[output truncated at 10 MiB; 89514240 more bytes discarded]\n"),
        "{}",
        &stdout[stdout.len() - 80..]
    );
    assert_eq!(result["code"], 0);
    let peak_kb: u64 = run.one("hwm_kb").parse().unwrap();
    assert!(
        peak_kb < 100_000,
        "the host's peak memory reached {peak_kb} kB for 100 MB of output"
    );
}

#[test]
fn exec_of_a_missing_program_or_cwd_is_a_result_with_the_reason() {
    let s = Sandbox::new();
    let result = exec(&s, "no-such-program-pi-hooks", &["x"], "", 0).result();
    assert_eq!(result["code"], 1, "{result}");
    assert_eq!(result["killed"], false);
    assert_eq!(result["stdout"], "");
    assert_eq!(
        result["stderr"],
        "cannot start no-such-program-pi-hooks: no such program on PATH"
    );

    let result = exec(&s, "echo", &["x"], "/no/such/dir", 0).result();
    assert_eq!(result["code"], 1, "{result}");
    assert_eq!(
        result["stderr"],
        "cannot start echo: working directory /no/such/dir does not exist or is not a directory"
    );

    let result = exec(&s, "/etc/passwd", &[], "", 0).result();
    assert_eq!(result["code"], 1, "{result}");
    assert!(
        result["stderr"]
            .as_str()
            .unwrap()
            .contains("permission denied"),
        "{result}"
    );

    // An empty program is bad input, not a result.
    let run = exec(&s, "", &[], "", 0);
    assert_eq!(run.status("result_status"), PI_ERR_INVALID_ARG);
}

// ---- timers ---------------------------------------------------------------------------

#[test]
fn a_timer_fires_once_and_may_run_programs_and_append_entries() {
    let s = Sandbox::new();
    let session = s.root().join("s.jsonl");
    let plugin = c_fixture(&s.lib(), "exec_timers", &[]);
    let log_path = s.root().join("exec_timers.log");
    let script = s.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1"}}]},
        {"text": "done"}
    ]}));
    let mut command = s.command(&[
        "run",
        "--mode",
        "json",
        "--session",
        session.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--hook",
        plugin.to_str().unwrap(),
        "go",
    ]);
    command
        .env("EXEC_TIMERS_CASE", "once")
        .env("EXEC_TIMERS_LOG", &log_path);
    let output = output_within(command, LIMIT);
    assert!(output.status.success(), "{output:?}");
    let log = read_log(&log_path);
    let get = |label: &str| -> Vec<String> {
        log.iter()
            .filter(|(l, _)| l == label)
            .map(|(_, t)| t.clone())
            .collect()
    };
    assert_eq!(get("start"), ["0"], "{log:?}");
    assert_eq!(get("id"), ["1"]);
    assert_eq!(get("fired"), ["1"], "fired exactly once: {log:?}");
    assert_eq!(
        get("fired_cwd"),
        [s.project().canonicalize().unwrap().display().to_string()]
    );
    assert_eq!(get("timer_exec_status"), ["0"]);
    let result: Value = serde_json::from_str(&get("timer_exec")[0]).unwrap();
    assert_eq!(result["stdout"], "from-timer\n");
    assert_eq!(get("append"), ["0"]);
    let entries = std::fs::read_to_string(&session).unwrap();
    assert!(
        entries
            .lines()
            .any(|l| l.contains("\"customType\":\"timer-fired\"")),
        "{entries}"
    );
}

#[test]
fn an_interval_ticks_until_its_callback_cancels_it() {
    let s = Sandbox::new();
    let run = run_case(&s, "interval", &[], 1.0);
    assert_eq!(run.status("start"), PI_OK);
    assert_eq!(run.all("tick"), ["1", "2", "3"], "{:?}", run.log);
    assert_eq!(run.status("cancel_self"), PI_OK);
    assert_eq!(run.status("cancel_again"), PI_ERR_NOT_FOUND);
}

#[test]
fn timers_die_with_the_plugin() {
    let s = Sandbox::new();
    let run = run_case(&s, "forever", &[], 0.5);
    let ticks: Vec<i64> = run.all("tick").iter().map(|t| t.parse().unwrap()).collect();
    assert!(ticks.len() >= 3, "the interval ticked: {:?}", run.log);
    let shutdown: i64 = run.one("plugin_shutdown").parse().unwrap();
    assert!(
        ticks.iter().all(|&t| t <= shutdown),
        "a tick after the plugin's shutdown: {:?}",
        run.log
    );
    assert_eq!(
        run.log.last().map(|(l, _)| l.as_str()),
        Some("plugin_shutdown")
    );
    // Nothing runs after the host exited.
    let lines = run.log.len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(read_log(&run.log_path).len(), lines);
}

#[test]
fn a_failing_or_overrunning_callback_is_reported_and_the_host_carries_on() {
    let s = Sandbox::new();
    std::fs::write(
        s.agent_dir().join("settings.json"),
        r#"{"hookTimeout": 300}"#,
    )
    .unwrap();
    let run = run_case(&s, "failing", &[], 2.0);
    let errors = run.extension_errors();
    let texts: Vec<&str> = errors
        .iter()
        .map(|e| e["error"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "timer 1: the timer callback failed on purpose",
            "timer 2: timed out after 300ms"
        ],
        "{}",
        run.stderr()
    );
    assert!(errors.iter().all(|e| {
        e["event"] == "timer"
            && e["extensionPath"]
                .as_str()
                .unwrap()
                .ends_with("exec_timers.so")
    }));
    let stderr = run.stderr();
    assert!(
        stderr.contains("): timer 2: timed out after 300ms"),
        "{stderr}"
    );
    assert_eq!(run.all("overrun_returned"), ["1"]);
    assert_eq!(run.all("after"), ["1"], "the next timer ran: {:?}", run.log);
    assert!(run.took < Duration::from_secs(10));
}

#[test]
fn ten_thousand_timers_start_and_cancel_and_an_unknown_id_is_not_found() {
    let s = Sandbox::new();
    let run = run_case(&s, "many", &[], 0.0);
    assert_eq!(run.status("init_timer"), PI_ERR_UNAVAILABLE);
    assert_eq!(run.one("started"), "10000");
    assert_eq!(run.one("distinct"), "1");
    assert_eq!(run.status("past_cap"), PI_ERR);
    assert!(
        run.stderr().contains("it has 10000 timers running"),
        "{}",
        run.stderr()
    );
    assert_eq!(run.one("cancelled"), "10000");
    assert_eq!(run.status("cancel_unknown"), PI_ERR_NOT_FOUND);
    assert_eq!(run.status("cancel_twice"), PI_ERR_NOT_FOUND);
    assert_eq!(run.status("null_callback"), PI_ERR_INVALID_ARG);
    assert_eq!(run.status("after_cancel"), PI_OK);
    assert!(run.all("never").is_empty());
}

/// The pids of processes whose whole command line is `command`.
fn pids_of(command: &str) -> Vec<i32> {
    let found = std::process::Command::new("pgrep")
        .args(["-x", "-f", command])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    found
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[test]
fn exec_programs_die_with_a_host_killed_by_sigkill() {
    let s = Sandbox::new();
    let plugin = c_fixture(&s.lib(), "exec_timers", &[]);
    let script = s.script(&json!({"turns": [{"text": "done"}]}));
    // A duration no other test uses, so the checks below see only this run's sleep.
    let sleep = "sleep 63.25";
    let mut command = s.command(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        script.to_str().unwrap(),
        "--hook",
        plugin.to_str().unwrap(),
        "go",
    ]);
    command
        .env("EXEC_TIMERS_CASE", "exec")
        .env("EXEC_TIMERS_LOG", s.root().join("exec_timers.log"))
        .env("EXEC_PROGRAM", "sleep")
        .env("EXEC_ARG0", "63.25")
        .env("EXEC_CWD", "")
        .env("EXEC_TIMEOUT_MS", "0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut host = command.spawn().expect("start pi-hooks");
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids_of(sleep).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !pids_of(sleep).is_empty(),
        "the plugin's program never started"
    );
    // No orderly end: no retirement, no SIGTERM to the group.
    host.kill().expect("SIGKILL the host");
    host.wait().expect("reap the host");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids_of(sleep).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors = pids_of(sleep);
    // A survivor of a failed check does not run on for a minute.
    for pid in &survivors {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(survivors.is_empty(), "outlived the host: {survivors:?}");
}
