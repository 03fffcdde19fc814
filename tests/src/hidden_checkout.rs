//! Commands run as a user who has only the `pi-hooks` binary: inside a private mount namespace
//! in which the workspace root (this checkout, its `target/` and the source tree the binary
//! was built from) is an empty tmpfs (`unshare --mount --propagation private`, then `mount -t
//! tmpfs none <root>`). Needs root (the tests run as root); [`available`] says why not
//! otherwise, and the tests skip with that reason printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::workspace_root;

/// The shell line that hides the checkout (`$0`) and then runs `$1` with `sh -c`.
const HIDE: &str = r#"mount -t tmpfs none "$0" && exec sh -c "$1""#;

/// `Ok` when commands can run with the checkout hidden, else why not.
pub fn available() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| {
            let root = workspace_root();
            let probe = format!(
                "test ! -e {:?}",
                root.join("Cargo.toml").display().to_string()
            );
            match hidden(&probe).output() {
                Ok(output) if output.status.success() => Ok(()),
                Ok(output) => Err(format!(
                    "unshare --mount / mount -t tmpfs over {} failed ({}): {}",
                    root.display(),
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                )),
                Err(e) => Err(format!("cannot run unshare: {e}")),
            }
        })
        .clone()
}

/// `sh -c script` with the checkout hidden (see the module). Set its cwd and environment as
/// for any command; the cwd must be outside the checkout.
pub fn hidden(script: &str) -> Command {
    let mut command = Command::new("unshare");
    command
        .args(["--mount", "--propagation", "private", "sh", "-c", HIDE])
        .arg(workspace_root())
        .arg(script);
    command
}

/// The argv of [`hidden`], for a terminal's command builder.
pub fn hidden_argv(script: &str) -> Vec<String> {
    vec![
        "unshare".into(),
        "--mount".into(),
        "--propagation".into(),
        "private".into(),
        "sh".into(),
        "-c".into(),
        HIDE.into(),
        workspace_root().display().to_string(),
        script.into(),
    ]
}

/// A copy of the built `pi-hooks` binary in `dir/bin` (created), reachable with the
/// checkout hidden; returns that `bin` folder.
pub fn binary_copy(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin folder");
    std::fs::copy(crate::pi_hooks_bin(), bin.join("pi-hooks")).expect("copy pi-hooks");
    bin
}

/// `dir` first on PATH.
pub fn path_with(dir: &Path) -> String {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs)
        .expect("PATH")
        .to_string_lossy()
        .into_owned()
}
