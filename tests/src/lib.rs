//! Helpers for the integration tests: build the real plugins and the real `pi-hooks` binary,
//! compile C plugins against the committed header with the system compiler, and run the CLI
//! in a sandbox with its own home, agent directory and project.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Cargo's target directory for this workspace.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

/// The Rust plugin crates the tests load.
pub const RUST_PLUGINS: &[&str] = &["permission-gate", "fixture-rust-init"];

/// Builds the `pi-hooks` binary and the Rust plugins once per test process (a real
/// `cargo build`, so the tests use exactly what a user would build).
pub fn build_workspace_artifacts() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = Command::new(cargo);
        command
            .current_dir(workspace_root())
            .args(["build", "--quiet", "-p", "pi-hooks"]);
        for plugin in RUST_PLUGINS {
            command.args(["-p", plugin]);
        }
        let status = command.status().expect("run cargo build");
        assert!(
            status.success(),
            "cargo build of the binary and plugins failed"
        );
    });
}

/// The `pi-hooks` binary.
pub fn pi_hooks_bin() -> PathBuf {
    build_workspace_artifacts();
    target_dir()
        .join("debug")
        .join(format!("pi-hooks{}", std::env::consts::EXE_SUFFIX))
}

/// The built library of a Rust plugin crate.
pub fn rust_plugin(crate_name: &str) -> PathBuf {
    build_workspace_artifacts();
    let file = format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        crate_name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    );
    let path = target_dir().join("debug").join(file);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// The committed header folder.
pub fn include_dir() -> PathBuf {
    workspace_root().join("include")
}

/// Compiles C `source` into the shared library `out` with the strict flags C authors are
/// promised to pass (`-std=c11 -Wall -Wextra -Werror`), plus `extra` flags.
pub fn compile_c(source: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let output = Command::new(&cc)
        .args([
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I",
        ])
        .arg(include_dir())
        .args(extra)
        .arg("-o")
        .arg(out)
        .arg(source)
        .output()
        .expect("run the C compiler");
    assert!(
        output.status.success(),
        "{cc} failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    out.to_path_buf()
}

/// Writes `code` to `<dir>/<name>.c` and compiles it to `<dir>/<name>.so` (or `out_name`).
pub fn compile_c_text(dir: &Path, name: &str, code: &str, extra: &[&str]) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    std::fs::write(&source, code).expect("write C source");
    compile_c(
        &source,
        &dir.join(format!("{name}{}", std::env::consts::DLL_SUFFIX)),
        extra,
    )
}

/// A C plugin from `tests/fixtures/<name>.c`, compiled into `dir`.
pub fn c_fixture(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let source = workspace_root()
        .join("tests/fixtures")
        .join(format!("{name}.c"));
    compile_c(
        &source,
        &dir.join(format!("{name}{}", std::env::consts::DLL_SUFFIX)),
        extra,
    )
}

/// The protected-paths example, compiled from `plugins/examples/protected-paths`.
pub fn protected_paths_plugin(dir: &Path) -> PathBuf {
    let source = workspace_root().join("plugins/examples/protected-paths/protected_paths.c");
    compile_c(
        &source,
        &dir.join(format!(
            "libprotected_paths{}",
            std::env::consts::DLL_SUFFIX
        )),
        &[],
    )
}

/// A throwaway world: `home/`, `home/.pi/agent` as the agent directory, `project/` as cwd.
pub struct Sandbox {
    /// Keeps the folder alive.
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// A fresh sandbox.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["home/.pi/agent", "project", "lib"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("sandbox dirs");
        }
        Sandbox { dir }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `$HOME`.
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The agent directory.
    pub fn agent_dir(&self) -> PathBuf {
        self.home().join(".pi/agent")
    }

    /// The project (cwd).
    pub fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    /// A scratch folder for built libraries.
    pub fn lib(&self) -> PathBuf {
        self.root().join("lib")
    }

    /// Copies `library` into `folder` (created) as `name`.
    pub fn install(&self, library: &Path, folder: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(folder).expect("plugin folder");
        let target = folder.join(name);
        std::fs::copy(library, &target).expect("copy plugin");
        target
    }

    /// A `pi-hooks` command with this sandbox's environment and cwd.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(pi_hooks_bin());
        command
            .args(args)
            .current_dir(self.project())
            .env("HOME", self.home())
            .env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env_remove("PI_HOOKS_CACHE_DIR")
            .env_remove("PI_HOOKS_LOG");
        command
    }

    /// Runs `pi-hooks` with `args`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run pi-hooks")
    }

    /// Runs `pi-hooks list --json` with extra `args` and parses the output.
    pub fn list_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["list", "--json"];
        all.extend_from_slice(args);
        parse_json_output(&self.run(&all))
    }
}

/// Parses a command's stdout as one JSON object, with the whole output in the panic message.
pub fn parse_json_output(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "output is not JSON ({e}):\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The names of the loaded plugins in a `list --json` report.
pub fn loaded_names(report: &Value) -> Vec<String> {
    report["plugins"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The error entry for a path ending in `suffix`, if any.
pub fn error_for<'a>(report: &'a Value, suffix: &str) -> Option<&'a Value> {
    report["errors"]
        .as_array()?
        .iter()
        .find(|e| e["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
}
