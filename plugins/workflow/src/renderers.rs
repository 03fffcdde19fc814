//! Message renderers for `workflow:context`, `workflow:complete` and `workflow:countdown`:
//! plain lines (the host has no theme colours for plugins).

use pi_hooks_abi::sdk::prelude::*;

/// The lines of a custom message of `custom_type` with `content`.
pub fn render(custom_type: &str, content: &str) -> Option<Vec<String>> {
    match custom_type {
        "workflow:context" => Some(vec!["🔄 [Workflow Context injected]".into()]),
        "workflow:countdown" => Some(vec![format!("⏳ {content}")]),
        "workflow:complete" => Some(content.lines().map(str::to_owned).collect()),
        _ => None,
    }
}

/// Registers the three renderers.
pub fn register(pi: &mut Registrar) -> Result<()> {
    for custom_type in [
        "workflow:context",
        "workflow:countdown",
        "workflow:complete",
    ] {
        pi.message_renderer(custom_type, move |message, _expanded| {
            let content = message.get("content").as_str().unwrap_or("");
            Ok(render(custom_type, content))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn lines() {
        assert_eq!(
            render("workflow:context", "long hidden text").unwrap(),
            ["🔄 [Workflow Context injected]"]
        );
        assert_eq!(
            render("workflow:countdown", "Auto-continuing workflow in 3s...").unwrap(),
            ["⏳ Auto-continuing workflow in 3s..."]
        );
        assert_eq!(
            render("workflow:complete", "a\n\nb").unwrap(),
            ["a", "", "b"]
        );
        assert_eq!(render("other", "x"), None);
    }
}
