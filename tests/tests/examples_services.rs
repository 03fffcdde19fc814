//! The example plugins that use the host services `exec`, timers and actions, run
//! end to end through a real `pi-hooks run --mode json` over a scripted model:
//!
//! - `plugins/examples/spawn-hook`: its `bash` tool replaces the built-in and runs `pnpm`
//!   where the model asked for `npm` (a fake `pnpm` first on `PATH` proves which ran).
//! - `plugins/examples/file-trigger`: a timer polls a trigger file that a tool call writes
//!   during the run; its content comes back as the user message `External trigger: ...`,
//!   steering the run, and the file is emptied.
//! - `plugins/examples/git-checkpoint`: in a git repository with a modified file, every turn
//!   start records a `git stash create` commit in the session, holding the code of that moment,
//!   without touching the working tree or the stash list. (Its restore on fork is not run
//!   here: the host has no fork yet, so `session_before_fork` is never emitted.)

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use pi_hooks_tests::{Sandbox, c_example_plugin, json_lines, output_within};
use serde_json::{Value, json};

/// Longer than any run here takes.
const LIMIT: Duration = Duration::from_secs(60);

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> String {
    let rest = std::env::var("PATH").unwrap_or_default();
    format!("{}:{rest}", dir.display())
}

/// Writes an executable shell script `dir/name`.
fn write_script(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).expect("script dir");
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Runs `pi-hooks run --mode json` with `hook`, the scripted `turns` and extra setup; returns
/// the JSON lines and stderr.
fn run_json(
    s: &Sandbox,
    hook: &Path,
    turns: Value,
    args: &[&str],
    setup: impl FnOnce(&mut Command),
) -> (Vec<Value>, String) {
    let script = s.script(&json!({ "turns": turns }));
    let mut command = s.command(&["run", "--mode", "json", "--script"]);
    command.arg(&script).arg("--hook").arg(hook).args(args);
    setup(&mut command);
    let output = output_within(command, LIMIT);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "pi-hooks run failed: {stderr}");
    (json_lines(&output), stderr)
}

/// The `tool_execution_end` events in the order the calls started (tools run concurrently,
/// so they may end in another order).
fn tool_ends(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_execution_start")
        .filter_map(|start| {
            events.iter().find(|e| {
                e["type"] == "tool_execution_end" && e["toolCallId"] == start["toolCallId"]
            })
        })
        .collect()
}

fn result_text(end: &Value) -> &str {
    end["result"]["content"][0]["text"].as_str().unwrap_or("")
}

/// spawn-hook's `tool_call` handler rewrites the built-in `bash`'s command: pnpm runs where the
/// model asked for npm, with `CUSTOM_VAR=1`, and the built-in keeps its own output shape.
#[test]
fn spawn_hook_rewrites_the_builtin_bash_to_run_pnpm_where_the_model_asked_for_npm() {
    let s = Sandbox::new();
    let hook = c_example_plugin(&s.lib(), "spawn-hook", "spawn_hook");
    let bin = s.root().join("bin");
    write_script(&bin, "pnpm", "echo \"pnpm-ran $@\"");
    write_script(&bin, "npm", "echo \"npm-ran $@\"");
    let turns = json!([
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "npm --version"}},
            {"name": "bash", "arguments": {"command": "echo npm is not rewritten here; echo var=$CUSTOM_VAR"}},
        ]},
        {"text": "done"}
    ]);
    let (events, stderr) = run_json(&s, &hook, turns, &["--trace", "go"], |c| {
        c.env("PATH", path_with(&bin));
    });
    let ends = tool_ends(&events);
    assert_eq!(ends.len(), 2, "stderr: {stderr}\nevents: {events:?}");
    // The model asked for npm; pnpm ran through the built-in bash, and the tool call still
    // shows the command as asked (as in pi: the execution events keep the model's arguments).
    assert_eq!(result_text(ends[0]), "pnpm-ran --version\n");
    assert_eq!(ends[0]["isError"], false);
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start" && e["toolCallId"] == ends[0]["toolCallId"])
        .expect("tool_execution_start");
    assert_eq!(start["args"]["command"], "npm --version");
    assert_eq!(result_text(ends[1]), "npm is not rewritten here\nvar=1\n");
    // The hook trace says what the handler did.
    assert!(
        stderr.contains(r#"rewrote: input {"command":"export CUSTOM_VAR=1; pnpm --version"}"#),
        "{stderr}"
    );
}

/// A plugin `bash` built on `exec` (tests/fixtures/exec_bash.c, spawn-hook's first form):
/// the built-in's result shape, exit codes and timeouts.
#[test]
fn an_exec_built_bash_tool_runs_pnpm_where_the_model_asked_for_npm() {
    let s = Sandbox::new();
    let hook = pi_hooks_tests::c_fixture(&s.lib(), "exec_bash", &["-pedantic"]);
    let bin = s.root().join("bin");
    write_script(&bin, "pnpm", "echo \"pnpm-ran $@\"");
    write_script(&bin, "npm", "echo \"npm-ran $@\"");
    let turns = json!([
        {"toolCalls": [
            {"name": "bash", "arguments": {"command": "npm --version"}},
            {"name": "bash", "arguments": {"command": "echo npm is not rewritten here; echo var=$CUSTOM_VAR"}},
            {"name": "bash", "arguments": {"command": "echo oops >&2; exit 3"}},
            {"name": "bash", "arguments": {"command": "true"}},
            {"name": "bash", "arguments": {"command": "sleep 5", "timeout": 0.2}}
        ]},
        {"text": "done"}
    ]);
    let (events, stderr) = run_json(&s, &hook, turns, &["go"], |c| {
        c.env("PATH", path_with(&bin));
    });
    let ends = tool_ends(&events);
    assert_eq!(ends.len(), 5, "stderr: {stderr}\nevents: {events:?}");
    // The model asked for npm; pnpm ran, and the tool call still shows the command as asked.
    assert_eq!(result_text(ends[0]), "pnpm-ran --version\n");
    assert_eq!(ends[0]["isError"], false);
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start" && e["toolCallId"] == ends[0]["toolCallId"])
        .expect("tool_execution_start");
    assert_eq!(start["args"]["command"], "npm --version");
    // Only a leading `npm ` is rewritten (the seed's /^npm /); CUSTOM_VAR=1 is in the env.
    assert_eq!(result_text(ends[1]), "npm is not rewritten here\nvar=1\n");
    // A non-zero exit is an error result in the built-in's shape.
    assert_eq!(result_text(ends[2]), "oops\n\n\nCommand exited with code 3");
    assert_eq!(ends[2]["isError"], true);
    assert_eq!(result_text(ends[3]), "(no output)");
    // The timeout (seconds) kills the command.
    assert_eq!(result_text(ends[4]), "Command timed out after 0.2 seconds");
    assert_eq!(ends[4]["isError"], true);
}

#[test]
fn file_trigger_sends_the_file_content_as_a_user_message_and_clears_the_file() {
    let s = Sandbox::new();
    let hook = c_example_plugin(&s.lib(), "file-trigger", "file_trigger");
    let trigger = s.root().join("agent-trigger.txt");
    let session = s.root().join("session.jsonl");
    // The first tool call writes the trigger file and keeps the agent busy for a second, a
    // few polls (every 200 ms) long: the message arrives while the agent is streaming.
    let command = format!(
        "echo '  Run the tests  ' > '{}'; sleep 1",
        trigger.display()
    );
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "Running them."}
    ]);
    let (events, stderr) = run_json(
        &s,
        &hook,
        turns,
        &["--session", session.to_str().expect("utf-8 path"), "go"],
        |c| {
            c.env("PI_TRIGGER_FILE", &trigger);
        },
    );
    let expected = "External trigger: Run the tests";
    let is_trigger = |m: &Value| m["role"] == "user" && m["content"][0]["text"] == expected;
    let at = events
        .iter()
        .position(|e| e["type"] == "message_end" && is_trigger(&e["message"]))
        .unwrap_or_else(|| panic!("no trigger message; stderr: {stderr}\nevents: {events:?}"));
    // Steered: after the tool's turn ended, at the start of the next turn, in the same run.
    let kinds: Vec<&str> = events[..at]
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    let turn_end = kinds
        .iter()
        .rposition(|k| *k == "turn_end")
        .expect("turn_end");
    // pi's queue_update when it is queued, and again when the turn takes it.
    assert_eq!(
        kinds[turn_end + 1..],
        [
            "queue_update",
            "turn_start",
            "queue_update",
            "message_start"
        ]
    );
    assert_eq!(kinds.iter().filter(|k| **k == "agent_start").count(), 1);
    assert!(!kinds.contains(&"agent_end"));
    // Sent once, and the file was cleared after reading.
    let sent = events
        .iter()
        .filter(|e| e["type"] == "message_end" && is_trigger(&e["message"]))
        .count();
    assert_eq!(sent, 1);
    assert_eq!(std::fs::read_to_string(&trigger).expect("trigger file"), "");
    // The message is in the session file, before the model's answer to it.
    let text = std::fs::read_to_string(&session).expect("session file");
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let user = entries
        .iter()
        .position(|e| e["type"] == "message" && is_trigger(&e["message"]))
        .expect("the trigger message in the session");
    assert_eq!(
        entries[user + 1]["message"]["content"][0]["text"],
        "Running them."
    );
}

/// Runs `git` in `dir`; its stdout, trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn git_checkpoint_records_a_stash_commit_of_the_code_at_each_turn() {
    let s = Sandbox::new();
    let hook = c_example_plugin(&s.lib(), "git-checkpoint", "git_checkpoint");
    let repo = s.project();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.email", "test@example.com"]);
    git(&repo, &["config", "user.name", "Test"]);
    std::fs::write(repo.join("a.txt"), "one\n").expect("write a.txt");
    git(&repo, &["add", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    std::fs::write(repo.join("a.txt"), "one\ntwo\n").expect("modify a.txt");
    let session = s.root().join("session.jsonl");
    // Turn 0 changes the file; turn 1 sees the change.
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo three >> a.txt"}}]},
        {"text": "done"}
    ]);
    let (_, stderr) = run_json(
        &s,
        &hook,
        turns,
        &["--session", session.to_str().expect("utf-8 path"), "go"],
        |_| {},
    );
    let entries: Vec<Value> = std::fs::read_to_string(&session)
        .expect("session file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let checkpoints: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "custom" && e["customType"] == "git-checkpoint")
        .collect();
    assert_eq!(
        checkpoints.len(),
        2,
        "stderr: {stderr}\nentries: {entries:?}"
    );
    let mut refs = Vec::new();
    for (turn, checkpoint) in checkpoints.iter().enumerate() {
        let data = &checkpoint["data"];
        assert_eq!(data["turnIndex"], turn);
        let r = data["ref"].as_str().expect("a ref").to_owned();
        assert!(
            r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()),
            "not a commit id: {r:?}"
        );
        assert_eq!(git(&repo, &["cat-file", "-t", &r]), "commit");
        refs.push(r);
    }
    // Each checkpoint holds the code as it was when its turn started.
    assert_eq!(
        git(&repo, &["show", &format!("{}:a.txt", refs[0])]),
        "one\ntwo"
    );
    assert_eq!(
        git(&repo, &["show", &format!("{}:a.txt", refs[1])]),
        "one\ntwo\nthree"
    );
    // The turn-0 checkpoint is the parent of the prompt (what a fork at the prompt looks up),
    // and the leaf it recorded is the entry before it (none: the session was empty).
    let prompt = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .expect("the prompt entry");
    assert_eq!(prompt["parentId"], checkpoints[0]["id"]);
    assert_eq!(checkpoints[0]["data"]["entryId"], Value::Null);
    assert_eq!(
        checkpoints[1]["data"]["entryId"],
        checkpoints[1]["parentId"]
    );
    // `git stash create` left the working tree and the stash list alone.
    assert_eq!(
        std::fs::read_to_string(repo.join("a.txt")).expect("a.txt"),
        "one\ntwo\nthree\n"
    );
    assert_eq!(git(&repo, &["stash", "list"]), "");
}

#[test]
fn git_checkpoint_records_nothing_outside_a_repository_or_on_a_clean_tree() {
    let s = Sandbox::new();
    let hook = c_example_plugin(&s.lib(), "git-checkpoint", "git_checkpoint");
    let session = s.root().join("session.jsonl");
    let checkpoints = |s: &Sandbox| {
        let (_, stderr) = run_json(
            s,
            &hook,
            json!([{"text": "done"}]),
            &["--session", session.to_str().expect("utf-8 path"), "go"],
            |_| {},
        );
        assert!(!stderr.contains("Extension error"), "stderr: {stderr}");
        std::fs::read_to_string(&session)
            .expect("session file")
            .lines()
            .filter(|l| l.contains("\"git-checkpoint\""))
            .count()
    };
    // Not a repository: git fails, quietly no checkpoint.
    assert_eq!(checkpoints(&s), 0);
    // A clean tree: git stash create prints nothing.
    git(&s.project(), &["init", "-q"]);
    git(&s.project(), &["config", "user.email", "test@example.com"]);
    git(&s.project(), &["config", "user.name", "Test"]);
    std::fs::write(s.project().join("a.txt"), "one\n").expect("write a.txt");
    git(&s.project(), &["add", "a.txt"]);
    git(&s.project(), &["commit", "-q", "-m", "init"]);
    assert_eq!(checkpoints(&s), 0);
}
