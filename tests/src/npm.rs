//! pi-hooks on npm, for the tests of the pi user's path (tests/tests/npm_*.rs): a local npm
//! registry (verdaccio, installed by [`crate::tools::npm_registry`]) on a free port with its
//! own storage; pi-hooks' npm packages made by `scripts/npm-packages.sh` from the release build
//! and native plugins packed by `pi-hooks pack`, published to it with `npm publish`; and a pi
//! user's environment: a HOME whose npm installs "globally" into a folder of the sandbox, from
//! that registry, with a PATH that has node, npm and git but no Rust toolchain.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::tools::Pi;
use crate::{Sandbox, target_dir, workspace_root};

/// A verdaccio serving on 127.0.0.1, stopped when dropped.
pub struct Registry {
    child: Child,
    /// `http://127.0.0.1:PORT/`.
    pub url: String,
    /// Its storage, config and the publisher's `.npmrc`.
    dir: tempfile::TempDir,
}

impl Registry {
    /// [`Registry::start`], with pi-hooks' own npm packages ([`pi_hooks_packages`]) published.
    pub fn with_pi_hooks() -> Registry {
        let registry = Registry::start();
        for tgz in pi_hooks_packages() {
            registry.publish(&tgz);
        }
        registry
    }

    /// Starts verdaccio with a fresh storage, open to anyone (no uplinks: every package it
    /// serves was published by the test) and waits until it answers.
    pub fn start() -> Registry {
        let verdaccio = crate::tools::npm_registry();
        let dir = tempfile::tempdir().expect("registry dir");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "storage: {storage}\nauth:\n  htpasswd:\n    file: {htpasswd}\n    max_users: -1\nuplinks: {{}}\npackages:\n  '**':\n    access: $all\n    publish: $all\n    unpublish: $all\nlog: {{ type: stdout, format: pretty, level: error }}\n",
                storage = dir.path().join("storage").display(),
                htpasswd = dir.path().join("htpasswd").display(),
            ),
        )
        .expect("write verdaccio's config");
        let url = format!("http://127.0.0.1:{port}/");
        // The publisher's token: verdaccio lets anyone publish, npm wants one to send.
        std::fs::write(
            dir.path().join("publisher.npmrc"),
            format!("//127.0.0.1:{port}/:_authToken=pi-hooks-tests\n"),
        )
        .expect("write .npmrc");
        let log = std::fs::File::create(dir.path().join("verdaccio.log")).expect("log");
        let child = Command::new("node")
            .arg(verdaccio)
            .arg("--config")
            .arg(&config)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("start verdaccio (node)");
        let registry = Registry { child, url, dir };
        registry.wait_until_up(port);
        registry
    }

    fn wait_until_up(&self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
                let _ = stream.write_all(b"GET /-/ping HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                if answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200") {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "verdaccio did not answer on port {port} within 30 s; its log:\n{}",
            std::fs::read_to_string(self.dir.path().join("verdaccio.log")).unwrap_or_default()
        );
    }

    /// `npm publish TGZ` to this registry.
    pub fn publish(&self, tgz: &Path) {
        let output = Command::new("npm")
            .arg("publish")
            .arg(tgz)
            .args(["--registry", &self.url])
            .env(
                "npm_config_userconfig",
                self.dir.path().join("publisher.npmrc"),
            )
            .env("npm_config_cache", self.dir.path().join("publisher-cache"))
            .env("npm_config_loglevel", "error")
            .output()
            .expect("run npm publish");
        assert!(
            output.status.success(),
            "npm publish {} failed:\n{}",
            tgz.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `pi-hooks` release binary, built once with the pi bridge's ring addon beside it
/// (`cargo build --release`, under the tools lock, kept in target/release like any release
/// build; scripts/npm-packages.sh packs the addon found beside the binary).
pub fn release_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let lock = crate::tools::lock_tools();
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let status = Command::new(cargo)
                .current_dir(workspace_root())
                .args([
                    "build",
                    "--release",
                    "--quiet",
                    "-p",
                    "pi-hooks",
                    "--bin",
                    "pi-hooks",
                    "-p",
                    "pi-hooks-node-ring",
                ])
                .status()
                .expect("run cargo build --release");
            drop(lock);
            assert!(
                status.success(),
                "cargo build --release -p pi-hooks -p pi-hooks-node-ring failed"
            );
            target_dir().join("release/pi-hooks")
        })
        .clone()
}

/// pi-hooks' npm packages from `scripts/npm-packages.sh` (the release build, as
/// linux-x64-gnu): the tarballs' paths, the main one first, then the platform package and the
/// native plugins it packs prebuilt (`@pi-hooks/claude-hooks`, `@pi-hooks/permission-gate`).
///
/// Made once for all test processes while the sources stay the same: the tarballs are kept in
/// `target/tools/npm-packages/KEY`, where KEY hashes the release binary's size and time and
/// the path, size and time of every file under the folders the script packs or builds from
/// (`abi/`, `loader/`, `plugins/`, `include/`, `scripts/`, the workspace's `Cargo.toml` and
/// `Cargo.lock`), with the environment the script reads; made under the tools lock, so
/// parallel test processes wait for the first one instead of each running the script.
pub fn pi_hooks_packages() -> Vec<PathBuf> {
    static MADE: OnceLock<Vec<PathBuf>> = OnceLock::new();
    MADE.get_or_init(|| {
        let binary = release_binary();
        let version = pi_hooks_host::packages::HOST_VERSION;
        let names = [
            format!("pi-hooks-{version}.tgz"),
            format!("pi-hooks-linux-x64-gnu-{version}.tgz"),
            // The native plugins prebuilt: @pi-hooks/claude-hooks, @pi-hooks/permission-gate.
            format!("pi-hooks-claude-hooks-{version}.tgz"),
            format!("pi-hooks-permission-gate-{version}.tgz"),
        ];
        let cache = target_dir().join("tools/npm-packages");
        let out = cache.join(format!("{:016x}", sources_key(&binary)));
        let lock = crate::tools::lock_tools();
        let complete = |dir: &Path| names.iter().all(|name| dir.join(name).is_file());
        if !complete(&out) {
            // Older keys' tarballs are of sources that are gone (a test process still running
            // on those sources would lose them: the tests of one tree run on one key).
            let _ = std::fs::remove_dir_all(&cache);
            let fresh = cache.join(format!("making-{}", std::process::id()));
            std::fs::create_dir_all(&fresh).expect("npm packages dir");
            let output = Command::new("bash")
                .arg(workspace_root().join("scripts/npm-packages.sh"))
                .arg(&fresh)
                .arg(format!("linux-x64-gnu={}", binary.display()))
                .output()
                .expect("run scripts/npm-packages.sh");
            assert!(
                output.status.success(),
                "scripts/npm-packages.sh failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            for name in &names {
                assert!(
                    fresh.join(name).is_file(),
                    "npm-packages.sh did not write {}",
                    fresh.join(name).display()
                );
            }
            std::fs::rename(&fresh, &out).expect("keep the npm packages");
        }
        drop(lock);
        names.iter().map(|name| out.join(name)).collect()
    })
    .clone()
}

/// The key of [`pi_hooks_packages`]' cache: what `scripts/npm-packages.sh` makes its tarballs
/// from, by size and modification time (cargo and editors rewrite what they change).
fn sources_key(binary: &Path) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    fn stamp(path: &Path, hasher: &mut DefaultHasher) {
        path.hash(hasher);
        if let Ok(meta) = std::fs::metadata(path) {
            meta.len().hash(hasher);
            meta.modified().ok().hash(hasher);
        }
    }
    fn walk(dir: &Path, hasher: &mut DefaultHasher) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                // Installed tools, build outputs, and the fuzzers' findings are not sources.
                let skip = ["node_modules", "target", "corpus", "artifacts", ".git"];
                if !skip.iter().any(|s| name == *s) {
                    walk(&path, hasher);
                }
            } else {
                stamp(&path, hasher);
            }
        }
    }
    let mut hasher = DefaultHasher::new();
    pi_hooks_host::packages::HOST_VERSION.hash(&mut hasher);
    stamp(binary, &mut hasher);
    let root = workspace_root();
    for file in ["Cargo.toml", "Cargo.lock"] {
        stamp(&root.join(file), &mut hasher);
    }
    for dir in ["abi", "loader", "plugins", "include", "scripts"] {
        walk(&root.join(dir), &mut hasher);
    }
    for var in [
        "PI_HOOKS_NATIVE_PACKAGES",
        "PI_HOOKS_SIGN_KEY",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
    ] {
        std::env::var_os(var).hash(&mut hasher);
    }
    hasher.finish()
}

/// A pi user's environment in `sandbox`: npm installs from `registry`, "globally" into
/// `<sandbox>/npm-global` (its `bin` first on PATH), and PATH holds no folder with `cargo` or
/// `rustc` in it.
pub struct PiUser<'a> {
    /// The sandbox (HOME, agent directory, project).
    pub sandbox: &'a Sandbox,
    registry_url: String,
}

impl<'a> PiUser<'a> {
    /// The environment of `sandbox` against `registry`.
    pub fn new(sandbox: &'a Sandbox, registry: &Registry) -> PiUser<'a> {
        std::fs::create_dir_all(sandbox.root().join("npm-global/bin")).expect("npm prefix");
        PiUser {
            sandbox,
            registry_url: registry.url.clone(),
        }
    }

    /// npm's global prefix for this user.
    pub fn npm_prefix(&self) -> PathBuf {
        self.sandbox.root().join("npm-global")
    }

    /// `npm root -g` for this user.
    pub fn npm_global_root(&self) -> PathBuf {
        self.npm_prefix().join("lib/node_modules")
    }

    /// PATH: npm's global `bin`, then the test's PATH where each folder holding `cargo` or
    /// `rustc` is replaced by a folder of links to everything else in it (so node, npm and
    /// git stay reachable wherever they are installed, and no Rust tool is).
    pub fn path(&self) -> String {
        let mut dirs = vec![self.npm_prefix().join("bin")];
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        for (index, dir) in std::env::split_paths(&inherited).enumerate() {
            if !dir.join("cargo").exists() && !dir.join("rustc").exists() {
                dirs.push(dir);
                continue;
            }
            let shadow = self
                .sandbox
                .root()
                .join(format!("path-without-rust-{index}"));
            if !shadow.exists() {
                std::fs::create_dir_all(&shadow).expect("PATH folder");
                for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    // cargo, cargo-clippy, rustc, rustup, rustdoc, rustfmt, rust-gdb...
                    let rust = name.starts_with("cargo") || name.starts_with("rust");
                    if !rust {
                        let _ = std::os::unix::fs::symlink(entry.path(), shadow.join(&name));
                    }
                }
            }
            dirs.push(shadow);
        }
        std::env::join_paths(dirs)
            .expect("PATH")
            .to_string_lossy()
            .into_owned()
    }

    /// `program` in this environment, in the project.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.sandbox.project())
            .env("HOME", self.sandbox.home())
            .env("PI_CODING_AGENT_DIR", self.sandbox.agent_dir())
            .env("PATH", self.path())
            .env("npm_config_registry", &self.registry_url)
            .env("npm_config_prefix", self.npm_prefix())
            .env("npm_config_cache", self.sandbox.root().join("npm-cache"))
            .env("npm_config_userconfig", self.sandbox.home().join(".npmrc"))
            .env("npm_config_update_notifier", "false")
            .env("npm_config_fund", "false")
            .env("npm_config_audit", "false")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env_remove("PI_HOOKS_BIN")
            .env_remove("PI_HOOKS_CACHE_DIR")
            .env_remove("PI_HOOKS_LOG")
            .env_remove("PI_HOOKS_TRACE")
            .env_remove("PI_HOOKS_TRACE_FILE")
            .env_remove("CARGO")
            .env_remove("RUSTUP_HOME")
            .env_remove("CARGO_HOME");
        command
    }

    /// `pi ARGS` of `pi` (its `cli.js` under its node) in this environment, its node's folder
    /// first on PATH (pi runs `npm`, whose `#!/usr/bin/env node` then finds pi's node too).
    pub fn pi(&self, pi: &Pi, args: &[&str]) -> Command {
        let mut command = self.command(&pi.node);
        let mut path = self.path();
        if let Some(folder) = pi.node.parent().filter(|f| !f.as_os_str().is_empty()) {
            path = format!("{}:{path}", folder.display());
        }
        command.arg(&pi.cli).args(args).env("PATH", path);
        command
    }

    /// Runs `pi ARGS` of `pi` and asserts it succeeded; returns its output.
    pub fn pi_ok(&self, pi: &Pi, args: &[&str]) -> Output {
        let output = self.pi(pi, args).output().expect("run pi");
        assert!(
            output.status.success(),
            "pi {} {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            pi.version,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `pi-hooks ARGS` as the pi user has it after `pi install npm:pi-hooks`: npm's launcher
    /// where pi installed the package, `<agentDir>/npm/node_modules/.bin/pi-hooks` for pi 0.75
    /// and later (pi 1.6), else npm's global `bin` (pi 0.73.1 installs with `npm install -g`).
    pub fn pi_hooks(&self, args: &[&str]) -> Command {
        let mut command = self.command(self.pi_hooks_launcher());
        command.args(args);
        command
    }

    /// The `pi-hooks` launcher [`PiUser::pi_hooks`] runs.
    pub fn pi_hooks_launcher(&self) -> PathBuf {
        let managed = self.pi_npm_root().join(".bin/pi-hooks");
        if managed.exists() {
            managed
        } else {
            self.npm_prefix().join("bin/pi-hooks")
        }
    }

    /// Where pi 0.75 and later (pi 1.6) install a user's `npm:` packages:
    /// `<agentDir>/npm/node_modules`.
    pub fn pi_npm_root(&self) -> PathBuf {
        self.sandbox.agent_dir().join("npm/node_modules")
    }

    /// Where `pi` installs a user's `npm:` packages: [`PiUser::pi_npm_root`] for pi 1.6,
    /// `npm root -g` ([`PiUser::npm_global_root`]) for pi 0.73.1.
    pub fn npm_root_of(&self, pi: &Pi) -> PathBuf {
        if pi.version.starts_with("0.") {
            self.npm_global_root()
        } else {
            self.pi_npm_root()
        }
    }

    /// `pi --mode rpc` of `pi` with the fake model of `models.json` in the agent directory.
    pub fn pi_rpc(&self, pi: &Pi, extra: &[&str]) -> crate::rpc_client::RpcClient {
        let mut command = self.pi(pi, &crate::pi_e2e::RPC_WITH_FAKE_MODEL);
        command.args(extra).env("PI_OFFLINE", "1");
        crate::rpc_client::RpcClient::start(command)
    }
}

/// Packs `library` with `pi-hooks pack --name NAME` into `out`: the package's path.
pub fn pack_as(sandbox: &Sandbox, library: &Path, name: &str, out: &Path) -> PathBuf {
    let stdout = crate::packages::ok(
        sandbox,
        &[
            "pack",
            library.to_str().unwrap(),
            "--name",
            name,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let line = stdout.lines().next().expect("pack says what it wrote");
    PathBuf::from(line.rsplit(" -> ").next().expect("the package path"))
}

/// The `pi-hooks serve` processes whose parent is `pid`.
pub fn serve_children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent pid is the second field after the parenthesised command name.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if parent == Some(pid) && args.iter().any(|a| *a == b"serve") {
            found.push(child);
        }
    }
    found
}

/// `git daemon` serving the repositories under a folder on a free port (pi 0.73.1 and 1.6 take
/// `git:git://127.0.0.1:PORT/PATH`); killed when dropped.
pub struct GitDaemon(Child, u16);

impl GitDaemon {
    /// Serves `base`.
    pub fn start(base: &Path) -> GitDaemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        // `git daemon` runs `git-daemon` as its child, which killing `git` leaves running:
        // start `git-daemon` itself, from git's exec path, so that drop stops it.
        let exec_path = Command::new("git")
            .arg("--exec-path")
            .output()
            .ok()
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .unwrap_or_default();
        let mut command = if exec_path.join("git-daemon").is_file() {
            Command::new(exec_path.join("git-daemon"))
        } else {
            let mut git = Command::new("git");
            git.arg("daemon");
            git
        };
        let child = command
            .arg(format!("--base-path={}", base.display()))
            .args(["--export-all", "--reuseaddr", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start git daemon");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "git daemon did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        GitDaemon(child, port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.1
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `git ARGS` in `dir`, with an identity and `main` as the first branch.
pub fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

/// The `packages` list of a settings file.
pub fn settings_packages(settings: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(settings).expect("read the settings file");
    serde_json::from_str::<serde_json::Value>(&text).expect("settings JSON")["packages"].clone()
}

/// The commands of the README's quick start `name`: the lines of its fenced block between
/// `<!-- quickstart:NAME -->` and `<!-- /quickstart -->`, without comment lines and trailing
/// `# comments`, as a user would type them.
pub fn quickstart_commands(name: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let start = format!("<!-- quickstart:{name} -->");
    let block = readme
        .split_once(&start)
        .and_then(|(_, rest)| rest.split_once("<!-- /quickstart -->"))
        .unwrap_or_else(|| panic!("README.md has no block {start} ... <!-- /quickstart -->"))
        .0;
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("```"))
        .map(|line| {
            // A ` #` outside quotes starts a comment.
            let (mut quote, mut cut) = (None, line.len());
            let bytes = line.as_bytes();
            for (i, c) in line.char_indices() {
                match (quote, c) {
                    (None, '"' | '\'') => quote = Some(c),
                    (Some(q), c) if c == q => quote = None,
                    (None, '#') if i > 0 && bytes[i - 1] == b' ' => {
                        cut = i;
                        break;
                    }
                    _ => {}
                }
            }
            line[..cut].trim_end().to_owned()
        })
        .collect()
}

impl PiUser<'_> {
    /// A folder with a `pi` command running `pi` (its node and `cli.js`), as a user has
    /// `pi` on PATH: put it first on the PATH of [`PiUser::shell`].
    pub fn pi_on_path(&self, pi: &Pi) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.sandbox.root().join("pi-bin");
        std::fs::create_dir_all(&dir).expect("pi's folder");
        let shim = dir.join("pi");
        std::fs::write(
            &shim,
            format!(
                "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
                pi.node.display(),
                pi.cli.display()
            ),
        )
        .expect("write pi");
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        dir
    }

    /// `sh -c LINE` in this environment with `path` as PATH.
    pub fn shell(&self, line: &str, path: &str) -> Command {
        let mut command = self.command("sh");
        command.args(["-c", line]).env("PATH", path);
        command
    }

    /// The PATH a quick start's `export PATH=VALUE` line gives, evaluated by the shell with
    /// this user's HOME, starting from `path`.
    pub fn export_path(&self, value: &str, path: &str) -> String {
        let output = self
            .shell(&format!("export PATH={value}; printf %s \"$PATH\""), path)
            .output()
            .unwrap();
        assert!(output.status.success(), "export PATH={value}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }
}
