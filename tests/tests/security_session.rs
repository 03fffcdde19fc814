//! Security: the session file must not lose acknowledged entries.
//!
//! Item 6: one depth rule for writing and reading. An entry nested deeper than a session file
//! can be read back is refused at append (a plugin's `append_entry` gets an error status), an
//! entry at the limit round-trips, and a complete line that cannot be read (written by a host
//! without the check) is an error naming it, never deleted as an "interrupted write".
//!
//! Item 7: one host per session file. A second host is refused with a message naming the file
//! and the first host's pid; a host that dies releases the file; and a writer that dies in the
//! middle of a line never gets the next entry glued to it, so the file stays readable.

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pi_hooks_session::{MAX_DEPTH, SessionError, SessionStore};
use pi_hooks_tests::{Sandbox, behave_command, compile_c_text, read_behave_log};
use serde_json::{Value, json};

/// `depth` levels of arrays around `1`.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!([inner]))
}

fn nesting(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        Value::Object(fields) => 1 + fields.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// `pi-hooks run -p --script <reply to the prompt> --session <session> <prompt>`, with extra
/// arguments before the prompt.
fn run_args(sandbox: &Sandbox, session: &Path, extra: &[&str], prompt: &str) -> Vec<String> {
    let script = sandbox.script(&json!({"turns": [{"text": "reply to ${PROMPT}"}]}));
    let mut args: Vec<String> = ["run", "-p", "--script"].map(str::to_owned).to_vec();
    args.push(script.display().to_string());
    args.push("--session".into());
    args.push(session.display().to_string());
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args.push(prompt.into());
    args
}

fn run(sandbox: &Sandbox, session: &Path, prompt: &str) -> Output {
    let args = run_args(sandbox, session, &[], prompt);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sandbox.run(&args)
}

/// A `pi-hooks run` in `session` with one `behave` plugin `slow` that sleeps `sleep_ms` in
/// `agent_start`, started in the background.
fn spawn_slow_run(sandbox: &Sandbox, session: &Path, sleep_ms: u64, prompt: &str) -> Child {
    let plugins = [(
        "slow",
        json!({"handlers": [{"event": "agent_start", "sleep_ms": sleep_ms}]}),
    )];
    let args = run_args(sandbox, session, &[], prompt);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    behave_command(sandbox, &plugins, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pi-hooks")
}

/// Waits until the `slow` plugin of [`spawn_slow_run`] is sleeping in `agent_start`: the host
/// is in the middle of its run, with its session open.
fn wait_until_sleeping(sandbox: &Sandbox, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !read_behave_log(&sandbox.behave_log())
        .iter()
        .any(|line| line.tag == "agent_start")
    {
        if let Some(status) = child.try_wait().expect("poll pi-hooks") {
            panic!("pi-hooks ended before agent_start: {status}");
        }
        assert!(Instant::now() < deadline, "agent_start never came");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
}

/// Opens the file as the next host would; returns the entries and the warnings.
fn reopen(path: &Path) -> (Vec<Value>, Vec<String>) {
    let (store, warnings) = SessionStore::open(path)
        .unwrap_or_else(|e| panic!("the session does not open: {e}\n{}", read(path)));
    (store.entries().to_vec(), warnings)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).expect("read the session file")
}

/// The `(role, text)` of each message entry.
fn conversation(entries: &[Value]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| {
            let message = &e["message"];
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                blocks => blocks
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect(),
            };
            (message["role"].as_str().unwrap_or("").to_owned(), text)
        })
        .collect()
}

fn pair(role: &str, text: &str) -> (String, String) {
    (role.to_owned(), text.to_owned())
}

/// Every entry hangs under the one before it.
fn assert_linear(entries: &[Value]) {
    let mut parent = Value::Null;
    for entry in entries {
        assert_eq!(entry["parentId"], parent, "broken parent link at {entry}");
        parent = entry["id"].clone();
    }
}

// ---------------------------------------------------------------------------------------
// Item 6: one depth rule
// ---------------------------------------------------------------------------------------

#[test]
fn an_entry_at_the_depth_limit_round_trips_and_one_past_it_is_refused_at_append() {
    let sandbox = Sandbox::new();
    let path = sandbox.root().join("s.jsonl");
    let mut store = SessionStore::create(path.clone(), Path::new("/w")).unwrap();
    // The entry's own object is the first level: its data may nest MAX_DEPTH - 1 more.
    let at_limit = nested(MAX_DEPTH - 1);
    let kept = store.append_custom("deep", Some(at_limit.clone())).unwrap();
    let before = fs::read(&path).unwrap();

    let error = store
        .append_custom("deep", Some(nested(MAX_DEPTH)))
        .unwrap_err();
    assert!(
        matches!(error, SessionError::TooDeep { depth, limit, .. }
            if depth == MAX_DEPTH + 1 && limit == MAX_DEPTH),
        "{error:?}"
    );
    let message = error.to_string();
    for part in [
        path.display().to_string(),
        format!("nests {} levels", MAX_DEPTH + 1),
        format!("at most {MAX_DEPTH}"),
        "not saved".to_owned(),
    ] {
        assert!(message.contains(&part), "{part:?} missing from: {message}");
    }
    // The same rule for every kind of entry: a message whose content is one level shallower
    // than the refused data is just as deep as a line (entry, message, content).
    let message_entry = json!({"role": "user", "content": nested(MAX_DEPTH - 1)});
    assert!(matches!(
        store.append_message(&message_entry),
        Err(SessionError::TooDeep { depth, .. }) if depth == MAX_DEPTH + 1
    ));
    assert!(matches!(
        store.append_branch_summary(None, "s", Some(nested(MAX_DEPTH)), None),
        Err(SessionError::TooDeep { .. })
    ));
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "a refused entry leaves no byte"
    );
    assert_eq!(store.entries().len(), 1);
    assert_eq!(
        store.leaf_id(),
        Some(kept.as_str()),
        "the leaf did not move"
    );
    drop(store);

    let (entries, warnings) = reopen(&path);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["data"], at_limit);
    assert_eq!(nesting(&entries[0]), MAX_DEPTH);

    // A session kept in memory follows the same rule as one saved to a file.
    let mut memory = SessionStore::in_memory(Path::new("/w"));
    memory
        .append_custom("deep", Some(nested(MAX_DEPTH - 1)))
        .unwrap();
    assert!(matches!(
        memory.append_custom("deep", Some(nested(MAX_DEPTH))),
        Err(SessionError::TooDeep { .. })
    ));
}

/// A C plugin whose `agent_end` appends data nested `DATA_AT_LIMIT` levels, then one level more,
/// and writes `<depth> <status>` for each to the file named by `DEPTH_LOG`.
const DEEP_PLUGIN: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;

/* JSON text: `depth` arrays around 1. */
static char *nested(size_t depth) {
    char *text = malloc(2 * depth + 2);
    if (text == NULL) return NULL;
    memset(text, '[', depth);
    text[depth] = '1';
    memset(text + depth + 1, ']', depth);
    text[2 * depth + 1] = '\0';
    return text;
}

static void append(PiPlugin *plugin, FILE *log, size_t depth) {
    char *data = nested(depth);
    PiStatus status = data == NULL
        ? PI_ERR
        : host->actions->append_entry(plugin, pi_str("deep"), pi_str(data));
    fprintf(log, "%zu %d\n", depth, (int)status);
    free(data);
}

static PiStatus on_agent_end(void *user_data, const PiValue *event, PiContext *ctx,
                             PiResult *result) {
    (void)user_data; (void)event; (void)result;
    const char *path = getenv("DEPTH_LOG");
    FILE *log = path == NULL ? NULL : fopen(path, "a");
    if (log == NULL) return PI_ERR;
    PiPlugin *plugin = host->context->plugin(ctx);
    append(plugin, log, DATA_AT_LIMIT);
    append(plugin, log, DATA_AT_LIMIT + 1);
    fclose(log);
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("agent_end"), on_agent_end, NULL);
}

PI_HOOKS_PLUGIN("deep", "1.0", "appends deeply nested data", init, NULL);
"#;

#[test]
fn a_plugin_append_entry_past_the_depth_limit_gets_an_error_status_and_the_session_continues() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    let define = format!("-DDATA_AT_LIMIT={}", MAX_DEPTH - 1);
    let library = compile_c_text(&sandbox.lib(), "deep", DEEP_PLUGIN, &[&define]);
    let depth_log = sandbox.root().join("depth.log");
    let args = run_args(
        &sandbox,
        &session,
        &["--hook", library.to_str().unwrap()],
        "one",
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = sandbox
        .command(&args)
        .env("DEPTH_LOG", &depth_log)
        .output()
        .unwrap();
    assert_success(&output);

    // PI_OK at the limit; PI_ERR (not an acknowledgement) one level past it.
    let statuses = fs::read_to_string(&depth_log).expect("the plugin ran");
    assert_eq!(
        statuses,
        format!("{} 0\n{} 1\n", MAX_DEPTH - 1, MAX_DEPTH),
        "depth and status of each append_entry"
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("nests {} levels", MAX_DEPTH + 1))
            && stderr.contains(&format!("at most {MAX_DEPTH}")),
        "the refusal is explained:\n{stderr}"
    );

    let (entries, warnings) = reopen(&session);
    assert!(warnings.is_empty(), "{warnings:?}");
    let deep: Vec<&Value> = entries
        .iter()
        .filter(|e| e["customType"] == "deep")
        .collect();
    assert_eq!(deep.len(), 1, "only the entry at the limit was saved");
    assert_eq!(deep[0]["data"], nested(MAX_DEPTH - 1));
    assert_linear(&entries);

    // The next run continues the session (what `--continue` does with the newest file).
    let output = run(&sandbox, &session, "two");
    assert_success(&output);
    let (entries, warnings) = reopen(&session);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        conversation(&entries)[2..],
        [pair("user", "two"), pair("assistant", "reply to two")]
    );
}

#[test]
fn a_line_too_deep_to_read_is_an_error_and_never_deleted() {
    let sandbox = Sandbox::new();
    // Written by a host without the check: a complete line, one level too deep to read.
    let deep_line = format!(
        "{{\"type\":\"custom\",\"customType\":\"deep\",\"data\":{},\"id\":\"0000dee9\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\"}}\n",
        nested(MAX_DEPTH)
    );
    let later = "{\"type\":\"custom\",\"customType\":\"later\",\"id\":\"0000face\",\"parentId\":\"0000dee9\",\"timestamp\":\"2026-01-01T00:00:01.000Z\"}\n";
    for (name, tail) in [
        ("last.jsonl", deep_line.clone()),
        ("middle.jsonl", format!("{deep_line}{later}")),
    ] {
        let path = sandbox.root().join(name);
        drop(SessionStore::create(path.clone(), &sandbox.project()).unwrap());
        fs::write(&path, read(&path) + &tail).unwrap();
        let before = fs::read(&path).unwrap();

        let error = SessionStore::open(&path).unwrap_err();
        assert!(
            matches!(error, SessionError::Corrupt { line: 2, .. }),
            "{name}: {error}"
        );
        let output = run(&sandbox, &path, "hello");
        assert!(!output.status.success(), "{name}: the run must not go on");
        let stderr = text(&output.stderr);
        for part in [
            path.display().to_string(),
            "line 2".to_owned(),
            format!("nests {} levels", MAX_DEPTH + 1),
            format!("the {MAX_DEPTH}"),
        ] {
            assert!(
                stderr.contains(&part),
                "{name}: {part:?} missing:\n{stderr}"
            );
        }
        assert!(!stderr.contains("never acknowledged"), "{stderr}");
        assert_eq!(fs::read(&path).unwrap(), before, "{name}: nothing deleted");
    }
}

// ---------------------------------------------------------------------------------------
// Item 7: one host per session file
// ---------------------------------------------------------------------------------------

#[test]
fn a_second_store_on_the_same_file_is_refused_until_the_first_is_dropped() {
    let sandbox = Sandbox::new();
    let path = sandbox.root().join("s.jsonl");
    let mut first = SessionStore::create(path.clone(), Path::new("/w")).unwrap();
    first.append_custom("k", Some(json!(1))).unwrap();

    let error = SessionStore::open(&path).unwrap_err();
    match &error {
        SessionError::Locked {
            path: locked,
            holder,
        } => {
            assert_eq!(locked, &path);
            if cfg!(target_os = "linux") {
                assert_eq!(*holder, Some(std::process::id()), "{error}");
            }
        }
        other => panic!("not refused as locked: {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(&path.display().to_string())
            && message.contains("in use by another pi-hooks"),
        "{message}"
    );
    // The refused store changed nothing; the first one goes on.
    first.append_custom("k", Some(json!(2))).unwrap();
    drop(first);

    let (entries, warnings) = reopen(&path);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(entries.len(), 2);
    assert_linear(&entries);
}

#[test]
fn a_second_host_is_refused_while_the_first_has_the_session() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    let mut first = spawn_slow_run(&sandbox, &session, 8000, "first");
    wait_until_sleeping(&sandbox, &mut first);
    let pid = first.id();

    let second = run(&sandbox, &session, "second");
    let stderr = text(&second.stderr);
    assert!(!second.status.success(), "the second host ran:\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "session file {} is in use by another pi-hooks (pid {pid})",
            session.display()
        )),
        "{stderr}"
    );

    let first = first.wait_with_output().unwrap();
    assert_success(&first);
    assert_eq!(text(&first.stdout), "reply to first\n");
    let (entries, warnings) = reopen(&session);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_linear(&entries);
    assert_eq!(
        conversation(&entries),
        [pair("user", "first"), pair("assistant", "reply to first")]
    );
    assert!(!read(&session).contains("second"));
}

#[test]
fn a_host_that_dies_releases_the_session_and_its_half_line_is_cut() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    let mut first = spawn_slow_run(&sandbox, &session, 20_000, "first");
    wait_until_sleeping(&sandbox, &mut first);
    first.kill().unwrap();
    first.wait().unwrap();
    // It died in the middle of its next write: half a line, no line feed.
    let intact = read(&session);
    fs::write(
        &session,
        format!("{intact}{{\"type\":\"message\",\"id\":\"deadbeef\",\"par"),
    )
    .unwrap();

    let second = run(&sandbox, &session, "second");
    assert_success(&second);
    assert!(
        text(&second.stderr).contains("damaged last line"),
        "{}",
        text(&second.stderr)
    );
    let after = read(&session);
    assert!(after.starts_with(&intact) && !after.contains("deadbeef"));
    let (entries, warnings) = reopen(&session);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_linear(&entries);
    assert_eq!(
        conversation(&entries).last(),
        Some(&pair("assistant", "reply to second"))
    );
}

/// What a writer that ignores the lock (pi itself, or a host of another version) leaves when it
/// dies in the middle of a line.
const FRAGMENT: &str = r#"{"type":"custom","customType":"other","data":{"half":["wri"#;

#[test]
fn an_entry_is_never_glued_to_the_half_line_of_a_writer_that_died() {
    let sandbox = Sandbox::new();
    let path = sandbox.root().join("s.jsonl");
    let mut store = SessionStore::create(path.clone(), Path::new("/w")).unwrap();
    let first = store.append_custom("k", Some(json!(1))).unwrap();
    let before = read(&path);
    fs::write(&path, format!("{before}{FRAGMENT}")).unwrap();

    let second = store.append_custom("k", Some(json!(2))).unwrap();
    let after = read(&path);
    let ours = after
        .strip_prefix(&format!("{before}{FRAGMENT}\n"))
        .expect("the fragment is kept, and our entry starts on a new line");
    let line: Value = serde_json::from_str(ours.trim_end()).expect("our line is whole");
    assert_eq!(line["id"], json!(second));
    assert!(ours.ends_with('\n') && ours.lines().count() == 1);
    let third = store.append_custom("k", Some(json!(3))).unwrap();
    drop(store);

    let (entries, warnings) = reopen(&path);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("line 3") && warnings[0].contains("breaks off"),
        "{warnings:?}"
    );
    let ids: Vec<&Value> = entries.iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, [&json!(first), &json!(second), &json!(third)]);
    assert_linear(&entries);
    assert_eq!(read(&path).lines().nth(2), Some(FRAGMENT), "left in place");
}

/// A real process writes half a line into the session while a host has it and is killed; the
/// host's next entries still land on lines of their own and the next host opens the file.
#[test]
fn a_process_killed_mid_line_beside_a_running_host_leaves_a_readable_file() {
    let sandbox = Sandbox::new();
    let session = sandbox.root().join("s.jsonl");
    let mut host = spawn_slow_run(&sandbox, &session, 4000, "first");
    wait_until_sleeping(&sandbox, &mut host);
    let status = Command::new("sh")
        .args(["-c", r#"printf '%s' "$1" >> "$2"; kill -9 $$"#, "sh"])
        .arg(FRAGMENT)
        .arg(&session)
        .status()
        .unwrap();
    assert!(!status.success(), "the writer was killed: {status}");
    assert!(read(&session).ends_with(FRAGMENT));

    let host = host.wait_with_output().unwrap();
    assert_success(&host);
    let text_now = read(&session);
    assert!(
        text_now.contains(&format!("{FRAGMENT}\n{{")),
        "the host's next entry starts on a new line:\n{text_now}"
    );
    let (entries, warnings) = reopen(&session);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_linear(&entries);
    assert_eq!(
        conversation(&entries),
        [pair("user", "first"), pair("assistant", "reply to first")]
    );

    // The next host continues the session.
    let next = run(&sandbox, &session, "second");
    assert_success(&next);
    let (entries, _) = reopen(&session);
    assert_linear(&entries);
    assert_eq!(
        conversation(&entries)[2..],
        [pair("user", "second"), pair("assistant", "reply to second")]
    );
}

#[test]
fn a_session_whose_parents_form_a_cycle_is_refused_naming_the_entry() {
    let sandbox = Sandbox::new();
    let path = sandbox.root().join("cycle.jsonl");
    drop(SessionStore::create(path.clone(), &sandbox.project()).unwrap());
    // Three messages, the first pointing at the last: a branch without a root.
    let message = |id: &str, parent: &str, text: &str| {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":\"{parent}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"timestamp\":1}}}}\n"
        )
    };
    let tail = message("0000aaaa", "0000cccc", "one")
        + &message("0000bbbb", "0000aaaa", "two")
        + &message("0000cccc", "0000bbbb", "three");
    fs::write(&path, read(&path) + &tail).unwrap();
    let before = fs::read(&path).unwrap();

    let error = SessionStore::open(&path).unwrap_err();
    assert!(
        matches!(error, SessionError::Corrupt { line: 2, .. }),
        "{error}"
    );
    let output = run(&sandbox, &path, "hello");
    assert!(!output.status.success(), "the run must not go on");
    let stderr = text(&output.stderr);
    for part in [
        path.display().to_string(),
        "line 2".to_owned(),
        "the parents of entry 0000aaaa lead back to it (0000aaaa -> 0000cccc -> 0000bbbb -> 0000aaaa)".to_owned(),
    ] {
        assert!(stderr.contains(&part), "{part:?} missing:\n{stderr}");
    }
    assert_eq!(fs::read(&path).unwrap(), before, "nothing changed");
}
