//! The plugin cache stays bounded with the file shadow copies
//! (`PI_HOOKS_SHADOW=file`, what non-Linux systems always use): a copy is deleted once the
//! system loader has mapped it, a failed load leaves nothing, and leftovers no process holds
//! are swept while a copy another process holds is left alone.
//!
//! One test in this binary: it sets `PI_HOOKS_SHADOW` for the whole process.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pi_hooks_tests::reload::*;
use pi_hooks_tests::{Sandbox, compile_c_text};

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_file_cache_does_not_grow_across_reloads_and_failed_loads_leave_nothing() {
    // SAFETY: the only test of this binary sets it before any thread reads the environment.
    unsafe { std::env::set_var("PI_HOOKS_SHADOW", "file") };
    let s = Sandbox::new();
    let TwoBuilds {
        v1,
        v2,
        plugin,
        options,
        runner,
    } = two_builds(&s, &[]);
    let cache = s.agent_dir().join("plugin-cache");
    assert!(cache.is_dir(), "the file cache is in use");
    assert_eq!(files_in(&cache), Vec::<String>::new());

    for round in 0..50u32 {
        let (build, version) = if round % 2 == 0 { (&v2, 2) } else { (&v1, 1) };
        replace_by_rename(build, &plugin);
        runner.reload_plugin(&plugin, &options).unwrap();
        assert_eq!(answered_by(&tool_call(&runner, "x", "bash")), Ok(version));
        assert_eq!(files_in(&cache), Vec::<String>::new(), "round {round}");
    }

    // Failed loads: refused by the system loader, no entry symbol, init error.
    let lib = s.lib();
    let undefined = compile_c_text(
        &lib,
        "undefined",
        r#"#include "pi_hooks.h"
extern int pi_hooks_no_such_function(void);
static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    (void)host; (void)plugin; return pi_hooks_no_such_function() ? PI_OK : PI_ERR;
}
PI_HOOKS_PLUGIN("undefined", "1.0.0", "", init, NULL);
"#,
        &[],
    );
    let no_entry = build_version(&lib, "no-entry", 3, &["-DNO_ENTRY"]);
    let init_fail = build_version(&lib, "init-fail", 3, &["-DINIT_FAIL"]);
    for broken in [&undefined, &no_entry, &init_fail] {
        replace_by_rename(broken, &plugin);
        runner.reload_plugin(&plugin, &options).unwrap_err();
        assert_eq!(
            files_in(&cache),
            Vec::<String>::new(),
            "{}",
            broken.display()
        );
    }

    // Leftovers of a host that died: one nobody holds, one another process holds locked.
    let dead = cache.join("gone-0123456789abcdef-0011223344556677.so");
    let held = cache.join("held-0123456789abcdef-8899aabbccddeeff.so");
    std::fs::write(&dead, b"left by a crashed host").unwrap();
    std::fs::write(&held, b"being opened by another host").unwrap();
    // One process that opens the file, locks it and sleeps (killing it releases the lock).
    let mut holder = Command::new("sh")
        .args(["-c", r#"exec 9<"$0"; flock --exclusive 9; exec sleep 60"#])
        .arg(&held)
        .spawn()
        .expect("run sh and flock(1)");
    // Wait until the lock is taken (flock -n fails while it is held).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let probe = Command::new("flock")
            .args(["--nonblock", "--exclusive"])
            .arg(&held)
            .arg("true")
            .status()
            .unwrap();
        if !probe.success() {
            break;
        }
        assert!(Instant::now() < deadline, "the holder never took the lock");
        std::thread::sleep(Duration::from_millis(10));
    }
    replace_by_rename(&v2, &plugin);
    runner.reload_plugin(&plugin, &options).unwrap();
    assert!(!dead.exists(), "an unheld leftover is swept after a reload");
    assert!(held.exists(), "a copy another process holds is left alone");
    holder.kill().unwrap();
    holder.wait().unwrap();
    replace_by_rename(&v1, &plugin);
    runner.reload_plugin(&plugin, &options).unwrap();
    assert_eq!(files_in(&cache), Vec::<String>::new());
    assert_eq!(answered_by(&tool_call(&runner, "y", "bash")), Ok(1));
}
