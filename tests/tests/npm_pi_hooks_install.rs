//! `pi-hooks install npm:` and the real pi (1.6.0 on node 22; 0.73.1 for the first test too)
//! share one list of packages: what either installs from the local npm registry (verdaccio)
//! the other lists and loads, and `pi update`
//! and `pi remove` do what a pi user expects of them with native packages. A platform without
//! a binary, of pi-hooks or of a native package, is refused naming the ones there are. The pi
//! user has no Rust toolchain on PATH: `pi-hooks` is npm's launcher of the prebuilt binary.

use std::path::{Path, PathBuf};

use pi_hooks_tests::npm::{GitDaemon, PiUser, Registry, git, pack_as, settings_packages};
use pi_hooks_tests::packages::{edit_package_json, unpack};
use pi_hooks_tests::tools::{Pi, pi16, pi073};
use pi_hooks_tests::{Sandbox, protected_paths_plugin, rust_plugin};
use serde_json::{Value, json};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn ok(command: &mut std::process::Command) -> std::process::Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed:\nstdout: {}\nstderr: {}",
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `pi-hooks list --json`'s packages: (source, version) pairs.
fn pi_hooks_packages_listed(user: &PiUser) -> Vec<(String, String)> {
    let list: Value = serde_json::from_slice(&ok(&mut user.pi_hooks(&["list", "--json"])).stdout)
        .expect("list --json");
    list["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["source"].as_str().unwrap().to_owned(),
                p["version"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The version in a package tarball's package.json.
fn version_of(tgz: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    unpack(tgz, dir.path());
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("package.json")).unwrap())
            .unwrap();
    json["version"].as_str().unwrap().to_owned()
}

/// A folder holding `tgz`'s package with `change` applied to its package.json.
fn edited(tgz: &Path, dir: &Path, change: impl FnOnce(&mut Value)) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    unpack(tgz, dir);
    edit_package_json(dir, change);
    dir.to_path_buf()
}

#[test]
fn pi_hooks_install_npm_and_pi_agree() {
    pi_hooks_install_npm_and_pi_agree_in(&pi16());
}

/// The same with pi 0.73.1, which installs a user's packages with `npm install -g`.
#[test]
fn pi_hooks_install_npm_and_pi_0_73_agree() {
    pi_hooks_install_npm_and_pi_agree_in(&pi073());
}

fn pi_hooks_install_npm_and_pi_agree_in(pi: &Pi) {
    let sandbox = Sandbox::new();
    let registry = Registry::with_pi_hooks();
    let dist = sandbox.root().join("dist");
    let gate = pack_as(
        &sandbox,
        &rust_plugin("permission-gate"),
        "@acme/permission-gate",
        &dist,
    );
    let paths = pack_as(
        &sandbox,
        &protected_paths_plugin(&sandbox.lib()),
        "@acme/protected-paths",
        &dist,
    );
    registry.publish(&gate);
    registry.publish(&paths);
    let (gate_version, paths_version) = (version_of(&gate), version_of(&paths));
    let user = PiUser::new(&sandbox, &registry);
    // npm runs through the settings' `npmCommand`, for pi and for pi-hooks: a wrapper that
    // logs each call.
    let calls = sandbox.root().join("npm-calls.log");
    let wrapper = sandbox.root().join("npm-wrapper.sh");
    std::fs::write(
        &wrapper,
        format!("echo \"$*\" >> '{}'\nexec npm \"$@\"\n", calls.display()),
    )
    .unwrap();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({ "npmCommand": ["sh", wrapper] }).to_string(),
    )
    .unwrap();
    user.pi_ok(pi, &["install", "npm:pi-hooks"]);

    // pi-hooks installs with npm where pi does (pi 1.6: `npm install SPEC --prefix
    // <agentDir>/npm`; pi 0.73.1: `npm install -g SPEC`), and records it as pi does: pi lists
    // it.
    ok(&mut user.pi_hooks(&["install", "npm:@acme/permission-gate", "--yes"]));
    let logged = std::fs::read_to_string(&calls).unwrap();
    let root = user.npm_root_of(pi);
    let installs = |line: &str, name: &str| {
        if pi.version.starts_with("0.") {
            line.starts_with(&format!("install -g {name}"))
        } else {
            line.starts_with(&format!("install {name} "))
                && line.contains(&format!("--prefix {}", root.parent().unwrap().display()))
        }
    };
    assert!(logged.lines().any(|l| installs(l, "pi-hooks")), "{logged}");
    assert!(
        logged.contains("pack @acme/permission-gate --json --ignore-scripts"),
        "{logged}"
    );
    assert!(
        logged.lines().any(|l| installs(l, "@acme/permission-gate")),
        "pi-hooks installs where pi {} does: {logged}",
        pi.version
    );
    assert!(
        root.join("@acme/permission-gate/package.json").is_file(),
        "{root:?}"
    );
    assert_eq!(
        settings_packages(&sandbox.agent_dir().join("settings.json")),
        json!(["npm:pi-hooks", "npm:@acme/permission-gate"])
    );
    let listed = stdout(&user.pi_ok(pi, &["list"]));
    assert!(listed.contains("npm:@acme/permission-gate"), "{listed}");
    assert!(
        listed.contains(&root.join("@acme/permission-gate").display().to_string()),
        "pi finds it installed: {listed}"
    );

    // The reverse: pi installs, pi-hooks lists it.
    user.pi_ok(pi, &["install", "npm:@acme/protected-paths"]);
    assert_eq!(
        pi_hooks_packages_listed(&user),
        [
            ("npm:@acme/permission-gate".to_owned(), gate_version),
            ("npm:@acme/protected-paths".to_owned(), paths_version),
        ]
    );
    let plugins = ok(&mut user.pi_hooks(&["list"]));
    let plugins = stdout(&plugins);
    assert!(plugins.contains("protected-paths"), "{plugins}");
    assert!(plugins.contains("permission-gate"), "{plugins}");

    // A new version published: `pi update` brings it, pi-hooks loads it.
    let next = edited(&paths, &sandbox.root().join("paths-next"), |json| {
        json["version"] = "9.9.9".into();
    });
    registry.publish(&next);
    user.pi_ok(pi, &["update", "--extensions"]);
    assert!(
        pi_hooks_packages_listed(&user)
            .contains(&("npm:@acme/protected-paths".to_owned(), "9.9.9".to_owned()))
    );

    // `pi remove` of one pi-hooks installed: gone from both lists and from npm's folder.
    user.pi_ok(pi, &["remove", "npm:@acme/permission-gate"]);
    assert!(!root.join("@acme/permission-gate").exists());
    assert_eq!(
        pi_hooks_packages_listed(&user),
        [("npm:@acme/protected-paths".to_owned(), "9.9.9".to_owned())]
    );
    // `pi-hooks remove` of one pi installed: uninstalled with npm as pi does.
    ok(&mut user.pi_hooks(&["remove", "@acme/protected-paths"]));
    assert!(!root.join("@acme/protected-paths").exists());
    let listed = stdout(&user.pi_ok(pi, &["list"]));
    assert!(!listed.contains("protected-paths"), "{listed}");
    assert!(pi_hooks_packages_listed(&user).is_empty());
}

#[test]
fn a_platform_without_a_binary_is_refused_by_name() {
    let sandbox = Sandbox::new();
    let registry = Registry::with_pi_hooks();
    // A native package with a library for linux-arm64-gnu only.
    let gate = pack_as(
        &sandbox,
        &rust_plugin("permission-gate"),
        "@acme/arm-only",
        &sandbox.root().join("dist"),
    );
    let arm_only = edited(&gate, &sandbox.root().join("arm-only"), |json| {
        let libraries = &mut json["piHooks"]["manifest"]["libraries"];
        let library = libraries["linux-x64-gnu"].take();
        *libraries = json!({ "linux-arm64-gnu": library });
    });
    registry.publish(&arm_only);
    let user = PiUser::new(&sandbox, &registry);
    let pi = &pi16();
    user.pi_ok(pi, &["install", "npm:@acme/arm-only"]);

    // pi-hooks (the binary the package brought, as serve in pi would) names both platforms.
    // pi 1.6 installs every user package into one npm project (`<agentDir>/npm`), so npm
    // hoists the package's `pi-hooks` dependency beside it (pi 0.73.1's `npm install -g`
    // nests it in the package's own node_modules).
    let root = user.npm_root_of(pi);
    assert!(
        !root.join("@acme/arm-only/node_modules/pi-hooks").exists(),
        "pi 1.6 nests nothing"
    );
    let launcher = root.join("pi-hooks/bridge/pi-hooks-launcher.cjs");
    let list = ok(user.command("node").arg(&launcher).args(["list", "--json"]));
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let errors = list["errors"].to_string();
    assert!(
        errors
            .contains("has no library for this platform (linux-x64-gnu); it has: linux-arm64-gnu"),
        "{list:#}"
    );
    assert!(list["plugins"].as_array().unwrap().is_empty(), "{list:#}");

    // pi-hooks itself on a platform it is not published for: node reports another machine.
    let preload = sandbox.root().join("arm64.cjs");
    std::fs::write(
        &preload,
        "Object.defineProperty(process, 'arch', { value: 'arm64' });\n",
    )
    .unwrap();
    let refused = user
        .command("node")
        .arg("--require")
        .arg(&preload)
        .arg(&launcher)
        .arg("--version")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!(
            "no prebuilt pi-hooks binary for this platform (linux-arm64-gnu); pi-hooks {} is published for: linux-x64-gnu",
            pi_hooks_host::packages::HOST_VERSION
        )),
        "{stderr}"
    );
}

#[test]
fn pi_hooks_install_git_clones_where_pi_does() {
    let sandbox = Sandbox::new();
    let registry = Registry::with_pi_hooks();
    let gate = pack_as(
        &sandbox,
        &rust_plugin("permission-gate"),
        "@acme/permission-gate",
        &sandbox.root().join("dist"),
    );
    let served = sandbox.root().join("served");
    let repo = served.join("acme/permission-gate");
    std::fs::create_dir_all(&repo).unwrap();
    unpack(&gate, &repo);
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "permission-gate"]);
    let daemon = GitDaemon::start(&served);
    let source = format!("git:git://127.0.0.1:{}/acme/permission-gate", daemon.port());
    let user = PiUser::new(&sandbox, &registry);
    let pi = &pi16();
    user.pi_ok(pi, &["install", "npm:pi-hooks"]);

    ok(&mut user.pi_hooks(&["install", &source, "--yes"]));
    // In pi's folder for it, with the npm install pi runs after a clone (the bridge).
    let clone = sandbox
        .agent_dir()
        .join("git/127.0.0.1/acme/permission-gate");
    assert!(clone.join(".git").is_dir(), "{clone:?}");
    assert!(clone.join("node_modules/pi-hooks/package.json").is_file());
    assert!(
        !sandbox
            .agent_dir()
            .join("pi-hooks/packages/@acme+permission-gate/lib")
            .exists(),
        "the store keeps only the record"
    );
    let listed = stdout(&user.pi_ok(pi, &["list"]));
    assert!(listed.contains(&source), "{listed}");
    assert!(listed.contains(&clone.display().to_string()), "{listed}");
    let plugins = stdout(&ok(&mut user.pi_hooks(&["list"])));
    assert!(
        plugins.contains(&clone.join("lib/linux-x64-gnu").display().to_string()),
        "{plugins}"
    );

    // Removed as pi removes a git package: the clone goes, and its entry.
    ok(&mut user.pi_hooks(&["remove", "@acme/permission-gate"]));
    assert!(!clone.exists());
    assert_eq!(
        settings_packages(&sandbox.agent_dir().join("settings.json")),
        json!(["npm:pi-hooks"])
    );
}

/// Finding packages runs npm (`npm root -g`) as the user's `npmCommand` says, never as a
/// project's: a cloned repository's settings do not choose a program pi-hooks runs at start.
#[test]
fn a_project_s_npm_command_is_not_run_to_find_packages() {
    let sandbox = Sandbox::new();
    let wrapper = |marker: &Path| {
        json!([
            "sh",
            "-c",
            format!("touch '{}'; exec npm \"$@\"", marker.display()),
            "npm-wrapper"
        ])
    };
    let project_marker = sandbox.root().join("project-npm-ran");
    let user_marker = sandbox.root().join("user-npm-ran");
    std::fs::create_dir_all(sandbox.project().join(".pi")).unwrap();
    std::fs::write(
        sandbox.project().join(".pi/settings.json"),
        json!({ "npmCommand": wrapper(&project_marker) }).to_string(),
    )
    .unwrap();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({ "packages": ["npm:@acme/not-installed"] }).to_string(),
    )
    .unwrap();
    let report = sandbox.list_json(&[]);
    // The only problem: the listed package is not installed (said, never silent).
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report:#}");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("is listed but not installed"),
        "{report:#}"
    );
    assert!(!project_marker.exists(), "the project's npmCommand ran");

    // The user's own npmCommand is the one run.
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({ "packages": ["npm:@acme/not-installed"], "npmCommand": wrapper(&user_marker) })
            .to_string(),
    )
    .unwrap();
    sandbox.list_json(&[]);
    assert!(user_marker.exists(), "the user's npmCommand was not run");
    assert!(!project_marker.exists());
}

/// No package code runs at install: a native package with `preinstall`, `install` and
/// `postinstall` scripts, whose dependency has a `postinstall` too, installed with `pi-hooks
/// install npm:` (for the user and for a project) and removed again: none of the scripts
/// ran. The same package installed with plain `npm install -g` runs them (the scripts work).
/// A failed install leaves nothing of npm's behind.
#[test]
fn pi_hooks_install_npm_runs_no_lifecycle_scripts() {
    let sandbox = Sandbox::new();
    let registry = Registry::start();
    let markers = sandbox.root().join("markers");
    std::fs::create_dir_all(&markers).unwrap();
    let touch = |name: &str| format!("touch '{}'", markers.join(name).display());
    let dependency = sandbox.root().join("scripted-dep");
    std::fs::create_dir_all(&dependency).unwrap();
    std::fs::write(
        dependency.join("package.json"),
        json!({
            "name": "scripted-dep",
            "version": "1.0.0",
            "scripts": { "postinstall": touch("dependency-postinstall") },
        })
        .to_string(),
    )
    .unwrap();
    registry.publish(&dependency);
    let packed = pack_as(
        &sandbox,
        &protected_paths_plugin(&sandbox.lib()),
        "@acme/scripted",
        &sandbox.root().join("dist"),
    );
    // The scripts and the dependencies sit outside the signed manifest. (No dependency on
    // the `pi-hooks` npm package: this registry does not serve it.)
    let scripted = edited(&packed, &sandbox.root().join("scripted"), |json| {
        json["scripts"] = json!({
            "preinstall": touch("preinstall"),
            "install": touch("install"),
            "postinstall": touch("postinstall"),
            "preuninstall": touch("preuninstall"),
        });
        json["dependencies"] = json!({ "scripted-dep": "1.0.0" });
    });
    registry.publish(&scripted);
    let broken = edited(&packed, &sandbox.root().join("broken"), |json| {
        json["name"] = "@acme/broken".into();
        json["dependencies"] = json!({ "not-published-anywhere": "1.0.0" });
    });
    registry.publish(&broken);
    let user = PiUser::new(&sandbox, &registry);
    let pi_hooks = |args: &[&str]| {
        let mut command = user.command(pi_hooks_tests::pi_hooks_bin());
        command.args(args);
        command
    };
    let ran = || -> Vec<String> {
        std::fs::read_dir(&markers)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };

    ok(&mut pi_hooks(&["install", "npm:@acme/scripted", "--yes"]));
    let installed = user.npm_global_root().join("@acme/scripted");
    assert!(installed.join("package.json").is_file());
    assert!(
        installed
            .join("node_modules/scripted-dep/package.json")
            .is_file()
    );
    assert_eq!(ran(), Vec::<String>::new(), "scripts ran at install");
    ok(&mut pi_hooks(&[
        "install",
        "npm:@acme/scripted",
        "-l",
        "--yes",
    ]));
    assert!(
        sandbox
            .project()
            .join(".pi/npm/node_modules/@acme/scripted/package.json")
            .is_file()
    );
    assert_eq!(
        ran(),
        Vec::<String>::new(),
        "scripts ran at a project install"
    );
    ok(&mut pi_hooks(&["remove", "@acme/scripted"]));
    ok(&mut pi_hooks(&["remove", "@acme/scripted", "-l"]));
    assert!(!installed.exists());
    assert_eq!(ran(), Vec::<String>::new(), "scripts ran at removal");

    // A failed install (a dependency no registry serves): nothing of npm's is left, for the
    // user or in the project, and nothing is recorded.
    let project_npm = sandbox.project().join(".pi/npm");
    std::fs::remove_dir_all(&project_npm).unwrap();
    for args in [
        &["install", "npm:@acme/broken", "--yes"][..],
        &["install", "npm:@acme/broken", "-l", "--yes"],
    ] {
        let output = pi_hooks(args).output().unwrap();
        assert!(!output.status.success(), "{output:?}");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(
            error.contains("install @acme/broken") && error.contains("nothing was installed"),
            "{error}"
        );
    }
    assert!(!user.npm_global_root().join("@acme/broken").exists());
    assert!(!project_npm.exists(), "npm's project was left behind");
    let settings =
        std::fs::read_to_string(sandbox.agent_dir().join("settings.json")).unwrap_or_default();
    assert!(!settings.contains("broken"), "{settings}");

    // The control: npm itself, scripts on, runs them all.
    ok(user
        .command("npm")
        .args(["install", "-g", "@acme/scripted"]));
    let mut all = ran();
    all.sort();
    assert_eq!(
        all,
        [
            "dependency-postinstall",
            "install",
            "postinstall",
            "preinstall"
        ]
    );
}

#[test]
fn a_signed_package_installed_with_npm_verifies_at_each_load() {
    let sandbox = Sandbox::new();
    let registry = Registry::with_pi_hooks();
    let key = pi_hooks_tests::packages::keygen(&sandbox, &sandbox.root().join("keys"));
    let dist = sandbox.root().join("dist");
    let packed = pi_hooks_tests::packages::ok(
        &sandbox,
        &[
            "pack",
            protected_paths_plugin(&sandbox.lib()).to_str().unwrap(),
            "--name",
            "@acme/signed-paths",
            "--out",
            dist.to_str().unwrap(),
            "--sign",
            key.to_str().unwrap(),
        ],
    );
    let tgz = PathBuf::from(
        packed
            .lines()
            .next()
            .unwrap()
            .rsplit(" -> ")
            .next()
            .unwrap(),
    );
    registry.publish(&tgz);
    let user = PiUser::new(&sandbox, &registry);
    let pi = &pi16();
    user.pi_ok(pi, &["install", "npm:pi-hooks"]);
    // npm installs the package and its dependency (the pi-hooks npm package, in its
    // node_modules/, which the signature does not cover): what npm installed is what was
    // checked, and it loads.
    ok(&mut user.pi_hooks(&["install", "npm:@acme/signed-paths", "--yes"]));
    // Where pi 1.6 keeps a user's npm packages (`<agentDir>/npm/node_modules`).
    let folder = user.npm_root_of(pi).join("@acme/signed-paths");
    assert!(
        folder.join("pi-hooks.sig").is_file(),
        "pi-hooks installs where pi {} does, in {folder:?}",
        pi.version
    );
    let list: Value =
        serde_json::from_slice(&ok(&mut user.pi_hooks(&["list", "--json"])).stdout).unwrap();
    assert_eq!(list["plugins"][0]["name"], "protected-paths", "{list}");
    assert!(
        list["packages"][0]["signer"]
            .as_str()
            .unwrap()
            .starts_with("RW")
    );
    // A file added to npm's copy afterwards: refused at the next load, by name.
    std::fs::write(folder.join("payload.js"), "evil").unwrap();
    let list: Value =
        serde_json::from_slice(&user.pi_hooks(&["list", "--json"]).output().unwrap().stdout)
            .unwrap();
    assert_eq!(list["plugins"], json!([]), "{list}");
    let error = list["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("payload.js was added after it was signed"),
        "{error}"
    );
}
