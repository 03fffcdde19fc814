//! `pi-hooks bridge install`: puts the pi bridge extension (plugins/pi-bridge/, embedded in
//! this binary) where pi discovers extensions, so that pi runs the native plugins through
//! `pi-hooks serve`: `<agentDir>/extensions/pi-hooks-bridge/` (every project), or with
//! `--project` `<cwd>/.pi/extensions/pi-hooks-bridge/` (this project only). Beside the
//! TypeScript files it writes `pi-hooks.json`, naming this binary, so the bridge finds
//! `pi-hooks` without PATH. Files of an earlier install are replaced; nothing else in the
//! folder is touched.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;

use super::{CommandError, current_dir, write_stdout};
use crate::display::escape;
use crate::paths::agent_dir;

/// The bridge's files, as committed in plugins/pi-bridge/.
const FILES: [(&str, &str); 6] = [
    (
        "index.ts",
        include_str!("../../../plugins/pi-bridge/index.ts"),
    ),
    (
        "serve-client.ts",
        include_str!("../../../plugins/pi-bridge/serve-client.ts"),
    ),
    (
        "supervisor.ts",
        include_str!("../../../plugins/pi-bridge/supervisor.ts"),
    ),
    (
        "events.ts",
        include_str!("../../../plugins/pi-bridge/events.ts"),
    ),
    (
        "client-requests.ts",
        include_str!("../../../plugins/pi-bridge/client-requests.ts"),
    ),
    (
        "README.md",
        include_str!("../../../plugins/pi-bridge/README.md"),
    ),
];

/// The folder the bridge is installed as, inside an `extensions` folder.
pub const BRIDGE_FOLDER: &str = "pi-hooks-bridge";

/// What `pi-hooks bridge` does.
#[derive(Debug, Subcommand)]
pub(super) enum BridgeAction {
    /// Install (or update) the pi bridge extension: global, in the agent directory's
    /// `extensions/` (pi's `~/.pi/agent/extensions/`), or with --project in this project's
    /// `.pi/extensions/`. pi loads it at its next start or `/reload`.
    Install {
        /// Install into `<cwd>/.pi/extensions/` (this project only).
        #[arg(long)]
        project: bool,
        /// The project directory for --project (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

/// Runs `pi-hooks bridge <action>`.
pub(super) fn bridge(action: BridgeAction) -> Result<ExitCode, CommandError> {
    match action {
        BridgeAction::Install { project, cwd } => {
            let extensions = if project {
                cwd.unwrap_or_else(current_dir)
                    .join(".pi")
                    .join("extensions")
            } else {
                agent_dir().map_err(CommandError::setup)?.join("extensions")
            };
            let bin = std::env::current_exe().map_err(|e| {
                CommandError::failed(format!(
                    "cannot tell where this pi-hooks binary is ({e}); the bridge needs its path"
                ))
            })?;
            let folder = install(&extensions.join(BRIDGE_FOLDER), &bin)?;
            let agent = agent_dir().map_err(CommandError::setup)?;
            write_stdout(&format!(
                "Installed the pi bridge in {}\n  files: {}, pi-hooks.json\n  it runs: {} serve\n  native plugins load from {} and {}, and from a project's .pi/hooks and .pi/extensions once trusted (pi-hooks trust FILE)\nStart pi (or /reload in a running pi) to load it.\n",
                escape(&folder.display().to_string()),
                FILES.map(|(name, _)| name).join(", "),
                escape(&bin.display().to_string()),
                escape(&agent.join("hooks").display().to_string()),
                escape(&agent.join("extensions").display().to_string()),
            ))?;
            Ok(ExitCode::SUCCESS)
        }
    }
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
