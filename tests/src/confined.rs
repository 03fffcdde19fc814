//! The harness of the confined-plugin tests (`tests/tests/sandbox*.rs`): a hostile C plugin
//! (`tests/fixtures/sandbox_hostile.c`, or another fixture following its protocol) under the
//! real binary, one scripted `bash` call per prompt; each attack's outcome is the reason the
//! plugin blocked its call with.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::{Sandbox, c_fixture_as};

/// One tool call per prompt: `echo <prompt>` (the plugin reads the attack from it).
pub const SCRIPT: &str = r#"{"turns": [
  {"toolCalls": [{"name": "bash", "arguments": {"command": "echo ${PROMPT}"}}]},
  {"text": "done"}]}"#;

pub struct World {
    pub sandbox: Sandbox,
    /// The `pi-hooks` binary the runs use (the built one, or a copy another user can run).
    pub binary: PathBuf,
    pub hostile: PathBuf,
    pub script: PathBuf,
    /// A listener the `connect` attack aims at.
    pub listener: TcpListener,
}

impl World {
    /// The start of a scripted run of the hostile plugin: `run --mode json --no-session
    /// --script SCRIPT --hook PLUGIN` (the prompts follow).
    pub fn run_args(&self) -> Vec<&str> {
        vec![
            "run",
            "--mode",
            "json",
            "--no-session",
            "--script",
            self.script.to_str().unwrap(),
            "--hook",
            self.hostile.to_str().unwrap(),
        ]
    }

    /// The `sandbox` key of the hostile library: its path (a bare name would name a package).
    pub fn key(&self) -> String {
        self.hostile.display().to_string()
    }
}

/// A world for the hostile plugin of `tests/fixtures/sandbox_hostile.c`.
pub fn world() -> World {
    world_of("sandbox_hostile")
}

/// A world for a hostile plugin compiled from `tests/fixtures/<fixture>.c` as `libhostile`
/// (so its grants and reports call it `hostile`), following the protocol of
/// `sandbox_hostile.c`: a `bash` call `echo <attack> [argument]` is blocked with the reason
/// `<attack>: ok ...` or `<attack>: failed ...`.
pub fn world_of(fixture: &str) -> World {
    let sandbox = Sandbox::new();
    let hostile = c_fixture_as(&sandbox.lib(), fixture, "libhostile", &[]);
    let script = sandbox.root().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    std::fs::create_dir_all(sandbox.home().join(".ssh")).unwrap();
    std::fs::write(sandbox.home().join(".ssh/id_rsa"), "SECRET-KEY\n").unwrap();
    std::fs::create_dir_all(sandbox.home().join("out")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    World {
        sandbox,
        binary: crate::pi_hooks_bin(),
        hostile,
        script,
        listener,
    }
}

/// What one run showed.
pub struct Run {
    pub output: Output,
    /// The reason each attack's tool call was blocked with, by attack.
    pub outcomes: HashMap<String, String>,
    /// The `extension_error` lines.
    pub errors: Vec<Value>,
    /// Calls that ran (were not blocked), by command.
    pub ran: Vec<String>,
    /// Every JSON line, in order.
    pub lines: Vec<Value>,
}

impl Run {
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn outcome(&self, attack: &str) -> &str {
        self.outcomes
            .get(attack)
            .unwrap_or_else(|| panic!("no outcome for {attack}: {:?}", self.outcomes))
    }

    /// The one `sandbox` report whose text holds `what`.
    pub fn report(&self, what: &str) -> &Value {
        self.errors
            .iter()
            .find(|e| e["event"] == "sandbox" && e["error"].as_str().unwrap().contains(what))
            .unwrap_or_else(|| {
                panic!(
                    "no sandbox report with {what:?}: {:?}\n{}",
                    self.errors,
                    self.stderr()
                )
            })
    }

    /// Where in the stream the first line satisfying `what` is.
    pub fn position(&self, what: impl Fn(&Value) -> bool) -> usize {
        self.lines
            .iter()
            .position(what)
            .unwrap_or_else(|| panic!("no such line: {:?}", self.lines))
    }

    /// How many `sandbox` reports hold `what`.
    pub fn reports_with(&self, what: &str) -> usize {
        self.errors
            .iter()
            .filter(|e| e["event"] == "sandbox" && e["error"].as_str().unwrap().contains(what))
            .count()
    }

    pub fn sandbox_reports(&self) -> usize {
        self.errors
            .iter()
            .filter(|e| e["event"] == "sandbox")
            .count()
    }
}

/// `pi-hooks run --mode json` with the hostile plugin and `settings` as the user's
/// settings.json, one prompt per attack.
pub fn run(world: &World, settings: &Value, extra: &[&str], prompts: &[&str]) -> Run {
    run_with(world, settings, extra, prompts, |_| {})
}

/// [`run`], with `adjust` applied to the command first.
pub fn run_with(
    world: &World,
    settings: &Value,
    extra: &[&str],
    prompts: &[&str],
    adjust: impl FnOnce(&mut std::process::Command),
) -> Run {
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut args = world.run_args();
    if extra.contains(&"--session") {
        args.retain(|a| *a != "--no-session");
    }
    args.extend_from_slice(extra);
    args.extend_from_slice(prompts);
    let mut command = world.sandbox.command_of(&world.binary, &args);
    adjust(&mut command);
    let output = crate::output_within(command, std::time::Duration::from_secs(60));
    let run = read_run(output);
    assert!(
        run.output.status.success(),
        "the session did not go on: {}",
        run.stderr()
    );
    run
}

/// What a `run --mode json` showed: each attack's outcome (the reason its call was blocked,
/// by the attack's first word), the calls that ran, the extension errors.
pub fn read_run(output: Output) -> Run {
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let mut commands = HashMap::new();
    let (mut outcomes, mut ran) = (HashMap::new(), Vec::new());
    for line in &lines {
        match line["type"].as_str() {
            Some("tool_execution_start") => {
                commands.insert(
                    line["toolCallId"].as_str().unwrap().to_owned(),
                    line["args"]["command"].as_str().unwrap_or("").to_owned(),
                );
            }
            Some("tool_execution_end") => {
                let command = commands[line["toolCallId"].as_str().unwrap()].clone();
                let text = line["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                let attack = command
                    .trim_start_matches("echo ")
                    .split(' ')
                    .next()
                    .unwrap()
                    .to_owned();
                if line["isError"] == true {
                    outcomes.insert(attack, text);
                } else {
                    ran.push(command);
                }
            }
            _ => {}
        }
    }
    let errors = lines
        .iter()
        .filter(|l| l["type"] == "extension_error")
        .cloned()
        .collect();
    Run {
        output,
        outcomes,
        errors,
        ran,
        lines,
    }
}

/// Makes `uid` the owner of `path` and everything beneath it (a test's folder handed to the
/// user `nobody`).
pub fn hand_over(path: &std::path::Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            hand_over(&entry.unwrap().path(), uid);
        }
    }
}

/// The hostile C fixture (`tests/fixtures/sandbox_hostile.c`) packed with `capabilities` by the
/// real `pi-hooks pack` and unpacked into a package folder, `<root>/hostile-package` (what
/// `pi install FOLDER` and `pi-hooks install FOLDER` take).
pub fn hostile_package_folder(sandbox: &Sandbox, capabilities: &Value) -> PathBuf {
    let hostile = c_fixture_as(&sandbox.lib(), "sandbox_hostile", "libhostile", &[]);
    let caps = sandbox.root().join("caps.json");
    std::fs::write(&caps, capabilities.to_string()).unwrap();
    let dist = sandbox.root().join("dist");
    crate::packages::ok(
        sandbox,
        &[
            "pack",
            hostile.to_str().unwrap(),
            "--out",
            dist.to_str().unwrap(),
            "--capabilities",
            caps.to_str().unwrap(),
        ],
    );
    let folder = sandbox.root().join("hostile-package");
    crate::packages::unpack(&dist.join("hostile-1.0.0.tgz"), &folder);
    folder
}
