//! Trust and the files a repository controls, through the real
//! `pi-hooks` binary (and, for a rebuild in one process, the real loader) on real C plugins:
//!
//! - a project entry that resolves to one of the user's own plugins (a symlinked file or
//!   folder in `.pi/hooks`, a path or folder in `.pi/settings.json`, a file the command line
//!   also names) never takes that plugin's place or trust: the user's plugin loads where it
//!   would have, without trust, a one-line warning names the project entry, and the user's
//!   `rm -rf` blocker still blocks;
//! - a load writes no cache file on Linux (sealed memfd); with the file cache, a planted or
//!   damaged copy is never run, a cache folder another user can write to is refused, and a
//!   rebuilt plugin loads as new code in the same process;
//! - devices, FIFOs and `/dev/stdin` named as plugins or settings are refused in bounded
//!   time, and a huge sparse file is refused without being read;
//! - an init or a static initialiser that never returns is cut off by `hookTimeout`.
//!
//! Every command runs under a deadline ([`output_within`]): a hang fails the test.
#![cfg(target_os = "linux")]

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use pi_hooks_tests::{
    Sandbox, compile_c_text, loaded_names, marker_plugin, output_within, parse_json_output,
};
use serde_json::{Value, json};

/// The most any one command here may take; they all finish in well under a second.
const LIMIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// `output` must be a clean exit; the whole output is in the panic message otherwise.
fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "pi-hooks failed ({})\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `pi-hooks list --json <args>` under the deadline, with `env` set.
fn list_json(s: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut all = vec!["list", "--json"];
    all.extend_from_slice(args);
    let mut command = s.command(&all);
    command.envs(env.iter().copied());
    let output = output_within(command, LIMIT);
    assert_success(&output);
    parse_json_output(&output)
}

/// `pi-hooks run --no-session --script <script> <args> go` under the deadline.
fn run_script(s: &Sandbox, script: &Value, args: &[&str]) -> Output {
    let script = s.script(script);
    let mut all = vec!["run", "--no-session", "--script", script.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("go");
    output_within(s.command(&all), LIMIT)
}

/// A plugin that registers nothing, built as `lib/<file>.so` with the descriptor name `name`.
fn plain_plugin(s: &Sandbox, file: &str, name: &str) -> PathBuf {
    let code = format!(
        r#"#include "pi_hooks.h"
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    (void)host; (void)plugin; return PI_OK;
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "does nothing", init, NULL);
"#
    );
    compile_c_text(&s.lib(), file, &code, &[])
}

/// The user's guard: blocks every `bash` call whose command contains `rm -rf`.
fn rm_blocker(s: &Sandbox, file: &str, name: &str) -> PathBuf {
    let code = format!(
        r#"#include <string.h>
#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus on_tool_call(void *user_data, const PiValue *event, PiContext *ctx, PiResult *result) {{
    PiStr command = {{NULL, 0}};
    (void)user_data; (void)ctx;
    if (host->values->as_str(host->values->pointer(event, pi_str("/input/command")), &command) != PI_OK)
        return PI_OK;
    /* Host strings are NUL-terminated. */
    if (strstr(command.ptr, "rm -rf") == NULL) return PI_OK;
    host->results->set_bool(result, pi_str("block"), true);
    return host->results->set_string(result, pi_str("reason"), pi_str("rm -rf is not allowed here"));
}}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {{
    host = h;
    return h->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "blocks rm -rf", init, NULL);
"#
    );
    compile_c_text(&s.lib(), file, &code, &[])
}

/// `pi-hooks trust <path>`, which must succeed.
fn trust(s: &Sandbox, path: &Path) {
    let output = output_within(s.command(&["trust", path.to_str().unwrap()]), LIMIT);
    assert_success(&output);
}

/// Creates a FIFO at `path` with mkfifo(1).
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `command` run through `program args...` (same environment and cwd): `prlimit`, say.
fn wrapped(program: &str, args: &[&str], command: Command) -> Command {
    let mut outer = Command::new(program);
    outer
        .args(args)
        .arg(command.get_program())
        .args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        outer.current_dir(dir);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => outer.env(key, value),
            None => outer.env_remove(key),
        };
    }
    outer
}

/// The loaded plugin called `name` in a `list --json` report (exactly one).
fn plugin<'a>(report: &'a Value, name: &str) -> &'a Value {
    let found: Vec<&Value> = report["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "plugin {name} once in {report:#}");
    found[0]
}

/// The error text for the path `path` (exactly one).
fn error_text(report: &Value, path: &Path) -> String {
    let path = path.display().to_string();
    let found: Vec<&Value> = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["path"] == path.as_str())
        .collect();
    assert_eq!(found.len(), 1, "one error for {path} in {report:#}");
    found[0]["error"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------
// Item 1: a project entry never takes the user's plugin
// ---------------------------------------------------------------------------------------

/// The descriptor name of the user's guard.
const GATE: &str = "user-gate";
/// The descriptor name of a trusted project plugin that loads before the user's plugins.
const HELPER: &str = "project-helper";

/// A sandbox with a trusted project plugin in `.pi/extensions/` (project plugins load first)
/// and the user's `rm -rf` blocker built into `lib/`; returns the blocker's library.
fn sandbox_with_trusted_helper() -> (Sandbox, PathBuf) {
    let s = Sandbox::new();
    let helper = plain_plugin(&s, "helper", HELPER);
    let helper = s.install(&helper, &s.project().join(".pi/extensions"), "helper.so");
    trust(&s, &helper);
    let gate = rm_blocker(&s, "gate", GATE);
    (s, gate)
}

/// One way a project entry can reach the user's plugin.
struct Shadowing {
    sandbox: Sandbox,
    /// The user's entry: the path the plugin must be listed under.
    user_path: PathBuf,
    /// Its source in `list --json`.
    source: &'static str,
    /// The project's entry that is set aside.
    project_entry: PathBuf,
    /// Extra arguments (`--hook ...`).
    args: Vec<String>,
}

/// The user's blocker in `<agentDir>/hooks/gate.so`.
fn global_gate() -> (Sandbox, PathBuf) {
    let (s, gate) = sandbox_with_trusted_helper();
    let user = s.install(&gate, &s.agent_dir().join("hooks"), "gate.so");
    (s, user)
}

/// `.pi/hooks/0gate.so` is a symlink to the user's global plugin.
fn symlinked_file() -> Shadowing {
    let (sandbox, user_path) = global_gate();
    let hooks = sandbox.project().join(".pi/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let project_entry = hooks.join("0gate.so");
    symlink(&user_path, &project_entry).unwrap();
    Shadowing {
        sandbox,
        user_path,
        source: "global",
        project_entry,
        args: Vec::new(),
    }
}

/// `.pi/hooks` is a symlink to the agent directory's hooks folder.
fn symlinked_folder() -> Shadowing {
    let (sandbox, user_path) = global_gate();
    let hooks = sandbox.project().join(".pi/hooks");
    symlink(sandbox.agent_dir().join("hooks"), &hooks).unwrap();
    Shadowing {
        project_entry: hooks.join("gate.so"),
        sandbox,
        user_path,
        source: "global",
        args: Vec::new(),
    }
}

/// `.pi/settings.json` names the user's plugin file with `~`.
fn settings_path_with_tilde() -> Shadowing {
    let (sandbox, user_path) = global_gate();
    std::fs::write(
        sandbox.project().join(".pi/settings.json"),
        json!({"hooks": ["~/.pi/agent/hooks/gate.so"]}).to_string(),
    )
    .unwrap();
    Shadowing {
        project_entry: sandbox.home().join(".pi/agent/hooks/gate.so"),
        sandbox,
        user_path,
        source: "global",
        args: Vec::new(),
    }
}

/// `.pi/settings.json` names the user's hooks folder (relative to the settings file).
fn settings_folder() -> Shadowing {
    let (sandbox, user_path) = global_gate();
    let pi = sandbox.project().join(".pi");
    std::fs::write(
        pi.join("settings.json"),
        json!({"extensions": ["../../home/.pi/agent/hooks"]}).to_string(),
    )
    .unwrap();
    Shadowing {
        // Shown with `..` applied: the same file as the user's.
        project_entry: sandbox.root().join("home/.pi/agent/hooks/gate.so"),
        sandbox,
        user_path,
        source: "global",
        args: Vec::new(),
    }
}

/// The command line names (`--hook`) a file that is also in `.pi/hooks`.
fn cli_file_also_in_project() -> Shadowing {
    let (sandbox, gate) = sandbox_with_trusted_helper();
    let project_entry = sandbox.install(&gate, &sandbox.project().join(".pi/hooks"), "gate.so");
    Shadowing {
        user_path: project_entry.clone(),
        sandbox,
        source: "cli",
        project_entry,
        args: vec!["--hook".into(), ".pi/hooks/gate.so".into()],
    }
}

/// Every way, by name.
fn shadowings() -> Vec<(&'static str, Shadowing)> {
    vec![
        ("symlinked file", symlinked_file()),
        ("symlinked folder", symlinked_folder()),
        ("settings path with ~", settings_path_with_tilde()),
        ("settings naming the folder", settings_folder()),
        ("--hook of a project file", cli_file_also_in_project()),
    ]
}

#[test]
fn a_project_entry_never_takes_the_place_or_trust_of_the_users_plugin() {
    for (form, case) in shadowings() {
        let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
        let report = list_json(&case.sandbox, &args, &[]);
        // In its own place: after the project plugin, as a user plugin loads.
        assert_eq!(loaded_names(&report), [HELPER, GATE], "{form}: {report:#}");
        let gate = plugin(&report, GATE);
        assert_eq!(
            gate["path"],
            case.user_path.display().to_string(),
            "{form}: {gate:#}"
        );
        assert_eq!(gate["source"], case.source, "{form}: {gate:#}");
        assert_eq!(gate["trust"], "not-required", "{form}: {gate:#}");
        assert_eq!(report["untrusted"], json!([]), "{form}: {report:#}");
        assert_eq!(report["errors"], json!([]), "{form}: {report:#}");
        // Said in one line, naming the project's entry.
        let warnings = report["warnings"].as_array().unwrap();
        assert_eq!(warnings.len(), 1, "{form}: {report:#}");
        assert_eq!(
            warnings[0]["path"],
            case.project_entry.display().to_string(),
            "{form}: {report:#}"
        );
        let warning = warnings[0]["warning"].as_str().unwrap();
        assert!(!warning.contains('\n'), "{form}: {warning:?}");
        let canonical = std::fs::canonicalize(&case.user_path).unwrap();
        assert!(
            warning.contains(&canonical.display().to_string()),
            "{form}: {warning}"
        );
    }
}

/// A folder with a file in it, for `rm -rf` to try.
fn victim_folder(s: &Sandbox) -> PathBuf {
    let victim = s.root().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious.txt"), "keep me").unwrap();
    victim
}

/// A model that runs `rm -rf <victim>` and then finishes.
fn rm_rf_script(victim: &Path) -> Value {
    json!({"turns": [
        {"toolCalls": [{"name": "bash", "arguments": {"command": format!("rm -rf {}", victim.display())}}]},
        {"text": "done"}
    ]})
}

#[test]
fn the_users_blocker_still_blocks_rm_rf_whatever_the_project_links() {
    for (form, case) in shadowings() {
        let s = &case.sandbox;
        let victim = victim_folder(s);
        let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
        let output = run_script(s, &rm_rf_script(&victim), &args);
        assert_success(&output);
        assert!(
            victim.join("precious.txt").exists(),
            "{form}: rm -rf ran although the user's plugin blocks it\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("Skipped project plugin"),
            "{form}: nothing waits for trust here\n{stderr}"
        );
    }
}

#[test]
fn the_scripted_rm_rf_runs_unless_the_blocker_is_loaded() {
    // Without plugins the script really deletes the folder ...
    let s = Sandbox::new();
    let victim = victim_folder(&s);
    assert_success(&run_script(&s, &rm_rf_script(&victim), &[]));
    assert!(!victim.exists(), "the script's rm -rf did not run");
    // ... and the blocker, loaded plainly, stops it.
    let (s, _) = global_gate();
    let victim = victim_folder(&s);
    assert_success(&run_script(&s, &rm_rf_script(&victim), &[]));
    assert!(victim.join("precious.txt").exists());
}

// ---------------------------------------------------------------------------------------
// Item 2: the shadow copy runs only the bytes that were read
// ---------------------------------------------------------------------------------------

/// The plugin cache folder of the sandbox.
fn cache(s: &Sandbox) -> PathBuf {
    s.agent_dir().join("plugin-cache")
}

#[test]
fn a_load_writes_no_cache_file_by_default() {
    let s = Sandbox::new();
    let library = plain_plugin(&s, "quiet", "quiet");
    s.install(&library, &s.agent_dir().join("hooks"), "quiet.so");
    let report = list_json(&s, &[], &[]);
    assert_eq!(loaded_names(&report), ["quiet"]);
    let output = run_script(&s, &json!({"turns": [{"text": "done"}]}), &[]);
    assert_success(&output);
    assert!(
        !cache(&s).exists(),
        "a load wrote {}: on Linux the copy is a sealed memfd",
        cache(&s).display()
    );
    // The file cache really is that folder (so the check above can fail).
    list_json(&s, &[], &[("PI_HOOKS_SHADOW", "file")]);
    assert!(cache(&s).is_dir());
}

/// The SHA-256 of a file, hex, by sha256sum(1).
fn sha256_of(path: &Path) -> String {
    let output = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// The user's real plugin (`the-real-one`, padded to be larger than a small plugin) and a
/// working plugin that creates `marker` when it runs, zero-padded to the same length.
fn real_and_planted(s: &Sandbox, marker: &Path) -> (Vec<u8>, Vec<u8>) {
    let code = r#"#include "pi_hooks.h"
__attribute__((used)) static const char padding[65536] = {1};
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    (void)host; (void)plugin; return PI_OK;
}
PI_HOOKS_PLUGIN("the-real-one", "1.0.0", "the user's plugin", init, NULL);
"#;
    let real = std::fs::read(compile_c_text(&s.lib(), "real", code, &[])).unwrap();
    let mut planted = std::fs::read(marker_plugin(&s.lib(), "planted", "planted", marker)).unwrap();
    assert!(planted.len() < real.len(), "the planted plugin must fit");
    planted.resize(real.len(), 0);
    (real, planted)
}

/// A private cache folder (as the host makes it).
fn private_cache(s: &Sandbox) -> PathBuf {
    let dir = cache(s);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

#[test]
fn the_file_cache_never_runs_a_planted_or_damaged_copy() {
    let s = Sandbox::new();
    let marker = s.root().join("planted-ran");
    let (real, planted) = real_and_planted(&s, &marker);
    // The padded plant is a working plugin: named directly, it runs.
    let check = s.lib().join("plant-check.so");
    std::fs::write(&check, &planted).unwrap();
    let report = list_json(&s, &["--hook", check.to_str().unwrap()], &[]);
    assert_eq!(loaded_names(&report), ["planted"]);
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();

    let hooks = s.agent_dir().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let user = hooks.join("real.so");
    std::fs::write(&user, &real).unwrap();
    let sha = sha256_of(&user);
    // Planted under the name older hosts gave the copy of exactly these bytes, and under a
    // name of the current form; then damaged copies of the real bytes.
    let planted_names = [
        format!("real-{}.so", &sha[..16]),
        format!("real-{}-0123456789abcdef.so", &sha[..16]),
    ];
    let mut damaged = real.clone();
    let middle = damaged.len() / 2;
    for byte in &mut damaged[middle..middle + 64] {
        *byte ^= 0xff;
    }
    for (name, bytes) in planted_names
        .iter()
        .map(|n| (n, &planted))
        .chain(planted_names.iter().map(|n| (n, &damaged)))
    {
        let copy = private_cache(&s).join(name);
        std::fs::write(&copy, bytes).unwrap();
        let report = list_json(&s, &[], &[("PI_HOOKS_SHADOW", "file")]);
        assert_eq!(loaded_names(&report), ["the-real-one"], "{report:#}");
        assert!(!marker.exists(), "the planted copy ran");
        // Every load writes its own copy; a file nobody holds is swept away.
        assert!(!copy.exists(), "{} was left in the cache", copy.display());
    }
    // And the copies of the loads themselves are gone too (deleted once mapped).
    let left: Vec<_> = std::fs::read_dir(cache(&s)).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_cache_folder_another_user_can_write_is_refused() {
    // (description, folder mode, owner to chown to, use PI_HOOKS_CACHE_DIR)
    let cases: [(&str, u32, Option<u32>, bool); 3] = [
        ("mode 0777", 0o777, None, false),
        ("owned by uid 65534", 0o700, Some(65534), false),
        ("PI_HOOKS_CACHE_DIR with mode 0777", 0o777, None, true),
    ];
    for (what, mode, owner, by_env) in cases {
        let s = Sandbox::new();
        let marker = s.root().join("planted-ran");
        let (real, planted) = real_and_planted(&s, &marker);
        let hooks = s.agent_dir().join("hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let user = hooks.join("real.so");
        std::fs::write(&user, &real).unwrap();
        let sha = sha256_of(&user);
        let dir = if by_env {
            s.root().join("shared-cache")
        } else {
            cache(&s)
        };
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("real-{}.so", &sha[..16])), &planted).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        if let Some(uid) = owner {
            let status = Command::new("chown")
                .arg(uid.to_string())
                .arg(&dir)
                .status()
                .expect("run chown");
            assert!(status.success(), "chown needs root (the tests run as root)");
        }
        let dir_text = dir.display().to_string();
        let mut env = vec![("PI_HOOKS_SHADOW", "file")];
        if by_env {
            env.push(("PI_HOOKS_CACHE_DIR", dir_text.as_str()));
        }
        let report = list_json(&s, &[], &env);
        assert_eq!(loaded_names(&report), Vec::<String>::new(), "{what}");
        let error = error_text(&report, &user);
        for needle in [dir_text.as_str(), "chmod 700", "PI_HOOKS_CACHE_DIR"] {
            assert!(error.contains(needle), "{what}: {needle:?} in {error}");
        }
        assert!(!marker.exists(), "{what}: the planted copy ran");
    }
}

#[test]
fn a_rebuilt_plugin_loads_as_new_code_in_one_process() {
    let s = Sandbox::new();
    let build = |name: &str, event: &str| {
        let code = format!(
            r#"#include "pi_hooks.h"
static PiStatus on_event(void *u, const PiValue *e, PiContext *c, PiResult *r) {{
    (void)u; (void)e; (void)c; (void)r; return PI_OK;
}}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    return host->registry->on(plugin, pi_str("{event}"), on_event, NULL);
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "one build", init, NULL);
"#
        );
        std::fs::read(compile_c_text(&s.lib(), name, &code, &[])).unwrap()
    };
    let builds = [
        ("build-one", "tool_call", build("build-one", "tool_call")),
        ("build-two", "input", build("build-two", "input")),
        ("build-three", "context", build("build-three", "context")),
    ];
    let path = s.root().join("plugin.so");
    let cache = s.root().join("cache");
    let mut kept = Vec::new();
    for (i, (name, event, bytes)) in builds.iter().enumerate() {
        std::fs::write(&path, bytes).unwrap();
        let plugin = pi_hooks_host::lifecycle::load::load_file(&path, &cache)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(plugin.name(), *name);
        assert_eq!(plugin.registrations().event_names(), [*event]);
        // Keep the first, retire the second before the third loads: neither may hand its
        // image to the next build.
        if i == 0 {
            kept.push(plugin);
        } else {
            drop(plugin);
        }
    }
    assert!(!cache.exists(), "the default copy is a memfd");
}

// ---------------------------------------------------------------------------------------
// Item 8: only regular files of bounded size, never a blocking open
// ---------------------------------------------------------------------------------------

/// A sandbox with a good global plugin (`still-loads`), which must load whatever else is
/// there.
fn sandbox_with_good_plugin() -> Sandbox {
    let s = Sandbox::new();
    let good = plain_plugin(&s, "good", "still-loads");
    s.install(&good, &s.agent_dir().join("hooks"), "good.so");
    s
}

#[test]
fn devices_fifos_and_stdin_named_as_plugins_are_refused_without_hanging() {
    let s = sandbox_with_good_plugin();
    let project_hooks = s.project().join(".pi/hooks");
    std::fs::create_dir_all(&project_hooks).unwrap();
    let zero = project_hooks.join("zero.so");
    symlink("/dev/zero", &zero).unwrap();
    let project_fifo = project_hooks.join("pipe.so");
    mkfifo(&project_fifo);
    let global_fifo = s.agent_dir().join("hooks/pipe.so");
    mkfifo(&global_fifo);
    std::fs::write(
        s.project().join(".pi/settings.json"),
        json!({"hooks": ["/dev/stdin"]}).to_string(),
    )
    .unwrap();
    let expected = [
        (zero.clone(), "character device"),
        (project_fifo.clone(), "FIFO"),
        (global_fifo.clone(), "FIFO"),
        // stdin is a pipe the test never writes to.
        (PathBuf::from("/dev/stdin"), "FIFO"),
    ];

    let report = list_json(&s, &[], &[]);
    assert_eq!(loaded_names(&report), ["still-loads"], "{report:#}");
    assert_eq!(report["errors"].as_array().unwrap().len(), expected.len());
    for (path, kind) in &expected {
        let error = error_text(&report, path);
        assert!(error.contains(kind), "{}: {error}", path.display());
        assert!(
            error.contains("regular file"),
            "{}: {error}",
            path.display()
        );
    }

    let output = run_script(&s, &json!({"turns": [{"text": "done"}]}), &[]);
    assert_success(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for (path, kind) in &expected {
        let path = path.display().to_string();
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(&path) && l.contains(kind)),
            "no line for {path} ({kind}) in:\n{stderr}"
        );
    }
}

#[test]
fn settings_files_that_are_fifos_are_refused_without_hanging() {
    let s = sandbox_with_good_plugin();
    std::fs::create_dir_all(s.project().join(".pi")).unwrap();
    let project_settings = s.project().join(".pi/settings.json");
    mkfifo(&project_settings);
    let user_settings = s.agent_dir().join("settings.json");
    mkfifo(&user_settings);
    let report = list_json(&s, &[], &[]);
    for path in [&project_settings, &user_settings] {
        let error = error_text(&report, path);
        assert!(error.contains("FIFO"), "{error}");
        assert!(error.contains("not a regular file"), "{error}");
    }
    // The user's settings could hold a grant for the library: unread, it fails closed (not
    // loaded rather than loaded unconfined), named.
    assert!(loaded_names(&report).is_empty(), "{report:#}");
    let library = s.agent_dir().join("hooks/good.so");
    let error = error_text(&report, &library);
    assert!(
        error.contains("not loaded, rather than loaded unconfined"),
        "{error}"
    );
    let output = run_script(&s, &json!({"turns": [{"text": "done"}]}), &[]);
    assert_success(&output);
    // A FIFO in the project's settings alone reads nothing from it, and keeps nothing out.
    std::fs::remove_file(&user_settings).unwrap();
    let report = list_json(&s, &[], &[]);
    assert_eq!(loaded_names(&report), ["still-loads"], "{report:#}");
    assert!(
        error_text(&report, &project_settings).contains("FIFO"),
        "{report:#}"
    );
}

#[test]
fn a_huge_sparse_library_is_refused_without_being_read() {
    let s = sandbox_with_good_plugin();
    let huge = s.agent_dir().join("hooks/huge.so");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(300 << 20))
        .unwrap();
    // 160 MiB of address space is plenty for `list`, and too little to hold the file (or
    // the 256 MiB the host would read of it before noticing).
    let command = wrapped(
        "prlimit",
        &["--as=167772160", "--"],
        s.command(&["list", "--json"]),
    );
    let output = output_within(command, LIMIT);
    assert_success(&output);
    let report = parse_json_output(&output);
    assert_eq!(loaded_names(&report), ["still-loads"], "{report:#}");
    let error = error_text(&report, &huge);
    assert!(error.contains("larger than 256 MiB"), "{error}");
}

#[test]
fn trust_refuses_a_device_or_fifo_without_hanging() {
    let s = Sandbox::new();
    let hooks = s.project().join(".pi/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let zero = hooks.join("zero.so");
    symlink("/dev/zero", &zero).unwrap();
    let fifo = hooks.join("pipe.so");
    mkfifo(&fifo);
    for (path, kind) in [(&zero, "character device"), (&fifo, "FIFO")] {
        // Bounded memory too: reading /dev/zero must not fill the machine.
        let command = wrapped(
            "prlimit",
            &["--as=536870912", "--"],
            s.command(&["trust", path.to_str().unwrap()]),
        );
        let output = output_within(command, Duration::from_secs(10));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(kind), "{stderr}");
        assert!(stderr.contains("regular file"), "{stderr}");
    }
    let store = s.agent_dir().join("trusted-plugins.json");
    if let Ok(text) = std::fs::read_to_string(&store) {
        assert!(
            !text.contains("zero.so") && !text.contains("pipe.so"),
            "{text}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Item 9: a load that never returns is cut off by hookTimeout
// ---------------------------------------------------------------------------------------

/// A plugin named `name` that never returns from its init (or, with `constructor`, from a
/// static initialiser that runs inside dlopen).
fn hanging_plugin(s: &Sandbox, file: &str, name: &str, constructor: bool) -> PathBuf {
    let (ctor, body) = if constructor {
        (
            "__attribute__((constructor)) static void hang(void) { for (;;) pause(); }",
            "",
        )
    } else {
        ("", "for (;;) pause();")
    };
    let code = format!(
        r#"#include <unistd.h>
#include "pi_hooks.h"
{ctor}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    (void)host; (void)plugin;
    {body}
    return PI_OK;
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "never finishes loading", init, NULL);
"#
    );
    compile_c_text(&s.lib(), file, &code, &["-D_DEFAULT_SOURCE"])
}

/// A sandbox with `hookTimeout: 300` in the user's settings and, in name order in the global
/// hooks folder, a good plugin, the hanging one, and another good plugin.
fn sandbox_with_hang(constructor: bool) -> (Sandbox, PathBuf) {
    let s = Sandbox::new();
    std::fs::write(
        s.agent_dir().join("settings.json"),
        json!({"hookTimeout": 300}).to_string(),
    )
    .unwrap();
    let hooks = s.agent_dir().join("hooks");
    let before = plain_plugin(&s, "before", "loads-before");
    s.install(&before, &hooks, "a_before.so");
    let hang = hanging_plugin(&s, "hang", "hangs", constructor);
    let hang = s.install(&hang, &hooks, "b_hang.so");
    let after = plain_plugin(&s, "after", "loads-after");
    s.install(&after, &hooks, "c_after.so");
    (s, hang)
}

#[test]
fn an_init_that_never_returns_is_cut_off_by_hook_timeout() {
    let (s, hang) = sandbox_with_hang(false);
    let report = list_json(&s, &[], &[]);
    assert_eq!(
        loaded_names(&report),
        ["loads-before", "loads-after"],
        "{report:#}"
    );
    let error = error_text(&report, &hang);
    assert!(
        error.contains("did not finish loading within 300 ms"),
        "{error}"
    );
    let output = run_script(&s, &json!({"turns": [{"text": "done"}]}), &[]);
    assert_success(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("did not finish loading within 300 ms"),
        "{stderr}"
    );
}

#[test]
fn a_static_initialiser_that_never_returns_is_cut_off_by_hook_timeout() {
    let (s, hang) = sandbox_with_hang(true);
    let report = list_json(&s, &[], &[]);
    let error = error_text(&report, &hang);
    assert!(
        error.contains("did not finish loading within 300 ms"),
        "{error}"
    );
    assert_eq!(plugin(&report, "loads-before")["source"], "global");
    // The stuck initialiser holds the system loader's lock, so nothing after it can be
    // opened in this process; that is said at once, naming the culprit.
    let after = error_text(&report, &s.agent_dir().join("hooks/c_after.so"));
    assert!(after.contains(&hang.display().to_string()), "{after}");
    assert!(after.contains("system loader's lock"), "{after}");
    // `run` cannot work in such a process (every new thread waits for that lock): it says
    // so and ends instead of hanging in its first tool call.
    let victim = victim_folder(&s);
    let output = run_script(&s, &rm_rf_script(&victim), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("static initialiser never returned")
            && stderr.contains("the session was not started"),
        "{stderr}"
    );
    assert!(victim.exists(), "no tool may run");
}
