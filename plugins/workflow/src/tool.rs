//! The `workflow_step` tool: `status`, `next`, `loop`, `cancel` (two-step), optional
//! `summary` (accepted, unused). Never blocked by this plugin's own `tool_call` handler.

use pi_hooks_abi::sdk::prelude::*;

use crate::context_prompt::{instructions, profiles};
use crate::definitions::{Definitions, PhaseEntry};
use crate::state::{Active, Advance, WorkflowState, advance, cancelled, loop_scope, resolve};
use crate::{Plugin, Runtime, persist};

/// The tool's description, as the original's.
pub const DESCRIPTION: &str = "Show current workflow status, advance to the next phase, loop back to the start of the current scope, or cancel the active workflow. Use this to coordinate any configured workflow.";

/// What the tool answers when no workflow is active.
pub const NO_WORKFLOW: &str =
    "No active workflow. Use /workflow {name} {description} to start one.";

/// The JSON Schema of the parameters.
pub fn parameters() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["next", "status", "cancel", "loop"],
                "description": "\"next\" to advance to the next phase, \"status\" to check current state, \"cancel\" to abort the workflow, \"loop\" to restart the current scope from phase 0"
            },
            "summary": {
                "type": "string",
                "description": "Optional summary of what was accomplished in the current phase"
            }
        },
        "required": ["action"]
    })
}

/// A tool answer: its text, details, and whether the original marks it an error.
///
/// The original returns its error answers (`resultType: "error"`), it does not throw them,
/// so pi records them with `isError: false`; so does this port.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The text the model reads.
    pub text: String,
    /// `details`.
    pub details: serde_json::Value,
    /// One of the original's error answers (still a result with `isError: false`).
    pub error: bool,
    /// The state to apply and persist (`None`: unchanged), and whether to persist it.
    pub new_state: Option<(Option<WorkflowState>, bool)>,
}

impl Answer {
    fn plain(text: impl Into<String>, details: serde_json::Value) -> Self {
        Answer {
            text: text.into(),
            details,
            error: false,
            new_state: None,
        }
    }

    fn error(text: impl Into<String>, details: serde_json::Value) -> Self {
        Answer {
            error: true,
            ..Answer::plain(text, details)
        }
    }

    fn with_state(mut self, state: WorkflowState, persist: bool) -> Self {
        self.new_state = Some((Some(state), persist));
        self
    }
}

/// ISO-8601 UTC with milliseconds (`2026-06-06T12:00:00.000Z`).
pub fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default()
}

/// The name shown for the next phase: the next entry looking outward, drilled to its
/// first concrete phase; `DONE` at the end.
fn next_display(active: &Active<'_>, defs: &Definitions) -> String {
    for seg in active.state.current_path.iter().rev() {
        if let Some(entry) = defs
            .get(&seg.workflow_key)
            .and_then(|d| d.phases.get(seg.phase_index + 1))
        {
            return match entry {
                PhaseEntry::Phase(p) => p.name.clone(),
                PhaseEntry::Subworkflow(_) => defs
                    .first_phase(entry)
                    .map_or_else(|| defs.entry_name(entry), |p| p.name.clone()),
            };
        }
    }
    "DONE".into()
}

fn status(state: &WorkflowState, defs: &Definitions) -> Answer {
    let Some(active) = resolve(state, defs) else {
        return Answer::error(
            "The workflow configuration for this session is no longer available. Use workflow_step with action='cancel' to clear it, or reload the workflow definitions.",
            json!({"active": false, "stale": true}),
        );
    };
    let nested = state.current_path.len() > 1;
    let seg = active.innermost();
    let mut lines = vec![
        format!(
            "**Workflow:** {} ({})",
            active.definition.name, state.workflow_key
        ),
        format!("**Task ID:** {}", state.task_id),
        format!("**Description:** {}", state.task_description),
    ];
    if nested {
        lines.push(format!("**Path:** {}", active.breadcrumb_path()));
    }
    lines.push(format!(
        "**Phase:** {} {} [{}/{}]{}",
        active.phase.emoji,
        active.phase.name,
        seg.phase_index + 1,
        active.scope.phases.len(),
        if nested {
            format!(" (step {})", state.global_step_count)
        } else {
            String::new()
        }
    ));
    lines.push(format!("**Started:** {}", iso(state.started_at)));
    lines.extend([
        String::new(),
        "**What to do:**".into(),
        instructions(&active, defs),
        String::new(),
        format!("**Available profiles:** {}", profiles(active.phase)),
    ]);
    Answer::plain(
        lines.join("\n"),
        json!({"active": true, "workflowKey": state.workflow_key, "currentPath": state.current_path}),
    )
}

fn next(state: &WorkflowState, defs: &Definitions) -> Answer {
    match advance(state, defs) {
        Err(message) if message.ends_with("not found.") => {
            Answer::error(message, json!({"active": false}))
        }
        Err(message) => Answer::error(message, json!({})),
        Ok(Advance::Done { from, state }) => Answer::plain(
            format!(
                "✓ Advanced: {from} → DONE\n\nPrevious: {from} | Current: ✅ Done | Next: DONE\n\n🎉 **All phases complete!**"
            ),
            json!({"advanced": true, "from": from, "to": "DONE"}),
        )
        .with_state(state, true),
        Ok(Advance::Moved { from, state: new }) => {
            let Some(active) = resolve(&new, defs) else {
                return Answer::error(
                    "Error: could not resolve active workflow after advance.",
                    json!({}),
                );
            };
            let old_len = state.current_path.len();
            let new_len = new.current_path.len();
            let verb = if new_len > old_len {
                format!(
                    "Entered subworkflow '{}'",
                    active.breadcrumb.last().map_or("", |c| c.name.as_str())
                )
            } else if new_len < old_len {
                format!("Exited subworkflow, returning to {}", active.breadcrumb_path())
            } else {
                "Advanced".into()
            };
            let p = active.phase;
            let text = format!(
                "✓ {verb}: {from} → {e} {n}\n\nPrevious: {from} | Current: {e} {n} | Next: {next}\n\n**What to do in {n}:**\n{i}",
                e = p.emoji,
                n = p.name,
                next = next_display(&active, defs),
                i = instructions(&active, defs),
            );
            let details = json!({"advanced": true, "from": from, "to": p.name});
            Answer::plain(text, details).with_state(new.clone(), true)
        }
    }
}

fn looped(state: &WorkflowState, defs: &Definitions) -> Answer {
    match loop_scope(state, defs) {
        Err(message) if message == "Looping is disabled for this workflow." => Answer::error(
            format!("⚠️ {message}"),
            json!({"active": true, "error": message}),
        ),
        Err(message) => Answer::error(message, json!({})),
        Ok(new) => {
            let answer = match resolve(&new, defs) {
                None => Answer::error(
                    "Error: could not resolve active workflow after loop.",
                    json!({}),
                ),
                Some(active) => Answer::plain(
                    format!(
                        "🔄 Looped '{}' back to: {} {}\n\n**What to do in {}:**\n{}",
                        active.breadcrumb.last().map_or("", |c| c.name.as_str()),
                        active.phase.emoji,
                        active.phase.name,
                        active.phase.name,
                        instructions(&active, defs)
                    ),
                    json!({"looped": true, "to": active.phase.name}),
                ),
            };
            answer.with_state(new.clone(), true)
        }
    }
}

fn cancel(state: &WorkflowState) -> Answer {
    if !state.cancel_pending {
        let pending = WorkflowState {
            cancel_pending: true,
            ..state.clone()
        };
        return Answer::plain(
            format!(
                "⚠️ **Confirm cancellation** of workflow \"{}\"?\nCall workflow_step with action='cancel' again to confirm. This cannot be undone.",
                state.task_description
            ),
            json!({"active": true, "cancelPending": true}),
        )
        .with_state(pending, false);
    }
    Answer::plain(
        format!("Workflow cancelled: \"{}\"", state.task_description),
        json!({"active": false, "cancelled": true}),
    )
    .with_state(cancelled(state), true)
}

/// Runs one action against the runtime (without applying the new state).
pub fn answer(rt: &Runtime, action: &str) -> Answer {
    let state = rt.state.as_ref().filter(|s| s.active);
    let Some(state) = state else {
        return match action {
            "loop" => Answer::plain("No active workflow to loop.", json!({"active": false})),
            "cancel" => Answer::plain("No active workflow to cancel.", json!({"active": false})),
            "next" | "status" => Answer::plain(NO_WORKFLOW, json!({"active": false})),
            other => Answer::error(format!("Unknown action: {other}"), json!({})),
        };
    };
    // Any action but a second `cancel` withdraws a pending cancellation.
    let mut state = state.clone();
    if action != "cancel" {
        state.cancel_pending = false;
    }
    let mut answer = match action {
        "status" => status(&state, &rt.defs),
        "next" => next(&state, &rt.defs),
        "loop" => looped(&state, &rt.defs),
        "cancel" => cancel(&state),
        other => Answer::error(format!("Unknown action: {other}"), json!({})),
    };
    if answer.new_state.is_none() && rt.state.as_ref().is_some_and(|s| s.cancel_pending) {
        answer.new_state = Some((Some(state), false));
    }
    answer
}

/// Registers `workflow_step`.
pub fn register(pi: &mut Registrar, plugin: &Plugin) -> Result<()> {
    let p = plugin.clone();
    let spec = ToolSpec {
        name: "workflow_step".into(),
        label: "Workflow Step".into(),
        description: DESCRIPTION.into(),
        parameters: parameters(),
    };
    pi.tool(spec, move |_id, params, ctx| {
        let action = params.get("action").as_str().unwrap_or("").to_owned();
        let mut rt = p.lock();
        let answer = answer(&rt, &action);
        if let Some((state, save)) = answer.new_state {
            if save && let Some(state) = &state {
                persist(ctx.plugin(), state)?;
                p.set_status(ctx, None)?;
            }
            rt.state = state;
        }
        // Error answers too are returned, not thrown (`isError: false`), as the original's.
        Ok(json!({
            "content": [{"type": "text", "text": answer.text}],
            "details": answer.details,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::initial_state;
    use crate::state::tests::nested;

    fn apply(rt: &mut Runtime, action: &str) -> Answer {
        let a = answer(rt, action);
        if let Some((state, _)) = a.new_state.clone() {
            rt.state = state;
        }
        a
    }

    #[test]
    fn actions_through_a_nested_workflow() {
        let defs = nested();
        let mut rt = Runtime {
            state: Some(initial_state(&defs, "top", "Ship", 0, "wf-0-a".into())),
            defs,
        };
        let s = apply(&mut rt, "status");
        assert_eq!(
            s.text,
            "**Workflow:** Top (top)\n**Task ID:** wf-0-a\n**Description:** Ship\n**Phase:** 📋 Plan [1/3]\n**Started:** 1970-01-01T00:00:00.000Z\n\n**What to do:**\nDo Plan.\n\n**Available profiles:** (none)"
        );
        let a = apply(&mut rt, "next");
        assert_eq!(
            a.text,
            "✓ Entered subworkflow 'Inner': Plan → 📖 Read\n\nPrevious: Plan | Current: 📖 Read | Next: Note\n\n**What to do in Read:**\nDo Read."
        );
        apply(&mut rt, "next");
        let a = apply(&mut rt, "next");
        assert!(a.text.starts_with("✓ Exited subworkflow, returning to Top > Review: Note → 🔧 Fix\n\nPrevious: Note | Current: 🔧 Fix | Next: Verify"), "{}", a.text);
        let a = apply(&mut rt, "loop");
        assert!(
            a.text.starts_with("🔄 Looped 'Inner' back to: 📖 Read"),
            "{}",
            a.text
        );
        let c = apply(&mut rt, "cancel");
        assert!(
            c.text
                .starts_with("⚠️ **Confirm cancellation** of workflow \"Ship\"?")
        );
        assert!(!c.new_state.as_ref().unwrap().1, "not persisted");
        apply(&mut rt, "status");
        let c = apply(&mut rt, "cancel");
        assert!(
            c.text.starts_with("⚠️ **Confirm cancellation**"),
            "status withdrew it"
        );
        let c = apply(&mut rt, "cancel");
        assert_eq!(c.text, "Workflow cancelled: \"Ship\"");
        let s = rt.state.clone().unwrap();
        assert!(!s.active && s.cancelled);
        assert_eq!(apply(&mut rt, "next").text, NO_WORKFLOW);
        assert_eq!(apply(&mut rt, "loop").text, "No active workflow to loop.");
    }

    #[test]
    fn done() {
        let defs = nested();
        let mut rt = Runtime {
            state: Some(initial_state(&defs, "inner", "x", 0, "id".into())),
            defs,
        };
        apply(&mut rt, "next");
        let a = apply(&mut rt, "next");
        assert_eq!(
            a.text,
            "✓ Advanced: Note → DONE\n\nPrevious: Note | Current: ✅ Done | Next: DONE\n\n🎉 **All phases complete!**"
        );
        assert!(!rt.state.unwrap().active);
    }
}
