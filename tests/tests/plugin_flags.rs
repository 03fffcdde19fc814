//! Plugin flags on the command line of `pi-hooks run` and `pi-hooks rpc` (pi's
//! `registerFlag` / `getFlag`: `--plan`, `--model-x foo`, `--model-x=foo`, unset flags read
//! their default, an unknown `--x` is refused, `--help` lists the plugins' flags) and pi's
//! command conflict rules (built-ins win, the first plugin
//! wins, the loser is warned), with real C plugins and the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use pi_hooks_tests::{Sandbox, compile_c_text};
use serde_json::{Value, json};

/// A plugin that registers the flags `plan` (boolean, no default) and `model-x` (string,
/// default "default-model") unless built with `-DNO_FLAGS`, the commands `/deploy` and
/// `/reload`, and records what `get_flag` answers in `session_start` and what its commands
/// get, one line each, in the file `OUT`.
const RECORDER: &str = r#"
#include <pi_hooks.h>
#include <stdio.h>
#include <string.h>

static const PiHostApi *host;
static PiPlugin *self;

static void record(const char *line, PiStr rest) {
    FILE *out = fopen(OUT, "a");
    if (out == NULL) return;
    fprintf(out, "%s %s%.*s\n", PLUGIN_NAME, line, (int)rest.len, rest.ptr);
    fclose(out);
}

static void record_flag(const char *name) {
    PiValue *value = NULL;
    PiStr json = pi_str("null");
    char line[128];
    PiStatus status = host->actions->get_flag(self, pi_str(name), &value);
    if (status != PI_OK) json = pi_str("not-found");
    else if (value != NULL) host->values->to_json(value, &json);
    snprintf(line, sizeof line, "flag %s=", name);
    record(line, json);
    if (value != NULL) host->values->free(value);
}

static PiStatus on_start(void *u, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)u; (void)event; (void)ctx; (void)result;
    record_flag("plan");
    record_flag("model-x");
    record_flag("--plan");
#ifdef CWD_FLAG
    record_flag("cwd");
#endif
    return PI_OK;
}

static PiStatus deploy(void *u, PiStr args, PiContext *ctx) {
    (void)u; (void)ctx;
    record("/deploy ", args);
    return PI_OK;
}

static PiStatus reload(void *u, PiStr args, PiContext *ctx) {
    (void)u; (void)ctx;
    record("/reload ", args);
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiCommandDef command;
    host = h;
    self = plugin;
#ifndef NO_FLAGS
    PiFlagDef flag;
    memset(&flag, 0, sizeof flag);
    flag.struct_size = sizeof flag;
    flag.kind = PI_FLAG_BOOLEAN;
    flag.name = pi_str("plan");
    flag.description = pi_str("Start in plan mode");
    if (host->registry->register_flag(plugin, &flag) != PI_OK) return PI_ERR;
    flag.kind = PI_FLAG_STRING;
    flag.name = pi_str("model-x");
    flag.description = pi_str("The model to pretend to use");
    flag.default_json = pi_str("\"default-model\"");
    if (host->registry->register_flag(plugin, &flag) != PI_OK) return PI_ERR;
#endif
#ifdef CWD_FLAG
    flag.kind = PI_FLAG_STRING;
    flag.name = pi_str("cwd");
    flag.description = pi_str("shadowed");
    flag.default_json = pi_str("\"mine\"");
    if (host->registry->register_flag(plugin, &flag) != PI_OK) return PI_ERR;
#endif
    memset(&command, 0, sizeof command);
    command.struct_size = sizeof command;
    command.name = pi_str("deploy");
    command.description = pi_str("deploys");
    command.handler = deploy;
    if (host->registry->register_command(plugin, &command) != PI_OK) return PI_ERR;
    command.name = pi_str("reload");
    command.description = pi_str("wants the built-in's name");
    command.handler = reload;
    if (host->registry->register_command(plugin, &command) != PI_OK) return PI_ERR;
    return host->registry->on(plugin, pi_str("session_start"), on_start, NULL);
}

PI_HOOKS_PLUGIN(PLUGIN_NAME, "1.0.0", "records its flags and commands", init, NULL);
"#;

/// The recorder compiled as plugin `name`, recording into `<sandbox>/record.txt`.
fn recorder(sandbox: &Sandbox, name: &str, extra: &[&str]) -> PathBuf {
    let out = format!("-DOUT=\"{}\"", record_path(sandbox).display());
    let plugin_name = format!("-DPLUGIN_NAME=\"{name}\"");
    let mut flags = vec![out.as_str(), plugin_name.as_str()];
    flags.extend_from_slice(extra);
    compile_c_text(&sandbox.lib(), name, RECORDER, &flags)
}

fn record_path(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("record.txt")
}

/// The recorded lines (none when nothing was recorded).
fn recorded(sandbox: &Sandbox) -> Vec<String> {
    std::fs::read_to_string(record_path(sandbox))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A script whose one turn answers with text and no tool call.
fn quiet_script(sandbox: &Sandbox) -> PathBuf {
    let path = sandbox.root().join("script.json");
    std::fs::write(&path, json!({"turns": [{"text": "ok"}]}).to_string()).expect("script");
    path
}

/// `pi-hooks run --no-session --script S --hook P... ARGS`.
fn run(sandbox: &Sandbox, plugins: &[&Path], args: &[&str]) -> Output {
    let script = quiet_script(sandbox);
    let mut command = sandbox.command(&["run", "--no-session", "--script"]);
    command.arg(&script);
    for plugin in plugins {
        command.arg("--hook").arg(plugin);
    }
    command.args(args).output().expect("run pi-hooks")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn boolean_and_string_flags_reach_get_flag_and_unset_ones_read_their_default() {
    let sandbox = Sandbox::new();
    let plugin = recorder(&sandbox, "flagger", &[]);

    let output = run(&sandbox, &[&plugin], &["--plan", "--model-x=foo", "hello"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(
        recorded(&sandbox),
        [
            "flagger flag plan=true",
            "flagger flag model-x=\"foo\"",
            "flagger flag --plan=true",
        ]
    );

    // `--model-x VALUE` takes the next word; the prompt after it is still a prompt.
    std::fs::remove_file(record_path(&sandbox)).expect("reset record");
    let output = run(
        &sandbox,
        &[&plugin],
        &["--mode", "json", "--model-x", "bar", "first prompt"],
    );
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(
        recorded(&sandbox),
        [
            "flagger flag plan=null",
            "flagger flag model-x=\"bar\"",
            "flagger flag --plan=null",
        ]
    );
    assert!(
        text(&output.stdout).contains("\"first prompt\""),
        "the prompt was not run: {}",
        text(&output.stdout)
    );

    // A boolean flag does not take the next word: it stays a prompt.
    std::fs::remove_file(record_path(&sandbox)).expect("reset record");
    let output = run(
        &sandbox,
        &[&plugin],
        &["--mode", "json", "--plan", "a prompt"],
    );
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(recorded(&sandbox)[0], "flagger flag plan=true");
    assert_eq!(
        recorded(&sandbox)[1],
        "flagger flag model-x=\"default-model\""
    );
    assert!(
        text(&output.stdout).contains("\"a prompt\""),
        "the prompt was not run: {}",
        text(&output.stdout)
    );
}

#[test]
fn flags_work_in_rpc_mode_too() {
    let sandbox = Sandbox::new();
    let plugin = recorder(&sandbox, "flagger", &[]);
    let script = quiet_script(&sandbox);
    let mut command = sandbox.command(&["rpc", "--no-session", "--plan", "--model-x", "rpc-model"]);
    command.arg("--script").arg(&script).arg("-e").arg(&plugin);
    let output = command
        .stdin(Stdio::null())
        .output()
        .expect("run pi-hooks rpc");
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(
        recorded(&sandbox)[..2],
        [
            "flagger flag plan=true",
            "flagger flag model-x=\"rpc-model\""
        ]
    );
}

#[test]
fn an_unknown_flag_is_refused_with_the_flags_the_plugins_offer() {
    let sandbox = Sandbox::new();
    let plugin = recorder(&sandbox, "flagger", &[]);
    let output = run(&sandbox, &[&plugin], &["--nope", "hello"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "stderr: {}",
        text(&output.stderr)
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("pi-hooks: Unknown option: --nope")
            && stderr.contains("--plan (\"flagger\")")
            && stderr.contains("--model-x (\"flagger\")"),
        "{stderr}"
    );
    assert!(
        recorded(&sandbox).is_empty(),
        "the session ran: {:?}",
        recorded(&sandbox)
    );

    // Without plugins the error says no plugin registers a flag.
    let output = run(&sandbox, &[], &["--plan"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("Unknown option: --plan: it is not an option of 'pi-hooks run' and no loaded plugin registers a flag"),
        "{}",
        text(&output.stderr)
    );

    // A string flag at the end of the line has no value.
    let output = run(&sandbox, &[&plugin], &["--model-x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr)
            .contains("--model-x (a string flag of plugin \"flagger\") needs a value"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn help_of_run_and_rpc_lists_the_plugins_flags() {
    let sandbox = Sandbox::new();
    let plugin = recorder(&sandbox, "flagger", &[]);
    for subcommand in ["run", "rpc"] {
        let output = sandbox
            .command(&[subcommand, "--hook"])
            .arg(&plugin)
            .arg("--help")
            .output()
            .expect("run pi-hooks");
        assert!(output.status.success(), "stderr: {}", text(&output.stderr));
        let stdout = text(&output.stdout);
        let section = stdout
            .split("Plugin flags (registered by the loaded plugins):")
            .nth(1)
            .unwrap_or_else(|| panic!("no plugin flags section in {stdout}"));
        assert!(section.contains("--plan\n"), "{stdout}");
        assert!(section.contains("Start in plan mode"), "{stdout}");
        assert!(
            section.contains("[boolean; plugin \"flagger\"]"),
            "{stdout}"
        );
        assert!(section.contains("--model-x <VALUE>"), "{stdout}");
        assert!(
            section.contains("[string; plugin \"flagger\"; default \"default-model\"]"),
            "{stdout}"
        );
        // The built-in options are still listed above it.
        assert!(stdout.contains("--no-session"), "{stdout}");
    }
    let output = sandbox.run(&["run", "--no-hooks", "--help"]);
    assert!(output.status.success());
    assert!(
        text(&output.stdout).contains("(none: no loaded plugin registers a flag)"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn a_flag_named_like_a_built_in_option_is_warned_about_and_keeps_its_default() {
    let sandbox = Sandbox::new();
    let plugin = recorder(&sandbox, "shadow", &["-DCWD_FLAG"]);
    let project = sandbox.project().to_string_lossy().into_owned();
    let output = run(&sandbox, &[&plugin], &["--plan", "--cwd", &project]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let lines = recorded(&sandbox);
    assert!(
        lines.contains(&"shadow flag cwd=\"mine\"".to_owned()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"shadow flag plan=true".to_owned()),
        "{lines:?}"
    );
    assert!(
        text(&output.stderr).contains("Warning: plugin shadow (")
            && text(&output.stderr)
                .contains("flag --cwd has the name of an option of 'pi-hooks run'"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn two_plugins_share_a_flag_and_the_second_is_warned() {
    let sandbox = Sandbox::new();
    let first = recorder(&sandbox, "first", &[]);
    let second = recorder(&sandbox, "second", &[]);
    let output = run(&sandbox, &[&first, &second], &["--model-x=shared"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let lines = recorded(&sandbox);
    assert!(
        lines.contains(&"first flag model-x=\"shared\"".to_owned()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"second flag model-x=\"shared\"".to_owned()),
        "{lines:?}"
    );
    assert!(
        text(&output.stderr)
            .contains("flag --model-x of plugin \"second\" conflicts with plugin \"first\""),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_plugin_without_the_flag_gets_not_found() {
    let sandbox = Sandbox::new();
    let with = recorder(&sandbox, "with", &[]);
    let without = recorder(&sandbox, "without", &["-DNO_FLAGS"]);
    let output = run(&sandbox, &[&with, &without], &["--plan"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let lines = recorded(&sandbox);
    assert!(
        lines.contains(&"with flag plan=true".to_owned()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"without flag plan=not-found".to_owned()),
        "{lines:?}"
    );
}

#[test]
fn commands_first_plugin_wins_and_built_ins_win_with_warnings() {
    let sandbox = Sandbox::new();
    let first = recorder(&sandbox, "first", &["-DNO_FLAGS"]);
    let second = recorder(&sandbox, "second", &["-DNO_FLAGS"]);

    let output = run(&sandbox, &[&first, &second], &["/deploy now", "/reload"]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let commands: Vec<String> = recorded(&sandbox)
        .into_iter()
        .filter(|l| l.contains(" /"))
        .collect();
    assert_eq!(
        commands,
        ["first /deploy now"],
        "the first plugin's /deploy only; no /reload"
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("command /deploy of plugin \"second\" conflicts with plugin \"first\"")
            && stderr.contains("which registered it first; skipped"),
        "{stderr}"
    );
    assert!(
        stderr.contains("command /reload of plugin \"first\" conflicts with the built-in command /reload; skipped"),
        "{stderr}"
    );

    // `list` shows the warnings on the plugins that lost.
    let first_arg = first.to_string_lossy().into_owned();
    let second_arg = second.to_string_lossy().into_owned();
    let report = sandbox.list_json(&["--no-hooks", "-e", &first_arg, "-e", &second_arg]);
    let warnings = |at: usize| -> Vec<String> {
        report["plugins"][at]["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| w.as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(warnings(0).len(), 1, "{report:#}");
    assert!(warnings(0)[0].contains("/reload"), "{report:#}");
    assert_eq!(warnings(1).len(), 2, "{report:#}");

    // So does `inspect`, for the built-in name.
    let output = sandbox.run(&["inspect", "--run-code", &first_arg]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("warning: command /reload of plugin \"first\" conflicts with the built-in command /reload; skipped"),
        "{}",
        text(&output.stdout)
    );

    // RPC's get_commands lists /deploy once (the first plugin's) and no /reload.
    let script = quiet_script(&sandbox);
    let mut command = sandbox.command(&["rpc", "--no-session", "--script"]);
    command
        .arg(&script)
        .args(["-e", &first_arg, "-e", &second_arg])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start pi-hooks rpc");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"{\"id\":\"c\",\"type\":\"get_commands\"}\n")
        .expect("write");
    let output = child.wait_with_output().expect("rpc output");
    let response: Value = text(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["id"] == "c")
        .unwrap_or_else(|| panic!("no response: {}", text(&output.stdout)));
    let listed = response["data"]["commands"].as_array().expect("commands");
    assert_eq!(listed.len(), 1, "{response:#}");
    assert_eq!(listed[0]["name"], "deploy");
    assert_eq!(listed[0]["sourceInfo"]["path"], first_arg);
}

#[test]
fn an_isolated_plugin_reads_the_command_line_s_flag_values_too() {
    let sandbox = Sandbox::new();
    let plugin = recorder(&sandbox, "flagger", &[]);
    let output = run(
        &sandbox,
        &[&plugin],
        &["--isolate", "--plan", "--model-x=foo", "hello"],
    );
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_eq!(
        recorded(&sandbox),
        [
            "flagger flag plan=true",
            "flagger flag model-x=\"foo\"",
            "flagger flag --plan=true",
        ]
    );
}
