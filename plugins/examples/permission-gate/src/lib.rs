//! Blocks dangerous bash commands (`rm -rf`, `sudo`, `chmod 777`, ...). With a UI the user is
//! asked first; without one (print and JSON modes) the command is blocked.

use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(
    name: "permission-gate",
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    description: "Blocks dangerous bash commands unless the user allows them",
);

const DANGEROUS: &[&str] = &["rm -rf", "rm -fr", "sudo ", "chmod 777", "mkfs", "dd if="];

fn init(pi: &mut Registrar) -> Result<()> {
    pi.on_tool_call(|call, ctx| {
        let command = match (call.tool_name(), call.input_str("command")) {
            ("bash", Some(command)) => command,
            _ => return Ok(ToolCallDecision::Allow),
        };
        let Some(pattern) = DANGEROUS.iter().find(|p| command.contains(*p)) else {
            return Ok(ToolCallDecision::Allow);
        };
        if ctx.has_ui()
            && ctx
                .ui()
                .confirm("Dangerous command", &format!("Allow `{command}`?"))?
        {
            return Ok(ToolCallDecision::Allow);
        }
        Ok(ToolCallDecision::block(format!(
            "Blocked dangerous command ({pattern}): {command}"
        )))
    })
}
