//! A pi user with node and npm but no Rust toolchain (cargo and rustc are not on PATH) gets
//! native plugins with the real pi's `pi install` alone (pi 1.6.0 on node 22, and the user
//! path again with pi 0.73.1): pi-hooks' npm packages (made
//! by scripts/npm-packages.sh from the release build) and native plugins packed by
//! `pi-hooks pack` (the Rust permission-gate, the C protected-paths) are published to a local
//! npm registry (verdaccio), pi installs them (`npm:` for the user and `-l` for the project,
//! `git:` from a repository served by `git daemon`), and in a pi session (RPC mode, the fake
//! OpenAI server scripting the model) the installed plugins block `rm -rf` and a write to
//! `.env`, with one `pi-hooks serve` for all of them.

use std::path::{Path, PathBuf};

use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, after_tool, last_user_text, tool_call};
use pi_hooks_tests::npm::{
    GitDaemon, PiUser, Registry, git, pack_as, serve_children, settings_packages,
};
use pi_hooks_tests::packages::unpack;
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::tools::{Pi, pi16, pi073};
use pi_hooks_tests::{Sandbox, protected_paths_plugin, rust_plugin};
use serde_json::{Value, json};

/// The model: after a tool result it says "done"; otherwise it runs the tool the prompt
/// asks for.
fn model() -> FakeOpenAi {
    FakeOpenAi::start(|body| {
        if after_tool(body) {
            return Reply::Text("done".into());
        }
        let prompt = last_user_text(body);
        if prompt.contains("wipe") {
            tool_call("bash", json!({"command": "rm -rf build"}))
        } else if prompt.contains("secret") {
            tool_call("write", json!({"path": ".env", "content": "KEY=1\n"}))
        } else {
            Reply::Text("ok".into())
        }
    })
}

/// A registry with pi-hooks and the two native plugins published, and the packages' tarballs.
struct Published {
    registry: Registry,
    permission_gate: PathBuf,
}

fn publish(sandbox: &Sandbox) -> Published {
    let registry = Registry::with_pi_hooks();
    let dist = sandbox.root().join("dist");
    let permission_gate = pack_as(
        sandbox,
        &rust_plugin("permission-gate"),
        "@acme/permission-gate",
        &dist,
    );
    let protected_paths = pack_as(
        sandbox,
        &protected_paths_plugin(&sandbox.lib()),
        "@acme/protected-paths",
        &dist,
    );
    registry.publish(&permission_gate);
    registry.publish(&protected_paths);
    Published {
        registry,
        permission_gate,
    }
}

fn write_models(sandbox: &Sandbox, server: &FakeOpenAi) {
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .unwrap();
}

/// rm -rf: permission-gate asks with pi's select dialog, "No" blocks it.
fn rm_rf_is_blocked(pi: &mut RpcClient, id: &str) {
    pi.send(&json!({"id": id, "type": "prompt", "message": "wipe the build"}));
    let select = pi
        .until(|l| l["type"] == "extension_ui_request" && l["method"] == "select")
        .1;
    assert!(
        select["title"].as_str().unwrap().contains("rm -rf build"),
        "{select}"
    );
    pi.send(&json!({"type": "extension_ui_response", "id": select["id"], "value": "No"}));
    let (lines, _) = pi.until(|l| l["type"] == "agent_end");
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {lines:#?}"));
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(end["result"]["content"][0]["text"], "Blocked by user");
}

/// A write to .env: protected-paths blocks it and the file is never written.
fn env_write_is_blocked(pi: &mut RpcClient, id: &str, project: &Path) {
    pi.send(&json!({"id": id, "type": "prompt", "message": "write the secret"}));
    let (lines, _) = pi.until(|l| l["type"] == "agent_end");
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {lines:#?}"));
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(
        end["result"]["content"][0]["text"],
        "Path \".env\" is protected"
    );
    assert!(!project.join(".env").exists());
}

#[test]
fn pi_install_npm_gives_a_pi_user_native_plugins_with_one_serve() {
    pi_install_npm_gives_native_plugins(&pi16());
}

#[test]
fn pi_0_73_install_npm_gives_a_pi_user_native_plugins_with_one_serve() {
    pi_install_npm_gives_native_plugins(&pi073());
}

fn pi_install_npm_gives_native_plugins(pi: &Pi) {
    let sandbox = Sandbox::new();
    let published = publish(&sandbox);
    let user = PiUser::new(&sandbox, &published.registry);
    let server = model();
    write_models(&sandbox, &server);

    // No Rust toolchain on this user's PATH, nor on the PATH pi runs with (its node first).
    let cargo = user
        .command("sh")
        .args(["-c", "command -v cargo || command -v rustc"])
        .output()
        .unwrap();
    assert!(
        !cargo.status.success(),
        "cargo is on the pi user's PATH: {}",
        String::from_utf8_lossy(&cargo.stdout)
    );
    let pi_command = user.pi(pi, &[]);
    let pi_path = pi_command
        .get_envs()
        .find(|(name, _)| *name == "PATH")
        .and_then(|(_, value)| value)
        .expect("pi runs with the user's PATH");
    for dir in std::env::split_paths(pi_path) {
        for tool in ["cargo", "rustc"] {
            assert!(
                !dir.join(tool).exists(),
                "{tool} is in {dir:?}, on pi's PATH"
            );
        }
    }

    // One command for pi-hooks, one per native plugin.
    user.pi_ok(pi, &["install", "npm:pi-hooks"]);
    user.pi_ok(pi, &["install", "npm:@acme/permission-gate"]);
    user.pi_ok(pi, &["install", "npm:@acme/protected-paths"]);
    assert_eq!(
        settings_packages(&sandbox.agent_dir().join("settings.json")),
        json!([
            "npm:pi-hooks",
            "npm:@acme/permission-gate",
            "npm:@acme/protected-paths"
        ])
    );
    // pi 1.6 installed them in <agentDir>/npm/node_modules, pi 0.73.1 globally with npm
    // (where `npm root -g` says); never both.
    let root = user.npm_root_of(pi);
    for name in ["pi-hooks", "@acme/permission-gate", "@acme/protected-paths"] {
        assert!(
            root.join(name).join("package.json").is_file(),
            "pi {} installs {name} in {}",
            pi.version,
            root.display()
        );
    }
    let other = if root == user.npm_global_root() {
        user.pi_npm_root()
    } else {
        user.npm_global_root()
    };
    assert!(!other.join("@acme/permission-gate").exists(), "{other:?}");

    // `pi-hooks` through npm's launcher where pi installed it, which runs the prebuilt binary:
    // pi 1.6 leaves it in <agentDir>/npm/node_modules/.bin (not on PATH), pi 0.73.1 in npm's
    // global bin.
    let launcher = if pi.version.starts_with("0.") {
        user.npm_prefix().join("bin/pi-hooks")
    } else {
        root.join(".bin/pi-hooks")
    };
    assert!(launcher.exists(), "{launcher:?}");
    assert_eq!(user.pi_hooks_launcher(), launcher);
    let version = user.pi_hooks(&["--version"]).output().unwrap();
    assert!(version.status.success(), "{version:?}");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("pi-hooks {}", pi_hooks_host::packages::HOST_VERSION)
    );

    let mut session = user.pi_rpc(pi, &["--no-session"]);
    rm_rf_is_blocked(&mut session, "1");
    env_write_is_blocked(&mut session, "2", &sandbox.project());
    // Three copies of the bridge (pi-hooks' and one beside each native package), one serve.
    let serves = serve_children(session.pid());
    assert_eq!(serves.len(), 1, "serve processes of pi: {serves:?}");
    let (status, _) = session.close();
    assert!(status.success(), "{status}");

    // pi-hooks sees what pi installed.
    let list = user.pi_hooks(&["list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let sources: Vec<&str> = list["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        ["npm:@acme/permission-gate", "npm:@acme/protected-paths"]
    );
}

#[test]
fn pi_install_for_the_project_and_from_git() {
    let pi = &pi16();
    let sandbox = Sandbox::new();
    let published = publish(&sandbox);
    let user = PiUser::new(&sandbox, &published.registry);
    let server = model();
    write_models(&sandbox, &server);

    // pi-hooks for the user (its command on PATH), the project's package in .pi/npm, listed
    // in .pi/settings.json.
    user.pi_ok(pi, &["install", "npm:pi-hooks"]);
    user.pi_ok(pi, &["install", "-l", "npm:@acme/protected-paths"]);
    assert_eq!(
        settings_packages(&sandbox.project().join(".pi/settings.json")),
        json!(["npm:@acme/protected-paths"])
    );
    let project_package = sandbox
        .project()
        .join(".pi/npm/node_modules/@acme/protected-paths");
    assert!(project_package.join("package.json").is_file());

    // The user's package from a git repository (the packed permission-gate, committed).
    let served = sandbox.root().join("served");
    let repo = served.join("acme/permission-gate");
    std::fs::create_dir_all(&repo).unwrap();
    unpack(&published.permission_gate, &repo);
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "permission-gate"]);
    let daemon = GitDaemon::start(&served);
    // pi takes a git:// URL with its `git:` prefix (a bare one it reads as a path).
    let url = format!("git:git://127.0.0.1:{}/acme/permission-gate", daemon.port());
    user.pi_ok(pi, &["install", &url]);
    let clone = sandbox
        .agent_dir()
        .join("git/127.0.0.1/acme/permission-gate");
    assert!(
        clone.join("package.json").is_file(),
        "pi clones to {clone:?}"
    );
    // pi ran npm install in the clone: the bridge and the binary are there.
    assert!(clone.join("node_modules/pi-hooks/package.json").is_file());

    // A project package loads once trusted, as every project plugin: pending until then.
    let list = user.pi_hooks(&["list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let library = list["untrusted"][0]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("the project package is pending trust: {list:#}"))
        .to_owned();
    assert!(
        library.starts_with(project_package.to_str().unwrap()),
        "{library}"
    );
    let trusted = user.pi_hooks(&["trust", &library]).output().unwrap();
    assert!(trusted.status.success(), "{trusted:?}");
    // pi must trust the project too (pi 1.6's project trust; its RPC mode declines a project
    // it knows nothing about): `--approve` for these runs.

    let mut session = user.pi_rpc(pi, &["--no-session", "--approve"]);
    rm_rf_is_blocked(&mut session, "1");
    env_write_is_blocked(&mut session, "2", &sandbox.project());
    assert_eq!(serve_children(session.pid()).len(), 1);
    let (status, _) = session.close();
    assert!(status.success(), "{status}");

    // A new commit upstream (version 1.0.1), brought in by pi's own `pi update`: pi-hooks
    // loads the updated clone, checked against its manifest again.
    let package_json = repo.join("package.json");
    let mut json: Value = serde_json::from_slice(&std::fs::read(&package_json).unwrap()).unwrap();
    json["version"] = "1.0.1".into();
    std::fs::write(&package_json, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    git(
        &repo,
        &["commit", "--quiet", "-am", "permission-gate 1.0.1"],
    );
    user.pi_ok(pi, &["update", &url]);
    let updated: Value =
        serde_json::from_slice(&std::fs::read(clone.join("package.json")).unwrap()).unwrap();
    assert_eq!(updated["version"], "1.0.1", "pi updated the clone");
    let list = user.pi_hooks(&["list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let gate = list["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["source"] == url.as_str())
        .unwrap_or_else(|| panic!("the git package after pi update: {list:#}"));
    assert_eq!(gate["version"], "1.0.1", "{gate:#}");
    let mut session = user.pi_rpc(pi, &["--no-session", "--approve"]);
    rm_rf_is_blocked(&mut session, "3");
    let (status, _) = session.close();
    assert!(status.success(), "{status}");
    drop(daemon);
}
