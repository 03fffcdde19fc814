//! A plugin asks the host who it is and where its own folder is (`actions->identity` and
//! `actions->data_dir`, ABI 1.6): the same answers in process, isolated (`--isolate`) and
//! confined (a `sandbox` grant), through the real binary. The fixture
//! (`tests/fixtures/identity.c`) blocks a tool call with
//! `init=<identity in init> id=<identity> data=<folder> null=<status>`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_hooks_abi::ffi::{PI_ERR_DENIED, PI_ERR_INVALID_ARG};
use pi_hooks_tests::{Sandbox, c_fixture_as, json_lines, output_within};
use serde_json::json;

/// The reason the fixture blocked the one tool call of a `run --mode json` with.
fn answer(sandbox: &Sandbox, plugin: &Path, extra: &[&str]) -> String {
    let script = sandbox.script(&json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "done"}
    ]}));
    let mut command = sandbox.command(&["run", "--mode", "json", "--no-session", "--script"]);
    command
        .arg(&script)
        .arg("--hook")
        .arg(plugin)
        .args(extra)
        .arg("go");
    let output = output_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let events = json_lines(&output);
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end: {events:?}\n{stderr}"));
    assert_eq!(end["isError"], true, "{end}");
    let text = end["result"]["content"][0]["text"].as_str().unwrap_or("");
    let at = text
        .find("init=")
        .unwrap_or_else(|| panic!("not the fixture's answer: {text}\n{stderr}"));
    text[at..].trim_end().to_owned()
}

/// `init=… id=… data=… null=…` as its four values.
fn fields(answer: &str) -> [String; 4] {
    let rest = answer.strip_prefix("init=").expect("init=");
    let (init, rest) = rest.split_once(" id=").expect("id=");
    let (id, rest) = rest.split_once(" data=").expect("data=");
    let (data, null) = rest.rsplit_once(" null=").expect("null=");
    [init, id, data, null].map(str::to_owned)
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// A plain library is its canonical path, and its folder is
/// `<agentDir>/pi-hooks/data/library.<stem>.<hash of the path>`, made 0700 on the first ask:
/// the same in process and in an isolated child, from `init` on.
#[test]
fn a_plain_library_is_its_canonical_path_in_process_and_isolated() {
    let sandbox = Sandbox::new();
    let plugin = c_fixture_as(&sandbox.lib(), "identity", "libidentity", &[]);
    // Loaded through a symlinked folder: the identity is the resolved path.
    let linked = sandbox.root().join("linked-lib");
    std::os::unix::fs::symlink(sandbox.lib(), &linked).unwrap();
    let via_link = linked.join(plugin.file_name().unwrap());
    let canonical = std::fs::canonicalize(&plugin).unwrap();
    let data_root = std::fs::canonicalize(sandbox.agent_dir())
        .unwrap()
        .join("pi-hooks/data");
    let mut answers = Vec::new();
    for extra in [&[][..], &["--isolate"][..]] {
        let [init, id, data, null] = fields(&answer(&sandbox, &via_link, extra));
        assert_eq!(id, format!("library:{}", canonical.display()), "{extra:?}");
        assert_eq!(init, id, "{extra:?}: init saw another identity");
        assert_eq!(null, PI_ERR_INVALID_ARG.to_string(), "{extra:?}");
        let data = PathBuf::from(data);
        let folder = data.strip_prefix(&data_root).unwrap_or_else(|_| {
            panic!(
                "{extra:?}: {} is not under {}",
                data.display(),
                data_root.display()
            )
        });
        let folder = folder.to_str().unwrap();
        assert!(folder.starts_with("library.libidentity."), "{folder}");
        assert!(!folder.contains('/'), "{folder}");
        assert!(data.is_dir(), "{extra:?}: {} was not made", data.display());
        assert_eq!(mode(&data), 0o700, "{extra:?}");
        answers.push((id, data));
    }
    assert_eq!(answers[0], answers[1], "isolated differs from in process");
    // The library as `identity` names it: PluginIdentity::library's folder.
    let expected = pi_hooks_host::identity::PluginIdentity::library(&plugin)
        .data_dir(&std::fs::canonicalize(sandbox.agent_dir()).unwrap());
    assert_eq!(answers[0].1, expected);

    // Another library of the same file name elsewhere gets a folder of its own.
    let other_dir = sandbox.root().join("other");
    let other = sandbox.install(&plugin, &other_dir, "libidentity.so");
    let [_, id, data, _] = fields(&answer(&sandbox, &other, &[]));
    assert_eq!(
        id,
        format!(
            "library:{}",
            std::fs::canonicalize(&other).unwrap().display()
        )
    );
    assert_ne!(PathBuf::from(data), answers[0].1);
}

/// A symlink in the place of the folder is not followed: `data_dir` fails (`PI_ERR`) and
/// nothing is written where the link points.
#[test]
fn a_symlink_in_place_of_the_folder_is_refused() {
    let sandbox = Sandbox::new();
    let plugin = c_fixture_as(&sandbox.lib(), "identity", "libidentity", &[]);
    let folder = pi_hooks_host::identity::PluginIdentity::library(&plugin)
        .data_dir(&std::fs::canonicalize(sandbox.agent_dir()).unwrap());
    std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
    let target = sandbox.root().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(&target, &folder).unwrap();
    let [_, id, data, _] = fields(&answer(&sandbox, &plugin, &[]));
    assert!(id.starts_with("library:"), "{id}");
    assert_eq!(
        data,
        format!("error {}", pi_hooks_abi::ffi::PI_ERR),
        "{data}"
    );
    assert!(std::fs::read_dir(&target).unwrap().next().is_none());
}

/// A confined plugin's folder is `${data}` of its grant, the same folder as in process; a
/// grant that names no `${data}` gets `PI_ERR_DENIED` and nothing is made.
#[cfg(target_os = "linux")]
#[test]
fn a_confined_plugin_has_its_grants_data_folder() {
    let sandbox = Sandbox::new();
    let plugin = c_fixture_as(&sandbox.lib(), "identity", "libidentity", &[]);
    let settings = sandbox.agent_dir().join("settings.json");
    let in_process = fields(&answer(&sandbox, &plugin, &[]));
    let expected = PathBuf::from(&in_process[2]);
    std::fs::remove_dir(&expected).unwrap();
    std::fs::write(
        &settings,
        json!({"sandbox": {(plugin.display().to_string()): {"write": ["${data}"]}}}).to_string(),
    )
    .unwrap();
    let confined = fields(&answer(&sandbox, &plugin, &[]));
    assert_eq!(confined, in_process, "confined differs from in process");
    assert!(expected.is_dir());
    std::fs::remove_dir(&expected).unwrap();
    std::fs::write(
        &settings,
        json!({"sandbox": {(plugin.display().to_string()): {"read": ["${cwd}"]}}}).to_string(),
    )
    .unwrap();
    let [_, id, data, _] = fields(&answer(&sandbox, &plugin, &[]));
    assert_eq!(id, in_process[1]);
    assert_eq!(data, format!("error {PI_ERR_DENIED}"));
    assert!(
        !expected.exists(),
        "the folder was made for a grant without ${{data}}"
    );
}
