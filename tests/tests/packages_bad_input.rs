//! Bad packages: each is refused with an error naming the package, the file and what to
//! do, and changes nothing (no settings written, no package folder left).

use std::path::{Path, PathBuf};

use pi_hooks_host::packages::platform::host_platform;
use pi_hooks_tests::packages::{
    RawEntry, edit_package_json, install_record, install_refused, installed_dir, keygen,
    nothing_installed, ok, pack, raw_tgz, refused, unpack, user_settings,
};
use pi_hooks_tests::{Sandbox, c_example_plugin, loaded_names};
use serde_json::Value;

/// The protected-paths example packed (signed with a new key when `signed`) and unpacked
/// into a folder to edit.
fn package_folder(sandbox: &Sandbox, signed: bool) -> PathBuf {
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let key = signed.then(|| keygen(sandbox, &sandbox.root().join("keys")));
    let tgz = pack(
        sandbox,
        &library,
        &sandbox.root().join("dist"),
        key.as_deref(),
    );
    let folder = sandbox.root().join("pkg");
    unpack(&tgz, &folder);
    folder
}

fn library_file(folder: &Path) -> PathBuf {
    folder
        .join("lib")
        .join(host_platform())
        .join("libprotected_paths.so")
}

#[test]
fn a_library_whose_bytes_do_not_match_its_sha256() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    let mut bytes = std::fs::read(library_file(&folder)).unwrap();
    bytes.push(0);
    std::fs::write(library_file(&folder), bytes).unwrap();
    let error = install_refused(&sandbox, &folder);
    assert!(error.contains("package protected-paths 0.1.0"), "{error}");
    assert!(
        error.contains(&format!(
            "the bytes of its library lib/{}/libprotected_paths.so do not match the manifest's SHA-256",
            host_platform()
        )),
        "{error}"
    );
    assert!(error.contains("get it again from its publisher"), "{error}");
}

#[test]
fn an_installed_library_changed_afterwards_does_not_load() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
    let installed = library_file(&installed_dir(&sandbox, "protected-paths"));
    let mut bytes = std::fs::read(&installed).unwrap();
    bytes.push(0);
    std::fs::write(&installed, bytes).unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new());
    let error = report["errors"][0]["error"].as_str().unwrap();
    assert!(
        error
            .contains("the library of package protected-paths does not match the SHA-256 recorded"),
        "{error}"
    );
    assert!(error.contains("pi-hooks update protected-paths"), "{error}");
}

#[test]
fn a_manifest_that_does_not_match_its_signature() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, true);
    edit_package_json(&folder, |json| {
        json["piHooks"]["manifest"]["plugin"]["description"] = "harmless, trust me".into();
    });
    let error = install_refused(&sandbox, &folder);
    assert!(error.contains("package protected-paths 0.1.0"), "{error}");
    assert!(
        error
            .contains("does not match its signature: package.json was changed after it was signed"),
        "{error}"
    );
    // The signed manifest as packed installs.
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, true);
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
}

#[test]
fn no_library_for_this_platform_lists_the_ones_there_are() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    edit_package_json(&folder, |json| {
        let libraries = json["piHooks"]["manifest"]["libraries"]
            .as_object_mut()
            .unwrap();
        let ours = libraries.remove(host_platform()).unwrap();
        libraries.insert("darwin-arm64".into(), ours.clone());
        libraries.insert("win32-x64".into(), ours);
    });
    let error = install_refused(&sandbox, &folder);
    assert!(
        error.contains(&format!(
            "has no library for this platform ({}); it has: darwin-arm64, win32-x64",
            host_platform()
        )),
        "{error}"
    );
}

#[test]
fn a_library_for_a_newer_abi_or_a_package_for_a_newer_host() {
    for (abi, expected) in [
        ("1.99", "was built for ABI 1.99"),
        ("2.0", "was built for ABI 2.0"),
    ] {
        let sandbox = Sandbox::new();
        let folder = package_folder(&sandbox, false);
        edit_package_json(&folder, |json| {
            json["piHooks"]["manifest"]["libraries"][host_platform()]["abi"] = abi.into();
        });
        let error = install_refused(&sandbox, &folder);
        assert!(error.contains(expected), "{error}");
        assert!(error.contains("update pi-hooks"), "{error}");
    }
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    edit_package_json(&folder, |json| {
        json["piHooks"]["manifest"]["minHostVersion"] = "99.0.0".into();
    });
    let error = install_refused(&sandbox, &folder);
    assert!(error.contains("needs pi-hooks 99.0.0 or newer"), "{error}");
}

#[test]
fn tarball_entries_that_leave_the_package_or_are_not_regular_files() {
    let json = br#"{"name":"x","version":"1.0.0"}"#;
    let cases: [(&[u8], tar::EntryType, &[u8], &str); 7] = [
        (
            b"package/../evil",
            tar::EntryType::Regular,
            b"",
            "has a `..` part",
        ),
        (
            b"/etc/evil",
            tar::EntryType::Regular,
            b"",
            "has an absolute path",
        ),
        (
            b"package/link",
            tar::EntryType::Symlink,
            b"/etc/passwd",
            "is a symbolic link",
        ),
        (
            b"package/hard",
            tar::EntryType::Link,
            b"package/package.json",
            "is a hard link",
        ),
        (
            b"package/dev",
            tar::EntryType::Char,
            b"",
            "is a device file",
        ),
        (
            b"package/blk",
            tar::EntryType::Block,
            b"",
            "is a device file",
        ),
        (b"package/fifo", tar::EntryType::Fifo, b"", "is a FIFO"),
    ];
    for (name, kind, link, expected) in cases {
        let sandbox = Sandbox::new();
        let tgz = sandbox.root().join("evil.tgz");
        raw_tgz(
            &tgz,
            &[
                RawEntry {
                    name: b"package/package.json",
                    kind: tar::EntryType::Regular,
                    data: json,
                    link: b"",
                },
                RawEntry {
                    name,
                    kind,
                    data: b"",
                    link,
                },
            ],
        );
        let error = install_refused(&sandbox, &tgz);
        assert!(
            error.contains(expected),
            "{}: {error}",
            String::from_utf8_lossy(name)
        );
        assert!(error.contains("evil.tgz"), "{error}");
        assert!(!sandbox.root().join("evil").exists());
    }
}

#[test]
fn an_entry_or_a_package_over_a_size_cap() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    let output = sandbox
        .command(&["install", tgz.to_str().unwrap(), "--yes"])
        .env("PI_HOOKS_PACKAGE_MAX_ENTRY_BYTES", "1000")
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(error.contains("over the limit of 1000 per file"), "{error}");
    nothing_installed(&sandbox);
    let output = sandbox
        .command(&["install", tgz.to_str().unwrap(), "--yes"])
        .env("PI_HOOKS_PACKAGE_MAX_BYTES", "2000")
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        error.contains("over the limit of 2000 bytes uncompressed"),
        "{error}"
    );
    nothing_installed(&sandbox);
}

#[test]
fn a_broken_package_json() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    std::fs::write(folder.join("package.json"), "{not json").unwrap();
    let error = install_refused(&sandbox, &folder);
    assert!(error.contains("package.json is not valid JSON"), "{error}");
    std::fs::write(
        folder.join("package.json"),
        r#"{"name":"x","version":"1.0.0"}"#,
    )
    .unwrap();
    let error = install_refused(&sandbox, &folder);
    assert!(error.contains("not a pi-hooks package"), "{error}");
    nothing_installed(&sandbox);
}

#[test]
fn an_install_that_fails_halfway_keeps_the_old_version_and_the_settings() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
    // Recording the new version in the settings would fail (their `packages` is not a list),
    // so the update is refused, the old version and the settings left as they were.
    let settings_path = sandbox.agent_dir().join("settings.json");
    let mut settings = user_settings(&sandbox);
    settings["packages"] = serde_json::json!({"not": "a list"});
    std::fs::write(&settings_path, settings.to_string()).unwrap();
    let before = std::fs::read(&settings_path).unwrap();
    edit_package_json(&folder, |json| json["version"] = "0.2.0".into());
    let error = refused(&sandbox, &["update", "--yes"]);
    assert!(
        error.contains("settings.json:1:13: `packages` must be an array"),
        "{error}"
    );
    assert!(error.contains("Nothing was changed"), "{error}");
    assert_eq!(std::fs::read(&settings_path).unwrap(), before);
    let record = install_record(&sandbox, "protected-paths");
    assert_eq!(record["version"], "0.1.0");
    assert!(library_file(&installed_dir(&sandbox, "protected-paths")).is_file());
}

#[test]
fn two_installs_at_once_both_land_in_the_settings() {
    let sandbox = Sandbox::new();
    let protected = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let gate = c_example_plugin(&sandbox.lib(), "permission-gate-c", "permission_gate");
    let dist = sandbox.root().join("dist");
    let packages = [
        pack(&sandbox, &protected, &dist, None),
        pack(&sandbox, &gate, &dist, None),
    ];
    for _round in 0..3 {
        let children: Vec<_> = packages
            .iter()
            .map(|p| {
                sandbox
                    .command(&["install", p.to_str().unwrap(), "--yes"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let list = user_settings(&sandbox)["packages"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(list, 2, "{}", user_settings(&sandbox));
        ok(&sandbox, &["remove", "protected-paths"]);
        ok(&sandbox, &["remove", "permission-gate-c"]);
    }
}

#[test]
fn an_install_killed_between_its_steps_is_mended_by_the_next_one() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
    let settings = user_settings(&sandbox);
    // As if killed after moving the old version aside and before the new one arrived, with
    // a staging folder left half-written.
    let store = sandbox.agent_dir().join("pi-hooks/packages");
    std::fs::rename(
        store.join("protected-paths"),
        store.join(".old-protected-paths-4242"),
    )
    .unwrap();
    std::fs::create_dir_all(store.join(".staging-abc/lib")).unwrap();
    // Meanwhile the `packages` entry (the folder installed from) loads as pi loads a local
    // entry: from that folder, checked against its own manifest.
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"]);
    assert_eq!(
        report["plugins"][0]["path"]
            .as_str()
            .map(|p| p.starts_with(folder.to_str().unwrap())),
        Some(true),
        "{report:#}"
    );
    // The next change to the store (here a removal that finds nothing) mends it first.
    refused(&sandbox, &["remove", "nothing-such"]);
    let left: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".lock")
        .collect();
    assert_eq!(left, ["protected-paths"]);
    assert_eq!(user_settings(&sandbox), settings);
    assert_eq!(loaded_names(&sandbox.list_json(&[])), ["protected-paths"]);
}

#[test]
fn a_library_that_is_another_plugin_or_no_plugin_than_the_manifest_says() {
    // The manifest's SHA-256 matches, but what the library says of itself (read from its
    // bytes, without running it) does not.
    let scratch = Sandbox::new();
    let cases = [
        (
            c_example_plugin(&scratch.lib(), "block-sudo-c", "block_sudo"),
            "is the plugin \"block-sudo\", but the manifest names \"protected-paths\"",
        ),
        (
            pi_hooks_tests::compile_c_text(
                &scratch.lib(),
                "not_plugin",
                "int answer(void) { return 42; }\n",
                &[],
            ),
            "does not export pi_hooks_plugin_v1 and is not a pi-hooks plugin",
        ),
    ];
    for (other, expected) in cases {
        let sandbox = Sandbox::new();
        let folder = package_folder(&sandbox, false);
        let bytes = std::fs::read(&other).unwrap();
        std::fs::write(library_file(&folder), &bytes).unwrap();
        let sha256 = pi_hooks_host::packages::verify::sha256_hex(&bytes);
        edit_package_json(&folder, |json| {
            json["piHooks"]["manifest"]["libraries"][host_platform()]["sha256"] = sha256.into();
        });
        let error = install_refused(&sandbox, &folder);
        assert!(error.contains(expected), "{error}");
        assert!(error.contains("package protected-paths 0.1.0"), "{error}");
    }
}

/// A library with no information block (which plugin it is could not be checked before it
/// runs) and one built for another machine than its platform key names: refused at install.
#[test]
fn a_library_with_no_information_block_or_for_another_machine() {
    let scratch = Sandbox::new();
    // Exports the entry symbol, and no `pi_hooks_plugin_info_v1`.
    let no_block = std::fs::read(pi_hooks_tests::compile_c_text(
        &scratch.lib(),
        "no_block",
        "__attribute__((visibility(\"default\"))) const void *pi_hooks_plugin_v1(void) { return 0; }\n",
        &[],
    ))
    .unwrap();
    // The example itself with its ELF header's `e_machine` (offset 18, little-endian) made
    // another machine's: aarch64 on x86-64, x86-64 elsewhere.
    let mut other_machine = std::fs::read(c_example_plugin(
        &scratch.lib(),
        "protected-paths",
        "protected_paths",
    ))
    .unwrap();
    let (machine, other) = if host_platform().starts_with("linux-x64") {
        (183u16, "linux-arm64")
    } else {
        (62u16, "linux-x64")
    };
    other_machine[18..20].copy_from_slice(&machine.to_le_bytes());
    let cases = [
        (
            no_block,
            "exports no pi_hooks_plugin_info_v1 block, so which plugin it is cannot be checked against the manifest's \"protected-paths\" before it runs".to_owned(),
        ),
        (
            other_machine,
            format!(
                "is listed for {}, but it is built for {other}",
                host_platform()
            ),
        ),
    ];
    for (bytes, expected) in cases {
        let sandbox = Sandbox::new();
        let folder = package_folder(&sandbox, false);
        std::fs::write(library_file(&folder), &bytes).unwrap();
        let sha256 = pi_hooks_host::packages::verify::sha256_hex(&bytes);
        edit_package_json(&folder, |json| {
            json["piHooks"]["manifest"]["libraries"][host_platform()]["sha256"] = sha256.into();
        });
        let error = install_refused(&sandbox, &folder);
        assert!(error.contains(&expected), "{error}");
        assert!(error.contains("package protected-paths 0.1.0"), "{error}");
    }
}

/// The ABI field that forged the capability prompt (escape sequences that clear the screen
/// and print other capabilities): refused, and shown escaped; no ESC byte reaches the
/// terminal.
#[test]
fn an_abi_field_with_escape_sequences_is_refused_and_shown_escaped() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    let forged = "1.5-\u{1b}[2J\u{1b}[H  capabilities:\n    read: nothing\n    network: no";
    edit_package_json(&folder, |json| {
        json["piHooks"]["manifest"]["libraries"][host_platform()]["abi"] = forged.into();
    });
    let output = sandbox.run(&["install", folder.to_str().unwrap(), "--yes"]);
    assert!(!output.status.success());
    nothing_installed(&sandbox);
    assert!(
        !output.stdout.contains(&0x1b) && !output.stderr.contains(&0x1b),
        "an ESC byte reached the terminal: {output:?}"
    );
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains(&format!(
            "the {} library's abi \"1.5-\\e[2J\\e[H  capabilities:\\n    read: nothing\\n    network: no\" is not an ABI version of the form MAJOR.MINOR (digits only)",
            host_platform()
        )),
        "{error}"
    );
    // `inspect` refuses it the same way.
    let output = sandbox.run(&["inspect", folder.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(!output.stdout.contains(&0x1b) && !output.stderr.contains(&0x1b));
}

/// A name or version npm and the store cannot take (reserved store names, a `+` that would
/// be another package's folder, escape sequences) is refused before anything is written.
#[test]
fn a_name_or_version_the_store_cannot_take() {
    for name in [
        ".lock",
        ".staging-x",
        ".old-mk-1",
        ".",
        "..",
        "@acme+gate",
        "@acme gate",
        "gate\u{1b}[2J",
    ] {
        let sandbox = Sandbox::new();
        let folder = package_folder(&sandbox, false);
        edit_package_json(&folder, |json| json["name"] = name.into());
        let error = install_refused(&sandbox, &folder);
        assert!(
            error.contains("package.json's `name`")
                && error.contains("is not a valid package name"),
            "{name:?}: {error}"
        );
        assert!(!error.contains('\u{1b}'), "{error}");
    }
    for version in ["1.0", "1.0.0-\u{1b}[2J", "latest"] {
        let sandbox = Sandbox::new();
        let folder = package_folder(&sandbox, false);
        edit_package_json(&folder, |json| json["version"] = version.into());
        let error = install_refused(&sandbox, &folder);
        assert!(
            error.contains("package.json's `version`")
                && error.contains("MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]"),
            "{version:?}: {error}"
        );
        assert!(!error.contains('\u{1b}'), "{error}");
    }
    // A platform key that is no platform.
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    edit_package_json(&folder, |json| {
        let libraries = &mut json["piHooks"]["manifest"]["libraries"];
        libraries["linux\u{1b}[31m"] = libraries[host_platform()].clone();
    });
    let error = install_refused(&sandbox, &folder);
    assert!(
        error.contains("has the key \"linux\\e[31m\", which is not a platform name"),
        "{error}"
    );
}

/// Capabilities a grant cannot use are refused at install naming the field and the entry;
/// `..` is resolved before a path is shown, and one that leaves its variable's folder
/// (`${data}/../../..` is the agent directory's parent) is refused.
#[test]
fn unusable_capabilities_are_refused_naming_the_field() {
    let cases = [
        ("write", "*", "has a glob"),
        ("read", "${cwd}/src/*.rs", "has a glob"),
        ("read", "/etc/[ab]", "has a glob"),
        ("read", "notes", "is not an absolute path"),
        ("read", "${work}/x", "uses the unknown variable ${work}"),
        ("write", "", "is empty"),
        ("exec", "", "is empty; name a program"),
        (
            "write",
            "${data}/../../..",
            "leaves ${data} once `..` is resolved",
        ),
        ("read", "${data}/..", "leaves ${data} once `..` is resolved"),
        (
            "read",
            "~/../other",
            "leaves ~ (your home) once `..` is resolved",
        ),
    ];
    for (field, entry, why) in cases {
        let sandbox = Sandbox::new();
        let folder = package_folder(&sandbox, false);
        edit_package_json(&folder, |json| {
            json["piHooks"]["manifest"]["capabilities"] = serde_json::json!({ field: [entry] });
        });
        let error = install_refused(&sandbox, &folder);
        assert!(
            error.contains(&format!("`capabilities.{field}` entry {entry:?} {why}")),
            "{field} {entry:?}: {error}"
        );
        assert!(error.contains("package.json"), "{error}");
    }
    // A path with `..` that stays inside is shown and recorded resolved.
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    edit_package_json(&folder, |json| {
        json["piHooks"]["manifest"]["capabilities"] =
            serde_json::json!({ "write": ["${data}/cache/../state"], "read": ["${cwd}/./src/"] });
    });
    let output = sandbox.run(&["install", folder.to_str().unwrap(), "--yes"]);
    assert!(output.status.success(), "{output:?}");
    let shown = String::from_utf8_lossy(&output.stderr);
    assert!(shown.contains("write: ${data}/state"), "{shown}");
    assert!(shown.contains("read: ${cwd}/src"), "{shown}");
    assert!(shown.contains("confined to them"), "{shown}");
    let listed = ok(&sandbox, &["list"]);
    assert!(
        listed.contains("capabilities: write: ${data}/state"),
        "{listed}"
    );
}

/// An unrestricted package's install says what it is: unconfined, with everything the user
/// can do (never "confined").
#[test]
fn an_unrestricted_install_says_it_runs_unconfined() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    edit_package_json(&folder, |json| {
        json["piHooks"]["manifest"]["capabilities"] = Value::Null;
    });
    let output = sandbox.run(&["install", folder.to_str().unwrap(), "--yes"]);
    assert!(output.status.success(), "{output:?}");
    let shown = String::from_utf8_lossy(&output.stderr);
    assert!(
        shown.contains("it runs unconfined, with everything your user can do"),
        "{shown}"
    );
    assert!(!shown.contains("confined to them"), "{shown}");
}

/// A git source or ref that would be an option of git's is refused before git runs, and an
/// npm spec that would be one of npm's.
#[test]
fn a_source_that_would_be_an_option_is_refused_before_anything_runs() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root().join("upload-pack-ran");
    let sources = [
        format!("git:--upload-pack=touch${{IFS}}{}", marker.display()),
        format!("git:--upload-pack=touch {}@x@main", marker.display()),
        "git:example.invalid/a/b@--orphan".to_owned(),
        "npm:--global".to_owned(),
    ];
    for source in &sources {
        let error = refused(&sandbox, &["install", source, "--yes"]);
        assert!(error.contains("cannot start with `-`"), "{source}: {error}");
        nothing_installed(&sandbox);
    }
    assert!(!marker.exists(), "git ran the upload-pack program");
}

/// A package pi installed (here a local folder in the user's `packages`, as `pi install
/// ./folder` records it) was never checked by an install of pi-hooks': at each load its
/// library must be the plugin its manifest names, even with a matching SHA-256, before any of
/// it runs.
#[test]
fn a_package_pi_installed_whose_library_is_another_plugin_does_not_load() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    std::fs::create_dir_all(sandbox.agent_dir()).unwrap();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        serde_json::json!({ "packages": [folder] }).to_string(),
    )
    .unwrap();
    assert_eq!(loaded_names(&sandbox.list_json(&[])), ["protected-paths"]);
    // Another plugin's library in its place, the manifest's SHA-256 made to match.
    let other = c_example_plugin(&sandbox.lib(), "permission-gate-c", "permission_gate");
    let bytes = std::fs::read(&other).unwrap();
    std::fs::write(library_file(&folder), &bytes).unwrap();
    let sha256 = pi_hooks_host::plugin_files::trust::sha256_hex(&bytes);
    edit_package_json(&folder, |json| {
        json["piHooks"]["manifest"]["libraries"][host_platform()]["sha256"] = sha256.into();
    });
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report}");
    let error = report["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.contains(
            "is the plugin \"permission-gate-c\", but the manifest names \"protected-paths\""
        ),
        "{error}"
    );
}

/// A gzip-compressed tarball of `(header, data)` entries, each header's checksum set here
/// (its size is left as given, so it may differ from the data's).
fn crafted_tgz(path: &Path, entries: Vec<(tar::Header, Vec<u8>)>) {
    let file = std::fs::File::create(path).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    for (mut header, data) in entries {
        header.set_cksum();
        builder.append(&header, data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
}

fn crafted_header(name: &str, kind: tar::EntryType, size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_path(name).unwrap();
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(0o644);
    header
}

/// A pax extended header whose `size` record says `size`.
fn pax_size(size: u64) -> (tar::Header, Vec<u8>) {
    let body = format!(" size={size}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    let data = format!("{len}{body}").into_bytes();
    (
        crafted_header("PaxHeader", tar::EntryType::XHeader, data.len() as u64),
        data,
    )
}

fn elapsed_below(start: std::time::Instant, seconds: u64) {
    assert!(
        start.elapsed() < std::time::Duration::from_secs(seconds),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn pax_size_records_count_against_the_size_caps() {
    let json = br#"{"name":"bomb","version":"1.0.0"}"#.to_vec();
    // Each entry's header says 10 bytes; its pax record (which the tar reader follows) says
    // 40,000, and the data is there: four of them are over a package cap of 100,000 bytes.
    let sandbox = Sandbox::new();
    let tgz = sandbox.root().join("bomb.tgz");
    let mut entries = vec![(
        crafted_header(
            "package/package.json",
            tar::EntryType::Regular,
            json.len() as u64,
        ),
        json.clone(),
    )];
    for i in 0..4 {
        entries.push(pax_size(40_000));
        entries.push((
            crafted_header(&format!("package/f{i}"), tar::EntryType::Regular, 10),
            vec![0u8; 40_000],
        ));
    }
    crafted_tgz(&tgz, entries);
    let start = std::time::Instant::now();
    let output = sandbox
        .command(&["install", tgz.to_str().unwrap(), "--yes"])
        .env("PI_HOOKS_PACKAGE_MAX_BYTES", "100000")
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        error.contains("bomb.tgz is over the limit of 100000 bytes uncompressed"),
        "{error}"
    );
    nothing_installed(&sandbox);
    elapsed_below(start, 20);
    // A pax size of 1 TiB behind a 10-byte header, with the default caps: refused at its
    // header, before any of it is written.
    let sandbox = Sandbox::new();
    let tgz = sandbox.root().join("bomb.tgz");
    crafted_tgz(
        &tgz,
        vec![
            (
                crafted_header(
                    "package/package.json",
                    tar::EntryType::Regular,
                    json.len() as u64,
                ),
                json,
            ),
            pax_size(1 << 40),
            (
                crafted_header("package/big", tar::EntryType::Regular, 10),
                vec![0u8; 1 << 20],
            ),
        ],
    );
    let start = std::time::Instant::now();
    let error = install_refused(&sandbox, &tgz);
    assert!(
        error.contains(
            "the entry \"package/big\" is 1099511627776 bytes, over the limit of 67108864 per file"
        ),
        "{error}"
    );
    elapsed_below(start, 20);
}

#[test]
fn a_bad_gzip_checksum_or_a_truncated_package_is_damaged() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    let good = std::fs::read(&tgz).unwrap();
    // The gzip trailer: CRC-32, then the length; the tar data before it is intact.
    let mut bad = good.clone();
    let at = bad.len() - 8;
    bad[at] ^= 0xff;
    let truncated = good[..good.len() - 6].to_vec();
    for bytes in [bad, truncated] {
        let sandbox = Sandbox::new();
        let tgz = sandbox.root().join("protected-paths-0.1.0.tgz");
        std::fs::write(&tgz, bytes).unwrap();
        let error = install_refused(&sandbox, &tgz);
        assert!(
            error.contains("protected-paths-0.1.0.tgz is damaged"),
            "{error}"
        );
        assert!(error.contains("download or pack it again"), "{error}");
    }
    // As packed, it installs.
    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
}

#[test]
fn a_failed_write_says_where_and_why_not_that_the_package_is_damaged() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    // No file can grow past one block (EFBIG), as on a full disk; SIGXFSZ is ignored
    // so the write fails instead of killing the process.
    let inner = sandbox.command(&["install", tgz.to_str().unwrap(), "--yes"]);
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 1; exec \"$@\"")
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args())
        .current_dir(sandbox.project());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let output = command.output().unwrap();
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{error}");
    assert!(error.contains("could not write the entry"), "{error}");
    assert!(
        error.contains(
            sandbox
                .agent_dir()
                .join("pi-hooks/packages")
                .to_str()
                .unwrap()
        ),
        "{error}"
    );
    assert!(error.contains("File too large"), "{error}");
    assert!(!error.contains("damaged"), "{error}");
    nothing_installed(&sandbox);
}

/// `pi-hooks inspect FOLDER` whose library is `make`'s kind of file: refused within a few
/// seconds, naming the package and the library, and nothing installed.
fn inspect_refuses_a_library_that(make: impl FnOnce(&Path), expected: &str) {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    let library = library_file(&folder);
    std::fs::remove_file(&library).unwrap();
    make(&library);
    let output = pi_hooks_tests::output_within(
        sandbox.command(&["inspect", folder.to_str().unwrap()]),
        std::time::Duration::from_secs(30),
    );
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{error}");
    assert!(error.contains("package protected-paths 0.1.0"), "{error}");
    assert!(
        error.contains(&format!(
            "its {} library lib/{}/libprotected_paths.so is {expected}, not a regular file",
            host_platform(),
            host_platform()
        )),
        "{error}"
    );
    nothing_installed(&sandbox);
    // Nor does an install of the folder read it.
    let output = pi_hooks_tests::output_within(
        sandbox.command(&["install", folder.to_str().unwrap(), "--yes"]),
        std::time::Duration::from_secs(30),
    );
    assert!(!output.status.success());
    nothing_installed(&sandbox);
}

#[test]
fn inspect_of_a_folder_whose_library_is_a_link_to_dev_zero() {
    inspect_refuses_a_library_that(
        |library| std::os::unix::fs::symlink("/dev/zero", library).unwrap(),
        "a character device",
    );
}

#[test]
fn inspect_of_a_folder_whose_library_is_a_fifo() {
    inspect_refuses_a_library_that(
        |library| {
            let status = std::process::Command::new("mkfifo")
                .arg(library)
                .status()
                .unwrap();
            assert!(status.success());
        },
        "a FIFO (named pipe)",
    );
}

#[test]
fn inspect_escapes_what_the_package_says_and_calls_capabilities_its_grant() {
    let sandbox = Sandbox::new();
    let folder = package_folder(&sandbox, false);
    edit_package_json(&folder, |json| {
        let manifest = &mut json["piHooks"]["manifest"];
        manifest["plugin"]["description"] = "calm\u{1b}[2J\u{1b}[1Afake".into();
        manifest["capabilities"] = serde_json::json!({"read": ["${cwd}/\u{202e}x"]});
    });
    let shown = ok(&sandbox, &["inspect", folder.to_str().unwrap()]);
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{202e}'),
        "{shown:?}"
    );
    assert!(shown.contains("calm\\e[2J\\e[1Afake"), "{shown}");
    assert!(shown.contains("\\u{202e}x"), "{shown}");
    assert!(
        shown.contains("capabilities (accepted at install, they are its grant: on Linux it runs isolated and confined to them):"),
        "{shown}"
    );
    assert!(!shown.contains("not yet enforced"), "{shown}");
    // A platform key or an ABI that is not what it must be is refused, and shown escaped.
    edit_package_json(&folder, |json| {
        let manifest = &mut json["piHooks"]["manifest"];
        let mut library = manifest["libraries"][host_platform()].clone();
        library["abi"] = "1.5-\u{1b}[31mfake".into();
        manifest["libraries"]["evil\u{1b}[1A"] = library;
    });
    let output = sandbox.run(&["inspect", folder.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(!output.stdout.contains(&0x1b) && !output.stderr.contains(&0x1b));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("evil\\e[1A") || error.contains("1.5-\\e[31mfake"),
        "{error}"
    );
    nothing_installed(&sandbox);
}
