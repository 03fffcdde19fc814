//! The workflow plugin (`plugins/workflow`) through `pi-hooks rpc`, where it has a UI: the
//! status line at every level as `setStatus` requests, the auto-continue countdown as a
//! `workflow-countdown` widget ticking 3-2-1 on host timers and then the not-done reminder as
//! a new run, `/cancel-workflow` stopping it, the confirmation before replacing a workflow,
//! and the state surviving a `/reload` and a restart of the host (`--session`).

use std::path::Path;
use std::time::{Duration, Instant};

use pi_hooks_tests::Sandbox;
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::session_rpc::{close_ok, jsonl, request};
use pi_hooks_tests::workflow::{install_examples, rpc_with_workflow};
use serde_json::{Value, json};

/// `pi-hooks rpc` with the workflow plugin (tests/src/workflow.rs).
fn rpc(s: &Sandbox, turns: &Value, session: &Path) -> RpcClient {
    rpc_with_workflow(s, turns, session, &[])
}

fn is_status(line: &Value, text: &str) -> bool {
    line["method"] == "setStatus" && line["statusKey"] == "workflow" && line["statusText"] == text
}

fn step(action: &str) -> Value {
    json!({"toolCalls": [{"name": "workflow_step", "arguments": {"action": action}}]})
}

const PLANNING: &str = "Feature > 📋 Planning [1/3]";
const CODING: &str = "Feature > Implement [2/3] > 🛠️ Coding [1/2]";
const STATIC: &str = "Feature > Implement [2/3] > Review [2/2] > 🔍 Static check [1/2]";

#[test]
fn nested_status_lines_then_completion() {
    let s = Sandbox::new();
    install_examples(&s);
    let turns = json!([
        step("next"),
        step("next"),
        step("next"),
        step("next"),
        step("next"),
        {"text": "Finished."}
    ]);
    let mut client = rpc(&s, &turns, &s.root().join("s.jsonl"));
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    let (before, _) = client.until(|l| l["type"] == "agent_end");
    let statuses: Vec<&str> = before
        .iter()
        .filter(|l| l["method"] == "setStatus" && l["statusText"].is_string())
        .map(|l| l["statusText"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        statuses,
        [
            CODING,
            STATIC,
            "Feature > Implement [2/3] > Review [2/2] > 🔧 Fixes [2/2]",
            "Feature > ✅ Verification [3/3]",
        ],
        "{:#?}",
        client.seen
    );
    // Case A: the status cleared, no countdown; the completion message (sent from agent_end
    // with triggerTurn false: pi 1.6 appends it once the run is over, before it settles).
    let last = before
        .iter()
        .rev()
        .find(|l| l["method"] == "setStatus")
        .expect("a status line");
    assert!(
        last.get("statusText").is_none(),
        "cleared at the end: {last}"
    );
    assert!(
        before.iter().all(|l| l["method"] != "setWidget"),
        "no countdown once done"
    );
    let (after, complete) = client.until(|l| {
        l["type"] == "message_end" && l["message"]["customType"] == "workflow:complete"
            || l["type"] == "agent_settled"
    });
    assert_eq!(
        complete["message"]["customType"], "workflow:complete",
        "before the prompt settles: {after:#?}"
    );
    client.until(|l| l["type"] == "agent_settled");
    let content = complete["message"]["content"].as_str().unwrap_or_default();
    assert!(
        content
            .starts_with("✅ **Feature Complete**\n\n**Task:** Add a greeting\n**Task ID:** wf-"),
        "{content}"
    );
    assert!(content.ends_with("\n**Phases completed:** 3"), "{content}");
    close_ok(client);
    let entries = jsonl(&s.root().join("s.jsonl"));
    let last = entries
        .iter()
        .rev()
        .find(|e| e["customType"] == "workflow:state")
        .expect("a state entry");
    assert_eq!(last["data"]["active"], false);
    assert_eq!(last["data"]["completionNotified"], true);
}

#[test]
fn countdown_widget_ticks_then_reminds_and_cancel_stops_it() {
    let s = Sandbox::new();
    install_examples(&s);
    let mut client = rpc(
        &s,
        &json!([{"text": "I stop here."}]),
        &s.root().join("s.jsonl"),
    );
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    let widget = |l: &Value| l["method"] == "setWidget" && l["widgetKey"] == "workflow-countdown";
    let line = |n: u32| format!("⏳ Auto-continuing in {n}s... (type anything to interrupt)");
    // The 3s line comes from agent_end (before the host reports the end); then one line a
    // second, then the removal.
    client.until(|l| widget(l) && l["widgetLines"][0] == line(3).as_str());
    let started = Instant::now();
    client.until(|l| l["type"] == "agent_end");
    client.until(|l| widget(l) && l["widgetLines"][0] == line(2).as_str());
    client.until(|l| widget(l) && l["widgetLines"][0] == line(1).as_str());
    client.until(|l| widget(l) && l.get("widgetLines").is_none());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1800) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    // Then the reminder runs as a user message, at once (the agent is idle).
    let (_, reminder) =
        client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    let text = reminder["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.starts_with(
            "⚠️ The Feature is still active. Current phase: 📋 Planning.\n\nYou must NOT stop yet."
        ),
        "{text}"
    );
    assert!(
        text.contains("\n\nCurrent phase instructions:\nRead the code that Add a greeting touches"),
        "{text}"
    );
    // That run stops too: a new countdown starts (restarted, not stacked: one timer, so one
    // line per second); /cancel-workflow stops it and sends the cancellation message.
    client.until(|l| widget(l) && l["widgetLines"][0] == line(3).as_str());
    client.until(|l| l["type"] == "agent_end");
    client.send(&json!({"id": "c", "type": "prompt", "message": "/cancel-workflow"}));
    let (seen, _) =
        client.until(|l| l["method"] == "notify" && l["message"] == "Workflow cancelled.");
    assert!(
        seen.iter()
            .any(|l| widget(l) && l.get("widgetLines").is_none()),
        "widget removed"
    );
    let complete = seen
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["customType"] == "workflow:complete")
        .expect("the cancellation message");
    let content = complete["message"]["content"].as_str().unwrap_or_default();
    assert!(
        content
            .starts_with("❌ **Workflow Cancelled**\n\n**Task:** Add a greeting\n**Task ID:** wf-"),
        "{content}"
    );
    // No tick and no reminder run after the cancellation.
    std::thread::sleep(Duration::from_millis(3300));
    let (status, rest) = client.close();
    assert!(status.success());
    assert!(
        rest.iter()
            .all(|l| !widget(l) && l["type"] != "agent_start"),
        "after cancel: {rest:#?}"
    );
}

#[test]
fn confirm_before_replacing_an_active_workflow() {
    let s = Sandbox::new();
    install_examples(&s);
    let mut client = rpc(
        &s,
        &json!([step("next"), {"text": "ok"}]),
        &s.root().join("s.jsonl"),
    );
    client.send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature First task"}));
    client.until(|l| l["type"] == "agent_end");
    client.send(&json!({"id": "2", "type": "prompt", "message": "/workflow feature Second task"}));
    let (_, ask) = client.until(|l| l["method"] == "confirm");
    assert_eq!(ask["title"], "Workflow already active");
    assert_eq!(
        ask["message"],
        "Phase: Coding\nTask: First task\n\nStart a new one?"
    );
    client.send(&json!({"type": "extension_ui_response", "id": ask["id"], "confirmed": false}));
    assert_eq!(client.response("2")["success"], true);
    client.send(&json!({"id": "3", "type": "prompt", "message": "/workflow"}));
    let (_, usage) = client.until(|l| l["method"] == "notify");
    assert_eq!(
        usage["message"],
        "Usage: /workflow {name} {description}\n\nAvailable workflows:\n  feature — Feature"
    );
    close_ok(client);
    // Refused: the last state is still the first task's.
    let entries = jsonl(&s.root().join("s.jsonl"));
    let last = entries
        .iter()
        .rev()
        .find(|e| e["customType"] == "workflow:state")
        .expect("a state entry");
    assert_eq!(last["data"]["taskDescription"], "First task");
}

#[test]
fn state_survives_reload_and_restart() {
    let s = Sandbox::new();
    install_examples(&s);
    let session = s.root().join("s.jsonl");
    // One `next` per run (the turns replay per prompt), so each run moves one phase.
    let turns = json!([step("next"), {"text": "One step done."}]);
    let mut client = rpc(&s, &turns, &session);
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    client.until(|l| l["type"] == "agent_end");
    client.until(|l| is_status(l, CODING) || l["method"] == "setWidget");
    // Stop the countdown before reloading (a run may not start during the reload).
    client.send(&json!({"id": "a", "type": "abort"}));
    client.response("a");
    let from = client.seen.len();
    let reply = request(&mut client, "r", json!({"type": "reload"}));
    assert_eq!(reply["success"], true, "{reply}");
    // The new instance rebuilt the state from the session (in its session_start, before the
    // reload's answer): the same phase.
    assert!(
        client.seen[from..]
            .iter()
            .any(|l| l.contains(&format!("\"statusText\":\"{CODING}\""))),
        "{:#?}",
        &client.seen[from..]
    );
    let _ = request(
        &mut client,
        "p",
        json!({"type": "prompt", "message": "go on"}),
    );
    client.until(|l| is_status(l, STATIC));
    close_ok(client);
    // A new host on the same session file resumes at the same phase.
    let mut again = rpc(&s, &json!([{"text": "hi"}]), &session);
    let (first, _) = again.until(|l| l["method"] == "setStatus" && l.get("statusText").is_some());
    let _ = first;
    assert!(
        again.seen.iter().any(|l| l.contains(STATIC)),
        "{:#?}",
        again.seen
    );
    close_ok(again);
    let _ = PLANNING;
}

#[test]
fn renderers_for_the_three_message_types() {
    let s = Sandbox::new();
    install_examples(&s);
    let mut client = rpc(&s, &json!([{"text": "hi"}]), &s.root().join("s.jsonl"));
    let mut render = |id: &str, custom_type: &str, content: &str| {
        let message = json!({"role": "custom", "customType": custom_type, "content": content, "display": true});
        let reply = request(
            &mut client,
            id,
            json!({"type": "render_message", "message": message}),
        );
        reply["data"]["lines"].clone()
    };
    assert_eq!(
        render("a", "workflow:context", "[Workflow path: X]\n..."),
        json!(["🔄 [Workflow Context injected]"])
    );
    assert_eq!(
        render(
            "b",
            "workflow:countdown",
            "Auto-continuing workflow in 3s... (type anything to interrupt)"
        ),
        json!(["⏳ Auto-continuing workflow in 3s... (type anything to interrupt)"])
    );
    assert_eq!(
        render("c", "workflow:complete", "✅ **F Complete**\n\n**Task:** t"),
        json!(["✅ **F Complete**", "", "**Task:** t"])
    );
    assert_eq!(render("d", "other", "x"), Value::Null);
    close_ok(client);
}

#[test]
fn an_aborted_run_gets_no_countdown() {
    let s = Sandbox::new();
    install_examples(&s);
    // Into Coding (bash allowed there), then a long bash call the user aborts.
    let turns = json!([
        step("next"),
        {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 5"}}]},
        {"text": "never reached"}
    ]);
    let mut client = rpc(&s, &turns, &s.root().join("s.jsonl"));
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    client.until(|l| l["type"] == "tool_execution_start" && l["toolName"] == "bash");
    client.send(&json!({"id": "a", "type": "abort"}));
    let (before, end) = client.until(|l| l["type"] == "agent_end");
    assert!(
        before.iter().all(|l| l["method"] != "setWidget"),
        "{before:#?}"
    );
    let last = end["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["stopReason"], "aborted", "{last}");
    // Longer than the countdown: no widget, no reminder run.
    std::thread::sleep(Duration::from_millis(3300));
    let (status, rest) = client.close();
    assert!(status.success());
    assert!(
        client_seen_has_no_countdown(&rest),
        "no countdown after an abort: {rest:#?}"
    );
}

fn client_seen_has_no_countdown(lines: &[Value]) -> bool {
    lines
        .iter()
        .all(|l| l["method"] != "setWidget" && l["type"] != "agent_start")
}
