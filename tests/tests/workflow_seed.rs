//! The workflow plugin (`plugins/workflow`) against the hook lifecycle of
//! pi-workflows (plugins/workflow/README.md), behaviour by behaviour, through the real `pi-hooks` host: `session_tree`
//! rebuilding the state from the branch and reloading the definitions, every tool action's
//! answer, a cancellation through the tool notified at `agent_end` (case A, not persisted),
//! the custom templates with all their variables (role instruction, advance reminder, block
//! reason with `{allowedTools}`, not-done reminder, completion message), case C after a
//! completion (also after a restart), the status cleared on each early return, and a second
//! `agent_end` restarting the countdown rather than stacking a second one.

use std::path::Path;
use std::time::{Duration, Instant};

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::session_rpc::{close_ok, jsonl, request};
use pi_hooks_tests::workflow::{install_examples, rpc_with_workflow};
use pi_hooks_tests::{
    Sandbox, behave_env_var, behave_plugin, c_fixture, json_lines, output_within, read_behave_log,
    rust_plugin,
};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// `pi-hooks rpc` with the workflow plugin and `extra` plugins (tests/src/workflow.rs).
fn rpc(s: &Sandbox, turns: &Value, session: &Path, extra: &[&Path]) -> RpcClient {
    rpc_with_workflow(s, turns, session, extra)
}

/// `pi-hooks run --mode json --session <session>` with the workflow plugin, `turns` and
/// `prompts`; the JSON lines.
fn run_json(s: &Sandbox, session: &Path, turns: &Value, prompts: &[&str]) -> Vec<Value> {
    let script = s.root().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    let plugin = rust_plugin("workflow");
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--session",
        session.to_str().expect("utf-8"),
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8"),
        "-e",
        plugin.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(prompts);
    let output = output_within(s.command(&args), LIMIT);
    assert!(output.status.success(), "{output:?}");
    json_lines(&output)
}

fn step(action: &str) -> Value {
    json!({"toolCalls": [{"name": "workflow_step", "arguments": {"action": action}}]})
}

/// The tool results of `tool`, in order: (text, isError).
fn results(lines: &[Value], tool: &str) -> Vec<(String, bool)> {
    lines
        .iter()
        .filter(|e| e["type"] == "tool_execution_end" && e["toolName"] == tool)
        .map(|e| {
            (
                e["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["isError"] == true,
            )
        })
        .collect()
}

/// The messages of `custom_type` that ended.
fn custom<'a>(lines: &'a [Value], custom_type: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["customType"] == custom_type)
        .map(|e| &e["message"])
        .collect()
}

/// The `workflow:state` entries of a session file.
fn states(session: &Path) -> Vec<Value> {
    jsonl(session)
        .into_iter()
        .filter(|e| e["customType"] == "workflow:state")
        .collect()
}

fn task_id_of(context: &str) -> String {
    context
        .lines()
        .find_map(|l| l.strip_prefix("**Task ID:** "))
        .expect("a task id line")
        .to_owned()
}

fn is_widget(l: &Value) -> bool {
    l["method"] == "setWidget" && l["widgetKey"] == "workflow-countdown"
}

fn widget_line(n: u32) -> String {
    format!("⏳ Auto-continuing in {n}s... (type anything to interrupt)")
}

/// The `workflow` status requests among `lines`: `Some(text)` or `None` (cleared).
fn statuses(lines: &[Value]) -> Vec<Option<String>> {
    lines
        .iter()
        .filter(|l| l["method"] == "setStatus" && l["statusKey"] == "workflow")
        .map(|l| l["statusText"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn session_tree_rebuilds_the_state_from_the_branch_and_reloads_definitions() {
    let s = Sandbox::new();
    install_examples(&s);
    let session = s.root().join("s.jsonl");
    let go = c_fixture(&s.lib(), "session_go", &[]);
    let mut client = rpc(
        &s,
        &json!([step("next"), {"text": "Paused."}]),
        &session,
        &[&go],
    );
    // Two runs, one `next` each: Planning -> Coding -> Static check.
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    client.until(|l| l["type"] == "agent_end");
    client.send(&json!({"id": "2", "type": "prompt", "message": "go on"}));
    let (run2, _) = client.until(|l| l["type"] == "agent_end");
    // The second run's countdown is pending (its widget is set from agent_end, before the
    // host reports the end).
    assert!(
        run2.iter()
            .any(|l| is_widget(l) && l["widgetLines"][0] == widget_line(3).as_str()),
        "{run2:#?}"
    );
    let entries = states(&session);
    assert_eq!(entries.len(), 3, "start, next, next: {entries:#?}");
    assert_eq!(entries[1]["data"]["globalStepCount"], 1);
    // The definitions change on disk; session_tree reloads them.
    let yaml = s.project().join(".pi/workflows/feature/workflow.yaml");
    let text = std::fs::read_to_string(&yaml).expect("read");
    write(&yaml, &text.replace("name: Feature", "name: Feature Two"));
    // Back to the entry written by the first `next` (phase Coding).
    let target = entries[1]["id"].as_str().expect("an id");
    let reply = request(
        &mut client,
        "t",
        json!({"type": "prompt", "message": format!("/go tree {target}")}),
    );
    assert_eq!(reply["success"], true, "{reply}");
    let tree_lines: Vec<Value> = client
        .seen
        .iter()
        .rev()
        .take_while(|l| !l.contains("\"type\":\"agent_end\""))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        statuses(&tree_lines).contains(&Some(
            "Feature Two > Implement [2/3] > 🛠️ Coding [1/2]".to_owned()
        )),
        "session_tree shows the branch's phase with the reloaded name: {tree_lines:#?}"
    );
    assert!(
        tree_lines
            .iter()
            .any(|l| is_widget(l) && l.get("widgetLines").is_none()),
        "the pending countdown stopped, its widget removed: {tree_lines:#?}"
    );
    // Longer than the countdown: no tick, no reminder run.
    std::thread::sleep(Duration::from_millis(3300));
    let reply = request(
        &mut client,
        "3",
        json!({"type": "prompt", "message": "and on"}),
    );
    assert_eq!(reply["success"], true);
    let (run, _) = client.until(|l| l["type"] == "agent_end");
    // The rebuilt state goes on from Coding (step 1), not from Static check (step 2); the
    // context says so, with the nested progress line.
    let context = custom(&run, "workflow:context");
    let text = context[0]["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("[Workflow path: Feature Two > Implement ▸ 🛠️ Coding]\n"),
        "{text}"
    );
    assert!(
        text.contains("\n**Current Phase:** 🛠️ Coding\n**Progress:** Step 1 (1/2 in current scope)\n\n**All Steps:**\n  1. 📋 Planning\n▶ 2. 🛠️ Coding\n"),
        "{text}"
    );
    let steps = results(&run, "workflow_step");
    assert!(
        steps[0]
            .0
            .starts_with("✓ Entered subworkflow 'Review': Coding → 🔍 Static check\n"),
        "{steps:?}"
    );
    assert!(statuses(&run).contains(&Some(
        "Feature Two > Implement [2/3] > Review [2/2] > 🔍 Static check [1/2]".to_owned()
    )));
    let (status, _) = client.close();
    assert!(status.success());
    let entries = states(&session);
    let last = entries.last().expect("a state");
    assert_eq!(last["data"]["globalStepCount"], 2);
}

#[test]
fn every_tool_action_answers_verbatim_and_a_tool_cancel_is_notified_at_agent_end() {
    let s = Sandbox::new();
    install_examples(&s);
    let session = s.root().join("s.jsonl");
    let turns = json!([
        step("next"),
        step("loop"),
        step("next"),
        step("next"),
        step("next"),
        step("cancel"),
        step("cancel"),
        {"text": "Stopping."}
    ]);
    let events = run_json(
        &s,
        &session,
        &turns,
        &["/workflow feature Add a greeting", "hello"],
    );
    let steps: Vec<String> = results(&events, "workflow_step")
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let coding = "**What to do in Coding:**\nImplement the plan. Keep the change small; add the tests the plan names.";
    let expected_first_run = [
        format!(
            "✓ Entered subworkflow 'Implement': Planning → 🛠️ Coding\n\nPrevious: Planning | Current: 🛠️ Coding | Next: Static check\n\n{coding}"
        ),
        format!("🔄 Looped 'Implement' back to: 🛠️ Coding\n\n{coding}"),
        "✓ Entered subworkflow 'Review': Coding → 🔍 Static check\n\nPrevious: Coding | Current: 🔍 Static check | Next: Fixes\n\n**What to do in Static check:**\nRead the diff and list the problems you find. Do not fix them yet (edit, write are\nblocked here).".to_owned(),
        "✓ Advanced: Static check → 🔧 Fixes\n\nPrevious: Static check | Current: 🔧 Fixes | Next: Verification\n\n**What to do in Fixes:**\nFix every problem the static check listed.".to_owned(),
        "✓ Exited subworkflow, returning to Feature: Fixes → ✅ Verification\n\nPrevious: Fixes | Current: ✅ Verification | Next: DONE\n\n**What to do in Verification:**\nRun the tests and show that the feature works.".to_owned(),
        "⚠️ **Confirm cancellation** of workflow \"Add a greeting\"?\nCall workflow_step with action='cancel' again to confirm. This cannot be undone.".to_owned(),
        "Workflow cancelled: \"Add a greeting\"".to_owned(),
    ];
    assert_eq!(steps[..7], expected_first_run, "{steps:#?}");
    // The second run (no workflow any more): the not-active answers.
    let none = "No active workflow. Use /workflow {name} {description} to start one.";
    assert_eq!(
        steps[7..],
        [
            none,
            "No active workflow to loop.",
            none,
            none,
            none,
            "No active workflow to cancel.",
            "No active workflow to cancel.",
        ],
        "{steps:#?}"
    );
    // Case A, cancelled: the default cancelled message, once (sent from agent_end, so it
    // joins the second run), no countdown, no context in the second run.
    let context = custom(&events, "workflow:context");
    assert_eq!(context.len(), 1);
    let task_id = task_id_of(context[0]["content"].as_str().unwrap_or_default());
    let done = custom(&events, "workflow:complete");
    assert_eq!(done.len(), 1, "{done:#?}");
    assert_eq!(
        done[0]["content"],
        format!("❌ **Feature Cancelled**\n\n**Task:** Add a greeting\n**Task ID:** {task_id}")
    );
    assert_eq!(done[0]["display"], true);
    assert!(custom(&events, "workflow:countdown").is_empty());
    assert_eq!(
        events.iter().filter(|e| e["type"] == "agent_start").count(),
        2,
        "the workflow's first message and hello; the notice (triggerTurn false) starts none"
    );
    // Persisted: start, next, loop, next, next, next, the cancellation; case A of a
    // cancellation persists nothing more (pi-workflows: `persist: false`).
    let entries = states(&session);
    assert_eq!(entries.len(), 7, "{entries:#?}");
    let last = &entries[6]["data"];
    assert_eq!(
        (
            last["active"].clone(),
            last["cancelled"].clone(),
            last["completionNotified"].clone()
        ),
        (json!(false), json!(true), json!(false))
    );
    assert_eq!(
        entries[2]["data"]["globalStepCount"], 2,
        "loop counts a step"
    );
    // Resumed, the cancelled state is reached again and notified again at agent_end (the
    // seed's "cancelled state reached through other paths (e.g. session resume)"): sent with
    // triggerTurn false, it joins the session as the run ends, before it settles (pi 1.6).
    let events = run_json(&s, &session, &json!([{"text": "Hi."}]), &["again"]);
    let done = custom(&events, "workflow:complete");
    assert_eq!(
        done.len(),
        1,
        "sent at agent_end of the only run: {done:#?}"
    );
    let events = run_json(&s, &session, &json!([{"text": "Hi."}]), &["one", "two"]);
    let done = custom(&events, "workflow:complete");
    assert_eq!(done.len(), 1, "{done:#?}");
    assert!(
        done[0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("❌ **Feature Cancelled**\n")),
        "{done:#?}"
    );
    assert_eq!(states(&session).len(), 7, "still not persisted");
    // Case A without the workflow's definition: nothing is sent.
    std::fs::remove_dir_all(s.project().join(".pi/workflows/feature")).expect("rm");
    let events = run_json(&s, &session, &json!([{"text": "Hi."}]), &["one", "two"]);
    assert!(
        custom(&events, "workflow:complete").is_empty(),
        "{events:#?}"
    );
}

const GATE_YAML: &str = r#"name: Gate
commandName: gate
initialMessage: "Go: {description} ({firstPhaseEmoji} {firstPhaseName}, {firstPhaseProfiles})"
roleInstruction: "ROLE {workflowName}|{workflowKey}|{description}|{taskId}|{phaseId}|{phaseName}|{previousPhaseName}|{nextPhaseName}|{blockedToolsList}|{toolName}|{breadcrumbPath}|{globalStepCount}|{unknown}"
advanceReminder: "ADVANCE from {phaseName} to {nextPhaseName} with {toolName}"
blockReasonTemplate: "BLOCKED {workflowName}/{phaseName}: {toolName}; allowed: {allowedTools}"
notDoneReminder: "NOT DONE {workflowName}|{phaseName}|{phaseEmoji}|{phaseInstructions}|{taskDescription}|{taskId}|{workflowKey}"
completionMessage: "FINISHED {workflowName}|{taskDescription}|{taskId}|{phaseCount}"
loopable: false
phases:
  - one.md
  - two.md
"#;

const ONE_MD: &str = "---\nid: one\nname: One\nemoji: \"1️⃣\"\ntools:\n  blacklist: [bash, edit]\navailableProfiles: [alpha, beta]\n---\nFirst, in {phaseName} of {workflowName}.\n";

const TWO_MD: &str = "---\nid: two\nname: Two\nemoji: \"2️⃣\"\ntools:\n  whitelist: [read, ls]\n---\nSecond, after {previousPhaseName}.\n";

#[test]
fn custom_templates_blacklist_countdown_reminder_completion_then_case_c() {
    let s = Sandbox::new();
    let root = s.project().join(".pi/workflows/gate");
    write(&root.join("workflow.yaml"), GATE_YAML);
    write(&root.join("one.md"), ONE_MD);
    write(&root.join("two.md"), TWO_MD);
    let session = s.root().join("s.jsonl");
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        step("loop"),
        step("next"),
        step("status"),
        {"text": "I stop here."}
    ]);
    let mut client = rpc(&s, &turns, &session, &[]);
    client.send(&json!({"id": "1", "type": "prompt", "message": "/workflow gate Ship it"}));
    let (run1, _) = client.until(|l| l["type"] == "agent_end");
    let initial = run1
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .expect("the initial message");
    assert_eq!(
        initial["message"]["content"][0]["text"],
        "Go: Ship it (1️⃣ One, alpha, beta)"
    );
    let context = custom(&run1, "workflow:context");
    assert_eq!(context.len(), 1);
    assert_eq!(context[0]["display"], false);
    let text = context[0]["content"].as_str().unwrap_or_default();
    let tid = task_id_of(text);
    assert_eq!(
        text,
        format!(
            "[Workflow path: Gate ▸ 1️⃣ One]\n\nROLE Gate|gate|Ship it|{tid}|one|One|(start)|Two|bash, edit|workflow_step|Gate|0|{{unknown}}\n\n**Task:** Ship it\n**Task ID:** {tid}\n**Current Phase:** 1️⃣ One\n**Progress:** Step 0 (1/2 phases)\n\n**All Steps:**\n▶ 1. 1️⃣ One\n  2. 2️⃣ Two\n\n**What to do in this phase:**\nFirst, in One of Gate.\n\n**Available subagent profiles for this phase:** alpha, beta\n**All profiles:** alpha, beta\n\nADVANCE from One to Two with workflow_step"
        )
    );
    let bash = results(&run1, "bash");
    assert_eq!(
        bash,
        [(
            "BLOCKED Gate/One: bash; allowed: all except: bash, edit".to_owned(),
            true
        )]
    );
    let steps = results(&run1, "workflow_step");
    assert_eq!(
        steps[0],
        (
            "⚠️ Looping is disabled for this workflow.".to_owned(),
            false
        )
    );
    assert_eq!(
        steps[1],
        (
            "✓ Advanced: One → 2️⃣ Two\n\nPrevious: One | Current: 2️⃣ Two | Next: DONE\n\n**What to do in Two:**\nSecond, after One.".to_owned(),
            false
        )
    );
    let status: Vec<&str> = steps[2].0.lines().collect();
    assert_eq!(
        status[..4],
        [
            "**Workflow:** Gate (gate)",
            &format!("**Task ID:** {tid}"),
            "**Description:** Ship it",
            "**Phase:** 2️⃣ Two [2/2]"
        ]
    );
    let started = status[4].strip_prefix("**Started:** ").expect("started");
    assert!(
        started.len() == 24 && started.ends_with('Z') && started.as_bytes()[10] == b'T',
        "{started}"
    );
    assert_eq!(
        status[5..],
        [
            "",
            "**What to do:**",
            "Second, after One.",
            "",
            "**Available profiles:** (none)"
        ]
    );
    // Case B: the countdown, then the custom not-done reminder as a user message.
    let (_, reminder) =
        client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    assert_eq!(
        reminder["message"]["content"][0]["text"],
        format!("NOT DONE Gate|Two|2️⃣|Second, after One.|Ship it|{tid}|gate")
    );
    // The reminder's run: Two's whitelist blocks bash, looping is still refused, and
    // `next` completes the workflow.
    let (run2, _) = client.until(|l| l["type"] == "agent_end");
    let context = custom(&run2, "workflow:context");
    let text = context[0]["content"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!(
            "\n\nROLE Gate|gate|Ship it|{tid}|two|Two|One|DONE|(none)|workflow_step|Gate|1|{{unknown}}\n\n"
        )),
        "{text}"
    );
    assert!(text.contains(
        "\n**Progress:** Step 1 (2/2 phases)\n\n**All Steps:**\n  1. 1️⃣ One\n▶ 2. 2️⃣ Two\n"
    ));
    assert!(text.ends_with("\n**Available subagent profiles for this phase:** (none)\n**All profiles:** alpha, beta\n\nADVANCE from Two to DONE with workflow_step"));
    assert_eq!(
        results(&run2, "bash"),
        [("BLOCKED Gate/Two: bash; allowed: read, ls".to_owned(), true)],
        "the whitelist's {{allowedTools}}"
    );
    let steps = results(&run2, "workflow_step");
    assert_eq!(
        steps,
        [
            ("⚠️ Looping is disabled for this workflow.".to_owned(), false),
            (
                "✓ Advanced: Two → DONE\n\nPrevious: Two | Current: ✅ Done | Next: DONE\n\n🎉 **All phases complete!**".to_owned(),
                false
            ),
            (
                "No active workflow. Use /workflow {name} {description} to start one.".to_owned(),
                false
            ),
        ]
    );
    assert_eq!(statuses(&run2).last(), Some(&None), "cleared once done");
    // Case A: the custom completion message (sent at agent_end with triggerTurn false: it
    // joins the session as the run ends, before it settles, as pi 1.6); no countdown.
    let (settling, _) = client.until(|l| l["type"] == "agent_settled");
    let done = custom(&settling, "workflow:complete");
    assert_eq!(done.len(), 1, "{settling:#?}");
    assert_eq!(done[0]["content"], format!("FINISHED Gate|Ship it|{tid}|2"));
    assert_eq!(done[0]["display"], true);
    let reply = request(
        &mut client,
        "2",
        json!({"type": "prompt", "message": "bye"}),
    );
    assert_eq!(reply["success"], true);
    let (run3, _) = client.until(|l| l["type"] == "agent_end");
    assert!(custom(&run3, "workflow:complete").is_empty(), "{run3:#?}");
    assert!(custom(&run3, "workflow:context").is_empty());
    assert!(!results(&run3, "bash")[0].1, "no workflow, no gate");
    assert!(
        !run2.iter().chain(&run3).any(is_widget),
        "no countdown once done"
    );
    // Case C: nothing more at later agent_ends.
    let reply = request(
        &mut client,
        "3",
        json!({"type": "prompt", "message": "again"}),
    );
    assert_eq!(reply["success"], true);
    let (run4, _) = client.until(|l| l["type"] == "agent_end");
    let reply = request(
        &mut client,
        "4",
        json!({"type": "prompt", "message": "more"}),
    );
    assert_eq!(reply["success"], true);
    let (run5, _) = client.until(|l| l["type"] == "agent_end");
    assert!(
        custom(&run4, "workflow:complete").is_empty()
            && custom(&run5, "workflow:complete").is_empty()
    );
    close_ok(client);
    // Completion persisted with completionNotified, then unloaded.
    let entries = states(&session);
    let last = &entries.last().expect("a state")["data"];
    assert_eq!(
        (last["active"].clone(), last["completionNotified"].clone()),
        (json!(false), json!(true))
    );
    // A restart: the notified state is restored, nothing is sent, the status stays clear.
    let mut again = rpc(&s, &json!([{"text": "hi"}]), &session, &[]);
    let reply = request(
        &mut again,
        "1",
        json!({"type": "prompt", "message": "back"}),
    );
    assert_eq!(reply["success"], true);
    let (_, _) = again.until(|l| l["type"] == "agent_end");
    let reply = request(
        &mut again,
        "2",
        json!({"type": "prompt", "message": "back"}),
    );
    assert_eq!(reply["success"], true);
    again.until(|l| l["type"] == "agent_end");
    let seen: Vec<Value> = again
        .seen
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(custom(&seen, "workflow:complete").is_empty(), "{seen:#?}");
    let shown = statuses(&seen);
    assert!(
        !shown.is_empty() && shown.iter().all(Option::is_none),
        "{shown:?}"
    );
    close_ok(again);
}

#[test]
fn the_status_is_cleared_on_every_early_return() {
    let s = Sandbox::new();
    install_examples(&s);
    let session = s.root().join("s.jsonl");
    let turns = json!([
        step("next"),
        step("next"),
        step("next"),
        step("next"),
        {"text": "Paused."}
    ]);
    // No state at all: session_start clears the status.
    let mut client = rpc(&s, &turns, &session, &[]);
    let (_, first) = client.until(|l| l["method"] == "setStatus" && l["statusKey"] == "workflow");
    assert!(first.get("statusText").is_none(), "{first}");
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    let (run, _) = client.until(|l| l["type"] == "agent_end");
    assert_eq!(
        statuses(&run).last(),
        Some(&Some("Feature > ✅ Verification [3/3]".to_owned()))
    );
    client.send(&json!({"id": "a", "type": "abort"}));
    client.response("a");
    close_ok(client);
    // Each restart: one run with `status` and `next`, then longer than a countdown's first
    // tick; all the lines seen.
    let restart = || -> Vec<Value> {
        let turns = json!([step("status"), step("next"), {"text": "Hello."}]);
        let mut client = rpc(&s, &turns, &session, &[]);
        let reply = request(
            &mut client,
            "1",
            json!({"type": "prompt", "message": "go on"}),
        );
        assert_eq!(reply["success"], true);
        client.until(|l| l["type"] == "agent_end");
        std::thread::sleep(Duration::from_millis(1300));
        let mut all: Vec<Value> = client
            .seen
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let (status, rest) = client.close();
        assert!(status.success());
        all.extend(rest);
        all
    };
    // Cleared, no context, no countdown; the tool says why.
    let check = |lines: &[Value]| {
        let shown = statuses(lines);
        assert!(
            !shown.is_empty() && shown.iter().all(Option::is_none),
            "{shown:?}"
        );
        assert!(custom(lines, "workflow:context").is_empty());
        assert!(!lines.iter().any(is_widget), "{lines:#?}");
        assert_eq!(
            results(lines, "workflow_step"),
            [
                ("The workflow configuration for this session is no longer available. Use workflow_step with action='cancel' to clear it, or reload the workflow definitions.".to_owned(), false),
                ("Workflow definition 'feature' not found.".to_owned(), false),
            ],
            "returned, not thrown, as the original's answers (pi: isError false)"
        );
        let details: Vec<&Value> = lines
            .iter()
            .filter(|e| e["type"] == "tool_execution_end" && e["toolName"] == "workflow_step")
            .map(|e| &e["result"]["details"])
            .collect();
        assert_eq!(
            details,
            [
                &json!({"active": false, "stale": true}),
                &json!({"active": false})
            ]
        );
    };
    // The workflow lost its last phase, the current one: the path's index is out of bounds.
    let yaml = s.project().join(".pi/workflows/feature/workflow.yaml");
    let text = std::fs::read_to_string(&yaml).expect("read");
    write(&yaml, &text.replace("  - ../_shared/verify.md\n", ""));
    check(&restart());
    // The root workflow is gone altogether.
    std::fs::remove_dir_all(s.project().join(".pi/workflows/feature")).expect("rm");
    check(&restart());
}

#[test]
fn a_second_agent_end_restarts_the_countdown() {
    let s = Sandbox::new();
    install_examples(&s);
    let mut client = rpc(
        &s,
        &json!([{"text": "I stop here."}]),
        &s.root().join("s.jsonl"),
        &[],
    );
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    // The widget is set from agent_end, before the host reports the end.
    let (_, three) =
        client.until(|l| is_widget(l) && l["widgetLines"][0] == widget_line(3).as_str());
    // pi prints the placement the original passes (`{placement: "aboveEditor"}`), right after
    // the lines.
    let keys: Vec<&str> = three
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "type",
            "id",
            "method",
            "widgetKey",
            "widgetLines",
            "widgetPlacement"
        ],
        "{three}"
    );
    assert_eq!(three["widgetPlacement"], "aboveEditor", "{three}");
    client.until(|l| l["type"] == "agent_end");
    // The user types during the grace period: that run ends too and restarts the countdown.
    client.send(&json!({"id": "2", "type": "prompt", "message": "wait"}));
    client.until(|l| is_widget(l) && l["widgetLines"][0] == widget_line(3).as_str());
    let started = Instant::now();
    let (mut window, _) = client.until(|l| l["type"] == "agent_end");
    let (rest, reminder) =
        client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    window.extend(rest);
    let waited = started.elapsed();
    let ticks: Vec<Option<String>> = window
        .iter()
        .filter(|l| is_widget(l))
        .map(|l| l["widgetLines"][0].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        ticks,
        [Some(widget_line(2)), Some(widget_line(1)), None],
        "one countdown, not two: {window:#?}"
    );
    // Every tick names its placement; the removal passes no options, so pi prints none.
    let placements: Vec<Option<&str>> = window
        .iter()
        .filter(|l| is_widget(l))
        .map(|l| l.get("widgetPlacement").and_then(Value::as_str))
        .collect();
    assert_eq!(
        placements,
        [Some("aboveEditor"), Some("aboveEditor"), None],
        "{window:#?}"
    );
    assert!(
        waited >= Duration::from_millis(1800) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    let text = reminder["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        text,
        "⚠️ The Feature is still active. Current phase: 📋 Planning.\n\nYou must NOT stop yet. The workflow requires you to complete the current phase\nand call workflow_step to advance.\n\nCurrent phase instructions:\nRead the code that Add a greeting touches and write down a plan: the files to change and\nthe tests to add. Do not change anything yet: only read, grep, find and ls work in this\nphase. The next phase is Implement.\n\nContinue working on the current phase and call workflow_step when done."
    );
    // One reminder: the reminder's own run ends and starts the next countdown at 3, with no
    // second reminder in between.
    let (between, _) =
        client.until(|l| is_widget(l) && l["widgetLines"][0] == widget_line(3).as_str());
    assert!(
        !between
            .iter()
            .any(|l| l["type"] == "message_end" && l["message"]["role"] == "user"),
        "{between:#?}"
    );
    client.send(&json!({"id": "a", "type": "abort"}));
    client.response("a");
    let _ = client.close();
}

#[test]
fn a_reminder_due_while_the_user_runs_something_is_dropped() {
    let s = Sandbox::new();
    let root = s.project().join(".pi/workflows/solo");
    write(
        &root.join("workflow.yaml"),
        "name: Solo\ncommandName: solo\ninitialMessage: \"true\"\nphases:\n  - only.md\n",
    );
    write(
        &root.join("only.md"),
        "---\nid: only\nname: Only\nemoji: \"1️⃣\"\n---\nDo it.\n",
    );
    // Each run runs its prompt as a bash command, then stops.
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "${PROMPT}"}}]},
        {"text": "I stop here."}
    ]);
    let mut client = rpc(&s, &turns, &s.root().join("s.jsonl"), &[]);
    client.send(&json!({"id": "1", "type": "prompt", "message": "/workflow solo Do it"}));
    client.until(|l| is_widget(l) && l["widgetLines"][0] == widget_line(3).as_str());
    client.until(|l| l["type"] == "agent_end");
    // The user starts a run lasting longer than the grace period.
    client.send(&json!({"id": "2", "type": "prompt", "message": "sleep 3.6"}));
    let (_, start) = client.until(|l| l["type"] == "agent_start");
    let _ = start;
    let (run, _) = client.until(|l| l["type"] == "agent_end");
    let ticks: Vec<Option<String>> = run
        .iter()
        .filter(|l| is_widget(l))
        .map(|l| l["widgetLines"][0].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        ticks,
        [
            Some(widget_line(2)),
            Some(widget_line(1)),
            None,
            Some(widget_line(3))
        ],
        "the old countdown ran out during the run; the run's end started a new one: {run:#?}"
    );
    let users: Vec<&Value> = run
        .iter()
        .filter(|l| l["type"] == "message_end" && l["message"]["role"] == "user")
        .collect();
    assert_eq!(
        users.len(),
        1,
        "only the user's prompt, no reminder: {users:#?}"
    );
    // The new countdown, with the agent idle, delivers its reminder.
    let (_, reminder) =
        client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    assert!(
        reminder["message"]["content"][0]["text"]
            .as_str()
            .is_some_and(
                |t| t.starts_with("⚠️ The Solo is still active. Current phase: 1️⃣ Only.\n")
            ),
        "{reminder}"
    );
    client.send(&json!({"id": "a", "type": "abort"}));
    let _ = client.close();
}

/// `pi-hooks run --mode json --no-session` with plugin logs at info level; stderr.
fn run_json_stderr(s: &Sandbox, turns: &Value, prompts: &[&str]) -> String {
    let script = s.root().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    let plugin = rust_plugin("workflow");
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8"),
        "-e",
        plugin.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(prompts);
    let mut command = s.command(&args);
    command.env("PI_HOOKS_LOG", "info");
    let output = output_within(command, LIMIT);
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn without_a_ui_the_reminder_is_due_three_seconds_after_agent_end() {
    let s = Sandbox::new();
    let root = s.project().join(".pi/workflows/solo");
    write(
        &root.join("workflow.yaml"),
        "name: Solo\ncommandName: solo\ninitialMessage: \"true\"\nphases:\n  - only.md\n",
    );
    write(
        &root.join("only.md"),
        "---\nid: only\nname: Only\nemoji: \"1️⃣\"\n---\nDo it.\n",
    );
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "${PROMPT}"}}]},
        {"text": "I stop here."}
    ]);
    let dropped = "[workflow] info: countdown: the agent is busy; the reminder is dropped";
    // The next run lasts 2 s: the 3 s timer has not fired when it ends (and its end restarts
    // the countdown, which the host's exit ends).
    let stderr = run_json_stderr(&s, &turns, &["/workflow solo Do it", "sleep 2"]);
    assert!(!stderr.contains("countdown:"), "{stderr}");
    // The next run lasts 3.6 s: the timer fires during it, and the reminder is dropped.
    let stderr = run_json_stderr(&s, &turns, &["/workflow solo Do it", "sleep 3.6"]);
    assert_eq!(
        stderr.lines().filter(|l| *l == dropped).count(),
        1,
        "{stderr}"
    );
}

#[test]
fn the_context_filter_keeps_the_notices_out_of_the_model_request() {
    let s = Sandbox::new();
    install_examples(&s);
    let script = s.root().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"text": "I stop here."}]}).to_string(),
    )
    .expect("script");
    let plugin = rust_plugin("workflow");
    let watcher = behave_plugin(&s.lib(), "watcher");
    let mut command = s.command(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8"),
        "-e",
        plugin.to_str().expect("utf-8"),
        "-e",
        watcher.to_str().expect("utf-8"),
        "/workflow feature Add a greeting",
        "/cancel-workflow",
        "hello",
    ]);
    let log = s.root().join("behave.log");
    command.env("BEHAVE_LOG", &log);
    command.env(
        behave_env_var("watcher"),
        json!({"handlers": [{"event": "before_provider_request"}]}).to_string(),
    );
    let output = output_within(command, LIMIT);
    assert!(output.status.success(), "{output:?}");
    let events = json_lines(&output);
    // Both notices reached the session (the countdown's from the first run's end, the
    // cancellation's from /cancel-workflow) ...
    assert_eq!(custom(&events, "workflow:countdown").len(), 1);
    assert_eq!(custom(&events, "workflow:complete").len(), 1);
    // ... but not the model: the requests keep the first run's hidden context and leave the
    // two notices out.
    let requests: Vec<Value> = read_behave_log(&log)
        .into_iter()
        .filter(|l| l.tag == "before_provider_request")
        .map(|l| l.value)
        .collect();
    let kinds = |request: &Value| -> Vec<String> {
        request["payload"]["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| {
                let kind = if m["role"] == "custom" {
                    &m["customType"]
                } else {
                    &m["role"]
                };
                kind.as_str().unwrap_or_default().to_owned()
            })
            .collect()
    };
    let all: Vec<Vec<String>> = requests.iter().map(kinds).collect();
    // The countdown notice (sent at the first run's end with triggerTurn false) joins the
    // session as that run ends, before it settles (pi 1.6), and the cancellation notice
    // before the second run: neither is in any request.
    let order: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "message_end")
        .map(|e| {
            let m = &e["message"];
            m["customType"]
                .as_str()
                .unwrap_or(m["role"].as_str().unwrap_or_default())
                .to_owned()
        })
        .collect();
    assert_eq!(
        order,
        [
            "user",
            "workflow:context",
            "assistant",
            "workflow:countdown",
            "workflow:complete",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        all,
        [
            vec!["user", "workflow:context"],
            vec!["user", "workflow:context", "assistant", "user"],
        ],
        "{all:#?}"
    );
}

#[test]
fn the_commands_answer_with_the_original_wording() {
    let s = Sandbox::new();
    install_examples(&s);
    write(
        &s.project().join(".pi/workflows/inner/workflow.yaml"),
        "name: Inner\nshow: workflows\ncommandName: inner\nphases:\n  - ../_shared/verify.md\n",
    );
    let mut client = rpc(&s, &json!([{"text": "ok"}]), &s.root().join("s.jsonl"), &[]);
    let mut notify = |id: &str, message: &str| -> (String, String) {
        client.send(&json!({"id": id, "type": "prompt", "message": message}));
        let (_, n) = client.until(|l| l["method"] == "notify");
        (
            n["message"].as_str().unwrap_or_default().to_owned(),
            n["notifyType"].as_str().unwrap_or_default().to_owned(),
        )
    };
    assert_eq!(
        notify("1", "/cancel-workflow"),
        (
            "No active workflow to cancel.".to_owned(),
            "info".to_owned()
        )
    );
    assert_eq!(
        notify("2", "/workflow feature"),
        (
            "Usage: /workflow feature {description}".to_owned(),
            "warning".to_owned()
        )
    );
    assert_eq!(
        notify("3", "/workflow nope Do it"),
        (
            "Unknown workflow: \"nope\". Available: feature".to_owned(),
            "error".to_owned()
        )
    );
    assert_eq!(
        notify("4", "/workflow inner Do it"),
        (
            "\"inner\" is a subworkflow that can only run as part of another workflow. It cannot be started directly.".to_owned(),
            "error".to_owned()
        )
    );
    // A start names the session: the workflow's prefix and the description.
    client
        .send(&json!({"id": "5", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    client.until(|l| l["type"] == "agent_end");
    let state = request(&mut client, "6", json!({"type": "get_state"}));
    assert_eq!(state["data"]["sessionName"], "Feature: Add a greeting");
    client.send(&json!({"id": "a", "type": "abort"}));
    client.response("a");
    close_ok(client);
}

/// `outer`: Phase 1, {subworkflow: sub}, Phase 3; `psl`: Phase 1, {subworkflow: sub} (the
/// subworkflow is the last phase); `sub` (internal): Sub Phase 1, Sub Phase 2.
fn install_sub_workflows(s: &Sandbox) {
    let root = s.project().join(".pi/workflows");
    let phase = |file: &str, id: &str, name: &str, emoji: &str| {
        write(
            &root.join(file),
            &format!("---\nid: {id}\nname: {name}\nemoji: \"{emoji}\"\n---\nDo {name}.\n"),
        );
    };
    phase("_shared/p1.md", "p1", "Phase 1", "1️⃣");
    phase("_shared/p3.md", "p3", "Phase 3", "3️⃣");
    phase("sub/s1.md", "s1", "Sub Phase 1", "🅰️");
    phase("sub/s2.md", "s2", "Sub Phase 2", "🅱️");
    write(
        &root.join("outer/workflow.yaml"),
        "name: Outer\ncommandName: outer\ninitialMessage: Go\nphases:\n  - ../_shared/p1.md\n  - subworkflow: sub\n  - ../_shared/p3.md\n",
    );
    write(
        &root.join("psl/workflow.yaml"),
        "name: Parent\ncommandName: psl\ninitialMessage: Go\nphases:\n  - ../_shared/p1.md\n  - subworkflow: sub\n",
    );
    write(
        &root.join("sub/workflow.yaml"),
        "name: Sub\nshow: workflows\nphases:\n  - s1.md\n  - s2.md\n",
    );
}

fn paths(entries: &[Value]) -> Vec<Value> {
    entries
        .iter()
        .map(|e| e["data"]["currentPath"].clone())
        .collect()
}

#[test]
fn leaving_a_last_subworkflow_stores_the_root_index_past_the_end_as_the_original() {
    let s = Sandbox::new();
    install_sub_workflows(&s);
    let session = s.root().join("s.jsonl");
    let turns = json!([step("next"), step("next"), step("next"), {"text": "Done."}]);
    let lines = run_json(&s, &session, &turns, &["/workflow psl Ship it"]);
    let steps = results(&lines, "workflow_step");
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(
        steps[2],
        (
            "✓ Advanced: Sub Phase 2 → DONE\n\nPrevious: Sub Phase 2 | Current: ✅ Done | Next: DONE\n\n🎉 **All phases complete!**".to_owned(),
            false
        )
    );
    let entries = states(&session);
    assert_eq!(
        paths(&entries),
        [
            json!([{"workflowKey": "psl", "phaseIndex": 0}]),
            json!([{"workflowKey": "psl", "phaseIndex": 1}, {"workflowKey": "sub", "phaseIndex": 0}]),
            json!([{"workflowKey": "psl", "phaseIndex": 1}, {"workflowKey": "sub", "phaseIndex": 1}]),
            // The original's breakout moves the parent on past its end: [{psl, 2}].
            json!([{"workflowKey": "psl", "phaseIndex": 2}]),
            json!([{"workflowKey": "psl", "phaseIndex": 2}]),
        ],
        "{entries:#?}"
    );
    let done = &entries[3]["data"];
    assert_eq!(
        (
            &done["active"],
            &done["completionNotified"],
            &done["globalStepCount"]
        ),
        (&json!(false), &json!(false), &json!(3))
    );
    assert_eq!(entries[4]["data"]["completionNotified"], true);
}

#[test]
fn next_enters_a_subworkflow_the_resumed_state_points_at_as_the_original() {
    let s = Sandbox::new();
    install_sub_workflows(&s);
    let session = s.root().join("s.jsonl");
    run_json(
        &s,
        &session,
        &json!([{"text": "Started."}]),
        &["/workflow outer Ship it"],
    );
    // What the original's `loop` writes when the scope's entry is a reference: the state
    // points at {subworkflow: sub}, not entered yet.
    let mut entries = states(&session);
    let last = jsonl(&session).pop().expect("entries");
    let mut entry = entries.pop().expect("the start's state");
    entry["id"] = json!("5e55ed01");
    entry["parentId"] = last["id"].clone();
    entry["data"]["currentPath"] = json!([{"workflowKey": "outer", "phaseIndex": 1}]);
    entry["data"]["globalStepCount"] = json!(1);
    let mut text = std::fs::read_to_string(&session).expect("read");
    text.push_str(&format!("{entry}\n"));
    std::fs::write(&session, text).expect("write");
    let turns =
        json!([step("status"), step("next"), step("next"), step("next"), {"text": "Paused."}]);
    let lines = run_json(&s, &session, &turns, &["go on"]);
    let steps = results(&lines, "workflow_step");
    assert!(
        steps[0].0.contains("\n**Phase:** 🅰️ Sub Phase 1 [2/3]\n"),
        "the status drills into the reference: {steps:?}"
    );
    assert_eq!(
        steps[1..],
        [
            (
                "✓ Entered subworkflow 'Sub': Sub Phase 1 → 🅰️ Sub Phase 1\n\nPrevious: Sub Phase 1 | Current: 🅰️ Sub Phase 1 | Next: Sub Phase 2\n\n**What to do in Sub Phase 1:**\nDo Sub Phase 1.".to_owned(),
                false
            ),
            (
                "✓ Advanced: Sub Phase 1 → 🅱️ Sub Phase 2\n\nPrevious: Sub Phase 1 | Current: 🅱️ Sub Phase 2 | Next: Phase 3\n\n**What to do in Sub Phase 2:**\nDo Sub Phase 2.".to_owned(),
                false
            ),
            (
                "✓ Exited subworkflow, returning to Outer: Sub Phase 2 → 3️⃣ Phase 3\n\nPrevious: Sub Phase 2 | Current: 3️⃣ Phase 3 | Next: DONE\n\n**What to do in Phase 3:**\nDo Phase 3.".to_owned(),
                false
            ),
        ]
    );
    let entries = states(&session);
    assert_eq!(
        paths(&entries[entries.len() - 3..]),
        [
            json!([{"workflowKey": "outer", "phaseIndex": 1}, {"workflowKey": "sub", "phaseIndex": 0}]),
            json!([{"workflowKey": "outer", "phaseIndex": 1}, {"workflowKey": "sub", "phaseIndex": 1}]),
            json!([{"workflowKey": "outer", "phaseIndex": 2}]),
        ]
    );
    assert_eq!(entries[entries.len() - 3]["data"]["globalStepCount"], 2);
}

/// The peak resident memory of process `pid`, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
fn a_phase_file_with_50_mb_of_front_matter_is_refused_unread() {
    let s = Sandbox::new();
    install_examples(&s);
    let root = s.project().join(".pi/workflows");
    let mut big = String::from("---\nid: big\nname: Big\nemoji: \"🐘\"\npadding: \"");
    big.push_str(&"a".repeat(50 << 20));
    big.push_str("\"\n---\nDo it.\n");
    write(&root.join("big/big.md"), &big);
    drop(big);
    write(
        &root.join("big/workflow.yaml"),
        "name: Big\ncommandName: big\ninitialMessage: Go\nphases:\n  - big.md\n",
    );
    let script = s.root().join("script.json");
    std::fs::write(&script, json!({"turns": [{"text": "Hi."}]}).to_string()).expect("script");
    let plugin = rust_plugin("workflow");
    let log = s.root().join("stderr.log");
    let command = s.command(&[
        "rpc",
        "--no-session",
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8"),
        "-e",
        plugin.to_str().expect("utf-8"),
    ]);
    let mut client =
        RpcClient::start_with_stderr(command, std::fs::File::create(&log).expect("log").into());
    // session_start has loaded the definitions once it clears the status.
    client.until(|l| l["method"] == "setStatus" && l["statusKey"] == "workflow");
    // `/workflow` loads them again; the other workflows still work.
    client
        .send(&json!({"id": "1", "type": "prompt", "message": "/workflow feature Add a greeting"}));
    client.until(|l| l["type"] == "agent_end");
    let peak = peak_kib(client.pid());
    let (status, _) = client.close();
    assert!(status.success());
    // Parsing it cost about 470 MB; unread, the host stays far below one such file.
    assert!(peak < 48 << 10, "peak resident memory {peak} KiB");
    let stderr = std::fs::read_to_string(&log).expect("stderr");
    let phase = root.join("big/big.md");
    assert!(
        stderr.contains(&format!(
            "[workflow] warn: [pi-workflows] Failed to load phase file {}: larger than 1048576 bytes, the workflow plugin's limit",
            phase.display()
        )),
        "{stderr}"
    );
}
