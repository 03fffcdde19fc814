//! `/workflow <name> <description>` (start; asks before replacing an active workflow when
//! there is a UI) and `/cancel-workflow` (cancel at once; also stops a pending countdown).

use pi_hooks_abi::ffi::PiStr;
use pi_hooks_abi::sdk::Completion;
use pi_hooks_abi::sdk::prelude::*;

use crate::definitions::Definitions;
use crate::state::{WorkflowState, cancelled, initial_state, resolve, task_id};
use crate::templates::resolve as resolve_template;
use crate::{Plugin, countdown, load_definitions, now_ms, persist};

/// `/workflow`'s description.
pub const WORKFLOW_DESCRIPTION: &str =
    "Start a configured workflow. Usage: /workflow {name} {description}";
/// `/cancel-workflow`'s description.
pub const CANCEL_DESCRIPTION: &str =
    "Cancel the active workflow and jump to DONE. Bypasses the not-done reminder loop.";

/// Argument completions: the user-visible command names starting with `prefix`, from the
/// global and the project workflows (as loaded at the last session start or `/workflow`);
/// `{value, label}` only, both the command name, as the original returns them.
pub fn completions(defs: &Definitions, prefix: &str) -> Vec<Completion> {
    defs.iter()
        .filter(|(_, d)| !d.internal && d.command_name.starts_with(prefix))
        .map(|(_, d)| Completion {
            value: d.command_name.clone(),
            label: d.command_name.clone(),
            description: None,
        })
        .collect()
}

/// The session name for a description: prefix plus at most `max` characters, `…` if cut.
pub fn session_name(prefix: &str, max: usize, description: &str) -> String {
    let mut name: String = description.chars().take(max).collect();
    if description.chars().count() > max {
        name.push('…');
    }
    format!("{prefix}{name}")
}

/// Sets the session's display name (the SDK has no wrapper for this action yet).
fn set_session_name(handle: PluginHandle, name: &str) {
    let text = PiStr {
        ptr: name.as_ptr().cast(),
        len: name.len(),
    };
    // SAFETY: the host table and its actions table are valid for the plugin's lifetime.
    let actions = unsafe { &*handle.host().actions };
    let needed = std::mem::offset_of!(pi_hooks_abi::ffi::PiActionsApi, set_session_name)
        + std::mem::size_of::<usize>();
    if (actions.struct_size as usize) < needed {
        return;
    }
    // SAFETY: the host's table is large enough to hold `set_session_name` (checked above);
    // `text` borrows `name`, which outlives the call (the host copies it).
    let _ = unsafe { (actions.set_session_name)(handle.as_ptr(), text) };
}

/// The usage text listing the user-visible workflows.
pub fn usage(defs: &Definitions) -> String {
    let lines: Vec<String> = defs
        .iter()
        .filter(|(_, d)| !d.internal)
        .map(|(_, d)| format!("  {} — {}", d.command_name, d.name))
        .collect();
    format!(
        "Usage: /workflow {{name}} {{description}}\n\nAvailable workflows:\n{}",
        lines.join("\n")
    )
}

fn start(plugin: &Plugin, args: &str, ctx: &Context<'_>) -> Result<()> {
    let handle = ctx.plugin();
    let ui = ctx.ui();
    let args = args.trim();
    let (name, description) = match args.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (args, ""),
    };
    if name.is_empty() {
        let defs = load_definitions(handle, Some(ctx.cwd()));
        return ui.notify(&usage(&defs), Notify::Info);
    }
    if description.is_empty() {
        return ui.notify(
            &format!("Usage: /workflow {name} {{description}}"),
            Notify::Warning,
        );
    }
    let defs = load_definitions(handle, Some(ctx.cwd()));
    plugin.lock().defs = defs.clone();
    let Some((key, def)) = defs.by_command(name) else {
        let names: Vec<&str> = defs
            .iter()
            .filter(|(_, d)| !d.internal && !d.command_name.is_empty())
            .map(|(_, d)| d.command_name.as_str())
            .collect();
        let names = if names.is_empty() {
            "(none)".to_string()
        } else {
            names.join(", ")
        };
        return ui.notify(
            &format!("Unknown workflow: \"{name}\". Available: {names}"),
            Notify::Error,
        );
    };
    if def.internal {
        return ui.notify(
            &format!("\"{name}\" is a subworkflow that can only run as part of another workflow. It cannot be started directly."),
            Notify::Error,
        );
    }
    let current = plugin.lock().state.clone().filter(|s| s.active);
    if let Some(old) = current
        && ctx.has_ui()
    {
        let phase =
            resolve(&old, &defs).map_or_else(|| "unknown".to_string(), |a| a.phase.name.clone());
        let body = format!(
            "Phase: {phase}\nTask: {}\n\nStart a new one?",
            old.task_description
        );
        if !ui.confirm("Workflow already active", &body)? {
            return Ok(());
        }
    }
    let now = now_ms();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64)
        ^ u64::from(std::process::id());
    let state = initial_state(&defs, key, description, now, task_id(now, seed));
    countdown::stop(&plugin.countdown, handle, Some(ctx));
    persist(handle, &state)?;
    plugin.set_status(ctx, None)?;
    plugin.lock().state = Some(state.clone());
    set_session_name(
        handle,
        &session_name(
            def.session_name_prefix.as_deref().unwrap_or("Workflow: "),
            def.session_name_max_length.unwrap_or(50),
            description,
        ),
    );
    if let Some(first) = resolve(&state, &defs).map(|a| a.phase.clone()) {
        let profiles = crate::context_prompt::profiles(&first);
        let message = resolve_template(
            &def.initial_message,
            &[
                ("workflowName", &def.name),
                ("workflowKey", key),
                ("description", description),
                ("firstPhaseId", &first.id),
                ("firstPhaseName", &first.name),
                ("firstPhaseEmoji", &first.emoji),
                ("firstPhaseProfiles", &profiles),
            ],
        );
        handle.send_user_message(&message, pi_hooks_abi::ffi::PI_DELIVER_DEFAULT)?;
    }
    Ok(())
}

fn cancel(plugin: &Plugin, ctx: &Context<'_>) -> Result<()> {
    let handle = ctx.plugin();
    countdown::stop(&plugin.countdown, handle, Some(ctx));
    let Some(state) = plugin.lock().state.clone() else {
        return ctx
            .ui()
            .notify("No active workflow to cancel.", Notify::Info);
    };
    let done: WorkflowState = cancelled(&state);
    persist(handle, &done)?;
    plugin.set_status(ctx, None)?;
    handle.send_message(
        &json!({
            "customType": "workflow:complete",
            "content": format!(
                "❌ **Workflow Cancelled**\n\n**Task:** {}\n**Task ID:** {}",
                state.task_description, state.task_id
            ),
            "display": true,
        }),
        &json!({"triggerTurn": false}),
    )?;
    plugin.lock().state = None;
    ctx.ui().notify("Workflow cancelled.", Notify::Info)
}

/// Registers both commands.
pub fn register(pi: &mut Registrar, plugin: &Plugin) -> Result<()> {
    let p = plugin.clone();
    let known = plugin.clone();
    pi.command_with_completions(
        "workflow",
        WORKFLOW_DESCRIPTION,
        move |args, ctx| start(&p, args, ctx),
        move |prefix| completions(&known.lock().defs, prefix.trim_start()),
    )?;
    let p = plugin.clone();
    pi.command("cancel-workflow", CANCEL_DESCRIPTION, move |_args, ctx| {
        cancel(&p, ctx)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::nested;

    #[test]
    fn names_usage_and_completions() {
        assert_eq!(
            session_name("Workflow: ", 5, "héllo world"),
            "Workflow: héllo…"
        );
        assert_eq!(session_name("W: ", 50, "short"), "W: short");
        let mut defs = nested();
        defs = Definitions::from_entries(
            defs.iter()
                .map(|(k, d)| {
                    let mut d = d.clone();
                    d.internal = k == "inner";
                    (k.to_owned(), d)
                })
                .collect(),
        );
        assert_eq!(
            usage(&defs),
            "Usage: /workflow {name} {description}\n\nAvailable workflows:\n  top — Top\n  review — Review"
        );
        assert_eq!(
            completions(&defs, "re"),
            [Completion {
                value: "review".into(),
                label: "review".into(),
                description: None,
            }]
        );
        assert!(completions(&defs, "inn").is_empty());
    }
}
