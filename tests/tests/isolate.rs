//! `--isolate`: plugins in a `pi-hooks serve` child. Real C plugins that segfault, abort,
//! overflow their stack or hang in `tool_call` (tests/fixtures/isolate_faults.c) run under
//! the real binary, in print mode and RPC mode: the host keeps running, reports the crash
//! with the plugin's name and the event, blocks the tool calls made while the plugin is down
//! with the crash as the reason, restarts it (its `session_start` rebuilds its state from
//! the session), and a later call is handled normally. And the examples give the same
//! results isolated as in process.

use std::path::{Path, PathBuf};
use std::process::Output;

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::{Sandbox, c_fixture, compile_c, protected_paths_plugin, workspace_root};
use serde_json::{Value, json};

/// A fault of the fixture and what the report says about it.
struct Fault {
    /// The word in the bash command that triggers it.
    word: &'static str,
    /// Any of these appears in the report.
    reported: &'static [&'static str],
}

const FAULTS: [Fault; 4] = [
    Fault {
        word: "crash",
        reported: &["crashed (SIGSEGV) while handling tool_call"],
    },
    Fault {
        word: "abort",
        reported: &["crashed (SIGABRT) while handling tool_call"],
    },
    Fault {
        word: "overflow",
        reported: &[
            "crashed (SIGSEGV) while handling tool_call",
            "crashed (SIGABRT) while handling tool_call",
        ],
    },
    Fault {
        word: "hang",
        reported: &["did not answer tool_call within 1350 ms (hung) and was killed"],
    },
];

/// One turn that runs `echo <prompt>` and `echo during` (both tool calls are gated before
/// either runs), then a final text.
const SCRIPT: &str = r#"{"turns": [
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo ${PROMPT}"}},
                 {"name": "bash", "arguments": {"command": "echo during"}}]},
  {"text": "done"}]}"#;

struct World {
    sandbox: Sandbox,
    faults: PathBuf,
    pause: PathBuf,
    script: PathBuf,
    log: PathBuf,
}

/// A sandbox with the fixtures built, the script written and `hookTimeout` 1500 ms (so a
/// hang is noticed after 1350 ms).
fn world(settings: Value) -> World {
    let sandbox = Sandbox::new();
    let faults = c_fixture(&sandbox.lib(), "isolate_faults", &[]);
    let pause = c_fixture(&sandbox.lib(), "isolate_pause", &[]);
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut settings = settings;
    settings["hookTimeout"] = json!(1500);
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let log = sandbox.root().join("faults.log");
    World {
        sandbox,
        faults,
        pause,
        script,
        log,
    }
}

fn text(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// The JSON lines of a run's stdout.
fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The text of each `tool_execution_end`, with whether it is an error, by command.
fn tool_ends(lines: &[Value]) -> Vec<(String, bool, String)> {
    let mut commands = std::collections::HashMap::new();
    let mut ends = Vec::new();
    for line in lines {
        match line["type"].as_str() {
            Some("tool_execution_start") => {
                commands.insert(
                    line["toolCallId"].as_str().unwrap().to_owned(),
                    line["args"]["command"].as_str().unwrap_or("").to_owned(),
                );
            }
            Some("tool_execution_end") => ends.push((
                commands[line["toolCallId"].as_str().unwrap()].clone(),
                line["isError"].as_bool().unwrap(),
                line["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )),
            _ => {}
        }
    }
    ends
}

fn print_run(world: &World, extra: &[&str], prompts: &[&str]) -> Output {
    let session = world.sandbox.root().join("session.jsonl");
    let (script, faults, pause, session) = (
        text(&world.script),
        text(&world.faults),
        text(&world.pause),
        text(&session),
    );
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--session",
        &session,
        "--script",
        &script,
        "-e",
        &faults,
        "-e",
        &pause,
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(prompts);
    world
        .sandbox
        .command(&args)
        .env("ISOLATE_FAULTS_LOG", &world.log)
        .output()
        .unwrap()
}

/// Print mode: the fault is reported once with the plugin and the event, both calls of that
/// turn are blocked with the crash as the reason, the plugin is restarted (its
/// `session_start` sees the two entries it appended before the crash), the next prompt's
/// calls run, and the session file is whole.
fn print_mode_survives(fault: &Fault, world: &World, extra: &[&str]) {
    let output = print_run(world, extra, &["one", fault.word, "after"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{}: the host failed: {stderr}",
        fault.word
    );
    let lines = json_lines(&output);
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "extension_error")
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "{}: one report: {errors:?}\n{stderr}",
        fault.word
    );
    let report = errors[0]["error"].as_str().unwrap();
    assert_eq!(errors[0]["event"], "tool_call");
    assert_eq!(errors[0]["extensionPath"], text(&world.faults));
    assert!(
        report.starts_with("plugin \"faults\" ")
            && fault.reported.iter().any(|r| report.contains(r))
            && report.ends_with("; restarting it in 100 ms"),
        "{}: {report}",
        fault.word
    );
    assert!(
        stderr.contains(&format!(
            "Extension error ({}): {report}",
            text(&world.faults)
        )),
        "{stderr}"
    );
    let ends = tool_ends(&lines);
    let outcome = |command: &str| {
        ends.iter()
            .filter(|(c, _, _)| c == command)
            .map(|(_, error, text)| (*error, text.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(outcome("echo one"), [(false, "one\n".to_owned())]);
    assert_eq!(outcome("echo after"), [(false, "after\n".to_owned())]);
    let blocked = outcome(&format!("echo {}", fault.word));
    let during = outcome("echo during");
    assert_eq!(during.len(), 3, "{ends:?}");
    for (error, text) in blocked.iter().chain(&during[1..2]) {
        assert!(*error, "{}: {ends:?}", fault.word);
        assert!(
            text.starts_with("blocked because the isolated plugin \"faults\" ")
                && fault.reported.iter().any(|r| text.contains(r)),
            "{}: {text}",
            fault.word
        );
    }
    assert_eq!(during[0], (false, "during\n".to_owned()));
    assert_eq!(during[2], (false, "during\n".to_owned()));
    // The restarted plugin rebuilt its state: it saw the two entries of the first prompt.
    let log = std::fs::read_to_string(&world.log).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["session_start startup 0", "session_start reload 2"],
        "{}",
        fault.word
    );
    assert!(
        stderr.contains("pi-hooks: restarted isolated plugin \"faults\""),
        "{stderr}"
    );
    // The session file is intact: every line is JSON, the entries of both good prompts there.
    let session = std::fs::read_to_string(world.sandbox.root().join("session.jsonl")).unwrap();
    let entries: Vec<Value> = session
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen = entries
        .iter()
        .filter(|e| e["customType"] == "faults:seen")
        .count();
    assert_eq!(seen, 4, "{session}");
}

#[test]
fn print_mode_survives_a_segfault_an_abort_a_stack_overflow_and_a_hang() {
    for fault in &FAULTS {
        let world = world(json!({}));
        print_mode_survives(fault, &world, &["--isolate"]);
    }
}

#[test]
fn settings_isolate_one_plugin_by_name() {
    // Only the faults plugin (isolate_faults.so) is isolated: the pause plugin runs in
    // process, and the host survives.
    let world = world(json!({"isolate": ["isolate_faults"]}));
    print_mode_survives(&FAULTS[0], &world, &[]);
    // A wrong value is refused with the key named (the file's plugins are not loaded).
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        r#"{"isolate": "yes"}"#,
    )
    .unwrap();
    let output = print_run(&world, &[], &["one"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`isolate` must be true, false or an array of plugin file names or paths"),
        "{stderr}"
    );
}

/// RPC mode: the same, with the restart seen as the plugin's status line coming back.
fn rpc_mode_survives(fault: &Fault) {
    let world = world(json!({}));
    let (script, faults) = (text(&world.script), text(&world.faults));
    let command = world.sandbox.command(&[
        "rpc",
        "--isolate",
        "--no-session",
        "--script",
        &script,
        "-e",
        &faults,
    ]);
    let mut command = command;
    command.env("ISOLATE_FAULTS_LOG", &world.log);
    let mut rpc = RpcClient::start(command);
    let status = |rpc: &mut RpcClient, text: &str| {
        rpc.until(|l| {
            l["type"] == "extension_ui_request"
                && l["method"] == "setStatus"
                && l["statusText"] == text
        });
    };
    status(&mut rpc, "seen 0");
    let run = |rpc: &mut RpcClient, id: &str, prompt: &str| {
        rpc.send(&json!({"id": id, "type": "prompt", "message": prompt}));
        rpc.until(|l| l["type"] == "agent_end").0
    };
    let first = run(&mut rpc, "1", "one");
    assert_eq!(
        tool_ends(&first)
            .iter()
            .filter(|(_, error, _)| !error)
            .count(),
        2
    );
    let crashed = run(&mut rpc, "2", fault.word);
    let errors: Vec<&Value> = crashed
        .iter()
        .filter(|l| l["type"] == "extension_error")
        .collect();
    assert_eq!(errors.len(), 1, "{}: {crashed:?}", fault.word);
    let report = errors[0]["error"].as_str().unwrap();
    assert_eq!(errors[0]["event"], "tool_call");
    assert!(
        report.starts_with("plugin \"faults\" ")
            && fault.reported.iter().any(|r| report.contains(r)),
        "{report}"
    );
    let ends = tool_ends(&crashed);
    assert_eq!(ends.len(), 2, "{ends:?}");
    for (_, error, text) in &ends {
        assert!(
            *error && text.starts_with("blocked because the isolated plugin \"faults\" "),
            "{text}"
        );
    }
    // Restarted: its session_start set the status again, from the two entries before.
    status(&mut rpc, "seen 2");
    let after = run(&mut rpc, "3", "after");
    let mut ends = tool_ends(&after);
    ends.sort();
    assert_eq!(
        ends,
        [
            ("echo after".to_owned(), false, "after\n".to_owned()),
            ("echo during".to_owned(), false, "during\n".to_owned())
        ]
    );
    rpc.send(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(rpc.response("s")["success"], true);
    let (exit, _) = rpc.close();
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn rpc_mode_survives_a_segfault_an_abort_a_stack_overflow_and_a_hang() {
    for fault in &FAULTS {
        rpc_mode_survives(fault);
    }
}

/// Timestamps and the session header differ from run to run; everything else must not.
fn comparable(lines: Vec<Value>) -> Vec<Value> {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("timestamp");
                // How long a tool ran (pi 1.6's `tool_execution_end.durationMs`) varies.
                map.remove("durationMs");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    lines
        .into_iter()
        .filter(|l| l["type"] != "session")
        .map(|mut l| {
            strip(&mut l);
            // An appended entry's ids are random (pi 1.6's `entry_appended` line).
            if l["type"] == "entry_appended"
                && let Some(entry) = l["entry"].as_object_mut()
            {
                entry.remove("id");
                entry.remove("parentId");
            }
            l
        })
        .collect()
}

#[test]
fn print_mode_results_are_the_same_isolated_as_in_process() {
    let sandbox = Sandbox::new();
    let faults = text(&c_fixture(&sandbox.lib(), "isolate_faults", &[]));
    let protected = text(&protected_paths_plugin(&sandbox.lib()));
    let script = sandbox.root().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo ${PROMPT}"}},
                 {"name": "write", "arguments": {"path": ".env", "content": "SECRET=1"}}]},
  {"text": "done"}]}"#,
    )
    .unwrap();
    let script = text(&script);
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--mode",
            "json",
            "--no-session",
            "--script",
            &script,
            "-e",
            &faults,
            "-e",
            &protected,
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["shout hello", "rm -rf x"]);
        let output = sandbox.run(&args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        comparable(json_lines(&output))
    };
    let in_process = run(&[]);
    let isolated = run(&["--isolate"]);
    assert_eq!(in_process, isolated);
    // And they are what the plugins decide: the transform, both blocks with their reasons.
    let ends = tool_ends(&in_process);
    assert!(
        ends.contains(&("echo HELLO".to_owned(), false, "HELLO\n".to_owned())),
        "{ends:?}"
    );
    assert!(
        ends.contains(&(
            "echo rm -rf x".to_owned(),
            true,
            "no rm -rf here".to_owned()
        )),
        "{ends:?}"
    );
    assert!(
        ends.iter()
            .any(|(_, error, text)| *error && text.contains(".env")),
        "{ends:?}"
    );
    assert!(!sandbox.project().join(".env").exists());
}

/// The UI lines of an RPC session: `/deploy staging` confirmed through the RPC UI protocol,
/// and the plugins' status line.
fn rpc_ui_lines(extra: &[&str]) -> Vec<Value> {
    let sandbox = Sandbox::new();
    let faults = text(&c_fixture(&sandbox.lib(), "isolate_faults", &[]));
    let source = workspace_root().join("plugins/examples/confirm-command/confirm_command.c");
    let confirm = text(&compile_c(
        &source,
        &sandbox.lib().join("libconfirm_command.so"),
        &[],
    ));
    let mut args = vec!["rpc", "--no-session", "-e", &faults, "-e", &confirm];
    args.extend_from_slice(extra);
    let mut rpc = RpcClient::start(sandbox.command(&args));
    let mut seen = Vec::new();
    let mut keep = |line: &Value| {
        let mut line = line.clone();
        if let Some(map) = line.as_object_mut() {
            map.remove("id");
        }
        seen.push(line);
    };
    let (_, status) = rpc.until(|l| l["method"] == "setStatus");
    keep(&status);
    rpc.send(&json!({"id": "d", "type": "prompt", "message": "/deploy staging"}));
    let dialog = rpc.ui_request();
    keep(&dialog);
    rpc.send(&json!({"type": "extension_ui_response", "id": dialog["id"], "confirmed": true}));
    let (_, notify) = rpc.until(|l| l["method"] == "notify");
    keep(&notify);
    assert_eq!(rpc.response("d")["success"], true);
    let (exit, _) = rpc.close();
    assert!(exit.success());
    seen
}

#[test]
fn rpc_dialogs_and_status_lines_are_the_same_isolated_as_in_process() {
    let in_process = rpc_ui_lines(&[]);
    let isolated = rpc_ui_lines(&["--isolate"]);
    assert_eq!(in_process, isolated);
    assert_eq!(in_process[0]["statusText"], "seen 0");
    assert_eq!(in_process[1]["method"], "confirm");
    assert_eq!(in_process[1]["message"], "Deploy to staging?");
    assert_eq!(in_process[2]["message"], "Deploying to staging");
}

/// The process ids whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let child: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            // pid (comm) state ppid ...: the fields after the last ')'.
            let ppid: u32 = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == pid).then_some(child)
        })
        .collect()
}

#[test]
fn reload_restarts_the_isolated_plugin_and_ends_the_old_child() {
    let world = world(json!({}));
    let (script, faults) = (text(&world.script), text(&world.faults));
    let mut command = world.sandbox.command(&[
        "rpc",
        "--isolate",
        "--no-session",
        "--script",
        &script,
        "-e",
        &faults,
    ]);
    command.env("ISOLATE_FAULTS_LOG", &world.log);
    let mut rpc = RpcClient::start(command);
    rpc.until(|l| l["method"] == "setStatus" && l["statusText"] == "seen 0");
    let before = children_of(rpc.pid());
    assert_eq!(before.len(), 1, "one serve child: {before:?}");
    rpc.send(&json!({"id": "1", "type": "prompt", "message": "one"}));
    rpc.until(|l| l["type"] == "agent_end");
    rpc.send(&json!({"id": "r", "type": "prompt", "message": "/reload"}));
    let restored = |l: &Value| l["method"] == "setStatus" && l["statusText"] == "seen 2";
    let (before_response, response) = rpc.until(|l| l["type"] == "response" && l["id"] == "r");
    assert_eq!(response["success"], true);
    if !before_response.iter().any(restored) {
        rpc.until(restored);
    }
    let after = children_of(rpc.pid());
    assert_eq!(after.len(), 1, "the old child is gone: {after:?}");
    assert_ne!(after, before);
    let (exit, _) = rpc.close();
    assert!(exit.success());
    let log = std::fs::read_to_string(&world.log).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["session_start startup 0", "session_start reload 2"]
    );
}

#[test]
fn an_isolated_plugin_sees_the_host_s_session_file_and_ui_state() {
    let seen = |isolate: bool| {
        let sandbox = Sandbox::new();
        let session = sandbox.root().join("session.jsonl");
        let script = sandbox.script(&json!({"turns": [{"text": "ok"}]}));
        let mut args = vec![
            "run",
            "--session",
            session.to_str().unwrap(),
            "--script",
            script.to_str().unwrap(),
        ];
        if isolate {
            args.push("--isolate");
        }
        args.push("hi");
        let output = pi_hooks_tests::behave_command(
            &sandbox,
            &[(
                "ctx",
                json!({"handlers": [{"event": "agent_start", "log_ctx": true}]}),
            )],
            &args,
        )
        .output()
        .unwrap();
        assert!(output.status.success(), "{output:?}");
        let ctx = pi_hooks_tests::read_behave_log(&sandbox.behave_log())
            .into_iter()
            .find(|l| l.tag == "agent_start:ctx")
            .expect("the plugin logged its context")
            .value;
        (
            ctx["sessionFile"].clone(),
            ctx["hasUI"].clone(),
            session.display().to_string(),
        )
    };
    let (file, has_ui, session) = seen(true);
    assert_eq!(file, json!(session));
    assert_eq!(has_ui, json!(false), "print mode has no UI");
    let (file, has_ui, session) = seen(false);
    assert_eq!((file, has_ui), (json!(session), json!(false)));
}

#[test]
fn a_plugin_writing_to_its_stdout_never_touches_the_protocol() {
    let world = world(json!({}));
    // Bytes without a line feed: they used to prefix the child's next frame.
    let output = print_run(&world, &["--isolate"], &["stdout", "after"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let ends = tool_ends(&json_lines(&output));
    assert_eq!(ends.len(), 4, "{ends:?}");
    assert!(
        ends.iter().all(|(_, is_error, _)| !is_error),
        "every call ran: {ends:?}\n{stderr}"
    );
    assert!(!stderr.contains("did not answer"), "{stderr}");
    assert!(stderr.contains(r#"{"type":"oops" no newline"#), "{stderr}");
}

#[test]
fn a_chatty_plugin_s_stdout_is_rate_limited_on_the_host_s_stderr() {
    let world = world(json!({}));
    let output = print_run(&world, &["--isolate"], &["chatty"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{}",
        &stderr[..stderr.len().min(2000)]
    );
    let ends = tool_ends(&json_lines(&output));
    assert!(ends.iter().all(|(_, is_error, _)| !is_error), "{ends:?}");
    // 8 MiB written; at most 64 KiB a second passed on.
    assert!(stderr.len() < 512 << 10, "{} bytes on stderr", stderr.len());
    let plugin = world.faults.display().to_string();
    assert!(
        stderr.contains(&format!(
            "pi-hooks: isolated plugin \"{plugin}\" writes more than 64 KiB a second to its stdout and stderr; the rest of this second is dropped"
        )),
        "{}",
        &stderr[stderr.len().saturating_sub(2000)..]
    );
}

/// `list` says where each plugin runs: in process, isolated (the settings' `isolate`), or
/// confined (a settings grant), with the grant and where it came from.
#[test]
fn list_shows_where_each_plugin_runs_and_a_confined_one_s_grant() {
    let sandbox = Sandbox::new();
    let extensions = sandbox.agent_dir().join("extensions");
    std::fs::create_dir_all(&extensions).unwrap();
    for name in ["libplain", "libalone", "libboxed"] {
        pi_hooks_tests::c_fixture_as(&extensions, "good", name, &[]);
    }
    let settings = sandbox.agent_dir().join("settings.json");
    std::fs::write(
        &settings,
        json!({"isolate": ["alone"], "sandbox": {"./extensions/libboxed.so": {"read": ["${cwd}"], "memoryMiB": 64}}})
            .to_string(),
    )
    .unwrap();
    let report = sandbox.list_json(&[]);
    let runs = |file: &str| {
        report["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"].as_str().unwrap().ends_with(file))
            .unwrap_or_else(|| panic!("{file} not loaded: {report:#}"))
            .clone()
    };
    assert_eq!(runs("libplain.so")["runs"], "in-process");
    assert_eq!(runs("libplain.so")["grant"], Value::Null);
    assert_eq!(runs("libalone.so")["runs"], "isolated");
    let boxed = runs("libboxed.so");
    assert_eq!(boxed["runs"], "confined");
    let summary = format!(
        "read: {}; write: nothing; network: no; exec: nothing; memory: 64 MiB",
        sandbox.project().display()
    );
    assert_eq!(boxed["grant"]["summary"], summary.as_str());
    assert_eq!(boxed["grant"]["source"], settings.to_str().unwrap());

    let text = sandbox.run(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("runs isolated (a process of its own)"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "runs confined (a sandboxed process of its own): {summary} [grant from {}]",
            settings.display()
        )),
        "{text}"
    );
    assert_eq!(text.matches("runs ").count(), 2, "{text}");
}
