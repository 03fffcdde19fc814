//! The workflow plugin (`plugins/workflow`) in JSON and print mode (no UI): a tool blocked by
//! the planning phase's whitelist with the exact reason, the hidden `workflow:context`
//! message, the status changes (logged at info level without a UI), the not-done countdown
//! as a `workflow:countdown` message, `/cancel-workflow`, and a broken `workflow.yaml`
//! reported while the other workflows load.

use std::time::Duration;

use pi_hooks_tests::workflow::install_examples;
use pi_hooks_tests::{Sandbox, json_lines, output_within, rust_plugin};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

/// `pi-hooks run --mode json --no-session` with the workflow plugin, `turns` and `prompts`,
/// plugin logs at info level; returns the JSON lines and stderr.
fn run_json(s: &Sandbox, turns: &Value, prompts: &[&str]) -> (Vec<Value>, String) {
    run_json_with(s, &["--no-session"], turns, prompts)
}

/// As [`run_json`], with `session` (`--no-session`, `--continue`, or none) as the session
/// options.
fn run_json_with(
    s: &Sandbox,
    session: &[&str],
    turns: &Value,
    prompts: &[&str],
) -> (Vec<Value>, String) {
    let script = s.root().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    let plugin = rust_plugin("workflow");
    let mut args = vec!["run", "--mode", "json"];
    args.extend_from_slice(session);
    args.extend([
        "--no-hooks",
        "--script",
        script.to_str().expect("utf-8"),
        "-e",
        plugin.to_str().expect("utf-8"),
    ]);
    args.extend_from_slice(prompts);
    let mut command = s.command(&args);
    command.env("PI_HOOKS_LOG", "info");
    let output = output_within(command, LIMIT);
    assert!(output.status.success(), "{output:?}");
    (
        json_lines(&output),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn tool_text(events: &[Value], tool: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end" && e["toolName"] == tool)
        .map(|e| {
            e["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn custom<'a>(events: &'a [Value], custom_type: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["customType"] == custom_type)
        .map(|e| &e["message"])
        .collect()
}

#[test]
fn whitelist_blocks_with_the_exact_reason_and_context_is_injected() {
    let s = Sandbox::new();
    install_examples(&s);
    let turns = json!([
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"toolCalls": [{"name": "read", "arguments": {"path": ".pi/workflows/feature/workflow.yaml"}}]},
        {"toolCalls": [{"name": "workflow_step", "arguments": {"action": "next", "summary": "planned"}}]},
        {"toolCalls": [{"name": "workflow_step", "arguments": {"action": "next"}}]},
        {"toolCalls": [{"name": "workflow_step", "arguments": {"action": "status"}}]},
        {"text": "Pausing."}
    ]);
    let (events, stderr) = run_json(&s, &turns, &["/workflow feature Add a greeting"]);
    let blocked = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end" && e["toolName"] == "bash")
        .expect("the bash call");
    assert_eq!(blocked["isError"], true);
    assert_eq!(
        blocked["result"]["content"][0]["text"],
        "[workflow] The tool \"bash\" is blocked during the Planning phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase."
    );
    let read = tool_text(&events, "read");
    assert!(
        read[0].contains("name: Feature"),
        "read is whitelisted: {read:?}"
    );
    // The hidden context message, sections in order.
    let context = custom(&events, "workflow:context");
    assert_eq!(context.len(), 1, "one run, one context message");
    assert_eq!(context[0]["display"], false);
    let text = context[0]["content"].as_str().unwrap_or_default();
    let task_id = text
        .lines()
        .find_map(|l| l.strip_prefix("**Task ID:** "))
        .expect("a task id line");
    assert!(task_id.starts_with("wf-"), "{task_id}");
    let expected = format!(
        "[Workflow path: Feature ▸ 📋 Planning]\n\nYou are the ORCHESTRATOR for this workflow. You must NOT use the edit or write tools directly. All implementation work must be delegated to subagents via the delegate_to_subagents tool. Follow the phase instructions precisely.\n\n**Task:** Add a greeting\n**Task ID:** {task_id}\n**Current Phase:** 📋 Planning\n**Progress:** Step 0 (1/3 phases)\n\n**All Steps:**\n▶ 1. 📋 Planning\n  2. 🛠️ Coding\n  3. 🔍 Static check\n  4. 🔧 Fixes\n  5. ✅ Verification\n\n**What to do in this phase:**\nRead the code that Add a greeting touches and write down a plan: the files to change and\nthe tests to add. Do not change anything yet: only read, grep, find and ls work in this\nphase. The next phase is Implement.\n\n**Available subagent profiles for this phase:** researcher\n**All profiles:** researcher, coder, reviewer\n\nWhen you finish this phase, call the workflow_step tool with action='next' to advance to the next phase. If you need to restart the current scope from the beginning, use action='loop'."
    );
    assert_eq!(text, expected);
    // The tool's answers and the status changes (logged without a UI).
    let steps = tool_text(&events, "workflow_step");
    assert!(steps[0].starts_with("✓ Entered subworkflow 'Implement': Planning → 🛠️ Coding\n\nPrevious: Planning | Current: 🛠️ Coding | Next: Static check"), "{steps:?}");
    assert!(
        steps[2].contains(
            "**Path:** Feature > Implement > Review\n**Phase:** 🔍 Static check [1/2] (step 2)\n"
        ),
        "{steps:?}"
    );
    for line in [
        "[workflow] info: blocked: [workflow] The tool \"bash\" is blocked during the Planning phase.",
        "[workflow] info: status: Feature > 📋 Planning [1/3]",
        "[workflow] info: status: Feature > Implement [2/3] > 🛠️ Coding [1/2]",
        "[workflow] info: status: Feature > Implement [2/3] > Review [2/2] > 🔍 Static check [1/2]",
    ] {
        assert!(stderr.lines().any(|l| l == line), "{line}\n{stderr}");
    }
}

#[test]
fn countdown_message_without_ui_and_cancel() {
    let s = Sandbox::new();
    install_examples(&s);
    let started = std::time::Instant::now();
    let (events, stderr) = run_json(
        &s,
        &json!([{"text": "I stop here."}]),
        &[
            "/workflow feature Add a greeting",
            "/cancel-workflow",
            "hello",
        ],
    );
    // The first run stopped mid-workflow: the countdown notice (sent from agent_end, so it is
    // delivered with the next run, as pi does), no widget, and no reminder before the end.
    let notices = custom(&events, "workflow:countdown");
    assert_eq!(notices.len(), 1, "{events:#?}");
    assert_eq!(
        notices[0]["content"],
        "Auto-continuing workflow in 3s... (type anything to interrupt)"
    );
    assert_eq!(notices[0]["display"], true);
    let cancelled = custom(&events, "workflow:complete");
    assert_eq!(cancelled.len(), 1);
    let text = cancelled[0]["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("❌ **Workflow Cancelled**\n\n**Task:** Add a greeting\n**Task ID:** wf-"),
        "{text}"
    );
    // /cancel-workflow stopped the timer: no reminder ran, the host ended at once.
    assert!(
        events.iter().all(|e| !(e["type"] == "message_end"
            && e["message"]["role"] == "user"
            && e["message"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("⚠️")))),
        "no reminder"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    // After the cancellation no context is injected any more.
    assert_eq!(custom(&events, "workflow:context").len(), 1, "{stderr}");
}

#[test]
fn a_broken_workflow_is_reported_and_the_others_load() {
    let s = Sandbox::new();
    install_examples(&s);
    let root = s.project().join(".pi/workflows");
    std::fs::create_dir_all(root.join("broken")).expect("mkdir");
    std::fs::write(root.join("broken/workflow.yaml"), "name: [unclosed\n").expect("write");
    std::fs::create_dir_all(root.join("nophases")).expect("mkdir");
    std::fs::write(
        root.join("nophases/workflow.yaml"),
        "name: X\ncommandName: x\ninitialMessage: go\n",
    )
    .expect("write");
    // A phase with both tool lists (pi-workflows: exactly one of them per phase).
    std::fs::create_dir_all(root.join("both")).expect("mkdir");
    std::fs::write(
        root.join("both/workflow.yaml"),
        "name: Both\ncommandName: both\ninitialMessage: go\nphases:\n  - p.md\n",
    )
    .expect("write");
    std::fs::write(
        root.join("both/p.md"),
        "---\nid: p\nname: P\nemoji: x\ntools:\n  blacklist: [edit]\n  whitelist: [read]\n---\nDo.\n",
    )
    .expect("write");
    let (events, stderr) = run_json(
        &s,
        &json!([{"toolCalls": [{"name": "workflow_step", "arguments": {"action": "status"}}]}, {"text": "ok"}]),
        &["/workflow feature Still works"],
    );
    let dir = root.display();
    assert!(
        stderr.lines().any(|l| l.starts_with(&format!(
            "[workflow] warn: [pi-workflows] Failed to load workflow from {dir}/broken: "
        ))),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|l| l
            == format!("[workflow] warn: [pi-workflows] Missing or invalid \"phases\" array in {dir}/nophases")),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|l| l
            == "[workflow] warn: [pi-workflows] Skipping invalid workflow definition \"both\": Workflow \"both\", phase \"p\": cannot set both blacklist and whitelist."),
        "{stderr}"
    );
    let status = tool_text(&events, "workflow_step");
    assert!(
        status[0].starts_with("**Workflow:** Feature (feature)\n"),
        "{status:?}"
    );
}

#[test]
fn state_survives_a_reload_prompt_and_a_restart_with_continue() {
    let s = Sandbox::new();
    install_examples(&s);
    let turns = json!([
        {"toolCalls": [{"name": "workflow_step", "arguments": {"action": "next"}}]},
        {"toolCalls": [{"name": "workflow_step", "arguments": {"action": "status"}}]},
        {"text": "Paused."}
    ]);
    let phase_line = |events: &[Value]| -> Vec<String> {
        tool_text(events, "workflow_step")
            .iter()
            .filter_map(|t| {
                t.lines()
                    .find(|l| l.starts_with("**Phase:** "))
                    .map(str::to_owned)
            })
            .collect()
    };
    // A session file in the default folder (no --no-session), so --continue finds it.
    // Each run: `next`, then `status`. The `/reload` prompt reloads the plugin in between.
    let (events, stderr) = run_json_with(
        &s,
        &[],
        &turns,
        &["/workflow feature Add a greeting", "/reload", "go on"],
    );
    assert_eq!(
        phase_line(&events),
        [
            "**Phase:** 🛠️ Coding [1/2] (step 1)",
            "**Phase:** 🔍 Static check [1/2] (step 2)"
        ],
        "{stderr}"
    );
    let coding = "[workflow] info: status: Feature > Implement [2/3] > 🛠️ Coding [1/2]";
    assert_eq!(
        stderr.lines().filter(|l| *l == coding).count(),
        2,
        "once from the first run, once from the reloaded instance's session_start: {stderr}"
    );
    // A new host continuing the session resumes where it was, step count included.
    let (events, stderr) = run_json_with(&s, &["--continue"], &turns, &["and on"]);
    assert_eq!(
        phase_line(&events),
        ["**Phase:** 🔧 Fixes [2/2] (step 3)"],
        "{stderr}"
    );
}
