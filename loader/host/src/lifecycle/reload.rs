//! Hot reload (docs/reload.md "Hot reload"): replacing plugin instances in a running [`Runner`] without
//! a gap, without a mix, and without losing the working version when the new one is bad.
//!
//! # What a mode calls
//!
//! - [`Runner::reload_all`] for `/reload`, the RPC `reload` command and `ctx.reload()`:
//!   pi 0.73.1's order:
//!   `session_shutdown {reason:"reload"}` on the old instances in load order, rediscovery and
//!   a fresh load of every plugin, one atomic swap, the old instances retired, then
//!   `session_start {reason:"reload"}` and `resources_discover {cwd, reason:"reload"}` on the
//!   new set. The [`ReloadAllReport`] has the lines to show, the settings re-read, and the
//!   resource paths the plugins returned. Flag values are process-wide and kept.
//! - [`Runner::reload_plugin`] (a watched file changed), [`Runner::add_plugin`] (a new file in
//!   a discovery folder) and [`Runner::remove_plugin`] (a plugin file was deleted): one
//!   plugin at a time, the others untouched. The replaced or removed instance gets
//!   `session_shutdown {reason:"reload"}`, a new instance `session_start {reason:"reload"}`
//!   and `resources_discover {reason:"reload"}`, each sent to that instance alone.
//! - [`Runner::apply_change`] takes a [`crate::lifecycle::watch::Change`] from the `--watch`
//!   watcher ([`crate::lifecycle::watch::Watcher`]) and calls the right one of the three.
//!
//! Every operation returns how long it took, for the "reloaded X from Y in Z ms" line
//! ([`Reloaded::line`], [`ReloadError`]'s `Display`). After any successful operation the
//! runner's [`Runner::generation`] has grown: the agent rebuilds its tool list from
//! [`Runner::plugins`] when it sees a new generation (plugin tools of a retired instance
//! answer "not called: the plugin was retired").
//!
//! ```no_run
//! use std::sync::Arc;
//! use pi_hooks_host::lifecycle::watch::{WatchConfig, Watcher};
//! # fn demo(
//! #     runner: Arc<pi_hooks_host::runner::Runner>,
//! #     options: pi_hooks_host::plugin_files::discover::DiscoveryOptions,
//! # ) -> Result<(), String> {
//! // `/reload`: one summary line, then what failed.
//! let report = runner.reload_all(&options);
//! eprintln!("{}", report.line());
//! for error in &report.errors {
//!     eprintln!("{error}");
//! }
//! // `--watch`: one line per change ("reloaded gate 0.3.2 from /p/libgate.so in 0.3 ms",
//! // or "reload of /p/libgate.so failed: ...; still running: gate 0.3.1 ...").
//! let (target, opts) = (Arc::clone(&runner), options.clone());
//! let watcher = Watcher::start(WatchConfig::for_runner(&runner, &options), move |change| {
//!     match target.apply_change(&change, &opts) {
//!         Ok(done) => eprintln!("{}", done.line()),
//!         Err(error) => eprintln!("{error}"),
//!     }
//! })?;
//! // Keep `watcher` for the session; dropping it stops watching.
//! # drop(watcher);
//! # Ok(())
//! # }
//! ```
//!
//! Never call these from inside a plugin call (a handler, a command, a tool): the swap waits
//! for dispatches still running on the old set, and retiring a plugin waits for its call in
//! progress. `ctx.reload()` is terminal in pi (`await ctx.reload(); return;`): run the reload
//! after the command returned.
//!
//! # Keep the old version on failure
//!
//! The new version is read once, checked (library header, ABI, trust for project plugins),
//! copied privately, opened and initialised beside the running one (the same pipeline as a
//! start-up load, `crate::lifecycle::load`). Only when all of that succeeded is the plugin set swapped.
//! Any failure (truncated file, missing entry symbol, ABI mismatch, init error, a project
//! plugin whose bytes changed since it was trusted) leaves the old instance in place and
//! answering, and the error names the file, the reason, and what is still running.
//!
//! # Retiring the old version
//!
//! After the swap no dispatch can reach the old instance: a dispatch takes the plugin set
//! once ([`crate::runner`]), and the swap waits (up to [`crate::runner::DRAIN_LIMIT`]) for
//! the dispatches still running on the old set. Then [`LoadedPlugin::retire`] runs: no new
//! call enters, its timers are cancelled and its `exec` children killed, its event-bus
//! subscriptions removed (the teardown `crate::services::timers`, `crate::services::exec` and
//! `crate::services::event_bus` register with `PluginState::on_retire`), a call still inside it
//! finishes on the old code (the call lock), then its `shutdown` and cleanups run. Its
//! commands, tools, renderers and flags disappear with it, since every lookup goes through
//! the current set.
//!
//! # Unload policy: retired libraries stay mapped
//!
//! A retired library is never closed (`dlclose`): closing a library that registered
//! thread-local destructors (any Rust cdylib that used `thread_local!`, including through
//! std) crashes or is silently ignored on glibc, and macOS refuses it; a callback pointer
//! kept by a thread the plugin started would also point into unmapped code. Each reload maps
//! a new private copy (a sealed memfd on Linux, a uniquely named file elsewhere, see
//! `crate::library::shadow`), so a reload costs the new library's size in address space; the memfd
//! of a retired instance is closed and file copies are deleted as soon as they are mapped.
//! Restart the host to return that memory. (Each load also takes one of the 65536 plugin
//! handle slots of a process, `crate::guards::handles::MAX_PLUGIN_INSTANCES`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::library::cache_dir;
use crate::lifecycle::load::{
    CandidateOutcome, LoadError, LoadWarning, Loaded, Untrusted, load_candidates, load_one,
    untrusted,
};
use crate::plugin::LoadedPlugin;
use crate::plugin_files::discover::{DiscoveryOptions, Origin, discover};
use crate::plugin_files::settings::Settings;
use crate::plugin_files::trust::TrustStore;
use crate::runner::Runner;
use crate::runner::events::DiscoveredResources;

/// What a single-plugin operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadKind {
    /// A running plugin was replaced by its new build.
    Replaced,
    /// A new plugin was loaded.
    Added,
    /// A plugin was unloaded.
    Removed,
}

/// A successful single-plugin operation.
#[derive(Debug, Clone)]
pub struct Reloaded {
    /// What happened.
    pub kind: ReloadKind,
    /// The plugin's name (the new instance's; the removed one's for [`ReloadKind::Removed`]).
    pub name: String,
    /// The plugin's version, likewise.
    pub version: String,
    /// The file, as discovered.
    pub path: String,
    /// From reading the file to the new handlers answering (the swap included, the events
    /// sent afterwards not).
    pub elapsed: Duration,
    /// The new instance's warnings (unknown event names, registration limit).
    pub warnings: Vec<String>,
    /// What the new instance returned from `resources_discover {reason:"reload"}`.
    pub resources: DiscoveredResources,
    /// The plugin-set generation now running.
    pub generation: u64,
}

impl Reloaded {
    /// The line a mode shows: `reloaded NAME VERSION from PATH in N.N ms` (or `loaded` /
    /// `unloaded`), with the plugin's text escaped for a terminal.
    pub fn line(&self) -> String {
        let verb = match self.kind {
            ReloadKind::Replaced => "reloaded",
            ReloadKind::Added => "loaded",
            ReloadKind::Removed => "unloaded",
        };
        format!(
            "{verb} {} {} from {} in {:.1} ms",
            crate::guards::display::escape(&self.name),
            crate::guards::display::escape(&self.version),
            crate::guards::display::escape(&self.path),
            self.elapsed.as_secs_f64() * 1000.0
        )
    }
}

/// A failed single-plugin operation: nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadError {
    /// The file.
    pub path: String,
    /// Why (and what to do).
    pub error: String,
    /// The instance still running in its place: `name version`, when there is one.
    pub still_running: Option<String>,
}

impl std::fmt::Display for ReloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "reload of {} failed: {}",
            crate::guards::display::escape(&self.path),
            crate::guards::display::escape(&self.error)
        )?;
        if let Some(running) = &self.still_running {
            write!(
                f,
                "; still running: {} (the version loaded before)",
                crate::guards::display::escape(running)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for ReloadError {}

/// What [`Runner::reload_all`] did.
#[derive(Default)]
pub struct ReloadAllReport {
    /// The plugins now running, in load order, each with `true` when it is a new instance
    /// and `false` when its new version failed and the old instance was kept.
    pub plugins: Vec<(Arc<LoadedPlugin>, bool)>,
    /// Plugins that failed to load (for a plugin that was running, see `kept`).
    pub errors: Vec<LoadError>,
    /// Paths of running plugins whose new version failed (an error in `errors`, or
    /// untrusted in `untrusted`): the old instance keeps running.
    pub kept: Vec<String>,
    /// Project plugins waiting for trust.
    pub untrusted: Vec<Untrusted>,
    /// Warnings about sources and about the new instances.
    pub warnings: Vec<LoadWarning>,
    /// The settings files re-read (project first): the mode applies what it takes from them.
    pub settings: Vec<Settings>,
    /// Plugins that were running and are not any more (their file is gone, or no longer
    /// named): `name version (path)`.
    pub unloaded: Vec<String>,
    /// What `resources_discover {reason:"reload"}` returned.
    pub resources: DiscoveredResources,
    /// From the first `session_shutdown` to the last `resources_discover`.
    pub elapsed: Duration,
    /// The plugin-set generation now running.
    pub generation: u64,
}

impl ReloadAllReport {
    /// The summary line a mode shows: `reloaded N plugins in X ms` plus, when some failed,
    /// how many kept their old version and how many failed.
    pub fn line(&self) -> String {
        let fresh = self.plugins.iter().filter(|(_, new)| *new).count();
        let mut line = format!(
            "reloaded {fresh} plugin{} in {:.1} ms",
            if fresh == 1 { "" } else { "s" },
            self.elapsed.as_secs_f64() * 1000.0
        );
        if !self.kept.is_empty() {
            line.push_str(&format!(
                "; {} kept the version loaded before (see the errors)",
                self.kept.len()
            ));
        }
        let failed = self
            .errors
            .iter()
            .map(|e| &e.path)
            .chain(self.untrusted.iter().map(|u| &u.path))
            .filter(|path| !self.kept.contains(path))
            .count();
        if failed > 0 {
            line.push_str(&format!("; {failed} failed to load"));
        }
        line
    }
}

/// Whether the plugin loaded from `loaded` (a path as discovered) is the file at `path`.
/// Compares the paths as given, then with their folders resolved (the file itself may be
/// gone, or replaced by another inode).
pub fn same_plugin_path(loaded: &str, path: &Path) -> bool {
    let loaded = Path::new(loaded);
    if loaded == path {
        return true;
    }
    let resolve = |p: &Path| -> Option<PathBuf> {
        let name = p.file_name()?;
        let parent = match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(parent).ok()?.join(name))
    };
    matches!((resolve(loaded), resolve(path)), (Some(a), Some(b)) if a == b)
}

/// `name version` of a running instance.
fn running(plugin: &LoadedPlugin) -> String {
    format!("{} {}", plugin.name(), plugin.version())
}

/// Loads `path` from `origin` as a start-up load would (trust, checks, private copy, init),
/// without touching the running set.
fn load_new(path: &Path, origin: Origin, agent_dir: &Path) -> Result<LoadedPlugin, String> {
    let store = origin.needs_trust().then(|| TrustStore::load(agent_dir));
    let cache = cache_dir(agent_dir);
    let loaded = load_one(path, origin, store, &cache);
    crate::library::shadow::sweep(&cache);
    match loaded? {
        Loaded::Plugin(plugin) => Ok(*plugin),
        Loaded::Untrusted(state, sha256) => {
            let short = sha256[..sha256.len().min(16)].to_owned();
            let command =
                untrusted(path.display().to_string(), origin, state, sha256).trust_command;
            Err(format!(
                "{} (SHA-256 {short}...); trust the new version with `{command}`, then reload (`/reload`; `--watch` does not look again until the file changes)",
                state.describe(),
            ))
        }
    }
}

impl Runner {
    /// Reloads the running plugin loaded from `path` (a watched file changed): loads the
    /// file's current bytes beside the running instance, and only if that succeeds sends
    /// `session_shutdown {reason:"reload"}` to the old instance, swaps the new one into the
    /// same place in load order, retires the old one, and sends `session_start
    /// {reason:"reload"}` and `resources_discover {reason:"reload"}` to the new one.
    ///
    /// `options` locate the agent directory (trust store, plugin cache). On failure nothing
    /// changed and the error names the file, the reason and what still runs.
    pub fn reload_plugin(
        &self,
        path: &Path,
        options: &DiscoveryOptions,
    ) -> Result<Reloaded, ReloadError> {
        let _one_at_a_time = self.reload_lock();
        self.reload_plugin_locked(path, options)
    }

    fn reload_plugin_locked(
        &self,
        path: &Path,
        options: &DiscoveryOptions,
    ) -> Result<Reloaded, ReloadError> {
        let started = Instant::now();
        let shown = path.display().to_string();
        let Some(old) = self
            .plugins()
            .into_iter()
            .find(|p| same_plugin_path(&p.path, path))
        else {
            return Err(ReloadError {
                path: shown,
                error: "no running plugin was loaded from this file; load it with /reload".into(),
                still_running: None,
            });
        };
        let new =
            load_new(Path::new(&old.path), old.origin, &options.agent_dir).map_err(|error| {
                ReloadError {
                    path: old.path.clone(),
                    error,
                    still_running: Some(running(&old)),
                }
            })?;
        let new = Arc::new(new);
        self.emit_to(
            &old,
            json!({"type": "session_shutdown", "reason": "reload"}),
        );
        let replaced = self.replace_plugins(|set| {
            set.plugins()
                .iter()
                .map(|p| {
                    if Arc::ptr_eq(p, &old) {
                        Arc::clone(&new)
                    } else {
                        Arc::clone(p)
                    }
                })
                .collect()
        });
        let elapsed = started.elapsed();
        Ok(self.started(new, ReloadKind::Replaced, elapsed, replaced.generation))
    }

    /// Loads a plugin file that appeared in a discovery folder (or is newly named in a
    /// settings file or on the command line): rediscovers to learn its origin and place in
    /// load order, loads it (a project plugin needs trust), inserts it there, and sends it
    /// `session_start {reason:"reload"}` and `resources_discover {reason:"reload"}`. A file
    /// that is already running is reloaded instead ([`Runner::reload_plugin`]).
    pub fn add_plugin(
        &self,
        path: &Path,
        options: &DiscoveryOptions,
    ) -> Result<Reloaded, ReloadError> {
        let _one_at_a_time = self.reload_lock();
        if self
            .plugins()
            .iter()
            .any(|p| same_plugin_path(&p.path, path))
        {
            return self.reload_plugin_locked(path, options);
        }
        let started = Instant::now();
        let fail = |error: String| ReloadError {
            path: path.display().to_string(),
            error,
            still_running: None,
        };
        let discovery = discover(options);
        crate::lifecycle::load::note_packages(&discovery.candidates);
        let order: Vec<PathBuf> = discovery
            .candidates
            .iter()
            .map(|c| c.path.clone())
            .collect();
        let Some(at) = discovery
            .candidates
            .iter()
            .position(|c| same_plugin_path(&c.path.display().to_string(), path))
        else {
            return Err(fail(
                "the file is not in a plugin folder, a settings file or the command line, so it is not loaded".into(),
            ));
        };
        let candidate = &discovery.candidates[at];
        if let Some(problem) = &candidate.problem {
            return Err(fail(problem.clone()));
        }
        let new = Arc::new(
            load_new(&candidate.path, candidate.origin, &options.agent_dir).map_err(fail)?,
        );
        let rank = |p: &LoadedPlugin| {
            order
                .iter()
                .position(|c| same_plugin_path(&p.path, c))
                .unwrap_or(usize::MAX)
        };
        let replaced = self.replace_plugins(|set| {
            let mut plugins = set.plugins().to_vec();
            let place = plugins
                .iter()
                .position(|p| rank(p) > at)
                .unwrap_or(plugins.len());
            plugins.insert(place, Arc::clone(&new));
            plugins
        });
        let elapsed = started.elapsed();
        Ok(self.started(new, ReloadKind::Added, elapsed, replaced.generation))
    }

    /// Unloads the running plugin loaded from `path` (its file was deleted): sends it
    /// `session_shutdown {reason:"reload"}`, removes it from the set and retires it.
    pub fn remove_plugin(&self, path: &Path) -> Result<Reloaded, ReloadError> {
        let _one_at_a_time = self.reload_lock();
        let started = Instant::now();
        let Some(old) = self
            .plugins()
            .into_iter()
            .find(|p| same_plugin_path(&p.path, path))
        else {
            return Err(ReloadError {
                path: path.display().to_string(),
                error: "no running plugin was loaded from this file".into(),
                still_running: None,
            });
        };
        self.emit_to(
            &old,
            json!({"type": "session_shutdown", "reason": "reload"}),
        );
        let replaced = self.replace_plugins(|set| {
            set.plugins()
                .iter()
                .filter(|p| !Arc::ptr_eq(p, &old))
                .cloned()
                .collect()
        });
        Ok(Reloaded {
            kind: ReloadKind::Removed,
            name: old.name().to_owned(),
            version: old.version().to_owned(),
            path: old.path.clone(),
            elapsed: started.elapsed(),
            warnings: Vec::new(),
            resources: DiscoveredResources::default(),
            generation: replaced.generation,
        })
    }

    /// Carries out a decision of the `--watch` watcher: a modified file of a plugin that is
    /// not running (its first load failed) is loaded as new, a new file that is already
    /// running is reloaded.
    pub fn apply_change(
        &self,
        change: &crate::lifecycle::watch::Change,
        options: &DiscoveryOptions,
    ) -> Result<Reloaded, ReloadError> {
        match change {
            crate::lifecycle::watch::Change::Modified(path)
            | crate::lifecycle::watch::Change::Added(path) => self.add_plugin(path, options),
            crate::lifecycle::watch::Change::Removed(path) => self.remove_plugin(path),
        }
    }

    /// `/reload`: every plugin, with pi's event order (see the module documentation). A
    /// running plugin whose file is still there but whose new version fails (load error,
    /// init error, untrusted change) keeps its old instance, which then also gets
    /// `session_start {reason:"reload"}`; a plugin whose file is gone (or no longer named
    /// anywhere) is unloaded.
    pub fn reload_all(&self, options: &DiscoveryOptions) -> ReloadAllReport {
        let _one_at_a_time = self.reload_lock();
        let started = Instant::now();
        let old_plugins = self.plugins();
        self.emit(json!({"type": "session_shutdown", "reason": "reload"}));
        let (found, outcomes) = load_candidates(options);
        crate::library::shadow::sweep(&cache_dir(&options.agent_dir));
        let mut report = ReloadAllReport {
            errors: found.errors,
            warnings: found.warnings,
            settings: found.settings,
            ..ReloadAllReport::default()
        };
        let mut fresh: Vec<LoadedPlugin> = Vec::new();
        // The new set in load order: a new instance (index into `fresh`) or a kept one.
        enum Entry {
            New(usize),
            Kept(Arc<LoadedPlugin>),
        }
        let mut order = Vec::new();
        for CandidateOutcome {
            path,
            origin,
            outcome,
        } in outcomes
        {
            let shown = path.display().to_string();
            let old = old_plugins
                .iter()
                .find(|p| same_plugin_path(&p.path, &path))
                .cloned();
            match outcome {
                Ok(Loaded::Plugin(plugin)) => {
                    order.push(Entry::New(fresh.len()));
                    fresh.push(*plugin);
                    continue;
                }
                Ok(Loaded::Untrusted(state, sha256)) => {
                    report
                        .untrusted
                        .push(untrusted(shown.clone(), origin, state, sha256));
                }
                Err(error) => report.errors.push(LoadError {
                    path: shown.clone(),
                    error,
                    named: origin == Origin::Cli,
                }),
            }
            // A file that is gone is unloaded; one that failed to load keeps its instance.
            if let Some(old) = old.filter(|_| path.exists()) {
                report.kept.push(shown);
                order.push(Entry::Kept(old));
            }
        }
        crate::lifecycle::load::note_conflicts(&mut fresh);
        let mut fresh: Vec<Option<Arc<LoadedPlugin>>> =
            fresh.into_iter().map(|p| Some(Arc::new(p))).collect();
        for plugin in fresh.iter().flatten() {
            report
                .warnings
                .extend(plugin.warnings.iter().map(|w| LoadWarning {
                    path: plugin.path.clone(),
                    warning: w.clone(),
                }));
        }
        let plugins: Vec<(Arc<LoadedPlugin>, bool)> = order
            .into_iter()
            .filter_map(|entry| match entry {
                Entry::New(i) => fresh[i].take().map(|p| (p, true)),
                Entry::Kept(p) => Some((p, false)),
            })
            .collect();
        let list: Vec<Arc<LoadedPlugin>> = plugins.iter().map(|(p, _)| Arc::clone(p)).collect();
        let replaced = self.replace_plugins(move |_| list);
        report.unloaded = replaced
            .retired
            .iter()
            .filter(|old| !plugins.iter().any(|(p, _)| p.path == old.path))
            .map(|old| format!("{} ({})", running(old), old.path))
            .collect();
        report.plugins = plugins;
        report.generation = replaced.generation;
        let cwd = self.config().cwd;
        self.emit(json!({"type": "session_start", "reason": "reload"}));
        report.resources = self.emit_resources_discover(&cwd, "reload");
        report.elapsed = started.elapsed();
        report
    }

    /// Sends the start events to a new instance and builds the result.
    fn started(
        &self,
        new: Arc<LoadedPlugin>,
        kind: ReloadKind,
        elapsed: Duration,
        generation: u64,
    ) -> Reloaded {
        self.emit_to(&new, json!({"type": "session_start", "reason": "reload"}));
        let cwd = self.config().cwd;
        let resources = self.emit_resources_discover_to(&new, &cwd, "reload");
        Reloaded {
            kind,
            name: new.name().to_owned(),
            version: new.version().to_owned(),
            path: new.path.clone(),
            elapsed,
            warnings: new.warnings.clone(),
            resources,
            generation,
        }
    }
}
