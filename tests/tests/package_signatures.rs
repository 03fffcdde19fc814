//! Signatures over every byte of a package (`pi-hooks.sig`, made by the real `pi-hooks pack
//! --sign`): a file added, changed or removed after signing, npm's `name`/`version` changed
//! under the signature, and an old-format signature are refused at install, at `inspect` and
//! at each load of a package pi loads from its own folder; a lower version needs
//! `--allow-downgrade`, and an unsigned package of the same name from another source needs
//! `--replace`. Each refusal changes nothing.

use std::path::{Path, PathBuf};

use pi_hooks_host::packages::signature::SIGNATURE_FILE;
use pi_hooks_tests::packages::{
    edit_package_json, install_record, install_refused, keygen, ok, pack, refused, tgz_of, unpack,
};
use pi_hooks_tests::{Sandbox, c_example_plugin, loaded_names};
use serde_json::Value;

/// The protected-paths example packed by the real `pi-hooks pack` (signed with a new key when
/// `signed`) into `<root>/<dist>`, and unpacked into `<root>/<dist>-pkg` to edit.
fn packed(sandbox: &Sandbox, dist: &str, signed: bool) -> (PathBuf, PathBuf) {
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let key = signed.then(|| {
        let keys = sandbox.root().join("keys");
        if keys.join("pi-hooks.key").exists() {
            keys.join("pi-hooks.key")
        } else {
            keygen(sandbox, &keys)
        }
    });
    let tgz = pack(
        sandbox,
        &library,
        &sandbox.root().join(dist),
        key.as_deref(),
    );
    let folder = sandbox.root().join(format!("{dist}-pkg"));
    unpack(&tgz, &folder);
    (tgz, folder)
}

/// Asserts the refusal of an edited signed package: it names the package and each part, and
/// says what to do; the same folder as a `.tgz` and `inspect` are refused alike.
fn refused_everywhere(sandbox: &Sandbox, folder: &Path, parts: &[&str]) {
    let error = install_refused(sandbox, folder);
    let tgz = sandbox.root().join("edited.tgz");
    tgz_of(folder, &tgz);
    let from_tgz = install_refused(sandbox, &tgz);
    let inspect = refused(sandbox, &["inspect", tgz.to_str().unwrap()]);
    for error in [&error, &from_tgz, &inspect] {
        assert!(error.contains("package protected-paths"), "{error}");
        assert!(error.contains("does not match its signature"), "{error}");
        assert!(error.contains("get it again from its publisher"), "{error}");
        for part in parts {
            assert!(error.contains(part), "{part}: {error}");
        }
    }
}

#[test]
fn a_signed_package_installs_and_inspect_names_its_signer() {
    let sandbox = Sandbox::new();
    let (tgz, folder) = packed(&sandbox, "dist", true);
    assert!(folder.join(SIGNATURE_FILE).is_file());
    // The signature file is minisign's format; the statement (its trusted comment) lists
    // every file but itself, package.json and pi-extension.js included.
    let signature = std::fs::read_to_string(folder.join(SIGNATURE_FILE)).unwrap();
    let statement: Value = serde_json::from_str(
        signature
            .lines()
            .find_map(|l| l.strip_prefix("trusted comment: "))
            .expect("a trusted comment"),
    )
    .unwrap();
    assert_eq!(statement["name"], "protected-paths");
    assert_eq!(statement["version"], "0.1.0");
    let files: Vec<&str> = statement["files"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        files,
        [
            format!(
                "lib/{}/libprotected_paths.so",
                pi_hooks_host::packages::platform::host_platform()
            )
            .as_str(),
            "package.json",
            "pi-extension.js"
        ]
    );
    let json: Value =
        serde_json::from_str(&ok(&sandbox, &["inspect", "--json", tgz.to_str().unwrap()])).unwrap();
    assert!(json["signer"].as_str().unwrap().starts_with("RW"), "{json}");
    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    assert_eq!(loaded_names(&sandbox.list_json(&[])), ["protected-paths"]);
}

#[test]
fn a_file_added_or_changed_after_signing_is_refused_by_name() {
    let sandbox = Sandbox::new();
    let (_, folder) = packed(&sandbox, "dist", true);
    // The pi extension pi runs, changed.
    let extension = folder.join("pi-extension.js");
    let original = std::fs::read(&extension).unwrap();
    let mut evil = original.clone();
    evil.extend_from_slice(
        b"\nimport('node:child_process').then(c => c.execSync('touch /tmp/x'));\n",
    );
    std::fs::write(&extension, &evil).unwrap();
    refused_everywhere(
        &sandbox,
        &folder,
        &["pi-extension.js was changed after it was signed"],
    );
    // A file of the attacker's added beside the signed ones.
    std::fs::write(&extension, &original).unwrap();
    std::fs::create_dir_all(folder.join("lib/extra")).unwrap();
    std::fs::write(folder.join("lib/extra/evil.js"), b"console.log('hi')").unwrap();
    refused_everywhere(
        &sandbox,
        &folder,
        &["lib/extra/evil.js was added after it was signed (the signature does not cover it)"],
    );
    // A bridge of the attacker's where pi-extension.js imports it from: in a package (not
    // yet installed by npm) `node_modules/` is the package's own, and covered.
    std::fs::remove_dir_all(folder.join("lib/extra")).unwrap();
    std::fs::create_dir_all(folder.join("node_modules/pi-hooks/bridge")).unwrap();
    std::fs::write(
        folder.join("node_modules/pi-hooks/bridge/index.ts"),
        b"export default () => {}",
    )
    .unwrap();
    refused_everywhere(
        &sandbox,
        &folder,
        &["node_modules/pi-hooks/bridge/index.ts was added after it was signed"],
    );
    // As signed, it installs.
    std::fs::remove_dir_all(folder.join("node_modules")).unwrap();
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
}

#[test]
fn npm_s_name_and_version_changed_under_the_signature_are_refused() {
    let sandbox = Sandbox::new();
    let (_, folder) = packed(&sandbox, "dist", true);
    edit_package_json(&folder, |json| {
        json["name"] = "payments-gate".into();
        json["version"] = "9.9.9".into();
    });
    let error = install_refused(&sandbox, &folder);
    for part in [
        "package payments-gate 9.9.9",
        "package.json says payments-gate 9.9.9, but the signature is for protected-paths 0.1.0",
        "package.json was changed after it was signed",
    ] {
        assert!(error.contains(part), "{part}: {error}");
    }
    // The version alone.
    let (_, folder) = packed(&sandbox, "dist2", true);
    edit_package_json(&folder, |json| json["version"] = "0.0.1".into());
    let error = install_refused(&sandbox, &folder);
    assert!(
        error.contains("package.json says protected-paths 0.0.1, but the signature is for protected-paths 0.1.0"),
        "{error}"
    );
}

#[test]
fn a_removed_file_or_signature_is_refused() {
    let sandbox = Sandbox::new();
    let (_, folder) = packed(&sandbox, "dist", true);
    std::fs::remove_file(folder.join("pi-extension.js")).unwrap();
    refused_everywhere(
        &sandbox,
        &folder,
        &["pi-extension.js was signed but is missing"],
    );
    // The signature file removed while package.json still names the signer.
    let (_, folder) = packed(&sandbox, "dist2", true);
    std::fs::remove_file(folder.join(SIGNATURE_FILE)).unwrap();
    let error = install_refused(&sandbox, &folder);
    assert!(
        error.contains("names a signer (`piHooks.publicKey` in package.json) but its signature file pi-hooks.sig is missing"),
        "{error}"
    );
}

/// Signs `folder`'s manifest as pi-hooks did before (`piHooks.signature` over the manifest's
/// compact JSON) with the key in `keys`, and removes the new signature file.
fn sign_the_old_way(folder: &Path, keys: &Path) {
    let text = std::fs::read_to_string(keys.join("pi-hooks.key")).unwrap();
    let secret = minisign::SecretKeyBox::from_string(&text)
        .unwrap()
        .into_secret_key(Some(String::new()))
        .unwrap();
    let public = minisign::PublicKey::from_secret_key(&secret).unwrap();
    edit_package_json(folder, |json| {
        let manifest = serde_json::to_vec(&json["piHooks"]["manifest"]).unwrap();
        let signature = minisign::sign(
            Some(&public),
            &secret,
            std::io::Cursor::new(manifest),
            None,
            None,
        )
        .unwrap();
        json["piHooks"]["signature"] = signature.into_string().into();
        json["piHooks"]["publicKey"] = public.to_base64().into();
    });
    std::fs::remove_file(folder.join(SIGNATURE_FILE)).unwrap();
}

#[test]
fn an_old_format_signature_is_refused_with_the_repack_command() {
    let sandbox = Sandbox::new();
    let (_, folder) = packed(&sandbox, "dist", true);
    sign_the_old_way(&folder, &sandbox.root().join("keys"));
    let error = install_refused(&sandbox, &folder);
    for part in [
        "package protected-paths 0.1.0",
        "signed in the old format (`piHooks.signature` in package.json, over the manifest only)",
        "repack it with this pi-hooks (`pi-hooks pack --sign KEY`)",
    ] {
        assert!(error.contains(part), "{part}: {error}");
    }
    let error = refused(&sandbox, &["inspect", folder.to_str().unwrap()]);
    assert!(error.contains("old format"), "{error}");
}

#[test]
fn a_package_pi_loads_from_its_folder_is_checked_at_each_load() {
    // A local package folder in the user's `packages` (as `pi install ./folder` records it):
    // pi-hooks loads it from its own files, so the signature is checked at each load.
    let sandbox = Sandbox::new();
    let (_, folder) = packed(&sandbox, "dist", true);
    std::fs::create_dir_all(sandbox.agent_dir()).unwrap();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        serde_json::json!({ "packages": [folder] }).to_string(),
    )
    .unwrap();
    // npm's dependencies and git's folder are not the package.
    std::fs::create_dir_all(folder.join("node_modules/pi-hooks")).unwrap();
    std::fs::write(folder.join("node_modules/pi-hooks/index.js"), b"dep").unwrap();
    std::fs::create_dir_all(folder.join(".git")).unwrap();
    std::fs::write(folder.join(".git/HEAD"), b"ref: refs/heads/main").unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report}");
    // Once its files are two seconds old, a verified signature is remembered under the agent
    // directory (with each file's identity), so an unchanged package is not verified again.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let signature = std::fs::canonicalize(folder.join("pi-hooks.sig")).unwrap();
    let record = sandbox
        .agent_dir()
        .join("pi-hooks/records/user/verified")
        .join(format!(
            "{}.json",
            pi_hooks_host::plugin_files::trust::sha256_hex(
                signature.as_os_str().as_encoded_bytes()
            )
        ));
    assert!(!record.exists());
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report}");
    assert!(record.is_file(), "the check was not remembered");
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report}");
    // A file added afterwards (the record then stands for nothing): not loaded, with the
    // reason; and a changed one the same.
    std::fs::write(folder.join("payload.js"), b"evil").unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report}");
    let error = report["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("payload.js was added after it was signed"),
        "{error}"
    );
    std::fs::remove_file(folder.join("payload.js")).unwrap();
    let extension = folder.join("pi-extension.js");
    let mut bytes = std::fs::read(&extension).unwrap();
    bytes.extend_from_slice(b"\n// changed\n");
    std::fs::write(&extension, bytes).unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report}");
    let error = report["errors"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("pi-extension.js was changed after it was signed"),
        "{error}"
    );
}

#[test]
fn a_lower_version_needs_allow_downgrade() {
    let sandbox = Sandbox::new();
    let (_, folder) = packed(&sandbox, "dist", false);
    edit_package_json(&folder, |json| json["version"] = "0.2.0".into());
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
    let settings = std::fs::read(sandbox.agent_dir().join("settings.json")).unwrap();
    let record = sandbox
        .agent_dir()
        .join("pi-hooks/records/user/install/protected-paths.json");
    let before = std::fs::read(&record).unwrap();
    edit_package_json(&folder, |json| json["version"] = "0.1.5".into());
    for args in [
        vec!["install", folder.to_str().unwrap(), "--yes"],
        vec!["update", "protected-paths", "--yes"],
    ] {
        let error = refused(&sandbox, &args);
        for part in [
            "protected-paths 0.2.0 is installed, and this is the lower version 0.1.5",
            "refused, nothing was changed",
            "--allow-downgrade",
        ] {
            assert!(error.contains(part), "{part}: {error}");
        }
        assert_eq!(
            std::fs::read(sandbox.agent_dir().join("settings.json")).unwrap(),
            settings
        );
        assert_eq!(std::fs::read(&record).unwrap(), before);
    }
    ok(
        &sandbox,
        &["update", "protected-paths", "--yes", "--allow-downgrade"],
    );
    assert_eq!(sandbox.list_json(&[])["packages"][0]["version"], "0.1.5");
    // The same version again, or a higher one, needs nothing.
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
    edit_package_json(&folder, |json| json["version"] = "0.3.0".into());
    ok(&sandbox, &["install", folder.to_str().unwrap(), "--yes"]);
}

#[test]
fn an_unsigned_package_from_another_source_needs_replace() {
    let sandbox = Sandbox::new();
    let (first, _) = packed(&sandbox, "a", false);
    let (other, _) = packed(&sandbox, "b", false);
    ok(&sandbox, &["install", first.to_str().unwrap(), "--yes"]);
    let settings = std::fs::read(sandbox.agent_dir().join("settings.json")).unwrap();
    let error = refused(&sandbox, &["install", other.to_str().unwrap(), "--yes"]);
    let question = format!(
        "protected-paths 0.1.0 is installed from {}, and this package of the same name comes from another source, {}",
        first.display(),
        other.display()
    );
    for part in [&question, "refused, nothing was changed", "--replace"] {
        assert!(error.contains(part), "{part}: {error}");
    }
    assert_eq!(
        std::fs::read(sandbox.agent_dir().join("settings.json")).unwrap(),
        settings
    );
    // The same source again needs nothing; the other one with --replace.
    ok(&sandbox, &["install", first.to_str().unwrap(), "--yes"]);
    ok(
        &sandbox,
        &["install", other.to_str().unwrap(), "--yes", "--replace"],
    );
    let record = install_record(&sandbox, "protected-paths");
    assert_eq!(record["origin"], other.display().to_string());
}

#[test]
fn a_signed_package_from_another_source_by_the_same_signer_needs_nothing_more() {
    let sandbox = Sandbox::new();
    let (first, _) = packed(&sandbox, "a", true);
    let (other, _) = packed(&sandbox, "b", true);
    ok(&sandbox, &["install", first.to_str().unwrap(), "--yes"]);
    ok(&sandbox, &["install", other.to_str().unwrap(), "--yes"]);
}
