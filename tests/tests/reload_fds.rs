//! Reloads do not use up file descriptors (authors reload "a hundred times a day"): on Linux
//! each load's sealed memfd is closed when its plugin instance is dropped, and a descriptor
//! number that comes back still loads the new code (the system loader would otherwise hand
//! back the library it already opened under that `/proc/self/fd/N` name).
//!
//! One test in this binary: it counts the process's open descriptors.

use pi_hooks_tests::Sandbox;
use pi_hooks_tests::reload::*;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn three_hundred_reloads_load_new_code_every_time_and_keep_no_descriptor() {
    let s = Sandbox::new();
    let v1 = build_version(&s.lib(), "v1", 1, &[]);
    let v2 = build_version(&s.lib(), "v2", 2, &[]);
    let v3 = build_version(&s.lib(), "v3", 3, &[]);
    let plugin = s.root().join("plugin.so");
    std::fs::copy(&v1, &plugin).unwrap();
    let options = explicit_options(&s, &[&plugin]);
    let runner = runner_for(&options);
    // Warm up: the first reload starts the host's timer worker threads and the like.
    replace_by_rename(&v2, &plugin);
    runner.reload_plugin(&plugin, &options).unwrap();
    let before = open_fds();
    for round in 0..300u32 {
        // Three builds in turn: a descriptor number freed by one reload comes back two
        // reloads later, for another build.
        let (build, version) = [(&v1, 1), (&v2, 2), (&v3, 3)][round as usize % 3];
        replace_by_rename(build, &plugin);
        runner.reload_plugin(&plugin, &options).unwrap();
        assert_eq!(
            answered_by(&tool_call(&runner, &format!("r{round}"), "bash")),
            Ok(version),
            "round {round}: the reload did not load the new build"
        );
    }
    let after = open_fds();
    assert!(
        after <= before + 2,
        "open descriptors grew from {before} to {after} across 300 reloads"
    );
}
