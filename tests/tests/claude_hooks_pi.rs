//! The claude-hooks plugin inside the real pi (1.6.0 on node 22, RPC mode, through the bridge installed
//! by `pi-hooks bridge install`, a fake OpenAI-compatible server as the model): the same
//! `~/.claude/settings.json` as in pi-hooks, with real shell scripts: a `PreToolUse` guard
//! that blocks `rm -rf` by exit 2, `SessionStart` and `UserPromptSubmit` context,
//! `PostToolUse` context, and a `Stop` hook that makes pi's run take another turn.

use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, after_tool, tool_call, user_texts};
use pi_hooks_tests::pi_e2e::{pi_rpc, prepare};
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::tools::pi16;
use pi_hooks_tests::{Sandbox, rust_plugin};
use serde_json::{Value, json};

/// The model: after a tool result it repeats the result's text; a prompt asking to wipe runs
/// `rm -rf victim`, one saying hello runs `echo hello`; to "finish" it answers "first answer",
/// or "continued" once a Stop hook's feedback is in the conversation.
fn model() -> FakeOpenAi {
    FakeOpenAi::start(|body| {
        if after_tool(body) {
            let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
            let text = last
                .map(|m| content_text(&m["content"]))
                .unwrap_or_default();
            return Reply::Text(format!("tool said: {text}"));
        }
        // The last prompt: SessionStart's context follows the first one as a user message.
        let prompt = user_texts(body)
            .into_iter()
            .rfind(|t| t != CONTEXT)
            .unwrap_or_default();
        if user_texts(body)
            .iter()
            .any(|t| t.contains("Stop hook feedback"))
        {
            Reply::Text("continued".into())
        } else if prompt.contains("wipe") {
            tool_call("bash", json!({"command": "rm -rf victim"}))
        } else if prompt.contains("hello") {
            tool_call("bash", json!({"command": "echo hello"}))
        } else if prompt.contains("finish") {
            Reply::Text("first answer".into())
        } else {
            Reply::Text("ok".into())
        }
    })
}

/// What the SessionStart hook prints.
const CONTEXT: &str = "open issues: #12";

fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn script(sandbox: &Sandbox, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = sandbox.root().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_owned()
}

fn hooks(command: &str) -> Value {
    json!([{"hooks": [{"type": "command", "command": command}]}])
}

fn run(pi: &mut RpcClient, id: &str, message: &str) -> Vec<Value> {
    pi.send(&json!({"id": id, "type": "prompt", "message": message}));
    pi.until(|l| l["type"] == "agent_end").0
}

fn tool_end(lines: &[Value]) -> &Value {
    lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {lines:#?}"))
}

fn assistant_texts(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .map(|l| content_text(&l["message"]["content"]))
        .filter(|t| !t.is_empty())
        .collect()
}

#[test]
fn the_same_claude_code_hooks_work_inside_pi() {
    let sandbox = Sandbox::new();
    let server = model();
    prepare(&sandbox, &server);
    let extensions = sandbox.agent_dir().join("extensions");
    sandbox.install(
        &rust_plugin("claude-hooks"),
        &extensions,
        "libclaude_hooks.so",
    );

    let guard = script(
        &sandbox,
        "guard.sh",
        r#"input=$(cat)
printf '%s' "$input" > "$CLAUDE_PROJECT_DIR/seen.json"
case "$input" in *'rm -rf'*) echo "rm -rf is not allowed here" >&2; exit 2;; esac"#,
    );
    let start = script(
        &sandbox,
        "start.sh",
        "cat > /dev/null\necho 'open issues: #12'",
    );
    let prompt = script(
        &sandbox,
        "prompt.sh",
        r#"input=$(cat)
case "$input" in *password*) echo "no passwords" >&2; exit 2;; esac"#,
    );
    let post = script(
        &sandbox,
        "post.sh",
        r#"cat > /dev/null
printf '%s' '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatter ran"}}'"#,
    );
    let stop = script(
        &sandbox,
        "stop.sh",
        r#"input=$(cat)
case "$input" in *'"stop_hook_active":true'*) exit 0;; esac
printf '%s' '{"decision":"block","reason":"run the tests first"}'"#,
    );
    let claude = sandbox.home().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(
        claude.join("settings.json"),
        json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}],
            "SessionStart": hooks(&start),
            "UserPromptSubmit": hooks(&prompt),
            "PostToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": post}]}],
        }})
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.project().join("victim")).unwrap();

    let mut pi = pi_rpc(&pi16(), &sandbox, &["--no-session"]);

    // PreToolUse: exit 2 blocks pi's own bash; stderr is the reason the model reads.
    let lines = run(&mut pi, "1", "wipe it");
    let end = tool_end(&lines);
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(
        content_text(&end["result"]["content"]),
        "rm -rf is not allowed here"
    );
    assert!(sandbox.project().join("victim").is_dir());
    let seen: Value = serde_json::from_str(
        &std::fs::read_to_string(sandbox.project().join("seen.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(seen["tool_name"], "Bash");
    assert_eq!(seen["tool_input"]["command"], "rm -rf victim");
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    // SessionStart's stdout reached the model with the first prompt.
    let first = &server.requests()[0];
    assert!(user_texts(first).iter().any(|t| t == CONTEXT), "{first}");

    // UserPromptSubmit: exit 2 drops the prompt before the model sees it.
    let asked = server.requests().len();
    pi.send(&json!({"id": "2", "type": "prompt", "message": "my password is x"}));
    pi.send(&json!({"id": "2b", "type": "get_state"}));
    pi.response("2b");
    assert_eq!(
        server.requests().len(),
        asked,
        "the blocked prompt never reached the model"
    );

    // PostToolUse: the context is added to the tool result the model reads.
    let lines = run(&mut pi, "3", "say hello");
    let end = tool_end(&lines);
    assert_eq!(
        content_text(&end["result"]["content"]),
        "hello\n\nformatter ran"
    );
    assert_eq!(
        assistant_texts(&lines).last().unwrap(),
        "tool said: hello\n\nformatter ran"
    );

    let (status, _) = pi.close();
    assert!(status.success(), "{status}");

    // Stop: a hook that blocks makes pi's run go on with its feedback.
    std::fs::write(
        claude.join("settings.json"),
        json!({"hooks": {"Stop": hooks(&stop)}}).to_string(),
    )
    .unwrap();
    let mut pi = pi_rpc(&pi16(), &sandbox, &["--no-session"]);
    pi.send(&json!({"id": "4", "type": "prompt", "message": "finish up"}));
    // pi does not hold its loop for `turn_end` handlers: the feedback starts the next turn.
    let (mut lines, last) = pi.until(|l| {
        l["type"] == "message_end"
            && l["message"]["role"] == "assistant"
            && content_text(&l["message"]["content"]) == "continued"
    });
    lines.push(last);
    assert_eq!(assistant_texts(&lines), ["first answer", "continued"]);
    let feedback: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["customType"] == "claude-hooks")
        .collect();
    assert_eq!(feedback.len(), 1, "{lines:#?}");
    assert_eq!(
        feedback[0]["message"]["content"],
        "Stop hook feedback:\nrun the tests first"
    );
    pi.until(|l| l["type"] == "agent_end");
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}
