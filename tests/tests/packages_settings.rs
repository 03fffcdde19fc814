//! settings.json through the real binary: `install` and `remove` change the `packages` value
//! and no other byte (big numbers, `1E3`, odd spacing, nested objects, unicode), write a
//! symlinked user settings file through to its target, refuse a file that is not plain JSON
//! (a comment, a trailing comma) with its line and column and leave it as it was; and a
//! project's `npmCommand` never runs, for `install npm:`, `install -l npm:`, `update` or
//! `remove`.

use std::path::{Path, PathBuf};

use pi_hooks_tests::packages::{installed_dir, ok, pack, refused};
use pi_hooks_tests::{Sandbox, c_example_plugin, error_for};

/// The settings text before `packages`' value, after it, and its value.
const HEAD: &str = "{\n  \"big\":   123456789012345678901234567890,\n  \"e\" : 1E3,  \"neg\": -0.50e-7,\n\t\"nested\": {\"deep\": {\"list\": [1.0, true, null, {}], \"text\": \"caf\\u00e9 \u{2615} \u{65e5}\u{672c}\"}},\n  \"packages\": ";
const LIST: &str =
    "[\n    \"./not-a-package\",\n    {\"source\": \"./other\",   \"extensions\": []}\n  ]";
const TAIL: &str = ",\n  \"zeta\"  :  \"\u{1F600} last\"\n}\n";

/// A packed example plugin (`protected-paths 0.1.0`).
fn package(sandbox: &Sandbox) -> PathBuf {
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    pack(sandbox, &library, &sandbox.root().join("dist"), None)
}

fn text(path: &Path) -> String {
    String::from_utf8(std::fs::read(path).unwrap()).unwrap()
}

/// Asserts `after` is `HEAD`, a list holding `LIST`'s entries as written plus `added`, `TAIL`.
fn only_packages_changed(after: &str, added: &str) {
    assert!(
        after.starts_with(HEAD),
        "the bytes before `packages` changed:\n{after}"
    );
    assert!(
        after.ends_with(TAIL),
        "the bytes after `packages` changed:\n{after}"
    );
    let list = &after[HEAD.len()..after.len() - TAIL.len()];
    assert!(
        list.contains("\"./not-a-package\",\n    {\"source\": \"./other\",   \"extensions\": []}"),
        "the entries already listed changed:\n{list}"
    );
    assert!(list.contains(&format!("\"{added}\"")), "{list}");
}

#[test]
fn install_and_remove_change_no_byte_outside_packages() {
    let sandbox = Sandbox::new();
    let tgz = package(&sandbox);
    let settings = sandbox.agent_dir().join("settings.json");
    let original = format!("{HEAD}{LIST}{TAIL}");
    std::fs::write(&settings, &original).unwrap();

    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    let folder = installed_dir(&sandbox, "protected-paths");
    only_packages_changed(&text(&settings), &folder.display().to_string());

    ok(&sandbox, &["remove", "protected-paths"]);
    assert_eq!(
        text(&settings),
        original,
        "remove gives back the file as it was"
    );
}

#[test]
fn a_symlinked_settings_file_is_written_at_its_target_and_stays_a_link() {
    let sandbox = Sandbox::new();
    let tgz = package(&sandbox);
    let dotfiles = sandbox.root().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("pi-settings.json");
    let original = format!("{HEAD}{LIST}{TAIL}");
    std::fs::write(&target, &original).unwrap();
    let link = sandbox.agent_dir().join("settings.json");
    std::os::unix::fs::symlink("../../../dotfiles/pi-settings.json", &link).unwrap();

    ok(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
    assert!(
        std::fs::symlink_metadata(&link).unwrap().is_symlink(),
        "the link stays a link"
    );
    let folder = installed_dir(&sandbox, "protected-paths");
    only_packages_changed(&text(&target), &folder.display().to_string());
    let left: Vec<String> = std::fs::read_dir(&dotfiles)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        ["pi-settings.json"],
        "no temporary file is left beside the target"
    );

    ok(&sandbox, &["remove", "protected-paths"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(text(&target), original);
}

#[test]
fn a_settings_file_that_is_not_plain_json_is_refused_with_its_line_and_column() {
    let cases = [
        (
            "{\n  \"e\": 1E3,\n  // my note\n  \"packages\": []\n}\n",
            ":3:3: not valid JSON: Comments are not allowed",
            "line 3, column 3: Comments are not allowed",
        ),
        (
            "{\n  \"e\": 1E3,\n  \"packages\": [],\n}\n",
            ":3:17: not valid JSON: Trailing commas are not allowed",
            "line 3, column 17: Trailing commas are not allowed",
        ),
    ];
    for (content, install_error, list_error) in cases {
        let sandbox = Sandbox::new();
        let tgz = package(&sandbox);
        let settings = sandbox.agent_dir().join("settings.json");
        std::fs::write(&settings, content).unwrap();
        let stderr = refused(&sandbox, &["install", tgz.to_str().unwrap(), "--yes"]);
        assert!(
            stderr.contains(&format!("{}{install_error}", settings.display())),
            "{stderr}"
        );
        assert!(stderr.contains("Nothing was changed"), "{stderr}");
        assert_eq!(text(&settings), content, "the file is left byte for byte");
        assert!(
            !installed_dir(&sandbox, "protected-paths").exists(),
            "nothing installed"
        );

        // The loader says where too.
        let report = sandbox.list_json(&[]);
        let error = error_for(&report, "settings.json").expect("the settings error");
        let error = error["error"].as_str().unwrap_or_default();
        assert!(error.contains(list_error), "{error}");
    }
}

#[test]
fn a_project_settings_link_is_not_written_through() {
    let sandbox = Sandbox::new();
    let tgz = package(&sandbox);
    let user = sandbox.agent_dir().join("settings.json");
    std::fs::write(&user, "{\"packages\": []}").unwrap();
    let dot_pi = sandbox.project().join(".pi");
    std::fs::create_dir_all(&dot_pi).unwrap();
    std::os::unix::fs::symlink(&user, dot_pi.join("settings.json")).unwrap();
    let stderr = refused(&sandbox, &["install", tgz.to_str().unwrap(), "-l", "--yes"]);
    assert!(stderr.contains("is a symbolic link"), "{stderr}");
    assert_eq!(
        text(&user),
        "{\"packages\": []}",
        "the user's settings are untouched"
    );
}

/// A sandbox whose project's `.pi/settings.json` sets an `npmCommand` that would create
/// `marker`, with npm pointed at a registry that answers nothing.
fn hostile_project(sandbox: &Sandbox) -> PathBuf {
    let marker = sandbox.root().join("project-npm-ran");
    let dot_pi = sandbox.project().join(".pi");
    std::fs::create_dir_all(&dot_pi).unwrap();
    let settings = serde_json::json!({
        "npmCommand": ["sh", "-c", format!("touch {}", marker.display()), "x"]
    });
    std::fs::write(dot_pi.join("settings.json"), settings.to_string()).unwrap();
    marker
}

/// Runs `pi-hooks args` with npm offline (an unreachable registry, no retries, a cache of
/// the sandbox's own).
fn offline(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    sandbox
        .command(args)
        .env("npm_config_registry", "http://127.0.0.1:9")
        .env("npm_config_fetch_retries", "0")
        .env("npm_config_cache", sandbox.root().join("npm-cache"))
        .env("npm_config_update_notifier", "false")
        .output()
        .expect("run pi-hooks")
}

const NOTICE: &str = "ignored: set npmCommand in your own settings";

#[test]
fn a_project_npm_command_never_runs_for_install() {
    let sandbox = Sandbox::new();
    let marker = hostile_project(&sandbox);
    for args in [
        ["install", "npm:x", "--yes"].as_slice(),
        ["install", "-l", "npm:x", "--yes"].as_slice(),
    ] {
        let output = offline(&sandbox, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}: {stderr}");
        assert!(!marker.exists(), "{args:?} ran the project's npmCommand");
        assert_eq!(
            stderr.matches(NOTICE).count(),
            1,
            "{args:?}: said once\n{stderr}"
        );
    }
}

/// A stand-in npm for the user's own `npmCommand`: logs each call to `log`, answers
/// `root -g` with `root`, `pack` with `tgz`, installs and uninstalls `tgz` under `root`.
fn user_npm(sandbox: &Sandbox, tgz: &Path, root: &Path, log: &Path) -> PathBuf {
    std::fs::create_dir_all(root).unwrap();
    let script = sandbox.root().join("user-npm.sh");
    let name = "protected-paths";
    let text = format!(
        r#"echo "$*" >> '{log}'
verb=$1
dest= prev=
for a; do [ "$prev" = --pack-destination ] && dest=$a; prev=$a; done
case "$verb" in
  root) echo '{root}' ;;
  pack) cp '{tgz}' "$dest/{name}-0.1.0.tgz" && echo '[{{"filename": "{name}-0.1.0.tgz"}}]' ;;
  install) rm -rf '{root}/{name}' && mkdir -p '{root}/{name}' && tar -xzf '{tgz}' -C '{root}/{name}' --strip-components=1 ;;
  uninstall) rm -rf '{root}/{name}' ;;
  *) exit 1 ;;
esac
"#,
        log = log.display(),
        root = root.display(),
        tgz = tgz.display(),
    );
    std::fs::write(&script, text).unwrap();
    script
}

#[test]
fn a_project_npm_command_never_runs_for_update_and_remove_the_users_does() {
    let sandbox = Sandbox::new();
    let tgz = package(&sandbox);
    let marker = hostile_project(&sandbox);
    let log = sandbox.root().join("user-npm.log");
    let script = user_npm(&sandbox, &tgz, &sandbox.root().join("npm-root"), &log);
    let user_settings = serde_json::json!({ "npmCommand": ["sh", script.display().to_string()] });
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        user_settings.to_string(),
    )
    .unwrap();
    let verbs = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect()
    };

    for (args, verb) in [
        (
            ["install", "npm:protected-paths", "--yes"].as_slice(),
            "install",
        ),
        (["update", "protected-paths", "--yes"].as_slice(), "install"),
        (["remove", "protected-paths"].as_slice(), "uninstall"),
    ] {
        let before = verbs().len();
        let output = offline(&sandbox, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{args:?}: {stderr}\nstdout: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(!marker.exists(), "{args:?} ran the project's npmCommand");
        assert!(stderr.contains(NOTICE), "{args:?}: {stderr}");
        assert!(
            verbs()[before..].iter().any(|v| v == verb),
            "{args:?} ran npm as the user's npmCommand says: {:?}",
            verbs()
        );
    }
    assert!(!sandbox.root().join("npm-root/protected-paths").exists());
}
