//! claude-hooks: runs the command hooks of Claude Code's settings files
//! (`~/.claude/settings.json`, `.claude/settings.json`, `.claude/settings.local.json`) with
//! Claude Code's contract (JSON on stdin, exit codes 0 / 2 / other, JSON output), each
//! Claude Code event on the pi event that matches it. See README.md for the table.
//!
//! Modules, in the order an event flows through them: [`config`] (the files, merged; trust
//! in [`trust`]), [`matcher`], [`tools`] (pi's tools in Claude Code's names), [`run`]
//! (the commands, through the host's `exec`, within [`limit`]), [`outcome`] (their answers, combined), and
//! [`events`] (each pi event's handler).

pub mod config;
pub mod events;
pub mod limit;
pub mod matcher;
pub mod outcome;
pub mod run;
pub mod tools;
pub mod trust;

use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(
    name: "claude-hooks",
    version: env!("CARGO_PKG_VERSION"),
    init: init,
    description: "Runs Claude Code's command hooks from .claude/settings.json with Claude Code's contract",
);

fn init(pi: &mut Registrar) -> Result<()> {
    events::register(pi)
}
