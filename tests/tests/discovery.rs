//! Discovery order, deduplication, `--no-hooks`, settings paths, and trust of project plugins,
//! through the real `pi-hooks` binary on real compiled plugins.

use std::path::{Path, PathBuf};

use pi_hooks_tests::{Sandbox, compile_c_text, loaded_names};

/// A minimal C plugin named `name` (one tool_call handler).
fn c_plugin(sandbox: &Sandbox, name: &str) -> PathBuf {
    let code = format!(
        r#"#include "pi_hooks.h"
static PiStatus on_call(void *u, const PiValue *e, PiContext *c, PiResult *r) {{
    (void)u; (void)e; (void)c; (void)r; return PI_OK;
}}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{
    return host->registry->on(plugin, pi_str("tool_call"), on_call, NULL);
}}
PI_HOOKS_PLUGIN("{name}", "1.0.0", "test plugin {name}", init, NULL);
"#
    );
    compile_c_text(&sandbox.lib(), &name.replace('-', "_"), &code, &[])
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn load_order_is_project_global_settings_then_cli_and_name_order_inside_folders() {
    let s = Sandbox::new();
    let project_hooks = s.project().join(".pi/hooks");
    let project_ext = s.project().join(".pi/extensions");
    let global_hooks = s.agent_dir().join("hooks");
    let global_ext = s.agent_dir().join("extensions");
    let extra = s.root().join("extra");
    s.install(&c_plugin(&s, "p-b"), &project_hooks, "b.so");
    s.install(&c_plugin(&s, "p-a"), &project_hooks, "a.so");
    s.install(&c_plugin(&s, "p-ext"), &project_ext, "ext.so");
    s.install(&c_plugin(&s, "g-z"), &global_hooks, "z.so");
    s.install(&c_plugin(&s, "g-ext"), &global_ext, "0.so");
    s.install(&c_plugin(&s, "ps"), &extra, "ps.so");
    s.install(&c_plugin(&s, "gs"), &extra, "gs.so");
    s.install(&c_plugin(&s, "cli"), &extra, "cli.so");
    // hooks/ before extensions/ in each place; not a library: ignored in folders.
    write(&global_hooks.join("README.md"), "notes");
    // Project settings paths are relative to <cwd>/.pi; global ones to the agent dir.
    write(
        &s.project().join(".pi/settings.json"),
        r#"{"hooks": ["../../extra/ps.so"]}"#,
    );
    write(
        &s.agent_dir().join("settings.json"),
        r#"{"extensions": ["../../../extra/gs.so"]}"#,
    );

    // Project plugins need trust first.
    for file in ["a.so", "b.so"] {
        let out = s.run(&["trust", project_hooks.join(file).to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    s.run(&[
        "trust",
        project_ext.join("ext.so").to_str().unwrap(),
        extra.join("ps.so").to_str().unwrap(),
    ]);

    let report = s.list_json(&["--hook", "../extra/cli.so"]);
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(
        loaded_names(&report),
        ["p-a", "p-b", "p-ext", "g-z", "g-ext", "ps", "gs", "cli"]
    );
    let sources: Vec<&str> = report["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        [
            "project",
            "project",
            "project",
            "global",
            "global",
            "project-settings",
            "global-settings",
            "cli"
        ]
    );

    // --no-hooks: only explicit paths.
    let report = s.list_json(&["--no-hooks", "-e", "../extra/cli.so"]);
    assert_eq!(loaded_names(&report), ["cli"]);
}

#[test]
fn project_plugins_load_only_when_their_exact_bytes_are_trusted() {
    let s = Sandbox::new();
    let hooks = s.project().join(".pi/hooks");
    let path = s.install(&c_plugin(&s, "cloned"), &hooks, "cloned.so");
    s.install(
        &c_plugin(&s, "mine"),
        &s.agent_dir().join("hooks"),
        "mine.so",
    );

    let report = s.list_json(&[]);
    assert_eq!(loaded_names(&report), ["mine"]);
    let untrusted = &report["untrusted"][0];
    assert_eq!(untrusted["trust"], "new");
    assert!(untrusted["path"].as_str().unwrap().ends_with("cloned.so"));
    assert!(
        untrusted["trustCommand"]
            .as_str()
            .unwrap()
            .starts_with("pi-hooks trust ")
    );
    let text = String::from_utf8(s.run(&["list"]).stdout).unwrap();
    assert!(
        text.contains("waiting for trust") && text.contains("pi-hooks trust"),
        "{text}"
    );

    // Trust is recorded in the user's agent dir, not in the project.
    let out = s.run(&["trust", path.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(s.agent_dir().join("trusted-plugins.json").exists());
    assert!(!s.project().join(".pi/trusted-plugins.json").exists());
    assert_eq!(loaded_names(&s.list_json(&[])), ["cloned", "mine"]);

    // A changed file is untrusted again.
    std::fs::copy(c_plugin(&s, "cloned-v2"), &path).unwrap();
    let report = s.list_json(&[]);
    assert_eq!(loaded_names(&report), ["mine"]);
    assert_eq!(report["untrusted"][0]["trust"], "changed");

    // Untrust withdraws approval.
    s.run(&["trust", path.to_str().unwrap()]);
    assert_eq!(loaded_names(&s.list_json(&[])), ["cloned-v2", "mine"]);
    s.run(&["untrust", path.to_str().unwrap()]);
    assert_eq!(s.list_json(&[])["untrusted"][0]["trust"], "new");

    // A corrupt trust store fails closed: nothing from the project loads, and it says why.
    std::fs::write(s.agent_dir().join("trusted-plugins.json"), "{broken").unwrap();
    let report = s.list_json(&[]);
    assert_eq!(loaded_names(&report), ["mine"]);
    assert!(
        report["errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("trust store"),
        "{report}"
    );
}

#[test]
fn inspect_names_the_abi_and_every_registration() {
    let s = Sandbox::new();
    let lib = c_plugin(&s, "inspected");
    let out = s.run(&["inspect", "--json", "--run-code", lib.to_str().unwrap()]);
    assert!(out.status.success());
    let report = pi_hooks_tests::parse_json_output(&out);
    let plugin = &report["plugins"][0];
    assert_eq!(plugin["name"], "inspected");
    assert_eq!(plugin["version"], "1.0.0");
    let abi = format!("1.{}", pi_hooks_abi::ffi::PI_HOOKS_ABI_MINOR);
    assert_eq!(plugin["abi"], abi.as_str());
    assert_eq!(plugin["events"], serde_json::json!(["tool_call"]));
    assert_eq!(plugin["sha256"].as_str().unwrap().len(), 64);

    let missing = s.run(&["inspect", "nope.so"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stdout).contains("nope.so"));
}

#[test]
fn inspect_reads_a_library_from_its_bytes_without_running_even_its_constructor() {
    let s = Sandbox::new();
    let marker = s.root().join("constructor-ran");
    let with_constructor = format!(
        r#"#include <stdio.h>
#include "pi_hooks.h"
__attribute__((constructor)) static void on_load(void) {{
    FILE *f = fopen("{}", "w");
    if (f != NULL) fclose(f);
}}
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {{ (void)host; (void)plugin; return PI_OK; }}
PI_HOOKS_PLUGIN("ctor", "2.3.4", "runs code when loaded", init, NULL);
"#,
        marker.display()
    );
    let lib = compile_c_text(&s.lib(), "ctor", &with_constructor, &[]);
    let out = s.run(&["inspect", lib.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    let abi = format!("1.{}", pi_hooks_abi::ffi::PI_HOOKS_ABI_MINOR);
    assert!(
        stdout.starts_with(&format!("Plugin ctor 2.3.4 (ABI {abi})\n"))
            && stdout.contains("  platform: linux-x64-gnu\n")
            && stdout.contains("  description: runs code when loaded\n"),
        "{stdout}"
    );
    assert!(!marker.exists(), "inspect ran the library's constructor");
    // --run-code loads it: the constructor runs.
    assert!(
        s.run(&["inspect", "--run-code", lib.to_str().unwrap()])
            .status
            .success()
    );
    assert!(marker.exists());

    // A plugin with an entry function of its own and no information block: shown, with why
    // its name is not there.
    let own_entry = r#"#include "pi_hooks.h"
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) { (void)host; (void)plugin; return PI_OK; }
static const PiPluginDescriptor d = PI_HOOKS_DESCRIPTOR("own", "1.0.0", "", init, NULL);
PI_HOOKS_EXTERN_C PI_HOOKS_EXPORT const PiPluginDescriptor *pi_hooks_plugin_v1(void) { return &d; }
"#;
    let lib = compile_c_text(&s.lib(), "own_entry", own_entry, &[]);
    let out = s.run(&["inspect", "--json", lib.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let report = pi_hooks_tests::parse_json_output(&out);
    assert_eq!(report["plugins"][0]["name"], serde_json::Value::Null);
    assert_eq!(report["plugins"][0]["platform"], "linux-x64-gnu");
    let out = s.run(&["inspect", lib.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("exports no pi_hooks_plugin_info_v1 block"),
        "{out:?}"
    );

    // A shared library that is no plugin at all.
    let not_plugin = compile_c_text(
        &s.lib(),
        "not_plugin",
        "int answer(void) { return 42; }\n",
        &[],
    );
    let out = s.run(&["inspect", not_plugin.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not export pi_hooks_plugin_v1"),
        "{out:?}"
    );
}
