//! One agent directory shared with pi 1.6 (issue 33 items 2 and 6), through the real binary:
//! a `packages` entry with nothing where pi puts it is said in every mode (a guard that is
//! silently missing is the worst outcome); pi's project trust (`trust.json`,
//! `defaultProjectTrust`, `--approve`/`--no-approve`, and serve's `PI_HOOKS_PROJECT_TRUST`
//! from the bridge) stops a project's native plugins even when `pi-hooks trust` pinned them.

use std::process::Output;

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::{Sandbox, c_example_plugin, json_lines, loaded_names};
use serde_json::{Value, json};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `(toolName, isError)` of every tool result of the embedded demo run (a harmless bash, an
/// `rm -rf` in a scratch folder, a write to `.env`), run with `extra` arguments.
fn demo_tool_results(sandbox: &Sandbox, extra: &[&str]) -> (Vec<(String, bool)>, Output) {
    let mut args = vec!["run", "--mode", "json", "--no-session"];
    args.extend_from_slice(extra);
    let output = sandbox.run(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let results = json_lines(&output)
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .map(|e| {
            (
                e["message"]["toolName"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                e["message"]["isError"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    (results, output)
}

/// Whether the demo's write to `.env` was blocked (protected-paths acted).
fn env_write_blocked(results: &[(String, bool)]) -> bool {
    results
        .iter()
        .any(|(name, error)| name == "write" && *error)
}

/// `pi-hooks serve` with `env`; its `hello`.
fn serve_hello(sandbox: &Sandbox, env: &[(&str, &str)]) -> Value {
    let mut command = sandbox.command(&["serve"]);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut client = RpcClient::start(command);
    let hello = client.next_line();
    client.close();
    hello
}

#[test]
fn a_packages_entry_with_nothing_where_pi_puts_it_is_said_in_every_mode() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"packages": ["npm:@acme/permission-gate", "./gone"]}).to_string(),
    )
    .unwrap();
    // A package pi installed that is not a native one (no `piHooks` key) stays quiet.
    let ts = sandbox.agent_dir().join("npm/node_modules/pi-ts-thing");
    std::fs::create_dir_all(&ts).unwrap();
    std::fs::write(ts.join("package.json"), r#"{"name":"pi-ts-thing"}"#).unwrap();
    let mut settings: Value =
        serde_json::from_slice(&std::fs::read(sandbox.agent_dir().join("settings.json")).unwrap())
            .unwrap();
    settings["packages"]
        .as_array_mut()
        .unwrap()
        .push("npm:pi-ts-thing".into());
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let managed = sandbox
        .agent_dir()
        .join("npm/node_modules/@acme/permission-gate");

    // list: the entry, where it was looked for, what to do.
    let list = sandbox.run(&["list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains("package npm:@acme/permission-gate is listed but not installed")
            && text.contains(&managed.display().to_string())
            && text.contains("npm's global folder")
            && text.contains("`pi install npm:@acme/permission-gate`"),
        "{text}"
    );
    assert!(
        text.contains("package ./gone is listed but its folder"),
        "{text}"
    );
    assert!(!text.contains("pi-ts-thing"), "{text}");

    // JSON mode: an `extension_error` line on stdout, and the line on stderr.
    let (_, output) = demo_tool_results(&sandbox, &[]);
    let lines = json_lines(&output);
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "extension_error" && l["event"] == "load")
        .collect();
    assert_eq!(errors.len(), 2, "{lines:#?}");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("npm:@acme/permission-gate is listed but not installed"),
        "{errors:#?}"
    );
    assert!(
        stderr(&output).contains("npm:@acme/permission-gate is listed but not installed"),
        "{}",
        stderr(&output)
    );

    // Print mode: on stderr.
    let print = sandbox.run(&["run", "--no-session"]);
    assert!(
        stderr(&print).contains("npm:@acme/permission-gate is listed but not installed"),
        "{}",
        stderr(&print)
    );

    // serve (what the bridge shows in pi): in the hello's errors.
    let hello = serve_hello(&sandbox, &[]);
    let text = hello["errors"].to_string();
    assert!(
        text.contains("npm:@acme/permission-gate is listed but not installed"),
        "{hello:#}"
    );

    // Once pi installs it there, it loads and the warning is gone.
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz =
        pi_hooks_tests::packages::pack(&sandbox, &library, &sandbox.root().join("dist"), None);
    pi_hooks_tests::packages::unpack(&tgz, &managed);
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"packages": ["npm:@acme/permission-gate"]}).to_string(),
    )
    .unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report:#}");
    assert_eq!(report["errors"], json!([]), "{report:#}");
}

/// A project with protected-paths in `.pi/extensions/`, pinned with `pi-hooks trust`.
fn trusted_project_plugin(sandbox: &Sandbox) {
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let plugin = sandbox.install(
        &library,
        &sandbox.project().join(".pi/extensions"),
        "libprotected_paths.so",
    );
    let out = sandbox.run(&["trust", plugin.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn pi_s_no_for_the_project_is_final_even_for_a_pinned_plugin() {
    let sandbox = Sandbox::new();
    trusted_project_plugin(&sandbox);
    // No decision of pi's: the pin decides (as before).
    let (results, _) = demo_tool_results(&sandbox, &[]);
    assert!(env_write_blocked(&results), "{results:?}");

    // pi's saved "do not trust" (what `/trust` writes, canonical folder keys).
    let canonical = std::fs::canonicalize(sandbox.project()).unwrap();
    let store = sandbox.agent_dir().join("trust.json");
    std::fs::write(
        &store,
        json!({canonical.to_str().unwrap(): false}).to_string(),
    )
    .unwrap();
    let (results, output) = demo_tool_results(&sandbox, &[]);
    assert!(!env_write_blocked(&results), "{results:?}");
    assert!(
        stderr(&output).contains("project plugin not loaded: pi does not trust this project"),
        "{}",
        stderr(&output)
    );
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report:#}");
    assert!(
        report["warnings"].to_string().contains("trust.json"),
        "{report:#}"
    );
    // `--approve` (pi's flag) for this run: the pin decides again.
    let (results, _) = demo_tool_results(&sandbox, &["--approve"]);
    assert!(env_write_blocked(&results), "{results:?}");

    // A saved "trust" of a parent folder, and `--no-approve` over it.
    std::fs::write(
        &store,
        json!({canonical.parent().unwrap().to_str().unwrap(): true}).to_string(),
    )
    .unwrap();
    let (results, _) = demo_tool_results(&sandbox, &[]);
    assert!(env_write_blocked(&results), "{results:?}");
    let (results, output) = demo_tool_results(&sandbox, &["--no-approve"]);
    assert!(!env_write_blocked(&results), "{results:?}");
    assert!(
        stderr(&output).contains("--no-approve"),
        "{}",
        stderr(&output)
    );

    // `defaultProjectTrust: "never"` with nothing saved.
    std::fs::remove_file(&store).unwrap();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"defaultProjectTrust": "never"}).to_string(),
    )
    .unwrap();
    let (results, output) = demo_tool_results(&sandbox, &[]);
    assert!(!env_write_blocked(&results), "{results:?}");
    assert!(
        stderr(&output).contains("`defaultProjectTrust` is \"never\""),
        "{}",
        stderr(&output)
    );

    // A trust store pi would refuse: nothing of the project loads.
    std::fs::remove_file(sandbox.agent_dir().join("settings.json")).unwrap();
    std::fs::write(
        &store,
        json!({canonical.to_str().unwrap(): "yes"}).to_string(),
    )
    .unwrap();
    let report = sandbox.list_json(&[]);
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report:#}");
    assert!(
        report["warnings"]
            .to_string()
            .contains("must be true, false, or null"),
        "{report:#}"
    );
}

#[test]
fn serve_takes_pi_s_decision_from_the_bridge() {
    let sandbox = Sandbox::new();
    trusted_project_plugin(&sandbox);
    let hello = serve_hello(&sandbox, &[]);
    assert_eq!(hello["plugins"][0]["name"], "protected-paths", "{hello:#}");
    let hello = serve_hello(&sandbox, &[("PI_HOOKS_PROJECT_TRUST", "yes")]);
    assert_eq!(hello["plugins"][0]["name"], "protected-paths", "{hello:#}");
    let hello = serve_hello(&sandbox, &[("PI_HOOKS_PROJECT_TRUST", "no")]);
    assert_eq!(hello["plugins"], json!([]), "{hello:#}");
    assert!(
        hello["loadMessages"]
            .to_string()
            .contains("pi does not trust this project (PI_HOOKS_PROJECT_TRUST=no"),
        "{hello:#}"
    );
    // pi's own flags on serve's command line do the same.
    let mut client = RpcClient::start(sandbox.command(&["serve", "--no-approve"]));
    let hello = client.next_line();
    client.close();
    assert_eq!(hello["plugins"], json!([]), "{hello:#}");
    // A value that is neither fails closed.
    let hello = serve_hello(&sandbox, &[("PI_HOOKS_PROJECT_TRUST", "maybe")]);
    assert_eq!(hello["plugins"], json!([]), "{hello:#}");
}

/// What `pi config` writes (`-builtin:mcp`, `+builtin:…`) is pi's own and no load failure;
/// `!pattern`, `+path` and `-path` filter the folder's and the listed plugins as in pi.
#[test]
fn pi_s_extensions_entry_forms_are_understood() {
    let sandbox = Sandbox::new();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    sandbox.install(
        &library,
        &sandbox.agent_dir().join("extensions"),
        "libprotected_paths.so",
    );
    let listed = sandbox.install(&library, &sandbox.root().join("more"), "libgate_copy.so");
    let settings = |entries: Value| {
        std::fs::write(
            sandbox.agent_dir().join("settings.json"),
            json!({"extensions": entries}).to_string(),
        )
        .unwrap();
        sandbox.list_json(&[])
    };
    let report = settings(json!([
        "-builtin:mcp",
        "+builtin:codemode",
        "builtin:tool-search"
    ]));
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report:#}");
    assert_eq!(report["errors"], json!([]), "{report:#}");
    let (results, _) = demo_tool_results(&sandbox, &[]);
    assert!(env_write_blocked(&results), "{results:?}");

    // `!pattern` excludes the folder's file; `+path` brings it back; `-path` wins over both.
    let report = settings(json!(["-builtin:mcp", "!libprotected*.so"]));
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report:#}");
    let (results, _) = demo_tool_results(&sandbox, &[]);
    assert!(!env_write_blocked(&results), "{results:?}");
    let report = settings(json!([
        "!libprotected*.so",
        "+extensions/libprotected_paths.so"
    ]));
    assert_eq!(loaded_names(&report), ["protected-paths"], "{report:#}");
    let report = settings(json!([
        "+extensions/libprotected_paths.so",
        "-extensions/libprotected_paths.so"
    ]));
    assert_eq!(loaded_names(&report), Vec::<String>::new(), "{report:#}");

    // A listed folder: `-path` (absolute) drops one file of it, the other still loads.
    let other = sandbox.install(&library, &sandbox.root().join("more"), "libgate_other.so");
    let report = settings(json!([
        "-extensions/libprotected_paths.so",
        listed.parent().unwrap().to_str().unwrap(),
        format!("-{}", listed.display()),
    ]));
    let paths: Vec<&str> = report["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [other.to_str().unwrap()], "{report:#}");
    assert_eq!(report["errors"], json!([]), "{report:#}");
}

/// A session pi 1.6 edited (`context_edit` entries, as `appendContextEdit` writes them)
/// continues in pi-hooks with the edits in force: the replaced content is what the model gets,
/// an entry edited to `null` is left out, and the latest edit of a target wins.
#[test]
fn context_edit_entries_are_honoured_on_resume() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, user_texts};
    let sandbox = Sandbox::new();
    let server = FakeOpenAi::start(|body| {
        Reply::Text(format!(
            "answer {}",
            body["messages"].as_array().map_or(0, Vec::len)
        ))
    });
    let file = sandbox.root().join("session.jsonl");
    let run = |prompt: &str| {
        let output = sandbox
            .command(&["run", "--mode", "json", "--session", file.to_str().unwrap()])
            .args([
                "--provider",
                "local",
                "--model",
                "m",
                "--base-url",
                &server.base_url,
            ])
            .arg(prompt)
            .env("OPENAI_API_KEY", "sk-test")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    };
    run("my secret is hunter2");
    run("second question");
    let entries: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages: Vec<&Value> = entries.iter().filter(|e| e["type"] == "message").collect();
    let (secret, first_answer, second) = (
        messages[0]["id"].as_str().unwrap(),
        messages[1]["id"].as_str().unwrap(),
        messages[2]["id"].as_str().unwrap(),
    );
    assert_eq!(messages[1]["message"]["role"], "assistant");
    let mut parent = entries.last().unwrap()["id"].as_str().unwrap().to_owned();
    let mut text = std::fs::read_to_string(&file).unwrap();
    for (n, (target, replacement)) in [
        (secret, json!({"content": "first try"})),
        (
            secret,
            json!({"content": [{"type": "text", "text": "[EDITED OUT]"}]}),
        ),
        (first_answer, Value::Null),
        (second, json!({"content": "second question, edited"})),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("edit{n:04}");
        text.push_str(
            &json!({"type": "context_edit", "id": id, "parentId": parent,
                "timestamp": "2026-11-28T06:00:00.000Z", "targetId": target,
                "replacement": replacement})
            .to_string(),
        );
        text.push('\n');
        parent = id;
    }
    std::fs::write(&file, text).unwrap();
    run("third question");
    let last = server.requests().pop().unwrap();
    assert_eq!(
        user_texts(&last),
        ["[EDITED OUT]", "second question, edited", "third question"],
        "{last:#}"
    );
    let sent = last["messages"].to_string();
    assert!(!sent.contains("hunter2"), "{sent}");
    let assistants: Vec<&Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    // The first answer is left out, the second is there.
    assert_eq!(assistants.len(), 1, "{last:#}");

    // A compaction summarizes what the context holds: the secret is not sent to the model
    // that summarizes either.
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    let before = server.requests().len();
    let mut command = sandbox.command(&["rpc", "--session", file.to_str().unwrap()]);
    command
        .args([
            "--provider",
            "local",
            "--model",
            "m",
            "--base-url",
            &server.base_url,
        ])
        .env("OPENAI_API_KEY", "sk-test");
    let mut client = RpcClient::start(command);
    client.send(&json!({"id": "c", "type": "compact"}));
    let compacted = client.response("c");
    assert_eq!(compacted["success"], true, "{compacted}");
    client.close();
    let summarizing = &server.requests()[before..];
    assert!(!summarizing.is_empty());
    let sent = serde_json::to_string(summarizing).unwrap();
    assert!(sent.contains("[EDITED OUT]"), "{sent}");
    assert!(!sent.contains("hunter2"), "{sent}");
}

/// One `models.json` for both hosts: values resolve as pi 1.6 resolves them (`$VAR`,
/// `${VAR}`, literals, `!command`, `$$`/`$!` escapes), checked on the wire.
#[test]
fn models_json_values_resolve_as_pi_1_6_resolves_them() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
    let sandbox = Sandbox::new();
    let server = FakeOpenAi::start(|_| Reply::Text("ok".into()));
    let run = |api_key: &str, headers: Value| {
        let mut models = server.models_json();
        models["providers"]["fake"]["apiKey"] = api_key.into();
        models["providers"]["fake"]["headers"] = headers;
        std::fs::write(sandbox.agent_dir().join("models.json"), models.to_string()).unwrap();
        let output = sandbox
            .command(&["run", "--mode", "json", "--no-session"])
            .args(["--provider", "fake", "--model", "fake-model", "hello"])
            .env("MY_TEST_KEY", "sk-real")
            .env("TEAM", "blue")
            .env_remove("PI_HOOKS_UNSET_KEY")
            .output()
            .unwrap();
        let end = json_lines(&output)
            .into_iter()
            .rfind(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
            .unwrap_or_else(|| panic!("no answer: {}", stderr(&output)));
        (server.recorded().pop(), end)
    };
    let (sent, _) = run("$MY_TEST_KEY", json!({}));
    assert_eq!(
        sent.unwrap().header("authorization"),
        Some("Bearer sk-real")
    );
    let (sent, _) = run("MY_TEST_KEY", json!({}));
    assert_eq!(
        sent.unwrap().header("authorization"),
        Some("Bearer MY_TEST_KEY")
    );
    let (sent, _) = run(
        "${MY_TEST_KEY}-2",
        json!({"X-Team": "team-$TEAM", "X-Cmd": "!printf ' cmd-value '", "X-Lit": "$$TEAM$!"}),
    );
    let sent = sent.unwrap();
    assert_eq!(sent.header("authorization"), Some("Bearer sk-real-2"));
    assert_eq!(sent.header("x-team"), Some("team-blue"));
    assert_eq!(sent.header("x-cmd"), Some("cmd-value"));
    assert_eq!(sent.header("x-lit"), Some("$TEAM!"));
    // A variable that is not set fails the request with pi's words; nothing is sent.
    let before = server.recorded().len();
    let (_, end) = run("$PI_HOOKS_UNSET_KEY", json!({}));
    assert_eq!(server.recorded().len(), before);
    assert_eq!(end["message"]["stopReason"], "error", "{end:#}");
    assert!(
        end["message"]["errorMessage"]
            .as_str()
            .unwrap_or_default()
            .contains(
                "Failed to resolve API key for provider \"fake\" from environment variable: PI_HOOKS_UNSET_KEY"
            ),
        "{end:#}"
    );
}

/// `pi-hooks install npm:` puts a user package where pi 1.6 keeps them
/// (`<agentDir>/npm/node_modules`, `npm install --prefix`) once pi keeps them there, and
/// `remove` takes it out of there; without pi's folder it goes to npm's global folder as
/// before. After `pi update --extensions` moved a package pi-hooks installed globally into
/// pi's folder, the moved copy is the one that loads.
#[test]
fn pi_hooks_install_npm_uses_pi_s_folder_and_follows_a_move() {
    use pi_hooks_tests::npm::{PiUser, Registry, pack_as};
    let sandbox = Sandbox::new();
    let registry = Registry::start();
    let library = c_example_plugin(&sandbox.lib(), "protected-paths", "protected_paths");
    let tgz = pack_as(
        &sandbox,
        &library,
        "@acme/protected-paths",
        &sandbox.root().join("dist"),
    );
    registry.publish(&tgz);
    // The package depends on `pi-hooks` (the bridge pi loads); a stand-in for it, so that the
    // test needs no release build of pi-hooks' own npm packages.
    let stub = sandbox.root().join("pi-hooks-stub");
    std::fs::create_dir_all(&stub).unwrap();
    std::fs::write(
        stub.join("package.json"),
        r#"{"name": "pi-hooks", "version": "999.0.0"}"#,
    )
    .unwrap();
    registry.publish(&stub);
    let user = PiUser::new(&sandbox, &registry);
    let pi_hooks = |args: &[&str]| {
        let output = user
            .command(pi_hooks_tests::pi_hooks_bin())
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "pi-hooks {args:?}: {}",
            stderr(&output)
        );
        output
    };
    let managed_root = sandbox.agent_dir().join("npm");
    let managed = managed_root.join("node_modules/@acme/protected-paths");
    let global = user.npm_global_root().join("@acme/protected-paths");
    let loaded_from = || {
        let output = user
            .command(pi_hooks_tests::pi_hooks_bin())
            .args(["list", "--json"])
            .output()
            .unwrap();
        let report = pi_hooks_tests::parse_json_output(&output);
        assert_eq!(loaded_names(&report), ["protected-paths"], "{report:#}");
        std::path::PathBuf::from(report["plugins"][0]["path"].as_str().unwrap())
    };

    // pi 1.6 made its npm project (at its first `pi install npm:…`).
    std::fs::create_dir_all(&managed_root).unwrap();
    std::fs::write(
        managed_root.join("package.json"),
        "{\n  \"name\": \"pi-extensions\",\n  \"private\": true\n}",
    )
    .unwrap();
    pi_hooks(&["install", "npm:@acme/protected-paths", "--yes"]);
    assert!(managed.join("package.json").is_file());
    assert!(!global.exists());
    assert!(loaded_from().starts_with(&managed));
    pi_hooks(&["remove", "@acme/protected-paths"]);
    assert!(!managed.exists());

    // No folder of pi's: npm's global folder, as every pi finds it.
    std::fs::remove_dir_all(&managed_root).unwrap();
    pi_hooks(&["install", "npm:@acme/protected-paths", "--yes"]);
    assert!(global.join("package.json").is_file());
    assert!(loaded_from().starts_with(&global));
    // `pi update --extensions` reinstalls it in pi's folder (the global copy stays).
    let output = user
        .command("npm")
        .args([
            "install",
            "@acme/protected-paths",
            "--ignore-scripts",
            "--prefix",
        ])
        .arg(&managed_root)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(managed.join("package.json").is_file());
    assert!(loaded_from().starts_with(&managed));
    pi_hooks(&["remove", "@acme/protected-paths"]);
    assert!(!managed.exists());
}
