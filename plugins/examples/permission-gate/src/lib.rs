//! Blocks dangerous bash commands, as the "Shitty Permission Gate" example of pi's hook
//! documentation does: `rm -r…`/`rm --recursive`, `sudo`, and `chmod`/`chown … 777` (the
//! same three patterns, case-insensitive). With a UI (interactive, RPC) the user is asked with
//! `select("⚠️ Dangerous command:\n\n  <command>\n\nAllow?", ["Yes", "No"])` and the command
//! is blocked with "Blocked by user" unless the answer is "Yes". Without a UI (print and JSON
//! modes) it is blocked too; the reason then names the command, since nobody was asked.

use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(
    name: "permission-gate",
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    description: "Blocks dangerous bash commands unless the user allows them",
);

/// The choices of the dialog; only the first allows the command.
const CHOICES: [&str; 2] = ["Yes", "No"];

fn init(pi: &mut Registrar) -> Result<()> {
    pi.on_tool_call(|call, ctx| {
        let command = match (call.tool_name(), call.input_str("command")) {
            ("bash", Some(command)) => command,
            _ => return Ok(ToolCallDecision::Allow),
        };
        if !is_dangerous(command) {
            return Ok(ToolCallDecision::Allow);
        }
        if !ctx.has_ui() {
            return Ok(ToolCallDecision::block(format!(
                "Blocked dangerous command (no UI to ask): {command}"
            )));
        }
        let title = format!("⚠️ Dangerous command:\n\n  {command}\n\nAllow?");
        match ctx.ui().select(&title, &CHOICES)? {
            Some(0) => Ok(ToolCallDecision::Allow),
            _ => Ok(ToolCallDecision::block("Blocked by user")),
        }
    })
}

/// pi's three patterns: `/\brm\s+(-rf?|--recursive)/i`, `/\bsudo\b/i`,
/// `/\b(chmod|chown)\b.*777/i`.
fn is_dangerous(command: &str) -> bool {
    // ASCII lowercasing keeps byte offsets, so the word checks below stay aligned.
    let text = command.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let word = |at: usize| {
        bytes
            .get(at)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    };
    // Offsets of `needle` that start a word (`\b` before it: a word char after a non-word one).
    let starts = |needle: &'static str| {
        text.match_indices(needle)
            .map(|(at, _)| at)
            .filter(move |&at| at == 0 || !word(at - 1))
    };
    let rm = starts("rm").any(|at| {
        let rest = &text[at + 2..];
        let args = rest.trim_start();
        args.len() < rest.len() && (args.starts_with("-r") || args.starts_with("--recursive"))
    });
    let sudo = starts("sudo").any(|at| !word(at + 4));
    let mode = ["chmod", "chown"].iter().any(|name| {
        starts(name).any(|at| !word(at + name.len()) && text[at + name.len()..].contains("777"))
    });
    rm || sudo || mode
}

#[cfg(test)]
mod tests {
    use super::is_dangerous;

    #[test]
    fn pi_s_patterns() {
        for yes in [
            "rm -rf x",
            "rm -r x",
            "RM  -Rf /",
            "cd a && rm --recursive b",
            "sudo ls",
            "echo; SUDO",
            "chmod 777 f",
            "chown -R u f && x 777",
        ] {
            assert!(is_dangerous(yes), "{yes}");
        }
        for no in [
            "ls -la",
            "rm x",
            "rm -f x",
            "farm -rf",
            "pseudo x",
            "sudoku",
            "chmod 755 f",
            "777 chmod",
            "xchmod 777",
        ] {
            assert!(!is_dangerous(no), "{no}");
        }
    }
}
