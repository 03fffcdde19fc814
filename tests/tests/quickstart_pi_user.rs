//! The README's quick start for a pi user (block `pi-user`), run as written by a user with
//! node and npm but no Rust, against a local npm registry (verdaccio) holding what
//! `scripts/npm-packages.sh` packs (pi-hooks, its linux-x64-gnu binary, and the prebuilt
//! `@pi-hooks/permission-gate`): each command of the block in `sh -c`, with only the registry
//! (npm's environment), HOME and the working folder substituted, and the pinned pi 1.6.0 as
//! the `pi` on PATH. `pi ... "Run the demo."` runs without a terminal, as pi's print mode:
//! with no UI to ask, the permission gate blocks the demo's `rm -rf` at once.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use pi_hooks_tests::Sandbox;
use pi_hooks_tests::npm::{PiUser, Registry, quickstart_commands};
use pi_hooks_tests::tools::pi16;
use serde_json::Value;

/// The background `pi-hooks demo-model` of the block, in a process group of its own; the
/// whole group is killed at the end (the npm launcher and the binary it runs).
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_pi_user_quick_start_blocks_the_demo_s_rm_rf_in_the_real_pi() {
    let commands = quickstart_commands("pi-user");
    assert_eq!(commands.len(), 5, "the block's commands: {commands:#?}");
    let pi = pi16();
    let sandbox = Sandbox::new();
    let registry = Registry::with_pi_hooks();
    let user = PiUser::new(&sandbox, &registry);
    let mut path = format!("{}:{}", user.pi_on_path(&pi).display(), user.path());
    let mut demo: Option<(Background, String)> = None;
    let mut printed = None;
    for line in &commands {
        if let Some(exported) = line.strip_prefix("export PATH=") {
            path = user.export_path(exported, &path);
        } else if let Some(background) = line.strip_suffix('&') {
            // `pi-hooks demo-model --write-models-json &`: started, its announcement read.
            let mut child = user
                .shell(&format!("exec {}", background.trim()), &path)
                .env("TMPDIR", sandbox.root())
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            let mut announced = String::new();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            while !announced.contains("Stop with Ctrl+C.") {
                match lines.next() {
                    Some(Ok(l)) => announced.push_str(&format!("{l}\n")),
                    _ => panic!("{line} did not announce itself:\n{announced}"),
                }
            }
            std::thread::spawn(move || for _ in lines {});
            demo = Some((Background(child), announced));
        } else if line.starts_with("pi install ") {
            let output = user.shell(line, &path).output().unwrap();
            assert!(output.status.success(), "{line}: {output:?}");
        } else if line.starts_with("pi ") {
            let started = Instant::now();
            let output = user
                .shell(line, &path)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{line} took {:?}",
                started.elapsed()
            );
            printed = Some(output);
        } else {
            panic!("a command this test does not know how to run: {line}");
        }
    }
    let (_demo, announced) = demo.expect("the block starts the demo model");
    assert!(
        announced.contains("Added the provider pi-hooks-demo to "),
        "{announced}"
    );
    let scratch = {
        let at = announced
            .find("${SCRATCH} is ")
            .expect("the scratch folder");
        std::path::PathBuf::from(
            announced[at + "${SCRATCH} is ".len()..]
                .split_whitespace()
                .next()
                .unwrap(),
        )
    };
    let printed = printed.expect("the block runs pi");
    assert!(printed.status.success(), "{printed:?}");
    // The demo's rm -rf was blocked: the folder it would have removed is still there.
    assert!(
        scratch.join("build/output.txt").is_file(),
        "rm -rf ran: {printed:?}"
    );

    // The same prompt in pi's JSON mode shows the block's reason.
    let last = commands.last().unwrap();
    let json = user
        .shell(&format!("{last} --mode json"), &path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(json.status.success(), "{json:?}");
    let ends: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    let blocked = ends
        .iter()
        .find(|e| e["isError"] == true)
        .unwrap_or_else(|| panic!("no blocked tool: {ends:#?}"));
    assert_eq!(
        blocked["result"]["content"][0]["text"],
        format!(
            "Blocked dangerous command (no UI to ask): rm -rf {}/build",
            scratch.display()
        )
    );
    assert!(scratch.join("build/output.txt").is_file());
}
