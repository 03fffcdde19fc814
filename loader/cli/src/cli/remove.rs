//! `pi-hooks remove NAME [-l]`: the package's entry in `packages` and its files go, the way pi
//! removes them: a package in pi-hooks' store loses its folder, an `npm:` one is uninstalled
//! with npm (the user's `npmCommand` honoured, never a project's), a git one loses its clone. A package pi installed is
//! removed the same way (found in `packages` by its name).

use std::path::Path;
use std::process::ExitCode;

use super::{CommandError, current_dir, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::installed::listed_packages;
use pi_hooks_host::packages::pi_sources::{PiSource, project_npm_root};
use pi_hooks_host::packages::store::{Scope, Store, entry_source};
use pi_hooks_host::plugin_files::paths::agent_dir;

/// The arguments of `pi-hooks remove`.
#[derive(Debug, clap::Args)]
pub(super) struct RemoveArgs {
    /// The package's name (as `pi-hooks list` shows it).
    name: String,
    /// Remove it from this project's packages instead of yours.
    #[arg(short = 'l', long = "local")]
    local: bool,
}

/// `pi-hooks remove`.
pub(super) fn remove(args: RemoveArgs) -> Result<ExitCode, CommandError> {
    let agent = agent_dir().map_err(CommandError::setup)?;
    let cwd = current_dir();
    let scope = if args.local {
        Scope::Project
    } else {
        Scope::User
    };
    let store = Store::new(scope, &agent, &cwd);
    let _lock = store.lock().map_err(CommandError::failed)?;
    // A settings file the entry cannot be removed from is said before anything is removed.
    store
        .check_settings()
        .map_err(|e| CommandError::failed(format!("nothing was removed: {e}")))?;
    // The package as `packages` lists it: its entry and folder, by its name.
    let listed = listed_packages(&store, &agent, &cwd)
        .into_iter()
        .filter_map(Result::ok)
        .find(|p| {
            p.record.as_ref().map(|r| r.name.as_str()) == Some(args.name.as_str())
                || p.package.as_ref().map(|p| p.name.as_str()) == Some(args.name.as_str())
        });
    let Some(listed) = listed else {
        // A record whose entry is gone from `packages` (pi removed it): tidy it away.
        if let Some(record) = store.remove(&args.name).map_err(CommandError::failed)? {
            write_stdout(&format!(
                "Removed the leftover record of {} {}\n",
                record.name, record.version
            ))?;
            return Ok(ExitCode::SUCCESS);
        }
        return Err(CommandError::failed(format!(
            "no package {} is installed{}; `pi-hooks list` shows them",
            escape(&args.name),
            if args.local { " for this project" } else { "" }
        )));
    };
    let in_store = listed.record.as_ref().is_some_and(|r| r.location.is_none());
    if !in_store {
        match PiSource::parse(&listed.source) {
            PiSource::Npm { name, .. } => npm_uninstall(&cwd, scope, &name, &listed.folder)?,
            PiSource::Git { host, path, .. } => {
                remove_clone(&agent, &cwd, scope, &host, &path).map_err(CommandError::failed)?
            }
            // A local folder is the user's own: only its entry goes, as with pi.
            PiSource::Local { .. } => {}
        }
    }
    if listed.record.is_some() {
        store.remove(&args.name).map_err(CommandError::failed)?;
    } else {
        store
            .update_settings_packages(|list| {
                list.retain(|entry| entry_source(entry) != Some(listed.source.as_str()));
            })
            .map_err(CommandError::failed)?;
    }
    let version = listed.package.as_ref().map_or_else(
        || {
            listed
                .record
                .as_ref()
                .map(|r| r.version.clone())
                .unwrap_or_default()
        },
        |p| p.version.clone(),
    );
    let mut text = format!(
        "Removed {} {} (and its entry {} in {})\n",
        escape(&args.name),
        escape(&version),
        escape(&listed.source),
        store.settings.display()
    );
    text.push_str(&kept(&store, &agent, &args.name));
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// What `remove` leaves behind on purpose, said so that nothing stays unseen: the plugin's
/// own data folder (`${data}`, the user's data, never deleted for them) and the record of the
/// signer and capabilities accepted for it (so a reinstall of the same asks nothing new, and
/// one that asks for more is still refused until granted).
fn kept(store: &Store, agent: &Path, name: &str) -> String {
    let mut text = String::new();
    if let Ok(package) = pi_hooks_host::identity::PackageName::parse(name) {
        let data = pi_hooks_host::identity::PluginIdentity::Package(package).data_dir(agent);
        if data.is_dir() {
            text.push_str(&format!(
                "Kept its data folder {} (delete it to forget what the plugin stored)\n",
                escape(&data.display().to_string())
            ));
        }
    }
    if pi_hooks_host::packages::first_seen::read(store, name).is_some() {
        text.push_str(
            "Kept the record of the signer and capabilities you accepted for it (installed \
             again, it asks nothing new unless it asks for more)\n",
        );
    }
    text
}

/// Removes the git clone of `host`/`path` where pi keeps it for `scope` (`<agentDir>/git/...`
/// or `<cwd>/.pi/git/...`), and only there: each folder on the way is opened without
/// following a link, so a link a cloned repository planted leads nowhere.
fn remove_clone(
    agent: &Path,
    cwd: &Path,
    scope: Scope,
    host: &str,
    path: &str,
) -> Result<(), String> {
    use pi_hooks_host::plugin_files::beneath::Beneath;
    let (root, mut relative) = match scope {
        Scope::User => (agent, std::path::PathBuf::from("git")),
        Scope::Project => (cwd, Path::new(".pi").join("git")),
    };
    relative.push(host);
    relative.push(path);
    let last = relative
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("{} is not a clone's folder", relative.display()))?;
    let Some(parent) = relative.parent() else {
        return Ok(());
    };
    match Beneath::open(root, false)?.dir(parent, false)? {
        Some(folder) => folder.remove(&last),
        None => Ok(()),
    }
}

/// `npm uninstall` of `name` where pi installed it for `scope` (for the user: pi 0.75+'s
/// `<agentDir>/npm` when its `folder` is there, else npm's global folder).
fn npm_uninstall(cwd: &Path, scope: Scope, name: &str, folder: &Path) -> Result<(), CommandError> {
    let npm = super::install::npm_command()?;
    let managed = agent_dir()
        .ok()
        .map(|agent| pi_hooks_host::packages::pi_sources::pi_npm_root(&agent))
        .filter(|root| scope == Scope::User && folder.starts_with(root));
    let mut command = match scope {
        Scope::User if managed.is_some() => {
            let mut command = npm.command(&["uninstall", name, "--ignore-scripts", "--prefix"]);
            command.arg(managed.as_deref().unwrap_or(folder));
            command
        }
        // Lifecycle scripts off, as at install.
        Scope::User => npm.command(&["uninstall", "-g", name, "--ignore-scripts"]),
        Scope::Project => {
            let mut command = npm.command(&["uninstall", name, "--ignore-scripts", "--prefix"]);
            command.arg(project_npm_root(cwd));
            command
        }
    };
    let output = command
        .current_dir(super::install::npm_folder(scope, cwd).map_err(CommandError::failed)?)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            CommandError::failed(format!(
                "cannot run `{} uninstall {name}`: {e}",
                npm.shown()
            ))
        })?;
    if !output.status.success() {
        return Err(CommandError::failed(format!(
            "`{} uninstall {name}` failed ({}): {}; nothing was changed",
            npm.shown(),
            output.status,
            escape(String::from_utf8_lossy(&output.stderr).trim())
        )));
    }
    Ok(())
}
