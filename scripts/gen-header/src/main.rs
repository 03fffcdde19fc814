//! `gen-header`: writes `include/pi_hooks.h` from `abi/src/ffi`, or with `--verify` checks that
//! the committed header is current. Run it through `scripts/gen-header.sh`.

use std::fs;
use std::process::ExitCode;

use pi_hooks_gen_header::{
    EVENTS_DOC_REL_PATH, HEADER_REL_PATH, events_doc, generate, header_path, repo_root, verify,
};

const USAGE: &str = "usage: scripts/gen-header.sh [--verify]

Generates include/pi_hooks.h from the C ABI in abi/src/ffi (cbindgen, configured by
scripts/gen-header/cbindgen.toml) and docs/events.md from abi/src/event_reference.rs.

  --verify   do not write; exit 1 with a diff when either is not current";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => write(),
        ["--verify"] => verify().map(|()| println!("{HEADER_REL_PATH} is current")),
        ["-h" | "--help"] => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unexpected arguments {args:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gen-header: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Writes the header and docs/events.md when their text changed.
fn write() -> Result<(), String> {
    let doc = repo_root().join(EVENTS_DOC_REL_PATH);
    let text = events_doc();
    if fs::read_to_string(&doc).ok().as_deref() != Some(text.as_str()) {
        fs::write(&doc, text).map_err(|e| format!("cannot write {}: {e}", doc.display()))?;
        println!("wrote {EVENTS_DOC_REL_PATH}");
    }
    let text = generate()?;
    let path = header_path();
    if fs::read_to_string(&path).is_ok_and(|old| old == text) {
        println!("{HEADER_REL_PATH} is already current");
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("wrote {HEADER_REL_PATH}");
    Ok(())
}
