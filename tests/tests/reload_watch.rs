//! `--watch`: the watcher reports a rebuilt, new or deleted plugin file once,
//! and only once the file is complete; the runner applies the change. Real files, real `cc`
//! rebuilds, the real watcher (inotify here).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi_hooks_host::lifecycle::watch::{Change, WatchConfig, Watcher};
use pi_hooks_tests::reload::*;
use pi_hooks_tests::{Sandbox, compile_c};

/// What the callback saw: the change, and the SHA-256 of the file at that moment.
type Seen = Arc<Mutex<Vec<(Change, Option<String>)>>>;

fn sha_of(path: &Path) -> Option<String> {
    std::fs::read(path)
        .ok()
        .map(|b| pi_hooks_host::plugin_files::trust::sha256_hex(&b))
}

fn watch(plugins: &[&Path], folders: &[PathBuf]) -> (Watcher, Seen) {
    watch_with(plugins, folders, true)
}

/// [`watch`], with the system's file events or by polling alone.
fn watch_with(plugins: &[&Path], folders: &[PathBuf], system_events: bool) -> (Watcher, Seen) {
    let seen: Seen = Arc::default();
    let config = WatchConfig {
        not_loaded: Vec::new(),
        plugins: plugins
            .iter()
            .map(|p| (p.to_path_buf(), sha_of(p)))
            .collect(),
        folders: folders.to_vec(),
        settle: Duration::from_millis(150),
        give_up: Duration::from_secs(3),
        system_events,
    };
    let sink = Arc::clone(&seen);
    let watcher = Watcher::start(config, move |change| {
        let sha = sha_of(change.path());
        sink.lock().unwrap().push((change, sha));
    })
    .expect("start the watcher");
    (watcher, seen)
}

/// Waits until `seen` has `count` entries (at most 10 s), then a second more to catch
/// extra reports, and takes them.
fn settle_on(seen: &Seen, count: usize) -> Vec<(Change, Option<String>)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < count && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(1));
    std::mem::take(&mut *seen.lock().unwrap())
}

#[test]
fn each_rebuild_is_reported_once_and_only_when_complete() {
    let s = Sandbox::new();
    let source = s.lib().join("plugin.c");
    std::fs::write(&source, RELOAD_PLUGIN_C).unwrap();
    let dir = s.root().join("build");
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = dir.join("plugin.so");
    compile_c(&source, &plugin, &["-DVERSION=1"]);
    let folder = s.agent_dir().join("hooks");
    std::fs::create_dir_all(&folder).unwrap();
    let (watcher, seen) = watch(&[&plugin], std::slice::from_ref(&folder));
    assert!(watcher.watched().len() == 2, "{watcher:?}");

    // A `cc` rebuild straight onto the file (the linker writes the output itself).
    compile_c(&source, &plugin, &["-DVERSION=2"]);
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Modified(plugin.clone()));
    assert_eq!(got[0].1, sha_of(&plugin), "reported before it was complete");

    // A touch, and a rebuild of the same source: the same bytes, nothing to report.
    let file = std::fs::File::options().write(true).open(&plugin).unwrap();
    file.set_modified(std::time::SystemTime::now()).unwrap();
    drop(file);
    compile_c(&source, &plugin, &["-DVERSION=2"]);
    assert_eq!(settle_on(&seen, 1), []);

    // A slow writer: 40% of the library, a pause longer than the settle window, the rest.
    let v3 = std::fs::read(compile_c(&source, &s.lib().join("v3.so"), &["-DVERSION=3"])).unwrap();
    let cut = v3.len() * 2 / 5;
    std::fs::write(&plugin, &v3[..cut]).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&plugin)
            .unwrap();
        file.write_all(&v3[cut..]).unwrap();
    }
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Modified(plugin.clone()));
    assert_eq!(
        got[0].1.as_deref(),
        Some(pi_hooks_host::plugin_files::trust::sha256_hex(&v3).as_str()),
        "the half-written file was reported"
    );

    // Replaced by rename, as cargo and ld do.
    let v4 = compile_c(&source, &s.lib().join("v4.so"), &["-DVERSION=4"]);
    replace_by_rename(&v4, &plugin);
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Modified(plugin.clone()));

    // A new library in the discovery folder; a text file there is not a plugin.
    let new = folder.join("new.so");
    compile_c(&source, &new, &["-DVERSION=5"]);
    std::fs::write(folder.join("notes.txt"), "hello").unwrap();
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].0,
        Change::Added(folder.canonicalize().unwrap().join("new.so"))
    );

    // Deleted: reported once; back again: new.
    std::fs::remove_file(&plugin).unwrap();
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Removed(plugin.clone()));
    compile_c(&source, &plugin, &["-DVERSION=6"]);
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Added(plugin.clone()));

    drop(watcher);
    compile_c(&source, &plugin, &["-DVERSION=7"]);
    assert_eq!(settle_on(&seen, 1), [], "a dropped watcher reports nothing");
}

#[test]
fn polling_alone_sees_a_rebuild_a_new_plugin_and_a_deletion() {
    // As on a file system that delivers no events (NFS, 9p, some container mounts).
    let s = Sandbox::new();
    let source = s.lib().join("plugin.c");
    std::fs::write(&source, RELOAD_PLUGIN_C).unwrap();
    let dir = s.root().join("build");
    std::fs::create_dir_all(&dir).unwrap();
    let plugin = dir.join("plugin.so");
    compile_c(&source, &plugin, &["-DVERSION=1"]);
    let folder = s.agent_dir().join("hooks");
    std::fs::create_dir_all(&folder).unwrap();
    let (watcher, seen) = watch_with(&[&plugin], std::slice::from_ref(&folder), false);
    assert_eq!(
        watcher.watched(),
        Vec::<PathBuf>::new(),
        "no system watches"
    );

    // Built beside and renamed over the file, as a linker does.
    compile_c(&source, &dir.join("next.so"), &["-DVERSION=2"]);
    std::fs::rename(dir.join("next.so"), &plugin).unwrap();
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Modified(plugin.clone()));
    assert_eq!(got[0].1, sha_of(&plugin));

    let added = std::fs::canonicalize(&folder).unwrap().join("new.so");
    compile_c(&source, &added, &["-DVERSION=3"]);
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Added(added));

    std::fs::remove_file(&plugin).unwrap();
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, Change::Removed(plugin));
}

#[test]
fn a_broken_build_that_stays_broken_is_reported_after_the_wait() {
    let s = Sandbox::new();
    let source = s.lib().join("plugin.c");
    std::fs::write(&source, RELOAD_PLUGIN_C).unwrap();
    let plugin = s.root().join("plugin.so");
    compile_c(&source, &plugin, &["-DVERSION=1"]);
    let seen: Seen = Arc::default();
    let config = WatchConfig {
        not_loaded: Vec::new(),
        plugins: vec![(plugin.clone(), sha_of(&plugin))],
        folders: Vec::new(),
        settle: Duration::from_millis(100),
        give_up: Duration::from_millis(800),
        system_events: true,
    };
    let sink = Arc::clone(&seen);
    let started = Instant::now();
    let _watcher = Watcher::start(config, move |change| {
        sink.lock().unwrap().push((change, None));
    })
    .unwrap();
    let bytes = std::fs::read(&plugin).unwrap();
    std::fs::write(&plugin, &bytes[..bytes.len() / 2]).unwrap();
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(started.elapsed() >= Duration::from_millis(800));
}

#[test]
fn the_watcher_and_the_runner_reload_a_rebuilt_plugin() {
    let s = Sandbox::new();
    let source = s.lib().join("plugin.c");
    std::fs::write(&source, RELOAD_PLUGIN_C).unwrap();
    let plugin = s.root().join("plugin.so");
    compile_c(&source, &plugin, &["-DVERSION=1"]);
    let options = explicit_options(&s, &[&plugin]);
    let runner = runner_for(&options);
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let config = WatchConfig::for_runner(&runner, &options);
    let (sink, target, opts) = (Arc::clone(&lines), Arc::clone(&runner), options.clone());
    let _watcher = Watcher::start(config, move |change| {
        let line = match target.apply_change(&change, &opts) {
            Ok(done) => done.line(),
            Err(error) => error.to_string(),
        };
        sink.lock().unwrap().push(line);
    })
    .unwrap();
    assert_eq!(answered_by(&tool_call(&runner, "a", "bash")), Ok(1));
    compile_c(&source, &plugin, &["-DVERSION=2"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while lines.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = lines.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("reloaded reload-test 1.0.2 from "),
        "{got:?}"
    );
    assert_eq!(answered_by(&tool_call(&runner, "b", "bash")), Ok(2));
    // A broken rebuild: reported, the old version keeps answering.
    let bytes = std::fs::read(&plugin).unwrap();
    std::fs::write(&plugin, &bytes[..bytes.len() / 2]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while lines.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = lines.lock().unwrap().clone();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[1].contains("truncated"), "{got:?}");
    assert!(
        got[1].contains("still running: reload-test 1.0.2"),
        "{got:?}"
    );
    assert_eq!(answered_by(&tool_call(&runner, "c", "bash")), Ok(2));
}

/// The source of the probe plugin crate, build `n`: it blocks every tool with "probe N".
fn probe_source(n: u32) -> String {
    format!(
        r#"use pi_hooks_abi::sdk::prelude::*;

pi_hooks_abi::plugin!(
    name: "watch-probe",
    version: "0.1.{n}",
    init: init,
    description: "a plugin crate rebuilt by the watch test",
);

fn init(pi: &mut Registrar) -> Result<()> {{
    pi.on_tool_call(|_call, _ctx| Ok(ToolCallDecision::block("probe {n}")))
}}
"#
    )
}

#[test]
fn a_cargo_build_of_a_plugin_crate_is_picked_up_once() {
    let s = Sandbox::new();
    let root = pi_hooks_tests::workspace_root();
    let krate = s.root().join("probe");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"watch-probe\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\npi-hooks-abi = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("abi").display().to_string()
        ),
    )
    .unwrap();
    // The workspace's lock file: the same dependency versions, no registry lookup.
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    // A target folder of its own that outlives the sandbox, so later runs build in seconds.
    let target = pi_hooks_tests::target_dir().join("reload-watch-probe");
    let cargo = |n: u32| {
        std::fs::write(krate.join("src/lib.rs"), probe_source(n)).unwrap();
        let status = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target)
            .args(["build", "--quiet", "--offline"])
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build of the probe crate failed");
    };
    cargo(1);
    let plugin = target.join("debug/libwatch_probe.so");
    let options = explicit_options(&s, &[&plugin]);
    let runner = runner_for(&options);
    let blocked = |runner: &pi_hooks_host::runner::Runner| match tool_call(runner, "x", "bash") {
        pi_hooks_host::runner::events::ToolCallOutcome::Block { reason } => reason,
        other => panic!("not blocked: {other:?}"),
    };
    assert_eq!(blocked(&runner), "probe 1");
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let config = WatchConfig::for_runner(&runner, &options);
    let (sink, target_runner, opts) = (Arc::clone(&lines), Arc::clone(&runner), options.clone());
    let _watcher = Watcher::start(config, move |change| {
        let line = match target_runner.apply_change(&change, &opts) {
            Ok(done) => done.line(),
            Err(error) => error.to_string(),
        };
        sink.lock().unwrap().push(line);
    })
    .unwrap();
    cargo(2);
    let deadline = Instant::now() + Duration::from_secs(20);
    while lines.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(1));
    let got = lines.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("reloaded watch-probe 0.1.2 from "),
        "{got:?}"
    );
    assert_eq!(blocked(&runner), "probe 2");
}

#[test]
fn a_plugin_folder_created_after_the_start_is_watched_once_it_appears() {
    let s = Sandbox::new();
    let source = s.lib().join("plugin.c");
    std::fs::write(&source, RELOAD_PLUGIN_C).unwrap();
    let folder = s.project().join(".pi/hooks");
    let (watcher, seen) = watch(&[], std::slice::from_ref(&folder));
    assert_eq!(watcher.watched(), [s.project().canonicalize().unwrap()]);
    std::fs::create_dir_all(&folder).unwrap();
    let first = folder.join("first.so");
    compile_c(&source, &first, &["-DVERSION=1"]);
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].0,
        Change::Added(folder.canonicalize().unwrap().join("first.so"))
    );
    compile_c(&source, &folder.join("second.so"), &["-DVERSION=2"]);
    let got = settle_on(&seen, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].0,
        Change::Added(folder.canonicalize().unwrap().join("second.so"))
    );
}
