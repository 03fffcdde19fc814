//! Images cross the `serve` protocol both ways: an RPC `prompt` with `images` reaches a native
//! plugin's `input` event, and a plugin's `send_user_message_content` with an image block
//! reaches the user message, when the plugin runs in a `serve` child: `pi-hooks rpc
//! --isolate`, and the real pi 1.6.0 through the bridge.

use pi_hooks_tests::fake_openai::{FakeOpenAi, Reply};
use pi_hooks_tests::pi_e2e::{pi_rpc, prepare};
use pi_hooks_tests::rpc_client::RpcClient;
use pi_hooks_tests::tools::pi16;
use pi_hooks_tests::{Sandbox, compile_c_text};
use serde_json::{Value, json};

/// On `input`, notifies `input: <text> with N image(s) <first mimeType>`; `/look` sends a user
/// message with a text and an image.
const PLUGIN: &str = r#"
#include <stdio.h>
#include "pi_hooks.h"

static const PiHostApi *host;
static PiPlugin *self;

static PiStatus on_input(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    const PiValueApi *v = host->values;
    const PiValue *images = v->get(event, pi_str("images"));
    PiStr text = {0}, mime = {0};
    char line[256];
    size_t count = images != NULL ? v->len(images) : 0;
    (void)ud; (void)result;
    v->as_str(v->get(event, pi_str("text")), &text);
    if (count > 0) v->as_str(v->get(v->at(images, 0), pi_str("mimeType")), &mime);
    snprintf(line, sizeof line, "input: %.*s with %u image(s) %.*s", (int)text.len, text.ptr,
             (unsigned)count, (int)mime.len, mime.ptr);
    return host->ui->notify(ctx, pi_str(line), PI_NOTIFY_INFO);
}

/* /look: a user message with a text and an image. */
#include "look_command.h"

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiStatus status;
    host = h;
    self = plugin;
    status = host->registry->on(plugin, pi_str("input"), on_input, NULL);
    if (status == PI_OK)
        status = host->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("look"), .handler = look));
    return status;
}

PI_HOOKS_PLUGIN("image-reader", "1.0.0", "reads and sends images", init, NULL);
"#;

fn image() -> Value {
    json!({"type": "image", "data": "R0lGODlhAQABAAAAACw=", "mimeType": "image/gif"})
}

/// Sends a prompt with an image, then `/look`; checks what the plugin saw and the user
/// message `/look` sent.
fn images_both_ways(client: &mut RpcClient) {
    client.send(&json!({"id": "p", "type": "prompt", "message": "see this", "images": [image()]}));
    let (_, seen) = client.until(|l| l["method"] == "notify");
    assert_eq!(
        seen["message"], "input: see this with 1 image(s) image/gif",
        "{seen}"
    );
    let (_, user) = client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "see this"}, image()]),
        "{user}"
    );
    client.until(|l| l["type"] == "agent_end");

    client.send(&json!({"id": "l", "type": "prompt", "message": "/look"}));
    let (_, user) = client.until(|l| l["type"] == "message_end" && l["message"]["role"] == "user");
    assert_eq!(
        user["message"]["content"],
        json!([
            {"type": "text", "text": "what is in the picture?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ]),
        "{user}"
    );
    client.until(|l| l["type"] == "agent_end");
}

#[test]
fn images_cross_an_isolated_plugin_s_serve_child() {
    let sandbox = Sandbox::new();
    let plugin = compile_c_text(
        &sandbox.lib(),
        "image_reader",
        PLUGIN,
        &["-pedantic", &pi_hooks_tests::fixtures_include()],
    );
    let script = sandbox.script(&json!({"turns": [{"text": "a gif"}, {"text": "a png"}]}));
    let mut command = sandbox.command(&["rpc", "--isolate", "--no-session", "--no-hooks"]);
    command.arg("--script").arg(&script).arg("-e").arg(&plugin);
    let mut client = RpcClient::start(command);
    images_both_ways(&mut client);
    let (status, _) = client.close();
    assert!(status.success(), "{status}");
}

#[test]
fn images_cross_the_bridge_in_the_real_pi() {
    let sandbox = Sandbox::new();
    let server = FakeOpenAi::start(|_| Reply::Text("a picture".into()));
    prepare(&sandbox, &server);
    let plugin = compile_c_text(
        &sandbox.lib(),
        "image_reader",
        PLUGIN,
        &["-pedantic", &pi_hooks_tests::fixtures_include()],
    );
    sandbox.install(
        &plugin,
        &sandbox.agent_dir().join("extensions"),
        "libimage_reader.so",
    );
    // pi 1.6 decodes and resizes a prompt's images by default (`images.autoResize`), which
    // the 14-byte GIF above is too short for ("[Image omitted: could not be resized below the
    // inline image size limit.]"): off, the images cross as they are, what this test is about.
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        json!({"images": {"autoResize": false}}).to_string(),
    )
    .unwrap();
    let mut pi = pi_rpc(&pi16(), &sandbox, &["--no-session"]);
    images_both_ways(&mut pi);
    let (status, _) = pi.close();
    assert!(status.success(), "{status}");
}
