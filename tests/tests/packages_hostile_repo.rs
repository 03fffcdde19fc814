//! A cloned repository against the user it is opened by (issue 31, causes 1, 5, 6 and 7 and
//! the loss of `remove -l`), through the real `pi-hooks` binary with a temp HOME:
//!
//! - its own symbolic links (`<library>.verified`, `.pi/pi-hooks/seen`,
//!   `.pi/pi-hooks/packages`) never lead a write out of it, and `list`, `run` and `install`
//!   write nothing into it;
//! - a replaced library does not load on a forged verification or install record: the records
//!   that decide live under the agent directory only;
//! - a trusted project package's grant is not in the repository's hands (`capabilities: null`
//!   in a planted record or its `package.json`, the store's package listed again under another
//!   source, a package of its own whose library links to the trusted one);
//! - a `sandbox` key names a package by its name and a library by its path, never one for the
//!   other, and a key that names neither is refused;
//! - `remove -l` removes only what lies in the project's own store or clone folder.
//!
//! Every test compares what the attacker aimed at (bytes, or a folder tree with link targets)
//! before and after.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_hooks_tests::npm::pack_as;
use pi_hooks_tests::packages::{edit_package_json, install_record, ok, refused, unpack};
use pi_hooks_tests::{Sandbox, c_example_plugin, parse_json_output};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// What a snapshot keeps of one entry of a folder tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    /// A folder and its permission bits.
    Dir(u32),
    /// A regular file: its SHA-256, size and permission bits.
    File(String, u64, u32),
    /// A symbolic link and its target (never followed).
    Link(PathBuf),
    /// Anything else.
    Other,
}

/// Every entry under `root` (itself included, as ""), links recorded and not followed.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Node> {
    use std::os::unix::fs::PermissionsExt;
    fn walk(root: &Path, path: &Path, out: &mut BTreeMap<PathBuf, Node>) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        let relative = path.strip_prefix(root).unwrap().to_path_buf();
        let mode = meta.permissions().mode() & 0o7777;
        let kind = meta.file_type();
        let node = if kind.is_symlink() {
            Node::Link(std::fs::read_link(path).unwrap())
        } else if kind.is_dir() {
            Node::Dir(mode)
        } else if kind.is_file() {
            let bytes = std::fs::read(path).unwrap();
            Node::File(
                pi_hooks_host::plugin_files::trust::sha256_hex(&bytes),
                meta.len(),
                mode,
            )
        } else {
            Node::Other
        };
        let is_dir = node == Node::Dir(mode);
        out.insert(relative, node);
        if is_dir {
            for entry in std::fs::read_dir(path).unwrap() {
                walk(root, &entry.unwrap().path(), out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Asserts that nothing under `what` changed between two snapshots, naming what did.
fn assert_unchanged(what: &str, before: &BTreeMap<PathBuf, Node>, after: &BTreeMap<PathBuf, Node>) {
    let mut changes = Vec::new();
    for (path, node) in before {
        match after.get(path) {
            None => changes.push(format!("removed: {}", path.display())),
            Some(now) if now != node => {
                changes.push(format!("changed: {} ({node:?} -> {now:?})", path.display()));
            }
            Some(_) => {}
        }
    }
    for (path, node) in after {
        if !before.contains_key(path) {
            changes.push(format!("new: {} ({node:?})", path.display()));
        }
    }
    assert!(
        changes.is_empty(),
        "{what} changed:\n{}",
        changes.join("\n")
    );
}

/// The C example protected-paths, built into the sandbox's `lib/`.
fn example(s: &Sandbox) -> PathBuf {
    c_example_plugin(&s.lib(), "protected-paths", "protected_paths")
}

/// `library` packed as the package `name` (into `dist/`, `capabilities` declared when given).
fn packed(s: &Sandbox, library: &Path, name: &str, capabilities: Option<&Value>) -> PathBuf {
    let out = s.root().join("dist");
    let Some(capabilities) = capabilities else {
        return pack_as(s, library, name, &out);
    };
    let file = s.root().join(format!("{name}-capabilities.json"));
    std::fs::write(&file, capabilities.to_string()).unwrap();
    let stdout = ok(
        s,
        &[
            "pack",
            library.to_str().unwrap(),
            "--name",
            name,
            "--capabilities",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    PathBuf::from(
        stdout
            .lines()
            .next()
            .unwrap()
            .rsplit(" -> ")
            .next()
            .unwrap(),
    )
}

/// The one library (`lib/<platform>/*.so`) of the package in `folder`.
fn library_in(folder: &Path) -> PathBuf {
    let platforms: Vec<PathBuf> = std::fs::read_dir(folder.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(platforms.len(), 1, "{platforms:?}");
    let files: Vec<PathBuf> = std::fs::read_dir(&platforms[0])
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "so"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn symlink(target: &Path, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(
        &std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// The project's records under the agent directory, by the documented layout:
/// `pi-hooks/records/project.<first 32 hex digits of the SHA-256 of the canonical cwd>`.
fn project_records(s: &Sandbox) -> PathBuf {
    let canonical = std::fs::canonicalize(s.project()).unwrap();
    let key =
        pi_hooks_host::plugin_files::trust::sha256_hex(canonical.as_os_str().as_encoded_bytes());
    s.agent_dir()
        .join("pi-hooks/records")
        .join(format!("project.{}", &key[..32]))
}

/// The names in `folder` (empty when it does not exist), sorted.
fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `pi-hooks list --json`, which must succeed.
fn list_json(s: &Sandbox) -> Value {
    let output = s.run(&["list", "--json"]);
    assert!(
        output.status.success(),
        "list --json failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    parse_json_output(&output)
}

/// The loaded plugin whose file is `library`, if any.
fn loaded<'a>(report: &'a Value, library: &Path) -> Option<&'a Value> {
    report["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == library.to_str().unwrap())
}

/// The error reported for `path`, if any.
fn error_at(report: &Value, path: &Path) -> Option<String> {
    report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == path.to_str().unwrap())
        .map(|e| e["error"].as_str().unwrap().to_owned())
}

/// The `packages` entry of `list --json` named `name` in `scope`.
fn package_entry<'a>(report: &'a Value, name: &str, scope: &str) -> &'a Value {
    report["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name && p["scope"] == scope)
        .unwrap_or_else(|| panic!("no {scope} package {name} in {report:#}"))
}

/// A scripted `pi-hooks run` (one answer, no tools), which must succeed.
fn run_once(s: &Sandbox) {
    let script = s.script(&json!({"turns": [{"text": "done"}]}));
    let output = s.run(&[
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        script.to_str().unwrap(),
        "go",
    ]);
    assert!(
        output.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A record of the library file at `library` is written only once its ctime is this old
/// (`loader/host/src/packages/verified.rs`).
const SETTLED: Duration = Duration::from_millis(2100);

/// What the user's `~/.bashrc` holds.
const BASHRC: &str = "# the user's own shell setup\nexport EDITOR=vi\n";

/// A cloned repository whose `.pi/settings.json` lists `npm:<name>`, and the package pi
/// would have put in `.pi/npm/node_modules/<name>/`: its library.
fn cloned_npm_package(s: &Sandbox, name: &str) -> PathBuf {
    let tgz = packed(s, &example(s), name, None);
    let folder = s.project().join(".pi/npm/node_modules").join(name);
    unpack(&tgz, &folder);
    write_json(
        &s.project().join(".pi/settings.json"),
        &json!({"packages": [format!("npm:{name}")]}),
    );
    library_in(&folder)
}

// ---------------------------------------------------------------------------------------
// Cause 1: a cloned repository writes through its own symlinks
// ---------------------------------------------------------------------------------------

#[test]
fn verification_links_beside_a_cloned_library_lead_no_write_out_of_the_repository() {
    let s = Sandbox::new();
    let library = cloned_npm_package(&s, "mk");
    let bashrc = s.home().join(".bashrc");
    std::fs::write(&bashrc, BASHRC).unwrap();
    for suffix in [".verified.partial", ".verified"] {
        symlink(&bashrc, &with_suffix(&library, suffix));
    }
    std::thread::sleep(SETTLED);
    let project = s.project().join(".pi");
    let before = snapshot(&project);

    ok(&s, &["list"]);
    let report = list_json(&s);
    run_once(&s);

    // The package was found and its library read: it waits for trust.
    let untrusted: Vec<&str> = report["untrusted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["path"].as_str().unwrap())
        .collect();
    assert_eq!(untrusted, [library.to_str().unwrap()], "{report:#}");
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), BASHRC);
    assert_unchanged("the repository's .pi", &before, &snapshot(&project));
    // The verification was recorded, where only the user writes.
    let verified = names(&project_records(&s).join("verified"));
    assert_eq!(verified.len(), 1, "{verified:?}");
    assert!(verified[0].ends_with(".json"), "{verified:?}");
}

#[test]
fn a_seen_folder_linked_to_the_agent_dir_does_not_let_a_package_named_settings_replace_them() {
    let s = Sandbox::new();
    let settings = s.agent_dir().join("settings.json");
    // Bytes a rewrite would not keep (a long number, an exponent, the key order).
    let text = "{\"theme\": \"dark\", \"big\": 123456789012345678901234567890, \"n\": 1E3}\n";
    std::fs::write(&settings, text).unwrap();
    cloned_npm_package(&s, "settings");
    symlink(&s.agent_dir(), &s.project().join(".pi/pi-hooks/seen"));
    let project = s.project().join(".pi");
    let before = snapshot(&project);
    let agent_before = names(&s.agent_dir());

    ok(&s, &["list"]);
    list_json(&s);
    run_once(&s);

    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    assert_unchanged("the repository's .pi", &before, &snapshot(&project));
    let mut agent_now = names(&s.agent_dir());
    agent_now.retain(|n| n != "pi-hooks" || agent_before.contains(n));
    assert_eq!(agent_now, agent_before, "new files in the agent dir");
    // What was first seen of the package is recorded under the agent dir, by its name.
    let seen = read_json(&project_records(&s).join("seen/settings.json"));
    assert_eq!(seen["name"], "settings");
}

#[test]
fn a_project_store_that_is_a_link_is_refused_by_install_and_nothing_is_written_through_it() {
    let s = Sandbox::new();
    let outside = s.root().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("keep.txt"), "the user's").unwrap();
    let link = s.project().join(".pi/pi-hooks/packages");
    symlink(&outside, &link);
    let tgz = packed(&s, &example(&s), "mk", None);
    let project = s.project().join(".pi");
    let (outside_before, project_before) = (snapshot(&outside), snapshot(&project));

    let error = refused(&s, &["install", "-l", tgz.to_str().unwrap(), "--yes"]);
    assert!(
        error.contains(&link.display().to_string()) && error.contains("symbolic link"),
        "{error}"
    );
    let error = refused(&s, &["remove", "-l", "mk"]);
    assert!(error.contains(&link.display().to_string()), "{error}");
    ok(&s, &["list"]);

    assert_unchanged("the link's target", &outside_before, &snapshot(&outside));
    assert_unchanged("the repository's .pi", &project_before, &snapshot(&project));
    assert!(!project_records(&s).join("install/mk.json").exists());
}

// ---------------------------------------------------------------------------------------
// Cause 5: the forged verification record
// ---------------------------------------------------------------------------------------

/// A sandbox with the package `mk` (the protected-paths example, with `capabilities` when
/// given) installed for the project and its library trusted: the library.
fn trusted_project_package(s: &Sandbox, capabilities: Option<&Value>) -> PathBuf {
    let tgz = packed(s, &example(s), "mk", capabilities);
    ok(s, &["install", "-l", tgz.to_str().unwrap(), "--yes"]);
    let library = library_in(&s.project().join(".pi/pi-hooks/packages/mk"));
    let report = list_json(s);
    assert_eq!(
        report["untrusted"][0]["path"],
        library.to_str().unwrap(),
        "{report:#}"
    );
    ok(s, &["trust", library.to_str().unwrap()]);
    library
}

#[test]
fn a_replaced_library_does_not_load_on_forged_records_in_the_project() {
    let s = Sandbox::new();
    let library = trusted_project_package(&s, None);
    std::thread::sleep(SETTLED);
    let report = list_json(&s);
    assert!(loaded(&report, &library).is_some(), "{report:#}");
    assert_eq!(
        names(&project_records(&s).join("verified")).len(),
        1,
        "the settled library's verification is recorded"
    );
    let pinned = read_json(&project_records(&s).join("install/mk.json"))["sha256"]
        .as_str()
        .unwrap()
        .to_owned();

    // The attacker's bytes (another example plugin) in place of the library, and every
    // record an older pi-hooks read from the project, forged to match them.
    let other = c_example_plugin(&s.lib(), "block-sudo-c", "block_sudo");
    let bytes = std::fs::read(&other).unwrap();
    std::fs::write(&library, &bytes).unwrap();
    let new_sha = pi_hooks_host::plugin_files::trust::sha256_hex(&bytes);
    let identity =
        pi_hooks_host::plugin_files::files::FileIdentity::of(&std::fs::metadata(&library).unwrap())
            .unwrap();
    let forged = json!({"sha256": pinned, "identity": identity});
    write_json(&with_suffix(&library, ".verified"), &forged);
    let package = s.project().join(".pi/pi-hooks/packages/mk");
    let mut record = read_json(&project_records(&s).join("install/mk.json"));
    record["sha256"] = new_sha.clone().into();
    write_json(&package.join(".pi-hooks-install.json"), &record);
    write_json(
        &s.project().join(".pi/pi-hooks/seen/mk.json"),
        &json!({"name": "mk", "version": "0.1.0", "signer": null, "capabilities": null}),
    );

    for round in ["at once", "once the file settled"] {
        if round != "at once" {
            std::thread::sleep(SETTLED);
        }
        let report = list_json(&s);
        assert!(loaded(&report, &library).is_none(), "{round}: {report:#}");
        let error = error_at(&report, &library)
            .unwrap_or_else(|| panic!("{round}: no error for the library: {report:#}"));
        assert!(
            error.contains("package mk")
                && error.contains("does not match the SHA-256 recorded")
                && error.contains(&new_sha)
                && error.contains(&pinned),
            "{round}: {error}"
        );
    }
}

#[test]
fn the_install_record_of_a_project_package_lives_under_the_agent_dir_only() {
    let s = Sandbox::new();
    let tgz = packed(&s, &example(&s), "mk", Some(&json!({"read": ["${cwd}"]})));
    ok(&s, &["install", "-l", tgz.to_str().unwrap(), "--yes"]);
    let package = s.project().join(".pi/pi-hooks/packages/mk");
    let library = library_in(&package);
    let record = read_json(&project_records(&s).join("install/mk.json"));
    assert_eq!(record["name"], "mk");
    assert_eq!(
        record["sha256"],
        pi_hooks_host::plugin_files::trust::sha256_hex(&std::fs::read(&library).unwrap())
    );
    assert_eq!(record["capabilities"]["read"], json!(["${cwd}"]));
    // The project holds its settings, the store's lock and the package's own files only.
    let files: Vec<PathBuf> = snapshot(&s.project().join(".pi"))
        .into_iter()
        .filter(|(_, node)| matches!(node, Node::File(..)))
        .map(|(path, _)| path)
        .collect();
    let mut expected = vec![
        PathBuf::from("pi-hooks/packages/.lock"),
        library
            .strip_prefix(s.project().join(".pi"))
            .unwrap()
            .to_path_buf(),
        PathBuf::from("pi-hooks/packages/mk/package.json"),
        PathBuf::from("pi-hooks/packages/mk/pi-extension.js"),
        PathBuf::from("settings.json"),
    ];
    expected.sort();
    assert_eq!(files, expected);
    // Nothing for the user's scope, and a planted record in the package is not read.
    assert!(
        !s.agent_dir()
            .join("pi-hooks/records/user/install/mk.json")
            .exists()
    );
    let mut planted = record.clone();
    planted["sha256"] = "0".repeat(64).into();
    planted["capabilities"] = Value::Null;
    planted["version"] = "6.6.6".into();
    write_json(&package.join(".pi-hooks-install.json"), &planted);
    let listed = package_entry(&list_json(&s), "mk", "project").clone();
    assert_eq!(listed["version"], "0.1.0");
    assert_eq!(listed["sha256"], record["sha256"]);
    assert_eq!(listed["capabilities"]["read"], json!(["${cwd}"]));
}

// ---------------------------------------------------------------------------------------
// Cause 6: a trusted project package's grant in repository files
// ---------------------------------------------------------------------------------------

/// The grant summary of the confined plugin at `library` in `report`.
fn confined_grant(report: &Value, library: &Path) -> String {
    let plugin = loaded(report, library).unwrap_or_else(|| panic!("not loaded: {report:#}"));
    assert_eq!(plugin["trust"], "trusted", "{plugin:#}");
    assert_eq!(plugin["runs"], "confined", "{plugin:#}");
    plugin["grant"]["summary"].as_str().unwrap().to_owned()
}

#[test]
fn a_trusted_project_packages_grant_is_not_in_the_repositorys_hands() {
    let s = Sandbox::new();
    let library = trusted_project_package(&s, Some(&json!({"read": ["${cwd}"]})));
    let package = s.project().join(".pi/pi-hooks/packages/mk");
    let report = list_json(&s);
    let grant = confined_grant(&report, &library);
    assert!(grant.starts_with("read: "), "{grant}");
    assert_eq!(
        package_entry(&report, "mk", "project")["sandbox"],
        "confined"
    );

    // An install record in the package's folder (where an older pi-hooks kept it), and its
    // package.json, both saying it declares nothing.
    let mut record = read_json(&project_records(&s).join("install/mk.json"));
    record["capabilities"] = Value::Null;
    write_json(&package.join(".pi-hooks-install.json"), &record);
    edit_package_json(&package, |json| {
        json["piHooks"]["manifest"]
            .as_object_mut()
            .unwrap()
            .remove("capabilities");
    });
    let report = list_json(&s);
    assert_eq!(confined_grant(&report, &library), grant);
    assert_eq!(
        package_entry(&report, "mk", "project")["sandbox"],
        "confined"
    );

    // The same folder listed again under another source (so no install record matches it):
    // refused, not loaded as pi would load it with what its package.json now declares.
    let settings = s.project().join(".pi/settings.json");
    let original = std::fs::read(&settings).unwrap();
    for source in ["./pi-hooks/packages/mk", "./pi-hooks/packages/mk/"] {
        write_json(&settings, &json!({"packages": [source]}));
        let report = list_json(&s);
        assert!(loaded(&report, &library).is_none(), "{source}: {report:#}");
        let error = error_at(&report, &package.join("package.json"))
            .unwrap_or_else(|| panic!("{source}: no error: {report:#}"));
        assert!(error.contains("in pi-hooks' store"), "{source}: {error}");
    }

    // A package of the repository's own whose library is a link to the trusted one, listed
    // first: refused, and the trusted library loads with its own grant.
    let evil = s.project().join(".pi/npm/node_modules/evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::copy(package.join("package.json"), evil.join("package.json")).unwrap();
    edit_package_json(&evil, |json| json["name"] = "evil".into());
    let relative = library.strip_prefix(&package).unwrap();
    symlink(&library, &evil.join(relative));
    let mut listed: Value = serde_json::from_slice(&original).unwrap();
    listed["packages"]
        .as_array_mut()
        .unwrap()
        .insert(0, "npm:evil".into());
    write_json(&settings, &listed);
    let report = list_json(&s);
    assert!(
        loaded(&report, &evil.join(relative)).is_none(),
        "{report:#}"
    );
    let error = error_at(&report, &evil.join("package.json"))
        .unwrap_or_else(|| panic!("no error for evil: {report:#}"));
    assert!(
        error.contains("leads out of the package's folder"),
        "{error}"
    );
    assert_eq!(confined_grant(&report, &library), grant);
}

// ---------------------------------------------------------------------------------------
// Cause 7: `sandbox` keys name one identity each
// ---------------------------------------------------------------------------------------

/// Writes the user's settings.json, keeping its `packages`.
fn user_sandbox(s: &Sandbox, sandbox: Value) {
    let path = s.agent_dir().join("settings.json");
    let mut settings = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or_else(|| json!({}));
    settings["sandbox"] = sandbox;
    write_json(&path, &settings);
}

#[test]
fn a_sandbox_key_names_a_package_by_its_name_and_a_library_by_its_path_only() {
    let s = Sandbox::new();
    let hooks = s.agent_dir().join("hooks");
    let gate_built = c_example_plugin(&s.lib(), "block-sudo-c", "block_sudo");
    let gate = s.install(&gate_built, &hooks, "libgate.so");
    let built = example(&s);
    // The package `other`, whose library is also called libother.so, confined to ${cwd}.
    let other_built = s.install(&built, &s.lib().join("other"), "libother.so");
    let tgz = packed(
        &s,
        &other_built,
        "other",
        Some(&json!({"read": ["${cwd}"]})),
    );
    ok(&s, &["install", tgz.to_str().unwrap(), "--yes"]);
    let other = library_in(&s.agent_dir().join("pi-hooks/packages/other"));
    assert!(other.ends_with("libother.so"), "{}", other.display());
    let plain = list_json(&s);
    assert_eq!(loaded(&plain, &gate).unwrap()["runs"], "in-process");
    let grant = confined_grant_untrusted(&plain, &other);

    // A package name never names the library libgate.so: `false` leaves it as it is...
    user_sandbox(&s, json!({"gate": false}));
    let report = list_json(&s);
    assert_eq!(report["errors"], json!([]), "{report:#}");
    assert_eq!(loaded(&report, &gate).unwrap()["runs"], "in-process");
    // ... and a grant under a bare name that no package has, which names the library by its
    // file name (as plain libraries were once keyed), keeps it from loading rather than
    // letting it run unconfined, and says how to name it.
    for (what, sandbox) in [
        ("gate: a grant", json!({"gate": {"read": ["${cwd}"]}})),
        ("libgate: a grant", json!({"libgate": {"read": ["${cwd}"]}})),
        (
            "libgate.so: a grant",
            json!({"libgate.so": {"read": ["${cwd}"]}}),
        ),
    ] {
        user_sandbox(&s, sandbox);
        let report = list_json(&s);
        assert!(loaded(&report, &gate).is_none(), "{what}: {report:#}");
        let error = report["errors"][0]["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("names a package (a bare name always does)")
                && error.contains("Name a library by its path"),
            "{what}: {report:#}"
        );
    }
    // ... while its path does (the check that the key above would have been read).
    user_sandbox(&s, json!({"./hooks/libgate.so": {"read": ["${cwd}"]}}));
    let report = list_json(&s);
    assert_eq!(
        loaded(&report, &gate).unwrap()["runs"],
        "confined",
        "{report:#}"
    );

    // A library's path (or file name) never names the package `other`.
    for (what, sandbox) in [
        (
            "its library's path",
            json!({other.to_str().unwrap(): false}),
        ),
        ("./hooks/libother.so", json!({"./hooks/libother.so": false})),
        (
            "the absolute hooks path",
            json!({hooks.join("libother.so").to_str().unwrap(): {"read": ["/"], "network": true}}),
        ),
        ("libother.so", json!({"libother.so": false})),
        ("libother", json!({"libother": false})),
    ] {
        user_sandbox(&s, sandbox);
        let report = list_json(&s);
        assert_eq!(report["errors"], json!([]), "{what}: {report:#}");
        assert_eq!(confined_grant_untrusted(&report, &other), grant, "{what}");
        assert_eq!(
            package_entry(&report, "other", "user")["sandbox"],
            "confined",
            "{what}"
        );
    }
    // ... while its name does.
    user_sandbox(&s, json!({"other": false}));
    let report = list_json(&s);
    assert_eq!(loaded(&report, &other).unwrap()["runs"], "in-process");
    assert_eq!(
        package_entry(&report, "other", "user")["sandbox"],
        "opted-out"
    );
}

/// The grant summary of the confined user plugin at `library` (no trust needed).
fn confined_grant_untrusted(report: &Value, library: &Path) -> String {
    let plugin = loaded(report, library).unwrap_or_else(|| panic!("not loaded: {report:#}"));
    assert_eq!(plugin["runs"], "confined", "{plugin:#}");
    plugin["grant"]["summary"].as_str().unwrap().to_owned()
}

#[test]
fn a_sandbox_key_that_names_neither_a_package_nor_a_library_is_refused_naming_it() {
    let s = Sandbox::new();
    let gate = s.install(&example(&s), &s.agent_dir().join("hooks"), "libgate.so");
    let settings = s.agent_dir().join("settings.json");
    write_json(&settings, &json!({"sandbox": {"@acme gate": false}}));
    let before = std::fs::read(&settings).unwrap();
    let report = list_json(&s);
    let error = error_at(&report, &settings).unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        error.contains("\"@acme gate\"") && error.contains("names neither a package nor a library"),
        "{error}"
    );
    let text = ok(&s, &["list"]);
    assert!(text.contains("@acme gate"), "{text}");
    // The plain library in the agent's hooks folder is not taken for `@acme gate`.
    assert!(
        loaded(&report, &gate).is_none_or(|p| p["runs"] == "in-process"),
        "{report:#}"
    );
    assert_eq!(std::fs::read(&settings).unwrap(), before);
}

// ---------------------------------------------------------------------------------------
// The loss: `remove -l` in a cloned repository
// ---------------------------------------------------------------------------------------

/// The user's package `mk` installed from a `.tgz`: what an attack on it must leave alone
/// (its folder, its install record, the user's settings), as snapshots of the agent dir's
/// parts.
struct UsersMk {
    folder: PathBuf,
    record: PathBuf,
    settings: PathBuf,
}

impl UsersMk {
    fn install(s: &Sandbox) -> UsersMk {
        let tgz = packed(s, &example(s), "mk", None);
        ok(s, &["install", tgz.to_str().unwrap(), "--yes"]);
        install_record(s, "mk");
        UsersMk {
            folder: s.agent_dir().join("pi-hooks/packages/mk"),
            record: s.agent_dir().join("pi-hooks/records/user/install/mk.json"),
            settings: s.agent_dir().join("settings.json"),
        }
    }

    fn state(&self) -> (BTreeMap<PathBuf, Node>, Vec<u8>, Vec<u8>) {
        (
            snapshot(&self.folder),
            std::fs::read(&self.record).unwrap_or_default(),
            std::fs::read(&self.settings).unwrap_or_default(),
        )
    }

    fn assert_kept(
        &self,
        s: &Sandbox,
        what: &str,
        before: &(BTreeMap<PathBuf, Node>, Vec<u8>, Vec<u8>),
    ) {
        let now = self.state();
        assert!(now.0.len() > 1, "{what}: the user's package folder is gone");
        assert_unchanged(
            &format!("{what}: the user's package folder"),
            &before.0,
            &now.0,
        );
        assert_eq!(now.1, before.1, "{what}: the user's install record changed");
        assert_eq!(now.2, before.2, "{what}: the user's settings changed");
        let report = list_json(s);
        assert!(
            loaded(&report, &library_in(&self.folder)).is_some(),
            "{what}: the user's mk no longer loads: {report:#}"
        );
    }
}

#[test]
fn remove_l_in_a_cloned_repository_never_deletes_the_users_own_package() {
    let s = Sandbox::new();
    let mk = UsersMk::install(&s);
    let user_source = install_record(&s, "mk")["source"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(user_source, mk.folder.to_str().unwrap());
    let mut planted = install_record(&s, "mk");
    planted["location"] = user_source.clone().into();
    let package = s.project().join(".pi/pi-hooks/packages/mk");
    let settings = s.project().join(".pi/settings.json");

    // The old attack: a record in the repository whose `location` is the user's folder,
    // with the user's source (or `npm:mk`) listed in the project's settings.
    for source in [user_source.as_str(), "npm:mk"] {
        planted["source"] = source.into();
        write_json(&package.join(".pi-hooks-install.json"), &planted);
        write_json(&settings, &json!({"packages": [source]}));
        let before = mk.state();
        let _ = s.run(&["remove", "-l", "mk"]);
        mk.assert_kept(&s, &format!("a planted record listing {source}"), &before);
    }

    // The project's store folder a link to the user's, and the store itself a link to the
    // user's store (with a real project install of mk first, so there is a record).
    let _ = std::fs::remove_dir_all(s.project().join(".pi"));
    let tgz = s.root().join("dist/mk-0.1.0.tgz");
    ok(&s, &["install", "-l", tgz.to_str().unwrap(), "--yes"]);
    std::fs::remove_dir_all(&package).unwrap();
    symlink(&mk.folder, &package);
    let before = mk.state();
    let _ = s.run(&["remove", "-l", "mk"]);
    mk.assert_kept(&s, "the project's mk a link to the user's", &before);
    assert!(
        !package.exists(),
        "the link itself goes with the project's mk"
    );

    let _ = std::fs::remove_dir_all(s.project().join(".pi"));
    ok(&s, &["install", "-l", tgz.to_str().unwrap(), "--yes"]);
    let store = s.project().join(".pi/pi-hooks/packages");
    std::fs::remove_dir_all(&store).unwrap();
    symlink(&s.agent_dir().join("pi-hooks/packages"), &store);
    let before = mk.state();
    let error = refused(&s, &["remove", "-l", "mk"]);
    assert!(error.contains(&store.display().to_string()), "{error}");
    mk.assert_kept(&s, "the project's store a link to the user's", &before);
}

#[test]
fn remove_l_of_a_git_package_whose_clone_folder_is_a_link_removes_the_link_at_most() {
    let s = Sandbox::new();
    let tgz = packed(&s, &example(&s), "mk", None);
    // The user's own clone, where pi keeps a user's git package.
    let clone = s.agent_dir().join("git/github.com/acme/mk");
    unpack(&tgz, &clone);
    let settings = s.project().join(".pi/settings.json");
    let source = "git:github.com/acme/mk";

    // The clone folder itself a link: the link goes, the user's clone stays.
    let link = s.project().join(".pi/git/github.com/acme/mk");
    symlink(&clone, &link);
    write_json(&settings, &json!({"packages": [source]}));
    let before = snapshot(&clone);
    ok(&s, &["remove", "-l", "mk"]);
    assert_unchanged("the user's clone", &before, &snapshot(&clone));
    assert!(std::fs::symlink_metadata(&link).is_err(), "the link stays");

    // A folder on the way a link (`.pi/git` to the user's git folder): refused.
    let _ = std::fs::remove_dir_all(s.project().join(".pi"));
    symlink(&s.agent_dir().join("git"), &s.project().join(".pi/git"));
    write_json(&settings, &json!({"packages": [source]}));
    let error = refused(&s, &["remove", "-l", "mk"]);
    assert!(error.contains("symbolic link"), "{error}");
    assert_unchanged("the user's clone", &before, &snapshot(&clone));

    // A source whose path climbs out of `.pi/git` into the user's clone: refused.
    let _ = std::fs::remove_dir_all(s.project().join(".pi"));
    let climbing = "git:github.com/acme/../../../../home/.pi/agent/git/github.com/acme/mk";
    write_json(&settings, &json!({"packages": [climbing]}));
    refused(&s, &["remove", "-l", "mk"]);
    assert_unchanged("the user's clone", &before, &snapshot(&clone));
}

#[test]
fn a_project_settings_file_linked_to_the_users_is_not_written_through_by_install_or_remove() {
    let s = Sandbox::new();
    let settings = s.agent_dir().join("settings.json");
    let text = "{\"theme\": \"dark\", \"big\": 123456789012345678901234567890}\n";
    std::fs::write(&settings, text).unwrap();
    symlink(&settings, &s.project().join(".pi/settings.json"));
    let tgz = packed(&s, &example(&s), "mk", None);

    // Written through, the project's package would be listed in the user's settings: a
    // user package, loaded without trust.
    let _ = s.run(&["install", "-l", tgz.to_str().unwrap(), "--yes"]);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
    let report = list_json(&s);
    assert_eq!(report["plugins"], json!([]), "{report:#}");
    let _ = s.run(&["remove", "-l", "mk"]);
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), text);
}
