//! `pi-hooks install SOURCE [-l] [--yes]` and `pi-hooks update [NAME]`.
//!
//! SOURCE is a package tarball (`.tgz`), a package folder, an npm package (`npm:SPEC`, fetched
//! with `npm pack` to be checked, then installed with npm where pi installs it), or a git
//! repository as pi accepts it (`git:host/path[@ref]`, `https://`, `http://`, `ssh://`
//! URLs; `@ref` pins), cloned where pi clones it. The package is fetched into a staging
//! folder, its signature, library, SHA-256, ABI and host version are checked, its declared
//! capabilities are shown and accepted, and only then is it put in place and recorded under
//! `packages` in settings.json as pi records it. No plugin code runs.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{CommandError, current_dir, write_stderr, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::archive::{Limits, extract_tgz};
use pi_hooks_host::packages::manifest::{Capabilities, parse_package_json};
use pi_hooks_host::packages::pi_sources::{self, NpmCommand, PiSource, install_dir};
use pi_hooks_host::packages::platform::host_platform;
use pi_hooks_host::packages::store::{InstallRecord, Scope, Store};
use pi_hooks_host::packages::verify::{Layout, choose_library, verify_signature};
use pi_hooks_host::plugin_files::paths::{agent_dir, resolve};

/// The arguments of `pi-hooks install`.
#[derive(Debug, clap::Args)]
pub(super) struct InstallArgs {
    /// A `.tgz` package, a package folder, or a git URL (`git:github.com/user/repo@v1`,
    /// `https://...`).
    source: String,
    /// Install for this project (`.pi/settings.json`); its plugin loads once trusted.
    #[arg(short = 'l', long = "local")]
    local: bool,
    /// Accept the package's declared capabilities without asking (headless installs).
    #[arg(long)]
    yes: bool,
    /// Accept a package signed by another key than the one pinned at its first install, or
    /// an unsigned one where the installed version was signed.
    #[arg(long)]
    accept_new_signer: bool,
    /// Grant a new version of an installed package more than the version installed was
    /// granted (without it, and without a yes at the prompt, it is refused); it also accepts
    /// the package's capabilities, as --yes does.
    #[arg(long)]
    grant: bool,
    /// Install a version lower than the one installed (without it, and without a yes at the
    /// prompt, it is refused).
    #[arg(long)]
    allow_downgrade: bool,
    /// Replace an installed unsigned package of the same name that came from another source
    /// (another .tgz, folder, npm package or git repository); without it, and without a yes
    /// at the prompt, it is refused. A signed package's signer is its identity instead (see
    /// --accept-new-signer).
    #[arg(long)]
    replace: bool,
}

/// The arguments of `pi-hooks update`.
#[derive(Debug, clap::Args)]
pub(super) struct UpdateArgs {
    /// The package to update (default: every package that is not pinned to a version).
    name: Option<String>,
    /// Update the project's packages instead of yours.
    #[arg(short = 'l', long = "local")]
    local: bool,
    /// Accept the declared capabilities without asking.
    #[arg(long)]
    yes: bool,
    /// See `install --accept-new-signer`.
    #[arg(long)]
    accept_new_signer: bool,
    /// Grant a new version more than the installed one was granted (without it, and
    /// without a yes at the prompt, an update that asks for more is refused).
    #[arg(long)]
    grant: bool,
    /// Accept an update to a version lower than the one installed (see `install
    /// --allow-downgrade`).
    #[arg(long)]
    allow_downgrade: bool,
}

/// `pi-hooks install`.
pub(super) fn install(args: InstallArgs) -> Result<ExitCode, CommandError> {
    let store = store(args.local)?;
    let choices = Choices {
        yes: args.yes,
        accept_new_signer: args.accept_new_signer,
        grant: args.grant,
        allow_downgrade: args.allow_downgrade,
        replace: args.replace,
    };
    let record = install_from(&store, &args.source, None, choices)?;
    let mut text = format!(
        "Installed {} {} ({}) from {}\n",
        escape(&record.name),
        escape(&record.version),
        match store.scope {
            Scope::User => "for you",
            Scope::Project => "for this project",
        },
        escape(&record.origin)
    );
    if store.scope == Scope::Project {
        let library = store.package_dir(&record.name).join(&record.library);
        text.push_str(&format!(
            "  pending trust, as every project plugin: `pi-hooks trust {}` to load it\n",
            escape(&pi_hooks_host::lifecycle::load::shell_quote(
                &library.display().to_string()
            ))
        ));
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `pi-hooks update`.
pub(super) fn update(args: UpdateArgs) -> Result<ExitCode, CommandError> {
    let store = store(args.local)?;
    let choices = Choices {
        yes: args.yes,
        accept_new_signer: args.accept_new_signer,
        grant: args.grant,
        allow_downgrade: args.allow_downgrade,
        replace: false,
    };
    let records = match &args.name {
        Some(name) if store.record(name).is_none() => {
            // One pi installed: pi updates its files (`pi update`); pi-hooks accepts them.
            return accept_pi_installed(&store, name, &args).and_then(|text| {
                write_stdout(&text)?;
                Ok(ExitCode::SUCCESS)
            });
        }
        Some(name) => vec![store.record(name).ok_or_else(|| {
            CommandError::failed(format!(
                "no package {} is installed{}; `pi-hooks list` shows them",
                escape(name),
                if args.local { " for this project" } else { "" }
            ))
        })?],
        // Those still listed in `packages` (pi may have removed one pi-hooks installed); all
        // of them when the list cannot be read (recording the update then says what is
        // wrong with the settings, and changes nothing).
        None => {
            let listed = listed_sources(&store.settings);
            store
                .installed()
                .into_iter()
                .filter(|r| listed.as_ref().is_none_or(|l| l.contains(&r.source)))
                .collect()
        }
    };
    let mut text = String::new();
    for record in records {
        if record.pinned {
            text.push_str(&format!(
                "{} {}: pinned by its source {} (a version or ref), left as it is\n",
                escape(&record.name),
                escape(&record.version),
                escape(&record.source)
            ));
            continue;
        }
        let new = install_from(&store, &record.origin, Some(&record), choices)?;
        text.push_str(&format!(
            "{}: {} -> {}\n",
            escape(&new.name),
            escape(&record.version),
            escape(&new.version)
        ));
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `pi-hooks update NAME` for a package pi installed (no record of pi-hooks'): pi brings its
/// files up to date (`pi update`), and this accepts what they are now, when they are refused
/// because they ask for more than was granted (`--grant`) or have a new signer
/// (`--accept-new-signer`): it shows the package as `install` does and records it.
fn accept_pi_installed(
    store: &Store,
    name: &str,
    args: &UpdateArgs,
) -> Result<String, CommandError> {
    use pi_hooks_host::packages::{first_seen, installed::listed_packages};
    let scope = if args.local { " for this project" } else { "" };
    let agent = agent_dir().map_err(CommandError::setup)?;
    let (source, folder, package) = listed_packages(store, &agent, &current_dir())
        .into_iter()
        .flatten()
        .filter(|l| l.record.is_none())
        .find_map(|l| {
            Some((
                l.source,
                l.folder,
                l.package.filter(|p| p.name.as_str() == name)?,
            ))
        })
        .ok_or_else(|| {
            CommandError::failed(format!(
                "no package {} is installed{scope}; `pi-hooks list` shows them",
                escape(name)
            ))
        })?;
    let what = format!(
        "package {} {} ({})",
        escape(package.name.as_str()),
        escape(&package.version),
        escape(&source)
    );
    let signer = verify_signature(&package, &folder, Layout::Installed, &what)
        .map_err(CommandError::failed)?;
    let key = signer.as_ref().map(|s| s.public_key.clone());
    let seen = first_seen::read(store, name);
    let flag = if args.local { " -l" } else { "" };
    let mut changes = Vec::new();
    if let Some(seen) = &seen {
        let found = first_seen::Changes::between(seen, &package, key.as_deref());
        if let Some(change) = found.signer(&what) {
            if !args.accept_new_signer {
                return Err(CommandError::failed(format!(
                    "{}; to accept the new signer: `pi-hooks update {}{flag} --accept-new-signer`",
                    escape(&change),
                    escape(name)
                )));
            }
            changes.push("its new signer".to_owned());
        }
        if let Some(change) = found.capabilities(&what) {
            if !args.grant {
                return Err(CommandError::failed(format!(
                    "{}; to grant it: `pi-hooks update {}{flag} --grant`",
                    escape(&change),
                    escape(name)
                )));
            }
            changes.push("more capabilities".to_owned());
        }
    }
    first_seen::accept(store, &package, key.as_deref()).map_err(CommandError::failed)?;
    let mut text = format!(
        "{} {} (installed by pi, {}): accepted{}\n  capabilities:\n",
        escape(package.name.as_str()),
        escape(&package.version),
        escape(&source),
        if changes.is_empty() {
            String::new()
        } else {
            format!(" with {}", escape(&changes.join(" and ")))
        }
    );
    for line in Capabilities::describe(package.manifest.capabilities.as_ref()) {
        text.push_str(&format!("    {}\n", escape(&line)));
    }
    text.push_str(
        "  pi updates its files (`pi update`); pi-hooks loads it from the next start or /reload\n",
    );
    Ok(text)
}

/// The sources `packages` lists in `settings`; `None` when it is not a readable list.
fn listed_sources(settings: &Path) -> Option<Vec<String>> {
    let bytes = pi_hooks_host::plugin_files::files::read_regular(
        settings,
        pi_hooks_host::plugin_files::files::MAX_SETTINGS_BYTES,
    )
    .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let list = value.get("packages")?.as_array()?;
    Some(
        list.iter()
            .filter_map(pi_hooks_host::packages::store::entry_source)
            .map(str::to_owned)
            .collect(),
    )
}

#[derive(Debug, Clone, Copy)]
struct Choices {
    yes: bool,
    accept_new_signer: bool,
    /// A new version may be granted more than the installed one.
    grant: bool,
    /// A version lower than the installed one may be installed.
    allow_downgrade: bool,
    /// An unsigned package may replace an installed one of the same name from another source.
    replace: bool,
}

fn store(local: bool) -> Result<Store, CommandError> {
    let agent = agent_dir().map_err(CommandError::setup)?;
    let scope = if local { Scope::Project } else { Scope::User };
    Ok(Store::new(scope, &agent, &current_dir()))
}

/// The kinds of source `install` takes.
enum Source {
    Tarball(PathBuf),
    Folder(PathBuf),
    Git {
        url: String,
        reference: Option<String>,
    },
    /// `npm:SPEC`: fetched with `npm pack` to be checked, then installed with npm where pi
    /// installs it.
    Npm {
        spec: String,
        pinned: bool,
    },
}

fn parse_source(source: &str) -> Result<Source, CommandError> {
    if let PiSource::Npm { spec, pinned, name } = PiSource::parse(source) {
        // The spec reaches npm as one argument: one starting with `-` would be an option.
        if spec.starts_with('-') {
            return Err(CommandError::failed(format!(
                "{}: an npm spec cannot start with `-`; give a package name (`npm:NAME[@VERSION]`)",
                escape(source)
            )));
        }
        pi_hooks_host::identity::PackageName::parse(&name).map_err(|e| {
            CommandError::failed(format!(
                "{}: {e}; give a package name (`npm:NAME[@VERSION]`)",
                escape(source)
            ))
        })?;
        return Ok(Source::Npm { spec, pinned });
    }
    let git = source.strip_prefix("git:").map(str::to_owned).or_else(|| {
        ["https://", "http://", "ssh://", "git://"]
            .iter()
            .any(|p| source.starts_with(p))
            .then(|| source.to_owned())
    });
    if let Some(url) = git {
        let (url, reference) = match url.rsplit_once('@') {
            Some((head, tail))
                if !head.is_empty() && !tail.is_empty() && !tail.contains(['/', ':']) =>
            {
                (head.to_owned(), Some(tail.to_owned()))
            }
            _ => (url, None),
        };
        // The URL and the ref reach git as arguments: one starting with `-` would be an option
        // (`--upload-pack=...` runs a program), so it is refused before git runs.
        if url.starts_with('-') || reference.as_deref().is_some_and(|r| r.starts_with('-')) {
            return Err(CommandError::failed(format!(
                "{}: a git URL or ref cannot start with `-`; give a repository URL (`git:host/path[@ref]`, `https://...`)",
                escape(source)
            )));
        }
        // pi's shorthand (`github.com/user/repo`) is https.
        let url = if url.contains("://") || url.starts_with('/') || url.contains('@') {
            url
        } else {
            format!("https://{url}")
        };
        return Ok(Source::Git { url, reference });
    }
    let path = resolve(source, &current_dir());
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Ok(Source::Folder(path)),
        Ok(meta) if meta.is_file() => Ok(Source::Tarball(path)),
        Ok(_) => Err(CommandError::failed(format!(
            "{} is not a file or folder; give a .tgz package, a package folder or a git URL",
            escape(&path.display().to_string())
        ))),
        Err(e) => Err(CommandError::failed(format!(
            "{}: {e}; give a .tgz package, a package folder or a git URL",
            escape(&path.display().to_string())
        ))),
    }
}

/// Fetches, verifies, asks and installs `source` in `store`. `previous` is the record an
/// update replaces.
fn install_from(
    store: &Store,
    source: &str,
    previous: Option<&InstallRecord>,
    choices: Choices,
) -> Result<InstallRecord, CommandError> {
    let parsed = parse_source(source)?;
    let fail = |e: String| CommandError::failed(e);
    // One install or removal at a time per store: the lock is held until the settings are
    // written.
    let _lock = store.lock().map_err(fail)?;
    let shown = escape(source);
    // A settings file `packages` cannot be recorded in is said before anything is fetched.
    store
        .check_settings()
        .map_err(|e| fail(format!("{shown} was not installed: {e}")))?;
    let staging = store.staging().map_err(fail)?;
    // A git clone to put where pi keeps it, once accepted: (its folder, the target).
    let mut git_clone: Option<(tempfile::TempDir, PathBuf)> = None;
    let (recorded_source, pinned) = match &parsed {
        Source::Tarball(path) => {
            let file = pi_hooks_host::plugin_files::files::open_regular(path)
                .map_err(|e| fail(format!("cannot open {shown}: {e}")))?;
            extract_tgz(file, staging.path(), Limits::from_env(), &shown).map_err(fail)?;
            (None, false)
        }
        Source::Folder(path) => {
            copy_folder(path, staging.path(), Limits::from_env(), &shown).map_err(fail)?;
            (Some(path.display().to_string()), false)
        }
        Source::Git { url, reference } => {
            // Where pi clones it (`<agentDir>/git/HOST/PATH`, `.pi/git/...` for a project):
            // the clone is made beside that folder and moved there once accepted. A URL pi
            // does not take (`file://`) is copied into pi-hooks' store instead.
            let target = match PiSource::parse(source) {
                PiSource::Git { .. } => {
                    let agent = agent_dir().map_err(CommandError::setup)?;
                    Some(
                        install_dir(
                            &PiSource::parse(source),
                            store.scope,
                            &agent,
                            &current_dir(),
                            &NpmCommand(vec!["npm".into()]),
                        )
                        .map_err(fail)?,
                    )
                }
                _ => None,
            };
            let clone = match target.as_ref().and_then(|t| t.parent()) {
                Some(parent) => {
                    // Where pi keeps clones (`<agentDir>/git`, `.pi/git`): no link on the way.
                    let root = match store.scope {
                        Scope::User => agent_dir().map_err(CommandError::setup)?,
                        Scope::Project => current_dir(),
                    };
                    let relative = parent.strip_prefix(&root).map_err(|_| {
                        fail(format!(
                            "the clone's folder {} is not under {}",
                            parent.display(),
                            root.display()
                        ))
                    })?;
                    pi_hooks_host::plugin_files::beneath::Beneath::open(&root, true)
                        .and_then(|root| root.dir(relative, true))
                        .map_err(fail)?;
                    tempfile::Builder::new()
                        .prefix(".pi-hooks-clone-")
                        .tempdir_in(parent)
                }
                None => tempfile::tempdir(),
            }
            .map_err(|e| fail(format!("cannot clone: {e}")))?;
            let repo = clone.path().join("repo");
            // The source after `--`: never an option of git's; `ext::` (a command as a
            // transport) never allowed whatever the user's git configuration says.
            let output = std::process::Command::new("git")
                .env("GIT_TERMINAL_PROMPT", "0")
                .args(["-c", "protocol.ext.allow=never", "clone", "--quiet", "--"])
                .arg(url)
                .arg(&repo)
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| fail(format!("cannot run git: {e}; is git installed?")))?;
            let output = match reference {
                Some(reference) if output.status.success() => std::process::Command::new("git")
                    .args(["checkout", "--quiet", "--end-of-options", reference])
                    .current_dir(&repo)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| fail(format!("cannot run git: {e}")))?,
                _ => output,
            };
            if !output.status.success() {
                return Err(fail(format!(
                    "git could not clone {shown}: {}",
                    escape(String::from_utf8_lossy(&output.stderr).trim())
                )));
            }
            copy_folder(&repo, staging.path(), Limits::from_env(), &shown).map_err(fail)?;
            if let Some(target) = target {
                git_clone = Some((clone, target));
            }
            (Some(source.to_owned()), reference.is_some())
        }
        Source::Npm { spec, pinned } => {
            let npm = npm_command()?;
            let tgz = npm_pack(&npm, spec).map_err(fail)?;
            let file = std::fs::File::open(tgz.path())
                .map_err(|e| fail(format!("cannot open what npm fetched for {shown}: {e}")))?;
            extract_tgz(file, staging.path(), Limits::from_env(), &shown).map_err(fail)?;
            (Some(format!("npm:{spec}")), *pinned)
        }
    };
    let json_bytes = pi_hooks_host::plugin_files::files::read_regular(
        &staging.path().join("package.json"),
        1 << 20,
    )
    .map_err(|e| fail(format!("{shown}: package.json {e}")))?;
    let package = parse_package_json(&json_bytes).map_err(|e| fail(format!("{shown}: {e}")))?;
    let what = format!(
        "package {} {} ({shown})",
        escape(package.name.as_str()),
        escape(&package.version)
    );
    let signer = verify_signature(&package, staging.path(), Layout::Packed, &what).map_err(fail)?;
    let installed = previous
        .cloned()
        .or_else(|| store.record(package.name.as_str()));
    if let Some(old) = &installed
        && old.signer.is_some()
        && old.signer != signer.as_ref().map(|s| s.public_key.clone())
    {
        let now = signer.as_ref().map_or("is unsigned".to_owned(), |s| {
            format!("is signed by key {}", s.public_key)
        });
        let question = format!(
            "{what} {}, and the installed version {} was signed by key {} (pinned at its first install)",
            escape(&now),
            escape(&old.version),
            escape(old.signer.as_deref().unwrap_or_default())
        );
        if !choices.accept_new_signer && !confirm(&format!("{question}. Accept the new signer?")) {
            return Err(fail(format!(
                "{question}; refused, nothing was changed. If the publisher changed keys, install with --accept-new-signer"
            )));
        }
    }
    if let Some(old) = &installed {
        check_replacement(old, &package, source, previous.is_some(), choices).map_err(fail)?;
    }
    let chosen = choose_library(&package, staging.path(), host_platform(), &what).map_err(fail)?;
    let manifest = &package.manifest;
    let mut summary = format!(
        "{} {}: {}\n  library: {} (ABI {}, sha256 {})\n  signed: {}\n  capabilities:\n",
        escape(package.name.as_str()),
        escape(&package.version),
        escape(&manifest.plugin.description),
        escape(&chosen.platform),
        escape(&chosen.library.abi),
        escape(&chosen.library.sha256),
        signer.as_ref().map_or("no".to_owned(), |s| format!(
            "by key {}",
            escape(&s.public_key)
        ))
    );
    for line in Capabilities::describe(manifest.capabilities.as_ref()) {
        summary.push_str(&format!("    {}\n", escape(&line)));
    }
    summary.push_str(if manifest.capabilities.is_some() {
        "  (accepted capabilities are its grant: on Linux it runs isolated and confined to them)"
    } else {
        "  (it declares no capabilities: accepted, it runs unconfined, with everything your user can do)"
    });
    write_stderr(&summary);
    if let Some(old) = &installed {
        let more = pi_hooks_host::sandbox::grant::asks_for_more(
            old.capabilities.as_ref(),
            manifest.capabilities.as_ref(),
        );
        if !more.is_empty() {
            let question = format!(
                "{what} asks for more than you granted {} {}: {}",
                escape(&old.name),
                escape(&old.version),
                escape(&more.join("; "))
            );
            if !choices.grant && !confirm(&format!("{question}. Grant it?")) {
                let command = if previous.is_some() {
                    format!("pi-hooks update {} --grant", escape(&old.name))
                } else {
                    format!("pi-hooks install {source} --grant")
                };
                return Err(fail(format!(
                    "{question}; refused, nothing was changed (the installed version keeps its grant). To grant it: `{}`",
                    escape(&command)
                )));
            }
        }
    }
    // `--grant` is the answer the refusal asked for: it accepts these capabilities too, so the
    // command printed above works as it is, also without a terminal.
    if !choices.yes && !choices.grant && !confirm("Install it with these capabilities?") {
        return Err(fail(format!(
            "{what} was not installed: its capabilities were not accepted (headless: pass --yes to accept them)"
        )));
    }
    let package_dir = store.package_dir(package.name.as_str());
    let mut source_entry = recorded_source.unwrap_or_else(|| package_dir.display().to_string());
    let (staging, location) = match &parsed {
        Source::Npm { spec, .. } => {
            // The same entry pi would keep: one already listed for this npm name stays.
            let base = pi_hooks_host::packages::pi_sources::base_dir(
                store.scope,
                &agent_dir().map_err(CommandError::setup)?,
                &current_dir(),
            );
            let identity = PiSource::parse(&source_entry).identity(&base);
            if let Some(listed) = pi_hooks_host::packages::store::settings_packages(&store.settings)
                .into_iter()
                .find(|entry| PiSource::parse(entry).identity(&base) == identity)
            {
                source_entry = listed;
            }
            let folder = npm_install(&npm_command()?, spec, store.scope, |folder| {
                check_installed(folder, staging.path(), &what)
            })
            .map_err(fail)?;
            // The store keeps only the record: the files are where npm put them.
            drop(staging);
            (store.staging().map_err(fail)?, Some(folder))
        }
        _ => match git_clone.take() {
            Some((clone, target)) => {
                put_clone_in_place(&clone.path().join("repo"), &target, &npm_command()?)
                    .map_err(fail)?;
                drop(staging);
                (store.staging().map_err(fail)?, Some(target))
            }
            None => (staging, None),
        },
    };
    let record = InstallRecord {
        name: package.name.to_string(),
        version: package.version.clone(),
        location,
        replaces_source: installed
            .as_ref()
            .map(|old| old.source.clone())
            .filter(|old| *old != source_entry),
        source: source_entry,
        origin: match &parsed {
            Source::Tarball(path) | Source::Folder(path) => path.display().to_string(),
            Source::Git { .. } | Source::Npm { .. } => source.to_owned(),
        },
        pinned,
        signer: signer.map(|s| s.public_key),
        platform: chosen.platform,
        library: chosen.library.path,
        sha256: chosen.library.sha256,
        abi: chosen.library.abi,
        description: manifest.plugin.description.clone(),
        registers: manifest.plugin.registers.clone(),
        capabilities: manifest.capabilities.clone(),
    };
    store
        .commit(staging, &record)
        .map_err(|e| fail(format!("{what} was not installed: {e}")))?;
    Ok(record)
}

/// How npm is run for the user's commands: the `npmCommand` of the user's own settings.json
/// (never a project's: a cloned repository's settings do not choose a program pi-hooks runs;
/// said once on stderr when the project sets one).
pub(super) fn npm_command() -> Result<NpmCommand, CommandError> {
    static NOTICE: std::sync::Once = std::sync::Once::new();
    let agent = agent_dir().map_err(CommandError::setup)?;
    NOTICE.call_once(|| {
        if let Some(notice) = NpmCommand::ignored_in_project(&agent, &current_dir()) {
            write_stderr(&format!("pi-hooks: {notice}"));
        }
    });
    NpmCommand::from_user_settings(&agent).map_err(CommandError::failed)
}

/// Fetches the tarball of `spec` with `npm pack` (nothing of it runs), in a temporary folder.
fn npm_pack(npm: &NpmCommand, spec: &str) -> Result<tempfile::NamedTempFile, String> {
    let shown_spec = escape(spec);
    let download =
        tempfile::tempdir().map_err(|e| format!("cannot make a download folder: {e}"))?;
    let output = npm
        .command(&["pack", spec, "--json", "--ignore-scripts", "--pack-destination"])
        .arg(download.path())
        .current_dir(download.path())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{} pack {shown_spec}`: {e}; install node and npm, or set `npmCommand` in settings.json", npm.shown()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "npm could not fetch {shown_spec} (`{} pack {shown_spec}`, {}): {}",
            npm.shown(),
            output.status,
            escape(stderr.trim())
        ));
    }
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let Some(filename) = report[0]["filename"].as_str() else {
        return Err(format!(
            "`{} pack {shown_spec} --json` did not say which file it wrote: {}",
            npm.shown(),
            escape(String::from_utf8_lossy(&output.stdout).trim())
        ));
    };
    // npm names a scoped package's file `scope-name-version.tgz`.
    let path = download
        .path()
        .join(filename.trim_start_matches('@').replace('/', "-"));
    let mut kept =
        tempfile::NamedTempFile::new().map_err(|e| format!("cannot keep the download: {e}"))?;
    let mut file =
        std::fs::File::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    std::io::copy(&mut file, kept.as_file_mut())
        .map_err(|e| format!("cannot keep the download: {e}"))?;
    Ok(kept)
}

/// npm's `git` setting given on its command line, which wins over an `.npmrc` in the folder
/// npm runs for (a project's `.pi/npm`, a clone): such a file, which a repository controls,
/// could otherwise name a program of its own to run as git for a git dependency.
const NPM_OWN_GIT: &str = "--git=git";

/// The folder npm runs in for `scope`: for the user, the agent directory (a user-scope
/// command never reads a `.npmrc` or `package.json` of the project it is typed in); for the
/// project, the project.
pub(super) fn npm_folder(scope: Scope, cwd: &Path) -> Result<PathBuf, String> {
    match scope {
        Scope::User => {
            let agent = agent_dir()?;
            std::fs::create_dir_all(&agent)
                .map_err(|e| format!("cannot create {}: {e}", agent.display()))?;
            Ok(agent)
        }
        Scope::Project => Ok(cwd.to_path_buf()),
    }
}

/// Installs `spec` with npm where pi does (`npm install SPEC --prefix <agentDir>/npm` once pi
/// 0.75+ keeps the user's packages there ([`pi_sources::pi_manages_user_npm`]), else `npm
/// install -g SPEC`; for a project `npm install SPEC --prefix <cwd>/.pi/npm`, in an npm
/// project pi would make), with lifecycle scripts
/// off (the package's and its dependencies': nothing of a package runs at install), and
/// returns its folder once `check` accepts what npm put there. When npm fails or `check`
/// refuses, what npm put there is removed if it was not there before.
fn npm_install(
    npm: &NpmCommand,
    spec: &str,
    scope: Scope,
    check: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let shown_spec = escape(spec);
    let cwd = current_dir();
    let agent = agent_dir()?;
    let source = PiSource::parse(&format!("npm:{spec}"));
    let managed = scope == Scope::User && pi_sources::pi_manages_user_npm(&agent);
    let target = match &source {
        // pi 0.75+'s place for a user's package, once pi keeps them there.
        PiSource::Npm { name, .. } if managed => pi_sources::pi_npm_root(&agent)
            .join("node_modules")
            .join(name),
        _ => install_dir(&source, scope, &agent, &cwd, npm)?,
    };
    let target_existed = target.exists();
    let root = if managed {
        pi_sources::pi_npm_root(&agent)
    } else {
        pi_sources::project_npm_root(&cwd)
    };
    let root_existed = root.exists();
    let mut command = match scope {
        Scope::User if managed => {
            // As pi 1.6 installs it (`npm install SPEC --prefix <agentDir>/npm
            // --legacy-peer-deps --no-audit --no-fund`), scripts off.
            let mut command = npm.command(&[
                "install",
                spec,
                "--ignore-scripts",
                NPM_OWN_GIT,
                "--legacy-peer-deps",
                "--no-audit",
                "--no-fund",
                "--prefix",
            ]);
            command.arg(&root);
            command
        }
        Scope::User => npm.command(&["install", "-g", spec, "--ignore-scripts"]),
        Scope::Project => {
            // The npm project pi keeps a project's packages in, made as pi makes it; nothing
            // on the way (`.pi`, `.pi/npm`, its `node_modules`) may be a link a cloned
            // repository planted, and its files are written without following one.
            use pi_hooks_host::plugin_files::beneath::Beneath;
            let folder = Beneath::open(&cwd, false)?
                .dir(Path::new(".pi/npm"), true)?
                .ok_or_else(|| format!("cannot create {}", root.display()))?;
            folder.dir(Path::new("node_modules"), false)?;
            for (name, text) in [
                (".gitignore", "*\n!.gitignore\n"),
                (
                    "package.json",
                    "{\n  \"name\": \"pi-extensions\",\n  \"private\": true\n}",
                ),
            ] {
                match folder.read_file(name, 1 << 20) {
                    Err(pi_hooks_host::plugin_files::files::ReadError::NotFound) => {
                        folder.write_file(name, text.as_bytes(), 0o644)?
                    }
                    Ok(_) => {}
                    Err(e) => return Err(format!("{}: {e}", root.join(name).display())),
                }
            }
            let mut command =
                npm.command(&["install", spec, "--ignore-scripts", NPM_OWN_GIT, "--prefix"]);
            command.arg(&root);
            command
        }
    };
    let output = command
        .current_dir(npm_folder(scope, &cwd)?)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{} install {shown_spec}`: {e}", npm.shown()));
    let result = match output {
        Err(e) => Err(e),
        Ok(output) if !output.status.success() => Err(format!(
            "`{} install {shown_spec}` failed ({}): {}; nothing was installed",
            npm.shown(),
            output.status,
            escape(String::from_utf8_lossy(&output.stderr).trim())
        )),
        Ok(_) => check(&target).map(|()| target.clone()),
    };
    if result.is_err() {
        if scope == Scope::Project && !root_existed {
            // The npm project was made for this install: all of it goes.
            let _ = std::fs::remove_dir_all(&root);
        } else if !target_existed {
            undo_npm_install(npm, &source, scope, &root, &cwd, &target);
        }
    }
    result
}

/// Takes out what a failed `npm install` put in place of a package that was not installed
/// (npm's own uninstall, scripts off, then whatever is left of its folder).
fn undo_npm_install(
    npm: &NpmCommand,
    source: &PiSource,
    scope: Scope,
    root: &Path,
    cwd: &Path,
    target: &Path,
) {
    let PiSource::Npm { name, .. } = source else {
        return;
    };
    let managed = scope == Scope::User
        && agent_dir().is_ok_and(|agent| root == pi_sources::pi_npm_root(&agent));
    let mut command = match scope {
        Scope::User if !managed => npm.command(&["uninstall", "-g", name, "--ignore-scripts"]),
        _ => {
            let mut command = npm.command(&["uninstall", name, "--ignore-scripts", "--prefix"]);
            command.arg(root);
            command
        }
    };
    let Ok(folder) = npm_folder(scope, cwd) else {
        return;
    };
    let _ = command
        .current_dir(folder)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if std::fs::symlink_metadata(target).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(target);
    }
}

/// Moves a verified clone to `target` (replacing what was there) and runs npm's install in
/// it as pi does after a clone (`npm install --omit=dev`, with lifecycle scripts off), so the package's dependency on
/// the `pi-hooks` npm package (the bridge) is there for pi.
fn put_clone_in_place(clone: &Path, target: &Path, npm: &NpmCommand) -> Result<(), String> {
    if target.exists() {
        let aside = target.with_file_name(format!(".pi-hooks-old-{}", std::process::id()));
        std::fs::rename(target, &aside)
            .map_err(|e| format!("cannot move {} aside: {e}", target.display()))?;
        if let Err(e) = std::fs::rename(clone, target) {
            let _ = std::fs::rename(&aside, target);
            return Err(format!("cannot put the clone at {}: {e}", target.display()));
        }
        let _ = std::fs::remove_dir_all(&aside);
    } else {
        std::fs::rename(clone, target)
            .map_err(|e| format!("cannot put the clone at {}: {e}", target.display()))?;
    }
    // Lifecycle scripts off: neither the package's nor its dependencies' run.
    let args: &[&str] = if npm.0 == ["npm"] {
        &["install", "--ignore-scripts", NPM_OWN_GIT, "--omit=dev"]
    } else {
        &["install", "--ignore-scripts", NPM_OWN_GIT]
    };
    let output = npm
        .command(args)
        .current_dir(target)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run `{} install` in {}: {e}",
                npm.shown(),
                target.display()
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "`{} install` in {} failed ({}): {}",
            npm.shown(),
            target.display(),
            output.status,
            escape(String::from_utf8_lossy(&output.stderr).trim())
        ));
    }
    Ok(())
}

/// Checks that what npm installed in `folder` is the package that was verified in `staged`:
/// the same files with the same bytes (npm's `node_modules/` aside), so the same signature
/// and library.
fn check_installed(folder: &Path, staged: &Path, what: &str) -> Result<(), String> {
    use pi_hooks_host::packages::signature::package_files;
    let checked = package_files(staged, Layout::Installed, Limits::from_env(), what)?;
    let installed = package_files(folder, Layout::Installed, Limits::from_env(), what)
        .map_err(|e| format!("{e} (in what npm installed, {})", folder.display()))?;
    if installed != checked {
        let differs: Vec<String> = checked
            .keys()
            .chain(installed.keys())
            .filter(|path| checked.get(*path) != installed.get(*path))
            .take(5)
            .map(|path| escape(path).into_owned())
            .collect();
        return Err(format!(
            "{what}: npm installed in {} files other than those that were checked ({}; the registry changed in between?); run the install again",
            escape(&folder.display().to_string()),
            escape(&differs.join(", "))
        ));
    }
    Ok(())
}

/// What identifies where a package comes from, whatever its version or ref: `npm:NAME`,
/// `git:URL`, or the file or folder's canonical path.
fn source_identity(source: &str) -> String {
    match parse_source(source) {
        Ok(Source::Npm { .. }) => PiSource::parse(source).identity(&current_dir()),
        Ok(Source::Git { url, .. }) => format!("git:{url}"),
        _ => {
            let path = resolve(source, &current_dir());
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            format!("path:{}", path.display())
        }
    }
}

/// Whether `new` is a version lower than `old` (semver's order; a version that is not semver
/// is compared by its numbers, and one that cannot be compared counts as lower).
fn is_downgrade(old: &str, new: &str) -> bool {
    use pi_hooks_host::packages::manifest::parse_version;
    match (semver::Version::parse(old), semver::Version::parse(new)) {
        (Ok(old), Ok(new)) => new < old,
        _ => match (parse_version(old, 3), parse_version(new, 3)) {
            (Ok(old), Ok(new)) => new < old,
            _ => old != new,
        },
    }
}

/// The questions a package replacing the installed `old` raises beyond its signer (asked
/// before): a version lower than the installed one (`--allow-downgrade`), and, for an
/// installed package that was unsigned, another source than it came from (`--replace`; a
/// signed one's identity is its signer). Headless without the flag: refused, nothing changed.
fn check_replacement(
    old: &InstallRecord,
    package: &pi_hooks_host::packages::manifest::PackageJson,
    source: &str,
    update: bool,
    choices: Choices,
) -> Result<(), String> {
    let command = |flag: &str| {
        escape(&if update {
            format!("pi-hooks update {} {flag}", old.name)
        } else {
            format!("pi-hooks install {source} {flag}")
        })
        .into_owned()
    };
    if is_downgrade(&old.version, &package.version) {
        let question = format!(
            "{} {} is installed, and this is the lower version {}",
            escape(&old.name),
            escape(&old.version),
            escape(&package.version)
        );
        if !choices.allow_downgrade && !confirm(&format!("{question}. Install the lower version?"))
        {
            return Err(format!(
                "{question}; refused, nothing was changed. To install the lower version: `{}`",
                command("--allow-downgrade")
            ));
        }
    }
    if old.signer.is_none() && source_identity(&old.origin) != source_identity(source) {
        let question = format!(
            "{} {} is installed from {}, and this package of the same name comes from another source, {}",
            escape(&old.name),
            escape(&old.version),
            escape(&old.origin),
            escape(source)
        );
        if !choices.replace && !confirm(&format!("{question}. Replace it?")) {
            return Err(format!(
                "{question}; refused, nothing was changed. If this is the package you mean to use: `{}`",
                command("--replace")
            ));
        }
    }
    Ok(())
}

/// Asks a yes/no question on the terminal; `false` without one.
fn confirm(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return false;
    }
    write_stderr(&format!("{question} [y/N] "));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes")
}

/// Copies a package folder (regular files and folders only, `.git` skipped) within the
/// limits a tarball has.
fn copy_folder(from: &Path, to: &Path, limits: Limits, what: &str) -> Result<(), String> {
    let mut total = 0u64;
    let mut count = 0usize;
    let mut stack = vec![PathBuf::new()];
    while let Some(relative) = stack.pop() {
        let dir = from.join(&relative);
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| format!("{what}: cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{what}: {e}"))?;
            let name = entry.file_name();
            if relative.as_os_str().is_empty()
                && (name == ".git" || name == pi_hooks_host::packages::store::RECORD_FILE)
            {
                continue;
            }
            let rel = relative.join(&name);
            let kind = entry
                .file_type()
                .map_err(|e| format!("{what}: {}: {e}", escape(&rel.display().to_string())))?;
            count += 1;
            if count > limits.entries {
                return Err(format!(
                    "{what} has more than {} files; nothing was installed",
                    limits.entries
                ));
            }
            if kind.is_dir() {
                std::fs::create_dir_all(to.join(&rel)).map_err(|e| format!("{e}"))?;
                stack.push(rel);
            } else if kind.is_file() {
                let size = entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
                if size > limits.entry_bytes {
                    return Err(format!(
                        "{what}: {} is {size} bytes, over the limit of {} per file; nothing was installed",
                        escape(&rel.display().to_string()),
                        limits.entry_bytes
                    ));
                }
                total += size;
                if total > limits.package_bytes {
                    return Err(format!(
                        "{what} is over the limit of {} bytes; nothing was installed",
                        limits.package_bytes
                    ));
                }
                // Read as a regular file only, capped (it may have changed since it was
                // listed: a FIFO or a link to a device is refused, not read forever); what
                // was read is what counts.
                let bytes = pi_hooks_host::plugin_files::files::read_regular(
                    &entry.path(),
                    limits.entry_bytes,
                )
                .map_err(|e| {
                    format!(
                        "{what}: {} {e}; nothing was installed",
                        escape(&rel.display().to_string())
                    )
                })?;
                total = total - size + bytes.len() as u64;
                if total > limits.package_bytes {
                    return Err(format!(
                        "{what} is over the limit of {} bytes; nothing was installed",
                        limits.package_bytes
                    ));
                }
                std::fs::write(to.join(&rel), &bytes).map_err(|e| {
                    format!(
                        "{what}: cannot copy {}: {e}",
                        escape(&rel.display().to_string())
                    )
                })?;
            } else {
                return Err(format!(
                    "{what}: {} is a link or a special file; packages hold only regular files and folders, nothing was installed",
                    escape(&rel.display().to_string())
                ));
            }
        }
    }
    Ok(())
}

/// The native packages the project's and the user's `packages` list (in pi's order), with
/// their scope: those pi-hooks installed (their records), and those pi installed (read from
/// their `package.json`; a package that cannot be read is left to the plugin list's errors).
pub(super) fn installed_packages(agent: &Path, cwd: &Path) -> Vec<(Scope, InstallRecord)> {
    use pi_hooks_host::packages::installed::{SCOPES, listed_packages};
    SCOPES
        .into_iter()
        .flat_map(|scope| {
            let store = Store::new(scope, agent, cwd);
            listed_packages(&store, agent, cwd)
                .into_iter()
                .filter_map(Result::ok)
                .map(move |listed| (scope, listed))
        })
        .filter_map(|(scope, listed)| {
            let record = match (&listed.package, listed.record) {
                (Some(package), record) => {
                    let what = format!("package {}", package.name);
                    let signer =
                        verify_signature(package, &listed.folder, Layout::Installed, &what)
                            .ok()
                            .flatten();
                    let library = pi_hooks_host::packages::verify::check_library(
                        package,
                        host_platform(),
                        &what,
                    )
                    .ok();
                    InstallRecord {
                        name: package.name.to_string(),
                        version: package.version.clone(),
                        pinned: PiSource::parse(&listed.source).pinned(),
                        origin: record
                            .as_ref()
                            .map_or_else(|| listed.source.clone(), |r| r.origin.clone()),
                        source: listed.source,
                        signer: signer.map(|s| s.public_key),
                        platform: host_platform().to_owned(),
                        library: library.as_ref().map(|l| l.path.clone()).unwrap_or_default(),
                        sha256: library
                            .as_ref()
                            .map(|l| l.sha256.clone())
                            .unwrap_or_default(),
                        abi: library.map(|l| l.abi).unwrap_or_default(),
                        description: package.manifest.plugin.description.clone(),
                        registers: package.manifest.plugin.registers.clone(),
                        capabilities: package.manifest.capabilities.clone(),
                        location: Some(listed.folder),
                        replaces_source: None,
                    }
                }
                (None, Some(record)) => record,
                (None, None) => return None,
            };
            Some((scope, record))
        })
        .collect()
}

/// `list --json`'s `packages`.
pub(super) fn packages_json(packages: &[(Scope, InstallRecord)]) -> serde_json::Value {
    packages
        .iter()
        .map(|(scope, r)| {
            serde_json::json!({
                "name": r.name,
                "version": r.version,
                "scope": scope,
                "source": r.source,
                "pinned": r.pinned,
                "signer": r.signer,
                "platform": r.platform,
                "library": r.library,
                "sha256": r.sha256,
                "abi": r.abi,
                "capabilities": r.capabilities,
                "sandbox": pi_hooks_host::sandbox::package_state(&r.name, r.capabilities.as_ref()),
            })
        })
        .collect()
}

/// `list`'s packages section (empty when none is installed).
pub(super) fn packages_text(packages: &[(Scope, InstallRecord)]) -> String {
    if packages.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nPackages:\n");
    for (scope, r) in packages {
        out.push_str(&format!(
            "  {} {} [{}] from {}{}\n    signer: {}\n",
            escape(&r.name),
            escape(&r.version),
            match scope {
                Scope::User => "user",
                Scope::Project => "project",
            },
            escape(&r.source),
            if r.pinned { " (pinned)" } else { "" },
            escape(r.signer.as_deref().unwrap_or("unsigned")),
        ));
        for line in Capabilities::describe(r.capabilities.as_ref()) {
            out.push_str(&format!("    capabilities: {}\n", escape(&line)));
        }
        out.push_str(&format!(
            "    sandbox: {}\n",
            pi_hooks_host::sandbox::package_state(&r.name, r.capabilities.as_ref()).describe()
        ));
    }
    out
}
