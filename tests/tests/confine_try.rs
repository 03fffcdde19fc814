//! A grant can be tried before packing (issue 34 item 20): `pi-hooks run -e LIB
//! --confine[=GRANT_FILE]` and `pi-hooks emit LIB ... --confine[=GRANT_FILE]` run the plugin
//! confined exactly as an installed package with that grant runs. The plugin is the hostile C
//! fixture (tests/fixtures/sandbox_hostile.c), which reads `$HOME/.ssh/id_rsa` when a `bash`
//! call `echo read` comes: unconfined it reads it, confined to the empty grant it is refused
//! (and the refusal is named, one line, with the entry that would allow it), confined to a
//! grant file naming `~/.ssh` it reads it. A grant file that is not one is refused naming the
//! file and the entry.
#![cfg(target_os = "linux")]

use pi_hooks_tests::confined::{read_run, world};
use serde_json::{Value, json};

/// The `emit` payload of a `bash` call `echo ATTACK`.
fn bash(attack: &str) -> String {
    json!({"toolName": "bash", "toolCallId": "c1", "input": {"command": format!("echo {attack}")}})
        .to_string()
}

/// `pi-hooks emit LIB tool_call` of `echo read` with `extra`; the printed result and stderr
/// (where emit, which has no session, names a sandbox refusal).
fn emit_read(world: &pi_hooks_tests::confined::World, extra: &[&str]) -> (Value, String) {
    let payload = bash("read");
    let mut args = vec![
        "emit",
        world.hostile.to_str().unwrap(),
        "tool_call",
        "--payload",
        &payload,
    ];
    args.extend_from_slice(extra);
    let output = world.sandbox.run(&args);
    assert!(
        output.status.success(),
        "emit {extra:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (result, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// The reason the plugin blocked the call with, in an `emit` result.
fn reason(result: &Value) -> &str {
    result["decision"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no block reason: {result:#}"))
}

#[test]
fn emit_confine_refuses_without_the_grant_and_allows_with_a_grant_that_names_the_file() {
    let world = world();
    // Unconfined (as before): it reads the key.
    let (free, stderr) = emit_read(&world, &[]);
    assert_eq!(reason(&free), "read: ok SECRET-KEY", "{free:#}");
    assert!(!stderr.contains("sandbox denied"), "{stderr}");

    // Confined to the empty grant: refused, and the refusal named once with what to grant.
    let (empty, stderr) = emit_read(&world, &["--confine"]);
    assert_eq!(
        reason(&empty),
        "read: failed Permission denied",
        "{empty:#}"
    );
    let key = world.sandbox.home().join(".ssh/id_rsa");
    let expected = format!(
        "sandbox denied read: read of {} denied: the grant of plugin hostile (--confine (the empty grant)) does not let it read there; to allow it, grant \"read\": [{:?}]",
        key.display(),
        key.display().to_string()
    );
    // On stderr (emit has no session to show it in), one line per refusal: the constructor's
    // read while the plugin loaded, and the call's.
    let line = format!("Extension error ({}): {expected}", world.hostile.display());
    let named: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("sandbox denied"))
        .collect();
    assert_eq!(named, [line.as_str(), line.as_str()], "{stderr}");

    // A grant file naming the folder: allowed.
    let grant = world.sandbox.root().join("grant.json");
    std::fs::write(&grant, json!({"read": ["~/.ssh"]}).to_string()).unwrap();
    let confine = format!("--confine={}", grant.display());
    let (granted, stderr) = emit_read(&world, &[&confine]);
    assert!(!stderr.contains("sandbox denied"), "{stderr}");
    assert_eq!(reason(&granted), "read: ok SECRET-KEY", "{granted:#}");
    // ... and still confined to it: a write elsewhere is refused, naming the grant file.
    let payload = bash("write");
    let output = world.sandbox.run(&[
        "emit",
        world.hostile.to_str().unwrap(),
        "tool_call",
        "--payload",
        &payload,
        &confine,
    ]);
    let write: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        reason(&write),
        "write: failed Permission denied",
        "{write:#}"
    );
    assert!(!world.sandbox.home().join("out/stolen.txt").exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("sandbox denied write")
                && l.contains(&format!("({})", grant.display()))),
        "{stderr}"
    );
}

#[test]
fn run_confine_refuses_without_the_grant_and_allows_with_a_grant_that_names_the_file() {
    let world = world();
    let run_with = |extra: &[&str]| {
        let mut args = world.run_args();
        args.extend_from_slice(extra);
        args.push("read");
        let output = world.sandbox.run(&args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        read_run(output)
    };
    let free = run_with(&[]);
    assert_eq!(free.outcome("read"), "read: ok SECRET-KEY");
    assert_eq!(free.sandbox_reports(), 0);

    let empty = run_with(&["--confine"]);
    assert_eq!(empty.outcome("read"), "read: failed Permission denied");
    let report = empty.report("sandbox denied read: read of");
    let text = report["error"].as_str().unwrap();
    assert!(
        text.contains("(--confine (the empty grant))")
            && text.contains("to allow it, grant \"read\": ["),
        "{text}"
    );
    // On the terminal as one line.
    let lines: Vec<String> = empty
        .stderr()
        .lines()
        .filter(|l| l.contains("sandbox denied read"))
        .map(str::to_owned)
        .collect();
    assert!(!lines.is_empty(), "{}", empty.stderr());

    let grant = world.sandbox.root().join("grant.json");
    std::fs::write(&grant, json!({"read": ["${home}/.ssh"]}).to_string()).unwrap();
    let granted = run_with(&[&format!("--confine={}", grant.display())]);
    assert_eq!(granted.outcome("read"), "read: ok SECRET-KEY");
    assert_eq!(
        granted.reports_with("sandbox denied read"),
        0,
        "{:?}",
        granted.errors
    );
}

#[test]
fn a_grant_file_that_is_not_one_is_refused_naming_the_file_and_the_entry() {
    let world = world();
    let grant = world.sandbox.root().join("grant.json");
    std::fs::write(&grant, json!({"read": ["relative/path"]}).to_string()).unwrap();
    let payload = bash("read");
    let confine = format!("--confine={}", grant.display());
    let output = world.sandbox.run(&[
        "emit",
        world.hostile.to_str().unwrap(),
        "tool_call",
        "--payload",
        &payload,
        &confine,
    ]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&grant.display().to_string()) && stderr.contains("relative/path"),
        "{stderr}"
    );

    // No plugin named: --confine has nothing to confine.
    let mut args = world.run_args();
    args.retain(|a| *a != "--hook" && *a != world.hostile.to_str().unwrap());
    args.extend_from_slice(&["--confine", "read"]);
    let output = world.sandbox.run(&args);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("name one with -e PATH"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
