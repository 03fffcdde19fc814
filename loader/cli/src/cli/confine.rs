//! `--confine[=GRANT_FILE]` of `pi-hooks run` and `pi-hooks emit`: the plugins given on the
//! command line (`-e`, emit's PLUGIN) run confined exactly as an installed package with that
//! grant runs (isolated in a `serve` child of their own, Landlock, seccomp and the host's
//! checks; `pi_hooks_host::sandbox::try_grant`), so a grant can be tried before `pack
//! --capabilities` puts it in a package. GRANT_FILE is the JSON object `pack --capabilities`
//! reads; with no value the grant is the empty one (nothing to read, write, reach or run
//! beyond what every confined plugin gets). Linux only: elsewhere it is refused.

use std::path::{Path, PathBuf};

use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::manifest::Capabilities;

use super::CommandError;

/// The `--confine[=GRANT_FILE]` flag, shared by `run` and `emit`.
#[derive(clap::Args, Debug, Clone, Default)]
pub(super) struct ConfineArg {
    /// Run the plugins given on the command line (run's -e, emit's PLUGIN) confined exactly
    /// as an installed package with this grant would be (isolated, Landlock and seccomp;
    /// Linux only): GRANT_FILE is the JSON object `pack --capabilities` reads; `--confine`
    /// alone is the empty grant. To try a grant before packing: `--confine=grant.json`.
    #[arg(
        long,
        value_name = "GRANT_FILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub confine: Option<String>,
}

/// The grant `--confine` names (`""`: the empty grant) and the words its refusals use for
/// where it comes from (the file's path, or `--confine (the empty grant)`).
pub(super) fn read_grant(value: &str, cwd: &Path) -> Result<(Capabilities, String), CommandError> {
    if !cfg!(target_os = "linux") {
        return Err(CommandError::usage(
            "--confine needs Linux (Landlock and seccomp confine the plugin); on this system a grant can only be tried on a Linux machine or container",
        ));
    }
    if value.is_empty() {
        return Ok((
            Capabilities::default(),
            "--confine (the empty grant)".to_owned(),
        ));
    }
    let file = pi_hooks_host::plugin_files::paths::resolve(value, cwd);
    let shown = escape(&file.display().to_string()).into_owned();
    let bytes = std::fs::read(&file).map_err(|e| {
        CommandError::failed(format!(
            "--confine: cannot read the grant file {shown}: {e}"
        ))
    })?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        CommandError::failed(format!(
            "--confine: the grant file {shown} is not JSON ({e}); write a capabilities object as `pack --capabilities` reads, such as {{\"read\": [\"${{cwd}}\"], \"network\": false}}"
        ))
    })?;
    let capabilities = Capabilities::from_value(&json).map_err(|e| {
        CommandError::failed(format!("--confine: the grant file {shown}: {}", escape(&e)))
    })?;
    let capabilities = capabilities.checked().map_err(|e| {
        CommandError::failed(format!(
            "--confine: the grant file {shown}: its {}; fix it",
            escape(&e)
        ))
    })?;
    Ok((capabilities, file.display().to_string()))
}

/// Confines each of `plugins` (resolved against `cwd`) to the grant `--confine` names, and
/// turns isolation on for this process (a confined plugin runs in a child of its own).
pub(super) fn confine(
    value: &str,
    plugins: &[PathBuf],
    cwd: &Path,
    agent_dir: &Path,
) -> Result<(), CommandError> {
    let (capabilities, source) = read_grant(value, cwd)?;
    if plugins.is_empty() {
        return Err(CommandError::usage(
            "--confine confines the plugins given on the command line: name one with -e PATH",
        ));
    }
    // What `${cwd}`, `${home}`, `${tmp}` and `${data}` stand for (a session's discovery says
    // it again, with the same folders).
    pi_hooks_host::sandbox::note_discovery(cwd, agent_dir, &[]);
    for plugin in plugins {
        pi_hooks_host::sandbox::try_grant(plugin, capabilities.clone(), &source);
    }
    pi_hooks_host::isolate::enable(false);
    Ok(())
}
