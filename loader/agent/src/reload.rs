//! `/reload` in the agent: the `/reload` prompt, RPC `reload` and a plugin command's
//! `reload` all come here. The runner reloads every plugin in pi's order
//! (`pi_hooks_host::lifecycle::reload`); the agent then takes the settings it uses from the re-read files and
//! merges its tool list again. Reports follow the mode's error rules: the summary and one line
//! per plugin on stderr, each failure as an `Extension error` (an `extension_error` line in
//! JSON and RPC mode) with the event `reload`.

use pi_hooks_host::guards::display::escape;
use pi_hooks_host::lifecycle::reload::ReloadAllReport;
use pi_hooks_host::runner::ExtensionError;

use super::{Agent, Shared};

/// Why `/reload` is refused during a run.
pub(super) const BUSY: &str =
    "cannot reload while the agent is running; wait for the run to end or abort it, then reload";

/// Watches the plugins' files (`--watch`) for as long as it lives.
pub(super) struct Watching {
    _watcher: pi_hooks_host::lifecycle::watch::Watcher,
}

impl Agent {
    /// Reloads every plugin (pi's `/reload`). Refused while a run is in progress, and in a
    /// host started without plugin discovery.
    pub fn reload(&mut self) -> Result<ReloadAllReport, String> {
        let outcome = self.reload_now();
        self.drain_runs();
        outcome
    }

    /// `--watch`: from now on, a running plugin whose file is rebuilt is reloaded alone (a
    /// new file in a discovery folder is loaded, a deleted one unloaded), each with a line
    /// on stderr (`reloaded NAME VERSION from PATH in N ms`); a failed reload is an
    /// `Extension error` naming what still runs. Refused without plugin discovery.
    pub fn watch(&mut self) -> Result<(), String> {
        use pi_hooks_host::lifecycle::watch::{WatchConfig, Watcher};
        let Some(options) = self.core.config.discovery.clone() else {
            return Err("this host was started without plugin discovery: nothing to watch".into());
        };
        let runner = self.core.runner.clone();
        let config = WatchConfig::for_runner(&runner, &options);
        let watcher = Watcher::start(config, move |change| {
            let path = change.path().display().to_string();
            match runner.apply_change(&change, &options) {
                Ok(done) => {
                    runner.note_load(&path, Ok(()));
                    let mut lines = vec![format!("pi-hooks: {}", done.line())];
                    lines.extend(
                        done.warnings
                            .iter()
                            .map(|w| format!("pi-hooks:   warning: {}", escape(w))),
                    );
                    let mut err = std::io::stderr().lock();
                    for line in lines {
                        let _ = std::io::Write::write_all(&mut err, format!("{line}\n").as_bytes());
                    }
                }
                Err(error) => {
                    runner.emit_error(&ExtensionError {
                        extension_path: error.path.clone(),
                        event: "reload".into(),
                        error: error.to_string(),
                    });
                    // Missing while no instance of it runs (a failed rebuild keeps the old).
                    let running = runner.plugins().iter().any(|p| {
                        pi_hooks_host::lifecycle::reload::same_plugin_path(&p.path, change.path())
                    });
                    if !running {
                        runner.note_load(&path, Err(&error.error));
                    }
                }
            }
        })?;
        self.watching = Some(Watching { _watcher: watcher });
        Ok(())
    }

    pub(super) fn reload_now(&mut self) -> Result<ReloadAllReport, String> {
        if self.core.shared.is_streaming() {
            return Err(BUSY.into());
        }
        let Some(options) = self.core.config.discovery.clone() else {
            return Err("this host was started without plugin discovery: nothing to reload".into());
        };
        // Statuses and widgets are cleared first: the new instances set theirs again in
        // `session_start`.
        if let Some(ui) = Shared::lock(&self.core.shared.ui).clone() {
            ui.reset();
        }
        let report = self.core.runner.reload_all(&options);
        let runner = &self.core.runner;
        runner.set_not_loaded(
            report
                .errors
                .iter()
                .filter(|e| {
                    pi_hooks_host::plugin_files::paths::has_library_suffix(std::path::Path::new(
                        &e.path,
                    )) && !runner.plugins().iter().any(|p| p.path == e.path)
                })
                .map(|e| (e.path.clone(), e.error.clone()))
                .collect(),
        );
        // Settings are read again, as pi does on reload: the compaction settings and the
        // hook timeouts.
        self.core.config.compaction =
            pi_hooks_host::plugin_files::settings::compaction(&report.settings);
        let (hook, tool_call) = pi_hooks_host::plugin_files::settings::timeouts(&report.settings);
        self.core.runner.set_timeouts(hook, tool_call);
        self.core.tools();
        if self.watching.is_some() {
            // The watcher follows the new set (its files and the bytes now running).
            self.watching = None;
            if let Err(error) = self.watch() {
                eprintln!("pi-hooks: --watch: {}", escape(&error));
            }
        }
        let runner = &self.core.runner;
        for error in &report.errors {
            runner.emit_error(&ExtensionError {
                extension_path: error.path.clone(),
                event: "reload".into(),
                error: error.error.clone(),
            });
        }
        for untrusted in &report.untrusted {
            runner.emit_error(&ExtensionError {
                extension_path: untrusted.path.clone(),
                event: "reload".into(),
                error: format!(
                    "skipped project plugin ({}); trust it with: pi-hooks trust {}",
                    untrusted.trust.describe(),
                    untrusted.path
                ),
            });
        }
        let mut lines = vec![format!("pi-hooks: {}", report.line())];
        for (plugin, fresh) in &report.plugins {
            let what = if *fresh {
                "reloaded"
            } else {
                "kept (its new version failed)"
            };
            lines.push(format!(
                "pi-hooks:   {what} {} {} from {}",
                escape(plugin.name()),
                escape(plugin.version()),
                escape(&plugin.path)
            ));
        }
        for gone in &report.unloaded {
            lines.push(format!("pi-hooks:   unloaded {}", escape(gone)));
        }
        for warning in &report.warnings {
            lines.push(format!(
                "pi-hooks:   warning: {}: {}",
                escape(&warning.path),
                escape(&warning.warning)
            ));
        }
        let mut err = std::io::stderr().lock();
        for line in lines {
            let _ = std::io::Write::write_all(&mut err, format!("{line}\n").as_bytes());
        }
        Ok(report)
    }
}
