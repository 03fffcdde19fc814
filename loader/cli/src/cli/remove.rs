//! `pi-hooks remove NAME [-l]`: the package's entry in `packages` and its folder go.

use std::process::ExitCode;

use super::{CommandError, current_dir, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::store::{Scope, Store};
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
    let scope = if args.local {
        Scope::Project
    } else {
        Scope::User
    };
    let store = Store::new(scope, &agent, &current_dir());
    let _lock = store.lock().map_err(CommandError::failed)?;
    match store.remove(&args.name).map_err(CommandError::failed)? {
        Some(record) => {
            write_stdout(&format!(
                "Removed {} {} (and its entry {} in {})\n",
                record.name,
                record.version,
                escape(&record.source),
                store.settings.display()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        None => Err(CommandError::failed(format!(
            "no package {} is installed{}; `pi-hooks list` shows them",
            escape(&args.name),
            if args.local { " for this project" } else { "" }
        ))),
    }
}
