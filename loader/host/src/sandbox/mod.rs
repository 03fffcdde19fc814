//! Confined plugins: a plugin with a grant ([`grant`]) runs isolated (a `pi-hooks serve`
//! child, `crate::isolate`) inside an operating-system sandbox, and the host checks what the
//! child asks of it against the same grant.
//!
//! Where grants come from ([`note_discovery`], [`note_package`]): an installed package's
//! capabilities as the user accepted them at install (recorded beside its library; a
//! package is confined by default, `"sandbox": {"<package>": false}` in the user's
//! settings.json opts it out), and for a plain library the user's settings.json, keyed by the
//! library's path: `"sandbox": {"~/.pi/agent/hooks/libgate.so": {"read": [...], "write":
//! [...], "network": false, "exec": [...], "memoryMiB": 256}}`. A key names one identity
//! ([`crate::identity`]): a package by its name, a library by its path, never one for the
//! other. A project's settings cannot grant or opt out anything.
//!
//! Grants are read strictly wherever they come from
//! ([`crate::packages::manifest::Capabilities::from_value`]): an unknown key, a wrong type or
//! a grant of `true` refuses the plugin, naming the file, the entry and the field. Fail
//! closed: when the user's settings.json is there but cannot be read (a syntax error, a bad
//! entry, any error but "not there"), whether it grants or opts out a plugin is unknown, so
//! a plain library is not loaded, nor a package without accepted capabilities (a package
//! with them runs confined to them, which needs no settings); the refusal names the file
//! and why (line and column for a syntax error). An install record that cannot be read
//! keeps its package out too (`crate::packages::installed`).
//!
//! A host-side file a confined plugin names (the session file of a switch) is checked and
//! opened once, by a handle ([`open_checked`]): a regular file whose real path lies in the
//! grant's folders as they were when the plugin started; the operation then uses that
//! handle ([`take_opened`]), never the path again. A relative path is resolved against the
//! session's working directory, once.
//!
//! The host resolves the grant ([`grant::Grant::resolve`]) and hands it to the child
//! (`serve --sandbox JSON`); the child confines itself ([`confine`]) before it opens the
//! plugin's library, so even the library's static constructors run confined. On Linux:
//! cgroups of its own where it can make them, bounding its memory and tasks ([`cgroup`]),
//! `no_new_privs` and resource limits ([`limits`]), every capability dropped
//! ([`capabilities`]), Landlock for files, TCP and signals ([`landlock`]), a seccomp
//! allow-list for the rest ([`seccomp`]), and a supervisor thread that names the file
//! accesses Landlock refuses ([`supervisor`]). The host makes itself non-dumpable when it
//! starts a confined child ([`limits::protect_host`]), and the child ends with the host. Elsewhere a confined plugin is
//! refused unless the user passes `--unconfined-ok` ([`set_unconfined_ok`]).
//!
//! A refusal is reported ([`report`]): by the child's own checks (`exec` through the host
//! API), by the seccomp filter, and by the supervisor (a file the plugin's process may not
//! read, write, create, remove, rename or link there, a program it may not run), to the host
//! as a `denied` notification, which the host shows on the terminal, in the JSON stream and
//! in the hook trace, naming the plugin, the action and the grant.

#[cfg(target_os = "linux")]
pub mod capabilities;
#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod grant;
#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(target_os = "linux")]
pub mod limits;
pub mod network;
pub mod report;
#[cfg(target_os = "linux")]
pub mod seccomp;
#[cfg(target_os = "linux")]
pub mod supervisor;
#[cfg(target_os = "linux")]
pub mod syscall_names;

use std::path::{Path, PathBuf};
use std::sync::{OnceLock, RwLock};

use serde_json::Value;

use crate::packages::manifest::Capabilities;
use crate::plugin_files::settings::Settings;
pub use grant::Grant;

/// One entry of a settings file's `sandbox` object.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsGrant {
    /// The key: a package's name (`gate`, `@acme/gate`), or a plain library's path
    /// (`~/.pi/agent/hooks/libgate.so`, `/abs/libgate.so`, `./hooks/libgate.so` relative to
    /// the settings file's folder). Each names one plugin identity
    /// ([`crate::identity::PluginIdentity`]): a package name never matches a library, a path
    /// never a package.
    pub name: String,
    /// The grant; `None` for `false`: run this package unconfined.
    pub capabilities: Option<Capabilities>,
}

impl SettingsGrant {
    /// Whether a `sandbox` key names a library by its path (it holds a `/`, or starts with
    /// `~` or `.`) rather than a package by its name.
    pub fn names_a_path(key: &str) -> bool {
        key.contains('/') && !key.starts_with('@')
            || key.starts_with('~')
            || key.starts_with('.')
            || key.starts_with('/')
    }

    /// Reads a `sandbox` value: an object of grants (or `false` for a package to run
    /// unconfined). `Err` names the entry and what to write instead.
    pub fn list_from_settings_value(value: &Value) -> Result<Vec<SettingsGrant>, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "`sandbox` must be an object of grants by plugin name (such as {{\"gate\": {{\"read\": [\"${{cwd}}\"], \"network\": false}}}}), found {value}; fix the settings file"
            ));
        };
        map.iter()
            .map(|(name, grant)| {
                if !SettingsGrant::names_a_path(name)
                    && let Err(e) = crate::identity::PackageName::parse(name)
                {
                    return Err(format!(
                        "`sandbox` key {:?} names neither a package nor a library: {e}. A key is a package's name (such as \"@acme/gate\") or a plain library's path (such as \"~/.pi/agent/hooks/libgate.so\"); fix the settings file",
                        crate::guards::display::escape(name)
                    ));
                }
                let capabilities = match grant {
                    Value::Bool(false) => None,
                    other => Some(Capabilities::from_value(other).map_err(|e| {
                        format!(
                            "`sandbox.{}` is not a grant ({e}; a grant is an object, or false to run a package unconfined); fix the settings file",
                            crate::guards::display::escape(name)
                        )
                    })?),
                };
                Ok(SettingsGrant {
                    name: name.clone(),
                    capabilities,
                })
            })
            .collect()
    }
}

/// How a plugin runs, as far as the sandbox goes.
#[derive(Debug, Clone, PartialEq)]
// One value per plugin load, moved once: the size of a grant is no cost worth a box.
pub enum Confinement {
    /// No grant: as before (in process, or isolated when `isolate` selects it).
    Unconfined,
    /// A package the user opted out (`"sandbox": {"<name>": false}`).
    OptedOut,
    /// Isolated and confined to this grant.
    Confined(Box<Grant>),
}

/// What discovery told the sandbox.
#[derive(Debug, Default, Clone)]
struct Registry {
    /// The user's settings file and its `sandbox` entries.
    settings: Option<(PathBuf, Vec<SettingsGrant>)>,
    /// The user's settings file when it exists but could not be read (a syntax error, a
    /// bad entry, an unreadable file), and why: then no plugin that could have a grant
    /// there is loaded unconfined.
    settings_error: Option<(PathBuf, String)>,
    /// Installed packages: library, name, version, accepted capabilities.
    packages: Vec<(PathBuf, String, String, Option<Capabilities>)>,
    /// What the variables stand for.
    folders: Option<grant::Folders>,
    /// Grants being tried (`run`/`emit --confine`): library (canonical), capabilities,
    /// where they come from. They come before any other grant of the library.
    tried: Vec<(PathBuf, Capabilities, String)>,
}

static REGISTRY: RwLock<Option<Registry>> = RwLock::new(None);

fn update(f: impl FnOnce(&mut Registry)) {
    let mut guard = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Registry::default));
}

/// Records the grants of a discovery: the user's settings' `sandbox` entries (a project's
/// are not read), and the folders `${cwd}`, `${home}`, `${tmp}` and `${data}` stand for.
pub fn note_discovery(cwd: &Path, agent_dir: &Path, settings: &[Settings]) {
    let user = settings.iter().find(|s| !s.project);
    // Discovery leaves out a settings file it could not read (and reports it); the sandbox
    // must know it was there. Any error but "not there" counts: fail closed.
    let settings_error = match user {
        Some(_) => None,
        None => {
            let file = agent_dir.join("settings.json");
            match crate::plugin_files::settings::read_settings(&file) {
                Ok(None) => None,
                Err(why) => Some((file, why)),
                Ok(Some(_)) => Some((file, "settings file changed while it was read".to_owned())),
            }
        }
    };
    update(|r| {
        r.settings = user.map(|s| (s.path.clone(), s.sandbox.clone()));
        r.settings_error = settings_error;
        r.folders = Some(grant::Folders {
            cwd: cwd.to_path_buf(),
            home: crate::plugin_files::paths::home_dir(),
            tmp: std::env::temp_dir(),
            agent_dir: agent_dir.to_path_buf(),
        });
    });
}

/// Records an installed package's library and the capabilities the user accepted for it.
pub fn note_package(
    library: &Path,
    name: &str,
    version: &str,
    capabilities: Option<&Capabilities>,
) {
    // The package's plugin is its package, from its init on (a name npm's rules refuse
    // leaves it the library it is: a folder of its own either way).
    if let Ok(package) = crate::identity::PackageName::parse(name) {
        crate::plugin::own::assign(
            library,
            crate::identity::PluginIdentity::Package(package),
            None,
        );
    }
    update(|r| {
        r.packages.retain(|(known, ..)| known != library);
        r.packages.push((
            library.to_path_buf(),
            name.to_owned(),
            version.to_owned(),
            capabilities.cloned(),
        ))
    });
}

/// Confines the plugin library at `library` to `capabilities` for this process, whatever
/// else would grant it something (a settings entry, a package's record), with `source` (the
/// grant file, say) named in its refusals: `pi-hooks run -e LIB --confine[=GRANT_FILE]` and
/// `pi-hooks emit LIB --confine[=GRANT_FILE]`, to try a grant before packing. The plugin runs
/// as an installed package with that grant runs: isolated in a `serve` child of its own,
/// confined before its library is opened, its requests checked by the host against the same
/// grant. Its `${data}` is the library's own folder (a package's is its name's). Call
/// [`note_discovery`] too (it says what the grant's variables stand for) and
/// `crate::isolate::enable` before the plugin loads.
pub fn try_grant(library: &Path, capabilities: Capabilities, source: &str) {
    let library = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    update(|r| {
        r.tried.retain(|(known, ..)| *known != library);
        r.tried.push((library, capabilities, source.to_owned()));
    });
}

/// How the plugin file at `path` runs. `Err`: its grant cannot be used (a bad entry), and
/// the plugin is not loaded.
pub fn confinement(path: &Path) -> Result<Confinement, String> {
    let registry = REGISTRY
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default();
    let Some(folders) = registry.folders.clone() else {
        return Ok(Confinement::Unconfined);
    };
    let package = registry
        .packages
        .iter()
        .find(|(library, ..)| library == path);
    let identity = crate::plugin::own::Own::of(path).identity;
    if !registry.tried.is_empty() {
        let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some((_, capabilities, source)) = registry
            .tried
            .iter()
            .find(|(library, ..)| *library == canonical)
        {
            let name = match package {
                Some((_, name, ..)) => name.clone(),
                None => library_shown_name(path),
            };
            return Grant::resolve(capabilities, &name, &identity, source, &folders)
                .map(|grant| Confinement::Confined(Box::new(grant)));
        }
    }
    if let Some((settings_path, why)) = &registry.settings_error {
        // The user's settings could not be read, so whether they grant this plugin
        // something (or opt it out) is unknown. A package with accepted capabilities runs
        // confined to them, which needs no settings; nothing else is loaded unconfined.
        if let Some((_, name, version, Some(capabilities))) = package {
            return Grant::resolve(
                capabilities,
                name,
                &identity,
                &format!("package {name} {version}"),
                &folders,
            )
            .map(|grant| Confinement::Confined(Box::new(grant)));
        }
        return Err(format!(
            "not loaded, rather than loaded unconfined: the user settings {} could not be read, so any grant they hold for it is unknown ({}). Fix the file (or move it away) and start again",
            settings_path.display(),
            crate::guards::display::escape(why)
        ));
    }
    if let Some((settings_path, entries)) = &registry.settings {
        let base = settings_path.parent().unwrap_or_else(|| Path::new("."));
        let canonical = std::fs::canonicalize(path).ok();
        // One identity per plugin: a package is named by its package name only, a plain
        // library by its path only; a file stem never names a package, nor a package name
        // a library.
        let entry = entries.iter().find(|e| match package {
            Some((_, name, ..)) => *name == e.name,
            None => {
                SettingsGrant::names_a_path(&e.name)
                    && crate::isolate::entry_matches(&e.name, base, path, canonical.as_deref())
            }
        });
        if let Some(entry) = entry {
            return match &entry.capabilities {
                None if package.is_some() => Ok(Confinement::OptedOut),
                None => Ok(Confinement::Unconfined),
                Some(capabilities) => Grant::resolve(
                    capabilities,
                    &match package {
                        Some((_, name, ..)) => name.clone(),
                        None => library_shown_name(path),
                    },
                    &identity,
                    &settings_path.display().to_string(),
                    &folders,
                )
                .map(|grant| Confinement::Confined(Box::new(grant))),
            };
        }
        // A grant keyed by a bare name that no installed package has, but that names this
        // library by its file name (how plain libraries were once keyed): the user meant to
        // confine it. It is not loaded, rather than loaded unconfined.
        if package.is_none()
            && let Some(meant) = entries.iter().find(|e| {
                e.capabilities.is_some()
                    && !SettingsGrant::names_a_path(&e.name)
                    && !registry
                        .packages
                        .iter()
                        .any(|(_, name, ..)| *name == e.name)
                    && crate::isolate::entry_matches(&e.name, base, path, canonical.as_deref())
            })
        {
            return Err(format!(
                "the `sandbox` key \"{}\" in {} names a package (a bare name always does), and no installed package is called so; it looks meant for this library, so the library was not loaded rather than loaded unconfined. Name a library by its path: \"{}\"",
                crate::guards::display::escape(&meant.name),
                settings_path.display(),
                crate::guards::display::escape(
                    &canonical.as_deref().unwrap_or(path).display().to_string()
                )
            ));
        }
    }
    match package {
        // A package that declares nothing asks for everything: nothing to confine it to.
        Some((_, _, _, None)) | None => Ok(Confinement::Unconfined),
        Some((_, name, version, Some(capabilities))) => Grant::resolve(
            capabilities,
            name,
            &identity,
            &format!("package {name} {version}"),
            &folders,
        )
        .map(|grant| Confinement::Confined(Box::new(grant))),
    }
}

/// What a plain library's grant calls it in messages: its file name without `lib` and the
/// suffix (`libgate.so` is `gate`).
fn library_shown_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    stem.strip_prefix("lib").unwrap_or(&stem).to_owned()
}

/// How an installed package runs, for `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PackageSandbox {
    /// Isolated and confined to the capabilities accepted at install.
    Confined,
    /// The user opted it out (`"sandbox": {"<name>": false}`).
    OptedOut,
    /// It declares no capabilities (it asks for everything), so nothing confines it.
    Unrestricted,
}

impl PackageSandbox {
    /// The state in words.
    pub fn describe(self) -> &'static str {
        match self {
            PackageSandbox::Confined => {
                "confined to its accepted capabilities (isolated; Linux only, see --unconfined-ok)"
            }
            PackageSandbox::OptedOut => {
                "unconfined: opted out in settings.json (\"sandbox\": {\"<name>\": false})"
            }
            PackageSandbox::Unrestricted => {
                "unconfined: it declares no capabilities, so it runs with everything your user can do"
            }
        }
    }
}

/// How the installed package `name` runs, by the user's settings read at the last
/// discovery (`false` opts it out; an object replaces its grant and keeps it confined).
pub fn package_state(name: &str, capabilities: Option<&Capabilities>) -> PackageSandbox {
    let registry = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    let entry = registry
        .as_ref()
        .and_then(|r| r.settings.as_ref())
        .and_then(|(_, entries)| entries.iter().find(|e| e.name == name).cloned());
    match (entry, capabilities) {
        (
            Some(SettingsGrant {
                capabilities: None, ..
            }),
            _,
        ) => PackageSandbox::OptedOut,
        (Some(_), _) | (None, Some(_)) => PackageSandbox::Confined,
        (None, None) => PackageSandbox::Unrestricted,
    }
}

static UNCONFINED_OK: OnceLock<bool> = OnceLock::new();

/// `--unconfined-ok`: where the sandbox is not available (not Linux), run a plugin that has
/// a grant unconfined, with a warning, instead of refusing it.
pub fn set_unconfined_ok(ok: bool) {
    let _ = UNCONFINED_OK.set(ok);
}

/// Whether this platform can confine a plugin; `Err` is the refusal (or, with
/// `--unconfined-ok`, `Ok(false)` after the warning is printed).
pub fn platform_can_confine(plugin: &str) -> Result<bool, String> {
    if cfg!(target_os = "linux") {
        return Ok(true);
    }
    if UNCONFINED_OK.get().copied().unwrap_or(false) {
        eprintln!(
            "pi-hooks: warning: plugin {plugin} has a grant, but this platform has no sandbox pi-hooks can use (Linux only); it runs unconfined because of --unconfined-ok"
        );
        return Ok(false);
    }
    Err("it has a grant, and confining a plugin needs Linux (Landlock and seccomp); it was not loaded. Run with --unconfined-ok to load it unconfined, or remove its grant".to_owned())
}

/// The grant this process (a `serve` child) is confined to, once [`confine`] applied it.
static APPLIED: OnceLock<Grant> = OnceLock::new();

/// The grant this process is confined to, if any.
pub fn applied() -> Option<&'static Grant> {
    APPLIED.get()
}

/// Checks an `exec` a plugin asks for against the grant this process is confined to:
/// `Err` is the reason to hand back (the denial is reported).
pub fn check_exec(program: &str) -> Result<(), String> {
    let Some(grant) = applied() else {
        return Ok(());
    };
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        grant::find_in_path(program, std::env::var_os("PATH").as_deref())
    };
    if found.as_deref().is_some_and(|f| grant.allows_program(f)) {
        return Ok(());
    }
    let reason = exec_refusal(program, grant);
    report::denied("exec", &reason, grant);
    Err(reason)
}

/// Why running `program` is refused to the plugin `grant` confines: what was refused, and the
/// one entry that would allow it (the whole grant is not repeated: one short line).
pub fn exec_refusal(program: &str, grant: &Grant) -> String {
    format!(
        "exec of {program:?} denied: the grant of plugin {} ({}) does not include it (exec: {}); to allow it, grant \"exec\": [{program:?}]",
        grant.plugin,
        grant.source,
        if grant.exec.is_empty() {
            "nothing".to_owned()
        } else {
            grant.exec.join(", ")
        }
    )
}

/// The one grant entry that lets a plugin read (or write) `path`: `"read": ["PATH"]`, or
/// `"write": ["FOLDER"]` (a `write` entry is made a folder when it does not exist, so a file
/// that does not exist yet is granted through its folder).
pub fn entry_allowing(path: &Path, write: bool) -> String {
    let shown = if write && !path.exists() {
        path.parent().unwrap_or(path)
    } else {
        path
    };
    format!(
        "\"{}\": [{:?}]",
        if write { "write" } else { "read" },
        shown.display().to_string()
    )
}

/// Checks a path the host reads (`write` false) or writes for a confined plugin. The refusal
/// names the path, the plugin, where its grant comes from and the one entry that would allow
/// it (not the whole grant: the report adds nothing more, `report::show`).
pub fn check_path(grant: &Grant, action: &str, path: &Path, write: bool) -> Result<(), String> {
    if grant.allows_path(path, write) {
        return Ok(());
    }
    Err(format!(
        "{action} of {} denied: the grant of plugin {} ({}) does not let it {} there; to allow it, grant {}",
        path.display(),
        grant.plugin,
        grant.source,
        if write { "write" } else { "read" },
        entry_allowing(path, write)
    ))
}

/// Opens, for a confined plugin, the host-side file `path` (absolute) it names, checked
/// against `grant` for reading, or for writing too when `write`: the path is checked, then
/// resolved once (an `O_PATH` handle that does not open the file itself, so a FIFO or a
/// device does nothing), the handle must be a regular file and its real path (the kernel's
/// name for it, `/proc/self/fd/N`) must lie in the grant; then the same file is opened
/// through the handle, never through the path again. So a file swapped for a link, a
/// folder swapped above it, a FIFO or a device in the grant cannot make the host use
/// another file than the one checked. Returns the file (read and append when `write`,
/// falling back to read-only where the user may not write it) and whether it is writable,
/// or `Ok(Err)` when a file the grant allows cannot be opened (it does not exist: said as
/// the session store says it). `Err` is the refusal, in [`check_path`]'s words.
#[cfg(target_os = "linux")]
pub fn open_checked(
    grant: &Grant,
    action: &str,
    path: &Path,
    write: bool,
) -> Result<Result<(std::fs::File, bool), String>, String> {
    use rustix::fs::{Mode, OFlags};
    use std::os::fd::AsRawFd;
    check_path(grant, action, path, write)?;
    let denied = |why: String| {
        format!(
            "{action} of {} denied: {why} (the grant of plugin {}, {})",
            path.display(),
            grant.plugin,
            grant.source
        )
    };
    let failed = |e: rustix::io::Errno| format!("{}: {}", path.display(), std::io::Error::from(e));
    let handle = match rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(handle) => handle,
        Err(e) => return Ok(Err(failed(e))),
    };
    let kind_of = |stat: &rustix::fs::Stat| match rustix::fs::FileType::from_raw_mode(stat.st_mode)
    {
        rustix::fs::FileType::RegularFile => None,
        rustix::fs::FileType::Directory => Some("a folder"),
        rustix::fs::FileType::Fifo => Some("a FIFO"),
        rustix::fs::FileType::CharacterDevice => Some("a character device"),
        rustix::fs::FileType::BlockDevice => Some("a block device"),
        rustix::fs::FileType::Socket => Some("a socket"),
        _ => Some("not a file"),
    };
    let stat = rustix::fs::fstat(&handle).map_err(|e| denied(format!("cannot stat it ({e})")))?;
    if let Some(kind) = kind_of(&stat) {
        return Err(denied(format!("it is {kind}, not a regular file")));
    }
    let through = PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()));
    let real = std::fs::read_link(&through)
        .map_err(|e| denied(format!("its real path cannot be read from /proc ({e})")))?;
    if !real.is_absolute() || real.to_string_lossy().ends_with(" (deleted)") {
        return Err(denied(format!(
            "it was removed or is not in a folder ({})",
            real.display()
        )));
    }
    if !real_roots(grant).hold(&real, write) {
        return Err(denied(format!(
            "it is {}, which the grant does not let it {}",
            real.display(),
            if write { "write" } else { "read" }
        )));
    }
    let reopen = |flags: OFlags| {
        rustix::fs::open(
            &through,
            flags | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        )
    };
    let (file, writable) = if write {
        match reopen(OFlags::RDWR | OFlags::APPEND) {
            Ok(fd) => (fd, true),
            Err(rustix::io::Errno::ACCESS) => match reopen(OFlags::RDONLY) {
                Ok(fd) => (fd, false),
                Err(e) => return Ok(Err(failed(e))),
            },
            Err(e) => return Ok(Err(failed(e))),
        }
    } else {
        match reopen(OFlags::RDONLY) {
            Ok(fd) => (fd, false),
            Err(e) => return Ok(Err(failed(e))),
        }
    };
    let opened = rustix::fs::fstat(&file).map_err(|e| denied(format!("cannot stat it ({e})")))?;
    if (opened.st_dev, opened.st_ino) != (stat.st_dev, stat.st_ino) || kind_of(&opened).is_some() {
        return Err(denied("it changed while it was opened".to_owned()));
    }
    // Back to blocking: the session store reads and appends to it as to any file.
    let flags = rustix::fs::fcntl_getfl(&file).map_err(|e| denied(e.to_string()))?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK).map_err(|e| denied(e.to_string()))?;
    Ok(Ok((std::fs::File::from(file), writable)))
}

/// Files [`open_checked`] opened for a session a confined plugin switches to, by the
/// absolute path the switch names, until the switch takes them ([`take_opened`]).
type Opened = Result<(std::fs::File, bool), String>;
static OPENED: std::sync::Mutex<Vec<(PathBuf, Opened)>> = std::sync::Mutex::new(Vec::new());

/// Keeps `file` (checked and opened by [`open_checked`]) for the switch to `path`: the
/// session is then read from and appended to that file, not to whatever `path` names when
/// the switch happens (after `session_before_switch`); `Err`: the switch fails with that
/// (the file could not be opened), rather than open the path later. A few are kept at most.
pub fn keep_opened(path: &Path, opened: Result<(std::fs::File, bool), String>) {
    let mut kept = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(p, ..)| p != path);
    if kept.len() >= 8 {
        drop(kept.remove(0));
    }
    kept.push((path.to_path_buf(), opened));
}

/// The file kept for a switch to `path` ([`keep_opened`]) and whether it is writable, taken
/// (a switch to the same path later opens it again).
pub fn take_opened(path: &Path) -> Option<Result<(std::fs::File, bool), String>> {
    let mut kept = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    let at = kept.iter().position(|(p, ..)| p == path)?;
    Some(kept.remove(at).1)
}

/// The grants the host holds isolated plugins to, by the proxy's plugin path.
static HELD: RwLock<Vec<(String, Grant, RealRoots)>> = RwLock::new(Vec::new());

/// A grant's `read` and `write` folders with their links resolved as its child starts,
/// before the plugin runs: what the host-side files a plugin names are checked against
/// ([`open_checked`]), so a link the plugin puts in place of a granted folder later (one
/// granted inside another it may write) moves nothing.
#[derive(Debug, Clone, Default)]
struct RealRoots {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
}

impl RealRoots {
    fn of(grant: &Grant) -> RealRoots {
        let real = |roots: &[PathBuf]| {
            roots
                .iter()
                .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| grant::normalize(root)))
                .collect()
        };
        RealRoots {
            read: real(&grant.read),
            write: real(&grant.write),
        }
    }

    /// Whether `real` (a kernel's name for an open file: absolute, no links) lies in them.
    fn hold(&self, real: &Path, write: bool) -> bool {
        let inside = |roots: &[PathBuf]| roots.iter().any(|root| real.starts_with(root));
        inside(&self.write) || (!write && inside(&self.read))
    }
}

/// Records that the isolated plugin at `path` is held to `grant` (the host checks its
/// requests against it), as its child is about to start: the grant's `write` folders that
/// do not exist yet are made now ([`Grant::make_write_folders`]), and its folders' real
/// paths are taken.
pub fn hold(path: &str, grant: Grant) {
    grant.make_write_folders();
    let roots = RealRoots::of(&grant);
    let mut held = HELD.write().unwrap_or_else(|e| e.into_inner());
    held.retain(|(p, ..)| p != path);
    held.push((path.to_owned(), grant, roots));
}

/// The grant the isolated plugin at `path` is held to.
pub fn held(path: &str) -> Option<Grant> {
    HELD.read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(p, ..)| p == path)
        .map(|(_, g, _)| g.clone())
}

/// The real folders of `grant` as they were when a plugin was held to it ([`hold`]), or
/// as they are now for a grant no plugin is held to.
fn real_roots(grant: &Grant) -> RealRoots {
    HELD.read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(_, g, _)| g == grant)
        .map(|(.., roots)| roots.clone())
        .unwrap_or_else(|| RealRoots::of(grant))
}

/// Confines this process (a `serve` child about to load `plugin`) to `grant`, before the
/// plugin's library is opened. `settings` are files the child still reads (its settings).
/// What the kernel lacks is reported on stderr with the plugin's name; `Err` when the
/// confinement could not be applied (the child then loads nothing).
#[cfg(target_os = "linux")]
pub fn confine(grant: Grant, plugin: &Path, settings: &[PathBuf]) -> Result<(), String> {
    // Landlock restricts the calling thread and the threads it starts later; a thread that
    // already runs would stay free. So this runs while the process has one thread.
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u32>().ok())
        })
        .unwrap_or(0);
    if threads != 1 {
        return Err(format!(
            "cannot confine plugin {}: {threads} threads already run in its process (the sandbox must be applied while it has one)",
            grant.plugin
        ));
    }
    // Cgroups first (making them needs root's capabilities), then the limits, then every
    // capability dropped, before Landlock and seccomp.
    let bounds = cgroup::enter(
        grant.memory_mib.map(limits::memory_bound),
        cgroup::MAX_TASKS,
    );
    let mut lacking = limits::apply(&grant, &bounds)?;
    capabilities::drop_all(&grant.plugin)?;
    // Read by the supervisor to tell a refused allocation's cause; out of reach once
    // Landlock is on.
    let room = grant.memory_mib.and_then(|_| supervisor::Room::open());
    let landlock = landlock::apply(&grant, plugin, settings)?;
    lacking.extend(landlock.lacking);
    lacking.extend(seccomp::apply(&grant)?);
    // Last: from here on the calling thread's path calls go through the supervisor.
    if let Err(missing) = supervisor::start(
        &grant,
        &landlock.also_readable,
        &landlock.also_writable,
        room,
    ) {
        lacking.push(missing);
    }
    if !lacking.is_empty() {
        eprintln!(
            "pi-hooks: sandbox: plugin {} is confined without {}, which this system does not offer",
            grant.plugin,
            lacking.join(", ")
        );
    }
    let _ = APPLIED.set(grant);
    Ok(())
}

/// Elsewhere than Linux there is nothing to confine with.
#[cfg(not(target_os = "linux"))]
pub fn confine(grant: Grant, _plugin: &Path, _settings: &[PathBuf]) -> Result<(), String> {
    Err(format!(
        "plugin {} cannot be confined on this platform (Linux only)",
        grant.plugin
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_host_side_file_is_opened_once_by_its_handle_and_must_be_a_regular_file_in_the_grant() {
        let dir = tempfile::tempdir().unwrap();
        let granted = dir.path().join("granted");
        std::fs::create_dir(&granted).unwrap();
        let grant = Grant {
            plugin: "p".into(),
            source: "s".into(),
            read: vec![],
            write: vec![granted.clone()],
            network: crate::packages::manifest::Network::None,
            exec: vec![],
            exec_paths: vec![],
            memory_mib: None,
            data: PathBuf::new(),
        };
        let file = granted.join("s.jsonl");
        std::fs::write(&file, "x\n").unwrap();
        let (opened, writable) = open_checked(&grant, "switchSession", &file, true)
            .unwrap()
            .unwrap();
        assert!(writable && opened.metadata().unwrap().is_file());
        let missing = open_checked(&grant, "switchSession", &granted.join("none"), true)
            .unwrap()
            .unwrap_err();
        assert!(missing.contains("No such file"), "{missing}");
        let fifo = granted.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = open_checked(&grant, "switchSession", &fifo, true).unwrap_err();
        assert!(e.contains("it is a FIFO, not a regular file"), "{e}");
        let e = open_checked(&grant, "switchSession", &granted, true).unwrap_err();
        assert!(e.contains("it is a folder"), "{e}");
        // A link in the grant to a file outside it: the real path is what counts.
        let outside = dir.path().join("outside.jsonl");
        std::fs::write(&outside, "y\n").unwrap();
        std::os::unix::fs::symlink(&outside, granted.join("link.jsonl")).unwrap();
        let e =
            open_checked(&grant, "switchSession", &granted.join("link.jsonl"), true).unwrap_err();
        assert!(e.contains("denied"), "{e}");
        let e = open_checked(&grant, "switchSession", &outside, true).unwrap_err();
        assert!(e.contains("does not let it write there"), "{e}");
    }

    #[test]
    fn reads_settings_grants_and_names_a_wrong_one() {
        let list = SettingsGrant::list_from_settings_value(
            &json!({"gate": {"read": ["${cwd}"], "memoryMiB": 64}, "pkg": false}),
        )
        .unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].name, "gate");
        assert_eq!(list[0].capabilities.as_ref().unwrap().memory_mib, Some(64));
        assert_eq!(list[1].capabilities, None);
        let e = SettingsGrant::list_from_settings_value(&json!(["gate"])).unwrap_err();
        assert!(e.contains("`sandbox` must be an object"), "{e}");
        for (grant, why) in [
            (json!(true), "must be an object of read and write"),
            (
                json!({"net": 1}),
                "unknown field `net`; the keys are read and write",
            ),
            (
                json!({"memoryMiB": "64"}),
                "`memoryMiB` must be a whole number of MiB above 0 (such as 256), found a string (\"64\")",
            ),
            (
                json!({"memoryMiB": -1}),
                "`memoryMiB` must be a whole number",
            ),
            (
                json!({"read": "${cwd}"}),
                "`read` must be a list of path strings (such as [\"${cwd}\"]), found a string (\"${cwd}\")",
            ),
            (
                json!({"write": [1]}),
                "`write` must be a list of path strings, and one entry is a number (1)",
            ),
            (
                json!({"network": "yes"}),
                "`network` must be true, false or a list of host names",
            ),
            (
                json!({"exec": "git"}),
                "`exec` must be a list of program strings",
            ),
        ] {
            let e = SettingsGrant::list_from_settings_value(&json!({"gate": grant})).unwrap_err();
            assert!(
                e.contains("`sandbox.gate` is not a grant (") && e.contains(why),
                "{grant}: {e}"
            );
        }
        // The same strict reading where capabilities come from a package or a record.
        let e = serde_json::from_value::<Capabilities>(json!({"net": true})).unwrap_err();
        assert!(e.to_string().contains("unknown field `net`"), "{e}");
        let e = serde_json::from_value::<Option<Capabilities>>(json!(true)).unwrap_err();
        assert!(e.to_string().contains("must be an object"), "{e}");
        assert_eq!(
            serde_json::from_value::<Capabilities>(
                json!({"read": ["/a"], "network": ["h"], "memoryMiB": 8})
            )
            .unwrap(),
            Capabilities {
                read: vec!["/a".into()],
                network: crate::packages::manifest::Network::Hosts(vec!["h".into()]),
                memory_mib: Some(8),
                ..Capabilities::default()
            }
        );
    }
}
