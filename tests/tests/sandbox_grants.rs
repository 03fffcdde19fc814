//! Grants (`loader/host/src/sandbox/{mod,grant}.rs`) through the real binary, with the plugin
//! of tests/fixtures/sandbox_grants.c.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};

use pi_hooks_tests::confined::{Run, World, read_run, run_with, world_of};
use pi_hooks_tests::packages::{ok, unpack};
use serde_json::{Value, json};

fn world() -> World {
    world_of("sandbox_grants")
}

/// Runs the plugin (`--hook`) with `settings` (raw text) as the user's settings.json.
fn run_raw(world: &World, settings: &str, prompts: &[&str]) -> Run {
    std::fs::write(world.sandbox.agent_dir().join("settings.json"), settings).unwrap();
    run_raw_keep(world, prompts)
}

/// Runs the plugin (`--hook`) with the settings as they are.
fn run_raw_keep(world: &World, prompts: &[&str]) -> Run {
    let mut args = world.run_args();
    args.extend_from_slice(prompts);
    let command = world.sandbox.command_of(&world.binary, &args);
    read_run(pi_hooks_tests::output_within(
        command,
        std::time::Duration::from_secs(60),
    ))
}

/// The one line of stderr that names the plugin's library as not loaded.
fn refusal_of(world: &World, run: &Run) -> String {
    let stderr = run.stderr();
    stderr
        .lines()
        .find(|l| l.contains(&format!("{:?}", world.hostile.display().to_string())))
        .unwrap_or_else(|| panic!("no refusal of the plugin: {stderr}"))
        .to_owned()
}

#[test]
fn a_grant_that_is_not_what_it_says_keeps_the_plugin_out_naming_file_entry_and_field() {
    let world = world();
    let key = world.key();
    let settings_file = world.sandbox.agent_dir().join("settings.json");
    for (grant, field) in [
        (json!({"net": true}), "unknown field `net`"),
        (
            json!({"memoryMiB": "64"}),
            "`memoryMiB` must be a whole number of MiB above 0 (such as 256), found a string (\"64\")",
        ),
        (
            json!({"read": "${cwd}"}),
            "`read` must be a list of path strings (such as [\"${cwd}\"]), found a string (\"${cwd}\")",
        ),
        (json!(true), "must be an object of read and write"),
        (
            json!({"network": "true"}),
            "`network` must be true, false or a list of host names",
        ),
    ] {
        let settings = json!({"sandbox": {(key.clone()): grant}});
        let run = run_raw(&world, &settings.to_string(), &["confined"]);
        assert!(
            run.outcomes.is_empty(),
            "{grant}: the plugin ran: {:?}",
            run.outcomes
        );
        let stderr = run.stderr();
        // The settings file, the entry and the field...
        assert!(
            stderr.contains(&format!("{}", settings_file.display()))
                && stderr.contains(&format!("`sandbox.{key}` is not a grant ("))
                && stderr.contains(field),
            "{grant}: {stderr}"
        );
        // ... and the plugin, not loaded rather than loaded unconfined.
        let refusal = refusal_of(&world, &run);
        assert!(
            refusal.contains("not loaded, rather than loaded unconfined: the user settings")
                && refusal.contains(&settings_file.display().to_string()),
            "{refusal}"
        );
        assert!(
            run.output.status.success(),
            "the session did not go on: {stderr}"
        );
    }
    // A good grant still confines the plugin, and lets it read what it grants.
    let good = json!({"sandbox": {(key.clone()): {"read": ["~/.ssh"], "memoryMiB": 256}}});
    let run = run_raw(&world, &good.to_string(), &["confined", "read"]);
    assert_eq!(run.outcome("confined"), "confined: yes", "{}", run.stderr());
    assert_eq!(
        run.outcome("read"),
        "read: ok SECRET-KEY",
        "{}",
        run.stderr()
    );
    // Without any settings file, a library without a grant runs as always.
    std::fs::remove_file(&settings_file).unwrap();
    let run = run_raw_keep(&world, &["confined"]);
    assert_eq!(run.outcome("confined"), "confined: no", "{}", run.stderr());
}

#[test]
fn a_user_settings_file_that_does_not_parse_loads_no_library_unconfined() {
    let world = world();
    let settings_file = world.sandbox.agent_dir().join("settings.json");
    let key = world.key();
    // A grant the user wrote, then a syntax error further on: the grant cannot be known.
    let text = format!("{{\"sandbox\": {{\n  {key:?}: {{\"read\": [\"~/.ssh\"]}},\n}}\n}}");
    let run = run_raw(&world, &text, &["confined", "read"]);
    assert!(
        run.outcomes.is_empty(),
        "the plugin ran: {:?}",
        run.outcomes
    );
    let refusal = refusal_of(&world, &run);
    assert!(
        refusal.contains(&format!(
            "not loaded, rather than loaded unconfined: the user settings {} could not be read",
            settings_file.display()
        )) && refusal.contains("not valid JSON at line 2, column 60: Trailing commas")
            && refusal.contains("Fix the file (or move it away) and start again"),
        "{refusal}"
    );
    assert!(
        run.output.status.success(),
        "the session did not go on: {}",
        run.stderr()
    );
    // The same file fixed: the grant holds.
    std::fs::write(&settings_file, text.replace("]},\n", "]}\n")).unwrap();
    let run = run_raw_keep(&world, &["confined", "read"]);
    assert_eq!(run.outcome("confined"), "confined: yes", "{}", run.stderr());
    assert_eq!(run.outcome("read"), "read: ok SECRET-KEY");
    // A settings file that is there but cannot be read (a folder in its place) fails closed too.
    std::fs::remove_file(&settings_file).unwrap();
    std::fs::create_dir(&settings_file).unwrap();
    let run = run_raw_keep(&world, &["confined"]);
    assert!(
        run.outcomes.is_empty(),
        "the plugin ran: {:?}",
        run.outcomes
    );
    assert!(
        refusal_of(&world, &run).contains("rather than loaded unconfined"),
        "{}",
        run.stderr()
    );
}

/// Packs the plugin with `capabilities` and installs it for the user; the installed
/// library's path.
fn install_package(world: &World, capabilities: &Value) -> PathBuf {
    let file = world.sandbox.root().join("caps.json");
    std::fs::write(&file, capabilities.to_string()).unwrap();
    ok(
        &world.sandbox,
        &[
            "pack",
            world.hostile.to_str().unwrap(),
            "--out",
            world.sandbox.root().join("dist").to_str().unwrap(),
            "--capabilities",
            file.to_str().unwrap(),
        ],
    );
    let folder = world.sandbox.root().join("hostile-package");
    unpack(
        &world.sandbox.root().join("dist/hostile-1.0.0.tgz"),
        &folder,
    );
    ok(
        &world.sandbox,
        &["install", folder.to_str().unwrap(), "--yes"],
    );
    find_library(&world.sandbox.agent_dir()).expect("the installed library")
}

fn find_library(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() && !path.is_symlink() {
            if let Some(found) = find_library(&path) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == "libhostile.so") {
            return Some(path);
        }
    }
    None
}

/// Runs with the settings as they are: the installed package, and the plain library too
/// when `plain`.
fn run_both(world: &World, plain: bool, prompts: &[&str]) -> Run {
    let mut args = vec![
        "run",
        "--mode",
        "json",
        "--no-session",
        "--script",
        world.script.to_str().unwrap(),
    ];
    if plain {
        args.extend(["--hook", world.hostile.to_str().unwrap()]);
    }
    args.extend_from_slice(prompts);
    let run = read_run(pi_hooks_tests::output_within(
        world.sandbox.command_of(&world.binary, &args),
        std::time::Duration::from_secs(60),
    ));
    assert!(run.output.status.success(), "{}", run.stderr());
    run
}

#[test]
fn a_package_and_a_plain_library_of_the_same_file_name_never_take_each_others_grant() {
    let world = world();
    let installed = install_package(&world, &json!({"read": ["~/.ssh"]}));
    assert_ne!(installed, world.hostile);
    let settings_file = world.sandbox.agent_dir().join("settings.json");
    let mut settings: Value =
        serde_json::from_slice(&std::fs::read(&settings_file).unwrap()).unwrap();
    let (confined_package, confined_plain) = ("confined package", "confined library");
    let write = |settings: &mut Value, sandbox: Value| {
        settings["sandbox"] = sandbox;
        std::fs::write(&settings_file, settings.to_string()).unwrap();
    };
    // The package's library's path opted out (`false`): a path names a plain library, so
    // the package stays confined to what it was granted at install.
    write(
        &mut settings,
        json!({(installed.display().to_string()): false}),
    );
    let run = run_both(&world, false, &[confined_package, "read"]);
    assert_eq!(run.outcome("confined"), "confined: yes", "{}", run.stderr());
    assert_eq!(run.outcome("read"), "read: ok SECRET-KEY");
    // A grant by its library's path (no read, a memory bound) is not the package's either.
    write(
        &mut settings,
        json!({(installed.display().to_string()): {"memoryMiB": 64}}),
    );
    let run = run_both(&world, false, &[confined_package, "read"]);
    assert_eq!(run.outcome("confined"), "confined: yes", "{}", run.stderr());
    assert_eq!(run.outcome("read"), "read: ok SECRET-KEY");
    // The other way: the package's name, granted or opted out, never names the plain
    // library `libhostile.so`, which runs as it would without (here: unconfined), while
    // the package takes the grant (confined, no read) or the opt-out.
    write(&mut settings, json!({"hostile": {"memoryMiB": 64}}));
    let run = run_both(&world, true, &[confined_plain, confined_package]);
    let outcomes: Vec<&str> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| l["result"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["confined: no", "confined: yes"],
        "{}",
        run.stderr()
    );
    write(&mut settings, json!({"hostile": false}));
    let run = run_both(&world, true, &[confined_plain, confined_package]);
    let outcomes: Vec<&str> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| l["result"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["confined: no", "confined: no"],
        "{}",
        run.stderr()
    );
    // The plain library's path granted: the library is confined, the package keeps its own.
    write(&mut settings, json!({(world.key()): {"memoryMiB": 64}}));
    let run = run_both(&world, true, &[confined_plain, confined_package]);
    let outcomes: Vec<&str> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| l["result"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["confined: yes", "confined: yes"],
        "{}",
        run.stderr()
    );
}

#[test]
fn with_the_user_settings_unreadable_neither_a_package_nor_a_plain_library_runs_unconfined() {
    let world = world();
    install_package(&world, &json!({"read": ["~/.ssh"]}));
    let settings_file = world.sandbox.agent_dir().join("settings.json");
    let mut text = std::fs::read_to_string(&settings_file).unwrap();
    text.push_str("\n,");
    std::fs::write(&settings_file, &text).unwrap();
    let run = run_both(&world, true, &["confined", "read"]);
    // The plain library is not loaded, nor the package (the user's settings list it).
    let refusal = refusal_of(&world, &run);
    assert!(
        refusal.contains("rather than loaded unconfined"),
        "{refusal}"
    );
    assert!(run.outcomes.is_empty(), "{:?}", run.outcomes);
}

/// A session file made by a run (a header and a few entries), copied to each of `to`.
fn session_files(world: &World, to: &[&Path]) {
    let made = world.sandbox.root().join("made.jsonl");
    if !made.exists() {
        let output = world.sandbox.run(&[
            "run",
            "--script",
            world.script.to_str().unwrap(),
            "--session",
            made.to_str().unwrap(),
            "hello",
        ]);
        assert!(
            made.is_file(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    for file in to {
        std::fs::copy(&made, file).unwrap();
    }
}

/// Runs the plugin with `grant` and a session, one prompt each.
fn run_session(world: &World, grant: Value, prompts: &[&str]) -> Run {
    let session = world.sandbox.root().join("session.jsonl");
    pi_hooks_tests::confined::run(
        world,
        &json!({"sandbox": {(world.key()): grant}}),
        &["--session", session.to_str().unwrap()],
        prompts,
    )
}

#[test]
fn a_session_switch_uses_the_file_checked_not_the_link_swapped_in_during_session_before_switch() {
    let world = world();
    let out = world.sandbox.home().join("out");
    let decoy = out.join("decoy.jsonl");
    let kept = out.join("decoy-kept.jsonl");
    let elsewhere = world.sandbox.home().join("elsewhere.jsonl");
    session_files(&world, &[&decoy, &elsewhere]);
    std::fs::hard_link(&decoy, &kept).unwrap();
    std::os::unix::fs::symlink(&elsewhere, out.join("decoy.jsonl.swap")).unwrap();
    let before = std::fs::read_to_string(&elsewhere).unwrap();
    let run = run_session(
        &world,
        json!({"write": ["${home}/out"]}),
        &[&format!("/switch {}", decoy.display()), "after-the-switch"],
    );
    // The plugin did swap the decoy for a link to a session outside its grant...
    assert!(decoy.is_symlink(), "no swap: {}", run.stderr());
    // ... and the host went on with the file it checked: the next turn is in the decoy.
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap(),
        before,
        "the host wrote the file outside the grant"
    );
    let decoy_text = std::fs::read_to_string(&kept).unwrap();
    assert!(
        decoy_text.contains("after-the-switch"),
        "{decoy_text}\n{}",
        run.stderr()
    );
}

#[test]
fn a_fifo_or_a_device_in_the_grant_is_refused_as_a_session_and_the_host_goes_on() {
    let world = world();
    let out = world.sandbox.home().join("out");
    let fifo = out.join("fifo.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let started = std::time::Instant::now();
    let run = run_session(
        &world,
        json!({"write": ["${home}/out", "/dev/zero", "/dev/urandom"]}),
        &[
            &format!("/switch {}", fifo.display()),
            "/switch /dev/zero",
            "/switch /dev/urandom",
            "after",
        ],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let fifo_refused = run.report(&format!(
        "sandbox denied switchSession: switchSession of {} denied: it is a FIFO, not a regular file (the grant of plugin hostile",
        fifo.display()
    ));
    // Where the grant comes from; the grant itself is not repeated (issue 34 item 16).
    assert!(
        fifo_refused["error"].as_str().unwrap().ends_with(&format!(
            "(the grant of plugin hostile, {})",
            world.sandbox.agent_dir().join("settings.json").display()
        )),
        "{fifo_refused}"
    );
    run.report("switchSession of /dev/zero denied: it is a character device, not a regular file");
    run.report(
        "switchSession of /dev/urandom denied: it is a character device, not a regular file",
    );
    // The session went on: the last turn ran.
    assert!(run.ran.iter().any(|c| c == "echo after"), "{:?}", run.ran);
}

#[test]
fn a_relative_session_path_is_resolved_against_the_sessions_working_directory_once() {
    let world = world();
    let out = world.sandbox.home().join("out");
    let next = out.join("next.jsonl");
    let elsewhere = world.sandbox.home().join("elsewhere.jsonl");
    session_files(&world, &[&next, &elsewhere]);
    let before = std::fs::read_to_string(&elsewhere).unwrap();
    // The working directory is the project folder, beside home.
    let run = run_session(
        &world,
        json!({"write": ["${home}/out"]}),
        &[
            "/switch ../home/elsewhere.jsonl",
            "/switch ../home/out/next.jsonl",
            "after-the-switch",
        ],
    );
    run.report(&format!(
        "switchSession of {} denied: the grant of plugin hostile",
        elsewhere.display()
    ));
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), before);
    let text = std::fs::read_to_string(&next).unwrap();
    assert!(
        text.contains("after-the-switch"),
        "{text}\n{}",
        run.stderr()
    );
}

#[test]
fn an_exec_grant_by_name_finds_the_program_through_the_users_path() {
    let world = world();
    // A program only a folder of the user's PATH holds (as ~/.local/bin or ~/.cargo/bin do).
    let tools = world.sandbox.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::copy(
        std::fs::canonicalize("/bin/sh").unwrap(),
        tools.join("mysh"),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = run_with(
        &world,
        &json!({"sandbox": {(world.key()): {"exec": ["mysh"]}}}),
        &[],
        &["spawn mysh", "hostexec mysh", "spawn sh"],
        |command| {
            command.env("PATH", &path);
        },
    );
    assert_eq!(
        run.outcome("spawn"),
        "spawn: failed execvp (child status 126)"
    );
    // `spawn` was asked twice: the last outcome is `sh`'s, not granted; the first ran.
    let ends: Vec<&str> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| l["result"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        ends,
        [
            "spawn: ok",
            "hostexec: ok via-host",
            "spawn: failed execvp (child status 126)"
        ],
        "{}",
        run.stderr()
    );
}

#[test]
fn a_granted_write_folder_that_does_not_exist_yet_is_usable() {
    let world = world();
    let later = world.sandbox.home().join("later/deeper");
    assert!(!later.exists());
    let run = pi_hooks_tests::confined::run(
        &world,
        &json!({"sandbox": {(world.key()): {"write": ["${home}/later/deeper"]}}}),
        &[],
        &[&format!("mkwrite {}/made", later.display())],
    );
    assert_eq!(
        run.outcome("mkwrite"),
        format!("mkwrite: ok {}/made/made.txt", later.display()),
        "{}",
        run.stderr()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&later).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // Beside it, nothing: the folder made is the grant, not its parent.
    let run = pi_hooks_tests::confined::run(
        &world,
        &json!({"sandbox": {(world.key()): {"write": ["${home}/later/deeper"]}}}),
        &[],
        &[&format!(
            "mkwrite {}",
            world.sandbox.home().join("later/beside").display()
        )],
    );
    assert_eq!(
        run.outcome("mkwrite"),
        "mkwrite: failed mkdir: Permission denied"
    );
    // A link where the grant's parent should be: nothing is made through it.
    let target = world.sandbox.root().join("elsewhere");
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&target, world.sandbox.home().join("linked")).unwrap();
    let run = pi_hooks_tests::confined::run(
        &world,
        &json!({"sandbox": {(world.key()): {"write": ["${home}/linked/x"]}}}),
        &[],
        &["confined"],
    );
    assert_eq!(run.outcome("confined"), "confined: yes");
    assert!(!target.join("x").exists());
    assert!(
        run.stderr()
            .contains("is not a folder (a link or a file), so nothing is made beneath it"),
        "{}",
        run.stderr()
    );
}

/// The install record of the package `hostile`.
fn install_record(world: &World) -> PathBuf {
    fn find(dir: &Path) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()? {
            let path = entry.ok()?.path();
            if path.is_dir() && !path.is_symlink() {
                if let Some(found) = find(&path) {
                    return Some(found);
                }
            } else if path.file_name().is_some_and(|n| n == "hostile.json")
                && path.parent().is_some_and(|p| p.ends_with("install"))
            {
                return Some(path);
            }
        }
        None
    }
    find(&world.sandbox.agent_dir()).expect("the install record")
}

#[test]
fn a_grant_that_is_not_one_in_an_install_record_or_a_package_json_keeps_the_package_out() {
    let world = world();
    install_package(&world, &json!({"read": ["~/.ssh"]}));
    let record = install_record(&world);
    let good = std::fs::read_to_string(&record).unwrap();
    let confined = run_both(&world, false, &["confined"]);
    assert_eq!(confined.outcome("confined"), "confined: yes");
    for (capabilities, field) in [
        (
            json!({"read": ["~/.ssh"], "net": true}),
            "unknown field `net`",
        ),
        (
            json!({"memoryMiB": "64"}),
            "`memoryMiB` must be a whole number of MiB above 0 (such as 256), found a string (\"64\")",
        ),
        (json!(true), "must be an object of read and write"),
    ] {
        let mut value: Value = serde_json::from_str(&good).unwrap();
        value["capabilities"] = capabilities.clone();
        std::fs::write(&record, value.to_string()).unwrap();
        let run = run_both(&world, false, &["confined"]);
        assert!(
            run.outcomes.is_empty(),
            "{capabilities}: it ran: {:?}",
            run.outcomes
        );
        let stderr = run.stderr();
        assert!(
            stderr.contains(&format!("the record {} cannot be read", record.display()))
                && stderr.contains(field)
                && stderr.contains("was not loaded"),
            "{capabilities}: {stderr}"
        );
    }
    std::fs::write(&record, &good).unwrap();
    // A package.json whose capabilities are not a grant is refused at install.
    let folder = world.sandbox.root().join("hostile-package");
    pi_hooks_tests::packages::edit_package_json(&folder, |json| {
        json["version"] = "1.0.1".into();
        json["piHooks"]["manifest"]["capabilities"] = json!({"read": "${cwd}"});
    });
    let error = pi_hooks_tests::packages::refused(
        &world.sandbox,
        &["install", folder.to_str().unwrap(), "--yes"],
    );
    assert!(
        error.contains("`read` must be a list of path strings"),
        "{error}"
    );
}

#[test]
fn a_granted_folder_the_plugin_replaces_with_a_link_does_not_move_what_the_host_opens() {
    let world = world();
    let home = world.sandbox.home();
    // Two write folders, one inside the other; a session outside the grant, and a link
    // to its folder ready beside the inner one.
    let (out, sub) = (home.join("out"), home.join("out/sub"));
    std::fs::create_dir_all(&sub).unwrap();
    let secret = home.join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    let session = secret.join("s.jsonl");
    session_files(&world, &[&session]);
    let before = std::fs::read_to_string(&session).unwrap();
    std::os::unix::fs::symlink(&secret, out.join("link")).unwrap();
    let run = run_session(
        &world,
        json!({"write": ["${home}/out", "${home}/out/sub"]}),
        &[
            &format!("relink {}:{}", out.join("link").display(), sub.display()),
            &format!("/switch {}", sub.join("s.jsonl").display()),
            "after-the-switch",
        ],
    );
    assert_eq!(run.outcome("relink"), "relink: ok", "{}", run.stderr());
    assert!(sub.is_symlink());
    run.report(&format!(
        "switchSession of {} denied: it is {}, which the grant does not let it write",
        sub.join("s.jsonl").display(),
        std::fs::canonicalize(&session).unwrap().display()
    ));
    assert_eq!(std::fs::read_to_string(&session).unwrap(), before);
}
