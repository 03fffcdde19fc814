//! The template engine (`{word}` placeholders) and the default templates, verbatim from the
//! original extension.

/// The default role instruction of the context prompt.
pub const DEFAULT_ROLE_INSTRUCTION: &str = "You are the ORCHESTRATOR for this workflow. You must NOT use the edit or write tools directly. All implementation work must be delegated to subagents via the delegate_to_subagents tool. Follow the phase instructions precisely.";

/// The default reminder at the end of the context prompt.
pub const DEFAULT_ADVANCE_REMINDER: &str = "When you finish this phase, call the workflow_step tool with action='next' to advance to the next phase. If you need to restart the current scope from the beginning, use action='loop'.";

/// The default reason of a blocked tool call.
pub const DEFAULT_BLOCK_REASON: &str = "[workflow] The tool \"{toolName}\" is blocked during the {phaseName} phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase.";

/// The default reminder sent when the agent stops before the workflow is done, verbatim from
/// pi-workflows (its line break after "current phase" included).
pub const DEFAULT_NOT_DONE_REMINDER: &str = "⚠️ The {workflowName} is still active. Current phase: {phaseEmoji} {phaseName}.\n\nYou must NOT stop yet. The workflow requires you to complete the current phase\nand call workflow_step to advance.\n\nCurrent phase instructions:\n{phaseInstructions}\n\nContinue working on the current phase and call workflow_step when done.";

/// The default message of a completed workflow.
pub const DEFAULT_COMPLETION_MESSAGE: &str = "✅ **{workflowName} Complete**\n\n**Task:** {taskDescription}\n**Task ID:** {taskId}\n**Phases completed:** {phaseCount}";

/// The default message of a cancelled workflow.
pub const DEFAULT_CANCELLED_MESSAGE: &str =
    "❌ **{workflowName} Cancelled**\n\n**Task:** {taskDescription}\n**Task ID:** {taskId}";

/// Replaces every `{word}` (word = `[A-Za-z0-9_]+`) whose key is in `vars` with its value,
/// literally and without recursion; unknown keys and other braces are left as they are.
pub fn resolve(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let word_len = after
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let value = (word_len > 0 && after.as_bytes().get(word_len) == Some(&b'}'))
            .then(|| {
                let key = &after[..word_len];
                vars.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
            })
            .flatten();
        match value {
            Some(value) => {
                out.push_str(value);
                rest = &after[word_len + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_known_keys_literally_and_keeps_the_rest() {
        let vars = [("name", "A $1 {x}"), ("x", "X")];
        assert_eq!(resolve("hi {name}!", &vars), "hi A $1 {x}!");
        assert_eq!(resolve("{x}{x}{unknown}", &vars), "XX{unknown}");
        assert_eq!(
            resolve("{ name: \"x\" } {} {", &vars),
            "{ name: \"x\" } {} {"
        );
        assert_eq!(resolve("{{x}}", &vars), "{X}");
    }

    #[test]
    fn block_reason_default_resolves() {
        let text = resolve(
            DEFAULT_BLOCK_REASON,
            &[("toolName", "bash"), ("phaseName", "Planning")],
        );
        assert_eq!(
            text,
            "[workflow] The tool \"bash\" is blocked during the Planning phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase."
        );
    }
}
