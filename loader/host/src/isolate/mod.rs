//! Isolated plugins (`--isolate`): a chosen plugin runs in a `pi-hooks serve` child process
//! (the protocol of `docs/serve-protocol.md`) instead of inside the host, so a segfault,
//! `abort()`, stack overflow or hang in its native code ends or stalls only that child.
//!
//! The host keeps one in-process *proxy plugin* per isolated plugin, at the plugin's place
//! in the load order ([`proxy`]): it registers exactly what the child's `hello` lists (events,
//! commands with their completions, tools, flags, renderers, shortcuts) and holds the
//! child's event-bus subscriptions on the host's bus, forwards every call as the protocol's
//! request with the context the call sees (session file, mode, system prompt), and answers
//! the child's requests through the host's own services with the context of the call in
//! flight ([`child_requests`]). So an isolated plugin sees what it would in process; what
//! still differs is listed in [`proxy`]'s module doc. The runner sees an ordinary plugin,
//! so its combination rules and load order are untouched. The child and its client are in
//! [`child`], the ways their messages travel (shared-memory rings on Linux, JSON lines over
//! pipes) in [`transport`].
//!
//! Which plugins are isolated ([`Selection`]): all of them with `--isolate` (`run`, `rpc`), or
//! those a settings file selects with its `isolate` key (`true`, or a list of plugin file
//! names and paths). Discovery, trust and the library header check still happen in the host,
//! on the bytes it read, before a plugin is handed to a child. Session commands, `list` and
//! the `serve` a client starts (the pi bridge's) turn isolation on ([`enable`]), so a plugin
//! with a grant never runs unconfined when they load it; `inspect` runs no plugin code, and a
//! `serve` child (started with `--protocol-fd`) never isolates, so it never starts children
//! of its own.

pub mod child;
pub mod child_requests;
pub mod proxy;
pub mod transport;

pub use proxy::get_ready;

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::Duration;

use serde_json::Value;

use crate::library::{PluginFile, check_object_header};
use crate::plugin::LoadedPlugin;
use crate::plugin_files::discover::Origin;
use crate::plugin_files::settings::Settings;
use crate::plugin_files::trust::TrustState;

/// The `isolate` key of one settings file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IsolateSetting {
    /// Not set, or `false`.
    #[default]
    Off,
    /// `true`: every plugin.
    All,
    /// A list: the plugins whose file each entry names (see [`Selection::selects`]).
    Listed(Vec<String>),
}

impl IsolateSetting {
    /// Reads the value of an `isolate` key: `true`, `false`, `null` or an array of strings.
    /// `Err` names what was found and what to write instead.
    pub fn from_settings_value(value: &Value) -> Result<Self, String> {
        let wrong = |found: &str| {
            format!(
                "`isolate` must be true, false or an array of plugin file names or paths (such as [\"libgate.so\", \"~/plugins/libcrashy.so\"]), found {found}; fix the settings file"
            )
        };
        match value {
            Value::Null | Value::Bool(false) => Ok(IsolateSetting::Off),
            Value::Bool(true) => Ok(IsolateSetting::All),
            Value::Array(items) => items
                .iter()
                .map(|item| match item {
                    Value::String(entry) if !entry.trim().is_empty() => Ok(entry.clone()),
                    Value::String(_) => Err(wrong("an empty string in the list")),
                    other => Err(wrong(&format!("{other} in the list"))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(IsolateSetting::Listed),
            Value::Number(n) => Err(wrong(&format!("a number ({n})"))),
            Value::String(s) => Err(wrong(&format!("a string ({s:?})"))),
            Value::Object(_) => Err(wrong("an object")),
        }
    }
}

/// Which plugins run isolated, from the command line and the settings files.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Isolation is in use at all (a session command turned it on).
    enabled: bool,
    /// `--isolate`: every plugin.
    all_from_cli: bool,
    /// A settings file said `true`.
    all_from_settings: bool,
    /// Listed entries with the folder of the settings file that listed them.
    listed: Vec<(PathBuf, String)>,
    /// The session's working directory (the child's `--cwd`).
    cwd: Option<PathBuf>,
    /// `hookTimeout` in force: how long a child may take to say `hello`.
    hook_timeout: Option<Duration>,
}

impl Selection {
    /// Whether the plugin file at `path` runs isolated. An entry with a `/` (or starting with
    /// `~` or `.`) is a path, resolved against its settings file's folder and compared with
    /// `path` once both are canonical; any other entry is a file name: it matches the file's
    /// name (`libgate.so`), its name without the library suffix (`libgate`), or that without
    /// a leading `lib` (`gate`), with `-` and `_` taken as the same (`permission-gate` matches
    /// `libpermission_gate.so`).
    pub fn selects(&self, path: &Path) -> bool {
        if !self.enabled {
            return false;
        }
        if self.all_from_cli || self.all_from_settings {
            return true;
        }
        let canonical = std::fs::canonicalize(path).ok();
        self.listed
            .iter()
            .any(|(base, entry)| entry_matches(entry, base, path, canonical.as_deref()))
    }
}

/// Whether one `isolate` list entry names the plugin file at `path`.
pub(crate) fn entry_matches(
    entry: &str,
    base: &Path,
    path: &Path,
    canonical: Option<&Path>,
) -> bool {
    let is_path = entry.contains('/') || entry.starts_with('~') || entry.starts_with('.');
    if is_path {
        let named = crate::plugin_files::paths::resolve(entry, base);
        return match (std::fs::canonicalize(&named).ok(), canonical) {
            (Some(named), Some(canonical)) => named == canonical,
            _ => named == path,
        };
    }
    let fold = |s: &str| s.replace('-', "_");
    let entry = fold(entry);
    let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let stem = path
        .file_stem()
        .and_then(|n| n.to_str())
        .unwrap_or(file_name);
    let bare = stem.strip_prefix("lib").unwrap_or(stem);
    [file_name, stem, bare]
        .iter()
        .any(|name| fold(name) == entry)
}

static SELECTION: RwLock<Option<Selection>> = RwLock::new(None);

fn selection() -> Selection {
    SELECTION
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

fn update(f: impl FnOnce(&mut Selection)) {
    let mut guard = SELECTION.write().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Selection::default));
}

/// Turns isolation on for this process: `all` is `--isolate` (every plugin); otherwise the
/// settings files' `isolate` keys choose. `pi-hooks run` and `rpc` call this before they load
/// plugins; a program embedding the host may too.
pub fn enable(all: bool) {
    update(|s| {
        s.enabled = true;
        s.all_from_cli |= all;
    });
}

/// Records what a discovery found (the settings files and the working directory), so the
/// loads that follow it, and later single-plugin reloads, isolate what the settings select.
/// A project's settings may add plugins to isolate but never take one out: isolation only
/// ever makes a plugin's crash less harmful.
pub fn note_discovery(cwd: &Path, settings: &[Settings]) {
    update(|s| {
        if !s.enabled {
            return;
        }
        s.cwd = Some(cwd.to_path_buf());
        s.hook_timeout = Some(crate::plugin_files::settings::timeouts(settings).0);
        s.all_from_settings = settings
            .iter()
            .any(|file| file.isolate == IsolateSetting::All);
        s.listed = settings
            .iter()
            .flat_map(|file| match &file.isolate {
                IsolateSetting::Listed(entries) => entries
                    .iter()
                    .map(|e| (file.base_dir().to_path_buf(), e.clone()))
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
    });
}

/// Whether the plugin file at `path` is to run isolated in this process.
pub fn selects(path: &Path) -> bool {
    selection().selects(path)
}

/// Whether the plugin file at `path` has a grant and so runs isolated and confined
/// (`crate::sandbox`), when a session command turned isolation on. `Err`: its grant cannot
/// be used, or this platform cannot confine it (without `--unconfined-ok`).
pub fn confines(path: &Path) -> Result<bool, String> {
    if !selection().enabled {
        return Ok(false);
    }
    match crate::sandbox::confinement(path)? {
        crate::sandbox::Confinement::Confined(grant) => {
            crate::sandbox::platform_can_confine(&grant.plugin)
        }
        _ => Ok(false),
    }
}

static SERVE_PROGRAM: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Sets the `pi-hooks` binary isolated plugins run under (`<program> serve ...`). The
/// default is the running executable, which is right for the `pi-hooks` binary; a program
/// that embeds the host names the `pi-hooks` binary here.
pub fn set_serve_program(program: PathBuf) {
    *SERVE_PROGRAM.write().unwrap_or_else(|e| e.into_inner()) = Some(program);
}

/// The program a child runs: [`set_serve_program`]'s, else the running executable.
fn serve_program() -> Result<PathBuf, String> {
    if let Some(program) = SERVE_PROGRAM
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
    {
        return Ok(program);
    }
    std::env::current_exe().map_err(|e| {
        format!("cannot find the pi-hooks executable to run the isolated plugin under ({e})")
    })
}

/// Loads `file` as an isolated plugin: the host checks that it is a library for this machine
/// (the rest of the checks, ABI included, happen in the child, whose load errors become this
/// load's error), starts its `pi-hooks serve` child and returns the proxy that stands for it.
/// Trust was checked by the caller on the same bytes.
pub fn load(file: &PluginFile, origin: Origin, trust: TrustState) -> Result<LoadedPlugin, String> {
    check_object_header(&file.bytes)?;
    let selection = selection();
    let cwd = selection
        .cwd
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    let sandbox = match crate::sandbox::confinement(&file.path)? {
        crate::sandbox::Confinement::Confined(grant)
            if crate::sandbox::platform_can_confine(&grant.plugin)? =>
        {
            // The host checks the child's requests against the grant it is confined to.
            crate::sandbox::hold(&file.path.display().to_string(), (*grant).clone());
            Some(*grant)
        }
        _ => None,
    };
    // The child answers `identity` and `data_dir` as the plugin would in process; a
    // confined one's folder is its grant's `${data}`.
    let own = crate::plugin::own::Own::of(&file.path);
    let data_dir = match &sandbox {
        Some(grant) if !grant.data.as_os_str().is_empty() => Some(grant.data.clone()),
        _ => own.data_dir().ok(),
    };
    let launch = child::Launch {
        program: serve_program()?,
        plugin: file.path.clone(),
        sha256: file.sha256().to_owned(),
        cwd,
        sandbox,
        identity: crate::plugin::own::tagged(&own.identity),
        data_dir,
    };
    let hello_limit = selection
        .hook_timeout
        .unwrap_or(crate::plugin_files::settings::DEFAULT_HOOK_TIMEOUT);
    proxy::start(launch, hello_limit, origin, trust, file.sha256().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_setting_and_names_a_wrong_one() {
        assert_eq!(
            IsolateSetting::from_settings_value(&json!(true)),
            Ok(IsolateSetting::All)
        );
        assert_eq!(
            IsolateSetting::from_settings_value(&json!(false)),
            Ok(IsolateSetting::Off)
        );
        assert_eq!(
            IsolateSetting::from_settings_value(&json!(["gate", "./x.so"])),
            Ok(IsolateSetting::Listed(vec!["gate".into(), "./x.so".into()]))
        );
        let e = IsolateSetting::from_settings_value(&json!("yes")).unwrap_err();
        assert!(e.contains("found a string (\"yes\")"), "{e}");
        let e = IsolateSetting::from_settings_value(&json!([1])).unwrap_err();
        assert!(e.contains("found 1 in the list"), "{e}");
    }

    #[test]
    fn a_name_matches_the_file_name_its_stem_and_the_stem_without_lib() {
        let base = Path::new("/nowhere");
        let path = Path::new("/p/libpermission_gate.so");
        for entry in [
            "libpermission_gate.so",
            "libpermission_gate",
            "permission_gate",
            "permission-gate",
        ] {
            assert!(entry_matches(entry, base, path, None), "{entry}");
        }
        for entry in ["gate", "libgate.so", "permission"] {
            assert!(!entry_matches(entry, base, path, None), "{entry}");
        }
        assert!(entry_matches("/p/libpermission_gate.so", base, path, None));
        // A relative entry resolves against the settings folder, `..` applied as discovery
        // applies it to the plugin's own path.
        assert!(entry_matches(
            "../p/libpermission_gate.so",
            Path::new("/q"),
            Path::new("/p/libpermission_gate.so"),
            None
        ));
    }

    #[test]
    fn nothing_is_selected_until_enabled() {
        let selection = Selection {
            all_from_cli: true,
            ..Selection::default()
        };
        assert!(!selection.selects(Path::new("/p/libx.so")));
        let selection = Selection {
            enabled: true,
            ..selection
        };
        assert!(selection.selects(Path::new("/p/libx.so")));
    }
}
