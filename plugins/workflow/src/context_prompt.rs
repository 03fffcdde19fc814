//! `buildContextPrompt`: the hidden `workflow:context` message injected before every agent
//! run, sections in the original's order.

use crate::definitions::{Definitions, PhaseDefinition, PhaseEntry};
use crate::state::Active;
use crate::templates::{DEFAULT_ADVANCE_REMINDER, DEFAULT_ROLE_INSTRUCTION, resolve};

/// The concrete phases of `phases`, depth first, with their path of indices.
fn flatten<'a>(
    defs: &'a Definitions,
    phases: &'a [PhaseEntry],
    prefix: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, &'a PhaseDefinition)>,
    depth: usize,
) {
    if depth > defs.iter().count() {
        return;
    }
    for (i, entry) in phases.iter().enumerate() {
        prefix.push(i);
        match entry {
            PhaseEntry::Phase(p) => out.push((prefix.clone(), p)),
            PhaseEntry::Subworkflow(key) => {
                if let Some(def) = defs.get(key) {
                    flatten(defs, &def.phases, prefix, out, depth + 1);
                }
            }
        }
        prefix.pop();
    }
}

/// The name of the entry after the current one, looking outward through the enclosing
/// scopes; `DONE` when the current phase is the last of the whole workflow.
pub fn next_phase_name(active: &Active<'_>, defs: &Definitions) -> String {
    for seg in active.state.current_path.iter().rev() {
        if let Some(entry) = defs
            .get(&seg.workflow_key)
            .and_then(|d| d.phases.get(seg.phase_index + 1))
        {
            return defs.entry_name(entry);
        }
    }
    "DONE".into()
}

/// The template variables of the context prompt.
pub fn variables(active: &Active<'_>, defs: &Definitions) -> Vec<(&'static str, String)> {
    let state = active.state;
    let index = active.innermost().phase_index;
    let previous = index
        .checked_sub(1)
        .and_then(|i| active.scope.phases.get(i))
        .map_or_else(|| "(start)".to_string(), |e| defs.entry_name(e));
    let blocked = active
        .phase
        .tools
        .as_ref()
        .and_then(|t| t.blacklist.as_ref())
        .filter(|b| !b.is_empty())
        .map_or_else(|| "(none)".to_string(), |b| b.join(", "));
    vec![
        ("workflowName", active.definition.name.clone()),
        ("workflowKey", state.workflow_key.clone()),
        ("description", state.task_description.clone()),
        ("taskId", state.task_id.clone()),
        ("phaseId", active.phase.id.clone()),
        ("phaseName", active.phase.name.clone()),
        ("previousPhaseName", previous),
        ("nextPhaseName", next_phase_name(active, defs)),
        ("blockedToolsList", blocked),
        ("toolName", "workflow_step".into()),
        ("breadcrumbPath", active.breadcrumb_path()),
        ("globalStepCount", state.global_step_count.to_string()),
    ]
}

/// The current phase's instructions with the template variables resolved (used everywhere
/// instructions are shown: the context prompt, the tool's answers, the not-done reminder).
pub fn instructions(active: &Active<'_>, defs: &Definitions) -> String {
    let vars = variables(active, defs);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    resolve(&active.phase.instructions, &vars)
}

/// A phase's profiles joined by `, `, or `(none)`.
pub fn profiles(phase: &PhaseDefinition) -> String {
    match &phase.available_profiles {
        Some(list) if !list.is_empty() => list.join(", "),
        _ => "(none)".into(),
    }
}

/// The full context prompt.
pub fn build(active: &Active<'_>, defs: &Definitions) -> String {
    let vars = variables(active, defs);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let def = active.definition;
    let state = active.state;
    let phase = active.phase;
    let index = active.innermost().phase_index;
    let progress = if state.current_path.len() == 1 {
        format!(
            "**Progress:** Step {} ({}/{} phases)",
            state.global_step_count,
            index + 1,
            def.phases.len()
        )
    } else {
        format!(
            "**Progress:** Step {} ({}/{} in current scope)",
            state.global_step_count,
            index + 1,
            active.scope.phases.len()
        )
    };
    let mut all = Vec::new();
    flatten(defs, &def.phases, &mut Vec::new(), &mut all, 0);
    // The current phase's position in the flattened tree: the path's indices, then zeros
    // for an un-entered leading subworkflow.
    let here: Vec<usize> = state.current_path.iter().map(|s| s.phase_index).collect();
    let steps: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(k, (at, p))| {
            let current = at.starts_with(&here) && at[here.len()..].iter().all(|i| *i == 0);
            let marker = if current { "▶" } else { " " };
            format!("{marker} {}. {} {}", k + 1, p.emoji, p.name)
        })
        .collect();
    let mut every_profile: Vec<&str> = Vec::new();
    for (_, p) in &all {
        for name in p.available_profiles.iter().flatten() {
            if !every_profile.contains(&name.as_str()) {
                every_profile.push(name);
            }
        }
    }
    let role = resolve(
        def.role_instruction
            .as_deref()
            .unwrap_or(DEFAULT_ROLE_INSTRUCTION),
        &vars,
    );
    let reminder = resolve(
        def.advance_reminder
            .as_deref()
            .unwrap_or(DEFAULT_ADVANCE_REMINDER),
        &vars,
    );
    let lines = [
        format!(
            "[Workflow path: {} ▸ {} {}]",
            active.breadcrumb_path(),
            phase.emoji,
            phase.name
        ),
        String::new(),
        role,
        String::new(),
        format!("**Task:** {}", state.task_description),
        format!("**Task ID:** {}", state.task_id),
        format!("**Current Phase:** {} {}", phase.emoji, phase.name),
        progress,
        String::new(),
        "**All Steps:**".into(),
        steps.join("\n"),
        String::new(),
        "**What to do in this phase:**".into(),
        resolve(&phase.instructions, &vars),
        String::new(),
        format!(
            "**Available subagent profiles for this phase:** {}",
            profiles(phase)
        ),
        format!("**All profiles:** {}", every_profile.join(", ")),
        String::new(),
        reminder,
    ];
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::nested;
    use crate::state::{Advance, advance, initial_state, resolve as resolve_state};

    #[test]
    fn linear_prompt_layout() {
        let defs = nested();
        let s = initial_state(&defs, "top", "Ship it", 1, "wf-1-a".into());
        let active = resolve_state(&s, &defs).unwrap();
        let text = build(&active, &defs);
        let expected = format!(
            "[Workflow path: Top ▸ 📋 Plan]\n\n{DEFAULT_ROLE_INSTRUCTION}\n\n**Task:** Ship it\n**Task ID:** wf-1-a\n**Current Phase:** 📋 Plan\n**Progress:** Step 0 (1/3 phases)\n\n**All Steps:**\n▶ 1. 📋 Plan\n  2. 📖 Read\n  3. 📝 Note\n  4. 🔧 Fix\n  5. ✅ Verify\n\n**What to do in this phase:**\nDo Plan.\n\n**Available subagent profiles for this phase:** (none)\n**All profiles:** \n\n{DEFAULT_ADVANCE_REMINDER}"
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn nested_prompt_uses_the_innermost_scope() {
        let defs = nested();
        let s = initial_state(&defs, "top", "t", 1, "id".into());
        let Advance::Moved { state: s, .. } = advance(&s, &defs).unwrap() else {
            panic!()
        };
        let Advance::Moved { state: s, .. } = advance(&s, &defs).unwrap() else {
            panic!()
        };
        let active = resolve_state(&s, &defs).unwrap();
        let text = build(&active, &defs);
        assert!(text.starts_with("[Workflow path: Top > Review > Inner ▸ 📝 Note]\n"));
        assert!(text.contains("**Progress:** Step 2 (2/2 in current scope)\n"));
        assert!(text.contains("  2. 📖 Read\n▶ 3. 📝 Note\n"));
        let vars = variables(&active, &defs);
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).unwrap().1.clone();
        assert_eq!(get("previousPhaseName"), "Read");
        assert_eq!(get("nextPhaseName"), "Fix");
        assert_eq!(get("breadcrumbPath"), "Top > Review > Inner");
    }
}
