//! The host's own diagnostics, as `tracing` events: a plugin's `log` lines (target
//! [`PLUGIN_LOG`], the plugin's name in the field `plugin`) and the host's warnings about a
//! call it refused (target `pi_hooks`). `PI_HOOKS_LOG` (`debug`, `info`, `warn`, `error`;
//! default `warn`) is the level below which they are dropped: the `pi-hooks` binary's
//! subscriber applies it as a level filter and writes the lines as they always were
//! (`[NAME] LEVEL: TEXT`, `[pi-hooks] TEXT`, see `crate::cli::trace_output`).
//!
//! A program that embeds the host and installs a `tracing` subscriber of its own gets these
//! events like any other; one that installs none gets the same lines on stderr, filtered by
//! `PI_HOOKS_LOG` ([`log_level`]), so a plugin's log stays visible in its own tests.

use pi_hooks_abi::ffi::{PI_LOG_DEBUG, PI_LOG_INFO, PI_LOG_WARN};
use tracing::Level;
use tracing::level_filters::LevelFilter;

/// The `tracing` target of a plugin's `log` lines.
pub const PLUGIN_LOG: &str = "pi_hooks::plugin_log";

/// `PI_HOOKS_LOG` as a level filter: `debug`, `info`, `warn`, `error` (also `trace` and
/// `off`, as `tracing` spells them); anything else, or nothing, is `warn`.
pub fn log_level() -> LevelFilter {
    std::env::var("PI_HOOKS_LOG")
        .ok()
        .and_then(|value| value.trim().parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::WARN)
}

/// The `tracing` level of a plugin's `PI_LOG_*` (above `PI_LOG_ERROR`: error).
fn plugin_level(level: u32) -> Level {
    match level {
        PI_LOG_DEBUG => Level::DEBUG,
        PI_LOG_INFO => Level::INFO,
        PI_LOG_WARN => Level::WARN,
        _ => Level::ERROR,
    }
}

/// The label a plugin's log line shows for `level` (`debug`, `info`, `warn`, `error`).
pub fn level_label(level: Level) -> &'static str {
    match level {
        Level::TRACE => "trace",
        Level::DEBUG => "debug",
        Level::INFO => "info",
        Level::WARN => "warn",
        Level::ERROR => "error",
    }
}

/// Whether nobody installed a subscriber: the host writes its diagnostics itself then.
fn no_subscriber() -> bool {
    !tracing::dispatcher::has_been_set()
}

/// A plugin's `log` call: `text` at `level` (a `PI_LOG_*`) from the plugin named `plugin`.
pub(crate) fn plugin_log(plugin: &str, level: u32, text: &str) {
    let level = plugin_level(level);
    if no_subscriber() {
        if log_level() >= level {
            eprintln!("[{plugin}] {}: {text}", level_label(level));
        }
        return;
    }
    match level {
        Level::DEBUG => tracing::debug!(target: PLUGIN_LOG, plugin, "{text}"),
        Level::INFO => tracing::info!(target: PLUGIN_LOG, plugin, "{text}"),
        Level::WARN => tracing::warn!(target: PLUGIN_LOG, plugin, "{text}"),
        _ => tracing::error!(target: PLUGIN_LOG, plugin, "{text}"),
    }
}

/// A warning of the host's own (a plugin's call it refused, and why).
pub(crate) fn warn(message: &str) {
    if no_subscriber() {
        if log_level() >= Level::WARN {
            eprintln!("[pi-hooks] {message}");
        }
        return;
    }
    tracing::warn!(target: "pi_hooks", "{message}");
}
