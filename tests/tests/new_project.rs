//! `pi-hooks new NAME --lang rust|c|cpp`: each generated project builds as generated, its
//! own test passes, and the host loads the plugin it builds and runs its handler (which
//! appends what it blocked to `blocked.log` in its data folder). With the checkout hidden
//! (`pi_hooks_tests::hidden_checkout`), `new` still works and C/C++ projects build from what
//! the binary carries (`pi-hooks sdk`); Rust projects then depend on the published crates.
//! `pi-hooks sdk --prefix` installs a pkg-config file and a CMake package that build a
//! generated project; `pi-hooks sdk --print-include-dir` keeps the committed headers in a
//! per-user cache and rewrites them when they were changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::hidden_checkout::{self, binary_copy, hidden, path_with};
use pi_hooks_tests::{Sandbox, include_dir, pi_hooks_bin, target_dir, workspace_root};
use serde_json::{Value, json};

fn generate(sandbox: &Sandbox, name: &str, lang: &str) -> PathBuf {
    let output = sandbox.run(&["new", name, "--lang", lang]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let folder = sandbox.project().join(name);
    assert!(
        stdout.starts_with("Created the ") && stdout.contains(&folder.display().to_string()),
        "{stdout}"
    );
    folder
}

fn run(command: &mut Command, what: &str) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// How many lines `rm -rf /` the generated plugins wrote to `blocked.log` in their data
/// folders (`<agentDir>/pi-hooks/data/*/`) in `sandbox`.
fn blocked_lines(sandbox: &Sandbox) -> usize {
    let data = sandbox.agent_dir().join("pi-hooks/data");
    std::fs::read_dir(&data)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|folder| std::fs::read_to_string(folder.path().join("blocked.log")).ok())
        .map(|log| log.lines().filter(|l| *l == "rm -rf /").count())
        .sum()
}

/// The plugin blocks `rm -rf` and nothing else, as the host runs it, and logs what it
/// blocked in its own data folder.
fn check_plugin(sandbox: &Sandbox, library: &Path) {
    let logged = blocked_lines(sandbox);
    let inspect = sandbox.run(&["inspect", library.to_str().unwrap()]);
    assert!(inspect.status.success(), "{inspect:?}");
    let emit = |command: &str| -> Value {
        let payload = json!({"toolCallId": "t", "toolName": "bash", "input": {"command": command}});
        let output = sandbox.run(&[
            "emit",
            library.to_str().unwrap(),
            "tool_call",
            "--payload",
            &payload.to_string(),
        ]);
        serde_json::from_slice(&output.stdout).unwrap()
    };
    assert_eq!(
        emit("rm -rf /")["decision"],
        json!({"block": true, "reason": "rm -rf is not allowed"})
    );
    assert_eq!(emit("ls")["decision"], json!({"block": false}));
    assert_eq!(
        blocked_lines(sandbox),
        logged + 1,
        "{}: the blocked command is appended to blocked.log in the data folder",
        library.display()
    );
}

#[test]
fn c_and_cpp_projects_build_with_make_and_pass_their_own_test() {
    let sandbox = Sandbox::new();
    for (lang, name) in [("c", "gate-c"), ("cpp", "gate-cpp")] {
        let folder = generate(&sandbox, name, lang);
        run(
            Command::new("make")
                .env("PI_HOOKS", pi_hooks_bin())
                .env("HOME", sandbox.home())
                .env_remove("XDG_CACHE_HOME")
                .current_dir(&folder),
            &format!("make ({lang})"),
        );
        let tested = run(
            Command::new("make")
                .arg("test")
                .env("PI_HOOKS", pi_hooks_bin())
                .env("HOME", sandbox.home())
                .env_remove("XDG_CACHE_HOME")
                .current_dir(&folder),
            &format!("make test ({lang})"),
        );
        // The third check sends a command with quotes and a backslash: test.sh builds its
        // JSON properly.
        assert!(tested.contains("ok: 3 checks passed"), "{tested}");
        let library = folder.join(format!(
            "lib{}{}",
            name.replace('-', "_"),
            std::env::consts::DLL_SUFFIX
        ));
        check_plugin(&sandbox, &library);
    }
}

#[test]
fn a_rust_project_builds_a_cdylib_the_host_loads() {
    let sandbox = Sandbox::new();
    let folder = generate(&sandbox, "gate-rs", "rust");
    let cargo_toml = std::fs::read_to_string(folder.join("Cargo.toml")).unwrap();
    assert!(
        cargo_toml.contains("crate-type = [\"cdylib\"]"),
        "{cargo_toml}"
    );
    // Its own target folder under the workspace's, kept between runs (only this crate changes).
    let target = target_dir().join("new-plugins");
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--quiet"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&folder),
        "cargo build of the generated crate",
    );
    let library = target.join("debug").join(format!(
        "{}gate_rs{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    check_plugin(&sandbox, &library);
}

#[test]
fn a_bad_name_or_a_full_folder_is_refused_with_the_reason() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["new", "Bad Name"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "pi-hooks: \"Bad Name\" is not a plugin name: use lowercase letters, digits, - and _, starting with a letter (at most 64)\n"
    );
    generate(&sandbox, "twice", "c");
    let output = sandbox.run(&["new", "twice", "--lang", "c"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.ends_with("twice exists and is not empty; choose another --dir or name\n"),
        "{stderr}"
    );
}

/// A generated project keeps its secrets and build output out of git: after `pi-hooks keygen`
/// in it and a packed package in `dist/`, `git add -A` stages neither the secret key nor the
/// package (the public key is meant to be published and is staged).
#[test]
fn git_add_in_a_generated_project_never_stages_the_signing_key_or_dist() {
    let sandbox = Sandbox::new();
    for (lang, name) in [("c", "keep-c"), ("rust", "keep-rust")] {
        let folder = generate(&sandbox, name, lang);
        run(
            sandbox
                .command(&["keygen", "--out", folder.to_str().unwrap()])
                .env_remove("PI_HOOKS_KEY_PASSWORD"),
            "pi-hooks keygen",
        );
        assert!(folder.join("pi-hooks.key").is_file());
        std::fs::create_dir_all(folder.join("dist")).unwrap();
        std::fs::write(folder.join("dist/keep-1.0.0.tgz"), "a package").unwrap();
        let git = |args: &[&str]| {
            run(
                Command::new("git")
                    .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
                    .args(args)
                    .current_dir(&folder),
                "git",
            )
        };
        git(&["init", "--quiet"]);
        git(&["add", "-A"]);
        let staged = git(&["diff", "--cached", "--name-only"]);
        assert!(staged.lines().any(|l| l == "pi-hooks.pub"), "{staged}");
        assert!(
            !staged
                .lines()
                .any(|l| l == "pi-hooks.key" || l.starts_with("dist/")),
            "{lang}: {staged}"
        );
    }
}

/// The environment of a user who has only the binary (a copy in `<sandbox>/user/bin`, first
/// on PATH), no pkg-config file of pi-hooks and no cache folder yet.
fn user_command(sandbox: &Sandbox, command: &mut Command) -> PathBuf {
    let bin = binary_copy(&sandbox.root().join("user"));
    let no_pc = sandbox.root().join("no-pkgconfig");
    std::fs::create_dir_all(&no_pc).unwrap();
    command
        .current_dir(sandbox.project())
        .env("PATH", path_with(&bin))
        .env("HOME", sandbox.home())
        .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
        .env("PKG_CONFIG_LIBDIR", &no_pc)
        .env_remove("PKG_CONFIG_PATH")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PI_HOOKS");
    bin
}

/// Every generated file of `folder` (recursively), with no path into the checkout in it.
fn assert_no_checkout_path(folder: &Path) {
    let root = workspace_root().display().to_string();
    for entry in std::fs::read_dir(folder).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            assert_no_checkout_path(&path);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            assert!(
                !text.contains(&root),
                "{} names the checkout {root}:\n{text}",
                path.display()
            );
        }
    }
}

/// With the checkout hidden (only the binary, copied out, is there), `pi-hooks new` makes C
/// and C++ projects whose `make && make test` pass (the headers from `pi-hooks sdk --cflags`,
/// pkg-config knowing no pi-hooks), and a Rust project that depends on the published crates
/// by this version, which builds (offline, with those crates patched to this workspace's,
/// since the tests have no crates.io).
#[test]
fn outside_a_checkout_new_projects_build_from_the_binary_alone() {
    if let Err(why) = hidden_checkout::available() {
        eprintln!("skipped: {why}");
        return;
    }
    let sandbox = Sandbox::new();
    for (lang, name) in [("c", "out-c"), ("cpp", "out-cpp")] {
        let mut command = hidden(&format!(
            "pi-hooks new {name} --lang {lang} && cd {name} && make && make test"
        ));
        user_command(&sandbox, &mut command);
        let tested = run(
            &mut command,
            &format!("new + make + make test ({lang}), hidden"),
        );
        assert!(tested.contains("ok: 3 checks passed"), "{tested}");
        // The flags came from the binary's cache folder, not from the checkout.
        assert!(
            tested.contains(&format!(
                "-I{}",
                sandbox
                    .home()
                    .join(".cache/pi-hooks/sdk")
                    .join(pi_hooks_host::packages::HOST_VERSION)
                    .join("include")
                    .display()
            )),
            "{tested}"
        );
        let folder = sandbox.project().join(name);
        assert_no_checkout_path(&folder);
        let library = folder.join(format!("lib{}.so", name.replace('-', "_")));
        check_plugin(&sandbox, &library);
    }

    let mut command = hidden("pi-hooks new out-rs --lang rust");
    user_command(&sandbox, &mut command);
    run(&mut command, "new --lang rust, hidden");
    let folder = sandbox.project().join("out-rs");
    assert_no_checkout_path(&folder);
    let cargo_toml = std::fs::read_to_string(folder.join("Cargo.toml")).unwrap();
    let version = pi_hooks_host::packages::HOST_VERSION;
    for dependency in [
        format!("pi-hooks-abi = \"{version}\""),
        format!("pi-hooks-host = \"{version}\""),
    ] {
        assert!(cargo_toml.contains(&dependency), "{cargo_toml}");
    }
    let target = target_dir().join("new-plugins");
    let root = workspace_root();
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--quiet", "--offline", "--config"])
            .arg(format!(
                "patch.crates-io.pi-hooks-abi.path={:?}",
                root.join("abi").display().to_string()
            ))
            .arg("--config")
            .arg(format!(
                "patch.crates-io.pi-hooks-host.path={:?}",
                root.join("loader/host").display().to_string()
            ))
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(&folder),
        "cargo build of the crate on the published crates (patched)",
    );
    check_plugin(&sandbox, &target.join("debug/libout_rs.so"));

    // An explicit --pi-hooks-src that is no source tree is refused, naming it.
    let output = sandbox.run(&["new", "nowhere", "--pi-hooks-src", "/nonexistent/pi-hooks"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "pi-hooks: /nonexistent/pi-hooks is not a pi-hooks source tree (no abi/Cargo.toml and loader/host/Cargo.toml); pass another --pi-hooks-src DIR, or none to use the published crates\n"
    );
}

/// `pi-hooks sdk --prefix` installs the committed headers, a pkg-config file and a CMake
/// package; a generated C project builds with `make` through pkg-config and a C++ one with
/// CMake through `find_package(pi-hooks)`, with no pi-hooks program to fall back on; without
/// the package, CMake asks the program named by the `PI_HOOKS` cache variable.
#[test]
fn sdk_prefix_builds_generated_projects_with_pkg_config_and_cmake() {
    let sandbox = Sandbox::new();
    let prefix = sandbox.root().join("prefix");
    let output = sandbox.run(&["sdk", "--prefix", prefix.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let listing = String::from_utf8_lossy(&output.stdout);
    assert!(listing.contains("pi-hooks.pc"), "{listing}");
    assert!(
        !prefix.join("bin").exists(),
        "no binary without --with-binary"
    );
    for header in ["pi_hooks.h", "pi_hooks.hpp"] {
        assert_eq!(
            std::fs::read(prefix.join("include/pi-hooks").join(header)).unwrap(),
            std::fs::read(include_dir().join(header)).unwrap(),
            "{header}"
        );
    }
    let missing = "/nonexistent/pi-hooks";

    let c = generate(&sandbox, "pc-gate", "c");
    let made = run(
        Command::new("make")
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .env("PI_HOOKS", missing)
            .current_dir(&c),
        "make with pkg-config",
    );
    // pkg-config's flag: the prefix found from the .pc file's own place.
    assert!(
        made.contains(&format!(
            "-I{}/lib/pkgconfig/../../include/pi-hooks",
            prefix.display()
        )),
        "{made}"
    );
    check_plugin(&sandbox, &c.join("libpc_gate.so"));

    let cmake = pi_hooks_tests::tools::cmake();
    let cpp = generate(&sandbox, "cm-gate", "cpp");
    for (build, args) in [
        (
            "build-package",
            vec![
                format!("-DCMAKE_PREFIX_PATH={}", prefix.display()),
                format!("-DPI_HOOKS={missing}"),
            ],
        ),
        (
            "build-program",
            vec![format!("-DPI_HOOKS={}", pi_hooks_bin().display())],
        ),
    ] {
        let build = cpp.join(build);
        run(
            Command::new(&cmake)
                .arg("-S")
                .arg(&cpp)
                .arg("-B")
                .arg(&build)
                .args(&args)
                .env("HOME", sandbox.home())
                .env_remove("XDG_CACHE_HOME")
                .env("PKG_CONFIG_LIBDIR", sandbox.root())
                .env_remove("CMAKE_PREFIX_PATH"),
            "cmake configure",
        );
        run(
            Command::new(&cmake).arg("--build").arg(&build),
            "cmake --build",
        );
        check_plugin(&sandbox, &build.join("libcm_gate.so"));
    }
    // Neither the package nor a program: the configure step says what to do.
    let output = Command::new(&cmake)
        .arg("-S")
        .arg(&cpp)
        .arg("-B")
        .arg(cpp.join("build-none"))
        .arg(format!("-DPI_HOOKS={missing}"))
        .env("HOME", sandbox.home())
        .env_remove("CMAKE_PREFIX_PATH")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("pi_hooks.h not found") && stderr.contains("-DPI_HOOKS="),
        "{stderr}"
    );
}

/// `pi-hooks sdk --print-include-dir` prints `$XDG_CACHE_HOME/pi-hooks/sdk/VERSION/include`
/// (else under `~/.cache`) holding the committed headers, against which a generated C and
/// C++ plugin compile; a header changed or removed there is rewritten on the next call.
#[test]
fn print_include_dir_keeps_the_committed_headers_in_the_cache() {
    let sandbox = Sandbox::new();
    let cache = sandbox.root().join("cache");
    let ask = |args: &[&str], xdg: bool| -> String {
        let mut command = sandbox.command(args);
        if xdg {
            command.env("XDG_CACHE_HOME", &cache);
        } else {
            command.env_remove("XDG_CACHE_HOME");
        }
        run(&mut command, "pi-hooks sdk").trim_end().to_owned()
    };
    let version = pi_hooks_host::packages::HOST_VERSION;
    let folder = cache.join("pi-hooks/sdk").join(version).join("include");
    assert_eq!(
        ask(&["sdk", "--print-include-dir"], true),
        folder.display().to_string()
    );
    assert_eq!(
        ask(&["sdk", "--cflags"], true),
        format!("-I{}", folder.display())
    );
    assert_eq!(
        ask(&["sdk", "--print-include-dir"], false),
        sandbox
            .home()
            .join(".cache/pi-hooks/sdk")
            .join(version)
            .join("include")
            .display()
            .to_string()
    );
    let committed = |name: &str| std::fs::read(include_dir().join(name)).unwrap();
    for name in ["pi_hooks.h", "pi_hooks.hpp"] {
        assert_eq!(
            std::fs::read(folder.join(name)).unwrap(),
            committed(name),
            "{name}"
        );
    }

    // A C and a C++ plugin compile against that folder alone and load.
    for (lang, name, compiler, standard) in [
        ("c", "inc-c", "cc", "-std=c11"),
        ("cpp", "inc-cpp", "c++", "-std=c++17"),
    ] {
        let project = generate(&sandbox, name, lang);
        let source = project.join(format!("{}.{lang}", name.replace('-', "_")));
        let library = project.join(format!("lib{}.so", name.replace('-', "_")));
        run(
            Command::new(compiler)
                .args([standard, "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
                .arg(format!("-I{}", folder.display()))
                .arg("-o")
                .arg(&library)
                .arg(&source),
            &format!("{compiler} against the printed folder"),
        );
        check_plugin(&sandbox, &library);
    }

    // Changed or removed there: rewritten on the next call.
    std::fs::write(folder.join("pi_hooks.h"), "#error stale\n").unwrap();
    std::fs::remove_file(folder.join("pi_hooks.hpp")).unwrap();
    ask(&["sdk", "--print-include-dir"], true);
    for name in ["pi_hooks.h", "pi_hooks.hpp"] {
        assert_eq!(
            std::fs::read(folder.join(name)).unwrap(),
            committed(name),
            "{name} rewritten"
        );
    }
    // --with-binary needs --prefix.
    let output = sandbox.run(&["sdk", "--print-include-dir", "--with-binary"]);
    assert_eq!(output.status.code(), Some(2));
}
