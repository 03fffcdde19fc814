//! `pi-hooks bridge install`: puts the pi bridge extension (plugins/pi-bridge/, embedded in
//! this binary) where pi discovers extensions, so that pi runs the native plugins through
//! `pi-hooks serve`: `<agentDir>/extensions/pi-hooks-bridge/` (every project), or with
//! `--project` `<cwd>/.pi/extensions/pi-hooks-bridge/` (this project only). Beside the
//! TypeScript files it writes `pi-hooks.json`, naming this binary, so the bridge finds
//! `pi-hooks` without PATH. Files of an earlier install are replaced; nothing else in the
//! folder is touched.
//!
//! Native plugins for pi go in `extensions/` folders, which both pi-hooks and the bridge read
//! and where pi ignores `.so` files. A `hooks/` folder (pi-hooks reads it too) makes pi 0.73.1
//! stop at start-up in its interactive mode ("Hooks have been renamed to extensions ... Press
//! any key to continue", pi's `dist/migrations.js`), so the install warns about each one it
//! finds and says how to move its plugins.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use super::{CommandError, current_dir, write_stderr, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::lifecycle::load::shell_quote;
use pi_hooks_host::plugin_files::paths::agent_dir;

/// The bridge's files, as committed in plugins/pi-bridge/.
const FILES: [(&str, &str); 7] = [
    (
        "index.ts",
        include_str!("../../../../plugins/pi-bridge/index.ts"),
    ),
    (
        "serve-client.ts",
        include_str!("../../../../plugins/pi-bridge/serve-client.ts"),
    ),
    (
        "supervisor.ts",
        include_str!("../../../../plugins/pi-bridge/supervisor.ts"),
    ),
    (
        "events.ts",
        include_str!("../../../../plugins/pi-bridge/events.ts"),
    ),
    (
        "client-requests.ts",
        include_str!("../../../../plugins/pi-bridge/client-requests.ts"),
    ),
    (
        "platform-binary.cjs",
        include_str!("../../../../plugins/pi-bridge/platform-binary.cjs"),
    ),
    (
        "README.md",
        include_str!("../../../../plugins/pi-bridge/README.md"),
    ),
];

/// The folder the bridge is installed as, inside an `extensions` folder.
pub const BRIDGE_FOLDER: &str = "pi-hooks-bridge";

/// What `pi-hooks bridge` does.
#[derive(Debug, Subcommand)]
pub(super) enum BridgeAction {
    /// Install (or update) the pi bridge extension: global, in the agent directory's
    /// `extensions/` (pi's `~/.pi/agent/extensions/`), or with --project in this project's
    /// `.pi/extensions/`. pi loads it at its next start or `/reload`. Native plugins for pi go
    /// in the same `extensions/` folders; a `hooks/` folder in the agent directory or the
    /// project's `.pi/` is warned about, since pi stops at start-up while one exists.
    Install {
        /// Install into `<cwd>/.pi/extensions/` (this project only).
        #[arg(long)]
        project: bool,
        /// The project directory, for --project and for the check of its `.pi/hooks`
        /// (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

/// Runs `pi-hooks bridge <action>`.
pub(super) fn bridge(action: BridgeAction) -> Result<ExitCode, CommandError> {
    match action {
        BridgeAction::Install { project, cwd } => {
            let cwd = cwd.unwrap_or_else(current_dir);
            let agent = agent_dir().map_err(CommandError::setup)?;
            let extensions = if project {
                cwd.join(".pi").join("extensions")
            } else {
                agent.join("extensions")
            };
            let bin = std::env::current_exe().map_err(|e| {
                CommandError::failed(format!(
                    "cannot tell where this pi-hooks binary is ({e}); the bridge needs its path"
                ))
            })?;
            let folder = install(&extensions.join(BRIDGE_FOLDER), &bin)?;
            write_stdout(&format!(
                "Installed the pi bridge in {}\n  files: {}, pi-hooks.json\n  it runs: {} serve\n  native plugins: put them in {} (every project) or in a project's .pi/extensions/ (once trusted: pi-hooks trust FILE); pi itself ignores .so files there\nStart pi (or /reload in a running pi) to load it.\n",
                escape(&folder.display().to_string()),
                FILES.map(|(name, _)| name).join(", "),
                escape(&bin.display().to_string()),
                escape(&format!("{}/", agent.join("extensions").display())),
            ))?;
            for warning in hooks_folder_warnings(&agent, &cwd) {
                write_stderr(&warning);
            }
            if let Some(warning) = second_bridge_warning(&agent, &folder) {
                write_stderr(&warning);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A warning when pi already loads a bridge from the `pi-hooks` npm package (`pi install
/// npm:pi-hooks` lists `npm:pi-hooks` in the user's settings): pi runs only the first bridge it
/// loads, so the one just installed in `folder` is a second copy, and which binary serves the
/// plugins depends on pi's load order.
fn second_bridge_warning(agent: &Path, folder: &Path) -> Option<String> {
    let settings = agent.join("settings.json");
    let entry = pi_hooks_host::packages::store::settings_packages(&settings)
        .into_iter()
        .find(|entry| {
            matches!(
                pi_hooks_host::packages::pi_sources::PiSource::parse(entry),
                pi_hooks_host::packages::pi_sources::PiSource::Npm { ref name, .. } if name == "pi-hooks"
            )
        })?;
    Some(format!(
        "pi-hooks: warning: pi also loads the bridge of the pi-hooks npm package ({} in {}); pi runs one bridge, the first it loads, so keep one: `pi remove npm:pi-hooks`, or delete the folder {}",
        escape(&entry),
        escape(&settings.display().to_string()),
        shell_quote(&folder.display().to_string()),
    ))
}

/// A warning for each `hooks` entry pi 0.73.1 stops at: `<agentDir>/hooks` and
/// `<cwd>/.pi/hooks` (pi checks that the path exists, whatever it is, following symlinks),
/// each saying what pi does and how to move the plugins into the `extensions` folder beside it.
fn hooks_folder_warnings(agent: &Path, cwd: &Path) -> Vec<String> {
    [(agent.to_path_buf(), ""), (cwd.join(".pi"), "; trust them again there: pi-hooks trust FILE")]
        .iter()
        .filter(|(base, _)| base.join("hooks").exists())
        .map(|(base, trust)| {
            let hooks = base.join("hooks");
            let extensions = base.join("extensions");
            let quoted = |path: &Path| shell_quote(&path.display().to_string());
            let fix = match std::fs::read_dir(&hooks).map(|mut entries| entries.next().is_none()) {
                Ok(true) => format!("it is empty: rmdir {}", quoted(&hooks)),
                Ok(false) => format!(
                    "move what it holds into {} (pi-hooks and the bridge read native plugins there; pi ignores .so files there{trust}) and remove it:\n  mkdir -p {ext} && mv {hooks}/* {ext}/ && rmdir {hooks}",
                    escape(&format!("{}/", extensions.display())),
                    ext = quoted(&extensions),
                    hooks = quoted(&hooks),
                ),
                Err(_) => format!(
                    "it is not a folder of plugins: move it out of {}",
                    escape(&base.display().to_string())
                ),
            };
            format!(
                "pi-hooks: warning: {} exists, and while it does pi stops at start-up in its interactive mode (\"Hooks have been renamed to extensions. ... Press any key to continue...\"); {fix}",
                escape(&hooks.display().to_string()),
            )
        })
        .collect()
}

/// Writes the bridge's files and `pi-hooks.json` into `folder` (created as needed).
fn install(folder: &Path, bin: &Path) -> Result<PathBuf, CommandError> {
    std::fs::create_dir_all(folder).map_err(|e| {
        CommandError::failed(format!(
            "cannot create {}: {e}",
            escape(&folder.display().to_string())
        ))
    })?;
    let config = serde_json::json!({ "bin": bin.display().to_string() });
    let config = format!("{config:#}\n");
    for (name, text) in FILES
        .iter()
        .copied()
        .chain([("pi-hooks.json", config.as_str())])
    {
        let path = folder.join(name);
        std::fs::write(&path, text).map_err(|e| {
            CommandError::failed(format!(
                "cannot write {}: {e}",
                escape(&path.display().to_string())
            ))
        })?;
    }
    Ok(folder.to_path_buf())
}
