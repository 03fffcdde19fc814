//! A count that survives `/reload`, `--watch` reloads and a restart, because it lives in the
//! session, not in the plugin's memory (a reloaded plugin starts with fresh memory): the Rust
//! twin of `plugins/examples/counter-c`.
//!
//! - `/count-rs` adds one to the count, appends it to the session as a `custom` entry
//!   `{"customType": "counter-rs", "data": {"count": N}}` and notifies `count: N`.
//! - `session_start` (reasons `startup`, also with `--continue`; `reload`; `new`, `resume`,
//!   `fork`) sets the count to `data.count` of the last `counter-rs` entry on the session's
//!   branch (0 when there is none) and notifies `counter-rs VERSION: restored count N on
//!   REASON`.
//!
//! VERSION is the crate's version, or `$COUNTER_RS_VERSION` when that was set at build time
//! (`COUNTER_RS_VERSION=2.0.0 cargo build -p counter`), so that two builds can be told apart
//! in a reload.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use pi_hooks_abi::sdk::prelude::*;

/// This build's version.
const VERSION: &str = match option_env!("COUNTER_RS_VERSION") {
    Some(version) => version,
    None => env!("CARGO_PKG_VERSION"),
};

pi_hooks_abi::plugin!(
    name: "counter-rs",
    version: VERSION,
    init: init,
    description: "A /count-rs whose count survives reloads and restarts",
);

/// The `customType` of the session entries that hold the count.
const CUSTOM_TYPE: &str = "counter-rs";

fn init(pi: &mut Registrar) -> Result<()> {
    // Shared by the two closures; the host never calls them at the same time, an atomic only
    // makes that sharing safe Rust.
    let count = Arc::new(AtomicI64::new(0));

    let restored = count.clone();
    pi.on("session_start", move |event, ctx| {
        let branch = ctx.session_branch()?;
        let value = last_count(&branch);
        restored.store(value, Ordering::Relaxed);
        let reason = event.get("reason").as_str().unwrap_or("?");
        ctx.ui().notify(
            &format!("counter-rs {VERSION}: restored count {value} on {reason}"),
            Notify::Info,
        )
    })?;

    pi.command(
        "count-rs",
        "Counts up by one; the count is kept in the session",
        move |_args, ctx| {
            let next = count.load(Ordering::Relaxed) + 1;
            // On disk before the call returns: the count only moves once it is saved.
            ctx.plugin()
                .append_entry(CUSTOM_TYPE, &json!({ "count": next }))?;
            count.store(next, Ordering::Relaxed);
            ctx.ui().notify(&format!("count: {next}"), Notify::Info)
        },
    )
}

/// `data.count` of the last `counter-rs` entry of `branch` (the session's entries, root
/// first), or 0 when there is none.
fn last_count(branch: &serde_json::Value) -> i64 {
    branch
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .filter(|entry| entry["type"] == "custom" && entry["customType"] == CUSTOM_TYPE)
        .find_map(|entry| entry["data"]["count"].as_i64())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::last_count;
    use serde_json::json;

    #[test]
    fn the_last_entry_of_its_own_type_wins() {
        let entry = |custom_type: &str, count: i64| json!({"type": "custom", "customType": custom_type, "data": {"count": count}});
        assert_eq!(last_count(&json!([])), 0);
        assert_eq!(last_count(&json!(null)), 0);
        let branch = json!([
            entry("counter-rs", 1),
            entry("counter-rs", 2),
            entry("counter", 7),
            {"type": "message", "message": {"role": "user"}},
        ]);
        assert_eq!(last_count(&branch), 2);
        // An entry without a count is passed over, not read as 0.
        let branch = json!([entry("counter-rs", 4), {"type": "custom", "customType": "counter-rs", "data": {}}]);
        assert_eq!(last_count(&branch), 4);
    }
}
