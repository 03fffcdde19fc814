//! The bad-input corpus: broken plugin files, odd folder entries and broken
//! settings files, each built by its test in a fresh sandbox.
//!
//! Every test runs the real `pi-hooks list`, once with `--json` and once as text, and checks
//! that the process exits cleanly, that the bad input is reported exactly once as an error
//! naming the file and the reason (in the JSON `errors` and as the text line
//! `Failed to load plugin "<path>": <reason>`), that no other error is reported, and that a
//! good plugin in the same load still loaded.
//!
//! The corpus goes into the global hooks folder `<agentDir>/hooks/` or is named with
//! `--hook`: both load without trust. One test covers the project folder, where plugins wait
//! for trust.
#![cfg(target_os = "linux")]

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pi_hooks_abi::ffi::{PI_HOOKS_ABI_MAJOR, PI_HOOKS_ABI_MINOR};
use pi_hooks_abi::layout::{AbiSizes, fingerprint_for_minor};
use pi_hooks_tests::{Sandbox, loaded_names, parse_json_output, rust_plugin};
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Compiles `tests/fixtures/<fixture>.c` into `<sandbox>/lib/<out_name>.so` with `flags`.
fn build(sandbox: &Sandbox, fixture: &str, out_name: &str, flags: &[&str]) -> PathBuf {
    pi_hooks_tests::c_fixture_as(&sandbox.lib(), fixture, out_name, flags)
}

/// The good plugin (`good.c`) built as `<lib>/<name>.so`, whose descriptor name is `name`.
fn good_plugin(sandbox: &Sandbox, name: &str) -> PathBuf {
    build(
        sandbox,
        "good",
        name,
        &[&format!("-DPLUGIN_NAME=\"{name}\"")],
    )
}

/// The global hooks folder, created.
fn global_hooks(sandbox: &Sandbox) -> PathBuf {
    let dir = sandbox.agent_dir().join("hooks");
    std::fs::create_dir_all(&dir).expect("global hooks folder");
    dir
}

/// A sandbox whose global hooks folder holds the good plugin as `good.so`, and that folder.
fn sandbox_with_good() -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    let hooks = global_hooks(&sandbox);
    let good = good_plugin(&sandbox, "good");
    sandbox.install(&good, &hooks, "good.so");
    (sandbox, hooks)
}

/// What one `pi-hooks list` reported, as JSON and as text.
struct Listing {
    json: Value,
    text: String,
}

/// Runs `pi-hooks list --json <args>` and `pi-hooks list <args>` in the sandbox.
fn list(sandbox: &Sandbox, args: &[&str]) -> Listing {
    list_via(sandbox, args, |command| command)
}

/// Like [`list`], with each command passed through `wrap` first (environment, other user).
fn list_via(sandbox: &Sandbox, args: &[&str], wrap: impl Fn(Command) -> Command) -> Listing {
    let run = |json: bool| {
        let mut all = vec!["list"];
        if json {
            all.push("--json");
        }
        all.extend_from_slice(args);
        let output = wrap(sandbox.command(&all)).output().expect("run pi-hooks");
        assert_clean_exit(&output, args.contains(&"--hook"));
        output
    };
    let json = parse_json_output(&run(true));
    let text = String::from_utf8_lossy(&run(false).stdout).into_owned();
    Listing { json, text }
}

/// `list` must exit with success whatever it found in the plugin folders, and with 0 or 1
/// (1: a plugin named with `--hook` did not load) when `named`: a signal means the host
/// crashed.
fn assert_clean_exit(output: &Output, named: bool) {
    let clean = if named {
        matches!(output.status.code(), Some(0 | 1))
    } else {
        output.status.success()
    };
    assert!(
        clean,
        "pi-hooks did not exit cleanly ({}): a bad plugin must become an error entry, never a crash\n\
         stdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

impl Listing {
    fn errors(&self) -> &[Value] {
        self.json["errors"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The error reported for the path ending in `/<file_name>`: asserts there is exactly one,
    /// and that the text listing shows it as `Failed to load plugin "<path>": <error>`.
    /// Returns `(path, error)`.
    fn error(&self, file_name: &str) -> (String, String) {
        let suffix = format!("/{file_name}");
        let found: Vec<&Value> = self
            .errors()
            .iter()
            .filter(|e| e["path"].as_str().is_some_and(|p| p.ends_with(&suffix)))
            .collect();
        assert_eq!(
            found.len(),
            1,
            "expected exactly one error for {file_name:?}, report:\n{:#}",
            self.json
        );
        let path = found[0]["path"].as_str().unwrap_or_default().to_owned();
        let error = found[0]["error"].as_str().expect("error text").to_owned();
        let line = format!("Failed to load plugin \"{path}\": {error}");
        assert!(
            self.text.contains(&line),
            "the text listing lacks the line\n  {line}\ntext:\n{}",
            self.text
        );
        (path, error)
    }

    /// Asserts the error for `file_name` contains `reason`; returns the error text.
    fn expect_error(&self, file_name: &str, reason: &str) -> String {
        let (_, error) = self.error(file_name);
        assert!(
            error.contains(reason),
            "the error for {file_name:?} should contain {reason:?}, got:\n  {error}"
        );
        error
    }

    /// Asserts exactly `count` errors were reported (so nothing else failed).
    fn expect_error_count(&self, count: usize) {
        assert_eq!(
            self.errors().len(),
            count,
            "unexpected number of errors, report:\n{:#}",
            self.json
        );
        assert_eq!(
            self.text.matches("Failed to load plugin ").count(),
            count,
            "unexpected number of error lines in the text listing:\n{}",
            self.text
        );
    }

    /// Asserts exactly these plugins loaded, in this order, in both listings.
    fn expect_loaded(&self, names: &[&str]) {
        assert_eq!(
            loaded_names(&self.json),
            names,
            "loaded plugins differ, report:\n{:#}",
            self.json
        );
        for (i, name) in names.iter().enumerate() {
            let entry = format!("  {}. {name} ", i + 1);
            assert!(
                self.text.contains(&entry),
                "the text listing lacks {entry:?}:\n{}",
                self.text
            );
        }
    }

    /// The JSON entry of the loaded plugin `name`.
    fn plugin(&self, name: &str) -> &Value {
        self.json["plugins"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["name"] == name))
            .unwrap_or_else(|| panic!("{name} did not load, report:\n{:#}", self.json))
    }

    /// The usual outcome of one bad input beside the good plugin: exactly one error, for
    /// `file_name`, containing `reason`; the good plugin still loaded. Returns the error.
    fn expect_only_error(&self, file_name: &str, reason: &str) -> String {
        let error = self.expect_error(file_name, reason);
        self.expect_error_count(1);
        self.expect_loaded(&["good"]);
        error
    }
}

/// The effective user id of this process.
fn effective_uid() -> u32 {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        // "Uid:\t<real>\t<effective>\t<saved>\t<fs>"
        if let Some(line) = status.lines().find(|l| l.starts_with("Uid:")) {
            return line
                .split_whitespace()
                .nth(2)
                .and_then(|uid| uid.parse().ok())
                .expect("effective uid");
        }
    }
    let output = Command::new("id").arg("-u").output().expect("run id -u");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("id -u prints a number")
}

/// Sets `mode` on `path`.
fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

/// Makes every folder under `dir` 0755 and every file 0644 (symlinks untouched).
fn open_up(dir: &Path) {
    chmod(dir, 0o755);
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        let kind = std::fs::symlink_metadata(&path)
            .expect("metadata")
            .file_type();
        if kind.is_dir() {
            open_up(&path);
        } else if kind.is_file() {
            chmod(&path, 0o644);
        }
    }
}

/// The uid and gid `nobody` has on Debian.
const NOBODY: u32 = 65534;

/// `command`, run as `nobody` through `setpriv` (same program, arguments, environment, cwd).
fn as_nobody(command: Command) -> Command {
    let mut wrapped = Command::new("setpriv");
    wrapped
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .arg("--clear-groups")
        .arg("--")
        .arg(command.get_program())
        .args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

// ---------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------

/// Item 1: A text file with a library's name.
#[test]
fn text_file_named_like_a_library() {
    let (sandbox, hooks) = sandbox_with_good();
    std::fs::write(
        hooks.join("x.so"),
        "this is not a library, just some notes\n",
    )
    .unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_only_error("x.so", "is a text file, not a compiled library");
}

/// A Rust crate built without `crate-type = ["cdylib"]` gives an rlib (an ar archive): the
/// error says what to add.
#[test]
fn an_rlib_named_like_a_library_says_to_build_a_cdylib() {
    let (sandbox, hooks) = sandbox_with_good();
    let mut rlib = b"!<arch>\n".to_vec();
    rlib.extend_from_slice(
        b"lib.rmeta/      0           0     0     644     8         `\nrust-lib",
    );
    std::fs::write(hooks.join("libmine.so"), rlib).unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_only_error(
        "libmine.so",
        "is a static archive (a Rust .rlib or a C .a), not a shared library; for a Rust plugin add `crate-type = [\"cdylib\"]`",
    );
}

/// Item 2: An empty file (an interrupted build).
#[test]
fn empty_file() {
    let (sandbox, hooks) = sandbox_with_good();
    std::fs::write(hooks.join("empty.so"), b"").unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_only_error("empty.so", "the file is empty (0 bytes)");
}

/// Copies the good plugin into `hooks/<name>`, keeping only its first `len` bytes.
fn truncated_copy(sandbox: &Sandbox, hooks: &Path, name: &str, len: impl FnOnce(usize) -> usize) {
    let bytes = std::fs::read(good_plugin(sandbox, "truncated")).unwrap();
    let len = len(bytes.len());
    assert!(len < bytes.len());
    std::fs::write(hooks.join(name), &bytes[..len]).unwrap();
}

/// Item 3a: A real library cut to its first 64 bytes (the ELF header alone).
#[test]
fn library_truncated_to_64_bytes() {
    let (sandbox, hooks) = sandbox_with_good();
    truncated_copy(&sandbox, &hooks, "truncated-64.so", |_| 64);
    let listing = list(&sandbox, &[]);
    let error = listing.error("truncated-64.so").1;
    assert!(
        error.contains("truncated") || error.contains("the system loader refused the library"),
        "the error should say the library is truncated or was refused, got:\n  {error}"
    );
    listing.expect_error_count(1);
    listing.expect_loaded(&["good"]);
}

/// Item 3b: A real library cut to half its size: headers intact, segments past the end of file.
#[test]
fn library_truncated_to_half() {
    let (sandbox, hooks) = sandbox_with_good();
    truncated_copy(&sandbox, &hooks, "truncated-half.so", |len| len / 2);
    let listing = list(&sandbox, &[]);
    let error = listing.error("truncated-half.so").1;
    assert!(
        error.contains("truncated") || error.contains("the system loader refused the library"),
        "the error should say the library is truncated or was refused, got:\n  {error}"
    );
    listing.expect_error_count(1);
    listing.expect_loaded(&["good"]);
}

/// Item 4: A library for another CPU: the ELF e_machine field (offset 18, little-endian u16)
/// patched to aarch64 (183), or to x86_64 (62) when the host is aarch64.
#[test]
fn library_for_another_cpu() {
    let (sandbox, hooks) = sandbox_with_good();
    let (machine, name) = if std::env::consts::ARCH == "aarch64" {
        (62u16, "x86_64")
    } else {
        (183u16, "aarch64")
    };
    let mut bytes = std::fs::read(good_plugin(&sandbox, "foreign")).unwrap();
    assert_eq!(bytes[5], 1, "the test expects a little-endian ELF file");
    bytes[18..20].copy_from_slice(&machine.to_le_bytes());
    std::fs::write(hooks.join("foreign.so"), &bytes).unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_only_error(
        "foreign.so",
        &format!(
            "is built for {name}; this host is {}",
            std::env::consts::ARCH
        ),
    );
}

/// Item 5: A shared library that exports some other function but not the entry symbol.
#[test]
fn library_without_entry_symbol() {
    let (sandbox, hooks) = sandbox_with_good();
    sandbox.install(
        &build(&sandbox, "no_entry", "no_entry", &[]),
        &hooks,
        "no_entry.so",
    );
    let listing = list(&sandbox, &[]);
    listing.expect_only_error(
        "no_entry.so",
        "does not export the entry symbol pi_hooks_plugin_v1",
    );
}

/// Item 6: ABI major too old (exports only `pi_hooks_plugin_v0`) and too new (only `_v2`).
#[test]
fn abi_major_too_old_and_too_new() {
    let (sandbox, hooks) = sandbox_with_good();
    sandbox.install(
        &build(&sandbox, "entry_v0", "entry_v0", &[]),
        &hooks,
        "entry_v0.so",
    );
    sandbox.install(
        &build(&sandbox, "entry_v2", "entry_v2", &[]),
        &hooks,
        "entry_v2.so",
    );
    let listing = list(&sandbox, &[]);
    let old = listing.expect_error(
        "entry_v0.so",
        "built for plugin ABI 0 (exports pi_hooks_plugin_v0)",
    );
    assert!(
        old.contains("Rebuild the plugin against the current pi_hooks.h"),
        "{old}"
    );
    let new = listing.expect_error(
        "entry_v2.so",
        "built for plugin ABI 2 (exports pi_hooks_plugin_v2)",
    );
    assert!(
        new.contains(&format!(
            "newer than this host's ABI {PI_HOOKS_ABI_MAJOR}; upgrade pi-hooks"
        )),
        "{new}"
    );
    listing.expect_error_count(2);
    listing.expect_loaded(&["good"]);
}

/// The hand-written descriptor of `descriptor_variants.c` with no override, passed with
/// `--hook`: it must load, so that each variant fails because of its one wrong field.
fn variant_control(sandbox: &Sandbox) -> String {
    build(
        sandbox,
        "descriptor_variants",
        "variant_ok",
        &["-DPLUGIN_NAME=\"variant-ok\""],
    )
    .display()
    .to_string()
}

/// Item 7: A descriptor whose ABI minor is newer than the host's.
#[test]
fn abi_minor_newer_than_host() {
    let (sandbox, hooks) = sandbox_with_good();
    let flags = ["-DMINOR_DELTA=1", "-DPLUGIN_NAME=\"minor-plus-one\""];
    sandbox.install(
        &build(&sandbox, "descriptor_variants", "minor", &flags),
        &hooks,
        "minor_plus_one.so",
    );
    let control = variant_control(&sandbox);
    let listing = list(&sandbox, &["--hook", &control]);
    let (major, minor) = (PI_HOOKS_ABI_MAJOR, PI_HOOKS_ABI_MINOR);
    listing.expect_error(
        "minor_plus_one.so",
        &format!(
            "built for ABI {major}.{}, newer than this host's {major}.{minor}",
            minor + 1
        ),
    );
    listing.expect_error_count(1);
    listing.expect_loaded(&["good", "variant-ok"]);
}

/// Plugins built against the headers of ABI 1.0 (before `PiActionsApi::set_model` was
/// appended), 1.1 (before the value builders and `PiResultApi::set_from_value`) and 1.2
/// (before `PiValueApi::replace_text`), 1.3 (before `PiContextApi::is_aborted` and
/// `PiActionsApi::send_user_message_content`), 1.5 (before `PiActionsApi::identity` and
/// `data_dir`) and 1.6 (before `PiContextApi::is_project_trusted`, `system_prompt_options` and
/// `thinking_level`) declare the older, smaller tables and their minor's fingerprint: they still
/// load.
#[test]
fn a_plugin_of_an_older_minor_loads() {
    let (sandbox, hooks) = sandbox_with_good();
    let pointer = size_of::<usize>();
    let minor_flags = |minor: u32, name: &str| -> Vec<String> {
        let old = pi_hooks_abi::layout::fingerprint_for_minor(minor).expect("released");
        let mut flags = vec![
            format!("-DMINOR_DELTA=-{}", PI_HOOKS_ABI_MINOR - minor),
            format!(
                "-DFINGERPRINT_XOR=0x{:x}ULL",
                pi_hooks_abi::layout::LAYOUT_FINGERPRINT ^ old
            ),
            format!("-DPLUGIN_NAME=\"{name}\""),
        ];
        // 1.7 appended is_project_trusted, system_prompt_options and thinking_level; 1.6
        // identity and data_dir; 1.4 is_aborted, send_user_message_content and exec_cancel;
        // 1.3 replace_text; 1.2 the 11 value builders and set_from_value; 1.1 set_model.
        let context = match minor {
            0..=3 => 4,
            4..=6 => 3,
            _ => 0,
        };
        if context > 0 {
            flags.push(format!("-DCONTEXT_API_SIZE_DELTA=-{}", context * pointer));
        }
        if minor <= 1 {
            flags.push(format!("-DVALUE_API_SIZE_DELTA=-{}", 12 * pointer));
            flags.push(format!("-DRESULT_API_SIZE_DELTA=-{pointer}"));
        } else if minor == 2 {
            flags.push(format!("-DVALUE_API_SIZE_DELTA=-{pointer}"));
        }
        let actions = match minor {
            0 => 5,
            1..=3 => 4,
            4 | 5 => 2,
            _ => 0,
        };
        if actions > 0 {
            flags.push(format!("-DACTIONS_API_SIZE_DELTA=-{}", actions * pointer));
        }
        flags
    };
    for (minor, name) in [
        (0, "minor-zero"),
        (1, "minor-one"),
        (2, "minor-two"),
        (3, "minor-three"),
        (5, "minor-five"),
        (6, "minor-six"),
    ] {
        let flags = minor_flags(minor, name);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        sandbox.install(
            &build(&sandbox, "descriptor_variants", name, &flags),
            &hooks,
            &format!("{name}.so"),
        );
    }
    let listing = list(&sandbox, &[]);
    listing.expect_error_count(0);
    listing.expect_loaded(&[
        "good",
        "minor-five",
        "minor-one",
        "minor-six",
        "minor-three",
        "minor-two",
        "minor-zero",
    ]);
    // The same plugin declaring the current tables with minor 1 is refused: its sizes are
    // not 1.1's.
    let old = pi_hooks_abi::layout::fingerprint_for_minor(1).expect("1.1 was released");
    let xor = format!(
        "-DFINGERPRINT_XOR=0x{:x}ULL",
        pi_hooks_abi::layout::LAYOUT_FINGERPRINT ^ old
    );
    let minor = format!("-DMINOR_DELTA=-{}", PI_HOOKS_ABI_MINOR - 1);
    let flags = [
        minor.as_str(),
        xor.as_str(),
        "-DPLUGIN_NAME=\"minor-mixed\"",
    ];
    sandbox.install(
        &build(&sandbox, "descriptor_variants", "minor_mixed", &flags),
        &hooks,
        "minor_mixed.so",
    );
    let listing = list(&sandbox, &[]);
    listing.expect_error("minor_mixed.so", "PiValueApi");
}

/// Item 8: Descriptors declaring wrong struct sizes: `host_api_size` 8 bytes short, and
/// `struct_size` 8 bytes long.
#[test]
fn descriptor_with_wrong_struct_sizes() {
    let (sandbox, hooks) = sandbox_with_good();
    let host_api = [
        "-DHOST_API_SIZE_DELTA=-8",
        "-DPLUGIN_NAME=\"host-api-short\"",
    ];
    sandbox.install(
        &build(&sandbox, "descriptor_variants", "host_api", &host_api),
        &hooks,
        "host_api_short.so",
    );
    let descriptor = ["-DSTRUCT_SIZE_DELTA=8", "-DPLUGIN_NAME=\"descriptor-long\""];
    sandbox.install(
        &build(&sandbox, "descriptor_variants", "long", &descriptor),
        &hooks,
        "descriptor_long.so",
    );
    let control = variant_control(&sandbox);
    let listing = list(&sandbox, &["--hook", &control]);
    let sizes = AbiSizes::CURRENT;
    let abi = format!("ABI {PI_HOOKS_ABI_MAJOR}.{PI_HOOKS_ABI_MINOR}");
    listing.expect_error(
        "host_api_short.so",
        &format!(
            "its descriptor says PiHostApi is {} bytes, {abi} defines {}",
            sizes.host_api - 8,
            sizes.host_api
        ),
    );
    listing.expect_error(
        "descriptor_long.so",
        &format!(
            "its descriptor is {} bytes, {abi} defines {}",
            sizes.descriptor + 8,
            sizes.descriptor
        ),
    );
    listing.expect_error_count(2);
    listing.expect_loaded(&["good", "variant-ok"]);
}

/// Item 9: A layout fingerprint that differs from the host's (an edited header, same version).
#[test]
fn layout_fingerprint_mismatch() {
    let (sandbox, hooks) = sandbox_with_good();
    let flags = ["-DFINGERPRINT_XOR=1", "-DPLUGIN_NAME=\"fingerprint-off\""];
    sandbox.install(
        &build(&sandbox, "descriptor_variants", "fp", &flags),
        &hooks,
        "fingerprint_off.so",
    );
    let control = variant_control(&sandbox);
    let listing = list(&sandbox, &["--hook", &control]);
    let known = fingerprint_for_minor(PI_HOOKS_ABI_MINOR).expect("released fingerprint");
    listing.expect_error(
        "fingerprint_off.so",
        &format!(
            "its layout fingerprint {:#018x} differs from ABI {PI_HOOKS_ABI_MAJOR}.{PI_HOOKS_ABI_MINOR}'s {known:#018x}",
            known ^ 1
        ),
    );
    listing.expect_error_count(1);
    listing.expect_loaded(&["good", "variant-ok"]);
}

/// Item 10: A C init that describes its problem with `set_init_error` and returns `PI_ERR`.
#[test]
fn c_init_returns_an_error() {
    let (sandbox, hooks) = sandbox_with_good();
    sandbox.install(
        &build(&sandbox, "init_error", "init_error", &[]),
        &hooks,
        "init_error.so",
    );
    let listing = list(&sandbox, &[]);
    listing.expect_only_error(
        "init_error.so",
        "its init failed (PI_ERR: the config file ~/.init-error.toml is missing)",
    );
}

/// Item 11: A Rust init that panics (`FIXTURE_INIT=panic`) or fails (`FIXTURE_INIT=error`); the
/// same library loads when the variable is unset.
#[test]
fn rust_init_panics_or_fails() {
    let (sandbox, hooks) = sandbox_with_good();
    sandbox.install(
        &rust_plugin("fixture-rust-init"),
        &hooks,
        "libfixture_rust_init.so",
    );
    let with = |value: &'static str| {
        move |mut command: Command| {
            command.env("FIXTURE_INIT", value);
            command
        }
    };

    let baseline = list_via(&sandbox, &[], |mut command| {
        command.env_remove("FIXTURE_INIT");
        command
    });
    baseline.expect_error_count(0);
    baseline.expect_loaded(&["good", "fixture-rust-init"]);

    let panicked = list_via(&sandbox, &[], with("panic"));
    panicked.expect_error(
        "libfixture_rust_init.so",
        "its init panicked (PI_ERR_PANIC: panicked: the fixture was told to panic)",
    );
    panicked.expect_error_count(1);
    panicked.expect_loaded(&["good"]);

    let failed = list_via(&sandbox, &[], with("error"));
    failed.expect_error(
        "libfixture_rust_init.so",
        "its init failed (PI_ERR: the fixture was told to fail)",
    );
    failed.expect_error_count(1);
    failed.expect_loaded(&["good"]);
}

/// Item 12: A directory with a library's name in a hooks folder.
#[test]
fn directory_named_like_a_library() {
    let (sandbox, hooks) = sandbox_with_good();
    std::fs::create_dir(hooks.join("x.so")).unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_only_error("x.so", "is a directory, not a plugin library");
}

/// Item 13: A file the host may not read. Root reads anything, so as root `pi-hooks` runs as
/// `nobody` (setpriv), with the sandbox opened up for that user.
#[test]
fn unreadable_file() {
    let (sandbox, hooks) = sandbox_with_good();
    let locked = sandbox.install(&good_plugin(&sandbox, "locked"), &hooks, "locked.so");
    let as_root = effective_uid() == 0;
    if as_root {
        let setpriv = Command::new("setpriv").arg("--version").output();
        assert!(
            setpriv.is_ok_and(|o| o.status.success()),
            "running as root, this test needs setpriv (util-linux) to run pi-hooks as an unprivileged user"
        );
        for ancestor in sandbox.root().ancestors().skip(1) {
            let mode = std::fs::metadata(ancestor)
                .expect("ancestor")
                .permissions()
                .mode();
            assert!(
                mode & 0o001 != 0,
                "{} is not traversable by other users ({mode:o})",
                ancestor.display()
            );
        }
        open_up(sandbox.root());
        // The plugin cache goes to the agent directory: nobody must be able to write there.
        chmod(&sandbox.agent_dir(), 0o777);
    }
    chmod(&locked, 0o000);
    let listing = if as_root {
        list_via(&sandbox, &[], as_nobody)
    } else {
        list(&sandbox, &[])
    };
    listing.expect_only_error("locked.so", "permission denied");
}

/// Item 14: A symlink whose target does not exist.
#[test]
fn dangling_symlink() {
    let (sandbox, hooks) = sandbox_with_good();
    let target = sandbox.root().join("gone.so");
    symlink(&target, hooks.join("dangling.so")).unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_only_error(
        "dangling.so",
        &format!(
            "is a dangling symlink (its target {} does not exist)",
            target.display()
        ),
    );
}

/// Item 15a: The same plugin twice in one folder: the file and a symlink to it.
#[test]
fn same_plugin_through_a_symlink_loads_once() {
    let (sandbox, hooks) = sandbox_with_good();
    symlink("good.so", hooks.join("alias.so")).unwrap();
    let listing = list(&sandbox, &[]);
    listing.expect_error_count(0);
    listing.expect_loaded(&["good"]);
}

/// Item 15b: The same plugin from its folder and again with `--hook` through `./` paths
/// (absolute with a `/./` component, and relative to the cwd).
#[test]
fn same_plugin_through_dot_paths_loads_once() {
    let (sandbox, hooks) = sandbox_with_good();
    let dotted = hooks.join(".").join("good.so").display().to_string();
    assert!(dotted.contains("/./"), "{dotted}");
    let listing = list(
        &sandbox,
        &[
            "--hook",
            &dotted,
            "--hook",
            "./../home/.pi/agent/hooks/good.so",
        ],
    );
    listing.expect_error_count(0);
    listing.expect_loaded(&["good"]);
    assert_eq!(
        listing.plugin("good")["source"],
        "global",
        "the first place is kept"
    );
}

/// Item 15c: The same plugin listed in the user's settings.json `hooks` and named with `--hook`.
#[test]
fn same_plugin_from_settings_and_cli_loads_once() {
    let sandbox = Sandbox::new();
    let good = good_plugin(&sandbox, "good");
    let settings = serde_json::json!({ "hooks": [good.display().to_string()] });
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let listing = list(&sandbox, &["--hook", "../lib/good.so"]);
    listing.expect_error_count(0);
    listing.expect_loaded(&["good"]);
    assert_eq!(
        listing.plugin("good")["source"],
        "global-settings",
        "the first place is kept"
    );
}

/// A sandbox with `good-folder` in the global hooks folder, `good-cli` to pass with
/// `--hook`, and `settings` as the user's settings.json. Returns the settings path too.
fn sandbox_with_settings(settings: &str) -> (Sandbox, String, PathBuf) {
    let sandbox = Sandbox::new();
    let folder = good_plugin(&sandbox, "good-folder");
    sandbox.install(&folder, &global_hooks(&sandbox), "good-folder.so");
    let cli = good_plugin(&sandbox, "good-cli").display().to_string();
    let path = sandbox.agent_dir().join("settings.json");
    std::fs::write(&path, settings).unwrap();
    (sandbox, cli, path)
}

/// Item 16a: A settings.json that is not valid JSON.
#[test]
fn settings_not_valid_json() {
    let (sandbox, cli, settings) = sandbox_with_settings("{\"hooks\": [\"a.so\"],\n");
    let listing = list(&sandbox, &["--hook", &cli]);
    let (path, _) = listing.error("settings.json");
    assert_eq!(Path::new(&path), settings);
    listing.expect_error("settings.json", "settings file is not valid JSON");
    // Fail closed: the user's settings may hold a grant for any plain library, so none is
    // loaded unconfined while they cannot be read; each refusal names the file and why.
    for plugin in ["good-folder.so", "good-cli.so"] {
        let error = listing.expect_error(
            plugin,
            "not loaded, rather than loaded unconfined: the user settings",
        );
        assert!(
            error.contains("not valid JSON at line 1, column 1: Unterminated object"),
            "{error}"
        );
    }
    listing.expect_error_count(3);
    listing.expect_loaded(&[]);
}

/// Item 16b: A settings.json whose `hooks` is a number, not a list of paths.
#[test]
fn settings_hooks_of_wrong_type() {
    let (sandbox, cli, settings) = sandbox_with_settings(r#"{"hooks": 42}"#);
    let listing = list(&sandbox, &["--hook", &cli]);
    let (path, _) = listing.error("settings.json");
    assert_eq!(Path::new(&path), settings);
    listing.expect_error(
        "settings.json",
        "`hooks` must be an array of path strings, found a number (42)",
    );
    // Fail closed, as for a file that does not parse.
    for plugin in ["good-folder.so", "good-cli.so"] {
        listing.expect_error(
            plugin,
            "not loaded, rather than loaded unconfined: the user settings",
        );
    }
    listing.expect_error_count(3);
    listing.expect_loaded(&[]);
}

/// Item 17: A file name that is not UTF-8 (a valid library under the bytes `\xff\xfe.so`).
#[test]
fn non_utf8_file_name() {
    let (sandbox, hooks) = sandbox_with_good();
    let name = std::ffi::OsStr::from_bytes(b"\xff\xfe.so");
    std::fs::copy(hooks.join("good.so"), hooks.join(name)).unwrap();
    let listing = list(&sandbox, &[]);
    // Paths are reported lossily: each invalid byte becomes U+FFFD.
    listing.expect_only_error(
        "\u{FFFD}\u{FFFD}.so",
        "is not valid UTF-8, which plugin paths must be",
    );
}

/// Bad inputs in the project folder, where plugins wait for trust, are not dropped: what
/// cannot even be read or is no file is an error at once; a garbage file is read, hashed and
/// reported as waiting for trust (nothing of an untrusted file is parsed), and once trusted it
/// is reported with its real problem.
#[test]
fn bad_input_in_project_folder_is_reported() {
    let (sandbox, _) = sandbox_with_good();
    let project_hooks = sandbox.project().join(".pi/hooks");
    std::fs::create_dir_all(project_hooks.join("dir.so")).unwrap();
    std::fs::write(project_hooks.join("empty.so"), b"").unwrap();
    let garbage = project_hooks.join("garbage.so");
    std::fs::write(&garbage, "not a library\n").unwrap();

    let listing = list(&sandbox, &[]);
    listing.expect_error("dir.so", "is a directory, not a plugin library");
    listing.expect_error("empty.so", "the file is empty (0 bytes)");
    listing.expect_error_count(2);
    listing.expect_loaded(&["good"]);
    let untrusted = listing.json["untrusted"]
        .as_array()
        .expect("untrusted list");
    assert_eq!(untrusted.len(), 1, "report:\n{:#}", listing.json);
    assert_eq!(Path::new(untrusted[0]["path"].as_str().unwrap()), garbage);
    assert!(
        listing.text.contains(&garbage.display().to_string()),
        "{}",
        listing.text
    );

    let trusted = sandbox.run(&["trust", &garbage.display().to_string()]);
    assert!(
        trusted.status.success(),
        "pi-hooks trust failed: {}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let listing = list(&sandbox, &[]);
    listing.expect_error("garbage.so", "is a text file, not a compiled library");
    listing.expect_error_count(3);
    listing.expect_loaded(&["good"]);
    assert_eq!(listing.json["untrusted"], serde_json::json!([]));
}

/// A library that needs a symbol nothing provides: the system loader refuses it; the message
/// names the user's file (not the shadow copy) and the missing symbol.
#[test]
fn library_with_an_undefined_symbol() {
    let (sandbox, hooks) = sandbox_with_good();
    let code = r#"#include "pi_hooks.h"
extern int missing_function(void);
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    (void)host; (void)plugin;
    return missing_function() == 0 ? PI_OK : PI_ERR;
}
PI_HOOKS_PLUGIN("undef", "1.0", "", init, NULL);
"#;
    let library = pi_hooks_tests::compile_c_text(&sandbox.lib(), "undef", code, &[]);
    sandbox.install(&library, &hooks, "undef.so");
    let listing = list(&sandbox, &[]);
    let error = listing.expect_error("undef.so", "undefined symbol: missing_function");
    assert!(error.contains("hooks/undef.so"), "{error}");
    assert!(!error.contains("plugin-cache"), "{error}");
    assert!(
        error.contains("link the plugin against the library that defines it"),
        "{error}"
    );
    listing.expect_error_count(1);
    listing.expect_loaded(&["good"]);
}

/// A folder named with --hook that holds no library is reported, not silently ignored.
#[test]
fn named_folder_without_libraries() {
    let (sandbox, _hooks) = sandbox_with_good();
    let empty = sandbox.root().join("empty-plugins");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a plugin").unwrap();
    let listing = list(&sandbox, &["--hook", empty.to_str().unwrap()]);
    listing.expect_only_error("empty-plugins", "the folder holds no .so plugin library");
}
