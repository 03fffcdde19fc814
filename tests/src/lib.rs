//! Helpers for the integration tests: build the real plugins and the real `pi-hooks` binary,
//! compile C plugins against the committed header with the system compiler, and run the CLI
//! in a sandbox with its own home, agent directory and project.

pub mod confined;
pub mod fake_openai;
pub mod hidden_checkout;
pub mod npm;
pub mod packages;
pub mod pi_e2e;
pub mod pty;
pub mod reload;
pub mod rpc_client;
pub mod serve_client;
pub mod session_rpc;
pub mod tools;
pub mod workflow;

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
pub const RUST_PLUGINS: &[&str] = &[
    "permission-gate",
    "fixture-rust-init",
    "fixture-rust-abort",
    "counter",
    "workflow",
    "claude-hooks",
];

/// Builds the `pi-hooks` binary, the pi bridge's ring addon (`libpi_hooks_node_ring.so`
/// beside the binary, which the bridge then uses) and the Rust plugins once per test process
/// (a real `cargo build`, so the tests use exactly what a user would build).
pub fn build_workspace_artifacts() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = Command::new(cargo);
        command.current_dir(workspace_root()).args([
            "build",
            "--quiet",
            "-p",
            "pi-hooks",
            "-p",
            "pi-hooks-node-ring",
        ]);
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

/// Compiles C++ `source` into the shared library `out` with the flags C++ authors are promised
/// to pass (`-std=c++17 -Wall -Wextra -Werror`).
pub fn compile_cpp(source: &Path, out: &Path) -> PathBuf {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let output = Command::new(&cxx)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-shared",
            "-fPIC",
            "-I",
        ])
        .arg(include_dir())
        .arg("-o")
        .arg(out)
        .arg(source)
        .output()
        .expect("run the C++ compiler");
    assert!(
        output.status.success(),
        "{cxx} failed on {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    out.to_path_buf()
}

/// Writes `code` to `<dir>/<name>.cpp` and compiles it to `<dir>/<name>.so`.
pub fn compile_cpp_text(dir: &Path, name: &str, code: &str) -> PathBuf {
    let source = dir.join(format!("{name}.cpp"));
    std::fs::write(&source, code).expect("write C++ source");
    compile_cpp(
        &source,
        &dir.join(format!("{name}{}", std::env::consts::DLL_SUFFIX)),
    )
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

/// `-I` of `tests/fixtures/`, for C test plugins that include a fixture's header.
pub fn fixtures_include() -> String {
    format!("-I{}", workspace_root().join("tests/fixtures").display())
}

/// A C plugin from `tests/fixtures/<name>.c`, compiled into `dir`.
pub fn c_fixture(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    c_fixture_as(dir, name, name, extra)
}

/// `tests/fixtures/<fixture>.c` compiled into `dir` as `<out_name>` plus the library suffix.
pub fn c_fixture_as(dir: &Path, fixture: &str, out_name: &str, extra: &[&str]) -> PathBuf {
    let source = workspace_root()
        .join("tests/fixtures")
        .join(format!("{fixture}.c"));
    compile_c(
        &source,
        &dir.join(format!("{out_name}{}", std::env::consts::DLL_SUFFIX)),
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
        self.command_of(&pi_hooks_bin(), args)
    }

    /// [`Self::command`] running the `pi-hooks` binary at `program` (a copy of the built one,
    /// say, where another user must be able to run it).
    pub fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(self.project())
            .env("HOME", self.home())
            .env("PI_CODING_AGENT_DIR", self.agent_dir())
            .env_remove("PI_HOOKS_CACHE_DIR")
            .env_remove("PI_HOOKS_LOG")
            .env_remove("PI_HOOKS_TRACE")
            .env_remove("PI_HOOKS_TRACE_FILE");
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

// ---------------------------------------------------------------------------------------
// The `behave` fixture (tests/fixtures/behave.c), for the conformance suite.

/// The environment variable the `behave` instance `name` reads its configuration from:
/// `BEHAVE_<NAME>`, upper-cased, with `-` as `_`.
pub fn behave_env_var(name: &str) -> String {
    format!("BEHAVE_{}", name.to_uppercase().replace('-', "_"))
}

/// Where [`behave_plugin`] puts the instance `name`: `dir/libbehave_<name>.so`.
pub fn behave_library_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(
        "{}behave_{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

/// Compiles the `behave` fixture as the plugin `name` into [`behave_library_path`].
pub fn behave_plugin(dir: &Path, name: &str) -> PathBuf {
    let source = workspace_root().join("tests/fixtures/behave.c");
    let define = format!("-DPLUGIN_NAME=\"{name}\"");
    compile_c(&source, &behave_library_path(dir, name), &[&define])
}

/// One line of a `behave` log: `<plugin> <tag> <json>`.
#[derive(Debug, Clone, PartialEq)]
pub struct BehaveLine {
    /// The plugin's name.
    pub plugin: String,
    /// The event name, or `<event>:done`, `<event>:ctx_prompt`, `<action>:status`.
    pub tag: String,
    /// The payload (or the logged value).
    pub value: Value,
}

impl BehaveLine {
    /// `"<plugin> <tag>"`, for order assertions.
    pub fn who(&self) -> String {
        format!("{} {}", self.plugin, self.tag)
    }
}

/// Waits (up to a minute) until the `behave` log at `path` satisfies `ready`; panics naming
/// `what` and showing the log otherwise.
pub fn wait_behave_log(path: &Path, what: &str, ready: impl Fn(&[BehaveLine]) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let log = read_behave_log(path);
        if ready(&log) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}; log:\n{}",
            log.iter()
                .map(|l| format!("{} {}", l.who(), l.value))
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The `message` of the tool result with the call id `id` among a JSON run's `events` (its
/// `message_end`).
pub fn tool_result_message<'a>(events: &'a [Value], id: &str) -> Option<&'a Value> {
    events
        .iter()
        .find(|e| {
            e["type"] == "message_end"
                && e["message"]["role"] == "toolResult"
                && e["message"]["toolCallId"] == id
        })
        .map(|e| &e["message"])
}

/// The tools the model was offered, from the first `before_provider_request` in a `behave`
/// log.
pub fn offered_tools(log: &[BehaveLine]) -> &Vec<Value> {
    log.iter()
        .find(|l| l.tag == "before_provider_request")
        .expect("a provider request")
        .value["payload"]["tools"]
        .as_array()
        .expect("the request's tools")
}

/// Reads a `behave` log (empty when the file does not exist).
pub fn read_behave_log(path: &Path) -> Vec<BehaveLine> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    };
    text.lines()
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let (Some(plugin), Some(tag), Some(json)) = (parts.next(), parts.next(), parts.next())
            else {
                panic!("malformed behave log line: {line:?}");
            };
            BehaveLine {
                plugin: plugin.to_owned(),
                tag: tag.to_owned(),
                value: serde_json::from_str(json)
                    .unwrap_or_else(|e| panic!("bad JSON in behave log line {line:?}: {e}")),
            }
        })
        .collect()
}

/// Serialises the tests of one process that set `BEHAVE_*` variables and load plugins (the
/// environment is process-wide; `behave` reads it during init only).
pub fn behave_env_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Compiles and loads in-process, in this order, one `behave` instance per `(name, config)`,
/// logging to `log`. Holds [`behave_env_lock`] while the environment is set.
pub fn load_behave(
    sandbox: &Sandbox,
    plugins: &[(&str, Value)],
    log: &Path,
) -> Vec<std::sync::Arc<pi_hooks_host::plugin::LoadedPlugin>> {
    let libraries: Vec<PathBuf> = plugins
        .iter()
        .map(|(name, _)| behave_plugin(&sandbox.lib(), name))
        .collect();
    let _guard = behave_env_lock();
    let mut loaded = Vec::new();
    for ((name, config), library) in plugins.iter().zip(&libraries) {
        let var = behave_env_var(name);
        // SAFETY: every test that touches the environment holds `behave_env_lock`, and the
        // only other reader of these variables is the plugin's init, called below under it.
        unsafe {
            std::env::set_var(&var, config.to_string());
            std::env::set_var("BEHAVE_LOG", log);
        }
        let plugin =
            pi_hooks_host::lifecycle::load::load_file(library, &sandbox.root().join("cache"));
        // SAFETY: as above.
        unsafe {
            std::env::remove_var(&var);
            std::env::remove_var("BEHAVE_LOG");
        }
        let plugin = plugin.unwrap_or_else(|e| panic!("{}: {e}", library.display()));
        loaded.push(std::sync::Arc::new(plugin));
    }
    loaded
}

/// A command's stdout as JSON lines, with the whole output in the panic message.
pub fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| {
                panic!(
                    "stdout line is not JSON ({e}): {line}\nstderr: {}",
                    String::from_utf8_lossy(&output.stderr)
                )
            })
        })
        .collect()
}

/// Runs `command` with `input` on its stdin and gives its stdout's JSON lines once it
/// succeeded (`what` names it in the failure, with its stderr).
pub fn json_lines_with_stdin(command: &mut Command, input: &[u8], what: &str) -> Vec<Value> {
    use std::io::Write as _;
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin piped")
        .write_all(input)
        .unwrap_or_else(|e| panic!("cannot write to {what}: {e}"));
    let output = child.wait_with_output().expect("wait");
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output)
}

/// The arguments of a scripted JSON run: `run --mode json --script SCRIPT --no-session go`.
pub fn json_script_args(script: &Path) -> [&str; 7] {
    [
        "run",
        "--mode",
        "json",
        "--script",
        script.to_str().expect("UTF-8 script path"),
        "--no-session",
        "go",
    ]
}

/// Runs `command`, checks that it succeeded (showing its stderr otherwise), and gives its
/// stdout's JSON lines.
pub fn json_output(command: &mut Command) -> Vec<Value> {
    let output = command.output().expect("run pi-hooks");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output)
}

/// An in-process world for the combination rules: `behave` plugins loaded in order into a
/// real [`pi_hooks_host::runner::Runner`], with an error listener that records every report.
pub struct BehaveWorld {
    /// The runner over the plugins (declared first: dropped, and its plugins unloaded,
    /// before the sandbox's files go).
    pub runner: pi_hooks_host::runner::Runner,
    /// Every error reported to the listener, in order.
    pub errors: std::sync::Arc<std::sync::Mutex<Vec<pi_hooks_host::runner::ExtensionError>>>,
    /// The id of the recording listener.
    pub listener: u64,
    /// The `behave` log.
    pub log: PathBuf,
    /// Owns the libraries, the cache and the log.
    pub sandbox: Sandbox,
}

impl BehaveWorld {
    /// Loads `plugins` (`(name, config)`, in load order) with the default timeouts.
    pub fn new(plugins: &[(&str, Value)]) -> Self {
        Self::with_timeouts(plugins, pi_hooks_host::runner::DEFAULT_HOOK_TIMEOUT, None)
    }

    /// Loads `plugins` with the given `hookTimeout` and `toolCallTimeout`.
    pub fn with_timeouts(
        plugins: &[(&str, Value)],
        hook_timeout: std::time::Duration,
        tool_call_timeout: Option<std::time::Duration>,
    ) -> Self {
        let sandbox = Sandbox::new();
        let log = sandbox.root().join("behave.log");
        let loaded = load_behave(&sandbox, plugins, &log);
        Self::over(sandbox, log, loaded, hook_timeout, tool_call_timeout)
    }

    /// A world over plugins already loaded (for mixing in other fixtures).
    pub fn over(
        sandbox: Sandbox,
        log: PathBuf,
        plugins: Vec<std::sync::Arc<pi_hooks_host::plugin::LoadedPlugin>>,
        hook_timeout: std::time::Duration,
        tool_call_timeout: Option<std::time::Duration>,
    ) -> Self {
        let config = pi_hooks_host::runner::RunnerConfig {
            cwd: sandbox.project().display().to_string(),
            mode: pi_hooks_abi::ffi::PI_MODE_PRINT,
            hook_timeout,
            tool_call_timeout,
            session_file: None,
        };
        let runner = pi_hooks_host::runner::Runner::new(plugins, config);
        let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = errors.clone();
        let listener = runner.on_error(std::sync::Arc::new(
            move |error: &pi_hooks_host::runner::ExtensionError| {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(error.clone());
            },
        ));
        BehaveWorld {
            runner,
            errors,
            listener,
            log,
            sandbox,
        }
    }

    /// The path the runner knows the `behave` instance `name` by.
    pub fn path(&self, name: &str) -> String {
        behave_library_path(&self.sandbox.lib(), name)
            .display()
            .to_string()
    }

    /// The log so far.
    pub fn lines(&self) -> Vec<BehaveLine> {
        read_behave_log(&self.log)
    }

    /// `"<plugin> <tag>"` of every log line so far.
    pub fn calls(&self) -> Vec<String> {
        self.lines().iter().map(BehaveLine::who).collect()
    }

    /// The payload the first line tagged `who` (`"<plugin> <tag>"`) logged.
    pub fn payload(&self, who: &str) -> Value {
        self.lines()
            .into_iter()
            .find(|l| l.who() == who)
            .unwrap_or_else(|| panic!("no log line {who:?} in {:?}", self.calls()))
            .value
    }

    /// The errors reported so far.
    pub fn errors(&self) -> Vec<pi_hooks_host::runner::ExtensionError> {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A `pi-hooks` command in `sandbox` with `args`, then one `--hook` per `behave` instance in
/// `plugins` (compiled into the sandbox's `lib/`, configured through the command's own
/// environment, logging to [`Sandbox::behave_log`]).
pub fn behave_command(sandbox: &Sandbox, plugins: &[(&str, Value)], args: &[&str]) -> Command {
    let mut command = sandbox.command(args);
    command.env("BEHAVE_LOG", sandbox.behave_log());
    for (name, config) in plugins {
        let library = behave_plugin(&sandbox.lib(), name);
        command
            .arg("--hook")
            .arg(library)
            .env(behave_env_var(name), config.to_string());
    }
    command
}

impl Sandbox {
    /// Where `behave` plugins run through [`behave_command`] log.
    pub fn behave_log(&self) -> PathBuf {
        self.root().join("behave.log")
    }

    /// Writes a scripted-model script (see `loader/agent/src/model/scripted.rs`); returns its path.
    pub fn script(&self, script: &Value) -> PathBuf {
        let path = self.root().join("script.json");
        std::fs::write(&path, script.to_string()).expect("write the script");
        path
    }
}

/// Runs `command` with at most `limit` of time, stdin a pipe that is never written (a
/// program that reads it waits forever), stdout and stderr captured. A command still
/// running at the deadline is killed and the test fails with what it printed so far, so a
/// hang becomes a failure instead of a stuck test run.
pub fn output_within(mut command: Command, limit: std::time::Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;

    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command");
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let (done, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = done.send(bytes);
        });
        received
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    // Held open, never written, until the command has ended.
    let stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let grace = std::time::Duration::from_secs(1);
            let text = |r: std::sync::mpsc::Receiver<Vec<u8>>| {
                String::from_utf8_lossy(&r.recv_timeout(grace).unwrap_or_default()).into_owned()
            };
            panic!(
                "{:?} did not finish within {limit:?} and was killed\nstdout: {}\nstderr: {}",
                command,
                text(stdout),
                text(stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    drop(stdin);
    Output {
        status,
        stdout: stdout.recv().unwrap_or_default(),
        stderr: stderr.recv().unwrap_or_default(),
    }
}

/// `pi-hooks run --mode json --no-session --script <script> --hook <plugin>... go`, in the
/// sandbox.
pub fn json_run_command(sandbox: &Sandbox, script: &Path, plugins: &[&Path]) -> Command {
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        script.to_str().expect("UTF-8 script path"),
    ];
    for plugin in plugins {
        args.extend(["--hook", plugin.to_str().expect("UTF-8 plugin path")]);
    }
    args.push("go");
    sandbox.command(&args)
}

/// A C plugin named `name`, compiled into `dir` as `<file>.so`, whose init creates the file
/// `marker`: proof that its code ran.
pub fn marker_plugin(dir: &Path, file: &str, name: &str, marker: &Path) -> PathBuf {
    let code = format!(
        r#"#include <stdio.h>
#include "pi_hooks.h"
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    FILE *f = fopen("{}", "w");
    (void)host; (void)plugin;
    if (f != NULL) fclose(f);
    return PI_OK;
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "creates a marker file when it runs", init, NULL);
"#,
        marker.display()
    );
    compile_c_text(dir, file, &code, &[])
}

/// The C example `plugins/examples/<folder>/<file>.c`, compiled into `dir` as
/// `lib<file>.so` with the flags `scripts/build-c-plugins.sh` uses (`-pedantic`,
/// `-fvisibility=hidden`).
pub fn c_example_plugin(dir: &Path, folder: &str, file: &str) -> PathBuf {
    let source = workspace_root()
        .join("plugins/examples")
        .join(folder)
        .join(format!("{file}.c"));
    compile_c(
        &source,
        &dir.join(format!("lib{file}{}", std::env::consts::DLL_SUFFIX)),
        &["-pedantic", "-fvisibility=hidden"],
    )
}

/// The manual's pages as doctests: `cargo test -p pi-hooks-tests --doc` compiles and runs
/// their `rust` blocks (a block that is a fragment is marked `ignore`, with its reason in an
/// HTML comment above it); `tests/tests/docs_blocks.rs` checks every page is listed here.
#[cfg(doctest)]
mod docs_pages {
    #[doc = include_str!("../../README.md")]
    mod readme {}
    #[doc = include_str!("../../docs/SUMMARY.md")]
    mod summary {}
    #[doc = include_str!("../../docs/abi.md")]
    mod abi {}
    #[doc = include_str!("../../docs/architecture.md")]
    mod architecture {}
    #[doc = include_str!("../../docs/claude-hooks.md")]
    mod claude_hooks {}
    #[doc = include_str!("../../docs/commands.md")]
    mod commands {}
    #[doc = include_str!("../../docs/development.md")]
    mod development {}
    #[doc = include_str!("../../docs/discovery.md")]
    mod discovery {}
    #[doc = include_str!("../../docs/embedding.md")]
    mod embedding {}
    #[doc = include_str!("../../docs/events.md")]
    mod events {}
    #[doc = include_str!("../../docs/isolation.md")]
    mod isolation {}
    #[doc = include_str!("../../docs/packages.md")]
    mod packages {}
    #[doc = include_str!("../../docs/pi.md")]
    mod pi {}
    #[doc = include_str!("../../docs/reload.md")]
    mod reload {}
    #[doc = include_str!("../../docs/rpc.md")]
    mod rpc {}
    #[doc = include_str!("../../docs/sandbox.md")]
    mod sandbox {}
    #[doc = include_str!("../../docs/security.md")]
    mod security {}
    #[doc = include_str!("../../docs/serve-protocol.md")]
    mod serve_protocol {}
    #[doc = include_str!("../../docs/sessions.md")]
    mod sessions {}
    #[doc = include_str!("../../docs/testing.md")]
    mod testing {}
    #[doc = include_str!("../../docs/tracing.md")]
    mod tracing {}
    #[doc = include_str!("../../docs/workflow.md")]
    mod workflow {}
    #[doc = include_str!("../../docs/writing-plugins.md")]
    mod writing_plugins {}
}
