//! `pi-hooks inspect FILE`: show what one plugin file is. A package is read by
//! [`super::inspect_package`] and a library by [`super::inspect_static`], neither running any
//! plugin code; with `--run-code` the library is loaded here, which runs its initialiser (the
//! plugin's own code), to show what it registers.
//!
//! A project plugin (one a cloned repository could have brought: a file inside a `.pi` folder
//! that is not inside the agent directory, or a file the current directory's
//! `.pi/settings.json` lists) is shown with its trust state.

use std::path::Path;
use std::process::ExitCode;

use super::render::{error_and_warning_lines, inspect_text, report_json};
use super::{CommandError, current_dir, write_stderr, write_stdout};
use pi_hooks_host::library::cache_dir;
use pi_hooks_host::lifecycle::load::{LoadError, LoadReport, Loaded, load_one};
use pi_hooks_host::plugin_files::discover::{DiscoveryOptions, Origin, discover};
use pi_hooks_host::plugin_files::paths::{agent_dir, resolve};
use pi_hooks_host::plugin_files::trust::{TrustState, TrustStore};

/// Inspects `file`; `run_code` loads a library (running its code) to show its registrations.
pub(super) fn inspect(file: &Path, json: bool, run_code: bool) -> Result<ExitCode, CommandError> {
    if super::inspect_package::is_package(file) {
        return super::inspect_package::inspect_package(file, json);
    }
    let agent = agent_dir().map_err(CommandError::setup)?;
    let here = current_dir();
    // Shown normalised (`.` and `..` applied): `resolve` does that.
    let given = resolve(&file.to_string_lossy(), &here);
    let mut report = LoadReport::default();
    let canonical = match std::fs::canonicalize(&given) {
        Ok(canonical) => canonical,
        Err(e) => {
            report.errors.push(LoadError {
                path: given.display().to_string(),
                error: format!("cannot resolve the path: {e}"),
                named: true,
            });
            return show(&report, json);
        }
    };
    let project = is_project_plugin(&given, &canonical, &here, &agent);
    if !run_code {
        return super::inspect_static::inspect_static(&canonical, project, &agent, json);
    }
    write_stderr(
        "pi-hooks: note: inspecting with --run-code loads the plugin, which runs its initialiser (the plugin's own code)",
    );
    let path = canonical.display().to_string();
    let cache = cache_dir(&agent);
    let outcome = load_one(&canonical, Origin::Cli, None, &cache);
    match outcome {
        Ok(Loaded::Plugin(mut plugin)) => {
            if project {
                plugin.origin = Origin::Project;
                plugin.trust = TrustStore::load(&agent)
                    .map_or(TrustState::New, |s| s.state(&canonical, plugin.sha256()));
            }
            report.plugins.push(*plugin);
            // A command named like a built-in is worth a warning even on its own.
            pi_hooks_host::lifecycle::load::note_conflicts(&mut report.plugins);
        }
        // Loaded without a trust store, so never held back for trust.
        Ok(Loaded::Untrusted(trust, _)) => report.errors.push(LoadError {
            path,
            error: format!("was held back as {}", trust.describe()),
            named: true,
        }),
        Err(error) => report.errors.push(LoadError {
            path,
            error,
            named: true,
        }),
    }
    show(&report, json)
}

/// Prints the plugin (or why it did not load); exit 1 when it did not.
fn show(report: &LoadReport, json: bool) -> Result<ExitCode, CommandError> {
    if json {
        write_stdout(&format!("{}\n", report_json(report)))?;
    } else {
        let mut text: String = report.plugins.iter().map(inspect_text).collect();
        for line in error_and_warning_lines(report) {
            text.push_str(&line);
            text.push('\n');
        }
        write_stdout(&text)?;
    }
    Ok(if report.plugins.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Whether the file (`given` as named, made absolute; `canonical` with links resolved) is a
/// project plugin: inside a `.pi` folder outside the agent directory, or listed by the
/// project settings of `cwd`.
fn is_project_plugin(given: &Path, canonical: &Path, cwd: &Path, agent: &Path) -> bool {
    let agent_canonical = std::fs::canonicalize(agent).unwrap_or_else(|_| agent.to_path_buf());
    let in_project_folder = |path: &Path| {
        !path.starts_with(agent)
            && !path.starts_with(&agent_canonical)
            && path
                .ancestors()
                .skip(1)
                .any(|dir| dir.file_name().is_some_and(|name| name == ".pi"))
    };
    if in_project_folder(given) || in_project_folder(canonical) {
        return true;
    }
    let discovery = discover(&DiscoveryOptions {
        cwd: cwd.to_path_buf(),
        agent_dir: agent.to_path_buf(),
        explicit: Vec::new(),
        no_discovery: false,
    });
    discovery.candidates.iter().any(|candidate| {
        candidate.origin.needs_trust()
            && std::fs::canonicalize(&candidate.path).is_ok_and(|c| c == canonical)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_folders_are_any_dot_pi_outside_the_agent_dir() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("home/.pi/agent");
        let cwd = dir.path().join("elsewhere");
        let check = |p: &str| {
            let p = dir.path().join(p);
            is_project_plugin(&p, &p, &cwd, &agent)
        };
        assert!(check("repo/.pi/hooks/x.so"));
        assert!(check("repo/.pi/extensions/sub/x.so"));
        assert!(check("home/.pi/other/x.so"));
        assert!(!check("home/.pi/agent/hooks/x.so"));
        assert!(!check("repo/build/x.so"));
        assert!(!check("repo/.pi"));
    }
}
