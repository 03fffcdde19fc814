//! The pi bridge (plugins/pi-bridge/*.ts, which pi runs as they are) type-checks against pi
//! 0.73.1's own declarations with TypeScript's `tsc -p plugins/pi-bridge` (strict, no emit),
//! both installed on first use from scripts/pi-peer/package-lock.json
//! (`pi_hooks_tests::tools::pi_peer`), and against pi 1.6.0's (`pi_hooks_tests::tools::pi16`,
//! scripts/pi-peer-1.6), to which pi 1.6 maps the bridge's `@mariozechner/*` imports. A bridge
//! that calls an API pi does not have, or calls it with the wrong types, fails here before it
//! fails in a user's pi.

use std::path::Path;
use std::process::Command;

use pi_hooks_tests::tools::{pi_peer, pi16};
use pi_hooks_tests::workspace_root;

/// Runs TypeScript's `tsc -p PROJECT` and asserts it found no error.
fn tsc(project: &Path) {
    let tsc = pi_peer().join("typescript/bin/tsc");
    let output = Command::new("node")
        .arg(&tsc)
        .arg("-p")
        .arg(project)
        .current_dir(workspace_root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node {}: {e}", tsc.display()));
    assert!(
        output.status.success(),
        "tsc -p {} found errors:\n{}{}",
        project.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_bridge_type_checks_against_pi_s_declarations() {
    tsc(Path::new("plugins/pi-bridge"));
}

/// plugins/pi-bridge/tsconfig.json with pi 1.6.0's packages in place of 0.73.1's: pi 1.6's
/// extension loader maps `@mariozechner/pi-coding-agent` and `@mariozechner/pi-tui` to its own
/// `@earendil-works/*` packages (`dist/core/extensions/loader.js`), so those are the
/// declarations the bridge meets in pi 1.6.
#[test]
fn the_bridge_type_checks_against_pi_1_6_s_declarations() {
    let modules = pi16()
        .cli
        .ancestors()
        .nth(4)
        .expect("<modules>/@earendil-works/pi-coding-agent/dist/cli.js")
        .to_path_buf();
    let bridge = workspace_root().join("plugins/pi-bridge");
    let dir = tempfile::tempdir().unwrap();
    let package = |name: &str| modules.join("@earendil-works").join(name);
    let config = serde_json::json!({
        "extends": bridge.join("tsconfig.json"),
        "compilerOptions": {
            "baseUrl": bridge,
            "paths": {
                "@mariozechner/pi-coding-agent": [package("pi-coding-agent")],
                "@mariozechner/pi-tui": [package("pi-tui")],
                "@earendil-works/*": [modules.join("@earendil-works/*")],
            },
            "typeRoots": [pi_peer().join("@types")],
        },
        "files": [bridge.join("index.ts")],
    });
    std::fs::write(dir.path().join("tsconfig.json"), config.to_string()).unwrap();
    tsc(dir.path());
}
