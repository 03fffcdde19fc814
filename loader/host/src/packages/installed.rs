//! The native packages a scope's `packages` lists, wherever they were put: by pi-hooks into
//! its store (a `.tgz` or a folder), or by pi or pi-hooks where pi puts npm and git packages
//! ([`super::pi_sources`]), or a local folder. Entries that are not pi-hooks packages (pi's
//! TypeScript packages) are passed over. Nothing here runs plugin code.
//!
//! A package in pi-hooks' store loads with the SHA-256 recorded at its install. One in pi's
//! places is checked from its own `package.json` each time: its signature (against the key
//! pinned at install when pi-hooks installed it; the signature covers every file of the
//! folder but its `node_modules/`, so a file added, removed or changed since signing is
//! refused), the library for this platform, its ABI and
//! the host version it needs; the library then loads only if its bytes have the manifest's
//! SHA-256 (a `pi update` brings a new version, whose manifest says what its bytes are).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::{PACKAGE_KEY, PackageJson, parse_package_json};
use super::pi_sources::{NpmCommand, PiSource, install_dir};
use super::platform::host_platform;
use super::store::{InstallRecord, Scope, Store, settings_packages};

/// A package plugin for discovery: the library to load and the SHA-256 it must have.
#[derive(Debug, Clone)]
pub struct PackagePlugin {
    /// The package's name.
    pub name: String,
    /// The library file.
    pub library: PathBuf,
    /// The SHA-256 it must have (recorded at install, or the manifest's).
    pub sha256: String,
    /// Its version.
    pub version: String,
    /// Its capabilities: those the user accepted when pi-hooks installed it, else those its
    /// manifest declares (a package pi installed); `None`: it declares none.
    pub capabilities: Option<super::manifest::Capabilities>,
    /// The records of its scope (where the check of its library's bytes is kept).
    pub records: super::records::Records,
    /// For a package pi installed (never checked by an install of pi-hooks'): the plugin its
    /// manifest names, which the library's information block must name at each load.
    pub plugin: Option<String>,
}

/// A native package a scope's `packages` lists.
#[derive(Debug, Clone)]
pub struct ListedPackage {
    /// Its `packages` entry.
    pub source: String,
    /// Its folder.
    pub folder: PathBuf,
    /// What pi-hooks recorded when it installed it (`None`: installed by pi).
    pub record: Option<InstallRecord>,
    /// Its `package.json`, read now (`None` for a package in pi-hooks' store, whose record
    /// says what was verified).
    pub package: Option<PackageJson>,
}

/// One `packages` entry that is a native package: its plugin, or why it cannot load.
pub type Listed = Result<PackagePlugin, (PathBuf, String)>;

/// The plugins of the native packages `store`'s settings list, in the settings' order.
pub fn package_plugins(store: &Store, agent_dir: &Path, cwd: &Path) -> Vec<Listed> {
    listed_packages(store, agent_dir, cwd)
        .into_iter()
        .filter_map(|listed| match listed {
            Ok(package) => plugin_of(&package, store),
            Err(problem) => Some(Err(problem)),
        })
        .collect()
}

/// The native packages `store`'s settings list, in order; entries that are not pi-hooks
/// packages (or not installed) are left out, ones that cannot be read are errors. npm is run
/// (`npm root -g`, for a user `npm:` entry pi-hooks did not install) as the user's own
/// settings say, never as a project's.
pub fn listed_packages(
    store: &Store,
    agent_dir: &Path,
    cwd: &Path,
) -> Vec<Result<ListedPackage, (PathBuf, String)>> {
    let sources = settings_packages(&store.settings);
    if sources.is_empty() {
        return Vec::new();
    }
    let records = store.installed();
    let mut npm: Option<Result<NpmCommand, String>> = None;
    let mut out = Vec::new();
    // An install record that is there but cannot be read (a grant that is not one, a
    // broken file) is said, and its package is not loaded (`plugin_of`), rather than
    // loaded as if pi-hooks had never recorded what the user accepted.
    for (file, why) in store
        .records
        .unreadable::<super::store::InstallRecord>(super::records::Kind::Install)
    {
        out.push(Err((
            file,
            format!(
                "{why}; the package it records was not loaded. Reinstall it (`pi-hooks install <source>`) or remove the record"
            ),
        )));
    }
    for source in sources {
        let record = records.iter().find(|r| r.source == source).cloned();
        // In the store, unless an install killed halfway left its folder aside (the store
        // mends it at its next change): then the entry loads as pi loads it.
        if let Some(record) = &record
            && record.location.is_none()
            && store.package_dir(&record.name).is_dir()
        {
            out.push(Ok(ListedPackage {
                folder: store.package_dir(&record.name),
                source,
                record: Some(record.clone()),
                package: None,
            }));
            continue;
        }
        let parsed = PiSource::parse(&source);
        let npm = npm.get_or_insert_with(|| NpmCommand::from_user_settings(agent_dir));
        // pi's place first for a user's npm package (`pi update --extensions` moves one
        // pi-hooks installed in npm's global folder there, leaving the old copy behind).
        let managed = match (&parsed, store.scope) {
            (PiSource::Npm { name, .. }, Scope::User) => Some(
                super::pi_sources::pi_npm_root(agent_dir)
                    .join("node_modules")
                    .join(name),
            )
            .filter(|managed| managed.is_dir()),
            _ => None,
        };
        let folder = match managed.or_else(|| record.as_ref().and_then(|r| r.location.clone())) {
            Some(location) => location,
            None => match npm
                .as_ref()
                .map_err(Clone::clone)
                .and_then(|npm| install_dir(&parsed, store.scope, agent_dir, cwd, npm))
            {
                Ok(folder) => folder,
                Err(e) => {
                    out.push(Err((
                        store.settings.clone(),
                        format!("package {source}: {e}"),
                    )));
                    continue;
                }
            },
        };
        let json = folder.join("package.json");
        let Ok(bytes) = crate::plugin_files::files::read_regular(&json, 1 << 20) else {
            // A folder without a package.json, or a single-file extension of pi's: not a
            // pi-hooks package. Nothing at all where pi puts it: said, since whether it is
            // a native package (a guard, say) cannot be known, and a guard that is silently
            // missing is the worst outcome (issue 33).
            if std::fs::symlink_metadata(&folder).is_err() {
                out.push(Err((
                    store.settings.clone(),
                    not_installed(&source, &parsed, store.scope, &folder, agent_dir),
                )));
            }
            continue;
        };
        let is_ours = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .is_some_and(|v| v.get(PACKAGE_KEY).is_some());
        if !is_ours {
            continue;
        }
        match parse_package_json(&bytes) {
            Ok(package) => out.push(Ok(ListedPackage {
                source,
                folder,
                record,
                package: Some(package),
            })),
            Err(e) => out.push(Err((json, format!("package {source}: {e}")))),
        }
    }
    out
}

/// What is said of a `packages` entry with nothing where pi puts it: where it was looked
/// for and what to do. pi installs a missing package when it starts (a project's once the
/// project is trusted); pi-hooks installs nothing when a host starts.
fn not_installed(
    source: &str,
    parsed: &PiSource,
    scope: Scope,
    folder: &Path,
    agent_dir: &Path,
) -> String {
    use crate::guards::display::escape;
    let looked = match (parsed, scope) {
        (PiSource::Npm { name, .. }, Scope::User) => {
            let managed = super::pi_sources::pi_npm_root(agent_dir)
                .join("node_modules")
                .join(name);
            if managed == folder {
                escape(&folder.display().to_string()).into_owned()
            } else {
                format!(
                    "{}, where pi 0.75 and later install it, and in {}, npm's global folder",
                    escape(&managed.display().to_string()),
                    escape(&folder.display().to_string())
                )
            }
        }
        _ => escape(&folder.display().to_string()).into_owned(),
    };
    if let PiSource::Local { .. } = parsed {
        return format!(
            "package {} is listed but its folder {looked} does not exist. If it is a native plugin, it is not running. Fix the path or remove the entry",
            escape(source)
        );
    }
    let local = if scope == Scope::Project { " -l" } else { "" };
    format!(
        "package {} is listed but not installed (looked in {looked}). If it is a native plugin, it is not running. Install it (`pi install{local} {}` or `pi-hooks install{local} {}`) or remove the entry",
        escape(source),
        escape(source),
        escape(source)
    )
}

/// The plugin of a listed package, checked as the module's documentation says.
fn plugin_of(listed: &ListedPackage, store: &Store) -> Option<Listed> {
    let Some(package) = &listed.package else {
        let record = listed.record.as_ref()?;
        return Some(Ok(PackagePlugin {
            name: record.name.clone(),
            library: store.package_dir(&record.name).join(&record.library),
            sha256: record.sha256.clone(),
            version: record.version.clone(),
            capabilities: record.capabilities.clone(),
            records: store.records.clone(),
            plugin: None,
        }));
    };
    let json = listed.folder.join("package.json");
    let what = format!(
        "package {} {} ({})",
        package.name, package.version, listed.source
    );
    if listed.record.is_none()
        && let Err(why) = store.records.read_checked::<super::store::InstallRecord>(
            super::records::Kind::Install,
            &super::records::RecordKey::package(&package.name),
        )
    {
        return Some(Err((
            json,
            format!(
                "{what}: {why}; it was not loaded rather than loaded with what it asks for now. Reinstall it (`pi-hooks install <source>`) or remove the record"
            ),
        )));
    }
    // A package pi installed: what pi-hooks first saw of it is what the user accepted.
    let mut seen_grant = None;
    let checked = super::verify::verify_installed_signature(
        package,
        &listed.folder,
        &store.records,
        &what,
    )
    .and_then(|signer| {
        if store.scope == Scope::Project {
            let library = super::verify::check_library(package, host_platform(), &what)?;
            own_files(store, &listed.folder, &library.path, &what)?;
        }
        if listed.record.is_none() {
            let key = signer.as_ref().map(|s| s.public_key.as_str());
            seen_grant = Some(super::first_seen::check(store, package, key, &what)?);
        }
        if let Some(pinned) = listed.record.as_ref().and_then(|r| r.signer.as_ref())
            && signer.as_ref().map(|s| &s.public_key) != Some(pinned)
        {
            return Err(format!(
                "{what} {}, not by the key {pinned} pinned when pi-hooks installed it; if its publisher changed keys, `pi-hooks update {} --accept-new-signer --yes`",
                signer.map_or("is unsigned".to_owned(), |s| format!(
                    "is signed by key {}",
                    s.public_key
                )),
                package.name
            ));
        }
        super::verify::check_library(package, host_platform(), &what)
    });
    Some(match checked {
        Ok(library) => Ok(PackagePlugin {
            name: package.name.to_string(),
            library: listed.folder.join(&library.path),
            sha256: library.sha256,
            version: package.version.clone(),
            capabilities: match &listed.record {
                Some(record) => record.capabilities.clone(),
                None => seen_grant.flatten(),
            },
            records: store.records.clone(),
            plugin: Some(package.manifest.plugin.name.clone()),
        }),
        Err(e) => Err((json, e)),
    })
}

/// A project's package read from its `package.json` uses only its own files: its folder is
/// not in pi-hooks' store (a package there loads only through the entry pi-hooks recorded),
/// and its library is not a link leading out of its folder. Either would let a repository
/// pair a library the user trusted (trust is kept by file) with a grant of its choosing:
/// the store's package listed again under another source with its `capabilities` removed, or
/// a package of its own whose library links to a trusted one.
fn own_files(store: &Store, folder: &Path, library: &str, what: &str) -> Result<(), String> {
    let Ok(canonical) = std::fs::canonicalize(folder) else {
        return Ok(());
    };
    if let Ok(pi_hooks_store) = std::fs::canonicalize(&store.dir)
        && canonical.starts_with(&pi_hooks_store)
    {
        return Err(format!(
            "{what}: its folder {} is in pi-hooks' store, where a package loads only through the entry `pi-hooks install` recorded; it was not loaded. Remove this entry from the project's settings.json (`pi-hooks install -l` installs a package for the project)",
            crate::guards::display::escape(&folder.display().to_string())
        ));
    }
    let path = folder.join(library);
    match std::fs::canonicalize(&path) {
        Ok(resolved) if !resolved.starts_with(&canonical) => Err(format!(
            "{what}: its library {} leads out of the package's folder (to {}); it was not loaded. A project package's library must be a file of its own",
            crate::guards::display::escape(&path.display().to_string()),
            crate::guards::display::escape(&resolved.display().to_string())
        )),
        _ => Ok(()),
    }
}

/// The scopes in pi's order for packages: the project's, then the user's.
pub const SCOPES: [Scope; 2] = [Scope::Project, Scope::User];
