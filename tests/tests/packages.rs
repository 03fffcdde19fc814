//! Packages for real: the C and Rust example plugins packed with `pi-hooks pack`, installed
//! from a `.tgz`, a folder and a local git repository, signed, re-signed by another key and
//! unsigned after signed; the installed plugin guards a real `pi-hooks run`; nothing runs
//! at install; `remove` leaves nothing; `update` respects a pinned version.

use std::path::Path;
use std::process::Command;

use pi_hooks_tests::packages::{
    edit_package_json, installed_dir, keygen, ok, pack, refused, unpack, user_settings,
};
use pi_hooks_tests::{
    Sandbox, c_example_plugin, compile_c_text, json_lines, loaded_names, rust_plugin,
};
use serde_json::Value;

/// `(toolName, isError)` of every tool result of the embedded demo run (a harmless bash,
/// an `rm -rf` in a scratch folder, a write to `.env`).
fn demo_tool_results(sandbox: &Sandbox) -> Vec<(String, bool)> {
    let output = sandbox.run(&["run", "--mode", "json", "--no-session"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output)
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .map(|e| {
            (
                e["message"]["toolName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["message"]["isError"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

fn results(list: &[(&str, bool)]) -> Vec<(String, bool)> {
    list.iter().map(|(n, e)| ((*n).to_owned(), *e)).collect()
}

#[test]
fn a_signed_c_package_installed_from_a_tgz_guards_a_real_run_and_remove_keeps_only_its_data() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let key = keygen(&sandbox, &sandbox.root().join("keys"));
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), Some(&key));
    assert!(
        tgz.ends_with("protected-paths-0.1.0.tgz"),
        "{}",
        tgz.display()
    );
    // Without the package the demo's write to .env goes through.
    assert_eq!(
        demo_tool_results(&sandbox),
        results(&[("bash", false), ("bash", false), ("write", false)])
    );

    let stdout = ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    assert!(
        stdout.contains("Installed protected-paths 0.1.0"),
        "{stdout}"
    );
    let folder = installed_dir(&sandbox, "protected-paths");
    // Recorded as pi records a local package: its folder, under `packages`.
    assert_eq!(
        user_settings(&sandbox)["packages"],
        serde_json::json!([folder.display().to_string()])
    );
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"]);
    assert_eq!(report["plugins"][0]["source"], "package");
    let package = &report["packages"][0];
    assert_eq!(package["name"], "protected-paths");
    assert!(package["signer"].as_str().unwrap().starts_with("RW"));
    assert_eq!(package["capabilities"], Value::Null);
    let text = String::from_utf8(sandbox.run(&["list"]).stdout).unwrap();
    assert!(text.contains("capabilities: unrestricted"), "{text}");

    assert_eq!(
        demo_tool_results(&sandbox),
        results(&[("bash", false), ("bash", false), ("write", true)])
    );

    // What the plugin stored in its own folder (`${data}`) is the user's: kept, and said so.
    let data = sandbox
        .agent_dir()
        .join("pi-hooks/data/package.protected-paths");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("notes.txt"), "kept").unwrap();
    let stdout = ok(&sandbox, &["remove", "protected-paths"]);
    assert!(stdout.contains("Removed protected-paths 0.1.0"), "{stdout}");
    assert!(
        stdout.contains(&format!("Kept its data folder {}", data.display())),
        "{stdout}"
    );
    assert!(data.join("notes.txt").is_file());
    assert_eq!(user_settings(&sandbox)["packages"], serde_json::json!([]));
    assert!(!folder.exists());
    let left: Vec<String> = std::fs::read_dir(sandbox.agent_dir().join("pi-hooks/packages"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, [".lock"], "only the store's lock file stays");
    assert_eq!(loaded_names(&sandbox.list_json(&[])), Vec::<String>::new());
    let again = refused(&sandbox, &["remove", "protected-paths"]);
    assert!(
        again.contains("no package protected-paths is installed"),
        "{again}"
    );
}

#[test]
fn the_rust_permission_gate_installs_from_a_folder_and_update_reads_the_folder_again() {
    let sandbox = Sandbox::new();
    let library = rust_plugin("permission-gate");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    let folder = sandbox.root().join("gate-package");
    unpack(&tgz, &folder);
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
    // A local folder is recorded by its path, as pi does.
    assert_eq!(
        user_settings(&sandbox)["packages"],
        serde_json::json!([folder.display().to_string()])
    );
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["permission-gate"]);
    assert_eq!(report["packages"][0]["signer"], Value::Null);
    assert_eq!(
        demo_tool_results(&sandbox),
        results(&[("bash", false), ("bash", true), ("write", false)])
    );

    edit_package_json(&folder, |json| json["version"] = "0.2.0".into());
    let stdout = ok(&sandbox, &["update", "--yes"]);
    assert!(
        stdout.contains("permission-gate: 0.1.0 -> 0.2.0"),
        "{stdout}"
    );
    assert_eq!(sandbox.list_json(&[])["packages"][0]["version"], "0.2.0");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?}");
}

#[test]
fn a_local_git_repository_installs_and_a_ref_pins_it_against_update() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    let repo = sandbox.root().join("repo");
    unpack(&tgz, &repo);
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "v1"]);
    git(&repo, &["tag", "v1"]);
    edit_package_json(&repo, |json| json["version"] = "0.2.0".into());
    git(&repo, &["commit", "--quiet", "-am", "v2"]);

    let source = format!("git:file://{}@v1", repo.display());
    ok(&sandbox, &["install", &source, "--yes"]);
    assert_eq!(
        user_settings(&sandbox)["packages"],
        serde_json::json!([source])
    );
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"]);
    assert_eq!(report["packages"][0]["version"], "0.1.0");
    assert_eq!(report["packages"][0]["pinned"], true);

    let stdout = ok(&sandbox, &["update", "protected-paths", "--yes"]);
    assert!(stdout.contains("pinned by its source"), "{stdout}");
    assert_eq!(sandbox.list_json(&[])["packages"][0]["version"], "0.1.0");

    // Without a ref the source follows the branch: update brings 0.2.0.
    ok(&sandbox, &["remove", "protected-paths"]);
    let unpinned = format!("git:file://{}", repo.display());
    ok(&sandbox, &["install", &unpinned, "--yes"]);
    assert_eq!(sandbox.list_json(&[])["packages"][0]["version"], "0.2.0");
}

#[test]
fn a_signer_is_pinned_at_the_first_install() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let first = keygen(&sandbox, &sandbox.root().join("first"));
    let second = keygen(&sandbox, &sandbox.root().join("second"));
    let signed = pack(&sandbox, &library, &sandbox.root().join("a"), Some(&first));
    let resigned = pack(&sandbox, &library, &sandbox.root().join("b"), Some(&second));
    let unsigned = pack(&sandbox, &library, &sandbox.root().join("c"), None);
    ok(&sandbox, &["install", signed.to_str().unwrap(), "--yes"]);
    let pinned = sandbox.list_json(&[])["packages"][0]["signer"].clone();
    let settings = user_settings(&sandbox);

    let error = refused(&sandbox, &["install", resigned.to_str().unwrap(), "--yes"]);
    assert!(error.contains("was signed by key"), "{error}");
    assert!(error.contains("--accept-new-signer"), "{error}");
    let error = refused(&sandbox, &["install", unsigned.to_str().unwrap(), "--yes"]);
    assert!(error.contains("is unsigned"), "{error}");
    assert_eq!(sandbox.list_json(&[])["packages"][0]["signer"], pinned);
    assert_eq!(user_settings(&sandbox), settings);

    ok(
        &sandbox,
        &[
            "install",
            resigned.to_str().unwrap(),
            "--yes",
            "--accept-new-signer",
        ],
    );
    let now = sandbox.list_json(&[])["packages"][0]["signer"].clone();
    assert_ne!(now, pinned);
    assert!(now.is_string());
}

#[test]
fn installing_runs_no_plugin_code_and_capabilities_are_asked_for() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root().join("marker");
    // Its marker is written by a library constructor (runs at dlopen) and by its init.
    let code = format!(
        r#"#include <stdio.h>
#include "pi_hooks.h"
__attribute__((constructor)) static void at_load(void) {{
    FILE *f = fopen("{marker}", "w");
    if (f != NULL) fclose(f);
}}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    (void)host; (void)plugin;
    return PI_OK;
}}
PI_HOOKS_PLUGIN("marker", "1.0.0", "writes a marker file when loaded", init, NULL);
"#,
        marker = marker.display()
    );
    let library = compile_c_text(&sandbox.lib(), "libmarker", &code, &[]);
    let capabilities = sandbox.root().join("caps.json");
    std::fs::write(
        &capabilities,
        r#"{"read": ["${cwd}"], "write": ["${data}"], "network": false, "exec": ["git"], "memoryMiB": 64}"#,
    )
    .unwrap();
    // Packing loads the plugin in a child (the author's own code, on the author's machine).
    let output = sandbox.run(&[
        "pack",
        library.to_str().unwrap(),
        "--out",
        sandbox.root().join("dist").to_str().unwrap(),
        "--capabilities",
        capabilities.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        marker.exists(),
        "pack records registrations by loading the plugin"
    );
    std::fs::remove_file(&marker).unwrap();
    let tgz = sandbox.root().join("dist/marker-1.0.0.tgz");

    // Inspecting the package reads its manifest and checks its hashes without running it.
    let shown = ok(&sandbox, &["inspect", "--json", tgz.to_str().unwrap()]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        (&shown["name"], &shown["plugin"]["description"]),
        (
            &Value::from("marker"),
            &Value::from("writes a marker file when loaded")
        )
    );
    assert_eq!(shown["libraries"][0]["sha256Matches"], true);
    assert_eq!(shown["capabilities"]["memoryMiB"], 64);
    assert!(
        !marker.exists(),
        "inspecting the package ran the plugin's code"
    );

    // Headless without --yes: the capabilities are shown, nothing is installed.
    let error = refused(&sandbox, &["install", tgz.to_str().unwrap()]);
    assert!(error.contains("exec: git"), "{error}");
    assert!(error.contains("memory: 64 MiB"), "{error}");
    assert!(error.contains("pass --yes"), "{error}");
    assert_eq!(user_settings(&sandbox), Value::Null);

    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    assert!(!marker.exists(), "installing ran the plugin's code");
    let json = sandbox.run(&["list", "--json", "--no-hooks"]);
    let report: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        report["packages"][0]["capabilities"]["exec"],
        serde_json::json!(["git"])
    );
    assert!(
        !marker.exists(),
        "listing with --no-hooks ran the plugin's code"
    );
}

#[test]
fn a_project_install_is_pending_trust() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    let stdout = ok(&sandbox, &["install", tgz.to_str().unwrap(), "-l", "--yes"]);
    assert!(stdout.contains("pending trust"), "{stdout}");
    let project_settings: Value = serde_json::from_slice(
        &std::fs::read(sandbox.project().join(".pi/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(project_settings["packages"].as_array().unwrap().len(), 1);
    assert_eq!(user_settings(&sandbox), Value::Null);
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new());
    assert_eq!(report["untrusted"].as_array().unwrap().len(), 1, "{report}");
    let library = report["untrusted"][0]["path"].as_str().unwrap().to_owned();
    ok(&sandbox, &["trust", &library]);
    assert_eq!(loaded_names(&sandbox.list_json(&[])), ["protected-paths"]);
}

#[test]
fn an_embedding_program_and_serve_load_installed_packages() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    // The host as a library: discovery finds the package, the load verifies it.
    let report = pi_hooks_host::lifecycle::load::load_all(
        &pi_hooks_host::plugin_files::discover::DiscoveryOptions {
            cwd: sandbox.project(),
            agent_dir: sandbox.agent_dir(),
            explicit: Vec::new(),
            no_discovery: false,
        },
    );
    let names: Vec<&str> = report.plugins.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["protected-paths"]);
    assert_eq!(
        report.plugins[0].origin,
        pi_hooks_host::plugin_files::discover::Origin::Package
    );
    // `pi-hooks serve` announces it in its hello line.
    let mut child = sandbox
        .command(&["serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    drop(child.stdin.take());
    child.wait().unwrap();
    assert!(line.contains("\"hello\""), "{line}");
    assert!(line.contains("protected-paths"), "{line}");
}

#[test]
fn a_package_for_two_platforms_installs_the_library_of_this_one() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    // The same library relabelled for the other 64-bit architecture (ELF e_machine, bytes
    // 18-19): what a cross-built library's header says, without a cross compiler.
    let mut foreign = std::fs::read(&library).unwrap();
    let (other, machine): (&str, u16) = if foreign[18] == 62 {
        ("linux-arm64-gnu", 183)
    } else {
        ("linux-x64-gnu", 62)
    };
    foreign[18..20].copy_from_slice(&machine.to_le_bytes());
    let foreign_dir = sandbox.root().join("cross");
    std::fs::create_dir_all(&foreign_dir).unwrap();
    let foreign_path = foreign_dir.join("libprotected_paths.so");
    std::fs::write(&foreign_path, &foreign).unwrap();

    // Alone, the foreign library cannot be packed: pack loads this platform's one.
    let error = refused(
        &sandbox,
        &["pack", foreign_path.to_str().unwrap(), "--out", "dist"],
    );
    assert!(
        error.contains("none of the libraries is for this machine's platform"),
        "{error}"
    );

    let output = sandbox.run(&[
        "pack",
        library.to_str().unwrap(),
        foreign_path.to_str().unwrap(),
        "--out",
        sandbox.root().join("dist").to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tgz = sandbox.root().join("dist/protected-paths-0.1.0.tgz");
    let shown: Value =
        serde_json::from_str(&ok(&sandbox, &["inspect", "--json", tgz.to_str().unwrap()])).unwrap();
    let platforms: Vec<&str> = shown["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["platform"].as_str().unwrap())
        .collect();
    assert_eq!(platforms.len(), 2);
    assert!(platforms.contains(&other), "{platforms:?}");
    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"]);
    assert_ne!(report["packages"][0]["platform"], other);
}

/// pi 0.75 and later install a user's `npm:` package in `<agentDir>/npm/node_modules/NAME`
/// (pi 1.6 included), not in the global root: a package there is found, loaded and guards a
/// run (before, it was looked for only in `$(npm root -g)` and missed, silently).
#[test]
fn a_package_pi_installed_in_the_agent_dir_s_npm_folder_is_found() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    let folder = sandbox.agent_dir().join("npm/node_modules/protected-paths");
    unpack(&tgz, &folder);
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        serde_json::json!({"packages": ["npm:protected-paths"]}).to_string(),
    )
    .unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report:#}");
    let path = report["plugins"][0]["path"].as_str().unwrap();
    assert!(
        std::path::Path::new(path).starts_with(&folder),
        "{path} is not in {}",
        folder.display()
    );
    assert_eq!(
        demo_tool_results(&sandbox),
        results(&[("bash", false), ("bash", false), ("write", true)])
    );
}
