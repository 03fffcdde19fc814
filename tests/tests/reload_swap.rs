//! Hot reload in the host library (docs/reload.md "Hot reload"): the swap, the drain, the
//! keep-old-on-failure rule and pi's `/reload` event order, on real C plugins loaded by the
//! real loader into a real `Runner`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pi_hooks_host::lifecycle::reload::ReloadKind;
use pi_hooks_host::plugin_files::discover::DiscoveryOptions;
use pi_hooks_tests::reload::*;
use pi_hooks_tests::{Sandbox, c_fixture, compile_c_text};

#[test]
fn a_call_in_progress_finishes_on_the_old_code_and_the_next_event_reaches_the_new() {
    let s = Sandbox::new();
    let entered = s.root().join("entered");
    let flags = [
        define_string("ENTERED", &entered.display().to_string()),
        "-DWAIT_MS=700".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let TwoBuilds {
        v1: _,
        v2,
        plugin,
        options,
        runner,
    } = two_builds(&s, &flags);

    let waiting = {
        let runner = Arc::clone(&runner);
        std::thread::spawn(move || {
            let outcome = tool_call(&runner, "slow-1", "wait");
            (answered_by(&outcome), Instant::now())
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !entered.exists() {
        assert!(Instant::now() < deadline, "the handler never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    replace_by_rename(&v2, &plugin);
    let reloaded = runner
        .reload_plugin(&plugin, &options)
        .expect("the reload succeeds");
    let reload_done = Instant::now();
    assert_eq!(reloaded.kind, ReloadKind::Replaced);
    assert_eq!(reloaded.version, "1.0.2");
    let (slow, slow_done) = waiting.join().unwrap();
    assert_eq!(slow, Ok(1), "the call in progress finishes on the old code");
    assert!(
        slow_done <= reload_done,
        "the reload returned before the call on the old version had drained"
    );
    assert_eq!(answered_by(&tool_call(&runner, "next", "bash")), Ok(2));
    let line = reloaded.line();
    assert!(
        line.starts_with("reloaded reload-test 1.0.2 from ") && line.ends_with(" ms"),
        "{line}"
    );
    assert!(line.contains(&plugin.display().to_string()), "{line}");
}

#[test]
fn reload_under_load_answers_every_event_with_exactly_one_version() {
    let s = Sandbox::new();
    let TwoBuilds {
        v1,
        v2,
        plugin,
        options,
        runner,
    } = two_builds(&s, &[]);

    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let emitter = {
        let (runner, stop, answered) = (Arc::clone(&runner), stop.clone(), answered.clone());
        std::thread::spawn(move || -> Result<usize, String> {
            let mut sent = 0usize;
            while !stop.load(Ordering::Acquire) {
                let outcome = tool_call(&runner, &format!("call-{sent}"), "bash");
                match answered_by(&outcome) {
                    Ok(v @ (1 | 2)) => answered[v as usize - 1].fetch_add(1, Ordering::Relaxed),
                    Ok(v) => return Err(format!("event {sent} answered by version {v}")),
                    Err(e) => return Err(format!("event {sent}: {e}")),
                };
                sent += 1;
            }
            Ok(sent)
        })
    };
    for round in 0..200u32 {
        let (build, version) = if round % 2 == 0 { (&v2, 2) } else { (&v1, 1) };
        replace_by_rename(build, &plugin);
        let reloaded = runner
            .reload_plugin(&plugin, &options)
            .unwrap_or_else(|e| panic!("reload {round}: {e}"));
        assert_eq!(reloaded.version, format!("1.0.{version}"));
        // Right after the reload returns, every new event reaches the new version.
        assert_eq!(
            answered_by(&tool_call(&runner, &format!("check-{round}"), "bash")),
            Ok(version as i64),
            "round {round}"
        );
    }
    stop.store(true, Ordering::Release);
    let sent = emitter.join().expect("the emitting thread did not crash");
    let sent = sent.unwrap_or_else(|e| panic!("{e}"));
    let (one, two) = (
        answered[0].load(Ordering::Relaxed),
        answered[1].load(Ordering::Relaxed),
    );
    assert_eq!(one + two, sent, "every event answered once");
    assert!(
        one > 0 && two > 0,
        "both versions answered events ({one}, {two})"
    );
    assert_eq!(runner.generation(), 200);
    assert_eq!(runner.plugins().len(), 1);
}

/// A broken build of the plugin at `plugin`: `(what, build it, a piece of the error)`.
type Broken<'a> = (&'a str, Box<dyn Fn(&Path) + 'a>, &'a str);

#[test]
fn broken_rebuilds_keep_the_old_version_answering() {
    let s = Sandbox::new();
    let log = s.root().join("log");
    let log_flag = define_string("LOG", &log.display().to_string());
    let v1 = build_version(&s.lib(), "v1", 1, &[&log_flag]);
    let v2 = build_version(&s.lib(), "v2", 2, &[]);
    let plugin = s.root().join("plugin.so");
    std::fs::copy(&v1, &plugin).unwrap();
    let options = explicit_options(&s, &[&plugin]);
    let runner = runner_for(&options);
    let lib = s.lib();
    let cases: Vec<Broken> = vec![
        (
            "truncated",
            Box::new(|p: &Path| {
                let bytes = std::fs::read(&v2).unwrap();
                std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap();
            }),
            "truncated",
        ),
        (
            "empty",
            Box::new(|p: &Path| std::fs::write(p, b"").unwrap()),
            "empty",
        ),
        (
            "no entry symbol",
            Box::new(|p: &Path| {
                let built = build_version(&lib, "no-entry", 2, &["-DNO_ENTRY"]);
                replace_by_rename(&built, p);
            }),
            "does not export the entry symbol",
        ),
        (
            "ABI mismatch",
            Box::new(|p: &Path| replace_by_rename(&c_fixture(&lib, "entry_v2", &[]), p)),
            "ABI 2",
        ),
        (
            "init error",
            Box::new(|p: &Path| {
                let built = build_version(&lib, "init-fail", 2, &["-DINIT_FAIL"]);
                replace_by_rename(&built, p);
            }),
            "init failed on purpose",
        ),
        (
            "missing dependency symbol",
            Box::new(|p: &Path| {
                let code = r#"#include "pi_hooks.h"
extern int pi_hooks_no_such_function(void);
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    (void)host; (void)plugin; return pi_hooks_no_such_function() ? PI_OK : PI_ERR;
}
PI_HOOKS_PLUGIN("undefined", "1.0.0", "", init, NULL);
"#;
                let built = compile_c_text(&lib, "undefined", code, &[]);
                replace_by_rename(&built, p);
            }),
            "pi_hooks_no_such_function",
        ),
    ];
    for (what, break_it, expected) in cases {
        break_it(&plugin);
        let error = runner
            .reload_plugin(&plugin, &options)
            .expect_err(&format!("{what}: the reload must fail"));
        let text = error.to_string();
        assert!(text.contains(expected), "{what}: {text}");
        assert!(
            text.contains(&plugin.display().to_string()),
            "{what}: {text}"
        );
        assert!(
            text.contains("still running: reload-test 1.0.1"),
            "{what}: {text}"
        );
        assert_eq!(
            answered_by(&tool_call(&runner, what, "bash")),
            Ok(1),
            "{what}: the old version must keep answering"
        );
        assert_eq!(runner.generation(), 0, "{what}: nothing was swapped");
    }
    // The old instance never saw a shutdown: a failed reload is invisible to it.
    assert!(
        !log_lines(&log).iter().any(|l| l.contains("shutdown")),
        "{:?}",
        log_lines(&log)
    );
    // And a good build after all that goes in.
    replace_by_rename(&v2, &plugin);
    runner.reload_plugin(&plugin, &options).unwrap();
    assert_eq!(answered_by(&tool_call(&runner, "good", "bash")), Ok(2));
    assert_eq!(
        log_lines(&log),
        [
            "reload-test v1 init",
            "reload-test v1 session_shutdown reload",
            "reload-test v1 shutdown"
        ]
    );
}

#[test]
fn an_untrusted_change_to_a_project_plugin_keeps_the_trusted_version() {
    let s = Sandbox::new();
    let v1 = build_version(&s.lib(), "v1", 1, &[]);
    let v2 = build_version(&s.lib(), "v2", 2, &[]);
    let hooks = s.project().join(".pi/hooks");
    let plugin = s.install(&v1, &hooks, "project.so");
    let mut store = pi_hooks_host::plugin_files::trust::TrustStore::load(&s.agent_dir()).unwrap();
    let sha = pi_hooks_host::plugin_files::trust::sha256_hex(&std::fs::read(&plugin).unwrap());
    store.trust(&std::fs::canonicalize(&plugin).unwrap(), &sha);
    store.save().unwrap();
    let options = DiscoveryOptions {
        cwd: s.project(),
        agent_dir: s.agent_dir(),
        explicit: Vec::new(),
        no_discovery: false,
    };
    let runner = runner_for(&options);
    assert_eq!(answered_by(&tool_call(&runner, "a", "bash")), Ok(1));
    replace_by_rename(&v2, &plugin);
    let error = runner.reload_plugin(&plugin, &options).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("changed since it was trusted"), "{text}");
    assert!(text.contains("pi-hooks trust "), "{text}");
    assert!(text.contains("then reload"), "{text}");
    assert_eq!(answered_by(&tool_call(&runner, "b", "bash")), Ok(1));
    // Trusted now: the reload goes through.
    let sha = pi_hooks_host::plugin_files::trust::sha256_hex(&std::fs::read(&plugin).unwrap());
    let mut store = pi_hooks_host::plugin_files::trust::TrustStore::load(&s.agent_dir()).unwrap();
    store.trust(&std::fs::canonicalize(&plugin).unwrap(), &sha);
    store.save().unwrap();
    runner.reload_plugin(&plugin, &options).unwrap();
    assert_eq!(answered_by(&tool_call(&runner, "c", "bash")), Ok(2));
}

#[test]
fn the_loaded_file_overwritten_in_place_is_no_crash() {
    let s = Sandbox::new();
    let TwoBuilds {
        v1: _,
        v2,
        plugin,
        options,
        runner,
    } = two_builds(&s, &[]);
    // In place: same inode, truncated and rewritten, as `cp` and some linkers do.
    let v2_bytes = std::fs::read(&v2).unwrap();
    std::fs::write(&plugin, &v2_bytes[..v2_bytes.len() / 3]).unwrap();
    for i in 0..50 {
        assert_eq!(
            answered_by(&tool_call(&runner, &format!("a{i}"), "bash")),
            Ok(1)
        );
    }
    std::fs::write(&plugin, &v2_bytes).unwrap();
    assert_eq!(answered_by(&tool_call(&runner, "b", "bash")), Ok(1));
    runner.reload_plugin(&plugin, &options).unwrap();
    assert_eq!(answered_by(&tool_call(&runner, "c", "bash")), Ok(2));
}

#[test]
fn reload_all_follows_pis_event_order_and_keeps_a_plugin_whose_rebuild_broke() {
    let s = Sandbox::new();
    let log = s.root().join("log");
    let log_flag = define_string("LOG", &log.display().to_string());
    let build = |name: &str, version: u32, extra: &[&str]| {
        let name_flag = define_string("NAME", name);
        let mut flags = vec![log_flag.as_str(), name_flag.as_str()];
        flags.extend_from_slice(extra);
        build_version(&s.lib(), &format!("{name}-v{version}"), version, &flags)
    };
    let files: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            let path = s.root().join(format!("{name}.so"));
            std::fs::copy(build(name, 1, &[]), &path).unwrap();
            path
        })
        .collect();
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let options = explicit_options(&s, &refs);
    let runner = runner_for(&options);
    std::fs::write(&log, "").unwrap();

    // a: rebuilt; b: its rebuild fails init; c: deleted.
    replace_by_rename(&build("a", 2, &[]), &files[0]);
    replace_by_rename(&build("b", 2, &["-DINIT_FAIL"]), &files[1]);
    std::fs::remove_file(&files[2]).unwrap();
    let report = runner.reload_all(&options);
    let lines = log_lines(&log);
    assert_eq!(
        lines,
        [
            "a v1 session_shutdown reload",
            "b v1 session_shutdown reload",
            "c v1 session_shutdown reload",
            "a v2 init",
            "b v2 init-fail",
            "a v1 shutdown",
            "c v1 shutdown",
            "a v2 session_start reload",
            "b v1 session_start reload",
            "a v2 resources_discover reload",
            "b v1 resources_discover reload",
        ]
    );
    let running: Vec<(String, bool)> = report
        .plugins
        .iter()
        .map(|(p, new)| (format!("{} {}", p.name(), p.version()), *new))
        .collect();
    assert_eq!(
        running,
        [("a 1.0.2".to_owned(), true), ("b 1.0.1".to_owned(), false)]
    );
    assert_eq!(report.kept, [files[1].display().to_string()]);
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.error.contains("init failed on purpose"))
    );
    assert_eq!(report.unloaded.len(), 1, "{:?}", report.unloaded);
    assert!(report.unloaded[0].starts_with("c 1.0.1"));
    let line = report.line();
    assert!(line.starts_with("reloaded 1 plugin in "), "{line}");
    assert!(line.contains("1 kept the version loaded before"), "{line}");
    assert!(line.contains("1 failed to load"), "{line}");
    assert_eq!(runner.generation(), 1);
}

#[test]
fn a_new_plugin_file_is_added_in_discovery_order_and_a_deleted_one_unloaded() {
    let s = Sandbox::new();
    let hooks = s.agent_dir().join("hooks");
    let build = |name: &str| {
        let name_flag = define_string("NAME", name);
        build_version(&s.lib(), name, 1, &[&name_flag])
    };
    s.install(&build("a"), &hooks, "a.so");
    s.install(&build("c"), &hooks, "c.so");
    let options = DiscoveryOptions {
        cwd: s.project(),
        agent_dir: s.agent_dir(),
        explicit: Vec::new(),
        no_discovery: false,
    };
    let runner = runner_for(&options);
    let names = |runner: &pi_hooks_host::runner::Runner| -> Vec<String> {
        runner
            .plugins()
            .iter()
            .map(|p| p.name().to_owned())
            .collect()
    };
    assert_eq!(names(&runner), ["a", "c"]);
    let b = s.install(&build("b"), &hooks, "b.so");
    let added = runner.add_plugin(&b, &options).unwrap();
    assert_eq!(added.kind, ReloadKind::Added);
    assert_eq!(
        names(&runner),
        ["a", "b", "c"],
        "the place discovery gives it"
    );
    std::fs::remove_file(hooks.join("a.so")).unwrap();
    let removed = runner.remove_plugin(&hooks.join("a.so")).unwrap();
    assert_eq!(removed.kind, ReloadKind::Removed);
    assert!(removed.line().starts_with("unloaded a 1.0.1 from "));
    assert_eq!(names(&runner), ["b", "c"]);
    let error = runner
        .add_plugin(&s.root().join("elsewhere.so"), &options)
        .unwrap_err();
    assert!(error.error.contains("not in a plugin folder"), "{error}");
}

#[test]
fn the_old_versions_timers_stop_and_the_new_one_starts_its_own() {
    let s = Sandbox::new();
    let log = s.root().join("log");
    let flags = [
        define_string("LOG", &log.display().to_string()),
        "-DTICK_MS=20".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let TwoBuilds {
        v1: _,
        v2,
        plugin,
        options,
        runner,
    } = two_builds(&s, &flags);
    runner.emit(serde_json::json!({"type": "session_start", "reason": "startup"}));
    let ticks = |version: &str| {
        log_lines(&log)
            .iter()
            .filter(|l| *l == &format!("reload-test {version} tick"))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while ticks("v1") < 3 {
        assert!(
            Instant::now() < deadline,
            "v1 timer never fired: {:?}",
            log_lines(&log)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    replace_by_rename(&v2, &plugin);
    runner.reload_plugin(&plugin, &options).unwrap();
    let v1_ticks = ticks("v1");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ticks("v1"), v1_ticks, "the retired version's timer fired");
    assert!(
        ticks("v2") >= 3,
        "the new version's timer runs: {:?}",
        log_lines(&log)
    );
    // The old version's shutdown came after its last tick.
    let lines = log_lines(&log);
    let shutdown = lines
        .iter()
        .position(|l| l == "reload-test v1 shutdown")
        .unwrap();
    assert!(
        !lines[shutdown..].iter().any(|l| l == "reload-test v1 tick"),
        "{lines:?}"
    );
}
