//! `pi-hooks keygen`'s default folder and `pack --sign` with no value (issue 34 item 10): the
//! key pair goes under the user's config (`$XDG_CONFIG_HOME/pi-hooks/keys/`, else
//! `~/.config/pi-hooks/keys/`; the folder 0700, the secret key 0600), never the current folder;
//! an existing pair is kept unless `--force`; `pack LIB --sign` (in any order) signs with it and
//! `install` verifies the signature against it; no default key is a clear error.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pi_hooks_tests::{Sandbox, c_example_plugin};
use serde_json::Value;

/// `pi-hooks ARGS` in `sandbox`'s project folder with `XDG_CONFIG_HOME` set to `xdg` (or unset).
fn command(sandbox: &Sandbox, xdg: Option<&Path>, args: &[&str]) -> Command {
    let mut command = sandbox.command(args);
    match xdg {
        Some(xdg) => command.env("XDG_CONFIG_HOME", xdg),
        None => command.env_remove("XDG_CONFIG_HOME"),
    };
    command.env_remove("PI_HOOKS_KEY_PASSWORD");
    command
}

fn run(sandbox: &Sandbox, xdg: Option<&Path>, args: &[&str]) -> Output {
    command(sandbox, xdg, args).output().expect("run pi-hooks")
}

fn ok(sandbox: &Sandbox, xdg: Option<&Path>, args: &[&str]) -> String {
    let output = run(sandbox, xdg, args);
    assert!(
        output.status.success(),
        "pi-hooks {args:?}:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn refused(sandbox: &Sandbox, xdg: Option<&Path>, args: &[&str]) -> String {
    let output = run(sandbox, xdg, args);
    assert!(
        !output.status.success(),
        "pi-hooks {args:?} should fail:\nstdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The base64 public key of a minisign `.pub` file (its second line).
fn public_key(pub_file: &Path) -> String {
    std::fs::read_to_string(pub_file)
        .unwrap()
        .lines()
        .nth(1)
        .expect("a minisign public key file has two lines")
        .to_owned()
}

/// The signer `inspect --json` reports for a package.
fn signer(sandbox: &Sandbox, tgz: &Path) -> String {
    let json: Value = serde_json::from_str(&ok(
        sandbox,
        None,
        &["inspect", "--json", tgz.to_str().unwrap()],
    ))
    .unwrap();
    json["signer"].as_str().unwrap_or_default().to_owned()
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn keygen_writes_under_the_user_config_privately_and_never_overwrites() {
    let sandbox = Sandbox::new();
    let xdg = sandbox.root().join("xdg");
    let stdout = ok(&sandbox, Some(&xdg), &["keygen"]);
    let keys = xdg.join("pi-hooks/keys");
    let (secret, public) = (keys.join("pi-hooks.key"), keys.join("pi-hooks.pub"));
    assert!(secret.is_file() && public.is_file(), "{stdout}");
    assert_eq!(mode(&keys), 0o700, "the keys folder is private");
    assert_eq!(mode(&secret), 0o600, "the secret key is private");
    assert!(
        entries(&sandbox.project()).is_empty(),
        "nothing in the current folder: {:?}",
        entries(&sandbox.project())
    );
    // It says where both files are and what each is for.
    assert!(
        stdout.contains(&format!("secret key: {}", secret.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("public key: {}", public.display())),
        "{stdout}"
    );
    assert!(stdout.contains(&public_key(&public)), "{stdout}");
    assert!(stdout.contains("keep it private"), "{stdout}");
    assert!(stdout.contains("pi-hooks pack LIB --sign"), "{stdout}");
    assert!(stdout.contains("installers pin it"), "{stdout}");

    // A second keygen keeps the key and says how to make another.
    let before = std::fs::read(&secret).unwrap();
    let error = refused(&sandbox, Some(&xdg), &["keygen"]);
    assert!(error.contains(&secret.display().to_string()), "{error}");
    assert!(error.contains("pi-hooks keygen --force"), "{error}");
    assert!(error.contains("pi-hooks keygen --out DIR"), "{error}");
    assert_eq!(std::fs::read(&secret).unwrap(), before, "the key is kept");

    // --force replaces the pair.
    let old_public = public_key(&public);
    ok(&sandbox, Some(&xdg), &["keygen", "--force"]);
    assert_ne!(std::fs::read(&secret).unwrap(), before);
    assert_ne!(public_key(&public), old_public);
    assert_eq!(mode(&secret), 0o600);

    // --out still writes where it is told.
    let elsewhere = sandbox.root().join("elsewhere");
    let stdout = ok(
        &sandbox,
        Some(&xdg),
        &["keygen", "--out", elsewhere.to_str().unwrap()],
    );
    assert!(elsewhere.join("pi-hooks.key").is_file());
    assert!(
        stdout.contains(&format!(
            "--sign={}",
            elsewhere.join("pi-hooks.key").display()
        )),
        "{stdout}"
    );
}

#[test]
fn without_xdg_config_home_the_keys_go_under_home_config() {
    let sandbox = Sandbox::new();
    ok(&sandbox, None, &["keygen"]);
    let keys = sandbox.home().join(".config/pi-hooks/keys");
    assert!(keys.join("pi-hooks.key").is_file());
    assert_eq!(mode(&keys), 0o700);
    assert_eq!(mode(&keys.join("pi-hooks.key")), 0o600);
    assert!(entries(&sandbox.project()).is_empty());
}

/// `pack LIB --sign` signs with the default key whatever the order of the flags, `--sign KEY`
/// and `--sign=KEY` still take a file, and `install` verifies the package against the key.
#[test]
fn pack_sign_with_no_value_uses_the_default_key_and_install_verifies_it() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let lib = library.to_str().unwrap();

    // No default key yet: a clear error, nothing written.
    let error = refused(&sandbox, None, &["pack", lib, "--sign", "--out", "dist"]);
    assert!(
        error.contains("run `pi-hooks keygen` first, or pass --sign=FILE"),
        "{error}"
    );
    assert!(
        error.contains(".config/pi-hooks/keys/pi-hooks.key"),
        "{error}"
    );
    assert!(!sandbox.project().join("dist").exists());

    ok(&sandbox, None, &["keygen"]);
    let default_public = public_key(&sandbox.home().join(".config/pi-hooks/keys/pi-hooks.pub"));
    let packed = |args: &[&str]| -> PathBuf {
        let stdout = ok(&sandbox, None, args);
        let line = stdout.lines().next().expect("pack says what it wrote");
        let tgz = PathBuf::from(line.rsplit(" -> ").next().unwrap());
        sandbox.project().join(tgz)
    };
    // The README's order, --sign before the libraries, and --sign right before one.
    for args in [
        vec!["pack", lib, "--sign", "--out", "dist"],
        vec!["pack", "--sign", "--out", "dist2", lib],
        vec!["pack", "--out", "dist3", "--sign", lib],
    ] {
        let tgz = packed(&args);
        assert!(tgz.is_file(), "{args:?}: {}", tgz.display());
        assert_eq!(signer(&sandbox, &tgz), default_public, "{args:?}");
    }

    // An explicit key file, both spellings.
    let other = sandbox.root().join("other-keys");
    ok(
        &sandbox,
        None,
        &["keygen", "--out", other.to_str().unwrap()],
    );
    let other_key = other.join("pi-hooks.key");
    let other_public = public_key(&other.join("pi-hooks.pub"));
    let with_space = packed(&[
        "pack",
        lib,
        "--out",
        "dist4",
        "--sign",
        other_key.to_str().unwrap(),
    ]);
    assert_eq!(signer(&sandbox, &with_space), other_public);
    let equals = format!("--sign={}", other_key.display());
    let with_equals = packed(&["pack", &equals, lib, "--out", "dist5"]);
    assert_eq!(signer(&sandbox, &with_equals), other_public);

    // install verifies the default-key package and records its signer.
    let tgz = sandbox.project().join("dist/protected-paths-0.1.0.tgz");
    ok(&sandbox, None, &["install", tgz.to_str().unwrap(), "--yes"]);
    let listed = sandbox.list_json(&[]);
    assert_eq!(
        pi_hooks_tests::loaded_names(&listed),
        ["protected-paths"],
        "{listed}"
    );
    // A package changed after signing is refused: the signature really is checked.
    let folder = sandbox.root().join("edited");
    pi_hooks_tests::packages::unpack(&tgz, &folder);
    let json = folder.join("package.json");
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::write(&json, text.replace("\"0.1.0\"", "\"0.1.1\"")).unwrap();
    let error = refused(
        &sandbox,
        None,
        &["install", folder.to_str().unwrap(), "--yes"],
    );
    assert!(error.contains("signature"), "{error}");
}

/// The plugin-author quick start's two signing lines work as written in the README.
#[test]
fn the_readme_s_signing_lines_work_as_written() {
    let readme =
        std::fs::read_to_string(pi_hooks_tests::workspace_root().join("README.md")).unwrap();
    let block = readme
        .split("<!-- quickstart:plugin-author -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /quickstart -->").next())
        .expect("the plugin-author quick start in README.md");
    let command_of = |prefix: &str| -> Vec<String> {
        let line = block
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in the quick start"));
        let command = line.split('#').next().unwrap().trim();
        command
            .split_whitespace()
            .skip(1)
            .map(str::to_owned)
            .collect()
    };
    let keygen = command_of("pi-hooks keygen");
    let pack = command_of("pi-hooks pack");
    let sandbox = Sandbox::new();
    c_example_plugin(&sandbox.project(), "protected-paths", "protected_paths");
    // The quick start's library is libmy_gate.so: the example built under that name.
    std::fs::rename(
        sandbox.project().join("libprotected_paths.so"),
        sandbox.project().join("libmy_gate.so"),
    )
    .unwrap();
    ok(&sandbox, None, &args(&keygen));
    assert!(
        sandbox
            .home()
            .join(".config/pi-hooks/keys/pi-hooks.key")
            .is_file()
    );
    let stdout = ok(&sandbox, None, &args(&pack));
    assert!(
        stdout.contains("dist/protected-paths-0.1.0.tgz"),
        "{stdout}"
    );
    let tgz = sandbox.project().join("dist/protected-paths-0.1.0.tgz");
    assert_eq!(
        signer(&sandbox, &tgz),
        public_key(&sandbox.home().join(".config/pi-hooks/keys/pi-hooks.pub"))
    );
}
