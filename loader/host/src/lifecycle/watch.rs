//! `--watch`: notices when a running plugin's file was rebuilt, deleted, or when a new
//! plugin file appears in a discovery folder, and reports each change once, only when the
//! file is complete.
//!
//! The watcher (the `notify` crate: inotify on Linux, FSEvents on macOS,
//! ReadDirectoryChangesW on Windows) watches *folders*, not files, without recursion: the
//! folder of every running plugin's file and the discovery folders ([`discovery_folders`]),
//! so a file replaced by rename (cargo, ld, editors' atomic saves) is seen like one written
//! in place. Events only mark a path as pending; a pending path is decided once it has been
//! quiet for the settle window ([`WatchConfig::settle`]): no event and the same size and
//! modification time (and inode) for that long.
//!
//! - It is gone: a running plugin's file is reported [`Change::Removed`]; anything else is
//!   forgotten (a build tool that deletes and re-creates the file never shows this, since
//!   the file is back before the window ends).
//! - It is there: its bytes are read once and must pass the host's library checks
//!   (`crate::library::check_object_header`: a library of this platform, not truncated).
//!   A file that fails them is still being written; it is decided again when it changes, or
//!   reported anyway after [`WatchConfig::give_up`] of quiet, so that a genuinely broken
//!   build gets its error shown (the reload then keeps the old version). A file whose
//!   SHA-256 equals the one last seen for that path (a `touch`, a no-op build) is not
//!   reported. Otherwise: [`Change::Modified`] for a running plugin's file,
//!   [`Change::Added`] for a new library file in a discovery folder.
//!
//! The decisions go to a callback on the watcher's own thread; the mode calls
//! [`crate::runner::Runner::apply_change`] there (or hands the change to its loop) and
//! shows the line. Project plugins found this way still need trust: the load refuses them
//! until they are trusted, and says so. The watcher follows its own decisions (a file it
//! reported as added is watched as a plugin from then on); after a `/reload`
//! ([`crate::runner::Runner::reload_all`]), which may change the set of files, replace it:
//! drop it and start a new one from [`WatchConfig::for_runner`].
//!
//! A plugin file that failed to load ([`WatchConfig::not_loaded`]: `--watch -e FILE` started
//! while FILE was half written, say) is decided at the start and whenever it changes, as a
//! new file is: once complete it is reported [`Change::Added`] and loaded. Until then the
//! runner lists it ([`crate::runner::Runner::not_loaded`]: the UI status and the trace).
//!
//! A discovery folder that does not exist yet is waited for: its nearest existing parent
//! is watched, and once the folder appears it is watched too and the library files already
//! in it are decided like new ones.
//!
//! Events can be missed: network and virtual file systems (NFS, 9p, some container and VM
//! mounts) deliver none, and a system out of inotify instances or watches refuses new
//! ones. So the deciding thread also polls, every [`POLL`]: it compares the stat of every
//! known plugin file and the library files of the discovery folders with what it saw last,
//! and a difference marks the path pending exactly as an event would. When the system
//! watcher cannot be created at all, polling alone does the job (with [`POLL`]'s latency).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use notify::{RecursiveMode, Watcher as _};

use crate::plugin_files::discover::DiscoveryOptions;
use crate::plugin_files::files::{MAX_PLUGIN_BYTES, read_regular};
use crate::plugin_files::paths::has_library_suffix;
use crate::runner::Runner;

/// A change the watcher decided on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A running plugin's file holds a new, complete build: reload it
    /// ([`Runner::reload_plugin`]).
    Modified(PathBuf),
    /// A new, complete library file in a discovery folder: load it ([`Runner::add_plugin`]).
    Added(PathBuf),
    /// A running plugin's file was deleted: unload it ([`Runner::remove_plugin`]).
    Removed(PathBuf),
}

impl Change {
    /// The file the change is about.
    pub fn path(&self) -> &Path {
        match self {
            Change::Modified(p) | Change::Added(p) | Change::Removed(p) => p,
        }
    }
}

/// What to watch and how patiently.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// The running plugins' files, each with the SHA-256 of the bytes that are running (when
    /// known): the same bytes again are no change.
    pub plugins: Vec<(PathBuf, Option<String>)>,
    /// Folders where a new library file is a new plugin (discovery folders).
    pub folders: Vec<PathBuf>,
    /// Plugin files that failed to load (half written when the host started, say): each is
    /// decided at the start and again whenever it changes, and reported as
    /// [`Change::Added`] once it is complete, so it is loaded then.
    pub not_loaded: Vec<PathBuf>,
    /// How long a file must stay quiet (no event, same size, modification time and inode)
    /// before it is decided. Default 150 ms.
    pub settle: Duration,
    /// How long a quiet file that fails the library checks waits before it is reported
    /// anyway (so a broken build is shown). Default 3 s.
    pub give_up: Duration,
    /// Whether to use the system's file events (inotify, FSEvents, ReadDirectoryChangesW)
    /// besides polling. Default true; false polls alone, every [`POLL`] (for file systems
    /// that deliver no events).
    pub system_events: bool,
}

/// The default settle window.
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(150);

/// The default wait before a quiet, broken file is reported anyway.
pub const DEFAULT_GIVE_UP: Duration = Duration::from_secs(3);

/// How often the files are also compared by polling (see the module documentation).
pub const POLL: Duration = Duration::from_millis(500);

impl WatchConfig {
    /// Watches what `runner` runs (each plugin's file, with the SHA-256 of its loaded bytes)
    /// and the discovery folders of `options` that exist.
    pub fn for_runner(runner: &Runner, options: &DiscoveryOptions) -> Self {
        WatchConfig {
            plugins: runner
                .plugins()
                .iter()
                .map(|p| (PathBuf::from(&p.path), Some(p.sha256().to_owned())))
                .collect(),
            folders: discovery_folders(options),
            not_loaded: runner
                .not_loaded()
                .into_iter()
                .map(|(path, _)| PathBuf::from(path))
                .collect(),
            settle: DEFAULT_SETTLE,
            give_up: DEFAULT_GIVE_UP,
            system_events: true,
        }
    }
}

/// The folders discovery scans for plugin files (see `crate::plugin_files::discover`):
/// `<cwd>/.pi/hooks`, `<cwd>/.pi/extensions`, `<agentDir>/hooks`, `<agentDir>/extensions`;
/// none with `--no-hooks`.
pub fn discovery_folders(options: &DiscoveryOptions) -> Vec<PathBuf> {
    if options.no_discovery {
        return Vec::new();
    }
    let project = options.cwd.join(".pi");
    vec![
        project.join("hooks"),
        project.join("extensions"),
        options.agent_dir.join("hooks"),
        options.agent_dir.join("extensions"),
    ]
}

/// A running watcher; dropping it stops it (the callback is not called afterwards).
pub struct Watcher {
    stop: Arc<AtomicBool>,
    wake: Sender<Option<PathBuf>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Dropped first: no more events.
    inner: Arc<Mutex<Option<notify::RecommendedWatcher>>>,
    /// The folders actually watched (shared with the deciding thread, which adds folders
    /// that appear).
    watched: Arc<Mutex<Vec<PathBuf>>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("watched", &self.watched())
            .finish()
    }
}

/// The system watcher and the folders it watches, as the deciding thread changes them.
struct Folders {
    inner: Arc<Mutex<Option<notify::RecommendedWatcher>>>,
    watched: Arc<Mutex<Vec<PathBuf>>>,
}

impl Folders {
    /// Watches `folder` (resolved) unless it already is; whether it is watched now.
    fn watch(&self, folder: &Path) -> bool {
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if watched.iter().any(|w| w == folder) {
            return true;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Some(inner) = inner.as_mut() else {
            return false;
        };
        if inner.watch(folder, RecursiveMode::NonRecursive).is_ok() {
            watched.push(folder.to_path_buf());
            return true;
        }
        false
    }
}

/// The nearest existing folder at or above `path`, resolved.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|a| a.is_dir())
        .and_then(|a| std::fs::canonicalize(a).ok())
}

/// A path waiting to be decided.
struct Pending {
    last_event: Instant,
    stat: Option<Stat>,
    quiet_since: Instant,
    /// The stat of the last check that failed the library checks (not decided again until
    /// the file changes, or `give_up`).
    failed_at: Option<Stat>,
}

/// What "the file did not change" compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

fn stat(path: &Path) -> Option<Stat> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some(Stat {
        len: meta.len(),
        modified: meta.modified().ok(),
        inode,
    })
}

/// `path` with its folder resolved (so events, which name the watched folder's path, and
/// plugin paths compare equal); the path itself when its folder cannot be resolved.
fn key(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or_else(|_| path.to_path_buf()),
        _ => path.to_path_buf(),
    }
}

/// What the deciding thread knows.
struct Known {
    /// Plugin files (by key): running ones, reported new ones, and deleted ones (whose
    /// return is reported as new): the path to report and the last SHA-256 seen (`None`:
    /// deleted).
    plugins: HashMap<PathBuf, (PathBuf, Option<String>)>,
    /// Watched discovery folders (resolved).
    folders: Vec<PathBuf>,
    /// Discovery folders that do not exist yet (as given).
    missing: Vec<PathBuf>,
}

impl Watcher {
    /// Starts watching; `on_change` gets every decision, on the watcher's thread, in order.
    /// A folder the system watcher cannot watch (or no system watcher at all) is covered by
    /// polling alone. Fails only when the deciding thread cannot be started.
    pub fn start(
        config: WatchConfig,
        on_change: impl FnMut(Change) + Send + 'static,
    ) -> Result<Watcher, String> {
        let (wake, events) = channel::<Option<PathBuf>>();
        let forward = wake.clone();
        // Without a system watcher (out of inotify instances, say), polling alone decides.
        let mut inner = config
            .system_events
            .then(|| {
                notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                    if let Ok(event) = event {
                        for path in event.paths {
                            let _ = forward.send(Some(path));
                        }
                    }
                })
                .ok()
            })
            .flatten();
        let mut folders: Vec<PathBuf> = Vec::new();
        for path in config
            .plugins
            .iter()
            .map(|(path, _)| path)
            .chain(&config.not_loaded)
        {
            if let Some(parent) = key(path).parent() {
                folders.push(parent.to_path_buf());
            }
        }
        let (present, missing): (Vec<&PathBuf>, Vec<&PathBuf>) =
            config.folders.iter().partition(|f| f.is_dir());
        let discovery: Vec<PathBuf> = present
            .iter()
            .filter_map(|f| std::fs::canonicalize(f).ok())
            .collect();
        folders.extend(discovery.iter().cloned());
        // A missing folder is waited for from its nearest existing parent.
        folders.extend(missing.iter().filter_map(|f| nearest_existing(f)));
        folders.sort();
        folders.dedup();
        let mut watched = Vec::new();
        for folder in folders {
            if let Some(inner) = inner.as_mut()
                && inner.watch(&folder, RecursiveMode::NonRecursive).is_ok()
            {
                watched.push(folder);
            }
        }
        let retry: Vec<PathBuf> = config.not_loaded.iter().map(|p| key(p)).collect();
        let known = Known {
            plugins: config
                .plugins
                .iter()
                .map(|(path, sha)| (key(path), (path.clone(), sha.clone())))
                // A file that failed to load counts as one whose return is new.
                .chain(
                    config
                        .not_loaded
                        .iter()
                        .map(|path| (key(path), (path.clone(), None))),
                )
                .collect(),
            folders: discovery,
            missing: missing.into_iter().cloned().collect(),
        };
        let shared = Folders {
            inner: Arc::new(Mutex::new(inner)),
            watched: Arc::new(Mutex::new(watched)),
        };
        let (inner, watched) = (Arc::clone(&shared.inner), Arc::clone(&shared.watched));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            let (settle, give_up) = (config.settle, config.give_up.max(config.settle));
            std::thread::Builder::new()
                .name("pi-hooks-watch".into())
                .spawn(move || {
                    decide_loop(
                        events, known, retry, shared, settle, give_up, stop, on_change,
                    )
                })
                .map_err(|e| format!("cannot start the watcher thread: {e}"))?
        };
        Ok(Watcher {
            stop,
            wake,
            thread: Some(thread),
            inner,
            watched,
        })
    }

    /// The folders being watched (resolved).
    pub fn watched(&self) -> Vec<PathBuf> {
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        drop(self.inner.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.stop.store(true, Ordering::Release);
        let _ = self.wake.send(None);
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

/// The deciding thread: collects event paths, decides quiet ones, calls `on_change`.
#[allow(clippy::too_many_arguments)]
fn decide_loop(
    events: Receiver<Option<PathBuf>>,
    known: Known,
    retry: Vec<PathBuf>,
    folders: Folders,
    settle: Duration,
    give_up: Duration,
    stop: Arc<AtomicBool>,
    mut on_change: impl FnMut(Change),
) {
    let mut seen = snapshot(&known);
    let known = Mutex::new(known);
    let mut pending: HashMap<PathBuf, Pending> = HashMap::new();
    // Files that failed to load are decided at once: one completed between its failed load
    // and this start would otherwise wait for a change that never comes.
    let start = Instant::now();
    for path in retry {
        if let Some(now) = stat(&path) {
            pending.insert(
                path,
                Pending {
                    last_event: start,
                    stat: Some(now),
                    quiet_since: start,
                    failed_at: None,
                },
            );
        }
    }
    let tick = (settle / 4).clamp(Duration::from_millis(5), Duration::from_millis(50));
    let mut next_poll = Instant::now() + POLL;
    while !stop.load(Ordering::Acquire) {
        let until_poll = next_poll.saturating_duration_since(Instant::now());
        let wait = if pending.is_empty() {
            until_poll
        } else {
            tick.min(until_poll)
        };
        match events.recv_timeout(wait) {
            Ok(Some(path)) => {
                let mut known_now = known.lock().unwrap_or_else(|e| e.into_inner());
                if !known_now.missing.is_empty() {
                    for appeared in look_for_missing(&mut known_now, &folders) {
                        let now = Instant::now();
                        pending.entry(appeared.clone()).or_insert(Pending {
                            last_event: now,
                            stat: stat(&appeared),
                            quiet_since: now,
                            failed_at: None,
                        });
                    }
                }
                drop(known_now);
                let path = key(&path);
                if interesting(&known.lock().unwrap_or_else(|e| e.into_inner()), &path) {
                    let now = Instant::now();
                    let entry = pending.entry(path.clone()).or_insert_with(|| Pending {
                        last_event: now,
                        stat: stat(&path),
                        quiet_since: now,
                        failed_at: None,
                    });
                    entry.last_event = now;
                }
                // Take every event already queued before deciding anything.
                continue;
            }
            Ok(None) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if stop.load(Ordering::Acquire) {
            return;
        }
        let now = Instant::now();
        if now >= next_poll {
            next_poll = now + POLL;
            let mut known_now = known.lock().unwrap_or_else(|e| e.into_inner());
            if !known_now.missing.is_empty() {
                look_for_missing(&mut known_now, &folders);
            }
            let current = snapshot(&known_now);
            drop(known_now);
            for (path, now_stat) in &current {
                if seen.get(path) != Some(now_stat) && !pending.contains_key(path) {
                    pending.insert(
                        path.clone(),
                        Pending {
                            last_event: now,
                            stat: *now_stat,
                            quiet_since: now,
                            failed_at: None,
                        },
                    );
                }
            }
            seen = current;
        }
        let mut decided = Vec::new();
        for (path, entry) in pending.iter_mut() {
            let current = stat(path);
            if current != entry.stat {
                entry.stat = current;
                entry.quiet_since = now;
                entry.failed_at = None;
                continue;
            }
            let quiet = now.duration_since(entry.quiet_since.max(entry.last_event));
            if quiet < settle {
                continue;
            }
            if entry.failed_at.is_some() && entry.failed_at == current && quiet < give_up {
                continue;
            }
            let mut known = known.lock().unwrap_or_else(|e| e.into_inner());
            match decide(&mut known, path, quiet >= give_up) {
                Decision::Wait => entry.failed_at = current,
                Decision::Drop => decided.push((path.clone(), None)),
                Decision::Report(change) => decided.push((path.clone(), Some(change))),
            }
        }
        for (path, change) in decided {
            pending.remove(&path);
            // Decided: the next poll compares with this state.
            seen.insert(path.clone(), stat(&path));
            if let Some(change) = change {
                on_change(change);
            }
        }
    }
}

/// What polling compares: the stat of every known plugin file (`None`: gone) and of every
/// library file in the known discovery folders.
fn snapshot(known: &Known) -> HashMap<PathBuf, Option<Stat>> {
    let mut files: HashMap<PathBuf, Option<Stat>> = known
        .plugins
        .keys()
        .map(|path| (path.clone(), stat(path)))
        .collect();
    for folder in &known.folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        for path in entries.flatten().map(|e| folder.join(e.file_name())) {
            if has_library_suffix(&path) && !files.contains_key(&path) {
                let now = stat(&path);
                files.insert(path, now);
            }
        }
    }
    files
}

/// Watches the missing discovery folders that exist now (returning the library files
/// already in them) and the nearest existing parents of the others.
fn look_for_missing(known: &mut Known, folders: &Folders) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut still_missing = Vec::new();
    for folder in std::mem::take(&mut known.missing) {
        let resolved = folder
            .is_dir()
            .then(|| std::fs::canonicalize(&folder).ok())
            .flatten();
        match resolved {
            Some(resolved) => {
                // Polled even when the system watcher refuses it.
                folders.watch(&resolved);
                if let Ok(entries) = std::fs::read_dir(&resolved) {
                    found.extend(
                        entries
                            .flatten()
                            .map(|e| resolved.join(e.file_name()))
                            .filter(|p| has_library_suffix(p)),
                    );
                }
                known.folders.push(resolved);
            }
            _ => {
                if let Some(parent) = nearest_existing(&folder) {
                    folders.watch(&parent);
                }
                still_missing.push(folder);
            }
        }
    }
    known.missing = still_missing;
    found
}

/// Whether an event about `path` can matter: a running plugin's file, or a library file in
/// a discovery folder.
fn interesting(known: &Known, path: &Path) -> bool {
    known.plugins.contains_key(path)
        || (has_library_suffix(path)
            && path
                .parent()
                .is_some_and(|parent| known.folders.iter().any(|f| f == parent)))
}

enum Decision {
    /// Not complete yet: decide again when it changes (or after `give_up`).
    Wait,
    /// Nothing to report.
    Drop,
    /// Report this.
    Report(Change),
}

/// Decides a quiet path (see the module documentation).
fn decide(known: &mut Known, path: &Path, gave_up: bool) -> Decision {
    let bytes = match read_regular(path, MAX_PLUGIN_BYTES) {
        Ok(bytes) => bytes,
        Err(_) if stat(path).is_none() => {
            return match known.plugins.get_mut(path) {
                Some((shown, last @ Some(_))) => {
                    *last = None;
                    Decision::Report(Change::Removed(shown.clone()))
                }
                _ => Decision::Drop,
            };
        }
        // There but unreadable (permissions, not a regular file): let the load say why.
        Err(_) => Vec::new(),
    };
    let complete = !bytes.is_empty() && crate::library::check_object_header(&bytes).is_ok();
    if !complete && !gave_up {
        return Decision::Wait;
    }
    let sha = crate::plugin_files::trust::sha256_hex(&bytes);
    match known.plugins.get_mut(path) {
        Some((_, Some(last))) if *last == sha => Decision::Drop,
        Some((shown, last @ Some(_))) => {
            *last = Some(sha);
            Decision::Report(Change::Modified(shown.clone()))
        }
        Some((shown, last)) => {
            *last = Some(sha);
            Decision::Report(Change::Added(shown.clone()))
        }
        None => {
            known
                .plugins
                .insert(path.to_path_buf(), (path.to_path_buf(), Some(sha)));
            Decision::Report(Change::Added(path.to_path_buf()))
        }
    }
}
