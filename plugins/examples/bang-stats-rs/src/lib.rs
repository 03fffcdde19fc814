//! bang-stats (Rust): a `!!` input prefix for "answer briefly", and a `/stats` command with
//! the counts of inputs and tool calls (behaviour: plugins/examples/bang-stats-c/README.md).

use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(name: "bang-stats", version: env!("CARGO_PKG_VERSION"), init: init);

fn init(pi: &mut Registrar) -> Result<()> {
    let (inputs, calls) = (Shared::new(0u64), Shared::new(0u64));
    let counted = inputs.clone();
    pi.on("input", move |event, _ctx| {
        counted.with(|n| *n += 1);
        let text = event.get("text").as_str().unwrap_or_default();
        Ok(text
            .strip_prefix("!!")
            .map(|rest| format!("{}\n\n(Answer briefly.)", rest.trim_start_matches(' '))))
    })?;
    let seen = calls.clone();
    pi.on("tool_call", move |_event, _ctx| {
        seen.with(|n| *n += 1);
        Ok(())
    })?;
    pi.command(
        "stats",
        "Counts of inputs and tool calls",
        move |_args, ctx| {
            let text = format!("inputs: {}, tool calls: {}", inputs.get(), calls.get());
            ctx.ui().notify(&text, Notify::Info)
        },
    )
}
