//! `pi-hooks inspect PACKAGE` (a `.tgz` or a package folder): what the package declares,
//! read from its `package.json` and checked (its signature over every file, every library's SHA-256), without
//! running any of its code.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use super::{CommandError, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::archive::{Limits, MAX_ENTRY_BYTES, extract_tgz};
use pi_hooks_host::packages::manifest::{Capabilities, parse_package_json};
use pi_hooks_host::packages::platform::host_platform;
use pi_hooks_host::packages::verify::{Layout, sha256_hex, verify_signature};
use pi_hooks_host::plugin_files::files::{ReadError, open_regular, read_regular};

/// Whether `path` is a package rather than a library: a `.tgz` / `.tar.gz` file, or a
/// folder with a `package.json`.
pub(super) fn is_package(path: &Path) -> bool {
    let name = path.to_string_lossy();
    (path.is_file() && (name.ends_with(".tgz") || name.ends_with(".tar.gz")))
        || (path.is_dir() && path.join("package.json").is_file())
}

/// Shows the package at `path`.
pub(super) fn inspect_package(path: &Path, json: bool) -> Result<ExitCode, CommandError> {
    let shown = escape(&path.display().to_string()).into_owned();
    let fail = CommandError::failed;
    let unpacked;
    let root = if path.is_dir() {
        path.to_path_buf()
    } else {
        unpacked = tempfile::tempdir().map_err(|e| fail(format!("cannot unpack: {e}")))?;
        let file = open_regular(path).map_err(|e| fail(format!("{shown} {e}")))?;
        extract_tgz(file, unpacked.path(), Limits::from_env(), &shown).map_err(fail)?;
        unpacked.path().to_path_buf()
    };
    let bytes = read_regular(&root.join("package.json"), 1 << 20)
        .map_err(|e| fail(format!("{shown}: package.json {e}")))?;
    // Errors may quote the package's own text: escaped whole.
    let package =
        parse_package_json(&bytes).map_err(|e| fail(format!("{shown}: {}", escape(&e))))?;
    let what = format!(
        "package {} {} ({shown})",
        escape(package.name.as_str()),
        escape(&package.version)
    );
    // A folder may be an installed package (npm's `node_modules/` is not the package).
    let layout = if path.is_dir() {
        Layout::Installed
    } else {
        Layout::Packed
    };
    let signer = verify_signature(&package, &root, layout, &what)
        .map_err(|e| fail(escape(&e).into_owned()))?;
    let manifest = &package.manifest;
    let mut libraries: Vec<serde_json::Value> = Vec::new();
    for (platform, library) in &manifest.libraries {
        // A library is read as the installer reads it: a regular file, at most the
        // per-file cap (a link to /dev/zero or a FIFO is refused, not read forever).
        let verified = match read_regular(&root.join(&library.path), MAX_ENTRY_BYTES) {
            Ok(b) => sha256_hex(&b) == library.sha256.to_ascii_lowercase(),
            Err(ReadError::NotFound) => false,
            Err(e) => {
                return Err(fail(format!(
                    "{what}: its {} library {} {e}; nothing of it was run",
                    escape(platform),
                    escape(&library.path)
                )));
            }
        };
        libraries.push(json!({
                "platform": platform,
                "path": library.path,
                "sha256": library.sha256,
                "abi": library.abi,
                "sha256Matches": verified,
                "thisPlatform": platform == host_platform(),
        }));
    }
    if json {
        let value = json!({
            "name": package.name,
            "version": package.version,
            "plugin": manifest.plugin,
            "libraries": libraries,
            "capabilities": manifest.capabilities,
            "minHostVersion": manifest.min_host_version,
            "signer": signer.as_ref().map(|s| s.public_key.clone()),
        });
        write_stdout(&format!("{value}\n"))?;
    } else {
        let r = &manifest.plugin.registers;
        let mut text = format!(
            "Package {} {} (nothing of it was run)\n  description: {}\n  signed: {}\n  needs pi-hooks {} or newer\n  registers: events [{}], commands [{}], tools [{}], flags [{}], shortcuts [{}]\n  libraries:\n",
            escape(package.name.as_str()),
            escape(&package.version),
            escape(&manifest.plugin.description),
            signer.as_ref().map_or("no".to_owned(), |s| format!(
                "by key {}",
                escape(&s.public_key)
            )),
            escape(&manifest.min_host_version),
            escape(&r.events.join(", ")),
            escape(&r.commands.join(", ")),
            escape(&r.tools.join(", ")),
            escape(&r.flags.join(", ")),
            escape(&r.shortcuts.join(", ")),
        );
        for l in &libraries {
            text.push_str(&format!(
                "    {} {} (ABI {}, sha256 {}){}\n",
                escape(l["platform"].as_str().unwrap_or_default()),
                escape(l["path"].as_str().unwrap_or_default()),
                escape(l["abi"].as_str().unwrap_or_default()),
                if l["sha256Matches"] == true {
                    "matches"
                } else {
                    "DOES NOT MATCH"
                },
                if l["thisPlatform"] == true {
                    ", this platform"
                } else {
                    ""
                },
            ));
        }
        text.push_str(if manifest.capabilities.is_some() {
            "  capabilities (accepted at install, they are its grant: on Linux it runs isolated and confined to them):\n"
        } else {
            "  capabilities (none declared: installed, it is not confined):\n"
        });
        for line in Capabilities::describe(manifest.capabilities.as_ref()) {
            text.push_str(&format!("    {}\n", escape(&line)));
        }
        write_stdout(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
