//! The pi bridge (plugins/pi-bridge/*.ts, which pi runs as they are) type-checks against pi
//! 0.73.1's own declarations with TypeScript's `tsc -p plugins/pi-bridge` (strict, no emit),
//! both installed on first use from scripts/pi-peer/package-lock.json
//! (`pi_hooks_tests::tools::pi_peer`). A bridge that calls an API pi does not have, or calls it
//! with the wrong types, fails here before it fails in a user's pi.

use std::process::Command;

use pi_hooks_tests::tools::pi_peer;
use pi_hooks_tests::workspace_root;

#[test]
fn the_bridge_type_checks_against_pi_s_declarations() {
    let tsc = pi_peer().join("typescript/bin/tsc");
    let output = Command::new("node")
        .arg(&tsc)
        .args(["-p", "plugins/pi-bridge"])
        .current_dir(workspace_root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node {}: {e}", tsc.display()));
    assert!(
        output.status.success(),
        "tsc -p plugins/pi-bridge found errors:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
