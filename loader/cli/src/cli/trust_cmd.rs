//! `pi-hooks trust` and `pi-hooks untrust`: record or withdraw the user's approval of plugin
//! files, pinned to their current SHA-256, in the trust store of the agent directory.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{CommandError, current_dir, write_stderr, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::plugin_files::files::{MAX_PLUGIN_BYTES, read_regular};
use pi_hooks_host::plugin_files::paths::{agent_dir, resolve};
use pi_hooks_host::plugin_files::trust::{TrustStore, sha256_hex};

/// Trusts (`trust`) or untrusts each of `paths`, then saves the store once. A path that
/// cannot be resolved or read is reported and the others still count; the exit code is 1
/// if any failed.
pub(super) fn change_trust(paths: &[PathBuf], trust: bool) -> Result<ExitCode, CommandError> {
    let agent = agent_dir().map_err(CommandError::setup)?;
    let mut store = TrustStore::load(&agent).map_err(|e| CommandError::failed(escape(&e)))?;
    let here = current_dir();
    let mut failed = false;
    let mut out = String::new();
    for path in paths {
        let path = resolve(&path.to_string_lossy(), &here);
        let shown = path.display().to_string();
        let canonical = match std::fs::canonicalize(&path) {
            Ok(c) => c,
            Err(e) => {
                write_stderr(&format!(
                    "pi-hooks: {}: cannot resolve the path: {e}",
                    escape(&shown)
                ));
                failed = true;
                continue;
            }
        };
        let name = canonical.display().to_string();
        let name = escape(&name);
        if trust {
            // Read as a load reads it: a regular file, opened without blocking, capped (a
            // link to /dev/zero or a FIFO must not hang or fill memory).
            match read_regular(&canonical, MAX_PLUGIN_BYTES) {
                Ok(bytes) => {
                    let sha = sha256_hex(&bytes);
                    store.trust(&canonical, &sha);
                    out.push_str(&format!("trusted {name} (sha256 {sha})\n"));
                }
                Err(e) => {
                    write_stderr(&format!("pi-hooks: {}: {e}", escape(&shown)));
                    failed = true;
                }
            }
        } else if store.untrust(&canonical) {
            out.push_str(&format!("untrusted {name}\n"));
        } else {
            out.push_str(&format!("{name} was not trusted\n"));
        }
    }
    store.save().map_err(|e| CommandError::failed(escape(&e)))?;
    write_stdout(&out)?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
