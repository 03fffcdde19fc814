//! Unit-testing a plugin without a session: load one plugin file, fire an event (or run a
//! command) at it, and read its decision and every host call it made, as JSON. `pi-hooks
//! emit` prints the same from a shell; this module is for `cargo test`.
//!
//! ```no_run
//! use pi_hooks_host::testing::PluginTest;
//! use serde_json::json;
//!
//! let plugin = PluginTest::load("target/debug/libpermission_gate.so")?;
//! plugin.answer_dialogs([json!({"value": "No"})]);
//! let out = plugin.emit(
//!     "tool_call",
//!     json!({"toolCallId": "t1", "toolName": "bash", "input": {"command": "rm -rf /"}}),
//! )?;
//! assert_eq!(out.decision, json!({"block": true, "reason": "Blocked by user"}));
//! assert_eq!(out.calls[0]["method"], "select");
//! # Ok::<(), String>(())
//! ```
//!
//! The decision is what the host would do with the plugin's results, combined with pi's
//! rules: the shapes of `docs/serve-protocol.md` ("`event`": `{"block": …}` for `tool_call`,
//! for `tool_result` the whole patched result `{content, details, isError}` or `null` when
//! nothing changed, `{"action": …}` for `input`, ...). `calls` lists, in order, every dialog
//! (`{"call": "ui", "method": "confirm", …, "answer": …}`), UI update
//! (`notify`, `setStatus`, `setWidget`, `setTitle`), action (`send_message`,
//! `send_user_message`, `append_entry`, `set_session_name`, `set_label`, `set_active_tools`,
//! `abort`, `shutdown`, `session_op`, `set_model`) and `exec` (with its result) the plugin
//! made. Session reads answer from [`PluginTest::set_session_entries`] (empty by default)
//! followed by the `custom` entries the plugin appended in earlier events and commands of the
//! same `PluginTest`, so a plugin that rebuilds its state from its entries can be tested over
//! a sequence of calls.
//! Plugin errors (a failing handler) are in `errors`, as `extension_error` objects.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pi_hooks_abi::ffi::{PI_MODE_PRINT, PI_MODE_RPC};
use serde_json::{Value, json};

use crate::runner::{Runner, RunnerConfig};
use crate::services::UiService;
use crate::services::standalone::Standalone;

/// What one event or command did.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    /// The combined decision (see the module documentation).
    pub decision: Value,
    /// Every host call the plugin made, in order.
    pub calls: Vec<Value>,
    /// The plugin's reported errors: `{extensionPath, event, error}`.
    pub errors: Vec<Value>,
}

impl Emitted {
    /// As one JSON object `{decision, calls, errors}` (what `pi-hooks emit` prints).
    pub fn to_json(&self) -> Value {
        json!({"decision": self.decision, "calls": self.calls, "errors": self.errors})
    }
}

/// One plugin loaded for testing (see the module documentation).
pub struct PluginTest {
    runner: Arc<Runner>,
    record: Arc<Record>,
    entries: Arc<Mutex<Value>>,
    // The private copies of the loaded library live here until the test ends.
    _cache: tempfile::TempDir,
}

/// What the test's services saw and the dialog answers they give.
#[derive(Default)]
struct Record {
    calls: Mutex<Vec<Value>>,
    errors: Mutex<Vec<Value>>,
    answers: Mutex<VecDeque<Value>>,
}

impl Record {
    fn push(&self, call: Value) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(call);
    }

    fn take(&self) -> (Vec<Value>, Vec<Value>) {
        let calls = std::mem::take(&mut *self.calls.lock().unwrap_or_else(|e| e.into_inner()));
        let errors = std::mem::take(&mut *self.errors.lock().unwrap_or_else(|e| e.into_inner()));
        (calls, errors)
    }
}

impl PluginTest {
    /// Loads the plugin file at `path` (no discovery, no trust: you named it), with a UI
    /// (dialogs answer from [`PluginTest::answer_dialogs`]) in `cwd` = the current directory.
    pub fn load(path: impl AsRef<Path>) -> Result<PluginTest, String> {
        PluginTest::load_with(path, true)
    }

    /// From a plugin crate's own integration tests (`tests/*.rs`): builds the crate
    /// `crate_name` (`cargo build --lib`, a quick no-op when it is current; cargo does not
    /// build a cdylib for integration tests by itself) and loads the shared library it makes
    /// (`lib<crate_name, - as _>.so` in the test binary's `target/<profile>/`).
    pub fn built(crate_name: &str) -> Result<PluginTest, String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .ok_or("the test binary is not in target/<profile>/deps")?;
        let target = profile
            .parent()
            .ok_or("the test binary is not in target/<profile>/deps")?;
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build
            .args([
                "build",
                "--quiet",
                "--lib",
                "-p",
                crate_name,
                "--target-dir",
            ])
            .arg(target);
        match profile.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(other) => {
                build.args(["--profile", other]);
            }
        }
        if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
            build.current_dir(dir);
        }
        let status = build
            .status()
            .map_err(|e| format!("cannot run cargo to build {crate_name}: {e}"))?;
        if !status.success() {
            return Err(format!("cargo build -p {crate_name} failed ({status})"));
        }
        let file = format!(
            "{}{}{}",
            std::env::consts::DLL_PREFIX,
            crate_name.replace('-', "_"),
            std::env::consts::DLL_SUFFIX
        );
        let path = profile.join(&file);
        if !path.is_file() {
            return Err(format!(
                "{} was not built: is `crate-type = [\"cdylib\"]` in the [lib] section of {crate_name}'s Cargo.toml?",
                crate::guards::display::escape(&path.display().to_string())
            ));
        }
        PluginTest::load(path)
    }

    /// [`PluginTest::load`], choosing whether the plugin has a UI (`false`: as in pi's print
    /// mode, dialogs answer their defaults at once and are not recorded).
    pub fn load_with(path: impl AsRef<Path>, has_ui: bool) -> Result<PluginTest, String> {
        let path = path.as_ref();
        let cache = tempfile::tempdir().map_err(|e| format!("cannot make a cache folder: {e}"))?;
        let plugin = crate::lifecycle::load::load_file(path, cache.path()).map_err(|e| {
            format!(
                "{}: {e}",
                crate::guards::display::escape(&path.display().to_string())
            )
        })?;
        let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
        let config = RunnerConfig::new(&cwd, if has_ui { PI_MODE_RPC } else { PI_MODE_PRINT });
        let runner = Arc::new(Runner::new(vec![Arc::new(plugin)], config.clone()));
        let record = Arc::new(Record::default());
        let sink = Arc::clone(&record);
        let mut services =
            Standalone::new(config).with_actions(Arc::new(move |call| sink.push(call)));
        if has_ui {
            services = services.with_ui(Arc::new(Ui {
                record: Arc::clone(&record),
            }));
        }
        let entries = services.entries();
        runner.bind_services(Arc::new(services));
        {
            let record = Arc::clone(&record);
            runner.on_error(Arc::new(move |error| {
                let mut line = serde_json::to_value(error).unwrap_or_default();
                line["type"] = "extension_error".into();
                record
                    .errors
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(line);
            }));
        }
        Ok(PluginTest {
            runner,
            record,
            entries,
            _cache: cache,
        })
    }

    /// Queues answers for the plugin's next dialogs, in order: pi's `extension_ui_response`
    /// fields (`{"confirmed": true}`, `{"value": "Yes"}`, `{"cancelled": true}`). A dialog
    /// with no answer left gets its default (cancelled).
    pub fn answer_dialogs(&self, answers: impl IntoIterator<Item = Value>) {
        self.record
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(answers);
    }

    /// The session entries the plugin reads (`session_entries`, `session_branch`).
    pub fn set_session_entries(&self, entries: Value) {
        *self.entries.lock().unwrap_or_else(|e| e.into_inner()) = entries;
    }

    /// Fires the event `name` with `payload` (its fields, without `type`).
    pub fn emit(&self, name: &str, payload: Value) -> Result<Emitted, String> {
        let decision = crate::serve::protocol::event(&self.runner, name, &payload)?;
        Ok(self.finish(decision))
    }

    /// Runs the plugin's command `name` with `args`; the decision is `{}` when it returned.
    pub fn command(&self, name: &str, args: &str) -> Result<Emitted, String> {
        let decision =
            crate::serve::actions::command(&self.runner, &json!({"name": name, "args": args}))?;
        Ok(self.finish(decision))
    }

    fn finish(&self, decision: Value) -> Emitted {
        // What the plugin emitted on the event bus reaches its subscribers first.
        crate::services::event_bus::drain(crate::services::event_bus::SHUTDOWN_DRAIN);
        let (calls, errors) = self.record.take();
        self.keep_appended(&calls);
        Emitted {
            decision,
            calls,
            errors,
        }
    }
}

impl PluginTest {
    /// Adds the entries the plugin appended (`append_entry` calls) to the session later
    /// events and commands read, as pi's session would hold them: `custom` entries chained
    /// by `parentId`.
    fn keep_appended(&self, calls: &[Value]) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(list) = entries.as_array_mut() else {
            return;
        };
        for call in calls.iter().filter(|c| c["call"] == "append_entry") {
            let parent = list.last().map_or(Value::Null, |e| e["id"].clone());
            let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
            let mut entry = json!({
                "type": "custom",
                "id": id,
                "parentId": parent,
                "timestamp": pi_hooks_session::timestamp::now_iso(),
                "customType": call["customType"],
            });
            if !call["data"].is_null() {
                entry["data"] = call["data"].clone();
            }
            list.push(entry);
        }
    }
}

impl Drop for PluginTest {
    fn drop(&mut self) {
        self.runner
            .emit(json!({"type": "session_shutdown", "reason": "quit"}));
        for plugin in self.runner.plugins() {
            plugin.retire();
        }
    }
}

/// The tested plugin's UI: dialogs answered from the queue, everything recorded.
struct Ui {
    record: Arc<Record>,
}

impl UiService for Ui {
    fn dialog(&self, request: Value, _timeout: Option<Duration>) -> Option<Value> {
        let answer = self
            .record
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        let mut call = ui_call(request);
        call["answer"] = answer.clone().unwrap_or_else(|| json!({"cancelled": true}));
        self.record.push(call);
        answer
    }

    fn fire(&self, request: Value) {
        self.record.push(ui_call(request));
    }
}

/// `{"call": "ui", ...request}`.
fn ui_call(request: Value) -> Value {
    let mut call = serde_json::Map::new();
    call.insert("call".into(), "ui".into());
    if let Value::Object(fields) = request {
        call.extend(fields);
    }
    Value::Object(call)
}
