//! Helpers for the package tests: pack real plugins with the real `pi-hooks pack`, unpack
//! them into folders to edit, write tarballs with hand-made (hostile) entries.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::Sandbox;

/// Runs `pi-hooks` in `sandbox` and asserts it succeeded; returns stdout.
pub fn ok(sandbox: &Sandbox, args: &[&str]) -> String {
    let output = sandbox.run(args);
    assert!(
        output.status.success(),
        "pi-hooks {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `pi-hooks` in `sandbox`, asserts it failed, and returns stderr.
pub fn refused(sandbox: &Sandbox, args: &[&str]) -> String {
    let output: Output = sandbox.run(args);
    assert!(
        !output.status.success(),
        "pi-hooks {args:?} should have failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `pi-hooks keygen --out <dir>`: the secret key's path.
pub fn keygen(sandbox: &Sandbox, dir: &Path) -> PathBuf {
    ok(sandbox, &["keygen", "--out", dir.to_str().unwrap()]);
    dir.join("pi-hooks.key")
}

/// `pi-hooks pack <library> --out <out> [--sign key]`: the package's path.
pub fn pack(sandbox: &Sandbox, library: &Path, out: &Path, key: Option<&Path>) -> PathBuf {
    let mut args = vec![
        "pack",
        library.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(key) = key {
        args.extend(["--sign", key.to_str().unwrap()]);
    }
    let stdout = ok(sandbox, &args);
    let line = stdout.lines().next().expect("pack says what it wrote");
    PathBuf::from(line.rsplit(" -> ").next().expect("the package path"))
}

/// Unpacks a package tarball into `dir` (its `package/` contents at `dir`'s top).
pub fn unpack(tgz: &Path, dir: &Path) {
    let file = std::fs::File::open(tgz).expect("open the package");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let path = entry.path().expect("path").into_owned();
        let relative = path.strip_prefix("package").expect("under package/");
        let target = dir.join(relative);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        entry.unpack(&target).expect("unpack");
    }
}

/// Reads, changes and writes `package.json` in a package folder.
pub fn edit_package_json(dir: &Path, change: impl FnOnce(&mut Value)) {
    let path = dir.join("package.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    change(&mut value);
    std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

/// One entry of a hand-made tarball.
pub struct RawEntry<'a> {
    /// The name, written into the header as is (no checks).
    pub name: &'a [u8],
    /// The entry type.
    pub kind: tar::EntryType,
    /// The contents (regular files).
    pub data: &'a [u8],
    /// A link target (links).
    pub link: &'a [u8],
}

/// Writes a gzip-compressed tarball with exactly these entries, bypassing the checks the
/// tar crate's builder makes on names.
pub fn raw_tgz(path: &Path, entries: &[RawEntry<'_>]) {
    let file = std::fs::File::create(path).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    for entry in entries {
        let mut header = tar::Header::new_old();
        {
            let old = header.as_old_mut();
            old.name[..entry.name.len()].copy_from_slice(entry.name);
            old.linkname[..entry.link.len()].copy_from_slice(entry.link);
        }
        header.set_entry_type(entry.kind);
        header.set_size(entry.data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, entry.data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap();
}

/// The user's settings.json in `sandbox`, `Null` when there is none.
pub fn user_settings(sandbox: &Sandbox) -> Value {
    std::fs::read(sandbox.agent_dir().join("settings.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or(Value::Null)
}

/// The folder of the user's installed package `name`.
pub fn installed_dir(sandbox: &Sandbox, name: &str) -> PathBuf {
    sandbox.agent_dir().join("pi-hooks/packages").join(name)
}

/// The install record pi-hooks keeps of package `name` for the user (under the agent
/// directory: `pi-hooks/records/user/install/<name with / as +>.json`).
pub fn install_record(sandbox: &Sandbox, name: &str) -> Value {
    let path = sandbox
        .agent_dir()
        .join("pi-hooks/records/user/install")
        .join(format!("{}.json", name.replace('/', "+")));
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// Writes a package tarball of the folder `dir` (its files under `package/`), as a publisher
/// would ship an edited package.
pub fn tgz_of(dir: &Path, out: &Path) {
    let file = std::fs::File::create(out).unwrap();
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::fast(),
    ));
    builder.append_dir_all("package", dir).unwrap();
    builder.into_inner().unwrap().finish().unwrap();
}

/// Nothing was installed for the user: no settings, nothing in the store but its lock.
pub fn nothing_installed(sandbox: &Sandbox) {
    assert_eq!(user_settings(sandbox), Value::Null);
    let store = sandbox.agent_dir().join("pi-hooks/packages");
    if store.exists() {
        let left: Vec<String> = std::fs::read_dir(&store)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != ".lock")
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// `install SOURCE --yes` is refused and installs nothing; returns the error.
pub fn install_refused(sandbox: &Sandbox, source: &Path) -> String {
    let error = refused(sandbox, &["install", source.to_str().unwrap(), "--yes"]);
    nothing_installed(sandbox);
    error
}
