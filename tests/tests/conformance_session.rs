//! Conformance: the session file end to end: `--session FILE` round trip, `append_entry` from a plugin, and a crash-truncated last
//! line skipped with a warning and cut off before the next append.

use std::collections::HashSet;
use std::path::Path;
use std::process::Output;

use pi_hooks_tests::{Sandbox, behave_command, read_behave_log};
use serde_json::{Value, json};

fn handlers(entries: Value) -> Value {
    json!({ "handlers": entries })
}

/// `pi-hooks run -p --script <script> --session <file> <prompt>` with `plugins`.
fn run_in_session(
    sandbox: &Sandbox,
    plugins: &[(&str, Value)],
    session: &Path,
    prompt: &str,
) -> Output {
    let script = sandbox.script(&json!({"turns": [{"text": "reply to ${PROMPT}"}]}));
    let output = behave_command(
        sandbox,
        plugins,
        &[
            "run",
            "-p",
            "--script",
            script.to_str().unwrap(),
            "--session",
            session.to_str().unwrap(),
            prompt,
        ],
    )
    .output()
    .expect("run pi-hooks");
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Every line of a session file, parsed (panics on a line that is not JSON).
fn session_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("read the session file");
    assert!(text.ends_with('\n'), "the file must end in a line feed");
    text.lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("session line is not JSON ({e}): {line:?}"))
        })
        .collect()
}

/// Checks the header and the `id`/`parentId`/`timestamp` chain; returns the entries.
fn check_linear_session(lines: &[Value], cwd: &Path) -> Vec<Value> {
    let header = &lines[0];
    assert_eq!(header["type"], "session", "{header}");
    assert_eq!(header["version"], 3, "{header}");
    assert!(header["id"].as_str().is_some_and(|id| !id.is_empty()));
    assert!(header["timestamp"].is_string());
    assert_eq!(header["cwd"], cwd.display().to_string());
    let entries = lines[1..].to_vec();
    let mut ids = HashSet::new();
    let mut parent = Value::Null;
    for entry in &entries {
        let id = entry["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no id: {entry}"));
        assert!(
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "ids are 8 hex characters, as pi's: {entry}"
        );
        assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        assert_eq!(entry["parentId"], parent, "broken parent link at {entry}");
        let timestamp = entry["timestamp"].as_str().unwrap_or_default();
        assert!(
            timestamp.len() >= 20 && timestamp.contains('T') && timestamp.ends_with('Z'),
            "not an ISO timestamp: {entry}"
        );
        parent = entry["id"].clone();
    }
    entries
}

/// `(role, text)` of the message entries.
fn conversation(entries: &[Value]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            let message = &e["message"];
            let text = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>();
            (
                message["role"].as_str().unwrap_or_default().to_owned(),
                text,
            )
        })
        .collect()
}

fn pair(role: &str, text: &str) -> (String, String) {
    (role.to_owned(), text.to_owned())
}

#[test]
fn a_session_file_round_trips_across_runs() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("sessions/s.jsonl");
    let plugins = [("mem", handlers(json!([{"event": "context"}])))];

    let first = run_in_session(&sandbox, &plugins, &session, "first");
    assert_eq!(String::from_utf8_lossy(&first.stdout), "reply to first\n");
    let lines = session_lines(&session);
    let entries = check_linear_session(&lines, &sandbox.project());
    assert_eq!(
        conversation(&entries),
        [pair("user", "first"), pair("assistant", "reply to first")]
    );
    let header = lines[0].clone();

    std::fs::remove_file(sandbox.behave_log()).unwrap();
    let second = run_in_session(&sandbox, &plugins, &session, "second");
    assert_eq!(String::from_utf8_lossy(&second.stdout), "reply to second\n");
    let lines = session_lines(&session);
    assert_eq!(lines[0], header, "the header is written once");
    let entries = check_linear_session(&lines, &sandbox.project());
    assert_eq!(
        conversation(&entries),
        [
            pair("user", "first"),
            pair("assistant", "reply to first"),
            pair("user", "second"),
            pair("assistant", "reply to second")
        ]
    );

    // The second run's model saw the first run's messages.
    let context = read_behave_log(&sandbox.behave_log())
        .into_iter()
        .find(|l| l.tag == "context")
        .expect("a context event in the second run");
    let seen: Vec<(String, String)> = context.value["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<String>();
            (m["role"].as_str().unwrap_or_default().to_owned(), text)
        })
        .collect();
    assert_eq!(
        seen,
        [
            pair("user", "first"),
            pair("assistant", "reply to first"),
            pair("user", "second")
        ]
    );
}

#[test]
fn append_entry_from_a_plugin_lands_in_the_file_and_is_read_back_next_run() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    let plugins = [(
        "keeper",
        handlers(json!([
            {"event": "session_start", "log_session": true},
            {"event": "agent_end", "append_entry": {"customType": "keeper-state", "data": {"n": 1, "s": "x"}}, "log_file_has": "keeper-state"},
        ])),
    )];
    run_in_session(&sandbox, &plugins, &session, "one");
    let log = read_behave_log(&sandbox.behave_log());
    let status = log
        .iter()
        .find(|l| l.tag == "append_entry:status")
        .expect("append_entry was called");
    assert_eq!(status.value, 0);
    // Acknowledged means on disk: the plugin read it back from the file before returning.
    let on_disk = log
        .iter()
        .find(|l| l.tag == "agent_end:file_has")
        .expect("the file check ran");
    assert_eq!(on_disk.value, true);

    let lines = session_lines(&session);
    let entries = check_linear_session(&lines, &sandbox.project());
    let last = entries.last().unwrap();
    assert_eq!(
        (&last["type"], &last["customType"], &last["data"]),
        (
            &json!("custom"),
            &json!("keeper-state"),
            &json!({"n": 1, "s": "x"})
        ),
        "{last}"
    );

    // Next run: session_start sees the entry (plugins rebuild state from it).
    std::fs::remove_file(sandbox.behave_log()).unwrap();
    run_in_session(&sandbox, &plugins, &session, "two");
    let log = read_behave_log(&sandbox.behave_log());
    let seen = log
        .iter()
        .find(|l| l.tag == "session_start:entries")
        .unwrap_or_else(|| panic!("no entries logged: {log:?}"));
    let custom: Vec<&Value> = seen
        .value
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "custom")
        .collect();
    assert_eq!(custom.len(), 1, "{}", seen.value);
    assert_eq!(custom[0]["data"], json!({"n": 1, "s": "x"}));
    assert_eq!(custom[0]["id"], last["id"]);
}

#[test]
fn a_crash_truncated_last_line_is_skipped_with_a_warning_and_cut_off() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    run_in_session(&sandbox, &[], &session, "before");
    let intact = session_lines(&session);
    let last_id = intact.last().unwrap()["id"].clone();

    // A write cut short by a crash: half a JSON line, no line feed.
    let mut text = std::fs::read_to_string(&session).unwrap();
    text.push_str(r#"{"type":"message","id":"deadbeef","parentId":"#);
    std::fs::write(&session, text).unwrap();

    let output = run_in_session(&sandbox, &[], &session, "after");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("damaged last line"),
        "no warning about the damaged line:\n{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "reply to after\n");

    let lines = session_lines(&session);
    assert!(
        !std::fs::read_to_string(&session)
            .unwrap()
            .contains("deadbeef"),
        "the damaged line was not cut off"
    );
    assert_eq!(lines[..intact.len()], intact[..]);
    let entries = check_linear_session(&lines, &sandbox.project());
    assert_eq!(entries[intact.len() - 1]["parentId"], last_id);
    assert_eq!(
        conversation(&entries),
        [
            pair("user", "before"),
            pair("assistant", "reply to before"),
            pair("user", "after"),
            pair("assistant", "reply to after")
        ]
    );

    // And the repaired file opens cleanly.
    let output = run_in_session(&sandbox, &[], &session, "again");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn no_session_writes_no_file() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(&json!({"turns": [{"text": "hi"}]}));
    let output = sandbox.run(&[
        "run",
        "-p",
        "--script",
        script.to_str().unwrap(),
        "--no-session",
        "x",
    ]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "hi\n");
    let sessions = sandbox.agent_dir().join("sessions");
    let files: Vec<_> = walk(&sessions);
    assert_eq!(files, Vec::<String>::new(), "--no-session wrote {files:?}");
}

fn walk(dir: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in read.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

/// Without `--session`, each run starts a new file in `<agentDir>/sessions/<cwd>/`;
/// `--continue` appends to the most recent one.
#[test]
fn continue_appends_to_the_most_recent_session_of_the_directory() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(&json!({"turns": [{"text": "reply to ${PROMPT}"}]}));
    let run = |args: &[&str]| {
        let mut all = vec!["run", "-p", "--script", script.to_str().unwrap()];
        all.extend_from_slice(args);
        let output = sandbox.run(&all);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    };
    let sessions = || -> Vec<std::path::PathBuf> {
        let root = sandbox.agent_dir().join("sessions");
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .map(|dirs| {
                dirs.flatten()
                    .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
                    .map(|f| f.path())
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        files
    };
    run(&["first"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    run(&["second"]);
    let files = sessions();
    assert_eq!(files.len(), 2, "{files:?}");
    run(&["--continue", "third"]);
    assert_eq!(sessions(), files, "--continue must not start a new file");
    let newest = files
        .iter()
        .max_by_key(|f| std::fs::metadata(f).unwrap().modified().unwrap())
        .unwrap();
    let texts: Vec<String> = session_lines(newest)
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, ["second", "third"]);
}
