//! A message typed in the interactive mode just as a run ends (issue 34): the run has made its
//! last check of the queue, but the agent is not idle yet (an `agent_settled` handler is still
//! running). It used to stay queued, unseen, until the next prompt; as in pi, where a message
//! queued while the agent runs is run when the run would end, it now starts a run of its own at
//! once, and the notice says so. The timing is made deterministic by a `behave` plugin whose
//! `agent_settled` handler logs, then sleeps: the message is typed once the log shows it.
//! And Alt+Enter, pi's follow-up key, during a run.

use pi_hooks_tests::pty::{Pty, keys, sandbox_command};
use pi_hooks_tests::{Sandbox, behave_env_var, behave_plugin, read_behave_log, wait_behave_log};
use serde_json::json;

fn wait_log(sandbox: &Sandbox, what: &str, ready: impl Fn(&[pi_hooks_tests::BehaveLine]) -> bool) {
    wait_behave_log(&sandbox.behave_log(), what, ready);
}

/// `pi-hooks chat` in a pty with the scripted model's `turns` and a `behave` plugin "watch"
/// with `handlers`, waiting for its prompt.
fn chat(sandbox: &Sandbox, turns: serde_json::Value, handlers: serde_json::Value) -> Pty {
    let script = sandbox.script(&json!({ "turns": turns }));
    let library = behave_plugin(&sandbox.lib(), "watch");
    let mut command = sandbox_command(
        sandbox,
        &[
            "chat",
            "--no-session",
            "--script",
            script.to_str().unwrap(),
            "--hook",
            library.to_str().unwrap(),
        ],
    );
    command.env(
        behave_env_var("watch"),
        json!({ "handlers": handlers }).to_string(),
    );
    command.env("BEHAVE_LOG", sandbox.behave_log());
    let pty = Pty::spawn(command, 40, 120);
    pty.wait_for_text("Type a prompt");
    pty
}

/// The user messages the runs took, from `message_end` payloads.
fn user_texts(sandbox: &Sandbox) -> Vec<String> {
    read_behave_log(&sandbox.behave_log())
        .iter()
        .filter(|l| l.tag == "message_end" && l.value["message"]["role"] == "user")
        .map(|l| {
            l.value["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn a_message_typed_as_the_run_ends_starts_a_run_at_once() {
    let sandbox = Sandbox::new();
    let mut pty = chat(
        &sandbox,
        json!([{"text": "answer one"}]),
        json!([
            {"event": "agent_start"},
            {"event": "message_end"},
            {"event": "agent_settled", "sleep_ms": 1500}
        ]),
    );

    pty.type_text("first prompt");
    pty.send(keys::ENTER.as_bytes());
    // The run is over and has looked at its queue for the last time; `agent_settled` runs.
    wait_log(&sandbox, "agent_settled to start", |log| {
        log.iter().any(|l| l.tag == "agent_settled")
    });
    assert!(
        !read_behave_log(&sandbox.behave_log())
            .iter()
            .any(|l| l.tag == "agent_settled:done"),
        "the message must be typed while agent_settled still runs"
    );
    pty.type_text("late message");
    pty.send(keys::ENTER.as_bytes());

    // It runs by itself, without another prompt: a second run takes it.
    wait_log(&sandbox, "a second run with the late message", |log| {
        log.iter().filter(|l| l.tag == "agent_start").count() == 2
            && log.iter().any(|l| {
                l.tag == "message_end"
                    && l.value["message"]["role"] == "user"
                    && l.value["message"]["content"][0]["text"] == "late message"
            })
    });
    assert_eq!(user_texts(&sandbox), ["first prompt", "late message"]);
    // The notice says what happened.
    pty.wait_for_text("it starts a new run now");
    let screen = pty.contents();
    assert!(
        !screen.contains("Queued: it reaches the model at its next turn"),
        "no notice promising a turn the ended run will not have:\n{screen}"
    );
}

/// Alt+Enter during a run queues the text as a follow-up, as pi's `app.message.followUp`: the
/// run finishes its turns first (the model's answer after the tool call comes before it), then
/// takes it, where Enter would steer it in at the next turn.
#[test]
fn alt_enter_during_a_run_queues_a_follow_up_that_waits_for_the_run_s_end() {
    let sandbox = Sandbox::new();
    let mut pty = chat(
        &sandbox,
        json!([
            {"toolCalls": [{"name": "bash", "arguments": {"command": "true"}}]},
            {"text": "done with the tool"},
            {"text": "answer to the follow-up"}
        ]),
        json!([
            {"event": "tool_call", "sleep_ms": 1500},
            {"event": "message_end"}
        ]),
    );

    pty.type_text("first prompt");
    pty.send(keys::ENTER.as_bytes());
    wait_log(&sandbox, "tool_call to start", |log| {
        log.iter().any(|l| l.tag == "tool_call")
    });
    pty.type_text("later");
    pty.send(keys::ALT_ENTER.as_bytes());
    pty.wait_for_text("Queued as a follow-up");

    wait_log(&sandbox, "the follow-up taken", |log| {
        log.iter().any(|l| {
            l.tag == "message_end"
                && l.value["message"]["content"][0]["text"] == "answer to the follow-up"
        })
    });
    let texts: Vec<String> = read_behave_log(&sandbox.behave_log())
        .iter()
        .filter(|l| l.tag == "message_end" && l.value["message"]["role"] != "toolResult")
        .filter_map(|l| {
            let content = &l.value["message"]["content"];
            content
                .as_array()?
                .iter()
                .find_map(|c| c["text"].as_str())
                .map(|t| format!("{}: {t}", l.value["message"]["role"].as_str().unwrap_or("")))
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user: first prompt",
            "assistant: done with the tool",
            "user: later",
            "assistant: answer to the follow-up"
        ],
        "the follow-up waited for the run's last turn"
    );
}
