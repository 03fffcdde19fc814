//! `pi-hooks new NAME --lang rust|c|cpp`: each generated project builds as generated, its
//! own test passes, and the host loads the plugin it builds and runs its handler.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::{Sandbox, pi_hooks_bin, target_dir};
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

/// The plugin blocks `rm -rf` and nothing else, as the host runs it.
fn check_plugin(sandbox: &Sandbox, library: &Path) {
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
}

#[test]
fn c_and_cpp_projects_build_with_make_and_pass_their_own_test() {
    let sandbox = Sandbox::new();
    for (lang, name) in [("c", "gate-c"), ("cpp", "gate-cpp")] {
        let folder = generate(&sandbox, name, lang);
        run(
            Command::new("make").current_dir(&folder),
            &format!("make ({lang})"),
        );
        let tested = run(
            Command::new("make")
                .arg("test")
                .env("PI_HOOKS", pi_hooks_bin())
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
