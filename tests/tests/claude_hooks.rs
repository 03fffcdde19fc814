//! The claude-hooks plugin (`plugins/claude-hooks`): Claude Code's command hooks, written as
//! real shell scripts in `~/.claude/settings.json` and `.claude/settings.json`, run through
//! real `pi-hooks run` sessions with the scripted model: `PreToolUse` guards (exit 2, JSON
//! `deny`), `updatedInput`, `ask` answered through the RPC dialog, `PostToolUse` context the
//! model reads, `UserPromptSubmit` blocking and adding context, `SessionStart` context, `Stop`
//! forcing another turn, matchers, hooks that time out, print malformed JSON or are not
//! executable, and project hooks that wait for trust. The real pi through the bridge is in
//! `claude_hooks_pi.rs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::{Sandbox, json_lines, output_within, rust_plugin};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

/// A sandbox with hook scripts under `<root>/hooks`.
struct World {
    s: Sandbox,
}

/// What a `pi-hooks run --mode json` printed.
struct Run {
    events: Vec<Value>,
    stderr: String,
}

impl Run {
    /// The `tool_execution_end` lines.
    fn tool_ends(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == "tool_execution_end")
            .collect()
    }

    /// Every text block of the `n`th tool result, joined.
    fn tool_text(&self, n: usize) -> String {
        let end = self.tool_ends()[n];
        end["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The text of the last assistant message.
    fn final_text(&self) -> String {
        self.events
            .iter()
            .rev()
            .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
            .and_then(|e| e["message"]["content"][0]["text"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// The `claude-hooks` custom messages' contents.
    fn contexts(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["type"] == "message_end" && e["message"]["customType"] == "claude-hooks")
            .map(|e| {
                e["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    fn count(&self, kind: &str) -> usize {
        self.events.iter().filter(|e| e["type"] == kind).count()
    }
}

/// `{"type": "command", "command": ...}`.
fn hook(command: &str) -> Value {
    json!({"type": "command", "command": command})
}

/// `{"matcher": ..., "hooks": [...]}`.
fn on(matcher: &str, hooks: &[Value]) -> Value {
    json!({"matcher": matcher, "hooks": hooks})
}

impl World {
    fn new() -> World {
        let world = World { s: Sandbox::new() };
        std::fs::create_dir_all(world.hooks_dir()).unwrap();
        world
    }

    fn hooks_dir(&self) -> PathBuf {
        self.s.root().join("hooks")
    }

    fn project(&self) -> PathBuf {
        self.s.project()
    }

    /// Writes the executable shell script `name` with `body`; returns its path.
    fn script(&self, name: &str, body: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.hooks_dir().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_str().unwrap().to_owned()
    }

    /// `~/.claude/settings.json` with `hooks`.
    fn user_settings(&self, hooks: Value) {
        let dir = self.s.home().join(".claude");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("settings.json"),
            json!({ "hooks": hooks }).to_string(),
        )
        .unwrap();
    }

    /// `<project>/.claude/settings.json` with `hooks`.
    fn project_settings(&self, hooks: Value) -> PathBuf {
        let dir = self.project().join(".claude");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("settings.json");
        std::fs::write(&path, json!({ "hooks": hooks }).to_string()).unwrap();
        path
    }

    fn script_file(&self, turns: &Value) -> PathBuf {
        self.s.script(&json!({ "turns": turns }))
    }

    /// `pi-hooks run --mode json` with the plugin, `turns`, `session` options and `prompts`;
    /// plugin logs at info level.
    fn run_with(&self, session: &[&str], turns: &Value, prompts: &[&str]) -> Run {
        let script = self.script_file(turns);
        let plugin = rust_plugin("claude-hooks");
        let mut args = vec!["run", "--mode", "json", "--no-hooks"];
        args.extend_from_slice(session);
        args.extend([
            "--script",
            script.to_str().unwrap(),
            "-e",
            plugin.to_str().unwrap(),
        ]);
        args.extend_from_slice(prompts);
        let mut command = self.s.command(&args);
        command.env("PI_HOOKS_LOG", "info");
        let output = output_within(command, LIMIT);
        assert!(output.status.success(), "{output:?}");
        Run {
            events: json_lines(&output),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    fn run(&self, turns: &Value, prompts: &[&str]) -> Run {
        self.run_with(&["--no-session"], turns, prompts)
    }

    /// `pi-hooks rpc --no-session` with the plugin and `turns`.
    fn rpc(&self, turns: &Value) -> RpcClient {
        self.rpc_with(&json!({ "turns": turns }), &["--no-session"])
    }

    /// `pi-hooks rpc` with the plugin, the scripted model's `script` and `extra` arguments.
    fn rpc_with(&self, script: &Value, extra: &[&str]) -> RpcClient {
        let script = self.s.script(script);
        let plugin = rust_plugin("claude-hooks");
        let mut args = vec![
            "rpc",
            "--no-hooks",
            "--script",
            script.to_str().unwrap(),
            "-e",
            plugin.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        RpcClient::start(self.s.command(&args))
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.project().join(name)).unwrap_or_default()
    }
}

fn bash(command: &str) -> Value {
    json!({"toolCalls": [{"name": "bash", "arguments": {"command": command}}]})
}

/// A guard that keeps its stdin and environment, and blocks `rm -rf` with exit 2.
const EXIT_2_GUARD: &str = r#"input=$(cat)
printf '%s' "$input" > "$CLAUDE_PROJECT_DIR/seen.json"
printf '%s' "$CLAUDE_PROJECT_DIR" > "$CLAUDE_PROJECT_DIR/project-dir.txt"
case "$input" in *'rm -rf'*) echo "rm -rf is not allowed here" >&2; echo "stdout is ignored"; exit 2;; esac
exit 0"#;

#[test]
fn a_pre_tool_use_guard_blocks_rm_rf_by_exit_2_with_stderr_as_the_reason() {
    let w = World::new();
    let guard = w.script("guard.sh", EXIT_2_GUARD);
    w.user_settings(json!({"PreToolUse": [on("Bash", &[hook(&guard)])]}));
    std::fs::create_dir_all(w.project().join("victim")).unwrap();
    // With a session file, so transcript_path and session_id are the session's.
    let run = w.run_with(
        &[],
        &json!([bash("rm -rf victim"), {"text": "model saw: ${LAST_MESSAGE}"}]),
        &["go"],
    );
    assert!(
        w.project().join("victim").is_dir(),
        "the command did not run"
    );
    let end = run.tool_ends()[0];
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(run.tool_text(0), "rm -rf is not allowed here");
    assert_eq!(run.final_text(), "model saw: rm -rf is not allowed here");

    let seen: Value = serde_json::from_str(&w.read("seen.json")).expect("the hook's stdin is JSON");
    let header = &run.events[0];
    assert_eq!(header["type"], "session");
    assert_eq!(seen["session_id"], header["id"], "{seen}");
    let transcript = seen["transcript_path"].as_str().unwrap();
    assert!(
        transcript.ends_with(".jsonl") && Path::new(transcript).is_file(),
        "{seen}"
    );
    assert_eq!(seen["cwd"], w.project().to_str().unwrap());
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["tool_name"], "Bash");
    assert_eq!(seen["tool_input"], json!({"command": "rm -rf victim"}));
    assert!(
        seen["tool_use_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{seen}"
    );
    assert_eq!(w.read("project-dir.txt"), w.project().to_str().unwrap());
}

#[test]
fn a_pre_tool_use_guard_denies_by_json_and_lets_other_commands_run() {
    let w = World::new();
    let guard = w.script(
        "deny.sh",
        r#"if grep -q 'rm -rf'; then
  printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"destructive command denied by policy"}}'
fi"#,
    );
    w.user_settings(json!({"PreToolUse": [on("Bash", &[hook(&guard)])]}));
    std::fs::create_dir_all(w.project().join("victim")).unwrap();
    let run = w.run(
        &json!([bash("rm -rf victim"), bash("echo fine"), {"text": "end"}]),
        &["go"],
    );
    assert!(w.project().join("victim").is_dir());
    assert_eq!(run.tool_ends()[0]["isError"], true);
    assert_eq!(run.tool_text(0), "destructive command denied by policy");
    assert_eq!(run.tool_ends()[1]["isError"], false);
    assert_eq!(run.tool_text(1), "fine\n");
}

#[test]
fn updated_input_rewrites_the_command_that_runs() {
    let w = World::new();
    let rewrite = w.script(
        "rewrite.sh",
        r#"cat > /dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"echo rewritten by the hook"}}}'"#,
    );
    w.user_settings(json!({"PreToolUse": [on("Bash", &[hook(&rewrite)])]}));
    let run = w.run(&json!([bash("echo original"), {"text": "end"}]), &["go"]);
    assert_eq!(run.tool_ends()[0]["isError"], false);
    assert_eq!(run.tool_text(0), "rewritten by the hook\n");
}

/// A hook that asks, and a `Notification` hook that records what it was told.
fn asking_world() -> World {
    let w = World::new();
    let ask = w.script(
        "ask.sh",
        r#"cat > /dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"this touches the network"}}'"#,
    );
    let notified = w.script(
        "notified.sh",
        r#"cat >> "$CLAUDE_PROJECT_DIR/notified.json""#,
    );
    w.user_settings(json!({
        "PreToolUse": [on("Bash", &[hook(&ask)])],
        "Notification": [on("permission_prompt", &[hook(&notified)])],
    }));
    w
}

#[test]
fn ask_opens_the_confirm_dialog_and_its_answer_decides() {
    let w = asking_world();
    let mut rpc = w.rpc(&json!([bash("echo asked"), {"text": "end"}]));
    for (id, yes) in [("yes", true), ("no", false)] {
        rpc.send(&json!({"id": id, "type": "prompt", "message": "go"}));
        let confirm = rpc
            .until(|l| l["type"] == "extension_ui_request" && l["method"] == "confirm")
            .1;
        assert_eq!(confirm["title"], "Claude Code hook: allow Bash?");
        assert_eq!(confirm["message"], "this touches the network\n\necho asked");
        rpc.send(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": yes}));
        let (lines, _) = rpc.until(|l| l["type"] == "agent_end");
        let end = lines
            .iter()
            .find(|l| l["type"] == "tool_execution_end")
            .expect("tool_execution_end");
        if yes {
            assert_eq!(end["isError"], false, "{end}");
            assert_eq!(end["result"]["content"][0]["text"], "asked\n");
        } else {
            assert_eq!(end["isError"], true, "{end}");
            assert_eq!(end["result"]["content"][0]["text"], "Blocked by user");
        }
    }
    let (status, _) = rpc.close();
    assert!(status.success());
    let notified = w.read("notified.json");
    assert_eq!(
        notified
            .matches("\"notification_type\":\"permission_prompt\"")
            .count(),
        2
    );
    assert!(
        notified.contains("\"message\":\"Claude needs your permission to use Bash\""),
        "{notified}"
    );
    assert!(
        notified.contains("\"hook_event_name\":\"Notification\""),
        "{notified}"
    );
}

#[test]
fn ask_without_a_ui_blocks_with_a_reason_that_says_so() {
    let w = asking_world();
    let run = w.run(&json!([bash("echo asked"), {"text": "end"}]), &["go"]);
    assert_eq!(run.tool_ends()[0]["isError"], true);
    assert_eq!(
        run.tool_text(0),
        "Bash needs the user's approval (this touches the network) and there is no UI to ask"
    );
}

#[test]
fn post_tool_use_adds_context_and_feedback_the_model_then_sees() {
    let w = World::new();
    let context = w.script(
        "context.sh",
        r#"cat > "$CLAUDE_PROJECT_DIR/post.json"
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatter ran: 2 files changed"}}'"#,
    );
    let lint = w.script(
        "lint.sh",
        "cat > /dev/null\necho 'lint failed: missing semicolon' >&2\nexit 2",
    );
    w.user_settings(
        json!({"PostToolUse": [on("Bash", &[hook(&context)]), on("Bash", &[hook(&lint)])]}),
    );
    let run = w.run(
        &json!([bash("echo hi"), {"text": "${LAST_MESSAGE}"}]),
        &["go"],
    );
    assert_eq!(run.tool_ends()[0]["isError"], false);
    let text = run.tool_text(0);
    assert_eq!(
        text,
        "hi\n\nPostToolUse hook feedback:\nlint failed: missing semicolon\nformatter ran: 2 files changed"
    );
    let seen = run.final_text();
    assert!(seen.contains("formatter ran: 2 files changed"), "{seen}");
    assert!(seen.contains("lint failed: missing semicolon"), "{seen}");
    let post: Value = serde_json::from_str(&w.read("post.json")).unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_name"], "Bash");
    assert_eq!(post["tool_input"]["command"], "echo hi");
    assert_eq!(post["tool_response"]["stdout"], "hi\n");
    assert_eq!(post["tool_response"]["success"], true);
}

#[test]
fn post_tool_use_failure_sees_the_error_and_a_blocked_call_fires_neither() {
    let w = World::new();
    let failure = w.script(
        "failure.sh",
        r#"cat >> "$CLAUDE_PROJECT_DIR/failure.log"
echo >> "$CLAUDE_PROJECT_DIR/failure.log"
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"the file is created by make"}}'"#,
    );
    let post = w.script("post.sh", "cat >> \"$CLAUDE_PROJECT_DIR/post.log\"");
    let guard = w.script("guard.sh", "cat > /dev/null\necho no >&2\nexit 2");
    w.user_settings(json!({
        "PreToolUse": [on("Bash", &[hook(&guard)])],
        "PostToolUse": [on("*", &[hook(&post)])],
        "PostToolUseFailure": [on("*", &[hook(&failure)])],
    }));
    let run = w.run(
        &json!([
            bash("echo blocked"),
            {"toolCalls": [{"name": "read", "arguments": {"path": "missing.txt"}}]},
            {"text": "end"}
        ]),
        &["go"],
    );
    assert_eq!(run.tool_text(0), "no");
    assert!(
        run.tool_text(1)
            .ends_with("missing.txt'\nthe file is created by make"),
        "{}",
        run.tool_text(1)
    );
    assert!(!w.project().join("post.log").exists(), "no tool succeeded");
    let calls: Vec<Value> = w
        .read("failure.log")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "the blocked call is not a failure of the tool"
    );
    assert_eq!(calls[0]["tool_name"], "Read");
    let missing = w.project().join("missing.txt");
    assert_eq!(
        calls[0]["tool_input"],
        json!({"file_path": missing.to_str().unwrap()})
    );
    assert!(
        calls[0]["error"].as_str().unwrap().contains("missing.txt"),
        "{}",
        calls[0]
    );
    assert_eq!(calls[0]["is_interrupt"], false);
}

#[test]
fn user_prompt_submit_blocks_a_prompt_and_adds_context_to_another() {
    let w = World::new();
    let filter = w.script(
        "prompt.sh",
        r#"input=$(cat)
case "$input" in *password*) echo "prompts with passwords are refused" >&2; exit 2;; esac
echo "current branch: main""#,
    );
    w.user_settings(json!({"UserPromptSubmit": [{"hooks": [hook(&filter)]}]}));
    let run = w.run(
        &json!([{"text": "saw: ${LAST_MESSAGE}"}]),
        &["my password is hunter2", "hello"],
    );
    assert_eq!(run.count("agent_start"), 1, "the blocked prompt never ran");
    let users: Vec<&Value> = run
        .events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .collect();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["message"]["content"][0]["text"], "hello");
    assert!(
        run.stderr.contains(
            "UserPromptSubmit hook blocked the prompt: prompts with passwords are refused"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(run.contexts(), ["current branch: main"]);
    assert_eq!(run.final_text(), "saw: current branch: main");
}

#[test]
fn session_start_context_reaches_the_first_prompt() {
    let w = World::new();
    let start = w.script(
        "start.sh",
        r#"input=$(cat)
case "$input" in *'"source":"startup"'*) ;; *) exit 1;; esac
printf '%s' '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"open issues: #12, #14"}}'"#,
    );
    let resume = w.script("resume.sh", "touch \"$CLAUDE_PROJECT_DIR/resume-ran\"");
    w.user_settings(
        json!({"SessionStart": [on("startup", &[hook(&start)]), on("resume", &[hook(&resume)])]}),
    );
    let run = w.run(&json!([{"text": "saw: ${LAST_MESSAGE}"}]), &["hi"]);
    assert_eq!(run.contexts(), ["open issues: #12, #14"]);
    assert_eq!(run.final_text(), "saw: open issues: #12, #14");
    assert!(
        !w.project().join("resume-ran").exists(),
        "the resume matcher did not match startup"
    );
}

#[test]
fn a_stop_hook_forces_another_turn_once() {
    let w = World::new();
    let stop = w.script(
        "stop.sh",
        r#"input=$(cat)
printf '%s\n' "$input" >> "$CLAUDE_PROJECT_DIR/stop.log"
case "$input" in *'"stop_hook_active":true'*) exit 0;; esac
printf '%s' '{"decision":"block","reason":"the tests were not run yet"}'"#,
    );
    w.user_settings(json!({"Stop": [{"hooks": [hook(&stop)]}]}));
    let run = w.run(
        &json!([{"text": "first answer"}, {"text": "second: ${LAST_MESSAGE}"}]),
        &["go"],
    );
    assert_eq!(run.count("agent_start"), 1, "the same run went on");
    assert_eq!(
        run.final_text(),
        "second: Stop hook feedback:\nthe tests were not run yet"
    );
    let log = w.read("stop.log");
    let calls: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert_eq!(calls[0]["stop_hook_active"], false);
    assert_eq!(calls[1]["stop_hook_active"], true);
    assert_eq!(calls[0]["hook_event_name"], "Stop");
}

#[test]
fn pre_compact_session_start_compact_and_session_end_get_their_fields() {
    let w = World::new();
    let log = w.script(
        "log.sh",
        r#"cat >> "$CLAUDE_PROJECT_DIR/events.log"
echo >> "$CLAUDE_PROJECT_DIR/events.log""#,
    );
    let with = |name: &str| hook(&format!("{log} {name}"));
    w.user_settings(json!({
        "PreCompact": [on("auto", &[with("auto")]), on("manual", &[with("manual")])],
        "SessionStart": [on("compact", &[with("compact")])],
        "SessionEnd": [{"hooks": [with("end")]}],
    }));
    // A window of 16384 + 600 tokens: the first run's context passes the threshold.
    let script = json!({
        "turns": [{"text": "reply"}],
        "models": [{"id": "tiny", "contextWindow": 16984}],
        "summary": "SUMMARY",
    });
    let mut rpc = w.rpc_with(&script, &[]);
    rpc.send(&json!({"id": "p", "type": "prompt", "message": "first"}));
    rpc.until(|l| l["type"] == "compaction_end");
    // Something new to compact, by hand this time.
    rpc.send(&json!({"id": "off", "type": "set_auto_compaction", "enabled": false}));
    rpc.response("off");
    rpc.send(&json!({"id": "q", "type": "prompt", "message": "second"}));
    rpc.until(|l| l["type"] == "agent_end");
    rpc.send(&json!({"id": "c", "type": "compact", "customInstructions": "keep the tests"}));
    let compacted = rpc.response("c");
    assert_eq!(compacted["success"], true, "{compacted}");
    let (status, _) = rpc.close();
    assert!(status.success());
    let seen: Vec<Value> = w
        .read("events.log")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String)> = seen
        .iter()
        .map(|e| {
            let event = e["hook_event_name"].as_str().unwrap().to_owned();
            let detail = match event.as_str() {
                "PreCompact" => format!("{} {}", e["trigger"], e["custom_instructions"]),
                "SessionStart" => e["source"].to_string(),
                _ => e["reason"].to_string(),
            };
            (event, detail)
        })
        .collect();
    let pairs: Vec<(&str, &str)> = summary
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("PreCompact", r#""auto" """#),
            ("SessionStart", r#""compact""#),
            ("PreCompact", r#""manual" "keep the tests""#),
            ("SessionStart", r#""compact""#),
            ("SessionEnd", r#""prompt_input_exit""#),
        ]
    );
    assert!(seen.iter().all(|e| {
        e["transcript_path"]
            .as_str()
            .is_some_and(|p| p.ends_with(".jsonl"))
    }));
}

#[test]
fn matchers_select_by_exact_name_alternation_regex_and_all() {
    let w = World::new();
    let log = w.script(
        "log.sh",
        r#"tool=$(sed -n 's/.*"tool_name":"\([A-Za-z]*\)".*/\1/p')
echo "$1 $tool" >> "$CLAUDE_PROJECT_DIR/matched.log""#,
    );
    let with = |name: &str| hook(&format!("{log} {name}"));
    w.user_settings(json!({"PreToolUse": [
        on("Bash", &[with("exact")]),
        on("Bas", &[with("prefix")]),
        on("Read|Write", &[with("alternation")]),
        on("^G(lob|rep)$", &[with("regex")]),
        on("*", &[with("star")]),
        on("", &[with("empty")]),
    ]}));
    std::fs::write(w.project().join("a.txt"), "a\n").unwrap();
    let turns = json!([
        bash("echo x"),
        {"toolCalls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"toolCalls": [{"name": "find", "arguments": {"pattern": "*.txt"}}]},
        {"text": "end"}
    ]);
    w.run(&turns, &["go"]);
    let mut lines: Vec<String> = w.read("matched.log").lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "alternation Read",
            "empty Bash",
            "empty Glob",
            "empty Read",
            "exact Bash",
            "regex Glob",
            "star Bash",
            "star Glob",
            "star Read",
        ]
    );
}

#[test]
fn matching_hooks_run_at_the_same_time_and_identical_commands_once() {
    let w = World::new();
    // Each waits (up to 10 s) for the other's file: run one after the other, the first
    // would give up and fail.
    let meet = |me: &str, other: &str| {
        format!(
            r#"cat > /dev/null
touch "$CLAUDE_PROJECT_DIR/{me}"
i=0
while [ ! -e "$CLAUDE_PROJECT_DIR/{other}" ]; do
  i=$((i+1)); [ $i -gt 100 ] && {{ echo "{me} never met {other}" >&2; exit 1; }}
  sleep 0.1
done
echo {me} >> "$CLAUDE_PROJECT_DIR/met.log""#
        )
    };
    let a = w.script("a.sh", &meet("a", "b"));
    let b = w.script("b.sh", &meet("b", "a"));
    let once = w.script(
        "once.sh",
        "cat > /dev/null\necho once >> \"$CLAUDE_PROJECT_DIR/once.log\"",
    );
    w.user_settings(json!({"PreToolUse": [
        on("Bash", &[hook(&a), hook(&once)]),
        on("*", &[hook(&b), hook(&once)]),
    ]}));
    let run = w.run(&json!([bash("echo x"), {"text": "end"}]), &["go"]);
    assert!(!run.stderr.contains("never met"), "{}", run.stderr);
    let mut met: Vec<String> = w.read("met.log").lines().map(str::to_owned).collect();
    met.sort();
    assert_eq!(met, ["a", "b"]);
    assert_eq!(
        w.read("once.log"),
        "once\n",
        "an identical command runs once"
    );
}

#[test]
fn hooks_that_time_out_print_malformed_json_or_cannot_run_are_non_blocking_errors() {
    let w = World::new();
    let slow = w.script("slow.sh", "cat > /dev/null\nsleep 20");
    let malformed = w.script(
        "malformed.sh",
        "cat > /dev/null\nprintf '%s' '{\"hookSpecificOutput\": oops'",
    );
    let not_executable = w.hooks_dir().join("not-executable.sh");
    std::fs::write(&not_executable, "#!/bin/sh\nexit 2\n").unwrap();
    w.user_settings(json!({"PreToolUse": [on("Bash", &[
        json!({"type": "command", "command": slow, "timeout": 1}),
        hook(&malformed),
        hook(not_executable.to_str().unwrap()),
    ])]}));
    let started = Instant::now();
    let run = w.run(&json!([bash("echo still runs"), {"text": "end"}]), &["go"]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the slow hook was cut at 1 s"
    );
    assert_eq!(run.tool_ends()[0]["isError"], false);
    assert_eq!(run.tool_text(0), "still runs\n");
    let stderr = &run.stderr;
    assert!(
        stderr.contains(&format!("PreToolUse hook `{slow}` timed out after 1s")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "PreToolUse hook `{malformed}` printed invalid JSON"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "PreToolUse hook `{}` failed with non-blocking status code 126",
            not_executable.display()
        )),
        "{stderr}"
    );
}

#[test]
fn project_hooks_run_only_once_trusted_and_again_after_a_change() {
    let w = World::new();
    let marker = w.script(
        "marker.sh",
        "cat > /dev/null\necho ran >> \"$CLAUDE_PROJECT_DIR/marker\"",
    );
    let settings = w.project_settings(json!({"SessionStart": [{"hooks": [hook(&marker)]}]}));
    let turns = json!([{"text": "end"}]);
    let notice = |state: &str| {
        format!(
            "project hooks in {} are {state}: they do not run until you trust them with /claude-hooks trust",
            settings.display()
        )
    };

    let first = w.run(&turns, &["hi"]);
    assert!(!w.project().join("marker").exists());
    assert!(
        first.stderr.contains(&notice("not trusted yet")),
        "{}",
        first.stderr
    );

    let trust = w.run(&turns, &["/claude-hooks trust"]);
    assert!(
        trust.stderr.contains(&format!(
            "claude-hooks: trusted the hooks in {} (1 commands)",
            settings.display()
        )),
        "{}",
        trust.stderr
    );
    let store = w.s.agent_dir().join("claude-hooks/trusted-hooks.json");
    assert!(
        store.is_file(),
        "the approval is in the user's agent directory"
    );
    assert!(
        !w.project()
            .join(".claude")
            .read_dir()
            .unwrap()
            .any(|e| e.unwrap().file_name() != "settings.json")
    );
    std::fs::remove_file(w.project().join("marker")).ok();

    let second = w.run(&turns, &["hi"]);
    assert_eq!(w.read("marker"), "ran\n", "trusted hooks run");
    assert!(
        !second.stderr.contains("/claude-hooks trust"),
        "{}",
        second.stderr
    );

    std::fs::remove_file(w.project().join("marker")).unwrap();
    w.project_settings(json!({"SessionStart": [{"hooks": [hook(&marker), hook("true")]}]}));
    let third = w.run(&turns, &["hi"]);
    assert!(
        !w.project().join("marker").exists(),
        "a changed configuration waits again"
    );
    assert!(
        third
            .stderr
            .contains(&notice("changed since you trusted them")),
        "{}",
        third.stderr
    );
}

#[test]
fn the_plugin_packs_as_a_package() {
    let w = World::new();
    let out = w.s.root().join("dist");
    let library = rust_plugin("claude-hooks");
    let output = w.s.run(&[
        "pack",
        library.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{output:?}");
    let tarball = out.join("claude-hooks-0.1.0.tgz");
    assert!(tarball.is_file(), "{output:?}");
    let inspect = w.s.run(&["inspect", tarball.to_str().unwrap()]);
    assert!(inspect.status.success(), "{inspect:?}");
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(text.contains("Package claude-hooks 0.1.0"), "{text}");
    assert!(text.contains("commands [claude-hooks]"), "{text}");
    for event in [
        "tool_call",
        "tool_result",
        "input",
        "turn_end",
        "session_before_compact",
    ] {
        assert!(text.contains(event), "{event}: {text}");
    }
    // Its hooks are arbitrary commands: it honestly declares no narrower capabilities.
    assert!(text.contains("unrestricted"), "{text}");
}

/// Merges `values` into the user's pi-hooks `settings.json` (`<agentDir>/settings.json`).
fn pi_hooks_settings(w: &World, values: Value) {
    let path = w.s.agent_dir().join("settings.json");
    std::fs::create_dir_all(w.s.agent_dir()).unwrap();
    let mut settings: Value = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({}));
    for (key, value) in values.as_object().unwrap() {
        settings[key] = value.clone();
    }
    std::fs::write(&path, settings.to_string()).unwrap();
}

#[test]
fn a_hook_s_own_timeout_holds_up_to_hook_timeout_which_a_cut_hook_names() {
    let w = World::new();
    // pi-hooks' handler limit, lowered to 2 s so the test is short (the default is 30 s).
    pi_hooks_settings(&w, json!({"hookTimeout": 2000}));
    let own = w.script("own.sh", "cat > /dev/null\nsleep 3");
    let long = w.script("long.sh", "cat > /dev/null\nsleep 6");
    let stop = w.script(
        "stop.sh",
        "cat > /dev/null\necho stopped >> \"$CLAUDE_PROJECT_DIR/stop.log\"",
    );
    w.user_settings(json!({
        "PostToolUse": [on("Bash", &[
            json!({"type": "command", "command": own, "timeout": 1}),
            json!({"type": "command", "command": long, "timeout": 120}),
        ])],
        "Stop": [{"hooks": [hook(&stop)]}],
    }));
    rust_plugin("claude-hooks"); // built before the clock starts
    let started = Instant::now();
    let run = w.run(&json!([bash("echo ran"), {"text": "end"}]), &["go"]);
    let elapsed = started.elapsed();
    let stderr = &run.stderr;
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}: {stderr}");
    assert_eq!(run.tool_text(0), "ran\n");
    // Its own "timeout": 1 cut the first, and the message names the field and its value.
    assert!(
        stderr.contains(&format!(
            "PostToolUse hook `{own}` timed out after 1s (its \"timeout\": 1)"
        )),
        "{stderr}"
    );
    // pi-hooks' hookTimeout cut the second, before the host would have abandoned the
    // handler: the message names the setting, its value, its file and where to raise it.
    let settings = w.s.agent_dir().join("settings.json");
    let cut = format!("PostToolUse hook `{long}` timed out after ");
    let line = stderr
        .lines()
        .find(|l| l.contains(&cut))
        .unwrap_or_else(|| panic!("no line for the long hook: {stderr}"));
    assert!(
        line.contains(&format!(
            ": cut at pi-hooks' hookTimeout (2000 ms, set in {}), before its own \"timeout\": 120; raise \"hookTimeout\" (milliseconds) in {} to give it its time",
            settings.display(),
            settings.display()
        )),
        "{line}"
    );
    // The host never had to time the handler out, so no later hook was skipped: the Stop
    // hook of the same run ran.
    assert!(!stderr.contains("timed out after 2000ms"), "{stderr}");
    assert!(!stderr.contains("the run was aborted"), "{stderr}");
    assert_eq!(w.read("stop.log"), "stopped\n", "{stderr}");
}
