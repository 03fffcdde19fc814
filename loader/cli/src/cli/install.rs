//! `pi-hooks install SOURCE [-l] [--yes]` and `pi-hooks update [NAME]`.
//!
//! SOURCE is a package tarball (`.tgz`), a package folder, or a git repository as pi accepts
//! it (`git:host/path[@ref]`, `https://`, `http://`, `ssh://`, `git://` URLs, `@ref` pins).
//! `npm:` sources come with the issue for pi users. The package is fetched into a staging
//! folder, its signature, library, SHA-256, ABI and host version are checked, its declared
//! capabilities are shown and accepted, and only then is it put in place and recorded under
//! `packages` in settings.json. No plugin code runs.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{CommandError, current_dir, write_stderr, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::archive::{Limits, extract_tgz};
use pi_hooks_host::packages::manifest::{Capabilities, parse_package_json};
use pi_hooks_host::packages::platform::host_platform;
use pi_hooks_host::packages::store::{InstallRecord, Scope, Store};
use pi_hooks_host::packages::verify::{choose_library, verify_signature};
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
    /// granted (without it, and without a yes at the prompt, it is refused).
    #[arg(long)]
    grant: bool,
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
}

/// `pi-hooks install`.
pub(super) fn install(args: InstallArgs) -> Result<ExitCode, CommandError> {
    let store = store(args.local)?;
    let choices = Choices {
        yes: args.yes,
        accept_new_signer: args.accept_new_signer,
        grant: args.grant,
    };
    let record = install_from(&store, &args.source, None, choices)?;
    let mut text = format!(
        "Installed {} {} ({}) from {}\n",
        record.name,
        record.version,
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
            pi_hooks_host::lifecycle::load::shell_quote(&library.display().to_string())
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
    };
    let records = match &args.name {
        Some(name) => vec![store.record(name).ok_or_else(|| {
            CommandError::failed(format!(
                "no package {} is installed{}; `pi-hooks list` shows them",
                escape(name),
                if args.local { " for this project" } else { "" }
            ))
        })?],
        None => store.installed(),
    };
    let mut text = String::new();
    for record in records {
        if record.pinned {
            text.push_str(&format!(
                "{} {}: pinned by its source {} (a version or ref), left as it is\n",
                record.name,
                record.version,
                escape(&record.source)
            ));
            continue;
        }
        let new = install_from(&store, &record.origin, Some(&record), choices)?;
        text.push_str(&format!(
            "{}: {} -> {}\n",
            new.name, record.version, new.version
        ));
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Clone, Copy)]
struct Choices {
    yes: bool,
    accept_new_signer: bool,
    /// A new version may be granted more than the installed one.
    grant: bool,
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
}

fn parse_source(source: &str) -> Result<Source, CommandError> {
    if source.starts_with("npm:") {
        return Err(CommandError::failed(format!(
            "{}: npm: sources are not supported yet (they come with the issue for pi users, which brings a registry to test against); install a .tgz (`npm pack NAME` makes one), a folder or a git URL",
            escape(source)
        )));
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
    let staging = store.staging().map_err(fail)?;
    let shown = escape(source);
    let (recorded_source, pinned) = match &parsed {
        Source::Tarball(path) => {
            let file =
                std::fs::File::open(path).map_err(|e| fail(format!("cannot open {shown}: {e}")))?;
            extract_tgz(file, staging.path(), Limits::from_env(), &shown).map_err(fail)?;
            (None, false)
        }
        Source::Folder(path) => {
            copy_folder(path, staging.path(), Limits::from_env(), &shown).map_err(fail)?;
            (Some(path.display().to_string()), false)
        }
        Source::Git { url, reference } => {
            let clone = tempfile::tempdir().map_err(|e| fail(format!("cannot clone: {e}")))?;
            let mut git = std::process::Command::new("git");
            git.env("GIT_TERMINAL_PROMPT", "0")
                .args(["clone", "--quiet", "--depth", "1"]);
            if let Some(reference) = reference {
                git.args(["--branch", reference]);
            }
            let output = git
                .arg(url)
                .arg(clone.path().join("repo"))
                .stdin(std::process::Stdio::null())
                .output()
                .map_err(|e| fail(format!("cannot run git: {e}; is git installed?")))?;
            if !output.status.success() {
                return Err(fail(format!(
                    "git could not clone {shown}: {}",
                    escape(String::from_utf8_lossy(&output.stderr).trim())
                )));
            }
            copy_folder(
                &clone.path().join("repo"),
                staging.path(),
                Limits::from_env(),
                &shown,
            )
            .map_err(fail)?;
            (Some(source.to_owned()), reference.is_some())
        }
    };
    let json_bytes = pi_hooks_host::plugin_files::files::read_regular(
        &staging.path().join("package.json"),
        1 << 20,
    )
    .map_err(|e| fail(format!("{shown}: package.json {e}")))?;
    let package = parse_package_json(&json_bytes).map_err(|e| fail(format!("{shown}: {e}")))?;
    let what = format!("package {} {} ({shown})", package.name, package.version);
    let signer = verify_signature(&package, &what).map_err(fail)?;
    let installed = previous.cloned().or_else(|| store.record(&package.name));
    if let Some(old) = &installed
        && old.signer.is_some()
        && old.signer != signer.as_ref().map(|s| s.public_key.clone())
    {
        let now = signer.as_ref().map_or("is unsigned".to_owned(), |s| {
            format!("is signed by key {}", s.public_key)
        });
        let question = format!(
            "{what} {now}, and the installed version {} was signed by key {} (pinned at its first install)",
            old.version,
            old.signer.as_deref().unwrap_or_default()
        );
        if !choices.accept_new_signer && !confirm(&format!("{question}. Accept the new signer?")) {
            return Err(fail(format!(
                "{question}; refused, nothing was changed. If the publisher changed keys, install with --accept-new-signer"
            )));
        }
    }
    let chosen = choose_library(&package, staging.path(), host_platform(), &what).map_err(fail)?;
    let manifest = &package.manifest;
    let mut summary = format!(
        "{} {}: {}\n  library: {} (ABI {}, sha256 {})\n  signed: {}\n  capabilities:\n",
        escape(&package.name),
        escape(&package.version),
        escape(&manifest.plugin.description),
        chosen.platform,
        chosen.library.abi,
        chosen.library.sha256,
        signer
            .as_ref()
            .map_or("no".to_owned(), |s| format!("by key {}", s.public_key))
    );
    for line in Capabilities::describe(manifest.capabilities.as_ref()) {
        summary.push_str(&format!("    {}\n", escape(&line)));
    }
    summary.push_str(
        "  (accepted capabilities are its grant: on Linux it runs isolated and confined to them)",
    );
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
                    format!("pi-hooks update {} --grant", old.name)
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
    if !choices.yes && !confirm("Install it with these capabilities?") {
        return Err(fail(format!(
            "{what} was not installed: its capabilities were not accepted (headless: pass --yes to accept them)"
        )));
    }
    let package_dir = store.package_dir(&package.name);
    let source_entry = recorded_source.unwrap_or_else(|| package_dir.display().to_string());
    let record = InstallRecord {
        name: package.name.clone(),
        version: package.version.clone(),
        replaces_source: installed
            .as_ref()
            .map(|old| old.source.clone())
            .filter(|old| *old != source_entry),
        source: source_entry,
        origin: match &parsed {
            Source::Tarball(path) | Source::Folder(path) => path.display().to_string(),
            Source::Git { .. } => source.to_owned(),
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
                .map_err(|e| format!("{what}: {}: {e}", rel.display()))?;
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
                        rel.display(),
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
                std::fs::copy(entry.path(), to.join(&rel))
                    .map_err(|e| format!("{what}: cannot copy {}: {e}", rel.display()))?;
            } else {
                return Err(format!(
                    "{what}: {} is a link or a special file; packages hold only regular files and folders, nothing was installed",
                    rel.display()
                ));
            }
        }
    }
    Ok(())
}

/// The installed packages of the project and the user (in pi's order), with their scope.
pub(super) fn installed_packages(agent: &Path, cwd: &Path) -> Vec<(Scope, InstallRecord)> {
    [Scope::Project, Scope::User]
        .into_iter()
        .flat_map(|scope| {
            Store::new(scope, agent, cwd)
                .installed()
                .into_iter()
                .map(move |r| (scope, r))
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
            r.signer.as_deref().unwrap_or("unsigned"),
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
