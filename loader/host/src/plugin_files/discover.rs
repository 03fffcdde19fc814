//! Discovery: which plugin files to load, in which order, from where.
//!
//! Order: project `<cwd>/.pi/hooks/` and `<cwd>/.pi/extensions/`, global
//! `<agentDir>/hooks/` and `<agentDir>/extensions/`, then `hooks` and `extensions` from the
//! project's and then the user's `settings.json` (with pi's entry forms,
//! [`crate::plugin_files::entry_forms`]), then `--hook`/`-e` paths. Inside a folder,
//! files with this platform's library suffix in name order. Duplicates (same canonical path)
//! keep their first place.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::plugin_files::entry_forms::EntryForms;
use crate::plugin_files::paths::{LIBRARY_SUFFIX, has_library_suffix, resolve};
use crate::plugin_files::settings::{Settings, read_settings};

/// Where a candidate came from. Project sources need trust before they load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// `<cwd>/.pi/hooks/` or `<cwd>/.pi/extensions/`.
    Project,
    /// `<agentDir>/hooks/` or `<agentDir>/extensions/`.
    Global,
    /// Listed in `<cwd>/.pi/settings.json`.
    ProjectSettings,
    /// Listed in `<agentDir>/settings.json`.
    GlobalSettings,
    /// Named on the command line.
    Cli,
    /// The library of a package installed for the user (`packages` in the user's settings).
    Package,
    /// The library of a package installed for the project: loads once trusted.
    ProjectPackage,
}

impl Origin {
    /// Whether a plugin from here loads only once trusted: anything a cloned repository
    /// could have put there.
    pub fn needs_trust(self) -> bool {
        matches!(
            self,
            Origin::Project | Origin::ProjectSettings | Origin::ProjectPackage
        )
    }

    /// A short label for listings.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Project => "project",
            Origin::Global => "global",
            Origin::ProjectSettings => "project-settings",
            Origin::GlobalSettings => "global-settings",
            Origin::Cli => "cli",
            Origin::Package => "package",
            Origin::ProjectPackage => "project-package",
        }
    }
}

/// A file to try loading, or a problem found while discovering it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Absolute path as discovered (not canonicalised).
    pub path: PathBuf,
    /// Where it came from.
    pub origin: Origin,
    /// Why it cannot be loaded, when discovery already knows.
    pub problem: Option<String>,
    /// Device and inode (Unix), when the file exists: what duplicates are recognised by.
    pub identity: Option<(u64, u64)>,
    /// The installed package whose library this is: what its bytes must be and what it was
    /// granted (`None` for a plain library). Discovery only reports it; the load pins and
    /// places it (`crate::lifecycle::load::note_packages`).
    pub package: Option<crate::packages::installed::PackagePlugin>,
}

/// A problem with a plugin source that is not a candidate (a broken settings file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceError {
    /// The file the problem is in.
    pub path: String,
    /// What is wrong and what to do.
    pub error: String,
}

/// What to discover.
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// The agent directory.
    pub agent_dir: PathBuf,
    /// `--hook` / `--extension` / `-e` paths, in order.
    pub explicit: Vec<String>,
    /// `--no-hooks`: skip the folders and the plugins settings list (explicit paths still
    /// load; the settings' other keys still apply).
    pub no_discovery: bool,
}

/// The result of discovery.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Candidates in load order, without duplicates.
    pub candidates: Vec<Candidate>,
    /// Problems with settings files.
    pub errors: Vec<SourceError>,
    /// The settings that were read (project first).
    pub settings: Vec<Settings>,
    /// Project entries dropped because they name one of the user's own plugins (the user's
    /// entry keeps its place and trust); `error` says so in one line.
    pub shadowed: Vec<SourceError>,
    /// Project plugins (and the project's `settings.json`) not loaded because pi does not
    /// trust the project ([`crate::plugin_files::pi_trust`]); `error` says why and what to do.
    pub declined: Vec<SourceError>,
}

/// Finds the candidates.
pub fn discover(options: &DiscoveryOptions) -> Discovery {
    let mut found = Discovery::default();
    let mut raw: Vec<Candidate> = Vec::new();
    let project = options.cwd.join(".pi");
    // pi's "no" for this project is final: none of its plugins loads, pinned or not, and its
    // settings are not read (as in pi).
    let declined = match crate::plugin_files::pi_trust::decide(&options.agent_dir, &options.cwd) {
        crate::plugin_files::pi_trust::PiTrust::Declined(why) => Some(why),
        _ => None,
    };
    if !options.no_discovery {
        for dir in [project.join("hooks"), project.join("extensions")] {
            scan_dir(&dir, Origin::Project, false, &mut raw);
        }
        for dir in [
            options.agent_dir.join("hooks"),
            options.agent_dir.join("extensions"),
        ] {
            scan_dir(&dir, Origin::Global, false, &mut raw);
        }
    }
    // The settings are read with `--no-hooks` too, as pi's `--no-extensions` keeps them: only
    // the plugins they list are skipped (timeouts and compaction still apply).
    let sources = [
        (project.join("settings.json"), Origin::ProjectSettings),
        (
            options.agent_dir.join("settings.json"),
            Origin::GlobalSettings,
        ),
    ];
    for (path, origin) in sources {
        if let Some(why) = &declined
            && origin == Origin::ProjectSettings
        {
            if path.exists() {
                found.declined.push(SourceError {
                    path: path.display().to_string(),
                    error: format!("not read: {why}"),
                });
            }
            continue;
        }
        match read_settings(&path) {
            Ok(None) => {}
            Ok(Some(mut settings)) => {
                settings.project = origin == Origin::ProjectSettings;
                // pi's entry forms (`crate::plugin_files::entry_forms`): `!`, `+` and `-`
                // entries filter the scope's folder files and its listed ones; pi's
                // `builtin:` names are passed over.
                let forms = EntryForms::split(settings.hooks.iter().chain(&settings.extensions));
                let base = settings.base_dir().to_path_buf();
                let folder_origin = if settings.project {
                    Origin::Project
                } else {
                    Origin::Global
                };
                raw.retain(|c| {
                    c.origin != folder_origin || forms.folder_file_enabled(&c.path, &base)
                });
                if !options.no_discovery {
                    let start = raw.len();
                    for entry in &forms.plain {
                        explicit(&resolve(entry, &base), origin, &mut raw);
                    }
                    let listed = raw.split_off(start);
                    raw.extend(
                        listed
                            .into_iter()
                            .filter(|c| forms.listed_file_enabled(&c.path, &base)),
                    );
                }
                found.settings.push(settings);
            }
            Err(error) => found.errors.push(SourceError {
                path: path.display().to_string(),
                error,
            }),
        }
    }
    if !options.no_discovery {
        // Installed packages, in pi's order: the project's, then the user's, wherever pi or
        // pi-hooks put them. Each library loads only with the SHA-256 recorded at its install
        // (pi-hooks' store) or its manifest's (pi's npm and git folders): the candidate
        // carries them, and the load pins them.
        use crate::packages::installed::package_plugins;
        use crate::packages::store::{Scope, Store};
        for (scope, origin) in [
            (Scope::Project, Origin::ProjectPackage),
            (Scope::User, Origin::Package),
        ] {
            if declined.is_some() && scope == Scope::Project {
                continue;
            }
            let store = Store::new(scope, &options.agent_dir, &options.cwd);
            for listed in package_plugins(&store, &options.agent_dir, &options.cwd) {
                match listed {
                    Ok(plugin) => {
                        let mut candidate = check_file(plugin.library.clone(), origin);
                        candidate.package = Some(plugin);
                        raw.push(candidate);
                    }
                    Err((path, error)) => found.errors.push(SourceError {
                        path: path.display().to_string(),
                        error,
                    }),
                }
            }
        }
    }
    for entry in &options.explicit {
        explicit(&resolve(entry, &options.cwd), Origin::Cli, &mut raw);
    }
    if let Some(why) = &declined {
        raw.retain(|candidate| {
            if !candidate.origin.needs_trust() {
                return true;
            }
            found.declined.push(SourceError {
                path: candidate.path.display().to_string(),
                error: format!(
                    "project plugin not loaded: {why} (`pi-hooks trust` does not override pi's decision)"
                ),
            });
            false
        });
    }
    dedupe(raw, &mut found);
    found
}

/// What makes two candidates the same file: device and inode where the platform has them,
/// else the canonical path (or the path itself for a file that does not exist).
#[derive(Debug, PartialEq, Eq, Hash)]
enum FileKey {
    Identity(u64, u64),
    Path(PathBuf),
}

impl FileKey {
    fn of(candidate: &Candidate) -> FileKey {
        match candidate.identity {
            Some((dev, ino)) => FileKey::Identity(dev, ino),
            None => FileKey::Path(
                std::fs::canonicalize(&candidate.path).unwrap_or_else(|_| candidate.path.clone()),
            ),
        }
    }
}

/// Keeps one candidate per file (same device and inode, or canonical path). The first place wins, except that a project
/// entry never takes a file from the user: when a project folder or the project's settings
/// reach a file that the user's folders, the user's settings or the command line also name
/// (a symlink in `.pi/hooks`, a linked folder, a path in `.pi/settings.json`), the user's
/// entry keeps its place and needs no trust, and the project entry is dropped with a warning.
fn dedupe(raw: Vec<Candidate>, found: &mut Discovery) {
    let keys: Vec<FileKey> = raw.iter().map(FileKey::of).collect();
    let users: HashMap<&FileKey, &Candidate> = raw
        .iter()
        .zip(&keys)
        .rev()
        .filter(|(c, _)| !c.origin.needs_trust())
        .map(|(c, key)| (key, c))
        .collect();
    let mut seen = HashSet::new();
    for (candidate, key) in raw.iter().zip(&keys) {
        if candidate.origin.needs_trust()
            && let Some(user) = users.get(key)
        {
            found.shadowed.push(SourceError {
                path: candidate.path.display().to_string(),
                error: format!(
                    "the project's entry names {}, which is already your plugin ({}, {}); it loads once, in your place and with your trust",
                    std::fs::canonicalize(&candidate.path)
                        .unwrap_or_else(|_| candidate.path.clone())
                        .display(),
                    user.origin.label(),
                    user.path.display()
                ),
            });
            continue;
        }
        if seen.insert(key) {
            found.candidates.push(candidate.clone());
        }
    }
}

/// A path named in settings or on the command line: a file is taken whatever its name; a
/// folder is scanned like a hooks folder.
fn explicit(path: &Path, origin: Origin, out: &mut Vec<Candidate>) {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() && !has_library_suffix(path) => scan_dir(path, origin, true, out),
        meta => out.push(check_file_with(path.to_path_buf(), origin, meta)),
    }
}

/// Adds the library files of `dir` in name order. A missing folder adds nothing (unless it
/// was named explicitly).
fn scan_dir(dir: &Path, origin: Origin, named: bool, out: &mut Vec<Candidate>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return,
        Err(e) => {
            out.push(Candidate {
                path: dir.to_path_buf(),
                origin,
                problem: Some(format!("cannot read plugin folder: {e}")),
                identity: None,
                package: None,
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    let found_before = out.len();
    for path in paths {
        let name = path.file_name().unwrap_or_default();
        if name.to_str().is_none() {
            if name
                .as_encoded_bytes()
                .ends_with(format!(".{LIBRARY_SUFFIX}").as_bytes())
            {
                out.push(Candidate {
                    problem: Some(format!(
                        "the file name {name:?} is not valid UTF-8, which plugin paths must be; rename the file"
                    )),
                    path,
                    origin,
                    identity: None,
                    package: None,
                });
            }
            continue;
        }
        if has_library_suffix(&path) {
            out.push(check_file(path, origin));
        }
    }
    if named && out.len() == found_before {
        // A folder the user named that holds no plugin is a mistake worth saying.
        out.push(Candidate {
            path: dir.to_path_buf(),
            origin,
            problem: Some(format!(
                "the folder holds no .{LIBRARY_SUFFIX} plugin library; name a library file or a folder that has some"
            )),
            identity: None,
            package: None,
        });
    }
}

/// Checks what discovery can know about a file without reading it.
fn check_file(path: PathBuf, origin: Origin) -> Candidate {
    let meta = std::fs::metadata(&path);
    check_file_with(path, origin, meta)
}

/// [`check_file`] with the file's metadata already read (symlinks followed).
fn check_file_with(
    path: PathBuf,
    origin: Origin,
    meta: std::io::Result<std::fs::Metadata>,
) -> Candidate {
    let identity = meta.as_ref().ok().and_then(file_identity);
    let problem = match meta {
        Ok(meta) if meta.is_dir() => {
            Some("is a directory, not a plugin library; name the library file itself".to_owned())
        }
        Ok(meta) if !meta.is_file() => Some(format!(
            "is {}, not a plugin library; only regular files are loaded",
            crate::plugin_files::files::kind_of(&meta.file_type())
        )),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::read_link(&path) {
            Ok(target) => Some(format!(
                "is a dangling symlink (its target {} does not exist); fix or remove the link",
                target.display()
            )),
            Err(_) => Some("file not found; check the path".to_owned()),
        },
        Err(e) => Some(format!("cannot access the file: {e}")),
    };
    Candidate {
        path,
        origin,
        problem,
        identity,
        package: None,
    }
}

/// The device and inode of a file (Unix): the same file however it was reached (symlinks,
/// `./`, `..`), at the cost of the `stat` discovery makes anyway.
fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}
