//! ABI 1.4 through the real binary in RPC mode, from C, C++ (`pi_hooks.hpp`) and the Rust SDK
//! (`tests/fixtures/rust-abort`): `context->is_aborted` (pi's `ctx.signal.aborted`) turns true
//! when the client aborts the run, `actions->send_user_message_content` sends a user message
//! with an image (pi's `sendUserMessage` with content blocks) that reaches `input` and the
//! user message, and `actions->exec_cancel` stops the plugin's own program.

use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::session_rpc::rpc_with_watcher;
use pi_hooks_tests::{Sandbox, compile_c_text, read_behave_log};
use serde_json::json;

const PLUGIN: &str = r#"
#include <string.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

static PiStatus say_aborted(PiContext *ctx, const char *when) {
    char line[96];
    size_t n = strlen(when);
    const char *state = host->context->is_aborted(ctx) ? " aborted" : " running";
    memcpy(line, when, n);
    memcpy(line + n, state, strlen(state) + 1);
    return host->ui->notify(ctx, pi_str(line), PI_NOTIFY_INFO);
}

static PiStatus on_start(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)result;
    return say_aborted(ctx, "tool start:");
}

static PiStatus on_end(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)result;
    return say_aborted(ctx, "tool end:");
}

/* /look: a user message with a text and an image. */
#include "look_command.h"

/* /bad: content that is not text and image blocks is refused. */
static PiStatus bad(void *ud, PiStr args, PiContext *ctx) {
    PiValue *content = host->values->new_string(pi_str("plain text"));
    PiStatus status = host->actions->send_user_message_content(self, content, PI_DELIVER_DEFAULT);
    (void)ud; (void)args;
    host->values->free(content);
    return host->ui->notify(ctx, pi_str(status == PI_ERR_INVALID_ARG ? "bad: refused" : "bad: taken"),
                            PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiStatus status;
    host = h;
    self = plugin;
    status = host->registry->on(plugin, pi_str("tool_execution_start"), on_start, NULL);
    if (status == PI_OK) status = host->registry->on(plugin, pi_str("tool_execution_end"), on_end, NULL);
    if (status == PI_OK)
        status = host->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("look"), .handler = look));
    if (status == PI_OK)
        status = host->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("bad"), .handler = bad));
    return status;
}

PI_HOOKS_PLUGIN("abort-and-images", "1.0.0", "reads the abort, sends an image", init, NULL);
"#;

/// The same plugin in C++, on `pi_hooks.hpp` (`Context::is_aborted`).
const CPP_PLUGIN: &str = r#"
#include "pi_hooks.hpp"
using namespace pi_hooks;

static void say(Context &ctx, const char *when) {
    ctx.notify(std::string(when) + (ctx.is_aborted() ? " aborted" : " running"));
}

static void setup(Plugin &pi) {
    pi.on("tool_execution_start", [](Value, Context &ctx, Result &) { say(ctx, "tool start:"); });
    pi.on("tool_execution_end", [](Value, Context &ctx, Result &) { say(ctx, "tool end:"); });
}

PI_HOOKS_CPP_PLUGIN("abort-cpp", "1.0.0", "reads the abort", setup);
"#;

/// Which build of the plugin a test runs.
#[derive(Clone, Copy)]
enum Lang {
    C,
    /// The C plugin in a `serve` child (`--isolate`): `is_aborted` is asked of the host.
    CIsolated,
    Cpp,
    Rust,
}

fn start_in(sandbox: &Sandbox, turns: serde_json::Value, lang: Lang) -> RpcClient {
    let plugin = match lang {
        Lang::C | Lang::CIsolated => compile_c_text(
            &sandbox.lib(),
            "abort_and_images",
            PLUGIN,
            &["-pedantic", &pi_hooks_tests::fixtures_include()],
        ),
        Lang::Cpp => pi_hooks_tests::compile_cpp_text(&sandbox.lib(), "abort_cpp", CPP_PLUGIN),
        Lang::Rust => pi_hooks_tests::rust_plugin("fixture-rust-abort"),
    };
    let mut command = rpc_with_watcher(
        sandbox,
        &json!({ "turns": turns }),
        &json!([{"event": "input"}]),
        &sandbox.root().join("s.jsonl"),
        &[&plugin],
    );
    if matches!(lang, Lang::CIsolated) {
        command.arg("--isolate");
    }
    RpcClient::start(command)
}

#[test]
fn a_handler_reads_that_the_run_was_aborted() {
    for lang in [Lang::C, Lang::CIsolated, Lang::Cpp, Lang::Rust] {
        handler_reads_the_abort(lang);
    }
}

fn handler_reads_the_abort(lang: Lang) {
    let sandbox = Sandbox::new();
    let mut client = start_in(
        &sandbox,
        json!([
            {"toolCalls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
            {"text": "done"}
        ]),
        lang,
    );
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    let (_, start) = client.until(|l| l["method"] == "notify");
    assert_eq!(start["message"], "tool start: running", "{start}");
    client.send(&json!({"id": "a", "type": "abort"}));
    let (_, end) = client.until(|l| l["method"] == "notify");
    assert_eq!(end["message"], "tool end: aborted", "{end}");
    client.until(|l| l["type"] == "agent_end");
    client.close();
}

#[test]
fn a_user_message_with_an_image_reaches_input_and_the_user_message() {
    for lang in [Lang::C, Lang::CIsolated, Lang::Rust] {
        user_message_with_an_image(lang);
    }
}

fn user_message_with_an_image(lang: Lang) {
    let sandbox = Sandbox::new();
    let mut client = start_in(&sandbox, json!([{"text": "a cat"}]), lang);
    let image = json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"});
    client.send(&json!({"id": "b", "type": "prompt", "message": "/bad"}));
    let (_, refused) = client.until(|l| l["method"] == "notify");
    assert_eq!(refused["message"], "bad: refused");
    client.send(&json!({"id": "l", "type": "prompt", "message": "/look"}));
    let (_, user) = client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "what is in the picture?"}, image]),
        "{user}"
    );
    client.until(|l| l["type"] == "agent_end");
    client.close();
    let inputs: Vec<serde_json::Value> = read_behave_log(&sandbox.root().join("behave.log"))
        .into_iter()
        .filter(|l| l.tag == "input")
        .map(|l| l.value)
        .collect();
    assert_eq!(
        inputs.last(),
        Some(
            &json!({"type": "input", "text": "what is in the picture?", "source": "extension", "images": [image]})
        ),
        "{inputs:?}"
    );
}

const CANCELLER: &str = r#"
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

/* A thread of the plugin: after 300 ms, stops the plugin's running programs. */
static void *stop_soon(void *arg) {
    struct timespec pause = {0, 300 * 1000 * 1000};
    (void)arg;
    nanosleep(&pause, NULL);
    host->actions->exec_cancel(self);
    return NULL;
}

/* /long: runs `sleep 30` and says whether it was killed. */
static PiStatus long_run(void *ud, PiStr args, PiContext *ctx) {
    PiStr argv[1] = {pi_str("30")};
    PiExecRequest request = {.struct_size = sizeof(PiExecRequest), .program = pi_str("sleep"),
                             .args = argv, .arg_count = 1};
    PiValue *ran = NULL;
    pthread_t thread;
    bool killed = false;
    PiStatus status;
    (void)ud; (void)args;
    if (pthread_create(&thread, NULL, stop_soon, NULL) != 0) return PI_ERR;
    status = host->actions->exec(self, &request, &ran);
    pthread_join(thread, NULL);
    if (status != PI_OK) return status;
    host->values->as_bool(host->values->get(ran, pi_str("killed")), &killed);
    host->values->free(ran);
    return host->ui->notify(ctx, pi_str(killed ? "long: killed" : "long: finished"), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    self = plugin;
    return host->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("long"), .handler = long_run));
}

PI_HOOKS_PLUGIN("canceller", "1.0.0", "stops its own exec", init, NULL);
"#;

/// `actions->exec_cancel`: a plugin stops the program its own `exec` runs (from a thread of
/// its own), not only the run's abort.
#[test]
fn a_plugin_stops_its_own_exec() {
    let c =
        |sandbox: &Sandbox| compile_c_text(&sandbox.lib(), "canceller", CANCELLER, &["-pthread"]);
    let rust = |_: &Sandbox| pi_hooks_tests::rust_plugin("fixture-rust-abort");
    plugin_stops_its_own_exec(&c);
    plugin_stops_its_own_exec(&rust);
}

fn plugin_stops_its_own_exec(build: &dyn Fn(&Sandbox) -> std::path::PathBuf) {
    let sandbox = Sandbox::new();
    let plugin = build(&sandbox);
    let mut client = RpcClient::start(rpc_with_watcher(
        &sandbox,
        &json!({"turns": [{"text": "ok"}]}),
        &json!([]),
        &sandbox.root().join("s.jsonl"),
        &[&plugin],
    ));
    let asked = std::time::Instant::now();
    client.send(&json!({"id": "l", "type": "prompt", "message": "/long"}));
    let (_, said) = client.until(|l| l["method"] == "notify");
    assert_eq!(said["message"], "long: killed", "{said}");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(10),
        "stopped at once, not after 30 s: {:?}",
        asked.elapsed()
    );
    client.close();
}

/// A `tool_call` handler that waits (up to 20 s) for the run to be aborted, asking
/// `context->is_aborted` every 20 ms: it notifies `waiting`, then `saw the abort` (and blocks
/// the tool) or `no abort`.
const WAITER: &str = r#"
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include "pi_hooks.h"

static const PiHostApi *host;

static PiStatus on_tool_call(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    struct timespec pause = {0, 20 * 1000 * 1000};
    int i;
    (void)ud; (void)event;
    host->ui->notify(ctx, pi_str("waiting"), PI_NOTIFY_INFO);
    for (i = 0; i < 1000; i++) {
        if (host->context->is_aborted(ctx)) {
            host->ui->notify(ctx, pi_str("saw the abort"), PI_NOTIFY_INFO);
            host->results->set_bool(result, pi_str("block"), true);
            return host->results->set_string(result, pi_str("reason"), pi_str("aborted"));
        }
        nanosleep(&pause, NULL);
    }
    return host->ui->notify(ctx, pi_str("no abort"), PI_NOTIFY_INFO);
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
}

PI_HOOKS_PLUGIN("abort-waiter", "1.0.0", "waits for the abort", init, NULL);
"#;

/// Prompts, waits for the handler's `waiting`, aborts, and expects it to see the abort.
fn waiter_sees_the_abort(client: &mut RpcClient) {
    client.send(&json!({"id": "p", "type": "prompt", "message": "work"}));
    let (_, waiting) = client.until(|l| l["method"] == "notify");
    assert_eq!(waiting["message"], "waiting", "{waiting}");
    client.send(&json!({"id": "a", "type": "abort"}));
    let (_, seen) = client.until(|l| l["method"] == "notify");
    assert_eq!(seen["message"], "saw the abort", "{seen}");
    client.until(|l| l["type"] == "agent_end");
}

/// A handler in a `serve` child (`--isolate`) asks the host whether the run was aborted.
#[test]
fn an_isolated_handler_reads_the_abort_while_it_runs() {
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(&sandbox.lib(), "abort_waiter", WAITER, &[]);
    let mut command = rpc_with_watcher(
        &sandbox,
        &json!({"turns": [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
            {"text": "done"}
        ]}),
        &json!([]),
        &sandbox.root().join("s.jsonl"),
        &[&plugin],
    );
    command.arg("--isolate");
    let mut client = RpcClient::start(command);
    waiter_sees_the_abort(&mut client);
    client.close();
}

/// pi's `ctx.signal.aborted` through the bridge: the plugin, loaded by the real pi 1.6.0,
/// reads that pi's run was aborted while its handler runs.
#[test]
fn a_native_handler_in_pi_reads_that_pi_s_run_was_aborted() {
    use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply, after_tool, tool_call};
    use pi_hooks_tests::pi_e2e::{pi_rpc, prepare};
    let sandbox = Sandbox::new();
    let server = FakeOpenAi::start(|body| {
        if after_tool(body) {
            Reply::Text("done".into())
        } else {
            tool_call("bash", json!({"command": "echo hi"}))
        }
    });
    prepare(&sandbox, &server);
    let plugin = compile_c_text(&sandbox.lib(), "abort_waiter", WAITER, &[]);
    sandbox.install(
        &plugin,
        &sandbox.agent_dir().join("extensions"),
        "libabort_waiter.so",
    );
    let mut pi = pi_rpc(&pi_hooks_tests::tools::pi16(), &sandbox, &["--no-session"]);
    waiter_sees_the_abort(&mut pi);
    pi.close();
}
