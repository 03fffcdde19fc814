//! The load pipeline: discover -> read -> trust -> open (shadow copy, ABI check) -> init.
//! One bad plugin never stops the others: each failure becomes an entry in `errors`.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::guards::display::escape;
use crate::library::{cache_dir, open, read_plugin_file};
use crate::plugin::LoadedPlugin;
use crate::plugin::registrations::is_builtin_command;
use crate::plugin_files::discover::{DiscoveryOptions, Origin, SourceError, discover};
use crate::plugin_files::settings::Settings;
use crate::plugin_files::trust::{TrustState, TrustStore};

/// A plugin that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadError {
    /// The plugin's path (or the settings file's).
    pub path: String,
    /// What went wrong and what to do.
    pub error: String,
    /// Whether the plugin was named on the command line (`--hook`, `-e`): `list` and
    /// `inspect` then exit non-zero, and `--strict` stops a session.
    #[serde(skip)]
    pub named: bool,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.error)
    }
}

impl From<SourceError> for LoadError {
    fn from(e: SourceError) -> Self {
        LoadError {
            path: e.path,
            error: e.error,
            named: false,
        }
    }
}

/// Something the user should know about a plugin source that did not stop it loading: a
/// project entry set aside because it names one of the user's own plugins, say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadWarning {
    /// The file the warning is about.
    pub path: String,
    /// What happened, in one line.
    pub warning: String,
}

/// A project plugin that was found but not loaded because it is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Untrusted {
    /// The plugin's path.
    pub path: String,
    /// Where it came from.
    pub source: Origin,
    /// Its current SHA-256.
    pub sha256: String,
    /// New, or changed since it was trusted.
    pub trust: TrustState,
    /// The command that trusts it.
    #[serde(rename = "trustCommand")]
    pub trust_command: String,
}

/// Everything a load produced, in load order.
#[derive(Default)]
pub struct LoadReport {
    /// Loaded plugins.
    pub plugins: Vec<LoadedPlugin>,
    /// Plugins that failed, and broken settings files.
    pub errors: Vec<LoadError>,
    /// Project plugins waiting for trust.
    pub untrusted: Vec<Untrusted>,
    /// Warnings about sources (a plugin's own warnings are on the plugin).
    pub warnings: Vec<LoadWarning>,
    /// The settings files read (project first).
    pub settings: Vec<Settings>,
}

/// What loading one discovered candidate gave, in discovery order (see
/// [`load_candidates`]).
pub struct CandidateOutcome {
    /// The candidate's path as discovered.
    pub path: PathBuf,
    /// Where it came from.
    pub origin: Origin,
    /// The plugin, its untrusted state, or why it did not load.
    pub outcome: Result<Loaded, String>,
}

/// Discovers the plugins and loads every loadable candidate (each within `hookTimeout`),
/// keeping discovery order. The report holds what discovery found wrong (broken settings,
/// shadowed entries) and the settings read; its `plugins`, `errors` for candidates and
/// `untrusted` are left to the caller (see [`load_all`], and the reload in `crate::lifecycle::reload`,
/// which keeps a running instance where its new version failed).
pub fn load_candidates(options: &DiscoveryOptions) -> (LoadReport, Vec<CandidateOutcome>) {
    let discovery = discover(options);
    let report = LoadReport {
        errors: discovery.errors.into_iter().map(LoadError::from).collect(),
        warnings: discovery
            .shadowed
            .into_iter()
            .chain(discovery.declined)
            .map(|s| LoadWarning {
                path: s.path,
                warning: s.error,
            })
            .collect(),
        settings: discovery.settings,
        ..LoadReport::default()
    };
    let needs_trust = discovery
        .candidates
        .iter()
        .any(|c| c.origin.needs_trust() && c.problem.is_none());
    let trust = if needs_trust {
        Some(TrustStore::load(&options.agent_dir))
    } else {
        None
    };
    let cache = cache_dir(&options.agent_dir);
    // Isolated plugins start (and subscribe) in parallel with the others: the bus puts what
    // the plugins did on it during their inits back in load order at the end.
    let bus_load = crate::services::event_bus::LoadOrder::begin();
    note_packages(&discovery.candidates);
    crate::isolate::note_discovery(&options.cwd, &report.settings);
    crate::sandbox::note_discovery(&options.cwd, &options.agent_dir, &report.settings);
    let (limit, _) = crate::plugin_files::settings::timeouts(&report.settings);
    let mut outcomes = Vec::new();
    let mut loadable = Vec::new();
    for candidate in discovery.candidates {
        match candidate.problem {
            Some(error) => outcomes.push(CandidateOutcome {
                path: candidate.path,
                origin: candidate.origin,
                outcome: Err(error),
            }),
            None => {
                loadable.push((candidate.path, candidate.origin));
                // A placeholder, replaced below by the load's outcome.
                outcomes.push(CandidateOutcome {
                    path: PathBuf::new(),
                    origin: candidate.origin,
                    outcome: Err(String::new()),
                });
            }
        }
    }
    let loadable = Arc::new(loadable);
    let trust = Arc::new(trust);
    // Plugins that run in a child process (isolated, or confined by a grant) start their
    // children all at once, each on a thread of its own: none of their code runs in this
    // process and each child waits at most `hookTimeout` for its plugin, so their start-ups
    // overlap instead of adding up. The others load here one after another, as always.
    let (in_children, in_process): (Vec<usize>, Vec<usize>) = (0..loadable.len()).partition(|&i| {
        let path = &loadable[i].0;
        crate::isolate::selects(path) || crate::isolate::confines(path).unwrap_or(true)
    });
    let in_process = Arc::new(in_process);
    let work = {
        let (loadable, trust, cache) = (Arc::clone(&loadable), Arc::clone(&trust), cache.clone());
        let in_process = Arc::clone(&in_process);
        move |j: usize| {
            let (path, origin) = &loadable[in_process[j]];
            load_candidate(path, *origin, trust.as_ref().as_ref(), &cache)
        }
    };
    let mut by_index: Vec<Option<Result<Loaded, String>>> =
        (0..loadable.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let children: Vec<_> = in_children
            .iter()
            .map(|&i| {
                let (path, origin) = &loadable[i];
                let (trust, cache) = (&trust, &cache);
                let thread = std::thread::Builder::new()
                    .name("pi-hooks-load-child".into())
                    .spawn_scoped(scope, move || {
                        load_candidate(path, *origin, trust.as_ref().as_ref(), cache)
                    });
                (i, thread)
            })
            .collect();
        for (j, outcome) in each_within(in_process.len(), limit, work)
            .into_iter()
            .enumerate()
        {
            by_index[in_process[j]] = outcome;
        }
        for (i, thread) in children {
            let (path, origin) = &loadable[i];
            by_index[i] = Some(match thread {
                Ok(thread) => thread
                    .join()
                    .unwrap_or_else(|_| Err("its loader thread panicked".to_owned())),
                // No thread to be had: start it here.
                Err(_) => load_candidate(path, *origin, trust.as_ref().as_ref(), &cache),
            });
        }
    });
    let mut loaded = loadable
        .iter()
        .zip(by_index)
        .map(|((path, origin), outcome)| CandidateOutcome {
            path: path.clone(),
            origin: *origin,
            outcome: outcome.unwrap_or_else(|| {
                let error = overran(limit);
                if crate::observe::trace::on() {
                    let shown = path.display().to_string();
                    crate::observe::trace::load(
                        &shown,
                        limit,
                        crate::observe::trace::LoadResult::Failed(&error),
                    );
                }
                Err(error)
            }),
        });
    for slot in outcomes.iter_mut() {
        if slot.path.as_os_str().is_empty()
            && let Some(next) = loaded.next()
        {
            *slot = next;
        }
    }
    bus_load.end(
        outcomes
            .iter()
            .filter_map(|o| match &o.outcome {
                Ok(Loaded::Plugin(plugin)) => Some(plugin.state().slot()),
                _ => None,
            })
            .collect(),
    );
    (report, outcomes)
}

/// Pins each installed package's library to the SHA-256 its install record (or manifest)
/// gives, and hands its accepted capabilities to the sandbox as its grant: what the
/// candidates of a discovery say about packages, before any of them is read.
pub fn note_packages(candidates: &[crate::plugin_files::discover::Candidate]) {
    for package in candidates.iter().filter_map(|c| c.package.as_ref()) {
        pin_package_sha256(&package.library, &package.sha256, package);
        crate::sandbox::note_package(
            &package.library,
            &package.name,
            &package.version,
            package.capabilities.as_ref(),
        );
    }
}

/// Discovers and loads every plugin.
pub fn load_all(options: &DiscoveryOptions) -> LoadReport {
    let (mut report, outcomes) = load_candidates(options);
    for candidate in outcomes {
        let path = candidate.path.display().to_string();
        match candidate.outcome {
            Ok(Loaded::Plugin(plugin)) => report.plugins.push(*plugin),
            Ok(Loaded::Untrusted(state, sha256)) => {
                report
                    .untrusted
                    .push(untrusted(path, candidate.origin, state, sha256))
            }
            Err(error) => report.errors.push(LoadError {
                path,
                error,
                named: candidate.origin == Origin::Cli,
            }),
        }
    }
    note_conflicts(&mut report.plugins);
    report
}

/// The entry for a project plugin that is not trusted.
pub fn untrusted(path: String, origin: Origin, state: TrustState, sha256: String) -> Untrusted {
    Untrusted {
        trust_command: format!("pi-hooks trust {}", shell_quote(&path)),
        path,
        source: origin,
        sha256,
        trust: state,
    }
}

/// Adds a warning to each plugin that loses a registration conflict (pi's rules, reference
/// section 5.4): a command named like a built-in is skipped; of two plugins with the same
/// command or flag, the first in load order wins and the later one is told who took it.
/// Every plugin stays loaded.
pub fn note_conflicts(plugins: &mut [LoadedPlugin]) {
    let mut commands: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut flags: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for at in 0..plugins.len() {
        let registrations = plugins[at].registrations();
        let mut warnings = Vec::new();
        for command in &registrations.commands {
            if is_builtin_command(&command.name) {
                warnings.push(format!(
                    "command /{} of plugin \"{}\" conflicts with the built-in command /{}; skipped",
                    command.name,
                    plugins[at].name(),
                    command.name
                ));
            } else if let Some(&first) = commands.get(&command.name) {
                warnings.push(format!(
                    "command /{} of plugin \"{}\" conflicts with plugin \"{}\" ({}), which registered it first; skipped",
                    command.name,
                    plugins[at].name(),
                    plugins[first].name(),
                    plugins[first].path
                ));
            } else {
                commands.insert(command.name.clone(), at);
            }
        }
        for flag in &registrations.flags {
            if let Some(&first) = flags.get(&flag.name) {
                warnings.push(format!(
                    "flag --{} of plugin \"{}\" conflicts with plugin \"{}\" ({}), which registered it first: its type and default apply, and both read the one value",
                    flag.name,
                    plugins[at].name(),
                    plugins[first].name(),
                    plugins[first].path
                ));
            } else {
                flags.insert(flag.name.clone(), at);
            }
        }
        plugins[at].warnings.extend(warnings);
    }
}

/// The error of a plugin whose load overran `limit`.
fn overran(limit: Duration) -> String {
    format!(
        "it did not finish loading within {} ms (hookTimeout): its init or a static initialiser never returned. The plugin was not loaded; its stuck code may keep running until the host exits",
        limit.as_millis()
    )
}

/// Runs `work(0)`, `work(1)`, ... in order on a worker thread and collects the results. One
/// that does not finish within `limit` yields `None`: it is abandoned (left running on its
/// thread, its result dropped when it returns), and a new worker goes on with the next. Plugin
/// code runs during a load (static initialisers, init), and a load that never returns must not
/// hang the host. One thread per call, not per item: a load costs microseconds.
///
/// The waiting thread wakes once, when the worker is done (or when the item in progress
/// overruns), not once per item. The results come back through a mutex and a condition
/// variable, not a channel: a channel's
/// first blocking receive registers a thread-local destructor, which glibc does under the
/// system loader's lock, and a static initialiser that never returns holds that lock for good
/// (see [`crate::library::system_loader_stuck`]).
fn each_within<T: Send + 'static>(
    count: usize,
    limit: Duration,
    work: impl Fn(usize) -> T + Send + Sync + 'static,
) -> Vec<Option<T>> {
    let work = Arc::new(work);
    let mut results: Vec<Option<T>> = Vec::with_capacity(count);
    while results.len() < count {
        let start = results.len();
        let progress = Arc::new(Progress::<T>::new());
        let worker = {
            let (work, progress) = (Arc::clone(&work), Arc::clone(&progress));
            move || {
                for i in start..count {
                    if !progress.start(i) || !progress.finish_one(work(i), i + 1 == count) {
                        return;
                    }
                }
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("pi-hooks-load".into())
            .spawn(worker)
        {
            // No thread to be had: load here, unbounded, rather than not at all.
            eprintln!("pi-hooks: cannot start a loader thread ({e}); loading without a time limit");
            results.extend((start..count).map(|i| Some(work(i))));
            break;
        }
        let (done, abandoned) = progress.wait(limit);
        results.extend(done.into_iter().map(Some));
        if abandoned {
            // Overran: skip this one, go on with a new worker.
            crate::library::note_overrun();
            results.push(None);
            if crate::library::system_loader_stuck() {
                // A new thread would block on the loader's lock (glibc takes it to register
                // thread-local destructors), and no plugin code can run any more (every open
                // is refused at once): finish here.
                let next = results.len();
                results.extend((next..count).map(|i| Some(work(i))));
            }
        }
    }
    results
}

/// What a loader worker and the thread waiting for it share.
struct Progress<T> {
    state: Mutex<ProgressState<T>>,
    /// Signalled once: when the worker has finished every item.
    done: Condvar,
}

struct ProgressState<T> {
    results: Vec<T>,
    /// The item in progress and when it started.
    current: Option<(usize, Instant)>,
    finished: bool,
    /// Set by the waiting thread when it gives up on the item in progress: the worker stops.
    abandoned: bool,
}

impl<T> Progress<T> {
    fn new() -> Self {
        Progress {
            state: Mutex::new(ProgressState {
                results: Vec::new(),
                current: None,
                finished: false,
                abandoned: false,
            }),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ProgressState<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The worker starts item `i`; `false` once it was abandoned (it should stop).
    fn start(&self, i: usize) -> bool {
        let mut state = self.lock();
        state.current = Some((i, Instant::now()));
        !state.abandoned
    }

    /// The worker hands an item's result over; `false` once it was abandoned.
    fn finish_one(&self, result: T, last: bool) -> bool {
        let mut state = self.lock();
        if state.abandoned {
            return false;
        }
        state.results.push(result);
        state.current = None;
        if last {
            state.finished = true;
            // The only wake-up of the waiting thread on the normal path.
            self.done.notify_one();
        }
        true
    }

    /// Waits until the worker finished, or until the item in progress has run for `limit`:
    /// then it is abandoned. Returns the results handed over, and whether it was abandoned.
    fn wait(&self, limit: Duration) -> (Vec<T>, bool) {
        let mut state = self.lock();
        loop {
            if state.finished {
                return (std::mem::take(&mut state.results), false);
            }
            let deadline = state
                .current
                .map_or_else(|| Instant::now() + limit, |(_, started)| started + limit);
            let now = Instant::now();
            if now >= deadline {
                state.abandoned = true;
                return (std::mem::take(&mut state.results), true);
            }
            state = self
                .done
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// What a load ([`load_one`]) did with a file.
pub enum Loaded {
    /// It loaded.
    Plugin(Box<LoadedPlugin>),
    /// It needs trust and is not trusted: its state and the SHA-256 of the bytes read. None
    /// of its code ran.
    Untrusted(TrustState, String),
}

/// Files whose bytes must have a given SHA-256 to load here (resolved path, hex, and the
/// package that recorded it with the records its verification is kept in, if any), set with
/// [`pin_sha256`] or [`pin_package_sha256`].
type Pin = (PathBuf, String, Option<PinnedPackage>);

/// The package a pin belongs to: its name, and the records (under the agent directory) that
/// keep when its library's bytes last matched.
#[derive(Clone)]
struct PinnedPackage {
    name: String,
    records: crate::packages::records::Records,
    /// The plugin its manifest names, which its library must say it is (a package pi
    /// installed; `None`: checked at its install by pi-hooks).
    plugin: Option<String>,
}
static PINS: std::sync::RwLock<Vec<Pin>> = std::sync::RwLock::new(Vec::new());

/// From now on, `path` loads in this process only if the bytes read have the SHA-256 `sha256`
/// (hex). A host that checked a file (its trust, its header) and hands it to a `pi-hooks
/// serve` child (`--isolate`) pins it there, so a file replaced in between is refused
/// instead of run unchecked.
pub fn pin_sha256(path: &Path, sha256: &str) {
    pin(path, sha256, None);
}

/// [`pin_sha256`] for the library of an installed package: a mismatch names the package and
/// says how to reinstall it; `records` keep when its bytes last matched (so an unchanged
/// file is not hashed at every start, `crate::packages::verified`).
pub fn pin_package_sha256(
    path: &Path,
    sha256: &str,
    package: &crate::packages::installed::PackagePlugin,
) {
    pin(
        path,
        sha256,
        Some(PinnedPackage {
            name: package.name.clone(),
            records: package.records.clone(),
            plugin: package.plugin.clone(),
        }),
    );
}

fn pin(path: &Path, sha256: &str, package: Option<PinnedPackage>) {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut pins = PINS.write().unwrap_or_else(|e| e.into_inner());
    pins.retain(|(p, _, _)| *p != path);
    pins.push((path, sha256.to_ascii_lowercase(), package));
}

/// The pin of `path`, if one was set.
fn pinned(path: &Path) -> Option<(String, Option<PinnedPackage>)> {
    let pins = PINS.read().unwrap_or_else(|e| e.into_inner());
    if pins.is_empty() {
        return None;
    }
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    pins.iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, sha, package)| (sha.clone(), package.clone()))
}

/// Reads a candidate once, checks trust on those bytes (when `origin` needs trust, against
/// `store`), and loads exactly those bytes. The plugin knows how long that took (its
/// [`crate::plugin::LoadTiming`]); with the hook trace on, the load is reported.
fn load_candidate(
    path: &Path,
    origin: Origin,
    store: Option<&Result<TrustStore, String>>,
    cache: &Path,
) -> Result<Loaded, String> {
    let started = Instant::now();
    let mut loaded = load_timed(path, origin, store, cache);
    let elapsed = started.elapsed();
    if let Ok(Loaded::Plugin(plugin)) = &mut loaded {
        plugin.set_load_time(elapsed);
    }
    if crate::observe::trace::on() {
        let shown = path.display().to_string();
        let result = match &loaded {
            Ok(Loaded::Plugin(plugin)) => crate::observe::trace::LoadResult::Loaded {
                name: plugin.name(),
                init: plugin.load_timing().init,
            },
            Ok(Loaded::Untrusted(..)) => crate::observe::trace::LoadResult::Untrusted,
            Err(error) => crate::observe::trace::LoadResult::Failed(error),
        };
        crate::observe::trace::load(&shown, elapsed, result);
    }
    loaded
}

fn load_timed(
    path: &Path,
    origin: Origin,
    store: Option<&Result<TrustStore, String>>,
    cache: &Path,
) -> Result<Loaded, String> {
    let file = read_plugin_file(path)?;
    if let Some((pin, package)) = pinned(path)
        && !match &package {
            Some(package) => {
                crate::packages::verified::matches_pin(&package.records, path, &file, &pin)
            }
            None => file.sha256() == pin,
        }
    {
        return Err(match package.map(|p| p.name) {
            Some(package) => format!(
                "the library of package {package} does not match the SHA-256 recorded when it was installed ({} now, {pin} recorded); it was not loaded. Reinstall the package (`pi-hooks update {package}`) or remove it",
                file.sha256()
            ),
            None => format!(
                "its bytes changed since the host checked them (SHA-256 {} now, {pin} checked); it was not loaded",
                file.sha256()
            ),
        });
    }
    if let Some((
        _,
        Some(PinnedPackage {
            name,
            plugin: Some(plugin),
            ..
        }),
    )) = pinned(path)
    {
        // A package pi installed: its library must be the plugin its manifest names before
        // any of it runs (a library that lies would load as another plugin).
        let what = format!("package {}", escape(&name));
        crate::packages::verify::plugin_info(
            &file.bytes,
            &plugin,
            &path.display().to_string(),
            &what,
        )?;
    }
    let trust = if origin.needs_trust() {
        let store = match store {
            Some(Ok(store)) => store,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err("the trust store was not read".to_owned()),
        };
        let canonical =
            std::fs::canonicalize(path).map_err(|e| format!("cannot resolve the path: {e}"))?;
        match store.state(&canonical, file.sha256()) {
            TrustState::Trusted => TrustState::Trusted,
            state => return Ok(Loaded::Untrusted(state, file.sha256().to_owned())),
        }
    } else {
        TrustState::NotRequired
    };
    if crate::isolate::selects(path) || crate::isolate::confines(path)? {
        // Its code runs in a child process (confined when it has a grant); the host keeps
        // a proxy in its place.
        let plugin = crate::isolate::load(&file, origin, trust)?;
        return Ok(Loaded::Plugin(Box::new(plugin)));
    }
    let library = open(&file, cache)?;
    let plugin = LoadedPlugin::init(
        library,
        path.display().to_string(),
        origin,
        trust,
        file.sha256_if_computed().map(str::to_owned),
    )?;
    Ok(Loaded::Plugin(Box::new(plugin)))
}

/// Loads one file from `origin` (trust checked against `store` when the origin needs it)
/// within the default `hookTimeout`.
pub fn load_one(
    path: &Path,
    origin: Origin,
    store: Option<Result<TrustStore, String>>,
    cache: &Path,
) -> Result<Loaded, String> {
    let limit = crate::plugin_files::settings::DEFAULT_HOOK_TIMEOUT;
    let (path, cache) = (path.to_path_buf(), cache.to_path_buf());
    let outcome = each_within(1, limit, move |_| {
        load_candidate(&path, origin, store.as_ref(), &cache)
    });
    outcome
        .into_iter()
        .next()
        .flatten()
        .unwrap_or_else(|| Err(overran(limit)))
}

/// Loads one named plugin file (no trust needed: the caller named it), within the default
/// `hookTimeout`.
pub fn load_file(path: &Path, cache: &Path) -> Result<LoadedPlugin, String> {
    match load_one(path, Origin::Cli, None, cache)? {
        Loaded::Plugin(plugin) => Ok(*plugin),
        Loaded::Untrusted(..) => Err("not trusted".to_owned()),
    }
}

/// Quotes `text` as one shell word that is safe to paste and means exactly `text`.
///
/// Plain text stays as it is; text with spaces, quotes or other shell characters goes in
/// single quotes. Text with a character `display::escape` would make visible (a control character,
/// a bidirectional or invisible one) cannot be shown raw: it is written in ANSI-C quoting
/// (`$'...'`, understood by bash, zsh and ksh), with those characters, the backslash, the
/// quote and `!` (history expansion) as `\xNN` escapes of their UTF-8 bytes, so the
/// command stays on one printable line and still names the exact file.
pub fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        return text.to_owned();
    }
    if matches!(escape(text), Cow::Borrowed(_)) {
        return format!("'{}'", text.replace('\'', r"'\''"));
    }
    let mut out = String::from("$'");
    let mut buf = [0u8; 4];
    for c in text.chars() {
        let one = c.encode_utf8(&mut buf);
        if matches!(c, '\\' | '\'' | '!') || matches!(escape(one), Cow::Owned(_)) {
            for byte in one.bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Where discovery starts from in this process: the current directory and agent directory.
/// Fails when the agent directory would be relative (see `crate::plugin_files::paths::agent_dir`).
pub fn default_options(
    cwd: PathBuf,
    explicit: Vec<String>,
    no_discovery: bool,
) -> Result<DiscoveryOptions, String> {
    Ok(DiscoveryOptions {
        cwd,
        agent_dir: crate::plugin_files::paths::agent_dir()?,
        explicit,
        no_discovery,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_keeps_plain_words_and_never_shows_a_control_character() {
        assert_eq!(
            shell_quote("/p/.pi/hooks/lib-x_1.so"),
            "/p/.pi/hooks/lib-x_1.so"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("/p/a b$(x).so"), "'/p/a b$(x).so'");
        assert_eq!(shell_quote("/p/it's.so"), r"'/p/it'\''s.so'");
        assert_eq!(
            shell_quote("/p/a\u{1b}[2J\r\n'!\\é.so"),
            r"$'/p/a\x1b[2J\x0d\x0a\x27\x21\x5cé.so'"
        );
        assert_eq!(shell_quote("/p/x\u{202e}.so"), r"$'/p/x\xe2\x80\xae.so'");
    }
}
