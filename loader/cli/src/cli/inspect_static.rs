//! `pi-hooks inspect LIB` without `--run-code`: what a plugin library is, read from the file's
//! bytes (its header and the information block it exports, `pi_hooks_abi::info_block`), without loading it. Nothing of
//! the plugin runs, not even its static constructors, so this is safe on any file, a project's
//! untrusted plugin included.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::{CommandError, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::library::check_object_header;
use pi_hooks_host::library::info::read_file_info;
use pi_hooks_host::lifecycle::load::shell_quote;
use pi_hooks_host::packages::platform::library_platform;
use pi_hooks_host::plugin_files::files::{MAX_PLUGIN_BYTES, read_regular};
use pi_hooks_host::plugin_files::trust::{TrustStore, sha256_hex};

/// Shows the library at `canonical` (named `given` by the user); `project` when it is a
/// project plugin, whose trust state is then shown.
pub(super) fn inspect_static(
    canonical: &Path,
    project: bool,
    agent: &Path,
    json: bool,
) -> Result<ExitCode, CommandError> {
    let path = canonical.display().to_string();
    let shown = escape(&path).into_owned();
    let fail = |what: String| CommandError::failed(format!("{shown} {what}"));
    let bytes = read_regular(canonical, MAX_PLUGIN_BYTES).map_err(|e| fail(e.to_string()))?;
    let platform = library_platform(&bytes).map_err(fail)?;
    let file = read_file_info(&bytes).map_err(fail)?;
    if !file.has_entry {
        return Err(fail(format!(
            "does not export {} and is not a pi-hooks plugin; define it with PI_HOOKS_PLUGIN (C), PI_HOOKS_CPP_PLUGIN (C++) or pi_hooks_abi::plugin! (Rust)",
            pi_hooks_abi::ENTRY_SYMBOL
        )));
    }
    let sha256 = sha256_hex(&bytes);
    let trust = if project {
        let state = TrustStore::load(agent).map_or(
            pi_hooks_host::plugin_files::trust::TrustState::New,
            |store| store.state(canonical, &sha256),
        );
        format!("project plugin, {}", state.describe())
    } else {
        "not a project plugin, no trust needed".to_owned()
    };
    // Loadable here? A library for another platform is still shown (a package holds several).
    let not_loadable = check_object_header(&bytes).err();
    let run_code = format!("pi-hooks inspect --run-code {}", shell_quote(&path));
    if json {
        let info = file.info.as_ref();
        let entry = json!({
            "name": info.map(|i| i.name.clone()),
            "version": info.map(|i| i.version.clone()),
            "abi": info.map(|i| i.abi()),
            "description": info.map(|i| i.description.clone()),
            "path": path,
            "sha256": sha256,
            "platform": platform,
            "loadableHere": not_loadable.is_none(),
            "trust": trust,
            "ranCode": false,
            "registers": Value::Null,
        });
        let report = json!({"plugins": [entry], "untrusted": [], "errors": [], "warnings": []});
        write_stdout(&format!("{report}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    match &file.info {
        Some(info) => {
            let _ = writeln!(
                out,
                "Plugin {} {} (ABI {})",
                escape(&info.name),
                escape(&info.version),
                info.abi()
            );
        }
        None => out.push_str("Plugin library (name and version not readable without running it)\n"),
    }
    let _ = writeln!(
        out,
        "  path: {shown}\n  sha256: {sha256}\n  trust: {trust}\n  platform: {platform}"
    );
    if let Some(reason) = &not_loadable {
        let _ = writeln!(out, "  not loadable on this machine: it {}", escape(reason));
    }
    match &file.info {
        Some(info) if !info.description.is_empty() => {
            let _ = writeln!(out, "  description: {}", escape(&info.description));
        }
        Some(_) => {}
        None => {
            let _ = writeln!(
                out,
                "  it exports no {} block (built with an older pi_hooks.h or SDK, or with an entry function of its own and no PI_HOOKS_PLUGIN_INFO)",
                pi_hooks_abi::INFO_SYMBOL
            );
        }
    }
    let _ = writeln!(
        out,
        "  read from the file without running it; what it registers is known only by loading it, which runs its code: {}",
        escape(&run_code)
    );
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
