//! The event handlers, as the original's hook lifecycle describes them: `session_start` /
//! `session_tree` (load, reconstruct, status), `turn_end` (status), `tool_call` (blacklist /
//! whitelist), `before_agent_start` (the hidden `workflow:context` message), `agent_end`
//! (completion message, or the auto-continue countdown) and `context` (keeps the countdown
//! and completion notices out of the model's context).

use pi_hooks_abi::sdk::LogLevel;
use pi_hooks_abi::sdk::prelude::*;

use crate::definitions::{Definitions, PhaseTools};
use crate::state::{WorkflowState, resolve};
use crate::templates::{self, DEFAULT_BLOCK_REASON, DEFAULT_NOT_DONE_REMINDER};
use crate::{Plugin, context_prompt, countdown, persist, persistence, status};

/// Registers every handler.
pub fn register(pi: &mut Registrar, plugin: &Plugin) -> Result<()> {
    for event in ["session_start", "session_tree"] {
        let p = plugin.clone();
        pi.on(event, move |_event, ctx| load_and_reconstruct(&p, ctx))?;
    }
    let p = plugin.clone();
    pi.on("turn_end", move |_event, ctx| {
        let rt = p.lock();
        update_status(&p, ctx, rt.state.as_ref(), &rt.defs)
    })?;
    let p = plugin.clone();
    let handle = pi.handle();
    pi.on_tool_call(move |call, _ctx| {
        let rt = p.lock();
        let Some(reason) = tool_decision(rt.state.as_ref(), &rt.defs, call.tool_name()) else {
            return Ok(ToolCallDecision::Allow);
        };
        let first = reason.lines().next().unwrap_or_default();
        handle.log(LogLevel::Info, &format!("blocked: {first}"));
        Ok(ToolCallDecision::block(reason))
    })?;
    let p = plugin.clone();
    pi.on("before_agent_start", move |_event, _ctx| {
        let rt = p.lock();
        Ok(context_message(rt.state.as_ref(), &rt.defs))
    })?;
    let p = plugin.clone();
    pi.on("agent_end", move |event, ctx| {
        let aborted = was_aborted(&event.get("messages").to_serde());
        agent_end(&p, ctx, aborted)
    })?;
    pi.on("context", |event, _ctx| {
        Ok(filter_context(&event.get("messages").to_serde()))
    })
}

/// `session_start` / `session_tree`: stop a pending countdown, load the definitions, rebuild
/// the state from the branch, show the status.
fn load_and_reconstruct(plugin: &Plugin, ctx: &Context<'_>) -> Result<()> {
    let handle = ctx.plugin();
    countdown::stop(&plugin.countdown, handle, Some(ctx));
    let defs = crate::load_definitions(handle, Some(ctx.cwd()));
    let (state, warning) = persistence::reconstruct(&ctx.session_branch()?);
    if let Some(warning) = warning {
        handle.log(LogLevel::Warn, &warning);
    }
    let mut rt = plugin.lock();
    rt.defs = defs;
    rt.state = state;
    update_status(plugin, ctx, rt.state.as_ref(), &rt.defs)
}

/// `updateStatus`.
pub fn update_status(
    plugin: &Plugin,
    ctx: &Context<'_>,
    state: Option<&WorkflowState>,
    defs: &Definitions,
) -> Result<()> {
    plugin.set_status(ctx, status::status_text(state, defs).as_deref())
}

/// `handleToolCall`: the block reason, or `None` to allow.
pub fn tool_decision(
    state: Option<&WorkflowState>,
    defs: &Definitions,
    tool: &str,
) -> Option<String> {
    let state = state?;
    let active = resolve(state, defs)?;
    if tool == "workflow_step" {
        return None;
    }
    let PhaseTools {
        blacklist,
        whitelist,
    } = active.phase.tools.as_ref()?;
    let allowed = if let Some(black) = blacklist.as_ref().filter(|b| b.iter().any(|t| t == tool)) {
        format!("all except: {}", black.join(", "))
    } else if let Some(white) = whitelist.as_ref().filter(|w| !w.iter().any(|t| t == tool)) {
        white.join(", ")
    } else {
        return None;
    };
    let def = active.definition;
    Some(templates::resolve(
        def.block_reason_template
            .as_deref()
            .unwrap_or(DEFAULT_BLOCK_REASON),
        &[
            ("workflowName", &def.name),
            ("phaseName", &active.phase.name),
            ("toolName", tool),
            ("allowedTools", &allowed),
        ],
    ))
}

/// `handleBeforeAgentStart`: the hidden context message.
pub fn context_message(
    state: Option<&WorkflowState>,
    defs: &Definitions,
) -> Option<serde_json::Value> {
    let active = resolve(state?, defs)?;
    Some(json!({"message": {
        "customType": "workflow:context",
        "content": context_prompt::build(&active, defs),
        "display": false,
    }}))
}

/// Whether the last assistant message stopped because the user aborted.
pub fn was_aborted(messages: &serde_json::Value) -> bool {
    messages
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
        .is_some_and(|m| m["stopReason"] == "aborted")
}

/// The completion (or cancellation) message of a finished state.
pub fn completion_text(state: &WorkflowState, defs: &Definitions) -> Option<String> {
    let def = defs.get(&state.workflow_key)?;
    let default = if state.cancelled {
        templates::DEFAULT_CANCELLED_MESSAGE
    } else {
        templates::DEFAULT_COMPLETION_MESSAGE
    };
    let count = def.phases.len().to_string();
    Some(templates::resolve(
        def.completion_message.as_deref().unwrap_or(default),
        &[
            ("workflowName", &def.name),
            ("taskDescription", &state.task_description),
            ("taskId", &state.task_id),
            ("phaseCount", &count),
        ],
    ))
}

/// The not-done reminder of an active state.
pub fn not_done_reminder(state: &WorkflowState, defs: &Definitions) -> Option<String> {
    let active = resolve(state, defs)?;
    let def = active.definition;
    let instructions = context_prompt::instructions(&active, defs);
    Some(templates::resolve(
        def.not_done_reminder
            .as_deref()
            .unwrap_or(DEFAULT_NOT_DONE_REMINDER),
        &[
            ("workflowName", &def.name),
            ("phaseName", &active.phase.name),
            ("phaseEmoji", &active.phase.emoji),
            ("phaseInstructions", &instructions),
            ("taskDescription", &state.task_description),
            ("taskId", &state.task_id),
            ("workflowKey", &state.workflow_key),
        ],
    ))
}

/// `handleAgentEnd` and the application of its state mutation.
fn agent_end(plugin: &Plugin, ctx: &Context<'_>, aborted: bool) -> Result<()> {
    let handle = ctx.plugin();
    let mut rt = plugin.lock();
    let Some(state) = rt.state.clone() else {
        return Ok(());
    };
    if !state.active && !state.completion_notified {
        // Case A: done (or cancelled) and not yet notified.
        let Some(content) = completion_text(&state, &rt.defs) else {
            return Ok(());
        };
        handle.send_message(
            &json!({"customType": "workflow:complete", "content": content, "display": true}),
            &json!({"triggerTurn": false}),
        )?;
        plugin.set_status(ctx, None)?;
        rt.state = None;
        if !state.cancelled {
            persist(
                handle,
                &WorkflowState {
                    completion_notified: true,
                    ..state
                },
            )?;
        }
    } else if state.active && !aborted {
        // Case B: stopped mid-workflow.
        if let Some(reminder) = not_done_reminder(&state, &rt.defs) {
            drop(rt);
            countdown::start(&plugin.countdown, ctx, reminder)?;
        }
    }
    Ok(())
}

/// The `context` filter: without custom messages nothing changes; otherwise the countdown
/// and completion notices are left out of what the model reads.
pub fn filter_context(messages: &serde_json::Value) -> Option<serde_json::Value> {
    let list = messages.as_array()?;
    if !list.iter().any(|m| m["role"] == "custom") {
        return None;
    }
    let kept: Vec<_> = list
        .iter()
        .filter(|m| {
            !(m["role"] == "custom"
                && (m["customType"] == "workflow:countdown"
                    || m["customType"] == "workflow:complete"))
        })
        .cloned()
        .collect();
    Some(json!({ "messages": kept }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definitions::{PhaseDefinition, PhaseEntry, PhaseTools};
    use crate::state::initial_state;
    use crate::state::tests::{nested, wf};

    fn gated(tools: PhaseTools) -> Definitions {
        let phase = PhaseEntry::Phase(PhaseDefinition {
            id: "plan".into(),
            name: "Planning".into(),
            emoji: "📋".into(),
            instructions: "Plan.".into(),
            tools: Some(tools),
            available_profiles: None,
        });
        Definitions::from_entries(vec![("w".into(), wf("W", vec![phase]))])
    }

    #[test]
    fn whitelist_blacklist_and_workflow_step() {
        let defs = gated(PhaseTools {
            blacklist: None,
            whitelist: Some(vec!["read".into(), "grep".into()]),
        });
        let s = initial_state(&defs, "w", "t", 1, "id".into());
        assert_eq!(tool_decision(Some(&s), &defs, "read"), None);
        assert_eq!(tool_decision(Some(&s), &defs, "workflow_step"), None);
        assert_eq!(
            tool_decision(Some(&s), &defs, "bash").unwrap(),
            "[workflow] The tool \"bash\" is blocked during the Planning phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase."
        );
        let mut defs = gated(PhaseTools {
            blacklist: Some(vec!["edit".into(), "write".into()]),
            whitelist: None,
        });
        let mut def = defs.get("w").unwrap().clone();
        def.block_reason_template =
            Some("{workflowName}/{phaseName}: {toolName} ({allowedTools})".into());
        defs = Definitions::from_entries(vec![("w".into(), def)]);
        assert_eq!(tool_decision(Some(&s), &defs, "bash"), None);
        assert_eq!(
            tool_decision(Some(&s), &defs, "edit").unwrap(),
            "W/Planning: edit (all except: edit, write)"
        );
        assert_eq!(tool_decision(None, &defs, "edit"), None);
    }

    #[test]
    fn messages_and_filters() {
        let defs = nested();
        let mut s = initial_state(&defs, "top", "Ship", 1, "wf-1".into());
        let reminder = not_done_reminder(&s, &defs).unwrap();
        assert!(reminder.starts_with("⚠️ The Top is still active. Current phase: 📋 Plan.\n"));
        assert!(reminder.contains("Current phase instructions:\nDo Plan.\n"));
        s.active = false;
        assert_eq!(
            completion_text(&s, &defs).unwrap(),
            "✅ **Top Complete**\n\n**Task:** Ship\n**Task ID:** wf-1\n**Phases completed:** 3"
        );
        s.cancelled = true;
        assert_eq!(
            completion_text(&s, &defs).unwrap(),
            "❌ **Top Cancelled**\n\n**Task:** Ship\n**Task ID:** wf-1"
        );
        assert!(was_aborted(
            &json!([{"role": "assistant", "stopReason": "aborted"}, {"role": "toolResult"}])
        ));
        assert!(!was_aborted(
            &json!([{"role": "assistant", "stopReason": "aborted"}, {"role": "assistant", "stopReason": "stop"}])
        ));
        assert!(!was_aborted(&json!([])));
        assert_eq!(filter_context(&json!([{"role": "user"}])), None);
        let filtered = filter_context(&json!([
            {"role": "custom", "customType": "workflow:context"},
            {"role": "custom", "customType": "workflow:countdown"},
            {"role": "custom", "customType": "workflow:complete"}
        ]))
        .unwrap();
        assert_eq!(
            filtered,
            json!({"messages": [{"role": "custom", "customType": "workflow:context"}]})
        );
    }
}
