//! Confined plugins (`loader/host/src/sandbox`): a hostile C plugin
//! (tests/fixtures/sandbox_hostile.c) under the real binary tries, from its own code and
//! through the host's `exec`, to read a key outside its grant, write outside it (a file, a
//! folder, a rename), connect to a TCP listener on 127.0.0.1, run `/bin/sh`, fork without
//! end, allocate past its memory grant, `ptrace` and signal the host. Without the grant each
//! is refused (Landlock's file refusals, the seccomp refusals and the host's own refusals are
//! named on the terminal, in the JSON stream and in the trace, with the plugin, the action
//! and the grant) and the session goes on; with the matching grant each succeeds, so a test
//! cannot pass because everything is broken. Its static constructor is confined already. A kill by the kernel is reported like a crash.
//! An installed package runs confined to exactly its accepted capabilities, and an update
//! that asks for more is refused until granted.
//!
//! Linux only: elsewhere a confined plugin is refused (see docs/sandbox.md).
#![cfg(target_os = "linux")]

use std::path::PathBuf;

use pi_hooks_tests::confined::{Run, World, hand_over, read_run, run, run_with, world};
use pi_hooks_tests::packages::{edit_package_json, ok, refused, unpack};
use serde_json::{Value, json};

/// Held by the tests that fork many processes: `RLIMIT_NPROC` counts every process of the
/// user, so one test's forks would eat another's bound.
static FORKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The words naming an allocation past a grant of `memoryMiB` 64.
const MEMORY_REFUSED: &str = "allocation of 256 MiB refused: past the memory its grant allows (memoryMiB 64; the child's own needs are counted besides)";

fn port(world: &World) -> String {
    format!("connect {}", world.listener.local_addr().unwrap().port())
}

#[test]
fn without_the_grant_every_attack_is_refused_and_named_and_the_session_goes_on() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"read": ["${cwd}"], "memoryMiB": 64}}});
    let connect = port(&world);
    let run = run(
        &world,
        &settings,
        &["--trace=json"],
        &[
            "ctor",
            "read",
            "write",
            "mkdir",
            "rename",
            &connect,
            "execve",
            "spawn",
            "hostexec",
            "forkbomb",
            "alloc 256",
            "ptrace",
            "signal",
            "after",
        ],
    );
    // Each attack failed, as the plugin itself saw it.
    for (attack, expected) in [
        ("ctor", "ctor: failed Permission denied"),
        ("read", "read: failed Permission denied"),
        ("write", "write: failed Permission denied"),
        ("mkdir", "mkdir: failed Permission denied"),
        ("connect", "connect: failed socket: Permission denied"),
        ("execve", "execve: failed Operation not permitted"),
        ("spawn", "spawn: failed fork: Operation not permitted"),
        (
            "forkbomb",
            "forkbomb: failed after 0 forks: Operation not permitted",
        ),
        ("alloc", "alloc: failed 256 MiB: Cannot allocate memory"),
        ("ptrace", "ptrace: failed Operation not permitted"),
        ("signal", "signal: failed Operation not permitted"),
    ] {
        assert_eq!(run.outcome(attack), expected, "{attack}");
    }
    // The host's exec answered PI_ERR_DENIED with a reason the plugin can read.
    let hostexec = run.outcome("hostexec");
    assert!(
        hostexec.starts_with("hostexec: failed status 11 (PI_ERR_DENIED)")
            && hostexec.contains("exec of \"/bin/sh\" denied")
            && hostexec.contains("(exec: nothing)"),
        "{hostexec}"
    );
    // Across folders Landlock refuses a rename with EXDEV or EACCES, depending on the rules.
    let rename = run.outcome("rename");
    assert!(
        rename == "rename: failed Permission denied"
            || rename == "rename: failed Invalid cross-device link",
        "{rename}"
    );
    assert!(!world.sandbox.home().join("out/stolen.txt").exists());
    assert!(!world.sandbox.home().join("out/made").exists());
    assert!(world.sandbox.home().join(".ssh/id_rsa").exists());
    // The session went on: the last call ran.
    assert_eq!(run.ran, ["echo after"]);
    // Named: the plugin, the action and the grant, in the JSON stream and on the terminal.
    let settings_file = world.sandbox.agent_dir().join("settings.json");
    let key = world.sandbox.home().join(".ssh/id_rsa");
    let stolen = world.sandbox.home().join("out/stolen.txt");
    // Landlock's refusals (the constructor's read, the read, the write), named by the
    // supervisor with the path and what the grant lets the plugin do there.
    // One short line each: what was refused, the plugin, where its grant comes from and the
    // one entry that would allow it (issue 34 item 16).
    let read_denied = format!(
        "sandbox denied read: read of {} denied: the grant of plugin hostile ({}) does not let it read there; to allow it, grant \"read\": [{:?}]",
        key.display(),
        settings_file.display(),
        key.display().to_string()
    );
    let write_denied = format!(
        "sandbox denied write: write of {} denied: the grant of plugin hostile ({}) does not let it write there; to allow it, grant \"write\": [{:?}]",
        stolen.display(),
        settings_file.display(),
        stolen.parent().unwrap().display().to_string()
    );
    // One for the constructor, one for the `read` attack.
    assert_eq!(
        run.reports_with(&read_denied),
        2,
        "{:?}\n{}",
        run.errors,
        run.stderr()
    );
    // None went unnamed (the child would say so on stderr).
    assert!(
        !run.stderr().contains("refusal went unnamed"),
        "{}",
        run.stderr()
    );
    // The report reached the host before the refused call returned to the plugin.
    let reported = run.position(|l| {
        l["type"] == "extension_error" && l["error"].as_str().unwrap().contains(&write_denied)
    });
    let answered = run.position(|l| {
        l["type"] == "tool_execution_end"
            && l["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("write: "))
    });
    assert!(reported < answered, "{:?}", run.lines);
    let made = world.sandbox.home().join("out/made");
    let mkdir_denied = format!(
        "sandbox denied mkdir: mkdir of {} denied: the grant of plugin hostile ({}) does not let it write there",
        made.display(),
        settings_file.display()
    );
    let rename_denied = format!(
        "sandbox denied rename: rename of {} denied: the grant of plugin hostile ({}) does not let it write there",
        key.display(),
        settings_file.display()
    );
    for what in [
        read_denied.as_str(),
        write_denied.as_str(),
        mkdir_denied.as_str(),
        rename_denied.as_str(),
        "sandbox denied socket(AF_INET): refused by its seccomp filter: its grant has network: no",
        "sandbox denied execve: refused by its seccomp filter: its grant runs no programs",
        "sandbox denied clone: refused by its seccomp filter: its grant runs no programs, so it may not start processes",
        "sandbox denied exec: exec of \"/bin/sh\" denied: the grant of plugin hostile",
        "sandbox denied ptrace: refused by its seccomp filter: a confined plugin may not trace other processes",
        "sandbox denied kill of the host",
        &format!("sandbox denied memory: {MEMORY_REFUSED}"),
    ] {
        let report = run.report(what);
        let text = report["error"].as_str().unwrap();
        assert_eq!(report["extensionPath"], world.hostile.to_str().unwrap());
        // Where the grant comes from, once; the grant itself not spelled out.
        assert_eq!(
            text.matches(&settings_file.display().to_string()).count(),
            1,
            "{text}"
        );
        assert!(!text.contains("write: nothing"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        assert!(
            run.stderr().contains(&format!(
                "Extension error ({}): {text}",
                world.hostile.display()
            )),
            "{}",
            run.stderr()
        );
    }
    // The C library's retries of the refused allocation (mmap, brk, mmap again) are one.
    assert_eq!(
        run.reports_with("sandbox denied memory"),
        1,
        "{:?}",
        run.errors
    );
    // Named before the plugin saw its allocation fail.
    let reported = run.position(|l| {
        l["type"] == "extension_error" && l["error"].as_str().unwrap().contains(MEMORY_REFUSED)
    });
    let answered = run.position(|l| {
        l["type"] == "tool_execution_end"
            && l["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("alloc: "))
    });
    assert!(reported < answered, "{:?}", run.lines);
    // And in the hook trace, as refused actions of the plugin.
    let denied: Vec<Value> = run
        .stderr()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| {
            l["action"] == "denied" || (l["action"] == "exec" && l["decision"] == "refused")
        })
        .collect();
    assert!(
        denied.iter().any(|l| l["plugin"] == "hostile"
            && l["args"]["action"] == "ptrace"
            && l["args"]["grant"]
                .as_str()
                .unwrap()
                .contains("exec: nothing")),
        "{denied:?}\n{}",
        run.stderr()
    );
    assert!(
        denied
            .iter()
            .any(|l| l["args"]["action"] == "memory" && l["args"]["reason"] == MEMORY_REFUSED),
        "{denied:?}"
    );
}

#[test]
fn with_the_matching_grant_each_succeeds_but_the_host_stays_out_of_reach() {
    let _forks = FORKS.lock().unwrap_or_else(|e| e.into_inner());
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {
        "read": ["~/.ssh"],
        "write": ["${home}/out"],
        "network": true,
        "exec": ["sh"],
        "memoryMiB": 512
    }}});
    let connect = port(&world);
    let run = run(
        &world,
        &settings,
        &[],
        &[
            "ctor",
            "read",
            "write",
            "mkdir",
            &connect,
            "spawn",
            "hostexec",
            "forkbomb",
            "alloc 256",
            "ptrace",
            "signal",
        ],
    );
    let stolen = world.sandbox.home().join("out/stolen.txt");
    for (attack, expected) in [
        ("ctor", "ctor: ok SECRET-KEY".to_owned()),
        ("read", "read: ok SECRET-KEY".to_owned()),
        ("write", format!("write: ok {}", stolen.display())),
        (
            "mkdir",
            format!(
                "mkdir: ok {}",
                world.sandbox.home().join("out/made").display()
            ),
        ),
        ("connect", "connect: ok".to_owned()),
        ("spawn", "spawn: ok".to_owned()),
        ("hostexec", "hostexec: ok via-host".to_owned()),
        ("forkbomb", "forkbomb: ok 40 forks".to_owned()),
        ("alloc", "alloc: ok 256 MiB".to_owned()),
        // No grant reaches the host.
        (
            "ptrace",
            "ptrace: failed Operation not permitted".to_owned(),
        ),
        (
            "signal",
            "signal: failed Operation not permitted".to_owned(),
        ),
    ] {
        assert_eq!(run.outcome(attack), expected, "{attack}\n{}", run.stderr());
    }
    assert_eq!(std::fs::read_to_string(&stolen).unwrap(), "stolen\n");
    // Nothing allowed is reported: not the reads of the key, not the write.
    assert_eq!(run.reports_with("id_rsa"), 0, "{:?}", run.errors);
    assert_eq!(run.reports_with("stolen.txt"), 0, "{:?}", run.errors);
    assert_eq!(run.reports_with("made"), 0, "{:?}", run.errors);
    assert_eq!(run.sandbox_reports(), 2, "{:?}", run.errors);
    run.report("sandbox denied ptrace");
    run.report("sandbox denied kill of the host");
}

#[test]
fn with_exec_granted_an_execve_of_another_program_is_refused_and_named() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"exec": ["true"]}}});
    let run = run(
        &world,
        &settings,
        &[],
        &["execve", "memexec", "spawn", "after"],
    );
    // The seccomp filter lets execve through (the grant runs a program); the supervisor
    // refuses /bin/sh, as Landlock would, and names it.
    assert_eq!(run.outcome("execve"), "execve: failed Permission denied");
    let report = run.report(&format!(
        "sandbox denied execve: exec of \"/bin/sh\" denied: the grant of plugin hostile ({}) does not include it (exec: true)",
        world.sandbox.agent_dir().join("settings.json").display()
    ));
    assert_eq!(report["extensionPath"], world.hostile.to_str().unwrap());
    assert!(
        run.stderr().contains(&format!(
            "Extension error ({}): {}",
            world.hostile.display(),
            report["error"].as_str().unwrap()
        )),
        "{}",
        run.stderr()
    );
    // A granted program's bytes copied into memory are not the granted program.
    assert_eq!(run.outcome("memexec"), "memexec: failed Permission denied");
    run.report("sandbox denied execve: exec of \"/memfd:payload");
    // A process the plugin started is still held by Landlock (its refusal is not named:
    // see docs/sandbox.md).
    assert!(
        run.outcome("spawn").starts_with("spawn: failed execve"),
        "{}",
        run.outcome("spawn")
    );
    assert_eq!(run.ran, ["echo after"]);
}

#[test]
fn with_exec_granted_a_fork_past_the_bound_on_processes_is_refused_and_named() {
    let _forks = FORKS.lock().unwrap_or_else(|e| e.into_inner());
    let mut world = world();
    let settings = json!({"sandbox": {(world.key()): {"exec": ["sh"]}}});
    // RLIMIT_NPROC binds nobody as root: there the run is made as the user `nobody`, who is
    // handed the test's files, a copy of the binary among them (the checkout may lie in a
    // folder `nobody` cannot enter: a clone in /root, or under `mktemp -d`).
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let nobody = root.then(|| {
        const NOBODY: u32 = 65534;
        let copy = world.sandbox.root().join("bin/pi-hooks");
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(&world.binary, &copy).unwrap();
        // A process another test forked while the copy was open for writing holds it until it
        // execs ("text file busy"): wait for the copy to be runnable.
        for _ in 0..100 {
            match std::process::Command::new(&copy).arg("--version").output() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(std::time::Duration::from_millis(20))
                }
                _ => break,
            }
        }
        world.binary = copy;
        hand_over(world.sandbox.root(), NOBODY);
        // The sandbox's own folder (a temporary folder, 0700) must let nobody in too.
        let mut folder = world.sandbox.root().to_path_buf();
        while let Some(parent) = folder.parent() {
            let mode = std::fs::metadata(parent).unwrap().mode();
            assert!(
                mode & 0o001 != 0 || parent == std::path::Path::new("/"),
                "{} cannot be entered by nobody (mode {mode:o})",
                parent.display()
            );
            folder = parent.to_path_buf();
        }
        NOBODY
    });
    let run = run_with(
        &world,
        &settings,
        &[],
        &["forkbomb 100", "spawn", "after"],
        |command| {
            if let Some(user) = nobody {
                use std::os::unix::process::CommandExt;
                command.uid(user).gid(user);
            }
        },
    );
    // Stopped by RLIMIT_NPROC (its user's processes when it started, and 64 more) before
    // 100, with the kernel's own answer.
    let outcome = run.outcome("forkbomb");
    let forks: usize = outcome
        .strip_prefix("forkbomb: failed after ")
        .and_then(|rest| rest.strip_suffix(" forks: Resource temporarily unavailable"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{outcome}"));
    assert!(forks < 100, "{outcome}");
    // Named once, with the grant.
    let report = run.report(&format!(
        "sandbox denied fork: fork refused: its grant allows at most 64 processes beyond what your user runs (exec: sh) (grant from {})",
        world.sandbox.agent_dir().join("settings.json").display()
    ));
    assert_eq!(report["extensionPath"], world.hostile.to_str().unwrap());
    assert_eq!(
        run.reports_with("sandbox denied fork"),
        1,
        "{:?}",
        run.errors
    );
    // Its children were killed: it forks again (and runs its granted program), and the
    // session went on.
    assert_eq!(run.outcome("spawn"), "spawn: ok");
    assert_eq!(run.ran, ["echo after"]);
}

#[test]
fn a_crash_right_after_a_refused_allocation_is_reported_with_it_and_the_call_fails_closed() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"memoryMiB": 64}}});
    let run = run(&world, &settings, &[], &["oom 256", "after"]);
    let crash = run
        .errors
        .iter()
        .find(|e| e["event"] == "tool_call")
        .unwrap_or_else(|| panic!("no crash report: {:?}", run.errors));
    let text = crash["error"].as_str().unwrap();
    assert!(
        text.starts_with("plugin \"hostile\" crashed (SIGABRT) while handling tool_call")
            && text.contains(&format!(
                "while handling tool_call, just after its sandbox refused memory: {MEMORY_REFUSED}"
            )),
        "{text}"
    );
    run.report(&format!("sandbox denied memory: {MEMORY_REFUSED}"));
    // Failed closed: the call was blocked, not let through.
    let blocked = run.outcome("oom");
    assert!(
        blocked.starts_with("blocked because the isolated plugin \"hostile\" crashed"),
        "{blocked}"
    );
    // The session went on: the next call is blocked while the plugin restarts, or handled.
    assert!(
        run.ran == ["echo after"] || run.outcome("after").starts_with("blocked because"),
        "{:?} {:?}",
        run.ran,
        run.outcomes
    );
}

#[test]
fn isolated_without_a_grant_nothing_is_confined() {
    let world = world();
    let run = run(
        &world,
        &json!({}),
        &["--isolate"],
        &["ctor", "read", "signal"],
    );
    assert_eq!(run.outcome("ctor"), "ctor: ok SECRET-KEY");
    assert_eq!(run.outcome("read"), "read: ok SECRET-KEY");
    assert_eq!(run.outcome("signal"), "signal: ok");
    assert_eq!(run.sandbox_reports(), 0, "{:?}", run.errors);
}

#[test]
fn a_kill_by_the_kernel_is_reported_like_a_crash_and_the_call_fails_closed() {
    let world = world();
    let run = run(
        &world,
        &json!({"sandbox": {(world.key()): {}}}),
        &[],
        &["sigsys", "read"],
    );
    let crash = run
        .errors
        .iter()
        .find(|e| e["event"] == "tool_call")
        .unwrap_or_else(|| panic!("no crash report: {:?}", run.errors));
    assert_eq!(
        crash["error"],
        "plugin \"hostile\" was stopped by its sandbox (SIGSYS: a system call its grant forbids, made where the sandbox could not refuse it) while handling tool_call; restarting it in 100 ms"
    );
    let blocked = run.outcome("sigsys");
    assert!(
        blocked.starts_with(
            "blocked because the isolated plugin \"hostile\" was stopped by its sandbox"
        ),
        "{blocked}"
    );
    // The next call is blocked while it restarts, or handled (confined) once it is back.
    let next = run.outcome("read");
    assert!(
        next.starts_with("blocked because the isolated plugin")
            || next == "read: failed Permission denied",
        "{next}"
    );
}

#[test]
fn the_host_refuses_a_session_switch_outside_the_grant() {
    let world = world();
    let session = world.sandbox.root().join("session.jsonl");
    let outside = world.sandbox.home().join("elsewhere.jsonl");
    let inside = world.sandbox.home().join("out/next.jsonl");
    let run = run(
        &world,
        &json!({"sandbox": {(world.key()): {"write": ["${home}/out"]}}}),
        &["--session", session.to_str().unwrap()],
        &[
            &format!("/switch {}", outside.display()),
            &format!("/switch {}", inside.display()),
        ],
    );
    let report = run.report(&format!(
        "sandbox denied switchSession: switchSession of {} denied: the grant of plugin hostile",
        outside.display()
    ));
    // The one entry that would allow it, not the whole grant (issue 34 item 16).
    assert!(
        report["error"].as_str().unwrap().ends_with(&format!(
            "; to allow it, grant \"write\": [{:?}]",
            world.sandbox.home().display().to_string()
        )),
        "{report}"
    );
    // The switch inside the grant reached the session (which finds no such file). The other
    // report is the constructor's read of the key.
    assert_eq!(
        run.sandbox_reports(),
        2,
        "{:?}\n{}",
        run.errors,
        run.stderr()
    );
    run.report("sandbox denied read: read of");
    assert!(
        !run.stderr().contains("refusal went unnamed"),
        "{}",
        run.stderr()
    );
    assert!(
        run.errors.iter().any(|e| e["event"] == "switch_session"
            && e["error"]
                .as_str()
                .unwrap()
                .contains("next.jsonl: No such file")),
        "{:?}",
        run.errors
    );
}

#[test]
fn a_grant_that_cannot_be_used_is_refused_naming_the_entry() {
    let world = world();
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        json!({"sandbox": {(world.key()): {"read": ["${secrets}/x"]}}}).to_string(),
    )
    .unwrap();
    let report = world
        .sandbox
        .list_json(&["--hook", world.hostile.to_str().unwrap()]);
    // `list` loads as a session does: the plugin is refused, with the entry named.
    assert_eq!(
        report["plugins"].as_array().map(Vec::len),
        Some(0),
        "{report:#}"
    );
    assert!(
        report["errors"]
            .to_string()
            .contains("unknown variable ${secrets}"),
        "{report:#}"
    );
    let output = world.sandbox.run(&[
        "run",
        "--no-session",
        "--script",
        world.script.to_str().unwrap(),
        "--hook",
        world.hostile.to_str().unwrap(),
        "read",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "hostile's `capabilities.read` entry \"${secrets}/x\" uses the unknown variable ${secrets}"
        ),
        "{stderr}"
    );
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        json!({"sandbox": {(world.key()): {"net": true}}}).to_string(),
    )
    .unwrap();
    let output = world
        .sandbox
        .run(&["list", "--hook", world.hostile.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "`sandbox.{}` is not a grant (unknown field `net`",
            world.key()
        )),
        "{stderr}"
    );
}

/// Packs the hostile plugin with `capabilities` into a folder package.
fn package(world: &World, capabilities: &Value) -> PathBuf {
    let file = world.sandbox.root().join("caps.json");
    std::fs::write(&file, capabilities.to_string()).unwrap();
    let output = world.sandbox.run(&[
        "pack",
        world.hostile.to_str().unwrap(),
        "--out",
        world.sandbox.root().join("dist").to_str().unwrap(),
        "--capabilities",
        file.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tgz = world.sandbox.root().join("dist/hostile-1.0.0.tgz");
    let folder = world.sandbox.root().join("hostile-package");
    unpack(&tgz, &folder);
    folder
}

/// Runs the installed package (no --hook) with one prompt per attack.
fn run_package(world: &World, prompts: &[&str]) -> Run {
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        world.script.to_str().unwrap(),
    ];
    args.extend_from_slice(prompts);
    read_run(world.sandbox.run(&args))
}

fn list_sandbox_state(world: &World) -> Value {
    let report = world.sandbox.list_json(&[]);
    report["packages"][0]["sandbox"].clone()
}

#[test]
fn a_package_runs_confined_to_exactly_its_capabilities_and_asking_for_more_needs_a_new_grant() {
    let world = world();
    let folder = package(&world, &json!({"read": ["~/.ssh"], "network": false}));
    ok(
        &world.sandbox,
        &["install", folder.to_str().unwrap(), "--yes"],
    );
    assert_eq!(list_sandbox_state(&world), "confined");
    let text = ok(&world.sandbox, &["list"]);
    assert!(
        text.contains("sandbox: confined to its accepted capabilities"),
        "{text}"
    );
    let first = run_package(&world, &["read", "write"]);
    assert_eq!(
        first.outcome("read"),
        "read: ok SECRET-KEY",
        "{}",
        first.stderr()
    );
    assert_eq!(first.outcome("write"), "write: failed Permission denied");

    // Version 1.1.0 asks to write too: refused until granted, and the grant stays as it was.
    edit_package_json(&folder, |json| {
        json["version"] = "1.1.0".into();
        json["piHooks"]["manifest"]["capabilities"]["write"] = json!(["~/out"]);
    });
    let error = refused(&world.sandbox, &["update", "hostile", "--yes"]);
    assert!(
        error.contains("asks for more than you granted hostile 1.0.0: write: ~/out")
            && error.contains("`pi-hooks update hostile --grant`"),
        "{error}"
    );
    assert_eq!(
        world.sandbox.list_json(&[])["packages"][0]["version"],
        "1.0.0"
    );
    let still = run_package(&world, &["write"]);
    assert_eq!(still.outcome("write"), "write: failed Permission denied");

    // The command the refusal printed works as printed, without a terminal (no --yes).
    ok(&world.sandbox, &["update", "hostile", "--grant"]);
    assert_eq!(
        world.sandbox.list_json(&[])["packages"][0]["version"],
        "1.1.0"
    );
    let granted = run_package(&world, &["write"]);
    assert_eq!(
        granted.outcome("write"),
        format!(
            "write: ok {}",
            world.sandbox.home().join("out/stolen.txt").display()
        )
    );

    // Opting the package out (the user's own settings) runs it unconfined, and list says so.
    let mut settings: Value = serde_json::from_slice(
        &std::fs::read(world.sandbox.agent_dir().join("settings.json")).unwrap(),
    )
    .unwrap();
    settings["sandbox"] = json!({"hostile": false});
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    assert_eq!(list_sandbox_state(&world), "opted-out");
    let free = run_package(&world, &["signal"]);
    assert_eq!(free.outcome("signal"), "signal: ok");
}
