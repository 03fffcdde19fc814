//! Helpers for the hot-reload tests (`tests/tests/reload_*.rs`): a C plugin built in
//! versions, a runner over real loaded plugins, and file replacement the way build tools do
//! it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pi_hooks_host::plugin_files::discover::DiscoveryOptions;
use pi_hooks_host::runner::events::ToolCallOutcome;
use pi_hooks_host::runner::{Runner, RunnerConfig};
use serde_json::{Value, json};

use crate::{Sandbox, compile_c_text};

/// The reload test plugin. Compile-time switches: `VERSION` (an integer, also the last digit
/// of the plugin's version string), `NAME`, `LOG` (a file that gets one line per init,
/// session event and shutdown: `NAME vVERSION what`), `WAIT_MS` and `ENTERED` (a
/// `tool_call` of the tool `wait` creates `ENTERED`, then sleeps), `INIT_FAIL` (init fails),
/// `NO_ENTRY` (no entry symbol), `TICK_MS` (`session_start` starts a timer that logs `tick`
/// every `TICK_MS` ms).
///
/// It has two `tool_call` handlers: the first remembers the call's `toolCallId` in its
/// library's memory (per thread), the second answers `{"version": VERSION, "same": true}` when the first
/// handler of the same library saw the same call; so a dispatch that mixed two versions
/// answers `"same": false`.
pub const RELOAD_PLUGIN_C: &str = r#"#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "pi_hooks.h"

#ifndef VERSION
#define VERSION 1
#endif
#ifndef NAME
#define NAME "reload-test"
#endif
#ifndef WAIT_MS
#define WAIT_MS 0
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

static const PiHostApi *host;
static PiPlugin *self;
/* Per thread: two dispatches on two threads may interleave between the handlers. */
static _Thread_local char last_id[64];

static void logline(const char *what, PiStr more) {
#ifdef LOG
    FILE *f = fopen(LOG, "a");
    if (f) {
        fprintf(f, "%s v%d %s%s%.*s\n", NAME, VERSION, what, more.len ? " " : "", (int)more.len,
                more.ptr ? more.ptr : "");
        fclose(f);
    }
#else
    (void)what;
    (void)more;
#endif
}

static int is(PiStr s, const char *text) {
    return s.len == strlen(text) && memcmp(s.ptr, text, s.len) == 0;
}

static PiStatus first(void *user_data, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr id = {0}, tool = {0};
    (void)user_data;
    (void)ctx;
    (void)result;
    host->values->as_str(host->values->get(event, pi_str("toolCallId")), &id);
    size_t n = id.len < sizeof last_id - 1 ? id.len : sizeof last_id - 1;
    memcpy(last_id, id.ptr, n);
    last_id[n] = 0;
    host->values->as_str(host->values->get(event, pi_str("toolName")), &tool);
    if (is(tool, "wait")) {
#ifdef ENTERED
        FILE *f = fopen(ENTERED, "w");
        if (f) fclose(f);
#endif
        struct timespec t = {WAIT_MS / 1000, (WAIT_MS % 1000) * 1000000L};
        nanosleep(&t, NULL);
    }
    return PI_OK;
}

static PiStatus second(void *user_data, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr id = {0};
    (void)user_data;
    (void)ctx;
    host->values->as_str(host->values->get(event, pi_str("toolCallId")), &id);
    bool same = strlen(last_id) == id.len && memcmp(last_id, id.ptr, id.len) == 0;
    host->results->set_int(result, pi_str("version"), VERSION);
    host->results->set_bool(result, pi_str("same"), same);
    return PI_OK;
}

#ifdef TICK_MS
static PiStatus tick(void *user_data, uint64_t timer_id, PiContext *ctx) {
    PiStr none = {0};
    (void)user_data;
    (void)timer_id;
    (void)ctx;
    logline("tick", none);
    return PI_OK;
}
#endif

static PiStatus on_session(void *user_data, const PiValue *event, PiContext *ctx,
                           PiResult *result) {
    PiStr type = {0}, reason = {0};
    (void)user_data;
    (void)ctx;
    (void)result;
    host->values->as_str(host->values->get(event, pi_str("type")), &type);
    host->values->as_str(host->values->get(event, pi_str("reason")), &reason);
    char what[64];
    snprintf(what, sizeof what, "%.*s", (int)type.len, type.ptr ? type.ptr : "");
    logline(what, reason);
#ifdef TICK_MS
    if (is(type, "session_start"))
        host->actions->timer_start(self, TICK_MS, TICK_MS, tick, NULL, NULL);
#endif
    return PI_OK;
}

__attribute__((unused)) static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    self = plugin;
    PiStr none = {0};
#ifdef INIT_FAIL
    logline("init-fail", none);
    host->registry->set_init_error(plugin, pi_str("init failed on purpose"));
    return PI_ERR;
#endif
    host->registry->on(plugin, pi_str("tool_call"), first, NULL);
    host->registry->on(plugin, pi_str("tool_call"), second, NULL);
    host->registry->on(plugin, pi_str("session_start"), on_session, NULL);
    host->registry->on(plugin, pi_str("session_shutdown"), on_session, NULL);
    host->registry->on(plugin, pi_str("resources_discover"), on_session, NULL);
    logline("init", none);
    return PI_OK;
}

__attribute__((unused)) static void shutdown(PiPlugin *plugin) {
    PiStr none = {0};
    (void)plugin;
    logline("shutdown", none);
}

#ifndef NO_ENTRY
PI_HOOKS_PLUGIN(NAME, "1.0." STR(VERSION), "reload test plugin", init, shutdown);
#endif
"#;

/// Builds version `version` of the reload test plugin into `<dir>/<file>.so` with `extra`
/// compiler flags (`-DLOG=...` and so on).
pub fn build_version(dir: &Path, file: &str, version: u32, extra: &[&str]) -> PathBuf {
    let mut flags = vec![format!("-DVERSION={version}")];
    flags.extend(extra.iter().map(|s| s.to_string()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    compile_c_text(dir, file, RELOAD_PLUGIN_C, &flags)
}

/// Two builds of the test plugin (versions 1 and 2, both with `flags`), the first copied to
/// `<root>/plugin.so` and loaded (as `-e`) by a fresh runner.
pub struct TwoBuilds {
    /// Version 1's library.
    pub v1: PathBuf,
    /// Version 2's library.
    pub v2: PathBuf,
    /// The plugin file the runner loaded (a copy of version 1).
    pub plugin: PathBuf,
    /// The discovery options that name it.
    pub options: DiscoveryOptions,
    /// The runner, running version 1.
    pub runner: Arc<Runner>,
}

/// See [`TwoBuilds`].
pub fn two_builds(s: &Sandbox, flags: &[&str]) -> TwoBuilds {
    let v1 = build_version(&s.lib(), "v1", 1, flags);
    let v2 = build_version(&s.lib(), "v2", 2, flags);
    let plugin = s.root().join("plugin.so");
    std::fs::copy(&v1, &plugin).expect("copy version 1");
    let options = explicit_options(s, &[&plugin]);
    let runner = runner_for(&options);
    TwoBuilds {
        v1,
        v2,
        plugin,
        options,
        runner,
    }
}

/// `-D<name>="<text>"` for a string macro.
pub fn define_string(name: &str, text: &str) -> String {
    format!("-D{name}=\"{text}\"")
}

/// Replaces `target` with the bytes of `source` the way cargo and ld do: a new file beside
/// it, renamed over it.
pub fn replace_by_rename(source: &Path, target: &Path) {
    let tmp = target.with_extension("tmp-replace");
    std::fs::copy(source, &tmp).expect("write the new build");
    std::fs::rename(&tmp, target).expect("rename the new build into place");
}

/// Discovery options for a sandbox: the plugin files named explicitly, folders skipped.
pub fn explicit_options(s: &Sandbox, files: &[&Path]) -> DiscoveryOptions {
    DiscoveryOptions {
        cwd: s.project(),
        agent_dir: s.agent_dir(),
        explicit: files.iter().map(|p| p.display().to_string()).collect(),
        no_discovery: true,
    }
}

/// Loads what `options` discover (every load must succeed) and builds a runner over it, with
/// a [`MemorySession`] bound.
pub fn runner_for(options: &DiscoveryOptions) -> Arc<Runner> {
    let report = pi_hooks_host::lifecycle::load::load_all(options);
    assert!(report.errors.is_empty(), "load errors: {:?}", report.errors);
    let config = RunnerConfig {
        cwd: options.cwd.display().to_string(),
        mode: pi_hooks_abi::ffi::PI_MODE_PRINT,
        hook_timeout: Duration::from_secs(30),
        tool_call_timeout: None,
        session_file: None,
    };
    let runner = Arc::new(Runner::new(
        report.plugins.into_iter().map(Arc::new).collect(),
        config.clone(),
    ));
    runner.bind_services(MemorySession::new(config));
    runner
}

/// Emits one `tool_call` of `tool` with call id `id`.
pub fn tool_call(runner: &Runner, id: &str, tool: &str) -> ToolCallOutcome {
    runner.emit_tool_call(Runner::tool_call_payload(id, tool, &json!({})))
}

/// The version that answered a `tool_call`, checking that a single version answered it
/// (`"same": true`). `Err` says what was wrong.
pub fn answered_by(outcome: &ToolCallOutcome) -> Result<i64, String> {
    match outcome {
        ToolCallOutcome::Allow {
            last: Some(last), ..
        } => {
            if last.get("same") != Some(&Value::Bool(true)) {
                return Err(format!("a dispatch mixed two versions: {last}"));
            }
            last.get("version")
                .and_then(Value::as_i64)
                .ok_or_else(|| format!("no version in {last}"))
        }
        other => Err(format!("not answered by the plugin: {other:?}")),
    }
}

/// The lines of a plugin log (empty when it does not exist yet).
pub fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A small in-memory session for runners built by the reload tests (the agent loop is not
/// part of what they test): custom entries kept in memory, no model, no tools, always idle;
/// its `runner_config` is the runner's, which is what timer callbacks need to run.
pub struct MemorySession {
    config: RunnerConfig,
    entries: std::sync::Mutex<Vec<Value>>,
}

impl MemorySession {
    /// A session for a runner configured as `config`.
    pub fn new(config: RunnerConfig) -> Arc<Self> {
        Arc::new(MemorySession {
            config,
            entries: std::sync::Mutex::default(),
        })
    }
}

impl pi_hooks_host::services::HostServices for MemorySession {
    fn session_entries(&self) -> Value {
        Value::Array(self.entries.lock().unwrap().clone())
    }
    fn session_branch(&self) -> Value {
        self.session_entries()
    }
    fn session_leaf_id(&self) -> Option<String> {
        None
    }
    fn session_name(&self) -> Option<String> {
        None
    }
    fn set_session_name(&self, _: &str) -> Result<(), String> {
        Err("no session names in the reload tests".into())
    }
    fn set_label(&self, _: &str, _: Option<&str>) -> Result<(), String> {
        Err("no labels in the reload tests".into())
    }
    fn append_entry(&self, custom_type: &str, data: Option<Value>) -> Result<(), String> {
        self.entries
            .lock()
            .unwrap()
            .push(json!({"type": "custom", "customType": custom_type, "data": data}));
        Ok(())
    }
    fn send_message(&self, _: &str, _: Value, _: Value) -> Result<(), String> {
        Err("no agent in the reload tests".into())
    }
    fn send_user_message(&self, _: &str, _: String, _: u32) -> Result<(), String> {
        Err("no agent in the reload tests".into())
    }
    fn active_tools(&self) -> Vec<String> {
        Vec::new()
    }
    fn all_tools(&self) -> Value {
        json!([])
    }
    fn set_active_tools(&self, _: Vec<String>) {}
    fn is_idle(&self) -> bool {
        true
    }
    fn abort(&self) {}
    fn has_pending_messages(&self) -> bool {
        false
    }
    fn model(&self) -> Option<Value> {
        None
    }
    fn runner_config(&self) -> Option<RunnerConfig> {
        Some(self.config.clone())
    }
    fn report_error(&self, _: &pi_hooks_host::runner::ExtensionError) {}
}
